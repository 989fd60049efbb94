"""Validating readers shared by the spec loaders: typed key access with messages naming file
and key.

Every JSON/YAML spec, engine, model, hardware and profile file is read by :func:`read_mapping`,
the one boundary for those files: a size cap, no YAML anchors or aliases (a few KB of aliases can
expand past memory), no duplicate keys (the last one would silently win), a nesting limit, and
numbers Python can hold. :class:`Fields` then checks each value's type and range; the allowed
range of every integer and number field is here (``INT_MAXIMA``, ``FLOAT_MAXIMUM``).
"""

from __future__ import annotations

import errno
import json
import math
from pathlib import Path
from typing import Any

import yaml

from ..errors import SpecError

MAX_SPEC_FILE_BYTES = 4_000_000  # a config.json or GPU file is a few KB; refuse anything huge
MAX_SPEC_DEPTH = 32  # nesting of mappings and lists (configs nest 3-4 deep)
MAX_PATH_SHOWN = 120  # characters of a user-given path or id quoted in an error

# largest value an integer field may hold: the default, and fields with a tighter bound (layers
# and heads are per-layer lists and per-head loops in the model; 1e12 layers cannot be built)
INT_MAXIMUM = 2**24
INT_MAXIMA = {
    "num_hidden_layers": 10_000,
    "n_layer": 10_000,
    "num_layers": 10_000,
    "num_nextn_predict_layers": 1_000,
    "first_k_dense_replace": 10_000,
    "max_window_layers": 10_000,
    "decoder_sparse_step": 10_000,
    "moe_layer_freq": 10_000,
    "interleave_moe_layer_step": 10_000,
    "num_attention_heads": 65_536,
    "n_head": 65_536,
    "num_key_value_heads": 65_536,
    "num_kv_heads": 65_536,
    "profile_version": 1_000,
    # calibration profile rows: message sizes up to a PiB, GEMM dimensions 32-bit
    "bytes": 2**50,
    "m": 2**31 - 1,
    "n": 2**31 - 1,
    "k": 2**31 - 1,
}
# largest magnitude of a number field (peak FLOP/s of a what-if GPU are ~1e18; constants far less)
FLOAT_MAXIMUM = 1e21


def shown(text: str) -> str:
    """A user-given path or id as quoted in a one-line error (long ones cut)."""
    text = str(text)
    return (
        text if len(text) <= MAX_PATH_SHOWN else f"{text[:MAX_PATH_SHOWN]}... ({len(text)} chars)"
    )


def existing_file(text: str | Path) -> Path | None:
    """``Path(text)`` when it names a file, None when nothing is there; a name the OS refuses
    (too long, a NUL byte) is a :class:`SpecError`, not an ``OSError``."""
    path = Path(text)
    try:
        if path.is_dir() and path.name != "config.json" and (path / "config.json").is_file():
            return path / "config.json"
        return path if path.is_file() else None
    except ValueError:  # embedded NUL byte
        raise SpecError(f"{shown(text)!r}: not a usable file name (NUL byte)") from None
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise SpecError(f"{shown(text)!r}: file name too long") from None
        raise SpecError(f"{shown(text)!r}: cannot read ({exc.strerror})") from None


class _Rejected(ValueError):
    """A YAML/JSON construct refused by :func:`read_mapping` (its message names the place)."""


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` without anchors or aliases, with unique keys and bounded nesting."""

    _depth = 0

    def compose_node(self, parent, index):  # noqa: ANN001 - PyYAML's signature
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            raise _Rejected(
                f"line {line}: YAML alias *{event.anchor} is not allowed in a spec file "
                "(write the value out)"
            )
        if getattr(event, "anchor", None) is not None:
            raise _Rejected(
                f"line {line}: YAML anchor &{event.anchor} is not allowed in a spec file "
                "(write the value out)"
            )
        self._depth += 1
        if self._depth > MAX_SPEC_DEPTH:
            raise _Rejected(f"line {line}: nested deeper than {MAX_SPEC_DEPTH} levels")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):  # noqa: ANN001
        seen: set = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:
                raise _Rejected(
                    f"line {key_node.start_mark.line + 1}: a mapping key must be a scalar"
                ) from None
            if duplicate:
                raise _Rejected(f"line {key_node.start_mark.line + 1}: duplicate key {key!r}")
        return super().construct_mapping(node, deep=deep)


def unique_json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``' ``object_pairs_hook`` that refuses a duplicate key (a ValueError naming
    it): spec files here, safetensors headers in ``quant.safetensors_io``."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Rejected(f"duplicate key {key!r}")
        out[key] = value
    return out


def _check_depth(data: Any) -> None:
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > MAX_SPEC_DEPTH:
                raise _Rejected(f"nested deeper than {MAX_SPEC_DEPTH} levels")
            items = value.values() if isinstance(value, dict) else value
            stack.extend((v, depth + 1) for v in items)


def read_mapping(path: Path) -> dict[str, Any]:
    """Read a JSON or YAML file that must hold a mapping; errors name the file."""
    where = shown(str(path))
    try:
        size = path.stat().st_size
    except (OSError, ValueError) as exc:
        why = "file name too long" if getattr(exc, "errno", None) == errno.ENAMETOOLONG else None
        raise SpecError(
            f"{where}: cannot read ({why or getattr(exc, 'strerror', None) or exc})"
        ) from None
    if size > MAX_SPEC_FILE_BYTES:
        raise SpecError(
            f"{where}: {size} bytes is too large for a spec file (max {MAX_SPEC_FILE_BYTES})"
        )
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{where}: cannot read as UTF-8 text ({exc})") from None
    is_json = path.suffix.lower() == ".json"
    kind = "JSON" if is_json else "YAML"
    try:
        if is_json:
            data = json.loads(text, object_pairs_hook=unique_json_pairs)
        else:
            data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader
        _check_depth(data)
    except _Rejected as exc:
        raise SpecError(f"{where}: {exc}") from None
    except RecursionError:
        raise SpecError(f"{where}: nested too deeply to be a spec file") from None
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SpecError(f"{where}: not valid {kind}: {first}") from None
    except (ValueError, OverflowError) as exc:  # e.g. an integer of more than 4,300 digits
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SpecError(f"{where}: a value {kind} cannot hold as a number: {first}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{where}: top level must be a mapping, got {type(data).__name__}")
    return data


class Fields:
    """Typed access to a mapping, with errors that name the file and the key."""

    def __init__(self, data: dict[str, Any], where: str):
        self.data = data
        self.where = where

    def has(self, key: str) -> bool:
        return key in self.data and self.data[key] is not None

    def _get(self, key: str, default: Any, required: bool) -> Any:
        if key not in self.data or self.data[key] is None:
            if required:
                raise SpecError(f"{self.where}: missing required field {key!r}")
            return default
        return self.data[key]

    def int(
        self,
        key: str,
        default: int | None = None,
        *,
        minimum: int = 1,
        maximum: int | None = None,
    ) -> int:
        """An integer in ``[minimum, maximum]``; ``maximum`` defaults to the field's entry in
        ``INT_MAXIMA``, else ``INT_MAXIMUM``."""
        value = self._get(key, default, default is None)
        return checked_int(value, f"{self.where}: field {key!r}", minimum, _int_max(key, maximum))

    def int_list(self, key: str, default: list | None = None, *, minimum: int = 0) -> list[int]:
        """A list of integers (layer indices, 0/1 flags), each in ``[minimum, maximum]``."""
        values = self.list(key, default)
        where = f"{self.where}: field {key!r}"
        return [
            checked_int(v, f"{where} entry {i}", minimum, _int_max(key, None))
            for i, v in enumerate(values)
        ]

    def float(
        self,
        key: str,
        default: float | None = None,
        *,
        positive: bool = True,
        maximum: float = FLOAT_MAXIMUM,
    ) -> float:
        """A finite number, > 0 when ``positive``, of magnitude at most ``maximum``."""
        value = self._get(key, default, default is None)
        if isinstance(value, str):  # YAML 1.1 reads 8e12 (no dot/sign) as a string
            try:
                value = float(value)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SpecError(f"{self.where}: field {key!r} must be a number, got {_brief(value)}")
        try:
            value = float(value)
        except OverflowError:
            value = math.inf
        if not math.isfinite(value) or (positive and value <= 0):
            raise SpecError(
                f"{self.where}: field {key!r} must be a finite {'positive ' if positive else ''}"
                f"number, got {_brief(value)}"
            )
        if abs(value) > maximum:
            low = 0 if positive else -maximum
            raise SpecError(
                f"{self.where}: field {key!r} = {value:g} is out of range ({low:g} to {maximum:g})"
            )
        return value

    def str(self, key: str, default: str | None = None) -> str:
        value = self._get(key, default, default is None)
        if not isinstance(value, str):
            raise SpecError(f"{self.where}: field {key!r} must be a string, got {_brief(value)}")
        return value

    def bool(self, key: str, default: bool | None = None) -> bool:
        value = self._get(key, default, default is None)
        if not isinstance(value, bool):
            raise SpecError(
                f"{self.where}: field {key!r} must be true or false, got {_brief(value)}"
            )
        return value

    def mapping(self, key: str, required: bool = True) -> Fields:
        value = self._get(key, {}, required)
        if not isinstance(value, dict):
            raise SpecError(
                f"{self.where}: field {key!r} must be a mapping, got {type(value).__name__}"
            )
        return Fields(value, f"{self.where}: {key}")

    def list(self, key: str, default: list | None = None) -> list:
        value = self._get(key, default, default is None)
        if not isinstance(value, list):
            raise SpecError(
                f"{self.where}: field {key!r} must be a list, got {type(value).__name__}"
            )
        return value

    def str_list(self, key: str, default: list | None = None) -> list[str]:
        """A list of strings (scalars are written as text; lists or mappings are refused)."""
        values = self.list(key, default)
        for i, v in enumerate(values):
            if isinstance(v, (list, dict)) or v is None:
                raise SpecError(
                    f"{self.where}: field {key!r} entry {i} must be a string, got {_brief(v)}"
                )
        return [str(v) for v in values]

    def reject_unknown(self, allowed: set[str]) -> None:
        extra = sorted(map(str, set(self.data) - allowed))
        if extra:
            raise SpecError(
                f"{self.where}: unknown field(s) {', '.join(map(repr, extra))}; allowed: "
                f"{', '.join(sorted(allowed))}"
            )


def _int_max(key: str, maximum: int | None) -> int:
    return maximum if maximum is not None else INT_MAXIMA.get(key, INT_MAXIMUM)


def _brief(value: Any) -> str:
    """``repr`` of a bad value, cut to one short line."""
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else "a huge integer"
    return text if len(text) <= 60 else f"{text[:60]}..."


def checked_int(value: Any, what: str, minimum: int, maximum: int) -> int:
    """``value`` as an integer in ``[minimum, maximum]`` (integral floats accepted), else a
    :class:`SpecError` naming ``what`` and the allowed range."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or (isinstance(value, float) and (not math.isfinite(value) or value != int(value)))
    ):
        raise SpecError(f"{what} must be an integer, got {_brief(value)}")
    if not minimum <= value <= maximum:
        got = f"{value:g}" if isinstance(value, float) else _brief(value)
        raise SpecError(f"{what} = {got} is out of range ({minimum} to {maximum:,})")
    return int(value)

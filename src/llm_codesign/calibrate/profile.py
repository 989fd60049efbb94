"""Calibration profiles: what ``llm-codesign calibrate`` measured on a real machine, read and
validated, with the figures derived from the measurements.

A profile is a JSON file (``profile_version: 1``, SI units)::

    device:       {name, kind: cpu|cuda, driver, torch_version, date, hardware_id (bundled id
                   or null), memory_bytes, compute_units, cache_bytes, compute_capability,
                   device_count}
    settings:     {quick, budget_s, elapsed_s, warmup, max_repeats, rotate_bytes, dtypes, skipped}
    measurements: {copy:              [{bytes, seconds, bytes_per_s, times_s}],
                   gemm:              [{dtype, m, n, k, seconds, flops_per_s, times_s}],
                   attention_decode:  [{dtype, batch, heads, kv_heads, head_dim, seq, flops,
                                        bytes, seconds, times_s}],
                   attention_prefill: [same fields; causal],
                   allreduce:         [{bytes, ranks, seconds, bus_bytes_per_s, times_s}],
                   alltoall:          [same fields]}
    derived:      {hbm_bytes_per_s, peak_flops_per_s: {dtype: ...}, ...}

Conventions: ``seconds`` is the median of the repeats in ``times_s``; a copy of ``bytes`` moves
``2 x bytes`` (read + write), so ``bytes_per_s = 2 bytes / seconds`` (the convention of
bandwidthTest and nvbandwidth); a GEMM of (M, N, K) does ``2 M N K`` FLOPs; collective bus
bandwidth follows nccl-tests (all-reduce ``2 (n - 1) / n``, all-to-all ``(n - 1) / n`` of the
algorithm bandwidth). ``derived`` is recomputed from ``measurements`` whenever a profile loads:
the measurements are the record, the derived figures a convenience for readers. Bytes per
element of a measured dtype come from the format registry (:mod:`llm_codesign.formats`).

Example:
    >>> p = load_profile("h200_quick.json")  # doctest: +SKIP
    >>> p.derived["hbm_bytes_per_s"]  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DataFileError, SpecError
from ..formats import FORMATS
from ..outputs import check_output_path, write_text
from ..specs._load import Fields, existing_file, read_mapping, shown
from ..specs.hardware import bundled_hardware, hardware_alias_table

PROFILE_VERSION = 1
DEVICE_KINDS = ("cpu", "cuda")
# GEMM/attention dtypes a profile may hold (each is also a compute class of the cost model) ->
# the registry format of their operands; TF32 GEMMs read FP32 storage
DTYPE_FORMATS = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "tf32": "fp32"}
DTYPES = tuple(DTYPE_FORMATS)
# the measured FP8 GEMMs (torch._scaled_mm) write BF16; every other dtype writes its own format
_OUTPUT_FORMATS = {"fp8": "bf16"}
MEASUREMENT_KINDS = (
    "copy",
    "gemm",
    "attention_decode",
    "attention_prefill",
    "allreduce",
    "alltoall",
)

_TOP_KEYS = {"profile_version", "device", "settings", "measurements", "derived"}
_DEVICE_KEYS = {
    "name",
    "kind",
    "driver",
    "torch_version",
    "date",
    "hardware_id",
    "memory_bytes",
    "compute_units",
    "cache_bytes",
    "compute_capability",
    "device_count",
}
_ATTN_INTS = ("batch", "heads", "kv_heads", "head_dim", "seq")
# per kind: (integer fields, positive float fields, string fields); ``times_s`` is optional
_ROWS: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "copy": (("bytes",), ("seconds", "bytes_per_s"), ()),
    "gemm": (("m", "n", "k"), ("seconds", "flops_per_s"), ("dtype",)),
    "attention_decode": (_ATTN_INTS, ("seconds", "flops", "bytes"), ("dtype",)),
    "attention_prefill": (_ATTN_INTS, ("seconds", "flops", "bytes"), ("dtype",)),
    "allreduce": (("bytes", "ranks"), ("seconds", "bus_bytes_per_s"), ()),
    "alltoall": (("bytes", "ranks"), ("seconds", "bus_bytes_per_s"), ()),
}
_CONSISTENCY_RTOL = 1e-3
MEASURED = "measured"
DEFAULT = "default"


def element_bytes(dtype: str) -> float:
    """Bytes per operand element of a profile dtype (``tf32`` -> 4.0, ``fp8`` -> 1.0)."""
    return FORMATS[DTYPE_FORMATS[dtype]].bytes_per_element


def output_bytes(dtype: str) -> float:
    """Bytes per output element the measured kernels of a profile dtype write (FP8 -> BF16)."""
    return FORMATS[_OUTPUT_FORMATS.get(dtype, DTYPE_FORMATS[dtype])].bytes_per_element


# --------------------------------------------------------------------------------------------
# schema
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceInfo:
    """The measured device as the profile records it."""

    name: str
    kind: str
    driver: str
    torch_version: str
    date: str
    hardware_id: str | None = None
    memory_bytes: float | None = None
    compute_units: int | None = None
    cache_bytes: float | None = None
    compute_capability: str | None = None
    device_count: int = 1


@dataclass(frozen=True)
class Profile:
    """A validated calibration profile. ``measurements`` maps each kind of
    ``MEASUREMENT_KINDS`` to its rows (plain dicts, SI units); ``derived`` is computed."""

    device: DeviceInfo
    measurements: dict[str, tuple[dict[str, Any], ...]]
    settings: dict[str, Any] = field(default_factory=dict)
    source: str = "<profile>"

    @property
    def derived(self) -> dict[str, Any]:
        return derive(self.measurements)

    def rows(self, kind: str) -> tuple[dict[str, Any], ...]:
        return self.measurements.get(kind, ())

    def to_dict(self) -> dict[str, Any]:
        return {
            "profile_version": PROFILE_VERSION,
            "device": dataclasses.asdict(self.device),
            "settings": self.settings,
            "measurements": {k: [dict(r) for r in self.rows(k)] for k in MEASUREMENT_KINDS},
            "derived": self.derived,
        }


def derive(measurements: Mapping[str, Iterable[dict[str, Any]]]) -> dict[str, Any]:
    """Summary figures of a set of measurements (best achieved rates, small-message latencies).

    ``hbm_bytes_per_s``: best copy bandwidth; ``peak_flops_per_s``: best GEMM FLOP/s per dtype;
    ``attention_decode_bytes_per_s`` / ``attention_prefill_flops_per_s``: best attention rates
    per dtype; ``<collective>_bus_bytes_per_s``: best bus bandwidth; ``<collective>_latency_s``:
    the time of the smallest message measured. Absent when not measured.
    """
    rows = {k: list(measurements.get(k, ())) for k in MEASUREMENT_KINDS}
    out: dict[str, Any] = {}
    if rows["copy"]:
        out["hbm_bytes_per_s"] = max(r["bytes_per_s"] for r in rows["copy"])
    peaks: dict[str, float] = {}
    for r in rows["gemm"]:
        peaks[r["dtype"]] = max(peaks.get(r["dtype"], 0.0), r["flops_per_s"])
    if peaks:
        out["peak_flops_per_s"] = dict(sorted(peaks.items()))
    dec: dict[str, float] = {}
    for r in rows["attention_decode"]:
        dec[r["dtype"]] = max(dec.get(r["dtype"], 0.0), r["bytes"] / r["seconds"])
    if dec:
        out["attention_decode_bytes_per_s"] = dict(sorted(dec.items()))
    pre: dict[str, float] = {}
    for r in rows["attention_prefill"]:
        pre[r["dtype"]] = max(pre.get(r["dtype"], 0.0), r["flops"] / r["seconds"])
    if pre:
        out["attention_prefill_flops_per_s"] = dict(sorted(pre.items()))
    for coll in ("allreduce", "alltoall"):
        if rows[coll]:
            out[f"{coll}_bus_bytes_per_s"] = max(r["bus_bytes_per_s"] for r in rows[coll])
            smallest = min(r["bytes"] for r in rows[coll])
            out[f"{coll}_latency_s"] = min(
                r["seconds"] for r in rows[coll] if r["bytes"] == smallest
            )
            out[f"{coll}_ranks"] = max(r["ranks"] for r in rows[coll])
    return out


def _row(kind: str, raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise SpecError(f"{where}: each row must be a mapping, got {type(raw).__name__}")
    ints, floats, strs = _ROWS[kind]
    f = Fields(raw, where)
    f.reject_unknown(set(ints) | set(floats) | set(strs) | {"times_s", "causal", "note"})
    row: dict[str, Any] = {}
    for key in strs:
        row[key] = f.str(key)
    if "dtype" in row and row["dtype"] not in DTYPES:
        raise SpecError(f"{where}: dtype {row['dtype']!r} is not one of {', '.join(DTYPES)}")
    for key in ints:
        row[key] = f.int(key)
    for key in floats:
        row[key] = f.float(key)
    if "times_s" in raw:
        times = f.list("times_s")
        if not times or not all(
            isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and t > 0
            for t in times
        ):
            raise SpecError(f"{where}: times_s must be a non-empty list of positive seconds")
        row["times_s"] = [float(t) for t in times]
    if "causal" in raw:
        row["causal"] = f.bool("causal")
    if "note" in raw:
        row["note"] = f.str("note")
    # the rate must follow from the raw numbers (catches edited or unit-confused files)
    if kind == "copy":
        _consistent(where, "bytes_per_s", row["bytes_per_s"], 2.0 * row["bytes"] / row["seconds"])
    elif kind == "gemm":
        _consistent(
            where,
            "flops_per_s",
            row["flops_per_s"],
            2.0 * row["m"] * row["n"] * row["k"] / row["seconds"],
        )
    elif kind in ("allreduce", "alltoall"):
        n = row["ranks"]
        factor = 2.0 * (n - 1) / n if kind == "allreduce" else (n - 1) / n
        if n < 2:
            raise SpecError(f"{where}: field 'ranks' must be >= 2 for a collective, got {n}")
        _consistent(
            where, "bus_bytes_per_s", row["bus_bytes_per_s"], row["bytes"] / row["seconds"] * factor
        )
    return row


def _consistent(where: str, key: str, stated: float, expected: float) -> None:
    if abs(stated - expected) > _CONSISTENCY_RTOL * expected:
        raise SpecError(
            f"{where}: {key}={stated:.6g} does not follow from the row's sizes and seconds "
            f"({expected:.6g})"
        )


def profile_from_mapping(data: dict[str, Any], where: str = "<profile>") -> Profile:
    """Validate a profile mapping (unknown, missing and mistyped keys raise SpecError naming
    ``where`` and the key)."""
    f = Fields(data, where)
    f.reject_unknown(_TOP_KEYS)
    version = f.int("profile_version")
    if version != PROFILE_VERSION:
        raise SpecError(
            f"{where}: profile_version {version} is not supported (this version reads "
            f"{PROFILE_VERSION})"
        )
    d = f.mapping("device")
    d.reject_unknown(_DEVICE_KEYS)
    kind = d.str("kind")
    if kind not in DEVICE_KINDS:
        raise SpecError(f"{d.where}: kind {kind!r} is not one of {', '.join(DEVICE_KINDS)}")
    hid = d.data.get("hardware_id")
    if hid is not None and not isinstance(hid, str):
        raise SpecError(f"{d.where}: field 'hardware_id' must be a string or null, got {hid!r}")
    cc = d.data.get("compute_capability")
    device = DeviceInfo(
        name=d.str("name"),
        kind=kind,
        driver=d.str("driver", ""),
        torch_version=d.str("torch_version", ""),
        date=d.str("date", ""),
        hardware_id=hid or None,
        memory_bytes=d.float("memory_bytes") if d.has("memory_bytes") else None,
        compute_units=d.int("compute_units") if d.has("compute_units") else None,
        cache_bytes=d.float("cache_bytes") if d.has("cache_bytes") else None,
        compute_capability=str(cc) if cc is not None else None,
        device_count=d.int("device_count", 1),
    )
    settings = f.mapping("settings", required=False).data
    if f.has("derived"):
        f.mapping("derived")  # recomputed below; must still be a mapping
    m = f.mapping("measurements")
    m.reject_unknown(set(MEASUREMENT_KINDS))
    measurements: dict[str, tuple[dict[str, Any], ...]] = {}
    for kind_ in MEASUREMENT_KINDS:
        raw = m.list(kind_, [])
        measurements[kind_] = tuple(
            _row(kind_, r, f"{m.where}: {kind_}[{i}]") for i, r in enumerate(raw)
        )
    if not any(measurements.values()):
        raise SpecError(f"{where}: the profile holds no measurements")
    return Profile(device=device, measurements=measurements, settings=dict(settings), source=where)


def load_profile(
    profile: Profile | dict[str, Any] | str | Path, where: str | None = None
) -> Profile:
    """A validated :class:`Profile` from a Profile, a mapping or a JSON/YAML path."""
    if isinstance(profile, Profile):
        return profile
    if isinstance(profile, dict):
        return profile_from_mapping(profile, where or "<profile>")
    path = existing_file(profile)
    if path is None:
        raise DataFileError(f"calibration profile {shown(str(profile))!r}: no such file")
    data = read_mapping(path)
    if "profile_version" not in data:
        raise DataFileError(f"{path}: not a calibration profile (no 'profile_version' key)")
    return profile_from_mapping(data, where or str(path))


def save_profile(profile: Profile | dict[str, Any], path: str | Path) -> Profile:
    """Validate and write a profile as JSON; returns the validated profile."""
    p = load_profile(profile, str(path))
    out = Path(path)
    check_output_path(out, create=True)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataFileError(f"{out}: cannot write the profile ({exc.strerror})") from None
    write_text(out, json.dumps(p.to_dict(), indent=1, allow_nan=False) + "\n")
    return p


# --------------------------------------------------------------------------------------------
# device matching
# --------------------------------------------------------------------------------------------

_VENDOR_PREFIXES = ("nvidia ", "amd ")


def device_name_key(name: str) -> str:
    """A device or GPU name for comparison: lower-case, dashes and punctuation as spaces."""
    return " ".join(re.sub(r"[-_/(),]+", " ", name.lower()).split())


def match_hardware_id(device_name: str) -> str | None:
    """The bundled hardware id whose name, id or alias is the device's name (vendor prefix
    optional, dashes = spaces), else None. ``"NVIDIA H200"`` -> ``h200-sxm``; ``"NVIDIA H100
    PCIe"`` -> None (a different product from the H100 SXM)."""
    table: dict[str, str] = {}
    for key, hid in hardware_alias_table().items():
        table[device_name_key(key)] = hid
    for spec in bundled_hardware().values():
        table[device_name_key(spec.name)] = spec.id
    name = device_name_key(device_name)
    candidates = [name] + [name[len(p) :] for p in _VENDOR_PREFIXES if name.startswith(p)]
    for c in candidates:
        if c in table:
            return table[c]
    return None

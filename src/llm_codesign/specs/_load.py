"""Validating readers shared by the spec loaders: typed key access with messages naming file
and key."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml

from ..errors import SpecError

MAX_SPEC_FILE_BYTES = 4_000_000  # a config.json or GPU file is a few KB; refuse anything huge


def read_mapping(path: Path) -> dict[str, Any]:
    """Read a JSON or YAML file that must hold a mapping; errors name the file."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise SpecError(f"{path}: cannot read ({exc.strerror})") from None
    if size > MAX_SPEC_FILE_BYTES:
        raise SpecError(
            f"{path}: {size} bytes is too large for a spec file (max {MAX_SPEC_FILE_BYTES})"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot read as UTF-8 text ({exc})") from None
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            data = yaml.safe_load(text)
    except RecursionError:
        raise SpecError(f"{path}: nested too deeply to be a spec file") from None
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SpecError(
            f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {first}"
        ) from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: top level must be a mapping, got {type(data).__name__}")
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

    def int(self, key: str, default: int | None = None, *, minimum: int = 1) -> int:
        value = self._get(key, default, default is None)
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or (isinstance(value, float) and (not math.isfinite(value) or value != int(value)))
        ):
            raise SpecError(f"{self.where}: field {key!r} must be an integer, got {value!r}")
        value = int(value)
        if value < minimum:
            raise SpecError(f"{self.where}: field {key!r} must be >= {minimum}, got {value}")
        if value > 10**13:
            raise SpecError(f"{self.where}: field {key!r} = {value} is implausibly large")
        return value

    def float(self, key: str, default: float | None = None, *, positive: bool = True) -> float:
        value = self._get(key, default, default is None)
        if isinstance(value, str):  # YAML 1.1 reads 8e12 (no dot/sign) as a string
            try:
                value = float(value)
            except ValueError:
                pass
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SpecError(f"{self.where}: field {key!r} must be a number, got {value!r}")
        value = float(value)
        if not math.isfinite(value) or (positive and value <= 0):
            raise SpecError(
                f"{self.where}: field {key!r} must be a finite positive number, got {value!r}"
            )
        return value

    def str(self, key: str, default: str | None = None) -> str:
        value = self._get(key, default, default is None)
        if not isinstance(value, str):
            raise SpecError(f"{self.where}: field {key!r} must be a string, got {value!r}")
        return value

    def bool(self, key: str, default: bool | None = None) -> bool:
        value = self._get(key, default, default is None)
        if not isinstance(value, bool):
            raise SpecError(f"{self.where}: field {key!r} must be true or false, got {value!r}")
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

    def reject_unknown(self, allowed: set[str]) -> None:
        extra = sorted(set(self.data) - allowed)
        if extra:
            raise SpecError(
                f"{self.where}: unknown field(s) {', '.join(map(repr, extra))}; allowed: "
                f"{', '.join(sorted(allowed))}"
            )

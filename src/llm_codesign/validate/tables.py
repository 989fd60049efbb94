"""The bundled tables under ``data/validation`` that the validation's conventions read (recipes,
launch scripts, campaigns), each read once and read-only."""

from __future__ import annotations

import csv
import functools
from collections.abc import Mapping
from importlib import resources
from types import MappingProxyType


@functools.cache
def bundled_rows(name: str) -> tuple[Mapping[str, str], ...]:
    """The rows of a bundled table under ``data/validation`` (the recipe and campaign tables
    the validation modules name), read once and read-only."""
    path = resources.files("llm_codesign") / "data" / "validation" / name
    with path.open(newline="", encoding="utf-8") as fh:
        return tuple(MappingProxyType(r) for r in csv.DictReader(fh))

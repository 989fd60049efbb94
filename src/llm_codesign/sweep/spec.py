"""The sweep file: a YAML (or JSON) mapping naming models or architecture-variant generators,
GPUs, precisions, workloads, plan limits and targets, read through the spec boundary
(``specs._load.read_mapping``: size cap, no aliases, no duplicate keys) and validated field by
field: an unknown key, a wrong type or an unknown id is one :class:`SpecError` line naming the
field and the allowed values.

Schema (``examples/sweep.yaml``)::

    models:                         # required: ids, config.json paths or generators
      - llama-3.1-8b
      - variants_of: llama-3.1-8b   # advise.archsearch at constant parameter count
        hidden_scales: [0.875, 1.0]  # SearchSpace knobs (optional)
        layer_scales: [1.0, 1.25]
        param_tolerance: 0.02       # |params / base - 1| kept (optional)
        align: 128                  # width grid (optional, default 128)
        max_variants: 10            # first N in generation order (optional; 0: all)
        include_base: true          # the base model as a cell too (default true)
    hardware: [h200-sxm, b200]      # required: ids or spec paths
    precisions: [fp8, nvfp4]        # required: presets (unsupported on a GPU: status row)
    workloads:                      # required
      - {name: chat, isl: 1024, osl: 256}
    plans: {num_gpus: 8, max_pp: 1, helix: true, attention_dp: true, disagg: false,
            points_per_octave: 4, max_batch: null, refine: false}
    targets: {ttft_ms: 500, tpot_ms: 50, min_tok_s_per_user: 20}  # optional
    engine: trtllm                  # optional (default: each GPU vendor's, specs.engine)
    emulate: false                  # run formats a GPU lacks at the nearest native rate
    output: {points: true}          # false: frontier and summary only

Relative paths in the file are read relative to the file's directory.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..advise.archsearch import DEFAULT_PARAM_TOLERANCE, SearchSpace, generate_variants
from ..calibrate import resolve_hardware
from ..errors import CodesignError, SpecError
from ..explore.cells import Cell, CellSettings
from ..specs._load import Fields, read_mapping, shown
from ..specs.checkpoint import preset_precision
from ..specs.engine import EngineConstants, load_engine
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec, load_model
from ..specs.precision import Precision, parse_precision

TOP_KEYS = {
    "models",
    "hardware",
    "precisions",
    "workloads",
    "plans",
    "targets",
    "engine",
    "emulate",
    "output",
}
PLAN_KEYS = {
    "num_gpus",
    "max_pp",
    "helix",
    "attention_dp",
    "disagg",
    "points_per_octave",
    "max_batch",
    "refine",
}
TARGET_KEYS = {"ttft_ms", "tpot_ms", "min_tok_s_per_user"}
WORKLOAD_KEYS = {"name", "isl", "osl"}
OUTPUT_KEYS = {"points"}
SPACE_KEYS = (
    "hidden_scales",
    "layer_scales",
    "kv_heads",
    "experts",
    "mla_rank_scales",
    "linear_shares",
)
GENERATOR_KEYS = {
    "variants_of",
    "param_tolerance",
    "align",
    "max_variants",
    "include_base",
    *SPACE_KEYS,
}
DEFAULT_ALIGN = 128  # the portable width grid (one variant set for every GPU of the sweep)
MAX_CELLS = 10_000_000
SAFE_NAME = re.compile(r"[^A-Za-z0-9._~+-]")  # a model name as a partition directory


@dataclass(frozen=True)
class SweepModel:
    """A model of the sweep: its name in the results and what it is (base model, changes)."""

    name: str
    spec: ModelSpec
    info: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep: every axis resolved to specs, and the output options."""

    models: tuple[SweepModel, ...]
    hardware: tuple[HardwareSpec, ...]
    precisions: tuple[Precision, ...]
    workloads: tuple[tuple[str, int, int], ...]  # (name, isl, osl)
    engine: EngineConstants | None  # None: each GPU's vendor default (trtllm, vllm on AMD)
    settings: CellSettings
    write_points: bool = True
    source: str = ""

    def cells(self) -> list[Cell]:
        """Every model x GPU x precision x workload, in this order (the shard order). A bare
        preset takes the model checkpoint's block-scaled weights where it has them, as estimate
        and frontier do (``specs.checkpoint.preset_weights``)."""
        return [
            Cell(
                m.spec,
                hw,
                preset_precision(m.spec, p.id),
                load_engine(self.engine, hw),  # (the runtime's limits on this GPU)
                w,
                isl,
                osl,
                self.settings,
                model_name=m.name,
                model_info=m.info,
            )
            for m, hw, p, (w, isl, osl) in itertools.product(
                self.models, self.hardware, self.precisions, self.workloads
            )
        ]

    @property
    def size(self) -> int:
        return len(self.models) * len(self.hardware) * len(self.precisions) * len(self.workloads)

    def digest(self, cells: list[Cell] | None = None) -> str:
        """sha256 of what the results depend on: every cell's shard key and the output options
        (so comments, key order or spelling of ids do not change it)."""
        keys = [c.shard for c in (cells if cells is not None else self.cells())]
        text = json.dumps({"shards": keys, "write_points": self.write_points})
        return hashlib.sha256(text.encode()).hexdigest()

    def describe(self) -> dict[str, Any]:
        """The resolved spec as plain data (written to the manifest)."""
        return {
            "models": [{"name": m.name, **m.info} for m in self.models],
            "hardware": [h.id for h in self.hardware],
            "precisions": [p.id for p in self.precisions],
            "workloads": [{"name": w, "isl": i, "osl": o} for w, i, o in self.workloads],
            "engine": self.engine.id
            if self.engine is not None
            else ", ".join(f"{h.id} {load_engine(None, h).id}" for h in self.hardware),
            "settings": self.settings.to_dict(),
            "output": {"points": self.write_points},
        }


def _resolve(base: Path, text: str) -> str | Path:
    """A bundled id stays as it is; a relative path that exists beside the file is used."""
    p = base / text
    return p if not Path(text).is_absolute() and p.exists() else text


def _loaded(what: str, loader: Any, value: Any) -> Any:
    try:
        return loader(value)
    except CodesignError as exc:
        raise SpecError(f"{what}: {exc}") from None


def _nonempty(f: Fields, key: str) -> list:
    values = f.list(key)
    if not values:
        raise SpecError(f"{f.where}: field {key!r} must be a non-empty list")
    return values


def _scales(g: Fields, key: str) -> tuple[float, ...]:
    where = f"{g.where}: field {key!r}"
    values = g.list(key)
    out = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise SpecError(f"{where} entry {i} must be a number, got {v!r}")
        out.append(float(v))
    return tuple(out)


def _generator(g: Fields, base_dir: Path) -> list[SweepModel]:
    """Variants of a base model at constant parameter count (``advise.archsearch``)."""
    g.reject_unknown(GENERATOR_KEYS)
    base_id = g.str("variants_of")
    base = _loaded(f"{g.where}: field 'variants_of'", load_model, _resolve(base_dir, base_id))
    space_kw = {k: _scales(g, k) for k in SPACE_KEYS if g.has(k)}
    try:
        space = SearchSpace(**space_kw, align=g.int("align", DEFAULT_ALIGN, minimum=8))
    except SpecError as exc:
        raise SpecError(f"{g.where}: {exc}") from None
    tolerance = g.float("param_tolerance", DEFAULT_PARAM_TOLERANCE, positive=False, maximum=0.99)
    if tolerance < 0:
        raise SpecError(f"{g.where}: field 'param_tolerance' must lie in [0, 0.99]")
    limit = g.int("max_variants", 0, minimum=0) or None
    out = (
        [SweepModel(base.id, base, {"base_model": base.id})] if g.bool("include_base", True) else []
    )
    for c in generate_variants(base, space, space.align or DEFAULT_ALIGN, tolerance)[:limit]:
        changes = {k: list(v) for k, v in sorted(c.changes.items())}
        name = f"{base.id}~" + "-".join(f"{k}{v[1]}" for k, v in changes.items())
        out.append(SweepModel(name, c.model, {"base_model": base.id, "changes": changes}))
    return out


def _models(f: Fields, base_dir: Path) -> list[SweepModel]:
    out: list[SweepModel] = []
    for i, entry in enumerate(_nonempty(f, "models")):
        where = f"{f.where}: models entry {i}"
        if isinstance(entry, dict):
            g = Fields(entry, where)
            if g.has("variants_of"):
                out.extend(_generator(g, base_dir))
                continue
            g.reject_unknown({"id"})
            entry = g.str("id")
        if not isinstance(entry, str) or not entry:
            raise SpecError(
                f"{where} must be a model id, a config.json path or a mapping with 'id' or "
                f"'variants_of' (keys: {', '.join(sorted(GENERATOR_KEYS))}), got {entry!r}"
            )
        m = _loaded(where, load_model, _resolve(base_dir, entry))
        out.append(SweepModel(m.id, m, {"base_model": m.id}))
    names: dict[str, str] = {}
    unique = []
    for m in out:
        safe = SAFE_NAME.sub("_", m.name)
        if safe in names:
            if names[safe] == m.name:
                continue  # the same model twice (listed and generated): one cell set
            raise SpecError(f"{f.where}: models {names[safe]!r} and {m.name!r} share a name")
        names[safe] = m.name
        unique.append(SweepModel(safe, m.spec, m.info))
    return unique


def _ids(f: Fields, key: str, loader: Any) -> list[Any]:
    out = []
    seen = set()
    for i, v in enumerate(_nonempty(f, key)):
        if not isinstance(v, str) or not v:
            raise SpecError(f"{f.where}: {key} entry {i} must be an id string, got {v!r}")
        item = _loaded(f"{f.where}: {key} entry {i}", loader, v)
        if item.id not in seen:
            seen.add(item.id)
            out.append(item)
    return out


def _workloads(f: Fields) -> list[tuple[str, int, int]]:
    out: list[tuple[str, int, int]] = []
    for i, entry in enumerate(_nonempty(f, "workloads")):
        where = f"{f.where}: workloads entry {i}"
        if not isinstance(entry, dict):
            raise SpecError(f"{where} must be a mapping with isl, osl (and name), got {entry!r}")
        w = Fields(entry, where)
        w.reject_unknown(WORKLOAD_KEYS)
        isl, osl = w.int("isl", maximum=10_000_000), w.int("osl", maximum=10_000_000)
        name = w.str("name", f"{isl}x{osl}")
        if not name or SAFE_NAME.search(name):
            raise SpecError(f"{where}: name {name!r} may hold only letters, digits and ._~+-")
        if name in {n for n, _, _ in out}:
            raise SpecError(f"{where}: workload name {name!r} is used twice")
        out.append((name, isl, osl))
    return out


def _settings(f: Fields) -> CellSettings:
    p = f.mapping("plans", required=False)
    p.reject_unknown(PLAN_KEYS)
    t = f.mapping("targets", required=False)
    t.reject_unknown(TARGET_KEYS)

    def opt_int(key: str, maximum: int) -> int | None:
        return p.int(key, maximum=maximum) if p.has(key) else None

    def target(key: str) -> float | None:
        return t.float(key, maximum=1e9) if t.has(key) else None

    return CellSettings(
        num_gpus=p.int("num_gpus", 8, maximum=1_000_000),
        max_pp=opt_int("max_pp", 1024),
        helix=p.bool("helix", True),
        attention_dp=p.bool("attention_dp", True),
        disagg=p.bool("disagg", False),
        points_per_octave=p.int("points_per_octave", 4, maximum=4096),
        max_batch=opt_int("max_batch", 1_000_000),
        refine=p.bool("refine", False),
        ttft_ms=target("ttft_ms"),
        tpot_ms=target("tpot_ms"),
        min_tok_s_per_user=target("min_tok_s_per_user"),
    )


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and validate a sweep file (schema in this module's docstring).

    Example:
        >>> s = load_sweep("examples/sweep.yaml")  # doctest: +SKIP
        >>> len(s.cells()) == s.size
        True
    """
    p = Path(path)
    f = Fields(read_mapping(p), shown(str(p)))
    f.reject_unknown(TOP_KEYS)
    base_dir = p.parent
    models = _models(f, base_dir)
    emulate = f.bool("emulate", False)
    hardware = _ids(f, "hardware", lambda v: resolve_hardware(_resolve(base_dir, v)))
    if emulate:
        hardware = [h.with_overrides(emulate=True) for h in hardware]
    precisions = _ids(f, "precisions", parse_precision)
    workloads = _workloads(f)
    engine_name = f.str("engine", "") or None
    named = None if engine_name is None else _resolve(base_dir, engine_name)
    # the engine each GPU runs (one that runs on its vendor's GPUs): one for every cell where
    # they agree, else each GPU's own (None)
    per_gpu = [
        _loaded(f"{f.where}: field 'engine'", lambda e, h=h: load_engine(e, h), named)
        for h in hardware
    ]
    engine = None  # kept unresolved: each cell takes its GPU's limits (specs.gpu_defaults)
    if len({e.id for e in per_gpu}) == 1:
        engine = load_engine(per_gpu[0].id if named is None else named)
    settings = _settings(f)
    out = f.mapping("output", required=False)
    out.reject_unknown(OUTPUT_KEYS)
    spec = SweepSpec(
        models=tuple(models),
        hardware=tuple(hardware),
        precisions=tuple(precisions),
        workloads=tuple(workloads),
        engine=engine,
        settings=settings,
        write_points=out.bool("points", True),
        source=str(p),
    )
    if spec.size > MAX_CELLS:
        raise SpecError(f"{f.where}: {spec.size:,} cells is more than {MAX_CELLS:,}")
    return spec

"""Calibration profiles: what ``llm-codesign calibrate`` measured on a real machine, validated
and overlaid on a hardware spec so that the cost model uses measured silicon where it has it.

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
the measurements are the record, the derived figures a convenience for readers.

Overlay (``apply_profile``): the profile must come from the same device as the spec (else a
SpecError naming both). Measured GEMM throughput replaces the modelled compute time inside the
measured (M, N, K) range (:class:`GemmTable`); the best measured GEMM per dtype becomes that
dtype's sustained-ceiling fraction (``gemm_efficiency``); measured copy bandwidth becomes
``hbm_efficiency``; measured collective bus bandwidth ``scaleup_efficiency``. Measured attention
efficiencies and collective latencies live in the engine constants: ``calibrated_engine``
applies them (the engine's ``hbm_efficiency_scale`` stays a multiplier on the measured
``hbm_efficiency``, so the copy bandwidth is counted once). Everything not measured keeps its default, and
``provenance`` says which is which.

Example:
    >>> hw = apply_profile(load_hardware("h200-sxm"), "h200_quick.json")  # doctest: +SKIP
    >>> eng = calibrated_engine(load_engine("trtllm"), hw)  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import cost
from .errors import DataFileError, SpecError
from .ops import Op
from .specs._load import Fields, read_mapping
from .specs.engine import EngineConstants, load_engine
from .specs.hardware import (
    COMPUTE_CLASSES,
    Efficiency,
    HardwareSpec,
    bundled_hardware,
    hardware_alias_table,
    load_hardware,
)

Array = np.ndarray

PROFILE_VERSION = 1
DEVICE_KINDS = ("cpu", "cuda")
# GEMM/attention dtypes a profile may hold; each is also a compute class of the cost model
DTYPES = ("bf16", "fp16", "fp8", "tf32")
DTYPE_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "tf32": 4.0}
# output element bytes of the measured kernels (FP8 GEMMs write BF16)
OUT_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 2.0, "tf32": 4.0}
MEASUREMENT_KINDS = ("copy", "gemm", "attention_decode", "attention_prefill", "allreduce", "alltoall")
COMPARE_CLASSES = MEASUREMENT_KINDS

_TOP_KEYS = {"profile_version", "device", "settings", "measurements", "derived"}
_DEVICE_KEYS = {
    "name", "kind", "driver", "torch_version", "date", "hardware_id", "memory_bytes",
    "compute_units", "cache_bytes", "compute_capability", "device_count",
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
            out[f"{coll}_latency_s"] = min(r["seconds"] for r in rows[coll] if r["bytes"] == smallest)
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
            isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and t > 0 for t in times
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
        _consistent(where, "flops_per_s", row["flops_per_s"], 2.0 * row["m"] * row["n"] * row["k"] / row["seconds"])
    elif kind in ("allreduce", "alltoall"):
        n = row["ranks"]
        factor = 2.0 * (n - 1) / n if kind == "allreduce" else (n - 1) / n
        if n < 2:
            raise SpecError(f"{where}: field 'ranks' must be >= 2 for a collective, got {n}")
        _consistent(where, "bus_bytes_per_s", row["bus_bytes_per_s"], row["bytes"] / row["seconds"] * factor)
    return row


def _consistent(where: str, key: str, stated: float, expected: float) -> None:
    if abs(stated - expected) > _CONSISTENCY_RTOL * expected:
        raise SpecError(f"{where}: {key}={stated:.6g} does not follow from the row's sizes and seconds ({expected:.6g})")


def profile_from_mapping(data: dict[str, Any], where: str = "<profile>") -> Profile:
    """Validate a profile mapping (unknown, missing and mistyped keys raise SpecError naming
    ``where`` and the key)."""
    f = Fields(data, where)
    f.reject_unknown(_TOP_KEYS)
    version = f.int("profile_version")
    if version != PROFILE_VERSION:
        raise SpecError(f"{where}: profile_version {version} is not supported (this version reads {PROFILE_VERSION})")
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
        name=d.str("name"), kind=kind, driver=d.str("driver", ""), torch_version=d.str("torch_version", ""),
        date=d.str("date", ""), hardware_id=hid or None,
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
        measurements[kind_] = tuple(_row(kind_, r, f"{m.where}: {kind_}[{i}]") for i, r in enumerate(raw))
    if not any(measurements.values()):
        raise SpecError(f"{where}: the profile holds no measurements")
    return Profile(device=device, measurements=measurements, settings=dict(settings), source=where)


def load_profile(profile: Profile | dict[str, Any] | str | Path, where: str | None = None) -> Profile:
    """A validated :class:`Profile` from a Profile, a mapping or a JSON/YAML path."""
    if isinstance(profile, Profile):
        return profile
    if isinstance(profile, dict):
        return profile_from_mapping(profile, where or "<profile>")
    path = Path(profile)
    if not path.is_file():
        raise DataFileError(f"calibration profile {str(path)!r}: no such file")
    data = read_mapping(path)
    if "profile_version" not in data:
        raise DataFileError(f"{path}: not a calibration profile (no 'profile_version' key)")
    return profile_from_mapping(data, where or str(path))


def save_profile(profile: Profile | dict[str, Any], path: str | Path) -> Profile:
    """Validate and write a profile as JSON; returns the validated profile."""
    p = load_profile(profile, str(path))
    out = Path(path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(p.to_dict(), indent=1, allow_nan=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise DataFileError(f"{out}: cannot write the profile ({exc.strerror})") from None
    return p


# --------------------------------------------------------------------------------------------
# device matching
# --------------------------------------------------------------------------------------------

_VENDOR_PREFIXES = ("nvidia ", "amd ")


def _norm(name: str) -> str:
    return " ".join(re.sub(r"[-_/(),]+", " ", name.lower()).split())


def match_hardware_id(device_name: str) -> str | None:
    """The bundled hardware id whose name, id or alias is the device's name (vendor prefix
    optional, dashes = spaces), else None. ``"NVIDIA H200"`` -> ``h200-sxm``; ``"NVIDIA H100
    PCIe"`` -> None (a different product from the H100 SXM)."""
    table: dict[str, str] = {}
    for key, hid in hardware_alias_table().items():
        table[_norm(key)] = hid
    for spec in bundled_hardware().values():
        table[_norm(spec.name)] = spec.id
    name = _norm(device_name)
    candidates = [name] + [name[len(p):] for p in _VENDOR_PREFIXES if name.startswith(p)]
    for c in candidates:
        if c in table:
            return table[c]
    return None


def _device_matches(p: Profile, hw: HardwareSpec) -> bool:
    if p.device.hardware_id == hw.id:
        return True
    if match_hardware_id(p.device.name) == hw.id:
        return True
    if hw.id == f"measured-{_slug(p.device.name)}":  # a spec built from a profile of this device
        return True
    names = {_norm(hw.name), _norm(hw.id), *(_norm(a) for a in hw.aliases)}
    return _norm(p.device.name) in names


# --------------------------------------------------------------------------------------------
# measured GEMM throughput over (M, N, K)
# --------------------------------------------------------------------------------------------


class GemmTable:
    """Measured GEMM throughput of one device, interpolated over (M, N, K).

    Interpolation is on the *residual*, not on raw FLOP/s: for each measured shape the table
    keeps r = measured FLOP/s / modelled FLOP/s (the cost model's roofline on the same spec,
    without a table). A query gets the modelled FLOP/s of its own shape times r interpolated
    by inverse-distance weighting (power 2, the ``neighbours`` nearest points) over
    (log2 M, log2 N, log2 K). So the table reproduces every measurement exactly, and between
    measured shapes keeps the model's tile, wave and alignment structure, corrected by the
    nearby measurements. Outside the measured box of a dtype, or farther than ``max_gap_log2``
    from every measured shape, it returns NaN and the cost model keeps its own estimate.

    ``profile`` (optional) is the profile the table came from: :func:`calibrated_engine` and
    :func:`provenance` read it from ``hw.gemm_table``.
    """

    def __init__(
        self, rows: Iterable[dict[str, Any]], hw: HardwareSpec, *, engine: EngineConstants | None = None,
        profile: Profile | None = None, neighbours: int = 4, max_gap_log2: float = 2.0,
    ):
        self.hw = hw.with_overrides(gemm_table=None, profile_source="")
        self.engine = engine or _baseline_engine()
        self.profile = profile
        self.neighbours = neighbours
        self.max_gap_log2 = max_gap_log2
        self._points: dict[str, Array] = {}
        self._log_ratio: dict[str, Array] = {}
        self.skipped: list[str] = []
        by_class: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            if not self.hw.supports(r["dtype"]):
                self.skipped.append(f"{r['dtype']} {r['m']}x{r['n']}x{r['k']}: {hw.id} has no native {r['dtype']}")
                continue
            by_class.setdefault(r["dtype"], []).append(r)
        for cls, rs in by_class.items():
            m = np.array([r["m"] for r in rs], dtype=float)
            n = np.array([r["n"] for r in rs], dtype=float)
            k = np.array([r["k"] for r in rs], dtype=float)
            measured = np.array([r["flops_per_s"] for r in rs], dtype=float)
            modelled = self.modelled_flops_per_s(cls, m, n, k)
            self._points[cls] = np.log2(np.stack([m, n, k], axis=-1))
            self._log_ratio[cls] = np.log2(measured / modelled)

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(sorted(self._points))

    def count(self, compute_class: str | None = None) -> int:
        if compute_class is None:
            return sum(len(p) for p in self._points.values())
        return len(self._points.get(compute_class, ()))

    def modelled_flops_per_s(self, compute_class: str, m: Array, n: Array, k: Array) -> Array:
        """The roofline model's throughput for these shapes on the table's spec (no table)."""
        eb = DTYPE_BYTES.get(compute_class, 2.0)
        op = Op("calibration", "ffn", "gemm", 1.0, m=m, n=n, k=k, w_bytes=eb, a_bytes=eb,
                o_bytes=OUT_BYTES.get(compute_class, 2.0), compute_class=compute_class)
        t, _, _ = cost.gemm_time(op, self.hw, self.engine)
        return 2.0 * np.asarray(m) * n * k / np.maximum(t, 1e-30)

    def flops_per_s(self, compute_class: str, m: Any, n: Any, k: Any) -> Array | None:
        """Measured-corrected FLOP/s for GEMMs of (m, n, k) (broadcast); NaN where not covered;
        None when nothing of this class was measured."""
        if compute_class not in self._points:
            return None
        mb, nb, kb = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (m, n, k)))
        out = np.full(mb.shape, np.nan)
        pts = self._points[compute_class]
        lo, hi = pts.min(axis=0) - 1e-9, pts.max(axis=0) + 1e-9
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.log2(np.stack([mb, nb, kb], axis=-1).reshape(-1, 3))
        ok = np.all(np.isfinite(q), axis=1) & np.all((q >= lo) & (q <= hi), axis=1)
        if not np.any(ok):
            return out
        uq, inverse = np.unique(q[ok], axis=0, return_inverse=True)
        ratio = self._interpolate(compute_class, uq)
        u = np.exp2(uq)
        model = self.modelled_flops_per_s(compute_class, u[:, 0], u[:, 1], u[:, 2])
        flat = out.reshape(-1)
        flat[np.flatnonzero(ok)] = (model * np.exp2(ratio))[inverse.reshape(-1)]
        return flat.reshape(mb.shape)

    def _interpolate(self, compute_class: str, q: Array, chunk: int = 4096) -> Array:
        pts = self._points[compute_class]
        vals = self._log_ratio[compute_class]
        kk = min(self.neighbours, len(pts))
        out = np.empty(len(q))
        for s in range(0, len(q), chunk):
            d2 = np.sum((q[s:s + chunk, None, :] - pts[None, :, :]) ** 2, axis=-1)
            idx = np.argpartition(d2, kk - 1, axis=1)[:, :kk]
            dn = np.take_along_axis(d2, idx, axis=1)
            w = 1.0 / np.maximum(dn, 1e-12)  # power 2 on the distance
            est = np.sum(w * vals[idx], axis=1) / np.sum(w, axis=1)
            nearest = np.min(dn, axis=1)
            est = np.where(nearest > self.max_gap_log2**2, np.nan, est)
            out[s:s + chunk] = est
        return out

    def __repr__(self) -> str:
        counts = ", ".join(f"{c}: {self.count(c)}" for c in self.classes)
        return f"GemmTable({self.hw.id}; {counts or 'empty'})"


def profile_of(hw: HardwareSpec) -> Profile | None:
    """The calibration profile a spec carries (via its GemmTable), if any."""
    table = hw.gemm_table
    return getattr(table, "profile", None) if table is not None else None


# --------------------------------------------------------------------------------------------
# overlay: profile on a datasheet spec, and a spec from a profile alone
# --------------------------------------------------------------------------------------------


def _where(p: Profile) -> str:
    return f"{p.source}: {p.device.name}, {p.device.date or 'undated'}"


def apply_profile(hw: HardwareSpec | str | Path, profile: Profile | dict[str, Any] | str | Path) -> HardwareSpec:
    """The spec ``hw`` with a calibration profile of the same device overlaid.

    Sets ``gemm_table`` (measured throughput over (M, N, K)), ``gemm_efficiency`` per measured
    dtype (best measured / datasheet peak), ``hbm_efficiency`` (copy bandwidth / datasheet,
    capped at 1), ``scaleup_efficiency`` (collective bus bandwidth / link bandwidth, capped at 1)
    and ``profile_source``. Raises SpecError if the profile was measured on another device.

    Example:
        >>> hw = apply_profile("h200-sxm", "h200_quick.json")  # doctest: +SKIP
        >>> hw.hbm_efficiency.source.startswith("measured")  # doctest: +SKIP
        True
    """
    hw = load_hardware(hw)
    p = load_profile(profile)
    if not _device_matches(p, hw):
        raise SpecError(
            f"calibration profile {p.source} was measured on {p.device.name!r} "
            f"({p.device.hardware_id or 'no bundled spec'}) but is applied to {hw.id} ({hw.name}); "
            f"pass the profile as --hardware to model the measured device"
        )
    return _overlay(hw, p)


def _overlay(hw: HardwareSpec, p: Profile) -> HardwareSpec:
    d = p.derived
    where = _where(p)
    changes: dict[str, Any] = {}
    gemm = dict(hw.gemm_efficiency)
    for cls, best in d.get("peak_flops_per_s", {}).items():
        if hw.supports(cls):
            n = sum(1 for r in p.rows("gemm") if r["dtype"] == cls)
            gemm[cls] = Efficiency(
                min(best / hw.peak_flops(cls), 1.0),
                f"{MEASURED}: best of {n} GEMM shapes {best / 1e12:.4g} TFLOP/s / datasheet "
                f"{hw.peak_flops(cls) / 1e12:.4g} ({where})",
            )
    changes["gemm_efficiency"] = gemm
    bw = d.get("hbm_bytes_per_s")
    if bw:
        changes["hbm_efficiency"] = Efficiency(
            min(bw / hw.hbm_bytes_per_s, 1.0),
            f"{MEASURED}: device copy {bw / 1e12:.4g} TB/s (read + write) / datasheet "
            f"{hw.hbm_bytes_per_s / 1e12:.4g} ({where})",
        )
    busbw = d.get("allreduce_bus_bytes_per_s")
    if busbw and hw.scaleup_bytes_per_s > 0:
        changes["scaleup_efficiency"] = Efficiency(
            min(busbw / hw.scaleup_bytes_per_s, 1.0),
            f"{MEASURED}: all-reduce bus bandwidth {busbw / 1e9:.4g} GB/s over {d['allreduce_ranks']} GPUs / "
            f"link {hw.scaleup_bytes_per_s / 1e9:.4g} ({where})",
        )
    base = hw.with_overrides(**changes, gemm_table=None)
    table = GemmTable(p.rows("gemm"), base, engine=_baseline_engine(), profile=p)
    return base.with_overrides(gemm_table=table, profile_source=where)


def _baseline_engine() -> EngineConstants:
    """Engine constants of the table's residual baseline: the defaults. The table's spec
    already carries the measured streaming bandwidth as ``hbm_efficiency`` (so small-M,
    memory-bound shapes have a sensible baseline)."""
    return load_engine(None).with_overrides(id="calibration-baseline")


_ARCH_BY_CC = {"8.0": "ampere", "8.6": "ampere", "8.7": "ampere", "8.9": "ada", "9.0": "hopper",
               "10.0": "blackwell", "10.3": "blackwell-ultra", "12.0": "blackwell-rtx"}


def _slug(text: str) -> str:
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9]+", "-", text.lower())).strip("-") or "device"


def measured_hardware(profile: Profile | dict[str, Any] | str | Path) -> HardwareSpec:
    """A spec built from a profile's measurements alone (a new GPU, a CPU).

    Peaks are the best measured GEMM FLOP/s per dtype (so every efficiency is 1.0, source
    ``measured``), bandwidth the best copy bandwidth, memory and compute units (SMs or CPU
    threads) what the device reported; GEMM tiles 64x64 on a CPU, 128x128 on an unknown GPU;
    one device per scale-up domain unless collectives were measured. TDP is not measured: NaN.
    """
    p = load_profile(profile)
    d = p.derived
    dev = p.device
    where = _where(p)
    peaks = {c: v for c, v in d.get("peak_flops_per_s", {}).items() if c in COMPUTE_CLASSES}
    if not peaks:
        raise SpecError(f"{p.source}: the profile has no GEMM measurement to take peak FLOP/s from")
    bw = d.get("hbm_bytes_per_s")
    if not bw:
        raise SpecError(f"{p.source}: the profile has no copy measurement to take memory bandwidth from")
    for key in ("memory_bytes", "compute_units"):
        if getattr(dev, key) is None:
            raise SpecError(f"{p.source}: device: missing required field {key!r} for a measured-only spec")
    if dev.kind == "cpu":
        arch, vendor, tile = "cpu", "cpu", (64, 64)
    else:
        arch = _ARCH_BY_CC.get(dev.compute_capability or "", "")
        if not arch:
            raise SpecError(
                f"{p.source}: device compute capability {dev.compute_capability!r} maps to no known "
                f"architecture ({', '.join(f'{k}={v}' for k, v in _ARCH_BY_CC.items())})"
            )
        vendor, tile = "nvidia", (128, 128)
    measured_eff = Efficiency(1.0, f"{MEASURED}: the peak is the best measured figure ({where})")
    ranks = int(d.get("allreduce_ranks", 1))
    busbw = d.get("allreduce_bus_bytes_per_s")
    # one device per domain when no collective was measured: the link is never crossed, and
    # an unbounded bandwidth keeps the zero-byte collective terms exactly 0 (no 0/0)
    hw = HardwareSpec(
        id=f"measured-{_slug(dev.name)}",
        name=f"{dev.name} (measured)",
        vendor=vendor,
        architecture=arch,
        peak_flops_per_s=dict(sorted(peaks.items())),
        hbm_bytes=float(dev.memory_bytes),  # type: ignore[arg-type]
        hbm_bytes_per_s=float(bw),
        sm_count=int(dev.compute_units),  # type: ignore[arg-type]
        l2_bytes=dev.cache_bytes,
        boost_clock_hz=None,
        tdp_w=math.nan,
        scaleup_technology="measured" if busbw else "none",
        scaleup_bytes_per_s=float(busbw) if busbw else math.inf,
        scaleup_domain_size=ranks if busbw else 1,
        scaleout_bytes_per_s=0.0,
        tile_m=tile[0],
        tile_n=tile[1],
        tile_cluster_sms=1,
        gemm_efficiency={c: measured_eff for c in peaks},
        hbm_efficiency=measured_eff,
        scaleup_efficiency=measured_eff,
        sources={"profile": where},
        notes="built from a calibration profile's measurements alone; tdp_w not measured (NaN)",
    )
    table = GemmTable(p.rows("gemm"), hw, engine=_baseline_engine(), profile=p)
    return hw.with_overrides(gemm_table=table, profile_source=where)


def hardware_from_profile(data: dict[str, Any], where: str) -> HardwareSpec:
    """A calibration profile used as ``--hardware``: the bundled spec of the measured device
    with the profile overlaid when one exists, else a spec from the measurements alone
    (:func:`measured_hardware`). Called by ``specs.hardware.load_hardware``."""
    p = profile_from_mapping(data, where)
    hid = p.device.hardware_id if p.device.hardware_id in bundled_hardware() else match_hardware_id(p.device.name)
    if hid is not None:
        return _overlay(bundled_hardware()[hid], p)
    return measured_hardware(p)


# --------------------------------------------------------------------------------------------
# engine constants and provenance
# --------------------------------------------------------------------------------------------


def engine_overrides(hw: HardwareSpec, profile: Profile | None = None) -> dict[str, tuple[float, str]]:
    """Engine constants a profile measured for this spec: ``{field: (value, source)}``.

    ``attn_decode_efficiency`` = best decode-attention bytes/s / spec bandwidth;
    ``attn_prefill_efficiency`` = best prefill-attention FLOP/s / spec peak of that dtype;
    ``allreduce_latency_s`` and ``alltoall_latency_s`` = the smallest measured message's time.
    Fractions are capped at 1. The copy bandwidth is not here: :func:`apply_profile` makes it
    the spec's ``hbm_efficiency``, which the engine's ``hbm_efficiency_scale`` multiplies.
    """
    p = profile or profile_of(hw)
    if p is None:
        return {}
    d = p.derived
    where = _where(p)
    out: dict[str, tuple[float, str]] = {}
    # the copy bandwidth is the spec's hbm_efficiency (apply_profile), not an engine constant
    dec = d.get("attention_decode_bytes_per_s", {})
    if dec:
        best = max(dec.values())
        out["attn_decode_efficiency"] = (min(best / hw.hbm_bytes_per_s, 1.0), f"{MEASURED}: decode SDPA KV read ({where})")
    pre = {c: v for c, v in d.get("attention_prefill_flops_per_s", {}).items() if hw.supports(c)}
    if pre:
        cls, best = max(pre.items(), key=lambda kv: kv[1] / hw.peak_flops(kv[0]))
        out["attn_prefill_efficiency"] = (min(best / hw.peak_flops(cls), 1.0), f"{MEASURED}: prefill SDPA {cls} ({where})")
    for coll in ("allreduce", "alltoall"):
        lat = d.get(f"{coll}_latency_s")
        if lat is not None and lat < 1.0:
            out[f"{coll}_latency_s"] = (lat, f"{MEASURED}: smallest {coll} message ({where})")
    return out


def calibrated_engine(engine: EngineConstants | str | Path | None, hw: HardwareSpec, profile: Profile | None = None) -> EngineConstants:
    """Engine constants with the profile's measured efficiencies and latencies in place of the
    defaults; unchanged when ``hw`` carries no profile. Sources are recorded in ``sources``."""
    eng = load_engine(engine)
    ov = engine_overrides(hw, profile)
    if not ov:
        return eng
    sources = dict(eng.sources)
    sources.update({k: src for k, (_, src) in ov.items()})
    return eng.with_overrides(**{k: v for k, (v, _) in ov.items()}, sources=sources)


def provenance(hw: HardwareSpec, engine: EngineConstants | None = None) -> list[dict[str, Any]]:
    """What a profiled spec takes from measurements and what stays default: one row per
    quantity, ``{"quantity", "value", "origin": "measured"|"default", "source"}``."""
    p = profile_of(hw)
    eng = engine or load_engine(None)
    ov = engine_overrides(hw, p) if p is not None else {}
    rows: list[dict[str, Any]] = []

    def origin(src: str) -> str:
        return MEASURED if src.startswith(MEASURED) else DEFAULT

    table = hw.gemm_table
    for cls in hw.native_classes:
        e = hw.gemm_efficiency_for(cls)
        n = table.count(cls) if isinstance(table, GemmTable) else 0
        rows.append({"quantity": f"gemm_efficiency.{cls}", "value": e.value, "origin": origin(e.source), "source": e.source})
        rows.append({"quantity": f"gemm_table.{cls}", "value": n, "origin": MEASURED if n else DEFAULT,
                     "source": f"{n} measured shapes, interpolated in range" if n else "tile/wave model only"})
    rows.append({"quantity": "hbm_efficiency", "value": hw.hbm_efficiency.value, "origin": origin(hw.hbm_efficiency.source), "source": hw.hbm_efficiency.source})
    rows.append({"quantity": "scaleup_efficiency", "value": hw.scaleup_efficiency.value, "origin": origin(hw.scaleup_efficiency.source), "source": hw.scaleup_efficiency.source})
    for name in ("hbm_efficiency_scale", "attn_decode_efficiency", "attn_prefill_efficiency", "allreduce_latency_s", "alltoall_latency_s"):
        if name in ov:
            rows.append({"quantity": f"engine.{name}", "value": ov[name][0], "origin": MEASURED, "source": ov[name][1]})
        else:
            rows.append({"quantity": f"engine.{name}", "value": getattr(eng, name), "origin": DEFAULT,
                         "source": eng.sources.get(name, f"engine {eng.id} default")})
    return rows


# --------------------------------------------------------------------------------------------
# predicted vs measured
# --------------------------------------------------------------------------------------------


@dataclass
class Comparison:
    """Predicted vs measured time of every microbenchmark in a profile."""

    hardware: str
    engine: str
    overlay: bool
    rows: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)

    @property
    def summary(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for cls in COMPARE_CLASSES:
            errs = [abs(r["error_pct"]) for r in self.rows if r["benchmark"] == cls]
            if errs:
                out[cls] = {"median_abs_pct_error": statistics.median(errs), "count": len(errs)}
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"hardware": self.hardware, "engine": self.engine, "overlay": self.overlay,
                "notes": self.notes, "rows": self.rows, "summary": self.summary}


def compare(
    profile: Profile | dict[str, Any] | str | Path,
    hardware: HardwareSpec | str | Path | None = None,
    engine: EngineConstants | str | Path | None = None,
    *,
    overlay: bool = False,
) -> Comparison:
    """Predicted vs measured time for every microbenchmark of a profile.

    The prediction uses ``hardware`` (default: the bundled spec of the measured device, else a
    spec from the measurements alone) *without* the profile's GEMM table, so the comparison
    tests the cost model's own tile/wave, memory and attention assumptions; ``overlay=True``
    overlays the profile first (then GEMM rows reproduce the measurements: a self-check).
    ``error_pct`` = 100 (predicted - measured) / measured.
    """
    p = load_profile(profile)
    notes: list[str] = []
    eng = load_engine(engine)
    measured_only = False
    if hardware is None:
        hid = p.device.hardware_id if p.device.hardware_id in bundled_hardware() else match_hardware_id(p.device.name)
        if hid is not None:
            hw = bundled_hardware()[hid]
            notes.append(f"predictions on the datasheet spec {hid}")
        else:
            hw, measured_only = measured_hardware(p), True
            notes.append(f"no bundled spec for {p.device.name!r}: peaks and bandwidth are the best measured "
                         "figures, so the comparison tests the shape of the model (tile/wave, sizes)")
    else:
        hw = load_hardware(hardware)
    if overlay:
        if profile_of(hw) is None:
            hw = apply_profile(hw, p)
        eng = calibrated_engine(eng, hw)
        notes.append("profile overlaid: GEMM table, measured efficiencies and latencies")
    else:
        if hw.gemm_table is not None:
            hw = hw.with_overrides(gemm_table=None, profile_source="")
        if measured_only:  # the spec's bandwidth is itself the measured peak: stream at all of it
            eng = eng.with_overrides(hbm_efficiency_scale=1.0)
    rows: list[dict[str, Any]] = []

    def add(bench: str, label: str, dtype: str, measured: float, predicted: float, extra: dict[str, Any]) -> None:
        rows.append({"benchmark": bench, "shape": label, "dtype": dtype, "measured_s": measured,
                     "predicted_s": predicted, "error_pct": 100.0 * (predicted - measured) / measured, **extra})

    for r in p.rows("copy"):
        op = Op("copy", "other", "memory", 1.0, bytes=2.0 * r["bytes"])
        t = float(cost.memory_time(op, hw, eng))
        add("copy", f"{r['bytes'] / 2**20:.6g} MiB", "-", r["seconds"], t,
            {"measured_rate": r["bytes_per_s"], "predicted_rate": 2.0 * r["bytes"] / t, "unit": "B/s"})
    for r in p.rows("gemm"):
        cls = r["dtype"]
        if not hw.supports(cls):
            notes.append(f"gemm {cls} {r['m']}x{r['n']}x{r['k']}: {hw.id} has no native {cls}; skipped")
            continue
        eb = DTYPE_BYTES[cls]
        op = Op("gemm", "ffn", "gemm", 1.0, m=float(r["m"]), n=float(r["n"]), k=float(r["k"]),
                w_bytes=eb, a_bytes=eb, o_bytes=OUT_BYTES[cls], compute_class=cls)
        t_arr, c_arr, mem_arr = cost.gemm_time(op, hw, eng)
        t = float(t_arr)
        flops = 2.0 * r["m"] * r["n"] * r["k"]
        add("gemm", f"{r['m']}x{r['n']}x{r['k']}", cls, r["seconds"], t,
            {"measured_rate": r["flops_per_s"], "predicted_rate": flops / t, "unit": "FLOP/s",
             "bound": "compute" if float(c_arr) >= float(mem_arr) else "memory"})
    for bench, phase in (("attention_decode", "decode"), ("attention_prefill", "prefill")):
        for r in p.rows(bench):
            op = Op(bench, "attention", "attention", 1.0, flops=r["flops"], bytes=r["bytes"], phase=phase,
                    compute_class=r["dtype"])
            t_arr, c_arr, mem_arr = cost.attention_time(op, hw, eng)
            t = float(t_arr)
            label = f"B{r['batch']} H{r['heads']}/{r['kv_heads']} D{r['head_dim']} S{r['seq']}"
            add(bench, label, r["dtype"], r["seconds"], t,
                {"measured_rate": r["flops"] / r["seconds"], "predicted_rate": r["flops"] / t, "unit": "FLOP/s",
                 "bound": "compute" if float(c_arr) >= float(mem_arr) else "memory"})
    for coll in ("allreduce", "alltoall"):
        for r in p.rows(coll):
            t = float(cost.collective_time(coll, r["bytes"], r["ranks"], hw, eng))
            factor = 2.0 * (r["ranks"] - 1) / r["ranks"] if coll == "allreduce" else (r["ranks"] - 1) / r["ranks"]
            add(coll, f"{r['bytes'] / 2**10:.6g} KiB x {r['ranks']}", "-", r["seconds"], t,
                {"measured_rate": r["bus_bytes_per_s"], "predicted_rate": r["bytes"] / t * factor, "unit": "B/s"})
    return Comparison(hardware=hw.id, engine=eng.id, overlay=overlay, rows=rows, notes=notes)

"""Overlay: a calibration profile applied to a hardware spec and to engine constants, so that
the cost model uses measured silicon where it has it.

The profile must come from the same device as the spec (else a SpecError naming both).
Measured GEMM throughput replaces the modelled compute time inside the measured (M, N, K)
range (:class:`GemmTable`); the best measured GEMM per dtype becomes that dtype's
sustained-ceiling fraction (``gemm_efficiency``); measured copy bandwidth becomes
``hbm_efficiency``; measured collective bus bandwidth ``scaleup_efficiency``. Measured
attention efficiencies and collective latencies live in the engine constants:
:func:`calibrated_engine` applies them (the engine's ``hbm_efficiency_scale`` stays a
multiplier on the measured ``hbm_efficiency``, so the copy bandwidth is counted once).
Everything not measured keeps its default, and :func:`provenance` says which is which.

A profile is also a GPU of its own for the interfaces (``--hardware profile.json``):
:func:`resolve_hardware` is :func:`llm_codesign.specs.load_hardware` plus that case.

Example:
    >>> hw = apply_profile(load_hardware("h200-sxm"), "h200_quick.json")  # doctest: +SKIP
    >>> eng = calibrated_engine(load_engine("trtllm"), hw)  # doctest: +SKIP
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from .. import cost
from ..errors import SpecError
from ..ops import Op
from ..specs._load import existing_file, read_mapping
from ..specs.engine import EngineConstants, load_engine
from ..specs.hardware import (
    COMPUTE_CLASSES,
    Efficiency,
    HardwareSpec,
    bundled_hardware,
    hardware_alias_table,
    hardware_from_mapping,
    load_hardware,
)
from .profile import (
    DEFAULT,
    MEASURED,
    Profile,
    device_name_key,
    element_bytes,
    load_profile,
    match_hardware_id,
    output_bytes,
    profile_from_mapping,
)

Array = np.ndarray


def _device_matches(p: Profile, hw: HardwareSpec) -> bool:
    if p.device.hardware_id == hw.id:
        return True
    if match_hardware_id(p.device.name) == hw.id:
        return True
    if hw.id == f"measured-{_slug(p.device.name)}":  # a spec built from a profile of this device
        return True
    names = {
        device_name_key(hw.name),
        device_name_key(hw.id),
        *(device_name_key(a) for a in hw.aliases),
    }
    return device_name_key(p.device.name) in names


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
        self,
        rows: Iterable[dict[str, Any]],
        hw: HardwareSpec,
        *,
        engine: EngineConstants | None = None,
        profile: Profile | None = None,
        neighbours: int = 4,
        max_gap_log2: float = 2.0,
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
                self.skipped.append(
                    f"{r['dtype']} {r['m']}x{r['n']}x{r['k']}: {hw.id} has no native {r['dtype']}"
                )
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
        eb = element_bytes(compute_class)
        op = Op(
            "calibration",
            "ffn",
            "gemm",
            1.0,
            m=m,
            n=n,
            k=k,
            w_bytes=eb,
            a_bytes=eb,
            o_bytes=output_bytes(compute_class),
            compute_class=compute_class,
        )
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
            d2 = np.sum((q[s : s + chunk, None, :] - pts[None, :, :]) ** 2, axis=-1)
            idx = np.argpartition(d2, kk - 1, axis=1)[:, :kk]
            dn = np.take_along_axis(d2, idx, axis=1)
            w = 1.0 / np.maximum(dn, 1e-12)  # power 2 on the distance
            est = np.sum(w * vals[idx], axis=1) / np.sum(w, axis=1)
            nearest = np.min(dn, axis=1)
            est = np.where(nearest > self.max_gap_log2**2, np.nan, est)
            out[s : s + chunk] = est
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


def apply_profile(
    hw: HardwareSpec | str | Path, profile: Profile | dict[str, Any] | str | Path
) -> HardwareSpec:
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
    hw = resolve_hardware(hw)
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
            f"{MEASURED}: all-reduce bus bandwidth {busbw / 1e9:.4g} GB/s over "
            f"{d['allreduce_ranks']} GPUs / link {hw.scaleup_bytes_per_s / 1e9:.4g} ({where})",
        )
    mem = p.device.memory_bytes  # the total the driver exposes (torch's total_memory)
    if mem and mem <= hw.hbm_bytes:
        changes["device_memory_bytes"] = float(mem)
        changes["device_memory_source"] = f"{MEASURED}: torch total_memory ({where})"
    base = hw.with_overrides(**changes, gemm_table=None)
    table = GemmTable(p.rows("gemm"), base, engine=_baseline_engine(), profile=p)
    return base.with_overrides(gemm_table=table, profile_source=where)


def _baseline_engine() -> EngineConstants:
    """Engine constants of the table's residual baseline: the defaults. The table's spec
    already carries the measured streaming bandwidth as ``hbm_efficiency`` (so small-M,
    memory-bound shapes have a sensible baseline)."""
    return load_engine(None).with_overrides(id="calibration-baseline")


_ARCH_BY_CC = {
    "8.0": "ampere",
    "8.6": "ampere",
    "8.7": "ampere",
    "8.9": "ada",
    "9.0": "hopper",
    "10.0": "blackwell",
    "10.3": "blackwell-ultra",
    "12.0": "blackwell-rtx",
}


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
        raise SpecError(
            f"{p.source}: the profile has no copy measurement to take memory bandwidth from"
        )
    for key in ("memory_bytes", "compute_units"):
        if getattr(dev, key) is None:
            raise SpecError(
                f"{p.source}: device: missing required field {key!r} for a measured-only spec"
            )
    if dev.kind == "cpu":
        arch, vendor, tile = "cpu", "cpu", (64, 64)
    else:
        arch = _ARCH_BY_CC.get(dev.compute_capability or "", "")
        if not arch:
            raise SpecError(
                f"{p.source}: device compute capability {dev.compute_capability!r} maps to no "
                f"known architecture ({', '.join(f'{k}={v}' for k, v in _ARCH_BY_CC.items())})"
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
    (:func:`measured_hardware`). Called by :func:`resolve_hardware`."""
    p = profile_from_mapping(data, where)
    hid = (
        p.device.hardware_id
        if p.device.hardware_id in bundled_hardware()
        else match_hardware_id(p.device.name)
    )
    if hid is not None:
        return _overlay(bundled_hardware()[hid], p)
    return measured_hardware(p)


def resolve_hardware(hardware: str | Path | HardwareSpec) -> HardwareSpec:
    """A GPU as the interfaces take it: what :func:`~llm_codesign.specs.load_hardware` takes (a
    spec, a bundled id or alias, a YAML/JSON spec file) or a calibration profile file (one with
    ``profile_version``), read by :func:`hardware_from_profile`.

    Example:
        >>> resolve_hardware("h200_quick.json").profile_source  # doctest: +SKIP
    """
    if isinstance(hardware, HardwareSpec):
        return hardware
    text = str(hardware)
    if text in bundled_hardware() or text.lower() in hardware_alias_table():
        return load_hardware(text)
    path = existing_file(text)
    if path is not None:
        data = read_mapping(path)
        if "profile_version" in data:  # a calibration profile is a spec too
            return hardware_from_profile(data, str(path))
        return hardware_from_mapping(data, str(path))
    return load_hardware(text)  # raises the unknown-hardware error


# --------------------------------------------------------------------------------------------
# engine constants and provenance
# --------------------------------------------------------------------------------------------


def engine_overrides(
    hw: HardwareSpec, profile: Profile | None = None
) -> dict[str, tuple[float, str]]:
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
        out["attn_decode_efficiency"] = (
            min(best / hw.hbm_bytes_per_s, 1.0),
            f"{MEASURED}: decode SDPA KV read ({where})",
        )
    pre = {c: v for c, v in d.get("attention_prefill_flops_per_s", {}).items() if hw.supports(c)}
    if pre:
        cls, best = max(pre.items(), key=lambda kv: kv[1] / hw.peak_flops(kv[0]))
        out["attn_prefill_efficiency"] = (
            min(best / hw.peak_flops(cls), 1.0),
            f"{MEASURED}: prefill SDPA {cls} ({where})",
        )
    for coll in ("allreduce", "alltoall"):
        lat = d.get(f"{coll}_latency_s")
        if lat is not None and lat < 1.0:
            out[f"{coll}_latency_s"] = (lat, f"{MEASURED}: smallest {coll} message ({where})")
    return out


def calibrated_engine(
    engine: EngineConstants | str | Path | None, hw: HardwareSpec, profile: Profile | None = None
) -> EngineConstants:
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
        rows.append(
            {
                "quantity": f"gemm_efficiency.{cls}",
                "value": e.value,
                "origin": origin(e.source),
                "source": e.source,
            }
        )
        rows.append(
            {
                "quantity": f"gemm_table.{cls}",
                "value": n,
                "origin": MEASURED if n else DEFAULT,
                "source": f"{n} measured shapes, interpolated in range"
                if n
                else "tile/wave model only",
            }
        )
    rows.append(
        {
            "quantity": "hbm_efficiency",
            "value": hw.hbm_efficiency.value,
            "origin": origin(hw.hbm_efficiency.source),
            "source": hw.hbm_efficiency.source,
        }
    )
    rows.append(
        {
            "quantity": "scaleup_efficiency",
            "value": hw.scaleup_efficiency.value,
            "origin": origin(hw.scaleup_efficiency.source),
            "source": hw.scaleup_efficiency.source,
        }
    )
    for name in (
        "hbm_efficiency_scale",
        "attn_decode_efficiency",
        "attn_prefill_efficiency",
        "allreduce_latency_s",
        "alltoall_latency_s",
    ):
        if name in ov:
            rows.append(
                {
                    "quantity": f"engine.{name}",
                    "value": ov[name][0],
                    "origin": MEASURED,
                    "source": ov[name][1],
                }
            )
        else:
            rows.append(
                {
                    "quantity": f"engine.{name}",
                    "value": getattr(eng, name),
                    "origin": DEFAULT,
                    "source": eng.sources.get(name, f"engine {eng.id} default"),
                }
            )
    return rows

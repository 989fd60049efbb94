"""Predicted vs measured: the cost model's time for every microbenchmark of a calibration
profile, on the datasheet spec (a test of the model) or with the profile overlaid (a self-check).

Example:
    >>> compare("h200_quick.json").summary["gemm"]["median_abs_pct_error"]  # doctest: +SKIP
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import comm, cost
from ..ops import Op
from ..specs.engine import EngineConstants, load_engine
from ..specs.hardware import HardwareSpec, bundled_hardware
from .overlay import (
    apply_profile,
    calibrated_engine,
    measured_hardware,
    profile_of,
    resolve_hardware,
)
from .profile import (
    MEASUREMENT_KINDS,
    Profile,
    element_bytes,
    load_profile,
    match_hardware_id,
    output_bytes,
)

COMPARE_CLASSES = MEASUREMENT_KINDS


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
        return {
            "hardware": self.hardware,
            "engine": self.engine,
            "overlay": self.overlay,
            "notes": self.notes,
            "rows": self.rows,
            "summary": self.summary,
        }


def compare_profile(
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
    ``error_pct`` = 100 (predicted - measured) / measured. ``engine`` defaults to ``base`` (the
    sourced physics without a serving engine's fitted scales: kernels test the hardware model).
    """
    p = load_profile(profile)
    notes: list[str] = []
    eng = load_engine("base" if engine is None else engine)
    measured_only = False
    if hardware is None:
        hid = (
            p.device.hardware_id
            if p.device.hardware_id in bundled_hardware()
            else match_hardware_id(p.device.name)
        )
        if hid is not None:
            hw = bundled_hardware()[hid]
            notes.append(f"predictions on the datasheet spec {hid}")
        else:
            hw, measured_only = measured_hardware(p), True
            notes.append(
                f"no bundled spec for {p.device.name!r}: peaks and bandwidth are the best measured "
                "figures, so the comparison tests the shape of the model (tile/wave, sizes)"
            )
    else:
        hw = resolve_hardware(hardware)
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

    def add(
        bench: str, label: str, dtype: str, measured: float, predicted: float, extra: dict[str, Any]
    ) -> None:
        rows.append(
            {
                "benchmark": bench,
                "shape": label,
                "dtype": dtype,
                "measured_s": measured,
                "predicted_s": predicted,
                "error_pct": 100.0 * (predicted - measured) / measured,
                **extra,
            }
        )

    for r in p.rows("copy"):
        op = Op("copy", "other", "memory", 1.0, bytes=2.0 * r["bytes"])
        t = float(cost.memory_time(op, hw, eng))
        add(
            "copy",
            f"{r['bytes'] / 2**20:.6g} MiB",
            "-",
            r["seconds"],
            t,
            {
                "measured_rate": r["bytes_per_s"],
                "predicted_rate": 2.0 * r["bytes"] / t,
                "unit": "B/s",
            },
        )
    for r in p.rows("gemm"):
        cls = r["dtype"]
        if not hw.supports(cls):
            notes.append(
                f"gemm {cls} {r['m']}x{r['n']}x{r['k']}: {hw.id} has no native {cls}; skipped"
            )
            continue
        eb = element_bytes(cls)
        op = Op(
            "gemm",
            "ffn",
            "gemm",
            1.0,
            m=float(r["m"]),
            n=float(r["n"]),
            k=float(r["k"]),
            w_bytes=eb,
            a_bytes=eb,
            o_bytes=output_bytes(cls),
            compute_class=cls,
        )
        t_arr, c_arr, mem_arr = cost.gemm_time(op, hw, eng)
        t = float(t_arr)
        flops = 2.0 * r["m"] * r["n"] * r["k"]
        add(
            "gemm",
            f"{r['m']}x{r['n']}x{r['k']}",
            cls,
            r["seconds"],
            t,
            {
                "measured_rate": r["flops_per_s"],
                "predicted_rate": flops / t,
                "unit": "FLOP/s",
                "bound": "compute" if float(c_arr) >= float(mem_arr) else "memory",
            },
        )
    for bench, phase in (("attention_decode", "decode"), ("attention_prefill", "prefill")):
        for r in p.rows(bench):
            op = Op(
                bench,
                "attention",
                "attention",
                1.0,
                flops=r["flops"],
                bytes=r["bytes"],
                phase=phase,
                compute_class=r["dtype"],
                meta={"head_dim": r["head_dim"]} if phase == "prefill" else {},
            )
            t_arr, c_arr, mem_arr = cost.attention_time(op, hw, eng)
            t = float(t_arr)
            label = f"B{r['batch']} H{r['heads']}/{r['kv_heads']} D{r['head_dim']} S{r['seq']}"
            add(
                bench,
                label,
                r["dtype"],
                r["seconds"],
                t,
                {
                    "measured_rate": r["flops"] / r["seconds"],
                    "predicted_rate": r["flops"] / t,
                    "unit": "FLOP/s",
                    "bound": "compute" if float(c_arr) >= float(mem_arr) else "memory",
                },
            )
    for coll in ("allreduce", "alltoall"):
        for r in p.rows(coll):
            t = float(comm.collective_time(coll, r["bytes"], r["ranks"], hw, eng))
            factor = (
                2.0 * (r["ranks"] - 1) / r["ranks"]
                if coll == "allreduce"
                else (r["ranks"] - 1) / r["ranks"]
            )
            add(
                coll,
                f"{r['bytes'] / 2**10:.6g} KiB x {r['ranks']}",
                "-",
                r["seconds"],
                t,
                {
                    "measured_rate": r["bus_bytes_per_s"],
                    "predicted_rate": r["bytes"] / t * factor,
                    "unit": "B/s",
                },
            )
    return Comparison(hardware=hw.id, engine=eng.id, overlay=overlay, rows=rows, notes=notes)

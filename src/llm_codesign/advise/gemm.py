"""GEMM shape explorer: predicted throughput of one GEMM over M, N, K on a GPU and dtype, from
the cost model's tile- and wave-quantization model (:mod:`llm_codesign.cost`).

What a point means: C[M, N] = A[M, K] . B[K, N] in ``dtype`` (both operands), BF16 output, one
launch. Its time is the cost model's GEMM time (``max(compute, memory)``, DESIGN.md) plus the
per-kernel fixed cost the serving model charges for every launch (``engine.kernel_overhead_s``,
launch + ramp + drain), so the explorer shows what a model layer pays for that shape.
Throughput is ``2 M N K / time``; ``efficiency`` is that over the dtype's datasheet dense peak.

A forced tile (``tile="256x256@1x2"``) pins the kernel to one cooperative tile (TM x TN, run by
the GPU's ``tile_cluster_sms`` SMs, e.g. a 2-SM clusterMMA tile on Blackwell) and a cluster of
CM x CN such tiles scheduled together (a CGA), as NVIDIA's Fig. 5 experiment does
(``reference/codesign.md`` A3). Without it the cost model takes the best of a few tile shapes.

Example:
    >>> s = gemm_sweep("gb300", "nvfp4", m=8192, n=9728, k=[1024, 8192])
    >>> bool(s.tflops[1] > s.tflops[0])
    True
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import cost
from ..calibrate import resolve_hardware
from ..errors import SpecError
from ..formats import FORMATS
from ..ops import Op
from ..outputs import AtomicWriter, check_output_path
from ..specs._load import shown
from ..specs.engine import EngineConstants, load_engine
from ..specs.hardware import HardwareSpec

Array = np.ndarray

# dtype id -> format id in the shared registry (operand storage and compute class)
DTYPES = {
    "bf16": "bf16",
    "fp16": "fp16",
    "fp8": "fp8",
    "mxfp8": "mxfp8",
    "mxfp6": "mxfp6",
    "nvfp4": "nvfp4",
    "mxfp4": "mxfp4",
    "int8": "int8",
}
MAX_POINTS = 1_000_000
MAX_DIM = 2**31 - 1  # GEMM dimensions are 32-bit integers in BLAS and CUTLASS
_TILE_RE = re.compile(r"^(\d+)x(\d+)(?:@(\d+)x(\d+))?$")


@dataclass(frozen=True)
class ForcedTile:
    """A kernel pinned to one cooperative tile ``tm x tn`` and a cluster of ``cm x cn`` tiles."""

    tm: int
    tn: int
    cm: int = 1
    cn: int = 1

    @property
    def label(self) -> str:
        return f"{self.tm}x{self.tn}@{self.cm}x{self.cn}"


def parse_tile(text: str) -> ForcedTile:
    """``"256x256"`` or ``"256x256@1x2"`` (tile M x N, then cluster tiles along M x N)."""
    mt = _TILE_RE.match(text.strip().lower())
    if not mt:
        raise SpecError(f"tile {text!r} must look like TMxTN or TMxTN@CMxCN, e.g. 256x256@1x2")
    tm, tn = int(mt.group(1)), int(mt.group(2))
    cm, cn = int(mt.group(3) or 1), int(mt.group(4) or 1)
    if min(tm, tn, cm, cn) < 1 or tm % 16 or tn % 8:
        raise SpecError(
            f"tile {text!r}: TM must be a positive multiple of 16, TN of 8, clusters >= 1"
        )
    return ForcedTile(tm, tn, cm, cn)


def parse_dims(text: str | int | Sequence[int], name: str = "dim") -> Array:
    """A dimension spec: a value (``8192``), a comma list (``512,1024``) or ``start:stop[:step]``
    (inclusive stop; step defaults to start)."""
    if isinstance(text, (int, np.integer)):
        values = [int(text)]
    elif not isinstance(text, str):
        values = [int(v) for v in text]
    else:
        values = []
        for part in text.split(","):
            part = part.strip()
            try:
                if ":" in part:
                    bits = [int(b) for b in part.split(":")]
                    if len(bits) not in (2, 3):
                        raise ValueError
                    start, stop = bits[0], bits[1]
                    step = bits[2] if len(bits) == 3 else start
                    if step <= 0 or stop < start:
                        raise ValueError
                    if (stop - start) // step + 1 > MAX_POINTS:
                        raise SpecError(f"--{name} {text!r}: more than {MAX_POINTS:,} values")
                    values.extend(range(start, stop + 1, step))
                else:
                    values.append(int(part))
            except ValueError:
                raise SpecError(
                    f"--{name} {shown(text)!r}: expected an integer, a comma list or "
                    "start:stop[:step] with step > 0"
                ) from None
    if not values or min(values) < 1 or max(values) > MAX_DIM:
        raise SpecError(
            f"--{name} {shown(str(text))!r}: dimensions must be integers from 1 to {MAX_DIM:,}"
        )
    if len(values) > MAX_POINTS:
        raise SpecError(f"--{name} {shown(str(text))!r}: more than {MAX_POINTS:,} values")
    return np.asarray(values, dtype=float)


@dataclass
class GemmSweep:
    """Predicted GEMM throughput over a grid of (M, N, K), flattened in M-major order."""

    hardware: str
    dtype: str
    compute_class: str
    peak_flops_per_s: float
    ceiling_fraction: float
    launch_overhead_s: float
    tile: str
    m: Array
    n: Array
    k: Array
    time_s: Array
    tflops: Array
    efficiency: Array
    bound: Array
    assumptions: dict[str, Any] = field(default_factory=dict)

    def swept_axes(self) -> list[str]:
        return [a for a in ("m", "n", "k") if np.unique(getattr(self, a)).size > 1]

    def points(self) -> list[dict[str, Any]]:
        return [
            {
                "m": int(m),
                "n": int(n),
                "k": int(k),
                "tflops": float(t),
                "efficiency": float(e),
                "bound": str(b),
            }
            for m, n, k, t, e, b in zip(
                self.m, self.n, self.k, self.tflops, self.efficiency, self.bound
            )
        ]

    def to_dict(self) -> dict[str, Any]:
        return {"points": self.points(), "assumptions": self.assumptions}

    def threshold(self, axis: str, fraction: float = 0.8) -> float:
        """Smallest value of ``axis`` from which throughput stays >= ``fraction`` of the sweep's
        sustained (maximum) throughput; the sweep must vary only ``axis``."""
        x = getattr(self, axis)
        order = np.argsort(x)
        r = self.tflops[order] / np.max(self.tflops)
        below = np.nonzero(r < fraction)[0]
        if below.size == 0:
            return float(x[order][0])
        if below[-1] + 1 >= r.size:
            return float("inf")
        return float(x[order][below[-1] + 1])


def _forced_efficiency(
    hw: HardwareSpec,
    t: ForcedTile,
    m: Array,
    n: Array,
    k: Array,
    speed_ratio: float,
    elem_bytes: float,
) -> Array:
    """Tile/wave quantization for one pinned tile and cluster, with the cost model's per-tile
    K overhead, operand-reuse and alignment terms (same normalization as
    :func:`cost.gemm_shape_efficiency`, so forced and free kernels compare directly)."""
    qm, qn = t.tm * t.cm, t.tn * t.cn
    sms_per_cluster = hw.tile_cluster_sms * t.cm * t.cn
    slots = max(hw.sm_count // sms_per_cluster, 1) * t.cm * t.cn
    tiles = np.ceil(m / qm) * t.cm * np.ceil(n / qn) * t.cn
    waves = np.ceil(tiles / slots - 1e-9)
    k0 = cost.TILE_OVERHEAD_BF16_K * speed_ratio
    issued = waves * slots * t.tm * t.tn * (k + k0)

    best = cost.tile_reuse(hw.tile_m, hw.tile_n)  # the largest tile reuses operands most
    eff = m * n * k / issued * cost.tile_reuse(t.tm, t.tn) / best
    return eff * cost.alignment_factor(n, k, elem_bytes)


def gemm_sweep(
    hardware: str | Path | HardwareSpec,
    dtype: str = "bf16",
    m: Any = 8192,
    n: Any = 8192,
    k: Any = 8192,
    *,
    engine: str | Path | EngineConstants | None = None,
    tile: str | ForcedTile | None = None,
    launch_overhead_s: float | None = None,
    out_bytes: float = 2.0,
) -> GemmSweep:
    """Predicted throughput of C[M,N] = A[M,K] B[K,N] over the grid of the given dims.

    ``m``, ``n``, ``k``: a value, a list or a spec string (see :func:`parse_dims`).
    ``launch_overhead_s``: fixed time per launch (default: the engine's per-kernel overhead).
    ``engine`` defaults to ``base``: a kernel explorer shows the hardware model, without a
    serving engine's fitted scales.
    Raises UnsupportedError when the GPU has no native path for ``dtype``.
    """
    hw = resolve_hardware(hardware)
    eng = load_engine("base" if engine is None else engine)
    dt = dtype.strip().lower()
    if dt not in DTYPES:
        raise SpecError(f"unknown GEMM dtype {dtype!r}; allowed: {', '.join(DTYPES)}")
    fmt = FORMATS[DTYPES[dt]]
    cc = fmt.compute_class
    rate_class = hw.compute_rate_class(cc)  # raises UnsupportedError when not native
    forced = parse_tile(tile) if isinstance(tile, str) else tile
    mm, nn, kk = (
        parse_dims(v, name) if not isinstance(v, np.ndarray) else v.astype(float)
        for v, name in ((m, "m"), (n, "n"), (k, "k"))
    )
    if mm.size * nn.size * kk.size > MAX_POINTS:
        raise SpecError(
            f"GEMM sweep of {mm.size * nn.size * kk.size:,} points exceeds {MAX_POINTS:,}"
        )
    M, N, K = (a.reshape(-1) for a in np.meshgrid(mm, nn, kk, indexing="ij"))
    eb = fmt.bytes_per_element  # the bytes moved, block scales amortized
    el = fmt.element_bits / 8.0  # alignment counts elements (an MX format's scales: a tensor apart)
    peak, ceiling = cost.gemm_ceiling(hw, cc, eng)
    overhead = eng.kernel_overhead_s if launch_overhead_s is None else float(launch_overhead_s)
    if overhead < 0:
        raise SpecError(f"launch_overhead_s={overhead} must be >= 0")
    flops = 2.0 * M * N * K
    if forced is None:
        op = Op(
            "gemm",
            "ffn",
            "gemm",
            1.0,
            m=M,
            n=N,
            k=K,
            w_bytes=eb,
            a_bytes=eb,
            o_bytes=out_bytes,
            compute_class=cc,
            a_elem_bytes=el,
        )
        t, comp, mem = cost.gemm_time(op, hw, eng)
    else:
        speed = hw.peak_flops(rate_class) / (
            hw.peak_flops_per_s.get("bf16")
            or hw.peak_flops_per_s.get("fp16")
            or hw.peak_flops(rate_class)
        )
        eff = _forced_efficiency(hw, forced, M, N, K, speed, el)
        comp = flops / (peak * ceiling * np.maximum(eff, 1e-9))
        mem = ((M * K + N * K) * eb + M * N * out_bytes) / cost.hbm_bytes_per_s_achieved(hw, eng)
        t = np.maximum(comp, mem)
    time_s = t + overhead
    tflops = flops / time_s / 1e12
    bound = np.where(comp >= mem, "compute", "memory")
    assumptions = {
        "hardware_file": hw.id,
        "dtype": dt,
        "compute_class": rate_class,
        "peak_flops_per_s": peak,
        "sustained_ceiling_fraction": ceiling,
        "gemm_efficiency_source": hw.gemm_efficiency_for(rate_class).source,
        "sm_count": hw.sm_count,
        "tile": forced.label
        if forced
        else (
            f"best of cost-model tiles (hardware tile {hw.tile_m}x{hw.tile_n}, "
            f"{hw.tile_cluster_sms} SM/tile)"
        ),
        "launch_overhead_s": overhead,
        "output_bytes_per_element": out_bytes,
        "hbm_bytes_per_s": hw.hbm_bytes_per_s,
        "hbm_efficiency": hw.hbm_efficiency.value,
        "hbm_efficiency_scale": eng.hbm_efficiency_scale,
        "hbm_bytes_per_s_achieved": cost.hbm_bytes_per_s_achieved(hw, eng),
        "model": (
            "cost.gemm_time (tile + wave quantization, per-tile K overhead, alignment) + launch "
            "overhead"
        ),
    }
    return GemmSweep(
        hardware=hw.id,
        dtype=dt,
        compute_class=rate_class,
        peak_flops_per_s=peak,
        ceiling_fraction=ceiling,
        launch_overhead_s=overhead,
        tile=forced.label if forced else "auto",
        m=M,
        n=N,
        k=K,
        time_s=time_s,
        tflops=tflops,
        efficiency=tflops * 1e12 / peak,
        bound=bound,
        assumptions=assumptions,
    )


def save_plot(sweep: GemmSweep, path: str | Path) -> Path:
    """Plot TFLOP/s against the swept axis (one line per value of a second swept axis)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - optional extra
        raise SpecError("plotting needs matplotlib: pip install 'llm-codesign[plot]'") from None
    axes = sweep.swept_axes() or ["k"]
    x_axis = axes[-1]
    series_axis = axes[0] if len(axes) > 1 else None
    fig, ax = plt.subplots(figsize=(8, 4.5))
    x = getattr(sweep, x_axis)
    if series_axis is None:
        order = np.argsort(x)
        ax.plot(x[order], sweep.tflops[order], marker=".", lw=1)
    else:
        s = getattr(sweep, series_axis)
        for v in np.unique(s)[:12]:
            sel = s == v
            order = np.argsort(x[sel])
            ax.plot(
                x[sel][order],
                sweep.tflops[sel][order],
                marker=".",
                lw=1,
                label=f"{series_axis.upper()}={int(v)}",
            )
        ax.legend(fontsize=8)
    ax.axhline(
        sweep.peak_flops_per_s * sweep.ceiling_fraction / 1e12,
        ls="--",
        lw=0.8,
        color="gray",
        label="sustained ceiling",
    )
    fixed = {a: int(getattr(sweep, a)[0]) for a in ("m", "n", "k") if a not in axes}
    ax.set_xlabel(x_axis.upper())
    ax.set_ylabel("TFLOP/s (predicted)")
    ax.set_title(
        f"{sweep.hardware} {sweep.dtype} GEMM, tile {sweep.tile}, "
        + ", ".join(f"{a.upper()}={v}" for a, v in fixed.items())
    )
    ax.grid(alpha=0.3)
    out = check_output_path(path)
    fig.tight_layout()
    try:
        with AtomicWriter(out, "wb") as fh:
            fig.savefig(fh, format="png", dpi=120)
    finally:
        plt.close(fig)
    return out

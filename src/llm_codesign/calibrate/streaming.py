"""The HBM bandwidth streaming kernels achieve, fitted from published kernel timings.

A GEMM with a few rows (M <= 4) is a weight stream: its time is a fixed per-kernel latency t0
(launch, ramp, tail) plus its bytes over the bandwidth B the memory system sustains,

    t = t0 + bytes / B.

:func:`streaming_fit` fits t0 and B by least squares over such kernels. B over the datasheet
figure is the hardware file's ``efficiency.hbm`` (what ``cost.hbm_bytes_per_s_achieved``
multiplies the datasheet by); ``benchmarks/hbm_fraction_report.py`` runs the fit on
AIConfigurator's measured GEMM tables, one table per engine and version, and the GPU's value is
the median over its tables. The per-kernel latency t0 is reported, not used: the engines'
``kernel_overhead_s`` is that term. A negative t0 means the smallest kernels of a table ran
under the fitted line (they stream faster than the large ones); B is still the large kernels'.

Example: eight kernels of 32 MiB ... 4 GiB taking 4 us + bytes / 4.0 TB/s on a 4.8 TB/s GPU
give B = 4.0e12 B/s, t0 = 4e-6 s, fraction 0.833.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SpecError

# a fit needs more than a handful of kernels, spread over sizes at least this factor apart, so
# that the slope (the bandwidth) is not the noise of near-equal sizes
MIN_KERNELS = 8
MIN_SIZE_SPREAD = 2.0


@dataclass(frozen=True)
class StreamingFit:
    """A fitted weight stream: sustained ``bytes_per_s``, per-kernel ``fixed_s``, its share
    ``fraction`` of the datasheet ``peak_bytes_per_s``, and the ``kernels`` used; rows left out:
    ``invalid`` (a non-finite or non-positive size or time) and ``too_fast`` (bytes moved faster
    than the datasheet allows: measurement errors)."""

    bytes_per_s: float
    fixed_s: float
    peak_bytes_per_s: float
    kernels: int
    invalid: int
    too_fast: int

    @property
    def dropped(self) -> int:
        return self.invalid + self.too_fast

    @property
    def fraction(self) -> float:
        return self.bytes_per_s / self.peak_bytes_per_s


def streaming_fit(
    nbytes: np.ndarray | list[float],
    seconds: np.ndarray | list[float],
    peak_bytes_per_s: float,
) -> StreamingFit:
    """Least-squares t = t0 + bytes / B over kernels that move ``nbytes`` bytes in ``seconds``
    on a GPU whose datasheet bandwidth is ``peak_bytes_per_s``. Raises SpecError when the
    datasheet figure is not a positive finite number, when fewer than ``MIN_KERNELS`` plausible
    kernels remain, when their sizes span less than ``MIN_SIZE_SPREAD`` x, or when the fitted
    bandwidth is not positive or exceeds the datasheet."""
    b = np.asarray(nbytes, dtype=float).ravel()
    t = np.asarray(seconds, dtype=float).ravel()
    if b.shape != t.shape:
        raise SpecError(f"nbytes ({b.size}) and seconds ({t.size}) must have the same length")
    if not (np.isfinite(peak_bytes_per_s) and peak_bytes_per_s > 0):
        raise SpecError(
            f"peak_bytes_per_s must be a positive finite number, got {peak_bytes_per_s!r}"
        )
    valid = np.isfinite(b) & np.isfinite(t) & (b > 0) & (t > 0)
    fast = valid & (b > peak_bytes_per_s * np.where(valid, t, 0.0))
    ok = valid & ~fast
    invalid, too_fast = int((~valid).sum()), int(fast.sum())
    b, t = b[ok], t[ok]
    if b.size < MIN_KERNELS:
        raise SpecError(
            f"a streaming fit needs at least {MIN_KERNELS} kernels, got {b.size} "
            f"({invalid} with a non-finite or non-positive size or time and {too_fast} faster "
            "than the datasheet left out)"
        )
    if b.max() < MIN_SIZE_SPREAD * b.min():
        raise SpecError(
            f"a streaming fit needs kernel sizes at least {MIN_SIZE_SPREAD:g}x apart, got "
            f"{b.min():.4g} to {b.max():.4g} bytes"
        )
    (fixed, per_byte), *_ = np.linalg.lstsq(np.column_stack([np.ones_like(b), b]), t, rcond=None)
    if not per_byte > 0:
        raise SpecError("the kernels' times do not grow with their bytes: no bandwidth to fit")
    if 1.0 / per_byte > peak_bytes_per_s:
        raise SpecError(
            f"the fitted bandwidth {1.0 / per_byte:.4g} B/s exceeds the datasheet "
            f"{peak_bytes_per_s:.4g} B/s: the times are not a weight stream on this GPU"
        )
    return StreamingFit(
        bytes_per_s=float(1.0 / per_byte),
        fixed_s=float(fixed),
        peak_bytes_per_s=float(peak_bytes_per_s),
        kernels=int(b.size),
        invalid=invalid,
        too_fast=too_fast,
    )

"""The HBM bandwidth streaming kernels achieve, fitted from published kernel timings.

A GEMM with a few rows (M <= 4) is a weight stream: its time is a fixed per-kernel latency t0
(launch, ramp, tail) plus its bytes over the bandwidth B the memory system sustains,

    t = t0 + bytes / B.

:func:`streaming_fit` fits t0 and B by least squares over such kernels. B over the datasheet
figure is the hardware file's ``efficiency.hbm`` (what ``cost.hbm_bytes_per_s_achieved``
multiplies the datasheet by); ``benchmarks/hbm_fraction_report.py`` runs the fit on
AIConfigurator's measured GEMM tables, one table per engine and version, and the GPU's value is
the median over its tables. The per-kernel latency t0 is reported, not used: the engines'
``kernel_overhead_s`` is that term.

Example: kernels of 64 MiB and 512 MiB taking 4 us + bytes / 4.0 TB/s on a 4.8 TB/s GPU give
B = 4.0e12 B/s, t0 = 4e-6 s, fraction 0.833.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import SpecError

# a fit needs kernels of at least two sizes, and more than a handful to be worth a constant
MIN_KERNELS = 8


@dataclass(frozen=True)
class StreamingFit:
    """A fitted weight stream: sustained ``bytes_per_s``, per-kernel ``fixed_s``, its share
    ``fraction`` of the datasheet ``peak_bytes_per_s``, and the ``kernels`` used (rows whose
    bytes moved faster than the datasheet allows are measurement errors and are left out:
    ``dropped``)."""

    bytes_per_s: float
    fixed_s: float
    peak_bytes_per_s: float
    kernels: int
    dropped: int

    @property
    def fraction(self) -> float:
        return self.bytes_per_s / self.peak_bytes_per_s


def streaming_fit(
    nbytes: np.ndarray | list[float],
    seconds: np.ndarray | list[float],
    peak_bytes_per_s: float,
) -> StreamingFit:
    """Least-squares t = t0 + bytes / B over kernels that move ``nbytes`` bytes in ``seconds``
    on a GPU whose datasheet bandwidth is ``peak_bytes_per_s``. Raises SpecError when fewer
    than ``MIN_KERNELS`` plausible kernels remain, when they are all one size, or when the fit
    has no positive bandwidth."""
    b = np.asarray(nbytes, dtype=float).ravel()
    t = np.asarray(seconds, dtype=float).ravel()
    if b.shape != t.shape:
        raise SpecError(f"nbytes ({b.size}) and seconds ({t.size}) must have the same length")
    if not peak_bytes_per_s > 0:
        raise SpecError(f"peak_bytes_per_s must be positive, got {peak_bytes_per_s!r}")
    ok = np.isfinite(b) & np.isfinite(t) & (b > 0) & (t > 0)
    ok &= b <= peak_bytes_per_s * np.where(ok, t, 0.0)
    b, t = b[ok], t[ok]
    if b.size < MIN_KERNELS:
        raise SpecError(
            f"a streaming fit needs at least {MIN_KERNELS} kernels that move no faster than "
            f"the datasheet bandwidth, got {b.size}"
        )
    if np.ptp(b) <= 0:
        raise SpecError("a streaming fit needs kernels of more than one size")
    (fixed, per_byte), *_ = np.linalg.lstsq(np.column_stack([np.ones_like(b), b]), t, rcond=None)
    if not per_byte > 0:
        raise SpecError("the kernels' times do not grow with their bytes: no bandwidth to fit")
    return StreamingFit(
        bytes_per_s=float(1.0 / per_byte),
        fixed_s=float(fixed),
        peak_bytes_per_s=float(peak_bytes_per_s),
        kernels=int(b.size),
        dropped=int((~ok).sum()),
    )

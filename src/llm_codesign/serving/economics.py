"""Power and cost of a serving result: output tokens per second per megawatt of GPU power, and
dollars per million output tokens at a given GPU-hour price. Pure arithmetic on a result's
tokens/s/GPU; the power is the GPU's board power (``tdp_w`` of the hardware file, datasheet)
unless the user gives a measured or all-in figure per GPU (host, network and cooling share)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import SpecError

Array = np.ndarray


def economics(
    output_tok_s_per_gpu: Array | float,
    tdp_w: float,
    *,
    power_w: float | None = None,
    usd_per_gpu_hour: float | None = None,
) -> dict[str, Any]:
    """``{"power_w_per_gpu", "power_source", "output_tok_s_per_mw", "usd_per_gpu_hour",
    "usd_per_million_output_tokens"}`` (the last is None without a price).

    tokens/s/MW = tok/s/GPU / (W per GPU / 1e6); $/M tokens = $/GPU-hour / (tok/s/GPU x 3600)
    x 1e6 (infinite at zero throughput)."""
    for name, v in (("power_w", power_w), ("usd_per_gpu_hour", usd_per_gpu_hour)):
        if v is not None and not (np.isfinite(v) and v > 0):
            raise SpecError(f"{name} must be a positive number, got {v!r}")
    watts = float(power_w) if power_w is not None else float(tdp_w)
    thr = np.asarray(output_tok_s_per_gpu, dtype=float)
    out: dict[str, Any] = {
        "power_w_per_gpu": watts,
        "power_source": "given per GPU" if power_w is not None else "GPU TDP (hardware file)",
        "output_tok_s_per_mw": thr / (watts / 1e6),
        "usd_per_gpu_hour": usd_per_gpu_hour,
        "usd_per_million_output_tokens": None,
    }
    if usd_per_gpu_hour is not None:
        with np.errstate(divide="ignore"):
            out["usd_per_million_output_tokens"] = np.where(
                thr > 0, usd_per_gpu_hour / (thr * 3600.0) * 1e6, np.inf
            )
    return out

"""Published accuracy of low-precision formats, per format (``quant`` commands' view).

``PUBLISHED_ACCURACY`` holds the rows of ``data/accuracy/published.json`` (read by
:mod:`llm_codesign.specs.accuracy`, which also turns them into the frontier's per-model
estimates): model cards, papers and ``reference/formats.md`` section 5 (tags ``[Fx]`` resolve in
its section 6). Scores are benchmark points; a delta is ``quantized - baseline``. Rows without
numbers carry the published claim in ``claim``. Nothing here is estimated.

Example:
    >>> accuracy_evidence("nvfp4")["published"][0]["model"]
    'DeepSeek-R1'
"""

from __future__ import annotations

from typing import Any

from ..specs.accuracy import published_rows
from .numerics import resolve_format

# the rows live in data/accuracy/published.json, read by specs.accuracy (one home for the
# frontier's accuracy estimates and this per-format view)
PUBLISHED_ACCURACY: list[dict[str, Any]] = [dict(r) for r in published_rows()]


def accuracy_evidence(format_id: str, measured: dict[str, Any] | None = None) -> dict[str, Any]:
    """What is known about the accuracy cost of a format, for the frontier and the advisor.

    Args:
        format_id: a format id or alias (``"w4a16"`` -> ``int4_g128``).
        measured: optionally an :func:`~llm_codesign.quant.inspect_checkpoint` result; its
            summary for this format (matched by id or alias) is attached.

    Returns:
        ``{"format", "format_id", "bits_per_element", "bytes_per_element", "published": [rows
        of PUBLISHED_ACCURACY for this format], "measured": summary or None}``. An empty
        ``published`` list means no published result was retrieved, not "lossless".
    """
    fmt = resolve_format(format_id)
    measured_summary = None
    if measured is not None:
        for key, summary in measured.get("summary", {}).items():
            if key == format_id or resolve_format(key).id == fmt.id:
                measured_summary = {
                    k: v for k, v in summary.items() if k not in ("layers", "tensor_details")
                }
                break
    return {
        "format": format_id,
        "format_id": fmt.id,
        "bits_per_element": fmt.bits_per_element,
        "bytes_per_element": fmt.bytes_per_element,
        "published": [dict(r) for r in PUBLISHED_ACCURACY if r["format"] == fmt.id],
        "measured": measured_summary,
    }

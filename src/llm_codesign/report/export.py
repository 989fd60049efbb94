"""Exports of result objects: the ``frontier --json`` document (with launch settings)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..explore import Frontier
from .launch import launch_settings


def _document(f: Frontier, all_points: bool) -> dict[str, Any]:
    doc = f.to_dict(all_points=all_points)
    if f.best is not None and doc.get("best") is not None:
        doc["best"]["launch"] = launch_settings(f, f.best)
    return doc


def frontier_json(
    results: Frontier | Sequence[Frontier], all_points: bool = False
) -> dict[str, Any]:
    """The ``frontier --json`` document. One design: ``Frontier.to_dict`` with the best point's
    launch settings. Several (compare):
    ``points`` holds every design's frontier points tagged with ``design`` (each Pareto-optimal
    within its design), sorted by tok_s_per_user, and ``designs`` the per-design documents."""
    frs = [results] if isinstance(results, Frontier) else list(results)
    docs = [_document(f, all_points) for f in frs]
    if len(frs) == 1:
        return docs[0]
    points = [dict(p, design=f.label) for f, d in zip(frs, docs) for p in d["points"]]
    points.sort(key=lambda p: p["tok_s_per_user"])
    base = docs[0]["area"] or 0.0
    summary = [
        {
            "design": f.label,
            "area": d["area"],
            "area_vs_first": (d["area"] / base) if base > 0 else None,
            "readings": d["readings"],
        }
        for f, d in zip(frs, docs)
    ]
    return {"points": points, "comparison": summary, "designs": docs}

"""Plots of throughput-interactivity frontiers (matplotlib, PNG and SVG).

matplotlib is the optional ``plot`` extra and is imported only when a plot is drawn. Files are
written through a temporary sibling and renamed, so an interrupted run leaves no partial file.

Example:
    >>> from llm_codesign.explore import frontier
    >>> f = frontier("llama-3.1-8b", "h100-sxm", num_gpus=1, isl=512, osl=128, precision="fp8")
    >>> [p.suffix for p in plot_frontiers([f], "/tmp/llm_codesign_doctest_frontier")]
    ['.png', '.svg']
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import SpecError, UnsupportedError
from ..explore import Frontier
from ..outputs import AtomicWriter
from ..pareto import pareto_mask
from ..serving import REGIONS

FORMATS = ("png", "svg")
MAX_SCATTER = 20000  # background points drawn per frontier (evenly strided beyond this)
MAX_PLAN_COLOURS = 10
REGION_COLOURS = {
    "compute-bound": "#d62728",
    "memory-bound": "#1f77b4",
    "communication-bound": "#2ca02c",
    "overhead-bound": "#9467bd",
}


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError:
        raise UnsupportedError(
            "plotting needs matplotlib: pip install 'llm-codesign[plot]'"
        ) from None
    return plt


def output_paths(path: str | Path) -> list[Path]:
    """``x.png`` or ``x.svg`` -> that file; a path without one of those suffixes -> both formats.

    Example:
        >>> [str(p) for p in output_paths("out/frontier")]
        ['out/frontier.png', 'out/frontier.svg']
    """
    p = Path(path)
    suffix = p.suffix.lower().lstrip(".")
    if suffix in FORMATS:
        return [p]
    if suffix and suffix not in FORMATS:
        raise SpecError(f"plot path {str(path)!r}: suffix must be .png or .svg (or none, for both)")
    return [p.with_name(p.name + f".{f}") for f in FORMATS]


def _title(f: Frontier) -> str:
    precs = ", ".join(p.id for p in f.precisions)
    return f"{f.model.id} on {f.num_gpus} x {f.hardware.id}, ISL/OSL {f.isl}/{f.osl}, {precs}"


def _draw_single(ax: Any, f: Frontier, show_points: bool) -> None:
    pts = f.points
    feas = np.flatnonzero(pts["feasible"])
    front = f.pareto_points()
    labels = [
        f.plan_label(int(i)) + f" {f.precisions[int(pts['precision'][i])].id}" for i in f.pareto
    ]
    # colour the plans that reach the frontier (most frontier points first)
    uniq, counts = (
        np.unique(np.array(labels, dtype=object), return_counts=True)
        if labels
        else (np.array([]), np.array([]))
    )
    top = [str(u) for u in uniq[np.argsort(-counts, kind="stable")][:MAX_PLAN_COLOURS]]
    cmap = _pyplot().get_cmap("tab10")
    if show_points and feas.size:
        stride = max(1, feas.size // MAX_SCATTER)
        bg = feas[::stride]
        ax.scatter(
            pts["tok_s_per_user"][bg],
            pts["output_tok_s_per_gpu"][bg],
            s=4,
            c="#bbbbbb",
            alpha=0.5,
            linewidths=0,
            label="other configurations",
            rasterized=True,
        )
    x, y = front["tok_s_per_user"], front["output_tok_s_per_gpu"]
    # region bands along the frontier: each pareto point owns the x-interval it wins
    if len(x):
        edges = np.concatenate([[0.0], x])
        for r in REGIONS:
            sel = np.flatnonzero(f.regions == r)
            for i in sel:
                ax.axvspan(edges[i], edges[i + 1], color=REGION_COLOURS[r], alpha=0.07, linewidth=0)
        span = float(edges[-1] - edges[0]) or 1.0
        for r, lo, hi in _runs(list(f.regions)):
            if edges[hi + 1] - edges[lo] < 0.08 * span:  # too narrow to label legibly
                continue
            xm = 0.5 * (edges[lo] + edges[hi + 1])
            ax.text(
                xm,
                0.985,
                r,
                ha="center",
                va="top",
                fontsize=7,
                color=REGION_COLOURS.get(r, "k"),
                transform=ax.get_xaxis_transform(),
            )
    ax.step(x, y, where="pre", color="black", linewidth=1.4, label=f"frontier (area {f.area:,.0f})")
    _draw_precision_fronts(ax, f)
    lab = np.array(labels, dtype=object)
    for j, name in enumerate(top):
        sel = lab == name
        ax.scatter(x[sel], y[sel], s=18, color=cmap(j % 10), label=name, zorder=3)
    rest = ~np.isin(lab, top) if len(lab) else np.zeros(0, dtype=bool)
    if rest.any():
        ax.scatter(x[rest], y[rest], s=12, color="#555555", label="other frontier plans", zorder=3)
    if f.best is not None:
        ax.scatter(
            [pts["tok_s_per_user"][f.best]],
            [pts["output_tok_s_per_gpu"][f.best]],
            marker="*",
            s=180,
            color="gold",
            edgecolors="black",
            zorder=4,
            label="best meeting targets" if f.targets.any else "max throughput",
        )
    ax.set_title(_title(f), fontsize=10)


def accuracy_label(acc: dict[str, Any] | None) -> str:
    """A precision's accuracy estimate in a few words (``specs.accuracy``)."""
    if not acc or acc.get("kind") == "unknown":
        return "accuracy unknown"
    if acc.get("value") is not None:
        return f"{acc['value']:+.2f} pts vs {acc.get('baseline', '')}, {acc['kind']}"
    return f"SQNR {acc.get('sqnr_db', float('nan')):.1f} dB, measured"


def _draw_precision_fronts(ax: Any, f: Frontier) -> None:
    """With several precisions, each one's own frontier (dashed), labelled with its accuracy:
    the third dimension of the answer."""
    if len(f.precisions) < 2:
        return
    pts = f.points
    for pi, prec in enumerate(f.precisions):
        sel = np.flatnonzero(pts["feasible"] & (pts["precision"] == pi))
        if not sel.size:
            continue
        xs, ys = pts["tok_s_per_user"][sel], pts["output_tok_s_per_gpu"][sel]
        keep = pareto_mask(xs, ys)
        order = np.argsort(xs[keep])
        ax.step(
            xs[keep][order],
            ys[keep][order],
            where="pre",
            linestyle="--",
            linewidth=0.9,
            alpha=0.8,
            label=f"{prec.id} only ({accuracy_label(f.accuracy.get(prec.id))})",
        )


def _runs(seq: list[str]) -> list[tuple[str, int, int]]:
    out: list[tuple[str, int, int]] = []
    for i, r in enumerate(seq):
        if out and out[-1][0] == r and out[-1][2] == i - 1:
            out[-1] = (r, out[-1][1], i)
        else:
            out.append((r, i, i))
    return out


def _draw_compare(ax: Any, frontiers: Sequence[Frontier]) -> None:
    cmap = _pyplot().get_cmap("tab10")
    for j, f in enumerate(frontiers):
        p = f.pareto_points()
        name = f.label or _title(f)
        ax.step(
            p["tok_s_per_user"],
            p["output_tok_s_per_gpu"],
            where="pre",
            color=cmap(j % 10),
            linewidth=1.6,
            label=f"{name} (area {f.area:,.0f})",
        )
        ax.scatter(p["tok_s_per_user"], p["output_tok_s_per_gpu"], s=8, color=cmap(j % 10))
    f0 = frontiers[0]
    ax.set_title(f"frontiers at ISL/OSL {f0.isl}/{f0.osl}, {f0.num_gpus} GPUs", fontsize=10)


def plot_frontiers(
    frontiers: Sequence[Frontier],
    path: str | Path,
    *,
    title: str | None = None,
    show_points: bool = True,
) -> list[Path]:
    """Draw one frontier (points coloured by plan, regions labelled) or compare several
    (one line each, with its area) and write PNG and/or SVG; returns the written paths."""
    if not frontiers:
        raise SpecError("plot_frontiers needs at least one frontier")
    outs = output_paths(path)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 6), dpi=120)
    try:
        if len(frontiers) == 1:
            _draw_single(ax, frontiers[0], show_points)
        else:
            _draw_compare(ax, frontiers)
        if title:
            ax.set_title(title, fontsize=10)
        ax.set_xlabel("interactivity: tokens/s/user (1 / TPOT)")
        ax.set_ylabel("throughput: output tokens/s/GPU")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.set_ylim(top=ax.get_ylim()[1] * 1.06)  # room for the region labels
        ax.legend(fontsize=7, loc="upper right", bbox_to_anchor=(1.0, 0.95), framealpha=0.85)
        fig.tight_layout()
        for out in outs:
            _save(fig, out)
    finally:
        plt.close(fig)
    return outs


def _save(fig: Any, out: Path) -> None:
    with AtomicWriter(out, "wb") as fh:
        fig.savefig(fh, format=out.suffix.lstrip(".").lower())


__all__ = ["FORMATS", "output_paths", "plot_frontiers"]

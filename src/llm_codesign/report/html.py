"""``write_report``: one self-contained HTML file for a model on one or more GPUs and precisions.

Each GPU gets one :func:`explore.frontier` search; the page holds an interactive Plotly frontier
(plotly.js embedded, so the file opens offline), ratios between the GPUs and precisions, the
best configuration under the targets with its launch settings (``report.launch``), its memory
and every assumption (``estimate`` at that configuration), the regimes with Amdahl's ceilings
(``advise.regimes``) and the lint findings (``advise.lint``). Nothing here models anything: every
number comes from those calls. All text is HTML-escaped; the page loads nothing at view time.

plotly is the optional ``report`` extra and is imported only when a report is written.

Example:
    >>> p = write_report("llama-3.1-8b", ["h100-sxm"], "/tmp/llm_codesign_doctest_report.html",
    ...                  num_gpus=1, isl=512, osl=128, precision="fp8")
    >>> p.read_text().count("<html")
    1
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..advise import default_workloads
from ..advise.lint import lint
from ..advise.regimes import regimes
from ..api import estimate
from ..errors import CodesignError, SpecError, UnsupportedError
from ..explore import Frontier, frontier
from ..outputs import check_output_path, write_text
from ..specs.context import past_window
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.plan import ParallelPlan
from ..specs.workload import Workload
from .html_sections import (
    CSS,
    accuracy_text,
    comparison,
    esc,
    gpu_section,
    kv_table,
    num,
    precision_front,
)
from .launch import launch_settings
from .plots import accuracy_label

PLOT_DIV_ID = "frontier-plot"
GPU_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf")
PRECISION_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
INSTALL_HINT = 'the HTML report needs plotly: pip install "llm-codesign[report]"'


def _plotly() -> tuple[Any, Any]:
    try:
        import plotly.graph_objects as go
        import plotly.io as pio
    except ImportError:
        raise UnsupportedError(INSTALL_HINT) from None
    return go, pio


def write_report(
    model: str | Path | ModelSpec,
    hardware: str | Path | HardwareSpec | Sequence[str | Path | HardwareSpec],
    path: str | Path,
    *,
    num_gpus: int = 8,
    isl: int = 1024,
    osl: int = 1024,
    precision: Any = None,
    engine: Any = None,
    ttft_ms: float | None = None,
    tpot_ms: float | None = None,
    min_tok_s_per_user: float | None = None,
    power_w: float | None = None,
    usd_per_gpu_hour: float | None = None,
    **frontier_kwargs: Any,
) -> Path:
    """Search ``model`` on each GPU of ``hardware`` and write the report to ``path``.

    The keyword arguments are :func:`explore.frontier`'s (the same for every GPU); ``precision``
    (a preset or comma list; default: every native one) and ``engine`` also set the regimes,
    lint and estimate calls. Returns the path written (atomically: an interrupted run leaves no
    file). Raises :class:`UnsupportedError` when plotly is not installed.
    """
    go, pio = _plotly()  # fail before the search, not after
    hws = [hardware] if isinstance(hardware, (str, Path, HardwareSpec)) else list(hardware)
    if not hws:
        raise SpecError("report: give at least one GPU")
    out = Path(path)
    if out.suffix.lower() not in (".html", ".htm"):
        raise SpecError(f"report path {str(path)!r} must end in .html")
    check_output_path(out, create=True)  # before the searches, not after
    spec = {
        k: frontier_kwargs[k] for k in ("spec_tokens", "spec_acceptance") if k in frontier_kwargs
    }
    fronts = [
        frontier(
            model,
            hw,
            num_gpus=num_gpus,
            isl=isl,
            osl=osl,
            precision=precision,
            engine=engine,
            ttft_ms=ttft_ms,
            tpot_ms=tpot_ms,
            min_tok_s_per_user=min_tok_s_per_user,
            power_w=power_w,
            usd_per_gpu_hour=usd_per_gpu_hour,
            **frontier_kwargs,
        )
        for hw in hws
    ]
    extras = [_extras(f, power_w, usd_per_gpu_hour, spec) for f in fronts]
    plot = pio.to_html(
        _figure(go, fronts),
        include_plotlyjs=True,
        full_html=False,
        div_id=PLOT_DIV_ID,
        config={"displaylogo": False, "responsive": True},
    )
    page = _page(fronts, extras, plot)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SpecError(f"cannot write {out}: {exc.strerror}") from None
    return write_text(out, page)


# ---------------------------------------------------------------------------------------------
# the calls behind each GPU's section
# ---------------------------------------------------------------------------------------------


def _extras(
    f: Frontier, power_w: float | None, usd: float | None, spec: dict[str, Any]
) -> dict[str, Any]:
    """Launch settings and an estimate at the best point, regimes and lint at its precision.
    A call that cannot answer (a CodesignError) leaves its message in ``notes``."""
    out: dict[str, Any] = {"launch": None, "estimate": None, "regimes": None, "lint": None}
    notes: dict[str, str] = {}
    best = f.best_dict()
    prec = best["precision"] if best else f.precisions[0].id
    if best is not None and f.best is not None:
        out["launch"] = launch_settings(f, f.best)
        if best["mode"] == "aggregated":
            try:
                out["estimate"] = estimate(
                    f.model,
                    f.hardware,
                    prec,
                    ParallelPlan(**best["plan"]),
                    Workload(f.isl, f.osl, best["concurrency"]),
                    engine=f.engine,
                    explain=False,
                    power_w=power_w,
                    usd_per_gpu_hour=usd,
                    **spec,
                )
            except CodesignError as exc:
                notes["estimate"] = str(exc)
    try:
        out["regimes"] = regimes(f.model, f.hardware, prec, engine=f.engine)
    except CodesignError as exc:
        notes["regimes"] = str(exc)
    # lint refuses lengths past the checkpoint's window (estimate's note says so): the defaults
    wl = f"{f.isl}/{f.osl}" if not past_window(f.model, f.isl, f.osl)[1] else ""
    try:
        out["lint"] = lint(
            f.model,
            f.hardware,
            prec,
            workloads=[*([wl] if wl else []), *(w for w in default_workloads(f.model) if w != wl)],
            engine=f.engine,
        )
    except CodesignError as exc:
        notes["lint"] = str(exc)
    out["notes"] = notes
    return out


# ---------------------------------------------------------------------------------------------
# the plot
# ---------------------------------------------------------------------------------------------


def _spread(f: Frontier, p: dict[str, Any]) -> str:
    """A point's throughput band in a few words."""
    band = f.uncertainty_bands([p]).get(p["uncertainty"]["throughput"] or "")
    if band is None:
        return "no error band"
    return (
        f"±{band['median_abs']:.0%} median error (p90 {band['p90_abs']:.0%}, {band['n']} rows)"
        + (", extrapolated" if band["extrapolated"] else "")
    )


def _hover(f: Frontier, p: dict[str, Any]) -> str:
    """A point's hover label; every value is escaped (Plotly renders a subset of HTML)."""
    ec = p["economics"]
    usd = ec.get("usd_per_million_output_tokens")
    lines = [
        f"<b>{esc(f.hardware.id)} · {esc(p['plan_label'])}</b>",
        f"precision {esc(p['precision'])}",
        f"concurrency {p['concurrency']:,} per replica ({p['concurrency_total']:,} total)",
        f"TTFT {p['ttft_ms']:,.0f} ms · TPOT {p['tpot_ms']:,.1f} ms",
        f"{p['tok_s_per_user']:,.1f} tok/s/user · {p['output_tok_s_per_gpu']:,.0f} tok/s/GPU",
        f"accuracy {esc(accuracy_text(p['accuracy']))}",
        f"tok/s/GPU {esc(_spread(f, p))}",
        f"{num(ec.get('output_tok_s_per_mw'), ',.0f')} tok/s/MW",
    ]
    if usd is not None:
        lines.append(f"${usd:,.3f} per million output tokens")
    return "<br>".join(lines)


def _band_traces(go: Any, fig: Any, f: Frontier, dicts: list[dict[str, Any]], colour: str) -> None:
    """The shaded band of a frontier line: each point's tok/s/GPU times 1 ± the median |error|
    of its throughput class (``specs.uncertainty``); nothing where no band exists."""
    bands = f.uncertainty_bands(dicts)
    spread = [bands.get(d["uncertainty"]["throughput"] or "") for d in dicts]
    if any(b is None for b in spread):
        return
    x = [d["tok_s_per_user"] for d in dicts]
    y = [d["output_tok_s_per_gpu"] for d in dicts]
    r, g, b = (int(colour[k : k + 2], 16) for k in (1, 3, 5))
    common = {
        "x": x,
        "mode": "lines",
        "line": {"width": 0, "shape": "vh"},
        "legendgroup": esc(f.hardware.id),
        "showlegend": False,
        "hoverinfo": "skip",
    }
    lower = [v * max(1.0 - s["median_abs"], 0.0) for v, s in zip(y, spread)]
    fig.add_trace(go.Scatter(y=lower, **common))
    upper = [v * (1.0 + s["median_abs"]) for v, s in zip(y, spread)]
    fig.add_trace(
        go.Scatter(y=upper, fill="tonexty", fillcolor=f"rgba({r},{g},{b},0.12)", **common)
    )


def _figure(go: Any, fronts: list[Frontier]) -> Any:
    """One trace per (GPU, precision): that precision's own Pareto points; a star per GPU at
    its best configuration."""
    fig = go.Figure()
    for gi, f in enumerate(fronts):
        colour = GPU_COLOURS[gi % len(GPU_COLOURS)]
        for pi, prec in enumerate(f.precisions):
            idx = precision_front(f, pi)
            if not idx:
                continue
            dicts = [f.point_dict(i) for i in idx]
            _band_traces(go, fig, f, dicts, colour)
            fig.add_trace(
                go.Scatter(
                    x=[d["tok_s_per_user"] for d in dicts],
                    y=[d["output_tok_s_per_gpu"] for d in dicts],
                    mode="lines+markers",
                    name=esc(
                        f"{f.hardware.id} {prec.id} ({accuracy_label(f.accuracy.get(prec.id))})"
                    ),
                    legendgroup=esc(f.hardware.id),
                    line={
                        "color": colour,
                        "dash": PRECISION_DASHES[pi % len(PRECISION_DASHES)],
                        "shape": "vh",
                    },
                    marker={"size": 6},
                    hovertext=[_hover(f, d) for d in dicts],
                    hovertemplate="%{hovertext}<extra></extra>",
                )
            )
        best = f.best_dict()
        if best is not None:
            fig.add_trace(
                go.Scatter(
                    x=[best["tok_s_per_user"]],
                    y=[best["output_tok_s_per_gpu"]],
                    mode="markers",
                    name=esc(f"{f.hardware.id} best ({best['precision']})"),
                    legendgroup=esc(f.hardware.id),
                    marker={"symbol": "star", "size": 16, "color": colour, "line": {"width": 1}},
                    hovertext=["<b>best</b><br>" + _hover(f, best)],
                    hovertemplate="%{hovertext}<extra></extra>",
                )
            )
    fig.update_layout(
        template="plotly_white",
        height=580,
        hovermode="closest",
        margin={"l": 70, "r": 20, "t": 30, "b": 60},
        xaxis={"type": "log", "title": {"text": "tokens/s/user (interactivity)"}},
        yaxis={"type": "log", "title": {"text": "output tokens/s/GPU (throughput)"}},
        legend={"title": {"text": "GPU precision (accuracy)"}},
    )
    return fig


def _page(fronts: list[Frontier], extras: list[dict[str, Any]], plot: str) -> str:
    f0 = fronts[0]
    gpus = ", ".join(f.hardware.id for f in fronts)
    title = f"{f0.model.id} on {gpus}"
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    targets = ", ".join(f"{k} {v:g}" for k, v in f0.targets.to_dict().items() if v is not None)
    meta = {
        "model": f0.model.id,
        "GPUs": gpus,
        "GPU budget": f"up to {f0.num_gpus} per deployment",
        "ISL/OSL": f"{f0.isl}/{f0.osl}",
        "engine": f0.engine.id,
        "targets": targets or "none (best = highest throughput)",
        "generated": when,
    }
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc('llm-codesign report: ' + title)}</title><style>{CSS}</style></head><body>"
        f"<h1>llm-codesign report: {esc(title)}</h1>"
        + kv_table([[k, v] for k, v in meta.items()])
        + "<h2>Throughput–interactivity frontier</h2>"
        "<p class=note>One line per GPU and precision (that precision's own Pareto points); a "
        "star marks each GPU's best configuration. The shaded band around a line is ± the "
        "median |error| of tok/s/GPU that validation measured in each point's class (model "
        "kind, GPU generation, engine, concurrency, ISL/OSL). Hover a point for its plan, "
        "latency, throughput, accuracy, cost and error band.</p>"
        + plot
        + comparison(fronts)
        + "".join(gpu_section(f, ex) for f, ex in zip(fronts, extras))
        + "</body></html>"
    )

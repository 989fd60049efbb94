"""The sections of the HTML report (``report.html``): escaping, tables, the side-by-side
ratios and each GPU's best configuration, launch settings, memory, regimes, lint and
assumptions. Every cell is HTML-escaped here; nothing is computed beyond ratios of the numbers
the library calls returned.
"""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np

from ..explore import Frontier
from ..pareto import frontier_area, pareto_mask
from .render import clean, trust_text

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;
max-width:1280px;padding:16px 24px;color:#1d1d1f}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}
h3{font-size:15px;margin-top:18px}table{border-collapse:collapse;margin:6px 0 12px}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f5f5f7}td.n{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#f5f5f7;padding:6px 8px;margin:2px 0;white-space:pre-wrap;
overflow-wrap:anywhere}
table.kv th{font-weight:600;white-space:nowrap}details{margin:8px 0}
summary{cursor:pointer;font-weight:600}.note{color:#666}.sev-error{color:#b00020}
.sev-warn{color:#b36b00}.sev-info{color:#0b5cad}section.gpu{margin-top:24px}
"""


def esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def num(v: Any, fmt: str = ",.1f") -> str:
    if v is None or isinstance(v, bool):
        return "—" if v is None else str(v)
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    return format(x, fmt) if math.isfinite(x) else "—"


def accuracy_text(acc: dict[str, Any] | None) -> str:
    if not acc:
        return "unknown"
    if acc.get("value") is not None:
        return f"{acc['value']:+.2f} pts vs {acc.get('baseline', '')} ({acc.get('kind', '')})"
    if acc.get("kind") == "measured" and acc.get("sqnr_db") is not None:
        return f"SQNR {acc['sqnr_db']:.1f} dB (measured)"
    return "unknown"


def precision_front(f: Frontier, pi: int) -> list[int]:
    """Indices of precision ``pi``'s own Pareto frontier, by tok/s/user ascending."""
    pts = f.points
    sel = np.flatnonzero(pts["feasible"] & (pts["precision"] == pi))
    if not sel.size:
        return []
    xs, ys = pts["tok_s_per_user"][sel], pts["output_tok_s_per_gpu"][sel]
    keep = sel[pareto_mask(xs, ys)]
    return [int(i) for i in keep[np.argsort(pts["tok_s_per_user"][keep], kind="stable")]]


def precision_summary(f: Frontier, pi: int) -> tuple[float, float]:
    """(frontier area, max tok/s/GPU) of one precision's own points."""
    pts = f.points
    sel = pts["feasible"] & (pts["precision"] == pi)
    if not sel.any():
        return 0.0, 0.0
    x, y = pts["tok_s_per_user"][sel], pts["output_tok_s_per_gpu"][sel]
    return float(frontier_area(x, y, f.area_range)), float(y.max())


def html_table(columns: list[str], rows: list[list[Any]], numeric: set[int] | None = None) -> str:
    """A table of already-formatted cells (escaped here)."""
    numeric = numeric or set()
    head = "".join(f"<th>{esc(c)}</th>" for c in columns)
    body = "".join(
        "<tr>"
        + "".join(
            f"<td{' class=n' if j in numeric else ''}>{esc(c)}</td>" for j, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def kv_table(rows: list[list[str]]) -> str:
    """A two-column key/value table (escaped here)."""
    body = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    return f'<table class="kv">{body}</table>'


def html_tree(obj: Any) -> str:
    """Any JSON-like value as nested key/value tables; long or multi-line strings in <pre>."""
    if isinstance(obj, dict):
        if not obj:
            return "<em>none</em>"
        rows = "".join(f"<tr><th>{esc(k)}</th><td>{html_tree(v)}</td></tr>" for k, v in obj.items())
        return f'<table class="kv">{rows}</table>'
    if isinstance(obj, (list, tuple)):
        if not obj:
            return "<em>none</em>"
        if all(not isinstance(v, (dict, list, tuple)) for v in obj):
            return esc(", ".join(scalar(v) for v in obj))
        return "<ol>" + "".join(f"<li>{html_tree(v)}</li>" for v in obj) + "</ol>"
    if isinstance(obj, str) and ("\n" in obj or len(obj) > 90):
        return f"<pre>{esc(obj)}</pre>"
    return esc(scalar(obj))


def scalar(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def ratio(v: Any, base: Any) -> str:
    if v is None or base is None or not base or not v:
        return "—"
    return f"{float(v) / float(base):.2f}×"


def best_economics(f: Frontier) -> tuple[float | None, float | None]:
    b = f.best_dict()
    if b is None:
        return None, None
    ec = b["economics"]
    return ec.get("output_tok_s_per_mw"), ec.get("usd_per_million_output_tokens")


def best_spread(f: Frontier) -> str:
    """The best point's tok/s/GPU error band: ±median (p90) |error|, ``extrapolated`` where
    its model kind was never measured on its GPU generation."""
    b = f.best_dict()
    band = f.uncertainty_bands([b]).get(b["uncertainty"]["throughput"] or "") if b else None
    if band is None:
        return "—"
    text = f"±{band['median_abs']:.0%} ({band['p90_abs']:.0%})"
    return text + (" extrapolated" if band["extrapolated"] else "")


def max_tput(f: Frontier) -> float:
    y = f.pareto_points()["output_tok_s_per_gpu"]
    return float(y.max()) if len(y) else 0.0


def comparison(fronts: list[Frontier]) -> str:
    """GPU ratios against the first GPU, then each (GPU, precision) against the same baseline."""
    base = fronts[0]
    b_mw, b_usd = best_economics(base)
    at = [r["tok_s_per_user"] for r in base.readings()]
    b_read = [r["output_tok_s_per_gpu"] for r in base.readings(at)]
    cols = ["GPU", "frontier area", "× area", "max tok/s/GPU", "×"]
    for x in at:
        cols += [f"tok/s/GPU @ {x:g} tok/s/user", "×"]
    cols += ["best: tok/s/MW", "×", "best: $/M tokens", "×", "best: tok/s/GPU ± (p90)"]
    rows = []
    for f in fronts:
        mw, usd = best_economics(f)
        reads = [r["output_tok_s_per_gpu"] for r in f.readings(at)]
        row = [
            f.hardware.id,
            num(f.area),
            ratio(f.area, base.area),
            num(max_tput(f), ",.0f"),
            ratio(max_tput(f), max_tput(base)),
        ]
        for v, bv in zip(reads, b_read):
            row += [num(v, ",.0f"), ratio(v, bv)]
        row += [num(mw, ",.0f"), ratio(mw, b_mw), num(usd, ",.3f"), ratio(usd, b_usd)]
        row.append(best_spread(f))
        rows.append(row)
    gpu_table = html_table(cols, rows, set(range(1, len(cols))))
    prow = []
    for f in fronts:
        for pi, prec in enumerate(f.precisions):
            area, top = precision_summary(f, pi)
            prow.append(
                [
                    f.hardware.id,
                    prec.id,
                    accuracy_text(f.accuracy.get(prec.id)),
                    num(area),
                    ratio(area, base.area),
                    num(top, ",.0f"),
                    ratio(top, max_tput(base)),
                ]
            )
    prec_table = html_table(
        ["GPU", "precision", "accuracy", "own frontier area", "× area", "max tok/s/GPU", "×"],
        prow,
        {3, 4, 5, 6},
    )
    usd_note = "" if b_usd is not None else " $/M tokens appear with --usd-per-gpu-hour."
    return (
        "<h2>Side by side</h2>"
        f"<p class=note>Ratios against {esc(base.hardware.id)} (its combined frontier over every "
        f"precision). Frontier area: mean tok/s/GPU of the staircase, log-uniform over "
        f"{base.area_range[0]:g}–{base.area_range[1]:g} tok/s/user. tok/s/MW and $/M tokens at "
        f"each GPU's best configuration.{esc(usd_note)} ±: median (p90) |error| of tok/s/GPU that "
        f"validation measured in the best point's class.</p>"
        + gpu_table
        + "<h3>Each precision's own frontier</h3>"
        + prec_table
    )


def best_section(f: Frontier, ex: dict[str, Any]) -> str:
    best = f.best_dict()
    if best is None:
        why = "no configuration meets the targets" if f.targets.any else "no feasible point"
        return f"<h3>Best configuration</h3><p>{esc(why)}</p>"
    what = "best meeting the targets" if f.targets.any else "highest throughput (no targets)"
    ec = best["economics"]
    rows = [
        ["plan", best["plan_label"] + f" × {best['plan']['dp']} replica(s)"],
        ["precision", best["precision"]],
        ["accuracy", accuracy_text(best["accuracy"])],
        ["accuracy source", best["accuracy"].get("source", "")],
        ["mode", best["mode"]],
        ["concurrency", f"{best['concurrency']:,} per replica ({best['concurrency_total']:,})"],
        ["TTFT", f"{best['ttft_ms']:,.1f} ms"],
        ["TPOT", f"{best['tpot_ms']:,.2f} ms"],
        ["tok/s/user", num(best["tok_s_per_user"], ",.2f")],
        ["output tok/s/GPU", num(best["output_tok_s_per_gpu"], ",.0f")],
        ["GPUs", str(best["num_gpus"])],
        ["power per GPU", f"{num(ec.get('power_w_per_gpu'), ',.0f')} W ({ec.get('power_source')})"],
        ["output tok/s per MW", num(ec.get("output_tok_s_per_mw"), ",.0f")],
        ["$ per million output tokens", num(ec.get("usd_per_million_output_tokens"), ",.3f")],
    ]
    bands = f.uncertainty_bands([best])
    cls = f.config_class(best["concurrency"]).to_dict()
    for metric, label in (("ttft", "TTFT"), ("tpot", "TPOT"), ("throughput", "tok/s/GPU")):
        band = bands.get(best["uncertainty"][metric] or "")
        rows.append([f"trust: {label}", trust_text(label, band, cls)])
    targets = ", ".join(f"{k} {v:g}" for k, v in f.targets.to_dict().items() if v is not None)
    launch = ex["launch"]
    return (
        f"<h3>Best configuration: {esc(what)}</h3>"
        + (f"<p class=note>targets: {esc(targets)}</p>" if targets else "")
        + kv_table(rows)
        + "<h3>Launch settings</h3>"
        + "<p class=note>templates: the checkpoint must already be in the point's precision</p>"
        + (html_tree(clean(launch)) if launch is not None else "<p>none</p>")
    )


def memory_section(f: Frontier, ex: dict[str, Any]) -> str:
    best = f.best_dict()
    if best is None:
        return ""
    e = ex["estimate"]
    cap = f.hardware.hbm_bytes / 1e9
    rows = [["GPU memory (datasheet)", f"{cap:,.1f} GB"]]
    if f.hardware.device_memory != f.hardware.hbm_bytes:
        rows.append(["GPU memory the driver exposes", f"{f.hardware.device_memory / 1e9:,.1f} GB"])
    rows.append(["used per GPU (frontier point)", f"{best['memory_per_gpu_gb']:,.2f} GB"])
    if e is not None:
        rows += [
            ["weights per GPU", f"{e.weights_per_gpu_gb:,.2f} GB"],
            ["KV cache per GPU", f"{e.kv_cache_per_gpu_gb:,.2f} GB"],
            ["used per GPU (estimate)", f"{e.memory_per_gpu_gb:,.2f} GB"],
            ["max concurrency per replica", f"{e.max_concurrency:,}"],
            ["fits in memory", str(e.fits_in_memory)],
        ]
    note = ex["notes"].get("estimate", "")
    return (
        "<h3>Memory at the best configuration</h3>"
        + kv_table(rows)
        + (f"<p class=note>estimate unavailable: {esc(note)}</p>" if note else "")
    )


def regimes_section(ex: dict[str, Any]) -> str:
    r = ex["regimes"]
    if r is None:
        return f"<h3>Regimes</h3><p class=note>{esc(ex['notes'].get('regimes', 'none'))}</p>"
    rows, sentences = [], []
    for g in r.regimes:
        d = g.to_dict()
        fr = d["fractions"]
        rows.append(
            [
                d["name"],
                f"{d['isl']}/{d['osl']}",
                d["plan_label"],
                f"{d['concurrency']:,}",
                d["bound"],
                ", ".join(f"{k} {v:.0%}" for k, v in fr.items()),
                num(d["tpot_ms"], ",.1f"),
                num(d["tok_s_per_user"], ",.1f"),
                num(d["output_tok_s_per_gpu"], ",.0f"),
            ]
        )
        sentences += d["summary"]
    cols = ["regime", "ISL/OSL", "plan", "concurrency", "bound", "time split", "TPOT ms"]
    return (
        f"<h3>Regimes and Amdahl ({esc(r.precision)}, engine {esc(r.engine)})</h3>"
        + html_table(cols + ["tok/s/user", "tok/s/GPU"], rows, {3, 6, 7, 8})
        + "<details><summary>Amdahl: what speeding up each op class by 2× gains</summary><ul>"
        + "".join(f"<li>{esc(s)}</li>" for s in sentences)
        + "</ul></details>"
    )


def lint_section(ex: dict[str, Any]) -> str:
    rep = ex["lint"]
    if rep is None:
        return f"<h3>Lint</h3><p class=note>{esc(ex['notes'].get('lint', 'none'))}</p>"
    head = (
        f"<h3>Lint ({esc(rep.precision)}; workloads "
        f"{esc(', '.join(str(w.get('spec', '')) for w in rep.workloads))})</h3>"
    )
    if not rep.findings:
        return head + "<p>no findings</p>"
    rows = "".join(
        f"<tr><td class='sev-{esc(x.severity)}'>{esc(x.severity)}</td><td>{esc(x.rule)}</td>"
        f"<td>{esc(x.location)}</td><td class=n>{x.impact:.2f}×</td><td>{esc(x.message)}</td></tr>"
        for x in rep.findings
    )
    return (
        head + "<table><thead><tr><th>severity</th><th>rule</th><th>location</th><th>impact</th>"
        f"<th>message</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def assumptions(f: Frontier, ex: dict[str, Any]) -> str:
    e = ex["estimate"]
    doc: dict[str, Any] = {
        "estimate at the best configuration (hardware figures, engine constants)": (
            e.assumptions() if e is not None else {"engine_constants": f.engine.to_dict()}
        ),
        "hardware": f.hardware.summary(),
        "hardware sources": dict(f.hardware.sources),
        "model": f.model.summary(),
        "precision decisions and accuracy sources": f.precision_decisions,
        "search settings": f.settings,
        "power and price inputs": f.economics_inputs,
        "frontier area": (
            f"log-uniform mean over {f.area_range[0]:g}-{f.area_range[1]:g} tok/s/user"
        ),
    }
    if ex["regimes"] is not None:
        doc["regimes"] = ex["regimes"].assumptions
    if ex["lint"] is not None:
        doc["lint"] = ex["lint"].assumptions
    return (
        "<details><summary>Every assumption behind these numbers</summary>"
        + html_tree(clean(doc))
        + "</details>"
    )


def gpu_section(f: Frontier, ex: dict[str, Any]) -> str:
    reads = "; ".join(
        f"{r['tok_s_per_user']:g} tok/s/user → "
        + (f"{r['output_tok_s_per_gpu']:,.0f} tok/s/GPU ({r['plan']})" if r["plan"] else "—")
        for r in f.readings()
    )
    return (
        f'<section class="gpu" id="gpu-{esc(f.hardware.id)}">'
        f"<h2>{esc(f.hardware.id)}: {esc(f.hardware.name)}</h2>"
        f"<p>{f.evaluated:,} points evaluated ({f.feasible_count:,} feasible) in "
        f"{f.elapsed_s:.2f} s; precisions {esc(', '.join(p.id for p in f.precisions))}; frontier "
        f"area {num(f.area)} tok/s/GPU; readings: {esc(reads)}</p>"
        + best_section(f, ex)
        + memory_section(f, ex)
        + regimes_section(ex)
        + lint_section(ex)
        + assumptions(f, ex)
        + "</section>"
    )

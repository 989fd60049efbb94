"""CLI commands of the co-design advisor: ``gemm``, ``lint``, ``regimes``, ``search``.

Each parses, makes one library call and renders (JSON and tables from the same result object).
"""

from __future__ import annotations

import json

import click
from rich.markup import escape

from .. import SearchSpace, SpecError, gemm_sweep, load_model
from .. import lint as lint_model
from .. import regimes as regime_report
from .. import search as search_arch
from ..advise import (
    DEFAULT_WORKLOADS,
    LONG_ISL,
    RULES,
    SHORT_ISL,
    SHORT_OSL,
    parse_workload,
    save_plot,
)
from ..report import check_output_path, console, table, to_json, write_text

# the precision the advisors price without -p (explore.operating.advisor_precision)
ADVISOR_PRECISION_HELP = (
    "default: a quantized checkpoint's own weights where the GPU runs them, else fp8 where "
    "native, else bf16; an fp8 KV cache where the GPU has fp8"
)


def _precision_line(c, assumptions: dict, precision: str | None) -> None:
    """The advisors' precision reading under their header, where it was not given."""
    if precision is None:
        c.print(f"[dim]precision: {escape(assumptions['precision'])}[/]")


def _floats(text: str | None, name: str) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise SpecError(f"--{name} {text!r} must be a comma list of numbers") from None
    if not values:
        raise SpecError(f"--{name} must not be empty")
    return values


@click.command()
@click.option("--hardware", "-g", required=True, help="bundled GPU id or YAML/JSON path")
@click.option(
    "--dtype", default="bf16", show_default=True, help="bf16, fp16, fp8, mxfp8, nvfp4, mxfp4, int8"
)
@click.option(
    "--m", "m", default="8192", show_default=True, help="value, comma list or start:stop[:step]"
)
@click.option(
    "--n", "n", default="8192", show_default=True, help="value, comma list or start:stop[:step]"
)
@click.option(
    "--k", "k", default="8192", show_default=True, help="value, comma list or start:stop[:step]"
)
@click.option(
    "--tile",
    default=None,
    help="force one tile TMxTN[@CMxCN] (e.g. 256x256@1x2); default: cost-model best",
)
@click.option(
    "--engine", default=None, help="engine constants (per-launch overhead; default: base)"
)
@click.option(
    "--plot",
    "plot_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="write a PNG plot here",
)
@click.option("--json", "as_json", is_flag=True, help='print {"points": [...]}')
def gemm(hardware, dtype, m, n, k, tile, engine, plot_path, as_json):
    """Predicted GEMM throughput over M, N, K (tile and wave quantization model)."""
    s = gemm_sweep(hardware, dtype, m, n, k, engine=engine, tile=tile)
    if plot_path:
        save_plot(s, plot_path)
    if as_json:
        click.echo(to_json(s.to_dict()))
        return
    c = console()
    c.print(
        f"[bold]{s.hardware}[/] {s.dtype} GEMM (peak {s.peak_flops_per_s / 1e12:,.0f} TFLOP/s, "
        f"sustained ceiling {s.ceiling_fraction:.3f}, tile {s.tile}, "
        f"+{s.launch_overhead_s * 1e6:.1f} us per launch)"
    )
    best = float(s.tflops.max())
    rows = [
        [int(a), int(b), int(cc), t, e, t / best, bd]
        for a, b, cc, t, e, bd in zip(s.m, s.n, s.k, s.tflops, s.efficiency, s.bound)
    ]
    c.print(
        table(
            "predicted throughput",
            ["M", "N", "K", "TFLOP/s", "of peak", "of sweep max", "bound"],
            rows,
        )
    )
    for axis in s.swept_axes():
        if len(s.swept_axes()) == 1:
            c.print(
                f"{axis.upper()} for >= 80% of the sweep maximum: {s.threshold(axis, 0.8):,.0f}; "
                f">= 90%: {s.threshold(axis, 0.9):,.0f}"
            )
    if plot_path:
        c.print(f"plot: {plot_path}")


@click.command()
@click.option("--model", "-m", required=True, help="bundled model id or config.json path")
@click.option(
    "--hardware",
    "-g",
    default="h200-sxm",
    show_default=True,
    help="bundled GPU id or YAML/JSON path",
)
@click.option("--precision", "-p", default=None, help=ADVISOR_PRECISION_HELP)
@click.option(
    "--workload",
    "-w",
    "workloads",
    multiple=True,
    help=(
        "ISL/OSL[/CONCURRENCY] or a regime name; repeat for several "
        f"(default {' and '.join(DEFAULT_WORKLOADS)}, their prompts within the model's "
        "context window); each at its throughput operating point"
    ),
)
@click.option(
    "--rule", "rules", multiple=True, type=click.Choice(RULES), help="run only these rules"
)
@click.option("--engine", default=None)
@click.option("--json", "as_json", is_flag=True, help='print {"findings": [...]}')
def lint(model, hardware, precision, workloads, rules, engine, as_json):
    """Co-design lint: what wastes the hardware, by how much (cost model), and the fix."""
    r = lint_model(
        model, hardware, precision, workloads=workloads or None, engine=engine, rules=rules or None
    )
    if as_json:
        click.echo(to_json(r.to_dict()))
        return
    c = console(160)
    wl = "; ".join(
        f"{w['spec']} at {w['plan_label']}, concurrency {w['concurrency']}" for w in r.workloads
    )
    c.print(
        f"[bold]{r.model}[/] on {r.hardware}, {r.precision} ({wl}): {len(r.findings)} finding(s)"
    )
    _precision_line(c, r.assumptions, precision)
    c.print(
        table(
            "findings",
            ["severity", "rule", "impact", "location", "message"],
            [[f.severity, f.rule, f"{f.impact:.3f}x", f.location, f.message] for f in r.findings],
        )
    )


@click.command()
@click.option("--model", "-m", required=True, help="bundled model id or config.json path")
@click.option("--hardware", "-g", required=True, help="bundled GPU id or YAML/JSON path")
@click.option("--precision", "-p", default=None, help=ADVISOR_PRECISION_HELP)
@click.option(
    "--short-isl",
    type=click.IntRange(min=1),
    default=None,
    help=f"short regimes' prompt [default: {SHORT_ISL}, or the model's context window less --osl]",
)
@click.option(
    "--long-isl",
    type=click.IntRange(min=1),
    default=None,
    help=f"long regimes' prompt [default: {LONG_ISL}, or the model's context window less --osl]",
)
@click.option("--osl", type=click.IntRange(min=1), default=SHORT_OSL, show_default=True)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=None,
    help="pin the throughput regimes' concurrency",
)
@click.option("--engine", default=None)
@click.option("--json", "as_json", is_flag=True, help='print {"regimes": [...]}')
def regimes(model, hardware, precision, short_isl, long_isl, osl, concurrency, engine, as_json):
    """Time split, bound resource and Amdahl's ceilings in the four deployment quadrants."""
    r = regime_report(
        model,
        hardware,
        precision,
        engine=engine,
        short_isl=short_isl,
        long_isl=long_isl,
        osl=osl,
        throughput_concurrency=concurrency,
    )
    if as_json:
        click.echo(to_json(r.to_dict()))
        return
    c = console(150)
    c.print(f"[bold]{r.model}[/] on {r.hardware}, {r.precision}, engine {r.engine}")
    _precision_line(c, r.assumptions, precision)
    rows = []
    for g in r.regimes:
        f = g.fractions
        rows.append(
            [
                g.name,
                f"{g.point.isl}/{g.point.osl}",
                g.point.plan.label(),
                g.point.concurrency,
                f"{f['attention']:.0%}",
                f"{f['ffn']:.0%}",
                f"{f['communication']:.0%}",
                f"{f['other']:.0%}",
                g.bound,
                g.point.tok_s_per_user,
                g.point.output_tok_s_per_gpu,
            ]
        )
    c.print(
        table(
            "time split of the steady-state step",
            [
                "regime",
                "ISL/OSL",
                "plan",
                "conc",
                "attention",
                "ffn",
                "comm",
                "other",
                "bound",
                "tok/s/user",
                "tok/s/GPU",
            ],
            rows,
        )
    )
    for g in r.regimes:
        c.print(g.sentences()[0])


@click.command()
@click.option("--model", "-m", required=True, help="bundled model id or config.json path")
@click.option("--hardware", "-g", required=True, help="bundled GPU id or YAML/JSON path")
@click.option("--precision", "-p", default=None, help=ADVISOR_PRECISION_HELP)
@click.option(
    "--workload", "-w", default="1024/1024", show_default=True, help="ISL/OSL of the frontier"
)
@click.option(
    "--objective", type=click.Choice(["area", "throughput"]), default="area", show_default=True
)
@click.option(
    "--target-tok-s-user",
    type=float,
    default=None,
    help="with --objective throughput: the interactivity floor",
)
@click.option(
    "--tolerance",
    type=float,
    default=0.02,
    show_default=True,
    help="parameter tolerance (total and active)",
)
@click.option(
    "--quality-tolerance",
    type=float,
    default=0.005,
    show_default=True,
    help="allowed relative loss increase (estimate)",
)
@click.option("--hidden-scales", default=None, help="comma list, e.g. 0.875,1,1.25")
@click.option("--layer-scales", default=None, help="comma list, e.g. 0.5,0.75,1")
@click.option(
    "--kv-heads", default=None, help="KV-head multipliers, e.g. 0.5,1 (accuracy effect unmodelled)"
)
@click.option("--experts", default=None, help="expert granularity multipliers, e.g. 0.5,1,2")
@click.option("--mla-ranks", default=None, help="kv_lora_rank multipliers, e.g. 0.5,1")
@click.option(
    "--linear-shares",
    default=None,
    help="shares of full-attention layers traded for Gated DeltaNet, e.g. 0,0.5,0.75",
)
@click.option("--top", type=click.IntRange(min=1), default=5, show_default=True)
@click.option(
    "--out",
    "out_dir",
    default=None,
    type=click.Path(),
    help="write each variant's config.json here (created)",
)
@click.option("--engine", default=None)
@click.option("--json", "as_json", is_flag=True)
def search(
    model,
    hardware,
    precision,
    workload,
    objective,
    target_tok_s_user,
    tolerance,
    quality_tolerance,
    hidden_scales,
    layer_scales,
    kv_heads,
    experts,
    mla_ranks,
    linear_shares,
    top,
    out_dir,
    engine,
    as_json,
):
    """Architecture search at constant parameters and estimated quality, ranked by the frontier."""

    if out_dir:
        check_output_path(out_dir, directory=True, create=True)  # before the search
    m = load_model(model)  # (once: parsed here and searched below)
    w = parse_workload(workload, m)  # (a long regime within the model's window)
    default = SearchSpace()
    space = SearchSpace(
        hidden_scales=_floats(hidden_scales, "hidden-scales") or default.hidden_scales,
        layer_scales=_floats(layer_scales, "layer-scales") or default.layer_scales,
        kv_heads=_floats(kv_heads, "kv-heads") or default.kv_heads,
        experts=_floats(experts, "experts") or default.experts,
        mla_rank_scales=_floats(mla_ranks, "mla-ranks") or default.mla_rank_scales,
        linear_shares=_floats(linear_shares, "linear-shares") or default.linear_shares,
    )
    r = search_arch(
        m,
        hardware,
        precision,
        isl=w.isl,
        osl=w.osl,
        engine=engine,
        space=space,
        objective=objective,
        target_tok_s_per_user=target_tok_s_user,
        param_tolerance=tolerance,
        quality_tolerance=quality_tolerance,
        top=top,
    )
    if out_dir:
        d = check_output_path(out_dir, directory=True, create=True)
        d.mkdir(parents=True, exist_ok=True)
        for i, v in enumerate(r.variants, 1):
            write_text(d / f"variant-{i}.json", json.dumps(v.config, indent=2))
    if as_json:
        click.echo(to_json(r.to_dict()))
        return
    c = console(160)
    b = r.baseline
    c.print(
        f"[bold]{b.model.id}[/] on {r.hardware}, {r.precision}, ISL/OSL {r.isl}/{r.osl}: objective "
        f"{r.objective} = {b.objective:,.0f}; {r.considered} variants within +-{tolerance:.0%} "
        "parameters considered"
    )
    _precision_line(c, r.assumptions, precision)
    rows = []
    for v in r.variants:
        ch = (
            ", ".join(f"{x['field']} {x['from']}->{x['to']}" for x in v.changes)
            or "(original: nothing beats it)"
        )
        rows.append(
            [
                f"{v.gain:.3f}x",
                v.total_params / 1e9,
                v.active_params / 1e9,
                f"{v.quality.relative_change:+.2%}",
                ch,
                ", ".join(v.quality.unmodelled) or "-",
            ]
        )
    c.print(
        table(
            "variants, best first",
            ["gain", "total B", "active B", "est. loss", "changes", "accuracy not modelled"],
            rows,
        )
    )
    c.print(
        "quality: a Chinchilla scaling-law estimate with an aspect-ratio band "
        f"(llm_codesign.quality), not a measurement; confidence "
        f"{r.assumptions['quality']['confidence']}"
    )

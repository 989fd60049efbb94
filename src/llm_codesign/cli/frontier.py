"""``llm-codesign frontier``: the throughput-interactivity Pareto frontier of a deployment search.

Parses, makes one library call (:func:`llm_codesign.explore.frontier` or ``compare``), renders
(JSON contract, CSV, plot, or a table).
"""

from __future__ import annotations

import math
from typing import Any

import click
import numpy as np

from .. import (
    Frontier,
    SpecError,
    apply_profile,
    compare,
    load_hardware,
    parse_compare,
    parse_precision,
    write_csv,
)
from .. import (
    frontier as search_frontier,
)
from ..explore import AREA_RANGE, POINTS_PER_OCTAVE, READINGS_AT, frontier_area
from ..quant import inspect_checkpoint
from ..report import (
    check_output_path,
    console,
    frontier_json,
    launch_settings,
    output_paths,
    plot_frontiers,
    table,
    to_json,
    trust_text,
    write_launch_dir,
)
from ._common import deployment_options, frontier_options


def _floats(text: str, what: str) -> list[float]:
    try:
        vals = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise SpecError(f"{what} must be a comma list of numbers, got {text!r}") from None
    if not vals or any(not 0 < v < math.inf for v in vals):  # NaN fails too
        raise SpecError(f"{what} must hold finite positive numbers, got {text!r}")
    return vals


@click.command()
@click.option("--model", "-m", required=True, help="bundled model id or config.json path")
@click.option("--hardware", "-g", required=True, help="bundled GPU id or YAML/JSON path")
@click.option(
    "--num-gpus",
    "-n",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="GPU budget; DP replicas of smaller plans count",
)
@frontier_options
@click.option(
    "--slo",
    type=click.Choice(["mean", "p50", "p90", "p99"]),
    default="mean",
    show_default=True,
    help="the statistic the TTFT/TPOT targets hold for; a percentile picks the best point with "
    "the request simulator near the targets",
)
@click.option(
    "--disagg/--no-disagg",
    default=False,
    show_default=True,
    help="also search disaggregated prefill/decode pools",
)
@click.option(
    "--helix/--no-helix", default=True, show_default=True, help="search Helix KV-parallel attention"
)
@click.option(
    "--max-pp",
    type=click.IntRange(min=1),
    default=None,
    help="largest pipeline-parallel size searched",
)
@click.option(
    "--points-per-octave",
    type=click.IntRange(min=1, max=4096),
    default=POINTS_PER_OCTAVE,
    show_default=True,
    help="concurrency grid density",
)
@click.option(
    "--max-batch",
    type=click.IntRange(min=1),
    default=None,
    help="override the engine's max_batch_size (sequences per replica)",
)
@click.option(
    "--exhaustive",
    is_flag=True,
    help="full concurrency grid for every plan (no adaptive refinement)",
)
@click.option(
    "--at",
    "readings",
    default=",".join(f"{x:g}" for x in READINGS_AT),
    show_default=True,
    help="tok/s/user values at which to read tok/s/GPU",
)
@click.option(
    "--area-range",
    default=f"{AREA_RANGE[0]:g},{AREA_RANGE[1]:g}",
    show_default=True,
    help="tok/s/user range of the frontier area (log-uniform mean)",
)
@click.option(
    "--compare",
    "compare_spec",
    default=None,
    help="AXIS=ID,ID,...: one frontier per model, hardware or precision",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(),
    default=None,
    help="write the plot: .png, .svg, or a stem for both",
)
@click.option(
    "--csv",
    "csv_path",
    type=click.Path(),
    default=None,
    help="write every evaluated point to CSV",
)
@click.option(
    "--max-accuracy-drop",
    type=click.FloatRange(min=0),
    default=None,
    help="search only precisions whose published accuracy drop (benchmark points) is within this",
)
@click.option(
    "--allow-unknown-accuracy",
    is_flag=True,
    help="with --max-accuracy-drop, also keep precisions without a published number",
)
@click.option(
    "--weights",
    type=click.Path(exists=True),
    default=None,
    help="a safetensors checkpoint: measure each precision's weight error (quant inspect)",
)
@click.option(
    "--launch-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="write the best point's launch artifacts (scripts, configs, benchmark) to this folder",
)
@click.option("--json", "as_json", is_flag=True, help="print the JSON contract")
@click.option(
    "--all-points", is_flag=True, help="JSON: add every evaluated point under 'all_points'"
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="processes for large sweeps (default: CPUs available)",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="progress bar (default: long sweeps on a terminal)",
)
@deployment_options
def frontier(
    model,
    hardware,
    num_gpus,
    isl,
    osl,
    precision,
    engine,
    ttft_ms,
    tpot_ms,
    min_tok_s_per_user,
    slo,
    disagg,
    helix,
    max_pp,
    points_per_octave,
    max_batch,
    exhaustive,
    readings,
    area_range,
    compare_spec,
    plot_path,
    csv_path,
    max_accuracy_drop,
    allow_unknown_accuracy,
    weights,
    launch_dir,
    as_json,
    all_points,
    workers,
    progress,
    emulate,
    profile,
    spec_tokens,
    spec_acceptance,
    power_w,
    usd_per_gpu_hour,
):
    """Search plans x precisions x concurrency and print the Pareto frontier."""
    area = _floats(area_range, "--area-range")
    if len(area) != 2 or not area[0] < area[1]:
        raise SpecError(f"--area-range must be LO,HI with LO < HI, got {area_range!r}")
    # a bad suffix or an unwritable path fails before the search, not after
    for out in output_paths(plot_path) if plot_path else []:
        check_output_path(out)
    if csv_path:
        check_output_path(csv_path)
    if launch_dir:
        check_output_path(launch_dir, directory=True, create=True)
    hw: Any = load_hardware(hardware)
    if profile:
        hw = apply_profile(hw, profile)
    if emulate:
        hw = hw.with_overrides(emulate=True)
    common: dict[str, Any] = {
        "model": model,
        "hardware": hw,
        "num_gpus": num_gpus,
        "isl": isl,
        "osl": osl,
        "precision": precision,
        "engine": engine,
        "ttft_ms": ttft_ms,
        "tpot_ms": tpot_ms,
        "min_tok_s_per_user": min_tok_s_per_user,
        "disagg": disagg,
        "helix": helix,
        "max_pp": max_pp,
        "points_per_octave": points_per_octave,
        "max_batch": max_batch,
        "refine": not exhaustive,
        "workers": workers,
        "progress": progress,
        "area_range": (area[0], area[1]),
        "readings_at": _floats(readings, "--at"),
        "spec_tokens": spec_tokens,
        "spec_acceptance": spec_acceptance,
        "max_accuracy_drop": max_accuracy_drop,
        "allow_unknown_accuracy": allow_unknown_accuracy,
        "measured_accuracy": _measure(weights, precision) if weights else None,
        "power_w": power_w,
        "usd_per_gpu_hour": usd_per_gpu_hour,
        "slo": slo,
    }
    if compare_spec:
        axis, values = parse_compare(compare_spec)
        designs = [
            {
                axis: (
                    load_hardware(v).with_overrides(emulate=True)
                    if emulate and axis == "hardware"
                    else v
                ),
                "label": v,
            }
            for v in values
        ]
        results = compare(designs, **{k: v for k, v in common.items() if k != axis})
        if csv_path:
            write_csv(results, csv_path)
    else:
        results = [search_frontier(**common, csv_path=csv_path)]
    if plot_path:
        plot_frontiers(results, plot_path)
    if launch_dir:
        _write_launch(results, launch_dir)
    if as_json:
        click.echo(to_json(frontier_json(results, all_points=all_points)))
        return
    _render(results)


# weight formats measured by --weights when no --precision is given (the default presets' and
# the common weight-only ones)
MEASURED_FORMATS = ("fp8", "nvfp4", "mxfp4", "int4_g128")


def _measure(weights: str, precision: str | None) -> dict[str, Any]:
    """``quant inspect`` of the user's weights in the weight formats of the searched precisions."""
    formats = (
        sorted({parse_precision(p.strip()).weights.id for p in precision.split(",") if p.strip()})
        if precision
        else list(MEASURED_FORMATS)
    )
    formats = [f for f in formats if f not in ("bf16", "fp16", "fp32")] or ["fp8"]
    return inspect_checkpoint(weights, ",".join(formats))


def _accuracy_text(acc: dict[str, Any]) -> str:
    if acc.get("value") is not None:
        return f"{acc['value']:+.2f} pts ({acc['kind']})"
    if acc.get("kind") == "measured":
        return f"SQNR {acc['sqnr_db']:.1f} dB (measured)"
    return "unknown"


def _render_precisions(c: Any, f: Frontier) -> None:
    """One row per candidate precision: its accuracy and source, whether it was searched and
    why not, the checkpoint that provides it, and its own frontier (area, max tok/s/GPU)."""
    pts = f.points.cols
    rows = []
    for d in f.precision_decisions:
        acc = d["accuracy"]
        area, top = "", ""
        if d["searched"]:
            pi = [p.id for p in f.precisions].index(d["precision"])
            sel = pts["feasible"] & (pts["precision"] == pi)
            if sel.any():
                x, y = pts["tok_s_per_user"][sel], pts["output_tok_s_per_gpu"][sel]
                area = f"{frontier_area(x, y, f.area_range):,.1f}"
                top = f"{float(y.max()):,.0f}"
        rows.append(
            [
                d["precision"],
                _accuracy_text(acc),
                f"vs {acc.get('baseline', '')}",
                acc.get("checkpoint") or "",
                "yes" if d["searched"] else "no: " + d["reason"],
                area,
                top,
                acc.get("source", ""),
            ]
        )
    c.print(
        table(
            "precisions (accuracy: mean benchmark delta vs the checkpoint's own precision)",
            [
                "precision",
                "accuracy",
                "baseline",
                "checkpoint",
                "searched",
                "area",
                "max tok/s/GPU",
                "source",
            ],
            rows,
        )
    )


def _why_infeasible(f: Frontier) -> str:
    """The reasons every evaluated configuration failed, most common first."""
    reasons = f.points.cols["reason"]
    codes, counts = np.unique(reasons[reasons != ""].astype(str), return_counts=True)
    order = np.argsort(-counts)
    parts = [f"{codes[i]} ({counts[i]:,} configurations)" for i in order[:4]]
    return "; ".join(parts) or "no configuration was evaluated"


def _nearest(f: Frontier) -> str:
    """The feasible point closest to the targets: the smallest worst ratio of achieved to
    target (TTFT and TPOT over their limits, tok/s/user under its floor)."""
    c = f.points.cols
    ok = np.flatnonzero(c["feasible"])
    if not ok.size:
        return _why_infeasible(f)
    t = f.targets
    worst = np.ones(ok.size)
    if t.ttft_ms:
        worst = np.maximum(worst, c["ttft_s"][ok] * 1e3 / t.ttft_ms)
    if t.tpot_ms:
        worst = np.maximum(worst, c["tpot_s"][ok] * 1e3 / t.tpot_ms)
    if t.min_tok_s_per_user:
        worst = np.maximum(worst, t.min_tok_s_per_user / np.maximum(c["tok_s_per_user"][ok], 1e-9))
    i = int(ok[np.argmin(worst)])
    p = f.point_dict(i)
    return (
        f"nearest: {p['plan_label']} {p['precision']}, concurrency {p['concurrency']}: TTFT "
        f"{p['ttft_ms']:.0f} ms, TPOT {p['tpot_ms']:.1f} ms, {p['tok_s_per_user']:.1f} "
        f"tok/s/user ({float(worst.min()):.2f}x the tightest target)"
    )


def _spread(bands: dict[str, Any], band_id: str | None) -> str:
    """A band's median |error| (``--json`` has p90, bias and rows), ``*`` when extrapolated."""
    band = bands.get(band_id or "")
    if band is None:
        return "-"
    return f"{band['median_abs']:.0%}" + ("*" if band["extrapolated"] else "")


def _render(results: list[Frontier]) -> None:
    c = console(140)
    for f in results:
        head = f.label + ": " if f.label else ""
        c.print(
            f"[bold]{head}{f.model.id}[/] on up to {f.num_gpus} x {f.hardware.id}, ISL/OSL "
            f"{f.isl}/{f.osl}, precisions {', '.join(p.id for p in f.precisions)}, engine "
            f"{f.engine.id}: {f.evaluated:,} points ({f.feasible_count:,} feasible) in "
            f"{f.elapsed_s:.2f} s"
        )
        if f.precision_decisions:
            _render_precisions(c, f)
        pts = f.frontier_dicts()
        if not pts:
            c.print(f"[red]no feasible configuration[/]: {_why_infeasible(f)}")
            continue
        step = max(1, len(pts) // 30)
        shown = pts[::step]
        bands = f.uncertainty_bands(shown)
        rows = [
            [
                p["tok_s_per_user"],
                p["output_tok_s_per_gpu"],
                p["ttft_ms"],
                p["tpot_ms"],
                p["plan_label"],
                p["precision"],
                _clients(p),
                p["concurrency_total"],
                p["num_gpus"],
                p["memory_per_gpu_gb"],
                p.get("region", ""),
                _spread(bands, p["uncertainty"]["throughput"]),
            ]
            for p in shown
        ]
        title = (
            f"Pareto frontier ({len(shown)} of {len(pts)} points; --json for all)"
            if step > 1
            else "Pareto frontier"
        )
        c.print(
            table(
                title,
                [
                    "tok/s/user",
                    "out tok/s/GPU",
                    "TTFT ms",
                    "TPOT ms",
                    "plan",
                    "precision",
                    "conc/replica",
                    "users total",
                    "GPUs",
                    "mem/GPU GB",
                    "region",
                    "±",
                ],
                rows,
            )
        )
        c.print(
            "±: median |error| of tok/s/GPU in the point's class on validated rows (* "
            "extrapolated: model kind never measured on this GPU generation)"
            + (QUEUED_LEGEND if any(_queued(p) for p in shown) else "")
        )
        c.print(
            f"area {f.area:,.1f} tok/s/GPU (mean over {f.area_range[0]:g}-{f.area_range[1]:g} "
            "tok/s/user, log-uniform)"
        )
        c.print(
            "readings: "
            + "; ".join(
                f"{r['tok_s_per_user']:g} tok/s/user -> "
                + (
                    f"{r['output_tok_s_per_gpu']:,.0f} tok/s/GPU ({r['plan']})"
                    if r["output_tok_s_per_gpu"]
                    else "unreachable"
                )
                for r in f.readings()
            )
        )
        best = f.best_dict()
        best_index = f.best
        if best is None or best_index is None:
            if f.targets.any:
                c.print(f"[red]no configuration meets the targets[/]; {_nearest(f)}")
                if f.slo is not None and f.slo["note"]:
                    c.print(f"  {f.slo['note']}", highlight=False)
            continue
        what = "best meeting the targets" if f.targets.any else "highest throughput"
        c.print(
            f"[bold]{what}[/]: {best['plan_label']} {best['precision']}, concurrency "
            f"{best['concurrency']}, {best['output_tok_s_per_gpu']:,.0f} tok/s/GPU at "
            f"{best['tok_s_per_user']:.1f} tok/s/user, TTFT {best['ttft_ms']:.0f} ms, TPOT "
            f"{best['tpot_ms']:.1f} ms; accuracy assumed: {_accuracy_text(best['accuracy'])}, "
            f"{best['accuracy'].get('source', 'unknown')}"
        )
        if f.slo is not None:
            sim = next(r for r in f.slo["checked"] if r["point"] == f.best)
            c.print(
                f"  {f.slo['statistic']} (simulated, {sim['requests']:,} requests): TTFT "
                f"{sim['ttft_ms']:.0f} ms, TPOT {sim['tpot_ms'] or 0:.1f} ms; "
                f"{len(f.slo['checked']) - 1} higher-throughput points miss the targets at "
                f"{f.slo['statistic']}",
                highlight=False,
            )
        best_bands = f.uncertainty_bands([best])
        for metric, label in (("ttft", "TTFT"), ("tpot", "TPOT"), ("throughput", "throughput")):
            band = best_bands.get(best["uncertainty"][metric] or "")
            cls = f.config_class(best["concurrency"]).to_dict()
            c.print("  trust: " + trust_text(label, band, cls), highlight=False, soft_wrap=True)
        ec = best["economics"]
        usd = ec["usd_per_million_output_tokens"]
        c.print(
            f"  power and cost: {ec['output_tok_s_per_mw'] or 0:,.0f} output tok/s per MW at "
            f"{ec['power_w_per_gpu']:,.0f} W per GPU ({ec['power_source']})"
            + (f"; ${usd:,.3f} per million output tokens" if usd is not None else "")
        )
        launch = launch_settings(f, best_index)
        ck = launch["checkpoint"]
        c.print(f"  checkpoint: {ck['id']} ({ck['how']})", soft_wrap=True)
        if ck["step"]:
            c.print(f"  quantization step: {ck['step']}", soft_wrap=True)
        for note in launch["notes"]:
            c.print(f"  note: {note}", soft_wrap=True)
        for role, one in _launches(launch):
            prefix = f"  {role} " if role else "  "
            if "trtllm" in one:
                c.print(
                    f"{prefix}TensorRT-LLM: {one['trtllm']['command']}  # "
                    + f"{one['trtllm']['config_file']}: "
                    + one["trtllm"]["config_inline"],
                    soft_wrap=True,
                )
            for key, name in (("vllm", "vLLM"), ("sglang", "SGLang")):
                if key in one:
                    c.print(f"{prefix}{name}: {one[key]}", soft_wrap=True)
            if role:
                for note in one["notes"]:
                    c.print(f"{prefix}note: {note}", soft_wrap=True)
        for engine, cmd in launch["bench"].items():
            c.print(f"  benchmark ({engine}): {cmd}", soft_wrap=True)


def _write_launch(results: list[Frontier], directory: str) -> None:
    """The best point's launch artifacts of each frontier (a sub-folder per label if several)."""
    for f in results:
        if f.best is None:
            raise SpecError("--launch-dir: no best configuration to launch (targets unmet)")
        sub = f"{directory}/{f.label}" if len(results) > 1 and f.label else directory
        write_launch_dir(launch_settings(f, f.best), sub)


def _launches(launch: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    if "prefill" in launch:
        return [("prefill", launch["prefill"]), ("decode", launch["decode"])]
    return [("", launch)]


# the legend of a point whose engine runs fewer sequences than its clients (``_clients``)
QUEUED_LEGEND = (
    "; q: more clients than the engine runs at once (memory or a tuned batch limit; --json: "
    "running_concurrency), the others queue and TTFT includes their wait"
)


def _queued(p: dict) -> bool:
    """Whether a frontier point's clients exceed the sequences its engine runs at once."""
    return p["running_concurrency"] < p["concurrency"] - 0.5


def _clients(p: dict) -> str | int:
    """A point's clients per replica, marked ``q`` where its engine runs fewer at once
    (``QUEUED_LEGEND``)."""
    return f"{p['concurrency']:,} q" if _queued(p) else p["concurrency"]

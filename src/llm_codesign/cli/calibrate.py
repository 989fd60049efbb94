"""`calibrate`: measure this machine into a calibration profile, or compare a profile's
measurements with the cost model's predictions (``--compare``)."""

from __future__ import annotations

from typing import Any

import click

from .. import SpecError, compare_profile, parse_device, run_calibration
from ..report import console, table, to_json

_BENCH_TITLES = {
    "copy": "device copy (bandwidth in GB/s)",
    "gemm": "GEMM (TFLOP/s)",
    "attention_decode": "decode attention, SDPA (TFLOP/s)",
    "attention_prefill": "prefill attention, SDPA causal (TFLOP/s)",
    "allreduce": "all-reduce (bus GB/s)",
    "alltoall": "all-to-all (bus GB/s)",
}


def _rate(row: dict[str, Any], key: str) -> float:
    return row[key] / (1e9 if row["unit"] == "B/s" else 1e12)


def _render_compare(result: Any) -> None:
    c = console(140)
    c.print(
        f"[bold]predicted vs measured[/] on {result.hardware} (engine {result.engine})"
        + (", profile overlaid" if result.overlay else "")
    )
    for bench, title in _BENCH_TITLES.items():
        rows = [r for r in result.rows if r["benchmark"] == bench]
        if not rows:
            continue
        c.print(
            table(
                title,
                [
                    "shape",
                    "dtype",
                    "measured us",
                    "predicted us",
                    "error %",
                    "measured",
                    "predicted",
                    "bound",
                ],
                [
                    [
                        r["shape"],
                        r["dtype"],
                        r["measured_s"] * 1e6,
                        r["predicted_s"] * 1e6,
                        r["error_pct"],
                        _rate(r, "measured_rate"),
                        _rate(r, "predicted_rate"),
                        r.get("bound", ""),
                    ]
                    for r in rows
                ],
            )
        )
    c.print(
        table(
            "summary",
            ["benchmark", "count", "median |error| %"],
            [[k, v["count"], v["median_abs_pct_error"]] for k, v in result.summary.items()],
        )
    )
    for note in result.notes:
        c.print(f"note: {note}")


def _render_profile(profile: Any, out: str) -> None:
    c = console(120)
    d = profile.device
    s = profile.settings
    c.print(f"[bold]{d.name}[/] ({d.kind}, {d.driver}, torch {d.torch_version}, {d.date}) -> {out}")
    c.print(
        f"bundled spec: {d.hardware_id or 'none (use --hardware ' + out + ' to model it)'}; "
        f"{s.get('elapsed_s', 0):.1f} s of a {s.get('budget_s', 0):.0f} s budget, timer "
        f"{s.get('timer', '?')}"
    )
    der = profile.derived
    rows: list[list[Any]] = []
    if "hbm_bytes_per_s" in der:
        rows.append(["copy bandwidth", "GB/s", der["hbm_bytes_per_s"] / 1e9])
    for dt, v in der.get("peak_flops_per_s", {}).items():
        rows.append([f"best GEMM {dt}", "TFLOP/s", v / 1e12])
    for dt, v in der.get("attention_decode_bytes_per_s", {}).items():
        rows.append([f"decode attention {dt}", "GB/s", v / 1e9])
    for dt, v in der.get("attention_prefill_flops_per_s", {}).items():
        rows.append([f"prefill attention {dt}", "TFLOP/s", v / 1e12])
    for coll in ("allreduce", "alltoall"):
        if f"{coll}_bus_bytes_per_s" in der:
            rows.append([f"{coll} bus bandwidth", "GB/s", der[f"{coll}_bus_bytes_per_s"] / 1e9])
            rows.append([f"{coll} latency", "us", der[f"{coll}_latency_s"] * 1e6])
    c.print(table("measured", ["metric", "unit", "value"], rows))
    counts = ", ".join(f"{k} {len(v)}" for k, v in profile.measurements.items() if v)
    c.print(f"measurements: {counts}; skipped: {len(s.get('skipped', []))}")


@click.command()
@click.option(
    "--device", default=None, help="cuda:N or cpu (default: cuda:0 if available, else cpu)"
)
@click.option("--quick", is_flag=True, help="a smaller grid (under 2 minutes on an H200)")
@click.option(
    "--out", default=None, type=click.Path(dir_okay=False), help="write the profile (JSON) here"
)
@click.option(
    "--dtypes",
    default=None,
    help="GEMM dtypes, comma-separated: bf16, fp16, fp8, tf32 (default: what the device runs)",
)
@click.option(
    "--budget-s",
    type=click.FloatRange(min=1.0),
    default=None,
    help="time budget in seconds (default 90/480 on a GPU, 30/120 on a CPU)",
)
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=None,
    help="CPU threads for torch (default: torch's)",
)
@click.option("--no-progress", is_flag=True, help="no progress bar")
@click.option(
    "--compare",
    "compare_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="print predicted vs measured for a profile instead of measuring",
)
@click.option(
    "--hardware",
    "-g",
    default=None,
    help="with --compare: spec to predict with (default: the profile's own device)",
)
@click.option(
    "--engine",
    default=None,
    help="with --compare: engine constants (default: base, the physics without host costs)",
)
@click.option(
    "--overlay", is_flag=True, help="with --compare: overlay the profile first (a self-check)"
)
@click.option("--json", "as_json", is_flag=True, help="print JSON")
def calibrate(
    device,
    quick,
    out,
    dtypes,
    budget_s,
    threads,
    no_progress,
    compare_path,
    hardware,
    engine,
    overlay,
    as_json,
):
    """Measure this machine (copy, GEMM, attention, collectives) into a calibration profile."""
    if compare_path is not None:
        if out or device or quick or dtypes or budget_s or threads:
            raise SpecError(
                "--compare reads an existing profile: drop "
                "--out/--device/--quick/--dtypes/--budget-s/--threads"
            )
        result = compare_profile(compare_path, hardware, engine, overlay=overlay)
        if as_json:
            click.echo(to_json(result.to_dict()))
        else:
            _render_compare(result)
        return
    if hardware or engine or overlay:
        raise SpecError("--hardware, --engine and --overlay go with --compare")
    if not out:
        raise SpecError("calibrate needs --out PROFILE.json (or --compare PROFILE.json)")
    parse_device(device)  # a bad device string fails before torch loads
    dts = tuple(d.strip() for d in dtypes.split(",") if d.strip()) if dtypes else None
    if no_progress:
        profile = run_calibration(
            device, quick=quick, out=out, dtypes=dts, budget_s=budget_s, threads=threads
        )
    else:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        with Progress(
            TextColumn("calibrate"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=Console(stderr=True),
            transient=True,
        ) as bar:
            task = bar.add_task("", total=None)

            def progress(label: str, done: int, total: int) -> None:
                bar.update(task, completed=done, total=total, description=label)

            profile = run_calibration(
                device,
                quick=quick,
                out=out,
                dtypes=dts,
                budget_s=budget_s,
                threads=threads,
                progress=progress,
            )
    if as_json:
        click.echo(
            to_json(
                {
                    "out": out,
                    "device": profile.to_dict()["device"],
                    "derived": profile.derived,
                    "counts": {k: len(v) for k, v in profile.measurements.items()},
                    "skipped": profile.settings.get("skipped", []),
                }
            )
        )
        return
    _render_profile(profile, out)

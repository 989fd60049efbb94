"""`validate` and `calibrate-fit` commands."""

from __future__ import annotations

from pathlib import Path

import click

from .. import fit_engine, write_engine_yaml
from .. import validate as run_validation
from ..report import check_output_path, console, table, to_json


@click.command()
@click.option(
    "--data",
    "data",
    multiple=True,
    type=click.Path(),
    help="measurement CSV (serving.csv format); repeatable (default: the shipped published "
    "measurements, data/validation/SOURCES.md)",
)
@click.option(
    "--engine",
    default=None,
    help="force one engine's constants (default: each row's framework picks trtllm/vllm/sglang)",
)
@click.option(
    "--profile",
    default=None,
    type=click.Path(),
    help="calibration profile to overlay on the hardware",
)
@click.option(
    "--out", default=None, type=click.Path(), help="write per-row predictions to this CSV"
)
@click.option(
    "--write-bands",
    default=None,
    type=click.Path(),
    help="write the error bands of these rows (per class: median and p90 |error|, bias; the "
    "shipped file is data/validation/error_bands.json) to this JSON file",
)
@click.option(
    "--worst", default=10, show_default=True, type=click.IntRange(min=0), help="worst rows to list"
)
@click.option("--json", "as_json", is_flag=True)
def validate(data, engine, profile, out, write_bands, worst, as_json):
    """Predict every row of published measurements and report the error."""
    for path in (out, write_bands):
        if path:
            check_output_path(path)  # before the work, not after
    report = run_validation(list(data) or None, engine=engine, profile=profile)
    if out:
        report.write_csv(out)
    if write_bands:
        report.write_bands(write_bands)
    if as_json:
        click.echo(to_json(report.to_dict()))
        return
    c = console(140)
    rows = []
    for src, metrics in report.summary["by_source_metric"].items():
        for metric, s in metrics.items():
            rows.append(
                [
                    src,
                    metric,
                    s["count"],
                    s["median_abs_pct_error"],
                    s["p90_abs_pct_error"],
                    s["signed_median_pct_error"],
                ]
            )
    c.print(
        table(
            "error by source and metric (%)",
            ["source", "metric", "rows", "median |err|", "p90 |err|", "bias"],
            rows,
        )
    )
    kl = report.summary["known_load"]
    c.print(
        table(
            "rows with known batch/concurrency (%)",
            ["metric", "rows", "median |err|", "p90 |err|", "bias"],
            [
                [
                    k,
                    v["count"],
                    v["median_abs_pct_error"],
                    v["p90_abs_pct_error"],
                    v["signed_median_pct_error"],
                ]
                for k, v in kl.items()
            ],
        )
    )
    bad = report.worst(worst)
    c.print(
        table(
            "worst rows",
            [
                "source",
                "model",
                "gpu",
                "precision",
                "plan",
                "isl",
                "osl",
                "mode",
                "load",
                "metric",
                "measured",
                "predicted",
                "error %",
            ],
            [
                [
                    r["source_id"],
                    r["model"],
                    r["gpu"],
                    r["precision"],
                    r["plan"],
                    r["isl"],
                    r["osl"],
                    r["mode"],
                    r["load"],
                    r["metric"],
                    r["measured"],
                    r["predicted"],
                    r["error"] * 100,
                ]
                for r in bad
            ],
        )
    )
    if report.marked:
        c.print(
            table(
                "kept as measured, marked: runs that contradict their own concurrency sweep "
                "(calibrate-fit leaves them out)",
                ["reason", "rows"],
                [[s["reason"], s["count"]] for s in report.marked],
            )
        )
    c.print(
        table(
            "skipped rows", ["reason", "rows"], [[s["reason"], s["count"]] for s in report.skipped]
        )
    )
    c.print(
        "engines: each row's framework column picks trtllm / vllm / sglang constants "
        "(data/engines/*.yaml)"
        if engine is None
        else f"engine forced: {engine}"
    )


@click.command("calibrate-fit")
@click.option(
    "--data",
    "data",
    multiple=True,
    required=True,
    type=click.Path(exists=True),
    help="calibration CSV; repeatable",
)
@click.option(
    "--engine",
    required=True,
    type=click.Choice(["generic", "trtllm", "trtllm-trt", "vllm", "sglang"]),
)
@click.option("--out", required=True, type=click.Path(), help="YAML file for the fitted constants")
@click.option("--sweeps", default=3, show_default=True, type=click.IntRange(1, 10))
@click.option(
    "--bands",
    default=None,
    type=click.Path(),
    help="also write the error bands of the shipped measurements priced with the fitted "
    "constants (the other engines keep theirs) to this JSON file: the file to ship with the "
    "refitted engine (data/validation/error_bands.json)",
)
@click.option(
    "--workers",
    default=None,
    type=click.IntRange(1, 64),
    help="processes pricing a step's candidate values together (default: the CPUs this process "
    "may use, at most 6, a step's most candidates); the fit is the same on any number",
)
def calibrate_fit(data, engine, out, sweeps, bands, workers):
    """Fit an engine's few physical constants to calibration measurements."""
    for path in (out, bands):
        if path:
            check_output_path(path)  # before the fit, not after
    echo = lambda s: click.echo(s, err=True)  # noqa: E731
    res = fit_engine(list(data), engine, sweeps=sweeps, progress=echo, workers=workers or 0)
    write_engine_yaml(res, out, [Path(d).name for d in data])
    click.echo(
        f"{engine}: {res.rows} rows, objective {res.before:.4f} -> {res.after:.4f}; wrote {out}"
    )
    for name, value, bound in res.at_bounds:
        click.echo(
            f"warning: {name} = {value:.4g} ended on the bound {bound:.4g} of its range: physics "
            "the model lacks for these rows, not a value to trust (calibrate.fit.FIT_SPACE)",
            err=True,
        )
    if bands:
        run_validation(engines={engine: res.engine}).write_bands(bands)
        click.echo(f"error bands with the fitted {engine} constants: wrote {bands}")

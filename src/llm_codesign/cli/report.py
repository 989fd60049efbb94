"""``llm-codesign report``: one self-contained HTML report of a model on one or more GPUs.

Parses, makes one library call (:func:`llm_codesign.report.write_report`) and prints the path.
"""

from __future__ import annotations

import time

import click

from .. import SpecError
from ..report import write_report
from ._common import economics_options, frontier_options


@click.command()
@click.option("--model", "-m", required=True, help="bundled model id or config.json path")
@click.option(
    "--hardware",
    "-g",
    required=True,
    help="GPU id or YAML/JSON path; a comma list compares GPUs side by side",
)
@click.option(
    "--num-gpus",
    "-n",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="GPU budget per deployment; DP replicas of smaller plans count",
)
@frontier_options
@economics_options
@click.option(
    "--output",
    "-o",
    required=True,
    type=click.Path(),
    help="the HTML file to write (missing directories are created)",
)
def report(
    model,
    hardware,
    num_gpus,
    precision,
    isl,
    osl,
    ttft_ms,
    tpot_ms,
    min_tok_s_per_user,
    usd_per_gpu_hour,
    power_w,
    engine,
    output,
):
    """Write one self-contained HTML report: interactive frontier, GPU ratios, best
    configuration with launch settings, regimes, lint, memory and every assumption."""
    gpus = [g.strip() for g in hardware.split(",") if g.strip()]
    if not gpus:
        raise SpecError(f"--hardware must name at least one GPU, got {hardware!r}")
    t0 = time.perf_counter()
    path = write_report(
        model,
        gpus,
        output,
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
    )
    click.echo(
        f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB, {len(gpus)} GPU(s), "
        f"{time.perf_counter() - t0:.1f} s)"
    )

"""``llm-codesign sweep``: a declarative sweep (models or architecture variants x GPUs x
precisions x workloads) written as partitioned Parquet in resumable shards.

Parses, makes one library call (:func:`llm_codesign.run_sweep`), renders (a summary table or
``--json``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .. import run_sweep
from ..report import console, table, to_json
from ..sweep import EXECUTORS

SHOWN_CELLS = 20  # cells listed in the table (the summary files hold them all)


@click.command()
@click.argument("spec", type=click.Path(dir_okay=False))
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False),
    default=None,
    help="output directory (default: ./<spec name>-results)",
)
@click.option(
    "--executor",
    type=click.Choice(EXECUTORS),
    default="local",
    show_default=True,
    help="local processes, or Ray tasks (pip install 'llm-codesign[ray]')",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="processes (local) or CPUs of the local Ray instance (default: CPUs available)",
)
@click.option(
    "--ray-address",
    default=None,
    help="join a running Ray cluster ('auto', or ray://HOST:10001) instead of a local one",
)
@click.option(
    "--restart",
    is_flag=True,
    help="clear the directory's earlier sweep results first (else finished shards are kept)",
)
@click.option(
    "--progress/--no-progress", default=None, help="progress bar (default: on a terminal)"
)
@click.option("--json", "as_json", is_flag=True, help="print the run and its summary as JSON")
def sweep(spec, out, executor, workers, ray_address, restart, progress, as_json):
    """Run the sweep in SPEC (YAML): every cell's points, frontier and a summary as Parquet."""
    out_dir = Path(out) if out else Path(f"{Path(spec).stem}-results")
    r = run_sweep(
        spec,
        out_dir,
        executor=executor,
        workers=workers,
        ray_address=ray_address,
        restart=restart,
        progress=progress,
    )
    if as_json:
        click.echo(to_json({"sweep": r.to_dict()}))
        return
    _render(r)


def _fmt(v: Any, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def _render(r: Any) -> None:
    longest = max((len(s["model"]) for s in r.summary), default=0)
    c = console(max(140, 100 + longest))  # variant names are long and say what changed
    rate = r.evaluated / r.elapsed_s if r.elapsed_s > 0 else 0.0
    c.print(
        f"[bold]sweep[/] {r.cells:,} cells: {r.ran:,} shards run, {r.skipped:,} already done; "
        f"{r.evaluated:,} points in {r.elapsed_s:.1f} s ({rate:,.0f} points/s, {r.executor}, "
        f"{r.workers} workers) -> {r.out}"
    )
    ok = [s for s in r.summary if s["status"] == "ok"]
    others = len(r.summary) - len(ok)
    ranked = sorted(ok, key=lambda s: -(s["area_tok_s_per_gpu"] or 0.0))[:SHOWN_CELLS]
    rows = [
        [
            s["model"],
            s["hardware"],
            s["precision"],
            s["workload"],
            _fmt(s["area_tok_s_per_gpu"], ",.0f"),
            s["best_plan"] or "-",
            _fmt(s["best_concurrency"], "d"),
            _fmt(s["best_output_tok_s_per_gpu"], ",.0f"),
            _fmt(s["best_tok_s_per_user"], ".1f"),
            _fmt(None if s["best_tpot_s"] is None else s["best_tpot_s"] * 1e3, ".1f"),
        ]
        for s in ranked
    ]
    title = f"cells by frontier area (top {len(rows)} of {len(ok)}; all in summary.parquet)"
    c.print(
        table(
            title,
            [
                "model",
                "gpu",
                "precision",
                "workload",
                "area tok/s/GPU",
                "plan",
                "conc",
                "tok/s/GPU",
                "tok/s/user",
                "TPOT ms",
            ],
            rows,
        )
    )
    if others:
        statuses: dict[str, int] = {}
        for s in r.summary:
            if s["status"] != "ok":
                statuses[s["status"]] = statuses.get(s["status"], 0) + 1
        c.print(
            f"{others:,} cells without a frontier: "
            + ", ".join(f"{k} ({v:,})" for k, v in sorted(statuses.items()))
            + " (reasons in summary.parquet)"
        )

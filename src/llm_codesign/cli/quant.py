"""``llm-codesign quant``: inspect checkpoints and evaluate perplexity per number format.

Thin: each command parses, makes one library call, renders. ``--json`` prints the library's
result object unchanged. User errors propagate as :class:`~llm_codesign.errors.CodesignError`
(the main CLI prints one line and exits 2).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from .. import DataFileError
from ..quant import evaluate_model_dir, inspect_checkpoint

DEFAULT_INSPECT_FORMATS = "fp8,mxfp4,nvfp4,w4a16"


def _bytes(n: int | None) -> str:
    """Decimal units (1 MB = 1e6 bytes)."""
    if n is None:
        return "-"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


MAX_LAYER_ROWS = 500  # per-layer table rows printed (a model has at most a few hundred layers)


def _num(v: float | None, fmt: str = "{:.2f}", nonfinite: int = 0) -> str:
    if nonfinite:  # NaN/inf in the weights: no defined error, never "inf" (lossless)
        return "non-finite input"
    return "inf" if v is None else fmt.format(v)


def _console() -> Console:
    """Stdout console; 120 columns when not a terminal, so piped tables do not wrap."""
    console = Console()
    return console if console.is_terminal else Console(width=120)


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )


def render_inspect(result: dict[str, Any], console: Console, *, max_rows: int = 20) -> None:
    """Summary per format, per-layer SQNR, and the least accurate tensors, as rich tables."""
    summary = result["summary"]
    table = Table(title="Quantization error by format (over all quantized weights)")
    for col in (
        "format",
        "tensors",
        "SQNR dB",
        "rel. err",
        "max |err|",
        "sat. blocks",
        "before",
        "after",
        "bits/param",
    ):
        table.add_column(col, justify="left" if col == "format" else "right")
    for fmt, s in summary.items():
        table.add_row(
            fmt,
            str(s["n_tensors"]),
            _num(s["sqnr_db"]),
            _num(s["rel_error"], "{:.4f}"),
            _num(s["max_abs_error"], "{:.3g}"),
            f"{100 * s['saturated_block_share']:.2f}%",
            _bytes(s["bytes_before"]),
            _bytes(s["bytes_after"]),
            _num(s["bits_per_param"], "{:.3f}"),
        )
    console.print(table)
    for fmt, s in summary.items():
        console.print(f"most sensitive layers, {fmt}: {', '.join(s['most_sensitive_layers'])}")
        bad = s.get("nonfinite_tensors", [])
        if bad:
            console.print(
                f"non-finite input (NaN/inf; error undefined, left out of the totals), {fmt}: "
                f"{len(bad)} tensor(s): {', '.join(bad[:5])}{' ...' if len(bad) > 5 else ''}"
            )

    formats = list(summary)
    layer_names = [r["layer"] for r in summary[formats[0]]["layers"]] if formats else []
    if layer_names:
        layers = Table(title="SQNR (dB) per layer")
        layers.add_column("layer")
        for fmt in formats:
            layers.add_column(fmt, justify="right")
        by_fmt = {f: {r["layer"]: r for r in summary[f]["layers"]} for f in formats}
        for name in layer_names[:MAX_LAYER_ROWS]:
            layers.add_row(name, *(_num(by_fmt[f][name]["sqnr_db"]) for f in formats))
        console.print(layers)
        if len(layer_names) > MAX_LAYER_ROWS:
            console.print(f"... {len(layer_names) - MAX_LAYER_ROWS} more layers (--json lists all)")

    rows = sorted(
        result["tensors"],
        key=lambda r: (
            -math.inf
            if r.get("nonfinite_values")
            else math.inf
            if r["sqnr_db"] is None
            else r["sqnr_db"]
        ),
    )
    tensors = Table(title=f"Least accurate tensors (top {min(max_rows, len(rows))} of {len(rows)})")
    for col in (
        "tensor",
        "shape",
        "format",
        "SQNR dB",
        "rel. error",
        "max |err|",
        "sat. blocks",
        "before",
        "after",
    ):
        tensors.add_column(
            col,
            justify="left" if col in ("tensor", "shape", "format") else "right",
            overflow="fold" if col == "tensor" else "ellipsis",
        )
    for r in rows[:max_rows]:
        d = summary[r["format"]]["tensor_details"][r["name"]]
        bad = r.get("nonfinite_values", 0)
        tensors.add_row(
            r["name"],
            "x".join(map(str, r["shape"])),
            r["format"],
            _num(r["sqnr_db"], nonfinite=bad),
            _num(r["rel_error"], "{:.4f}", bad),
            _num(r["max_abs_error"], "{:.3g}", bad),
            f"{100 * d['saturated_block_share']:.2f}%",
            _bytes(d["bytes_before"]),
            _bytes(r["bytes"]),
        )
    console.print(tensors)


def render_eval(result: dict[str, Any], console: Console) -> None:
    table = Table(
        title=(
            f"Perplexity on {result['tokens']} tokens (window {result['max_length']}, stride "
            f"{result['stride']}, activations {'quantized' if result['activations'] else 'fp32'})"
        )
    )
    for col in ("format", "ppl", "delta ppl", "delta %", "weight SQNR dB", "weight rel. err"):
        table.add_column(col, justify="left" if col == "format" else "right")
    table.add_row("baseline", f"{result['baseline']['ppl']:.4f}", "-", "-", "-", "-")
    for fmt, r in result["formats"].items():
        table.add_row(
            fmt,
            f"{r['ppl']:.4f}",
            f"{r['delta_ppl']:+.4f}",
            f"{100 * r['rel_delta_ppl']:+.2f}%",
            _num(r["weight_sqnr_db"]),
            _num(r["weight_rel_error"], "{:.4f}"),
        )
    console.print(table)


@click.group()
def quant() -> None:
    """Quantization numerics on real weights: error per format, perplexity."""


@quant.command("inspect")
@click.argument("path")
@click.option(
    "--formats",
    default=DEFAULT_INSPECT_FORMATS,
    show_default=True,
    help="Comma-separated format ids or aliases (fp8, mxfp4, nvfp4, w4a16, ...).",
)
@click.option("--include", default=None, help="Only tensors whose name matches this regex.")
@click.option("--top", "top_k", default=5, show_default=True, help="Most sensitive layers kept.")
@click.option("--max-rows", default=20, show_default=True, help="Tensor rows in the table.")
@click.option("--json", "as_json", is_flag=True, help="Print the result object as JSON.")
def inspect_cmd(
    path: str, formats: str, include: str | None, top_k: int, max_rows: int, as_json: bool
) -> None:
    """Quantization error of the weights in PATH (.safetensors file, sharded or HF folder)."""
    err = Console(stderr=True)
    with _progress(err) as bar:
        task = bar.add_task("quantizing", total=None)
        result = inspect_checkpoint(
            path,
            formats,
            include=include,
            top_k=top_k,
            progress=lambda done, total, name: bar.update(task, completed=done, total=total),
        )
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        render_inspect(result, _console(), max_rows=max_rows)


@quant.command("eval")
@click.option("--model-dir", required=True, help="Local HF causal LM folder (no download).")
@click.option("--formats", default="nvfp4,fp8", show_default=True)
@click.option("--text", "text_file", required=True, help="UTF-8 text file to score.")
@click.option("--max-tokens", default=4096, show_default=True, help="Token budget.")
@click.option(
    "--context",
    "max_length",
    default=None,
    type=int,
    help="Window length (default: the model's, at most 1024).",
)
@click.option("--stride", default=512, show_default=True, help="Window step in tokens.")
@click.option("--activations", is_flag=True, help="Also fake-quantize linear-layer inputs.")
@click.option("--include-lm-head", is_flag=True, help="Quantize lm_head too.")
@click.option("--json", "as_json", is_flag=True, help="Print the result object as JSON.")
def eval_cmd(
    model_dir: str,
    formats: str,
    text_file: str,
    max_tokens: int,
    max_length: int | None,
    stride: int,
    activations: bool,
    include_lm_head: bool,
    as_json: bool,
) -> None:
    """Perplexity of a local model with its linear layers fake-quantized per format."""
    try:
        text = Path(text_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFileError(f"{text_file}: cannot read text ({exc})") from None
    err = Console(stderr=True)
    with _progress(err) as bar:
        tasks: dict[str, Any] = {}

        def step(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=total)
            bar.update(tasks[label], completed=done)

        result = evaluate_model_dir(
            model_dir,
            text,
            formats,
            max_tokens=max_tokens,
            max_length=max_length,
            stride=stride,
            quantize_activations=activations,
            include_lm_head=include_lm_head,
            progress=step,
        )
    if as_json:
        click.echo(json.dumps(result, indent=2))
    else:
        render_eval(result, _console())


if __name__ == "__main__":  # pragma: no cover
    quant(sys.argv[1:])

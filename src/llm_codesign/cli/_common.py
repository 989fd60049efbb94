"""Shared CLI pieces: the error-handling group and the plan options."""

from __future__ import annotations

import signal
import warnings
from collections.abc import Callable
from typing import Any

import click

from .. import CodesignError


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that every ``with`` and ``finally`` cleans up (no partial
    output file, no orphan worker) before the command exits."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


class Group(click.Group):
    """A click group whose commands turn a :class:`CodesignError` into one line and exit 2, and
    an interrupt (Ctrl-C: 130, SIGTERM: 143) into one line after cleaning up."""

    def invoke(self, ctx: click.Context) -> Any:
        with warnings.catch_warnings():
            # the library's warnings (e.g. an unknown model_type read by the common conventions)
            # print as one line, like errors
            warnings.showwarning = _one_line_warning
            try:
                previous = signal.signal(signal.SIGTERM, _raise_terminated)
            except ValueError:  # not the main thread: leave signals alone
                previous = None
            try:
                return super().invoke(ctx)
            except CodesignError as exc:
                click.echo(f"error: {exc}", err=True)
                ctx.exit(2)
            except KeyboardInterrupt as exc:
                term = isinstance(exc, Terminated)
                click.echo(f"error: interrupted ({'SIGTERM' if term else 'SIGINT'})", err=True)
                ctx.exit(143 if term else 130)
            finally:
                if previous is not None:
                    signal.signal(signal.SIGTERM, previous)


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    click.echo(f"warning: {message}", err=True)


def plan_options(f: Callable) -> Callable:
    for opt in reversed(
        [
            click.option(
                "--tp",
                type=click.IntRange(min=1),
                default=1,
                show_default=True,
                help="tensor parallel size",
            ),
            click.option(
                "--pp",
                type=click.IntRange(min=1),
                default=1,
                show_default=True,
                help="pipeline parallel size",
            ),
            click.option(
                "--ep",
                type=click.IntRange(min=1),
                default=1,
                show_default=True,
                help="expert parallel size (divides tp)",
            ),
            click.option(
                "--dp", type=click.IntRange(min=1), default=1, show_default=True, help="replicas"
            ),
            click.option(
                "--attention-dp/--no-attention-dp",
                default=False,
                help="data-parallel attention over the tp group",
            ),
            click.option(
                "--cp",
                type=click.IntRange(min=1),
                default=1,
                show_default=True,
                help="Helix KV-parallel attention size (divides tp)",
            ),
        ]
    ):
        f = opt(f)
    return f


def deployment_options(f: Callable) -> Callable:
    """Options every deployment command takes: format emulation, a calibration profile,
    speculative decoding, and the power and price behind tokens/s/MW and $/M tokens (estimate,
    frontier)."""
    for opt in reversed(
        [
            click.option(
                "--emulate",
                is_flag=True,
                help="run formats the GPU lacks at the nearest native rate "
                "(e.g. NVFP4 on Hopper via FP8)",
            ),
            click.option(
                "--profile",
                default=None,
                type=click.Path(dir_okay=False),
                help="calibration profile of this GPU to overlay (from `calibrate`)",
            ),
            click.option(
                "--spec-tokens",
                type=click.IntRange(0, 16),
                default=0,
                show_default=True,
                help="speculative / MTP draft tokens per step",
            ),
            click.option(
                "--spec-acceptance",
                type=click.FloatRange(0.0, 1.0),
                default=0.0,
                show_default=True,
                help="acceptance rate of each draft token",
            ),
        ]
    ):
        f = opt(f)
    return economics_options(f)


def economics_options(f: Callable) -> Callable:
    """The power and price behind tokens/s/MW and $/M tokens (estimate, frontier, report)."""
    f = click.option(
        "--usd-per-gpu-hour",
        type=click.FloatRange(min=0, min_open=True),
        default=None,
        help="GPU-hour price: adds $ per million output tokens",
    )(f)
    return click.option(
        "--power-w",
        type=click.FloatRange(min=0, min_open=True),
        default=None,
        help="power per GPU in W for tokens/s/MW (default: the GPU's TDP)",
    )(f)


def frontier_options(f: Callable) -> Callable:
    """The workload, precisions, engine and targets of a frontier search (frontier, report)."""
    for opt in reversed(
        [
            click.option(
                "--isl",
                type=click.IntRange(min=1),
                default=1024,
                show_default=True,
                help="input tokens",
            ),
            click.option(
                "--osl",
                type=click.IntRange(min=1),
                default=1024,
                show_default=True,
                help="output tokens",
            ),
            click.option(
                "--precision",
                "-p",
                default=None,
                help="preset or comma list (default: every native one of bf16, fp8, nvfp4, mxfp4)",
            ),
            click.option(
                "--engine",
                default=None,
                help=(
                    "trtllm, vllm, sglang, generic, base or a constants YAML (default: trtllm on "
                    "NVIDIA GPUs, vllm on AMD)"
                ),
            ),
            click.option(
                "--ttft-ms",
                type=float,
                default=None,
                help="TTFT target (ms) for the best configuration",
            ),
            click.option("--tpot-ms", type=float, default=None, help="TPOT target (ms)"),
            click.option(
                "--min-tok-s-per-user",
                type=float,
                default=None,
                help="interactivity target (tokens/s/user)",
            ),
        ]
    ):
        f = opt(f)
    return f

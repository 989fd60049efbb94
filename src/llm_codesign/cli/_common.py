"""Shared CLI pieces: the error-handling group and the plan options."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from .. import CodesignError


class Group(click.Group):
    """A click group whose commands turn a :class:`CodesignError` into one line and exit 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CodesignError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(2)


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

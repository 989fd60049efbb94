"""Command-line interface: each command parses, makes one library call and renders. Every
command is registered here, statically; command modules import only public names.

User mistakes (any :class:`CodesignError`) print one line and exit with code 2.
"""

from __future__ import annotations

import sys

import click

from ._common import Group
from .advise import gemm, lint, regimes, search
from .calibrate import calibrate
from .estimate import estimate, hardware, models
from .frontier import frontier
from .quant import quant
from .report import report
from .sweep import sweep
from .validate import calibrate_fit, validate


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="llm-codesign")
def main() -> None:
    """llm-codesign: predict, explain and co-design LLM serving on GPUs."""


for _command in (
    estimate,
    models,
    hardware,
    frontier,
    report,
    sweep,
    gemm,
    lint,
    regimes,
    search,
    validate,
    calibrate_fit,
    calibrate,
    quant,
):
    main.add_command(_command)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

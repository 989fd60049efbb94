"""Advise: lint rules with quantified impact, deployment regimes and Amdahl's law, the GEMM
shape explorer, scaling-law quality estimates and architecture search at constant parameters.
Consumes explore (operating points, curves) and pareto; prices nothing itself.

``lint`` and ``regimes`` are both modules here and functions at the top level
(``llm_codesign.lint``, ``llm_codesign.regimes``).
"""

from .archsearch import SearchSpace, search
from .findings import DEFAULT_WORKLOADS, default_workloads
from .gemm import gemm_sweep, save_plot
from .lint import RULES, parse_workload
from .regimes import LONG_ISL, SHORT_ISL, SHORT_OSL

__all__ = [
    "DEFAULT_WORKLOADS",
    "LONG_ISL",
    "RULES",
    "SHORT_ISL",
    "SHORT_OSL",
    "SearchSpace",
    "default_workloads",
    "gemm_sweep",
    "parse_workload",
    "save_plot",
    "search",
]

"""Explore: vectorized sweeps over plans x precisions x concurrency (aggregated and
disaggregated serving), the throughput-interactivity frontier, and the advisor's operating
points. Built on :mod:`llm_codesign.serving` (no second cost model here)."""

from ..pareto import AREA_RANGE, frontier_area, pareto_mask, staircase
from .export import CSV_FIELDS, AtomicWriter, StreamingCSV, csv_rows, write_csv
from .grid import POINTS_PER_OCTAVE, concurrency_grid, memory_limit, power_of_two_grid
from .operating import (
    ADVISOR_CONCURRENCY,
    THROUGHPUT_MIN_TOK_S_USER,
    Curve,
    OperatingPoint,
    advisor_precision,
    default_precision,
    evaluate_plans,
    grid_curve,
    infeasible_text,
    operating_point,
)
from .plans import PlanTable, axis_values, candidate_plans, enumerate_plans
from .points import COLUMNS, MODE_AGGREGATED, MODE_DISAGGREGATED, MODES, PHASES, Points
from .precisions import DEFAULT_PRECISIONS, choose_precisions
from .result import READINGS_AT, Frontier, Targets, plan_label
from .search import COMPARE_AXES, compare, frontier, parse_compare

__all__ = [
    "ADVISOR_CONCURRENCY",
    "AREA_RANGE",
    "COLUMNS",
    "COMPARE_AXES",
    "CSV_FIELDS",
    "DEFAULT_PRECISIONS",
    "choose_precisions",
    "MODES",
    "MODE_AGGREGATED",
    "MODE_DISAGGREGATED",
    "PHASES",
    "POINTS_PER_OCTAVE",
    "READINGS_AT",
    "THROUGHPUT_MIN_TOK_S_USER",
    "AtomicWriter",
    "Curve",
    "Frontier",
    "OperatingPoint",
    "PlanTable",
    "Points",
    "StreamingCSV",
    "Targets",
    "axis_values",
    "candidate_plans",
    "compare",
    "concurrency_grid",
    "csv_rows",
    "advisor_precision",
    "default_precision",
    "enumerate_plans",
    "evaluate_plans",
    "frontier",
    "frontier_area",
    "grid_curve",
    "infeasible_text",
    "memory_limit",
    "operating_point",
    "pareto_mask",
    "parse_compare",
    "plan_label",
    "power_of_two_grid",
    "staircase",
    "write_csv",
]

"""llm-codesign: hardware-aware co-design of LLMs and the GPUs that serve them."""

from .advise import lint
from .api import Estimate, estimate
from .archsearch import search
from .calibrate import resolve_hardware as load_hardware  # a calibration profile is a GPU too
from .errors import CodesignError, DataFileError, SpecError, UnknownIdError, UnsupportedError
from .explore import Frontier, compare, frontier, frontier_area
from .gemm_explorer import gemm_sweep
from .regimes import regimes
from .specs import (
    HardwareSpec,
    ModelSpec,
    ParallelPlan,
    Precision,
    Workload,
    bundled_hardware,
    bundled_models,
    load_model,
    parse_precision,
)
from .specs.engine import EngineConstants, load_engine
from .validate import validate

__version__ = "0.1.0"

__all__ = [
    "CodesignError",
    "DataFileError",
    "EngineConstants",
    "Estimate",
    "Frontier",
    "HardwareSpec",
    "ModelSpec",
    "ParallelPlan",
    "Precision",
    "SpecError",
    "UnknownIdError",
    "UnsupportedError",
    "Workload",
    "bundled_hardware",
    "bundled_models",
    "compare",
    "estimate",
    "frontier",
    "frontier_area",
    "gemm_sweep",
    "lint",
    "load_engine",
    "load_hardware",
    "load_model",
    "parse_precision",
    "regimes",
    "search",
    "validate",
]

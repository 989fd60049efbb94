"""llm-codesign: hardware-aware co-design of LLMs and the GPUs that serve them."""

from .api import Estimate, estimate
from .errors import CodesignError, DataFileError, SpecError, UnknownIdError, UnsupportedError
from .specs import (
    HardwareSpec, ModelSpec, ParallelPlan, Precision, Workload, bundled_hardware, bundled_models,
    load_hardware, load_model, parse_precision,
)
from .specs.engine import EngineConstants, load_engine

__version__ = "0.1.0"

__all__ = sorted([
    "CodesignError", "DataFileError", "EngineConstants", "Estimate", "HardwareSpec", "ModelSpec",
    "ParallelPlan", "Precision", "SpecError", "UnknownIdError", "UnsupportedError", "Workload",
    "bundled_hardware", "bundled_models", "estimate", "load_engine", "load_hardware", "load_model",
    "parse_precision",
])

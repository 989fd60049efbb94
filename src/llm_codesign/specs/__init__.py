"""Specs: validated, immutable descriptions of models, hardware, precision, plans and workloads."""

from .hardware import Efficiency, HardwareSpec, bundled_hardware, load_hardware
from .model import (
    AttentionSpec,
    LayerGroup,
    ModelSpec,
    MoESpec,
    bundled_models,
    load_model,
)
from .model_config import model_from_config
from .plan import DisaggregatedPlan, ParallelPlan
from .precision import PRESETS, Precision, parse_precision
from .workload import Workload

__all__ = [
    "PRESETS",
    "AttentionSpec",
    "DisaggregatedPlan",
    "Efficiency",
    "HardwareSpec",
    "LayerGroup",
    "MoESpec",
    "ModelSpec",
    "ParallelPlan",
    "Precision",
    "Workload",
    "bundled_hardware",
    "bundled_models",
    "load_hardware",
    "load_model",
    "model_from_config",
    "parse_precision",
]

"""llm-codesign: hardware-aware co-design of LLMs and the GPUs that serve them.

The public API: specs and their loaders, ``estimate`` (one configuration) and ``evaluate`` (the
same serving model broadcast over numpy arrays), ``frontier``/``compare`` (deployment search),
the advisor (``lint``, ``regimes``, ``search``, ``gemm_sweep``), sweeps (``load_sweep``,
``run_sweep``: Parquet results, local or Ray), ``validate`` and the
calibration overlay. The CLI uses only these names.
"""

from .advise import SearchSpace, gemm_sweep, search
from .advise.lint import lint
from .advise.regimes import regimes
from .api import Estimate, estimate
from .calibrate import apply_profile, compare_profile
from .calibrate import resolve_hardware as load_hardware  # a calibration profile is a GPU too
from .calibrate.device import parse_device
from .calibrate.fit import fit_engine, write_engine_yaml
from .calibrate.microbench import calibrate as run_calibration
from .errors import CodesignError, DataFileError, SpecError, UnknownIdError, UnsupportedError
from .explore import Frontier, compare, frontier, parse_compare, write_csv
from .pareto import frontier_area, pareto_mask
from .serving import GridResult, evaluate, evaluate_disaggregated
from .serving.simulate import simulate
from .specs import (
    DisaggregatedPlan,
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
from .specs.hardware import hardware_template
from .specs.traffic import Traffic, parse_length_dist, read_trace
from .sweep import load_sweep, run_sweep
from .validate import validate

__version__ = "0.1.0"

__all__ = [
    "CodesignError",
    "DataFileError",
    "DisaggregatedPlan",
    "EngineConstants",
    "Estimate",
    "Frontier",
    "GridResult",
    "HardwareSpec",
    "ModelSpec",
    "ParallelPlan",
    "Precision",
    "SearchSpace",
    "SpecError",
    "Traffic",
    "UnknownIdError",
    "UnsupportedError",
    "Workload",
    "apply_profile",
    "bundled_hardware",
    "bundled_models",
    "compare",
    "compare_profile",
    "estimate",
    "evaluate",
    "evaluate_disaggregated",
    "fit_engine",
    "frontier",
    "frontier_area",
    "gemm_sweep",
    "hardware_template",
    "lint",
    "load_engine",
    "load_hardware",
    "load_model",
    "load_sweep",
    "pareto_mask",
    "parse_compare",
    "parse_device",
    "parse_length_dist",
    "parse_precision",
    "read_trace",
    "regimes",
    "run_calibration",
    "run_sweep",
    "search",
    "simulate",
    "validate",
    "write_csv",
    "write_engine_yaml",
]

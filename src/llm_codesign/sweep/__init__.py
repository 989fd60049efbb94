"""Sweeps: a declarative grid of models (or architecture-variant generators) x GPUs x
precisions x workloads under common plan limits, each cell searched by the deployment search
(``explore.frontier``) and written as partitioned Parquet (every evaluated point, the frontier
points, a summary row per cell) in resumable shards, run locally or on Ray.

``load_sweep`` reads the YAML (``sweep.spec``), ``run_sweep`` runs it (``sweep.run``); the
output layout is in ``sweep.store``, the executors in ``sweep.executors``.
"""

from .executors import EXECUTORS
from .run import SweepResult, run_sweep
from .spec import SweepSpec, load_sweep

__all__ = ["EXECUTORS", "SweepResult", "SweepSpec", "load_sweep", "run_sweep"]

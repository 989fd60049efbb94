"""One layer's ops as the model prices them against a measured module or kernel: the ops a
report keeps, each with the engine's kernel overhead, no collective (the tables time one GPU).
Shared by ``dsv4_attention_report``, ``dsa_module_report`` and ``dsa_indexer_report``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from llm_codesign import parse_precision
from llm_codesign.cost import op_time
from llm_codesign.ops import Op, layer_group_ops

# the module tables' formats: FP8 KV cache and FP8 block-scaled GEMMs
MODULE_PRECISION = "fp8+fp8_block-w"


def layer_ops_s(model, group, shape, hw, eng, keep: Callable[[Op], bool]) -> float:
    """Seconds of one layer of ``group`` at ``shape`` (``ops.step_shape``): the ops ``keep``
    selects, each with ``eng.kernel_overhead_s`` per kernel where it takes any time."""
    total = 0.0
    for op in layer_group_ops(model, parse_precision(MODULE_PRECISION), group, shape, 1.0):
        if keep(op):
            t = float(np.asarray(op_time(op, hw, eng, None)[0]))
            total += t + (eng.kernel_overhead_s * op.kernels if t > 0 else 0.0)
    return total


def attention_class(op: Op) -> bool:
    return op.op_class == "attention"

"""One layer's ops as the model prices them against a measured module or kernel: the ops a
report keeps, each with the engine's kernel overhead, no collective (the tables time one GPU).
Shared by ``dsv4_attention_report``, ``dsa_module_report``, ``msa_module_report`` and
``dsa_indexer_report``, with the ratio tables the module reports print.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

import numpy as np

from llm_codesign import parse_precision
from llm_codesign.cost import op_time
from llm_codesign.ops import Op, layer_group_ops

# the module tables' formats: FP8 KV cache and FP8 block-scaled GEMMs
MODULE_PRECISION = "fp8+fp8_block-w"


def layer_op_times(model, group, shape, hw, eng, precision: str = MODULE_PRECISION):
    """(op, seconds) of each op of one layer of ``group`` at ``shape`` (``ops.step_shape``) in
    ``precision``, each with ``eng.kernel_overhead_s`` per kernel where it takes any time."""
    for op in layer_group_ops(model, parse_precision(precision), group, shape, 1.0):
        t = float(np.asarray(op_time(op, hw, eng, None)[0]))
        yield op, t + (eng.kernel_overhead_s * op.kernels if t > 0 else 0.0)


def layer_ops_s(
    model, group, shape, hw, eng, keep: Callable[[Op], bool], precision: str = MODULE_PRECISION
) -> float:
    """Seconds of the ops ``keep`` selects of one layer (:func:`layer_op_times`)."""
    return sum(t for op, t in layer_op_times(model, group, shape, hw, eng, precision) if keep(op))


def attention_class(op: Op) -> bool:
    return op.op_class == "attention"


def print_ratio_rows(ratios: dict[tuple, list[float]], width: int) -> None:
    """One line a key of priced / measured ratios: median, p10-p90, rows."""
    for key in sorted(ratios):
        r = sorted(ratios[key])
        p10, p90 = r[len(r) // 10], r[(9 * len(r)) // 10]
        print(f"  {' '.join(key):{width}s} {statistics.median(r):5.2f}  ({p10:4.2f}-{p90:4.2f})  "
              f"n={len(r)}")  # fmt: skip


def print_side_summary(ratios: dict[tuple, list[float]], hopper_gpus: tuple, label: str = "all",
                       keep=lambda key: True) -> None:  # fmt: skip
    """Median ratio and median |error| of the Hopper keys (the fit's side) and of the others
    (the check), over the keys ``keep`` selects."""
    for side, hopper in (("Hopper", True), ("Blackwell", False)):
        allr = [
            v for k, r in ratios.items() if keep(k) for v in r if (k[0] in hopper_gpus) == hopper
        ]
        if allr:
            err = statistics.median(abs(v - 1.0) for v in allr)
            print(f"{side} {label}: median ratio {statistics.median(allr):.3f}, median |error| "
                  f"{err:.1%}, rows {len(allr)}")  # fmt: skip

"""Evaluated configurations as a column table (dict of equal-length numpy arrays)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..ops import OP_CLASSES

Array = np.ndarray

PHASES = ("prefill", "decode", "mixed_step")
MODE_AGGREGATED, MODE_DISAGGREGATED = 0, 1
MODES = ("aggregated", "disaggregated")

_INT_COLS = (
    "precision",
    "mode",
    "plan_id",
    "tp",
    "pp",
    "ep",
    "cp",
    "dp",
    "p_tp",
    "p_pp",
    "p_ep",
    "p_cp",
    "p_batch",
    "prefill_workers",
    "decode_workers",
)
_BOOL_COLS = ("attention_dp", "p_attention_dp", "fits_in_memory", "feasible")
FLOAT_COLUMNS = (
    "concurrency",
    "ttft_s",
    "tpot_s",
    "tok_s_per_user",
    "output_tok_s_per_gpu",
    "total_tok_s_per_gpu",
    "num_gpus",
    "memory_per_gpu_bytes",
    "max_concurrency",
    "running_concurrency",
    "kv_transfer_s",
    "step_decode_seqs",
    "step_prefill_tokens",
) + tuple(f"bd_{p}_{c}" for p in PHASES for c in OP_CLASSES)
COLUMNS = _INT_COLS + _BOOL_COLS + FLOAT_COLUMNS + ("reason",)


class Points:
    """Evaluated configurations as columns (``COLUMNS``); one row per (plan, precision,
    concurrency).

    ``precision`` indexes ``Frontier.precisions``; ``plan_id`` indexes ``Frontier.plans`` (the
    decode plan when disaggregated); ``mode`` is 0 aggregated, 1 disaggregated;
    ``p_*`` columns hold the prefill plan of disaggregated points (0 for aggregated ones).
    """

    __slots__ = ("cols",)

    def __init__(self, cols: dict[str, Array]):
        n = len(next(iter(cols.values()))) if cols else 0
        full: dict[str, Array] = {}
        for name in COLUMNS:
            if name in cols:
                full[name] = np.asarray(cols[name])
            elif name == "reason":
                full[name] = np.full(n, "", dtype=object)
            elif name in _BOOL_COLS:
                full[name] = np.zeros(n, dtype=bool)
            elif name in _INT_COLS:
                full[name] = np.zeros(n, dtype=np.int64)
            else:
                full[name] = np.zeros(n)
        for name, col in full.items():
            assert len(col) == n, (name, len(col), n)
        self.cols = full

    def __len__(self) -> int:
        return len(self.cols["tp"])

    def __getitem__(self, name: str) -> Array:
        return self.cols[name]

    def take(self, idx: Array) -> Points:
        return Points({k: v[idx] for k, v in self.cols.items()})

    @staticmethod
    def concat(parts: Sequence[Points]) -> Points:
        parts = [p for p in parts if len(p)]
        if not parts:
            return Points({})
        return Points({k: np.concatenate([p.cols[k] for p in parts]) for k in COLUMNS})

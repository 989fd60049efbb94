"""The SM time a TRTLLM-Gen grouped GEMM spends on a launched CTA that exits without work
(``moe_kernels.TRTLLM_GEN_IDLE_CTA_S``, per its keys), from AIConfigurator's measured FlashInfer
TRTLLM-Gen MoE modules (issue 11).

FILEs are AIConfigurator ``moe_perf.parquet`` tables (ai-dynamo/aiconfigurator @095f58a,
aic-core/src/aiconfigurator_core/systems/data/<gpu>/moe/<engine>/<version>/moe_perf.parquet), or
folders holding them. For each module of the TRTLLM-Gen path (``aic_moe_survey.kernel_path``)
with balanced routing, no MoE tensor parallelism, EP >= 2 and at least ``--min-tokens`` tokens,
and the same shape's all-local module (EP 1) at the same tokens: the EP rank runs 1 / EP of the
all-local module's routed tiles and the whole fixed chain (``moe_kernels.TRTLLM_GEN_LAYER_S``),
so its time less 1 / EP of the all-local time less (1 - 1 / EP) of the fixed chain is its idle
CTAs over 1 / EP of the all-local module's (``moe_kernels.trtllm_gen_idle_ctas``) times the SM
time per CTA over the GPU's SMs. Solved per module; the median and quartiles per (GPU, format
class) and over all GPUs (``--by-format``: per format). Shapes whose EP-2 module does not run in
well under the all-local time (median ratio over the token counts above 0.8: the table's routing
does not spread over the ranks, as in AIConfigurator's DeepSeek shape, or its EP modules run
every expert, as in TensorRT-LLM's min-latency tables) are left out and listed. Needs pandas and
pyarrow.

Run: python benchmarks/trtllm_gen_idle_fit.py FILE_OR_DIR... [--min-tokens 16] [--gpus b200]
     [--by-format]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aic_moe_survey import FORMATS, kernel_path, table_identity  # noqa: E402
from hbm_fraction_report import parquet_files  # noqa: E402

from llm_codesign.formats import BLOCK_SCALED_WEIGHTS  # noqa: E402
from llm_codesign.moe_kernels import TRTLLM_GEN_LAYER_S, trtllm_gen_idle_ctas  # noqa: E402
from llm_codesign.specs.hardware import load_hardware  # noqa: E402

KEYS = ["hidden_size", "inter_size", "num_experts", "topk", "moe_ep_size", "num_tokens"]


def format_class(dtype: str) -> str:
    """The key of ``TRTLLM_GEN_IDLE_CTA_S`` a module's format takes: block-scaled FP8, MXFP4
    weights under BF16 activations (weight-only), or every other format ("other")."""
    fmt = FORMATS.get(dtype, dtype)
    if fmt in BLOCK_SCALED_WEIGHTS:
        return fmt
    return "mxfp4-a16" if fmt == "mxfp4" else "other"  # (mxfp4: W4A16; W4A8 is mxfp4_mxfp8)


def group_key(dtype: str, by_format: bool) -> str:
    """The row a module's constant is reported in: its format class, or its format."""
    return dtype if by_format else format_class(dtype)


def idle(h: int, i: int, e: int, k: int, ep: int, t: int) -> float:
    """Idle CTAs of one EP rank's module fed ``t`` tokens (every token: no dispatch)."""
    return float(trtllm_gen_idle_ctas(t, k, e, e / ep, t * k / ep, (2 * i, h)))


def fit(
    files: list[Path], min_tokens: int, gpus: set[str], by_format: bool = False
) -> tuple[dict, dict]:
    """SM-seconds per idle CTA per module, keyed (GPU, format class); shapes left out."""
    import pandas as pd

    per: dict[tuple[str, str], list[float]] = defaultdict(list)
    skipped: dict[tuple, float] = {}
    for f in files:
        d = pd.read_parquet(f)
        if not {"kernel_source", "moe_dtype", "distribution"} <= set(d.columns) or d.empty:
            continue
        gpu, engine = table_identity(d, f)
        if gpu is None or (gpus and gpu not in gpus):
            continue
        d = d[(d["distribution"] == "balanced") & (d["moe_tp_size"] == 1)]
        d = d[d["kernel_source"].map(lambda s: kernel_path(str(s)) == "trtllm_gen").astype(bool)]
        sms = load_hardware(gpu).sm_count
        for dtype, g in d.groupby("moe_dtype"):
            if str(dtype) not in FORMATS:
                continue
            ms = g.groupby(KEYS)["latency"].median()
            for (h, i, e, k), shape in ms.groupby(level=[0, 1, 2, 3]):
                one = {t: v for (*_, ep, t), v in shape.items() if ep == 1}
                two = [v / one[t] for (*_, ep, t), v in shape.items() if ep == 2 and t in one]
                if not one or not two or statistics.median(two) > 0.8:
                    skipped[(gpu, engine, str(dtype), h, i, e, k)] = statistics.median(two or [0.0])
                    continue
                for (*_, ep, t), v in shape.items():
                    if ep < 2 or t < min_tokens or t not in one:
                        continue
                    extra = idle(h, i, e, k, ep, t) - idle(h, i, e, k, 1, t) / ep
                    if extra <= 0:
                        continue
                    # the fixed chain runs whole on every rank (TRTLLM_GEN_LAYER_S), not 1 / EP
                    excess = (v - one[t] / ep) * 1e-3 - TRTLLM_GEN_LAYER_S * (1.0 - 1.0 / ep)
                    per[(gpu, group_key(str(dtype), by_format))].append(excess * sms / extra)
    return per, skipped


def row(gpu: str, cls: str, v: list[float]) -> str:
    """One table row: the modules and the quartiles of their constant, in us."""
    q = [x * 1e6 for x in (statistics.quantiles(v, n=4) if len(v) > 1 else v * 3)]
    return f"| {gpu} | {cls} | {len(v)} | {q[0]:.3f} | {q[1]:.3f} | {q[2]:.3f} |"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+", help="moe_perf.parquet files or folders holding them")
    ap.add_argument("--min-tokens", type=int, default=16)
    ap.add_argument("--gpus", default="", help="bundled GPU ids (default: every GPU)")
    ap.add_argument("--by-format", action="store_true", help="one row per format, not class")
    args = ap.parse_args()
    gpus = {g for g in args.gpus.split(",") if g}
    per, skipped = fit(parquet_files(args.paths), args.min_tokens, gpus, args.by_format)
    print("| GPU | format class | modules | p25 | median | p75 (us per idle CTA per SM) |")
    print("|---|---|---:|---:|---:|---:|")
    pooled: dict[str, list[float]] = defaultdict(list)
    for (gpu, cls), v in sorted(per.items()):
        pooled[cls] += v
        print(row(gpu, cls, v))
    for cls, v in sorted(pooled.items()):
        print(row("all", cls, v))
    for key, ratio in sorted(skipped.items()):
        print(f"left out {key}: EP 2 / all-local median {ratio:.2f}")


if __name__ == "__main__":
    main()

"""DeepSeek Sparse Attention's decode module (DeepSeek-V3.2, GLM-5) priced against published
module timings, on Hopper (the calibration side) and Blackwell (the check).

AIConfigurator (ai-dynamo/aiconfigurator @095f58a,
aic-core/src/aiconfigurator_core/systems/data/<gpu>/sparse_attention/<engine>/<version>/
dsa_generation_module_perf.parquet) times one layer's whole attention module of a decode step
under the engine's CUDA graph (projections, the lightning indexer and its top-k, the sparse MLA
core over the top-k entries, o_proj): ``batch_size`` sequences of ``step`` tokens of history at
``num_heads`` query heads a rank. Rows read: FP8 KV cache and FP8 block-scaled GEMMs (the
engines' FlashMLA FP8 sparse decode kernel on Hopper and Blackwell; TensorRT-LLM's own), the
two bundled DSA models.

The model prices the same layer as ``benchmarks/dsv4_attention_report.py`` prices V4's: the
attention-class ops of one layer (``ops.layer_group_ops``) with the engine's kernel overhead,
no collective. By batch (at most 64, the launch-bound regime; 65-256; above 256, past some
engines' CUDA graphs) and by history (at most the indexer's top-k of 2,048 tokens, or past it).

``--fit``: the indexer's decode stream (``attention_kernels.INDEXER_DECODE_HBM``). Past the
indexer's top-k (2,048 entries) the sparse core's work stays the same, so the module's growth per
key of context at 256 sequences or more, from 8,192 to 32,768 tokens of history, is the indexer's:
a key's 132 FP8 bytes and its FP32 logit written and read (``mixers.INDEXER_LOGIT_BYTES``); those
bytes over that time, over the GPU's HBM bandwidth, is the fraction. The median over Hopper's
vLLM 0.24 tables (the newest kernels measured there) is the constant; every other table is
printed as its check.

Run: python benchmarks/dsa_module_report.py AIC_GIT_DIR [--fit]
(needs pandas and pyarrow; AIC_GIT_DIR: a clone or the ``fetch`` mirror's git directory).
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

from llm_codesign import load_engine, load_hardware, load_model
from llm_codesign.mixers import INDEXER_LOGIT_BYTES
from llm_codesign.ops import step_shape

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aic_git import GPUS, read_table, table_paths  # noqa: E402
from layer_pricing import (  # noqa: E402
    attention_class,
    layer_ops_s,
    print_ratio_rows,
    print_side_summary,
)

MODELS = {"DeepSeek-V3.2": "deepseek-v3.2", "GLM-5-FP8": "glm-5", "zai-org/GLM-5": "glm-5"}
HOPPER = ("h100_sxm", "h200_sxm")


def _tables(repo: str):
    for path in table_paths(repo):
        parts = path.split("/")
        if parts[-1] == "dsa_generation_module_perf.parquet" and parts[-5] in GPUS:
            yield parts[-5], parts[-3], parts[-2], read_table(repo, path)


def priced_layer_s(model_id: str, engine: str, gpu: str, tp: int, batch: int, step: int) -> float:
    """Seconds the model prices for one DSA layer's attention ops in a decode step of ``batch``
    sequences at ``step`` tokens of history, TP ``tp``, FP8 KV and FP8 block weights."""
    m, hw, eng = load_model(model_id), load_hardware(gpu), load_engine(engine)
    g = next(g for g in m.layer_groups if g.mixer == "sparse")
    s = step_shape(tp, 1, 1, 1, False, isl=float(step), osl=1e-9, decode_seqs=float(batch))
    return layer_ops_s(m, g, s, hw, eng, attention_class)


def fit(repo: str) -> None:
    per_key = load_model("deepseek-v3.2").indexer.cache_bytes_per_token + INDEXER_LOGIT_BYTES
    fitted = []
    for gpu, engine, version, df in _tables(repo):
        df = df[df.kv_cache_dtype.isin(["fp8", "fp8_e4m3"]) & (df.gemm_type == "fp8_block")]
        hbm = load_hardware(GPUS[gpu]).hbm_bytes_per_s
        for model in sorted(df.model.unique()):
            shares = []
            for _, x in df[(df.model == model) & (df.batch_size >= 256)].groupby(
                ["num_heads", "batch_size"]
            ):
                t = x.groupby("step").latency.median() * 1e-3
                if 8192 in t.index and 32768 in t.index:
                    per_s = (t[32768] - t[8192]) / (24576 * float(x.batch_size.iloc[0]))
                    shares.append(per_key / (per_s * hbm))
            if shares:
                share = statistics.median(shares)
                print(
                    f"  {gpu:9s} {engine:7s} {version:10s} {model:28s} {share:.3f}  n={len(shares)}"
                )
                if gpu in HOPPER and engine == "vllm" and version == "0.24.0":
                    fitted.append(share)
    print(f"INDEXER_DECODE_HBM (Hopper, vLLM 0.24): {statistics.median(fitted):.3f}")


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[2] == "--fit":
        fit(sys.argv[1])
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    ratios: dict[tuple, list[float]] = defaultdict(list)
    for gpu, engine, version, df in _tables(sys.argv[1]):
        df = df[df.kv_cache_dtype.isin(["fp8", "fp8_e4m3"]) & (df.gemm_type == "fp8_block")]
        for (model, heads, batch, step), x in df.groupby(
            ["model", "num_heads", "batch_size", "step"]
        ):
            mid = next((v for k, v in MODELS.items() if k in model), None)
            if mid is None or step < 1:
                continue
            total = load_model(mid).attention.num_heads
            if heads > total or total % heads:
                continue  # (the tables time GLM-5's module at 128 heads too: no TP of it)
            tp = total // int(heads)
            want = float(x.latency.median()) * 1e-3
            got = priced_layer_s(mid, engine, GPUS[gpu], tp, int(batch), int(step))
            size = "b<=64" if batch <= 64 else "b65-256" if batch <= 256 else "b>256"
            ctx = "ctx<=2k" if step <= 2048 else "ctx>2k"  # (past it the indexer's top-k picks)
            ratios[(gpu, f"{engine} {version}", mid, size, ctx)].append(got / want)
    print("decode: priced / measured, one DSA layer's attention module (median, p10-p90, rows)")
    print_ratio_rows(ratios, 52)
    print_side_summary(ratios, HOPPER)


if __name__ == "__main__":
    main()

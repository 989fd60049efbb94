"""The fixed decode cost of DeepSeek Sparse Attention's lightning indexer (``engine
indexer_overhead_s``), from published attention-module timings rather than serving rows.

AIConfigurator (ai-dynamo/aiconfigurator @095f58a,
aic-core/src/aiconfigurator_core/systems/data/h200_sxm/) times the whole attention module of a
decode step (projections, indexer, sparse MLA, o_proj) under the engine's CUDA graph, per layer
on one H200:

* SGLang 0.5.14 (``sparse_attention/sglang/0.5.14/dsa_generation_module_perf.parquet``) times
  GLM-5-FP8 with its indexer and GLM-5.2-FP8 with the indexer patched out
  (``dsa_generation_module_skip_indexer``: the reuse layer, same attention shape): the
  difference is the indexer (q and k projections, LayerNorm, RoPE, FP8 quantization, index-K
  store, paged-logits metadata, logits, top-k);
* vLLM 0.19 (``sparse_attention/vllm/0.19.0/dsa_generation_module_perf.parquet`` against
  ``mla/vllm/0.19.0/mla_generation_module_perf.parquet``) times DeepSeek-V3.2 and DeepSeek-V3,
  whose MLA is the same: the difference is again the indexer.

Both at FP8 KV cache and FP8 block-scaled GEMMs, the heads of TP 8. The rows used are the
decode regime the engines graph (batch 1-64) at contexts up to 2,048 tokens, where the top-k
(2,048) keeps the sparse core the same size as the dense one. From each measured difference
the script subtracts what the model already prices for the indexer at that shape (its two
projection GEMMs and the logits over the context, each with the engine's kernel overhead); the
median of the rest is the fixed time of the indexer's kernel chain per layer and step.

Run: python benchmarks/dsa_indexer_report.py SGLANG_DSA.parquet VLLM_DSA.parquet VLLM_MLA.parquet
(needs pandas and pyarrow; the three files as named above). ``--gpu=b200`` prices the same
difference from the b200_sxm tables (sglang/0.5.14, vllm/0.19.0): the check that the Hopper
figure holds on Blackwell. ``--trtllm=DSA.parquet,MLA.parquet`` adds TensorRT-LLM's pair
(``sparse_attention/trtllm/1.3.0rc20/dsa_generation_module_perf.parquet`` and
``mla/trtllm/1.3.0rc20/mla_generation_module_perf.parquet``; FP8 KV is published for B200
only).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import numpy as np

from llm_codesign import load_engine, load_hardware, load_model
from llm_codesign.ops import step_shape

sys.path.insert(0, str(Path(__file__).resolve().parent))
from layer_pricing import layer_ops_s  # noqa: E402

BATCHES = (1, 2, 4, 8, 16, 32, 64)
CONTEXTS = (128, 256, 512, 1024, 1536, 2048)
INDEXER_OPS = ("indexer_q", "indexer_k_w", "indexer_decode")


def priced_indexer_s(
    model_id: str, engine_id: str, batch: int, ctx: int, gpu: str = "h200-sxm", tp: int = 8
) -> float:
    """Seconds the model prices for one sparse layer's indexer ops at a decode step of
    ``batch`` sequences at context ``ctx`` (TP ``tp``), kernel overheads included, without the
    fixed chain (``indexer_overhead_s``) being measured here."""
    m = load_model(model_id)
    hw = load_hardware(gpu)
    eng = load_engine(engine_id)
    g = next(g for g in m.layer_groups if g.mixer == "sparse")
    s = step_shape(tp, 1, 1, 1, False, isl=float(ctx), osl=1e-9, decode_seqs=float(batch))
    return layer_ops_s(m, g, s, hw, eng, lambda op: op.name in INDEXER_OPS)


def _table(df, model: str, op_name: str, heads: int):
    x = df[(df.model == model) & (df.op_name == op_name) & (df.num_heads == heads)]
    x = x[(x.kv_cache_dtype.isin(["fp8", "fp8_e4m3"])) & (x.gemm_type == "fp8_block")]
    return x.groupby(["batch_size", "step"]).latency.mean()


def report(
    name: str, with_idx, without, model_id: str, engine_id: str, gpu: str = "h200-sxm"
) -> float:
    rest = []
    diffs = []
    for b in BATCHES:
        for c in CONTEXTS:
            if (b, c) in with_idx.index and (b, c) in without.index:
                d = (with_idx[(b, c)] - without[(b, c)]) * 1e-3  # ms -> s
                diffs.append(d)
                rest.append(d - priced_indexer_s(model_id, engine_id, b, c, gpu))
    med = statistics.median(rest)
    print(
        f"{name}: {len(diffs)} shapes; measured indexer {statistics.median(diffs) * 1e6:.1f} us "
        f"median ({min(diffs) * 1e6:.1f}-{max(diffs) * 1e6:.1f}); less the priced indexer ops: "
        f"median {med * 1e6:.1f} us (quartiles {np.percentile(rest, 25) * 1e6:.1f}-"
        f"{np.percentile(rest, 75) * 1e6:.1f})"
    )
    return med


def _deepseek_pair(dsa, mla, engine: str, label: str, gpu: str) -> float:
    """DeepSeek-V3.2's attention module less DeepSeek-V3's (the same MLA), 16 heads (TP 8)."""
    return report(
        f"{gpu}: {label}, DeepSeek-V3.2 less DeepSeek-V3, 16 heads (TP 8)",
        _table(dsa, "deepseek-ai/DeepSeek-V3.2", "dsa_generation_module", 16),
        _table(mla, "deepseek-ai/DeepSeek-V3", "mla_generation_module", 16),
        "deepseek-v3.2",
        engine,
        gpu,
    )


def main() -> None:
    import pandas as pd

    opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    gpu = opts.get("gpu", "h200-sxm")
    if len(args) != 3:
        sys.exit(__doc__)
    sg = pd.read_parquet(args[0])
    report(
        f"{gpu}: SGLang, GLM-5-FP8 less GLM-5.2-FP8 without indexer, 8 heads (TP 8)",
        _table(sg, "zai-org/GLM-5-FP8", "dsa_generation_module", 8),
        _table(sg, "zai-org/GLM-5.2-FP8", "dsa_generation_module_skip_indexer", 8),
        "glm-5",
        "sglang",
        gpu,
    )
    _deepseek_pair(pd.read_parquet(args[1]), pd.read_parquet(args[2]), "vllm", "vLLM", gpu)
    if "trtllm" in opts:  # TensorRT-LLM's DeepSeek-V3.2 and DeepSeek-V3 module tables
        t_dsa, t_mla = (pd.read_parquet(f) for f in opts["trtllm"].split(","))
        _deepseek_pair(t_dsa, t_mla, "trtllm", "TensorRT-LLM", gpu)


if __name__ == "__main__":
    main()

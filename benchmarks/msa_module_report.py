"""MiniMax Sparse Attention's decode module (MiniMax-M3) priced against published module timings,
on Hopper (the calibration side) and Blackwell (the check).

AIConfigurator (ai-dynamo/aiconfigurator @095f58a,
aic-core/src/aiconfigurator_core/systems/data/<gpu>/msa/<engine>/<version>/
msa_generation_module_perf.parquet; vLLM 0.24.0, SGLang 0.5.16, TensorRT-LLM 1.3.0rc23) times one
MiniMax-M3 sparse layer's whole attention module of a decode step (q/k/v and indexer
projections, the indexer's block scoring and top-k, the sparse GQA core over the chosen blocks,
o_proj): ``batch_size`` sequences at ``step`` tokens of history, ``num_heads`` query heads a
rank (64 / TP; the 128-head rows have no TP of this model and are skipped). Rows read: every
KV-cache and GEMM format a table holds, each priced in the same formats.

The model prices the same layer as ``dsa_module_report`` prices DSA's: the attention-class ops
of one sparse layer (``ops.layer_group_ops``) with the engine's kernel overhead, no collective.
By batch (at most 64; 65-256; above 256) and by history (at most the 16 blocks of 128 tokens
the indexer keeps, where every block is kept, or past them).

The prefill modules (``msa_context_module_perf.parquet``: ``batch_size`` prompts of ``isl``
tokens, no cached prefix; 2,048 tokens or more, 32,768 at most in all) are priced the same way.

``--fit``: the indexer's fixed kernel chain per sparse layer and step (engine
``msa_indexer_overhead_s``): each row's measured module less every op the model prices but the
chain, at batch 1-64 and at most 2,047 tokens of history (below the 16 blocks, launch-bound);
the median over an engine's Hopper tables (H100, H200) is its constant; Blackwell's medians are
printed as the check. The indexer's scoring stream past the 16 blocks is checked the same way
``dsa_module_report --fit`` fits DSA's (``attention_kernels.INDEXER_DECODE_HBM``): the module's
growth per key from 8,191 to 32,767 tokens of history at 256 sequences or more, over a key's
256 BF16 bytes and its FP32 logit, over the GPU's HBM bandwidth. And the Triton prefill core's
rate per SM (``attention_kernels.MSA_TRITON_PREFILL_SM_FLOPS``): each Hopper vLLM and SGLang
prefill row's module less every other op priced, the core's FLOPs over the rest and the SMs,
the median per cache format.

Run: python benchmarks/msa_module_report.py AIC_GIT_DIR [--fit]
(needs pandas and pyarrow; AIC_GIT_DIR: a clone or the ``fetch`` mirror's git directory).
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from llm_codesign import load_engine, load_hardware, load_model
from llm_codesign.mixers import INDEXER_LOGIT_BYTES
from llm_codesign.ops import step_shape

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aic_git import GPUS, read_table, table_paths  # noqa: E402
from layer_pricing import (  # noqa: E402
    attention_class,
    layer_op_times,
    layer_ops_s,
    print_ratio_rows,
    print_side_summary,
)

HOPPER = ("h100_sxm", "h200_sxm")
# a table's (GEMM format, KV-cache format) -> the precision that prices it
GEMM = {"bfloat16": "bf16", "fp8_block": "fp8+fp8_block-w", "nvfp4": "nvfp4"}


def precision_of(gemm: str, kv: str) -> str:
    base = GEMM[gemm]
    kv_fmt = "fp8" if kv.startswith("fp8") else "bf16"
    default_kv = "bf16" if base == "bf16" else "fp8"
    return base if kv_fmt == default_kv else f"{base}+{kv_fmt}-kv"


def priced_layer_s(
    engine: str, gpu: str, prec: str, tp: int, batch: int, step: int, chain: bool = True
) -> float:
    """Seconds the model prices for one MiniMax-M3 sparse layer's attention ops in a decode step
    of ``batch`` sequences at ``step`` tokens of history, TP ``tp`` (without the indexer's fixed
    chain where ``chain`` is False)."""
    m, hw, eng = load_model("minimax-m3"), load_hardware(gpu), load_engine(engine)
    g = next(g for g in m.layer_groups if g.mixer == "sparse")
    s = step_shape(tp, 1, 1, 1, False, isl=float(step), osl=1e-9, decode_seqs=float(batch))

    def keep(op) -> bool:
        return attention_class(op) and (chain or op.name != "indexer_chain")

    return layer_ops_s(m, g, s, hw, eng, keep, prec)


def fit(repo: str) -> None:
    chains: dict[str, list[float]] = defaultdict(list)
    per_key = load_model("minimax-m3").indexer.cache_bytes_per_token + INDEXER_LOGIT_BYTES
    for gpu, engine, version, df in _tables(repo):
        short = df[(df.batch_size <= 64) & (df.step <= 2047) & (df.num_heads <= 64)]
        rest = []
        keys = ["gemm_type", "kv_cache_dtype", "num_heads", "batch_size", "step"]
        for (gemm, kv, heads, batch, step), x in short.groupby(keys):
            if 64 % heads or gemm not in GEMM:
                continue
            prec = precision_of(gemm, kv)
            got = priced_layer_s(engine, GPUS[gpu], prec, 64 // heads, batch, step, chain=False)
            rest.append(float(x.latency.median()) * 1e-3 - got)
        hbm = load_hardware(GPUS[gpu]).hbm_bytes_per_s
        shares = []
        for _, x in df[df.batch_size >= 256].groupby(keys[:4]):
            t = x.groupby("step").latency.median() * 1e-3
            if 8191 in t.index and 32767 in t.index:
                per_s = (t[32767] - t[8191]) / (24576 * float(x.batch_size.iloc[0]))
                shares.append(per_key / (per_s * hbm))
        stream = f"{statistics.median(shares):.3f}" if shares else "-"
        print(f"  {gpu:9s} {engine:7s} {version:11s} chain {statistics.median(rest) * 1e6:6.1f} us"
              f"  (rows {len(rest)}); scoring stream {stream} of HBM")  # fmt: skip
        if gpu in HOPPER:
            chains[engine] += rest
    for engine, rest in sorted(chains.items()):
        print(f"msa_indexer_overhead_s {engine} (Hopper): {statistics.median(rest) * 1e6:.1f} us")
    fit_prefill(repo)


def _tables(repo: str, phase: str = "generation"):
    for path in table_paths(repo):
        parts = path.split("/")
        if parts[-1] == f"msa_{phase}_module_perf.parquet" and parts[-5] in GPUS:
            yield parts[-5], parts[-3], parts[-2], read_table(repo, path)


def prefill_rows(repo: str):
    """(gpu, engine, version, KV format, the module's measured s, the ops priced beside the
    core in s, the core's FLOPs, the whole priced module in s) of every prefill row of b prompts
    of 2,048 tokens or more (32,768 at most in all), no cached prefix, heads of a TP of 64."""
    m = load_model("minimax-m3")
    g = next(g for g in m.layer_groups if g.mixer == "sparse")
    for gpu, engine, version, df in _tables(repo, "context"):
        hw, eng = load_hardware(GPUS[gpu]), load_engine(engine)
        df = df[(df.step == 0) & (df.isl >= 2048) & (df.batch_size * df.isl <= 32768)]
        keys = ["gemm_type", "kv_cache_dtype", "num_heads", "batch_size", "isl"]
        for (gemm, kv, heads, batch, isl), x in df.groupby(keys):
            if heads > 64 or 64 % heads or gemm not in GEMM:
                continue
            s = step_shape(64 // heads, 1, 1, 1, False, isl=float(isl), osl=1.0,
                           decode_seqs=0.0, prefill_tokens=float(batch * isl),
                           prefill_seqs=float(batch), micro_batches=1.0)  # fmt: skip
            beside, core_flops, whole = 0.0, 0.0, 0.0
            for op, t in layer_op_times(m, g, s, hw, eng, precision_of(gemm, kv)):
                if not attention_class(op):
                    continue
                whole += t
                if op.name == "attention_prefill":
                    core_flops = float(np.asarray(op.flops))
                else:
                    beside += t
            meas = float(x.latency.median()) * 1e-3
            yield gpu, engine, version, kv.startswith("fp8"), meas, beside, core_flops, whole


def fit_prefill(repo: str) -> None:
    rates: dict[bool, list[float]] = defaultdict(list)
    for gpu, engine, version, fp8, meas, beside, flops, _ in prefill_rows(repo):
        if meas > beside and gpu in HOPPER and engine in ("vllm", "sglang"):
            rates[fp8].append(flops / ((meas - beside) * load_hardware(GPUS[gpu]).sm_count))
    for fp8, r in sorted(rates.items()):
        print(f"MSA_TRITON_PREFILL_SM_FLOPS (Hopper, vLLM + SGLang) {'FP8' if fp8 else 'BF16'} "
              f"cache: {statistics.median(r):.3g} FLOP/s an SM (rows {len(r)})")  # fmt: skip


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[2] == "--fit":
        fit(sys.argv[1])
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    ratios: dict[tuple, list[float]] = defaultdict(list)
    for gpu, engine, version, df in _tables(sys.argv[1]):
        keys = ["gemm_type", "kv_cache_dtype", "num_heads", "batch_size", "step"]
        for (gemm, kv, heads, batch, step), x in df.groupby(keys):
            if heads > 64 or 64 % heads or step < 1 or gemm not in GEMM:
                continue
            want = float(x.latency.median()) * 1e-3
            prec = precision_of(gemm, kv)
            got = priced_layer_s(engine, GPUS[gpu], prec, 64 // int(heads), int(batch), int(step))
            size = "b<=64" if batch <= 64 else "b65-256" if batch <= 256 else "b>256"
            ctx = "ctx<=2k" if step <= 2048 else "ctx>2k"
            ratios[(gpu, f"{engine} {version}", size, ctx)].append(got / want)
    print("decode: priced / measured, one MiniMax-M3 sparse layer's attention module "
          "(median, p10-p90, rows)")  # fmt: skip
    print_ratio_rows(ratios, 44)
    pre: dict[tuple, list[float]] = defaultdict(list)
    for gpu, engine, version, _fp8, meas, _beside, _flops, whole in prefill_rows(sys.argv[1]):
        pre[(gpu, f"{engine} {version}")].append(whole / meas)
    print("prefill: priced / measured, the same layer's module on b prompts (median, rows)")
    for key in sorted(pre):
        print(f"  {' '.join(key):32s} {statistics.median(pre[key]):5.2f}  n={len(pre[key])}")
    engines = sorted({k[1].split()[0] for k in ratios})
    for engine in ("all", *engines):
        print_side_summary(
            ratios, HOPPER, engine, lambda k, e=engine: e in ("all", k[1].split()[0])
        )


if __name__ == "__main__":
    main()

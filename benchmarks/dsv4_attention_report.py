"""DeepSeek-V4's attention layers priced against published module timings.

AIConfigurator (ai-dynamo/aiconfigurator @095f58a,
aic-core/src/aiconfigurator_core/systems/data/<gpu>/sparse_attention/<engine>/<version>/) times one
DeepSeek-V4 layer's whole ``self_attn`` module under the engine's CUDA graph (projections, norms,
RoPE and cache writes, the compressor, the CSA indexer and its top-k, the sparse core over the
window and the entries, the grouped output projection; docs/perf_database/
deepseek-v4-sglang-attention-module-design.md), for the CSA (ratio 4) and HCA (ratio 128) layers,
at TP 1-8 (``num_heads``: the rank's heads), FP8 KV cache and FP8 block-scaled GEMMs:

* ``dsv4_{csa,hca}_generation_module_perf.parquet``: a decode step of ``batch_size`` sequences
  whose history is ``step`` tokens;
* ``dsv4_{csa,hca}_context_module_perf.parquet``: ``batch_size`` prompts of ``isl`` new tokens
  after a prefix of ``step`` tokens.

The model prices the same layer: the attention-class ops of one layer of that group
(``ops.layer_group_ops``), each with the engine's kernel overhead (as
``benchmarks/dsa_indexer_report.py`` does), no collective (the module runs on one GPU). The
report checks the mixer's closed forms, the sparse kernels' rates and the engines' chains on
Hopper (H100, H200: the calibration side) and Blackwell (B200, B300, GB200, GB300); ``--fit``
measures the chains (the engine constants ``compressed_*``).

Run: python benchmarks/dsv4_attention_report.py AIC_REPO_GIT_DIR [--context] [--by-batch] [--fit]
(needs pandas and pyarrow; AIC_REPO_GIT_DIR: a clone or the ``fetch`` mirror's git directory).
``--fit``: the engines' fixed chains of a compressed layer (``fit``).
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

from llm_codesign import load_engine, load_hardware, load_model
from llm_codesign.ops import step_shape

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aic_git import GPUS, read_table, table_paths  # noqa: E402
from layer_pricing import attention_class, layer_ops_s  # noqa: E402

ENGINES = {"sglang": "sglang", "vllm": "vllm", "trtllm": "trtllm"}
MODELS = {"Pro": "deepseek-v4-pro", "Flash": "deepseek-v4-flash"}
RATIOS = {"csa": 4, "hca": 128}
PREFIXES = (0, 1024, 8192, 65536)  # the context tables' prefixes read (of 28: the report's time)


def _tables(repo: str, phase: str):
    """(gpu dir, engine, version, kind, DataFrame) of every module table in the repo."""
    for path in table_paths(repo):
        parts = path.split("/")
        name = parts[-1]
        if not name.startswith("dsv4_") or f"_{phase}_module_perf" not in name:
            continue
        gpu, engine, version = parts[-5], parts[-3], parts[-2]
        if gpu not in GPUS or engine not in ENGINES:
            continue
        yield gpu, engine, version, name.split("_")[1], read_table(repo, path)


def priced_layer_s(model_id, engine_id, gpu, ratio, tp, batch, step, isl=0, chains=True):
    """Seconds the model prices for one layer's attention ops: a decode step (``isl`` 0) of
    ``batch`` sequences at ``step`` tokens of history, or ``batch`` prompts of ``isl`` tokens
    after a ``step``-token prefix; FP8 KV and FP8 block weights, TP ``tp``; ``chains`` False
    leaves out the engine's fixed chains of a compressed layer (what ``--fit`` measures)."""
    m, hw, eng = load_model(model_id), load_hardware(gpu), load_engine(engine_id)
    if not chains:
        eng = eng.with_overrides(
            compressed_overhead_s=0.0, compressed_indexer_overhead_s=0.0, compressed_topk_s=0.0
        )
    g = next(g for g in m.layer_groups if g.compress == ratio)
    if isl:  # prompts: mean causal context step + isl / 2 (step_shape's isl / 2)
        s = step_shape(tp, 1, 1, 1, False, isl=2.0 * step + isl, osl=1e-9,
                       prefill_tokens=float(batch * isl), prefill_seqs=float(batch))  # fmt: skip
    else:
        s = step_shape(tp, 1, 1, 1, False, isl=float(step), osl=1e-9, decode_seqs=float(batch))
    return layer_ops_s(m, g, s, hw, eng, attention_class)


def report(repo: str, phase: str = "generation", by_batch: bool = False) -> None:
    ratios: dict[tuple, list[float]] = defaultdict(list)
    for gpu, engine, version, kind, df in _tables(repo, phase):
        df = df[(df.kv_cache_dtype.isin(["fp8", "fp8_e4m3"])) & (df.gemm_type == "fp8_block")]
        for (model, tp, batch, isl, step), x in df.groupby(
            ["model", "tp_size", "batch_size", "isl", "step"]
        ):
            size = next((v for k, v in MODELS.items() if f"V4-{k}" in model), None)
            if size is None or (phase == "generation" and step < 1):
                continue
            new = int(isl) if phase == "context" else 0
            if phase == "context" and (new < 1 or batch * new < 256 or step not in PREFIXES):
                continue  # (the prompt regime: at least 256 tokens a step; four prefixes)
            want = float(x.latency.median()) * 1e-3
            got = priced_layer_s(size, ENGINES[engine], GPUS[gpu], RATIOS[kind], int(tp),
                                 int(batch), int(step), new)  # fmt: skip
            bucket = f"b{int(batch)}" if by_batch else ("b<=64" if batch <= 64 else "b>64")
            ratios[(gpu, f"{engine} {version}", kind, size, bucket)].append(got / want)
    print(f"{phase}: priced / measured, one layer's attention module (median, p10-p90, rows)")
    for key in sorted(ratios):
        r = sorted(ratios[key])
        p10, p90 = r[len(r) // 10], r[(9 * len(r)) // 10]
        med = statistics.median(r)
        print(f"  {' '.join(key):48s} {med:5.2f}  ({p10:4.2f}-{p90:4.2f})  n={len(r)}")
    for side, gpus in (("Hopper", ("h100_sxm", "h200_sxm")), ("Blackwell", None)):
        allr = [v for k, r in ratios.items() for v in r if (k[0] in gpus if gpus else
                k[0] not in ("h100_sxm", "h200_sxm"))]  # fmt: skip
        if allr:
            err = statistics.median(abs(v - 1.0) for v in allr)
            print(f"{side}: median ratio {statistics.median(allr):.3f}, median |error| "
                  f"{err:.1%}, rows {len(allr)}")  # fmt: skip


def fit(repo: str) -> None:
    """The fixed chains per engine: measured less priced (chains left out) one layer's decode
    module at batch 1-64 (the launch-bound regime the engines graph), contexts 128-65,536,
    DeepSeek-V4-Pro, every TP. The median over the HCA rows is ``compressed_overhead_s``; over
    the CSA rows whose entries (context / 4) are at most the indexer's top-k (1,024: every entry
    is taken, no selection runs) less it, ``compressed_indexer_overhead_s``; over the CSA rows
    past top-k less both, ``compressed_topk_s`` (the selection). Printed per GPU, so that the
    Hopper fit (H100, H200) can be read against the Blackwell tables."""
    topk = load_model("deepseek-v4-pro").indexer.topk  # type: ignore[union-attr]
    rest: dict[tuple, list[float]] = defaultdict(list)
    for gpu, engine, version, kind, df in _tables(repo, "generation"):
        keep = df.kv_cache_dtype.isin(["fp8", "fp8_e4m3"]) & (df.gemm_type == "fp8_block")
        keep &= df.model.str.contains("V4-Pro") & (df.batch_size <= 64) & (df.step >= 128)
        for (tp, batch, step), x in df[keep].groupby(["tp_size", "batch_size", "step"]):
            got = priced_layer_s("deepseek-v4-pro", ENGINES[engine], GPUS[gpu], RATIOS[kind],
                                 int(tp), int(batch), int(step), chains=False)  # fmt: skip
            part = "hca" if kind == "hca" else ("csa>k" if step / 4 > topk else "csa")
            rest[(engine, version, gpu, part)].append(float(x.latency.median()) * 1e-3 - got)

    def chains(engine: str, version: str, gpus) -> tuple[float, ...] | None:
        rows = {p: [v for k, r in rest.items() if k[:2] == (engine, version) and k[2] in gpus
                    and k[3] == p for v in r] for p in ("hca", "csa", "csa>k")}  # fmt: skip
        if not all(rows.values()):
            return None
        hca = statistics.median(rows["hca"])
        idx = statistics.median(rows["csa"]) - hca
        return hca, idx, statistics.median(rows["csa>k"]) - hca - idx

    print("chains, us: compressed_overhead_s, compressed_indexer_overhead_s, compressed_topk_s")
    for engine, version, gpu in sorted({k[:3] for k in rest}):
        got = chains(engine, version, (gpu,))
        if got:
            print(f"  {engine} {version:10s} {gpu:9s} " + "  ".join(f"{v * 1e6:6.1f}" for v in got))
    for engine, version in sorted({k[:2] for k in rest}):
        for side, gpus in (("Hopper", ("h100_sxm", "h200_sxm")), ("Blackwell", ("b200_sxm",))):
            got = chains(engine, version, gpus)
            if got:
                print(f"{engine} {version} fit on {side} ({', '.join(gpus)}): "
                      + ", ".join(f"{v:.3g}" for v in got))  # fmt: skip


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 1:
        sys.exit(__doc__)
    if "--fit" in sys.argv:
        fit(args[0])
    else:
        phase = "context" if "--context" in sys.argv else "generation"
        report(args[0], phase, "--by-batch" in sys.argv)

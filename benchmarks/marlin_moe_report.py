"""The marlin path (``moe_kernels.MARLIN_SM_FLOPS``) against AIConfigurator's Marlin MoE modules
of 4-bit integer weight-only experts (issue 11: fit on Hopper, checked on Blackwell).

FILEs are AIConfigurator ``moe_perf.parquet`` tables (ai-dynamo/aiconfigurator @095f58a,
aic-core/src/aiconfigurator_core/systems/data/<gpu>/moe/<engine>/<version>/moe_perf.parquet), or
folders holding them. Each module of ``moe_dtype`` int4_wo that a Marlin kernel ran
(``kernel_source`` naming marlin, but ``vllm_marlin_int4_moe``: vLLM 0.18 and 0.19's tables time
the same shapes 2-6x slower than vLLM 0.14 and 0.24 on the same GPUs, at one token too), of
balanced routing, without MoE tensor parallelism, is priced as ``validate.moe_layer`` prices a
module: ``moe_layer_time`` with the table's engine's constants on the marlin path
(``moe_kernels_int4`` marlin), Kimi-K2.5's INT4 format (BF16 scale per 32). The table: the median
error (predicted / measured - 1) by GPU and token count of the modules whose experts are all
local (EP 1), over shapes and versions; then, at 4,096 tokens, by engine and EP size (SGLang's
Marlin modules at EP 2-8 time as their EP 1 modules do: as if every pair were local, which the
model, pricing a rank's own pairs, does not price). ``--scan a,b,c``: the EP 1 Hopper modules'
median |error| over 16-16,384 tokens at each MARLIN_SM_FLOPS (the fit), and the Blackwell
modules' at the same values (the check). Needs pandas and pyarrow.

Run: python benchmarks/marlin_moe_report.py FILE_OR_DIR... [--scan 1.6e12,1.86e12,2.1e12]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aic_moe_survey import table_identity  # noqa: E402
from hbm_fraction_report import parquet_files  # noqa: E402

from llm_codesign import moe_kernels  # noqa: E402
from llm_codesign.specs.engine import load_engine  # noqa: E402
from llm_codesign.validate.moe_layer import moe_layer_time  # noqa: E402

FORMAT = "w4a16+int4_g32_sym-w"  # Kimi-K2.5's INT4 experts (validate.moe_layer's precision)
TOKENS = (1, 16, 64, 256, 1024, 4096, 16384)
FIT_TOKENS = (16, 64, 256, 1024, 4096, 16384)
OFF_COLLECTOR = "vllm_marlin_int4_moe"  # (module docstring)
HOPPER = ("h100-sxm", "h200-sxm")


def marlin_modules(files: list[Path]) -> list[tuple[str, str, tuple[int, ...], float]]:
    """(GPU, engine, (tokens, hidden, width, experts, top-k, ep), measured seconds) of every
    Marlin int4_wo module the module docstring keeps (the median over repeated rows)."""
    import pandas as pd

    out = []
    for f in files:
        d = pd.read_parquet(f)
        if d.empty or "moe_dtype" not in d.columns:
            continue
        gpu, engine = table_identity(d, f)
        if gpu is None or engine not in ("vllm", "sglang"):
            continue
        src = d["kernel_source"].astype(str).str.lower()
        keep = (d["moe_dtype"] == "int4_wo") & src.str.contains("marlin") & (src != OFF_COLLECTOR)
        d = d[keep & (d["distribution"] == "balanced") & (d["moe_tp_size"] == 1)]
        d = d[(d["moe_ep_size"] <= 8) & d["num_tokens"].isin(TOKENS)]
        keys = ["num_tokens", "hidden_size", "inter_size", "num_experts", "topk", "moe_ep_size"]
        for key, ms in d.groupby(keys)["latency"].median().items():
            if key[3] % key[5] == 0:
                out.append((gpu, engine, tuple(int(x) for x in key), float(ms) * 1e-3))
    return out


def errors(modules: list[tuple[str, str, tuple[int, ...], float]]) -> dict[tuple[Any, ...], list]:
    """(GPU, engine, EP, tokens) -> errors of the modules at the current ``MARLIN_SM_FLOPS``."""
    out: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    marlin = {"moe_kernels_int4": "marlin", "expert_balancer": "uniform"}
    engines = {e: load_engine(e).with_overrides(**marlin) for e in ("vllm", "sglang")}
    for gpu, engine, (t, h, i, e, k, ep), measured in modules:
        args = (gpu, engines[engine], FORMAT, t, e, e // ep, k, h, i)
        out[(gpu, engine, ep, t)].append(moe_layer_time(*args)[0] / measured - 1.0)
    return out


def scan(modules: list, values: list[float]) -> None:
    """Median |error| of the Hopper and the Blackwell modules (FIT_TOKENS) at each value."""
    print("| MARLIN_SM_FLOPS | Hopper median abs err (bias) | Blackwell median abs err (bias) |")
    print("|---:|---:|---:|")
    keep = moe_kernels.MARLIN_SM_FLOPS
    try:
        for v in values:
            moe_kernels.MARLIN_SM_FLOPS = v
            errs = errors([m for m in modules if m[2][0] in FIT_TOKENS and m[2][5] == 1])
            cells = []
            for hopper in (True, False):
                e = [x for (g, *_), xs in errs.items() if (g in HOPPER) == hopper for x in xs]
                med = statistics.median(abs(x) for x in e) if e else float("nan")
                cells.append(f"{med * 100:.1f}% ({statistics.median(e) * 100:+.1f}%), {len(e)}")
            print(f"| {v:.3g} | {cells[0]} | {cells[1]} |")
    finally:
        moe_kernels.MARLIN_SM_FLOPS = keep


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+", help="moe_perf.parquet files or folders holding them")
    ap.add_argument("--scan", default="", help="comma-separated MARLIN_SM_FLOPS values")
    args = ap.parse_args()
    modules = marlin_modules(parquet_files(args.paths))
    if args.scan:
        scan(modules, [float(x) for x in args.scan.split(",")])
        return
    errs = errors(modules)
    by_gpu: dict[tuple[str, int], list[float]] = defaultdict(list)
    for (gpu, _, ep, t), xs in errs.items():
        if ep == 1:
            by_gpu[(gpu, t)] += xs
    print("| GPU (EP 1) | " + " | ".join(f"{t} tok" for t in TOKENS) + " | modules |")
    print("|---|" + "---:|" * (len(TOKENS) + 1))
    for gpu in sorted({g for g, _ in by_gpu}):
        cells = [by_gpu.get((gpu, t), []) for t in TOKENS]
        med = [f"{statistics.median(c) * 100:+.0f}%" if c else "" for c in cells]
        print(f"| {gpu} | {' | '.join(med)} | {max(len(c) for c in cells)} |")
    eps = sorted({ep for _, _, ep, _ in errs})
    print("\n| engine, 4,096 tokens | " + " | ".join(f"EP {e}" for e in eps) + " |")
    print("|---|" + "---:|" * len(eps))
    for engine in ("sglang", "vllm"):
        cells = [[x for (g, en, ep, t), xs in errs.items() if en == engine and ep == e
                  and t == 4096 for x in xs] for e in eps]  # fmt: skip
        med = [f"{statistics.median(c) * 100:+.0f}% ({len(c)})" if c else "" for c in cells]
        print(f"| {engine} | {' | '.join(med)} |")


if __name__ == "__main__":
    main()

"""The model's whole MoE layer against every fused-MoE module AIConfigurator measured (issue 11:
do the Hopper-fit kernels predict Blackwell?), by GPU, engine, kernel path, format and tokens.

FILEs are AIConfigurator ``moe_perf.parquet`` tables (ai-dynamo/aiconfigurator @095f58a,
aic-core/src/aiconfigurator_core/systems/data/<gpu>/moe/<engine>/<version>/moe_perf.parquet), or
folders holding them. Each module of balanced routing (equally popular experts), of a bundled
MoE model's shape (hidden, expert width, experts, top-k; ``--all-shapes``: every shape), expert
parallelism and MoE tensor parallelism at most 8, is priced as ``validate.moe_layer`` prices the
bundled ``moe_layer.csv`` rows: ``moe_layer_time`` with the constants of the table's engine and
the kernel path its ``kernel_source`` names (TensorRT-LLM's ``moe_torch_flow*`` runner:
cutlass, its ``min_latency`` one: trtllm_gen, its DeepGEMM runner (block-scaled FP8 on
Blackwell): cutlass, the path the model gives TensorRT-LLM everywhere; FlashInfer's CUTLASS MoE:
cutlass, its TRTLLM-Gen MoE: trtllm_gen; vLLM's and SGLang's fused_moe / Triton experts: triton).
Kernels the model has no path for (Marlin, CuTe DSL, vLLM's XPU) and formats it does not price
(int4 weight-only, W4AFP8) are left out. The table per (GPU, engine, path, format):
the median error (predicted / measured - 1) at each token count, over shapes, plans and
versions, and the modules behind it. Needs pandas and pyarrow.

Run: python benchmarks/aic_moe_survey.py FILE_OR_DIR... [--tokens 16,64,256,1024,4096]
     [--all-shapes] [--gpus b200,gb200]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hbm_fraction_report import parquet_files  # noqa: E402

from llm_codesign.specs.engine import load_engine  # noqa: E402
from llm_codesign.specs.model import bundled_models  # noqa: E402
from llm_codesign.validate import match_gpu_name  # noqa: E402
from llm_codesign.validate.moe_layer import moe_layer_time  # noqa: E402

# AIConfigurator's moe_dtype -> validate.moe_layer's dtype (its _DTYPES: the precision pricing it)
FORMATS = {
    "bfloat16": "bf16",
    "fp8": "fp8",
    "fp8_block": "fp8_block",
    "nvfp4": "nvfp4",
    "w4a16_mxfp4": "mxfp4",  # weight-only MXFP4, BF16 activations
    "w4a8_mxfp4_mxfp8": "mxfp4_mxfp8",
}
ENGINES = ("trtllm", "vllm", "sglang")
COLUMNS = {"kernel_source", "moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk"}
COLUMNS |= {"num_experts", "moe_tp_size", "moe_ep_size", "distribution", "latency", "device"}


def kernel_path(source: str) -> str | None:
    """The model's MoE kernel path for an AIConfigurator ``kernel_source`` (module docstring),
    None for a kernel it has no path for."""
    s = source.lower()
    if s == "deepgemm":  # TensorRT-LLM's DeepGEMM runner (FP8 block on Blackwell): the model
        return "cutlass"  # gives TensorRT-LLM cutlass everywhere (module docstring)
    if any(x in s for x in ("marlin", "cutedsl", "xpu", "situ")):
        return None
    if "min_latency" in s or ("flashinfer" in s and "trtllm" in s):
        return "trtllm_gen"
    if "cutlass" in s or s.startswith("moe_torch_flow"):
        return "cutlass"
    if "triton" in s or "fused_moe" in s or s == "vllm_mxfp4_moe":
        return "triton"
    return None


def table_identity(d: Any, f: Path) -> tuple[str | None, str]:
    """(bundled GPU id or None, engine of ``ENGINES`` or "") of a non-empty module table ``d``
    read from ``f`` (its ``device`` and ``framework`` columns, else the file's name)."""
    fw = str(d["framework"].iloc[0]).lower() if "framework" in d.columns else str(f)
    return match_gpu_name(str(d["device"].iloc[0])), next((e for e in ENGINES if e in fw), "")


def bundled_shapes() -> set[tuple[int, int, int, int]]:
    """(hidden, expert width, experts, top-k) of every bundled MoE model."""
    return {
        (m.hidden_size, m.moe.expert_intermediate, m.moe.num_experts, m.moe.top_k)
        for m in bundled_models().values()
        if m.moe is not None
    }


def survey(files: list[Path], tokens: set[int], shapes: set | None, gpus: set[str]) -> dict:
    """Errors per (GPU, engine, path, format, tokens) (module docstring)."""
    import pandas as pd

    errors: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    priced: dict[tuple[Any, ...], float | None] = {}
    for f in files:
        d = pd.read_parquet(f)
        if not COLUMNS <= set(d.columns) or d.empty:
            print(f"skipped {f}: not a fused-MoE table", file=sys.stderr)
            continue
        gpu, engine = table_identity(d, f)
        if engine not in ENGINES or gpu is None or (gpus and gpu not in gpus):
            continue
        d = d[(d["distribution"] == "balanced") & d["num_tokens"].isin(tokens)]
        keys = ["kernel_source", "moe_dtype", "hidden_size", "inter_size", "num_experts", "topk"]
        keys += ["moe_tp_size", "moe_ep_size", "num_tokens"]
        for (source, dtype, h, i, e, k, tp, ep, t), ms in (
            d.groupby(keys)["latency"].median().items()
        ):
            path, fmt = kernel_path(str(source)), FORMATS.get(str(dtype))
            if path is None or fmt is None or e % ep or i % tp or ep > 8 or tp > 8:
                continue
            if shapes is not None and (h, i, e, k) not in shapes:
                continue
            key = (gpu, engine, path, fmt, h, i, e, k, tp, ep, t)
            if key not in priced:
                eng = load_engine(engine).with_overrides(
                    moe_kernels=path, moe_kernels_weight_only="same", expert_balancer="uniform"
                )
                args = (gpu, eng, fmt, int(t), int(e), int(e // ep), int(k), int(h), int(i // tp))
                try:
                    priced[key] = moe_layer_time(*args)[0]
                except Exception as err:  # a format the GPU cannot run: not priced
                    print(f"not priced {key}: {err}", file=sys.stderr)
                    priced[key] = None
            if priced[key] is not None:
                errors[(gpu, engine, path, str(dtype), int(t))].append(
                    priced[key] / (ms * 1e-3) - 1
                )
    return errors


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+", help="moe_perf.parquet files or folders holding them")
    ap.add_argument("--tokens", default="16,64,256,1024,4096")
    ap.add_argument("--all-shapes", action="store_true")
    ap.add_argument("--gpus", default="", help="bundled GPU ids (default: every GPU)")
    args = ap.parse_args()
    tokens = {int(x) for x in args.tokens.split(",")}
    shapes = None if args.all_shapes else bundled_shapes()
    gpus = {g for g in args.gpus.split(",") if g}
    errors = survey(parquet_files(args.paths), tokens, shapes, gpus)
    cols = sorted(tokens)
    print(
        "| GPU | engine | path | format | " + " | ".join(f"{t} tok" for t in cols) + " | modules |"
    )
    print("|---|---|---|---|" + "---:|" * (len(cols) + 1))
    for head in sorted({k[:4] for k in errors}):
        cells = [errors.get(head + (t,), []) for t in cols]
        med = [f"{statistics.median(c) * 100:+.0f}%" if c else "" for c in cells]
        print(f"| {' | '.join(head)} | {' | '.join(med)} | {max(len(c) for c in cells)} |")


if __name__ == "__main__":
    main()

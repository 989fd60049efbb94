"""Error of the model's MoE layer against the published fused-MoE layer timings of
``data/validation/moe_layer.csv`` (issue 11), by class: engine and kernel path, GPU generation,
expert parallelism, config (tuned / default / superseded default heuristics).

Run: python benchmarks/moe_kernel_report.py [--without-permute]
(--without-permute: the same layer without the permute/finalize bytes, the physics before stop 31)

     python benchmarks/moe_kernel_report.py --fp8-block-share FILE... [--shares 0.5,0.55,...]
(the fit of Hopper's ``efficiency.grouped_gemm.fp8_block``: FILEs are AIConfigurator
``moe_perf.parquet`` tables of H100/H200 (ai-dynamo/aiconfigurator @095f58a,
aic-core/src/aiconfigurator_core/systems/data/{h100,h200}_sxm/moe/{trtllm/1.2.0rc5,vllm/0.19.0}/);
each table's block-scaled and per-tensor FP8 modules are paired at the same shape, expert
parallelism and tokens (1,024-16,384, balanced routing), and the share is the one whose
predicted time ratio block / per-tensor matches the measured ratio with the least bias; the
ratio cancels what the two formats share, so per-tensor FP8's own error does not enter. Needs
pandas and pyarrow.)

     python benchmarks/moe_kernel_report.py --fixed-cost ENGINE FILE...
(the MoE layer's fixed cost beyond the per-kernel charges, ``moe_layer_overhead_s``, as the
kernel tables measure it: FILEs are AIConfigurator ``moe_perf.parquet`` tables; at 1 and 2 tokens
(balanced routing, moe_tp 1: each pair on its own expert, as random routing nearly always puts
it) every module is priced with ENGINE's per-kernel, HBM and GEMM constants
(``kernel_overhead_s``, ``hbm_efficiency_scale``, ``gemm_scale``; the table's framework's engine
for the rest, its kernel path), no fixed MoE cost, and the measured time less the priced one is
the fixed cost: medians per table, expert parallelism and format, then over the tables, and
over the BF16 and per-tensor FP8 tables pooled.)

     python benchmarks/moe_kernel_report.py --trtllm-gen-fixed
(the fit of ``moe_kernels.TRTLLM_GEN_LAYER_S``, the TRTLLM-Gen path's fixed chain per MoE layer:
each bundled row of that path (TensorRT-LLM tech blog 24's TRTLLM-Gen column, source
``trtllm_blog24``; FlashInfer PR #4985's TRTLLM NVFP4 column, ``flashinfer_pr4985``) priced with
its engine's constants, its measured time less the rest of the
priced layer is the chain's time; the median over the rows, and the median error at that value.)

     python benchmarks/moe_kernel_report.py --cutlass-fp4-fixed
(the fit of ``moe_kernels.CUTLASS_FP4_LAYER_S``, the cutlass path's fixed chain per MoE layer
with NVFP4 experts: as --trtllm-gen-fixed, over the bundled cutlass NVFP4 rows of 1-16 tokens.)

     python benchmarks/moe_kernel_report.py --mxfp4-share FILE... [--shares ...]
(the fit of Hopper's ``efficiency.grouped_gemm.mxfp4``: FILEs are AIConfigurator
``moe_perf.parquet`` tables holding weight-only MXFP4 modules, ``w4a16_mxfp4``
(systems/data/{h100,h200}_sxm/moe/trtllm/1.2.0rc5/, h200_sxm/moe/vllm/0.19.0/): the share whose
predicted module times match the measured ones with the least bias, ``mxfp4_share``.)
"""

from __future__ import annotations

import argparse
import csv
import importlib
import statistics
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from llm_codesign.validate import bundled_data, match_gpu_name, validate


def _class(x: dict[str, str]) -> list[str]:
    ep = "EP" if x["experts"] != x["experts_local"] else "no EP"
    aic = x["source_id"].startswith("aiconfigurator")
    origin = "AIConfigurator" if aic else "PR threads"
    return [
        "all",
        f"{x['framework']} / {x['path']} / {ep}",
        f"{x['framework']} / {x['gpu']} / {ep}",
        f"{origin} / {x['path']} / {x['config']}",
    ]


# the shapes of data/validation/moe_layer.csv: (hidden, expert intermediate, experts, top_k)
_SHAPES = ((7168, 2048, 256, 8), (4096, 1536, 128, 8), (2048, 768, 128, 8))


def _gpu(device: object) -> str:
    """The bundled GPU id of a table's ``device`` (``validate.match_gpu_name``)."""
    gpu = match_gpu_name(str(device))
    if gpu is None:
        raise SystemExit(f"device {device!r} is not a bundled GPU")
    return gpu


def fp8_block_share(files: list[str], shares: list[float]) -> None:
    """Print, per candidate share, the error of the predicted block / per-tensor FP8 time ratio
    against the measured one, per engine (module docstring)."""
    import pandas as pd

    from llm_codesign.validate.moe_layer import moe_layer_time

    pairs = []  # (engine, gpu, hidden, experts, ep, tokens, measured ratio)
    for f in files:
        d = pd.read_parquet(f)
        d = d[(d.distribution == "balanced") & (d.moe_tp_size == 1)]
        fw = str(d.framework.iloc[0]).lower()
        gpu = _gpu(d.device.iloc[0])
        for hidden, inter, experts, top_k in _SHAPES:
            for ep in (1, 8):
                for tokens in (1024, 2048, 4096, 8192, 16384):
                    s = d[
                        (d.hidden_size == hidden)
                        & (d.inter_size == inter)
                        & (d.num_experts == experts)
                        & (d.topk == top_k)
                        & (d.moe_ep_size == ep)
                        & (d.num_tokens == tokens)
                    ]
                    per_tensor = s[s.moe_dtype == "fp8"].latency
                    block = s[s.moe_dtype == "fp8_block"].latency
                    if len(per_tensor) == 1 and len(block) == 1:
                        ratio = float(block.iloc[0]) / float(per_tensor.iloc[0])
                        pairs.append((fw, gpu, hidden, inter, experts, top_k, ep, tokens, ratio))
    print(f"{len(pairs)} pairs of block-scaled and per-tensor FP8 modules")
    print("| share | engine | pairs | median abs err of the ratio | bias |")
    print("|---:|---|---:|---:|---:|")

    def errors() -> dict[tuple[str, ...], list[float]]:
        errs: dict[tuple[str, ...], list[float]] = defaultdict(list)
        for fw, gpu, hidden, inter, experts, top_k, ep, tokens, ratio in pairs:
            shape = (tokens, experts, experts // ep, top_k, hidden, inter)
            tb, _ = moe_layer_time(gpu, _kernel_engine(fw), "fp8_block", *shape)
            tf, _ = moe_layer_time(gpu, _kernel_engine(fw), "fp8", *shape)
            errs[(fw,)].append(tb / tf / ratio - 1.0)
        return errs

    _share_scan("fp8_block", shares, {p[1] for p in pairs}, errors)


# AIConfigurator moe_dtype -> the precision label ``validate.moe_layer`` prices it with
_AIC_DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8_block", "w4a16_mxfp4": "mxfp4"}


def fixed_cost(engine: str, files: list[str]) -> None:
    """Print the fixed MoE-layer cost the tables measure beyond ``engine``'s per-kernel charges
    (module docstring): per table, expert parallelism and format, then the median over tables."""
    import pandas as pd

    from llm_codesign.validate.moe_layer import moe_layer_time

    per: dict[tuple[str, str], list[float]] = defaultdict(list)  # (EP?, dtype) -> table medians
    print(f"| table | EP | format | modules | fixed cost beyond {engine}'s kernels (us) |")
    print("|---|---|---|---:|---:|")
    for f in files:
        d = pd.read_parquet(f)
        d = d[(d.distribution == "balanced") & (d.moe_tp_size == 1) & (d.num_tokens <= 2)]
        d = d[d.moe_dtype.isin(list(_AIC_DTYPES))]
        if d.empty:
            continue
        fw = str(d.framework.iloc[0]).lower()
        gpu = _gpu(d.device.iloc[0])
        eng = _kernel_engine(fw).with_overrides(**_engine_constants(engine))
        rest: dict[tuple[str, str], list[float]] = defaultdict(list)
        for r in d.itertuples():
            shape = (
                int(r.num_tokens),
                int(r.num_experts),
                int(r.num_experts) // int(r.moe_ep_size),
            )
            dims = (int(r.topk), int(r.hidden_size), int(r.inter_size))
            t, _ = moe_layer_time(gpu, eng, _AIC_DTYPES[str(r.moe_dtype)], *shape, *dims)
            ep = "EP" if r.moe_ep_size > 1 else "no EP"
            rest[(ep, str(r.moe_dtype))].append(float(r.latency) * 1e-3 - t)
        for (ep, dtype), v in sorted(rest.items()):
            med = statistics.median(v) * 1e6
            per[(ep, dtype)].append(med)
            print(f"| {fw} {d.version.iloc[0]} {gpu} | {ep} | {dtype} | {len(v)} | {med:.1f} |")
    for ep in ("EP", "no EP"):  # BF16 and per-tensor FP8 tables pooled
        pooled = per.get((ep, "bfloat16"), []) + per.get((ep, "fp8"), [])
        if pooled:
            per[(ep, "bfloat16 + fp8 (pooled)")] = pooled
    print("\n| EP | format | tables | median over tables (us) | range (us) |")
    print("|---|---|---:|---:|---|")
    for (ep, dtype), v in sorted(per.items()):
        print(
            f"| {ep} | {dtype} | {len(v)} | {statistics.median(v):.2f} | "
            f"{min(v):.1f} .. {max(v):.1f} |"
        )


def path_fixed(kernel_path: str, dtype: str = "", max_tokens: int = 0) -> None:
    """Print the fixed chain per MoE layer that the bundled rows of a kernel path (of one
    format, at most ``max_tokens`` tokens, where given) measure (module docstring)."""
    from llm_codesign.moe_kernels import CUTLASS_FP4_LAYER_S, TRTLLM_GEN_LAYER_S
    from llm_codesign.specs.engine import load_engine
    from llm_codesign.validate.moe_layer import moe_layer_time

    bundled = {"trtllm_gen": TRTLLM_GEN_LAYER_S, "cutlass": CUTLASS_FP4_LAYER_S}[kernel_path]
    path = bundled_data("moe_layer.csv")
    rows = [
        r
        for r in csv.DictReader(path.open(encoding="utf-8"))
        if r["path"] == kernel_path
        and (not dtype or r["dtype"] == dtype)
        and (not max_tokens or int(r["tokens"]) <= max_tokens)
    ]
    implied: list[tuple[float, float, float]] = []  # (measured, priced without the chain, chain)
    for r in rows:
        eng = load_engine(r["framework"]).with_overrides(
            moe_kernels=kernel_path, expert_balancer="uniform"
        )
        gpu = match_gpu_name(r["gpu"])
        dims = [int(r[k]) for k in ("tokens", "experts", "experts_local", "top_k", "hidden")]
        t, parts = moe_layer_time(gpu, eng, r["dtype"], *dims, int(r["expert_intermediate"]))
        rest = t - parts["moe_routing"]
        measured = float(r["time_us"]) * 1e-6
        implied.append((measured, rest, measured - rest))
        print(f"tokens {r['tokens']:>4}: measured {measured * 1e6:6.1f} us, the layer without")
        print(f"  the chain {rest * 1e6:6.1f} us, chain {(measured - rest) * 1e6:5.1f} us")
    fit = statistics.median(c for _, _, c in implied)
    for label, value in (("median", fit), ("bundled", bundled)):
        errs = [(rest + value) / m - 1.0 for m, rest, _ in implied]
        print(
            f"{label} chain {value * 1e6:.1f} us over {len(implied)} rows: median error "
            f"{statistics.median(errs):+.1%}, median abs {statistics.median(map(abs, errs)):.1%}"
        )


def _engine_constants(engine: str) -> dict[str, float]:
    """``engine``'s per-kernel and HBM constants, and no fixed MoE cost (what is measured)."""
    from llm_codesign.specs.engine import load_engine

    e = load_engine(engine)
    return {
        "kernel_overhead_s": e.kernel_overhead_s,
        "hbm_efficiency_scale": e.hbm_efficiency_scale,
        "gemm_scale": e.gemm_scale,
        "moe_layer_overhead_s": 0.0,
    }


def _kernel_engine(fw: str) -> Any:
    """The engine constants that price an AIConfigurator module of framework ``fw``: its MoE
    kernel path, balanced routing (equally popular experts, as validate.moe_layer does)."""
    from llm_codesign.specs.engine import load_engine

    path = "cutlass" if fw == "trtllm" else "triton"
    return load_engine(fw).with_overrides(moe_kernels=path, expert_balancer="uniform")


def _share_scan(
    fmt: str,
    shares: list[float],
    gpus: set[str],
    errors: Callable[[], dict[tuple[str, ...], list[float]]],
) -> None:
    """For each candidate share of ``efficiency.grouped_gemm.<fmt>`` on ``gpus``, print a row of
    median |error| and bias per key of ``errors()``; the process-wide hardware cache is
    restored after."""
    from llm_codesign.specs.hardware import Efficiency, load_hardware

    saved = {gpu: dict(load_hardware(gpu).grouped_gemm_efficiency) for gpu in gpus}
    try:
        for share in shares:
            for gpu in saved:
                load_hardware(gpu).grouped_gemm_efficiency[fmt] = Efficiency(share, "fit")
            for key, e in sorted(errors().items()):
                a = [abs(x) for x in e]
                print(
                    f"| {share:.2f} | {' | '.join(key)} | {len(e)} | {statistics.median(a):.1%} | "
                    f"{statistics.median(e):+.1%} |"
                )
    finally:
        for gpu, table in saved.items():
            load_hardware(gpu).grouped_gemm_efficiency.clear()
            load_hardware(gpu).grouped_gemm_efficiency.update(table)


def mxfp4_share(files: list[str], shares: list[float]) -> None:
    """Print, per candidate share of ``efficiency.grouped_gemm.mxfp4`` (Hopper), the error of
    the predicted weight-only MXFP4 module times (``w4a16_mxfp4``: gpt-oss's shapes) against the
    measured ones, per engine and GPU: no EP, 1,024-16,384 tokens (where the experts are
    compute-bound), balanced routing. The tables hold no BF16 module of these shapes to pair with,
    so the times are compared directly. EP 8 modules are left out: vLLM's time as its no-EP ones
    (1.0766 against 1.0782 ms at 1,024 tokens: its collector computes every expert), and
    TensorRT-LLM's run 13-25% slower than the model at any share, with 1/8 of the pairs but the
    per-token routing and permute of every token: that residual is no part of the GEMMs' rate."""
    import pandas as pd

    from llm_codesign.validate.moe_layer import moe_layer_time

    points = []  # (engine, gpu, tokens, experts, ep, top_k, hidden, width, measured s)
    for f in files:
        d = pd.read_parquet(f)
        d = d[(d.distribution == "balanced") & (d.moe_tp_size == 1)]
        d = d[(d.moe_dtype == "w4a16_mxfp4") & (d.moe_ep_size == 1)]
        d = d[d.num_tokens.isin([1024, 2048, 4096, 8192, 16384])]
        if d.empty:
            continue
        fw = str(d.framework.iloc[0]).lower()
        gpu = _gpu(d.device.iloc[0])
        for r in d.itertuples():
            shape = (r.num_tokens, r.num_experts, r.moe_ep_size, r.topk, r.hidden_size)
            points.append((fw, gpu, *(int(x) for x in shape), int(r.inter_size), r.latency / 1e3))
    print(f"{len(points)} weight-only MXFP4 modules")
    print("| share | engine | GPU | modules | median abs err | bias |")
    print("|---:|---|---|---:|---:|---:|")

    def errors() -> dict[tuple[str, ...], list[float]]:
        errs: dict[tuple[str, ...], list[float]] = defaultdict(list)
        for fw, gpu, tokens, experts, ep, top_k, hidden, width, measured in points:
            shape = (tokens, experts, experts // ep, top_k, hidden, width)
            t, _ = moe_layer_time(gpu, _kernel_engine(fw), "mxfp4-a16", *shape)
            errs[(fw, gpu)].append(t / measured - 1.0)
        return errs

    _share_scan("mxfp4", shares, {p[1] for p in points}, errors)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--without-permute", action="store_true")
    ap.add_argument("--fp8-block-share", nargs="+", metavar="FILE", default=None)
    ap.add_argument("--mxfp4-share", nargs="+", metavar="FILE", default=None)
    ap.add_argument("--fixed-cost", nargs="+", metavar=("ENGINE", "FILE"), default=None)
    ap.add_argument("--trtllm-gen-fixed", action="store_true")
    ap.add_argument("--cutlass-fp4-fixed", action="store_true")
    ap.add_argument("--shares", default="1.0,0.7,0.65,0.6,0.55,0.5")
    args = ap.parse_args()
    if args.fp8_block_share:
        fp8_block_share(args.fp8_block_share, [float(x) for x in args.shares.split(",")])
        return
    if args.fixed_cost:
        if len(args.fixed_cost) < 2:
            ap.error("--fixed-cost takes an engine id and at least one moe_perf.parquet file")
        fixed_cost(args.fixed_cost[0], args.fixed_cost[1:])
        return
    if args.trtllm_gen_fixed:
        path_fixed("trtllm_gen")
        return
    if args.cutlass_fp4_fixed:
        path_fixed("cutlass", "nvfp4", 16)
        return
    if args.mxfp4_share:
        mxfp4_share(args.mxfp4_share, [float(x) for x in args.shares.split(",")])
        return
    if args.without_permute:
        layer = importlib.import_module("llm_codesign.validate.moe_layer")
        layer.MOE_LAYER_OPS = tuple(o for o in layer.MOE_LAYER_OPS if o != "moe_permute")
    path = bundled_data("moe_layer.csv")
    raw = list(csv.DictReader(path.open(encoding="utf-8")))
    rep = validate(path)
    groups: dict[str, list[float]] = defaultdict(list)
    for r in rep.rows:
        for c in _class(raw[r["row"]]):
            groups[c].append(r["error"])
    print("| class | rows | median abs err | bias | p90 abs err | max abs err |")
    print("|---|---:|---:|---:|---:|---:|")
    for c, errs in sorted(groups.items(), key=lambda kv: (kv[0] != "all", kv[0])):
        a = [abs(e) for e in errs]
        print(
            f"| {c} | {len(errs)} | {statistics.median(a):.1%} | {statistics.median(errs):+.1%} "
            f"| {float(np.quantile(a, 0.9)):.1%} | {max(a):.1%} |"
        )


if __name__ == "__main__":
    main()

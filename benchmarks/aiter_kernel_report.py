"""AMD GEMM kernels as AITER measured them, against the cost model (the AMD hardware files).

ROCm/aiter ships the results of its GEMM tuner: ``aiter/configs/*tuned_gemm*.csv`` and
``aiter/configs/model_configs/*tuned_gemm*.csv``, one row per shape (M, N, K) and GPU (``gfx``,
``cu_num``) with the best kernel's device time ``us`` (the tuner's ``perftest``: torch profiler
device time per call, argument copies rotated past the caches). Formats by file name: ``bf16``
(BF16), ``a8w8`` (FP8, per-token / per-channel scales), ``a8w8_blockscale`` (FP8 with 1x128 /
128x128 block scales), ``a4w4`` (MXFP4); batched GEMMs are left out. GPUs by (gfx, CUs):
gfx942 with 304 CUs is MI300X or MI325X (the same die; priced as MI300X), gfx950 with 256 CUs
MI355X or MI350X (priced as MI355X, whose MAMF BF16 1,565 TFLOPS the tables' best BF16 rate
matches); other GPUs are counted and skipped. A shape timed in several files counts once.

Three tables:
1. the HBM stream: BF16 GEMMs of at most 4 rows and at least 32 MiB of weights,
   t = t0 + bytes / B (``calibrate.streaming.streaming_fit``), B over the datasheet;
2. the best rate each format reaches, over the datasheet peak (the GEMM ceiling fraction);
3. predicted / measured - 1 by rows M, for the BF16 and FP8 GEMMs, with the bundled hardware
   file (only row tiles of 16 or fewer split K: ``gemm_tile.split_k_rows``) and with split-K
   allowed (the NVIDIA kernels' behaviour), each time plus the engine's per-kernel cost. The
   block-scaled FP8 GEMMs are priced as FP8 (their kernels' ceiling is lower, table 2, so they
   read slow at every M): what they show is how the error changes with M.

Fused MoE (``--moe``): the MoE tuner's tables (``*tuned_fmoe*.csv``;
csrc/ck_gemm_moe_2stages_codegen/gemm_moe_tune.py) time the two grouped GEMM stages (or one
fused stage) of a layer, ``us``, with the tokens routed at random (top-k of Gaussian scores
over ``expert`` experts, all on the GPU) and the sorting and activation quantization done
before the timed region. Formats: BF16, per-token FP8, block-scaled FP8 (1x128 / 128x128),
MXFP4 weights and activations. A result the table repeats at several token counts (the tuner
copying one tuned row) is left out. Each row is priced as the model's two grouped GEMMs
(``validate.moe_layer.moe_layer_time``'s experts_up and experts_down, the Triton path's
gathered rows and token tiles) plus two kernels' fixed cost; the scan prints, per GPU and
format, the bias at 1,024 tokens or more (where the GEMMs are compute-bound) for candidate
grouped shares of the class's dense ceiling (``efficiency.grouped_gemm``), and the bundled
file's.

AITER's fixed MoE time (``--fixed``, no clone needed: the bundled aiter_moe.csv): its layers of
1-16 tokens take 18.5 us or more however little they stream; ``moe_kernels.AITER_MOE_LAYER_S`` is
the median over those rows of each row's time less its priced GEMMs and kernels (the table prints
it pooled, per GPU and per format, then the error by token band without it and with it). Every
fused-MoE row is priced with it (``moe_time``).

Run: python benchmarks/aiter_kernel_report.py AITER_CLONE (or its aiter/configs folder)
[--write-table src/llm_codesign/data/validation/aiter_gemm.csv: the rows the tests read]
[--moe [--write-moe-table src/llm_codesign/data/validation/aiter_moe.csv]]
python benchmarks/aiter_kernel_report.py --fixed
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import statistics
from collections import Counter, defaultdict
from pathlib import Path

from llm_codesign.calibrate.streaming import streaming_fit
from llm_codesign.cost import gemm_time
from llm_codesign.moe_kernels import AITER_MOE_LAYER_S
from llm_codesign.ops import Op
from llm_codesign.specs.engine import EngineConstants, load_engine
from llm_codesign.specs.hardware import Efficiency, HardwareSpec, load_hardware
from llm_codesign.validate.tables import bundled_rows

GPUS = {("gfx942", "304"): "mi300x", ("gfx950", "256"): "mi355x"}
# format by file name, most specific first: (name part, format, compute class, weight bytes
# per element with scales, activation bytes)
FORMATS = (
    ("a8w8_blockscale", "fp8 block", "fp8", 1.0 + 4.0 / (128 * 128), 1.0 + 4.0 / 128),
    ("a4w4", "mxfp4", "mxfp4", 0.5 + 1.0 / 32, 0.5 + 1.0 / 32),
    ("a8w8", "fp8", "fp8", 1.0, 1.0),
    ("bf16", "bf16", "bf16", 2.0, 2.0),
)
MAX_STREAM_ROWS = 4
MIN_STREAM_BYTES = 32 * 2**20
BUCKETS = ((16, "M 1-16"), (64, "M 17-64"), (256, "M 65-256"), (2048, "M 257-2048"))


GPU_NAMES = {"mi300x": "MI300X", "mi355x": "MI355X"}
MOE_GPUS = {cu: gpu for (_, cu), gpu in GPUS.items()}
# the rows --write-table copies (data/validation/aiter_gemm.csv): every BF16 GEMM of gfx950 and
# every per-token FP8 GEMM of gfx942 (the block-scaled ones are priced as FP8, table 3)
TABLE_FORMATS = {("mi355x", "bf16"), ("mi300x", "fp8")}
TABLE_COLUMNS = (
    "source_id,gpu,kernel,dtype,m,n,k,batch_or_groups,tflops,time_us,bandwidth_gb_s,notes"
).split(",")


@dataclasses.dataclass(frozen=True)
class Kernel:
    gpu: str
    fmt: str
    cls: str
    w_bytes: float
    a_bytes: float
    m: int
    n: int
    k: int
    seconds: float
    kernel: str = ""
    where: str = ""


def read_kernels(root: Path) -> tuple[list[Kernel], Counter[str]]:
    files = sorted(p for p in root.rglob("*tuned*gemm*.csv") if "untuned" not in p.name)
    seen: dict[tuple, Kernel] = {}
    skipped: Counter[str] = Counter()
    for path in files:
        if "batched" in path.name:
            skipped["batched GEMM table"] += 1
            continue
        fmt = next((f for f in FORMATS if f[0] in path.name), None)
        if fmt is None:
            skipped[f"format not read: {path.name}"] += 1
            continue
        with path.open(newline="") as fh:
            for r in csv.DictReader(fh):
                gpu = GPUS.get((r.get("gfx", ""), r.get("cu_num", "")))
                if gpu is None:
                    skipped[f"gpu {r.get('gfx')} with {r.get('cu_num')} CUs"] += 1
                    continue
                try:
                    m, n, k = int(r["M"]), int(r["N"]), int(r["K"])
                    us = float(r["us"])
                except (KeyError, ValueError):
                    skipped["no shape or time"] += 1
                    continue
                if not us > 0.0:
                    skipped["no time (failed tuning)"] += 1
                    continue
                key = (gpu, fmt[1], m, n, k)
                if key not in seen:
                    where = f"{r['gfx']} {r['cu_num']} CUs; {path.name}; {r.get('libtype', '')}"
                    seen[key] = Kernel(
                        gpu, fmt[1], fmt[2], fmt[3], fmt[4], m, n, k, us * 1e-6,
                        r.get("kernelName", ""), where,
                    )  # fmt: skip
    return list(seen.values()), skipped


def stream_table(kernels: list[Kernel]) -> None:
    print("\n| GPU | BF16 streams | B TB/s | datasheet TB/s | B / datasheet | t0 us |")
    print("|---|---:|---:|---:|---:|---:|")
    for gpu in sorted({x.gpu for x in kernels}):
        hw = load_hardware(gpu)
        rows = [
            x
            for x in kernels
            if x.gpu == gpu
            and x.fmt == "bf16"
            and x.m <= MAX_STREAM_ROWS
            and x.n * x.k * x.w_bytes >= MIN_STREAM_BYTES
        ]
        if len(rows) < 8:
            print(f"| {gpu} | {len(rows)} | too few streams to fit | | | |")
            continue
        nbytes = [x.n * x.k * x.w_bytes + x.m * (x.k + x.n) * 2.0 for x in rows]
        fit = streaming_fit(nbytes, [x.seconds for x in rows], hw.hbm_bytes_per_s)
        print(
            f"| {gpu} | {fit.kernels} | {fit.bytes_per_s / 1e12:.2f} | "
            f"{hw.hbm_bytes_per_s / 1e12:.1f} | {fit.fraction:.3f} | {fit.fixed_s * 1e6:.1f} |"
        )


def ceiling_table(kernels: list[Kernel]) -> None:
    print("\n| GPU | format | kernels | best TFLOPS | shape (M x N x K) | / datasheet peak |")
    print("|---|---|---:|---:|---|---:|")
    for gpu, fmt in sorted({(x.gpu, x.fmt) for x in kernels}):
        hw = load_hardware(gpu)
        rows = [x for x in kernels if x.gpu == gpu and x.fmt == fmt]
        best = max(rows, key=lambda x: x.m * x.n * x.k / x.seconds)
        rate = 2.0 * best.m * best.n * best.k / best.seconds
        cls = best.cls if hw.supports(best.cls) else "fp8"
        print(
            f"| {gpu} | {fmt} | {len(rows)} | {rate / 1e12:,.0f} | "
            f"{best.m} x {best.n} x {best.k} | {rate / hw.peak_flops(cls):.3f} |"
        )


def _predicted(x: Kernel, hw: HardwareSpec, overhead_s: float, engine) -> float:  # noqa: ANN001
    op = Op(
        "gemm",
        "ffn",
        "gemm",
        1.0,
        m=float(x.m),
        n=float(x.n),
        k=float(x.k),
        groups=1.0,
        touched=1.0,
        w_bytes=x.w_bytes,
        a_bytes=x.a_bytes,
        o_bytes=2.0,
        compute_class=x.cls,
    )
    t, _, _ = gemm_time(op, hw, engine)
    return float(t) + overhead_s


def error_table(kernels: list[Kernel]) -> None:
    eng = load_engine("vllm")
    errs: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    for x in kernels:
        if x.fmt == "mxfp4":
            continue
        hw = load_hardware(x.gpu)
        bucket = next((b for top, b in BUCKETS if x.m <= top), "M > 2048")
        for label, spec in (
            ("bundled", hw),
            ("split-K allowed", dataclasses.replace(hw, split_k_rows=None)),
        ):
            e = _predicted(x, spec, eng.kernel_overhead_s, eng) / x.seconds - 1.0
            for b in (bucket, "all"):
                errs[(x.gpu, x.fmt, b, label)].append(e)
    print("\n| GPU | format | rows M | kernels | bundled: median error | median abs | ", end="")
    print("split-K allowed: median error | median abs |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    keys = sorted({k[:3] for k in errs})
    order = [b for _, b in BUCKETS] + ["M > 2048", "all"]
    for gpu, fmt, bucket in sorted(keys, key=lambda k: (k[0], k[1], order.index(k[2]))):
        a, b = errs[(gpu, fmt, bucket, "bundled")], errs[(gpu, fmt, bucket, "split-K allowed")]
        print(
            f"| {gpu} | {fmt} | {bucket} | {len(a)} | {statistics.median(a):+.1%} | "
            f"{statistics.median(map(abs, a)):.1%} | {statistics.median(b):+.1%} | "
            f"{statistics.median(map(abs, b)):.1%} |"
        )


def write_table(kernels: list[Kernel], out: Path, commit: str) -> int:
    """The kernels of ``TABLE_FORMATS`` as a GEMM table (data/validation/gemm.csv's columns):
    the time as published, TFLOPS = 2 M N K / time."""
    rows = sorted(
        (x for x in kernels if (x.gpu, x.fmt) in TABLE_FORMATS),
        key=lambda x: (x.gpu, x.fmt, x.n, x.k, x.m),
    )
    with out.open("w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(TABLE_COLUMNS)
        for x in rows:
            us = x.seconds * 1e6
            w.writerow(
                [
                    "aiter_tuned_gemm",
                    GPU_NAMES[x.gpu],
                    x.kernel,
                    x.fmt,
                    x.m,
                    x.n,
                    x.k,
                    "",
                    f"{2.0 * x.m * x.n * x.k / x.seconds / 1e12:.4g}",
                    f"{us:.4f}".rstrip("0").rstrip("."),
                    "",
                    f"ROCm/aiter @{commit}; {x.where}",
                ]
            )
    return len(rows)


MOE_FORMATS = {  # (q_type, activation, weight) -> the precision that prices it
    ("QuantType.No", "bfloat16", "bfloat16"): "bf16",
    ("QuantType.per_Token", "float8", "float8"): "fp8",
    ("QuantType.per_1x128", "float8", "float8"): "fp8_block",
    ("QuantType.per_1x32", "float4", "float4"): "mxfp4",
}
# (MXFP4 weights and activations: "mxfp4+mxfp4-w", as validate.moe_layer reads "mxfp4" as W4A16)
MOE_PRECISIONS = {
    "bf16": "bf16", "fp8": "fp8", "fp8_block": "fp8+fp8_block-w", "mxfp4": "mxfp4+mxfp4-w"
}  # fmt: skip
MOE_COLUMNS = (
    "source_id,gpu,dtype,tokens,experts,top_k,hidden,expert_intermediate,time_us,block_m,notes"
).split(",")
SHARES = (1.0, 0.8, 0.7, 0.65, 0.6, 0.55, 0.5, 0.45)
COMPUTE_BOUND_TOKENS = 1024


def read_moe(root: Path) -> list[dict[str, str]]:
    """The fused-MoE rows of known GPUs and formats, results repeated over token counts out."""
    rows = []
    for path in sorted(p for p in root.rglob("*tuned_fmoe*.csv") if "untuned" not in p.name):
        with path.open(newline="") as fh:
            for r in csv.DictReader(fh):
                gpu = MOE_GPUS.get(r["cu_num"])  # (the MoE tables name no gfx)
                act = next((t for t in ("bfloat16", "float8", "float4") if t in r["q_dtype_a"]), "")
                wt = next((t for t in ("bfloat16", "float8", "float4") if t in r["q_dtype_w"]), "")
                fmt = MOE_FORMATS.get((r["q_type"], act, wt))
                try:
                    us = float(r["us"])
                except ValueError:
                    us = 0.0
                if gpu is None or fmt is None or not us > 0.0:
                    continue
                shape = ("model_dim", "inter_dim", "expert", "topk")
                rows.append({
                    "gpu": gpu, "dtype": fmt, "tokens": r["token"], "time_us": r["us"],
                    **{k: r[k] for k in shape}, "block_m": r["block_m"], "file": path.name,
                })  # fmt: skip
    key = ("gpu", "dtype", "model_dim", "inter_dim", "expert", "topk")
    counts: dict[tuple, set[str]] = defaultdict(set)  # token counts a (shape, time) stands at
    for r in rows:
        counts[tuple(r[k] for k in key) + (r["time_us"],)].add(r["tokens"])
    seen: set[tuple] = set()
    out = []
    for r in rows:
        shape = tuple(r[k] for k in key)
        if len(counts[shape + (r["time_us"],)]) > 1 or shape + (r["tokens"],) in seen:
            continue
        seen.add(shape + (r["tokens"],))
        out.append(r)
    return out


def moe_time(
    r: dict[str, str], hw: HardwareSpec, eng: EngineConstants, fixed_s: float = AITER_MOE_LAYER_S
) -> float:
    """The model's time of one fused-MoE row: its two grouped GEMMs (the Triton path's gathered
    rows and token tiles, every expert equally popular), their kernels' fixed cost and AITER's
    fixed time per layer ``fixed_s`` (``moe_kernels.AITER_MOE_LAYER_S``)."""
    import importlib

    moe_layer = importlib.import_module("llm_codesign.validate.moe_layer")
    experts, top_k = int(r["expert"]), int(r["topk"])
    _, parts = moe_layer.moe_layer_time(
        hw, eng, MOE_PRECISIONS[r["dtype"]], int(r["tokens"]), experts, experts, top_k,
        int(r["model_dim"]), int(r["inter_dim"]),
    )  # fmt: skip
    gemms = parts.get("experts_up", 0.0) + parts.get("experts_down", 0.0)
    return gemms + 2 * eng.kernel_overhead_s + fixed_s


def moe_error(r: dict[str, str], hw: HardwareSpec, eng: EngineConstants) -> float:
    """Predicted / measured - 1 of one fused-MoE row (``moe_time``)."""
    return moe_time(r, hw, eng) / (float(r["time_us"]) * 1e-6) - 1.0


def bundled_moe_rows() -> list[dict[str, str]]:
    """The rows of the bundled table (data/validation/aiter_moe.csv) in the tuner's names."""
    names = {"experts": "expert", "top_k": "topk", "hidden": "model_dim"}
    names |= {"expert_intermediate": "inter_dim"}
    return [
        {names.get(k, k): (v.lower() if k == "gpu" else v) for k, v in r.items()}
        for r in bundled_rows("aiter_moe.csv")
    ]


def moe_engine() -> EngineConstants:
    """The constants the fused-MoE rows are priced with: SGLang's, on the Triton path (AITER's on
    AMD), every expert equally popular."""
    return load_engine("sglang").with_overrides(
        moe_kernels="triton", moe_kernels_weight_only="same", expert_balancer="uniform"
    )


FIXED_BANDS = ((1, 16), (17, 512), (COMPUTE_BOUND_TOKENS, 1 << 30))


def fixed_table(rows: list[dict[str, str]]) -> None:
    """AITER's fixed time per layer (``AITER_MOE_LAYER_S``): the median over the rows of 1-16
    tokens of each row's time less its priced GEMMs and kernels (pooled, per GPU, per format),
    then the error by token band without it and with the bundled value."""
    eng = moe_engine()
    hws = {g: load_hardware(g) for g in {r["gpu"] for r in rows}}
    base = [(r, moe_time(r, hws[r["gpu"]], eng, 0.0)) for r in rows]
    small = [(r, t) for r, t in base if int(r["tokens"]) <= 16]

    def resid(sel: list) -> str:
        us = statistics.median(float(r["time_us"]) - t * 1e6 for r, t in sel)
        return f"{us:.1f} us ({len(sel)} rows)"

    print("\nfixed time per layer, median over the rows of 1-16 tokens:", resid(small))
    for key in ("gpu", "dtype"):
        for v in sorted({r[key] for r, _ in small}):
            print(f"  {key} {v}: {resid([x for x in small if x[0][key] == v])}")
    print("\n| tokens | rows | fixed time | median abs err | bias |\n|---|---:|---:|---:|---:|")
    for lo, hi in FIXED_BANDS:
        band = [(r, t) for r, t in base if lo <= int(r["tokens"]) <= hi]
        for fixed in (0.0, AITER_MOE_LAYER_S):
            errs = [(t + fixed) / (float(r["time_us"]) * 1e-6) - 1.0 for r, t in band]
            label = f"{lo}+" if hi > 1 << 20 else f"{lo}-{hi}"
            med = statistics.median(abs(e) for e in errs)
            print(f"| {label} | {len(errs)} | {fixed * 1e6:.1f} us | {med:.1%} | "
                  f"{statistics.median(errs):+.1%} |")  # fmt: skip


def moe_table(rows: list[dict[str, str]]) -> None:
    print("\n| GPU | format | rows >= 1,024 tokens | bundled share | bundled bias | ", end="")
    print(" | ".join(f"share {s:g}" for s in SHARES) + " |")
    print("|---|---|---:|---:|---:|" + "---:|" * len(SHARES))
    for gpu, fmt in sorted({(r["gpu"], r["dtype"]) for r in rows}):
        big = [
            r for r in rows
            if (r["gpu"], r["dtype"]) == (gpu, fmt) and int(r["tokens"]) >= COMPUTE_BOUND_TOKENS
        ]  # fmt: skip
        if not big:
            continue
        hw, eng = load_hardware(gpu), moe_engine()
        cls = "fp8" if fmt == "fp8_block" else fmt
        own = hw.grouped_gemm_efficiency_for(cls).value
        cells = []
        for share in SHARES:
            shares = dict(hw.grouped_gemm_efficiency) | {cls: Efficiency(share, "scan")}
            spec = dataclasses.replace(hw, grouped_gemm_efficiency=shares)
            cells.append(f"{statistics.median(moe_error(r, spec, eng) for r in big):+.1%}")
        bias = statistics.median(moe_error(r, hw, eng) for r in big)
        print(f"| {gpu} | {fmt} | {len(big)} | {own:g} | {bias:+.1%} | " + " | ".join(cells) + " |")


def write_moe_table(rows: list[dict[str, str]], out: Path, commit: str) -> int:
    with out.open("w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(MOE_COLUMNS)
        for r in rows:
            w.writerow([
                "aiter_tuned_fmoe", GPU_NAMES[r["gpu"]], r["dtype"], r["tokens"], r["expert"],
                r["topk"], r["model_dim"], r["inter_dim"], r["time_us"], r["block_m"],
                f"ROCm/aiter @{commit}; {r['file']}",
            ])  # fmt: skip
    return len(rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("aiter", nargs="?", help="a clone of ROCm/aiter, or its aiter/configs folder")
    ap.add_argument("--write-table", type=Path, help="write the GEMM table (aiter_gemm.csv)")
    ap.add_argument("--commit", default="e4048607", help="the clone's commit, for the notes")
    ap.add_argument("--moe", action="store_true", help="the fused-MoE tables instead")
    ap.add_argument("--write-moe-table", type=Path, help="with --moe: write aiter_moe.csv")
    ap.add_argument(
        "--fixed", action="store_true", help="AITER's fixed MoE time, from the bundled table"
    )
    args = ap.parse_args()
    if args.fixed:
        fixed_table(bundled_moe_rows())
        return
    if args.aiter is None:
        ap.error("the AITER clone is required unless --fixed")
    root = Path(args.aiter)
    if (root / "aiter" / "configs").is_dir():
        root = root / "aiter" / "configs"
    if args.moe:
        rows = read_moe(root)
        print("fused-MoE rows read:", len(rows))
        if args.write_moe_table:
            n = write_moe_table(rows, args.write_moe_table, args.commit)
            print(f"wrote {n} rows to {args.write_moe_table}")
        else:
            moe_table(rows)
        return
    kernels, skipped = read_kernels(root)
    if not kernels:
        raise SystemExit(f"no AITER tuned GEMM rows of a known GPU under {root}")
    counts = Counter((x.gpu, x.fmt) for x in kernels)
    print("kernels read:", ", ".join(f"{g} {f} {n}" for (g, f), n in sorted(counts.items())))
    print("skipped:", ", ".join(f"{why} {n}" for why, n in skipped.most_common()) or "none")
    if args.write_table:
        n = write_table(kernels, args.write_table, args.commit)
        print(f"wrote {n} rows to {args.write_table}")
        return
    stream_table(kernels)
    ceiling_table(kernels)
    error_table(kernels)


if __name__ == "__main__":
    main()

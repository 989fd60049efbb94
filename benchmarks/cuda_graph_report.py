"""CUDA-graph batch padding (``specs.cuda_graphs``): what each engine captures, what the padding
does to the trtllm-bench rows that published their graph sizes, and the model against the
published effect of a finer set.

1. The capture sizes of each bundled engine's rule on an H200 at TP 8 (``max_batch_size`` 2,048
   for TensorRT-LLM), their count and the largest gap.
2. ``serving.csv``'s trtllm-bench rows (``trtllm_perf_v1.0``, ``trtllm_perf_devguide``: their
   ``llm_options.yml`` set ``enable_padding`` and the sizes 1, 2, 4, ..., 8192,
   ``validate.recipes.TRTLLM_BENCH_GRAPH_SIZES``): median error and median |error| per model
   kind and GPU generation, priced with those sizes and without padding (``none``).
3. NVIDIA/TensorRT-LLM PR #12895 (2026-04-09) and its tech blog 20 measured the +64 sizes
   against the powers of two at up to 1.3x the output throughput, aggregated (4 x GB200, tensor
   parallelism, NVFP4, TensorRT-LLM 1.3.0rc8, ISL/OSL 500/2000, concurrency above 128;
   DeepSeek-R1 and three other models). The model's output tok/s/GPU for DeepSeek-R1 there (TP 4,
   the experts expert-parallel, max_batch_size 2,048, the benchmark's own limits) under both sets.

Run: python benchmarks/cuda_graph_report.py (about a minute)
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np

from llm_codesign import load_hardware, load_model, validate
from llm_codesign.serving import evaluate
from llm_codesign.specs.cuda_graphs import graph_sizes
from llm_codesign.specs.engine import load_engine
from llm_codesign.specs.precision import parse_precision
from llm_codesign.validate.recipes import TRTLLM_BENCH_GRAPH_SIZES

SERVING = Path(__file__).resolve().parents[1] / "src/llm_codesign/data/validation/serving.csv"
TRTLLM_BENCH = ("trtllm_perf_v1.0", "trtllm_perf_devguide")
POW2 = ",".join(str(2**i) for i in range(12))  # the powers of two to 2,048 (+ 4-128 by x2)


def capture_table() -> None:
    hw = load_hardware("h200-sxm")
    print("| engine | rule | sizes | first | last | largest gap |")
    print("|---|---|---:|---|---|---:|")
    for eid in ("trtllm", "vllm", "sglang", "generic", "trtllm-trt"):
        eng = load_engine(eid, hw)
        s = graph_sizes(eng, hw, 8).astype(int).tolist()
        gap = max((b - a for a, b in zip(s, s[1:])), default=0)
        first, last = ", ".join(map(str, s[:6])), ", ".join(map(str, s[-3:]))
        print(f"| {eid} | {eng.cuda_graph_batches} | {len(s)} | {first} | {last} | {gap} |")


def trtllm_bench_rows() -> None:
    import csv
    import tempfile

    rows = [r for r in csv.DictReader(SERVING.open()) if r["source_id"] in TRTLLM_BENCH]
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    runs = {
        "published sizes": validate([f.name]).rows,
        "none": validate(
            [f.name], engine=load_engine("trtllm").with_overrides(cuda_graph_batches="none")
        ).rows,  # fmt: skip
    }
    Path(f.name).unlink()
    print(f"\ntrtllm-bench rows, sizes {', '.join(map(str, TRTLLM_BENCH_GRAPH_SIZES))}")
    print("| kind | generation | rows | published sizes: median / abs | none: median / abs |")
    print("|---|---|---:|---|---|")
    groups: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for how, recs in runs.items():
        for r in recs:
            kind = "moe" if load_model(r["model"]).moe else "dense"
            gen = load_hardware(r["gpu"]).architecture
            groups[(kind, gen)][how].append(r["error"])
    for (kind, gen), by in sorted(groups.items()):
        cells = []
        for how in runs:
            e = by[how]
            cells.append(f"{statistics.median(e) * 100:+.1f}% / "
                         f"{statistics.median(abs(x) for x in e) * 100:.1f}%")  # fmt: skip
        print(f"| {kind} | {gen} | {len(by['none'])} | {' | '.join(cells)} |")


def published_finer_set() -> None:
    m, hw, p = load_model("deepseek-r1"), load_hardware("gb200"), parse_precision("nvfp4")
    base = load_engine("trtllm", hw).with_overrides(max_batch_size=2048)
    clients = np.array([150, 200, 300, 384, 450, 600, 700, 800, 1000], dtype=float)
    out = {}
    for name, rule in (("powers of two", POW2), ("+64", "trtllm")):
        e = base.with_overrides(cuda_graph_batches=rule)
        r = evaluate(m, hw, p, e, tp=4, ep=4, isl=500, osl=2000, concurrency=clients,
                     benchmark_burst=True)  # fmt: skip
        out[name] = (np.asarray(r.output_tok_s_per_gpu), np.asarray(r.running_concurrency))
    print("\nDeepSeek-R1 NVFP4 on 4 x GB200, TP 4, 500/2000 (tech blog 20: up to 1.3x)")
    print("| clients | running (x2 / +64) | x2 tok/s/GPU | +64 tok/s/GPU | +64 / x2 |")
    print("|---:|---|---:|---:|---:|")
    (a, ra), (b, rb) = out["powers of two"], out["+64"]
    for i, c in enumerate(clients):
        print(f"| {c:.0f} | {ra[i]:.0f} / {rb[i]:.0f} | {a[i]:,.0f} | {b[i]:,.0f} | "
              f"{b[i] / a[i]:.3f} |")  # fmt: skip


if __name__ == "__main__":
    capture_table()
    trtllm_bench_rows()
    published_finer_set()

"""An independent check of the AMD hardware files: vLLM offline throughput on one and eight
MI300X, predicted by `validate` and compared (nothing here is fitted; the table is not part of
the calibration sets).

Source: the Azure AI benchmarking guide's results for Azure ND MI300X v5 (Azure/AI-benchmarking-
guide, read in the fork samuel-bohman/AI-benchmarking-guide, Azure_Results/ND_MI300X_v5_results.md
@3de0c294), "End-to-End Inference Workloads - vLLM": 1,000 requests per run, FP8 weights. The
harness (Benchmarks/AMD/LLMBenchmark.py @04e2ae7d) runs vLLM's benchmarks/benchmark_throughput.py
in the image rocm/vllm-dev:20241121-tuned with --quantization fp8 --kv-cache-dtype fp8
--num-scheduler-steps 10 --enable-chunked-prefill false --max-model-len 8192, and records word 6
of vLLM's "Throughput: R requests/s, T total tokens/s, O output tokens/s" line: the output
tokens per second of the whole tensor-parallel group. Its --max-num-seqs comes from a config the
results file does not show (the engine's own limits are used here).

Run: python benchmarks/amd_mi300x_offline.py
"""

from __future__ import annotations

import csv
import statistics
import tempfile
from pathlib import Path

from llm_codesign import validate

# (model, tensor parallel size) -> (ISL, OSL, output tokens/s of the group)
PUBLISHED = {
    ("Llama-3.1-8B", 1): [
        (128, 128, 18149), (128, 1024, 19579), (128, 2048, 16394),
        (500, 2000, 13559), (1024, 1024, 10995), (2048, 2048, 7356),
    ],
    ("Llama-3.1-70B", 8): [
        (128, 128, 9026), (128, 1024, 12461), (128, 2048, 12204),
        (500, 2000, 10877), (1024, 1024, 8256), (2048, 2048, 7421),
    ],
    ("Llama-3.1-405B", 8): [
        (128, 128, 2484), (128, 1024, 3846), (128, 2048, 3902),
        (500, 2000, 3407), (1024, 1024, 2363), (2048, 2048, 1840),
    ],
}  # fmt: skip
COLUMNS = (
    "source_id,model,gpu,num_gpus,precision,tp,pp,ep,dp,framework,isl,osl,"
    "concurrency_or_batch,metric,value,notes"
).split(",")


def write_table(path: Path) -> None:
    """The published rows in the serving tables' columns."""
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, COLUMNS)
        w.writeheader()
        for (model, tp), runs in PUBLISHED.items():
            for isl, osl, value in runs:
                w.writerow(
                    {
                        "source_id": "azure_nd_mi300x_v5",
                        "model": model,
                        "gpu": "AMD Instinct MI300X",
                        "num_gpus": tp,
                        "precision": "fp8/fp8/fp8",
                        "tp": tp,
                        "pp": 1,
                        "ep": "",
                        "dp": "",
                        "framework": "vLLM (benchmark_throughput)",
                        "isl": isl,
                        "osl": osl,
                        "concurrency_or_batch": "max-throughput offline (num_requests=1000)",
                        "metric": "output_tok_s_total",
                        "value": value,
                        "notes": "Azure ND MI300X v5, rocm/vllm-dev:20241121-tuned",
                    }
                )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "azure_mi300x.csv"
        write_table(table)
        rep = validate(str(table))
    print("| model | ISL/OSL | measured tok/s | predicted | error |")
    print("|---|---|---:|---:|---:|")
    for r in rep.rows:
        print(
            f"| {r['model']} | {r['isl']}/{r['osl']} | {r['measured']:,.0f} | "
            f"{r['predicted']:,.0f} | {r['error']:+.0%} |"
        )
    errs = [r["error"] for r in rep.rows]
    print(
        f"\n{len(errs)} rows: median |error| {statistics.median(abs(e) for e in errs):.1%}, "
        f"bias {statistics.median(errs):+.1%}; skipped: {rep.skipped or 'none'}"
    )


if __name__ == "__main__":
    main()

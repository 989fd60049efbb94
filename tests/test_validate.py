"""validate: mapping table, unit conversions, summary arithmetic on a hand-made CSV, skips."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from llm_codesign import (
    ParallelPlan,
    Workload,
    estimate,
    load_engine,
    load_hardware,
    load_model,
    parse_precision,
)
from llm_codesign.cli import main
from llm_codesign.errors import DataFileError
from llm_codesign.serving import evaluate
from llm_codesign.validate import REQUIRED_COLUMNS, bundled_data, map_row, summarize, validate

# the published measurements ship with the package (data/validation), so these tests run from
# any clone or install
GT = bundled_data("serving.csv").parent


def row(**kw):
    base = dict(
        source_id="s",
        model="Llama-3.1-8B",
        gpu="H200 SXM 141GB",
        num_gpus="1",
        precision="fp8/fp8/fp8",
        tp="1",
        pp="1",
        ep="",
        dp="",
        framework="TensorRT-LLM v1.0",
        isl="1024",
        osl="1024",
        concurrency_or_batch="64",
        metric="output_tok_s_per_gpu",
        value="1000",
        notes="",
    )
    base.update(kw)
    return base


def write_csv(path, rows):
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(REQUIRED_COLUMNS) + ["notes"])
        w.writeheader()
        w.writerows(rows)
    return path


def test_mapping_table_covers_every_model_and_gpu_name_in_the_calibration_files():
    for name in ("serving.csv", "aic_silicon_dense.csv"):
        with open(GT / name, newline="") as fh:
            for i, r in enumerate(csv.DictReader(fh)):
                m = map_row(i, r)
                assert not (
                    isinstance(m, str)
                    and (m.startswith("unknown model") or m.startswith("unknown gpu"))
                ), (name, i, m)


def test_mapping_rules():
    m = map_row(
        0,
        row(
            model="DeepSeek-R1-0528",
            gpu="B200 180GB",
            precision="fp4/?/fp8",
            tp="4",
            ep="4",
            dp="attn-DP4",
            concurrency_or_batch="max-throughput offline (num_requests=not listed)",
        ),
    )
    assert (m.model, m.hardware, m.precision, m.tp, m.ep, m.attention_dp, m.mode) == (
        "deepseek-r1",
        "b200",
        "nvfp4",
        4,
        4,
        True,
        "offline",
    )
    m = map_row(
        0,
        row(
            model="gpt-oss-120b",
            gpu="H200 SXM 141GB",
            precision="fp8/?/fp8 on Blackwell (Hopper: auto)",
        ),
    )
    assert m.precision.startswith("mxfp4-a16")  # MXFP4 checkpoint, no FP4 math on Hopper
    # the KV the table names for Hopper apart: "auto", the checkpoint's own BF16 (TensorRT-LLM
    # developer guide, gpt-oss options "dtype: fp8  # Hopper: use auto"); FP8 on Blackwell
    assert m.precision == "mxfp4-a16"
    blackwell = map_row(
        0,
        row(
            model="gpt-oss-120b",
            gpu="B200 180GB",
            precision="fp4/?/fp8 on Blackwell (Hopper: auto)",
        ),
    )
    assert blackwell.precision == "mxfp4-a8+fp8-kv"
    # InferenceX's SGLang launches pass no --kv-cache-dtype: DeepSeek-R1's FP8 checkpoint does
    # not quantize its KV, so the cache is BF16 (its dsr1_fp8_h200.sh); its TensorRT-LLM
    # launches set dtype fp8 (dsr1_fp8_h200_trt.sh), and other tables keep the precision's cache
    ix = dict(
        source_id="inferencex_api_fixture",
        model="DeepSeek-R1-0528",
        gpu="H200",
        precision="fp8/?/?",
        tp="8",
        concurrency_or_batch="16",
    )
    # (DeepSeek-R1's FP8 checkpoint stores 128x128 block-scaled weights: fp8_block-w)
    assert map_row(0, row(**ix, framework="sglang (lmsysorg/sglang:v0.5.12)")).precision == (
        "fp8+fp8_block-w+bf16-kv"
    )
    trt = map_row(0, row(**ix, framework="trt (nvcr.io/nvidia/tensorrt-llm)"))
    assert trt.precision == "fp8+fp8_block-w"
    other = dict(ix, source_id="aic_silicon_sample")
    assert map_row(0, row(**other, framework="sglang 0.5.9")).precision == "fp8+fp8_block-w"
    # a model whose own checkpoint is not block-scaled keeps the preset's per-tensor FP8
    llama = dict(other, model="Llama-3.1-70B", precision="fp8/fp8/bf16")
    assert map_row(0, row(**llama, framework="vllm 0.11")).precision == "fp8+bf16-kv"
    m = map_row(
        0,
        row(
            framework="TensorRT-LLM v0.9.0 (C++ gptSessionBenchmark, static batching)",
            concurrency_or_batch="32",
        ),
    )
    assert m.mode == "static" and m.load == 32
    m = map_row(0, row(isl="1K", osl="2K"))
    assert (m.isl, m.osl) == (1024, 2048)
    m = map_row(
        0,
        row(
            concurrency_or_batch="request rate 4 QPS",
            notes="500 requests; achieved Tput(req/s)=3.5",
        ),
    )
    assert m.mode == "rate" and m.load == 3.5
    assert (m.arrival, m.offered_rate, m.requests) == ("poisson", 4.0, 500)
    m = map_row(0, row(concurrency_or_batch="request rate INF (all at once)", notes="500 requests"))
    assert m.mode == "concurrency" and m.load == 500 and m.arrival == "burst"
    m = map_row(0, row(framework="vllm 0.12.0"))
    assert m.engine == "vllm"
    assert map_row(0, row(framework="TensorRT-LLM v0.17 (TRT engine)")).engine == "trtllm-trt"
    assert map_row(0, row(framework="trtllm 1.0.0rc3")).engine == "trtllm"
    assert map_row(0, row(framework="LMDeploy 0.9")).engine == "generic"  # pooled fit


@pytest.mark.parametrize(
    "kw,reason",
    [
        (dict(model="Bloom-176B"), "unknown model"),
        (dict(gpu="TPU v5e"), "unknown gpu"),
        (dict(tp=""), "plan not stated"),
        (dict(isl="dataset"), "isl/osl"),
        (dict(metric="joules"), "unsupported metric"),
        (dict(value="n/a"), "non-numeric"),
        (dict(metric="output_tok_s_p99"), "unsupported metric"),  # no percentile of a rate
        (dict(precision="fp4/fp4/fp8", gpu="H100 SXM 80GB"), "precision not runnable"),
    ],
)
def test_skip_reasons(kw, reason):
    assert map_row(0, row(**kw)).startswith(reason)


def test_unit_conversions_and_summary_arithmetic(tmp_path):
    wl = Workload(1024, 1024, 64)
    e = estimate("llama-3.1-8b", "h200-sxm", "fp8", ParallelPlan(tp=2), wl, engine="trtllm")
    # validate compares closed-loop benchmark rows with the benchmark's view (cohorts blended
    # in, serving.evaluate's benchmark_burst); estimate reports the steady state
    burst, steady = (
        evaluate(
            load_model("llama-3.1-8b"),
            load_hardware("h200-sxm"),
            parse_precision("fp8"),
            load_engine("trtllm"),
            tp=2,
            isl=1024,
            osl=1024,
            concurrency=64,
            benchmark_burst=b,
        )
        for b in (True, False)
    )
    assert float(steady.tpot_s) * 1e3 == pytest.approx(e.tpot_ms, rel=1e-12)
    burst_ttft_ms = float(burst.ttft_s) * 1e3
    tpot_ms = float(burst.tpot_s) * 1e3
    per_gpu = float(burst.output_tok_s_per_gpu)
    # measured values chosen so the errors are exactly +25%, -20% and 0% vs the prediction
    rows = [
        row(tp="2", num_gpus="2", metric="output_tok_s_total", value=repr(per_gpu * 2 / 1.25)),
        row(tp="2", num_gpus="2", metric="tpot_ms", value=repr(tpot_ms / 0.8)),
        row(tp="2", num_gpus="2", metric="itl_ms", value=repr(tpot_ms)),
        # request latency = TTFT + (OSL - 1) x TPOT, measured exactly as predicted
        row(
            tp="2",
            num_gpus="2",
            metric="request_latency_ms",
            value=repr(burst_ttft_ms + 1023 * tpot_ms),
        ),
        row(model="Bloom-176B"),
        row(model="Bloom-176B"),
    ]
    rep = validate(write_csv(tmp_path / "m.csv", rows))
    errs = {r["metric"]: r["error"] for r in rep.rows}
    assert errs["output_tok_s_total"] == pytest.approx(0.25, rel=1e-6)
    assert errs["tpot_ms"] == pytest.approx(-0.2, rel=1e-6)
    assert errs["itl_ms"] == pytest.approx(0.0, abs=1e-9)
    assert errs["request_latency_ms"] == pytest.approx(0.0, abs=1e-9)
    assert rep.skipped == [{"reason": "unknown model Bloom-176B", "count": 2}]
    s = rep.summary["known_load"]["tpot"]  # tpot and itl rows: |err| = 20 and 0
    assert (
        s["count"] == 2
        and s["median_abs_pct_error"] == pytest.approx(10.0)
        and s["signed_median_pct_error"] == pytest.approx(-10.0)
    )


def test_summary_percentiles_by_hand():
    recs = [
        {"source_id": "a", "metric": "ttft_ms", "mode": "concurrency", "error": e}
        for e in (-0.5, -0.1, 0.0, 0.2, 0.3)
    ]
    s = summarize(recs)["by_source_metric"]["a"]["ttft_ms"]
    assert s["median_abs_pct_error"] == pytest.approx(20.0)
    assert s["signed_median_pct_error"] == pytest.approx(0.0)
    assert s["p90_abs_pct_error"] == pytest.approx(float(np.percentile([50, 10, 0, 20, 30], 90)))


def test_bad_files(tmp_path):
    with pytest.raises(DataFileError, match="no such file"):
        validate(tmp_path / "missing.csv")
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    with pytest.raises(DataFileError, match="missing column"):
        validate(tmp_path / "bad.csv")


def test_cli_json_and_out(tmp_path):
    p = write_csv(tmp_path / "m.csv", [row(), row(metric="ttft_ms", value="50"), row(model="nope")])
    out = tmp_path / "rows.csv"
    r = CliRunner().invoke(main, ["validate", "--data", str(p), "--json", "--out", str(out)])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert {"rows", "skipped", "summary"} <= set(d)
    assert {"source_id", "model", "gpu", "metric", "measured", "predicted"} <= set(d["rows"][0])
    assert out.is_file() and len(out.read_text().splitlines()) == 3
    r = CliRunner().invoke(main, ["validate", "--data", str(tmp_path / "none.csv")])
    assert r.exit_code == 2 and "no such file" in r.output


def test_kernel_gemm_table_is_detected_and_predicted(tmp_path):
    p = tmp_path / "gemm.csv"
    p.write_text(
        "source_id,gpu,kernel,dtype,m,n,k,batch_or_groups,tflops,time_us,bandwidth_gb_s,notes\n"
        "t,H800 SXM5,FP8 dense,fp8,4096,7168,16384,,1000,,,\n"
        "t,H800 SXM5,dispatch,fp8,,,,,,77,,\n"
    )
    rep = validate(p)
    assert (
        len(rep.rows) == 1
        and rep.rows[0]["gpu"] == "h800-sxm"
        and rep.rows[0]["metric"] == "tflops"
    )
    # a large FP8 GEMM on H800 (= H100 compute) predicts near the MAMF ceiling,
    # 1402.6 TFLOPS x shape
    assert 1100 < rep.rows[0]["predicted"] < 1450
    assert rep.skipped == [{"reason": "no TFLOPS (bandwidth or latency row)", "count": 1}]


def test_name_matching_beyond_the_alias_table():
    from llm_codesign.validate import match_gpu_name, match_model_name

    assert match_model_name("meta-llama/Llama-3.1-70B-Instruct-FP8") == "llama-3.1-70b"
    assert match_model_name("nvidia/DeepSeek-R1-FP4") == "deepseek-r1"
    assert match_model_name("Qwen3-235B-A22B-FP8") == "qwen3-235b-a22b"
    assert match_model_name("Kimi-K2") is None
    assert match_gpu_name("NVIDIA H100 80GB HBM3") == "h100-sxm"
    assert match_gpu_name("GB200 NVL72") == "gb200"
    assert match_gpu_name("B200-SXM-180GB") == "b200"
    # different SKUs are not silently mapped to the SXM datasheets
    assert match_gpu_name("H100 PCIe") is None and match_gpu_name("H200 NVL") is None
    assert match_gpu_name("A100-SXM4-40GB") is None
    # the longest chip wins: GH200 is not an H200 or H20, GB300 not a B300
    assert (
        match_gpu_name("NVIDIA GH200 144GB") == "gh200" and match_gpu_name("GB300 rack") == "gb300"
    )
    assert match_gpu_name("NVIDIA H20 96GB HBM3") == "h20"


def test_gpu_and_model_names_live_in_the_data_files():
    """The validate package names no GPU or model: ids, aliases and chip names come from the
    data files, so adding a GPU means adding one hardware file."""
    import ast
    import importlib

    from llm_codesign.specs.hardware import bundled_hardware, hardware_chip_table
    from llm_codesign.specs.model import bundled_models

    v = importlib.import_module("llm_codesign.validate")  # the package re-exports the function
    strings = []
    for path in sorted(Path(v.__file__).parent.glob("*.py")):  # every module of the package
        tree = ast.parse(path.read_text())
        docstrings = {
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef))
            and n.body
            and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)
        }
        strings += [
            n.value.lower()
            for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
        ]
    assert strings  # the package's modules were read
    names = (
        {hid for hid in bundled_hardware()}
        | {c for c, _, _ in hardware_chip_table()}
        | set(bundled_models())
    )
    assert not [(s, n) for s in strings for n in names if n in s]
    # every bundled GPU is reachable from a free-text name through its own file
    assert {hid for _, hid, _ in hardware_chip_table()} == set(bundled_hardware())


def test_disaggregated_rows_are_skipped_with_a_reason():
    assert map_row(0, row(notes="disaggregated: 4 prefill + 8 decode GPUs")).startswith(
        "disaggregated"
    )


def test_validate_runs_on_the_shipped_measurements_with_no_data_argument():
    """`llm-codesign validate` with no --data predicts the published measurements the package
    ships (data/validation), so it works after `pip install` outside the repository."""
    r = CliRunner().invoke(main, ["validate", "--worst", "0", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert len(doc["rows"]) > 3000  # serving, aic dense/MoE and InferenceX rows
    assert {row["source_id"] for row in doc["rows"]} >= {"aic_silicon_sample"}
    assert bundled_data("SOURCES.md").is_file()

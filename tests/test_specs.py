"""Hardware, precision, plan and workload specs."""

import csv

import pytest
import yaml

from llm_codesign import ParallelPlan, Workload, load_hardware, load_model, parse_precision
from llm_codesign.calibrate.streaming import streaming_fit
from llm_codesign.errors import SpecError, UnknownIdError, UnsupportedError
from llm_codesign.specs.hardware import bundled_hardware
from llm_codesign.validate import bundled_data

REQUIRED_GPUS = [
    "a100-sxm-80gb",
    "h100-sxm",
    "h200-sxm",
    "h20",
    "b200",
    "b300",
    "gb200",
    "gb300",
    "mi300x",
    "mi325x",
    "mi355x",
    "l40s",
    "rtx-pro-6000",
]


def test_required_gpus_bundled_with_sources():
    hws = bundled_hardware()
    for gid in REQUIRED_GPUS:
        hw = hws[gid]
        assert hw.sources, gid
        assert 0 < hw.hbm_efficiency.value <= 1 and hw.hbm_efficiency.source
        for e in hw.gemm_efficiency.values():
            assert 0 < e.value <= 1 and e.source


def test_datasheet_numbers():
    # reference/gpus.md: H200 989 / 1979 dense TFLOPS, 141 GB at 4.8 TB/s, NVLink 450 GB/s per
    # direction
    h200 = load_hardware("h200-sxm")
    assert h200.peak_flops("bf16") == pytest.approx(989e12, rel=1e-3)
    assert h200.peak_flops("fp8") == pytest.approx(1979e12, rel=1e-3)
    assert h200.hbm_bytes == 141 * 2**30 and h200.hbm_bytes_per_s == 4.8e12
    assert h200.scaleup_bytes_per_s == 450e9
    # GB300 dense FP4 15 PF (Blackwell Ultra), B200 9 PF; GB200 NVL72 domain of 72
    assert load_hardware("gb300").peak_flops("nvfp4") == 15e15
    assert load_hardware("b200").peak_flops("nvfp4") == 9e15
    assert load_hardware("gb200").scaleup_domain_size == 72


def test_nvfp4_on_hopper_is_an_error_not_an_invented_peak():
    h100 = load_hardware("h100-sxm")
    with pytest.raises(UnsupportedError, match="no native nvfp4"):
        h100.peak_flops("nvfp4")
    assert h100.with_overrides(emulate=True).compute_rate_class("nvfp4") == "fp8"


def test_what_if_gpu_file(tmp_path):
    src = load_hardware("h200-sxm")
    data = yaml.safe_load(
        open(
            next(
                p
                for p in __import__("pathlib")
                .Path(__import__("llm_codesign").__file__)
                .parent.glob("data/hardware/h200-sxm.yaml")
            )
        )
    )
    data["id"] = "h200-8tb"
    data["hbm_bytes_per_s"] = "8e12"  # YAML 1.1 string form is accepted as a number
    p = tmp_path / "h200-8tb.yaml"
    p.write_text(yaml.safe_dump(data))
    hw = load_hardware(str(p))
    assert hw.hbm_bytes_per_s == 8e12 and hw.peak_flops("bf16") == src.peak_flops("bf16")
    data["bogus_key"] = 1
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(SpecError, match="bogus_key"):
        load_hardware(str(p))
    data.pop("bogus_key")
    data["name_match"] = {"chip": "H200 SXM"}  # must be the squashed form, h200sxm
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(
        SpecError,
        match=r"h200-8tb.yaml: name_match: 'H200 SXM' must be lower-case letters and digits",
    ):
        load_hardware(str(p))
    data["name_match"] = {"chip": "h200", "unles": ["nvl"]}
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(SpecError, match=r"name_match: unknown field\(s\) 'unles'"):
        load_hardware(str(p))
    data.pop("name_match")
    data["efficiency"]["hbm"]["value"] = 1.5
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(SpecError, match="fraction"):
        load_hardware(str(p))


def test_unknown_hardware():
    with pytest.raises(UnknownIdError, match="unknown hardware 'h300'"):
        load_hardware("h300")


def test_precision_bytes_include_scale_overhead():
    # reference/formats.md s3: NVFP4 4.5 bits, MXFP4 4.25, INT4 g128 asym 4.15625
    assert parse_precision("nvfp4").weight_bytes == 4.5 / 8
    assert parse_precision("mxfp4").weight_bytes == 4.25 / 8
    assert parse_precision("w4a16").weight_bytes == pytest.approx(4.15625 / 8)
    assert parse_precision("fp8").weight_bytes == 1.0
    assert parse_precision("bf16").kv_bytes == 2.0


def test_precision_compute_class_and_overrides():
    assert parse_precision("w4a16").compute_class == "bf16"
    assert parse_precision("nvfp4").compute_class == "nvfp4"
    assert parse_precision("fp8").compute_class == "fp8"
    p = parse_precision("bf16+fp8-kv")
    assert p.kv_bytes == 1.0 and p.weight_bytes == 2.0
    for bad, needle in (
        ("fp7", "unknown precision 'fp7'"),
        ("bf16+fp8", "override 'fp8' must be FORMAT-ROLE"),
        ("bf16+fp8-x", "override 'fp8-x' must be FORMAT-ROLE"),
        ("", "non-empty string"),
        ("bf16+zz-kv", "unknown format 'zz'"),
    ):
        with pytest.raises(SpecError, match=needle):
            parse_precision(bad)


def test_plan_validation_shows_arithmetic():
    m = load_model("llama-3.1-70b")  # 64 heads, 8 KV heads, F = 28672
    with pytest.raises(SpecError, match="tp=3 does not divide num_attention_heads=64"):
        ParallelPlan(tp=3).validate_for(m)
    with pytest.raises(SpecError, match="ep=2 but llama-3.1-70b is dense"):
        ParallelPlan(tp=2, ep=2).validate_for(m)
    with pytest.raises(SpecError, match=r"8 x 2 x 1 = 16 GPUs but only 8"):
        ParallelPlan(tp=8, pp=2).validate_for(m, num_gpus_available=8)
    with pytest.raises(SpecError, match="ep=3 must divide tp=4"):
        ParallelPlan(tp=4, ep=3)
    with pytest.raises(SpecError, match="positive integer"):
        ParallelPlan(tp=0)
    ParallelPlan(tp=16).validate_for(m)  # TP beyond KV heads replicates them: allowed
    ds = load_model("deepseek-r1")
    # ep 3 does not divide the 256 experts: the group holds 258 slots (specs.plan.expert_slots)
    ParallelPlan(tp=3, ep=3, attention_dp=True).validate_for(ds)


def test_workload_validation():
    with pytest.raises(SpecError, match="exceeds the supported maximum"):
        Workload(isl=10**9, osl=1)
    for bad, field in (
        (dict(isl=0, osl=1), "isl"),
        (dict(isl=1, osl=-1), "osl"),
        (dict(isl=1, osl=1, concurrency=0), "concurrency"),
    ):
        with pytest.raises(
            SpecError, match=f"workload: {field} must be a positive integer, got {bad[field]}"
        ):
            Workload(**bad)


def test_engine_defaults_live_only_in_base_yaml(tmp_path):
    import dataclasses

    from llm_codesign.specs.engine import EngineConstants, load_engine

    # the dataclass declares the constants without values: base.yaml is their one home
    constants = [f for f in dataclasses.fields(EngineConstants) if f.name not in ("id", "sources")]
    assert constants and all(f.default is dataclasses.MISSING for f in constants)
    # the engine used when none is named is a real one (TensorRT-LLM), not the physics base
    assert load_engine() == load_engine("default") == load_engine("trtllm")
    default = load_engine("base")
    assert (
        default.id == "base"
        and default.hbm_efficiency_scale == 1.0
        and default.max_num_tokens == 8192
    )
    # a user engine file gives what it changes; the rest comes from base.yaml
    p = tmp_path / "mine.yaml"
    p.write_text(yaml.safe_dump({"id": "mine", "step_overhead_s": 1e-3}))
    mine = load_engine(str(p))
    assert mine.step_overhead_s == 1e-3
    assert mine.with_overrides(id="base", step_overhead_s=default.step_overhead_s) == default
    # the renamed constant is a clear error naming the file and the replacement
    p.write_text(yaml.safe_dump({"id": "old", "mem_efficiency": 0.8}))
    with pytest.raises(SpecError, match="hbm_efficiency_scale") as exc:
        load_engine(str(p))
    assert str(p) in str(exc.value) and "hbm_efficiency_scale" in str(exc.value)
    p.write_text(yaml.safe_dump({"id": "old", "moe_imbalance": 1.2}))
    with pytest.raises(SpecError, match="'moe_imbalance' was replaced by 'routing_skew'"):
        load_engine(str(p))
    p.write_text(yaml.safe_dump({"id": "bad", "moe_comm": "smoke"}))
    with pytest.raises(SpecError, match="moe_comm='smoke' is not a known kernel family; allowed"):
        load_engine(str(p))
    p.write_text(yaml.safe_dump({"id": "big", "hbm_efficiency_scale": 2.0}))
    with pytest.raises(SpecError, match="hbm_efficiency_scale=2.0 must be a positive multiplier"):
        load_engine(str(p))


def test_engine_defaults_file_must_give_every_constant():
    from llm_codesign.specs import engine

    data = yaml.safe_load((engine._dir() / "base.yaml").read_text())
    data.pop("kernel_overhead_s")
    with pytest.raises(SpecError, match=r"base.yaml: missing required field 'kernel_overhead_s'"):
        engine._from_mapping(data, "base.yaml", None)


def test_specs_import_nothing_above_specs():
    """specs is the bottom layer: its modules import only specs, errors and formats (checked on
    the source, function-level imports included, and at run time without the package's
    ``__init__``, which loads the whole API)."""
    import ast
    import subprocess
    import sys
    from pathlib import Path

    import llm_codesign.specs

    allowed = ("llm_codesign.specs", "llm_codesign.errors", "llm_codesign.formats")
    for path in Path(llm_codesign.specs.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = "llm_codesign.specs" if node.level == 1 else "llm_codesign"
                target = f"{base}.{node.module}" if node.module else base
                names = [target] if node.module else [f"{base}.{a.name}" for a in node.names]
                assert all(n.startswith(allowed) for n in names), (path.name, names)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                mod = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                assert not (mod or "").startswith("llm_codesign"), (path.name, mod)
    code = (
        "import importlib.util, sys, types\n"
        "loc = importlib.util.find_spec('llm_codesign').submodule_search_locations\n"
        "pkg = types.ModuleType('llm_codesign'); pkg.__path__ = list(loc); "
        "sys.modules['llm_codesign'] = pkg\n"
        "import llm_codesign.specs\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('llm_codesign.'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "llm_codesign.specs.hardware" in out and all(m.startswith(allowed) for m in out), out


def test_the_default_engine_runs_on_the_gpus_vendor():
    from llm_codesign.specs.engine import ENGINE_VENDORS, load_engine

    # TensorRT-LLM is CUDA only: an AMD GPU gets vLLM when no engine is named; NVIDIA keeps
    # TensorRT-LLM (and no GPU changes what an explicit runnable engine is)
    assert load_engine(None, load_hardware("mi355x")).id == "vllm"
    assert load_engine("default", load_hardware("mi300x")).id == "vllm"
    assert load_engine(None, load_hardware("h200-sxm")).id == "trtllm"
    assert load_engine(None).id == "trtllm"
    assert load_engine("sglang", load_hardware("mi325x")).id == "sglang"
    for engine, vendors in ENGINE_VENDORS.items():
        for gpu in ("mi355x", "b200"):
            hw = load_hardware(gpu)
            if hw.vendor in vendors:
                assert load_engine(engine, hw).id == engine
            else:
                with pytest.raises(UnsupportedError, match="use one of vllm, sglang"):
                    load_engine(engine, hw)


def test_estimate_on_an_amd_gpu_names_an_engine_that_runs_there():
    from llm_codesign import estimate

    e = estimate("llama-3.1-8b", "mi300x", "bf16", ParallelPlan(), Workload(1024, 128, 4))
    assert e.engine.id == "vllm" and e.tpot_ms > 0
    with pytest.raises(UnsupportedError, match="trtllm runs on nvidia GPUs only"):
        estimate(
            "llama-3.1-8b",
            "mi300x",
            "bf16",
            ParallelPlan(),
            Workload(1024, 128, 4),
            engine="trtllm",
        )


def test_a_deployment_read_for_an_amd_gpu_keeps_to_engines_that_run_there():
    from llm_codesign import estimate
    from llm_codesign.specs.engine import load_engine

    # constants already loaded (a deployment's engine, a caller's object) are checked too
    with pytest.raises(UnsupportedError, match="trtllm runs on nvidia GPUs only"):
        load_engine(load_engine("trtllm"), load_hardware("mi355x"))
    e = estimate("llama-3.1-8b", "mi355x", "bf16", engine=load_engine("sglang"))
    assert e.engine.id == "sglang"


def test_amd_hbm_fractions_follow_their_published_measurements():
    """MI300X's weight-stream fraction is its streaming read kernel's 4,199 of 5,300 GB/s
    (RRZE-HPC/gpu-benches gpu-stream/mi300x.txt); MI325X and MI355X scale it by the ratio of
    their memcopy bandwidth fractions in one test (rocprofiler-compute's expected values:
    MI300X 3,910.62 of 5,300, MI325X 4,287.31 of 6,000, MI350 series 5,690.42 of 8,000 GB/s)."""
    read = 4199.0 / 5300.0
    assert load_hardware("mi300x").hbm_efficiency.value == pytest.approx(read, abs=5e-4)
    base = 3910.62 / 5300.0
    hw = load_hardware("mi325x")
    assert hw.hbm_bytes_per_s == pytest.approx(6000.0e9)
    assert hw.hbm_efficiency.value == pytest.approx(read * (4287.31 / 6000.0) / base, abs=5e-4)
    # MI355X's own weight streams: AITER's tuned BF16 GEMMs of at most 4 rows and at least
    # 32 MiB of weights on gfx950 (data/validation/aiter_gemm.csv), t = t0 + bytes / B
    rows = [
        r
        for r in csv.DictReader(bundled_data("aiter_gemm.csv").open())
        if r["gpu"] == "MI355X" and r["dtype"] == "bf16" and int(r["m"]) <= 4
    ]
    shapes = [(int(r["m"]), int(r["n"]), int(r["k"]), float(r["time_us"])) for r in rows]
    streams = [(m, n, k, us) for m, n, k, us in shapes if 2 * n * k >= 32 * 2**20]
    nbytes = [2.0 * n * k + 2.0 * m * (n + k) for m, n, k, _ in streams]
    fit = streaming_fit(nbytes, [us * 1e-6 for *_, us in streams], 8.0e12)
    hw = load_hardware("mi355x")
    assert fit.kernels >= 90
    assert hw.hbm_efficiency.value == pytest.approx(fit.fraction, abs=5e-4)
    for gpu in ("mi300x", "mi325x", "mi355x"):
        assert "ASSUMPTION" not in load_hardware(gpu).hbm_efficiency.source
    # MI355X's FP8 and MXFP4 ceilings: the best of AITER's tuned shapes, 2,997 of 5,000 and
    # 5,806 of 10,100 TFLOPS (benchmarks/aiter_kernel_report.py)
    assert hw.gemm_efficiency_for("fp8").value == pytest.approx(2997.0 / 5000.0, abs=5e-4)
    assert hw.gemm_efficiency_for("mxfp4").value == pytest.approx(5806.0 / 10100.0, abs=5e-4)
    # MI300X's FP8 GEMM ceiling: hipBLASLt's best measured 1,159.5 TFLOPS of 2,614.9
    fp8 = load_hardware("mi300x").gemm_efficiency_for("fp8")
    assert fp8.value == pytest.approx(1159.54 / 2614.9, abs=5e-4)
    # MI325X (the same die): that fraction scaled by the BF16 MAMF fractions 0.604 / 0.511
    sib = load_hardware("mi325x").gemm_efficiency_for("fp8").value
    assert sib == pytest.approx(0.443 * 0.604 / 0.511, abs=5e-4)

"""Microbenchmarks on this machine's CPU (tiny sizes; structure and sanity, not speed), the
calibrate command end to end, collectives over two gloo processes, and CUDA runs (gpu)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from llm_codesign import api, load_hardware
from llm_codesign.calibrate import collectives, compare_profile, load_profile
from llm_codesign.calibrate import device as dev_
from llm_codesign.calibrate import microbench as mb
from llm_codesign.cli import main
from llm_codesign.cost import gemm_time
from llm_codesign.errors import SpecError, UnsupportedError
from llm_codesign.ops import Op
from llm_codesign.specs.engine import load_engine

torch = pytest.importorskip("torch")

CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="no CUDA device")


def tiny_config(device="cpu", **kw) -> mb.BenchConfig:
    base: dict = {
        "device": device,
        "dtypes": ("bf16",),
        "copy_bytes": (2**20, 2**23, 2**26),
        "gemm_shapes": (
            (1, 256, 256),
            (16, 256, 256),
            (128, 256, 256),
            (128, 260, 256),
            (256, 512, 512),
        ),
        "attention_decode": (
            mb.AttentionShape(1, 4, 2, 32, 256),
            mb.AttentionShape(2, 4, 2, 32, 512),
        ),
        "attention_prefill": (
            mb.AttentionShape(1, 4, 2, 32, 64),
            mb.AttentionShape(1, 4, 2, 32, 128),
        ),
        "budget_s": 20.0,
        "warmup": 1,
        "min_repeats": 3,
        "max_repeats": 5,
        "min_sample_s": 5e-4,
        "rotate_bytes": 2**22,
        "max_alloc_bytes": 2**28,
    }
    base.update(kw)
    return mb.BenchConfig(**base)


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    """One tiny CPU calibration shared by the tests below (single thread: steady on a shared
    CPU)."""
    out = tmp_path_factory.mktemp("cal") / "cpu.json"
    profile = mb.calibrate("cpu", out=out, config=tiny_config(), threads=1)
    return profile, out


def test_cpu_profile_structure_and_sanity(cpu_run):
    profile, out = cpu_run
    m = profile.measurements
    assert [r["bytes"] for r in m["copy"]] == [2**20, 2**23, 2**26]
    assert (
        len(m["gemm"]) == 5 and len(m["attention_decode"]) == 2 and len(m["attention_prefill"]) == 2
    )
    for kind in ("copy", "gemm", "attention_decode", "attention_prefill"):
        for r in m[kind]:
            assert r["seconds"] > 0 and all(t > 0 for t in r["times_s"])
            assert r["seconds"] == pytest.approx(float(np.median(r["times_s"])))
    copy_s = [r["seconds"] for r in m["copy"]]
    assert copy_s == sorted(copy_s)  # 8x more bytes never copies faster
    assert m["gemm"][-1]["flops_per_s"] > m["gemm"][0]["flops_per_s"]  # 256x512x512 beats a GEMV
    assert profile.device.kind == "cpu" and profile.device.torch_version == torch.__version__
    assert profile.device.compute_units == 1 and profile.settings["timer"] == "perf_counter"
    assert profile.settings["skipped"] == []
    # the file round-trips
    again = load_profile(out)
    assert again.to_dict() == profile.to_dict()


def test_cpu_profile_is_a_spec_and_changes_predictions(cpu_run):
    from llm_codesign import load_model

    profile, out = cpu_run
    hw = load_hardware(str(out))
    assert (
        hw.architecture == "cpu"
        and hw.peak_flops("bf16") == profile.derived["peak_flops_per_s"]["bf16"]
    )
    bare = hw.with_overrides(gemm_table=None)
    eng = load_engine("base").with_overrides(id="t")
    r = profile.measurements["gemm"][1]
    op = Op("g", "ffn", "gemm", 1.0, m=float(r["m"]), n=float(r["n"]), k=float(r["k"]))
    with_table = float(gemm_time(op, hw, eng)[1])
    assert with_table == pytest.approx(r["seconds"], rel=1e-6)  # the measurement itself
    assert with_table != pytest.approx(float(gemm_time(op, bare, eng)[1]), rel=1e-3)
    e = api.estimate("llama-3.1-8b", str(out), "bf16", explain=False)
    # roofline floor: a decode step reads every BF16 weight but the embedding table (a row
    # gather) at most at the measured copy bandwidth
    m = load_model("llama-3.1-8b")
    assert (
        e.tpot_ms / 1e3 >= 2 * (m.total_params - m.vocab_size * m.hidden_size) / hw.hbm_bytes_per_s
    )


def test_compare_on_cpu_profile(cpu_run):
    _, out = cpu_run
    res = compare_profile(out)
    assert {r["benchmark"] for r in res.rows} == {
        "copy",
        "gemm",
        "attention_decode",
        "attention_prefill",
    }
    assert all(r["predicted_s"] > 0 and np.isfinite(r["error_pct"]) for r in res.rows)
    self_check = compare_profile(out, overlay=True)
    assert all(abs(r["error_pct"]) < 1e-6 for r in self_check.rows if r["benchmark"] == "gemm")


def test_budget_skips_and_records(tmp_path):
    cfg = tiny_config(
        budget_s=1e-4, copy_bytes=(2**20, 2**21), attention_decode=(), attention_prefill=()
    )
    seen = []
    profile = mb.calibrate(
        "cpu", config=cfg, progress=lambda label, done, total: seen.append((done, total))
    )
    assert (
        len(profile.measurements["copy"]) == 1 and len(profile.measurements["gemm"]) == 1
    )  # first of each
    assert any("time budget" in s for s in profile.settings["skipped"])
    assert seen[-1] == (7, 7)


def test_cli_calibrate_quick_then_compare(tmp_path):
    out = tmp_path / "quick.json"
    r = CliRunner().invoke(
        main,
        [
            "calibrate",
            "--device",
            "cpu",
            "--quick",
            "--budget-s",
            "4",
            "--threads",
            "1",
            "--no-progress",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output)
    assert summary["counts"]["gemm"] >= 1 and summary["derived"]["hbm_bytes_per_s"] > 0
    data = json.loads(out.read_text())
    assert data["profile_version"] == 1 and data["device"]["kind"] == "cpu"
    r = CliRunner().invoke(main, ["calibrate", "--compare", str(out), "--json"])
    assert r.exit_code == 0, r.output
    assert set(json.loads(r.output)["summary"]) >= {"copy", "gemm"}


@pytest.mark.skipif(CUDA, reason="CUDA is available here")
def test_cuda_requested_without_cuda_is_one_line(tmp_path):
    r = CliRunner().invoke(
        main, ["calibrate", "--device", "cuda:0", "--out", str(tmp_path / "p.json")]
    )
    assert r.exit_code == 2
    assert r.output.strip().startswith("error:") and "CUDA is not available" in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_device_strings():
    assert (
        dev_.parse_device("cuda") == "cuda:0"
        and dev_.parse_device("CPU") == "cpu"
        and dev_.parse_device(None) is None
    )
    for bad in ("gpu", "cuda:", "cuda:x", "tpu:0"):
        with pytest.raises(SpecError, match=f"--device '{bad}': expected cpu, cuda or cuda:N"):
            dev_.parse_device(bad)
    if not CUDA:
        with pytest.raises(UnsupportedError, match="--device cuda:1: CUDA is not available"):
            dev_.resolve_device(torch, "cuda:1")


def test_default_grids_cover_decode_prefill_and_alignment():
    for quick in (True, False):
        g = mb.gemm_grid(4096, quick)
        ms = {m for m, _, _ in g}
        assert 1 in ms and max(ms) >= 16384
        dims = {n for _, n, _ in g} | {k for _, _, k in g}
        assert {4096, 4224, 4104, 4100, 4097} <= dims  # x256, x128, off by 8, 4, 1
        assert len(g) == len(set(g))
    cfg = mb.default_config("cuda:0", quick=True, cache_bytes=60 * 2**20, comm_ranks=8, fp8=True)
    assert (
        cfg.dtypes == ("bf16", "fp8") and min(cfg.copy_bytes) >= 2 * 60 * 2**20 and cfg.comm_bytes
    )
    assert mb.default_config("cpu", quick=True).budget_s <= 30
    with pytest.raises(SpecError, match="fp64"):
        mb.default_config("cpu", dtypes=("fp64",))


@pytest.mark.slow
def test_collectives_over_two_gloo_processes():
    cfg = tiny_config(comm_bytes=(2**10, 2**16), comm_ranks=2, max_repeats=3)
    rows, note = collectives.run_collectives(torch, cfg, budget_s=2.0, device_kind="cpu")
    assert "gloo" in note, note
    kinds = [r["kind"] for r in rows]
    assert kinds.count("allreduce") == 2 and kinds.count("alltoall") == 2
    for r in rows:
        assert r["ranks"] == 2 and r["seconds"] > 0 and r["bus_bytes_per_s"] > 0


@pytest.mark.gpu
@needs_cuda
def test_cuda_tiny_calibration(tmp_path):
    dev = "cuda:0"
    dtypes = ("bf16", "fp8") if dev_.fp8_supported(torch, dev) else ("bf16",)
    cfg = tiny_config(
        dev,
        dtypes=dtypes,
        copy_bytes=(2**26, 2**28),
        gemm_shapes=((1, 4096, 4096), (4096, 4096, 4096), (4096, 4100, 4096)),
        attention_decode=(mb.AttentionShape(8, 32, 8, 128, 4096),),
        attention_prefill=(mb.AttentionShape(1, 32, 8, 128, 2048),),
        min_sample_s=2e-4,
        rotate_bytes=2**27,
        max_alloc_bytes=2**32,
    )
    profile = mb.calibrate(dev, config=cfg, out=tmp_path / "gpu.json")
    assert profile.device.kind == "cuda" and profile.settings["timer"] == "cuda events"
    assert profile.derived["hbm_bytes_per_s"] > 1e11
    big = [
        r
        for r in profile.measurements["gemm"]
        if r["m"] == 4096 and r["n"] == 4096 and r["dtype"] == "bf16"
    ]
    assert big and big[0]["flops_per_s"] > 1e13
    hw = load_hardware(str(tmp_path / "gpu.json"))
    assert hw.gemm_table is not None
    assert compare_profile(tmp_path / "gpu.json").rows

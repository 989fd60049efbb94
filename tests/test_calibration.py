"""Calibration profiles without torch: schema and validation, the GEMM table, overlay on a
datasheet spec, a profile as a spec of its own, engine constants, predicted vs measured, CLI."""

from __future__ import annotations

import copy
import json
import math
import sys
import warnings

import numpy as np
import pytest
from click.testing import CliRunner

from llm_codesign import api, load_hardware
from llm_codesign.calibrate import (
    GemmTable,
    apply_profile,
    calibrated_engine,
    compare_profile,
    derive,
    engine_overrides,
    hardware_from_profile,
    load_profile,
    match_hardware_id,
    measured_hardware,
    profile_of,
    provenance,
    save_profile,
)
from llm_codesign.cli import main
from llm_codesign.cost import gemm_time, hbm_bytes_per_s_achieved
from llm_codesign.errors import CodesignError, DataFileError, SpecError, UnsupportedError
from llm_codesign.ops import Op
from llm_codesign.specs.engine import load_engine
from llm_codesign.specs.plan import ParallelPlan
from llm_codesign.specs.workload import Workload
from llm_codesign.validate import bundled_data

ENG = load_engine("base").with_overrides(id="test")
H200_GRID = [(m, n, k) for m in (1, 64, 1024, 8192) for n, k in ((4096, 4096), (8192, 8192))] + [
    (1024, 4100, 4096)
]
MEASURED_FRACTION = 0.9  # synthetic "silicon": 90% of the model's throughput everywhere


def _gemm_rows(hw_id: str, grid, fraction=MEASURED_FRACTION, dtype="bf16"):
    hw = load_hardware(hw_id)
    rows = []
    for m, n, k in grid:
        op = Op("g", "ffn", "gemm", 1.0, m=float(m), n=float(n), k=float(k), compute_class=dtype)
        t = float(gemm_time(op, hw, ENG)[0]) / fraction
        rows.append(
            {
                "dtype": dtype,
                "m": m,
                "n": n,
                "k": k,
                "seconds": t,
                "flops_per_s": 2.0 * m * n * k / t,
                "times_s": [t, t * 1.01, t * 0.99],
            }
        )
    return rows


def h200_profile() -> dict:
    copies = [
        {"bytes": b, "seconds": 2.0 * b / bw, "bytes_per_s": bw}
        for b, bw in ((2**28, 4.0e12), (2**30, 4.3e12))
    ]
    return {
        "profile_version": 1,
        "device": {
            "name": "NVIDIA H200",
            "kind": "cuda",
            "driver": "NVIDIA driver 580.159.04, CUDA 13.0",
            "torch_version": "2.11.0+cu130",
            "date": "2026-11-30T00:00:00+00:00",
            "hardware_id": "h200-sxm",
            "memory_bytes": 150e9,
            "compute_units": 132,
            "cache_bytes": 62914560.0,
            "compute_capability": "9.0",
            "device_count": 1,
        },
        "settings": {"quick": True},
        "measurements": {
            "copy": copies,
            "gemm": _gemm_rows("h200-sxm", H200_GRID),
            "attention_decode": [
                {
                    "dtype": "bf16",
                    "batch": 16,
                    "heads": 32,
                    "kv_heads": 8,
                    "head_dim": 128,
                    "seq": 4096,
                    "flops": 4.0 * 16 * 32 * 128 * 4096,
                    "bytes": 2.0 * 16 * 8 * 4096 * 128 * 2,
                    "seconds": 2.0 * 16 * 8 * 4096 * 128 * 2 / 3.6e12,
                }
            ],
            "attention_prefill": [
                {
                    "dtype": "bf16",
                    "batch": 1,
                    "heads": 32,
                    "kv_heads": 8,
                    "head_dim": 128,
                    "seq": 4096,
                    "flops": 2.0 * 32 * 128 * 4096 * 4097,
                    "bytes": 6.0e7,
                    "seconds": 2.0 * 32 * 128 * 4096 * 4097 / 500e12,
                    "causal": True,
                }
            ],
            "allreduce": [],
            "alltoall": [],
        },
    }


def cpu_profile() -> dict:
    rows = []
    for m, n, k in (
        (1, 512, 512),
        (64, 512, 512),
        (512, 512, 512),
        (512, 1024, 1024),
        (2048, 1024, 1024),
    ):
        flops = 2.0 * m * n * k
        rate = 1e12 * min(1.0, m / 512) + 1e9
        rows.append(
            {"dtype": "bf16", "m": m, "n": n, "k": k, "seconds": flops / rate, "flops_per_s": rate}
        )
    return {
        "profile_version": 1,
        "device": {
            "name": "Example CPU 9000",
            "kind": "cpu",
            "driver": "Linux 6.1",
            "torch_version": "2.13.0+cpu",
            "date": "2026-11-30T00:00:00+00:00",
            "hardware_id": None,
            "memory_bytes": 64e9,
            "compute_units": 8,
            "cache_bytes": 32 * 2**20,
            "compute_capability": None,
            "device_count": 1,
        },
        "measurements": {
            "copy": [
                {"bytes": 2**24, "seconds": 2.0 * 2**24 / 10e9, "bytes_per_s": 10e9},
                {"bytes": 2**26, "seconds": 2.0 * 2**26 / 12e9, "bytes_per_s": 12e9},
            ],
            "gemm": rows,
            "attention_decode": [
                {
                    "dtype": "bf16",
                    "batch": 1,
                    "heads": 8,
                    "kv_heads": 2,
                    "head_dim": 64,
                    "seq": 1024,
                    "flops": 4.0 * 8 * 64 * 1024,
                    "bytes": 2.0 * 2 * 1024 * 64 * 2 + 2048,
                    "seconds": 1e-4,
                }
            ],
        },
    }


@pytest.fixture
def h200_path(tmp_path):
    path = tmp_path / "h200.json"
    path.write_text(json.dumps(h200_profile()))
    return path


@pytest.fixture
def cpu_path(tmp_path):
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(cpu_profile()))
    return path


# ---------------------------------------------------------------- schema


def test_profile_round_trips_and_derives(tmp_path):
    p = save_profile(h200_profile(), tmp_path / "p.json")
    again = load_profile(tmp_path / "p.json")
    assert again.to_dict() == p.to_dict()
    d = again.derived
    assert d["hbm_bytes_per_s"] == pytest.approx(4.3e12)
    assert d["peak_flops_per_s"]["bf16"] == max(
        r["flops_per_s"] for r in h200_profile()["measurements"]["gemm"]
    )
    assert d["attention_decode_bytes_per_s"]["bf16"] == pytest.approx(3.6e12)
    assert json.loads((tmp_path / "p.json").read_text())["derived"][
        "hbm_bytes_per_s"
    ] == pytest.approx(4.3e12)


def test_bytes_per_element_come_from_the_format_registry():
    from llm_codesign.calibrate import DTYPES, element_bytes, output_bytes

    assert {d: element_bytes(d) for d in DTYPES} == {
        "bf16": 2.0,
        "fp16": 2.0,
        "fp8": 1.0,
        "tf32": 4.0,
    }
    # the measured FP8 GEMMs (torch._scaled_mm) write BF16
    assert {d: output_bytes(d) for d in DTYPES} == {
        "bf16": 2.0,
        "fp16": 2.0,
        "fp8": 2.0,
        "tf32": 4.0,
    }


def test_derive_collectives_latency_is_smallest_message():
    rows = [
        {"bytes": b, "ranks": 8, "seconds": s, "bus_bytes_per_s": b / s * 1.75}
        for b, s in ((1024, 2e-5), (2**26, 2e-4))
    ]
    d = derive({"allreduce": rows})
    assert d["allreduce_latency_s"] == 2e-5
    assert d["allreduce_bus_bytes_per_s"] == pytest.approx(2**26 / 2e-4 * 1.75)
    assert d["allreduce_ranks"] == 8


def _mutate(path, value):
    data = h200_profile()
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


@pytest.mark.parametrize(
    "path,value,needle",
    [
        (("surprise",), 1, "surprise"),
        (("profile_version",), 2, "profile_version"),
        (("device", "name"), KeyError, "'name'"),
        (("device", "kind"), "tpu", "tpu"),
        (("device", "colour"), "red", "colour"),
        (("measurements", "gemm", 0, "seconds"), -1.0, "seconds"),
        (("measurements", "gemm", 0, "flops_per_s"), 1.0, "flops_per_s"),
        (("measurements", "gemm", 0, "dtype"), "fp64", "fp64"),
        (("measurements", "gemm", 0, "times_s"), [], "times_s"),
        (("measurements", "copy", 0, "bytes_per_s"), 1.0, "bytes_per_s"),
        (("measurements", "latency"), [], "latency"),
        (
            ("measurements", "allreduce"),
            [{"bytes": 1024, "ranks": 1, "seconds": 1e-5, "bus_bytes_per_s": 0.0001}],
            "ranks",
        ),
    ],
)
def test_invalid_profiles_name_the_key(path, value, needle):
    with pytest.raises(SpecError, match=needle):
        load_profile(_mutate(path, value), "bad.json")


def test_missing_profile_and_non_profile_file(tmp_path):
    with pytest.raises(DataFileError, match="no such file"):
        load_profile(tmp_path / "nope.json")
    other = tmp_path / "spec.json"
    other.write_text(json.dumps({"id": "x"}))
    with pytest.raises(DataFileError, match="profile_version"):
        load_profile(other)


@pytest.mark.parametrize(
    "name,expected",
    [
        ("NVIDIA H200", "h200-sxm"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"),
        ("AMD Instinct MI300X", "mi300x"),
        ("NVIDIA B200", "b200"),
        ("NVIDIA H100 PCIe", None),
        ("NVIDIA A100-SXM4-40GB", None),
        ("Intel(R) Xeon(R) Processor", None),
    ],
)
def test_match_hardware_id(name, expected):
    assert match_hardware_id(name) == expected


# ---------------------------------------------------------------- overlay and GEMM table


def test_profile_as_hardware_overlays_the_datasheet_spec(h200_path):
    hw = load_hardware(str(h200_path))
    assert hw.id == "h200-sxm"
    assert hw.peak_flops("bf16") == 989e12  # datasheet peaks stay; measured fractions are separate
    assert hw.profile_source.startswith(str(h200_path))
    assert isinstance(hw.gemm_table, GemmTable) and hw.gemm_table.count("bf16") == len(H200_GRID)
    assert hw.hbm_efficiency.value == pytest.approx(4.3e12 / 4.8e12)
    assert hw.hbm_efficiency.source.startswith("measured")
    assert hw.gemm_efficiency["bf16"].source.startswith("measured")
    assert (
        hw.gemm_efficiency["fp8"].source == load_hardware("h200-sxm").gemm_efficiency["fp8"].source
    )  # not measured
    assert profile_of(hw) is not None
    # the profile's device total (150 GB, torch's total_memory) is the memory the engines budget
    assert hw.device_memory == 150e9 and hw.device_memory_source.startswith("measured")
    assert hw.hbm_bytes == load_hardware("h200-sxm").hbm_bytes


def test_table_reproduces_measurements_and_is_nan_outside(h200_path):
    hw = load_hardware(str(h200_path))
    table = hw.gemm_table
    rows = h200_profile()["measurements"]["gemm"]
    m, n, k = (np.array([r[x] for r in rows], dtype=float) for x in "mnk")
    got = table.flops_per_s("bf16", m, n, k)
    # exact up to the interpolation's weight floor: 1 / max(d^2, 1e-12) at a measured point
    # leaks ~1e-12 / d^2 of its neighbours' log ratios (close shapes here: ~1e-9)
    np.testing.assert_allclose(got, [r["flops_per_s"] for r in rows], rtol=1e-8)
    outside = table.flops_per_s(
        "bf16", np.array([20000.0, 4096.0, 0.0]), np.array([4096.0, 100.0, 4096.0]), 4096.0
    )
    assert np.all(np.isnan(outside))
    assert table.flops_per_s("fp8", 1.0, 1.0, 1.0) is None  # nothing measured in FP8


def test_table_interpolates_between_measured_shapes(tmp_path):
    data = h200_profile()
    # two measured shapes with different residuals (0.9 and 0.6): a shape between them lands between
    data["measurements"]["gemm"] = _gemm_rows("h200-sxm", [(1024, 4096, 4096)], 0.9) + _gemm_rows(
        "h200-sxm", [(4096, 4096, 4096)], 0.6
    )
    hw = apply_profile("h200-sxm", data)
    base = load_hardware("h200-sxm")
    table = hw.gemm_table
    rows = data["measurements"]["gemm"]

    def residual(m):
        return float(table.flops_per_s("bf16", m, 4096.0, 4096.0)) / float(
            table.modelled_flops_per_s("bf16", m, 4096.0, 4096.0)
        )

    r1, r2 = (
        r["flops_per_s"] / float(table.modelled_flops_per_s("bf16", r["m"], 4096.0, 4096.0))
        for r in rows
    )
    assert residual(1024.0) == pytest.approx(r1) and residual(4096.0) == pytest.approx(r2)
    # the rows were made 0.9 and 0.6 of the datasheet model; the profile's own copy bandwidth
    # (4.0-4.3 TB/s, not 0.8 x 4.8) moves the memory part the overlap leaves exposed
    # (cost.gemm_overlap_time) by under 1% at these compute-bound shapes
    assert r2 / r1 == pytest.approx(0.6 / 0.9, rel=0.01)
    # equidistant in log2 M from both: the geometric mean of their residuals
    assert residual(2048.0) == pytest.approx(math.sqrt(r1 * r2), rel=1e-9)
    # and the cost model uses it: the overlaid GEMM is slower than the datasheet model's
    op = Op("g", "ffn", "gemm", 1.0, m=2048.0, n=4096.0, k=4096.0)
    assert float(gemm_time(op, hw, ENG)[0]) > float(gemm_time(op, base, ENG)[0])


def test_profile_changes_predictions(h200_path):
    plan, wl = ParallelPlan(), Workload(isl=1024, osl=256, concurrency=64)
    # the physics base engine (no fitted host costs), so the profile's effect stands alone
    base = api.estimate("llama-3.1-8b", "h200-sxm", "bf16", plan, wl, engine="base", explain=False)
    over = api.estimate(
        "llama-3.1-8b", str(h200_path), "bf16", plan, wl, engine="base", explain=False
    )
    assert over.hardware.id == "h200-sxm"
    assert over.ttft_ms > base.ttft_ms  # measured GEMMs 10% slower than modelled: prefill slows
    hw = load_hardware(str(h200_path))
    eng = calibrated_engine("base", hw)
    # the measured copy bandwidth is the spec's hbm_efficiency, counted once: the engine keeps
    # its scale (default 1.0), so streaming kernels achieve exactly the measured 4.3 TB/s
    assert hw.hbm_efficiency.value == pytest.approx(4.3e12 / 4.8e12)
    assert eng.hbm_efficiency_scale == 1.0 and "hbm_efficiency_scale" not in engine_overrides(hw)
    assert hbm_bytes_per_s_achieved(hw, eng) == pytest.approx(4.3e12)
    assert eng.attn_decode_efficiency == pytest.approx(3.6e12 / 4.8e12)
    assert eng.attn_prefill_efficiency == pytest.approx(500e12 / 989e12)
    assert eng.sources["attn_decode_efficiency"].startswith("measured")
    # estimate() applies the profile's measured engine constants itself
    cal = api.estimate("llama-3.1-8b", hw, "bf16", plan, wl, engine=eng, explain=False)
    assert cal.tpot_ms == pytest.approx(over.tpot_ms, rel=1e-9)
    assert over.tpot_ms != pytest.approx(base.tpot_ms, rel=1e-3)
    assert over.to_dict()["assumptions"]["calibration"]
    assert over.to_dict()["assumptions"]["hbm_efficiency"]["value"] == pytest.approx(
        4.3e12 / 4.8e12
    )
    bundled = load_hardware("h200-sxm").hbm_efficiency
    assert base.to_dict()["assumptions"]["hbm_efficiency"] == {
        "value": bundled.value,
        "source": bundled.source,
    }


def test_profile_of_another_device_is_an_error_naming_both(h200_path, cpu_path):
    with pytest.raises(SpecError, match=r"Example CPU 9000.*h200-sxm \(NVIDIA H200 SXM 141GB\)"):
        apply_profile("h200-sxm", cpu_path)
    with pytest.raises(SpecError, match=r"NVIDIA H200.*h100-sxm"):
        apply_profile("h100-sxm", h200_path)


def test_provenance_says_what_is_measured(h200_path):
    hw = load_hardware(str(h200_path))
    rows = {r["quantity"]: r for r in provenance(hw)}
    assert rows["gemm_table.bf16"]["origin"] == "measured"
    assert rows["gemm_table.fp8"]["origin"] == "default"
    assert rows["hbm_efficiency"]["origin"] == "measured"
    assert rows["scaleup_efficiency"]["origin"] == "default"  # no collectives on one GPU
    assert rows["engine.attn_decode_efficiency"]["origin"] == "measured"
    assert (
        rows["engine.hbm_efficiency_scale"]["origin"] == "default"
    )  # a multiplier on the measured fraction
    assert rows["engine.allreduce_latency_s"]["origin"] == "default"
    assert all(r["origin"] == "default" for r in provenance(load_hardware("h200-sxm")))


def test_collectives_set_latencies_and_link_efficiency():
    data = h200_profile()
    data["measurements"]["allreduce"] = [
        {"bytes": b, "ranks": 8, "seconds": s, "bus_bytes_per_s": b / s * 1.75}
        for b, s in ((4096, 2.0e-5), (2**28, 1.3e-3))
    ]
    data["measurements"]["alltoall"] = [
        {"bytes": 4096, "ranks": 8, "seconds": 3e-5, "bus_bytes_per_s": 4096 / 3e-5 * 0.875}
    ]
    hw = apply_profile("h200-sxm", data)
    assert hw.scaleup_efficiency.value == pytest.approx(2**28 / 1.3e-3 * 1.75 / 450e9)
    ov = engine_overrides(hw)
    assert ov["allreduce_latency_s"][0] == 2.0e-5
    assert ov["alltoall_latency_s"][0] == 3e-5


# ---------------------------------------------------------------- a profile as a spec of its own


def test_cpu_profile_is_a_hardware_spec(cpu_path):
    hw = load_hardware(str(cpu_path))
    assert hw.id == "measured-example-cpu-9000" and hw.architecture == "cpu"
    assert hw.peak_flops("bf16") == pytest.approx(1e12 + 1e9)
    assert hw.hbm_bytes_per_s == 12e9 and hw.hbm_bytes == 64e9 and hw.sm_count == 8
    assert (hw.tile_m, hw.tile_n, hw.scaleup_domain_size) == (64, 64, 1)
    assert hw.gemm_efficiency["bf16"].value == 1.0 and hw.gemm_efficiency["bf16"].source.startswith(
        "measured"
    )
    assert math.isnan(hw.tdp_w)  # not measured, not invented
    assert hardware_from_profile(cpu_profile(), "x.json").id == hw.id
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        e = api.estimate(
            "llama-3.1-8b",
            hw,
            "bf16",
            ParallelPlan(),
            Workload(isl=128, osl=32, concurrency=1),
            engine=calibrated_engine(None, hw),
            explain=False,
        )
    # batch 1 on the measured spec (copy 12 GB/s, mem_efficiency 1 from the same copy): the step is
    # the read of every BF16 weight but the embedding table (a row gather); KV of <= 160 tokens,
    # the 0.5 ms step overhead and per-kernel overheads add < 1%, and the math this slow spec
    # cannot fully hide behind the stream (cost.gemm_overlap_time) ~2%
    m = e.model
    weight_read_bytes = 2 * (m.total_params - m.vocab_size * m.hidden_size)
    assert e.tpot_ms / 1e3 == pytest.approx(weight_read_bytes / 12e9, rel=0.03)
    with pytest.raises(SpecError, match="scale-up domain"):
        api.estimate(
            "llama-3.1-8b", hw, "bf16", ParallelPlan(tp=2), Workload(isl=128, osl=32, concurrency=1)
        )
    # the same profile overlaid on its own measured spec is fine (same device)
    assert apply_profile(measured_hardware(cpu_profile()), cpu_profile()).id == hw.id


def test_a_profile_is_a_hardware_for_the_interfaces_not_for_specs(h200_path, cpu_path):
    from llm_codesign.calibrate import resolve_hardware
    from llm_codesign.specs import load_hardware as specs_load_hardware

    assert load_hardware is resolve_hardware  # the public loader takes profiles
    assert resolve_hardware(str(h200_path)).profile_source.startswith(str(h200_path))
    assert resolve_hardware("h200-sxm") is specs_load_hardware("h200-sxm")
    # specs does not know calibration: it says where profiles are read
    with pytest.raises(
        SpecError, match=r"h200.json: a calibration profile, not a hardware spec.*resolve_hardware"
    ):
        specs_load_hardware(str(h200_path))
    # every command that takes --hardware reads a profile
    for args in (
        [
            "estimate",
            "-m",
            "llama-3.1-8b",
            "-g",
            str(cpu_path),
            "--isl",
            "128",
            "--osl",
            "32",
            "--json",
        ],
        [
            "frontier",
            "-m",
            "llama-3.1-8b",
            "-g",
            str(h200_path),
            "--num-gpus",
            "1",
            "--isl",
            "512",
            "--osl",
            "64",
            "--json",
        ],
        ["lint", "-m", "llama-3.1-8b", "-g", str(h200_path), "--json"],
        ["gemm", "-g", str(cpu_path), "--m", "64", "--json"],
    ):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, (args, r.output)
        assert json.loads(r.output)


def test_measured_spec_needs_gemm_and_copy():
    data = cpu_profile()
    data["measurements"]["copy"] = []
    with pytest.raises(SpecError, match="copy"):
        hardware_from_profile(data, "cpu.json")
    data = cpu_profile()
    data["measurements"]["gemm"] = []
    with pytest.raises(SpecError, match="GEMM"):
        hardware_from_profile(data, "cpu.json")


# ---------------------------------------------------------------- predicted vs measured


def test_compare_covers_every_measurement(h200_path):
    res = compare_profile(h200_path)
    kinds = [r["benchmark"] for r in res.rows]
    assert kinds.count("copy") == 2 and kinds.count("gemm") == len(H200_GRID)
    assert kinds.count("attention_decode") == 1 and kinds.count("attention_prefill") == 1
    gemm = [r for r in res.rows if r["benchmark"] == "gemm"]
    # synthetic silicon runs at 90% of the model everywhere: the model over-predicts speed by 10%
    for r in gemm:
        assert r["error_pct"] == pytest.approx(-10.0, abs=0.01)
    s = res.to_dict()["summary"]
    assert set(s) == {"copy", "gemm", "attention_decode", "attention_prefill"}
    assert s["gemm"]["count"] == len(H200_GRID) and s["gemm"][
        "median_abs_pct_error"
    ] == pytest.approx(10.0, abs=0.01)
    self_check = compare_profile(h200_path, overlay=True)
    assert all(abs(r["error_pct"]) < 1e-6 for r in self_check.rows if r["benchmark"] == "gemm")


def test_compare_on_a_device_without_a_spec(cpu_path):
    res = compare_profile(cpu_path)
    assert res.hardware == "measured-example-cpu-9000"
    copy_rows = [r for r in res.rows if r["benchmark"] == "copy"]
    assert copy_rows[1]["error_pct"] == pytest.approx(
        0.0, abs=1e-9
    )  # the best copy is the spec's bandwidth
    assert any("no bundled spec" in n for n in res.notes)


# ---------------------------------------------------------------- CLI


def _one_line_error(result):
    assert result.exit_code == 2, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), result.output
    assert "Traceback" not in result.output
    return lines[0]


def test_cli_compare_json(h200_path):
    r = CliRunner().invoke(main, ["calibrate", "--compare", str(h200_path), "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert set(out) >= {"rows", "summary"}
    assert out["summary"]["gemm"]["count"] == len(H200_GRID)
    assert {"benchmark", "shape", "measured_s", "predicted_s", "error_pct"} <= set(out["rows"][0])


def test_cli_compare_table(h200_path):
    r = CliRunner().invoke(main, ["calibrate", "--compare", str(h200_path)])
    assert r.exit_code == 0, r.output
    assert "GEMM (TFLOP/s)" in r.output and "summary" in r.output and "h200-sxm" in r.output


@pytest.mark.parametrize(
    "args,needle",
    [
        (["calibrate"], "--out"),
        (["calibrate", "--device", "gpu0", "--out", "x.json"], "gpu0"),
        (["calibrate", "--hardware", "h200-sxm", "--out", "x.json"], "--compare"),
    ],
)
def test_cli_user_errors_are_one_line(args, needle):
    assert needle in _one_line_error(CliRunner().invoke(main, args))


def test_cli_compare_with_measuring_options_is_an_error(h200_path):
    line = _one_line_error(
        CliRunner().invoke(main, ["calibrate", "--compare", str(h200_path), "--out", "x.json"])
    )
    assert "--compare" in line


def test_cli_compare_profile_on_other_device(h200_path):
    line = _one_line_error(
        CliRunner().invoke(
            main, ["calibrate", "--compare", str(h200_path), "-g", "b200", "--overlay"]
        )
    )
    assert "NVIDIA H200" in line and "b200" in line


def test_missing_torch_says_install_the_gpu_extra(monkeypatch, tmp_path):
    from llm_codesign.calibrate import device

    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` raise ImportError
    with pytest.raises(UnsupportedError, match=r"\[gpu\] extra"):
        device.require_torch()
    line = _one_line_error(
        CliRunner().invoke(
            main, ["calibrate", "--device", "cpu", "--out", str(tmp_path / "p.json")]
        )
    )
    assert "[gpu]" in line


def test_errors_are_codesign_errors():
    assert issubclass(SpecError, CodesignError) and issubclass(UnsupportedError, CodesignError)
    bad = copy.deepcopy(h200_profile())
    bad["measurements"] = {}
    with pytest.raises(SpecError, match="holds no measurements"):
        load_profile(bad)


@pytest.mark.parametrize("engine_id", ["trtllm", "trtllm-trt", "vllm", "sglang", "generic"])
def test_writing_a_fit_keeps_every_unfitted_constant(tmp_path, engine_id):
    """A refit rewrites the engine file: the constants it does not fit (measured or stated
    behaviour such as vLLM's max_batch_size or the DSA indexer's chain) must survive with their
    sources, and the fitted ones round to 4 significant digits."""
    from llm_codesign.calibrate.fit import FIT_SPACE, FitResult, write_engine_yaml
    from llm_codesign.specs.engine import load_engine

    eng = load_engine(engine_id)
    path = tmp_path / f"{engine_id}.yaml"
    write_engine_yaml(FitResult(eng, 0.2, 0.1, 1, []), path, ["x.csv"])
    back = load_engine(str(path))
    for name, value in eng.to_dict().items():
        got = back.to_dict()[name]
        if name in FIT_SPACE:
            assert got == pytest.approx(value, rel=5e-4), name
        elif name != "id":
            assert got == value, name
    for name in ("max_batch_size", "indexer_overhead_s"):
        if name in eng.sources:
            assert back.sources[name] == eng.sources[name]


def test_descent_finds_an_optimum_inside_a_coarse_step(monkeypatch):
    """The coarse steps of the descent (x 1.6 and its square) straddle a multiplier near 1;
    the half and quarter steps reach it: from 1.1875 (the range's top) toward an optimum at
    1.05, where x / 1.6 = 0.742 and the top itself are both worse."""
    from llm_codesign.calibrate import fit

    def quadratic(rows, eng):
        return (eng.hbm_efficiency_scale - 1.05) ** 2

    monkeypatch.setattr(fit, "objective", quadratic)
    start = load_engine("base").with_overrides(hbm_efficiency_scale=1.1875)
    eng, best, history = fit._descend(
        [], start, ["hbm_efficiency_scale"], 2, None, fit.fit_bounds([])
    )
    # first sweep: 1.1875 x 1.6^-0.25 = 1.0557; second: its quarter steps are worse
    assert eng.hbm_efficiency_scale == pytest.approx(1.1875 * 1.6**-0.25)
    assert best < (1.1875 - 1.05) ** 2 and history
    assert fit._finer("host_overlap", 0.5, 1, 1.6) == [0.475, 0.525, 0.4875, 0.5125]
    assert fit._finer("per_seq_overhead_s", 0.0, 0, 1.6) == []


def test_fit_reports_constants_that_end_on_a_bound():
    from llm_codesign.calibrate.fit import FIT_SPACE, FitResult, at_bound

    lo, hi, _ = FIT_SPACE["routing_skew"]
    eng = load_engine("base").with_overrides(
        routing_skew=hi,  # a plausibility bound: reported
        request_overhead_s=FIT_SPACE["request_overhead_s"][1] * (1 + 2e-4),  # 4-digit rounding
        host_overlap=0.0,  # a share's end: what the constant means, not reported
        gemm_scale=1.0,  # the measured ceiling itself: not reported
    )
    got = at_bound(eng, ["routing_skew", "request_overhead_s", "host_overlap", "gemm_scale"])
    assert [n for n, _, _ in got] == ["routing_skew", "request_overhead_s"]
    # a cost at its lower bound 0 (none shown by the rows) is what the constant means: the base
    # engine's host terms are 0 and none is reported
    assert at_bound(load_engine("base"), ["request_overhead_s", "per_seq_overhead_s"]) == []
    res = FitResult(eng, 1.0, 0.5, 10, [], "", ("routing_skew",))
    assert res.at_bounds == [("routing_skew", hi, hi)]  # only the constants it fitted


def test_host_cost_ceiling_is_the_fastest_measured_rate_per_scheduler():
    """A scheduler delivers under 1 / c output tokens per second with a host cost of c per
    sequence and iteration: the fastest TensorRT-LLM row of serving.csv, gpt-oss-20b on one
    GB200 at 56,528 output tokens/s (NVIDIA's perf-overview table), caps c at 17.7 us; rows with
    speculative drafts, pools or pipeline stages do not count; fit_bounds takes the cap."""
    from llm_codesign.calibrate.fit import FIT_SPACE, fit_bounds, host_cost_ceiling, load_rows

    rows = load_rows([bundled_data("serving.csv")], "trtllm")
    assert host_cost_ceiling(rows) == pytest.approx(1.0 / 56528.0)
    assert fit_bounds(rows)["per_seq_overhead_s"] == (0.0, pytest.approx(1.0 / 56528.0))
    drafted = [r for r in rows if r.spec_tokens or r.pools or r.pp != 1]
    assert host_cost_ceiling(drafted) is None
    assert fit_bounds([])["per_seq_overhead_s"] == FIT_SPACE["per_seq_overhead_s"][:2]


def test_host_cost_ceiling_per_scheduler_by_hand():
    """The rate per scheduler: a TP8 replica without attention-DP is one scheduler of 8 GPUs (a
    total over two replicas, 16 GPUs, of 16,000 tokens/s is 1,000 per GPU and 8,000 per
    scheduler); under attention-DP each GPU schedules its own batch (2,000 per GPU is 2,000 per
    scheduler; a per-node rate is read per GPU with the node's GPUs); input-token, speculative
    and pool rates bound nothing."""
    from dataclasses import replace

    from llm_codesign.calibrate.fit import host_cost_ceiling, load_rows

    row = load_rows([bundled_data("serving.csv")], "trtllm")[0]
    tp8 = replace(row, tp=8, pp=1, attention_dp=False, spec_tokens=0, pools=None)
    total = replace(tp8, metric="output_tok_s_total", measured=16000.0, metric_gpus=16)
    assert host_cost_ceiling([total]) == pytest.approx(1.0 / 8000.0)
    dep8 = replace(tp8, attention_dp=True, metric="output_tok_s_per_gpu", measured=2000.0)
    assert host_cost_ceiling([dep8]) == pytest.approx(1.0 / 2000.0)
    assert host_cost_ceiling([total, dep8]) == pytest.approx(1.0 / 8000.0)
    # per node: the GPUs one node holds (8 for this B200 row): 64,000 / 8 per GPU, x 8 per TP8
    node = replace(total, metric="output_tok_s_per_node", measured=64000.0)
    assert host_cost_ceiling([node]) == pytest.approx(1.0 / 64000.0)
    ignored = [
        replace(total, metric="input_tok_s_total"),
        replace(total, spec_tokens=2),
        replace(total, pp=2),
    ]
    assert host_cost_ceiling(ignored) is None


def test_a_refit_keeps_the_engine_files_history_of_fits(tmp_path):
    """An engine file's ``sources.fit`` tells how its constants came to be: a refit from the
    file's values appends its own account to the earlier one; a full fit replaces it."""
    import yaml

    from llm_codesign.calibrate.fit import FitResult, write_engine_yaml

    eng = load_engine("vllm")
    earlier = eng.sources["fit"]
    refit = FitResult(eng, 0.2, 0.1, 7, [], "moe_layer_overhead_s from the file's values")
    write_engine_yaml(refit, tmp_path / "refit.yaml", ["x.csv"])
    text = yaml.safe_load((tmp_path / "refit.yaml").read_text())["sources"]["fit"]
    assert text.startswith(earlier) and "; then llm-codesign calibrate-fit" in text
    assert text.endswith(
        "7 rows; objective (mean over metric classes of median |log pred/meas|) 0.2000 -> 0.1000"
    )
    write_engine_yaml(FitResult(eng, 0.2, 0.1, 7, []), tmp_path / "full.yaml", ["x.csv"])
    full = yaml.safe_load((tmp_path / "full.yaml").read_text())["sources"]["fit"]
    assert earlier not in full and full.startswith("llm-codesign calibrate-fit --engine vllm")


def test_a_capped_constant_is_stored_under_its_cap():
    """Engine files keep four significant digits; a constant fitted onto its cap is rounded
    toward zero there, so the file never breaks the bound the rows set."""
    from llm_codesign.calibrate.fit import _stored

    cap = 1.0 / 68608.45  # 14.5755 us: to four digits 1.458e-05, above the cap
    assert _stored(cap, (0.0, cap)) == 1.457e-05 <= cap
    assert _stored(1.23456e-05, (0.0, 1.0)) == 1.235e-05  # under the cap: plain rounding


@pytest.mark.parametrize("engine", ["trtllm", "trtllm-trt", "vllm", "sglang", "generic"])
def test_no_engine_file_caps_a_scheduler_below_a_rate_its_rows_measured(engine):
    """Every bundled engine's host cost per sequence leaves each scheduler able to deliver the
    fastest output rate its calibration rows measured (``host_cost_ceiling``): a constant above
    it would make those rows unreachable on any GPU."""
    from llm_codesign.calibrate.fit import host_cost_ceiling, load_rows

    files = ("serving.csv", "aic_silicon_dense.csv", "aic_silicon_moe_hopper.csv")
    rows = load_rows([bundled_data(f) for f in files + ("inferencex_hopper.csv",)], engine)
    ceiling = host_cost_ceiling(rows)
    if ceiling is None:
        pytest.skip(f"no {engine} row measures an output rate")
    # engine files store four significant digits
    assert load_engine(engine).per_seq_overhead_s <= ceiling * (1 + 5e-4)


def test_calibrate_fit_warns_of_constants_on_a_bound(tmp_path, monkeypatch):
    """calibrate-fit writes the fitted engine and names, on stderr, each fitted constant that
    ended on a bound of its range (the fit itself is replaced: its wiring is what is tested)."""
    import importlib

    from llm_codesign.calibrate.fit import FIT_SPACE, FitResult

    cli_validate = importlib.import_module("llm_codesign.cli.validate")
    hi = FIT_SPACE["routing_skew"][1]
    eng = load_engine("vllm").with_overrides(routing_skew=hi)
    fake = FitResult(eng, 0.2, 0.1, 7, [("routing_skew", hi, 0.1)], "", ("routing_skew",))
    monkeypatch.setattr(cli_validate, "fit_engine", lambda *a, **k: fake)
    data = tmp_path / "rows.csv"
    data.write_text("x\n")
    out = tmp_path / "fit.yaml"
    r = CliRunner().invoke(
        main, ["calibrate-fit", "--data", str(data), "--engine", "vllm", "--out", str(out)]
    )
    assert r.exit_code == 0, r.output
    assert out.exists() and "objective 0.2000 -> 0.1000" in r.output
    assert f"warning: routing_skew = {hi:.4g} ended on the bound" in r.output


def test_a_fit_is_the_same_on_any_number_of_workers():
    """A step's candidates priced together in worker processes are taken in the order the
    sequential descent takes them: the same constants, objective and history."""
    from llm_codesign.calibrate.fit import fit_engine

    data = [bundled_data("aic_silicon_dense.csv")]
    kw = dict(
        sweeps=1,
        params=["request_overhead_s", "ttft_burst", "kernel_overhead_s"],
        max_rows=40,
        from_current=True,
    )
    one = fit_engine(data, "vllm", workers=1, **kw)
    two = fit_engine(data, "vllm", workers=2, **kw)
    assert one.history, "the fit moved nothing: the comparison would be empty"
    assert two.history == one.history
    assert (two.before, two.after) == (one.before, one.after)
    assert two.engine == one.engine


def test_calibrate_fit_workers_must_be_a_positive_count(tmp_path):
    data = tmp_path / "rows.csv"
    data.write_text("x\n")
    r = CliRunner().invoke(
        main,
        ["calibrate-fit", "--data", str(data), "--engine", "vllm", "--out", str(tmp_path / "o")]
        + ["--workers", "0"],
    )
    assert r.exit_code == 2 and "--workers" in r.output and "1<=x<=64" in r.output


def _sequential_descent(fit, eng, names, sweeps, bounds):
    """The descent as it ran before its candidates were priced together (stop 64's
    ``calibrate.fit._descend``, its candidates from ``_stages``): each candidate priced and
    taken or not in turn."""
    best, history, factor = fit.objective([], eng), [], 1.6
    for sweep in range(sweeps):
        for name in names:
            lo, hi = bounds[name]
            cur = getattr(eng, name)
            improved = False
            for stage in fit._stages(name, cur, sweep, (lo, hi), factor):
                if improved:
                    break
                for c in (min(max(c, lo), hi) for c in stage):
                    if c == getattr(eng, name):
                        continue
                    trial = eng.with_overrides(**{name: c})
                    val = fit.objective([], trial)
                    if val < best - 1e-6:
                        best, eng, improved = val, trial, True
                        history.append((name, c, val))
    return eng, best, history


def test_candidates_priced_together_are_taken_as_the_sequential_descent_takes_them(monkeypatch):
    """Against the sequential descent, on objectives with ties, bumps and optima on the bounds
    (a fake objective: the replay's logic, not the serving model, is what is compared)."""
    import math
    import random

    import llm_codesign.calibrate.fit as fit

    names = ["ttft_burst", "request_overhead_s", "per_seq_overhead_s", "kernel_overhead_s"]
    bounds = {n: fit.FIT_SPACE[n][:2] for n in names}
    base = load_engine("vllm")
    taken = 0
    for seed in range(40):
        rnd = random.Random(seed)
        target = {n: rnd.uniform(*bounds[n]) for n in names}
        weight = {n: rnd.uniform(0.1, 3.0) for n in names}
        digits = (3, 6, 12)[seed % 3]  # coarse rounding: tied candidates

        def fake(rows, e, target=target, weight=weight, digits=digits):
            s = 0.0
            for n in names:
                x = (getattr(e, n) - target[n]) / (bounds[n][1] - bounds[n][0])
                s += weight[n] * abs(x) + 0.01 * math.sin(40.0 * x)
            return round(s, digits)

        monkeypatch.setattr(fit, "objective", fake)
        start = base.with_overrides(
            ttft_burst=rnd.choice([0.0, 0.5, 1.0]),
            request_overhead_s=rnd.choice([0.0, 0.01, 0.2]),
            per_seq_overhead_s=rnd.choice([0.0, 40e-6]),
            kernel_overhead_s=rnd.choice([0.5e-6, 3e-6, 20e-6]),
        )
        chosen = rnd.sample(names, k=rnd.randint(1, len(names)))
        sweeps = rnd.randint(1, 3)
        want = _sequential_descent(fit, start, chosen, sweeps, bounds)
        got = fit._descend([], start, chosen, sweeps, None, bounds)
        assert got == want, seed
        taken += len(want[2])
    assert taken > 40  # the descents moved: the comparison is not empty

"""MoRI-EP (AMD's MoE dispatch/combine kernels) as a kernel family of its own (issue 11):
``comm.ep_kernel_time`` (mode mori) against MoRI's published MI355X tables, its engines'
switches, and the InferenceX AMD disaggregated runs that use it."""

from __future__ import annotations

import csv
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_codesign import estimate, load_engine, load_hardware, validate
from llm_codesign.comm import MORI, ep_kernel_time
from llm_codesign.errors import UnsupportedError
from llm_codesign.report import read_deployment
from llm_codesign.report.launch_data import moe_a2a_flags
from llm_codesign.specs.plan import ParallelPlan
from llm_codesign.specs.workload import Workload
from llm_codesign.validate.tables import bundled_rows

HIDDEN = 7168  # DeepSeek-R1's, the shape of MoRI's tables


def _mi355x():
    return load_hardware("mi355x"), load_engine("sglang")


def test_one_node_dispatch_closed_form_and_publication():
    """4,096 FP8 tokens a rank, top-8 over 8 MI355X: a token reaches 8 (1 - (7/8)^8) = 5.25
    ranks on average (its own counted), each copy 7,168 bytes over 535.5 GB/s of xGMI a
    direction at the fitted fraction, after the one-node alpha: by hand, and within 10% of the
    469 us MoRI publishes (docs/EP8.en.md)."""
    hw, eng = _mi355x()
    by_hand = MORI["alpha_dispatch"] + 4096 * HIDDEN * 8 * (1 - (7 / 8) ** 8) / (
        MORI["xgmi"] * 535.5e9
    )
    t = float(ep_kernel_time("mori", True, 4096, 8, HIDDEN, 8, hw, eng))
    assert t == pytest.approx(by_hand, rel=1e-9)
    assert t == pytest.approx(469e-6, rel=0.10)


def test_two_node_dispatch_is_bound_by_the_nic():
    """65,536 FP8 tokens a rank over 2 nodes of 8: a token goes once to the other node
    (reached with 1 - (1/2)^8 of its 8 picks) over the 50 GB/s NIC at the fitted fraction, which
    binds before the xGMI leg; within 15% of MoRI's 10,965 us (docs/EP16.en.md, the mean)."""
    hw, eng = _mi355x()
    b = 65536 * HIDDEN
    net = b * (1 - 0.5**8) / (MORI["rdma"] * 50e9)
    xgmi = b * 16 * (1 - (15 / 16) ** 8) / (MORI["xgmi"] * 535.5e9)
    assert net > xgmi
    t = float(ep_kernel_time("mori", True, 65536, 8, HIDDEN, 16, hw, eng))
    assert t == pytest.approx(MORI["alpha_dispatch_internode"] + net, rel=1e-9)
    assert t == pytest.approx(10964.73e-6, rel=0.15)


def test_prices_moris_published_tables():
    """Every row of data/validation/mori_ep.csv (MoRI's EP8 and EP16 MI355X tables, 1 to
    524,288 tokens, FP8 and BF16 dispatch, BF16 combine): median |error| under 8%, none beyond
    30% (the fit's worst is the one-node combine at 768 tokens)."""
    hw, eng = _mi355x()
    errs = []
    for r in bundled_rows("mori_ep.csv"):
        payload = int(r["hidden"]) * (1 if r["dtype"] == "fp8" else 2)
        t = ep_kernel_time(
            "mori", r["phase"] == "dispatch", int(r["tokens"]), int(r["top_k"]), payload,
            int(r["ep"]), hw, eng,
        )  # fmt: skip
        errs.append(float(t) / (float(r["time_us"]) * 1e-6) - 1.0)
    assert len(errs) == 111
    assert statistics.median(abs(e) for e in errs) < 0.08
    assert max(abs(e) for e in errs) < 0.30


@settings(max_examples=60, deadline=None)
@given(
    tokens=st.integers(1, 200_000),
    ep=st.sampled_from([2, 4, 8, 16, 32]),
    dispatch=st.booleans(),
    more=st.floats(1.01, 4.0),
)
def test_monotone_in_tokens_and_links(tokens, ep, dispatch, more):
    """More tokens never take less time; a faster xGMI link or NIC never takes more."""
    hw, eng = _mi355x()
    t = float(ep_kernel_time("mori", dispatch, tokens, 8, HIDDEN, ep, hw, eng))
    assert float(ep_kernel_time("mori", dispatch, tokens + 1, 8, HIDDEN, ep, hw, eng)) >= t
    faster = hw.with_overrides(
        scaleup_bytes_per_s=hw.scaleup_bytes_per_s * more,
        scaleout_bytes_per_s=hw.scaleout_bytes_per_s * more,
    )
    assert float(ep_kernel_time("mori", dispatch, tokens, 8, HIDDEN, ep, faster, eng)) <= t * (
        1 + 1e-12
    )


def test_mori_is_refused_off_amd_and_moves_an_amd_estimate():
    """MoRI-EP runs on AMD GPUs only, DeepEP on NVIDIA only (specs.engine.MOE_COMM_VENDORS):
    each is refused elsewhere, naming the families allowed; on MI355X MoRI moves the estimate
    and the assumptions say which family was priced."""
    plan, wl = ParallelPlan(tp=8, ep=8, attention_dp=True), Workload(1024, 1024, 256)
    mori = load_engine("sglang").with_overrides(moe_comm="mori")
    with pytest.raises(UnsupportedError, match="moe_comm=mori.*amd GPUs only.*allowed on nvidia"):
        estimate("deepseek-r1", "h200-sxm", "fp8", plan, wl, engine=mori)
    deepep = load_engine("sglang").with_overrides(moe_comm="deepep_low_latency")
    with pytest.raises(UnsupportedError, match="nvidia GPUs only.*allowed on amd: .*mori"):
        estimate("deepseek-r1", "mi355x", "fp8", plan, wl, engine=deepep)
    gather = estimate("deepseek-r1", "mi355x", "fp8", plan, wl, engine=load_engine("sglang"))
    e = estimate("deepseek-r1", "mi355x", "fp8", plan, wl, engine=mori)
    assert e.tpot_ms != pytest.approx(gather.tpot_ms, rel=1e-3)
    assert e.assumptions()["moe_dispatch"] == "mori"


@pytest.mark.parametrize(
    "cmd",
    [
        "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 --dp 8 "
        "--enable-dp-attention --moe-a2a-backend mori --deepep-mode normal",
        "vllm serve deepseek-ai/DeepSeek-R1 --data-parallel-size 8 --enable-expert-parallel "
        "--all2all-backend mori_low_latency",
        "vllm serve deepseek-ai/DeepSeek-R1 --data-parallel-size 8 --enable-expert-parallel "
        "--all2all-backend mori_high_throughput",
    ],
)
def test_engines_mori_switches_set_the_family(cmd):
    """SGLang's --moe-a2a-backend mori (its --deepep-mode noted, not skipped: its MoRI
    dispatcher reads it) and vLLM's two MoRI backends price MoRI; the launch file writes the
    switch back."""
    dep = read_deployment([cmd], load_hardware("mi355x"))
    assert dep.engine_constants.moe_comm == "mori"
    assert not any("deepep-mode" in x["setting"] for x in dep.ignored)
    engine = "sglang" if "sglang" in cmd else "vllm"
    flags, _ = moe_a2a_flags(engine, "mori")
    assert (
        flags == ["--moe-a2a-backend mori"]
        if engine == "sglang"
        else flags[0].startswith("--all2all-backend mori_")
    )


def _amd_disagg_row(run_date: str) -> dict[str, str]:
    return {
        "source_id": "inferencex_api_fixture", "model": "DeepSeek-R1-0528", "gpu": "MI355X",
        "num_gpus": "24", "precision": "fp8/?/?", "tp": "P:tp8/D:tp8", "pp": "",
        "ep": "P:ep8/D:ep8", "dp": "P:dpattn=True/D:dpattn=True",
        "framework": "sglang-disagg (rocm/sgl-dev:sglang-0.5.9-rocm720-mi35x-mori-0227-2)",
        "isl": "8192", "osl": "1024", "concurrency_or_batch": "256", "metric": "tpot_ms",
        "value": "30", "notes": "disaggregated: prefill_gpus=16 (workers=2), decode_gpus=8 "
        "(workers=1), is_multinode=True; spec_method=none"
        + (f"; run date {run_date}" if run_date else ""),
    }  # fmt: skip


def test_inferencex_amd_disaggregated_pools_run_mori_from_the_in_repo_scripts(tmp_path):
    """InferenceX's AMD disaggregated SGLang scripts, in its repository from 2026-02-19, pass
    DeepSeek-R1 --moe-a2a-backend mori on every DP-attention EP pool and
    --ep-dispatch-algorithm fake (uniform routing): a run of that date prices both pools with
    MoRI and equally popular experts (and says so); a January run, whose scripts lived
    elsewhere, and an undated one keep the all-gather and the engine's balance."""
    path = tmp_path / "amd.csv"
    tp_pools = {**_amd_disagg_row("2026-08-01"), "tp": "P:tp8/D:tp8", "ep": "P:ep1/D:ep8",
                "dp": "P:dpattn=False/D:dpattn=True"}  # fmt: skip
    rows = [_amd_disagg_row("2026-03-23"), _amd_disagg_row("2026-01-20"), tp_pools,
            _amd_disagg_row("")]  # fmt: skip
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    after, before, august, undated = validate([str(path)]).rows
    # from 2026-07-10 the fake dispatch reaches expert-parallel pools only: the TP8 prefill
    # pool keeps the engine's balance, the DEP8 decode pool routes uniformly
    assert "decode pool: --ep-dispatch-algorithm fake" in august["note"]
    assert "prefill pool: --ep-dispatch-algorithm" not in august["note"]
    assert "mori" not in undated["note"].replace("mori-0227", "")
    assert "decode pool MoE dispatch mori" in after["note"]
    assert "prefill pool MoE dispatch mori" in after["note"]
    assert "uniform routing" in after["note"] and "uniform" not in before["note"]
    assert "mori" not in before["note"].replace("mori-0227", "")
    assert after["predicted"] != pytest.approx(before["predicted"], rel=1e-3)


def test_sglang_disagg_recipe_states_its_pools_dispatch_and_refuses_bad_fields():
    """``inferencex-disagg-sglang`` takes the optional a2a= / pa2a= fields (indices into the
    engine's families less auto) and bal= (into the expert balancers): the decode pool's engine
    gets MoRI and the recipe's memory fraction, the prefill pool's its own, both the balancer;
    an index past the choices, or a limit field this recipe does not carry, is a SpecError
    naming the rule."""
    from llm_codesign.errors import SpecError
    from llm_codesign.specs.engine import EXPERT_BALANCERS
    from llm_codesign.validate.disagg_recipes import disagg_prefill_engine
    from llm_codesign.validate.recipes import (
        DISAGG_RECIPE_A2A,
        INFERENCEX_DISAGG_SGLANG,
        INFERENCEX_DISAGG_SGLANG_MEMORY_FRACTION,
        recipe_behaviour,
    )

    mori = DISAGG_RECIPE_A2A.index("mori")
    eng = load_engine("sglang")
    decode = recipe_behaviour(f"{INFERENCEX_DISAGG_SGLANG}:a2a={mori}", eng)
    assert decode.moe_comm == "mori"
    assert decode.memory_utilization == INFERENCEX_DISAGG_SGLANG_MEMORY_FRACTION
    assert disagg_prefill_engine(f"{INFERENCEX_DISAGG_SGLANG}:a2a={mori}", eng).moe_comm == "auto"
    both = f"{INFERENCEX_DISAGG_SGLANG}:a2a={mori}:pa2a={mori}"
    assert disagg_prefill_engine(both, eng).moe_comm == "mori"
    uniform, none = EXPERT_BALANCERS.index("uniform"), EXPERT_BALANCERS.index("none")
    recipe = f"{INFERENCEX_DISAGG_SGLANG}:bal={uniform}:pbal={none}"
    balanced = recipe_behaviour(recipe, eng)
    assert balanced.expert_balancer == "uniform" and balanced.moe_comm == eng.moe_comm
    assert disagg_prefill_engine(recipe, balanced).expert_balancer == "none"
    bad_fields = (":a2a=99", ":decode=4", f":bal={len(EXPERT_BALANCERS)}", ":pbal=9")
    for bad in (INFERENCEX_DISAGG_SGLANG + f for f in bad_fields):
        with pytest.raises(SpecError, match="recipe"):
            recipe_behaviour(bad, eng)


def test_amd_script_flags_by_run_date():
    """The bundled table of InferenceX's AMD scripts (amd_utils/models.yaml, every version):
    DeepSeek-R1's keys pass mori and the fake (uniform) expert dispatch from 2026-02-19;
    Qwen3.5's and GLM-5's pass mori alone from 2026-05-28; the fake dispatch sat in base_flags
    (every pool) until 2026-07-10, in ep_flags (expert-parallel pools) after; before their first
    version, for an undated run and for a model the scripts never list, nothing is assumed."""
    from llm_codesign.validate.disagg_recipes import amd_script_flags

    assert amd_script_flags("deepseek-r1", "2026-03-23") == ("mori", "fake", "all")
    assert amd_script_flags("deepseek-r1", "2026-06-15") == ("mori", "fake", "all")  # (in force)
    assert amd_script_flags("deepseek-r1", "2026-08-01") == ("mori", "fake", "ep")
    assert amd_script_flags("deepseek-r1", "2026-02-18") is None
    assert amd_script_flags("deepseek-r1", "") is None  # an undated run may be older
    assert amd_script_flags("qwen3.5-397b-a17b", "2026-06-01") == ("mori", "", "")
    assert amd_script_flags("glm-5", "2026-05-01") is None
    assert amd_script_flags("llama-3.1-8b", "2026-06-01") is None
    # DeepSeek-V4-Pro's key was renamed after 2026-07-10 (to keys no bundled model matches)
    assert amd_script_flags("deepseek-v4-pro", "2026-08-01") is None


def test_sglang_ep_dispatch_algorithm_is_read():
    """SGLang's --ep-dispatch-algorithm fake (InferenceX's AMD DeepSeek scripts) replaces the
    router's logits by noise: experts equally popular, engine expert_balancer uniform; static
    or dynamic only choose among an expert's copies (the balance stays the engine's); another
    value is refused with the allowed ones."""
    from llm_codesign.errors import SpecError

    base = (
        "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 --dp 8 "
        "--enable-dp-attention --moe-a2a-backend mori --ep-dispatch-algorithm "
    )
    hw = load_hardware("mi355x")
    assert read_deployment([base + "fake"], hw).engine_constants.expert_balancer == "uniform"
    kept = read_deployment([base + "static"], hw)
    assert kept.engine_constants.expert_balancer == load_engine("sglang").expert_balancer
    with pytest.raises(SpecError, match="allowed: static, dynamic"):
        read_deployment([base + "random"], hw)


def test_mori_inside_a_node_uses_the_links_to_its_peers():
    """AMD's xGMI is a mesh, one link to each of a node's 7 other GPUs: MoRI over 4 GPUs moves
    its copies on 3 of them (by hand: alpha + 4096 x 7168 x 4 (1 - (3/4)^8) B / (xgmi x 535.5
    GB/s x 3/7)), so EP 4 is slower than EP 8 for the same tokens a rank."""
    hw, eng = _mi355x()
    by_hand = MORI["alpha_dispatch"] + 4096 * HIDDEN * 4 * (1 - 0.75**8) / (
        MORI["xgmi"] * 535.5e9 * 3 / 7
    )
    t4 = float(ep_kernel_time("mori", True, 4096, 8, HIDDEN, 4, hw, eng))
    assert t4 == pytest.approx(by_hand, rel=1e-9)
    assert t4 > float(ep_kernel_time("mori", True, 4096, 8, HIDDEN, 8, hw, eng))


def test_all_to_all_kernels_without_attention_dp_are_refused():
    """MoRI, like DeepEP, feeds attention-DP ranks; a server that names it without DP attention
    is refused with the setting that would make it priceable."""
    from llm_codesign.errors import SpecError

    cmd = (
        "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 "
        "--moe-a2a-backend mori"
    )
    with pytest.raises(SpecError, match="mori.*without attention-DP.*--enable-dp-attention"):
        read_deployment([cmd], load_hardware("mi355x"))

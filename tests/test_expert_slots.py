"""EP groups that do not divide the experts: the fewest redundant copies that make the slots split
evenly (``specs.plan.expert_slots``), as TensorRT-LLM's num_slots, SGLang's and vLLM's redundant
experts under EPLB deploy them; their weights, their balancer, their launch and their reading
back."""

from __future__ import annotations

import numpy as np
import yaml
from click.testing import CliRunner

from llm_codesign import Workload, estimate, frontier, load_engine, load_model, parse_precision
from llm_codesign.cli import main
from llm_codesign.ops import weight_bytes_per_gpu
from llm_codesign.report import launch_settings
from llm_codesign.specs.plan import ParallelPlan, expert_slots, plan_feasibility, redundant_experts


def test_slots_are_the_fewest_multiple_of_ep_the_published_deployments_use():
    # TensorRT-LLM's wide-EP blog (TB4): DeepSeek-R1 at EP 36 ran 8 slots a rank (288 slots);
    # DeepSeek's own decode ran EP 144 with 32 redundant experts (moe-comm.md, DSI): 288 slots
    assert int(expert_slots(256, 36)) == 36 * 8 == 288
    assert int(expert_slots(256, 144)) == 256 + 32
    # ep dividing the experts adds none; more ranks than experts hold a copy each
    assert expert_slots(256, np.array([1, 8, 32, 256])).tolist() == [256, 256, 256, 256]
    assert int(expert_slots(8, 16)) == 16
    r1 = load_model("deepseek-r1")
    assert [redundant_experts(r1, ep) for ep in (8, 24, 40, 48, 56, 72)] == [0, 8, 24, 32, 24, 32]
    assert redundant_experts(load_model("llama-3.1-8b"), 8) == 0  # (dense: no experts)


def test_ep48_runs_and_holds_six_slots_a_rank():
    r1 = load_model("deepseek-r1")
    assert plan_feasibility(r1, 48, 1, 48, True, 1).item() == ""
    prec = parse_precision("nvfp4")
    w32, w48 = (float(weight_bytes_per_gpu(r1, prec, ep, ep, 1, True, 1)) for ep in (32, 48))
    # attention, shared experts, router, embedding are replicated under attention-DP either way;
    # a rank holds 256 / 32 = 8 experts at EP 32 and 288 / 48 = 6 slots at EP 48
    by_hand = (8 - 6) * r1.num_moe_layers * r1.expert_params * prec.weight_bytes
    assert np.isclose(w32 - w48, by_hand, rtol=1e-9)


def test_dep48_on_gb200_estimates_with_a_note():
    wl = Workload(isl=1024, osl=1024, concurrency=1024)
    plan = ParallelPlan(tp=48, ep=48, attention_dp=True)
    e = estimate("deepseek-r1", "gb200", "nvfp4", plan, wl, explain=False)
    assert e.feasible and e.tpot_ms > 0
    note = next(n for n in e.notes if "expert slots" in n)
    assert "288 expert slots (6 a rank)" in note and "32 of them" in note
    # the copies do not switch the balance priced: the engine's own balancer, as for EP 32
    assert "expert_balancer 'none'" in note
    balanced = load_engine("trtllm").with_overrides(expert_balancer="eplb")
    eplb = estimate("deepseek-r1", "gb200", "nvfp4", plan, wl, explain=False, engine=balanced)
    assert "expert_balancer 'eplb'" in " ".join(eplb.notes)
    assert eplb.tpot_ms <= e.tpot_ms  # (a balancer never makes the busiest rank busier)
    plain = estimate("deepseek-r1", "gb200", "nvfp4", ParallelPlan(tp=32, ep=32, attention_dp=True),
                     wl, explain=False)  # fmt: skip
    assert not any("expert slots" in n for n in plain.notes)


def test_launch_files_set_the_copies_each_engine_needs():
    f = frontier("deepseek-r1", "gb200", 48, precision="nvfp4", workers=1)
    c = f.points.cols
    j = next(
        j
        for j in range(len(f.points))
        if c["tp"][j] == 48 and c["ep"][j] == 48 and c["attention_dp"][j] and c["mode"][j] == 0
    )
    s = launch_settings(f, j)
    cfg = yaml.safe_load(s["trtllm"]["config_yaml"])
    assert cfg["moe_config"]["load_balancer"]["num_slots"] == 288
    assert "--enable-eplb" in s["sglang"] and "--ep-num-redundant-experts 32" in s["sglang"]
    assert "--enable-eplb" in s["vllm"] and '"num_redundant_experts": 32' in s["vllm"]
    # the files turn the balancer on, which the point did not price: said so
    assert any("turn it on" in n and "expert_balancer 'none'" in n for n in s["notes"])


def test_reading_a_deployment_back_checks_its_copies(tmp_path):
    line = "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 48 --dp 48"
    line += " --enable-dp-attention --ep 48 --enable-eplb --ep-num-redundant-experts 32"
    r = CliRunner().invoke(main, ["estimate", "--from", line, "-g", "gb200", "-c", "1024"])
    assert r.exit_code == 0, r.output
    assert "engine expert_balancer=eplb" in r.output and "checked: 288 expert slots" in r.output
    # copies that do not split over the ranks: a clean error naming the count that does
    bad = line.replace("--ep-num-redundant-experts 32", "--ep-num-redundant-experts 40")
    r = CliRunner().invoke(main, ["estimate", "--from", bad, "-g", "gb200", "-c", "1024"])
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert "do not split over ep=48" in r.output and "the fewest: 32" in r.output
    # TensorRT-LLM's load balancer with more slots than the fewest: noted, not silently priced
    opts = tmp_path / "opts.yaml"
    opts.write_text("enable_attention_dp: true\nmoe_config:\n  backend: WIDEEP\n"
                    "  load_balancer:\n    num_slots: 336\n")  # fmt: skip
    serve = f"trtllm-serve nvidia/DeepSeek-R1-FP4 --tp_size 48 --ep_size 48 --config {opts}"
    r = CliRunner().invoke(main, ["estimate", "--from", serve, "-g", "gb200", "-c", "1024"])
    assert r.exit_code == 0, r.output
    assert "336 expert slots" in r.output and "48 copies' weights are not counted" in r.output


def test_a_disaggregated_estimate_notes_each_pools_copies():
    from llm_codesign.specs.plan import DisaggregatedPlan

    dep = ParallelPlan(tp=24, ep=24, attention_dp=True)
    plan = DisaggregatedPlan(prefill=ParallelPlan(tp=8, ep=8, attention_dp=True), decode=dep,
                             prefill_workers=2, decode_workers=1)  # fmt: skip
    e = estimate("deepseek-r1", "gb200", "nvfp4", plan, Workload(isl=1024, osl=1024,
                 concurrency=512), explain=False)  # fmt: skip
    slots = [n for n in e.notes if "expert slots" in n]
    # EP 8 divides the 256 experts, EP 24 holds 264 slots (11 a rank): the decode pool's note
    assert len(slots) == 1 and slots[0].startswith("decode pool: the 256 experts")
    assert "over ep=24" in slots[0]
    assert "264 expert slots (11 a rank)" in slots[0]


def test_copies_without_a_balancer_and_settings_that_state_none(tmp_path):
    base = "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 48 --dp 48"
    base += " --enable-dp-attention --ep 48"
    r = CliRunner().invoke(main, ["estimate", "--from", base + " --ep-num-redundant-experts 32",
                                  "-g", "gb200", "-c", "1024"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "expert_balancer=eplb" not in r.output and "no load balancer named" in r.output
    # vLLM's two spellings of the count: the last one stated wins, the other is said ignored
    line = ("vllm serve deepseek-ai/DeepSeek-R1 --data-parallel-size 48 --tensor-parallel-size 1"
            " --enable-expert-parallel --enable-eplb --num-redundant-experts 80"
            ' --eplb-config \'{"num_redundant_experts": 32}\'')  # fmt: skip
    r = CliRunner().invoke(main, ["estimate", "--from", line, "-g", "gb200", "-c", "1024"])
    assert r.exit_code == 0, r.output
    assert "ignored: --num-redundant-experts 80: superseded by --eplb-config" in r.output
    # TensorRT-LLM's load_balancer left empty configures none
    opts = tmp_path / "opts.yaml"
    opts.write_text("enable_attention_dp: true\nmoe_config:\n  load_balancer: null\n")
    serve = f"trtllm-serve nvidia/DeepSeek-R1-FP4 --tp_size 8 --ep_size 8 --config {opts}"
    r = CliRunner().invoke(main, ["estimate", "--from", serve, "-g", "b200", "-c", "64"])
    assert r.exit_code == 0, r.output
    assert "no load balancer configured" in r.output and "expert_balancer=eplb" not in r.output


def test_lint_says_when_the_plan_it_offers_copies_every_expert():
    from llm_codesign.advise.lint import lint

    r = lint("mixtral-8x7b", "gb200", rules=["moe-expert-tp"])
    (f,) = [f for f in r.findings if f.rule == "moe-expert-tp"]
    ep = int(f.message.split(" EP")[1].split()[0])  # (the plan it offers)
    if ep > 8:  # (8 experts: any EP beyond 8 copies them)
        assert f"holds {ep} expert slots, {ep - 8} of them redundant copies" in f.message
    else:
        assert "redundant copies" not in f.message

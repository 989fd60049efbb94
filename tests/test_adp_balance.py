"""TensorRT-LLM's attention-DP context balance (issue 11): the round window by hand (coupon
collector and timeout), balanced prompt rounds in the step (token conservation, the busiest
rank by balls into bins), its TTFT in the closed loop, where it does nothing, the InferenceX
recipe that turns it on, the round's step carrying a request's prompt, and the engine fields'
checks."""

import math

import numpy as np
import pytest

from llm_codesign import load_hardware, load_model, parse_precision
from llm_codesign.errors import SpecError
from llm_codesign.serving import evaluate
from llm_codesign.serving.balance import adp_balance_window, context_hold_wait
from llm_codesign.serving.step import chunked_prefill, pipelined_step, poisson_max_mean
from llm_codesign.specs.engine import engine_from_mapping, load_engine
from llm_codesign.validate import map_row
from llm_codesign.validate.recipes import INFERENCEX_TRTLLM, recipe_behaviour

BASE = load_engine("base")
ON = BASE.with_overrides(adp_balance_timeout_iters=60, adp_balance_wait_iters=0)
H8 = 1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 5 + 1 / 6 + 1 / 7 + 1 / 8  # 761 / 280


def window(eng, ranks, isl, prompt_tokens, decoding):
    return float(adp_balance_window(eng, ranks, isl, prompt_tokens, decoding))


def test_round_window_by_hand():
    # one 1024-token prompt per 4 iterations on 8 ranks: every rank holds one after
    # (8 / 0.25) x H_8 = 86.97 iterations, past the timeout of 60
    assert window(ON, 8, 1024, 256, 64) == 60.0
    # one prompt per iteration: 8 x H_8 = 21.74 iterations, plus the batching wait
    assert window(ON, 8, 1024, 1024, 64) == pytest.approx(8 * H8)
    waited = ON.with_overrides(adp_balance_wait_iters=10)
    assert window(waited, 8, 1024, 1024, 64) == pytest.approx(8 * H8 + 10)
    # the batching wait only follows full coverage: at the timeout it is not added
    assert window(waited, 8, 1024, 256, 64) == 60.0


def test_no_round_window_where_the_executor_lets_contexts_through():
    assert window(BASE, 8, 1024, 1024, 64) == 0.0  # balance off (TensorRT-LLM's default)
    assert window(ON, 1, 1024, 1024, 64) == 0.0  # no attention-DP
    assert window(ON, 8, 1024, 0, 64) == 0.0  # no prompt arriving
    # one sequence per rank: a waiting request's rank has nothing else to decode
    assert window(ON, 8, 1024, 1024, 8) == 0.0
    # the ramp from one to two sequences per rank
    assert window(ON, 8, 1024, 1024, 12) == pytest.approx(0.5 * 8 * H8)


def _max_of_poisson(m, count):
    """E[max of count Poisson(m)] = sum over k of 1 - F(k)^count, written out independently."""
    total, cdf = 0.0, 0.0
    for k in range(int(m + 15 * math.sqrt(m) + 40)):
        cdf = min(cdf + math.exp(-m + k * math.log(m) - math.lgamma(k + 1)), 1.0) if m else 1.0
        total += 1.0 - cdf**count
    return total


def test_most_of_poisson_counts_by_hand():
    # two Poisson(1): (1 - 0.3679^2) + (1 - 0.7358^2) + (1 - 0.9197^2) + ... = 1.524
    assert float(poisson_max_mean(1.0, 2)) == pytest.approx(1.5238, abs=1e-4)
    for m, r in ((0.3, 8), (2.718, 8), (10.0, 32), (50.0, 4)):
        assert float(poisson_max_mean(m, r)) == pytest.approx(_max_of_poisson(m, r), rel=1e-9)
    # past the exact range: the normal approximation, within 0.1% of the sum
    assert float(poisson_max_mean(500.0, 8)) == pytest.approx(_max_of_poisson(500.0, 8), rel=1e-3)
    assert float(poisson_max_mean(0.0, 8)) == 0.0


def test_balanced_rounds_conserve_tokens_and_size_the_busiest_rank():
    """8 ranks, 1024-token prompts, 1024 prompt tokens per iteration (one prompt), 64
    decoding: W = 8 H_8 = 21.74 iterations hold n = 21.74 prompts (a round has one almost
    surely), m = H_8 = 2.718 per rank, the busiest E[max of 8 Poisson(2.718)] = 5.246 prompts
    = 5,372 tokens (under the 8,184 budget: one step per round), so 1 / W of the steps carry
    1,024 W = 22,262 tokens."""
    eng = ON.with_overrides(max_num_tokens=8192)
    share, total, rank, base = chunked_prefill(eng, 1024.0, 8, True, 64.0, 1024.0, 1.0, 64.0)
    w = 8 * H8
    most = _max_of_poisson(w / 8, 8)
    assert most == pytest.approx(5.246, abs=1e-3)
    assert float(share) == pytest.approx((1 - math.exp(-w)) / w)
    assert float(rank) == pytest.approx(most * 1024)
    assert float(share * total) == pytest.approx(1024.0)  # conserved
    assert float(rank) <= float(total) and float(base) == 0.0
    # the busiest rank past its budget: rounds of the budget, as many as it takes
    eng = ON.with_overrides(max_num_tokens=2048)
    share, total, rank, _ = chunked_prefill(eng, 1024.0, 8, True, 64.0, 1024.0, 1.0, 64.0)
    budget = 2048 - 64 / 8
    assert float(rank) == pytest.approx(budget)
    assert float(share) == pytest.approx(most * 1024 / budget * (1 - math.exp(-w)) / w)
    assert float(share * total) == pytest.approx(1024.0)
    # two pipeline micro-batches of the same per-iteration load: the same rounds, per
    # micro-batch (the balance counts executor iterations, one micro-batch each)
    s2, t2, r2, _ = chunked_prefill(eng, 1024.0, 8, True, 128.0, 2048.0, 2.0, 128.0)
    assert float(s2) == pytest.approx(float(share))
    assert float(t2) == pytest.approx(2 * float(total)) and float(r2) == pytest.approx(2 * budget)
    # balance off: the unbalanced chunk of one rank, 1 - (1 - f)^8 of the steps
    share, _, rank, _ = chunked_prefill(BASE, 1024.0, 8, True, 64.0, 1024.0, 1.0, 64.0)
    assert float(share) == pytest.approx(1 - (1 - 128 / 1024) ** 8)
    assert float(rank) == 1024.0


def test_rounds_of_rare_prompts_carry_what_arrives():
    """A prompt every 256 iterations on 8 ranks: the timeout (60) passes before every rank
    holds one, a window holds n = 60 / 256 prompts, a round happens in 1 - exp(-n) of the
    windows and carries one prompt: the share of prompt steps is the arrival rate, never a
    prompt per window (more work than arrives), and the busiest rank never holds more than the
    replica."""
    for decoding in (64.0, 8.5, 12.0):  # full window, the ramp's start, its middle
        share, total, rank, _ = chunked_prefill(ON, 1024.0, 8, True, 64.0, 4.0, 1.0, decoding)
        assert float(share * total) == pytest.approx(4.0)
        assert float(rank) <= float(total) + 1e-9
        assert float(share) <= 1 / 256 * 1.0001


R1 = load_model("deepseek-r1")
H200 = load_hardware("h200-sxm")
FP8 = parse_precision("fp8")


def _loop(eng, attention_dp, conc):
    return evaluate(
        R1, H200, FP8, eng, tp=8, ep=8, attention_dp=attention_dp, isl=1024, osl=1024,
        concurrency=conc,
    )  # fmt: skip


def test_balance_holds_contexts_back_in_the_loop():
    trt = load_engine("trtllm")
    on = trt.with_overrides(adp_balance_timeout_iters=60, adp_balance_wait_iters=0)
    off, bal = _loop(trt, True, 256), _loop(on, True, 256)
    assert bool(off.feasible) and bool(bal.feasible)
    # the wait: at least a third of the smaller of the timeout and one round, a request
    # arriving in a 60-iteration window waiting 30 on average
    assert float(bal.ttft_s) > float(off.ttft_s) + 10 * float(bal.tpot_s)
    # one client per rank or fewer, or no attention-DP: nothing changes
    for adp, conc in ((True, 4), (True, 8), (False, 256)):
        a, b = _loop(trt, adp, conc), _loop(on, adp, conc)
        for f in ("ttft_s", "tpot_s", "output_tok_s_per_gpu"):
            assert float(getattr(a, f)) == float(getattr(b, f))


def test_the_rounds_step_carries_the_prompt():
    # under the balance a request's prompt rides the round's step, which prefills every waiting
    # rank's prompts at once: its TTFT holds the round's wait (W / 2 mean steps) and that whole
    # step, which is several times a mean step (8 ranks, 8k prompts, 8 clients per rank)
    trt = load_engine("trtllm")
    on = trt.with_overrides(adp_balance_timeout_iters=60, adp_balance_wait_iters=0)
    kw = dict(tp=8, ep=8, attention_dp=True, isl=8192, osl=1024, concurrency=64)
    r = evaluate(R1, H200, FP8, on, **kw)
    dec, pre = float(r.step_decode_seqs), float(r.step_prefill_tokens)
    step = pipelined_step(
        R1, FP8, H200, on, tp=8, pp=1, ep=8, cp=1, attention_dp=True, isl=8192, osl=1024,
        decode_seqs=dec, prefill_tokens=pre,
    )  # fmt: skip
    t, t_round = float(step.total_s), float(step.prompt_step_s)
    w, wait = (float(x) for x in context_hold_wait(on, 8, 8192, pre, dec, 1.0, t))
    assert w == 60  # the timeout: a prompt per 15 iterations covers the 8 ranks in ~330
    assert t_round > 5 * t
    assert float(r.ttft_s) >= wait + t_round + on.request_overhead_s
    # without the balance the prompt's chunk rides a mean step, and nothing waits for a round
    off = evaluate(R1, H200, FP8, trt, **kw)
    assert float(off.ttft_s) < float(r.ttft_s) - wait


ROW = {
    "source_id": "inferencex_api_fixture",
    "model": "DeepSeek-R1-0528",
    "gpu": "H200",
    "num_gpus": "8",
    "precision": "fp8/?/?",
    "tp": "8",
    "pp": "",
    "ep": "8",
    "dp": "attn-DP",
    "framework": "trt (nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc14)",
    "isl": "1024",
    "osl": "1024",
    "concurrency_or_batch": "256",
    "metric": "ttft_ms",
    "value": "2135.7",
    "notes": "aggregated single-node; spec_method=none; run date 2026-05-17; "
    "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/1/attempts/1",
}


def test_inferencex_trtllm_rows_run_with_their_scripts_limits_and_the_balance():
    """InferenceX's TensorRT-LLM launch scripts (validate.recipes): KV fraction 0.75; without
    MTP max_num_tokens max(8192, ceil64(CONC + ISL + 64)); with MTP k drafts max_batch_size
    CONC // TP under attention-DP (else CONC) and max_num_tokens ceil64((k + 1) B + ISL + 64);
    the attention-DP context balance where attention-DP runs."""
    m = map_row(0, ROW)
    assert not isinstance(m, str) and m.recipe.startswith(INFERENCEX_TRTLLM)
    assert "context balance" in m.note
    eng = recipe_behaviour(m.recipe, load_engine("trtllm"))
    assert (eng.adp_balance_timeout_iters, eng.adp_balance_wait_iters) == (60, 0)
    # 256 + 1024 + 64 = 1344 -> 1344, below the script's floor of 8192
    assert (eng.max_num_tokens, eng.memory_utilization) == (8192, 0.75)
    assert eng.max_batch_size == load_engine("trtllm").max_batch_size
    # with MTP (attention-DP: 1 draft): B = 256 // 8 = 32, 2 x 32 + 1024 + 64 = 1152 (a multiple
    # of 64)
    mtp = map_row(0, dict(ROW, notes=ROW["notes"].replace("none", "mtp")))
    eng = recipe_behaviour(mtp.recipe, load_engine("trtllm"))
    assert (eng.max_batch_size, eng.max_num_tokens, mtp.spec_tokens) == (32, 1152, 1)
    # TP attention (3 drafts) at 16 clients, ISL 8192: B = 16, 4 x 16 + 8192 + 64 = 8320
    tp = dict(ROW, dp="", ep="8", concurrency_or_batch="16", isl="8192", notes=mtp.raw["notes"])
    m = map_row(0, tp)
    eng = recipe_behaviour(m.recipe, load_engine("trtllm"))
    assert (eng.max_batch_size, eng.max_num_tokens, eng.adp_balance_timeout_iters) == (16, 8320, 0)
    # not InferenceX: no recipe; InferenceX's SGLang: its script's memory fraction and chunk
    m = map_row(0, dict(ROW, source_id="aic_silicon_sample", notes=""))
    assert not isinstance(m, str) and m.recipe == ""
    m = map_row(0, dict(ROW, framework="sglang (lmsysorg/sglang:v0.5.9)"))
    assert not isinstance(m, str) and m.recipe == "inferencex-sglang:mem=820:chunk=32768"
    assert recipe_behaviour("", BASE) is BASE
    # the bare name is the attention-DP recipe (its balance); a field it does not know, or a
    # value that is not an integer, is refused rather than ignored
    assert recipe_behaviour(INFERENCEX_TRTLLM, BASE).adp_balance_timeout_iters == 60
    for bad in ("batchs=32", "tokens=1.5", "adp=yes"):
        with pytest.raises(SpecError, match="fields must be adp=, batch=, tokens="):
            recipe_behaviour(f"{INFERENCEX_TRTLLM}:{bad}", BASE)


def test_inferencex_trtllm_runs_before_the_scripts_changed():
    """Runs before 2026-01-21 had no 8192-token floor (ceil64(CONC + ISL + 64) alone), and the
    H200 DeepSeek-R1 script chose EP and attention-DP itself before 2025-11-03: EP = TP, and
    attention-DP above 32 clients at 8k/1k (above 64 at 1k/1k), whatever the API's ep/dp say."""
    old = dict(ROW, ep="1", dp="", notes=ROW["notes"].replace("2026-05-17", "2025-11-02"))
    # 1k/1k at 64 clients: TP attention, EP 8; 64 + 1024 + 64 = 1152 tokens, no floor
    m = map_row(0, dict(old, concurrency_or_batch="64"))
    assert (m.ep, m.attention_dp) == (8, False) and "its script chose EP 8" in m.note
    eng = recipe_behaviour(m.recipe, load_engine("trtllm"))
    assert eng.max_num_tokens == 1152 and eng.adp_balance_timeout_iters == 0
    # 8k/1k at 64 clients: attention-DP with its balance; 64 + 8192 + 64 = 8320
    m = map_row(0, dict(old, concurrency_or_batch="64", isl="8192"))
    assert (m.ep, m.attention_dp) == (8, True)
    eng = recipe_behaviour(m.recipe, load_engine("trtllm"))
    assert eng.max_num_tokens == 8320 and eng.adp_balance_timeout_iters == 60
    # from 2025-11-03 the row's own plan; from 2026-01-21 the floor
    dec = dict(
        old, concurrency_or_batch="64", notes=old["notes"].replace("2025-11-02", "2025-12-15")
    )
    m = map_row(0, dec)
    assert (m.ep, m.attention_dp) == (1, False) and "script chose" not in m.note
    assert recipe_behaviour(m.recipe, load_engine("trtllm")).max_num_tokens == 1152
    m = map_row(0, dict(dec, notes=old["notes"].replace("2025-11-02", "2026-01-21")))
    assert recipe_behaviour(m.recipe, load_engine("trtllm")).max_num_tokens == 8192
    # the B200 FP4 script of the same era: EP over 8 clients at TP 8 (1k/1k), attention-DP from
    # 256; its KV fraction is 0.8 (inferencex_trtllm_kv_fractions.csv), H200's 0.75
    b200 = dict(old, gpu="B200", precision="fp4/?/?", notes=old["notes"].replace("11-02", "10-20"))
    for clients, plan in (("8", (1, False)), ("16", (8, False)), ("256", (8, True))):
        m = map_row(0, dict(b200, concurrency_or_batch=clients))
        assert (m.ep, m.attention_dp) == plan
    assert recipe_behaviour(m.recipe, load_engine("trtllm")).memory_utilization == 0.8
    assert "KV fraction 0.8" in m.note and "KV fraction 0.75" in map_row(0, dec).note


def test_inferencex_gpt_oss_trtllm_rows_run_with_their_own_scripts():
    """InferenceX's TensorRT-LLM gpt-oss scripts are not the DeepSeek-R1 ones
    (validate.trtllm_scripts.INFERENCEX_GPTOSS_TRTLLM_*): max_num_tokens 20000 and KV fraction 0.85;
    on B200 max_batch_size 512, the TRTLLM MoE backend (CUTLASS from 256 clients before
    2025-10-20), an FP8 KV cache from 2025-10-20 (the model's BF16 before), and under
    attention-DP TensorRT-LLM's default context balance (50 / 10 iterations); on H200 the client
    count as batch limit, BF16 KV and no balance."""
    gpt = dict(ROW, model="gpt-oss-120b", gpu="B200", precision="fp4/?/?", tp="1", ep="1", dp="")
    m = map_row(0, dict(gpt, concurrency_or_batch="64"))
    eng = recipe_behaviour(m.recipe, load_engine("trtllm"))
    assert (eng.max_batch_size, eng.max_num_tokens, eng.memory_utilization) == (512, 20000, 0.85)
    assert eng.moe_kernels == "trtllm_gen" and eng.adp_balance_timeout_iters == 0
    assert parse_precision(m.precision).kv_fp8 and "gpt-oss recipe" in m.note
    # attention-DP at 256 clients: TensorRT-LLM's default balance counts
    dep = dict(gpt, tp="8", ep="8", dp="DEP8", concurrency_or_batch="256")
    eng = recipe_behaviour(map_row(0, dep).recipe, load_engine("trtllm"))
    assert (eng.adp_balance_timeout_iters, eng.adp_balance_wait_iters) == (50, 10)
    assert eng.moe_kernels == "trtllm_gen"
    # before 2025-10-20: CUTLASS at 256 clients (TRTLLM below), BF16 KV
    early = {
        k: v.replace("2026-05-17", "2025-10-01") if k == "notes" else v for k, v in dep.items()
    }
    m = map_row(0, early)
    eng = recipe_behaviour(m.recipe, load_engine("trtllm"))
    assert eng.moe_kernels == load_engine("trtllm").moe_kernels and "CUTLASS" in m.note
    assert not parse_precision(m.precision).kv_fp8
    m = map_row(0, dict(early, tp="1", ep="1", dp="", concurrency_or_batch="64"))
    assert recipe_behaviour(m.recipe, load_engine("trtllm")).moe_kernels == "trtllm_gen"
    # H200: the client count as batch limit, BF16 KV, no balance under attention-DP
    h200 = dict(gpt, gpu="H200", tp="8", ep="8", dp="DEP8", concurrency_or_batch="128")
    m = map_row(0, h200)
    eng = recipe_behaviour(m.recipe, load_engine("trtllm"))
    assert (eng.max_batch_size, eng.max_num_tokens, eng.adp_balance_timeout_iters) == (
        128,
        20000,
        0,
    )
    assert not parse_precision(m.precision).kv_fp8 and "no attention-DP context balance" in m.note


@pytest.mark.parametrize("value", [-1, 1.5, True, "sixty", 10**6])
def test_balance_fields_are_checked(value):
    with pytest.raises(SpecError, match="adp_balance_timeout_iters"):
        engine_from_mapping({"id": "x", "adp_balance_timeout_iters": value}, "x.yaml")
    with pytest.raises(SpecError, match="adp_balance_wait_iters"):
        BASE.with_overrides(adp_balance_wait_iters=value)


def test_balance_fields_load_from_yaml_mappings():
    eng = engine_from_mapping(
        {"id": "x", "adp_balance_timeout_iters": 60, "adp_balance_wait_iters": 10}, "x.yaml"
    )
    assert (eng.adp_balance_timeout_iters, eng.adp_balance_wait_iters) == (60, 10)
    assert np.isfinite(window(eng, 8, 1024, 1024, 64))


def test_an_engine_with_the_balance_launches_and_reads_back(tmp_path):
    """A frontier point on an engine with the balance on writes ``attention_dp_config`` in
    its TensorRT-LLM options, and the files read back (``estimate --from``) to the same
    constants and the same prediction."""
    from llm_codesign import estimate, frontier
    from llm_codesign.report import launch_settings, read_deployment, write_launch_dir

    hw = load_hardware("b200")
    eng = load_engine("trtllm").with_overrides(adp_balance_timeout_iters=60)
    f = frontier(
        "deepseek-r1", hw, num_gpus=8, isl=1024, osl=256, precision=["nvfp4"], engine=eng,
        points_per_octave=1, refine=False, workers=1, progress=False,
    )  # fmt: skip
    c = f.points.cols
    adp = [
        i for i in range(len(c["tp"])) if bool(c["attention_dp"][i]) and c["concurrency"][i] >= 64
    ]
    assert adp
    i = max(adp, key=lambda k: float(c["output_tok_s_per_gpu"][k]))
    out = tmp_path / "point"
    write_launch_dir(launch_settings(f, i), out)
    text = "\n".join(p.read_text() for p in out.glob("*.yaml"))
    assert "enable_balance: true" in text and "timeout_iters: 60" in text
    dep = read_deployment([str(out / "trtllm_node0.sh"), str(out / "bench_trtllm.sh")], hw,
                          explicit={"num_gpus": int(c["num_gpus"][i])})  # fmt: skip
    e = estimate(hardware=hw, explain=False, **dep.estimate_args())
    assert e.engine.adp_balance_timeout_iters == 60
    assert e.ttft_ms == pytest.approx(float(c["ttft_s"][i]) * 1e3, rel=1e-9)
    assert e.tpot_ms == pytest.approx(float(c["tpot_s"][i]) * 1e3, rel=1e-9)


def test_estimate_says_what_the_balance_does_to_ttft():
    """The estimate's note gives the wait the TTFT holds and the round's step that carries the
    prompt: TTFT with the balance less TTFT without it is the note's wait, plus at most the
    round's step (which carries every waiting rank's prompt, where without the balance a prompt
    rides a step of its own); below two sequences per rank it says no prompt waits."""
    from llm_codesign import estimate
    from llm_codesign.specs.plan import ParallelPlan
    from llm_codesign.specs.workload import Workload

    trt = load_engine("trtllm")
    on = trt.with_overrides(adp_balance_timeout_iters=60)
    plan = ParallelPlan(tp=8, ep=8, attention_dp=True)
    args = ("deepseek-r1", "h200-sxm", "fp8", plan)
    e_on = estimate(*args, Workload(1024, 8192, 256), engine=on, explain=False)
    e_off = estimate(*args, Workload(1024, 8192, 256), engine=trt, explain=False)
    note = next(n for n in e_on.notes if "context balance" in n)
    waited_ms = float(note.split("(")[2].split(" ms")[0].replace(",", ""))
    assert waited_ms > 100.0
    # and the round's step that carries the prompt, which the TTFT holds whole
    round_ms = float(note.split("round's step (")[1].split(" ms")[0].replace(",", ""))
    assert waited_ms * 0.99 <= e_on.ttft_ms - e_off.ttft_ms <= waited_ms + round_ms
    assert e_on.ttft_ms >= waited_ms + round_ms
    assert not any("context balance" in n for n in e_off.notes)
    few = estimate(*args, Workload(1024, 1024, 8), engine=on, explain=False)
    assert any("no prompt waits here" in n for n in few.notes)


DELAYER = ON.with_overrides(adp_balance_kind="delayer", adp_balance_timeout_iters=29)
H7 = H8 - 1 / 8


def test_sglang_prefill_delayer_window_wait_and_rounds_by_hand():
    """SGLang's delayer opens its window at a first prompt: one prompt per iteration on 8 ranks
    covers the other 7 after 8 x H_7 = 20.74 iterations (the executor's round needs 8 x H_8);
    one per 4 iterations: (8 / 0.25) H_7 = 82.96, past T = 29. The first prompt waits the
    window, the m = lambda W that join it half: W (1 + m / 2) / (1 + m) iterations a request.
    Its rounds, 1 + m prompts every W + 1 / lambda iterations, keep the mean demand."""
    assert window(DELAYER, 8, 1024, 1024, 64) == pytest.approx(8 * H7)
    assert window(DELAYER, 8, 1024, 256, 64) == 29.0
    w, wait = context_hold_wait(DELAYER, 8, 1024, 256, 64, 1, 0.05)
    m = 0.25 * 29
    assert float(w) == 29.0
    assert float(wait) == pytest.approx(29 * (1 + m / 2) / (1 + m) * 0.05)
    # the executor at the same window: half of it
    _, half = context_hold_wait(ON.with_overrides(adp_balance_timeout_iters=29), 8, 1024, 256,
                                64, 1, 0.05)  # fmt: skip
    assert float(half) == pytest.approx(29 * 0.5 * 0.05)
    eng = DELAYER.with_overrides(max_num_tokens=65536)
    share, total, rank, _ = chunked_prefill(eng, 1024.0, 8, True, 64.0, 256.0, 1.0, 64.0)
    per_round = 1 + m
    assert float(share) == pytest.approx(1 / (29 + 4))  # one step per round: under the budget
    assert float(share * total) == pytest.approx(256.0)  # conserved
    assert float(rank) == pytest.approx(_max_of_poisson(per_round / 8, 8) * 1024)


def test_an_estimate_names_the_delayer_and_points_to_the_simulator():
    from llm_codesign.serving.balance import context_hold_note

    # 800 prompt tokens per iteration of 8,192-token prompts: lambda = 0.0977, the window the
    # timeout's 29 passes (the cover, 8 / lambda x H_7 = 212, is longer), m = 2.83 joining:
    # 29 x (1 + m / 2) / (1 + m) = 18.3 iterations
    note = context_hold_note(
        load_engine("sglang").with_overrides(adp_balance_timeout_iters=29), 8, 8192, 800.0,
        64.0, 1, 0.05, 0.9,
    )[0]  # fmt: skip
    assert note.startswith("SGLang's prefill delayer on (max delay passes 30)")
    assert "18 iterations (914 ms)" in note and "--clients-start together" in note

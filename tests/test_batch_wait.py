"""TensorRT-LLM's batch waiting without attention-DP (issue 11; ``batch_wait_timeout_iters``,
``batch_wait_max_tokens_ratio``): the hold by hand (the timeout, the token share, the Poisson
tail in between), the executor's rule simulated against the mean wait, where nothing is held,
the rounds in the step (token conservation), its TTFT in the closed loop and the estimate's note,
the engine fields' checks, and a deployment that sets it launching and reading back."""

import math

import numpy as np
import pytest

from llm_codesign import load_hardware, load_model, parse_precision
from llm_codesign.errors import SpecError
from llm_codesign.serving import evaluate
from llm_codesign.serving.balance import batch_wait_window, context_hold_wait
from llm_codesign.serving.step import chunked_prefill
from llm_codesign.specs.engine import engine_from_mapping, load_engine

BASE = load_engine("base").with_overrides(max_num_tokens=16384)
# InferenceX's Qwen3.5 B200 script without attention-DP: 50 iterations, 0.45 of the budget
ON = BASE.with_overrides(batch_wait_timeout_iters=50, batch_wait_max_tokens_ratio=0.45)
THRESHOLD = 0.45 * 16384  # 7,372.8 tokens


def hold(eng, isl, prompt_tokens, decode_tokens, decoding=None, ranks=1):
    seqs = decode_tokens if decoding is None else decoding
    w, m, q = batch_wait_window(eng, ranks, isl, prompt_tokens, decode_tokens, seqs)
    return float(w), float(m), float(q)


def test_hold_by_hand():
    # one 1024-token prompt per 250 iterations, 4 decoding: 8 prompts reach the share
    # (ceil((7,372.8 - 4) / 1024) = 8), the 7 after the first come far past the timeout:
    # E[min(N, 7)] for N ~ Poisson(50 / 250) is 0.2 to 1e-6, so the hold is the timeout
    w, m, q = hold(ON, 1024, 1024 / 250, 4)
    assert w == pytest.approx(50.0, rel=1e-6) and m == pytest.approx(0.2, rel=1e-6)
    assert q < 1e-6
    # one more prompt needed (k = 1): E[min(N, 1)] = P(N >= 1) = 1 - exp(-lambda T), so
    # W = (1 - exp(-1)) / 0.02 = 31.61 at one prompt per 50 iterations of 6,349-token prompts
    # (with 8 decode tokens: two reach 7,372.8, one does not)
    w, m, q = hold(ON, 6349, 6349 / 50, 8)
    assert w == pytest.approx((1 - math.exp(-1.0)) / 0.02)
    assert q == pytest.approx(1 - math.exp(-1.0))
    # prompts arriving fast: the share releases the round before the timeout, after the
    # k = 7 arrivals behind the first, k / lambda = 14 iterations at one prompt per 2
    w, m, q = hold(ON, 1024, 512, 64)
    assert w == pytest.approx(14.0, rel=1e-4) and m == pytest.approx(7.0, rel=1e-4)
    assert q == pytest.approx(1.0, abs=1e-4)


@pytest.mark.parametrize("mu, k", [(0.2, 7), (25.0, 7), (25.0, 40), (1000.0, 20000), (3.0, 1)])
def test_capped_poisson_mean_by_hand(mu, k):
    """E[min(N, k)] and P(N >= k) for N ~ Poisson(mu), summed independently here."""
    from llm_codesign.serving.balance import _poisson_capped_mean

    pmf = [math.exp(-mu + j * math.log(mu) - math.lgamma(j + 1)) for j in range(k)]
    want_mean = sum(j * p for j, p in enumerate(pmf)) + k * (1.0 - sum(pmf))
    mean, reach = _poisson_capped_mean(np.array([mu]), np.array([float(k)]))
    assert float(mean[0]) == pytest.approx(want_mean, rel=1e-9, abs=1e-12)
    assert float(reach[0]) == pytest.approx(max(1.0 - sum(pmf), 0.0), abs=1e-9)


def test_nothing_held_where_the_executor_lets_contexts_through():
    assert hold(BASE, 1024, 4.0, 4)[0] == 0.0  # off: TensorRT-LLM's default
    assert hold(BASE.with_overrides(batch_wait_timeout_iters=50), 1024, 4.0, 4)[0] == 0.0
    assert hold(BASE.with_overrides(batch_wait_max_tokens_ratio=0.45), 1024, 4.0, 4)[0] == 0.0
    assert hold(ON, 8192, 4.0, 4)[0] == 0.0  # one 8k prompt reaches the share alone
    assert hold(ON, 1024, 4.0, 7000)[0] == 0.0  # the decode tokens with one prompt do
    assert hold(ON, 1024, 0.0, 4)[0] == 0.0  # no prompt arriving
    assert hold(ON, 1024, 4.0, 4, ranks=8)[0] == 0.0  # attention-DP: its balance instead
    # no other sequence decoding (the executor's guard against dead waiting), and the ramp
    assert hold(ON, 1024, 4.0, 1.0)[0] == 0.0
    assert hold(ON, 1024, 4.0, 1.5)[0] == pytest.approx(0.5 * hold(ON, 1024, 4.0, 4)[0])


def _simulated_wait(lam, isl, decode, threshold, timeout, iters, seed):
    """Mean iterations a prompt waits under the executor's rule, simulated: Poisson arrivals
    each iteration; while prompts are held, release them all once the held prompts' tokens
    and the decode tokens reach the threshold or the timeout has passed, else count on."""
    rng = np.random.default_rng(seed)
    held, count, waits = [], 0, []
    for it in range(iters):
        held += [it] * int(rng.poisson(lam))
        if not held:
            continue
        if count >= timeout or len(held) * isl + decode >= threshold:
            waits += [it - a for a in held]
            held, count = [], 0
        else:
            count += 1
    return float(np.mean(waits))


@pytest.mark.parametrize("lam", [0.004, 0.05, 0.3, 1.0])
def test_mean_wait_matches_the_executor_rule_simulated(lam):
    # from sparse prompts (each waits the timeout) to dense ones (the share releases rounds)
    step_s = 0.01
    _, wait = context_hold_wait(ON, 1, 1024, lam * 1024, 8.0, 1.0, step_s)
    simulated = _simulated_wait(lam, 1024, 8, THRESHOLD, 50, 120_000, seed=7)
    assert float(wait) / step_s == pytest.approx(simulated, rel=0.08)


def test_rounds_conserve_tokens():
    """One 1024-token prompt per 250 iterations: a round of 1 + m = 1.2 prompts every
    W + 1 / lambda = 300 iterations, so 1 / 300 of the steps carry 1,228.8 tokens."""
    share, total, rank, base = chunked_prefill(ON, 1024.0, 1, False, 4.0, 1024 / 250, 1.0, 4.0)
    assert float(share) == pytest.approx(1 / 300, rel=1e-6)
    assert float(total) == pytest.approx(1.2 * 1024, rel=1e-6)
    assert float(share * total) == pytest.approx(1024 / 250)  # conserved
    assert float(rank) == float(total) and float(base) == 0.0
    # off: a whole prompt in a share 4.096 / 1024 of the steps
    share, total, _, _ = chunked_prefill(BASE, 1024.0, 1, False, 4.0, 1024 / 250, 1.0, 4.0)
    assert float(share) == pytest.approx(1 / 250) and float(total) == pytest.approx(1024.0)


def _loop(eng, conc, isl=1024):
    return evaluate(
        load_model("qwen3-235b-a22b"), load_hardware("b200"), parse_precision("nvfp4"), eng,
        tp=4, ep=4, isl=isl, osl=1024, concurrency=conc,
    )  # fmt: skip


def test_batch_waiting_holds_contexts_back_in_the_loop():
    trt = load_engine("trtllm").with_overrides(max_num_tokens=16384)
    on = trt.with_overrides(batch_wait_timeout_iters=50, batch_wait_max_tokens_ratio=0.45)
    off, bw = _loop(trt, 4), _loop(on, 4)
    assert bool(off.feasible) and bool(bw.feasible)
    # sparse prompts wait about the timeout: over 40 iterations of the step
    assert float(bw.ttft_s) > float(off.ttft_s) + 40 * float(bw.tpot_s)
    # one client (nothing else decodes) or 8k prompts (one reaches the share): nothing changes
    for conc, isl in ((1, 1024), (4, 8192), (64, 8192)):
        a, b = _loop(trt, conc, isl), _loop(on, conc, isl)
        for f in ("ttft_s", "tpot_s", "output_tok_s_per_gpu"):
            assert float(getattr(a, f)) == float(getattr(b, f))


def test_estimate_says_what_batch_waiting_does_to_ttft():
    from llm_codesign import estimate
    from llm_codesign.specs.plan import ParallelPlan
    from llm_codesign.specs.workload import Workload

    trt = load_engine("trtllm").with_overrides(max_num_tokens=16384)
    on = trt.with_overrides(batch_wait_timeout_iters=50, batch_wait_max_tokens_ratio=0.45)
    args = ("qwen3-235b-a22b", "b200", "nvfp4", ParallelPlan(tp=4, ep=4))
    e_on = estimate(*args, Workload(1024, 1024, 16), engine=on, explain=False)
    e_off = estimate(*args, Workload(1024, 1024, 16), engine=trt, explain=False)
    note = next(n for n in e_on.notes if "batch waiting on" in n)
    waited_ms = float(note.split("iterations (")[1].split(" ms")[0].replace(",", ""))
    assert waited_ms > 100.0
    assert e_on.ttft_ms - e_off.ttft_ms == pytest.approx(waited_ms, rel=0.1)
    assert not any("batch waiting" in n for n in e_off.notes)
    alone = estimate(*args, Workload(8192, 1024, 16), engine=on, explain=False)
    assert any("no prompt waits here" in n for n in alone.notes)


@pytest.mark.parametrize("value", [-1, 1.5, True, "fifty", 10**6])
def test_batch_wait_fields_are_checked(value):
    with pytest.raises(SpecError, match="batch_wait_timeout_iters"):
        engine_from_mapping({"id": "x", "batch_wait_timeout_iters": value}, "x.yaml")


@pytest.mark.parametrize("ratio", [-0.1, 1.5])
def test_batch_wait_ratio_is_a_share(ratio):
    with pytest.raises(SpecError, match="batch_wait_max_tokens_ratio"):
        BASE.with_overrides(batch_wait_max_tokens_ratio=ratio)


def test_a_deployment_with_batch_waiting_reads_and_launches(tmp_path):
    """A TensorRT-LLM options file with the two keys sets the engine's constants (and is
    ignored, with the reason, under attention-DP); a frontier point of such an engine writes
    them into its options file."""
    from llm_codesign import frontier
    from llm_codesign.report import launch_settings, read_deployment

    hw = load_hardware("b200")
    opts = tmp_path / "opts.yaml"
    opts.write_text("batch_wait_timeout_iters: 50\nbatch_wait_max_tokens_ratio: 0.45\n")
    cmd = f"trtllm-serve Qwen/Qwen3-235B-A22B --tp_size 4 --ep_size 4 --config {opts}"
    dep = read_deployment([cmd], hw)
    eng = dep.estimate_args()["engine"]
    assert (eng.batch_wait_timeout_iters, eng.batch_wait_max_tokens_ratio) == (50, 0.45)
    opts.write_text(
        "enable_attention_dp: true\nbatch_wait_timeout_iters: 50\n"
        "batch_wait_max_tokens_ratio: 0.45\n"
    )
    dep = read_deployment([cmd], hw)
    assert dep.estimate_args()["engine"].batch_wait_timeout_iters == 0
    assert any("only without it" in x["reason"] for x in dep.to_dict()["ignored"])
    opts.write_text("batch_wait_max_tokens_ratio: 2\n")
    with pytest.raises(SpecError, match="batch_wait_max_tokens_ratio"):
        read_deployment([cmd], hw)
    on = load_engine("trtllm").with_overrides(
        batch_wait_timeout_iters=20, batch_wait_max_tokens_ratio=0.9
    )
    f = frontier(
        "llama-3.1-8b", hw, num_gpus=1, isl=1024, osl=256, precision=["fp8"], engine=on,
        points_per_octave=1, refine=False, workers=1, progress=False,
    )  # fmt: skip
    c = f.points.cols
    i = max(range(len(c["tp"])), key=lambda k: float(c["concurrency"][k]))
    cfg = launch_settings(f, i)["trtllm"]["config_yaml"]
    assert "batch_wait_timeout_iters: 20" in cfg and "batch_wait_max_tokens_ratio: 0.9" in cfg
    # and the written files read back to the same constants and the same prediction
    from llm_codesign import estimate
    from llm_codesign.report import write_launch_dir

    out = tmp_path / "point"
    write_launch_dir(launch_settings(f, i), out)
    dep = read_deployment([str(out / "trtllm_node0.sh"), str(out / "bench_trtllm.sh")], hw,
                          explicit={"num_gpus": int(c["num_gpus"][i])})  # fmt: skip
    e = estimate(hardware=hw, explain=False, **dep.estimate_args())
    assert (e.engine.batch_wait_timeout_iters, e.engine.batch_wait_max_tokens_ratio) == (20, 0.9)
    assert e.ttft_ms == pytest.approx(float(c["ttft_s"][i]) * 1e3, rel=1e-9)
    assert e.tpot_ms == pytest.approx(float(c["tpot_s"][i]) * 1e3, rel=1e-9)


@pytest.mark.parametrize("clients", [4, 64])
def test_the_simulator_holds_prompts_as_the_loop_prices(clients):
    """The request simulator runs the executor's rule step by step (``serving.simulate``); its
    mean TTFT with batch waiting meets the closed loop's (``serving.balance``'s mean wait) within
    10%, and both add about the same wait to the TTFT without it."""
    from llm_codesign.serving.simulate import simulate
    from llm_codesign.specs.traffic import Traffic, parse_length_dist

    model, hw, prec = load_model("qwen3-235b-a22b"), load_hardware("b200"), parse_precision("nvfp4")
    trt = load_engine("trtllm").with_overrides(max_num_tokens=16384)
    on = trt.with_overrides(batch_wait_timeout_iters=50, batch_wait_max_tokens_ratio=0.45)
    lengths = parse_length_dist("uniform:819:1024", "isl")
    traffic = Traffic(clients=clients, num_requests=20 * clients, isl=lengths, osl=lengths)
    ttft = {}
    for name, eng in (("off", trt), ("on", on)):
        loop = evaluate(model, hw, prec, eng, tp=4, ep=4, isl=922, osl=922, concurrency=clients)
        sim = simulate(model, hw, prec, eng, traffic, tp=4, ep=4).summary["ttft_ms"]["mean"]
        ttft[name] = (float(loop.ttft_s) * 1e3, sim)
    assert ttft["on"][1] == pytest.approx(ttft["on"][0], rel=0.10)
    added_loop, added_sim = ttft["on"][0] - ttft["off"][0], ttft["on"][1] - ttft["off"][1]
    assert added_sim > 300.0 and added_sim == pytest.approx(added_loop, rel=0.15)

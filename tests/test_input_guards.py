"""What a user is told where a request leaves the model's or the engine's limits: the context
window a checkpoint states, the format advisors price by default, the smaller formats a GPU
runs when weights do not fit, and a plan an engine cannot run."""

import json

import numpy as np
from click.testing import CliRunner
from test_advise import dense

from llm_codesign import Workload, estimate, load_hardware, load_model
from llm_codesign.cli import main
from llm_codesign.explore import advisor_precision
from llm_codesign.explore.operating import smaller_formats
from llm_codesign.specs.context import context_note, context_window
from llm_codesign.specs.plan import ParallelPlan
from llm_codesign.specs.precision import parse_precision


def test_context_window_as_the_config_states_it():
    # the bundled configs' max_position_embeddings (HF config.json)
    assert context_window(load_model("mixtral-8x7b")) == 32768
    assert context_window(load_model("qwen3-30b-a3b")) == 40960
    # DeepSeek's YaRN: 40 x 4096 = 163,840, as its max_position_embeddings states too
    assert context_window(load_model("deepseek-r1")) == 163840
    # rope scaling that stretches a shorter stated window: 4 x 32,768 = 131,072
    rope = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    assert context_window(dense(max_position_embeddings=32768, rope_scaling=rope)) == 131072
    # under text_config (multimodal checkpoints), and none where nothing is stated
    assert context_window(dense(text_config={"max_position_embeddings": 8192})) == 8192
    assert context_window(dense()) is None


def test_lengths_past_the_context_window_are_noted_where_numbers_are_given():
    m = load_model("mixtral-8x7b")
    assert context_note(m, 32000, 768) == []  # 32,768: exactly the window
    (note,) = context_note(m, 32000, 769)
    assert "32,769 tokens exceeds mixtral-8x7b's context window of 32,768" in note
    kw = {"hardware": "h200-sxm", "plan": ParallelPlan(tp=2)}
    long = estimate("mixtral-8x7b", workload=Workload(isl=131072, osl=1024), **kw)
    assert long.feasible and any("context window of 32,768" in n for n in long.notes)
    short = estimate("mixtral-8x7b", workload=Workload(isl=1024, osl=1024), **kw)
    assert not any("context window" in n for n in short.notes)
    # the launch settings the frontier writes say it too (the engines would refuse them)
    out = CliRunner().invoke(
        main, ["frontier", "-m", "mixtral-8x7b", "-g", "h200-sxm", "-n", "8", "--isl", "65536"]
    )
    assert out.exit_code == 0 and "context window of 32,768" in out.output


def test_advisors_price_a_quantized_checkpoint_in_its_own_format():
    h100, b200, mi355x = (load_hardware(g) for g in ("h100-sxm", "b200", "mi355x"))
    # Kimi-K2.5 ships INT4 weights (compressed-tensors): w4a16, as estimate prices it
    assert advisor_precision(load_model("kimi-k2.5"), h100, None)[0].id.startswith("w4a16")
    # gpt-oss's MXFP4 experts: MXFP8 activations where the engines take them (served_mxfp4)
    assert advisor_precision(load_model("gpt-oss-120b"), b200, None)[0].id == "mxfp4-a8"
    # (with an FP8 KV cache wherever the GPU has FP8, as for an unquantized checkpoint)
    assert advisor_precision(load_model("gpt-oss-120b"), mi355x, None)[0].id == "mxfp4-a16+fp8-kv"
    # an unquantized checkpoint: FP8 where the GPU has it; a given precision as given
    assert advisor_precision(load_model("llama-3.1-8b"), h100, None)[0].id == "fp8"
    assert advisor_precision(load_model("gpt-oss-120b"), b200, "fp8")[0].id == "fp8"
    out = CliRunner().invoke(main, ["regimes", "-m", "kimi-k2.5", "-g", "h100-sxm", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["precision"].startswith("w4a16")
    # the document says why (schema 32): the checkpoint's own INT4, with the cache it prices
    assert doc["assumptions"]["precision"].startswith("checkpoint: quantization_config")
    assert doc["assumptions"]["precision"].endswith("an fp8 KV cache on h100-sxm")


def test_weights_that_do_not_fit_name_the_smaller_formats_the_gpu_runs():
    fp8, bf16 = parse_precision("fp8"), parse_precision("bf16")
    # H100: no FP4 math, so weight-only INT4 only; B200 runs every smaller format
    assert smaller_formats(load_hardware("h100-sxm"), fp8) == ["w4a16"]
    assert smaller_formats(load_hardware("b200"), bf16) == ["fp8", "nvfp4", "mxfp4", "w4a16"]
    assert smaller_formats(load_hardware("b200"), parse_precision("w4a16")) == []
    # DeepSeek-R1 at FP8 on 8 H100s: 671 GB of weights in 640 GB
    cmd = ["estimate", "-m", "deepseek-r1", "-g", "h100-sxm", "--tp", "8", "--ep", "8"]
    out = CliRunner().invoke(main, cmd + ["-c", "64"])
    assert out.exit_code == 1
    assert "weights_exceed_memory" in out.output and "smaller weights the GPU runs: -p w4a16" in (
        out.output
    )
    out = CliRunner().invoke(main, ["regimes", "-m", "deepseek-r1", "-g", "h100-sxm"])
    assert out.exit_code != 0 and "-p w4a16" in out.output


def test_a_plan_the_engine_cannot_run_is_explained():
    # vLLM's experts are all expert-parallel or all tensor-parallel over the tp ranks
    cmd = ["estimate", "-m", "deepseek-r1", "-g", "b200", "--engine", "vllm", "--tp", "8"]
    out = CliRunner().invoke(main, cmd + ["--ep", "4", "-c", "64"])
    assert out.exit_code == 1
    assert "engine vllm runs MoE experts" in out.output
    assert "ep must be 1 or 8, got ep=4" in out.output
    assert "max concurrency that fits" not in out.output


def test_frontier_marks_points_whose_clients_queue():
    from llm_codesign.cli.frontier import QUEUED_LEGEND, _clients

    assert _clients({"concurrency": 4096, "running_concurrency": 3852.0}) == "4,096 q"
    assert _clients({"concurrency": 64, "running_concurrency": 64.0}) == 64
    # Mixtral-8x7B on 8 x B200 with SGLang: its 1,024-client points run 961 sequences at once
    out = CliRunner().invoke(
        main,
        ["frontier", "-m", "mixtral-8x7b", "-g", "b200", "-n", "8", "--engine", "sglang"],
        terminal_width=200,
    )
    assert out.exit_code == 0 and " q " in out.output
    assert QUEUED_LEGEND.split(":")[0].lstrip("; ") + ":" in out.output


def test_context_window_follows_vllms_rule_and_survives_odd_configs():
    # the smallest length key present (vLLM's max_model_len)
    assert context_window(dense(max_position_embeddings=8192, seq_length=4096)) == 4096
    # llama3 rope scaling is already in max_position_embeddings; linear multiplies it by factor
    llama3 = {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}
    assert context_window(dense(max_position_embeddings=131072, rope_scaling=llama3)) == 131072
    linear = {"type": "linear", "factor": 4.0}
    assert context_window(dense(max_position_embeddings=4096, rope_scaling=linear)) == 16384
    # YaRN: original x factor, also under transformers v5's rope_parameters
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    assert context_window(dense(max_position_embeddings=40960, rope_parameters=yarn)) == 131072
    # configs the loader accepts but that state no usable window: no crash, no false window
    for odd in (
        {"max_position_embeddings": 4096, "rope_scaling": "linear"},
        {"text_config": "none"},
        {"max_position_embeddings": True},
        {"max_position_embeddings": 0},
        {"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 1e308}},
    ):
        window = context_window(dense(**odd))
        assert window is None or 1 <= window <= 16 * 1024 * 1024
    # 32768.0 is a length as well
    assert context_window(dense(max_position_embeddings=32768.0)) == 32768


def test_advisors_fall_back_where_the_gpu_cannot_run_the_checkpoint():
    nvfp4 = {"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}
    m = dense(quantization_config=nvfp4)
    # no FP4 math on an H100: FP8 (and its FP8 cache); a B200 runs the checkpoint's NVFP4
    assert advisor_precision(m, load_hardware("h100-sxm"), None)[0].id == "fp8"
    assert advisor_precision(m, load_hardware("b200"), None)[0].id.startswith("nvfp4")
    # gpt-oss's MXFP4 on Hopper: weight-only, with an FP8 cache as for any checkpoint
    assert advisor_precision(load_model("gpt-oss-120b"), load_hardware("h100-sxm"), None)[0].id == (
        "mxfp4-a16+fp8-kv"
    )


def test_refusals_name_the_pool_and_reach_the_json():
    # the prefill pool breaks vLLM's all-or-none EP, the decode pool does not
    cmd = ["estimate", "-m", "deepseek-r1", "-g", "b200", "--engine", "vllm", "--tp", "8"]
    cmd += ["--ep", "8", "-c", "64", "--prefill-workers", "1", "--prefill-tp", "8"]
    out = CliRunner().invoke(main, [*cmd, "--prefill-ep", "4"])
    assert out.exit_code == 1 and "prefill pool: engine vllm" in out.output
    assert "ep must be 1 or 8, got ep=4" in out.output
    # the JSON's notes carry the same explanation, not the code
    cmd = ["estimate", "-m", "deepseek-r1", "-g", "b200", "--engine", "vllm", "--tp", "8"]
    out = CliRunner().invoke(main, [*cmd, "--ep", "4", "-c", "64", "--json"])
    notes = json.loads(out.output)["notes"]
    assert any("ep must be 1 or 8, got ep=4" in n for n in notes)
    assert not any("engine_moe_ep_all_or_none" in n for n in notes)


def test_the_long_regimes_stay_within_the_window():
    """Mixtral-8x7B states 32,768 tokens (max_position_embeddings): the default long prompt with
    1,024 output tokens is 32,768 - 1,024 = 31,744; DeepSeek-R1's 163,840 keeps 32,768. An
    explicit length past the window is refused with the longest that fits."""
    from llm_codesign import lint, regimes
    from llm_codesign.advise import default_workloads, parse_workload
    from llm_codesign.advise.regimes import long_isl_for
    from llm_codesign.errors import SpecError

    mix, r1 = load_model("mixtral-8x7b"), load_model("deepseek-r1")
    assert long_isl_for(mix) == 31744 and long_isl_for(r1) == 32768
    assert long_isl_for(mix, 4096) == 28672
    assert default_workloads(mix) == ["1024/1024", "31744/1024"]
    assert parse_workload("long-latency", mix).isl == 31744
    assert parse_workload("long-latency").isl == 32768  # (no model: the documented default)
    rep = regimes(mix, "h100-sxm", engine="base")
    longs = [g.point.isl for g in rep.regimes if g.name.startswith("long")]
    assert longs == [31744, 31744] and rep.assumptions["long_context"]["isl"] == 31744
    for call in (
        lambda: regimes(mix, "h100-sxm", long_isl=32768),
        lambda: lint(mix, "h100-sxm", workloads=["32768/1024"]),
    ):
        try:
            call()
        except SpecError as e:
            assert "32,768" in str(e) and "31,744" in str(e)
        else:
            raise AssertionError("a length past the window was priced")
    out = CliRunner().invoke(main, ["regimes", "-m", "mixtral-8x7b", "-g", "h100-sxm",
                                    "--long-isl", "40000"])  # fmt: skip
    assert out.exit_code != 0 and "Traceback" not in out.output and "32,768" in out.output


def test_small_windows_shorten_the_defaults_and_name_the_output_that_fills_them():
    """GPT-J-6B states 2,048 tokens: with 1,024 output tokens both default prompts are 1,024, so
    lint runs the one workload once; an OSL that fills the window is named as the cause."""
    from llm_codesign import regimes
    from llm_codesign.advise import default_workloads
    from llm_codesign.advise.regimes import isl_within
    from llm_codesign.errors import SpecError

    gptj = load_model("gpt-j-6b")
    assert context_window(gptj) == 2048
    assert default_workloads(gptj) == ["1024/1024"]
    assert isl_within(gptj, 1024, 512) == 1024 and isl_within(gptj, 32768, 512) == 1536
    try:
        regimes("mixtral-8x7b", "h100-sxm", osl=40000)
    except SpecError as e:
        assert "OSL = 40,000" in str(e) and "32,767" in str(e)
    else:
        raise AssertionError("an OSL past the window was priced")


def test_a_config_class_default_window_where_the_config_states_none():
    """Falcon-180B's and Gemma 3's configs state no length; vLLM reads their config classes'
    defaults (transformers FalconConfig 2,048, Gemma3TextConfig 131,072), so does the window."""
    assert context_window(load_model("falcon-180b")) == 2048
    assert context_window(load_model("gemma-3-27b")) == 131072
    assert context_window(dense()) is None  # (a Llama-type config that states nothing)


def test_a_pinned_concurrency_compares_alternatives_at_it():
    """``lint -w 1024/1024/1`` prices its point at one request; an alternative priced at the
    throughput goal's own concurrency (hundreds of requests) gave Qwen3-30B-A3B on H200 67-69x
    'impacts' (18,188 against 262 tok/s/GPU). Alternatives take the workload's pinned
    concurrency: at one request no plan or shape change is tens of times faster per GPU."""
    from llm_codesign import lint

    rep = lint("qwen3-30b-a3b", "h200-sxm", "fp8", workloads=["1024/1024/1"], engine="base")
    assert rep.findings and all(f.impact < 5 for f in rep.findings), [
        (f.rule, f.impact) for f in rep.findings
    ]


def test_one_window_test_for_every_length_check():
    """Mixtral-8x7B's window is 32,768 tokens: 31,744 + 1,024 fits and 31,745 + 1,024 does not,
    elementwise over arrays too; the regimes' longest prompt, their refusal and the estimate's
    note all follow that one test (``specs.context.past_window``)."""
    from llm_codesign.advise.regimes import isl_within
    from llm_codesign.errors import SpecError
    from llm_codesign.specs.context import check_window, past_window

    m = load_model("mixtral-8x7b")
    assert past_window(m, 31744, 1024) == (32768, False)
    assert past_window(m, 31745, 1024) == (32768, True)
    assert past_window(m, np.array([1, 31744, 31745, 40000]), 1024)[1].tolist() == [
        False, False, True, True,
    ]  # fmt: skip
    for isl in (1024, 31744, 31745, 40000):
        past = past_window(m, isl, 1024)[1]
        assert bool(context_note(m, isl, 1024)) == past
        assert (isl_within(m, isl, 1024) < isl) == past
        try:
            check_window(m, isl, 1024, "test")
            refused = False
        except SpecError:
            refused = True
        assert refused == past


def test_a_simulation_notes_the_sampled_lengths_past_the_window():
    """Prompts drawn uniformly on 20,000..40,000 tokens with 1,024 output tokens on
    Mixtral-8x7B (window 32,768): the note counts the requests an engine would refuse, the
    same count as the simulated lengths give by hand; fixed lengths past the window (the
    traffic's own, whatever the workload's) are all counted, and lengths inside it have none."""
    from llm_codesign import load_engine, simulate
    from llm_codesign.specs.context import context_share_note
    from llm_codesign.specs.traffic import LengthDist, Traffic, fixed

    m, hw, p = load_model("mixtral-8x7b"), load_hardware("h200-sxm"), parse_precision("fp8")
    eng = load_engine("vllm")
    wide = Traffic(clients=4, num_requests=80, isl=LengthDist("uniform", 20000.0, 40000.0),
                   osl=fixed(1024))  # fmt: skip
    r = simulate(m, hw, p, eng, wide, tp=2)
    past = int(np.count_nonzero(r.isl + r.osl > 32768))
    assert 0 < past < 80
    said = [n for n in r.notes if "context window" in n]
    assert said == [n for n in context_share_note(m, r.isl, r.osl)]
    assert said[0].startswith(f"{past} of 80 simulated requests ({past / 80:.1%})")
    at_once = Traffic(clients=4, num_requests=40, isl=fixed(40000), osl=fixed(1024))
    said = [n for n in simulate(m, hw, p, eng, at_once, tp=2).notes if "window" in n]
    assert len(said) == 1 and said[0].startswith("40 of 40 simulated requests (100.0%)")
    inside = Traffic(clients=4, num_requests=40, isl=LengthDist("uniform", 1000.0, 2000.0),
                     osl=fixed(1024))  # fmt: skip
    assert not [n for n in simulate(m, hw, p, eng, inside, tp=2).notes if "window" in n]

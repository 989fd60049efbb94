"""Rows of the forms published tables use for GPUs beyond the calibration sets (AMD Instinct,
Blackwell), as the held-out measurements state them: every row is priced or skipped with a
reason, never a crash, and the precision a row maps to is one its GPU runs."""

import csv
import dataclasses
import itertools

import numpy as np
import pytest
from test_validate_conventions import row as ix_row

from llm_codesign import load_engine, load_hardware, load_model, parse_precision
from llm_codesign.serving import evaluate
from llm_codesign.validate import REQUIRED_COLUMNS, map_row, match_model_name, validate
from llm_codesign.validate.predict import predict_rows


def row(**kw):
    """An InferenceX-form row (``test_validate_conventions.row``) on an MI355X by default."""
    base = dict(gpu="MI355X", framework="sglang (lmsysorg/sglang:v0.5.12-rocm700-mi35x)")
    return ix_row(**(base | kw))


def test_gpt_oss_w4a8_only_where_the_gpu_has_an_mxfp8_path():
    # W4A8 needs MXFP8 x MXFP4 tensor-core math and a kernel that quantizes the activations to
    # MXFP8: NVIDIA Blackwell's engines have both; CDNA4 (MI355X) has the math, but vLLM's and
    # SGLang's MXFP4 MoE on ROCm take BF16 activations (specs.checkpoint.served_mxfp4); Hopper and
    # CDNA3 (MI300X, MI325X) have no FP4 math and run the MXFP4 weights weight-only at BF16
    expect = {
        "B200": "mxfp4-a8",
        "MI355X": "mxfp4-a16",
        "H100 SXM": "mxfp4-a16",
        "MI300X": "mxfp4-a16",
        "MI325X": "mxfp4-a16",
    }
    for gpu, prec in expect.items():
        m = map_row(0, row(model="gpt-oss-120b", gpu=gpu, precision="fp4/?/?"))
        assert m.precision == prec, (gpu, m.precision)
        hw = load_hardware(m.hardware)
        assert hw.supports(parse_precision(m.precision).compute_class)
    # 8-bit activations stated (AMD's W4A8 checkpoint): W4A8 where the GPU has the path only
    for gpu, prec in {"MI355X": "mxfp4-a8", "MI300X": "mxfp4-a16"}.items():
        m = map_row(0, row(model="gpt-oss-120b", gpu=gpu, precision="fp4/mxfp8/bf16"))
        assert m.precision == prec, (gpu, m.precision)


def test_mxfp4_checkpoints_map_where_the_gpu_runs_mxfp4():
    m = map_row(0, row(model="amd/DeepSeek-R1-0528-MXFP4-v2", precision="mxfp4/?/?"))
    assert (m.model, m.precision) == ("deepseek-r1", "mxfp4")
    # (no FP4 path on CDNA3: skipped with the reason, not priced at a rate the GPU lacks)
    skipped = map_row(0, row(gpu="MI300X", precision="mxfp4/?/?"))
    assert isinstance(skipped, str) and skipped.startswith("precision not runnable")


def test_checkpoint_revision_suffixes_are_read_one_at_a_time():
    assert match_model_name("amd/DeepSeek-R1-0528-MXFP4-Preview") == "deepseek-r1"
    assert match_model_name("nvidia/DeepSeek-R1-0528-FP4-v2") == "deepseek-r1"
    # a bundled id that ends like a revision stays itself
    assert match_model_name("deepseek-ai/DeepSeek-V2-Chat") == "deepseek-v2"
    assert match_model_name("foo-v2") is None


def test_amd_multi_node_plans_have_a_scale_out_network():
    # one 400 Gb/s NIC per GPU (AMD's multi-node recipes): a 2-node plan is priced
    m, p = load_model("deepseek-r1"), parse_precision("fp8")
    for gpu in ("mi300x", "mi325x", "mi355x"):
        hw = load_hardware(gpu)
        assert hw.scaleout_bytes_per_s == 50e9
        r = evaluate(
            m, hw, p, load_engine("sglang"), tp=16, ep=16, isl=1024, osl=1024, concurrency=64
        )
        assert bool(r.feasible) and np.isfinite(r.tpot_s)


def test_varied_rows_are_priced_or_skipped_never_raised(tmp_path):
    gpus = ("MI355X", "MI300X", "MI325X", "B200", "GB200", "B300", "H100 SXM", "L40S", "A100 SXM")
    precisions = ("fp4/?/?", "mxfp4/?/?", "nvfp4/?/?", "fp8/?/?", "bf16/bf16/bf16", "int4/int4/?")
    models = ("DeepSeek-R1-0528", "gpt-oss-120b", "Qwen3-235B-A22B", "Llama-3.1-70B")
    plans = (("8", "1", ""), ("16", "16", ""), ("8", "8", "attn-DP8"))
    rows = [
        row(model=mo, gpu=g, precision=p, tp=tp, ep=ep, dp=dp, num_gpus=tp)
        for g, p, mo, (tp, ep, dp) in itertools.product(gpus, precisions, models, plans)
    ]
    path = tmp_path / "other_gpus.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(REQUIRED_COLUMNS) + ["notes"])
        w.writeheader()
        w.writerows(rows)
    rep = validate(path)
    skipped = sum(s["count"] for s in rep.skipped)
    assert len(rep.rows) + skipped == len(rows)
    assert len(rep.rows) > len(rows) // 3  # most GPU x precision pairs run
    assert all(s["reason"] for s in rep.skipped)


def test_a_group_the_model_refuses_is_counted_and_the_others_priced():
    good = map_row(0, row(gpu="B200", framework="trt", precision="fp8/?/?"))
    # a row past the mapping's checks with a format its GPU cannot run (as a caller's own
    # MappedRow may be): that group is not priced, with the reason; the other group is
    bad = dataclasses.replace(good, hardware="h100-sxm", precision="nvfp4")
    preds, notes = predict_rows([good, bad])
    assert np.isfinite(preds[0]) and not notes[0].startswith("not priced")
    assert np.isnan(preds[1]) and notes[1].startswith("not priced") and "nvfp4" in notes[1]


@pytest.mark.parametrize(
    "dp,tp,ep,expect",
    [
        # NVIDIA's plan labels: DEP = attention-DP with EP over the group, TEP = TP attention
        ("DEP8", "8", "", (8, 8, True)),
        ("TEP8", "8", "", (8, 8, False)),
        ("DEP4", "", "", (4, 4, True)),  # the label states the group: a blank tp takes it
        # attention-DP spelled as a flag
        ("attn-DP8", "8", "", (8, 8, True)),
        ("true", "8", "", (8, 8, True)),
        ("dpattn=true", "8", "", (8, 8, True)),
        ("enable_attention_dp: false", "8", "", (8, 1, False)),
        ("2", "8", "", (8, 1, False)),  # a replica count: tensor-parallel attention
        # negations after a space or inside the text, and SGLang's own spelling
        ("adp false", "8", "", (8, 1, False)),
        ("attn-DP (enable_attention_dp: false)", "8", "", (8, 1, False)),
        ("enable-dp-attention", "8", "", (8, 8, True)),
        ("attn-DP 4 replicas", "8", "", (8, 8, True)),  # a count apart from the flag: no group
        ("attn-DP4", "", "", (4, 4, True)),
    ],
)
def test_attention_dp_forms_of_the_dp_field(dp, tp, ep, expect):
    m = map_row(0, row(gpu="B200", framework="trt", dp=dp, tp=tp, ep=ep))
    assert (m.tp, m.ep, m.attention_dp) == expect


@pytest.mark.parametrize(
    "dp,tp,reason",
    [
        ("DEP8", "4", "states a group of 8"),  # a label that contradicts the row's tp
        ("dp8", "8", "dp not understood"),  # replicas or attention-DP: not guessed
        ("adpx", "8", "dp not understood"),  # a flag ends at a word boundary
    ],
)
def test_dp_fields_that_do_not_state_a_plan_are_skipped(dp, tp, reason):
    m = map_row(0, row(gpu="B200", framework="trt", dp=dp, tp=tp))
    assert isinstance(m, str) and reason in m


def test_a_dep_label_and_a_different_ep_are_a_conflict():
    m = map_row(0, row(gpu="B200", framework="trt", dp="DEP8", tp="8", ep="1"))
    assert isinstance(m, str) and "states EP 8" in m


def test_stated_kv_and_activation_formats_are_kept():
    # a BF16 KV stated with MXFP4 weights stays BF16 (twice the KV bytes of the FP8 default)
    assert map_row(0, row(precision="fp4/fp4/bf16")).precision == "mxfp4+bf16-kv"  # MI355X
    b200 = {"gpu": "B200", "framework": "trt", "model": "gpt-oss-120b"}
    # gpt-oss: "mxfp8" is not an FP8 KV, and 16-bit activations are the weight-only path
    assert map_row(0, row(**b200, precision="mxfp4/mxfp8/bf16")).precision == "mxfp4-a8"
    assert map_row(0, row(**b200, precision="mxfp4/bf16/bf16")).precision == "mxfp4-a16"


def test_validate_refuses_an_engine_on_a_gpu_it_does_not_run_on():
    # a TensorRT-LLM row on an AMD GPU (or validate --engine trtllm over AMD rows): counted with
    # the reason, not priced with constants of an engine that does not run there
    trt = map_row(0, row(framework="trt (nvcr.io/nvidia/tensorrt-llm)"))
    preds, notes = predict_rows([trt])
    assert np.isnan(preds[0]) and "runs on nvidia GPUs only" in notes[0]

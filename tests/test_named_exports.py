"""A model named by a published quantized export prices that export or says why not: the names
read by ``specs.checkpoint.EXPORT_NAMES``, the bundled ``quantization_config`` rows
(data/launch/deploy.yaml: Z.ai's block-scaled GLM-5-FP8), and the launch note where a precision's
weights are not the published export's."""

from __future__ import annotations

import pytest

from llm_codesign import ParallelPlan, Workload, estimate, load_hardware, load_model
from llm_codesign.explore import advisor_precision
from llm_codesign.report.launch_data import checkpoint_for
from llm_codesign.specs.checkpoint import (
    EXPORT_NAMES,
    default_precision,
    unread_export,
)
from llm_codesign.specs.precision import parse_precision


def test_each_export_word_prices_its_own_format():
    # the preset a word points the user to is that format (the note's advice holds)
    for _rx, word, preset, is_format in EXPORT_NAMES:
        assert is_format(parse_precision(preset).weights), word


@pytest.mark.parametrize(
    ("name", "word"),
    [
        ("nvidia/DeepSeek-R1-0528-FP4-v2", "NVFP4"),
        ("nvidia/Qwen3-235B-A22B-NVFP4", "NVFP4"),
        ("zai-org/GLM-5-FP8", "FP8"),
        ("gpt-oss-120b-mxfp4", "MXFP4"),  # not NVFP4: the "fp4" inside "mxfp4" is no word
        ("Qwen/Qwen3.5-397B-A17B-GPTQ-Int4", "INT4"),
        ("meta-llama/Llama-3.1-8B-Instruct", None),
        ("DeepSeek-R1", None),
    ],
)
def test_export_words(name, word):
    found = next((w for rx, w, _p, _t in EXPORT_NAMES if rx.search(name)), None)
    assert found == word


def test_an_unread_export_says_what_it_is_priced_at():
    # NVIDIA's NVFP4 export of Llama-3.3-70B: no quantization_config bundled, the model's own
    # checkpoint is BF16 -> BF16 with a note that names the format and the preset
    spec = load_model("nvidia/Llama-3.3-70B-Instruct-FP4")
    text, note = default_precision(spec)
    assert text == "bf16"
    assert "NVFP4 export" in note and "-p nvfp4" in note
    # DeepSeek-R1's NVFP4 export: the model's own FP8 (block) checkpoint is what is priced, and
    # said to be
    spec = load_model("nvidia/DeepSeek-R1-0528-FP4-v2")
    text, note = default_precision(spec)
    assert parse_precision(text).weights.id == "fp8_block"
    assert "NVFP4 export" in note and "-p nvfp4" in note


def test_a_read_export_has_no_note():
    for name in ("Qwen/Qwen3-235B-A22B-FP8", "gpt-oss-120b-mxfp4", "deepseek-r1", "llama-3.1-8b"):
        spec = load_model(name)
        assert unread_export(spec) == "", name


def test_glm5_fp8_is_the_block_scaled_release():
    # Z.ai's GLM-5-FP8: 128x128 block-scaled FP8 weights (deploy.yaml's row and its sources);
    # named, it prices those weights, and the BF16 model's FP8 preset stays per-tensor
    spec = load_model("zai-org/GLM-5-FP8")
    text, note = default_precision(spec)
    assert parse_precision(text).weights.id == "fp8_block"
    assert "block 128x128" in note
    assert parse_precision(default_precision(load_model("glm-5"))[0]).weights.id == "bf16"
    # served as published (its own precision is native)
    hw = load_hardware("h200")
    ck = checkpoint_for(spec, parse_precision(text), {}, hw)
    assert (ck["how"], ck["id"]) == ("native", "zai-org/GLM-5-FP8")
    # on 8 x H200 the named export fits and the BF16 release does not: 744e9 parameters x 2
    # bytes / 8 GPUs = 186 GB a GPU against 141 GB; x 1 byte (+ block scales) about 93 GB
    plan = ParallelPlan(tp=8)
    work = Workload(isl=1024, osl=1024, concurrency=8)
    assert estimate("zai-org/GLM-5-FP8", "h200", plan=plan, workload=work).feasible
    assert not estimate("glm-5", "h200", plan=plan, workload=work).feasible


def test_the_launch_names_a_published_export_in_other_weights():
    # -m glm-5 -p fp8 (per-tensor weights) is quantized at load; the note says that the
    # block-scaled export exists and how to price and serve it
    hw = load_hardware("h200")
    ck = checkpoint_for(load_model("glm-5"), parse_precision("fp8"), {}, hw)
    assert ck["how"] == "online"
    assert ck["note"].startswith("zai-org/GLM-5-FP8 is published in other FP8 weights")
    assert "-m zai-org/GLM-5-FP8" in ck["note"]
    # no such export: the note says none is known
    ck = checkpoint_for(load_model("glm-4.5"), parse_precision("fp8"), {}, hw)
    assert ck["note"].startswith("no known published FP8 checkpoint")


@pytest.mark.parametrize(
    ("alias", "priced", "noted"),
    [
        # (a bundled alias, the weights it is priced in, whether the note says it is not the
        # export's): read exports are priced as published, unread ones noted
        ("zai-org/GLM-5-FP8", "fp8_block", False),
        ("Qwen/Qwen3-235B-A22B-FP8", "fp8_block", False),
        ("gpt-oss-120b-mxfp4", "mxfp4", False),
        ("nvidia/GLM-5.1-NVFP4", "bf16", True),
        ("nvidia/DeepSeek-V3.2-NVFP4", "fp8_block", True),
        ("nvidia/Llama-3.1-8B-Instruct-FP8", "bf16", True),
        ("Mixtral-8x7B-FP8", "bf16", True),
        ("meta-llama/Llama-3.1-8B-Instruct", "bf16", False),
    ],
)
def test_bundled_aliases(alias, priced, noted):
    text, note = default_precision(load_model(alias))
    assert parse_precision(text).weights.id == priced
    assert ("export whose quantization_config is not bundled" in note) is noted


def test_an_unread_name_changes_nothing_but_the_note():
    # the export's name is kept for its note only: the estimate is the bundled model's
    plan = ParallelPlan(tp=1)
    work = Workload(isl=1024, osl=256, concurrency=4)
    named = estimate("nvidia/Llama-3.3-70B-Instruct-FP4", "b200", plan=plan, workload=work)
    bare = estimate("llama-3.3-70b", "b200", plan=plan, workload=work)
    assert (named.ttft_ms, named.tpot_ms, named.output_tok_s_per_gpu) == (
        bare.ttft_ms,
        bare.tpot_ms,
        bare.output_tok_s_per_gpu,
    )
    assert "NVFP4 export" in named.precision_note and "NVFP4" not in bare.precision_note


def test_a_launch_read_back_takes_the_name_words_of_the_one_table():
    # estimate --from reads a checkpoint name's format with specs.checkpoint.EXPORT_NAMES
    from llm_codesign.report.deploy_values import NAME_TOKENS

    assert [p for _rx, p in NAME_TOKENS[:-1]] == [p for _rx, _w, p, _t in EXPORT_NAMES]


def test_the_advisors_say_what_they_price_for_an_unread_export():
    # lint, regimes and search price an unquantized-config export name at their own default
    # (fp8 where the GPU has it); their note names the export, that price and the preset to pass
    m = load_model("nvidia/Llama-3.3-70B-Instruct-FP4")
    for gpu in ("h100-sxm", "b200"):
        prec, note = advisor_precision(m, load_hardware(gpu), None)
        assert prec.id == "fp8"
        assert "names an NVFP4 export" in note and "-p nvfp4" in note
        assert f"priced at {prec.id}, the advisors' default on {gpu}" in note
    # given, the preset is priced as asked, with no export note
    prec, note = advisor_precision(m, load_hardware("b200"), "nvfp4")
    assert prec.weights.id == "nvfp4" and "names an" not in note and note.startswith("given")


def test_the_advisors_note_states_the_kv_cache_they_price():
    # DeepSeek-R1's checkpoint keeps a BF16 cache; the advisors price FP8 where the GPU has it
    # and say so: the note's KV format is the priced one
    h200, a100 = load_hardware("h200-sxm"), load_hardware("a100-sxm-80gb")
    prec, note = advisor_precision(load_model("deepseek-r1"), h200, None)
    assert prec.kv_cache.id == "fp8" and note.endswith("an fp8 KV cache on h200-sxm")
    # no FP8 math on an A100: the advisors' 16-bit default, and the checkpoint's FP8 named
    prec, note = advisor_precision(load_model("deepseek-r1"), a100, None)
    assert prec.id == "bf16"
    assert note.startswith("the checkpoint's fp8+fp8_block-w does not run natively on a100")


def test_the_estimate_document_carries_its_precision_note():
    e = estimate(
        "nvidia/Llama-3.3-70B-Instruct-FP4",
        "h200-sxm",
        None,
        ParallelPlan(tp=8),
        Workload(1024, 128, 8),
    )
    d = e.to_dict()
    assert (
        d["precision_note"] == e.precision_note and "names an NVFP4 export" in d["precision_note"]
    )

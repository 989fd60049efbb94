"""Perplexity pipeline on a tiny Llama built and briefly trained in the test (no download)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from llm_codesign.cli.quant import quant
from llm_codesign.errors import DataFileError, SpecError
from llm_codesign.quant import evaluate_formats, perplexity

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VOCAB = 48


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A 2-layer Llama fitted to a repeating token pattern (ppl near 1), saved with a
    word-level tokenizer ``t0 .. t47``."""
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    model = transformers.LlamaForCausalLM(cfg)
    pattern = np.random.default_rng(0).integers(0, VOCAB, 16)
    ids = np.tile(pattern, 12)
    x = torch.tensor(ids[:64])[None]
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(30):
        loss = model(x, labels=x).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    model.eval()
    folder = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(folder)
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({f"t{i}": i for i in range(VOCAB)}, unk_token="t0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok).save_pretrained(folder)
    return model, ids.tolist(), folder


def test_identity_is_exact_and_coarse_formats_cost(tiny):
    model, ids, _ = tiny
    r = evaluate_formats(
        model,
        ids,
        ["fp32", "mxfp4", "nvfp4", "mxfp6", "mxfp8", "int4_g128", "int8", "bf16"],
        max_length=48,
        stride=24,
    )
    base, f = r["baseline"]["ppl"], r["formats"]
    assert base < 1.5  # the model fits its pattern
    assert f["fp32"]["ppl"] == base and f["fp32"]["delta_ppl"] == 0.0
    assert f["fp32"]["weight_sqnr_db"] is None  # lossless
    assert f["mxfp4"]["ppl"] > base and f["nvfp4"]["ppl"] > base and f["int4_g128"]["ppl"] > base
    sq = {k: v["weight_sqnr_db"] for k, v in f.items() if v["weight_sqnr_db"] is not None}
    assert sq["mxfp4"] < sq["mxfp6"] <= sq["mxfp8"] < sq["bf16"]
    assert sq["int4_g128"] < sq["int8"] < sq["bf16"]
    # weights are restored afterwards
    assert perplexity(model, ids, max_length=48, stride=24)["ppl"] == base


def test_activation_quantization_and_window(tiny):
    model, ids, _ = tiny
    r = evaluate_formats(
        model, ids, "fp8_block,fp32", max_length=48, stride=47, quantize_activations=True
    )
    assert r["activations"] and r["formats"]["fp32"]["ppl"] == r["baseline"]["ppl"]
    assert r["tokens"] == len(ids) - 1
    with pytest.raises(SpecError, match="1 <= stride < max_length, got 8, 8"):
        perplexity(model, ids, max_length=8, stride=8)


def test_cli_eval_json_and_table(tiny, tmp_path):
    _, ids, folder = tiny
    text = tmp_path / "text.txt"
    text.write_text(" ".join(f"t{i}" for i in ids))
    runner = CliRunner()
    out = runner.invoke(
        quant,
        [
            "eval",
            "--model-dir",
            str(folder),
            "--formats",
            "nvfp4,fp32",
            "--text",
            str(text),
            "--context",
            "48",
            "--stride",
            "24",
            "--json",
        ],
    )
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)  # transformers may draw a loading bar on stderr
    assert doc["tokens"] == len(ids) - 1
    assert doc["formats"]["fp32"]["ppl"] == doc["baseline"]["ppl"]
    assert doc["formats"]["nvfp4"]["ppl"] > doc["baseline"]["ppl"]
    table = runner.invoke(
        quant, ["eval", "--model-dir", str(folder), "--text", str(text), "--max-tokens", "40"]
    )
    assert table.exit_code == 0, table.output
    assert "Perplexity on 39 tokens" in table.stdout
    missing = runner.invoke(
        quant, ["eval", "--model-dir", str(folder), "--text", str(tmp_path / "nope.txt")]
    )
    assert isinstance(missing.exception, DataFileError)
    nodir = runner.invoke(quant, ["eval", "--model-dir", str(tmp_path / "x"), "--text", str(text)])
    assert isinstance(nodir.exception, DataFileError)

"""quant inspect: the JSON contract, SQNR definition, streaming, CLI rendering and errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from llm_codesign.cli.quant import quant
from llm_codesign.errors import CodesignError, DataFileError, UnknownIdError
from llm_codesign.quant import (
    PUBLISHED_ACCURACY,
    accuracy_evidence,
    error_stats,
    fake_quantize,
    inspect_checkpoint,
    layer_of,
    packed_nbytes,
)

TENSOR_KEYS = {
    "name",
    "shape",
    "format",
    "sqnr_db",
    "rel_error",
    "max_abs_error",
    "bytes",
    "nonfinite_values",
}


@pytest.fixture
def checkpoint(student_t_checkpoint):
    """The shared Student-t checkpoint (tests/conftest.py): (path, tensors)."""
    return student_t_checkpoint


def test_json_contract_and_definitions(checkpoint):
    path, tensors = checkpoint
    result = inspect_checkpoint(path, "fp8,mxfp4,nvfp4,w4a16")
    assert set(result) == {"tensors", "summary"}
    assert list(result["summary"]) == ["fp8", "mxfp4", "nvfp4", "w4a16"]
    rows = result["tensors"]
    assert len(rows) == 5 * 4  # 1-D norms are skipped
    for row in rows:
        assert set(row) == TENSOR_KEYS
        x = tensors[row["name"]].astype(np.float64)
        d = fake_quantize(tensors[row["name"]], row["format"]).astype(np.float64)
        err = x - d
        assert row["sqnr_db"] == pytest.approx(10 * math.log10((x**2).sum() / (err**2).sum()))
        assert row["rel_error"] == pytest.approx(math.sqrt((err**2).sum() / (x**2).sum()))
        assert row["max_abs_error"] == pytest.approx(np.abs(err).max())
        assert row["bytes"] == packed_nbytes(tuple(row["shape"]), row["format"])
    s = result["summary"]["nvfp4"]
    assert s["n_tensors"] == 5 and s["skipped_tensors"] == 2
    assert s["bits_per_param"] == pytest.approx(4.5, abs=0.01)
    assert s["bytes_before"] == sum(t.nbytes for t in tensors.values() if t.ndim == 2)
    assert {r["layer"] for r in s["layers"]} == {"model.layers.0", "model.layers.1", "lm_head"}
    # the heavier tail (nu = 2.5) is the most sensitive layer for the coarse formats
    assert result["summary"]["mxfp4"]["most_sensitive_layers"][0] == "model.layers.1"
    assert result["summary"]["w4a16"]["sqnr_db"] < result["summary"]["fp8"]["sqnr_db"]
    json.dumps(result)  # JSON-safe


def test_chunked_streaming_equals_whole_tensor():
    x = np.random.default_rng(2).standard_t(3, (512, 256)).astype(np.float32)
    for fid in ("nvfp4", "fp8", "fp8_block", "int8", "mxfp4"):
        whole = error_stats(x, fid)
        chunked = error_stats(x, fid, chunk_elements=256 * 100)
        assert chunked["sqnr_db"] == pytest.approx(whole["sqnr_db"], rel=1e-9)
        assert chunked["max_abs_error"] == whole["max_abs_error"]
        assert chunked["n_blocks"] == whole["n_blocks"]


def test_error_stats_identity_and_saturation():
    s = error_stats(np.ones((4, 32), np.float32), "mxfp4")
    assert s["sqnr_db"] == math.inf and s["rel_error"] == 0.0
    x = np.zeros((1, 32), np.float32)
    x[0, 0] = 7.0
    assert error_stats(x, "mxfp4")["saturated_block_share"] == 0.0


def test_layer_grouping():
    assert layer_of("model.layers.12.mlp.up_proj.weight") == "model.layers.12"
    assert layer_of("transformer.h.3.attn.c_attn.weight") == "transformer.h.3"
    assert layer_of("lm_head.weight") == "lm_head"


def test_unknown_format_is_a_codesign_error(checkpoint):
    with pytest.raises(UnknownIdError, match="allowed"):
        inspect_checkpoint(checkpoint[0], "fp8,fp5")


def test_cli_json_prints_the_contract(checkpoint):
    result = CliRunner().invoke(
        quant, ["inspect", str(checkpoint[0]), "--formats", "fp8,nvfp4", "--json"]
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc == json.loads(json.dumps(inspect_checkpoint(checkpoint[0], "fp8,nvfp4")))


def test_cli_errors(checkpoint, tmp_path):
    runner = CliRunner()
    bad = runner.invoke(quant, ["inspect", str(checkpoint[0]), "--formats", "fp5"])
    assert isinstance(bad.exception, UnknownIdError)
    (tmp_path / "junk.safetensors").write_bytes(b"\x10" + b"\0" * 7 + b"{garbage")
    bad = runner.invoke(quant, ["inspect", str(tmp_path / "junk.safetensors")])
    assert isinstance(bad.exception, DataFileError)
    assert isinstance(bad.exception, CodesignError)


def test_published_accuracy_and_evidence(checkpoint):
    keys = {
        "model",
        "model_ids",
        "checkpoint",
        "baseline",
        "precision",
        "format",
        "setting",
        "baseline_scores",
        "quantized_scores",
        "deltas",
        "claim",
        "source",
    }
    for row in PUBLISHED_ACCURACY:
        assert keys <= set(row)
        assert row["source"]  # every row cites where its numbers or claim come from
        assert row["deltas"] or row["claim"]
    r1 = PUBLISHED_ACCURACY[0]
    assert r1["model"] == "DeepSeek-R1" and r1["deltas"]["MMLU"] == pytest.approx(-0.1)
    assert r1["deltas"]["MATH-500"] == pytest.approx(-1.2)
    ev = accuracy_evidence("nvfp4", measured=inspect_checkpoint(checkpoint[0], "nvfp4,w4a16"))
    assert ev["bytes_per_element"] == 0.5625 and len(ev["published"]) >= 5
    assert ev["measured"]["sqnr_db"] > 15
    assert accuracy_evidence("w4a16")["format_id"] == "int4_g128"
    assert accuracy_evidence("int8")["published"] == []
    with pytest.raises(UnknownIdError, match="unknown quantization format 'fp5'"):
        accuracy_evidence("fp5")

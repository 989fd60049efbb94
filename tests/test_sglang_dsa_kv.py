"""SGLang's automatic KV cache format for DeepSeek Sparse Attention models
(``specs.engine.sglang_auto_kv_fp8``): FP8 on NVIDIA compute capability 10 and above, BF16
below, whatever the checkpoint quantizes (SGLang ServerArgs._set_default_nsa_kv_cache_dtype).
One rule, read by the deployment reader (``estimate --from``), written by the SGLang launch
files (tests/test_deploy.py: the round trip) and taken by InferenceX rows that leave the KV
format unstated (``validate.launch_scripts.inferencex_kv_precision``)."""

import pytest

from llm_codesign import load_hardware, load_model, validate
from llm_codesign.report.deploy_map import read_deployment
from llm_codesign.specs.engine import sglang_auto_kv_fp8
from llm_codesign.specs.precision import parse_precision

HEADER = (
    "source_id,model,gpu,num_gpus,precision,tp,pp,ep,dp,framework,isl,osl,"
    "concurrency_or_batch,metric,value,notes"
)


@pytest.mark.parametrize(
    ("model", "gpu", "fp8"),
    [
        ("glm-5", "b200", True),  # DSA on SM100
        ("glm-5", "gb300", True),
        ("deepseek-v3.2", "b200", True),
        ("glm-5", "h200-sxm", False),  # DSA on SM90: bfloat16
        ("glm-5", "mi355x", False),  # ROCm reports compute capability 9.x
        ("deepseek-r1", "b200", False),  # MLA without an indexer: the checkpoint's own rule
        ("llama-3.1-8b", "b200", False),
    ],
)
def test_the_rule_takes_dsa_models_on_blackwell_only(model, gpu, fp8):
    assert sglang_auto_kv_fp8(load_model(model), load_hardware(gpu)) is fp8


def _read_kv_bits(gpu: str, flags: str) -> int:
    """KV bits of the precision ``estimate --from`` reads from a GLM-5 SGLang launch line."""
    line = f"python3 -m sglang.launch_server --model-path zai-org/GLM-5-FP8 --tp 8 {flags}"
    dep = read_deployment([line], load_hardware(gpu), explicit={})
    return parse_precision(str(dep.estimate_args()["precision"])).kv_cache.element_bits


@pytest.mark.parametrize(
    ("gpu", "flags", "kv"),
    [
        ("b200", "", "fp8"),
        ("b200", "--kv-cache-dtype auto", "fp8"),
        ("b200", "--kv-cache-dtype bf16", "bf16"),
        ("h200-sxm", "", "bf16"),
        ("h200-sxm", "--kv-cache-dtype fp8_e4m3", "fp8"),
    ],
)
def test_estimate_from_reads_sglang_auto_as_the_engine_runs_it(gpu, flags, kv):
    assert _read_kv_bits(gpu, flags) == (8 if kv == "fp8" else 16)


def test_inferencex_sglang_rows_take_the_dsa_default(tmp_path):
    """GLM-5 FP4 on B200: the script of 2026-04-02 passed no --kv-cache-dtype (SGLang's auto:
    FP8 for DSA there), the one of 2026-04-09 passed fp8; on H200 its FP8 script never passed
    the flag (auto: BF16 on Hopper). Both Blackwell runs price an FP8 cache, the H200 run BF16."""
    rows = [
        "inferencex_api_fixture,GLM-5,B200,8,fp4,8,,1,,sglang,1024,1024,16,tpot_ms,20,"
        "aggregated single-node; spec_method=none; run date 2026-04-05",
        "inferencex_api_fixture,GLM-5,B200,8,fp4,8,,1,,sglang,1024,1024,16,tpot_ms,20,"
        "aggregated single-node; spec_method=none; run date 2026-04-12",
        "inferencex_api_fixture,GLM-5,H200,8,fp8,8,,1,,sglang,1024,1024,16,tpot_ms,20,"
        "aggregated single-node; spec_method=none; run date 2026-03-20",
    ]
    path = tmp_path / "rows.csv"
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    got = validate([str(path)]).rows
    assert [r["precision"] for r in got] == ["nvfp4", "nvfp4", "fp8+bf16-kv"]
    assert "SGLang's auto for a DSA model" in got[0]["note"]
    assert "passed --kv-cache-dtype fp8" in got[1]["note"]

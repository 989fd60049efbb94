"""SGLang's prefill delayer (issue 11; ``--enable-prefill-delayer``): the attention-DP context
balance at max delay passes - 1 iterations, read from a launch command, refused without
attention-DP, written into SGLang launch files that read back to the same prediction, and mapped
for the InferenceX SGLang runs whose script passed it."""

import pytest

from llm_codesign import load_hardware
from llm_codesign.errors import SpecError
from llm_codesign.report import read_deployment
from llm_codesign.specs.engine import SGLANG_PREFILL_DELAYER_PASSES, load_engine
from llm_codesign.validate import map_row
from llm_codesign.validate.recipes import recipe_behaviour

HW = load_hardware("b200")
CMD = (
    "python -m sglang.launch_server --model-path nvidia/DeepSeek-R1-0528-FP4 --tp 8 --dp 8 "
    "--ep 8 --enable-dp-attention --quantization modelopt_fp4"
)


def _engine(cmd):
    return read_deployment([cmd], HW).engine_constants


def test_the_delayer_is_the_balance_at_its_passes_less_one():
    # SGLang's default 30 passes: a rank's prompts wait at most 29 for every rank's
    assert SGLANG_PREFILL_DELAYER_PASSES == 30
    eng = _engine(f"{CMD} --enable-prefill-delayer")
    assert (eng.adp_balance_timeout_iters, eng.adp_balance_wait_iters) == (29, 0)
    eng = _engine(f"{CMD} --enable-prefill-delayer --prefill-delayer-max-delay-passes 10")
    assert eng.adp_balance_timeout_iters == 9
    # off: the passes flag alone is ignored by name, with the reason
    dep = read_deployment([f"{CMD} --prefill-delayer-max-delay-passes 10"], HW)
    assert dep.engine_constants.adp_balance_timeout_iters == 0
    ignored = {x["setting"]: x["reason"] for x in dep.to_dict()["ignored"]}
    assert any("prefill delayer is off" in r for r in ignored.values())


def test_the_delayer_needs_attention_dp():
    plain = CMD.replace(" --dp 8", "").replace(" --enable-dp-attention", "")
    with pytest.raises(SpecError, match="--enable-dp-attention"):
        _engine(f"{plain} --enable-prefill-delayer")


def test_an_sglang_launch_with_the_balance_writes_the_delayer_and_reads_back(tmp_path):
    from llm_codesign import estimate, frontier
    from llm_codesign.report import launch_settings, write_launch_dir

    eng = load_engine("sglang").with_overrides(adp_balance_timeout_iters=29)
    f = frontier(
        "deepseek-r1", HW, num_gpus=8, isl=1024, osl=256, precision=["nvfp4"], engine=eng,
        points_per_octave=1, refine=False, workers=1, progress=False,
    )  # fmt: skip
    c = f.points.cols
    adp = [i for i in range(len(c["tp"])) if bool(c["attention_dp"][i]) and c["tp"][i] == 8]
    assert adp
    i = max(adp, key=lambda k: float(c["output_tok_s_per_gpu"][k]))
    s = launch_settings(f, i)
    assert "--enable-prefill-delayer --prefill-delayer-max-delay-passes 30" in s["sglang"]
    out = tmp_path / "point"
    write_launch_dir(s, out)
    dep = read_deployment([str(out / "sglang_node0.sh"), str(out / "bench_sglang.sh")], HW,
                          explicit={"num_gpus": int(c["num_gpus"][i])})  # fmt: skip
    e = estimate(hardware=HW, explain=False, **dep.estimate_args())
    assert e.engine.adp_balance_timeout_iters == 29
    assert e.ttft_ms == pytest.approx(float(c["ttft_s"][i]) * 1e3, rel=1e-9)


ROW = {
    "source_id": "inferencex_api_fixture",
    "model": "DeepSeek-R1-0528",
    "gpu": "B200",
    "num_gpus": "8",
    "precision": "fp4/?/?",
    "tp": "8",
    "pp": "",
    "ep": "8",
    "dp": "true",
    "framework": "sglang",
    "isl": "1024",
    "osl": "1024",
    "concurrency_or_batch": "256",
    "metric": "ttft_ms",
    "value": "100",
    "notes": "aggregated single-node; spec_method=none; run date 2026-07-10",
}


def test_inferencex_sglang_runs_with_the_delayer_their_script_passed():
    """dsr1_fp4_b200.sh passed --enable-prefill-delayer under attention-DP from 2026-06-23
    (data/validation/inferencex_sglang_prefill_delayer.csv); not earlier, not without
    attention-DP, not on H200."""
    m = map_row(0, ROW)
    eng = recipe_behaviour(m.recipe, load_engine("sglang"))
    assert (eng.adp_balance_timeout_iters, eng.adp_balance_wait_iters) == (29, 0)
    assert "--enable-prefill-delayer" in m.note
    early = dict(ROW, notes=ROW["notes"].replace("2026-07-10", "2026-06-01"))
    for row in (early, dict(ROW, dp=""), dict(ROW, gpu="H200", precision="fp8/?/?")):
        recipe = map_row(0, row).recipe  # the script's memory fraction and chunk (validate.recipes)
        assert "delay=" not in recipe and recipe_behaviour(recipe, eng).memory_utilization > 0

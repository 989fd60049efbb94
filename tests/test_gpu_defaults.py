"""The batch limits a runtime sets itself from the GPU it starts on (``specs.gpu_defaults``):
SGLang's --chunked-prefill-size by the GPU's memory, vLLM's max_num_batched_tokens and
max_num_seqs by the GPU's memory and name. Expected values are read off the runtimes' source
(SGLang ServerArgs._handle_gpu_memory_settings; vLLM EngineArgs.get_batch_defaults, the OpenAI
server's column), not off the code under test."""

from pathlib import Path

import pytest

from llm_codesign import ParallelPlan, Workload, estimate, load_engine, load_hardware, load_sweep
from llm_codesign.errors import SpecError
from llm_codesign.serving.memory import memory_utilization, rank_token_budget
from llm_codesign.specs.engine import engine_from_mapping
from llm_codesign.specs.gpu_defaults import sglang_tier, vllm_server_limits

MIB, GIB = 2**20, 2**30


@pytest.mark.parametrize(
    ("gpu_mib", "chunk"),
    [
        (16 * 1024, 2048),  # T4 class: under 20 GiB
        (24 * 1024, 2048),  # RTX 4090: under 35 GiB
        (46068, 4096),  # L40S with ECC: under 60 GiB
        (81559, 8192),  # H100 SXM as the driver reports it
        (143771, 8192),  # H200: under 160 GiB
        (183359, 16384),  # B200: above
        (196592, 16384),  # MI300X
    ],
)
def test_sglang_chunk_by_gpu_memory(gpu_mib, chunk):
    assert sglang_tier(gpu_mib * MIB)[0] == chunk


@pytest.mark.parametrize(
    ("gpu_bytes", "name", "limits"),
    [
        (81559 * MIB, "h100-sxm NVIDIA H100 80GB HBM3", (8192, 1024)),
        (80 * GIB, "a100-sxm-80gb NVIDIA A100-SXM4-80GB", (2048, 256)),  # A100 excluded
        (48 * GIB, "l40s NVIDIA L40S", (2048, 256)),  # under 70 GiB
        (192 * GIB, "mi300x AMD Instinct MI300X", (8192, 1024)),
    ],
)
def test_vllm_server_limits_by_gpu(gpu_bytes, name, limits):
    assert vllm_server_limits(gpu_bytes, name) == limits


def test_bundled_engines_take_their_runtimes_limits_per_gpu():
    """The sglang and vllm engine files leave the limits to their runtime (0); with a GPU they
    are the runtime's own; TensorRT-LLM's do not depend on the GPU."""
    assert load_engine("sglang").max_num_tokens == 0
    got = {
        (e, h): (load_engine(e, load_hardware(h)).max_num_tokens,
                 load_engine(e, load_hardware(h)).max_batch_size)
        for e in ("sglang", "vllm", "trtllm")
        for h in ("h200-sxm", "b200", "a100-sxm-80gb")
    }  # fmt: skip
    assert got[("sglang", "h200-sxm")][0] == 8192 and got[("sglang", "b200")][0] == 16384
    assert got[("vllm", "b200")] == (8192, 1024) and got[("vllm", "a100-sxm-80gb")] == (2048, 256)
    assert {got[("trtllm", h)] for h in ("h200-sxm", "b200", "a100-sxm-80gb")} == {(8192, 2048)}


def test_a_stated_limit_is_kept():
    eng = load_engine("sglang").with_overrides(max_num_tokens=4096)
    assert load_engine(eng, load_hardware("b200")).max_num_tokens == 4096


def test_sglangs_default_fraction_on_b200_reserves_its_16k_chunk():
    """512 + 1.5 x 16,384 + 2 x 512 + 1,024 x 8 / 8 = 27,136 MiB of 183,359 reserved."""
    hw = load_hardware("b200")
    got = float(memory_utilization(hw, load_engine("sglang"), 8, 1, False))
    assert got == round((183359 - 27136) / 183359, 3) == 0.852


def test_the_priced_chunk_is_the_runtimes():
    """An SGLang estimate on a B200 prices what an engine stating 16,384 tokens prices, and a
    16k prompt then takes one chunk, not the two of an 8,192-token budget."""
    kw = dict(
        model="llama-3.1-8b",
        hardware="b200",
        precision="bf16",
        plan=ParallelPlan(),
        workload=Workload(isl=16384, osl=128, concurrency=1),
    )
    own = estimate(engine="sglang", **kw)
    for tokens, same in ((16384, True), (8192, False)):
        stated = estimate(engine=load_engine("sglang").with_overrides(max_num_tokens=tokens), **kw)
        assert (stated.ttft_ms == pytest.approx(own.ttft_ms, rel=1e-9)) is same
    assert own.assumptions()["engine_constants"]["max_num_tokens"] == 16384


def test_a_sweep_takes_each_gpus_limits(tmp_path: Path):
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "models: [llama-3.1-8b]\nhardware: [h200-sxm, b200]\nprecisions: [bf16]\n"
        "workloads: [{name: chat, isl: 1024, osl: 256}]\nengine: sglang\n"
    )
    cells = load_sweep(spec).cells()
    assert {c.hardware.id: c.engine.max_num_tokens for c in cells} == {
        "h200-sxm": 8192,
        "b200": 16384,
    }


def test_estimate_from_an_sglang_line_takes_the_gpus_chunk():
    from llm_codesign.report.deploy_map import read_deployment

    line = "python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --tp 1"
    dep = read_deployment([line], load_hardware("b200"))
    assert dep.engine_constants.max_num_tokens == 16384
    # 512 + 1.5 x 16,384 + 2 x 512 + 1,024 / 8 = 26,240 MiB reserved
    assert dep.engine_constants.memory_utilization == round((183359 - 26240) / 183359, 3)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"max_num_tokens": 0}, "max_num_tokens=0 must be >= 1, or 0 with gpu_defaults sglang"),
        ({"max_batch_size": 0, "gpu_defaults": "sglang"}, "or 0 with gpu_defaults vllm"),
        ({"gpu_defaults": "tgi"}, "gpu_defaults='tgi'; allowed: none, sglang, vllm"),
    ],
)
def test_invalid_limits_are_refused(fields, message):
    with pytest.raises(SpecError, match=message):
        engine_from_mapping({"id": "mine", **fields}, "mine.yaml")


def test_sglang_splits_its_chunk_over_dp_attention_ranks():
    """SGLang's --chunked-prefill-size is the server's; under DP attention each rank gets
    chunked_prefill_size // dp_size (ServerArgs._handle_data_parallelism). TensorRT-LLM's
    max_num_tokens is each rank's own."""
    sgl = load_engine("sglang").with_overrides(max_num_tokens=32768)
    assert float(rank_token_budget(sgl, 8)) == 4096.0 and float(rank_token_budget(sgl, 1)) == 32768
    assert float(rank_token_budget(sgl, 3)) == 10922.0  # whole tokens
    assert float(rank_token_budget(load_engine("trtllm"), 8)) == 8192.0


@pytest.mark.parametrize("adp", [True, False])
def test_a_servers_budget_prices_as_its_ranks_share(adp):
    """DeepSeek-R1 FP8 on 8 x H200, SGLang, 1k/1k at 512 clients: the server's 32,768 tokens
    under DP attention price exactly as 4,096 a rank stated per rank; without DP attention the
    scope does not matter. (The memory fraction is stated: SGLang's own reserves 1.5 MiB a
    token of the server's chunk, which would differ between the two.)"""
    kw = dict(
        model="deepseek-r1",
        hardware="h200-sxm",
        precision="fp8",
        plan=ParallelPlan(tp=8, ep=8, attention_dp=adp),
        workload=Workload(isl=1024, osl=1024, concurrency=512),
    )
    server = load_engine("sglang").with_overrides(max_num_tokens=32768, memory_utilization=0.85)
    share = 4096 if adp else 32768
    rank = server.with_overrides(token_budget_scope="rank", max_num_tokens=share)
    a, b = estimate(engine=server, **kw), estimate(engine=rank, **kw)
    for f in ("ttft_ms", "tpot_ms", "output_tok_s_per_gpu"):
        assert getattr(a, f) == pytest.approx(getattr(b, f), rel=1e-9), f

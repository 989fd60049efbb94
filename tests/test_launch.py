"""Launch artifacts (issue 14): the checkpoint holds the point's precision, engines only where
they run, one command per node, benchmark commands, files, and every flag and YAML key in the
sourced table ``data/launch/flags.yaml``."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex

import pytest
import yaml
from click.testing import CliRunner

from llm_codesign import frontier, load_engine, load_hardware, parse_precision
from llm_codesign.cli import main
from llm_codesign.explore import MODE_DISAGGREGATED
from llm_codesign.report import launch_files, launch_settings, write_launch_dir
from llm_codesign.report.launch_data import allowed, command_flags, flag_table, trtllm_moe_backend


def _point(f, *, tp, ep=None, adp=None, pp=1, precision=None, mode=0):
    c = f.points.cols
    pids = [p.id for p in f.precisions]
    for j in range(len(f.points)):
        if (
            c["tp"][j] == tp
            and c["pp"][j] == pp
            and int(c["mode"][j]) == mode
            and (ep is None or c["ep"][j] == ep)
            and (adp is None or bool(c["attention_dp"][j]) == adp)
            and (precision is None or pids[int(c["precision"][j])] == precision)
        ):
            return j
    raise AssertionError(f"no point tp={tp} ep={ep} adp={adp} pp={pp} {precision}")


def _commands(launch: dict) -> list[str]:
    """Every command line a launch writes (servers per node, benchmarks, quantization, router)."""
    roles = [launch["prefill"], launch["decode"]] if "prefill" in launch else [launch]
    out = []
    for r in roles:
        if "trtllm" in r:
            out += [line for node in r["trtllm"]["nodes"] for line in node]
        for e in ("vllm", "sglang"):
            out += [line for node in r.get(f"{e}_nodes", []) for line in node]
    out += list(launch["bench"].values())
    if launch["checkpoint"]["step"]:
        out.append(launch["checkpoint"]["step"])
    if "disaggregation" in launch and "trtllm_command" in launch["disaggregation"]:
        out.append(launch["disaggregation"]["trtllm_command"])
    return out


def _keys(d, prefix=""):
    for k, v in d.items():
        yield prefix + k
        if isinstance(v, dict):
            yield from _keys(v, prefix + k + ".")


def _check_flags_and_yaml(launch: dict) -> None:
    """Every generated CLI flag and YAML key is in the table; every YAML parses."""
    for cmd in _commands(launch):
        tool, flags = command_flags(cmd)
        assert tool, cmd
        table = allowed("commands", tool)
        assert set(flags) <= set(table) | set(allowed("commands", "mpirun")), (cmd, flags)
    for name, text in launch_files(launch).items():
        if name.endswith(".sh"):
            for line in text.splitlines():
                if line and not line.startswith(("#", ":", "set ")):
                    tool, flags = command_flags(line)
                    assert tool and set(flags) <= set(allowed("commands", tool)) | set(
                        allowed("commands", "mpirun")
                    ), line
        if not name.endswith(".yaml"):
            continue
        doc = yaml.safe_load(text)
        assert isinstance(doc, dict), name
        if name.startswith("dynamo_"):
            engine = name[len("dynamo_") : -len(".yaml")]
            ok = set(allowed("yaml", "dynamo"))
            for key in _keys(doc):
                wild = re.sub(r"^spec\.services\.[^.]+", "spec.services.*", key)
                assert wild in ok, (name, key)
            worker_flags = set(
                allowed(
                    "commands",
                    f"{'vllm serve' if engine == 'vllm' else 'python -m sglang.launch_server'}",
                )
            )
            worker_flags |= set(allowed("yaml", f"dynamo.{engine}"))
            for svc in doc["spec"]["services"].values():
                args = svc["extraPodSpec"]["mainContainer"].get("args", [])
                assert {a for a in args if a.startswith("--")} <= worker_flags, args
        elif name == "disagg.yaml":
            assert set(_keys(doc)) <= set(allowed("yaml", "trtllm-disagg")), doc
        else:  # a TensorRT-LLM LLM-API options file
            assert set(_keys(doc)) <= set(allowed("yaml", "trtllm")), (name, doc)


def test_flag_table_names_a_source_for_every_flag():
    t = flag_table()
    for group in [g for gs in t["commands"].values() for g in gs] + [
        g for gs in t["yaml"].values() for g in gs
    ]:
        src = t["sources"][group["source"]]
        assert re.match(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}:\S+$", src) or src.startswith("https://")


@pytest.fixture(scope="module")
def ds_b200():
    return frontier("deepseek-r1", "b200", 8, precision="nvfp4", workers=1)


def test_deepseek_r1_b200_nvfp4_dep8(ds_b200):
    f = ds_b200
    s = launch_settings(f, _point(f, tp=8, ep=8, adp=True))
    assert s["checkpoint"]["id"] == "nvidia/DeepSeek-R1-FP4"
    assert s["trtllm"]["command"].startswith("trtllm-serve nvidia/DeepSeek-R1-FP4 ")
    assert "--config config.yaml" in s["trtllm"]["command"]
    cfg = yaml.safe_load(s["trtllm"]["config_yaml"])
    assert cfg["tensor_parallel_size"] == 8 and cfg["moe_expert_parallel_size"] == 8
    assert cfg["enable_attention_dp"] is True and cfg["kv_cache_config"]["dtype"] == "fp8"
    assert cfg["moe_config"]["backend"] == "CUTLASS"  # Blackwell EP<=8 NVFP4, attention DP
    assert cfg["cuda_graph_config"]["max_batch_size"] == cfg["max_batch_size"]
    assert s["vllm"].startswith("vllm serve nvidia/DeepSeek-R1-FP4 ")
    assert "--quantization" not in s["vllm"]  # vLLM reads it from the checkpoint
    assert "--model-path nvidia/DeepSeek-R1-FP4" in s["sglang"]
    assert "--data-parallel-size 8" in s["vllm"] and "--dp 8 --enable-dp-attention" in s["sglang"]
    for cmd in s["bench"].values():
        assert "--random-input-len 1024" in cmd and "--random-output-len 1024" in cmd
        assert f"--max-concurrency {s['prediction']['concurrency_total']}" in cmd
    _check_flags_and_yaml(s)


def test_deepseek_r1_h200_fp8_tp8_loads_its_own_fp8_checkpoint():
    f = frontier("deepseek-r1", "h200-sxm", 8, precision="fp8", workers=1)
    s = launch_settings(f, _point(f, tp=8, adp=False, ep=8))
    assert s["checkpoint"]["how"] == "native" and s["checkpoint"]["id"] == "deepseek-ai/DeepSeek-R1"
    assert "--quantization" not in s["vllm"] and "--quantization" not in s["sglang"]
    cfg = yaml.safe_load(s["trtllm"]["config_yaml"])
    assert cfg["moe_config"]["backend"] == "CUTLASS"  # Hopper FP8
    _check_flags_and_yaml(s)


def test_llama_70b_h200_fp8_tp2_names_an_fp8_checkpoint():
    f = frontier("llama-3.1-70b", "h200-sxm", 8, precision="fp8", workers=1)
    s = launch_settings(f, _point(f, tp=2))
    ck = s["checkpoint"]
    assert ck["id"] == "nvidia/Llama-3.1-70B-Instruct-FP8" and ck["how"] == "table"
    assert "meta-llama/Llama-3.1-70B-Instruct" not in json.dumps(s["bench"])
    assert "--quantization" not in s["vllm"]  # modelopt FP8 is read from the checkpoint
    assert "moe_config" not in yaml.safe_load(s["trtllm"]["config_yaml"])
    _check_flags_and_yaml(s)


def test_gpt_oss_h100_serves_its_mxfp4_checkpoint():
    f = frontier("gpt-oss-120b", "h100-sxm", 8, workers=1)
    s = launch_settings(f, _point(f, tp=2, ep=2, precision="mxfp4-a16"))
    assert s["checkpoint"]["id"] == "openai/gpt-oss-120b" and s["checkpoint"]["how"] == "native"
    assert "--quantization" not in s["vllm"] and "--quantization" not in s["sglang"]
    # TensorRT-LLM's gpt-oss support matrix: on Hopper the TRITON backend, which takes EP but
    # not TP; a tensor-parallel MoE runs CUTLASS (the backend the estimate prices there too)
    assert yaml.safe_load(s["trtllm"]["config_yaml"])["moe_config"]["backend"] == "TRITON"
    _check_flags_and_yaml(s)
    tp_moe = launch_settings(f, _point(f, tp=2, ep=1, precision="mxfp4-a16"))
    cfg = yaml.safe_load(tp_moe["trtllm"]["config_yaml"])
    assert cfg["moe_tensor_parallel_size"] == 2 and cfg["moe_config"]["backend"] == "CUTLASS"
    # an engine priced on CUTLASS for these experts writes CUTLASS (the launch follows the estimate)
    same = load_engine("trtllm").with_overrides(moe_kernels_weight_only="same")
    hw, prec = load_hardware("h100-sxm"), parse_precision("mxfp4-a16")
    assert trtllm_moe_backend(hw, prec, 2, 1, same) == "CUTLASS"
    assert trtllm_moe_backend(hw, prec, 2, 1) == "TRITON"
    # FP8 of an MXFP4 checkpoint: no published one, so a quantization step and its output path
    s8 = launch_settings(f, _point(f, tp=2, precision="fp8"))
    assert s8["checkpoint"]["how"] == "quantize" and s8["checkpoint"]["step"]
    assert not s8["vllm"].startswith("vllm serve openai/gpt-oss-120b ")
    assert "--quantization fp8" not in s8["vllm"]
    _check_flags_and_yaml(s8)


def test_bf16_model_at_fp8_without_a_published_checkpoint_quantizes_online():
    f = frontier("llama-2-7b", "h100-sxm", 1, precision="fp8", workers=1)
    s = launch_settings(f, _point(f, tp=1))
    assert s["checkpoint"]["how"] == "online"
    assert "--quantization fp8" in s["vllm"] and "--quantization fp8" in s["sglang"]
    assert s["checkpoint"]["step"] and s["trtllm"]["command"].split()[1].startswith("./")
    _check_flags_and_yaml(s)


def test_amd_gets_no_tensorrt_llm(ds_b200):
    f = dataclasses.replace(ds_b200, hardware=load_hardware("mi300x"))
    s = launch_settings(f, _point(f, tp=8, ep=8, adp=True))
    assert "trtllm" not in s and "trtllm" not in s["bench"] and s["engines"] == ["vllm", "sglang"]
    assert any("NVIDIA GPUs only" in n for n in s["notes"])
    assert not any(n.startswith("trtllm") for n in launch_files(s))
    _check_flags_and_yaml(s)


def test_multi_node_plans_give_one_command_per_node(ds_b200):
    f = dataclasses.replace(ds_b200, hardware=load_hardware("gb200"))  # 4 GPUs per node
    adp = launch_settings(f, _point(f, tp=8, ep=8, adp=True))
    assert adp["nodes"] == 2 and len(adp["vllm_nodes"]) == 2 and len(adp["sglang_nodes"]) == 2
    assert "--headless" in adp["vllm_nodes"][1][0]
    assert "--data-parallel-start-rank 4" in adp["vllm_nodes"][1][0]
    assert [("--node-rank 0" in n[0], "--node-rank 1" in n[0]) for n in adp["sglang_nodes"]] == [
        (True, False),
        (False, True),
    ]
    assert adp["trtllm"]["command"].startswith("mpirun ") and "-np 8" in adp["trtllm"]["command"]
    tp = launch_settings(f, _point(f, tp=8, adp=False, ep=8))
    assert tp["vllm_nodes"][0][0].startswith("ray start --head")
    assert "--distributed-executor-backend ray" in tp["vllm"]
    files = launch_files(tp)
    assert {"vllm_node0.sh", "vllm_node1.sh", "sglang_node1.sh", "trtllm_node0.sh"} <= set(files)
    assert ': "${MASTER_ADDR:?set MASTER_ADDR}"' in files["sglang_node1.sh"]
    _check_flags_and_yaml(adp)
    _check_flags_and_yaml(tp)


def test_mtp_points_write_speculative_settings(ds_b200):
    f = dataclasses.replace(ds_b200, settings={**ds_b200.settings, "spec_tokens": 2})
    s = launch_settings(f, _point(f, tp=8, ep=8, adp=True))
    cfg = yaml.safe_load(s["trtllm"]["config_yaml"])
    assert cfg["speculative_config"] == {"decoding_type": "MTP", "num_nextn_predict_layers": 2}
    spec = shlex.split(s["vllm"])
    conf = json.loads(spec[spec.index("--speculative-config") + 1])
    assert conf == {"method": "mtp", "num_speculative_tokens": 2}
    assert "--speculative-num-draft-tokens 3" in s["sglang"]
    _check_flags_and_yaml(s)


def test_disaggregated_plans_deploy_prefill_and_decode_pools():
    f = frontier("llama-3.1-8b", "h100-sxm", 4, 4096, 256, precision="fp8", disagg=True, workers=1)
    c = f.points.cols
    i = next(j for j in range(len(f.points)) if int(c["mode"][j]) == MODE_DISAGGREGATED)
    s = launch_settings(f, i)
    d = s["disaggregation"]
    assert d["prefill_workers"] == int(c["prefill_workers"][i])
    files = launch_files(s)
    dgd = yaml.safe_load(files["dynamo_vllm.yaml"])
    svc = dgd["spec"]["services"]
    assert svc["VllmPrefillWorker"]["replicas"] == int(c["prefill_workers"][i])
    assert svc["VllmDecodeWorker"]["replicas"] == int(c["decode_workers"][i])
    disagg = yaml.safe_load(files["disagg.yaml"])
    assert disagg["context_servers"]["num_instances"] == int(c["prefill_workers"][i])
    assert yaml.safe_load(files["prefill.yaml"])["cache_transceiver_config"] == {
        "backend": "DEFAULT"
    }
    assert "--disaggregation-mode prefill" in s["prefill"]["sglang"]
    _check_flags_and_yaml(s)


def test_write_launch_dir_and_cli(tmp_path, ds_b200):
    s = launch_settings(ds_b200, _point(ds_b200, tp=8, ep=8, adp=True))
    paths = write_launch_dir(s, tmp_path / "a")
    names = {p.name for p in paths}
    assert {"config.yaml", "trtllm_node0.sh", "bench_vllm.sh", "launch.json"} <= names
    assert os.access(tmp_path / "a" / "vllm_node0.sh", os.X_OK)
    out = tmp_path / "cli"
    r = CliRunner().invoke(
        main,
        ["frontier", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-n", "2", "--isl", "512",
         "--osl", "128", "--precision", "fp8", "--launch-dir", str(out)],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert (out / "config.yaml").exists() and (out / "bench_sglang.sh").exists()
    assert "benchmark (vllm): vllm bench serve" in r.output


def test_launch_files_set_the_batch_the_point_runs():
    """A frontier point whose tuned engine runs fewer sequences than its clients
    (``serving.admission``: llama-3.1-8b, H100, FP8, the best point at 489 clients runs 480,
    the kernel-width step below them, where the engine pads no CUDA graph; with TensorRT-LLM's
    graphs both run at 512) gets that batch as every engine's limit, a note, and a benchmark
    that still sends all the clients."""
    from llm_codesign.explore import frontier
    from llm_codesign.report import launch_settings

    eng = load_engine("trtllm").with_overrides(cuda_graph_batches="none")
    f = frontier("llama-3.1-8b", "h100-sxm", 2, precision="fp8", workers=1, engine=eng)
    p = f.points
    tuned = [
        int(i)
        for i in f.pareto
        if p["running_concurrency"][i] < min(p["concurrency"][i], p["max_concurrency"][i]) - 1
    ]
    assert tuned, "no frontier point runs below its clients"
    i = tuned[0]
    run, conc = int(round(float(p["running_concurrency"][i]))), int(p["concurrency"][i])
    s = launch_settings(f, i)
    assert s["max_batch_per_rank"] == run
    assert f"max_batch_size: {run}" in s["trtllm"]["config_yaml"]
    assert f"--max-num-seqs {run}" in s["vllm"] and f"--max-running-requests {run}" in s["sglang"]
    assert any(f"batch limit {run} of the {conc} clients" in n for n in s["notes"])
    assert f"--max-concurrency {conc * int(p['dp'][i])}" in s["bench"]["vllm"]


def test_memory_fractions_a_launch_can_start_with():
    """A launch states at most what leaves the runtime its own memory outside the fraction
    (vLLM refuses to start where the memory free at start-up is below the fraction it asks
    for): Kimi-K2.5 on 8 x H100 nearly fills each GPU with weights, so the TensorRT-LLM-priced
    best point's KV needs vLLM at 0.993 of the GPU, past 1 - 2 GB / 85.5 GB = 0.976; the line
    says 0.976 and the note says how much less KV it holds. An infeasible point has no launch."""
    import math

    from llm_codesign.errors import SpecError
    from llm_codesign.serving.memory import RUNTIME_RESERVED_BYTES, fraction_ceiling

    hw = load_hardware("h100-sxm")
    cap = fraction_ceiling(hw, "total")
    assert cap == math.floor((1 - RUNTIME_RESERVED_BYTES / hw.device_memory) * 1000) / 1000
    f = frontier("kimi-k2.5", "h100-sxm", 8, workers=1)
    s = launch_settings(f, f.best)
    got = float(re.search(r"--gpu-memory-utilization (\S+)", s["vllm"]).group(1))
    sg = float(re.search(r"--mem-fraction-static (\S+)", s["sglang"]).group(1))
    assert got == cap and sg <= fraction_ceiling(hw, "static")
    assert any(
        n.startswith("vLLM: the point's KV cache needs a memory fraction of") for n in s["notes"]
    )
    bad = next(j for j in range(len(f.points)) if not f.points.cols["feasible"][j])
    with pytest.raises(SpecError, match="cannot run"):
        launch_settings(f, bad)

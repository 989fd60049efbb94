"""Reading deployments back (`estimate --from`, issue 17): the examples map to the plans their
flags state, every ignored flag is named with its reason, settings that change the answer and
cannot be priced exit 2 with one line, and the launch artifacts the tool writes read back to
the same plan and the same prediction (round trip)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from llm_codesign import estimate, frontier, load_engine, load_hardware
from llm_codesign.cli import main
from llm_codesign.errors import SpecError
from llm_codesign.explore import MODE_DISAGGREGATED
from llm_codesign.report import launch_settings, read_deployment, write_launch_dir
from llm_codesign.report.deploy_read import reads
from llm_codesign.report.launch_data import allowed, flag_table
from llm_codesign.specs.accuracy import accuracy_key

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "deploy"


def _run(*args: str):
    return CliRunner().invoke(main, ["estimate", *args], catch_exceptions=False)


def _json(*args: str) -> dict:
    r = _run(*args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def _flags_in(path: Path) -> list[str]:
    """Every flag written in a command file (continuations joined, comments dropped)."""
    text = path.read_text().replace("\\\n", " ")
    words = [w for ln in text.splitlines() if not ln.startswith("#") for w in shlex.split(ln)]
    return [w.split("=")[0] for w in words if w.startswith("-") and not w[1:2].isdigit()]


# (files, GPU, extra options, expected plan (tp, pp, ep, dp, attention_dp), engine, ISL, OSL,
# concurrency per replica); each expectation read off the example files by hand
CASES = {
    "trtllm": (
        ["trtllm-serve.sh", "trtllm-bench.sh"],
        "b200",
        ["--spec-acceptance", "0.7"],
        (8, 1, 8, 1, True),
        "trtllm",
        (1024, 1024, 1024),
    ),
    "vllm": (
        ["vllm-serve.sh", "vllm-bench.sh"],
        "h200-sxm",
        [],
        (8, 1, 1, 1, False),
        "vllm",
        (2048, 512, 64),
    ),
    "sglang": (
        ["sglang-launch.sh", "sglang-bench.sh"],
        "h200-sxm",
        [],
        (8, 1, 8, 1, True),
        "sglang",
        (1024, 1024, 512),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_examples_map_to_their_plan_and_name_every_ignored_flag(case):
    files, gpu, extra, plan, engine, (isl, osl, conc) = CASES[case]
    args = ["-g", gpu, *extra]
    for f in files:
        args += ["--from", str(EXAMPLES / f)]
    d = _json(*args)
    p = d["plan"]
    assert (p["tp"], p["pp"], p["ep"], p["dp"], p["attention_dp"]) == plan
    assert (d["engine"], d["isl"], d["osl"], d["concurrency"]) == (engine, isl, osl, conc)
    dep = d["deployment"]
    ignored = " ".join(x["setting"] for x in dep["ignored"])
    mapped = " ".join(x["setting"] for x in dep["mapped"])
    for f in files:
        tool_flags = _flags_in(EXAMPLES / f)
        assert tool_flags
        for flag in tool_flags:  # each flag of the file is either mapped or ignored, by name
            assert flag in ignored or flag in mapped, (f, flag)
    assert all(x["reason"] for x in dep["ignored"])
    text = _run(*args).output
    for x in dep["ignored"]:
        assert x["setting"] in text and x["reason"] in text


def test_trtllm_options_file_keys_are_mapped_or_ignored():
    d = _json(
        "-g", "b200", "--spec-acceptance", "0.7",
        "--from", str(EXAMPLES / "trtllm-serve.sh"),
    )  # fmt: skip
    import yaml

    cfg = yaml.safe_load((EXAMPLES / "trtllm-extra.yaml").read_text())
    shown = " ".join(x["setting"] for x in d["deployment"]["mapped"] + d["deployment"]["ignored"])
    for key, value in cfg.items():
        for sub in value if isinstance(value, dict) else [None]:
            dotted = f"{key}.{sub}" if sub else key
            assert dotted in shown, dotted
    assert d["deployment"]["notes"]  # no benchmark given: the workload's origin is said
    assert d["engine"] == "trtllm"


def test_dynamo_disaggregated_example():
    d = _json(
        "-g", "h100-sxm",
        "--from", str(EXAMPLES / "dynamo-disagg.yaml"),
        "--from", str(EXAMPLES / "genai-perf.sh"),
    )  # fmt: skip
    assert d["mode"] == "disaggregated"
    p = d["plan"]
    assert (p["prefill_workers"], p["decode_workers"]) == (2, 1)
    assert (p["prefill"]["tp"], p["decode"]["tp"]) == (2, 4)
    assert d["num_gpus"] == 8
    assert (d["isl"], d["osl"], d["concurrency"]) == (4000, 500, 128)
    ignored = " ".join(x["setting"] for x in d["deployment"]["ignored"])
    assert "envFromSecret" in ignored and "--url" in ignored and "--streaming" in ignored


@pytest.mark.parametrize(
    ("command", "named"),
    [
        ("vllm serve meta-llama/Llama-3.1-8B --quantization bitsandbytes", "--quantization"),
        ("vllm serve meta-llama/Llama-3.1-8B-Instruct --enforce-eager", "--enforce-eager"),
        ("vllm serve meta-llama/Llama-3.1-8B-Instruct --made-up-flag 3", "--made-up-flag"),
        ("vllm serve meta-llama/Llama-3.1-8B-Instruct --kv-cache-dtype fp4", "--kv-cache-dtype"),
        ("vllm serve deepseek-ai/DeepSeek-R1 -dp 4 -tp 2", "--data-parallel-size"),
        ("vllm serve meta-llama/Llama-3.1-8B-Instruct --speculative-config "
         "'{\"method\": \"ngram\", \"num_speculative_tokens\": 3}'", "--speculative-config"),
        ("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 "
         "--enable-deepep-moe", "--enable-deepep-moe"),
        ("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 --dp 4 "
         "--enable-dp-attention", "--dp"),
        ("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 "
         "--speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 4",
         "--speculative-eagle-topk"),
        ("trtllm-serve meta-llama/Llama-3.1-8B-Instruct --backend _autodeploy", "--backend"),
        ("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 "
         "--moe-runner-backend deep_gemm", "--moe-runner-backend"),
        ("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 --dp 8 "
         "--enable-dp-attention --moe-a2a-backend mooncake", "--moe-a2a-backend"),
        ("vllm serve deepseek-ai/DeepSeek-R1 -dp 8 --enable-expert-parallel "
         "--all2all-backend pplx", "--all2all-backend"),
        ("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 --dp 8 "
         "--enable-dp-attention --moe-a2a-backend deepep --deepep-mode turbo", "--deepep-mode"),
        ("python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8 --dp 8 "
         "--enable-dp-attention --moe-a2a-backend deepep --deepep-mode normal", "--deepep-mode"),
        ("vllm serve deepseek-ai/DeepSeek-R1 -dp 8 --enable-expert-parallel "
         "--all2all-backend deepep_high_throughput", "--all2all-backend"),
    ],
)  # fmt: skip
def test_unmappable_settings_exit_2_with_one_line(command, named):
    r = CliRunner().invoke(main, ["estimate", "-g", "h200-sxm", "--from", command])
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and named in lines[0], r.output


@pytest.mark.parametrize(
    ("bench", "named"),
    [
        ("vllm bench serve --model m --dataset-name random --random-input-len 100 "
         "--random-output-len 10 --request-rate 5 --max-concurrency 8", "--request-rate"),
        ("vllm bench serve --model m --dataset-name sharegpt --max-concurrency 8", "sharegpt"),
        ("vllm bench serve --model m --dataset-name random --random-input-len 100", "concurrency"),
    ],
)  # fmt: skip
def test_unpriceable_benchmarks_exit_2(bench, named):
    server = "vllm serve meta-llama/Llama-3.1-8B-Instruct"
    r = CliRunner().invoke(main, ["estimate", "-g", "h200-sxm", "--from", server, "--from", bench])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1 and named in r.output


def test_mtp_needs_an_acceptance_rate():
    r = CliRunner().invoke(
        main, ["estimate", "-g", "b200", "--from", str(EXAMPLES / "trtllm-serve.sh")]
    )
    assert r.exit_code == 2 and "--spec-acceptance" in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_explicit_options_override_the_deployment_and_are_listed():
    server = str(EXAMPLES / "vllm-serve.sh")
    d = _json("-g", "h200-sxm", "--from", server, "--tp", "4", "--isl", "100", "--osl", "10")
    assert d["plan"]["tp"] == 4 and d["isl"] == 100
    over = {x["setting"] for x in d["deployment"]["overridden"]}
    assert over == {"tp", "isl", "osl"}
    # replicas: a server command is one replica; --num-gpus makes a fleet of them
    d = _json("-g", "h200-sxm", "--from", "vllm serve meta-llama/Llama-3.1-8B -tp 2",
              "--num-gpus", "8")  # fmt: skip
    assert (d["plan"]["tp"], d["plan"]["dp"], d["num_gpus"]) == (2, 4, 8)


def test_command_files_join_continuations_and_skip_other_commands(tmp_path):
    script = tmp_path / "serve.sh"
    script.write_text(
        "#!/usr/bin/env bash\nset -euo pipefail\nexport NCCL_DEBUG=INFO\n"
        "CUDA_VISIBLE_DEVICES=0,1 vllm serve meta-llama/Llama-3.1-8B \\\n  -tp 2 \\\n"
        "  --port 9000\n"
    )
    dep = read_deployment([str(script)], load_hardware("h100-sxm"))
    assert dep.plan.tp == 2 and dep.engine == "vllm" and dep.model.id == "llama-3.1-8b"
    with pytest.raises(Exception, match="no such file"):
        read_deployment([str(tmp_path / "missing.sh")], load_hardware("h100-sxm"))


def test_the_read_table_covers_every_flag_the_launch_writer_uses():
    """One table: every flag and key the writer may emit for a server or a benchmark is read
    (mapped or ignored with a reason), and every flag read is listed with its source."""
    table = flag_table()
    for tool in list(table["reads"]):
        entry = reads(tool)
        known = set(entry.get("settings") or {}) | {
            f for fl in (entry.get("ignored") or {}).values() for f in fl
        }
        if tool == "trtllm-config":
            sourced = set(allowed("yaml", "trtllm"))
            leaves = {k for k in sourced if not any(o.startswith(k + ".") for o in sourced)}
            assert leaves <= known, leaves - known
        else:
            sourced = set(allowed("commands", tool)) if tool in table["commands"] else set()
            same = table["reads"][tool].get("same_as")
            if same:
                sourced = set(allowed("commands", same)) | set(allowed("yaml", tool))
            else:
                sourced |= {f for k in ("dynamo.vllm", "dynamo.sglang") for f in allowed("yaml", k)}
            assert known <= sourced, (tool, known - sourced)
            if tool in table["commands"]:
                assert set(allowed("commands", tool)) <= known, (
                    tool,
                    set(allowed("commands", tool)) - known,
                )


# the round trip: models x GPUs x precisions, one engine per (model, GPU) in turn
GRID = [
    ("llama-3.1-8b", "h100-sxm", "bf16,fp8", "trtllm"),
    ("llama-3.1-8b", "b200", "nvfp4", "sglang"),
    ("llama-3.1-70b", "h200-sxm", "fp8", "vllm"),
    ("llama-3.1-70b", "b200", "bf16,nvfp4", "trtllm"),
    ("deepseek-r1", "h200-sxm", "fp8", "sglang"),
    ("deepseek-r1", "b200", "nvfp4", "trtllm"),
    ("qwen3-30b-a3b", "h100-sxm", "bf16", "vllm"),
    ("qwen3-30b-a3b", "b200", "fp8,nvfp4", "sglang"),
]


def _round_trip(model, gpu, precisions, engine, tmp_path, *, disagg=False, spec=0, over=None):
    hw = load_hardware(gpu)
    f = frontier(
        model, hw, num_gpus=8, isl=1024, osl=256, precision=precisions.split(","),
        engine=load_engine(engine).with_overrides(**over) if over else engine,
        points_per_octave=1, refine=False, workers=1, progress=False,
        disagg=disagg, spec_tokens=spec, spec_acceptance=0.7 if spec else 0.0,
    )  # fmt: skip
    c = f.points.cols
    pareto = list(np.asarray(f.pareto))
    picks = sorted({int(f.best), *[int(i) for i in pareto[:: max(1, len(pareto) // 3)]]})
    checked = 0
    for i in picks:
        launch = launch_settings(f, i)
        out = tmp_path / f"{model}-{gpu}-{engine}-{i}"
        write_launch_dir(launch, out)
        disaggregated = int(c["mode"][i]) == MODE_DISAGGREGATED
        if disaggregated:
            server = out / f"dynamo_{engine}.yaml"
        else:
            server = out / f"{engine}_node0.sh"
        explicit = {"spec_acceptance": 0.7} if spec else {}
        if not disaggregated:
            explicit["num_gpus"] = int(c["num_gpus"][i])
        notes = " ".join(launch.get("notes", []) + launch.get("decode", {}).get("notes", []))
        # the frontier searches only plans its own engine can run (vLLM: ep = 1 or tp; the
        # notes of the other engines' artifacts may say they cannot)
        if engine == "vllm":
            assert "not expressible" not in notes, notes
        dep = read_deployment([str(server), str(out / f"bench_{engine}.sh")], hw,
                              explicit=explicit)  # fmt: skip
        want = f.point_dict(i)["plan"] if hasattr(f, "point_dict") else None
        got = dep.plan.to_dict()
        if disaggregated:
            for role, prefix in (("prefill", "p_"), ("decode", "")):
                for axis in ("tp", "pp", "ep", "cp", "attention_dp"):
                    assert got[role][axis] == type(got[role][axis])(c[prefix + axis][i]), (
                        role,
                        axis,
                    )
            assert got["prefill_workers"] == int(c["prefill_workers"][i])
            assert got["decode_workers"] == int(c["decode_workers"][i])
        else:
            for axis in ("tp", "pp", "ep", "dp", "cp", "attention_dp"):
                assert got[axis] == type(got[axis])(c[axis][i]), (axis, got, want)
        point_prec = f.precisions[int(c["precision"][i])]
        e = estimate(hardware=hw, explain=False, **dep.estimate_args())
        assert accuracy_key(e.precision) == accuracy_key(point_prec)
        assert e.precision.kv_cache == point_prec.kv_cache
        # the checkpoint's own weights (DeepSeek-R1: FP8 with 128x128 block scales) where the
        # frontier searched the per-tensor FP8 preset: the scales' bytes differ, nothing else
        same_weights = e.precision.weights == point_prec.weights
        tol = 1e-9 if same_weights else 1e-3
        for got_v, want_v in (
            (e.tpot_ms, c["tpot_s"][i] * 1e3),
            (e.ttft_ms, c["ttft_s"][i] * 1e3),
            (e.output_tok_s_per_gpu, c["output_tok_s_per_gpu"][i]),
        ):
            assert got_v == pytest.approx(float(want_v), rel=tol), (model, gpu, engine, i)
        checked += 1
    return checked


@pytest.mark.parametrize(("model", "gpu", "precisions", "engine"), GRID)
def test_launch_artifacts_read_back_to_the_same_plan_and_prediction(
    model, gpu, precisions, engine, tmp_path
):
    assert _round_trip(model, gpu, precisions, engine, tmp_path) >= 2


@pytest.mark.parametrize(
    ("model", "gpu", "engine"),
    [("deepseek-r1", "b200", "vllm"), ("llama-3.1-70b", "h200-sxm", "sglang")],
)
def test_disaggregated_launch_reads_back_through_dynamo(model, gpu, engine, tmp_path):
    assert _round_trip(model, gpu, "fp8" if "llama" in model else "nvfp4", engine, tmp_path,
                       disagg=True) >= 2  # fmt: skip


@pytest.mark.parametrize(
    ("gpu", "engine", "family"),
    [("h200-sxm", "sglang", "deepep"), ("h200-sxm", "sglang", "deepep_low_latency"),
     ("h200-sxm", "vllm", "deepep_low_latency"), ("gb200", "sglang", None),
     ("gb200", "vllm", None), ("mi355x", "sglang", "mori"), ("mi355x", "vllm", "mori")],
)  # fmt: skip
def test_moe_dispatch_family_launch_reads_back(gpu, engine, family, tmp_path):
    """Launch files run the MoE dispatch/combine kernels the estimate priced (DeepEP's modes;
    on an NVL72 rack ``auto``'s NVLink one-sided all-to-all: SGLang --moe-a2a-backend
    flashinfer, vLLM --all2all-backend flashinfer_nvlink_one_sided) and read back to it."""
    over = {"moe_comm": family} if family else None
    precision = "fp8" if gpu in ("h200-sxm", "mi355x") else "nvfp4"
    assert _round_trip("deepseek-r1", gpu, precision, engine, tmp_path, over=over) >= 2


def test_mtp_launch_reads_back(tmp_path):
    assert _round_trip("deepseek-r1", "b200", "nvfp4", "trtllm", tmp_path, spec=1) >= 2


def test_disaggregated_mtp_launch_reads_back(tmp_path):
    """A disaggregated frontier with MTP prices its decode pools speculating; the launch files
    of its points read back (speculative settings included) to the same prediction."""
    assert _round_trip("deepseek-r1", "b200", "nvfp4", "vllm", tmp_path, disagg=True,
                       spec=1) >= 2  # fmt: skip


@pytest.mark.parametrize("backend,path", [("CUTLASS", "same"), ("TRITON", "triton")])
def test_trtllm_moe_backend_sets_the_weight_only_path(tmp_path, backend, path):
    """moe_config.backend is priced: on Hopper MXFP4 experts run TRITON's Triton kernels or the
    CUTLASS runner (the engine's moe_kernels_weight_only), which moves the estimate."""
    opts = tmp_path / "extra.yaml"
    opts.write_text(f"moe_config:\n  backend: {backend}\n")
    script = tmp_path / "serve.sh"
    script.write_text(
        "trtllm-serve openai/gpt-oss-120b --tp_size 1 --backend pytorch "
        f"--extra_llm_api_options {opts}\n"
    )
    dep = read_deployment([str(script)], load_hardware("h200-sxm"))
    assert dep.engine_constants.moe_kernels_weight_only == path
    assert any("moe_config.backend" in m["setting"] for m in dep.mapped)


def test_trtllm_moe_backend_trtllm_runs_the_trtllm_gen_path(tmp_path):
    """moe_config.backend TRTLLM prices TensorRT-LLM's TRTLLM-Gen fused MoE (moe_kernels
    trtllm_gen); on B200 its narrow token tiles and own fixed chain make a TP8 decode step of
    DeepSeek-R1 NVFP4 faster than the CUTLASS runner the engine prices by default."""
    paths, tpot = {}, {}
    for backend in ("TRTLLM", "CUTLASS"):
        opts = tmp_path / f"{backend}.yaml"
        opts.write_text(f"moe_config:\n  backend: {backend}\n")
        script = tmp_path / f"{backend}.sh"
        script.write_text(
            "trtllm-serve nvidia/DeepSeek-R1-0528-FP4-v2 --tp_size 8 --ep_size 1 "
            f"--backend pytorch --extra_llm_api_options {opts}\n"
        )
        paths[backend] = read_deployment([str(script)], load_hardware("b200")).engine_constants
        args = ["estimate", "-g", "b200", "--from", str(script), "-c", "4", "--json"]
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 0, r.output
        tpot[backend] = json.loads(r.output)["tpot_ms"]
    assert paths["TRTLLM"].moe_kernels == "trtllm_gen"
    assert paths["CUTLASS"].moe_kernels == "cutlass"
    assert tpot["TRTLLM"] < tpot["CUTLASS"]


@pytest.mark.parametrize(
    ("runner", "path"),
    [("flashinfer_trtllm", "trtllm_gen"), ("flashinfer_cutlass", "cutlass"), ("triton", "triton"),
     ("auto", "auto")],
)  # fmt: skip
def test_sglang_moe_runner_backend_sets_the_kernel_path(runner, path):
    """SGLang's --moe-runner-backend is priced: FlashInfer's TRTLLM-Gen runner (what InferenceX's
    Blackwell SGLang scripts pass), its CUTLASS one, or fused_moe's Triton kernels."""
    cmd = (
        "python -m sglang.launch_server --model-path nvidia/DeepSeek-R1-0528-FP4-v2 --tp 8 "
        f"--quantization modelopt_fp4 --moe-runner-backend {runner}"
    )
    dep = read_deployment([cmd], load_hardware("b200"))
    assert dep.engine_constants.moe_kernels == path
    assert any("--moe-runner-backend" in m["setting"] for m in dep.mapped)


@pytest.mark.parametrize(
    ("flags", "family"),
    [
        ("--moe-a2a-backend deepep", "deepep"),
        ("--moe-a2a-backend deepep --deepep-mode low_latency", "deepep_low_latency"),
        ("--enable-deepep-moe --deepep-mode low_latency", "deepep_low_latency"),
        ("--moe-a2a-backend flashinfer", "nvlink_one_sided"),
        ("--moe-a2a-backend none", "allgather_reducescatter"),
    ],
)
def test_sglang_moe_a2a_backend_sets_the_dispatch_family(flags, family):
    """SGLang's --moe-a2a-backend (and --deepep-mode) is priced as the dispatch/combine kernel
    family it runs (the GB200 wide-EP recipes of InferenceX pass deepep low_latency)."""
    cmd = (
        "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 16 --dp 16 "
        f"--enable-dp-attention --ep 16 {flags}"
    )
    dep = read_deployment([cmd], load_hardware("h200-sxm"))
    assert dep.engine_constants.moe_comm == family
    said = [m for m in dep.mapped if f"moe_comm={family}" in m["maps_to"]]
    assert said and all("--" in m["setting"] for m in said)


@pytest.mark.parametrize(
    ("backend", "family"),
    [
        ("deepep_low_latency", "deepep_low_latency"),
        ("flashinfer_nvlink_one_sided", "nvlink_one_sided"),
        ("allgather_reducescatter", "allgather_reducescatter"),
    ],
)
def test_vllm_all2all_backend_sets_the_dispatch_family(backend, family):
    cmd = (
        "vllm serve deepseek-ai/DeepSeek-R1 --data-parallel-size 16 --enable-expert-parallel "
        f"--all2all-backend {backend}"
    )
    dep = read_deployment([cmd], load_hardware("h200-sxm"))
    assert dep.engine_constants.moe_comm == family


def test_deepep_moves_a_multi_node_estimate():
    """DeepEP's low-latency kernels across two H200 nodes are priced by DeepEP's own RDMA
    figures, not the engine's all-gather: the same deployment predicts a different TPOT."""
    base = (
        "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 16 --dp 16 "
        "--enable-dp-attention --ep 16"
    )
    hw = load_hardware("h200-sxm")
    tpot = {}
    for flags in ("", " --moe-a2a-backend deepep --deepep-mode low_latency"):
        dep = read_deployment([base + flags], hw)
        tpot[flags] = estimate(hardware=hw, **dep.estimate_args()).tpot_ms
    assert len(set(tpot.values())) == 2


def test_moe_a2a_settings_the_server_does_not_use_are_skipped_with_their_reason():
    """A dense model runs no all-to-all (SGLang), vLLM's backend needs data and expert
    parallelism; SGLang's older --enable-deepep-moe wins over --moe-a2a-backend, and DeepEP
    or FlashInfer's all-to-all set ep to tp (SGLang's _handle_a2a_moe)."""
    hw = load_hardware("h200-sxm")
    dense = read_deployment(["python -m sglang.launch_server --model-path "
                             "meta-llama/Llama-3.1-8B-Instruct --moe-a2a-backend deepep"],
                            hw)  # fmt: skip
    assert dense.engine_constants.moe_comm == "auto"
    assert any("dense" in x["reason"] for x in dense.ignored)
    no_ep = read_deployment(["vllm serve deepseek-ai/DeepSeek-R1 -dp 8 --all2all-backend "
                             "deepep_low_latency"], hw)  # fmt: skip
    assert no_ep.engine_constants.moe_comm == "auto"
    assert any("expert parallelism" in x["reason"] for x in no_ep.ignored)
    both = read_deployment(["python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 "
                            "--tp 8 --dp 8 --enable-dp-attention --moe-a2a-backend none "
                            "--enable-deepep-moe"], hw)  # fmt: skip
    assert both.engine_constants.moe_comm == "deepep" and both.plan.ep == 8
    assert any("--moe-a2a-backend" in x["setting"] for x in both.ignored)


def _sglang_dynamo(tmp_path, prefill_flags, decode_flags):
    def worker(role, gpus, flags):
        args = ["--model-path", "deepseek-ai/DeepSeek-R1", "--disaggregation-mode", role,
                "--tp-size", "16", "--dp-size", "16", "--enable-dp-attention", "--ep-size", "16",
                "--chunked-prefill-size", "8192", "--mem-fraction-static", "0.8",
                *flags]  # fmt: skip
        return {
            "componentType": "worker", "subComponentType": role, "replicas": 1,
            "resources": {"limits": {"gpu": str(gpus)}},
            "extraPodSpec": {"mainContainer": {"command": ["python3", "-m", "dynamo.sglang"],
                                               "args": args}},
        }  # fmt: skip

    import yaml

    doc = {"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment",
           "metadata": {"name": "ds"},
           "spec": {"services": {"Prefill": worker("prefill", 16, prefill_flags),
                                 "Decode": worker("decode", 16, decode_flags)}}}  # fmt: skip
    path = tmp_path / f"dynamo-{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def test_disaggregated_pools_read_their_own_dispatch_family(tmp_path):
    """The prefill workers' dispatch backend is priced on the prefill pool (a prefill pool on
    SGLang's all-gather next to a decode pool on DeepEP low-latency, as InferenceX's GB200
    recipes run), so it moves the TTFT and not the TPOT."""
    hw = load_hardware("h200-sxm")
    low = ["--moe-a2a-backend", "deepep", "--deepep-mode", "low_latency"]
    est = {}
    for name, pre in (("none", []), ("normal", ["--moe-a2a-backend", "deepep", "--deepep-mode",
                                                 "normal"])):  # fmt: skip
        dep = read_deployment([_sglang_dynamo(tmp_path, pre, low)], hw)
        assert dep.engine_constants.moe_comm == "deepep_low_latency"
        want = "deepep_normal" if pre else "allgather_reducescatter"
        assert dep.prefill_engine is not None and dep.prefill_engine.moe_comm == want
        est[name] = estimate(hardware=hw, **dep.estimate_args())
    assert est["none"].tpot_ms == est["normal"].tpot_ms
    assert est["none"].ttft_ms != est["normal"].ttft_ms
    same = read_deployment([_sglang_dynamo(tmp_path, low, low)], hw)
    assert same.prefill_engine is None


@pytest.mark.parametrize("precision", ["fp8+bf16-kv", "fp8"])
def test_sglang_dsa_kv_launch_reads_back(precision, tmp_path):
    """SGLang's automatic KV format is FP8 for a DeepSeek Sparse Attention model on Blackwell
    (``specs.engine.sglang_auto_kv_fp8``): a launch file priced with a BF16 cache must ask for it
    (``--kv-cache-dtype bf16``), and both caches read back to the precision priced."""
    assert _round_trip("glm-5", "b200", precision, "sglang", tmp_path) >= 2


def test_cuda_graph_settings_set_the_capture_sizes(tmp_path):
    """A launch's CUDA-graph settings are priced (``specs.cuda_graphs``): TensorRT-LLM's
    cuda_graph_config.max_batch_size caps its rule's sizes (the example: 128), a listed set is the
    engine's, joined by the executor's max_batch_size (PR #4843); SGLang's --cuda-graph-max-bs caps
    its rule; a size that is not a positive whole number exits with the allowed values."""
    mtp = {"spec_acceptance": 0.7}
    dep = read_deployment([str(EXAMPLES / "trtllm-serve.sh")], load_hardware("b200"), explicit=mtp)
    assert dep.engine_constants.cuda_graph_batches == ",".join(
        map(str, [1, 2, 4, *range(8, 129, 8)])
    )
    opts = (
        (EXAMPLES / "trtllm-extra.yaml")
        .read_text()
        .replace("  max_batch_size: 128\nmoe_config", "  batch_sizes: [1, 4, 64, 256]\nmoe_config")
    )
    (tmp_path / "trtllm-extra.yaml").write_text(opts)
    (tmp_path / "serve.sh").write_text((EXAMPLES / "trtllm-serve.sh").read_text())
    dep = read_deployment([str(tmp_path / "serve.sh")], load_hardware("b200"), explicit=mtp)
    assert dep.engine_constants.cuda_graph_batches == "1,4,64,128"  # max_batch_size 128
    sgl = "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp 8"
    dep = read_deployment([sgl + " --cuda-graph-max-bs 48"], load_hardware("h200-sxm"))
    assert dep.engine_constants.cuda_graph_batches == "1,2,4,8,12,16,24,32,40,48"
    dep = read_deployment([sgl + " --cuda-graph-bs 8 32 16"], load_hardware("h200-sxm"))
    assert dep.engine_constants.cuda_graph_batches == "8,16,32"
    vllm = "vllm serve meta-llama/Llama-3.1-8B-Instruct --cuda-graph-sizes 36"
    dep = read_deployment([vllm], load_hardware("h100-sxm"))  # one value: 1, 2, 4, 8..N by 8
    assert dep.engine_constants.cuda_graph_batches == "1,2,4,8,16,24,32"
    with pytest.raises(SpecError, match="allowed: positive whole numbers"):
        read_deployment([sgl + " --cuda-graph-bs 0 8"], load_hardware("h200-sxm"))

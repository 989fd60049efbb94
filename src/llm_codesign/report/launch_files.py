"""Launch artifacts as files: shell scripts per engine and node, config YAMLs, the benchmark
command, a quantization step when the checkpoint must be made, and for disaggregated plans the
TensorRT-LLM ``disaggregated`` config and Dynamo (Kubernetes) deployments of prefill and decode
workers. :func:`launch_files` lays out what :func:`.launch.launch_settings` returned;
:func:`write_launch_dir` writes it.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import yaml

from ..outputs import check_output_path, write_text

ENGINE_NAMES = {"trtllm": "TensorRT-LLM", "vllm": "vLLM", "sglang": "SGLang"}
DYNAMO_IMAGES = {
    "vllm": "nvcr.io/nvidia/ai-dynamo/vllm-runtime:<tag>",
    "sglang": "nvcr.io/nvidia/ai-dynamo/sglang-runtime:<tag>",
}
DYNAMO_WORKERS = {
    "vllm": ("dynamo.vllm", "Vllm", "--model"),
    "sglang": ("dynamo.sglang", "Sglang", "--model-path"),
}


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def _dynamo(engine: str, pre: dict, dec: dict, p: int, d: int, model: str) -> dict[str, Any]:
    module, prefix, model_flag = DYNAMO_WORKERS[engine]
    image = DYNAMO_IMAGES[engine]

    def worker(role: str, r: dict, replicas: int) -> dict[str, Any]:
        args = [model_flag, model, "--disaggregation-mode", role]
        for a in r[f"{engine}_args"]:
            if a.startswith("--disaggregation-mode"):
                continue
            args += shlex.split(a)
        return {
            "componentType": "worker",
            "subComponentType": role,
            "replicas": replicas,
            "resources": {"limits": {"gpu": str(r["gpus"])}},
            "extraPodSpec": {
                "mainContainer": {
                    "image": image,
                    "command": ["python3", "-m", module],
                    "args": args,
                }
            },
        }

    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": f"llm-codesign-{engine}-disagg"},
        "spec": {
            "services": {
                "Frontend": {
                    "componentType": "frontend",
                    "replicas": 1,
                    "extraPodSpec": {"mainContainer": {"image": image}},
                },
                f"{prefix}PrefillWorker": worker("prefill", pre, p),
                f"{prefix}DecodeWorker": worker("decode", dec, d),
            }
        },
    }


def disaggregated_deployment(
    engines: tuple[str, ...], pre: dict, dec: dict, p: int, d: int, model_for: dict[str, str]
) -> dict[str, Any]:
    """How the prefill and decode pools are deployed: per engine a one-line summary (the
    keys ``trtllm``, ``vllm``, ``sglang``) and ``files`` (TensorRT-LLM's ``disagg.yaml`` for
    ``trtllm-serve disaggregated``; Dynamo ``DynamoGraphDeployment`` YAMLs for vLLM and SGLang
    with ``p`` prefill and ``d`` decode workers)."""
    out: dict[str, Any] = {"prefill_workers": p, "decode_workers": d, "files": {}}
    if "trtllm" in engines:
        out["files"]["disagg.yaml"] = _dump(
            {
                "hostname": "localhost",
                "port": 8000,
                "backend": "pytorch",
                "context_servers": {
                    "num_instances": p,
                    "urls": [f"$PREFILL{k}_ADDR:8001" for k in range(p)],
                },
                "generation_servers": {
                    "num_instances": d,
                    "urls": [f"$DECODE{k}_ADDR:8002" for k in range(d)],
                },
            }
        )
        out["trtllm"] = (
            f"trtllm-serve disaggregated -c disagg.yaml (context_servers: prefill.yaml x {p}, "
            f"generation_servers: decode.yaml x {d})"
        )
        out["trtllm_command"] = "trtllm-serve disaggregated -c disagg.yaml"
    for engine in ("vllm", "sglang"):
        if engine in engines:
            name = f"dynamo_{engine}.yaml"
            out["files"][name] = _dump(_dynamo(engine, pre, dec, p, d, model_for[engine]))
            out[engine] = (
                f"kubectl apply -f {name} (Dynamo: {p} prefill x {pre['gpus']} GPUs, {d} decode "
                f"x {dec['gpus']} GPUs; or the {engine}_prefill/{engine}_decode scripts per "
                "worker)"
            )
    return out


def _script(title: str, lines: list[str], env: list[str]) -> str:
    head = ["#!/usr/bin/env bash", "set -euo pipefail", f"# {title}"]
    for var in env:
        head.append(f': "${{{var}:?set {var}}}"')
    return "\n".join(head + lines) + "\n"


def _placeholders(lines: list[str]) -> list[str]:
    import re

    return sorted({m for line in lines for m in re.findall(r"\$([A-Z][A-Z0-9_]*)", line)})


def _role_files(launch: dict, role: str, files: dict[str, str]) -> None:
    tag = f"_{role}" if role else ""
    for engine in launch.get("engines", []):
        if engine == "trtllm":
            t = launch["trtllm"]
            files[t["config_file"]] = t["config_yaml"] + "\n"
            nodes = t["nodes"]
        else:
            nodes = launch[f"{engine}_nodes"]
        for k, lines in enumerate(nodes):
            if not lines:
                continue
            where = f"node {k} of {len(nodes)}" if len(nodes) > 1 else "one node"
            files[f"{engine}{tag}_node{k}.sh"] = _script(
                f"{ENGINE_NAMES[engine]} {role or 'server'}, {where}", lines, _placeholders(lines)
            )


def launch_files(launch: dict[str, Any]) -> dict[str, str]:
    """File name -> content for a :func:`.launch.launch_settings` result."""
    files: dict[str, str] = {}
    ck = launch["checkpoint"]
    if ck.get("step"):
        files["quantize.sh"] = _script(
            f"make the {ck['key']} checkpoint ({ck['note']})", [ck["step"]], []
        )
    if "prefill" in launch:
        engines = launch["engines"]
        _role_files({**launch["prefill"], "engines": engines}, "prefill", files)
        _role_files({**launch["decode"], "engines": engines}, "decode", files)
        files.update(launch["disaggregation"]["files"])
        if "trtllm" in engines:
            files["trtllm_router.sh"] = _script(
                "TensorRT-LLM disaggregated router (after the prefill and decode workers)",
                [launch["disaggregation"]["trtllm_command"]],
                [],
            )
    else:
        _role_files(launch, "", files)
    pred = launch["prediction"]
    for engine, cmd in launch["bench"].items():
        files[f"bench_{engine}.sh"] = _script(
            f"check the prediction: {pred['output_tok_s_per_gpu']:g} output tok/s/GPU, "
            f"{pred['tok_s_per_user']:g} tok/s/user, TTFT {pred['ttft_ms']:g} ms, TPOT "
            f"{pred['tpot_ms']:g} ms at concurrency {pred['concurrency_total']}",
            [cmd],
            [],
        )
    files["launch.json"] = json.dumps(launch, indent=2, default=str) + "\n"
    return files


def write_launch_dir(launch: dict[str, Any], directory: str | Path) -> list[Path]:
    """Write :func:`launch_files` under ``directory`` (created); scripts are executable."""
    root = check_output_path(directory, directory=True, create=True)
    files = launch_files(launch)
    root.mkdir(parents=True, exist_ok=True)
    return [
        write_text(root / name, text, executable=name.endswith(".sh"))
        for name, text in files.items()
    ]

"""The data behind launch artifacts: the engine flag table (``data/launch/flags.yaml``, each flag
with its source), published checkpoints per (model, precision family), GPUs per node, and the
checkpoint a launch must load for a precision (its own, a published one, or a quantization step).
"""

from __future__ import annotations

import re
import shlex
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ..errors import DataFileError
from ..moe_kernels import moe_kernel_path, takes_weight_only_path, weight_only_path
from ..specs.accuracy import accuracy_key, native_key
from ..specs.checkpoint import checkpoint_precision, deploy_file
from ..specs.engine import ENGINE_VENDORS, EngineConstants, load_engine
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.precision import Precision, parse_precision

# the engines launch files are written for (each where its vendors' GPUs are: ENGINE_VENDORS)
LAUNCH_ENGINES = ("trtllm", "vllm", "sglang")


def _read(name: str) -> dict[str, Any]:
    path = Path(str(resources.files("llm_codesign") / "data" / "launch" / name))
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise DataFileError(f"{path.name}: cannot read launch data: {exc}") from None
    if not isinstance(data, dict):
        raise DataFileError(f"{path.name}: expected a mapping")
    return data


@cache
def flag_table() -> dict[str, Any]:
    """``data/launch/flags.yaml``: ``commands`` (words that start a command -> flags with
    their source), ``yaml`` (config kind -> dotted keys or worker flags), ``sources``."""
    return _read("flags.yaml")


def _row_reading(row: dict[str, Any]) -> tuple[str, str] | None:
    """The precision a published checkpoint row's ``quantization_config`` states (None: none)."""
    return checkpoint_precision({"quantization_config": row.get("quantization_config") or {}})


def _stores(row: dict[str, Any], prec: Precision) -> bool:
    """Whether a published checkpoint row serves ``prec``'s weights: a row that states its
    ``quantization_config`` only for the weight format it stores (Qwen's block-scaled FP8 is not
    a per-tensor ``fp8``); any other row as its precision family says."""
    reading = _row_reading(row)
    return reading is None or parse_precision(reading[0]).weights.id == prec.weights.id


def allowed(kind: str, name: str) -> dict[str, str]:
    """Flags (commands) or keys (yaml kinds) of ``name`` mapped to their source."""
    table = flag_table()
    groups = table["commands" if kind == "commands" else "yaml"].get(name, [])
    out: dict[str, str] = {}
    for g in groups:
        for item in g.get("flags", []) + g.get("keys", []):
            out[item] = table["sources"][g["source"]]
    return out


def command_flags(command: str) -> tuple[str, list[str]]:
    """The tool a command line runs (the longest table entry it starts with, after any
    environment assignments and launcher prefixes) and the flags it passes."""
    words = shlex.split(command)
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
        words = words[1:]
    tools = sorted(flag_table()["commands"], key=len, reverse=True)
    flags, tool = [], ""
    i = 0
    while i < len(words):
        rest = " ".join(words[i:])
        hit = next((t for t in tools if rest == t or rest.startswith(t + " ")), None)
        if hit:
            tool = hit  # a launcher (mpirun) hands over to the next tool
            flags = [f for f in flags if f in allowed("commands", "mpirun")]
            i += len(hit.split())
            continue
        w = words[i]
        if w.startswith("-") and not re.match(r"^-?\d", w[1:] or "x"):
            flags.append(w.split("=", 1)[0])
        i += 1
    return tool, flags


def gpus_per_node(hw: HardwareSpec) -> int:
    """GPUs one node holds (one launch command per node): ``data/launch/deploy.yaml``."""
    table = deploy_file()["gpus_per_node"]
    return int(table.get(hw.id, table["default"]))


def engines_for(hw: HardwareSpec) -> list[str]:
    """Engines that run on this GPU's vendor."""
    return [e for e in LAUNCH_ENGINES if hw.vendor.lower() in ENGINE_VENDORS[e]]


def hf_id(model: ModelSpec) -> str:
    """The HuggingFace repository of the model's own checkpoint (from its source URL)."""
    m = re.search(r"huggingface\.co/([^/\s]+/[^/\s]+)", model.source or "")
    return m.group(1) if m else model.id


def _quantize_step(model: ModelSpec, prec: Precision, key: str, native: str, hw: HardwareSpec):
    """A command that produces a checkpoint in ``key`` (TensorRT Model Optimizer PTQ), or ''."""
    qformat = deploy_file()["modelopt_qformat"].get(key)
    if not qformat or hw.vendor.lower() != "nvidia":
        return "", ""
    out = f"./{hf_id(model).split('/')[-1]}-{key.upper()}"
    src = hf_id(model)
    if native != "bf16":
        src = f"<BF16 copy of {src}>"  # PTQ starts from 16-bit weights
    kv = "fp8" if prec.kv_cache.element_bits == 8 else "none"
    cmd = (
        f"python examples/llm_ptq/hf_ptq.py --pyt_ckpt_path {src} --qformat {qformat} "
        f"--kv_cache_qformat {kv} --export_path {out} --trust_remote_code"
    )
    return cmd, out


def checkpoint_for(
    model: ModelSpec, prec: Precision, accuracy: dict[str, Any], hw: HardwareSpec
) -> dict[str, Any]:
    """The checkpoint a launch at ``prec`` loads, and how it was found.

    ``how``: ``native`` (the model's own checkpoint holds the precision), ``published`` (the
    checkpoint the accuracy evidence names), ``table`` (a known published quantized checkpoint,
    ``data/launch/deploy.yaml``), ``quantize`` (no known checkpoint: ``step`` makes one and
    ``id`` is its output path), ``online`` (BF16 weights quantized to FP8 by vLLM/SGLang at load;
    TensorRT-LLM still needs ``step``), or ``upcast`` (BF16 serving of a quantized checkpoint:
    a BF16 conversion is needed). ``quant_method``: what the checkpoint states ('' for BF16)."""
    key = accuracy_key(prec)
    native, _ = native_key(model)
    own = hf_id(model)
    base = {"precision": prec.id, "key": key, "native": native, "step": "", "note": ""}
    if key == native:
        qm = (model.config.get("quantization_config") or {}).get("quant_method", "")
        return {**base, "id": own, "how": "native", "quant_method": str(qm)}
    if key == "bf16":
        return {
            **base,
            "id": f"./{own.split('/')[-1]}-BF16",
            "how": "upcast",
            "quant_method": "",
            "note": f"{own} stores {native} weights; engines serve them as stored, so BF16 "
            "serving needs a BF16 conversion of it (e.g. DeepSeek-V3's inference/"
            "fp8_cast_bf16.py for FP8 block weights) at this path",
        }
    published = (accuracy or {}).get("checkpoint") or ""
    family = [
        r for r in deploy_file()["checkpoints"] if (r["model"], r["precision"]) == (model.id, key)
    ]
    rows = [r for r in family if _stores(r, prec)]
    if published:
        out = {**base, "id": published, "how": "published", "quant_method": _method(key)}
        modelopt = [r for r in rows if r["quant_method"].startswith("modelopt")]
        if (
            modelopt
            and modelopt[0]["checkpoint"] != published
            and not published.startswith("nvidia/")
        ):
            # TensorRT-LLM loads ModelOpt exports; the evaluated checkpoint may be another format
            out["trtllm_id"] = modelopt[0]["checkpoint"]
            out["note"] = (
                f"TensorRT-LLM loads the ModelOpt export {out['trtllm_id']} of the same format; "
                f"vLLM and SGLang the evaluated {published}"
            )
        return out
    for row in rows:
        return {
            **base,
            "id": row["checkpoint"],
            "how": "table",
            "quant_method": row["quant_method"],
            "note": f"published checkpoint ({row['source']})",
        }
    step, out = _quantize_step(model, prec, key, native, hw)
    if key == "fp8" and native == "bf16":
        # a published export of the family in other weights (Qwen's and Z.ai's block-scaled
        # FP8) is what naming it prices and serves; this precision's weights it does not store
        # (rows is empty here: every family row states weights this precision's are not)
        said = f"no known published FP8 checkpoint of {own}"
        if family and (reading := _row_reading(family[0])):
            said = (
                f"{family[0]['checkpoint']} is published in other FP8 weights ({reading[1]}; -m "
                f"{family[0]['checkpoint']} prices and serves them), not in this precision's "
                f"{prec.weights.id} weights"
            )
        return {
            **base,
            "id": own,
            "how": "online",
            "quant_method": "",
            "step": step,
            "note": f"{said}: vLLM and SGLang quantize its BF16 weights to FP8 at load "
            "(--quantization fp8, per-tensor dynamic); TensorRT-LLM loads the output of the "
            f"quantization step ({out})",
            "quantized_id": out,
        }
    if step:
        return {
            **base,
            "id": out,
            "how": "quantize",
            "quant_method": "modelopt",
            "step": step,
            "note": f"no known published {key} checkpoint of {own}: run the quantization step "
            "first and serve its output",
        }
    return {
        **base,
        "id": f"./{own.split('/')[-1]}-{key.upper()}",
        "how": "quantize",
        "quant_method": "",
        "note": f"no known published {key} checkpoint of {own} and no quantizer command here "
        f"for this format on {hw.vendor}: produce one (e.g. llm-compressor, AMD Quark) at this "
        "path",
    }


def _method(key: str) -> str:
    return {"nvfp4": "modelopt_fp4", "fp8": "fp8", "mxfp4-w": "mxfp4"}.get(key, "")


def trtllm_moe_backend(
    hw: HardwareSpec,
    prec: Precision,
    ep: int,
    moe_tp: int = 1,
    engine: EngineConstants | None = None,
) -> str:
    """TensorRT-LLM ``moe_config.backend`` by GPU and weight format, from the deployment guides'
    support matrices (DeepSeek-R1: Hopper FP8 CUTLASS; Blackwell EP<=8 NVFP4 CUTLASS or TRTLLM,
    FP8 DEEPGEMM; NVL72 EP>8 WIDEEP. gpt-oss MXFP4: Blackwell TRTLLM or CUTLASS, the backend
    its perf-overview runs set; Hopper TRITON where the MoE is not tensor-parallel, which TRITON
    does not take, else CUTLASS), choosing between two the one the estimate priced: ``engine``'s
    MoE kernel path (TRTLLM where it is TRTLLM-Gen's, ``moe_kernels.moe_kernel_path``) and
    weight-only path (``moe_kernels.weight_only_path``). The guides pair attention-DP with
    CUTLASS, which the TensorRT-LLM engine prices."""
    key = accuracy_key(prec)
    blackwell = hw.architecture.startswith("blackwell")
    eng = engine or load_engine("trtllm")  # the engine the estimate priced
    gen = "TRTLLM" if moe_kernel_path(hw, eng) == "trtllm_gen" else "CUTLASS"
    if key in ("mxfp4-w", "mxfp4"):
        if blackwell:
            return gen
        path = weight_only_path(hw, eng, prec.weights.id)
        return "TRITON" if path == "triton" and takes_weight_only_path(moe_tp) else "CUTLASS"
    if ep > 8 and blackwell:
        return "WIDEEP"
    if blackwell and key == "nvfp4":
        return gen
    if blackwell and key == "fp8" and prec.weights.id == "fp8_block":
        return "DEEPGEMM"
    return "CUTLASS"


# MoE dispatch/combine backends -> the kernel family priced (``EngineConstants.moe_comm``; read
# by report.deploy_values.read_moe_a2a, written by moe_a2a_flags). SGLang --moe-a2a-backend
# (python/sglang/srt/server_args.py): none all-gathers the attention-DP ranks' tokens;
# flashinfer runs FlashInfer's trtllm_moe_alltoall.MoeAlltoAll (TensorRT-LLM's NVLink one-sided
# all-to-all); deepep with --deepep-mode auto (normal kernels for a batch with prompt tokens,
# low-latency ones otherwise), normal or low_latency; mori runs MoRI-EP (AMD GPUs; its dispatcher
# reads --deepep-mode for its normal or asynchronous implementation, priced alike: comm.MORI).
SGLANG_A2A = {
    "none": "allgather_reducescatter",
    "flashinfer": "nvlink_one_sided",
    "deepep": "deepep",
    "mori": "mori",
}
SGLANG_DEEPEP_MODES = {
    "auto": "deepep",
    "normal": "deepep_normal",
    "low_latency": "deepep_low_latency",
}
# vLLM --all2all-backend (vllm/config/parallel.py All2AllBackend)
VLLM_A2A = {
    "allgather_reducescatter": "allgather_reducescatter",
    "flashinfer_nvlink_one_sided": "nvlink_one_sided",
    "deepep_high_throughput": "deepep_normal",
    "deepep_low_latency": "deepep_low_latency",
    "mori_low_latency": "mori",  # MoRI-EP: IntraNode in one node, InterNodeV1LL across nodes
    "mori_high_throughput": "mori",  # (InterNodeV1 across nodes; comm.MORI prices either)
}

# TensorRT-LLM's TRTLLM_FORCE_ALLTOALL_METHOD environment variable (its AlltoallMethodType,
# tensorrt_llm/_torch/modules/fused_moe: DeepEP the normal kernels, DeepEPLowLatency the
# low-latency ones, MNNVL and later NVLinkOneSided its one-sided NVLink kernel, NotEnabled the
# all-gather; NVLinkTwoSided has no family here)
TRTLLM_A2A = {
    "NotEnabled": "allgather_reducescatter",
    "MNNVL": "nvlink_one_sided",
    "NVLinkOneSided": "nvlink_one_sided",
    "DeepEP": "deepep_normal",
    "DeepEPLowLatency": "deepep_low_latency",
}


def moe_a2a_flags(target: str, family: str) -> tuple[list[str], str]:
    """(flags, note) that make engine ``target`` (sglang, vllm) run MoE dispatch/combine
    family ``family`` (``comm.moe_comm_family``): the inverse of ``SGLANG_A2A`` /
    ``VLLM_A2A``, nothing for the engine's own default (all-gather). vLLM runs one DeepEP kernel
    set a server: for ``deepep`` (normal kernels in steps with prompt tokens) it gets the
    low-latency one, with a note.

    Example: ("sglang", "deepep_low_latency") -> (["--moe-a2a-backend deepep", "--deepep-mode
    low_latency"], "")."""
    if family == "allgather_reducescatter":
        return [], ""
    eager = (
        "DeepEP's normal kernels run without CUDA graphs (SGLang turns them off; estimate --from "
        "refuses them on a server that decodes): the estimate priced captured graphs"
        if family == "deepep_normal"
        else ""
    )
    if target == "sglang":
        if family in ("nvlink_one_sided", "mori"):
            return [f"--moe-a2a-backend {'mori' if family == 'mori' else 'flashinfer'}"], ""
        mode = {v: k for k, v in SGLANG_DEEPEP_MODES.items()}[family]
        return ["--moe-a2a-backend deepep", f"--deepep-mode {mode}"], eager
    note = eager
    if family == "deepep":
        family, note = (
            "deepep_low_latency",
            (
                "vLLM runs one DeepEP kernel set a server: the low-latency one here, where the "
                "estimate priced DeepEP's normal kernels in steps with prompt tokens"
            ),
        )
    # (MoRI: mori_low_latency, as InferenceX's AMD vLLM scripts run it; inside one node both
    # MoRI backends run its IntraNode kernels, across nodes the low-latency ones in decode)
    flag = "mori_low_latency" if family == "mori" else {v: k for k, v in VLLM_A2A.items()}[family]
    return [f"--all2all-backend {flag}"], note


# engines that launch a model's own MTP module as a drafter beyond the DeepSeek-style
# ``num_nextn_predict_layers`` checkpoints (DeepSeek-V3/R1/V3.2, GLM: every engine here): Qwen3.5's
# ``mtp_num_hidden_layers`` on TensorRT-LLM (InferenceX's qwen3.5_fp4_b200_trt_mtp.sh:
# ``speculative_config`` MTP, ``num_nextn_predict_layers`` 3), vLLM (its ``qwen3_5_mtp`` draft
# model) and SGLang (NEXTN / EAGLE); MiniMax-M2's modules on none (vLLM registers no MiniMax MTP
# draft model)
QWEN35_MTP = ("trtllm", "vllm", "sglang")
MTP_ENGINES = {"qwen3_5_moe_text": QWEN35_MTP, "qwen3_5_moe": QWEN35_MTP}


def mtp_layers(model: ModelSpec, engine: str | None = None) -> int:
    """Multi-token-prediction blocks a launch file on ``engine`` (None: any engine here) drafts
    with: the checkpoint's ``num_nextn_predict_layers`` (DeepSeek-V3/R1: 1), or its MTP blocks
    (``ModelSpec.num_mtp_layers``) where ``MTP_ENGINES`` names the engine; else 0 (the memory
    fit still loads the blocks the prediction drafts with); 0 where the model holds no MTP
    blocks whatever its config says (MiniMax-M3's checkpoints)."""
    nextn = int(model.config.get("num_nextn_predict_layers") or 0) if model.num_mtp_layers else 0
    engines = MTP_ENGINES.get(model.model_type, ())
    own = model.num_mtp_layers if (engines if engine is None else engine in engines) else 0
    return nextn or own

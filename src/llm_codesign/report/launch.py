"""Launch settings in engine vocabulary: the TensorRT-LLM, vLLM and SGLang settings that
reproduce a frontier point (one home for the mapping of plans to engine flags)."""

from __future__ import annotations

import math
import re
from typing import Any

from ..explore import MODE_DISAGGREGATED, Frontier
from ..specs.model import ModelSpec


def _hf_id(model: ModelSpec) -> str:
    m = re.search(r"huggingface\.co/([^/\s]+/[^/\s]+)", model.source or "")
    return m.group(1) if m else model.id


_VLLM_QUANT = {
    "fp8": "fp8",
    "nvfp4": "modelopt_fp4",
    "mxfp4": "mxfp4",
    "w4a16": "awq",
    "int8": "int8",
}


def launch_settings(fr: Frontier, i: int) -> dict[str, Any]:
    """Engine settings that reproduce point ``i``: TP/PP/EP, attention DP, Helix, max batch,
    chunk size, KV dtype, in TensorRT-LLM, vLLM and SGLang vocabulary (commands are templates:
    the checkpoint must already be in the point's precision)."""
    c = fr.points.cols
    prec = fr.precisions[int(c["precision"][i])]
    # the public checkpoint that provides the precision (published evidence), else the model's
    hf = fr.accuracy.get(prec.id, {}).get("checkpoint") or _hf_id(fr.model)
    chunk = fr.engine.max_num_tokens
    kv_fp8 = prec.kv_cache.element_bits == 8
    quant = _VLLM_QUANT.get(prec.id.split("+")[0])

    def one(
        tp: int, pp: int, ep: int, adp: bool, cp: int, conc: int, replicas: int, role: str = ""
    ) -> dict[str, Any]:
        batch = math.ceil(conc / (tp if adp else 1))
        # TensorRT-LLM: Helix splits tp into attention-TP x context-parallel; MoE ep x moe_tp = tp
        trt_tp = tp // cp if cp > 1 else tp
        yaml_lines = [f"tensor_parallel_size: {trt_tp}", f"pipeline_parallel_size: {pp}"]
        if fr.model.moe:
            yaml_lines += [
                f"moe_expert_parallel_size: {ep}",
                f"moe_tensor_parallel_size: {tp // ep}",
            ]
        yaml_lines += [
            f"enable_attention_dp: {'true' if adp else 'false'}",
            f"max_batch_size: {batch}",
            f"max_num_tokens: {chunk}",
            "enable_chunked_prefill: true",
            f"kv_cache_config: {{dtype: {'fp8' if kv_fp8 else 'auto'}}}",
        ]
        if cp > 1:
            yaml_lines += [f"context_parallel_size: {cp}", "cp_config: {cp_type: HELIX}"]
        trt = {
            "command": f"trtllm-serve {hf} --config {role or 'config'}.yaml",
            "config_yaml": "\n".join(yaml_lines),
        }
        notes: list[str] = []
        # vLLM: attention DP is --data-parallel-size; MoE layers then span dp x tp ranks, as
        # experts (--enable-expert-parallel) or tensor-parallel (without it)
        v = ["vllm serve", hf]
        if adp:
            v += [f"--data-parallel-size {tp}", "--tensor-parallel-size 1"]
        else:
            v.append(f"--tensor-parallel-size {tp}")
        if fr.model.moe and ep == tp and ep > 1:
            v.append("--enable-expert-parallel")
        elif fr.model.moe and 1 < ep < tp:
            notes.append(
                f"vLLM: MoE runs either all-EP or all-TP over the {tp} ranks; ep={ep} x "
                f"moe_tp={tp // ep} is not expressible"
            )
        if pp > 1:
            v.append(f"--pipeline-parallel-size {pp}")
        if cp > 1:
            v.append(f"--decode-context-parallel-size {cp}")
        v += [
            f"--max-num-seqs {batch}",
            f"--max-num-batched-tokens {chunk}",
            "--enable-chunked-prefill",
        ]
        if kv_fp8:
            v.append("--kv-cache-dtype fp8")
        if quant and prec.id != "bf16":
            v.append(f"--quantization {quant}")
        s = ["python -m sglang.launch_server", f"--model-path {hf}", f"--tp {tp}"]
        if adp:
            s += [f"--dp {tp}", "--enable-dp-attention"]
        if fr.model.moe and ep > 1:
            s.append(f"--ep {ep}")
        if pp > 1:
            s.append(f"--pp-size {pp}")
        s += [
            f"--max-running-requests {batch * (tp if adp else 1)}",
            f"--chunked-prefill-size {chunk}",
        ]
        if kv_fp8:
            s.append("--kv-cache-dtype fp8_e4m3")
        if quant and prec.id != "bf16":
            s.append(f"--quantization {quant}")
        if cp > 1:
            notes.append("SGLang: no Helix/KV-parallel decode; nearest is the same tp without cp")
        if replicas > 1:
            notes.append(f"run {replicas} replicas of this server behind a router")
        return {
            "max_batch_per_rank": batch,
            "replicas": replicas,
            "trtllm": trt,
            "vllm": " ".join(v),
            "sglang": " ".join(s),
            "notes": notes,
        }

    conc = int(c["concurrency"][i])
    dec = one(
        int(c["tp"][i]),
        int(c["pp"][i]),
        int(c["ep"][i]),
        bool(c["attention_dp"][i]),
        int(c["cp"][i]),
        conc,
        int(c["dp"][i]),
        "decode" if int(c["mode"][i]) == MODE_DISAGGREGATED else "",
    )
    out: dict[str, Any] = {
        "precision": prec.id,
        "kv_cache_dtype": prec.kv_cache.id,
        "chunk_tokens": chunk,
    }
    if int(c["mode"][i]) == MODE_DISAGGREGATED:
        pre = one(
            int(c["p_tp"][i]),
            int(c["p_pp"][i]),
            int(c["p_ep"][i]),
            bool(c["p_attention_dp"][i]),
            int(c["p_cp"][i]),
            int(c["p_batch"][i]),
            int(c["prefill_workers"][i]),
            "prefill",
        )
        out["prefill"] = pre
        out["decode"] = dec
        out["disaggregation"] = {
            "trtllm": (
                "trtllm-serve disaggregated -c disagg.yaml (context_servers: prefill.yaml x "
                f"{int(c['prefill_workers'][i])}, generation_servers: decode.yaml x "
                f"{int(c['decode_workers'][i])})"
            ),
            "vllm": (
                "add --kv-transfer-config "
                '\'{"kv_connector":"NixlConnector","kv_role":"kv_both"}\' to both pools'
            ),
            "sglang": (
                "add --disaggregation-mode prefill / --disaggregation-mode decode to the two pools"
            ),
        }
    else:
        out.update(dec)
    return out

"""Launch settings in engine vocabulary: the TensorRT-LLM, vLLM and SGLang artifacts that
reproduce a frontier point (one home for the mapping of plans to engine flags).

Each engine gets, per node, the command lines that start it (multi-node plans: one entry per
node, with ``$MASTER_ADDR`` / node-rank placeholders), its config files (TensorRT-LLM: an
LLM-API options YAML), and a benchmark-client command at the point's concurrency and lengths.
The model argument is a checkpoint that holds the point's precision
(:func:`.launch_data.checkpoint_for`); engines are offered only on GPUs they run on. Every flag
and key written is in ``data/launch/flags.yaml`` with its source.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import yaml

from ..attention_kernels import sparse_latent_bytes
from ..comm import dispatch_family
from ..errors import SpecError
from ..explore import MODE_DISAGGREGATED, Frontier
from ..mixers import windowed_share
from ..serving.balance import holds_context
from ..serving.memory import (
    RUNTIME_RESERVED_BYTES,
    engine_kv_bytes,
    fraction_ceiling,
    memory_fraction_for,
)
from ..serving.step import runs_without_overlap, speculating_engine
from ..specs.context import context_note
from ..specs.engine import load_engine, sglang_auto_kv_fp8
from ..specs.plan import expert_slots, partial_moe_ep, redundant_experts
from ..specs.precision import Precision
from .launch_data import (
    checkpoint_for,
    engines_for,
    gpus_per_node,
    moe_a2a_flags,
    mtp_layers,
    trtllm_moe_backend,
)
from .launch_files import ENGINE_NAMES, disaggregated_deployment

PORT = 8000
RPC_PORT = 13345
RAY_PORT = 6379
DIST_PORT = 5000


@dataclass(frozen=True)
class _Ctx:
    fr: Frontier
    prec: Precision
    ckpt: dict[str, Any]
    engines: tuple[str, ...]
    gpn: int
    chunk: int
    kv_fp8: bool
    spec: int
    max_len: int

    def memory_fraction(
        self, budget: str, plan: tuple, notes: list[str] | None = None, name: str = ""
    ) -> float:
        """The engine's memory fraction (``budget``: its convention) that gives the KV cache
        what the prediction gave it on ``plan`` (``serving.memory.memory_fraction_for``), at most
        what a launch can state (``serving.memory.fraction_ceiling``). Where that binds, a note
        for engine ``name`` in ``notes``: its KV cache (and batch) is smaller than the point's."""
        fr = self.fr
        u = memory_fraction_for(
            fr.model, fr.hardware, self.prec, fr.engine, plan, budget, self.spec
        )
        cap = fraction_ceiling(fr.hardware, budget)
        if u > cap and notes is not None:
            less = (u - cap) * fr.hardware.device_memory / 1e9
            notes.append(
                f"{name}: the point's KV cache needs a memory fraction of {u:.3f}, past the "
                f"{cap:.3f} a launch can state ({RUNTIME_RESERVED_BYTES / 1e9:g} GB a GPU left to "
                f"the runtime): launched at {cap:.3f}, its cache holds about {less:.1f} GB a GPU "
                "less, so fewer sequences than the point runs"
            )
        return min(u, cap)

    @property
    def model_for(self) -> dict[str, str]:
        c = self.ckpt
        trt = c.get("trtllm_id") or c.get("quantized_id") or c["id"]
        return {"trtllm": trt, "vllm": c["id"], "sglang": c["id"]}


def _dump(data: dict[str, Any]) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False).rstrip("\n")


def _trtllm_config(
    x: _Ctx, tp: int, pp: int, ep: int, adp: bool, cp: int, batch: int, role: str
) -> dict[str, Any]:
    m = x.fr.model
    trt_tp = tp // cp if cp > 1 else tp  # Helix splits tp into attention-TP x context-parallel
    cfg: dict[str, Any] = {"tensor_parallel_size": trt_tp, "pipeline_parallel_size": pp}
    if m.moe:
        cfg["moe_expert_parallel_size"] = ep
        cfg["moe_tensor_parallel_size"] = tp // ep
    cfg.update(
        enable_attention_dp=adp,
        max_batch_size=batch,
        max_num_tokens=x.chunk,
        max_seq_len=x.max_len,
        enable_chunked_prefill=True,
        kv_cache_config={
            "dtype": "fp8" if x.kv_fp8 else "auto",
            "free_gpu_memory_fraction": x.memory_fraction("free", (tp, pp, ep, adp, cp)),
        },
        cuda_graph_config={"enable_padding": True, "max_batch_size": batch},
    )
    eng = x.fr.engine
    if m.moe:  # (the backend the estimate priced with this engine)
        backend = trtllm_moe_backend(x.fr.hardware, x.prec, ep, tp // ep, eng)
        cfg["moe_config"] = {"backend": backend}
        if redundant_experts(m, ep):  # (the slots the estimate priced: specs.plan.expert_slots)
            slots = int(expert_slots(m.moe.num_experts, ep))
            cfg["moe_config"]["load_balancer"] = {"num_slots": slots, "layer_updates_per_iter": 1}
    if adp and not role and eng.adp_balance_timeout_iters > 0:  # the engine's context balance
        cfg["attention_dp_config"] = {
            "enable_balance": True,
            "timeout_iters": eng.adp_balance_timeout_iters,
            "batching_wait_iters": eng.adp_balance_wait_iters,
        }
    if not adp and not role and holds_context(eng, False):  # the engine's batch waiting
        cfg["batch_wait_timeout_iters"] = eng.batch_wait_timeout_iters
        cfg["batch_wait_max_tokens_ratio"] = eng.batch_wait_max_tokens_ratio
    if x.spec and mtp_layers(m, "trtllm"):
        cfg["speculative_config"] = {"decoding_type": "MTP", "num_nextn_predict_layers": x.spec}
    if cp > 1:
        cfg["context_parallel_size"] = cp
        cfg["cp_config"] = {"cp_type": "HELIX"}
    if role:
        cfg["cache_transceiver_config"] = {"backend": "DEFAULT"}
        if role == "prefill":
            cfg["disable_overlap_scheduler"] = True
    return cfg


def _trtllm(x: _Ctx, tp, pp, ep, adp, cp, batch, role, port) -> dict[str, Any]:
    cfg = _trtllm_config(x, tp, pp, ep, adp, cp, batch, role)
    fname = f"{role or 'config'}.yaml"
    serve = f"trtllm-serve {x.model_for['trtllm']} --host 0.0.0.0 --port {port} --config {fname}"
    gpus = tp * pp
    nodes = math.ceil(gpus / x.gpn)
    notes = []
    # MTP drafting on a Gated DeltaNet model needs TensorRT-LLM's FlashInfer GDN prefill off
    # (InferenceX's qwen3.5_fp4_b200_trt_mtp.sh: TLLM_USE_FLASHINFER_GDN_PREFILL=0)
    m = x.fr.model
    gdn = bool(x.spec and mtp_layers(m, "trtllm") and m.has_recurrent_state)
    if nodes > 1:
        hosts = ",".join(f"$NODE{k}_ADDR:{x.gpn}" for k in range(nodes))
        fwd = " -x TLLM_USE_FLASHINFER_GDN_PREFILL" if gdn else ""
        serve = (
            f"mpirun --allow-run-as-root -H {hosts} -np {gpus}{fwd} trtllm-llmapi-launch {serve}"
        )
        notes.append(
            f"TensorRT-LLM: {nodes} nodes of {x.gpn} GPUs run as one MPI job started on node 0 "
            "(same container and paths on every host, passwordless ssh between them)"
        )
    first = [serve]  # (node 0's lines)
    if gdn:
        first = ["export TLLM_USE_FLASHINFER_GDN_PREFILL=0", serve]
        notes.append(
            "TensorRT-LLM: MTP drafting on this Gated DeltaNet model runs with the FlashInfer GDN "
            "prefill off (TLLM_USE_FLASHINFER_GDN_PREFILL=0, as InferenceX's MTP script sets it)"
        )
    return {
        "command": serve,
        "config_yaml": _dump(cfg),
        "config_inline": yaml.safe_dump(
            cfg, sort_keys=False, default_flow_style=True, width=10**6
        ).strip(),
        "config_file": fname,
        "config": cfg,
        "nodes": [first] + [[] for _ in range(nodes - 1)],
        "notes": notes,
    }


def _a2a(x: _Ctx, target: str, tp: int, ep: int, adp: bool, notes: list[str]) -> list[str]:
    """The MoE all-to-all flags that run the dispatch/combine family the estimate priced for
    attention-DP ranks (``comm.dispatch_family``; ``launch_data.moe_a2a_flags``)."""
    if not adp:
        return []
    flags, note = moe_a2a_flags(target, dispatch_family(x.fr.hardware, x.fr.engine, tp, ep))
    notes += [note] if note else []
    return flags


def _vllm_args(x: _Ctx, tp, pp, ep, adp, cp, batch, notes: list[str]) -> list[str]:
    m, plan = x.fr.model, (tp, pp, ep, adp, cp)
    v: list[str] = []
    if adp:  # attention DP: each rank its own engine; MoE layers span dp x tp ranks
        v += [f"--data-parallel-size {tp}", "--tensor-parallel-size 1"]
    else:
        v.append(f"--tensor-parallel-size {tp}")
    if m.moe and ep == tp and ep > 1:
        v.append("--enable-expert-parallel")
        v += _a2a(x, "vllm", tp, ep, adp, notes)
        if copies := redundant_experts(m, ep):
            conf = json.dumps({"num_redundant_experts": copies})
            v += ["--enable-eplb", f"--eplb-config '{conf}'"]
    elif m.moe and bool(partial_moe_ep(tp, ep)):
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
        f"--max-num-batched-tokens {x.chunk}",
        "--enable-chunked-prefill",
        f"--max-model-len {x.max_len}",
        f"--gpu-memory-utilization {x.memory_fraction('total', plan, notes, 'vLLM')}",
    ]
    if x.kv_fp8:
        v.append("--kv-cache-dtype fp8")
    if m.indexer is not None and m.indexer.kind == "msa":
        # MiniMax Sparse Attention pages its cache in its blocks (vllm models/minimax_m3: the page
        # size must equal sparse_block_size; InferenceX's scripts: "--block-size 128 is
        # mandatory")
        v.append(f"--block-size {m.indexer.block}")
        if (keys := x.prec.index_keys) is not None and keys.id == "fp8":  # (Precision.index_keys)
            v.append("--attention-config.indexer_kv_dtype fp8")
    if x.ckpt["how"] == "online":
        v.append("--quantization fp8")  # BF16 weights quantized at load
    if x.spec and mtp_layers(m, "vllm"):
        conf = json.dumps({"method": "mtp", "num_speculative_tokens": x.spec})
        v.append(f"--speculative-config '{conf}'")
    return v


def _vllm(x: _Ctx, tp, pp, ep, adp, cp, batch, port, notes) -> dict[str, Any]:
    args = _vllm_args(x, tp, pp, ep, adp, cp, batch, notes)
    head = f"vllm serve {x.model_for['vllm']} --host 0.0.0.0 --port {port} " + " ".join(args)
    gpus = tp * pp
    n = math.ceil(gpus / x.gpn)
    if n == 1:
        return {"command": head, "nodes": [[head]], "args": args}
    if adp and pp == 1:  # data-parallel ranks spread over nodes, one vllm serve per node
        local = x.gpn
        dp = f"--data-parallel-size-local {local} --data-parallel-address $MASTER_ADDR "
        dp += f"--data-parallel-rpc-port {RPC_PORT}"
        nodes = [[f"{head} {dp}"]]
        for k in range(1, n):
            nodes.append(
                [
                    f"vllm serve {x.model_for['vllm']} --headless " + " ".join(args) + f" {dp} "
                    f"--data-parallel-start-rank {k * local}"
                ]
            )
        return {"command": nodes[0][0], "nodes": nodes, "args": args}
    # one engine over several nodes: a Ray cluster, one vllm serve on the head node
    ray_head = f"ray start --head --port {RAY_PORT}"
    serve = f"{head} --distributed-executor-backend ray"
    nodes = [[ray_head, serve]] + [
        [f"ray start --address $MASTER_ADDR:{RAY_PORT} --block"] for _ in range(1, n)
    ]
    notes.append(f"vLLM: start the Ray workers on nodes 1..{n - 1} before vllm serve on node 0")
    return {"command": serve, "nodes": nodes, "args": args}


def _sglang_args(x: _Ctx, tp, pp, ep, adp, cp, batch, notes: list[str]) -> list[str]:
    m, plan = x.fr.model, (tp, pp, ep, adp, cp)
    s = [f"--tp {tp}"]
    if adp:
        s += [f"--dp {tp}", "--enable-dp-attention"]
    if m.moe and ep > 1:
        s.append(f"--ep {ep}")
        s += _a2a(x, "sglang", tp, ep, adp, notes)
        if copies := redundant_experts(m, ep):
            s += ["--enable-eplb", f"--ep-num-redundant-experts {copies}"]
    if pp > 1:
        s.append(f"--pp-size {pp}")
    s += [
        f"--max-running-requests {batch * (tp if adp else 1)}",
        f"--chunked-prefill-size {x.chunk}",
        f"--context-length {x.max_len}",
        f"--mem-fraction-static {x.memory_fraction('static', plan, notes, 'SGLang')}",
        f"--cuda-graph-max-bs {batch}",
    ]
    if x.kv_fp8:
        s.append("--kv-cache-dtype fp8_e4m3")
    elif sglang_auto_kv_fp8(m, x.fr.hardware):  # its auto would be FP8 here: ask for BF16
        s.append("--kv-cache-dtype bf16")
    if x.ckpt["how"] == "online":
        s.append("--quantization fp8")
    elif x.ckpt.get("quant_method") == "modelopt_fp4":
        s.append("--quantization modelopt_fp4")
    if x.spec and mtp_layers(m, "sglang"):
        s += [
            "--speculative-algorithm EAGLE",
            f"--speculative-num-steps {x.spec}",
            "--speculative-eagle-topk 1",
            f"--speculative-num-draft-tokens {x.spec + 1}",
        ]
    if cp > 1:
        notes.append("SGLang: no Helix/KV-parallel decode; nearest is the same tp without cp")
    if m.has_recurrent_state:
        # SGLang runs recurrent-state models without its overlap scheduler while its radix cache
        # is on (serving.step.runs_without_overlap), and drafts only without it (priced so:
        # serving.step.speculating_engine): launch as the estimate priced it
        if not runs_without_overlap(m, speculating_engine(x.fr.engine, x.spec)):
            s.append("--disable-radix-cache")
            notes.append(
                "SGLang: --disable-radix-cache keeps the overlap scheduler for this model's "
                "recurrent state (as priced; no prefix caching)"
            )
        else:
            notes.append(
                "SGLang runs this model without its overlap scheduler while its radix cache is "
                "on (as priced); --disable-radix-cache keeps it where prompts share no prefix"
            )
    return s


def _kv_held_notes(fr: Frontier, prec: Precision, engines: Any) -> list[str]:
    """Where an offered engine's cache holds a sequence otherwise than the engine that priced
    the point, so that a sequence of ISL + OSL tokens holds more or less KV and its batch fits
    differently in the same memory: the model's windowed attention layers
    (``mixers.windowed_share`` of ``windowed_kv_share``) or its DSA layers' FP8 latent in the
    layout of the engine's DSA kernels (``attention_kernels.sparse_latent_bytes``). The ratio does
    not depend on the plan (every layer divides alike)."""
    ctx, m, hw = float(fr.isl + fr.osl), fr.model, fr.hardware

    def held(eng: Any) -> float:  # on one GPU of TP1 (the ratio is the plan's)
        return float(engine_kv_bytes(m, hw, prec, eng, ctx, 1, 1, False, 1))

    def why(eng: Any) -> str:
        parts = []
        if windowed_share(m, eng.windowed_kv_share) != windowed_share(
            m, fr.engine.windowed_kv_share
        ):
            parts.append("windowed attention layers: windowed_kv_share")
        own = m.attention.kv_elements_per_token * prec.kv_bytes
        theirs, ours = (sparse_latent_bytes(m, hw, prec, e) or own for e in (eng, fr.engine))
        if theirs != ours:
            parts.append(
                f"sparse layers' FP8 cache rows in its kernels' layout, {theirs:.0f} bytes a token "
                f"against {ours:.0f}: dsa_kernels"
            )
        return "; ".join(parts)

    priced = held(fr.engine)
    out = []
    for name in engines:
        eng = load_engine(name)
        ratio = held(eng) / max(priced, 1e-9)
        if abs(ratio - 1.0) > 0.01:
            out.append(
                f"{name} holds {ratio:.2f}x the KV a sequence of {fr.isl + fr.osl:,} tokens "
                f"holds on {fr.engine.id}, which priced the point ({why(eng)}), so "
                f"{'fewer' if ratio > 1 else 'more'} sequences fit its cache"
            )
    return out


def _sglang(x: _Ctx, tp, pp, ep, adp, cp, batch, port, notes, extra=()) -> dict[str, Any]:
    args = _sglang_args(x, tp, pp, ep, adp, cp, batch, notes) + list(extra)
    base = (
        f"python -m sglang.launch_server --model-path {x.model_for['sglang']} --host 0.0.0.0 "
        f"--port {port} " + " ".join(args)
    )
    n = math.ceil(tp * pp / x.gpn)
    if n == 1:
        return {"command": base, "nodes": [[base]], "args": args}
    nodes = [
        [f"{base} --nnodes {n} --node-rank {k} --dist-init-addr $MASTER_ADDR:{DIST_PORT}"]
        for k in range(n)
    ]
    return {"command": nodes[0][0], "nodes": nodes, "args": args}


def _role(x: _Ctx, tp, pp, ep, adp, cp, conc, replicas, role="", port=PORT) -> dict[str, Any]:
    batch = math.ceil(conc / (tp if adp else 1))
    notes: list[str] = []
    out: dict[str, Any] = {
        "max_batch_per_rank": batch,
        "replicas": replicas,
        "gpus": tp * pp,
        "nodes": math.ceil(tp * pp / x.gpn),
    }
    if "trtllm" in x.engines:
        trt = _trtllm(x, tp, pp, ep, adp, cp, batch, role, port)
        notes += trt.pop("notes")
        out["trtllm"] = trt
    if "vllm" in x.engines:
        v = _vllm(x, tp, pp, ep, adp, cp, batch, port, notes)
        out["vllm"], out["vllm_nodes"], out["vllm_args"] = v["command"], v["nodes"], v["args"]
    if "sglang" in x.engines:
        extra = [f"--disaggregation-mode {role}"] if role else []
        balance = x.fr.engine.adp_balance_timeout_iters
        if adp and not role and balance > 0:  # the engine's context balance: its prefill delayer
            extra += [
                "--enable-prefill-delayer",
                f"--prefill-delayer-max-delay-passes {balance + 1}",
            ]
        s = _sglang(x, tp, pp, ep, adp, cp, batch, port, notes, extra)
        out["sglang"], out["sglang_nodes"], out["sglang_args"] = (
            s["command"],
            s["nodes"],
            s["args"],
        )
    if replicas > 1:
        notes.append(f"run {replicas} replicas of this server behind a router")
    out["notes"] = notes
    return out


def _bench(x: _Ctx, conc_total: int) -> dict[str, str]:
    fr = x.fr
    n = max(5 * conc_total, 20)
    common = (
        f"--host localhost --port {PORT} --dataset-name random --random-input-len {fr.isl} "
        f"--random-output-len {fr.osl}"
    )
    out = {}
    if "trtllm" in x.engines:
        out["trtllm"] = (
            "python -m tensorrt_llm.serve.scripts.benchmark_serving --backend openai "
            f"--model {x.model_for['trtllm']} {common} --random-prefix-len 0 --random-ids "
            f"--num-prompts {n} --max-concurrency {conc_total} --ignore-eos "
            "--tokenize-on-client --percentile-metrics ttft,tpot,itl,e2el"
        )
    if "vllm" in x.engines:
        out["vllm"] = (
            f"vllm bench serve --backend vllm --model {x.model_for['vllm']} {common} "
            f"--random-range-ratio 0 --num-prompts {n} --max-concurrency {conc_total} "
            "--ignore-eos --percentile-metrics ttft,tpot,itl,e2el"
        )
    if "sglang" in x.engines:
        out["sglang"] = (
            f"python -m sglang.bench_serving --backend sglang --model {x.model_for['sglang']} "
            f"{common} --random-range-ratio 1 --num-prompts {n} --max-concurrency {conc_total}"
        )
    return out


def launch_settings(fr: Frontier, i: int) -> dict[str, Any]:
    """Engine artifacts that reproduce point ``i`` (module doc): TP/PP/EP, attention DP,
    Helix, max batch, chunk size, KV dtype, speculative decoding, per engine and node, plus
    the checkpoint to load (``checkpoint``: how it was found, and any quantization step) and
    the benchmark-client commands (``bench``) with the prediction they check. An infeasible
    point (``Frontier.points``' ``feasible`` false) has none: SpecError with its reason."""
    c = fr.points.cols
    exists = 0 <= int(i) < len(fr.points)
    if not exists or not bool(c["feasible"][i]):
        why = str(c["reason"][i]) if exists else "no such point"
        raise SpecError(f"launch settings: point {i} of {len(fr.points)} cannot run ({why})")
    prec = fr.precisions[int(c["precision"][i])]
    ckpt = checkpoint_for(fr.model, prec, fr.accuracy.get(prec.id, {}), fr.hardware)
    spec = int(fr.settings.get("spec_tokens", 0) or 0)
    x = _Ctx(
        fr=fr,
        prec=prec,
        ckpt=ckpt,
        engines=tuple(engines_for(fr.hardware)),
        gpn=gpus_per_node(fr.hardware),
        chunk=fr.engine.max_num_tokens,
        kv_fp8=prec.kv_cache.element_bits == 8,
        spec=spec,
        max_len=fr.isl + fr.osl + spec,
    )
    disagg = int(c["mode"][i]) == MODE_DISAGGREGATED
    conc = int(c["concurrency"][i])
    # the engine's batch limit is the batch the prediction runs (the memory cap, or the limit
    # a tuned engine keeps: serving.admission); the benchmark still sends ``conc`` clients
    running = min(conc, math.ceil(float(c["running_concurrency"][i]) - 1e-9))
    dec = _role(
        x,
        int(c["tp"][i]),
        int(c["pp"][i]),
        int(c["ep"][i]),
        bool(c["attention_dp"][i]),
        int(c["cp"][i]),
        running,
        int(c["dp"][i]),
        "decode" if disagg else "",
        PORT + 2 if disagg else PORT,
    )
    conc_total = conc * int(c["dp"][i])
    out: dict[str, Any] = {
        "precision": prec.id,
        "kv_cache_dtype": prec.kv_cache.id,
        "chunk_tokens": fr.engine.max_num_tokens,
        "checkpoint": ckpt,
        "engines": list(x.engines),
        "hardware": {
            "id": fr.hardware.id,
            "vendor": fr.hardware.vendor,
            "gpus_per_node": x.gpn,
        },
        "speculative_tokens": spec if spec and mtp_layers(fr.model) else 0,
        "bench": _bench(x, conc_total),
        "prediction": {
            "concurrency_total": conc_total,
            "isl": fr.isl,
            "osl": fr.osl,
            "ttft_ms": round(float(c["ttft_s"][i]) * 1e3, 3),
            "tpot_ms": round(float(c["tpot_s"][i]) * 1e3, 3),
            "tok_s_per_user": round(float(c["tok_s_per_user"][i]), 3),
            "output_tok_s_per_gpu": round(float(c["output_tok_s_per_gpu"][i]), 3),
        },
    }
    notes: list[str] = []
    if ckpt["note"]:
        notes.append(ckpt["note"])
    if running < conc and running < float(c["max_concurrency"][i]) - 1e-9:
        notes.append(
            f"batch limit {running} of the {conc} clients per replica: the batch a tuned engine "
            "keeps (more would deliver fewer tokens/s, serving.admission); the benchmark's other "
            "clients queue, and the predicted TTFT includes their wait"
        )
        ranks = int(c["tp"][i]) if bool(c["attention_dp"][i]) else 1
        if running % ranks:
            notes.append(
                f"{running} sequences is not a whole number per attention-DP rank ({ranks} "
                "ranks): the engine's per-rank limit cannot hold it, so cap in-flight requests "
                f"at {running} in front of the engine (a router or the client)"
            )
    if "trtllm" not in x.engines:
        notes.append(f"TensorRT-LLM runs on NVIDIA GPUs only: not offered on {fr.hardware.id}")
    notes += _kv_held_notes(fr, prec, x.engines) + context_note(fr.model, fr.isl, fr.osl)
    eps = {int(c["ep"][i])} | ({int(c["p_ep"][i])} if disagg else set())
    if any(redundant_experts(fr.model, ep) for ep in eps):  # (the copies need a balancer)
        notes.append(
            "the EP group holds redundant expert copies (specs.plan.expert_slots), which each "
            "engine places through its load balancer, so these files turn it on; the point was "
            f"priced at engine {fr.engine.id}'s own balance (expert_balancer "
            f"{fr.engine.expert_balancer!r}): the deployment's EPLB balance is faster than "
            "predicted where the experts are unequally popular (estimate --from prices it)"
        )
    which = [ENGINE_NAMES.get(e, e) for e in x.engines if not mtp_layers(fr.model, e)]
    if spec and which:
        notes.append(
            f"the point assumes {spec} speculative tokens; no MTP drafter for {fr.model.id} in "
            f"{', '.join(which)}, so choose a draft model (EAGLE) there: no flag is written for it"
        )
    if disagg:
        pre = _role(
            x,
            int(c["p_tp"][i]),
            int(c["p_pp"][i]),
            int(c["p_ep"][i]),
            bool(c["p_attention_dp"][i]),
            int(c["p_cp"][i]),
            int(c["p_batch"][i]),
            int(c["prefill_workers"][i]),
            "prefill",
            PORT + 1,
        )
        out["prefill"] = pre
        out["decode"] = dec
        out["notes"] = notes
        out["disaggregation"] = disaggregated_deployment(
            x.engines,
            pre,
            dec,
            int(c["prefill_workers"][i]),
            int(c["decode_workers"][i]),
            x.model_for,
        )
    else:
        out.update(dec)
        out["notes"] = notes + dec["notes"]
    return out

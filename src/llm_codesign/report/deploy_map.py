"""A deployment read by :mod:`.deploy_read` mapped to the model's inputs: the plan (TP, PP, EP,
attention DP, Helix, replicas; disaggregated prefill and decode pools from a Dynamo YAML), the
precision (checkpoint and ``--quantization``, KV dtype), the engine and its constants (memory
fraction, max batch, max tokens per step, overlap scheduler, the KV its windowed attention
layers hold), speculative decoding and the benchmark's workload.

Policy: every setting is either mapped (``Deployment.mapped``: what it set), ignored with the
reason it leaves the prediction unchanged (``Deployment.ignored``), or an error (one line naming
the flag and the allowed values) when it changes the answer and the model cannot price it.
Explicit ``estimate`` options override what the deployment states (``Deployment.overridden``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..comm import is_ep_kernel
from ..errors import SpecError
from ..mixers import windowed_layers, windowed_share
from ..specs.checkpoint import named_checkpoint
from ..specs.engine import EngineConstants, load_engine
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec, load_model
from ..specs.plan import DisaggregatedPlan, ParallelPlan
from ..validate.mapping import match_model_name
from .deploy_experts import expert_copies
from .deploy_read import Setting, Source, read_sources
from .deploy_values import (
    DTYPES,
    KV_DTYPES,
    QUANTIZATION,
    SPEC_ALGORITHMS,
    TRTLLM_BACKENDS,
    as_bool,
    as_choice,
    as_float,
    as_int,
    bench_workload,
    check_lengths,
    graph_settings,
    launch_graph_sizes,
    read_moe_a2a,
    scheduler_settings,
    server_precision,
    sglang_line_fraction,
    sglang_moe_runner_engine,
    trtllm_moe_backend_engine,
)
from .launch_data import mtp_layers


@dataclass
class Server:
    """One server or worker's mapped settings."""

    src: Source
    tp: int = 1
    pp: int = 1
    ep: int = 1
    cp: int = 1
    attention_dp: bool = False
    replicas: int = 1
    engine: dict[str, Any] = field(default_factory=dict)  # EngineConstants overrides
    max_batch: int | None = None  # sequences per scheduling rank
    kv_bits: int | None = None
    quantization: str | None = None
    spec_tokens: int = 0
    graph_batch: int | None = None  # --cuda-graph-max-bs (SGLang's default memory fraction)
    max_len: int | None = None
    chunked: bool = True
    mapped: list[dict[str, str]] = field(default_factory=list)
    ignored: list[dict[str, str]] = field(default_factory=list)

    def plan(self) -> ParallelPlan:
        return ParallelPlan(self.tp, self.pp, self.ep, self.replicas, self.attention_dp, self.cp)


@dataclass
class Deployment:
    """What a deployment maps to (module doc); :meth:`estimate_args` are ``estimate``'s inputs."""

    kinds: list[str]
    engine: str
    model: ModelSpec
    precision: str
    plan: ParallelPlan | DisaggregatedPlan
    engine_constants: EngineConstants
    prefill_engine: EngineConstants | None  # a disaggregated prefill pool's own, where it differs
    isl: int
    osl: int
    concurrency: int
    spec_tokens: int
    spec_acceptance: float
    mapped: list[dict[str, str]]
    ignored: list[dict[str, str]]
    overridden: list[dict[str, str]]
    notes: list[str]

    def estimate_args(self) -> dict[str, Any]:
        from ..specs.workload import Workload

        return {
            "model": self.model,
            "precision": self.precision,
            "plan": self.plan,
            "workload": Workload(self.isl, self.osl, self.concurrency),
            "engine": self.engine_constants,
            "prefill_engine": self.prefill_engine,
            "spec_tokens": self.spec_tokens,
            "spec_acceptance": self.spec_acceptance,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "sources": self.kinds,
            "engine": self.engine,
            "model": self.model.id,
            "precision": self.precision,
            "plan": self.plan.to_dict(),
            "workload": {"isl": self.isl, "osl": self.osl, "concurrency": self.concurrency},
            "spec_tokens": self.spec_tokens,
            "mapped": self.mapped,
            "ignored": self.ignored,
            "overridden": self.overridden,
            "notes": self.notes,
        }


def _map_server(src: Source, m: ModelSpec) -> Server:
    """One server's settings (``src``) as plan axes and engine constants, per engine."""
    sv = Server(src, replicas=src.replicas)
    by = {s.name: s for s in src.settings}  # the last one given wins, as in argparse / YAML
    moe = bool(m.moe)

    def note(s: Setting, to: str) -> None:
        sv.mapped.append({"setting": s.origin, "maps_to": to})

    def skip(s: Setting, why: str) -> None:
        sv.ignored.append({"setting": s.origin, "reason": why})

    tp = as_int(by["tp"]) if "tp" in by else 1
    pp = as_int(by["pp"]) if "pp" in by else 1
    dp = as_int(by["dp"]) if "dp" in by else 1
    ep = as_int(by["ep"]) if "ep" in by else None
    cp = as_int(by["cp"]) if "cp" in by else 1
    adp = as_bool(by["attention_dp"]) if "attention_dp" in by else False
    for s in src.values("config"):
        note(s, "TensorRT-LLM options file: its keys are read")
    for name in ("tp", "pp", "cp"):
        if name in by:
            note(by[name], f"plan {name}={as_int(by[name])}")
    if src.engine == "trtllm":
        if "cp" in by:
            if "cp_type" in by and str(by["cp_type"].value).upper() != "HELIX":
                as_choice(by["cp_type"], ["HELIX"], case=True)
            tp *= cp  # Helix splits the tp group into attention-TP x context-parallel
            note(by["cp"], f"Helix cp={cp} inside tp={tp} (tensor_parallel_size x cp)")
        if ep is None and "moe_tp" in by:
            ep = tp // as_int(by["moe_tp"])
        if "moe_tp" in by and ep * as_int(by["moe_tp"]) != tp:
            raise SpecError(
                f"{by['moe_tp'].origin}: moe_tensor_parallel_size x moe_expert_parallel_size = "
                f"{by['moe_tp'].value} x {ep} must equal tp={tp}"
            )
        if "attention_dp" in by:
            note(by["attention_dp"], f"plan attention_dp={adp}")
        if "backend" in by:
            as_choice(by["backend"], list(TRTLLM_BACKENDS))
            note(by["backend"], f"engine {TRTLLM_BACKENDS[str(by['backend'].value).lower()]}")
        if "moe_backend" in by:
            over, said = trtllm_moe_backend_engine(by["moe_backend"])
            sv.engine.update(over)
            note(by["moe_backend"], said)
        if "overlap_off" in by and as_bool(by["overlap_off"]):
            if src.role == "prefill":
                skip(by["overlap_off"], "a prefill worker runs one step per batch: no overlap")
            else:
                sv.engine["host_overlap"] = 0.0
                note(by["overlap_off"], "engine host_overlap=0 (no overlap scheduler)")
        ep = ep or 1
    elif src.engine == "vllm":
        expert = as_bool(by["expert_parallel"]) if "expert_parallel" in by else False
        if dp > 1 and moe:  # vLLM DP on a MoE model: attention per DP rank, experts over all
            if tp != 1:
                raise SpecError(
                    f"{by['dp'].origin} with {by['tp'].origin}: attention TP inside attention DP "
                    "is not a plan the model prices; allowed: --tensor-parallel-size 1 with "
                    "--data-parallel-size > 1, or --data-parallel-size 1"
                )
            tp, adp = dp, True
            note(by["dp"], f"plan tp={dp} with attention_dp (MoE layers span the {dp} ranks)")
        elif dp > 1:
            sv.replicas *= dp
            note(by["dp"], f"plan dp={dp} replicas (a dense model has no attention DP)")
        ep = tp if (expert and moe) else 1
        sv.engine.update(read_moe_a2a(by, src, moe and expert and adp, note, skip))
        if "hybrid_kv_off" in by and as_bool(by["hybrid_kv_off"]):  # every layer a full one
            _windowed_share(sv, by["hybrid_kv_off"], 1.0, m, note, skip)
        if "expert_parallel" in by:
            if moe:
                note(by["expert_parallel"], f"plan ep={ep}")
            else:
                skip(by["expert_parallel"], f"{m.id} has no experts")
    else:  # sglang
        if adp:
            if "dp" in by:
                note(by["dp"], f"attention-DP ranks = tp = {tp}")
            if dp != tp:
                raise SpecError(
                    f"--enable-dp-attention with --dp {dp} and --tp {tp}: the model prices "
                    f"attention DP over the whole tp group; allowed: --dp {tp}"
                )
            note(by["attention_dp"], f"plan attention_dp over tp={tp}")
        elif dp > 1:
            sv.replicas *= dp
            note(by["dp"], f"plan dp={dp} replicas")
        over = read_moe_a2a(by, src, moe, note, skip)
        sv.engine.update(over)
        # SGLang sets ep to tp with an all-to-all backend (server_args._handle_a2a_moe)
        ep = (
            tp
            if over.get("moe_comm", "allgather_reducescatter") != "allgather_reducescatter"
            else ep or 1
        )
        if "radix_off" in by and as_bool(by["radix_off"]):
            if m.has_recurrent_state:  # SGLang keeps its overlap without a radix cache
                sv.engine["recurrent_state_overlap"] = True
                note(by["radix_off"], "engine recurrent_state_overlap=true (overlap scheduler on)")
            else:
                skip(by["radix_off"], "prefix caching: random prompts share no prefix, no hits")
        if "swa_off" in by and as_bool(by["swa_off"]):  # one pool: windows at full length
            _windowed_share(sv, by["swa_off"], 1.0, m, note, skip)
            if "swa_ratio" in by:
                skip(by["swa_ratio"], "--disable-hybrid-swa-memory keeps one pool: no SWA pool")
        elif "swa_ratio" in by:
            _windowed_share(sv, by["swa_ratio"], as_float(by["swa_ratio"]), m, note, skip)
        if "moe_runner" in by:
            over, said = sglang_moe_runner_engine(by["moe_runner"])
            sv.engine.update(over)
            note(by["moe_runner"], said)
    if "ep" in by:
        note(by["ep"], f"plan ep={ep}")
    a2a = by.get("deepep") or by.get("moe_a2a") or by.get("all2all")
    if a2a is not None and not adp and is_ep_kernel(sv.engine.get("moe_comm", "")):
        raise SpecError(f"{a2a.origin}: an all-to-all kernel ({sv.engine['moe_comm']}) without "
                        "attention-DP is not priced; allowed: --enable-dp-attention")  # fmt: skip
    expert_copies(by, m, ep, sv.engine, note, skip)  # (EPLB and its copies: expert_slots)
    sv.tp, sv.pp, sv.ep, sv.cp, sv.attention_dp = tp, pp, ep, cp, adp
    ranks = tp if adp else 1
    if "max_batch" in by:
        sv.max_batch = as_int(by["max_batch"])
        note(by["max_batch"], f"engine max_batch_size={sv.max_batch} per scheduling rank")
    if "max_running" in by:  # SGLang: the whole server's; its DP ranks share it
        sv.max_batch = max(1, as_int(by["max_running"]) // ranks)
        note(by["max_running"], f"engine max_batch_size={sv.max_batch} per scheduling rank")
    if "max_num_tokens" in by:
        v = int(str(by["max_num_tokens"].value))
        if v == -1 and src.engine == "sglang":
            sv.chunked = False
            note(by["max_num_tokens"], "chunked prefill off")
        else:
            sv.engine["max_num_tokens"] = as_int(by["max_num_tokens"])
            share = (
                f" (the server's: {v // ranks} a DP-attention rank)"
                if src.engine == "sglang" and ranks > 1
                else ""
            )
            note(by["max_num_tokens"], f"engine max_num_tokens={v}{share}")
    if "chunked_prefill" in by:
        sv.chunked = as_bool(by["chunked_prefill"])
        note(by["chunked_prefill"], f"chunked prefill {'on' if sv.chunked else 'off'}")
    if "memory_fraction" in by:
        if not 0 < as_float(by["memory_fraction"]) <= 1:
            raise SpecError(f"{by['memory_fraction'].origin}: allowed: a fraction in (0, 1]")
        sv.engine["memory_utilization"] = as_float(by["memory_fraction"])
        note(by["memory_fraction"], f"engine memory_utilization={as_float(by['memory_fraction'])}")
    if "kv_dtype" in by:
        sv.kv_bits = KV_DTYPES[as_choice(by["kv_dtype"], list(KV_DTYPES))]
        note(by["kv_dtype"], f"KV cache {({8: 'FP8', 16: '16-bit'}).get(sv.kv_bits, 'auto')}")
    if "quantization" in by:
        sv.quantization = as_choice(by["quantization"], list(QUANTIZATION))
        key = QUANTIZATION[sv.quantization]
        note(by["quantization"], f"weights {key or 'as the checkpoint states'}")
    if "dtype" in by:
        as_choice(by["dtype"], DTYPES)
        skip(by["dtype"], "16-bit activations: BF16 and FP16 run at the same rate")
    if "max_len" in by:
        sv.max_len = as_int(by["max_len"])
        note(by["max_len"], "checked: ISL + OSL (+ drafts) must fit")
    scheduler_settings(by, adp, sv.engine, note, skip)
    sv.graph_batch = graph_settings(by, sv.engine, note, src.engine)
    if "eager" in by and as_bool(by["eager"]):
        raise SpecError(
            f"{by['eager'].origin}: eager mode (no CUDA graphs) is not priced (the engine "
            "constants were fitted with graphs); allowed: drop it"
        )
    if "worker_gpus" in by and as_int(by["worker_gpus"]) != tp * pp:
        raise SpecError(
            f"{by['worker_gpus'].origin}: the worker's tp x pp = {tp} x {pp} = {tp * pp} GPUs; "
            f"allowed: {tp * pp}"
        )
    for name in ("worker_gpus", "disagg_mode", "prefill_worker"):
        if name in by:
            note(by[name], f"checked: {name.replace('_', ' ')}")
    sv.spec_tokens = _spec_tokens(by, m, note)
    return sv


def _windowed_share(
    sv: Server, s: Setting, share: float, m: ModelSpec, note: Any, skip: Any
) -> None:
    """The KV a windowed attention layer holds (``EngineConstants.windowed_kv_share``) from a
    launch flag: SGLang's ``--swa-full-tokens-ratio`` (SWA-layer tokens per full-layer token)
    or ``--disable-hybrid-swa-memory``, vLLM's ``--disable-hybrid-kv-cache-manager`` (both put
    every layer in one pool: a share of 1)."""
    if not 0 < share <= 1:
        raise SpecError(f"{s.origin}: {share:g} is not a ratio in (0, 1]")
    if not windowed_layers(m):
        skip(s, f"{m.id} has no sliding-window or chunked attention layer")
        return
    if windowed_share(m, share) != share:  # the rule that applies instead (mixers.windowed_share)
        why = (
            "chunked attention holds the whole context on every engine's default"
            if m.attention.chunked_window
            else "every attention layer is windowed: one pool holds the window"
        )
        skip(s, f"{m.id}: {why}")
        return
    sv.engine["windowed_kv_share"] = share
    note(s, f"engine windowed_kv_share={share:g} (KV a windowed layer holds, x its context)")


def _spec_tokens(by: dict[str, Setting], m: ModelSpec, note: Any) -> int:
    """Draft tokens per step of MTP speculative decoding (the model's own next-token layers);
    a separate draft model (EAGLE heads, n-grams) is not priced: an error."""
    n, origin = 0, None
    if "spec_method" in by:
        as_choice(by["spec_method"], ["mtp"])
        n = as_int(by["spec_tokens"]) if "spec_tokens" in by else 1
        origin = by["spec_method"]
    elif "spec_config" in by:
        s = by["spec_config"]
        try:
            conf = json.loads(str(s.value))
        except json.JSONDecodeError:
            raise SpecError(f"{s.origin}: not JSON") from None
        if not isinstance(conf, dict) or not str(conf.get("method", "")).endswith("mtp"):
            raise SpecError(
                f"{s.origin}: only MTP (the model's own draft layers) is priced; allowed methods: "
                "mtp, deepseek_mtp"
            )
        n = as_int(Setting("spec", conf.get("num_speculative_tokens", 1), s.origin))
        origin = s
    elif "spec_algorithm" in by:
        s = by["spec_algorithm"]
        as_choice(s, SPEC_ALGORITHMS, case=True)
        n = as_int(by["spec_steps"]) if "spec_steps" in by else 1
        if "spec_topk" in by and as_int(by["spec_topk"]) != 1:
            raise SpecError(f"{by['spec_topk'].origin}: tree drafting is not priced; allowed: 1")
        if "spec_draft_tokens" in by and as_int(by["spec_draft_tokens"]) != n + 1:
            raise SpecError(
                f"{by['spec_draft_tokens'].origin}: a chain of {n} steps verifies {n + 1} tokens;"
                f" allowed: {n + 1}"
            )
        origin = s
    if origin is None:
        return 0
    if not mtp_layers(m):
        raise SpecError(
            f"{origin.origin}: {m.id} has no MTP module an engine launches as its drafter; a "
            "separate draft model is not priced"
        )
    note(origin, f"speculative decoding: {n} MTP draft tokens per step")
    for name in ("spec_tokens", "spec_steps", "spec_topk", "spec_draft_tokens"):
        if name in by:
            note(by[name], "checked: an MTP chain of one draft per step")
    return n


def _model(sources: list[Source], explicit: str | None) -> tuple[ModelSpec, str]:
    """The bundled model a deployment serves, and the checkpoint name it loads."""
    names = [s.value for src in sources if not src.is_bench for s in src.values("model")]
    names += [s.value for b in sources if b.is_bench for s in b.values("bench_model")]
    if explicit:
        return load_model(explicit), str(names[0]) if names else ""
    if not names:
        raise SpecError("--from: the deployment names no model; give --model")
    text = str(names[0])
    bundled = match_model_name(text) or match_model_name(Path(text).name)
    if bundled:  # (a published quantized checkpoint's name brings its weights)
        return named_checkpoint(load_model(bundled), Path(text).name), text
    if Path(text).expanduser().is_dir() and (Path(text).expanduser() / "config.json").is_file():
        return load_model(str(Path(text).expanduser() / "config.json")), text
    try:
        return load_model(text), text
    except SpecError:
        raise SpecError(
            f"model {text!r} matches no bundled model (ids, aliases, names without organisation "
            "and variant suffixes) and no local config.json; give --model"
        ) from None


def read_deployment(
    sources: Sequence[str],
    hardware: HardwareSpec,
    *,
    explicit: dict[str, Any] | None = None,
) -> Deployment:
    """Read ``sources`` (files or command lines: :func:`.deploy_read.read_sources`) and map
    them (module doc). ``explicit``: options given on the command line (model, precision,
    engine, tp, pp, ep, dp, attention_dp, cp, num_gpus, isl, osl, concurrency, spec_tokens,
    spec_acceptance); each overrides what the deployment states and is listed as such."""
    ex = dict(explicit or {})
    srcs = read_sources(sources)
    benches = [s for s in srcs if s.is_bench]
    configs = [s for s in srcs if s.tool == "trtllm-config"]
    servers = [s for s in srcs if not s.is_bench and s.tool != "trtllm-config"]
    if len(benches) > 1:
        raise SpecError("--from: more than one benchmark command; give one")
    if not servers:
        raise SpecError(
            "--from: no server command or worker; give the engine's command line (trtllm-serve, "
            "vllm serve, python -m sglang.launch_server) or a Dynamo YAML"
        )
    for c in configs:  # an options file given on its own belongs to the trtllm-serve command
        trt = [s for s in servers if s.tool == "trtllm-serve"]
        if len(trt) != 1:
            raise SpecError(f"{c.where}: an options file needs one trtllm-serve command with it")
        read = {Path(str(s.value)).name for s in trt[0].values("config")}
        if Path(c.where).name not in read:
            trt[0].settings += c.settings
            trt[0].ignored += c.ignored
    servers = _unique(servers)
    m, ckpt = _model(srcs, ex.get("model"))
    maps = [_map_server(s, m) for s in servers]
    notes: list[str] = []
    overridden: list[dict[str, str]] = []
    mapped = [
        {"setting": x.origin, "maps_to": f"model {m.id}"}
        for s in srcs
        for x in s.settings
        if x.name in ("model", "bench_model")
    ]
    mapped += [x for sv in maps for x in sv.mapped]
    ignored = [x for sv in maps for x in sv.ignored]
    ignored += [{"setting": o, "reason": r} for s in srcs for o, r in s.ignored]
    engines = {s.engine for s in servers}
    if len(engines) > 1:
        raise SpecError(f"--from: servers of several engines ({', '.join(sorted(engines))})")
    engine = engines.pop()
    trt_backend = [s for sv in maps for s in sv.src.values("backend")]
    if trt_backend:
        engine = TRTLLM_BACKENDS[str(trt_backend[-1].value).lower()]
    sv0 = next((sv for sv in maps if sv.src.role != "prefill"), maps[0])
    precision, why = server_precision(m, hardware, ckpt, sv0.quantization, sv0.kv_bits, engine)
    mapped += why
    work, wmapped = bench_workload(benches[0] if benches else None, notes)
    mapped += wmapped
    if any(sv.src.role for sv in maps):
        plan, conc_div, eng_over, max_batch, pre_own = _disaggregated(maps)
    else:
        if len(maps) > 1:
            raise SpecError(
                "--from: several different servers; an aggregated deployment is one server "
                "command (a disaggregated one: a Dynamo YAML with prefill and decode workers)"
            )
        sv = maps[0]
        plan, eng_over, max_batch, pre_own = sv.plan(), dict(sv.engine), sv.max_batch, None
        conc_div = 0
    # explicit options override the deployment
    for name, value in ex.items():
        if name in ("model", "precision", "engine", "isl", "osl", "concurrency", "num_gpus"):
            overridden.append({"setting": name, "value": str(value)})
        elif name in ("tp", "pp", "ep", "dp", "attention_dp", "cp"):
            if isinstance(plan, DisaggregatedPlan):
                raise SpecError(
                    f"--{name.replace('_', '-')}: a disaggregated deployment's plans "
                    "come from its workers; drop the option"
                )
            plan = ParallelPlan(**{**plan.to_dict(), name: value})
            overridden.append({"setting": name, "value": str(value)})
    if "precision" in ex:
        precision = str(ex["precision"])
    if "engine" in ex:
        engine = str(ex["engine"])
    if isinstance(plan, ParallelPlan) and ex.get("num_gpus"):
        n = int(ex["num_gpus"])
        if n % plan.gpus_per_replica:
            raise SpecError(
                f"--num-gpus {n} is not a multiple of tp x pp = {plan.gpus_per_replica}"
            )
        plan = ParallelPlan(**{**plan.to_dict(), "dp": n // plan.gpus_per_replica})
    base = load_engine(engine, hardware)  # (the runtime's limits on this GPU: specs.gpu_defaults)
    if max_batch is not None:
        eng_over["max_batch_size"] = max_batch
    constants = base.with_overrides(**eng_over) if eng_over else base
    own = {k: v for k, v in (pre_own or {}).items() if v != getattr(constants, k)}
    prefill = constants.with_overrides(**own) if own else None
    spec = max(sv.spec_tokens for sv in maps)
    if "spec_tokens" in ex:
        spec = int(ex["spec_tokens"])
    if isinstance(plan, ParallelPlan):  # the capture sizes as the launch runs them
        graphs = launch_graph_sizes(constants, hardware, plan.tp, maps[0].graph_batch)
        constants = constants.with_overrides(cuda_graph_batches=graphs)
    if constants.memory_utilization == 0 and isinstance(plan, ParallelPlan):  # SGLang's default
        u, why = sglang_line_fraction(hardware, plan, constants, maps[0].graph_batch, spec)
        constants, mapped = constants.with_overrides(memory_utilization=u), mapped + why
    acceptance = float(ex.get("spec_acceptance") or 0.0)
    if spec and not acceptance:
        raise SpecError(
            f"the deployment runs {spec} MTP draft token(s) per step: give --spec-acceptance "
            "(the acceptance rate of each draft token, e.g. 0.7)"
        )
    isl = int(ex.get("isl") or work.get("isl") or 1024)
    osl = int(ex.get("osl") or work.get("osl") or 1024)
    total = work.get("concurrency")
    if "concurrency" in ex:
        conc = int(ex["concurrency"])
    elif total is None:
        conc = 1
    else:
        div = conc_div or (plan.dp if isinstance(plan, ParallelPlan) else 1)
        if total % div:
            raise SpecError(
                f"benchmark concurrency {total} does not split evenly over {div} "
                f"{'decode workers' if conc_div else 'replicas'}; the model prices equal shares"
            )
        conc = total // div
    if not benches and not {"isl", "osl", "concurrency"} <= set(ex):
        notes.append(
            "no benchmark command: ISL, OSL and concurrency come from the options "
            f"({isl}/{osl}, concurrency {conc} per replica)"
        )
    check_lengths(maps, constants, isl, osl, spec)
    return Deployment(
        kinds=sorted({s.tool for s in srcs}),
        engine=engine,
        model=m,
        precision=precision,
        plan=plan,
        engine_constants=constants,
        prefill_engine=prefill,
        isl=isl,
        osl=osl,
        concurrency=conc,
        spec_tokens=spec,
        spec_acceptance=acceptance,
        mapped=mapped,
        ignored=ignored,
        overridden=overridden,
        notes=notes,
    )


def _unique(servers: list[Source]) -> list[Source]:
    """One source per server: the per-node commands of one multi-node server state the same
    settings (their node ranks and addresses are ignored placement)."""
    seen: dict[tuple[Any, ...], Source] = {}
    for s in servers:
        key = (s.tool, s.role, tuple((x.name, str(x.value)) for x in s.settings))
        seen.setdefault(key, s)
    return list(seen.values())


def _disaggregated(
    maps: list[Server],
) -> tuple[DisaggregatedPlan, int, dict, int | None, dict]:
    pre = [sv for sv in maps if sv.src.role == "prefill"]
    dec = [sv for sv in maps if sv.src.role == "decode"]
    if len(pre) != 1 or len(dec) != 1 or len(maps) != 2:
        raise SpecError(
            "--from: a disaggregated deployment needs one prefill and one decode worker service "
            f"(found {len(pre)} prefill, {len(dec)} decode, {len(maps) - len(pre) - len(dec)} "
            "aggregated)"
        )
    p, d = pre[0], dec[0]
    for name in ("max_num_tokens", "memory_utilization"):  # memory: a fraction each, or none
        pv, dv = p.engine.get(name), d.engine.get(name)
        if pv != dv and (name == "max_num_tokens" or None in (pv, dv)):
            raise SpecError(
                f"prefill and decode workers differ in {name} ({pv} vs {dv}); the model "
                "prices one engine for both pools"
            )
    p_ranks = p.tp if p.attention_dp else 1
    batch = (p.max_batch or 1) * p_ranks
    plan = DisaggregatedPlan(
        ParallelPlan(p.tp, p.pp, p.ep, 1, p.attention_dp, p.cp),
        ParallelPlan(d.tp, d.pp, d.ep, 1, d.attention_dp, d.cp),
        p.replicas,
        d.replicas,
        batch,
    )
    # the prefill workers' own dispatch family and memory fraction (priced on their pool)
    own = {k: p.engine[k] for k in ("moe_comm", "memory_utilization") if k in p.engine}
    return plan, d.replicas, dict(d.engine), d.max_batch, own

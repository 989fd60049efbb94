"""Values of deployment settings: numbers, switches and choices checked with one-line errors,
the precision a server runs (weights from ``--quantization`` or the checkpoint it loads, KV cache
from its dtype) and the workload of a benchmark client (mean ISL and OSL, total concurrency)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..serving.memory import sglang_memory_fraction
from ..specs.accuracy import accuracy_for, accuracy_key
from ..specs.checkpoint import EXPORT_NAMES, default_precision, format_word
from ..specs.cuda_graphs import GRAPH_RULES, executor_sizes, graph_sizes
from ..specs.engine import (
    ADP_BALANCE_MAX_ITERS,
    SGLANG_PREFILL_DELAYER_PASSES,
    TRTLLM_ADP_BALANCE_DEFAULTS,
    TRTLLM_CAPACITY_POLICIES,
    EngineConstants,
    sglang_auto_kv_fp8,
)
from ..specs.gpu_defaults import for_gpu
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.plan import ParallelPlan
from ..specs.precision import parse_precision
from .deploy_read import Setting, Source
from .launch_data import SGLANG_A2A, SGLANG_DEEPEP_MODES, VLLM_A2A, checkpoint_for

# weight formats `--quantization` names (vLLM, SGLang) -> accuracy key; '' = the checkpoint's own
QUANTIZATION = {
    "fp8": "fp8",
    "modelopt": "fp8",
    "modelopt_fp8": "fp8",
    "modelopt_fp4": "nvfp4",
    "mxfp4": "mxfp4",
    "awq": "w4a16",
    "awq_marlin": "w4a16",
    "gptq": "w4a16",
    "gptq_marlin": "w4a16",
    "compressed-tensors": "",
    "none": "",
}
# KV cache dtypes -> 8 (FP8) or 16 bits; None for 'auto', the engine's automatic format: the
# model's 16-bit dtype (vLLM; SGLang, except a DSA model's FP8 on Blackwell:
# specs.engine.sglang_auto_kv_fp8), and TensorRT-LLM's 'auto' is how the launch writer asks for
# a 16-bit KV cache
KV_DTYPES: dict[str, int | None] = {
    "auto": None,
    "bf16": 16,
    "bfloat16": 16,
    "fp16": 16,
    "float16": 16,
    "fp8": 8,
    "fp8_e4m3": 8,
    "fp8_e5m2": 8,
}
DTYPES = ("auto", "bfloat16", "bf16", "float16", "fp16", "half")
# accuracy key -> the preset serving it; the checkpoint's own key serves its own format
PRESET_OF = {"bf16": "bf16", "fp8": "fp8", "nvfp4": "nvfp4", "mxfp4": "mxfp4", "w4a16": "w4a16"}
PRESET_OF |= {"int8": "int8"}
# a checkpoint name's format word: the quantized exports' (``specs.checkpoint.EXPORT_NAMES``),
# then a 16-bit copy's
NAME_TOKENS = (
    *((rx, preset) for rx, _word, preset, _is in EXPORT_NAMES),
    (format_word("bf16"), "bf16"),
)
TRTLLM_BACKENDS = {"pytorch": "trtllm", "tensorrt": "trtllm-trt", "trt": "trtllm-trt"}
SPEC_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN")  # SGLang's MTP runs through its EAGLE worker


def as_int(s: Setting, lo: int = 1, hi: int = 10_000_000, unit: str = "") -> int:
    try:
        v = int(str(s.value))
    except ValueError:
        raise SpecError(f"{s.origin}: expected an integer >= {lo}") from None
    if v < lo or v > hi:
        raise SpecError(
            f"{s.origin}: expected an integer in [{lo}, {hi}]{f' {unit}' if unit else ''}"
        )
    return v


def as_float(s: Setting) -> float:
    try:
        v = float(str(s.value))
    except ValueError:
        raise SpecError(f"{s.origin}: expected a number") from None
    if not math.isfinite(v):
        raise SpecError(f"{s.origin}: expected a finite number")
    return v


def as_bool(s: Setting) -> bool:
    text = str(s.value).strip().lower()
    if s.value is True or text in ("true", "1", "yes"):
        return not s.origin.startswith("--no-")
    if s.value is False or text in ("false", "0", "no"):
        return s.origin.startswith("--no-")
    raise SpecError(f"{s.origin}: expected true or false")


def as_choice(s: Setting, allowed: Sequence[str], *, case: bool = False) -> str:
    v = str(s.value) if case else str(s.value).lower()
    if v not in allowed:
        raise SpecError(f"{s.origin}: {s.value!r} cannot be priced; allowed: {', '.join(allowed)}")
    return v


def server_precision(
    m: ModelSpec,
    hw: HardwareSpec,
    name: str,
    quantization: str | None,
    kv_bits: int | None,
    engine: str = "",
) -> tuple[str, list[dict[str, str]]]:
    """The precision a server runs: the weights from ``--quantization``, else the checkpoint
    the launch writer would load for a precision (``launch_data.checkpoint_for``, inverted),
    else the checkpoint name's format word, else the checkpoint's own; the KV cache from its
    dtype (absent or ``auto``: 16-bit, except where ``engine`` SGLang's automatic format is FP8:
    ``specs.engine.sglang_auto_kv_fp8``)."""
    own, _ = default_precision(m)
    native = accuracy_key(parse_precision(own))
    key, why = None, ""
    if quantization and QUANTIZATION[quantization]:
        key, why = QUANTIZATION[quantization], f"--quantization {quantization}"
    if key is None and name:
        found = set()
        for text in [own, *PRESET_OF.values()]:
            try:
                prec = parse_precision(text)
                ck = checkpoint_for(m, prec, accuracy_for(m, prec), hw)
            except SpecError:
                continue
            ids = {ck["id"], ck.get("trtllm_id"), ck.get("quantized_id")}
            if ck["how"] == "online":  # BF16 weights quantized at load need --quantization
                ids = {ck.get("quantized_id")}
            if name in ids or name.rstrip("/") in ids:
                found.add(accuracy_key(prec))
        if len(found) == 1:
            key = found.pop()
            why = f"checkpoint {name} (the checkpoint a {key} launch loads)"
    if key is None and name:
        base = Path(name).name.lower()
        for rx, k in NAME_TOKENS:
            if rx.search(base):
                key, why = k, f"checkpoint name {Path(name).name}"
                break
    if key is None:
        key, why = native, f"checkpoint {name or m.id}: its own precision"
    if key == "mxfp4" and native == "mxfp4-w":
        key = native  # gpt-oss: MXFP4 weights are the checkpoint's own weight-only format
    text = own if key == native else PRESET_OF.get(key)
    if text is None:
        raise SpecError(f"checkpoint {name}: weights {key} have no precision preset to price")
    mapped = []
    if kv_bits is None and engine == "sglang" and sglang_auto_kv_fp8(m, hw):
        kv_bits = 8
        auto = "no --kv-cache-dtype, or auto"
        mapped.append({"setting": auto, "maps_to": f"FP8 KV cache (SGLang's for DSA on {hw.id})"})
    kv_bits = kv_bits or 16
    text = "+".join(p for p in text.split("+") if not p.endswith("-kv"))
    if parse_precision(text).kv_cache.element_bits != kv_bits:
        text += "+fp8-kv" if kv_bits == 8 else "+bf16-kv"
    return text, [{"setting": why, "maps_to": f"precision {text}"}, *mapped]


def bench_workload(
    b: Source | None, notes: list[str]
) -> tuple[dict[str, int], list[dict[str, str]]]:
    """ISL, OSL and total concurrency of a benchmark client, with what each came from."""
    if b is None:
        return {}, []
    by = {s.name: s for s in b.settings}
    out: dict[str, int] = {}
    mapped: list[dict[str, str]] = []
    if "dataset" in by:
        as_choice(by["dataset"], ["random"])
        mapped.append(
            {"setting": by["dataset"].origin, "maps_to": "random prompts, no shared prefix"}
        )
    if "range_ratio" in by:
        mapped.append(
            {"setting": by["range_ratio"].origin, "maps_to": "length spread (its mean is priced)"}
        )
    if "ignore_eos" in by:
        mapped.append({"setting": by["ignore_eos"].origin, "maps_to": "every request runs its OSL"})
    if "request_rate" in by and str(by["request_rate"].value).lower() not in ("inf", "infinity"):
        raise SpecError(
            f"{by['request_rate'].origin}: an open-loop request rate is not priced (estimate is a "
            "closed loop at a concurrency); allowed: inf with --max-concurrency"
        )
    # length distributions: vLLM's [L(1-r), L(1+r)] (mean L); SGLang's and TensorRT-LLM's
    # benchmark_serving [rL, L] (mean L(1+r)/2; TensorRT-LLM's default r=1, SGLang's 0)
    ratio = as_float(by["range_ratio"]) if "range_ratio" in by else None
    if ratio is not None and not 0 <= ratio <= 1:
        raise SpecError(f"{by['range_ratio'].origin}: allowed: a ratio in [0, 1]")
    low_fraction = b.tool != "vllm bench serve"
    r = ratio if ratio is not None else (0.0 if "sglang" in b.tool else 1.0)
    for name in ("isl", "osl"):
        if name not in by:
            continue
        n = as_int(by[name])
        mean = max(1, round(n * (1 + r) / 2)) if low_fraction else n
        out[name] = mean
        if low_fraction:
            shape = f"uniform [{r:g} x {n}, {n}]" if r != 1 else "fixed"
        else:
            shape = f"uniform [{1 - r:g} x {n}, {1 + r:g} x {n}]" if r > 0 else "fixed"
        mapped.append(
            {"setting": by[name].origin, "maps_to": f"{name} {mean} (the mean of {shape})"}
        )
    if "prefix_len" in by:
        out["isl"] = out.get("isl", 0) + as_int(by["prefix_len"], 0)
        mapped.append({"setting": by["prefix_len"].origin, "maps_to": "prompt tokens added to isl"})
    if "concurrency" in by:
        out["concurrency"] = as_int(by["concurrency"])
        mapped.append(
            {"setting": by["concurrency"].origin, "maps_to": "concurrency (all replicas)"}
        )
    elif b.tool != "genai-perf profile":
        raise SpecError(
            f"{b.where}: {b.tool} without --max-concurrency sends every prompt at once; "
            "give --max-concurrency"
        )
    for name in ("isl_stddev", "osl_stddev"):
        if name in by and as_float(by[name]) > 0:
            mapped.append({"setting": by[name].origin, "maps_to": "ignored: the mean is priced"})
    extra = [str(s.value) for s in b.values("extra_input")]
    eos = "ignore_eos" in by or any(e.replace(" ", "").lower() == "ignore_eos:true" for e in extra)
    if not eos:
        notes.append(
            f"{b.tool}: without ignore-eos a request may stop before its output length; the "
            "estimate prices the full OSL"
        )
    return out, mapped


# TensorRT-LLM's MoE backends (``moe_config.backend``, read in lower case)
TRTLLM_MOE_BACKENDS = ("cutlass", "triton", "trtllm", "deepgemm", "wideep", "cutedsl")


def trtllm_moe_backend_engine(s: Setting) -> tuple[dict[str, str], str]:
    """(engine overrides, the mapping's note) of TensorRT-LLM's ``moe_config.backend``: TRITON
    runs weight-only experts (MXFP4 on Hopper) on its Triton kernels where the MoE is not
    tensor-parallel, CUTLASS on its CUTLASS runner (the engine's ``moe_kernels_weight_only``:
    ``moe_kernels.weight_only_path``); TRTLLM runs the TRTLLM-Gen fused MoE (``moe_kernels``
    trtllm_gen: on SM100/SM103, elsewhere the CUTLASS runner, ``moe_kernels.moe_kernel_path``);
    the other backends run formats the tensor cores take, whose grouped GEMMs are priced by
    shape and format.

    Example: TRITON -> ({"moe_kernels_weight_only": "triton"}, ...); WIDEEP -> ({}, ...)."""
    v = as_choice(s, list(TRTLLM_MOE_BACKENDS))
    if v in ("triton", "cutlass"):
        path = "triton" if v == "triton" else "same"
        return {"moe_kernels_weight_only": path}, (
            f"engine moe_kernels_weight_only={path} (weight-only experts run {v.upper()})"
        )
    if v == "trtllm":
        return {"moe_kernels": "trtllm_gen"}, "engine moe_kernels=trtllm_gen (TRTLLM-Gen MoE)"
    return {}, f"{v.upper()}: its grouped GEMMs are priced by shape and format"


# SGLang's ``--moe-runner-backend`` -> the MoE kernel path (``EngineConstants.moe_kernels``)
SGLANG_MOE_RUNNERS = {
    "auto": "auto",
    "triton": "triton",
    "flashinfer_trtllm": "trtllm_gen",
    "flashinfer_cutlass": "cutlass",
    "cutlass": "cutlass",
}


def sglang_moe_runner_engine(s: Setting) -> tuple[dict[str, str], str]:
    """(engine overrides, the mapping's note) of SGLang's ``--moe-runner-backend``: the kernel
    path it runs (``SGLANG_MOE_RUNNERS``); a runner with no path of its own in the model
    (DeepGEMM, the CuTe DSL kernels) is refused with the allowed values.

    Example: flashinfer_trtllm -> ({"moe_kernels": "trtllm_gen"}, ...)."""
    path = SGLANG_MOE_RUNNERS[as_choice(s, list(SGLANG_MOE_RUNNERS))]
    return {"moe_kernels": path}, f"engine moe_kernels={path}"


def read_moe_a2a(
    by: dict[str, Setting], src: Source, runs: bool, note: Callable, skip: Callable
) -> dict[str, str]:
    """Engine overrides of a server's MoE all-to-all settings, each noted (``note``) or skipped
    with its reason (``skip``): SGLang's ``--moe-a2a-backend`` (``moe_a2a``), the older switch
    ``--enable-deepep-moe`` (``deepep``; it wins over the backend, as in SGLang) and
    ``--deepep-mode``, or vLLM's ``--all2all-backend`` (``all2all``), server ``src``: its
    engine's table (``launch_data.SGLANG_A2A``, ``VLLM_A2A``) maps the backends to the kernel
    family priced (``EngineConstants.moe_comm``). ``runs``: whether the server runs an
    all-to-all at all (SGLang: a MoE model; vLLM: one with data and expert parallelism), else
    each setting is skipped with that reason; without settings, the engines' default (the
    all-gather). A backend the model has no family for (pplx,
    mooncake, ...) is refused with the allowed values, and so are DeepEP's normal kernels
    on a server that decodes (not a prefill worker): they run without CUDA graphs, eager
    decoding.

    Example: --moe-a2a-backend deepep --deepep-mode low_latency -> {"moe_comm":
    "deepep_low_latency"}."""
    keys = [k for k in ("moe_a2a", "all2all", "deepep", "deepep_mode") if k in by]
    switch = "deepep" in by and as_bool(by["deepep"])
    table = SGLANG_A2A if src.engine == "sglang" else VLLM_A2A
    unused = "" if runs else (
        "no all-to-all: a dense model" if src.engine == "sglang"
        else "vLLM runs its all-to-all only with data and expert parallelism on a MoE model"
    )  # fmt: skip
    if unused or not ("moe_a2a" in by or "all2all" in by or switch):
        for k in keys:
            skip(by[k], unused or "DeepEP's switches without DeepEP as the backend: unused")
        # the engine's own default where it runs one: all-gather (SGLang none, vLLM's default)
        return {} if unused else {"moe_comm": "allgather_reducescatter"}
    a2a = by["deepep"] if switch else by.get("moe_a2a") or by["all2all"]
    family = "deepep" if switch else table[as_choice(a2a, list(table))]
    mode = by.get("deepep_mode")
    if mode is not None and family == "deepep":
        family = SGLANG_DEEPEP_MODES[as_choice(mode, list(SGLANG_DEEPEP_MODES))]
        note(mode, f"engine moe_comm={family}")
    elif mode is not None and family == "mori":  # SGLang's MoRI dispatcher reads it
        note(mode, "MoRI's normal or asynchronous dispatcher, priced alike (comm.MORI)")
    elif mode is not None:
        skip(mode, "DeepEP's mode without --moe-a2a-backend deepep: unused")
    if family == "deepep_normal" and src.role != "prefill":
        raise SpecError(
            f"{(mode or a2a).origin}: DeepEP's normal kernels run without CUDA graphs (eager "
            "decoding is not priced); allowed on a server that decodes: low_latency or auto "
            "(vLLM: deepep_low_latency)"
        )
    for k in ("moe_a2a", "all2all"):  # a backend the older switch overrides
        if switch and k in by:
            skip(by[k], "--enable-deepep-moe selects DeepEP whatever the backend says")
    note(a2a, f"engine moe_comm={family}")
    return {"moe_comm": family}


def adp_balance(
    by: dict[str, Setting], adp: bool, engine: dict, note: Callable, skip: Callable
) -> None:
    """TensorRT-LLM's ``attention_dp_config``: with ``enable_balance`` on and attention-DP,
    the engine's ``adp_balance_timeout_iters`` / ``adp_balance_wait_iters`` (TensorRT-LLM's
    defaults 50 / 10 where the file leaves them out); otherwise the executor waits for nothing
    and the keys are ignored with that reason."""
    keys = [k for k in ("adp_balance", "adp_timeout", "adp_batching_wait") if k in by]
    if not keys:
        return
    on = as_bool(by["adp_balance"]) if "adp_balance" in by else False
    if not (on and adp):
        why = (
            "attention-DP context balance off (enable_balance is false, TensorRT-LLM's default)"
            if adp
            else "no attention-DP: the context balance has no ranks to balance"
        )
        for k in keys:
            skip(by[k], why)
        return
    values = {}
    for k, name in (("adp_timeout", "adp_balance_timeout_iters"),
                     ("adp_batching_wait", "adp_balance_wait_iters")):  # fmt: skip
        v = (
            as_int(by[k], 0, ADP_BALANCE_MAX_ITERS, "iterations")
            if k in by
            else TRTLLM_ADP_BALANCE_DEFAULTS[name]
        )
        engine[name] = values[k] = v
    note(
        by["adp_balance"],
        f"engine adp_balance_timeout_iters={values['adp_timeout']}, "
        f"adp_balance_wait_iters={values['adp_batching_wait']} (attention-DP context balance)"
        + (
            "; timeout_iters 0 holds no context back (the batching wait, which TensorRT-LLM "
            "applies only once every rank holds a context request, is not modelled)"
            if values["adp_timeout"] == 0
            else ""
        ),
    )
    for k in ("adp_timeout", "adp_batching_wait"):
        if k in by:
            note(by[k], "read with enable_balance")


def batch_wait(
    by: dict[str, Setting], adp: bool, engine: dict, note: Callable, skip: Callable
) -> None:
    """TensorRT-LLM's batch waiting (``batch_wait_timeout_iters``, ``batch_wait_max_tokens_ratio``;
    both 0 by default): the engine's constants of the same names without attention-DP, where
    the executor applies it (``serving.balance.batch_wait_window``); with attention-DP the keys
    are ignored with that reason."""
    keys = [k for k in ("batch_wait_timeout", "batch_wait_ratio") if k in by]
    if not keys:
        return
    if adp:
        for k in keys:
            skip(by[k], "attention-DP: TensorRT-LLM applies batch waiting only without it")
        return
    if "batch_wait_timeout" in by:
        iters = as_int(by["batch_wait_timeout"], 0, ADP_BALANCE_MAX_ITERS, "iterations")
        engine["batch_wait_timeout_iters"] = iters
        note(by["batch_wait_timeout"], f"engine batch_wait_timeout_iters={iters} (batch waiting)")
    if "batch_wait_ratio" in by:
        ratio = as_float(by["batch_wait_ratio"])
        if not 0 <= ratio <= 1:
            raise SpecError(
                f"{by['batch_wait_ratio'].origin}: allowed: a share of max_num_tokens in [0, 1]"
            )
        engine["batch_wait_max_tokens_ratio"] = ratio
        note(
            by["batch_wait_ratio"], f"engine batch_wait_max_tokens_ratio={ratio:g} (batch waiting)"
        )


def capacity_policy(by: dict[str, Setting], engine: dict, note: Callable) -> None:
    """TensorRT-LLM's ``scheduler_config.capacity_scheduler_policy``: the engine's
    ``kv_admission`` its policy makes (``specs.engine.TRTLLM_CAPACITY_POLICIES``)."""
    if "capacity_policy" not in by:
        return
    s = by["capacity_policy"]
    policy = str(s.value).strip().upper()
    if policy not in TRTLLM_CAPACITY_POLICIES:
        raise SpecError(
            f"{s.origin}: capacity_scheduler_policy {s.value!r} is not priced; allowed: "
            + ", ".join(TRTLLM_CAPACITY_POLICIES)
        )
    engine["kv_admission"] = TRTLLM_CAPACITY_POLICIES[policy]
    note(s, f"engine kv_admission={engine['kv_admission']} ({policy})")


def scheduler_settings(
    by: dict[str, Setting], adp: bool, engine: dict, note: Callable, skip: Callable
) -> None:
    """The scheduler settings of a TensorRT-LLM options file that set engine constants: the
    attention-DP balance (``adp_balance``), batch waiting (``batch_wait``) and the capacity
    policy (``capacity_policy``)."""
    adp_balance(by, adp, engine, note, skip)
    batch_wait(by, adp, engine, note, skip)
    capacity_policy(by, engine, note)
    prefill_delayer(by, adp, engine, note, skip)


def prefill_delayer(
    by: dict[str, Setting], adp: bool, engine: dict, note: Callable, skip: Callable
) -> None:
    """SGLang's prefill delayer (``--enable-prefill-delayer``, ``--prefill-delayer-max-delay-
    passes``): the engine's attention-DP context balance at max passes - 1 iterations, no
    batching wait (``specs.engine.SGLANG_PREFILL_DELAYER_PASSES``); SGLang refuses it without
    attention-DP, and so does this."""
    keys = [k for k in ("prefill_delayer", "prefill_delayer_passes") if k in by]
    if not keys:
        return
    if "prefill_delayer" not in by or not as_bool(by["prefill_delayer"]):
        for k in keys:
            skip(by[k], "the prefill delayer is off (no --enable-prefill-delayer)")
        return
    if not adp:
        raise SpecError(
            f"{by['prefill_delayer'].origin}: SGLang's prefill delayer needs attention-DP; "
            "allowed: add --enable-dp-attention, or drop --enable-prefill-delayer"
        )
    passes = SGLANG_PREFILL_DELAYER_PASSES
    if "prefill_delayer_passes" in by:
        passes = as_int(by["prefill_delayer_passes"], 1, ADP_BALANCE_MAX_ITERS + 1, "passes")
        note(by["prefill_delayer_passes"], "read with --enable-prefill-delayer")
    engine["adp_balance_timeout_iters"], engine["adp_balance_wait_iters"] = passes - 1, 0
    note(
        by["prefill_delayer"],
        f"engine adp_balance_timeout_iters={passes - 1}, adp_balance_wait_iters=0 (SGLang's "
        f"prefill delayer: a rank's prompts wait at most {passes} - 1 passes for every rank's)",
    )


def check_lengths(maps: Sequence[Any], eng: EngineConstants, isl: int, osl: int, spec: int) -> None:
    """Refuse lengths a server of ``maps`` would reject: past its max length, or a prompt over
    ``max_num_tokens`` with chunked prefill off."""
    for sv in maps:
        if sv.max_len is not None and isl + osl + spec > sv.max_len:
            raise SpecError(
                f"ISL + OSL = {isl} + {osl}{f' + {spec} drafts' if spec else ''} exceeds the "
                f"server's max length {sv.max_len}: requests would be rejected"
            )
        if not sv.chunked and isl > eng.max_num_tokens:
            raise SpecError(
                f"chunked prefill is off and ISL {isl} exceeds max_num_tokens "
                f"{eng.max_num_tokens}: the engine rejects such prompts; turn chunking on or "
                "raise max_num_tokens"
            )


def sglang_line_fraction(
    hw: HardwareSpec, plan: ParallelPlan, eng: EngineConstants, graph_batch: int | None, spec: int
) -> tuple[float, list[dict[str, str]]]:
    """(memory fraction, what it maps) of an SGLang server launched without
    ``--mem-fraction-static``: SGLang's default (``serving.memory.sglang_memory_fraction``) for
    its plan, chunk and GPU, with the line's ``--cuda-graph-max-bs`` where it sets one and the
    reserve of its drafts."""
    chunk = for_gpu(eng, hw).max_num_tokens  # (the line's, else SGLang's own on this GPU)
    u = float(sglang_memory_fraction(hw.device_memory, plan.tp, plan.pp, plan.attention_dp,
                                     chunk, graph_batch, spec > 0))  # fmt: skip
    said = f"engine memory_utilization={u} (SGLang's default for this plan on {hw.id})"
    return u, [{"setting": "no --mem-fraction-static", "maps_to": said}]


def graph_settings(
    by: dict[str, Setting], engine: dict[str, Any], note: Callable[[Setting, str], None], eid: str
) -> int | None:
    """A server line's CUDA-graph settings (``specs.cuda_graphs``) for engine ``eid``: the sizes
    it lists become the engine's ``cuda_graph_batches`` (TensorRT-LLM
    ``cuda_graph_config.batch_sizes``, SGLang ``--cuda-graph-bs``, vLLM ``--cuda-graph-sizes``,
    where one value N is the list 1, 2, 4, 8..N by 8: vLLM's ``--cuda-graph-sizes`` help); its
    largest graph (TensorRT-LLM ``cuda_graph_config.max_batch_size``, SGLang
    ``--cuda-graph-max-bs``) is returned, for :func:`launch_graph_sizes` and SGLang's default
    memory fraction."""
    top = None
    if "cuda_graph_max_batch" in by:
        top = as_int(by["cuda_graph_max_batch"])
        note(by["cuda_graph_max_batch"], f"CUDA graphs up to {top} sequences a rank")
    if "cuda_graph_batch_sizes" in by:
        s = by["cuda_graph_batch_sizes"]
        raw = s.value if isinstance(s.value, list) else str(s.value).strip("[] ").split()
        try:
            sizes = sorted({int(str(x).strip(", ")) for x in raw if str(x).strip(", ")})
        except ValueError:
            sizes = []
        if not sizes or sizes[0] < 1:
            raise SpecError(f"{s.origin}: CUDA-graph batch sizes {s.value!r}; allowed: positive "
                            "whole numbers")  # fmt: skip
        if eid == "vllm" and len(sizes) == 1:
            sizes = [1, 2, 4, *range(8, sizes[0] + 1, 8)]
        engine["cuda_graph_batches"] = ",".join(map(str, sizes))
        note(s, f"engine cuda_graph_batches={engine['cuda_graph_batches']} (a decode step pads up)")
    return top


def launch_graph_sizes(eng: EngineConstants, hw: HardwareSpec, tp: int, top: int | None) -> str:
    """The engine's capture sizes as a launch runs them: its rule up to the launch's largest
    graph ``top``; a TensorRT-LLM list joined by the executor's ``max_batch_size`` and cut there
    (NVIDIA/TensorRT-LLM PR #4843); the engine's own otherwise (``specs.cuda_graphs``)."""
    rule = eng.cuda_graph_batches
    if rule == "none" or (top is None and (rule in GRAPH_RULES or not eng.id.startswith("trtllm"))):
        return rule
    if rule in GRAPH_RULES:
        return ",".join(str(int(x)) for x in graph_sizes(eng, hw, tp, top=top))
    return executor_sizes(rule.split(","), for_gpu(eng, hw).max_batch_size)

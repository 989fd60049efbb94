"""InferenceX's TensorRT-LLM aggregated launch scripts, one family of scripts per model: the
recipe (``validate.recipes.INFERENCEX_TRTLLM``: limits, MoE backend, KV fraction and format,
attention-DP balance, batch waiting, capacity scheduler) an aggregated row ran with at its run
date. ``inferencex_trtllm_row_recipe`` picks a row's family: gpt-oss, MiniMax-M2.5 and Qwen3.5
have scripts of their own; every other model (DeepSeek-R1 first) runs the DeepSeek-R1 scripts'
(``validate.recipes.inferencex_trtllm_recipe``).

Each script is read in SemiAnalysisAI/InferenceX with its history (to @843c6254). What a script
sets that the model does not price is named in the row's note: piecewise CUDA graphs for prompt
steps, ``stream_interval`` (host work per streamed chunk), ``use_low_precision_moe_combine``.
"""

from __future__ import annotations

from ..moe_kernels import runs_trtllm_gen
from ..specs.engine import ADP_BALANCE_FIELDS, TRTLLM_ADP_BALANCE_DEFAULTS
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.precision import parse_precision
from .campaigns import run_date, run_gpu_precision
from .conventions import kv_field
from .recipes import inferencex_trtllm_moe, inferencex_trtllm_name, inferencex_trtllm_recipe
from .tables import bundled_rows

# The gpt-oss-120b scripts (gptoss_fp4_{b200,h200}_trt*.sh): --max_num_tokens 20000,
# free_gpu_memory_fraction 0.85; --max_batch_size 512 on B200, the client count on H200. B200:
# moe backend TRTLLM (CUTLASS at 256 clients or more until 2025-10-20, ac1998a50), KV dtype fp8
# from that commit (auto, BF16, before), enable_balance with TensorRT-LLM's default counts under
# attention-DP. H200: TRITON, dtype auto, no attention_dp_config.
INFERENCEX_GPTOSS_TRTLLM_TOKENS = 20000
INFERENCEX_GPTOSS_TRTLLM_KV = 0.85
INFERENCEX_GPTOSS_TRTLLM_BATCH = 512
INFERENCEX_GPTOSS_TRTLLM_SINCE = "2025-10-20"  # B200: TRTLLM at every client count, FP8 KV
INFERENCEX_GPTOSS_TRTLLM_CUTLASS_CLIENTS = 256  # before it: CUTLASS from this many clients
# The MiniMax-M2.5 NVFP4 scripts (minimaxm2.5_fp4_{b200,b300}_trt.sh, 1bf0693e4 and 726a9db9e,
# 2026-06-12, unchanged until deprecated on 2026-06-20): max_num_tokens 16384, --max_batch_size
# the client count, free_gpu_memory_fraction 0.9 with an FP8 cache, moe backend TRTLLM with
# attention-DP too, enable_balance at TensorRT-LLM's default counts under attention-DP, the
# capacity scheduler MAX_UTILIZATION; piecewise CUDA graphs and stream_interval 100
INFERENCEX_MINIMAX_TRTLLM_TOKENS = 16384
INFERENCEX_MINIMAX_TRTLLM_KV = 0.9
# The Qwen3.5-397B-A17B NVFP4 B200 scripts (qwen3.5_fp4_b200_trt.sh, ae70a427e, 2026-06-16;
# its _mtp form 07cdcfb0b, 2026-06-23): max_num_tokens 32768 at 8k/1k, 16384 at 1k/1k, else
# max(ISL + OSL + 256, 8192); an FP8 cache, MAX_UTILIZATION, chunked prefill off. Under
# attention-DP the CUTEDSL MoE (priced as the engine's CUTLASS path: no kernel table measures
# CuTe DSL's) and enable_balance with timeout_iters 500, batching_wait_iters 10; without it the
# TRTLLM MoE and batch waiting (50 iterations, 0.45 of the budget; the MTP form 0.0625 at a
# 1024-token input). KV fraction 0.9 (MTP: by layout, below); batch limit by plan (MTP: the
# clients, an eighth of them under attention-DP)
INFERENCEX_QWEN35_TRTLLM_KV = 0.9
INFERENCEX_QWEN35_TRTLLM_BALANCE = (500, 10)
INFERENCEX_QWEN35_TRTLLM_WAIT = 50
INFERENCEX_QWEN35_TRTLLM_WAIT_SHARE = 0.45
INFERENCEX_QWEN35_TRTLLM_MTP_SHORT_SHARE = 0.0625  # the MTP form's share at a 1k input
# the MTP form's KV fraction by (ISL, TP, EP) without attention-DP (0.8 otherwise); under it 0.9,
# 0.8 from 1024 clients
INFERENCEX_QWEN35_TRTLLM_MTP_KV = {
    (1024, 2, 1): 0.6, (1024, 2, 2): 0.75, (1024, 8, 8): 0.8, (8192, 2, 1): 0.7,
    (8192, 2, 2): 0.6, (8192, 4, 4): 0.75, (8192, 8, 8): 0.8,
}  # fmt: skip
# The dense Llama-3.3-70B scripts (70b_{fp8_h200,fp8_b200,fp4_b200}_trt_slurm.sh, 2025-09-15 until
# their removal on 2025-10-29): --max_num_tokens the max model length, ISL + OSL (2,048 or 9,216),
# until 1b563c858 (2025-09-18), then 16384; no --max_batch_size (TensorRT-LLM's 2,048); an FP8 cache
# at TensorRT-LLM's default free_gpu_memory_fraction 0.9 (KvCacheConfig)
INFERENCEX_LLAMA_TRTLLM_TOKENS = 16384
INFERENCEX_LLAMA_TRTLLM_SINCE = "2025-09-18"
INFERENCEX_LLAMA_TRTLLM_KV = 0.9
# The scripts that set batch waiting for a GPU, model, precision, date span and lengths (from a
# client count, below a TP): data/validation/inferencex_trtllm_batch_wait.csv, each rule with its
# script (DeepSeek-R1 FP8 on B200 from 2026-01-29, Llama-3.3-70B in 2025-09 and 10)
INFERENCEX_TRTLLM_BATCH_WAIT_FILE = "inferencex_trtllm_batch_wait.csv"
UNPRICED = "{} not priced"


def inferencex_trtllm_row_recipe(
    row: dict[str, str],
    model: ModelSpec,
    hw: HardwareSpec,
    precision: str,
    clients: int,
    lengths: tuple[int, int],
    plan: tuple[int, int, bool],
    spec_tokens: int,
) -> tuple[str, str, str]:
    """(recipe, the mapping's note, precision) of an InferenceX TensorRT-LLM aggregated ``row``
    of nominal ``lengths`` (ISL, OSL) on ``plan`` (TP, EP, attention-DP) at its run date: a
    gpt-oss, MiniMax-M2.5 (on Blackwell), Qwen3.5 (on Blackwell) or dense Llama row's from its
    own scripts, with the KV format they set where the row states none; any other's from the
    DeepSeek-R1 scripts (``inferencex_trtllm_recipe``, their TRTLLM MoE backend where
    ``inferencex_trtllm_moe`` says it ran); and the batch waiting its script set where
    ``inferencex_batch_wait`` finds it (MTP runs set none).
    """
    date, (isl, osl), (tp, ep, adp) = run_date(row), lengths, plan
    stated = kv_field(row["precision"]) != "?"
    blackwell = runs_trtllm_gen(hw)
    if model.model_type == "gpt_oss":
        return inferencex_gptoss_trtllm_recipe(clients, hw, adp, date, precision, stated)
    if model.model_type == "minimax_m2" and blackwell:
        return _script_kv(*inferencex_minimax_trtllm_recipe(clients, adp), precision, stated)
    if model.model_type.startswith("qwen3_5") and blackwell:
        recipe = inferencex_qwen35_trtllm_recipe(clients, isl, osl, tp, ep, adp, spec_tokens)
        return _script_kv(*recipe, precision, stated)
    if model.model_type == "llama" and model.moe is None:
        recipe, note = inferencex_llama_trtllm_recipe(isl, osl, date)
        recipe, note, precision = _script_kv(recipe, note, precision, stated)
    else:
        weights = parse_precision(precision).weights.id
        gen = inferencex_trtllm_moe(hw, weights, adp, spec_tokens, date)
        recipe, note = inferencex_trtllm_recipe(
            clients, isl, tp, adp, spec_tokens, date, row["gpu"], gen
        )
    wait = None if spec_tokens else inferencex_batch_wait(row, model.id, lengths, clients, tp)
    if wait is not None:  # its script's batch waiting (TensorRT-LLM applies it without ADP)
        timeout, share = wait
        recipe += f":bwait={timeout}:bratio={round(share * 1e4)}"
        note = (
            f"{note.rpartition(' (validate.')[0]}, batch waiting ({timeout} iterations, "
            f"{share:g} of the budget: {INFERENCEX_TRTLLM_BATCH_WAIT_FILE}) "
            "(validate.trtllm_scripts)"
        )
    return recipe, note, precision


def inferencex_batch_wait(
    row: dict[str, str], model_id: str, lengths: tuple[int, int], clients: int, tp: int
) -> tuple[int, float] | None:
    """(timeout iterations, token share) of the batch waiting an InferenceX TensorRT-LLM run's
    script set without MTP (``INFERENCEX_TRTLLM_BATCH_WAIT_FILE``: its GPU, model, precision,
    nominal lengths, run date in [since, until), clients from ``min_clients``, TP under
    ``tp_below`` where given; a run of no stated date takes the current scripts'); None where
    none did."""
    date, (gpu, prec) = run_date(row), run_gpu_precision(row)
    for r in bundled_rows(INFERENCEX_TRTLLM_BATCH_WAIT_FILE):
        key = (r["gpu"], r["model"], r["precision"], int(r["isl"]), int(r["osl"]))
        if key != (gpu, model_id, prec, *lengths) or clients < int(r["min_clients"]):
            continue
        if (r["tp_below"] and tp >= int(r["tp_below"])) or (date and date < r["since"]):
            continue
        if r["until"] and (not date or date >= r["until"]):
            continue
        return int(r["timeout_iters"]), float(r["max_tokens_ratio"])
    return None


def inferencex_llama_trtllm_recipe(isl: int, osl: int, date: str = "") -> tuple[str, str]:
    """(recipe, note) of an InferenceX TensorRT-LLM run of a dense Llama
    (``INFERENCEX_LLAMA_TRTLLM_*``; a run of no stated date takes the last scripts').

    Example:
        >>> inferencex_llama_trtllm_recipe(1024, 1024, "2025-10-01")[0]
        'inferencex-trtllm:adp=0:tokens=16384:kv=90'
        >>> inferencex_llama_trtllm_recipe(8192, 1024, "2025-09-16")[0]
        'inferencex-trtllm:adp=0:tokens=9216:kv=90'
    """
    late = not date or date >= INFERENCEX_LLAMA_TRTLLM_SINCE
    tokens = INFERENCEX_LLAMA_TRTLLM_TOKENS if late else isl + osl
    kv = INFERENCEX_LLAMA_TRTLLM_KV
    note = (
        f"InferenceX's TensorRT-LLM Llama recipe: max_num_tokens {tokens}"
        f"{'' if late else ' (the max model length)'}, TensorRT-LLM's batch limit, KV fraction "
        f"{kv:g} (TensorRT-LLM's default) (validate.trtllm_scripts)"
    )
    return inferencex_trtllm_name(False, None, tokens, kv, False), note


def _script_kv(
    recipe: str, note: str, precision: str, kv_stated: bool, kv_format: str = "fp8"
) -> tuple[str, str, str]:
    """A recipe of a script whose ``kv_cache_config`` sets the KV format ``kv_format`` (``fp8``
    or ``bf16``): ``precision`` with it where the row states no KV format."""
    if precision and not kv_stated and parse_precision(precision).kv_fp8 != (kv_format == "fp8"):
        precision += f"+{kv_format}-kv"
        note += f"; KV unstated: {kv_format.upper()}, as its script's kv_cache_config set it"
    return recipe, note, precision


def inferencex_minimax_trtllm_recipe(clients: int, attention_dp: bool) -> tuple[str, str]:
    """(recipe, note) of an InferenceX TensorRT-LLM MiniMax-M2.5 run on Blackwell
    (``INFERENCEX_MINIMAX_TRTLLM_*``).

    Example:
        >>> inferencex_minimax_trtllm_recipe(512, True)[0]
        'inferencex-trtllm:adp=1:batch=512:tokens=16384:kv=90:moe=1:balance=50:wait=10:kvmean=1'
    """
    balance = None
    if attention_dp:
        balance = tuple(TRTLLM_ADP_BALANCE_DEFAULTS[k] for k in ADP_BALANCE_FIELDS)
    tokens, kv = INFERENCEX_MINIMAX_TRTLLM_TOKENS, INFERENCEX_MINIMAX_TRTLLM_KV
    recipe = inferencex_trtllm_name(attention_dp, clients, tokens, kv, True, balance, kv_mean=True)
    note = (
        f"InferenceX's TensorRT-LLM MiniMax recipe: max_batch_size {clients}, "
        f"max_num_tokens {tokens}, KV fraction {kv:g}, MoE backend TRTLLM (TRTLLM-Gen), "
        "capacity scheduler MAX_UTILIZATION (KV admitted as it fills)"
    )
    if balance is not None:
        note += (
            f", attention-DP context balance (timeout_iters {balance[0]}, batching_wait_iters "
            f"{balance[1]}: TensorRT-LLM's defaults)"
        )
    unpriced = UNPRICED.format("piecewise CUDA graphs for prompt steps and stream_interval 100")
    return recipe, f"{note}; {unpriced} (validate.trtllm_scripts)"


def inferencex_qwen35_trtllm_recipe(
    clients: int, isl: int, osl: int, tp: int, ep: int, attention_dp: bool, spec_tokens: int
) -> tuple[str, str]:
    """(recipe, note) of an InferenceX TensorRT-LLM Qwen3.5 run on Blackwell
    (``INFERENCEX_QWEN35_TRTLLM_*``; with MTP, ``spec_tokens`` > 0, its _mtp script's).

    Example:
        >>> inferencex_qwen35_trtllm_recipe(64, 1024, 1024, 4, 4, False, 0)[0]
        'inferencex-trtllm:adp=0:batch=512:tokens=16384:kv=90:moe=1:bwait=50:bratio=4500:kvmean=1'
        >>> inferencex_qwen35_trtllm_recipe(512, 8192, 1024, 8, 8, True, 0)[0]
        'inferencex-trtllm:adp=1:batch=128:tokens=32768:kv=90:balance=500:wait=10:kvmean=1'
    """
    if (isl, osl) == (8192, 1024):
        tokens = 32768
    elif (isl, osl) == (1024, 1024):
        tokens = 16384
    else:
        tokens = max(isl + osl + 256, 8192)
    kv, share = INFERENCEX_QWEN35_TRTLLM_KV, INFERENCEX_QWEN35_TRTLLM_WAIT_SHARE
    if spec_tokens:
        batch = max(1, clients // 8) if attention_dp else clients
        if attention_dp:
            kv = 0.8 if clients >= 1024 else 0.9
        else:
            kv = INFERENCEX_QWEN35_TRTLLM_MTP_KV.get((isl, tp, ep), 0.8)
            share = INFERENCEX_QWEN35_TRTLLM_MTP_SHORT_SHARE if isl == 1024 else share
    elif attention_dp:
        batch = {4: 256, 8: 128}.get(tp, max(clients, 16))
    elif tp == 2:
        batch = 32 if ep == 2 and clients >= 32 else 256
    else:
        batch = 512 if tp >= 4 else max(clients, 16)
    balance = INFERENCEX_QWEN35_TRTLLM_BALANCE if attention_dp else None
    wait = None if attention_dp else (INFERENCEX_QWEN35_TRTLLM_WAIT, share)
    recipe = inferencex_trtllm_name(
        attention_dp, batch, tokens, kv, not attention_dp, balance, wait, kv_mean=True
    )
    note = (
        f"InferenceX's TensorRT-LLM Qwen3.5 recipe{' (MTP)' if spec_tokens else ''}: "
        f"max_batch_size {batch}, max_num_tokens {tokens}, KV fraction {kv:g}, capacity "
        "scheduler MAX_UTILIZATION (KV admitted as it fills), "
    )
    if attention_dp:
        note += (
            f"MoE backend CUTEDSL (priced as CUTLASS), attention-DP context balance "
            f"(timeout_iters {balance[0]}, batching_wait_iters {balance[1]})"
        )
    else:
        note += (
            f"MoE backend TRTLLM (TRTLLM-Gen), batch waiting ({INFERENCEX_QWEN35_TRTLLM_WAIT} "
            f"iterations, {share:g} of the budget)"
        )
    return recipe, f"{note}; {UNPRICED.format('stream_interval 20')} (validate.trtllm_scripts)"


def inferencex_gptoss_trtllm_recipe(
    clients: int,
    hw: HardwareSpec,
    attention_dp: bool,
    date: str = "",
    precision: str = "",
    kv_stated: bool = True,
) -> tuple[str, str, str]:
    """(the recipe of an InferenceX TensorRT-LLM aggregated gpt-oss row, the mapping's note,
    ``precision`` with the KV cache format its script set where the row states none:
    ``kv_stated`` false) for the gpt-oss scripts' limits (``INFERENCEX_GPTOSS_TRTLLM_*``, for
    the version in force on the run ``date``; a run of no stated date takes the current
    scripts').

    On Blackwell (``moe_kernels.runs_trtllm_gen``): the TRTLLM MoE backend, its batch limit,
    FP8 KV (BF16, the model's own, before ``INFERENCEX_GPTOSS_TRTLLM_SINCE``), and
    TensorRT-LLM's default context balance under attention-DP. On Hopper: the client count as
    batch limit, BF16 KV, and the TRITON MoE backend, the engine's own weight-only path.

    Example:
        >>> from ..specs.hardware import load_hardware
        >>> inferencex_gptoss_trtllm_recipe(64, load_hardware("b200"), False)[0]
        'inferencex-trtllm:adp=0:batch=512:tokens=20000:kv=85:moe=1'
        >>> inferencex_gptoss_trtllm_recipe(64, load_hardware("h200-sxm"), True)[0]
        'inferencex-trtllm:adp=1:batch=64:tokens=20000:kv=85:balance=0:wait=0'
    """
    blackwell = runs_trtllm_gen(hw)
    current = not date or date >= INFERENCEX_GPTOSS_TRTLLM_SINCE
    batch = INFERENCEX_GPTOSS_TRTLLM_BATCH if blackwell else clients
    tokens, fraction = INFERENCEX_GPTOSS_TRTLLM_TOKENS, INFERENCEX_GPTOSS_TRTLLM_KV
    gen = blackwell and (current or clients < INFERENCEX_GPTOSS_TRTLLM_CUTLASS_CLIENTS)
    note = (
        f"InferenceX's TensorRT-LLM gpt-oss recipe: max_batch_size {batch}, max_num_tokens "
        f"{tokens}, KV fraction {fraction:g}"
    )
    if gen:
        note += ", MoE backend TRTLLM (TRTLLM-Gen)"
    elif blackwell:
        note += ", MoE backend CUTLASS"
    balance = None
    if attention_dp:  # TensorRT-LLM's default counts on B200; the H200 script sets none
        counts = TRTLLM_ADP_BALANCE_DEFAULTS if blackwell else dict.fromkeys(ADP_BALANCE_FIELDS, 0)
        timeout, wait = balance = tuple(counts[k] for k in ADP_BALANCE_FIELDS)
        note += (
            f", attention-DP context balance (timeout_iters {timeout}, batching_wait_iters "
            f"{wait}: TensorRT-LLM's defaults)"
            if timeout
            else ", no attention-DP context balance"
        )
    kv_format = "fp8" if blackwell and current else "bf16"
    recipe = inferencex_trtllm_name(attention_dp, batch, tokens, fraction, gen, balance)
    recipe, note, precision = _script_kv(recipe, note, precision, kv_stated, kv_format)
    return recipe, note + " (validate.trtllm_scripts)", precision

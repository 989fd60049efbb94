"""Table conventions that ``mapping`` applies to a row: documented defaults for blank plan
fields, disaggregated prefill/decode pools, MTP speculative decoding, and which precision preset
a ``weights/activations/kv`` text names on a given GPU (``map_precision``).

Blank fields (SOURCES.md, ``inferencex_hopper.csv``; applied to every source and said in the
row's note): a blank ``pp`` is 1 (no pipeline parallelism); a blank ``dp`` is tensor-parallel
attention; ``attn-DP`` in ``dp`` is attention-DP over the tp group. A blank ``tp`` has no
default: the row is skipped ("plan not stated"), unless the ``dp`` field states the group
(``DEP<N>``, ``TEP<N>``, ``attn-DP<N>``).

The ``dp`` field of an aggregated row (``attention_dp_field``), in the forms published tables
use: blank or a replica count (tensor-parallel attention); ``attn-DP`` or ``attn-DP<N>``; a flag
(``true``/``false``, ``adp``, ``dpattn=true``, ``enable_attention_dp: true``); or NVIDIA's plan
labels ``DEP<N>`` (attention-DP over N GPUs with EP N: TensorRT-LLM's and Dynamo's recipe names)
and ``TEP<N>`` (tensor-parallel attention over N with EP N). A stated N (a label's, or
``attn-DP<N>``'s) is the tp group: a blank ``tp`` takes it and a different ``tp`` is a conflict;
a DEP/TEP label's EP is N (a blank ``ep`` takes it, a different one is a conflict). Any other
text is not guessed: the row is skipped with the text named.

Disaggregated rows state one plan per pool: ``tp`` = ``P:tp<a>/D:tp<b>``, ``ep`` =
``P:ep<a>/D:ep<b>`` (blank: 1, or the pool's tp with attention-DP, as for aggregated rows),
``dp`` = ``P:dpattn=<bool>/D:dpattn=<bool>`` (blank: tensor-parallel attention in both), and the
notes give ``prefill_gpus=N (workers=x)`` and ``decode_gpus=M (workers=y)``; ``num_gpus`` must
equal x a + y b (and N = x a, M = y b), else the row is skipped with the mismatch. The row is
predicted by ``serving.evaluate_disaggregated`` with x prefill and y decode workers:

* the client concurrency C is spread over the y decode workers: C / y sequences per decode
  worker (a mean; below one worker each, it is the busy fraction);
* a prefill worker packs prompts up to the engine's chunk budget, max_num_tokens // ISL of them
  (at least 1) per scheduling rank (every tp rank under attention-DP), but never more than the
  ceil(C / x) prompts the clients can have outstanding per prefill worker;
* per-GPU metrics divide by all prefill + decode GPUs, except where the row's note says the
  value divides by the decode GPUs only (InferenceX's newer ``output_tput_per_gpu`` for
  disaggregated runs does: its total-to-output ratio is (ISL + OSL) / OSL x decode / all GPUs).

MTP (``spec_method=mtp`` in the notes: DeepSeek's multi-token-prediction module used as the
draft) is predicted by ``serving.evaluate``'s ``spec_tokens`` and ``spec_acceptance``. Draft
length: ``spec_tokens=``, ``draft_tokens=`` or ``num_nextn_predict_layers=`` in the notes, else
the recipe default of the row's engine (``MTP_DRAFT_TOKENS``), taken from the InferenceX launch
scripts the published rows ran (SemiAnalysisAI/InferenceX ``benchmarks/single_node/
fixed_seq_len/``): ``dsr1_fp8_h200_mtp.sh`` runs SGLang EAGLE with ``--speculative-num-steps 2
--speculative-eagle-topk 1 --speculative-num-draft-tokens 3`` (2 draft tokens);
``dsr1_fp8_h200_trt_mtp.sh`` sets TensorRT-LLM ``num_nextn_predict_layers`` to 3, or 1 with
attention-DP. Other engines: 1 (DeepSeek's own setting). Acceptance: ``spec_acceptance=`` or
``acceptance=`` in the notes, else ``MTP_ACCEPTANCE`` = 0.85 per draft token, an assumption:
the DeepSeek-V3 technical report (arXiv 2412.19437, section 5.4.3) measures 85-90% acceptance of
the second token (the first draft); the low end is used, and evaluate's closed form applies it
to every draft position (later drafts are likely accepted less often: optimistic for k > 1).
InferenceX's client sends random token ids (``--dataset-name random``, with the chat template in
its TensorRT-LLM MTP script), on which drafts are accepted less often than on text: its rows
use ``MTP_ACCEPTANCE_INFERENCEX`` = 0.65, a fit (``benchmarks/fit_mtp_acceptance.py``: the
median |log predicted / measured| of the 34 InferenceX MTP TPOT rows of the shared tables on a
grid of 0.05, 0.068 at 0.65 against 0.223 at 0.85; both engines' median error within 4% at
0.65) within what is published for random-token prompts: vLLM PR #41044 measured 70%
first-draft and 29% second-draft acceptance for DeepSeek-V4-Flash's MTP on vLLM's random
dataset; ROCm/ATOM PR #1372 53% over three drafts on gsm8k; InferenceX PR #649 (2026-02-05,
SGLang, DeepSeek-R1 MTP) measured an acceptance length of about 2.5 on random prompts with the
chat template, as on MT-Bench, and about 3.55 without it (3 drafts at 0.65 give 2.35).
A model without MTP modules drafts with a head of its own where InferenceX labels a run ``mtp`` and
its scripts say which (``DRAFT_HEADS_FILE``, ``draft_head``): MiniMax-M3, whose released checkpoints
hold no MTP tensors, loads Inferact's EAGLE3 head with 3 speculative tokens ("use 3 speculative
tokens for all configs", ``minimaxm3_*_mtp.sh``), each draft priced as one layer of the model
(``serving.step.draft_time``), the head's weights not counted; its acceptance as above (InferenceX
PR #1737, B300: acceptance lengths of about 2.3-2.7 at 3 drafts). Any other model without MTP
modules is skipped with the reason (InferenceX labels every speculative method ``mtp``; what a run
drafted with is not known).
``benchmarks/mtp_implied_acceptance.py`` prints, per row, the acceptance at which the priced
step gives the measured TPOT; SGLang's draft passes carry a step's host work each
(``EngineConstants.spec_separate_drafts``).
An MoE row whose notes state ``moe_tp=N`` (AIConfigurator's rows) must have N x ep = tp; a row
that does not (``tp=1``, ``moe_tp=2`` on one GPU) states no runnable plan and is skipped with
that reason.

Quantization stated in the notes (AIConfigurator's rows: ``gemm_quant=`` and ``moe_quant=``):
``fp8_block`` is FP8 with 128 x 128 block-scaled weights (DeepSeek-V3's form), priced as
``fp8+fp8_block-w``, read from ``moe_quant`` for MoE models (the routed experts hold most of the
weights and the work) and ``gemm_quant`` for dense ones. A row that states ``fp8`` keeps the
per-tensor form.

Disaggregated rows with MTP are priced by ``evaluate_disaggregated``'s speculative decode pool,
with the draft length of the decode pool's layout: InferenceX's disaggregated DeepSeek-R1 recipes
(``benchmarks/multi_node/srt-slurm-recipes/dsr1`` @ 792d8aa4b) run SGLang EAGLE with 2 draft
steps, and TensorRT-LLM MTP 3 with tensor-parallel attention (``..._tep16_..._mtp3``) and 1 or 2
with attention-DP (``..._dep16_batch64_..._mtp1``, ``..._dep16_batch32_..._mtp2``): the defaults
above.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import SpecError
from ..specs.checkpoint import (
    experts_alone_fp4,
    named_activations,
    preset_weights,
    served_mxfp4,
)
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.plan import DisaggregatedPlan, ParallelPlan
from .tables import bundled_rows

MTP_ACCEPTANCE = 0.85  # DeepSeek-V3 report section 5.4.3: 85-90% for the second token
MTP_ACCEPTANCE_SOURCE = "arXiv 2412.19437 s5.4.3 (85-90% on the 2nd token)"
# InferenceX's random-token prompts (module doc): a fit, within the published random-data range
MTP_ACCEPTANCE_INFERENCEX = 0.65
MTP_ACCEPTANCE_INFERENCEX_SOURCE = (
    "fit on InferenceX's random-token MTP rows (benchmarks/fit_mtp_acceptance.py); "
    "vLLM PR #41044: 70% first-draft acceptance on random data"
)
# (engine, attention_dp) -> draft tokens of the InferenceX MTP recipes (module doc)
MTP_DRAFT_TOKENS = {
    ("sglang", False): 2,
    ("sglang", True): 2,
    ("trtllm", False): 3,
    ("trtllm", True): 1,
}
MTP_DRAFT_TOKENS_FALLBACK = 1
# the draft heads models without MTP modules speculate with in InferenceX's "mtp" runs (module
# doc): model, draft tokens per step, source
DRAFT_HEADS_FILE = "inferencex_draft_heads.csv"


def draft_head(model_id: str) -> tuple[int, str] | None:
    """(draft tokens per step, where from) of the draft head ``model_id`` speculates with in
    InferenceX's "mtp" runs (``DRAFT_HEADS_FILE``), None where the table names none."""
    for r in bundled_rows(DRAFT_HEADS_FILE):
        if r["model"] == model_id:
            return int(r["draft_tokens"]), r["source"]
    return None


_POOL = r"P:\s*{k}\s*=?\s*(\w+)\s*/\s*D:\s*{k}\s*=?\s*(\w+)"


def pools_label(plan: DisaggregatedPlan) -> str:
    """A validate row's label of a disaggregated deployment, e.g. ``P:2x tp8 ep8 adp / D:1x
    tp16 ep16``."""

    def one(side: str, n: int, p: ParallelPlan) -> str:
        return f"{side}:{n}x tp{p.tp} ep{p.ep}" + (" adp" if p.attention_dp else "")

    return (
        one("P", plan.prefill_workers, plan.prefill)
        + " / "
        + one("D", plan.decode_workers, plan.decode)
    )


def is_disaggregated(row: dict[str, str]) -> bool:
    """A row of a disaggregated deployment: the notes, framework or dp say so, or the plan is
    written per pool (``P:.../D:...``)."""
    context = " ".join((row.get("notes", ""), row["framework"], row["dp"])).lower()
    return "disagg" in context or any(
        row[c].strip().upper().startswith("P:") for c in ("tp", "ep", "dp")
    )


def _pool_pair(text: str, key: str) -> tuple[str, str] | None:
    m = re.fullmatch(_POOL.format(k=key), text.strip(), re.I)
    return (m.group(1), m.group(2)) if m else None


def _workers(notes: str, pool: str) -> tuple[int, int] | None:
    m = re.search(rf"{pool}_gpus\s*=\s*(\d+)\s*\(\s*workers\s*=\s*(\d+)\s*\)", notes, re.I)
    return (int(m.group(1)), int(m.group(2))) if m else None


def data_parallel_tp(tp: int, ep: int, attention_dp: bool) -> int:
    """A pool's tp in the plan's terms: InferenceX's master config states vLLM's data-parallel
    pools as tp 1 with attention-DP and EP over the DP ranks (``--data-parallel-size N
    --tensor-parallel-size 1 --enable-expert-parallel``: N GPUs, one attention rank each), which
    is the plan's tp N under attention-DP (``report.deploy_map`` reads the launch line alike).

    Example: tp 1, ep 8, attention-DP -> 8; tp 8, ep 8 -> 8; tp 1, ep 8 without DP -> 1."""
    return ep if attention_dp and tp == 1 and ep > 1 else tp


def parse_pools(row: dict[str, str], model: ModelSpec) -> DisaggregatedPlan | str:
    """The row's two pools, or the reason they cannot be read (module doc)."""
    tps = _pool_pair(row["tp"], "tp")
    if tps is None or not all(v.isdigit() and int(v) > 0 for v in tps):
        return f"disaggregated pool plan not stated as P:tp<a>/D:tp<b> (tp={row['tp'].strip()!r})"
    tp_p, tp_d = int(tps[0]), int(tps[1])
    if row["pp"].strip() not in ("", "1"):
        return f"disaggregated row with pp={row['pp'].strip()} (pools are mapped with pp 1)"
    dp = row["dp"].strip()
    if dp:
        dps = _pool_pair(dp, "dpattn")
        if dps is None or not all(v.lower() in ("true", "false") for v in dps):
            return (
                f"disaggregated attention-DP not stated as P:dpattn=<bool>/D:dpattn=<bool> ({dp!r})"
            )
        adp_p, adp_d = (v.lower() == "true" for v in dps)
    else:
        adp_p = adp_d = False
    ep_text = row["ep"].strip()
    if ep_text:
        eps = _pool_pair(ep_text, "ep")
        if eps is None or not all(v.isdigit() and int(v) > 0 for v in eps):
            return f"disaggregated expert parallelism not stated as P:ep<a>/D:ep<b> ({ep_text!r})"
        ep_p, ep_d = int(eps[0]), int(eps[1])
    else:  # blank: 1, or EP over the tp group with attention-DP (as for aggregated rows)
        ep_p = tp_p if adp_p and model.moe is not None else 1
        ep_d = tp_d if adp_d and model.moe is not None else 1
    if model.moe is None:
        ep_p = ep_d = 1
    tp_p, tp_d = data_parallel_tp(tp_p, ep_p, adp_p), data_parallel_tp(tp_d, ep_d, adp_d)
    notes = row.get("notes", "")
    pre, dec = _workers(notes, "prefill"), _workers(notes, "decode")
    if pre is None or dec is None:
        return "disaggregated pool sizes not stated (prefill_gpus=N (workers=x), decode_gpus=...)"
    if pre[1] < 1 or dec[1] < 1:
        return (
            "disaggregated pool sizes disagree with tp x workers or num_gpus "
            "(num_gpus != x * tp_prefill + y * tp_decode)"
        )
    try:
        pools = DisaggregatedPlan(
            ParallelPlan(tp=tp_p, ep=ep_p, attention_dp=adp_p),
            ParallelPlan(tp=tp_d, ep=ep_d, attention_dp=adp_d),
            prefill_workers=pre[1],
            decode_workers=dec[1],
        )
    except SpecError as exc:
        return f"disaggregated pool plan: {exc}"
    stated = row["num_gpus"].strip()
    if pools.prefill_gpus != pre[0] or pools.decode_gpus != dec[0] or stated != str(pools.num_gpus):
        return (
            "disaggregated pool sizes disagree with tp x workers or num_gpus "
            "(num_gpus != x * tp_prefill + y * tp_decode)"
        )
    return pools


def moe_plan_conflict(notes: str, tp: int, ep: int, moe: bool) -> str:
    """The reason an MoE row cannot be mapped where its notes state an MoE tensor-parallel size
    (``moe_tp=``, AIConfigurator's rows) that does not make its plan: the experts are split
    moe_tp ways times ep ways over the tp GPUs, so moe_tp x ep must equal tp; "" otherwise."""
    m = re.search(r"(?:^|[;\s])moe_tp\s*=\s*(\d+)", notes)
    if not moe or m is None or int(m.group(1)) * ep == tp:
        return ""
    return f"MoE plan of the notes does not fit the row (moe_tp {m.group(1)} x ep {ep} != tp {tp})"


def stated_block_weights(notes: str, prec: str, moe: bool) -> tuple[str, str]:
    """(precision, the mapping's note): an FP8 precision gains block-scaled weights
    (``+fp8_block-w``) where the row's notes say its weights were quantized so (module doc:
    ``moe_quant=fp8_block`` for an MoE model, ``gemm_quant=fp8_block`` for a dense one)."""
    key = "moe_quant" if moe else "gemm_quant"
    m = re.search(rf"(?:^|[;\s]){key}\s*=\s*([\w.]+)", notes)
    if not m or m.group(1).lower() != "fp8_block" or not prec.startswith("fp8"):
        return prec, ""
    if "fp8_block-w" in prec:
        return prec, ""
    return "fp8+fp8_block-w" + prec[len("fp8") :], f"{key}=fp8_block: block-scaled FP8 weights"


def speculative(
    notes: str,
    engine: str,
    attention_dp: bool,
    model: ModelSpec,
    random_prompts: bool = False,
    draft: tuple[int, str] = (0, ""),
) -> tuple[int, float, str] | str:
    """(draft tokens, acceptance per draft token, note) of the row's speculative decoding
    ((0, 0.0, "") without it), or the reason it cannot be mapped (module doc).
    ``random_prompts``: the client sent random token ids (InferenceX), whose default acceptance
    is ``MTP_ACCEPTANCE_INFERENCEX``. ``draft``: (draft tokens, where from) of the run's own
    launch script, the draft length where the notes state none (else the engine recipe's)."""
    m = re.search(r"spec_method\s*=\s*([\w.-]+)", notes, re.I)
    method = m.group(1).lower() if m else "none"
    if method in ("none", "off", "no", "false", "disabled"):
        return 0, 0.0, ""
    if method not in ("mtp", "nextn"):
        return f"speculative decoding {method} (only MTP is mapped)"
    head = draft_head(model.id) if model.num_mtp_layers < 1 else None  # (module doc)
    if model.num_mtp_layers < 1 and head is None:
        return "spec_method=mtp on a model without MTP modules (its draft head is not known)"
    k_m = re.search(
        r"(?:spec_tokens|draft_tokens|num_nextn_predict_layers)\s*=\s*(\d+)", notes, re.I
    )
    a_m = re.search(r"(?:spec_acceptance|acceptance(?:_rate)?)\s*=\s*([\d.]+)", notes, re.I)
    if k_m:
        k, k_note = int(k_m.group(1)), "stated"
    elif draft[0]:
        k, k_note = draft
    elif head:
        k, k_note = head
    else:
        k = MTP_DRAFT_TOKENS.get((engine, attention_dp), MTP_DRAFT_TOKENS_FALLBACK)
        k_note = f"default of the {engine} MTP recipe"
    if not 1 <= k <= 16:
        return f"MTP draft length {k} outside 1..16"
    if a_m:
        try:
            a = float(a_m.group(1))
        except ValueError:
            return f"MTP acceptance not a number ({a_m.group(1)})"
        if not 0.0 <= a <= 1.0:
            return f"MTP acceptance {a} outside [0, 1]"
        a_note = "stated"
    elif random_prompts:
        a, a_note = MTP_ACCEPTANCE_INFERENCEX, MTP_ACCEPTANCE_INFERENCEX_SOURCE
    else:
        a, a_note = MTP_ACCEPTANCE, f"assumed, {MTP_ACCEPTANCE_SOURCE}"
    what = f"{model.id} has no MTP module: a draft head's " if head else "MTP: "
    return k, a, f"{what}{k} draft tokens ({k_note}), acceptance {a:g} per draft ({a_note})"


def map_precision(model: ModelSpec, hw: HardwareSpec, text: str) -> str | None:
    """Precision string ``weights/activations/kv`` -> preset id (+ KV override).

    Rules: fp4 = NVFP4 on NVIDIA Blackwell (MXFP4 on a GPU with MXFP4 but no NVFP4: AMD's
    MI355X), except DeepSeek-V4, whose checkpoint's experts alone are MXFP4 at FP8 activations
    (``specs.checkpoint.experts_alone_fp4``; FP8 KV; its "fp8" rows run that checkpoint too),
    and gpt-oss whose checkpoints are MXFP4:
    W4A8 (MXFP8 activations) where the engines serve it so (NVIDIA Blackwell) or the text states
    8-bit activations on a GPU with an MXFP8 path, else weight-only W4A16 (Hopper, Ampere, Ada,
    AMD GPUs, or 16-bit activations stated: the kernels take BF16 activations,
    ``served_mxfp4``); mxfp4 = MXFP4 where the GPU runs it; fp8 = FP8 (gpt-oss there too: MXFP4
    weights, FP8 KV), with the checkpoint's block-scaled FP8 weights where its own checkpoint is
    block-scaled (DeepSeek-V3/R1, MiniMax-M2.5); bf16/fp16 as written. KV: an explicit fp8 third
    field sets FP8 KV; a format stated for Hopper apart ("(Hopper: auto)") applies on Hopper,
    ``auto`` being the checkpoint's own (BF16 where it does not quantize its KV).
    """
    parts = [p.strip().lower() for p in text.split("/")]
    w = parts[0] if parts else ""
    kv = kv_field(text)
    hopper = hw.architecture in ("hopper", "ampere", "ada")
    # a KV format the table names for Hopper apart ("fp8 on Blackwell (Hopper: auto)", the
    # TensorRT-LLM developer guide's gpt-oss options: "dtype: fp8  # Hopper: use auto"); "auto"
    # is the checkpoint's own, the model's dtype where the checkpoint does not quantize its KV
    for_hopper = re.search(r"\(hopper:\s*([a-z0-9]+)\)", text.lower())
    if hopper and for_hopper:
        kv = for_hopper.group(1)
    if model.model_type == "gpt_oss":
        act = parts[1].split()[0] if len(parts) > 1 and parts[1] else "?"
        # unstated: what the checkpoint's name states (AMD's W4A8 export, ``named_activations``)
        if act == "?":
            act = named_activations(model.name) or act
        # 16-bit activations stated: W4A16; 8-bit: W4A8 where the GPU has the path; else the
        # engines' default on this GPU (``served_mxfp4``)
        base = served_mxfp4(hw, act in ("bf16", "fp16"), act in ("fp8", "mxfp8"))
        # the KV field where it names a format; else FP8 anywhere in the text (an "fp8" row of
        # gpt-oss: MXFP4 weights, FP8 KV), not inside "mxfp8"
        stated = kv != "?"
        fp8_kv = kv == "fp8" if stated else bool(re.search(r"(?<!mx)fp8", text.lower()))
        return base + ("+fp8-kv" if fp8_kv else "")
    if w in ("fp4", "mxfp4", "fp8") and experts_alone_fp4(model.config):
        # DeepSeek-V4's own checkpoint: MXFP4 experts at FP8 activations where the GPU has the
        # path, else weight-only; FP8 KV unless the row states 16 bits (its reading). Its "fp8"
        # runs load the same checkpoint: vLLM's --quantization deepseek_v4_fp8 reads its FP8
        # dense weights and keeps the experts MXFP4 (weight-only on a GPU without FP4 math:
        # SemiAnalysisAI/InferenceX benchmarks/single_node/fixed_seq_len/dsv4_fp8_mi300x.sh,
        # "~131GB/GPU" at TP8 on MI300X; dsv4_fp8_h200.sh the same path)
        base = served_mxfp4(hw, eight_bit=True)
        stated16 = kv in ("bf16", "fp16")
        return base + (f"+{kv}-kv" if stated16 else "" if base == "mxfp4-a8" else "+fp8-kv")
    if w in ("fp4", "nvfp4"):
        base = "nvfp4" if hw.supports("nvfp4") else ("mxfp4" if hw.supports("mxfp4") else None)
    elif w == "mxfp4":  # an MXFP4 checkpoint (AMD's Quark exports: weights and activations)
        base = "mxfp4" if hw.supports("mxfp4") else None
    elif w in ("fp8", "bf16", "fp16"):
        base = w
    elif w in ("int4", "w4a16"):
        base = "w4a16"
    else:
        return None
    if base is None:
        return None
    # the published FP8 checkpoint of the model is block-scaled (DeepSeek-V3/R1, MiniMax-M2.5:
    # 128x128 weight blocks), and that is what an "fp8" row of it ran
    block = preset_weights(model, base)[0][len(base) :]
    if kv == "fp8" and base in ("bf16", "fp16", "w4a16"):
        base += "+fp8-kv"
    if kv in ("bf16", "fp16") and base in ("fp8", "nvfp4", "mxfp4"):
        base += f"+{kv}-kv"
    return base + block


def kv_field(text: str) -> str:
    """The KV format a ``weights/activations/kv`` precision names (its first word, lower case),
    ``?`` where the third field is missing or blank."""
    parts = [p.strip().lower() for p in text.split("/")]
    return parts[2].split()[0] if len(parts) > 2 and parts[2] else "?"


# attention-DP flags as engines and tables spell them (TensorRT-LLM enable_attention_dp, SGLang
# --enable-dp-attention, InferenceX dpattn), ending at a word boundary
_DP_FLAG = re.compile(
    r"(?:enable[-_ ]?)?(?:(?:attn|attention)[-_ ]?dp|dp[-_ ]?(?:attn|attention))(?![a-z])|adp\b",
    re.I,
)


def attention_dp_field(text: str) -> tuple[bool, int, str] | str:
    """(attention-DP, the group size the label states or 0, "DEP"/"TEP"/"" for an NVIDIA plan
    label) of an aggregated row's ``dp`` field (module doc), or why it is not understood.

    Example:
        >>> attention_dp_field("DEP8"), attention_dp_field("attn-DP4"), attention_dp_field("")
        ((True, 8, 'DEP'), (True, 4, ''), (False, 0, ''))
    """
    t = text.strip().lower()
    if not t or re.fullmatch(r"\d+", t):
        return False, 0, ""  # blank or a replica count: tensor-parallel attention
    if label := re.fullmatch(r"(dep|tep)\s*(\d+)", t):
        return label.group(1) == "dep", int(label.group(2)), label.group(1).upper()
    if t in ("true", "yes", "on"):
        return True, 0, ""
    if t in ("false", "no", "off", "none"):
        return False, 0, ""
    flag = _DP_FLAG.match(t)
    if flag:
        rest = t[flag.end() :]
        # a value after the flag (attn-DP8, attn-dp=8, enable_attention_dp: false, adp off), else
        # the first true/false in the text after it ("attn-DP (... enable_attention_dp: true)")
        value = re.match(r"\s*[=:]?\s*(\d+|true|false|yes|no|on|off)\b", rest)
        said = value.group(1) if value else ""
        if not said and (word := re.search(r"\b(true|false)\b", rest)):
            said = word.group(1)
        if said in ("false", "no", "off", "0"):
            return False, 0, ""
        size = int(said) if said.isdigit() and not re.match(r"\s", rest) else 0
        return True, size if size > 1 else 0, ""
    return (
        f"dp not understood: {text.strip()[:40]!r} (blank, a replica count, attn-DP<N>, DEP<N>, "
        "TEP<N> or a true/false flag)"
    )


# throughput metrics, ``<kind>_tok_s[_<scope>]`` (the shared tables' SOURCES.md: totals, per GPU,
# and phase-specific prefill/decode rates per node or per GPU). kind: ``output``, ``total``
# (input + output), ``input`` (prompt tokens), ``prefill`` / ``decode`` (a disaggregated pool's
# own rate: prompt tokens over the prefill pool, output tokens over the decode pool); scope: the
# whole group (``_total`` or none), ``_per_gpu``, ``_per_node`` (the GPUs one node of that GPU
# holds: ``report.launch_data.gpus_per_node``, 8 on HGX, 4 on a GB200 NVL72 tray)
_THROUGHPUT = re.compile(
    r"(output|total|input|prefill|decode)_tok_s(?:_(total|per_gpu|per_node))?", re.I
)
POOL_KINDS = ("prefill", "decode")


def throughput_metric(metric: str) -> tuple[str, str] | None:
    """(kind, scope) of a throughput metric name (``_THROUGHPUT``), None for any other metric.

    Example:
        >>> throughput_metric("total_tok_s"), throughput_metric("decode_tok_s_per_node")
        (('total', 'total'), ('decode', 'per_node'))
    """
    m = _THROUGHPUT.fullmatch(metric.strip())
    return (m.group(1).lower(), (m.group(2) or "total").lower()) if m else None


def throughput_value(
    metric: str, out_per_gpu: Any, in_per_gpu: Any, gpus: Any, node_gpus: float
) -> Any:
    """A throughput metric from the output and input (prompt) tokens per second per GPU over
    ``gpus`` GPUs; for a pool's rate (``prefill_``, ``decode_``) the caller passes that pool's
    rates and GPUs."""
    kind, scope = throughput_metric(metric) or ("", "")
    rate = {
        "output": out_per_gpu,
        "decode": out_per_gpu,
        "input": in_per_gpu,
        "prefill": in_per_gpu,
        "total": out_per_gpu + in_per_gpu,
    }[kind]
    return rate * {"total": gpus, "per_gpu": 1.0, "per_node": node_gpus}[scope]

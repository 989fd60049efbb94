"""What InferenceX's aggregated SGLang and vLLM launch scripts set that its result rows do not
state: the KV cache format (``--kv-cache-dtype``), vLLM's MiniMax-M3 index-key format
(``indexer_kv_dtype``), and, where a script speculates, the draft
tokens a step proposes (``--speculative-num-steps``), for the version of the script in force on
a row's run date (``data/validation/inferencex_kv.csv``, written by
``benchmarks/inferencex_kv.py`` from the scripts' history; SOURCES.md); and SGLang's prefill
delayer under attention-DP (``data/validation/inferencex_sglang_prefill_delayer.csv``)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..attention_kernels import fmha_sm100_runs
from ..specs.checkpoint import checkpoint_precision
from ..specs.engine import sglang_auto_kv_fp8
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.precision import parse_precision
from .campaigns import run_date, run_gpu_precision, stated_notes
from .conventions import kv_field
from .recipes import INFERENCEX_SGLANG, INFERENCEX_SGLANG_KV, INFERENCEX_VLLM
from .tables import bundled_rows

INFERENCEX_KV_FILE = "inferencex_kv.csv"
INFERENCEX_DELAYER_FILE = "inferencex_sglang_prefill_delayer.csv"
# what the table holds of an SGLang or vLLM script's launch line, by engine and column: the
# flag, and the scale of its value in the recipe's whole-number field (``recipes
# .INFERENCEX_SGLANG`` / ``INFERENCEX_VLLM``: mem per mille), and each engine's recipe
SCRIPT_FLAGS = {
    "sglang": {"mem": ("--mem-fraction-static", 1000), "chunk": ("--chunked-prefill-size", 1)},
    "vllm": {"mem": ("--gpu-memory-utilization", 1000), "chunk": ("--max-num-batched-tokens", 1)},
}
SCRIPT_RECIPES = {"sglang": INFERENCEX_SGLANG, "vllm": INFERENCEX_VLLM}
# a value the script computes from the input length: ``isl*2`` for ``$((ISL * 2))``
ISL_VALUE = re.compile(r"isl([*+])(\d+)")


def inferencex_script(row: dict[str, str], model_id: str, engine: str) -> Mapping[str, str] | None:
    """The table's row of the script version an InferenceX aggregated run used: the latest
    version of its script (engine, GPU, model, precision, speculative method) committed on or
    before the run date (a version committed that day is in force); None where the table has
    none (no run date, or a run before the script's first version there). ``engine`` names
    the launcher: ``sglang``, ``vllm``, or any other (``atom``), which the table has none of."""
    date, gpu, prec, spec = _script_key(row)
    key = (engine, gpu, model_id, prec, spec)
    cols = ("engine", "gpu", "model", "precision", "spec")
    found = [
        r
        for r in bundled_rows(INFERENCEX_KV_FILE)
        if tuple(r[c] for c in cols) == key and date and r["since"] <= date
    ]
    return max(found, key=lambda r: r["since"]) if found else None


def _script_key(row: dict[str, str]) -> tuple[str, str, str, str]:
    """(run date, GPU, precision, speculative method) by which the InferenceX script tables
    key a run: the precision's FP4 formats as ``fp4``, the method ``mtp`` or ``none``."""
    date, (gpu, prec) = run_date(row), run_gpu_precision(row)
    prec = "fp4" if prec in ("fp4", "nvfp4", "mxfp4") else prec
    method = re.search(r"spec_method\s*=\s*(\w+)", stated_notes(row)[0], re.I)
    spec = "none" if method is None or method.group(1).lower() == "none" else "mtp"
    return date, gpu, prec, spec


def _where(row: dict[str, str], r: Mapping[str, str]) -> str:
    return f"run of {run_date(row)}: its launch script {r['script']} @{r['commit']} ({r['since']})"


def inferencex_kv_precision(
    script: Mapping[str, str] | None,
    row: dict[str, str],
    model: ModelSpec,
    engine: str,
    prec: str,
    *,
    auto_fp8: bool = False,
) -> tuple[str, str]:
    """(precision, note) of an InferenceX aggregated SGLang or vLLM row that leaves its KV
    format unstated: an FP8 cache where its script passed --kv-cache-dtype fp8; BF16 where it
    passed bf16, or none (auto: the model's dtype unless the checkpoint quantizes its KV cache)
    where the precision's cache is FP8; an SGLang row the table does not cover keeps that auto
    rule (``recipes.INFERENCEX_SGLANG_KV``), a vLLM one its preset. ``auto_fp8``: SGLang's auto
    is FP8 for this model on this GPU (``specs.engine.sglang_auto_kv_fp8``: a DeepSeek Sparse
    Attention model on compute capability 10 or more). ("", "") where nothing changes.
    ``script``: the row's ``inferencex_script``."""
    r = script
    kv = r["kv"] if r else ""
    said = ""
    if r:
        flag = f"--kv-cache-dtype {kv}" if kv != "auto" else "no --kv-cache-dtype (auto)"
        said = f"{_where(row, r)} passed {flag}"
    fp8 = parse_precision(prec).kv_fp8
    if kv == "fp8":
        return prec + ("" if fp8 else "+fp8-kv"), f"KV unstated: FP8, {said}"
    if engine == "sglang" and kv != "bf16" and auto_fp8:
        auto = f"{said}: " if said else ""
        why = f"KV unstated: FP8, {auto}SGLang's auto for a DSA model here (specs.engine)"
        return prec + ("" if fp8 else "+fp8-kv"), why
    if (not kv and engine != "sglang") or not fp8:
        return "", ""
    own = checkpoint_precision(model.config)
    if kv != "bf16" and own is not None and "fp8-kv" in own[0]:
        return "", ""  # auto: the checkpoint's own FP8 cache
    return prec + "+bf16-kv", f"KV unstated: BF16, {said or INFERENCEX_SGLANG_KV}"


def inferencex_draft(script: Mapping[str, str] | None, row: dict[str, str]) -> tuple[int, str]:
    """(draft tokens per step, the note's source) an InferenceX aggregated MTP run's script
    proposed (``--speculative-num-steps``; ``script``: the row's ``inferencex_script``); (0, "")
    where the table does not say."""
    r = script
    if r is None or not r["draft"].isdigit():
        return 0, ""
    k = int(r["draft"])
    return k, f"{_where(row, r)} passed --speculative-num-steps {k}"


def inferencex_sglang_delayer(row: dict[str, str], model_id: str) -> tuple[str, str]:
    """(recipe, note) of an InferenceX aggregated SGLang attention-DP row whose script passed
    ``--enable-prefill-delayer`` (``INFERENCEX_DELAYER_FILE``: the latest rule of its GPU, model,
    precision and speculative method dated on or before the run; a run of no stated date takes
    none): ``recipes.INFERENCEX_SGLANG`` with the delayer's passes - 1 (``specs.engine
    .SGLANG_PREFILL_DELAYER_PASSES``); ("", "") where none applies."""
    date, gpu, prec, spec = _script_key(row)
    key = (gpu, model_id, prec, spec)
    found = [
        r
        for r in bundled_rows(INFERENCEX_DELAYER_FILE)
        if (r["gpu"], r["model"], r["precision"], r["spec"]) == key and date and r["since"] <= date
    ]
    if not found:
        return "", ""
    passes = int(max(found, key=lambda r: r["since"])["passes"])
    note = (
        f"run of {date}: its SGLang script passed --enable-prefill-delayer ({passes} passes: the "
        f"attention-DP context balance at {passes - 1} iterations; {INFERENCEX_DELAYER_FILE})"
    )
    return f"{INFERENCEX_SGLANG}:delay={passes - 1}", note


def inferencex_script_value(
    script: Mapping[str, str] | None, column: str, tp: int, adp: bool = False, isl: int = 0
) -> str:
    """What an InferenceX SGLang or vLLM run's script passed at ``tp`` (``adp``: with
    attention-DP; ``isl``: the run's nominal input length), by the table's ``column`` (its
    engine's ``SCRIPT_FLAGS``): ``mem`` (``--mem-fraction-static`` /
    ``--gpu-memory-utilization``) or ``chunk`` (``--chunked-prefill-size`` /
    ``--max-num-batched-tokens``), one value, one per TP (``tp8=0.82 tp4=0.95``), one for the
    attention-DP runs beside the others' (``16384 adp=32768``), or a multiple of the input
    length (``isl*2``); "" where the table does not say (the engine's default then: SGLang's
    memory fraction, ``serving.memory.sglang_memory_fraction``; its runtime's limits for the
    GPU, ``specs.gpu_defaults``; vLLM's 0.9).

    Example:
        >>> inferencex_script_value({"mem": "tp8=0.82 tp4=0.95"}, "mem", 4)
        '0.95'
        >>> inferencex_script_value({"chunk": "16384 adp=32768"}, "chunk", 8, adp=True)
        '32768'
        >>> inferencex_script_value({"chunk": "isl*2"}, "chunk", 4, isl=1024)
        '2048'
    """
    value = (script or {}).get(column, "").strip()
    if m := ISL_VALUE.fullmatch(value):
        k = int(m.group(2))
        return str(isl * k if m.group(1) == "*" else isl + k) if isl > 0 else ""
    if "=" not in value:
        return value
    words = value.split()
    by = dict(w.split("=") for w in words if "=" in w)
    default = next((w for w in words if "=" not in w), "")
    return by.get("adp", "") if adp and "adp" in by else by.get(f"tp{tp}", default)


def inferencex_script_settings(
    script: Mapping[str, str] | None,
    row: dict[str, str],
    model: ModelSpec,
    hw: HardwareSpec,
    engine: str,
    prec: str,
    plan: tuple[int, bool],
) -> tuple[str, str, list[str]]:
    """(precision, recipe, the mapping's notes) of an InferenceX aggregated SGLang or vLLM
    ``row`` on ``plan`` (tp, attention-DP) from what its launch script set: the KV format where
    the row states none (``inferencex_kv_precision``), its memory fraction and token budget
    (``inferencex_script_value``: SGLang's --mem-fraction-static and --chunked-prefill-size,
    vLLM's --gpu-memory-utilization and --max-num-batched-tokens) and under SGLang's
    attention-DP the prefill delayer (``inferencex_sglang_delayer``): the fields of the engine's
    recipe (``SCRIPT_RECIPES``), recipe "" where none; and FP8 index keys where the script asked
    vLLM for them (``indexer_kv_dtype fp8``, MiniMax-M3 on SM100: ``+fp8-idx``)."""
    notes = []
    if kv_field(row["precision"]) == "?":
        auto_fp8 = sglang_auto_kv_fp8(model, hw)
        kv_prec, said = inferencex_kv_precision(script, row, model, engine, prec, auto_fp8=auto_fp8)
        prec, notes = (kv_prec, [said]) if kv_prec else (prec, notes)
    msa = model.indexer is not None and model.indexer.kind == "msa"
    if script and script.get("idx") == "fp8" and msa and fmha_sm100_runs(hw):
        prec += "+fp8-idx"  # (vLLM's MiniMax-M3 index keys: Precision.index_keys)
        notes.append(f"{_where(row, script)} passed indexer_kv_dtype fp8")
    recipe = ""
    if engine == "sglang" and plan[1]:
        recipe, said = inferencex_sglang_delayer(row, model.id)
        notes += [said] if said else []
    isl = int(float(row.get("isl") or 0))  # (the nominal length the script computes from)
    for column, (flag, scale) in SCRIPT_FLAGS.get(engine, {}).items():
        value = inferencex_script_value(script, column, *plan, isl=isl)
        if value and script:
            recipe = (recipe or SCRIPT_RECIPES[engine]) + f":{column}={round(float(value) * scale)}"
            f = ISL_VALUE.fullmatch(script[column])  # (computed from the input length)
            shown = f"{value} (= ISL{f.group(1)}{f.group(2)})" if f else value
            notes.append(f"{_where(row, script)} passed {flag} {shown}")
    return prec, recipe, notes

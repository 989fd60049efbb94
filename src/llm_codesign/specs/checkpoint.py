"""The checkpoint's own precision, read from its ``quantization_config`` (or ModelOpt's
``hf_quant_config.json``), as a precision string :func:`.precision.parse_precision` accepts.

What a checkpoint states is what it stores: weight format and scale layout, activations when
the scheme quantizes them, and the KV cache only when it says so (``kv_cache_quant_algo``,
``kv_cache_scheme``); an unstated KV cache or activation stays BF16, as engines serve it by
default. Forms read:

* ``{"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}`` (DeepSeek,
  Qwen, MiniMax FP8): FP8 weights in 128x128 blocks, FP8 activations.
* ``{"quant_method": "mxfp4", ...}`` (gpt-oss): MXFP4 weights only.
* ``{"quant_method": "compressed-tensors", "config_groups": {...}}`` (Kimi-K2.5 INT4
  weight-only, FP8, INT8, NVFP4 schemes of llm-compressor).
* ``{"quant_method": "modelopt", "quant_algo": "NVFP4", "kv_cache_quant_algo": "FP8"}`` and
  ``hf_quant_config.json`` ``{"quantization": {"quant_algo": ..., ...}}`` (NVIDIA ModelOpt).
* ``{"quant_method": "awq" | "gptq", "bits": 4, "group_size": 128, ...}``.

Example:
    >>> checkpoint_precision({"quantization_config": {"quant_method": "mxfp4"}})
    ('mxfp4-a16', 'quantization_config mxfp4 weights, weight-only')
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import re
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..formats import BLOCK_SCALED_WEIGHTS, FORMATS, int4_weight_only
from ._load import Fields, read_mapping
from .hardware import HardwareSpec
from .model import ModelSpec
from .precision import PRESETS, Precision, parse_precision

DEPLOY = "deploy.yaml"  # data/launch: published checkpoints (deploy_file)

HF_QUANT_CONFIG = "hf_quant_config.json"
# key under which a ModelSpec's config keeps the hf_quant_config.json found next to config.json
HF_QUANT_CONFIG_KEY = "hf_quant_config"

Reading = tuple[str, str]  # (precision string, reason)


# A published quantized export names its format (nvidia/DeepSeek-R1-0528-FP4-v2,
# zai-org/GLM-5-FP8, nvidia/Qwen3-235B-A22B-NVFP4, ...-GPTQ-Int4): the word, the preset that
# prices that format and whether a weight format is it; the one table of these words (a launch
# read back takes its weights from them too, ``report.deploy_values.server_precision``). A model
# named so with no quantization_config to say the rest (scales, activations, KV) is priced as the
# checkpoint the table has, with a note saying so (``unread_export``), not silently
def format_word(words: str) -> re.Pattern[str]:
    """A checkpoint name's format word, any of ``words`` (``a|b``), standing alone between
    non-alphanumerics ("fp4" in "-FP4-v2", not in "mxfp4"), in any case."""
    return re.compile(rf"(?<![a-z0-9])(?:{words})(?![a-z0-9])", re.I)


# AMD's Quark exports name their weight and their activation formats, ``-w-<format>-a-<format>``:
# amd/gpt-oss-120b-w-mxfp4-a-fp8, the W4A8 gpt-oss InferenceX's MI355X vLLM runs serve
# (SemiAnalysisAI/InferenceX .github/configs/amd-master.yaml, gptoss-fp4-mi355x-vllm @aa2df9534)
_NAMED_ACTIVATIONS = re.compile(r"(?<![a-z0-9])a-((?:mx|nv)?fp(?:8|4))(?![a-z0-9])", re.I)


def named_activations(name: str) -> str:
    """The activation format a checkpoint's name states (``fp8``, ``mxfp8``, ...: AMD's
    ``-a-<format>``), "" where it states none.

    Example:
        >>> named_activations("amd/gpt-oss-120b-w-mxfp4-a-fp8"), named_activations("gpt-oss-120b")
        ('fp8', '')
    """
    found = _NAMED_ACTIVATIONS.search(name)
    return found.group(1).lower() if found else ""


EXPORT_NAMES: tuple[tuple[re.Pattern[str], str, str, Callable[[Any], bool]], ...] = tuple(
    (format_word(words), word, preset, is_format)
    for words, word, preset, is_format in (
        ("mxfp4", "MXFP4", "mxfp4", lambda w: w.id == "mxfp4"),
        ("nvfp4|fp4", "NVFP4", "nvfp4", lambda w: w.id == "nvfp4"),
        ("fp8", "FP8", "fp8", lambda w: w.element == "e4m3"),
        ("int4|awq|gptq|w4a16", "INT4", "w4a16", int4_weight_only),
        ("w8a8|int8", "INT8", "int8", lambda w: w.id == "int8"),
    )
)


def _compose(base: str, **roles: str) -> str:
    """``base`` plus a ``+FORMAT-ROLE`` override for each role whose format differs from the
    preset's (roles: w, a, kv)."""
    preset = dict(zip(("w", "a", "kv", "comm"), PRESETS[base]))
    extra = [f"+{fmt}-{role}" for role, fmt in roles.items() if preset[role] != fmt]
    return base + "".join(extra)


def _kv_word(kv: str) -> str:
    return "KV cache FP8" if kv == "fp8" else "KV cache BF16 (not quantized by the checkpoint)"


def _int4_format(group_size: Any, symmetric: bool) -> str | None:
    fid = f"int4_g{group_size}" + ("_sym" if symmetric else "")
    return fid if fid in FORMATS else None


def _fp8(q: Mapping[str, Any]) -> Reading | None:
    fmt = str(q.get("fmt", "e4m3")).lower()
    block = q.get("weight_block_size")
    if fmt == "e5m2" and not block:
        weights, what = "fp8_e5m2", "fp8 e5m2"
    elif fmt != "e4m3":
        return None
    elif block:
        if list(block) != [128, 128]:  # the registry's fp8_block is DeepSeek's 128x128 layout
            return None
        weights, what = "fp8_block", "fp8 e4m3 block 128x128"
    else:
        weights, what = "fp8", "fp8 e4m3 per tensor"
    return _compose("fp8", w=weights, kv="bf16"), f"quantization_config {what}"


def _mxfp4(q: Mapping[str, Any]) -> Reading | None:
    return "mxfp4-a16", "quantization_config mxfp4 weights, weight-only"


def _int_weight_only(q: Mapping[str, Any], method: str, symmetric: bool) -> Reading | None:
    bits, group = q.get("bits"), q.get("group_size")
    fid = _int4_format(group, symmetric) if bits == 4 else None
    if fid is None:
        return None
    sym = "symmetric" if symmetric else "asymmetric"
    return (
        _compose("w4a16", w=fid),
        f"quantization_config {method} int4 weight-only, group {group}, {sym}",
    )


def _awq(q: Mapping[str, Any]) -> Reading | None:
    return _int_weight_only(q, "awq", symmetric=not q.get("zero_point", True))


def _gptq(q: Mapping[str, Any]) -> Reading | None:
    return _int_weight_only(q, "gptq", symmetric=bool(q.get("sym", True)))


def _ct_kv(q: Mapping[str, Any]) -> str | None:
    """compressed-tensors ``kv_cache_scheme``: FP8, BF16 when absent, None when other."""
    kv = q.get("kv_cache_scheme")
    if not kv:
        return "bf16"
    if kv.get("num_bits") == 8 and kv.get("type") == "float":
        return "fp8"
    return None


def _compressed_tensors(q: Mapping[str, Any]) -> Reading | None:
    groups = q.get("config_groups") or {}
    schemes = [g for g in groups.values() if isinstance(g, Mapping) and g.get("weights")]
    if not schemes or any(
        (s["weights"], s.get("input_activations"))
        != (schemes[0]["weights"], schemes[0].get("input_activations"))
        for s in schemes
    ):
        return None  # no scheme, or different schemes per group: no single precision
    w, a = schemes[0]["weights"], schemes[0].get("input_activations") or {}
    kv = _ct_kv(q)
    if kv is None:
        return None
    bits, kind, strategy = w.get("num_bits"), w.get("type", "int"), w.get("strategy", "")
    a_bits, a_kind = a.get("num_bits"), a.get("type", "int")
    head = "quantization_config compressed-tensors"
    if (bits, kind) == (4, "int") and not a:
        group, sym = w.get("group_size"), bool(w.get("symmetric", True))
        fid = _int4_format(group, sym)
        if strategy not in ("group", "") or fid is None:
            return None
        sym_word = "symmetric" if sym else "asymmetric"
        return (
            _compose("w4a16", w=fid, kv=kv),
            f"{head} int4 weight-only, group {group}, {sym_word}; {_kv_word(kv)}",
        )
    if (bits, kind) == (8, "float") and (a_bits, a_kind) == (8, "float"):
        block = w.get("block_structure")
        weights = {"tensor": "fp8", "channel": "fp8_channel"}.get(strategy)
        if strategy == "block" and list(block or []) == [128, 128]:
            weights = "fp8_block"
        if weights is None:
            return None
        return (
            _compose("fp8", w=weights, kv=kv),
            f"{head} fp8 weights per {strategy}, fp8 activations; {_kv_word(kv)}",
        )
    if (bits, kind) == (8, "int") and (a_bits, a_kind) == (8, "int"):
        return _compose("int8", kv=kv), f"{head} int8 weights and activations; {_kv_word(kv)}"
    if (bits, kind, w.get("group_size")) == (4, "float", 16):
        acts = "nvfp4" if (a_bits, a_kind) == (4, "float") else ("bf16" if not a else "")
        if not acts:
            return None
        return (
            _compose("nvfp4", a=acts, kv=kv),
            f"{head} nvfp4 weights, {acts} activations; {_kv_word(kv)}",
        )
    return None


MODELOPT_ALGOS = {"NVFP4": "nvfp4", "FP8": "fp8", "W4A16_AWQ": "w4a16"}


def _modelopt(q: Mapping[str, Any], where: str = "quantization_config modelopt") -> Reading | None:
    algo = str(q.get("quant_algo") or "").upper()
    kv_algo = str(q.get("kv_cache_quant_algo") or "").upper()
    if algo not in MODELOPT_ALGOS or kv_algo not in ("", "FP8"):
        return None
    kv = "fp8" if kv_algo == "FP8" else "bf16"
    return _compose(MODELOPT_ALGOS[algo], kv=kv), f"{where} {algo}; {_kv_word(kv)}"


READERS: dict[str, Callable[[Mapping[str, Any]], Reading | None]] = {
    "awq": _awq,
    "compressed-tensors": _compressed_tensors,
    "fp8": _fp8,
    "gptq": _gptq,
    "modelopt": _modelopt,
    "mxfp4": _mxfp4,
}


def quantization_config(config: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``quantization_config`` of a config.json: top level, else under ``text_config``."""
    q = config.get("quantization_config")
    if q is None and isinstance(config.get("text_config"), Mapping):
        q = config["text_config"].get("quantization_config")
    return q if isinstance(q, Mapping) else None


def checkpoint_precision(config: Mapping[str, Any]) -> Reading | None:
    """The precision a checkpoint's config states, as ``(precision string, reason)``.

    ``config`` is a config.json mapping (``quantization_config`` at the top or under
    ``text_config``); an ``hf_quant_config`` key holds a ModelOpt ``hf_quant_config.json``.
    None when the config states no quantization or one this reader does not know (the caller
    warns and falls back).

    Example:
        >>> q = {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}
        >>> checkpoint_precision({"quantization_config": q})
        ('fp8+fp8_block-w+bf16-kv', 'quantization_config fp8 e4m3 block 128x128')
    """
    if experts_alone_fp4(config):  # (FlashMLA's FP8 layout: the engines' one cache for it)
        why = "expert_dtype fp4: MXFP4 routed experts at FP8 activations, the rest FP8 block 128"
        return "mxfp4-a8", f"{why}; KV cache FP8 (vLLM's and SGLang's DeepSeek-V4 pools)"
    return _stated_precision(config)


def _stated_precision(config: Mapping[str, Any]) -> Reading | None:
    """The precision the config's quantization fields state (FP4 experts alone: the rest's)."""
    q = quantization_config(config)
    if q is not None:
        reader = READERS.get(str(q.get("quant_method", "")).lower())
        try:
            return reader(q) if reader else None
        except (AttributeError, TypeError, ValueError):  # malformed fields: an unknown form
            return None
    modelopt = config.get(HF_QUANT_CONFIG_KEY)
    if isinstance(modelopt, Mapping) and isinstance(modelopt.get("quantization"), Mapping):
        return _modelopt(modelopt["quantization"], where=HF_QUANT_CONFIG)
    return None


# The parts of a model whose linear layers a checkpoint may leave in 16 bits, each with module
# names of that part in HuggingFace's spelling (matched against the checkpoint's exclusions)
SIXTEEN_BIT_PARTS = {
    "attention": ("model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.o_proj"),
    "shared": ("model.layers.1.mlp.shared_experts.gate_proj",),
    "dense": ("model.layers.0.mlp.gate_proj", "model.layers.0.mlp.down_proj"),
}


def _excluded(name: str, pattern: str) -> bool:
    """Whether a checkpoint's exclusion ``pattern`` names module ``name``: ``re:`` a regular
    expression on the whole name (compressed-tensors' ``ignore``), a pattern with a dot or a
    ``*`` a glob on the name or a prefix of it (``model.layers.*.self_attn``), else one whole
    component of it (``gate``, ``lm_head``)."""
    if pattern.startswith("re:"):
        return re.fullmatch(pattern[3:], name) is not None
    if "." in pattern or "*" in pattern:
        return fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name, pattern + ".*")
    return pattern in name.split(".")


def sixteen_bit_parts(spec: ModelSpec, prec: Precision) -> frozenset[str]:
    """The parts (``SIXTEEN_BIT_PARTS``: attention projections, shared experts, dense FFNs)
    whose linear layers ``spec``'s checkpoint keeps in 16 bits (its ``modules_to_not_convert``,
    compressed-tensors' ``ignore``, ModelOpt's ``exclude_modules``), where ``prec`` serves that
    checkpoint's own weight format (its family: INT4 in any group size); none otherwise (a
    precision of another weight format is a quantization of every linear layer). ``ops``
    prices those parts' GEMMs and weights in BF16.

    Example: gpt-oss-120b's MXFP4 checkpoint leaves ``model.layers.*.self_attn`` unconverted
    (only the experts are MXFP4): ``{"attention"}`` at ``mxfp4-a16``, none at ``nvfp4``."""
    own = checkpoint_precision(spec.config)
    family = prec.weights.id.split("_")[0]  # (int4 in any group size: the checkpoint's INT4)
    if own is None or parse_precision(own[0]).weights.id.split("_")[0] != family:
        return frozenset()
    q = quantization_config(spec.config) or {}
    modelopt = spec.config.get(HF_QUANT_CONFIG_KEY)
    if isinstance(modelopt, Mapping) and isinstance(modelopt.get("quantization"), Mapping):
        q = {**q, **modelopt["quantization"]}
    patterns = [
        str(p)
        for key in ("modules_to_not_convert", "ignore", "exclude_modules")
        for p in (q.get(key) or [])
    ]
    return frozenset(
        part
        for part, names in SIXTEEN_BIT_PARTS.items()
        if any(_excluded(n, p) for n in names for p in patterns)
    )


def experts_alone_fp4(config: Mapping[str, Any]) -> bool:
    """Whether the routed experts alone are FP4 (MXFP4) beside 128x128 FP8 blocks: DeepSeek-V4's
    ``expert_dtype: fp4`` (``inference/model.py``, vLLM ``Mxfp4MoEMethod``), its NVFP4 exports."""
    return str(config.get("expert_dtype", "")).lower() == "fp4"


def kept_parts(spec: ModelSpec, prec: Precision) -> dict[str, str]:
    """Parts the checkpoint keeps in another format than ``prec``'s weights, by format id:
    ``bf16`` (:func:`sixteen_bit_parts`) or ``fp8_block`` (attention and shared experts beside
    FP4 experts alone, :func:`experts_alone_fp4`, at a 4-bit FP weight format).
    Example:
        >>> from .model import load_model
        >>> kept_parts(load_model("deepseek-v4-pro"), parse_precision("nvfp4"))
        {'attention': 'fp8_block', 'shared': 'fp8_block'}
    """
    out = dict.fromkeys(sixteen_bit_parts(spec, prec), "bf16")
    if experts_alone_fp4(spec.config) and prec.weights.id.split("_")[0] in ("mxfp4", "nvfp4"):
        out = {"attention": "fp8_block", "shared": "fp8_block"} | out
    return out


def stated_quantization(config: Mapping[str, Any]) -> str:
    """A short description of the quantization a config states ("" when none), for warnings."""
    q = quantization_config(config)
    if q is not None:
        return f"quantization_config quant_method {q.get('quant_method')!r}"
    modelopt = config.get(HF_QUANT_CONFIG_KEY)
    if isinstance(modelopt, Mapping):
        algo = (modelopt.get("quantization") or {}).get("quant_algo")
        return f"{HF_QUANT_CONFIG} quant_algo {algo!r}"
    return ""


def served_mxfp4(hw: HardwareSpec, sixteen_bit: bool = False, eight_bit: bool = False) -> str:
    """The preset an MXFP4 weight-only checkpoint (gpt-oss's ``quant_method: mxfp4``) is served
    at on ``hw``: W4A8 (``mxfp4-a8``, MXFP8 activations) or weight-only W4A16 (``mxfp4-a16``: the
    kernels take BF16 activations and convert the 4-bit weights).

    W4A8 needs an MXFP8 tensor-core path (``hw.supports("mxfp8")``: Blackwell, MI355X) and a
    kernel that quantizes the activations to MXFP8, and only NVIDIA's have one for this
    checkpoint:
    - TensorRT-LLM serves it so on Blackwell (NVIDIA/TensorRT-LLM
      examples/models/core/gpt_oss/README.md, MoE support matrix: Hopper bf16 x mxfp4, Blackwell
      mxfp8 x mxfp4).
    - So do InferenceX's vLLM Blackwell scripts (VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1). Without
      that variable vLLM's SM100 default is the BF16-activation kernel; ``mxfp4-a16`` prices it.
    - On AMD GPUs every engine read takes BF16 activations: vLLM's MXFP4 MoE on ROCm runs
      AITER's CK kernels (weights laid out by ``shuffle_weight_a16w4``) or OpenAI's Triton
      kernels (``mxfp4_w4a16_moe_quant_config``). Its only MXFP8-activation backends are
      FlashInfer's (vllm-project/vllm fused_moe/oracle/mxfp4.py ``_backend_activation_key``;
      quantization/mxfp4.py ``get_mxfp4_backend``). SGLang's default is the same Triton kernels,
      its MXFP8 path FlashInfer's behind an environment variable (sgl-project/sglang
      layers/quantization/mxfp4.py).
    - AMD's W4A8 gpt-oss is a checkpoint of its own, which states its FP8 activations.

    So the default is W4A8 on an NVIDIA GPU with the path, else W4A16. A row or a user stating
    16-bit activations (``sixteen_bit``) gets W4A16; one stating 8-bit activations
    (``eight_bit``) gets W4A8 wherever the GPU has the path.

    Example:
        >>> from .hardware import load_hardware
        >>> served_mxfp4(load_hardware("b200")), served_mxfp4(load_hardware("h200-sxm"))
        ('mxfp4-a8', 'mxfp4-a16')
        >>> mi355x = load_hardware("mi355x")
        >>> served_mxfp4(mi355x), served_mxfp4(mi355x, eight_bit=True)
        ('mxfp4-a16', 'mxfp4-a8')
    """
    path = hw.supports("mxfp8")
    own = path and hw.vendor == "nvidia"  # the engines' default activations on this GPU
    return "mxfp4-a8" if not sixteen_bit and (own or (path and eight_bit)) else "mxfp4-a16"


def unread_export(spec: ModelSpec, priced: str = "") -> str:
    """Why a model's name is not the checkpoint priced: ``spec.name`` names a quantized export
    (``EXPORT_NAMES``) whose weight format neither a bundled ``quantization_config`` of that name
    (``named_checkpoints``) nor the model's own states; "" otherwise. ``priced``: what is priced
    instead (default: the model's own checkpoint, as ``estimate`` prices it).

    Example:
        >>> from .model import load_model
        >>> unread_export(load_model("nvidia/Llama-3.3-70B-Instruct-FP4"))[:60]
        'nvidia/Llama-3.3-70B-Instruct-FP4 names an NVFP4 export whos'
    """
    found = next((e for e in EXPORT_NAMES if e[0].search(spec.name)), None)
    if found is None:
        return ""
    _, word, preset, is_format = found
    reading = checkpoint_precision(spec.config)
    if reading is not None and is_format(parse_precision(reading[0]).weights):
        return ""
    own = f"the model's own checkpoint ({reading[0]})" if reading else "bf16, the model's own"
    priced = priced or own
    return (
        f"{spec.name} names an {word} export whose quantization_config is not bundled "
        f"(data/launch/deploy.yaml): priced at {priced}; pass -p {preset} to price that format"
    )


def default_precision(spec: ModelSpec, hw: HardwareSpec | None = None) -> Reading:
    """The precision a model is served at when none is given: the checkpoint's own when its
    config states one this reader knows, else ``bf16``; with a note saying which (empty for an
    unquantized checkpoint). On a GPU (``hw``), an MXFP4 weight-only checkpoint takes the
    activations it is served with there (``served_mxfp4``).

    Example:
        >>> from .model import load_model
        >>> from .hardware import load_hardware
        >>> default_precision(load_model("gpt-oss-120b"))[0]
        'mxfp4-a16'
        >>> default_precision(load_model("gpt-oss-120b"), load_hardware("b200"))[0]
        'mxfp4-a8'
    """
    text, why = _own_precision(spec, hw)
    if unread := unread_export(spec):
        why = f"{unread}; {why}" if why else unread
    return text, why


def _own_precision(spec: ModelSpec, hw: HardwareSpec | None) -> Reading:
    """``default_precision`` before an export's name is read (``unread_export``)."""
    reading = checkpoint_precision(spec.config)
    if reading is not None:
        text, why = reading
        weight_only = "mxfp4-a16"
        if hw is not None and text == "mxfp4-a8" and not hw.supports("mxfp8"):
            text = weight_only + "+fp8-kv"  # (DeepSeek-V4's experts: no FP8 x FP4 path)
            why += f", its experts weight-only on {hw.id} (no MXFP8 path)"
        elif hw is not None and text.split("+")[0] == weight_only:
            served = served_mxfp4(hw)
            if served != weight_only:
                text = served + text[len(weight_only) :]
                why += f", served with MXFP8 activations on {hw.id} (-p {weight_only}: BF16)"
            elif hw.supports("mxfp8"):  # the path exists, the engines' kernels do not take it
                why += f", served with BF16 activations on {hw.id} (-p mxfp4-a8: MXFP8)"
        return text, f"checkpoint: {why}{_sixteen_bit_note(spec, text)}"
    stated = stated_quantization(spec.config)
    if stated:
        return "bf16", f"checkpoint {stated} not recognised: bf16 assumed, pass a precision"
    return "bf16", ""


def preset_weights(spec: ModelSpec, precision: Any) -> tuple[Any, str]:
    """A bare preset (``fp8``, no ``+`` overrides) with the checkpoint's own weight format where
    the checkpoint stores that preset's weights block-scaled: DeepSeek-V3/R1's and MiniMax-M2.5's
    FP8 is ``fp8+fp8_block-w`` (128x128 weight blocks), the FP8 model that exists and that a
    launch of it serves; its grouped GEMMs run slower on Hopper (``efficiency.grouped_gemm``).
    Anything else is returned as given. With a note saying so, or which layers the checkpoint
    keeps in BF16 at that precision (:func:`sixteen_bit_parts`; "" when neither).

    Example:
        >>> from .model import load_model
        >>> preset_weights(load_model("deepseek-r1"), "fp8")[0]
        'fp8+fp8_block-w'
        >>> preset_weights(load_model("llama-3.1-8b"), "fp8")
        ('fp8', '')
    """
    if not isinstance(precision, str):  # a Precision object is taken as given
        return precision, ""
    text = precision.strip().lower()
    kept = _sixteen_bit_note(spec, text).removeprefix("; ")
    if "+" in text or text not in PRESETS:
        return precision, kept
    reading = _stated_precision(spec.config)  # (DeepSeek-V4's: its non-experts' FP8 blocks)
    if reading is None:
        return precision, kept
    w, base = parse_precision(reading[0]).weights, FORMATS[PRESETS[text][0]]
    if w.id in BLOCK_SCALED_WEIGHTS and w.element == base.element and w.id != base.id:
        return f"{text}+{w.id}-w", f"{text}: the checkpoint's {w.id} weights ({reading[1]})"
    return precision, kept


def _sixteen_bit_note(spec: ModelSpec, text: str) -> str:
    """``"; <parts> kept in BF16 ..."`` where the checkpoint keeps parts of ``text``'s weight
    format in 16 bits (:func:`sixteen_bit_parts`), else "" (and for a text that is no
    precision: its error is the caller's to raise)."""
    try:
        parts = sixteen_bit_parts(spec, parse_precision(text))
    except SpecError:
        return ""
    names = {
        "attention": "attention projections",
        "shared": "shared experts",
        "dense": "dense FFNs",
    }
    kept = ", ".join(names[p] for p in SIXTEEN_BIT_PARTS if p in parts)
    return f"; its {kept} kept in BF16 (the checkpoint's exclusions)" if kept else ""


def preset_precision(spec: ModelSpec, precision: str | Precision) -> Precision:
    """The precision a text means for this model's checkpoint: :func:`preset_weights` applied,
    then parsed (a ``Precision`` object is taken as given). The one call estimate's siblings
    (frontier precisions, the advisors, sweep cells) use.

    Example:
        >>> from .model import load_model
        >>> preset_precision(load_model("deepseek-r1"), "fp8").id
        'fp8+fp8_block-w'
    """
    if isinstance(precision, Precision):
        return precision
    return parse_precision(preset_weights(spec, precision)[0])


def with_checkpoint_files(spec: ModelSpec, top: Mapping[str, Any], config_path: Path) -> ModelSpec:
    """``spec`` whose ``config`` also holds what the checkpoint states about its precision
    outside the (text) config the parser kept: the top-level ``quantization_config`` of a
    wrapped model (``text_config``) and an ``hf_quant_config.json`` next to ``config_path``."""
    extra: dict[str, Any] = {}
    q = top.get("quantization_config")
    if q is not None and "quantization_config" not in spec.config:
        extra["quantization_config"] = q
    modelopt = config_path.parent / HF_QUANT_CONFIG
    if config_path.name == "config.json" and modelopt.is_file():
        extra[HF_QUANT_CONFIG_KEY] = read_mapping(modelopt)
    if not extra:
        return spec
    return dataclasses.replace(spec, config={**spec.config, **extra})


@functools.cache
def deploy_file() -> dict[str, Any]:
    """``data/launch/deploy.yaml`` (the one reader; ``report.launch_data`` reads its GPUs per node
    and quantizer formats): published checkpoints per (model, precision family)."""
    return read_mapping(Path(str(resources.files("llm_codesign") / "data" / "launch" / DEPLOY)))


@functools.cache
def named_checkpoints() -> dict[str, tuple[str, str, Mapping[str, Any], str]]:
    """Lower-cased name of a published quantized checkpoint (with and without its organisation)
    -> (bundled model id, the checkpoint's name, its ``quantization_config``, source): the rows
    of ``deploy_file``'s checkpoints that state a ``quantization_config``, for models whose
    bundled config is the unquantized release (Qwen3's -FP8 checkpoints: 128x128 block-scaled
    FP8). Each must be one of its model's aliases and state a precision
    :func:`checkpoint_precision` reads."""
    from .model import bundled_models

    table: dict[str, tuple[str, str, Mapping[str, Any], str]] = {}
    for i, row in enumerate(deploy_file().get("checkpoints") or []):
        f = Fields(row, f"{DEPLOY}: checkpoints[{i}]")
        if not f.has("quantization_config"):
            continue
        name, model_id = f.str("checkpoint"), f.str("model")
        qc, source = f.mapping("quantization_config").data, f.str("source")
        spec = bundled_models().get(model_id)
        if spec is None:
            raise SpecError(f"{DEPLOY}: checkpoint {name!r}: no bundled model {model_id!r}")
        if name.lower() not in {a.lower() for a in spec.aliases}:
            raise SpecError(f"{DEPLOY}: checkpoint {name!r} is not an alias of {model_id}")
        if checkpoint_precision({"quantization_config": qc}) is None:
            raise SpecError(f"{DEPLOY}: checkpoint {name!r}: its quantization_config is not read")
        entry = (model_id, name, qc, source)
        table[name.lower()] = table[name.lower().rsplit("/", 1)[-1]] = entry
    return table


def named_checkpoint(spec: ModelSpec, name: str) -> ModelSpec:
    """``spec`` as the published checkpoint ``name`` stores it, where ``name`` names one of the
    bundled model's quantized checkpoints (:func:`named_checkpoints`): its name and repository
    (``source``, which a launch loads), and its ``quantization_config`` in ``config`` (so the
    checkpoint's own precision is the default and an ``fp8`` preset takes its block-scaled
    weights); where ``name`` says an export's format (``EXPORT_NAMES``) that no bundled
    ``quantization_config`` gives, ``spec`` under that name (its precision note says so:
    :func:`unread_export`); ``spec`` itself otherwise.

    Example:
        >>> from .model import load_model
        >>> preset_weights(load_model("Qwen/Qwen3-235B-A22B-FP8"), "fp8")[0]
        'fp8+fp8_block-w'
    """
    found = named_checkpoints().get(name.strip().lower())
    if found is None and any(rx.search(name) for rx, *_ in EXPORT_NAMES):
        return dataclasses.replace(spec, name=name.strip())  # (``unread_export`` reads it)
    if found is None or found[0] != spec.id or "quantization_config" in spec.config:
        return spec
    config = {**spec.config, "quantization_config": dict(found[2])}
    source = f"https://huggingface.co/{found[1]} ({found[3]}); architecture: {spec.source}"
    return dataclasses.replace(spec, name=found[1], config=config, source=source)

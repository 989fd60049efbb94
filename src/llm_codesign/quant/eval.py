"""Perplexity of a local HF causal LM with fake-quantized linear layers (optional extra ``eval``).

Weights of every linear layer (``lm_head`` excluded unless asked, as ModelOpt and AWQ do) are
replaced by ``dequantize(quantize(w))`` in each format, blocks along the input dimension;
optionally the layer inputs are fake-quantized too (``role="activation"``: per token, dynamic
scales). Perplexity uses the sliding-window recipe of the HF docs: windows of ``max_length``
tokens advanced by ``stride``, each token scored once, with the window's earlier tokens as
context. Nothing is downloaded: the model and tokenizer load with ``local_files_only=True``.

``torch`` and ``transformers`` are imported inside the functions, so this module imports
without them; calling it without them raises :class:`~llm_codesign.errors.UnsupportedError`.

Example:
    >>> r = evaluate_model_dir("tiny-llama/", "some text ...", ["fp32", "nvfp4"])  # doctest: +SKIP
    >>> r["formats"]["nvfp4"]["ppl"] > r["baseline"]["ppl"]  # doctest: +SKIP
    True
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import DataFileError, SpecError, UnsupportedError
from .inspection import parse_formats
from .numerics import fake_quantize

Progress = Callable[[str, int, int], None]


def _require_torch() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError:
        raise UnsupportedError(
            "quant eval needs torch and transformers: pip install 'llm-codesign[eval]'"
        ) from None
    return torch, transformers


def _linear_modules(model: Any, include_lm_head: bool) -> list[tuple[str, Any, bool]]:
    """(name, module, transposed) of every linear layer; HF Conv1D stores [in, out]."""
    torch, _ = _require_torch()
    out = []
    for name, module in model.named_modules():
        is_conv1d = type(module).__name__ == "Conv1D" and hasattr(module, "nf")
        if isinstance(module, torch.nn.Linear) or is_conv1d:
            if not include_lm_head and name.split(".")[-1] in ("lm_head", "embed_out"):
                continue
            out.append((name, module, is_conv1d))
    return out


def perplexity(
    model: Any,
    token_ids: Sequence[int],
    *,
    max_length: int = 1024,
    stride: int = 512,
    progress: Progress | None = None,
    label: str = "",
) -> dict[str, float]:
    """Sliding-window perplexity of ``model`` (a torch causal LM) on ``token_ids``.

    Every token but the first is scored exactly once, ``stride`` targets per forward pass, each
    window ``max_length`` tokens long (so ``1 <= stride < max_length``). Returns ``{"ppl",
    "nll", "tokens"}`` with ``nll`` the mean negative log-likelihood (nats) per scored token.
    """
    torch, _ = _require_torch()
    if max_length < 2 or not 1 <= stride < max_length:
        raise SpecError(
            f"need max_length >= 2 and 1 <= stride < max_length, got {max_length}, {stride}"
        )
    ids = torch.tensor(list(token_ids), dtype=torch.long).unsqueeze(0)
    n = ids.shape[1]
    if n < 2:
        raise SpecError(f"need at least 2 tokens to measure perplexity, got {n}")
    # targets [t0, t1) advance by `stride`; the window [t1 - max_length, t1) gives each target
    # at least max_length - stride tokens of context; token 0 has no prediction
    steps = -(-(n - 1) // stride)
    total, count, t0 = 0.0, 0, 1
    model.eval()
    with torch.no_grad():
        for i in range(steps):
            t1 = min(t0 + stride, n)
            begin = max(0, t1 - max_length)
            logits = model(ids[:, begin:t1]).logits[0].float()
            logp = torch.log_softmax(logits[t0 - begin - 1 : t1 - begin - 1], dim=-1)
            total -= float(logp.gather(1, ids[0, t0:t1].unsqueeze(1)).sum())
            count += t1 - t0
            t0 = t1
            if progress is not None:
                progress(label, i + 1, steps)
    nll = total / count
    return {"ppl": math.exp(nll), "nll": nll, "tokens": count}


def _fake_quant_tensor(t: Any, fmt: str, role: str) -> Any:
    torch, _ = _require_torch()
    data = t.detach().to(torch.float32).cpu().numpy()
    deq = fake_quantize(data, fmt, role=role)
    return torch.from_numpy(deq).to(dtype=t.dtype, device=t.device)


def evaluate_formats(
    model: Any,
    token_ids: Sequence[int],
    formats: str | Sequence[str],
    *,
    max_length: int = 1024,
    stride: int = 512,
    quantize_activations: bool = False,
    include_lm_head: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Perplexity of ``model`` unquantized and with its linear layers fake-quantized per format.

    The model is restored to its original weights afterwards.

    Returns:
        ``{"tokens", "max_length", "stride", "activations", "baseline": {"ppl", "nll"},
        "formats": {FORMAT: {"ppl", "nll", "delta_ppl", "rel_delta_ppl", "weight_sqnr_db",
        "weight_rel_error", "layers"}}}``; weight SQNR is over all quantized weights.
    """
    torch, _ = _require_torch()
    fmt_ids = parse_formats(formats)
    linears = _linear_modules(model, include_lm_head)
    if not linears:
        raise SpecError("the model has no linear layers to quantize")
    originals = {name: mod.weight.detach().clone() for name, mod, _ in linears}
    base = perplexity(
        model, token_ids, max_length=max_length, stride=stride, progress=progress, label="baseline"
    )
    results: dict[str, Any] = {}
    for fmt in fmt_ids:
        signal = error = 0.0
        hooks = []
        try:
            with torch.no_grad():
                for name, mod, transposed in linears:
                    w = originals[name]
                    w_in_last = w.t() if transposed else w  # blocks along the input dim
                    deq = _fake_quant_tensor(w_in_last, fmt, "weight")
                    deq = deq.t() if transposed else deq
                    diff = w.double() - deq.double()
                    signal += float((w.double() ** 2).sum())
                    error += float((diff**2).sum())
                    mod.weight.copy_(deq)
                    if quantize_activations:
                        hooks.append(mod.register_forward_pre_hook(_activation_hook(fmt)))
            r = perplexity(
                model, token_ids, max_length=max_length, stride=stride, progress=progress, label=fmt
            )
        finally:
            for h in hooks:
                h.remove()
            with torch.no_grad():
                for name, mod, _ in linears:
                    mod.weight.copy_(originals[name])
        sqnr = 10 * math.log10(signal / error) if error > 0 else None
        results[fmt] = {
            "ppl": r["ppl"],
            "nll": r["nll"],
            "delta_ppl": r["ppl"] - base["ppl"],
            "rel_delta_ppl": r["ppl"] / base["ppl"] - 1.0,
            "weight_sqnr_db": sqnr,
            "weight_rel_error": math.sqrt(error / signal) if signal > 0 else None,
            "layers": len(linears),
        }
    return {
        "tokens": base["tokens"],
        "max_length": max_length,
        "stride": stride,
        "activations": quantize_activations,
        "baseline": {"ppl": base["ppl"], "nll": base["nll"]},
        "formats": results,
    }


def _activation_hook(fmt: str) -> Callable[..., Any]:
    def hook(module: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
        x = args[0]
        return (_fake_quant_tensor(x, fmt, "activation"), *args[1:])

    return hook


def evaluate_model_dir(
    model_dir: str | os.PathLike[str],
    text: str,
    formats: str | Sequence[str],
    *,
    max_tokens: int = 4096,
    max_length: int | None = None,
    stride: int = 512,
    quantize_activations: bool = False,
    include_lm_head: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Load a local HF causal LM (float32, CPU) and run :func:`evaluate_formats` on ``text``.

    ``max_tokens`` caps the tokens evaluated; ``max_length`` (default: the model's
    ``max_position_embeddings``, at most 1024) is the window, ``stride`` its step (at most
    ``max_length - 1``; the result records the one used).
    """
    _, transformers = _require_torch()
    fmt_ids = parse_formats(formats)
    if max_tokens < 2:
        raise SpecError(f"max_tokens must be at least 2, got {max_tokens}")
    if not os.path.isdir(model_dir):
        raise DataFileError(f"{model_dir}: not a model folder")
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(
            str(model_dir), local_files_only=True
        )
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(model_dir), local_files_only=True
        ).float()
    except (OSError, ValueError, KeyError) as exc:
        raise DataFileError(f"{model_dir}: cannot load a causal LM and tokenizer ({exc})") from None
    ids = tokenizer(text)["input_ids"][:max_tokens]
    window = max_length or min(int(getattr(model.config, "max_position_embeddings", 1024)), 1024)
    result = evaluate_formats(
        model,
        ids,
        fmt_ids,
        max_length=window,
        stride=min(stride, window - 1),
        quantize_activations=quantize_activations,
        include_lm_head=include_lm_head,
        progress=progress,
    )
    result["model_dir"] = str(model_dir)
    return result

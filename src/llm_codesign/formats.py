"""Registry of numeric storage formats: bit-level fields and derived bytes per element.

One registry shared by the precision presets (cost model) and the quantization numerics
(:mod:`llm_codesign.quant`), so the bytes the cost model charges and the bytes a packed tensor
occupies cannot disagree. Bits per element include block-scale overhead
(``reference/formats.md`` section 3): NVFP4 = 4 + 8/16 = 4.5 bits, MXFP4 = 4 + 8/32 = 4.25 bits,
INT4 group-128 asymmetric (FP16 scale + 4-bit zero) = 4 + 20/128 = 4.15625 bits.

Example:
    >>> FORMATS["nvfp4"].bytes_per_element
    0.5625
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import UnknownIdError


@dataclass(frozen=True)
class NumberFormat:
    """A storage format for tensors.

    Attributes:
        id: registry key, e.g. ``"nvfp4"``.
        element: element type name (``"e2m1"``, ``"e4m3"``, ``"int4"``, ``"bf16"``...).
        element_bits: bits of one element.
        block_size: elements sharing one scale (0 = no block scale; per-tensor or
            per-channel scales are counted as negligible).
        scale_bits: bits of one block scale (plus zero point, for asymmetric integer formats).
        scale_type: scale element type (``"e8m0"``, ``"ue4m3"``, ``"fp16"``, ``"fp32"``, ``""``).
        compute_class: the tensor-core rate class this format computes at when used as the
            activation/weight operand (key into ``HardwareSpec.peak_flops_per_s``).
        source: where the layout is defined.
    """

    id: str
    element: str
    element_bits: int
    block_size: int
    scale_bits: int
    scale_type: str
    compute_class: str
    source: str

    @property
    def bits_per_element(self) -> float:
        """Element bits plus the block scale amortized over the block."""
        if self.block_size == 0:
            return float(self.element_bits)
        return self.element_bits + self.scale_bits / self.block_size

    @property
    def bytes_per_element(self) -> float:
        return self.bits_per_element / 8.0


_F = "reference/formats.md"
FORMATS: dict[str, NumberFormat] = {
    f.id: f
    for f in [
        NumberFormat("fp32", "fp32", 32, 0, 0, "", "tf32", "IEEE 754 binary32"),
        NumberFormat("bf16", "bf16", 16, 0, 0, "", "bf16", f"{_F} s1"),
        NumberFormat("fp16", "fp16", 16, 0, 0, "", "fp16", f"{_F} s1"),
        NumberFormat("fp8", "e4m3", 8, 0, 0, "fp32", "fp8", f"{_F} s1 (per-tensor FP32 scale)"),
        NumberFormat("fp8_e5m2", "e5m2", 8, 0, 0, "fp32", "fp8", f"{_F} s1"),
        NumberFormat(
            "fp8_channel",
            "e4m3",
            8,
            0,
            0,
            "fp32",
            "fp8",
            f"{_F} s1 (per-output-channel FP32 scale)",
        ),
        NumberFormat(
            "fp8_block",
            "e4m3",
            8,
            128 * 128,
            32,
            "fp32",
            "fp8",
            f"{_F} s3: DeepSeek-V3 128x128 weight blocks, FP32 scale",
        ),
        NumberFormat("mxfp8", "e4m3", 8, 32, 8, "e8m0", "mxfp8", f"{_F} s2 (OCP MX, k=32)"),
        NumberFormat("mxfp6", "e2m3", 6, 32, 8, "e8m0", "mxfp6", f"{_F} s2 (OCP MX, k=32)"),
        NumberFormat("mxfp6_e3m2", "e3m2", 6, 32, 8, "e8m0", "mxfp6", f"{_F} s2"),
        NumberFormat("mxfp4", "e2m1", 4, 32, 8, "e8m0", "mxfp4", f"{_F} s2: 4 + 8/32 = 4.25 bits"),
        NumberFormat(
            "nvfp4",
            "e2m1",
            4,
            16,
            8,
            "ue4m3",
            "nvfp4",
            f"{_F} s2: E2M1 x16 + UE4M3 scale + FP32 per tensor = 4.5 bits",
        ),
        NumberFormat("int8", "int8", 8, 0, 0, "fp32", "int8", f"{_F} s3 (per-channel)"),
        NumberFormat(
            "int4_g128",
            "int4",
            4,
            128,
            20,
            "fp16",
            "bf16",
            f"{_F} s3: AWQ/GPTQ asymmetric, FP16 scale + 4-bit zero per 128 = 4.15625 bits",
        ),
        NumberFormat(
            "int4_g128_sym",
            "int4",
            4,
            128,
            16,
            "fp16",
            "bf16",
            f"{_F} s3: symmetric, FP16 scale per 128 = 4.125 bits",
        ),
        NumberFormat(
            "int4_g32_sym",
            "int4",
            4,
            32,
            16,
            "bf16",
            "bf16",
            "compressed-tensors pack-quantized, symmetric, BF16 scale per 32 (Kimi-K2 Thinking, "
            "Kimi-K2.5 INT4 weights) = 4.5 bits",
        ),
    ]
}


# weight formats whose scales are per block of weights rather than per tensor or channel, and
# which a checkpoint may store a preset's weights in (DeepSeek-V3's 128x128 FP8 blocks): a bare
# preset takes them for that model (specs.checkpoint.preset_weights), and their grouped GEMMs may
# have a measured rate of their own (efficiency.grouped_gemm.<format>; on Hopper the block scales
# are applied to the FP32 accumulators outside the tensor cores)
BLOCK_SCALED_WEIGHTS = ("fp8_block",)
# weight formats whose routed (MoE expert) grouped GEMMs may have a measured rate of their own in
# a GPU file (efficiency.grouped_gemm.<format>, a floor on the time of the rows computed,
# cost.gemm_time): the block-scaled formats, and MXFP4 weights where the tensor cores do not take
# FP4 (Hopper: weight-only kernels convert the E2M1 values and E8M0 block scales to BF16 on the
# CUDA cores before the MMA)
GROUPED_WEIGHT_FORMATS = BLOCK_SCALED_WEIGHTS + ("mxfp4",)


def int4_weight_only(fmt: str | NumberFormat) -> bool:
    """Whether a format (or its id) is a 4-bit integer weight-only one: element ``int4`` at BF16
    math (GPTQ/AWQ, compressed-tensors pack-quantized INT4), whose GEMMs the activations' class
    decides (``Precision.compute_class``) and whose experts take the engine's INT4 MoE path
    (``moe_kernels.moe_kernel_path``)."""
    f = FORMATS.get(fmt) if isinstance(fmt, str) else fmt
    return f is not None and f.element == "int4" and f.compute_class == "bf16"


def get_format(format_id: str) -> NumberFormat:
    """Look up a format by id, with a clear error listing the allowed ids."""
    try:
        return FORMATS[format_id]
    except KeyError:
        allowed = ", ".join(sorted(FORMATS))
        raise UnknownIdError(f"unknown number format {format_id!r}; allowed: {allowed}") from None

"""Format ids the quant tests sweep (pinned here once: a renamed registry id fails the tests)."""

QUANT_IDS = [
    "fp8",
    "fp8_e5m2",
    "fp8_channel",
    "fp8_block",
    "mxfp8",
    "mxfp6",
    "mxfp6_e3m2",
    "mxfp4",
    "nvfp4",
    "int8",
    "int4_g128",
    "int4_g128_sym",
]
CAST_IDS = ["fp32", "bf16", "fp16"]

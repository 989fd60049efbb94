"""Keys of DESIGN.md's JSON contract shared by the CLI and frontier tests."""

# every `estimate --json` document and every frontier point carries these
CONTRACT_KEYS = frozenset(
    {
        "ttft_ms",
        "tpot_ms",
        "tok_s_per_user",
        "output_tok_s_per_gpu",
        "total_tok_s_per_gpu",
        "num_gpus",
        "fits_in_memory",
        "memory_per_gpu_gb",
        "breakdown",
        "uncertainty",  # how far to trust the numbers (specs.uncertainty, schema 6)
    }
)
# a frontier point also names its plan and precision
POINT_KEYS = CONTRACT_KEYS | {"plan", "precision"}

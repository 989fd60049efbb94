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
# `estimate --json` with any request-simulation option carries a "simulation" section
# (api.simulation_section); ttft_ms, tpot_ms and e2e_ms each hold mean, p50, p90 and p99
SIMULATION_KEYS = frozenset(
    {
        "traffic",
        "feasible",
        "reason",
        "ttft_ms",
        "tpot_ms",
        "e2e_ms",
        "request_rate_per_s",
        "output_tok_s_per_gpu",
        "total_tok_s_per_gpu",
        "mean_in_flight",
        "goodput",
        "requests",
        "counted_requests",
        "warmup_requests",
        "preemptions",
        "rejected",
        "steps",
        "seed",
        "wall_s",
        "notes",
    }
)

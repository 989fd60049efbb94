"""``estimate``, ``models``, ``hardware``: one configuration and the bundled data."""

from __future__ import annotations

import click
from rich.markup import escape

from .. import (
    DisaggregatedPlan,
    ParallelPlan,
    Workload,
    apply_profile,
    bundled_hardware,
    bundled_models,
    hardware_template,
    load_hardware,
)
from .. import (
    estimate as estimate_config,
)
from ..explore import infeasible_text
from ..report import console, read_deployment, table, to_json, trust_text
from ._common import deployment_options, plan_options
from ._simulate import print_simulation, simulation_options, traffic_from

# options that --from reads from the deployment, so that giving one explicitly overrides it
FROM_OVERRIDES = (
    "model",
    "precision",
    "engine",
    "tp",
    "pp",
    "ep",
    "dp",
    "attention_dp",
    "cp",
    "num_gpus",
    "isl",
    "osl",
    "concurrency",
    "spec_tokens",
    "spec_acceptance",
)
DISAGG_OPTIONS = (
    "prefill_workers",
    "decode_workers",
    "prefill_tp",
    "prefill_pp",
    "prefill_ep",
    "prefill_attention_dp",
    "prefill_batch",
)


@click.command()
@click.option(
    "--model",
    "-m",
    default=None,
    help="bundled model id, config.json path, or HuggingFace id org/name[@revision] from the "
    "local cache (offline); required unless --from names the checkpoint",
)
@click.option(
    "--from",
    "sources",
    multiple=True,
    metavar="FILE|COMMAND",
    help="read a deployment (repeatable): a trtllm-serve / vllm serve / sglang.launch_server "
    "command line or script (+ its TensorRT-LLM options YAML), a Dynamo DynamoGraphDeployment "
    "YAML, and a benchmark command (vllm bench serve, sglang.bench_serving, genai-perf "
    "profile, TensorRT-LLM benchmark_serving); options given explicitly override it",
)
@click.option("--hardware", "-g", required=True, help="bundled GPU id or YAML/JSON path")
@click.option(
    "--precision",
    "-p",
    default=None,
    help="bf16, fp8, nvfp4, mxfp4, w4a16 (+FORMAT-ROLE overrides); default: the checkpoint's "
    "own precision when its config states one, else bf16",
)
@plan_options
@click.option(
    "--num-gpus", type=click.IntRange(min=1), default=None, help="deployment size; dp fills it"
)
@click.option(
    "--isl", type=click.IntRange(min=1), default=1024, show_default=True, help="input tokens"
)
@click.option(
    "--osl", type=click.IntRange(min=1), default=1024, show_default=True, help="output tokens"
)
@click.option(
    "--concurrency",
    "-c",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="concurrent requests per replica",
)
@click.option(
    "--engine",
    default=None,
    help=(
        "trtllm, vllm, sglang, generic, base or a constants YAML (default: trtllm on NVIDIA "
        "GPUs, vllm on AMD)"
    ),
)
@click.option(
    "--prefill-workers",
    type=click.IntRange(min=1),
    default=None,
    help="disaggregated: prefill workers (the plan flags above describe each decode worker)",
)
@click.option(
    "--decode-workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="disaggregated: decode workers",
)
@click.option(
    "--prefill-tp",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="disaggregated: prefill worker tp",
)
@click.option(
    "--prefill-pp",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="disaggregated: prefill worker pp",
)
@click.option(
    "--prefill-ep",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="disaggregated: prefill worker ep",
)
@click.option(
    "--prefill-attention-dp/--no-prefill-attention-dp",
    default=False,
    help="disaggregated: prefill attention-DP",
)
@click.option(
    "--prefill-batch",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="disaggregated: prompts a prefill worker batches",
)
@click.option("--json", "as_json", is_flag=True, help="print the JSON contract")
@deployment_options
@simulation_options
@click.pass_context
def estimate(
    ctx,
    model,
    sources,
    hardware,
    precision,
    tp,
    pp,
    ep,
    dp,
    attention_dp,
    cp,
    num_gpus,
    isl,
    osl,
    concurrency,
    engine,
    emulate,
    profile,
    spec_tokens,
    spec_acceptance,
    power_w,
    usd_per_gpu_hour,
    prefill_workers,
    decode_workers,
    prefill_tp,
    prefill_pp,
    prefill_ep,
    prefill_attention_dp,
    prefill_batch,
    as_json,
    **simulation,
):
    """Predict TTFT, TPOT and throughput for one configuration (aggregated, or disaggregated
    prefill/decode pools with --prefill-workers), or for a deployment read with --from.
    Any simulation option (--percentiles, --arrival-rate, --trace, ...) also replays requests
    through the engine's scheduler step by step: percentiles, throughput and goodput."""
    given = {k for k in ctx.params if ctx.get_parameter_source(k).name == "COMMANDLINE"}
    hw = load_hardware(hardware)
    if profile:
        hw = apply_profile(hw, profile)
    if emulate:
        hw = hw.with_overrides(emulate=True)
    dep = None
    if sources:
        clash = sorted(given & set(DISAGG_OPTIONS))
        if clash:
            raise click.UsageError(
                f"--{clash[0].replace('_', '-')} with --from: a deployment's prefill and decode "
                "workers come from its Dynamo YAML"
            )
        dep = read_deployment(
            sources, hw, explicit={k: ctx.params[k] for k in FROM_OVERRIDES if k in given}
        )
        args = dep.estimate_args()
        wl = args["workload"]
        traffic = traffic_from(
            {**ctx.params, "isl": wl.isl, "osl": wl.osl, "concurrency": wl.concurrency}, given
        )
        e = estimate_config(
            hardware=hw,
            power_w=power_w,
            usd_per_gpu_hour=usd_per_gpu_hour,
            traffic=traffic,
            **args,
        )
        isl, osl, concurrency = e.workload.isl, e.workload.osl, e.workload.concurrency
    else:
        if model is None:
            raise click.UsageError("--model is required (or --from a deployment naming it)")
        plan = ParallelPlan(tp=tp, pp=pp, ep=ep, dp=dp, attention_dp=attention_dp, cp=cp)
        if prefill_workers is not None:
            prefill = ParallelPlan(
                tp=prefill_tp, pp=prefill_pp, ep=prefill_ep, attention_dp=prefill_attention_dp
            )
            plan = DisaggregatedPlan(prefill, plan, prefill_workers, decode_workers, prefill_batch)
        traffic = traffic_from(ctx.params, given)
        if traffic is not None:  # the analytic estimate at the traffic's mean lengths
            isl = isl if "isl_dist" not in given else max(round(traffic.isl.mean), 1)
            osl = osl if "osl_dist" not in given else max(round(traffic.osl.mean), 1)
            if traffic.trace is not None:
                isl = max(round(float(traffic.trace.requests.isl.mean())), 1)
                osl = max(round(float(traffic.trace.requests.osl.mean())), 1)
        wl = Workload(isl=isl, osl=osl, concurrency=concurrency)
        e = estimate_config(
            model,
            hw,
            precision,
            plan,
            wl,
            engine=engine,
            num_gpus=num_gpus,
            spec_tokens=spec_tokens,
            spec_acceptance=spec_acceptance,
            power_w=power_w,
            usd_per_gpu_hour=usd_per_gpu_hour,
            traffic=traffic,
        )
    if as_json:
        doc = e.to_dict()
        if dep is not None:
            doc["deployment"] = dep.to_dict()
        click.echo(to_json(doc))
        if not e.feasible:
            raise SystemExit(1)
        return
    c = console()
    prec = f"{e.precision.id} ({e.precision_note})" if e.precision_note else e.precision.id
    c.print(
        f"[bold]{e.model.id}[/] on {e.num_gpus} x {e.hardware.id} ({e.plan.label()}), "
        f"{prec}, ISL/OSL {isl}/{osl}, concurrency {concurrency}"
        + (
            f", {spec_tokens} draft token{'s' * (spec_tokens != 1)} at {spec_acceptance:g} "
            "acceptance"
            if spec_tokens
            else ""
        )
        + (" (the analytic closed loop; the simulated traffic is below)" if traffic else "")
        + f", engine {e.engine.id}"
        + (
            " (physics defaults with sources; --engine generic|trtllm|trtllm-trt|vllm|sglang for "
            "fitted constants)"
            if e.engine.id == "default"
            else " (fitted constants)"
        )
    )
    if dep is not None:
        _print_deployment(c, dep.to_dict())
    if not e.feasible:
        why = infeasible_text(e.model, e.hardware, e.precision, e.engine, e.plan, e.reason,
                              e.max_concurrency, e.workload, spec_tokens)  # fmt: skip
        for note in (n for n in e.notes if not n.startswith("infeasible")):  # (what it loads)
            click.echo(f"note: {note}", err=True)
        click.echo(f"infeasible: {why}; no prediction for this configuration", err=True)
        raise SystemExit(1)
    c.print(
        table(
            "serving",
            [
                "TTFT ms",
                "TPOT ms",
                "tok/s/user",
                "out tok/s/GPU",
                "total tok/s/GPU",
                "mem/GPU GB",
                "weights GB",
                "KV GB",
                "max conc",
            ],
            [
                [
                    e.ttft_ms,
                    e.tpot_ms,
                    e.tok_s_per_user,
                    e.output_tok_s_per_gpu,
                    e.total_tok_s_per_gpu,
                    e.memory_per_gpu_gb,
                    e.weights_per_gpu_gb,
                    e.kv_cache_per_gpu_gb,
                    e.max_concurrency,
                ]
            ],
        )
    )
    for note in e.notes:
        c.print(f"[yellow]note:[/] {note}")
    if e.simulation is not None:
        print_simulation(c, e.simulation)
    for metric, label in (("ttft", "TTFT"), ("tpot", "TPOT"), ("throughput", "throughput")):
        band = e.uncertainty["metrics"][metric]
        c.print(
            "trust: " + trust_text(label, band, e.uncertainty["class"]),
            highlight=False,
            soft_wrap=True,
        )
    ec = e.economics
    if ec:
        usd = ec["usd_per_million_output_tokens"]
        c.print(
            f"power and cost: {ec['output_tok_s_per_mw']:,.0f} output tok/s per MW at "
            f"{ec['power_w_per_gpu']:,.0f} W per GPU ({ec['power_source']})"
            + (
                f"; ${usd:,.3f} per million output tokens at ${ec['usd_per_gpu_hour']:g}/GPU-hour"
                if usd is not None
                else ""
            )
        )
    acc = e.accuracy
    if acc:
        val = f"{acc['value']:+.2f} points" if acc["value"] is not None else "unknown"
        c.print(
            f"accuracy ({acc['kind']}): {val} vs the checkpoint's {acc['baseline']}; "
            f"{acc['source']}" + (f"; checkpoint {acc['checkpoint']}" if acc["checkpoint"] else "")
        )
    ms = e.mixer_savings
    if ms:

        def less(x: float, base: float) -> str:
            return f"{x / base - 1:+.0%}" if base > 0 else "n/a"

        c.print(
            f"token mixers: {ms['layers']}; against {ms['baseline']} at {ms['context_tokens']:,.0f}"
            f" tokens: KV/state per sequence {ms['kv_state_bytes_per_sequence'] / 1e9:.3g} GB vs "
            f"{ms['baseline_kv_state_bytes_per_sequence'] / 1e9:.3g} GB ("
            f"{less(ms['kv_state_bytes_per_sequence'], ms['baseline_kv_state_bytes_per_sequence'])}"
            f"), decode attention {ms['decode_attention_s'] * 1e3:.3g} ms vs "
            f"{ms['baseline_decode_attention_s'] * 1e3:.3g} ms ("
            f"{less(ms['decode_attention_s'], ms['baseline_decode_attention_s'])}), TPOT "
            f"{ms['tpot_ms']:.3g} vs {ms['baseline_tpot_ms']:.3g} ms, max concurrency "
            f"{ms['max_concurrency']:,} vs {ms['baseline_max_concurrency']:,}"
        )
    rows = [
        [
            ph,
            v["attention"] * 1e3,
            v["ffn"] * 1e3,
            v["communication"] * 1e3,
            v["other"] * 1e3,
            v["total"] * 1e3,
        ]
        for ph, v in e.breakdown.items()
    ]
    c.print(
        table(
            "step time breakdown (ms)",
            ["phase", "attention", "ffn", "communication", "other", "total"],
            rows,
        )
    )
    op_rows = [
        [o["phase"], o["op"], o["class"], o["time_s"] * 1e3, o["flops"] / 1e9, o["bound"]]
        for o in e.ops
    ]
    c.print(
        table(
            "ops (decode step, one prefill chunk)",
            ["phase", "op", "class", "ms", "GFLOP", "bound"],
            op_rows,
        )
    )
    a = e.assumptions()
    share = a["grouped_gemm_efficiency"]["value"]
    grouped = f" (MoE expert GEMMs x {share:.2f})" if e.model.moe and share < 1 else ""
    grouped += f", MoE kernels {a['moe_kernel_path']}" if a["moe_kernel_path"] else ""
    pools = [getattr(e.plan, k, e.plan) for k in ("prefill", "decode")]
    adp = e.model.moe and any(p.attention_dp and p.tp > 1 for p in pools)
    grouped += f", MoE dispatch {a['moe_dispatch']}" if adp else ""
    c.print(
        f"assumptions: peak {a['peak_flops_per_s'] / 1e12:.0f} TFLOP/s ({a['compute_class']}), "
        f"GEMM efficiency {a['gemm_efficiency']['value']:.3f}{grouped} "
        f"{escape('[' + a['gemm_efficiency']['source'] + ']')}, "
        f"HBM {a['hbm_bytes_per_s'] / 1e12:.2f} TB/s x {e.hardware.hbm_efficiency.value} x "
        f"{e.engine.hbm_efficiency_scale}, per-step overhead {e.engine.step_overhead_s * 1e3:.2f} "
        f"ms, per-kernel {e.engine.kernel_overhead_s * 1e6:.1f} us"
    )
    for item in a["calibration"]:
        c.print(f"calibration: {item}")


def _print_deployment(c, d) -> None:
    """What --from read: each setting mapped, ignored (and why) or overridden."""
    c.print(f"deployment ({', '.join(d['sources'])}): engine {d['engine']}, model {d['model']}")
    for x in d["mapped"]:
        c.print(f"  mapped: {x['setting']} -> {x['maps_to']}", soft_wrap=True)
    for x in d["ignored"]:
        c.print(f"  ignored: {x['setting']}: {x['reason']}", soft_wrap=True)
    for x in d["overridden"]:
        c.print(f"  overridden by --{x['setting'].replace('_', '-')} {x['value']}", soft_wrap=True)
    for note in d["notes"]:
        c.print(f"  note: {note}", soft_wrap=True)


@click.command()
@click.option("--json", "as_json", is_flag=True)
def models(as_json):
    """List bundled models with parameter counts."""
    ms = [m.summary() for m in bundled_models().values()]
    if as_json:
        click.echo(to_json({"models": ms}))
        return
    console().print(
        table(
            "bundled models",
            ["id", "model_type", "total B", "active B", "layers", "source"],
            [
                [
                    m["id"],
                    m["model_type"],
                    m["total_params"] / 1e9,
                    m["active_params"] / 1e9,
                    m["layers"],
                    m["source"][:60],
                ]
                for m in ms
            ],
        )
    )


@click.command()
@click.option("--json", "as_json", is_flag=True)
@click.option("--template", is_flag=True, help="print a documented hardware file to start from")
def hardware(as_json, template):
    """List bundled GPUs with their main figures (--template: a hardware file to start from)."""
    if template:
        click.echo(hardware_template(), nl=False)
        return
    hs = [h.summary() for h in bundled_hardware().values()]
    if as_json:
        click.echo(to_json({"hardware": hs}))
        return
    console(140).print(
        table(
            "bundled hardware",
            [
                "id",
                "name",
                "BF16 TF",
                "FP8 TF",
                "FP4 TF",
                "HBM GiB",
                "HBM GB",
                "usable GiB",
                "TB/s",
                "link GB/s",
                "domain",
            ],
            [
                [
                    h["id"],
                    h["name"],
                    h["bf16_tflops"],
                    h["fp8_tflops"],
                    h["fp4_tflops"],
                    h["hbm_gib"],
                    h["hbm_gb"],
                    h["device_memory_gib"],
                    h["hbm_tb_s"],
                    h["scaleup_gb_s_per_direction"],
                    h["scaleup_domain_size"],
                ]
                for h in hs
            ],
        )
    )

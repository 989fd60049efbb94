"""Command-line interface: each command parses, makes one library call and renders.

User mistakes (any :class:`CodesignError`) print one line and exit with code 2.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from . import api
from .calibrate import apply_profile, resolve_hardware
from .errors import CodesignError
from .render import console, table, to_json
from .specs.hardware import bundled_hardware
from .specs.model import bundled_models
from .specs.plan import ParallelPlan
from .specs.workload import Workload


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CodesignError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(2)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="llm-codesign")
def main() -> None:
    """llm-codesign: predict, explain and co-design LLM serving on GPUs."""


def plan_options(f: Callable) -> Callable:
    for opt in reversed([
        click.option("--tp", type=click.IntRange(min=1), default=1, show_default=True, help="tensor parallel size"),
        click.option("--pp", type=click.IntRange(min=1), default=1, show_default=True, help="pipeline parallel size"),
        click.option("--ep", type=click.IntRange(min=1), default=1, show_default=True, help="expert parallel size (divides tp)"),
        click.option("--dp", type=click.IntRange(min=1), default=1, show_default=True, help="replicas"),
        click.option("--attention-dp/--no-attention-dp", default=False, help="data-parallel attention over the tp group"),
        click.option("--cp", type=click.IntRange(min=1), default=1, show_default=True, help="Helix KV-parallel attention size (divides tp)"),
    ]):
        f = opt(f)
    return f


@main.command()
@click.option("--model", "-m", required=True, help="bundled model id or config.json path")
@click.option("--hardware", "-g", required=True, help="bundled GPU id or YAML/JSON path")
@click.option("--precision", "-p", default="bf16", show_default=True, help="bf16, fp8, nvfp4, mxfp4, w4a16 (+FORMAT-ROLE overrides)")
@plan_options
@click.option("--num-gpus", type=click.IntRange(min=1), default=None, help="deployment size; dp fills it")
@click.option("--isl", type=click.IntRange(min=1), default=1024, show_default=True, help="input tokens")
@click.option("--osl", type=click.IntRange(min=1), default=1024, show_default=True, help="output tokens")
@click.option("--concurrency", "-c", type=click.IntRange(min=1), default=1, show_default=True, help="concurrent requests per replica")
@click.option("--engine", default=None, help="trtllm, vllm, sglang or a constants YAML (default: default)")
@click.option("--emulate", is_flag=True, help="run formats the GPU lacks at the nearest native rate (e.g. NVFP4 on Hopper via FP8)")
@click.option("--profile", default=None, type=click.Path(dir_okay=False), help="calibration profile of this GPU to overlay (from `calibrate`)")
@click.option("--spec-tokens", type=click.IntRange(0, 16), default=0, show_default=True, help="speculative / MTP draft tokens per step")
@click.option("--spec-acceptance", type=click.FloatRange(0.0, 1.0), default=0.0, show_default=True, help="acceptance rate of each draft token")
@click.option("--json", "as_json", is_flag=True, help="print the JSON contract")
def estimate(model, hardware, precision, tp, pp, ep, dp, attention_dp, cp, num_gpus, isl, osl, concurrency, engine, emulate, profile, spec_tokens, spec_acceptance, as_json):
    """Predict TTFT, TPOT and throughput for one configuration."""
    plan = ParallelPlan(tp=tp, pp=pp, ep=ep, dp=dp, attention_dp=attention_dp, cp=cp)
    wl = Workload(isl=isl, osl=osl, concurrency=concurrency)
    hw = resolve_hardware(hardware)
    if profile:
        hw = apply_profile(hw, profile)
    if emulate:
        hw = hw.with_overrides(emulate=True)
    e = api.estimate(model, hw, precision, plan, wl, engine=engine, num_gpus=num_gpus,
                     spec_tokens=spec_tokens, spec_acceptance=spec_acceptance)
    if as_json:
        click.echo(to_json(e.to_dict()))
        return
    c = console()
    c.print(f"[bold]{e.model.id}[/] on {e.num_gpus} x {e.hardware.id} ({e.plan.label()}), {e.precision.id}, "
            f"ISL/OSL {isl}/{osl}, concurrency {concurrency}, engine {e.engine.id}"
            + (" (physics defaults with sources; --engine generic|trtllm|trtllm-trt|vllm|sglang for fitted constants)" if e.engine.id == "default" else " (fitted constants)"))
    if not e.feasible:
        c.print(f"[red]infeasible: {e.reason}[/] (max concurrency that fits: {e.max_concurrency})")
    c.print(table("serving", ["TTFT ms", "TPOT ms", "tok/s/user", "out tok/s/GPU", "total tok/s/GPU", "mem/GPU GB", "weights GB", "KV GB", "max conc"],
                  [[e.ttft_ms, e.tpot_ms, e.tok_s_per_user, e.output_tok_s_per_gpu, e.total_tok_s_per_gpu, e.memory_per_gpu_gb, e.weights_per_gpu_gb, e.kv_cache_per_gpu_gb, e.max_concurrency]]))
    rows = [[ph, v["attention"] * 1e3, v["ffn"] * 1e3, v["communication"] * 1e3, v["other"] * 1e3, v["total"] * 1e3] for ph, v in e.breakdown.items()]
    c.print(table("step time breakdown (ms)", ["phase", "attention", "ffn", "communication", "other", "total"], rows))
    op_rows = [[o["phase"], o["op"], o["class"], o["time_s"] * 1e3, o["flops"] / 1e9, o["bound"]] for o in e.ops]
    c.print(table("ops (decode step, one prefill chunk)", ["phase", "op", "class", "ms", "GFLOP", "bound"], op_rows))
    a = e.assumptions()
    c.print(f"assumptions: peak {a['peak_flops_per_s']/1e12:.0f} TFLOP/s ({a['compute_class']}), GEMM efficiency {a['gemm_efficiency']['value']:.3f} "
            f"[{a['gemm_efficiency']['source']}], HBM {a['hbm_bytes_per_s']/1e12:.2f} TB/s x {e.hardware.hbm_efficiency.value} x {e.engine.hbm_efficiency_scale}, "
            f"per-step overhead {e.engine.step_overhead_s*1e3:.2f} ms, per-kernel {e.engine.kernel_overhead_s*1e6:.1f} us")
    for item in a["calibration"]:
        c.print(f"calibration: {item}")


@main.command()
@click.option("--json", "as_json", is_flag=True)
def models(as_json):
    """List bundled models with parameter counts."""
    ms = [m.summary() for m in bundled_models().values()]
    if as_json:
        click.echo(to_json({"models": ms}))
        return
    console().print(table("bundled models", ["id", "model_type", "total B", "active B", "source"],
                          [[m["id"], m["model_type"], m["total_params"] / 1e9, m["active_params"] / 1e9, m["source"][:60]] for m in ms]))


@main.command()
@click.option("--json", "as_json", is_flag=True)
def hardware(as_json):
    """List bundled GPUs with their main figures."""
    hs = [h.summary() for h in bundled_hardware().values()]
    if as_json:
        click.echo(to_json({"hardware": hs}))
        return
    console(140).print(table("bundled hardware", ["id", "name", "BF16 TF", "FP8 TF", "FP4 TF", "HBM GB", "TB/s", "link GB/s", "domain"],
                             [[h["id"], h["name"], h["bf16_tflops"], h["fp8_tflops"], h["fp4_tflops"], h["hbm_gb"], h["hbm_tb_s"], h["scaleup_gb_s_per_direction"], h["scaleup_domain_size"]] for h in hs]))


def _register_optional() -> None:
    """Commands living in other modules register here (keeps this file thin)."""
    import importlib

    for mod, name in (
        ("llm_codesign.quant.cli", "quant"),
        ("llm_codesign.commands.frontier", "frontier"),
        ("llm_codesign.commands.advise", "gemm"),
        ("llm_codesign.commands.advise", "lint"),
        ("llm_codesign.commands.advise", "regimes"),
        ("llm_codesign.commands.advise", "search"),
        ("llm_codesign.commands.calibrate", "calibrate"),
        ("llm_codesign.commands.validate", "validate"),
        ("llm_codesign.commands.validate", "calibrate_fit"),
    ):
        main.add_command(getattr(importlib.import_module(mod), name))


_register_optional()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""The request-simulation options of ``estimate`` (arrivals, length distributions, a trace, a
shared prefix, SLA, seed) and the table of the simulated percentiles."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from .. import Traffic, parse_length_dist, read_trace
from ..report import table

SIMULATION_OPTIONS = (
    "arrival_rate",
    "burst",
    "trace",
    "isl_dist",
    "osl_dist",
    "num_requests",
    "prefix_len",
    "percentiles",
    "seed",
    "warmup",
    "clients_start",
    "ttft_slo_ms",
    "tpot_slo_ms",
)


def simulation_options(f: Callable) -> Callable:
    """``estimate``'s request-simulation options (any of them runs the simulator)."""
    for opt in reversed(
        [
            click.option(
                "--percentiles",
                is_flag=True,
                help="simulate requests step by step and print mean, p50, p90 and p99 of TTFT, "
                "TPOT and E2E (a closed loop at --concurrency unless an arrival is given)",
            ),
            click.option(
                "--arrival-rate",
                type=click.FloatRange(min=0.0, min_open=True, max=1e9),
                default=None,
                help="open-loop Poisson arrivals at this many requests/s (the whole "
                "deployment; replicas share them round robin)",
            ),
            click.option("--burst", is_flag=True, help="every request arrives at once (t = 0)"),
            click.option(
                "--trace",
                type=click.Path(dir_okay=False),
                default=None,
                help="replay a trace: JSONL or CSV with arrival_s, isl, osl (optional "
                "prefix_id, prefix_len)",
            ),
            click.option(
                "--isl-dist",
                default=None,
                metavar="DIST",
                help="prompt lengths: fixed:N, uniform:LO:HI, normal:MEAN:STD, "
                "lognormal:MEAN:STD or file:PATH (default: fixed --isl)",
            ),
            click.option(
                "--osl-dist",
                default=None,
                metavar="DIST",
                help="output lengths, as --isl-dist (default: fixed --osl)",
            ),
            click.option(
                "--num-requests",
                type=click.IntRange(1, 10_000_000),
                default=None,
                help="requests simulated (default: 2000, and a closed loop at least 10 per "
                "client, the rounds its statistics need to settle)",
            ),
            click.option(
                "--prefix-len",
                type=click.IntRange(min=0),
                default=0,
                show_default=True,
                help="prompt tokens every request shares (prefix caching: computed once, "
                "held once in the KV cache); 0: off",
            ),
            click.option(
                "--seed",
                type=click.IntRange(0, 2**63 - 1),
                default=0,
                show_default=True,
                help="seed of the simulation's random draws",
            ),
            click.option(
                "--clients-start",
                type=click.Choice(Traffic.CLIENT_STARTS),
                default="spread",
                show_default=True,
                help="a closed loop's clients: spread over one request cycle (a loop that has "
                "run a while) or together, as a benchmark client starts them (its start-up "
                "waves counted: no warmup left out by default)",
            ),
            click.option(
                "--warmup",
                type=click.IntRange(min=0),
                default=None,
                help="leading requests left out of the statistics (default: a fifth of a "
                "closed loop's, none of an open loop's)",
            ),
            click.option(
                "--ttft-slo-ms",
                type=click.FloatRange(min=0.0, min_open=True, max=1e9),
                default=None,
                help="SLA on TTFT for goodput (ms)",
            ),
            click.option(
                "--tpot-slo-ms",
                type=click.FloatRange(min=0.0, min_open=True, max=1e9),
                default=None,
                help="SLA on TPOT for goodput (ms)",
            ),
        ]
    ):
        f = opt(f)
    return f


def traffic_from(params: dict[str, Any], given: set[str]) -> Traffic | None:
    """The traffic the options describe, or None when no simulation option was given."""
    if not (given & set(SIMULATION_OPTIONS)):
        return None
    arrivals = [k for k in ("arrival_rate", "burst", "trace") if k in given and params[k]]
    if len(arrivals) > 1:
        a, b = (f"--{k.replace('_', '-')}" for k in arrivals[:2])
        raise click.UsageError(f"{a} and {b} are two arrival processes: give one")
    if params["trace"] and given & {"isl_dist", "osl_dist", "num_requests"}:
        raise click.UsageError(
            "--trace gives each request's lengths and the request count: drop --isl-dist, "
            "--osl-dist and --num-requests"
        )
    trace = read_trace(params["trace"], params["prefix_len"]) if params["trace"] else None
    isl = parse_length_dist(params["isl_dist"] or f"fixed:{params['isl']}", "--isl-dist")
    osl = parse_length_dist(params["osl_dist"] or f"fixed:{params['osl']}", "--osl-dist")
    arrival = (
        "trace"
        if trace
        else "poisson"
        if params["arrival_rate"]
        else "burst"
        if params["burst"]
        else "closed"
    )
    return Traffic(
        arrival=arrival,
        clients=params["concurrency"],
        rate_per_s=params["arrival_rate"] or 0.0,
        num_requests=params["num_requests"],
        isl=isl,
        osl=osl,
        prefix_len=params["prefix_len"],
        trace=trace,
        seed=params["seed"],
        warmup=params["warmup"],
        clients_start=params["clients_start"],
        ttft_slo_ms=params["ttft_slo_ms"],
        tpot_slo_ms=params["tpot_slo_ms"],
    )


def print_simulation(c: Any, sim: dict[str, Any]) -> None:
    """The simulated distributions, throughput and goodput."""
    tr = sim["traffic"]
    arrival = tr["arrival"]
    if arrival == "closed":
        how = f"closed loop, {tr['clients']} clients per replica starting {tr['clients_start']}"
    elif arrival == "poisson":
        how = f"Poisson arrivals at {tr['rate_per_s']:g} req/s"
    elif arrival == "burst":
        how = "every request at once"
    else:
        how = f"trace {tr['trace']}"
    lengths = f", ISL {tr['isl']}, OSL {tr['osl']}" if tr["isl"] else ""
    prefix = f", shared prefix {tr['prefix_len']} tokens" if tr["prefix_len"] else ""
    c.print(
        f"simulated: {sim['requests']:,} requests ({sim['counted_requests']:,} counted), {how}"
        f"{lengths}{prefix}, seed {tr['seed']}",
        highlight=False,
        soft_wrap=True,
    )
    if not sim["feasible"]:
        c.print(f"simulation: infeasible: {sim['reason']}")
        return
    rows = []
    for key, label in (("ttft_ms", "TTFT ms"), ("tpot_ms", "TPOT ms"), ("e2e_ms", "E2E ms")):
        d = sim[key]
        rows.append([label, d["mean"], d["p50"], d["p90"], d["p99"]])
    c.print(table("simulated latency", ["metric", "mean", "p50", "p90", "p99"], rows))
    c.print(
        f"simulated throughput: {sim['request_rate_per_s']:,.3g} req/s, "
        f"{sim['output_tok_s_per_gpu']:,.0f} out tok/s/GPU, {sim['mean_in_flight']:,.1f} "
        f"requests in flight on average, {sim['preemptions']:,} preemptions",
        highlight=False,
    )
    g = sim["goodput"]
    if g["share"] is not None:
        slo = " and ".join(
            f"{name} <= {g[k]:g} ms"
            for k, name in (("ttft_slo_ms", "TTFT"), ("tpot_slo_ms", "TPOT"))
            if g[k] is not None
        )
        c.print(
            f"goodput ({slo}): {g['share']:.1%} of requests, {g['request_rate_per_s']:,.3g} "
            f"req/s, {g['output_tok_s_per_gpu']:,.0f} out tok/s/GPU",
            highlight=False,
        )
    for note in sim["notes"]:
        c.print(f"[yellow]note:[/] {note}")

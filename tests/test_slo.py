"""Latency targets as percentiles (issue 18, ``frontier --slo p99``): the best point is the
highest-throughput one whose simulated percentile meets the targets."""

from __future__ import annotations

import numpy as np
import pytest

from llm_codesign import load_engine, load_hardware, load_model, parse_precision
from llm_codesign.errors import SpecError
from llm_codesign.explore import frontier
from llm_codesign.serving.simulate import simulate
from llm_codesign.specs.traffic import Traffic, fixed

KW = dict(num_gpus=1, isl=1024, osl=256, precision="fp8", workers=1, progress=False)
TTFT_MS, TPOT_MS = 300.0, 30.0


@pytest.fixture(scope="module")
def searches():
    hw = load_hardware("h100-sxm")
    mean = frontier("llama-3.1-8b", hw, ttft_ms=TTFT_MS, tpot_ms=TPOT_MS, **KW)
    p99 = frontier("llama-3.1-8b", hw, ttft_ms=TTFT_MS, tpot_ms=TPOT_MS, slo="p99", **KW)
    return mean, p99


def test_the_p99_best_meets_the_targets_when_simulated_again(searches):
    _, f = searches
    assert f.best is not None and f.slo["statistic"] == "p99"
    p = f.point_dict(f.best)
    # its means meet the targets too (a percentile above the median is at least the mean)
    assert p["ttft_ms"] <= TTFT_MS and p["tpot_ms"] <= TPOT_MS
    clients = int(round(p["concurrency"]))
    r = simulate(
        load_model("llama-3.1-8b"),
        load_hardware("h100-sxm"),
        parse_precision("fp8"),
        load_engine(None),
        Traffic(clients=clients, num_requests=max(2000, 10 * clients), isl=fixed(1024),
                osl=fixed(256)),
        tp=p["plan"]["tp"],
    )  # fmt: skip
    assert r.summary["ttft_ms"]["p99"] <= TTFT_MS
    assert r.summary["tpot_ms"]["p99"] <= TPOT_MS
    assert r.summary["ttft_ms"]["p99"] >= r.summary["ttft_ms"]["mean"]


def test_every_higher_throughput_candidate_was_simulated_and_missed(searches):
    mean, f = searches
    checked = f.slo["checked"]
    thr = [f.points["output_tok_s_per_gpu"][r["point"]] for r in checked]
    assert thr == sorted(thr, reverse=True)  # highest throughput first
    assert [r["met"] for r in checked] == [False] * (len(checked) - 1) + [True]
    for r in checked[:-1]:
        assert r["ttft_ms"] > TTFT_MS or r["tpot_ms"] > TPOT_MS
    # a percentile target is at least as strict as the mean one: never more throughput
    best_mean = mean.points["output_tok_s_per_gpu"][mean.best]
    assert f.points["output_tok_s_per_gpu"][f.best] <= best_mean
    assert (
        checked[0]["point"] == int(np.flatnonzero(f.points["output_tok_s_per_gpu"] == best_mean)[0])
        or len(checked) >= 1
    )


def test_mean_targets_need_no_simulation_and_bad_statistics_are_refused(searches):
    mean, _ = searches
    assert mean.slo is None and mean.to_dict()["slo"] is None
    with pytest.raises(SpecError, match="allowed: mean, p50, p90, p99"):
        frontier("llama-3.1-8b", "h100-sxm", slo="p42", **KW)

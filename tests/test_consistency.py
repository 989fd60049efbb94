"""validate.consistency: closed-loop runs that contradict their own concurrency sweep. Bounds
checked by hand, the greedy removal on hand-made sweeps, a property (no sweep a physical closed
loop produces is flagged), and the runs' rows marked by validate and left out of the fit."""

import importlib
import json
from dataclasses import replace

from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from test_validate import row, write_csv

from llm_codesign.calibrate.fit import load_rows
from llm_codesign.cli import main
from llm_codesign.validate import validate

consistency = importlib.import_module("llm_codesign.validate.consistency")
breaks_bounds = consistency.breaks_bounds
contradicting_runs = consistency.contradicting_runs


def test_bounds_by_hand():
    # TPOT falls: 4.7 ms at 512 clients < 0.75 x 9.7 ms at 64 = 7.275
    assert breaks_bounds(64, 9.7, 512, 4.7)
    assert breaks_bounds(512, 4.7, 64, 9.7)  # (either order)
    # a plateau is no contradiction (an engine's batch limit): 14.8 ms at 512 against 14.4 at 64
    assert not breaks_bounds(64, 14.4, 512, 14.8)
    # TPOT grows faster than the clients: 41.9 ms at 2 > 1.25 x 2 x 8.1 = 20.25 ms at 1
    assert breaks_bounds(1, 8.1, 2, 41.9)
    # in proportion is allowed: 2 x 8.1 = 16.2 ms at 2 clients
    assert not breaks_bounds(1, 8.1, 2, 16.2)
    # the edges of the tolerance: 0.75 x 10 = 7.5 and 1.25 x 4 x 10 = 50
    assert not breaks_bounds(8, 10.0, 32, 7.5) and breaks_bounds(8, 10.0, 32, 7.49)
    assert not breaks_bounds(8, 10.0, 32, 50.0) and breaks_bounds(8, 10.0, 32, 50.01)
    assert not breaks_bounds(8, 10.0, 8, 1.0)  # one concurrency: no pair


def sweep(pairs, key="s"):
    return [(key, c, t) for c, t in pairs]


def test_the_run_that_breaks_most_pairs_goes_first():
    # AIConfigurator's vLLM gpt-oss-120b, H100, TP4, 1k/1k: 15.9 ms at 32 clients breaks the
    # bounds with 16 (> 1.25 x 2 x 5.8 = 14.5), 64 (9.7 < 0.75 x 15.9) and 512 (4.7); once it is
    # gone, 64 and 512 break only each other: the sweep cannot tell which is wrong
    pts = sweep(((4, 4.0), (8, 4.7), (16, 5.8), (32, 15.9), (64, 9.7), (512, 4.7)))
    flagged = contradicting_runs(pts)
    assert list(flagged) == [("s", 32)]
    assert "15.9 ms at 32 clients" in flagged[("s", 32)]
    assert "5.8 ms at 16" in flagged[("s", 32)] and "4.7 ms at 512" in flagged[("s", 32)]


def test_a_run_faster_than_its_whole_sweep_is_flagged():
    # 3.6 ms at 512 clients, the TPOT of 4: below 0.75 x each of 8..64 clients' TPOT
    pts = sweep(((4, 3.6), (8, 4.9), (16, 4.6), (32, 5.5), (64, 7.1), (512, 3.6)))
    assert list(contradicting_runs(pts)) == [("s", 512)]


def test_growth_faster_than_the_clients_is_flagged():
    pts = sweep(((1, 8.1), (2, 41.9), (8, 27.6), (16, 41.5), (32, 28.6), (64, 38.0)))
    assert ("s", 2) in contradicting_runs(pts)


def test_ambiguous_or_short_sweeps_flag_nothing():
    assert contradicting_runs(sweep(((64, 9.7), (512, 4.7)))) == {}  # two runs
    # three runs, the pair (64, 512) breaks a bound, 4 agrees with both: no telling which
    assert contradicting_runs(sweep(((4, 4.0), (64, 9.7), (512, 4.7)))) == {}


def test_sweeps_are_kept_apart_and_repeated_runs_take_their_median():
    pts = sweep(((4, 4.0), (8, 4.7), (16, 5.8), (32, 4.0)), "a") + sweep(
        ((4, 4.0), (8, 4.7), (16, 5.8), (16, 6.0), (16, 30.0), (32, 6.5)), "b"
    )
    # "a": 4.0 ms at 32 is below 0.75 x 5.8 at 16 only: one pair, ambiguous; "b": 16's median
    # is 6.0 ms, consistent
    assert contradicting_runs(pts) == {}


@settings(max_examples=200, deadline=None)
@given(
    a=st.floats(1.0, 50.0),
    b=st.floats(0.0, 5.0),
    p=st.floats(0.0, 1.0),
    loads=st.lists(
        st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128, 256, 512]),
        min_size=3,
        max_size=10,
        unique=True,
    ),  # fmt: skip
    noise=st.lists(st.floats(-0.1, 0.1), min_size=10, max_size=10),
)
def test_no_physical_closed_loop_is_flagged(a, b, p, loads, noise):
    # TPOT = a + b x C^p, 0 <= p <= 1: non-decreasing and at most proportional to C; with
    # +/-10% noise each bound keeps a margin (0.9 / 1.1 > 0.75, 1.1 / 0.9 < 1.25)
    pts = [("s", c, (a + b * c**p) * (1.0 + e)) for c, e in zip(loads, noise)]
    assert contradicting_runs(pts) == {}


def _row(conc, metric, value):
    return row(
        gpu="H100 SXM 80GB",
        framework="vllm 0.11.2",
        concurrency_or_batch=str(conc),
        metric=metric,
        value=str(value),
    )


def test_validate_marks_the_runs_and_the_fit_leaves_them_out(tmp_path):
    tpot = {4: 8.0, 8: 8.6, 16: 9.5, 32: 11.0, 64: 14.0, 512: 5.0}
    rows = [_row(c, "tpot_ms", t) for c, t in tpot.items()]
    rows += [_row(c, "ttft_ms", 100.0) for c in tpot]
    path = write_csv(tmp_path / "sweep.csv", rows)
    rep = validate(path)
    # every row priced and kept as measured; the 512-client run (TPOT 5.0 ms, below 0.75 x every
    # TPOT from 16 clients up) has both of its rows' notes ending in the reason, no other row has
    assert len(rep.rows) == 12 and rep.skipped == []
    marked = [r for r in rep.rows if "concurrency sweep" in r["note"]]
    assert sorted((r["load"], r["metric"]) for r in marked) == [
        (512, "tpot_ms"),
        (512, "ttft_ms"),
    ]
    assert "5 ms at 512 clients" in marked[0]["note"]
    ((what, count),) = [(m["reason"], m["count"]) for m in rep.marked]
    assert count == 2 and what.startswith(
        "s: llama-3.1-8b on h100-sxm, vllm tp1 pp1 ep1, 1024/1024:"
    )
    assert what.endswith(marked[0]["note"].rsplit("; ", 1)[-1])
    out = CliRunner().invoke(main, ["validate", "--data", str(path)], terminal_width=200)
    assert out.exit_code == 0 and "runs that contradict their own concurrency sweep" in out.output
    # the JSON keeps its shape: the reason travels in the rows' notes
    doc = json.loads(CliRunner().invoke(main, ["validate", "--data", str(path), "--json"]).output)
    assert set(doc) == {"schema_version", "rows", "skipped", "summary"}
    assert sum("concurrency sweep" in r["note"] for r in doc["rows"]) == 2
    fitted = load_rows([path], "vllm")
    assert len(fitted) == 10 and all(r.load != 512 for r in fitted)


def test_two_releases_of_an_engine_are_two_sweeps(tmp_path):
    # the sweep above with its 512-client run measured on another vLLM release (AIConfigurator's
    # gpt-oss-120b H100 campaign of 2026-04-06: 4-64 clients on 0.18.0, 512 on 0.11.2): no
    # bound relates runs of two engines, so nothing is marked and the fit keeps every row
    tpot = {4: 8.0, 8: 8.6, 16: 9.5, 32: 11.0, 64: 14.0, 512: 5.0}
    rows = [
        dict(_row(c, m, t if m == "tpot_ms" else 100.0), framework=release)
        for c, t in tpot.items()
        for m in ("tpot_ms", "ttft_ms")
        for release in ["vllm 0.11.2" if c == 512 else "vllm  0.18.0"]
    ]
    path = write_csv(tmp_path / "two.csv", rows)
    rep = validate(path)
    assert len(rep.rows) == 12 and rep.marked == []
    assert len(load_rows([path], "vllm")) == 12
    # the release is read as written, less case and spacing: "vLLM 0.18.0" is "vllm  0.18.0"
    (at_64,) = [r for r in load_rows([path], "vllm") if r.load == 64 and r.metric == "tpot_ms"]
    assert consistency.sweep_key("s", at_64).release == "vllm 0.18.0"
    spelled = replace(at_64, raw=dict(at_64.raw, framework=" vLLM 0.18.0"))
    assert consistency.sweep_key("s", spelled) == consistency.sweep_key("s", at_64)

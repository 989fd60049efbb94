"""Sweeps (issue 16): the YAML spec's validation, the Parquet layout and its row counts, the
frontier rows against the points, resumable atomic shards, and equal results from every
executor (inline, process pool, Ray)."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from llm_codesign import SpecError, UnsupportedError, load_sweep, run_sweep
from llm_codesign.cli import main
from llm_codesign.explore.grid import concurrency_grid

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
ds = pytest.importorskip("pyarrow.dataset")

ROOT = Path(__file__).resolve().parents[1]

# 2 models (one a generated variant) x 2 GPUs x 2 precisions x 2 workloads = 16 cells; one GPU
# (one plan: TP1) and a grid of 1 point per octave up to max_batch 8: concurrency 1, 2, 4, 8
SMALL = """
models:
  - variants_of: llama-3.1-8b
    hidden_scales: [1.125]
    layer_scales: [1.0]
    max_variants: 1
hardware: [h100-sxm, h200-sxm]
precisions: [bf16, fp8]
workloads:
  - {name: chat, isl: 1024, osl: 256}
  - {isl: 4096, osl: 512}
plans: {num_gpus: 1, points_per_octave: 1, max_batch: 8}
"""
SMALL_AXES = {
    "hardware": ["h100-sxm", "h200-sxm"],
    "precision": ["bf16", "fp8"],
    "workload": ["chat", "4096x512"],
}


def write_spec(tmp_path: Path, text: str, name: str = "spec.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def read(out: Path, what: str):
    """A dataset of the output (hive partitions as columns), rows in a canonical order."""
    if what == "summary":
        t = pq.read_table(out / "summary.parquet")
    else:
        t = ds.dataset(out / what, format="parquet", partitioning="hive").to_table()
    keys = [c for c in ("model", "hardware", "precision", "workload", "plan_id", "concurrency")]
    keys += [c for c in ("mode", "tok_s_per_user") if c in t.column_names]
    return t.sort_by([(k, "ascending") for k in keys if k in t.column_names])


def files(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())


def assert_same_results(a: Path, b: Path) -> None:
    for what in ("points", "frontier", "summary"):
        ta, tb = read(a, what), read(b, what)
        assert ta.num_rows > 0
        assert ta.equals(tb), what
    assert [f for f in files(a) if f != ".lock"] == [f for f in files(b) if f != ".lock"]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("small")
    spec = write_spec(d, SMALL)
    r = run_sweep(spec, d / "out", workers=1, progress=False)
    return spec, d / "out", r


def test_rows_are_the_product_of_the_grid(small_run):
    spec, out, r = small_run
    s = load_sweep(spec)
    models = [m.name for m in s.models]
    assert len(models) == 2 and models[0] == "llama-3.1-8b" and models[1].startswith("llama-3.1")
    cells = 2 * 2 * 2 * 2
    assert r.cells == r.ran == cells and r.skipped == 0
    summary = read(out, "summary")
    assert summary.num_rows == cells
    combos = set(
        zip(*(summary[c].to_pylist() for c in ("model", "hardware", "precision", "workload")))
    )
    assert combos == set(itertools.product(models, *SMALL_AXES.values()))
    # one plan (TP1 on one GPU) x the concurrency grid 1, 2, 4, 8 per cell
    _, conc = concurrency_grid(np.array([8.0]), 1)
    assert sorted(conc.tolist()) == [1, 2, 4, 8]
    points = read(out, "points")
    assert points.num_rows == cells * len(conc) == r.evaluated
    assert summary["evaluated"].to_pylist() == [len(conc)] * cells
    per_cell = points.group_by(["model", "hardware", "precision", "workload"]).aggregate(
        [("concurrency", "count")]
    )
    assert per_cell["concurrency_count"].to_pylist() == [len(conc)] * cells
    assert set(points["tp"].to_pylist()) == {1}
    # the layout: points/model=/hardware=/precision=/part-<shard>.parquet, one per cell
    parts = [f for f in files(out) if f.startswith("points/")]
    assert len(parts) == cells
    for f in parts:
        m, h, p, name = f.split("/")[1:]
        assert m.startswith("model=") and h.startswith("hardware=") and p.startswith("precision=")
        assert name.startswith("part-") and name.endswith(".parquet")
    assert (out / "summary.csv").read_text().count("\n") == cells + 1
    assert json.loads((out / "manifest.json").read_text())["spec_sha256"] == s.digest()


def test_frontier_rows_are_the_pareto_set_of_the_points(small_run):
    _, out, _ = small_run
    points, front = read(out, "points"), read(out, "frontier")
    summary = read(out, "summary").to_pylist()
    key = ("model", "hardware", "precision", "workload")

    def of_cell(t, row):
        mask = pa.compute.equal(t[key[0]], row[key[0]])
        for k in key[1:]:
            mask = pa.compute.and_(mask, pa.compute.equal(t[k], row[k]))
        return t.filter(mask).to_pydict()

    for row in summary:
        p, f = of_cell(points, row), of_cell(front, row)
        assert row["frontier_points"] == len(f["tp"]) > 0
        fx, fy = np.array(f["tok_s_per_user"]), np.array(f["output_tok_s_per_gpu"])
        feas = np.array(p["feasible"])
        px = np.array(p["tok_s_per_user"])[feas]
        py = np.array(p["output_tok_s_per_gpu"])[feas]
        assert all(f["feasible"])
        # no point beats a frontier point on both axes; every point is matched by one
        for x, y in zip(fx, fy):
            assert not np.any((px >= x) & (py >= y) & ((px > x) | (py > y)))
        for x, y in zip(px, py):
            assert np.any((fx >= x) & (fy >= y))
        # every frontier row is one of the evaluated points
        pairs = set(zip(px.tolist(), py.tolist()))
        assert set(zip(fx.tolist(), fy.tolist())) <= pairs
        # the best point (no targets: the most tok/s/GPU) is on the frontier
        assert row["best_output_tok_s_per_gpu"] == pytest.approx(float(py.max()))


def test_pool_and_inline_give_the_same_results(small_run, tmp_path):
    spec, out, _ = small_run
    r = run_sweep(spec, tmp_path / "pool", workers=2, progress=False)
    assert r.ran == r.cells
    assert_same_results(out, tmp_path / "pool")


def test_ray_executor_gives_the_same_results(small_run, tmp_path):
    """A local Ray instance (2 CPUs, as CI's machine) runs the shards as Ray tasks."""
    pytest.importorskip("ray")
    spec, out, _ = small_run
    r = run_sweep(spec, tmp_path / "ray", executor="ray", workers=2, progress=False)
    assert (r.executor, r.ran) == ("ray", r.cells)
    assert_same_results(out, tmp_path / "ray")


def test_a_failing_shard_leaves_whole_files_and_a_rerun_finishes(small_run, tmp_path, monkeypatch):
    import llm_codesign.sweep.shard as shard_mod

    spec, reference, _ = small_run
    cells = load_sweep(spec).cells()
    failing = cells[5].shard
    real = shard_mod.evaluate_cell

    def broken(cell, on_points=None):
        if cell.shard == failing:
            if on_points is not None:  # fail mid-shard, after points were produced
                real(cell, on_points)
            raise RuntimeError("shard failed")
        return real(cell, on_points)

    monkeypatch.setattr(shard_mod, "evaluate_cell", broken)
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="shard failed"):
        run_sweep(spec, out, workers=1, progress=False)
    names = files(out)
    assert not [f for f in names if f.endswith(".tmp")]
    assert not [f for f in names if failing in f]  # nothing of the failed shard
    assert "summary.parquet" not in names
    done = [f for f in names if f.startswith("shards/")]
    assert len(done) == 5  # the shards before it (inline: in order)
    for f in names:
        if f.endswith(".parquet"):
            pq.read_table(out / f)  # whole files only
    monkeypatch.setattr(shard_mod, "evaluate_cell", real)
    r = run_sweep(spec, out, workers=2, progress=False)
    assert (r.ran, r.skipped) == (len(cells) - 5, 5)
    assert_same_results(reference, out)
    again = run_sweep(spec, out, workers=1, progress=False)
    assert (again.ran, again.skipped) == (0, len(cells))


def test_an_interrupt_while_writing_leaves_no_partial_file(small_run, tmp_path, monkeypatch):
    """Ctrl-C (KeyboardInterrupt) inside a file's write: its temporary is removed, the shard
    has no done mark, and the rerun redoes it."""
    import llm_codesign.sweep.store as store_mod

    spec, reference, _ = small_run
    real = store_mod.Store._write
    count = [0]

    def interrupted(self, path, data):
        count[0] += 1
        if count[0] == 8:  # a frontier file of the third shard
            path.parent.mkdir(parents=True, exist_ok=True)
            with store_mod.AtomicWriter(path, "wb") as fh:
                fh.write(data[: len(data) // 2])
                raise KeyboardInterrupt
        real(self, path, data)

    monkeypatch.setattr(store_mod.Store, "_write", interrupted)
    out = tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, out, workers=2, progress=False)
    names = files(out)
    assert not [f for f in names if f.endswith(".tmp")]
    assert len([f for f in names if f.startswith("shards/")]) == 2
    assert len([f for f in names if f.startswith("frontier/")]) == 2
    monkeypatch.setattr(store_mod.Store, "_write", real)
    # a run killed outright (SIGKILL) leaves its temporary behind: the next run removes it
    stale = out / "frontier" / ".part-0123456789abcdef.parquet.x1y2.tmp"
    stale.write_bytes(b"half a file")
    r = run_sweep(spec, out, workers=2, progress=False)
    assert r.skipped == 2 and not stale.exists()
    assert_same_results(reference, out)


def test_another_spec_in_the_same_directory_is_refused(small_run, tmp_path):
    spec, _, _ = small_run
    out = tmp_path / "out"
    run_sweep(spec, out, workers=1, progress=False)
    other = write_spec(tmp_path, SMALL.replace("[bf16, fp8]", "[fp8]"), "other.yaml")
    with pytest.raises(SpecError, match="holds another sweep"):
        run_sweep(other, out, workers=1, progress=False)
    r = run_sweep(other, out, workers=1, progress=False, restart=True)
    assert r.cells == r.ran == 8
    assert len([f for f in files(out) if f.startswith("shards/")]) == 8
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "notes.txt").write_text("mine")
    with pytest.raises(SpecError, match="holds no sweep"):
        run_sweep(spec, stray, workers=1, progress=False)
    assert (stray / "notes.txt").read_text() == "mine"


def test_a_precision_the_gpu_lacks_is_a_status_row(tmp_path):
    spec = write_spec(
        tmp_path,
        "models: [llama-3.1-8b]\nhardware: [h100-sxm]\nprecisions: [nvfp4]\n"
        "workloads: [{isl: 512, osl: 128}]\nplans: {num_gpus: 1, max_batch: 8}\n",
    )
    r = run_sweep(spec, tmp_path / "out", workers=1, progress=False)
    (row,) = r.summary
    assert row["status"] == "unsupported" and "nvfp4" in row["reason"]
    assert row["evaluated"] == 0 and row["best_plan"] is None
    assert read(tmp_path / "out", "points").num_rows == 0


BAD_SPECS = [
    (
        "models: [llama-3.1-8b]\nhardware: [h100-sxm]\nprecisions: [fp8]\n"
        "workloads: [{isl: 1, osl: 1}]\nmodle: x\n",
        "unknown field(s) 'modle'",
    ),
    (
        "models: [nope-7b]\nhardware: [h100-sxm]\nprecisions: [fp8]\n"
        "workloads: [{isl: 1, osl: 1}]\n",
        "models entry 0: unknown model 'nope-7b'",
    ),
    (
        "models: [llama-3.1-8b]\nhardware: [h100-sxm, x999]\nprecisions: [fp8]\n"
        "workloads: [{isl: 1, osl: 1}]\n",
        "hardware entry 1: unknown hardware 'x999'",
    ),
    (
        "models: [llama-3.1-8b]\nhardware: [h100-sxm]\nprecisions: [fp9]\n"
        "workloads: [{isl: 1, osl: 1}]\n",
        "precisions entry 0: unknown precision 'fp9'",
    ),
    (
        "models: [llama-3.1-8b]\nhardware: [h100-sxm]\nprecisions: [fp8]\n"
        "workloads: [{isl: many, osl: 1}]\n",
        "workloads entry 0: field 'isl' must be an integer",
    ),
    (
        "models: [llama-3.1-8b]\nhardware: [h100-sxm]\nprecisions: [fp8]\n"
        "workloads: [{isl: 1, osl: 1}]\nplans: {gpus: 8}\n",
        "plans: unknown field(s) 'gpus'",
    ),
    (
        "models: [llama-3.1-8b]\nhardware: [h100-sxm]\nprecisions: [fp8]\n"
        "workloads: [{isl: 1, osl: 1}]\nplans: {helix: 2}\n",
        "field 'helix' must be true or false",
    ),
    (
        "models: []\nhardware: [h100-sxm]\nprecisions: [fp8]\nworkloads: [{isl: 1, osl: 1}]\n",
        "field 'models' must be a non-empty list",
    ),
    (
        "models: [{variants_of: llama-3.1-8b, widths: [1]}]\nhardware: [h100-sxm]\n"
        "precisions: [fp8]\nworkloads: [{isl: 1, osl: 1}]\n",
        "unknown field(s) 'widths'",
    ),
    (
        "models: [{variants_of: llama-3.1-8b, hidden_scales: [0]}]\nhardware: [h100-sxm]\n"
        "precisions: [fp8]\nworkloads: [{isl: 1, osl: 1}]\n",
        "hidden_scales",
    ),
    (
        "models: [llama-3.1-8b]\nhardware: h100-sxm\nprecisions: [fp8]\n"
        "workloads: [{isl: 1, osl: 1}]\n",
        "field 'hardware' must be a list",
    ),
    ("a: &x 1\nb: *x\n", "YAML anchor &x is not allowed"),
    ("models: [llama-3.1-8b]\nmodels: [llama-3.1-8b]\n", "duplicate"),
    (
        "models: [llama-3.1-8b]\nhardware: [h100-sxm]\nprecisions: [fp8]\n"
        "workloads: [{isl: 1, osl: 1}]\ntargets: {tpot_ms: -1}\n",
        "field 'tpot_ms'",
    ),
]


@pytest.mark.parametrize("text, message", BAD_SPECS)
def test_spec_errors_name_the_field(tmp_path, text, message):
    spec = write_spec(tmp_path, text)
    with pytest.raises(SpecError) as exc:
        load_sweep(spec)
    assert message in str(exc.value)
    assert "\n" not in str(exc.value)


def test_cli_spec_error_is_one_line_exit_2(tmp_path):
    spec = write_spec(tmp_path, BAD_SPECS[1][0])
    r = CliRunner().invoke(main, ["sweep", str(spec), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2
    assert r.output.count("\n") == 1 and "unknown model 'nope-7b'" in r.output
    assert not (tmp_path / "o").exists()


def test_cli_runs_and_reruns(small_run, tmp_path):
    spec, reference, _ = small_run
    out = tmp_path / "cli"
    args = ["sweep", str(spec), "--out", str(out), "--workers", "2", "--json"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)["sweep"]
    assert doc["cells"] == doc["shards_run"] == 16 and len(doc["summary"]) == 16
    assert_same_results(reference, out)
    r = CliRunner().invoke(main, ["sweep", str(spec), "--out", str(out)])
    assert r.exit_code == 0 and "0 shards run, 16 already done" in r.output


def test_missing_optional_dependencies_are_one_line_errors(small_run, tmp_path, monkeypatch):
    spec, _, _ = small_run
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(UnsupportedError, match=r"pip install 'llm-codesign\[ray\]'"):
        run_sweep(spec, tmp_path / "r", executor="ray", progress=False)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(UnsupportedError, match=r"pip install 'llm-codesign\[sweep\]'"):
        run_sweep(spec, tmp_path / "p", progress=False)
    assert not (tmp_path / "p").exists()


def test_example_spec_loads_with_the_readme_numbers():
    s = load_sweep(ROOT / "examples" / "sweep.yaml")
    assert len(s.cells()) == s.size == 24
    assert len({c.shard for c in s.cells()}) == s.size


def test_ray_executor_joins_a_running_cluster(small_run, tmp_path):
    """``--ray-address`` of a Ray head already running on this machine (2 CPUs): the sweep
    runs its shards there, leaves the cluster up, and gives the same results."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    spec, out, _ = small_run
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
    try:
        r = run_sweep(
            spec, tmp_path / "ray", executor="ray", ray_address=cluster.address, progress=False
        )
        assert r.ran == r.cells
        assert not ray.is_initialized()  # the driver disconnected; the cluster stays
        assert cluster.remaining_processes_alive()
    finally:
        cluster.shutdown()
    assert_same_results(out, tmp_path / "ray")


def test_an_unreachable_ray_address_is_a_prompt_one_line_error(small_run, tmp_path):
    pytest.importorskip("ray")
    spec, _, _ = small_run
    with pytest.raises(SpecError, match="cannot reach Ray at 127.0.0.1:1"):
        run_sweep(spec, tmp_path / "o", executor="ray", ray_address="127.0.0.1:1")


def test_a_bare_preset_takes_the_checkpoints_block_weights_as_estimate_does(tmp_path):
    """DeepSeek-R1's FP8 checkpoint stores 128x128 block-scaled weights: a sweep's ``fp8``
    cell for it is ``fp8+fp8_block-w``, as ``estimate -p fp8`` and the frontier price it;
    Llama-3.1-8B has no such checkpoint and keeps ``fp8``."""
    from llm_codesign import ParallelPlan, estimate

    spec = write_spec(
        tmp_path,
        "models: [deepseek-r1, llama-3.1-8b]\nhardware: [h200-sxm]\nprecisions: [fp8]\n"
        "workloads: [{isl: 512, osl: 128}]\nplans: {num_gpus: 8, max_batch: 8}\n",
    )
    cells = load_sweep(spec).cells()
    got = {c.name: c.precision.id for c in cells}
    assert got == {"deepseek-r1": "fp8+fp8_block-w", "llama-3.1-8b": "fp8"}
    e = estimate("deepseek-r1", "h200-sxm", "fp8", ParallelPlan(tp=8, ep=8), explain=False)
    assert e.precision.id == got["deepseek-r1"]


def test_each_gpu_runs_its_vendors_engine(tmp_path):
    # no engine named: each GPU takes its vendor's default (TensorRT-LLM is CUDA only); an
    # engine named for a GPU that cannot run it is refused with the field named
    text = """
models: [llama-3.1-8b]
hardware: [h200-sxm, mi355x]
precisions: [fp8]
workloads: [{name: chat, isl: 1024, osl: 256}]
"""
    spec = load_sweep(write_spec(tmp_path, text))
    assert {c.hardware.id: c.engine.id for c in spec.cells()} == {
        "h200-sxm": "trtllm",
        "mi355x": "vllm",
    }
    with pytest.raises(SpecError, match="field 'engine': engine trtllm runs on nvidia"):
        load_sweep(write_spec(tmp_path, text + "engine: trtllm\n", "named.yaml"))

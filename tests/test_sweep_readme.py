"""README's sweep example: `examples/sweep.yaml` runs, and the DuckDB/pandas query and plot of
its output (the block after README's ``sweep-query`` marker) run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from llm_codesign import run_sweep

ROOT = Path(__file__).resolve().parents[1]


def readme_block() -> str:
    text = (ROOT / "README.md").read_text()
    m = re.search(r"<!-- sweep-query:[^>]*-->\s*```python\n(.*?)```", text, re.S)
    assert m, "README lost its sweep-query block"
    return m.group(1)


def test_readme_query_runs_on_the_example_output(tmp_path, monkeypatch, capsys):
    pytest.importorskip("pyarrow")
    pytest.importorskip("duckdb")
    pytest.importorskip("pandas")
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    r = run_sweep(ROOT / "examples" / "sweep.yaml", "sweep-results", workers=2, progress=False)
    assert r.cells == r.ran == 24
    code = readme_block()
    namespace: dict = {}
    exec(compile(code, "README.md:sweep-query", "exec"), namespace)  # noqa: S102
    points, front = namespace["points"], namespace["front"]
    assert len(points) > 0 and 0 < len(front) < len(points)
    # the frontier's best throughput is the slice's best feasible throughput
    assert front["output_tok_s_per_gpu"].max() == pytest.approx(
        points["output_tok_s_per_gpu"].max()
    )
    assert (tmp_path / "llama-3.1-8b-h200-fp8-chat.png").stat().st_size > 0
    printed = capsys.readouterr().out
    assert "best_plan" in printed and "h200-sxm" in printed

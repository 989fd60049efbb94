"""``llm-codesign report``: the issue's command writes one self-contained HTML file, and a
headless Chromium (Debian's, driven by Playwright) renders its Plotly frontier offline, shows a
hover label over a point and logs no console error.

Without Chromium or Playwright the browser test is skipped, except under CI (``CI`` set), where
it fails: CI installs both (``.ci/run``, the ``test`` extra).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from llm_codesign import UnsupportedError
from llm_codesign.cli import main

pytest.importorskip("plotly", reason="the report needs the report extra (plotly)")

COMMAND = ["report", "-m", "deepseek-r1", "-g", "b200,gb200", "-n", "8"]


@pytest.fixture(scope="module")
def report_file(tmp_path_factory) -> tuple[Path, float]:
    """The issue's command, run once for the module: (path, seconds)."""
    out = tmp_path_factory.mktemp("report") / "r.html"
    t0 = time.perf_counter()
    r = CliRunner().invoke(main, COMMAND + ["-o", str(out)], catch_exceptions=False)
    elapsed = time.perf_counter() - t0
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"wrote {out}")
    return out, elapsed


def test_issue_command_writes_one_self_contained_file(report_file):
    path, elapsed = report_file
    text = path.read_text()
    assert elapsed < 60, f"report took {elapsed:.1f} s"
    assert text.count("<html") == 1 and text.rstrip().endswith("</html>")
    # nothing is fetched at view time: no external script, stylesheet, font or image
    assert not re.search(r"""<(script|link|img)[^>]+(src|href)=["']?(https?:)?//""", text)
    assert "@import" not in text and "url(http" not in text
    assert "plotly" in text.lower() and 'id="frontier-plot"' in text
    for gpu in ("b200", "gb200"):
        assert f'id="gpu-{gpu}"' in text
    for heading in (
        "Side by side",
        "Best configuration",
        "Launch settings",
        "Memory at the best configuration",
        "Regimes and Amdahl",
        "Lint",
        "Every assumption behind these numbers",
    ):
        assert heading in text, heading
    for engine_word in ("trtllm-serve", "vllm serve", "sglang.launch_server"):
        assert engine_word in text


def test_targets_price_and_unmet_targets(tmp_path):
    """Targets choose the best point, a GPU-hour price adds $/M tokens (table and hover), and
    targets nobody meets say so instead of naming a configuration."""
    from llm_codesign.report import write_report

    common = {"num_gpus": 2, "isl": 512, "osl": 128, "precision": "fp8,bf16"}
    out = write_report(
        "llama-3.1-8b",
        ["h100-sxm", "h200-sxm"],
        tmp_path / "t.html",
        tpot_ms=20,
        usd_per_gpu_hour=2.5,
        power_w=900,
        **common,
    )
    text = out.read_text()
    assert "best meeting the targets" in text and "tpot_ms 20" in text
    assert "per million output tokens" in text and "900 W (given" in text
    none = write_report("llama-3.1-8b", "h100-sxm", tmp_path / "n.html", tpot_ms=0.01, **common)
    assert "no configuration meets the targets" in none.read_text()


def test_text_is_escaped(tmp_path):
    """A GPU file whose name holds markup shows it as text, never as markup."""
    from llm_codesign.report import write_report

    spec = Path(__file__).parents[1] / "src/llm_codesign/data/hardware/h100-sxm.yaml"
    if not spec.is_file():
        pytest.skip("bundled h100-sxm.yaml not found")
    body = spec.read_text()
    evil = tmp_path / "evil.yaml"
    evil.write_text(re.sub(r"(?m)^name:.*$", 'name: "<script>alert(1)</script>"', body, count=1))
    out = write_report(
        "llama-3.1-8b", [str(evil)], tmp_path / "e.html", num_gpus=1, isl=512, osl=128,
        precision="fp8",
    )  # fmt: skip
    text = out.read_text()
    assert "<script>alert(1)</script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_path_and_missing_plotly_errors(tmp_path, monkeypatch):
    r = CliRunner().invoke(main, ["report", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-o", "x.png"])
    assert r.exit_code == 2 and "must end in .html" in r.output

    import builtins

    real = builtins.__import__

    def no_plotly(name, *args, **kwargs):
        if name.startswith("plotly"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_plotly)
    from llm_codesign.report import write_report

    with pytest.raises(UnsupportedError, match=r'pip install "llm-codesign\[report\]"'):
        write_report("llama-3.1-8b", ["h100-sxm"], tmp_path / "x.html")
    r = CliRunner().invoke(
        main, ["report", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-o", str(tmp_path / "y.html")]
    )
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert not (tmp_path / "y.html").exists()


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        if found := shutil.which(name):
            return found
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


def _browser_or_skip() -> tuple[object, str]:
    """(playwright.sync_api.sync_playwright, chromium path); skip locally, fail under CI."""
    why = ""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright, why = None, "playwright is not installed (pip install playwright)"
    exe = _chromium()
    if exe is None:
        why = why or "no chromium executable (apt-get install chromium)"
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"CI must run the browser test: {why}")
        pytest.skip(why)
    return sync_playwright, exe


def test_report_renders_and_hovers_in_chromium(report_file, tmp_path):
    sync_playwright, exe = _browser_or_skip()
    path, _ = report_file
    errors: list[str] = []
    requests: list[str] = []
    t0 = time.perf_counter()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=exe, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc: errors.append(str(exc)))

            def block(route):  # the page must need nothing beyond its own file
                if not route.request.url.startswith("file:"):
                    requests.append(route.request.url)
                    return route.abort()
                return route.continue_()

            page.route("**/*", block)
            page.goto(path.as_uri(), wait_until="load")
            plot = page.locator("#frontier-plot.js-plotly-plot")
            plot.wait_for(state="visible", timeout=30_000)
            points = "#frontier-plot .scatterlayer .trace .points path"
            page.wait_for_selector(points, timeout=30_000)
            traces = page.locator("#frontier-plot .scatterlayer .trace").count()
            assert traces >= 4  # >= one precision per GPU plus each GPU's best star
            n_data = page.evaluate("document.getElementById('frontier-plot').data.length")
            assert n_data == traces

            # hover the first marker of the first trace with the real mouse
            box = page.locator(points).first
            bb = box.bounding_box()
            assert bb is not None
            page.mouse.move(bb["x"] + bb["width"] / 2, bb["y"] + bb["height"] / 2)
            label = page.locator("#frontier-plot .hoverlayer .hovertext")
            label.first.wait_for(state="visible", timeout=10_000)
            text = label.first.text_content() or ""
            for word in ("precision", "concurrency", "TTFT", "TPOT", "tok/s/user", "accuracy"):
                assert word in text, text
            page.screenshot(path=str(tmp_path / "report.png"), full_page=False)
            if keep := os.environ.get("REPORT_SCREENSHOT_DIR"):
                shutil.copy(tmp_path / "report.png", keep)
        finally:
            browser.close()
    elapsed = time.perf_counter() - t0
    assert (tmp_path / "report.png").stat().st_size > 10_000
    assert errors == [], errors
    assert requests == [], requests
    print(f"browser check {elapsed:.1f} s; screenshot {tmp_path / 'report.png'}")


def test_missing_browser_skips_locally_and_fails_under_ci(monkeypatch):
    import sys

    monkeypatch.setattr(sys.modules[__name__], "_chromium", lambda: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no chromium"):
        _browser_or_skip()
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="CI must run the browser test"):
        _browser_or_skip()

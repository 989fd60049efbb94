"""The package's shape: layers import only downwards (DESIGN.md), no import cycles, each concept
defined once, the public API pinned, and the CLI built on public names only."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import llm_codesign

SRC = Path(llm_codesign.__file__).parent
PKG = "llm_codesign"

# Layer of each module prefix (longest prefix wins), bottom to top; docs/ARCHITECTURE.md.
LAYERS: dict[str, int] = {
    "errors": 0,
    "formats": 0,
    "pareto": 0,
    "outputs": 0,
    "distinct": 0,
    "specs": 1,
    "ops": 2,
    "routing": 2,
    "mixers": 2,
    "cost": 3,
    "comm": 3,
    "moe_kernels": 3,
    "attention_kernels": 3,
    # calibration profiles replace default efficiencies (DESIGN.md puts them with cost); the
    # microbenchmarks, device probing and the engine fit are interfaces
    "calibrate": 3,
    "calibrate.fit": 7,
    "calibrate.microbench": 7,
    "calibrate.collectives": 7,
    "calibrate.device": 7,
    "serving": 4,
    "explore": 5,
    "advise": 6,
    "quant": 6,
    "validate": 7,
    "report": 7,
    "sweep": 7,
    "api": 7,
    "cli": 8,
    "__init__": 8,
    "__main__": 8,
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join([PKG, *parts])] = path
    return out


MODULES = _modules()


def _layer(module: str) -> int:
    """The layer of the longest ``LAYERS`` prefix of the module's dotted path."""
    rest = module[len(PKG) + 1 :] if module != PKG else "__init__"
    parts = rest.split(".")
    for i in range(len(parts), 0, -1):
        key = ".".join(parts[:i])
        if key in LAYERS:
            return LAYERS[key]
    raise AssertionError(f"module {module} is in no layer: add it to LAYERS and ARCHITECTURE.md")


def _resolve(module: str, node: ast.ImportFrom) -> list[str]:
    """Absolute modules an ImportFrom reaches (a submodule where the name is one)."""
    is_pkg = MODULES[module].name == "__init__.py"
    if node.level:
        base = module.split(".")
        base = base if is_pkg else base[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    if not target.startswith(PKG):
        return []
    out = []
    for alias in node.names:
        sub = f"{target}.{alias.name}"
        out.append(sub if sub in MODULES else target)
    return out


def _imports(module: str, top_level_only: bool) -> set[str]:
    tree = ast.parse(MODULES[module].read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    out: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            out.update(_resolve(module, node))
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith(PKG))
    return {m for m in out if m in MODULES and m != module}


def test_every_module_has_a_layer_and_imports_only_downwards():
    upward = []
    for module in MODULES:
        for target in _imports(module, top_level_only=False):
            if _layer(target) > _layer(module):
                upward.append(
                    f"{module} (layer {_layer(module)}) imports {target} ({_layer(target)})"
                )
    assert upward == []


def test_no_import_cycles():
    """Import-time cycles (top-level imports; a package's __init__ importing its own
    submodules is not one unless a submodule imports the package back)."""
    graph = {m: _imports(m, top_level_only=True) for m in MODULES}
    state: dict[str, int] = {}
    cycles = []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycles.append(" -> ".join(stack[stack.index(t) :] + [t]))
            elif t not in state:
                visit(t, stack + [t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == []


def test_no_module_over_600_lines():
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text().splitlines())) > 600}
    assert long == {}


def _definitions(name: str) -> list[str]:
    pattern = re.compile(rf"^(def|class) {re.escape(name)}\b|^{re.escape(name)}\s*[:=]", re.M)
    return [m for m, p in MODULES.items() if pattern.search(p.read_text())]


@pytest.mark.parametrize(
    "name, home",
    [
        ("plan_feasibility", "llm_codesign.specs.plan"),  # the plan rules
        ("step_shape", "llm_codesign.ops"),  # the step shape
        ("concurrency_cap", "llm_codesign.serving.memory"),
        ("pareto_mask", "llm_codesign.pareto"),
        ("frontier_area", "llm_codesign.pareto"),
        ("staircase", "llm_codesign.pareto"),
        ("launch_settings", "llm_codesign.report.launch"),
        ("write_report", "llm_codesign.report.html"),
        ("concurrency_grid", "llm_codesign.explore.grid"),
        ("bound_split", "llm_codesign.serving.step"),
        ("crosses_domain_without_network", "llm_codesign.specs.plan"),
        ("Frontier", "llm_codesign.explore.result"),
        ("compare", "llm_codesign.explore.search"),
        ("checkpoint_precision", "llm_codesign.specs.checkpoint"),
        ("hub_cache_dir", "llm_codesign.specs.hf_cache"),
        ("AtomicWriter", "llm_codesign.outputs"),  # every result file is written by it
        ("check_output_path", "llm_codesign.outputs"),
    ],
)
def test_each_concept_is_defined_once(name, home):
    assert _definitions(name) == [home]


def test_bytes_per_format_have_one_home():
    """Bytes per element come from the format registry; no module keeps its own table."""
    offenders = [
        m
        for m, p in MODULES.items()
        if re.search(r"^\w*BYTES\w*\s*=\s*\{", p.read_text(), re.M) and m != "llm_codesign.formats"
    ]
    assert offenders == []


def test_public_api_is_pinned():
    assert llm_codesign.__all__ == sorted(llm_codesign.__all__)
    assert llm_codesign.__all__ == [
        "CodesignError",
        "DataFileError",
        "DisaggregatedPlan",
        "EngineConstants",
        "Estimate",
        "Frontier",
        "GridResult",
        "HardwareSpec",
        "ModelSpec",
        "ParallelPlan",
        "Precision",
        "SearchSpace",
        "SpecError",
        "Traffic",
        "UnknownIdError",
        "UnsupportedError",
        "Workload",
        "apply_profile",
        "bundled_hardware",
        "bundled_models",
        "compare",
        "compare_profile",
        "estimate",
        "evaluate",
        "evaluate_disaggregated",
        "fit_engine",
        "frontier",
        "frontier_area",
        "gemm_sweep",
        "hardware_template",
        "lint",
        "load_engine",
        "load_hardware",
        "load_model",
        "load_sweep",
        "pareto_mask",
        "parse_compare",
        "parse_device",
        "parse_length_dist",
        "parse_precision",
        "read_trace",
        "regimes",
        "run_calibration",
        "run_sweep",
        "search",
        "simulate",
        "validate",
        "write_csv",
        "write_engine_yaml",
    ]
    for name in llm_codesign.__all__:
        assert getattr(llm_codesign, name) is not None


PUBLIC_PACKAGES = {
    PKG,
    f"{PKG}.report",
    f"{PKG}.explore",
    f"{PKG}.advise",
    f"{PKG}.quant",
    f"{PKG}.calibrate",
    f"{PKG}.sweep",
}


def test_cli_imports_only_public_names():
    bad = []
    for module, path in MODULES.items():
        if not module.startswith(f"{PKG}.cli"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level == 1 or (node.module or "").startswith(f"{PKG}.cli"):
                continue  # the CLI's own modules
            if not node.level and not (node.module or "").startswith(PKG):
                continue  # other libraries
            target = ("." * node.level) + (node.module or "")
            if node.level:
                base = module.split(".")[: -node.level]
                target = ".".join(base + ([node.module] if node.module else []))
            pkg = target if target in PUBLIC_PACKAGES else None
            if pkg is None:
                bad.append(f"{module}: from {target} (not a public package)")
                continue
            exported = set(importlib.import_module(pkg).__all__)
            for alias in node.names:
                if alias.name.startswith("_") or alias.name not in exported:
                    bad.append(f"{module}: {alias.name} is not in {pkg}.__all__")
    assert bad == []

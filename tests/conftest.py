import difflib
import os
from pathlib import Path

import pytest

os.environ.setdefault("COLUMNS", "120")

GOLDEN_DIR = Path(__file__).parent / "golden"


def pytest_addoption(parser):
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite tests/golden/* from the current output instead of comparing with it",
    )


@pytest.fixture
def golden(request):
    """``golden(name, text)``: compare ``text`` with ``tests/golden/<name>`` (unified diff on a
    mismatch), or rewrite the file when pytest runs with ``--update-goldens``."""
    update = request.config.getoption("--update-goldens")

    def check(name: str, text: str) -> None:
        path = GOLDEN_DIR / name
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            return
        if not path.is_file():
            pytest.fail(
                f"no golden file {path}; create it with `pytest --update-goldens`", pytrace=False
            )
        want = path.read_text()
        if text != want:
            diff = "".join(
                difflib.unified_diff(
                    want.splitlines(keepends=True),
                    text.splitlines(keepends=True),
                    fromfile=f"golden/{name}",
                    tofile="actual",
                )
            )
            pytest.fail(
                f"output differs from golden/{name} (if the change is intended, rerun with "
                f"--update-goldens and commit the file with the change):\n{diff}",
                pytrace=False,
            )

    return check


@pytest.fixture(scope="session")
def student_t_checkpoint(tmp_path_factory):
    """(path, tensors): two layers of heavy-tailed (Student-t) bf16 weights, a norm and an
    lm_head in a safetensors file; seeded, so the file is the same on every run."""
    import ml_dtypes
    import numpy as np

    from llm_codesign.quant import write_safetensors

    rng = np.random.default_rng(0)
    tensors = {}
    for layer, nu in enumerate((5.0, 2.5)):
        p = f"model.layers.{layer}."
        tensors[p + "input_layernorm.weight"] = np.ones(128, ml_dtypes.bfloat16)
        tensors[p + "self_attn.q_proj.weight"] = (rng.standard_t(nu, (128, 128)) * 0.02).astype(
            ml_dtypes.bfloat16
        )
        tensors[p + "mlp.up_proj.weight"] = (rng.standard_t(nu, (256, 128)) * 0.02).astype(
            ml_dtypes.bfloat16
        )
    tensors["lm_head.weight"] = (rng.standard_normal((64, 128)) * 0.02).astype(np.float32)
    path = tmp_path_factory.mktemp("ckpt") / "model.safetensors"
    write_safetensors(path, tensors)
    return path, tensors

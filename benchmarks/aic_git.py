"""AIConfigurator's measured tables read straight from a git directory (a clone of
ai-dynamo/aiconfigurator or the ``fetch`` mirror's): the one reader the kernel and module reports
share (``dsv4_attention_report``, ``dsa_module_report``, ``deepep_aic_report``).
"""

from __future__ import annotations

import io
import subprocess

DATA = "aic-core/src/aiconfigurator_core/systems/data"
# AIConfigurator's system directories -> the bundled GPU ids
GPUS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200-sxm", "b200_sxm": "b200", "b300_sxm": "b300",
        "gb200": "gb200", "gb300": "gb300"}  # fmt: skip


def table_paths(repo: str) -> list[str]:
    """Every file path under the systems data directory at HEAD."""
    return subprocess.run(
        ["git", "-C", repo, "ls-tree", "-r", "--name-only", "HEAD", DATA],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip


def read_table(repo: str, path: str):
    """The parquet table at ``path`` (HEAD) as a DataFrame (needs pandas and pyarrow)."""
    import pandas as pd

    blob = subprocess.run(["git", "-C", repo, "show", f"HEAD:{path}"], capture_output=True)
    return pd.read_parquet(io.BytesIO(blob.stdout))

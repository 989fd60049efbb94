"""The MoE flags InferenceX's AMD disaggregated SGLang scripts pass each model (issue 11).

InferenceX's AMD disaggregated runs (``sglang-disagg`` on MI355X) launch SGLang through
``benchmarks/multi_node/amd_utils`` (``submit.sh`` -> ``job.slurm`` -> ``server.sh``, later
``server_sglang.sh``), whose per-model flags live in ``amd_utils/models.yaml`` (first in the
repository on 2026-02-19, @8d81e0bf4; earlier runs cloned their scripts from
billishyahao/sglang_disagg, which this does not read): ``base_flags`` for every pool,
``dp_flags`` for a pool with DP attention, and from 2026-07-10 ``ep_flags`` for a pool with
expert parallelism. This script walks every version of that file and writes, per model key and
run of versions that say the same, the bundled table
``data/validation/inferencex_amd_disagg_flags.csv``:

* model: the bundled model the key names (``validate.mapping.match_model_name``);
* moe_a2a: the MoE dispatch family of ``--moe-a2a-backend`` in the DP-attention or EP flags
  (``report.launch_data.SGLANG_A2A``; blank where none is passed: the all-gather);
* ep_dispatch: SGLang's ``--ep-dispatch-algorithm`` in any of the flags (``fake`` replaces the
  router's logits by noise and zeroes its correction bias, so tokens route uniformly at random:
  sglang ``eplb/expert_location_dispatch.transform_select_experts_inputs``);
* dispatch_pools: the pools that flag reaches: ``all`` (base_flags), ``dp`` (dp_flags: pools
  with DP attention), ``ep`` (ep_flags: pools with expert parallelism);
* first_seen / last_seen: the first and last version dates with those flags.

Run: python benchmarks/inferencex_amd_disagg_flags.py --repo PATH_TO_INFERENCEX_GIT [--write]
(``--write``: replace the bundled table; without it, print it)
"""

from __future__ import annotations

import argparse
import csv
import io
import subprocess
import sys
from pathlib import Path

import yaml

from llm_codesign.report.launch_data import SGLANG_A2A
from llm_codesign.validate.mapping import match_model_name

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "llm_codesign" / "data" / "validation" / "inferencex_amd_disagg_flags.csv"
MODELS = "benchmarks/multi_node/amd_utils/models.yaml"
FIELDS = ("model", "models_yaml_key", "moe_a2a", "ep_dispatch", "dispatch_pools", "first_seen",
          "last_seen")  # fmt: skip
BLOCKS = {"base_flags": "all", "dp_flags": "dp", "ep_flags": "ep"}


def git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", repo, *args], capture_output=True, text=True, check=True
    ).stdout


def flag(text: str, name: str) -> str:
    """The value after ``name`` in a flags string, "" where absent."""
    words = str(text or "").split()
    return words[words.index(name) + 1] if name in words[:-1] else ""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True, help="git dir of SemiAnalysisAI/InferenceX")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    log = git(args.repo, "log", "main", "--reverse", "--format=%H %cs", "--", MODELS)
    runs: dict[tuple[str, str], list[list[str]]] = {}  # (key, model) -> [[a2a, alg, pools, ...]]
    unmapped: set[str] = set()
    for line in log.splitlines():
        commit, date = line.split()
        try:
            doc = yaml.safe_load(git(args.repo, "show", f"{commit}:{MODELS}")) or {}
        except (subprocess.CalledProcessError, yaml.YAMLError):
            continue
        for key, entry in doc.items():
            model = match_model_name(str(key))
            if model is None or not isinstance(entry, dict):
                unmapped.add(str(key))
                continue
            moe = " ".join(str(entry.get(f, "")) for f in ("dp_flags", "ep_flags"))
            backend = flag(moe, "--moe-a2a-backend")
            if backend and backend not in SGLANG_A2A:
                raise SystemExit(f"{commit} {key}: --moe-a2a-backend {backend} has no family")
            a2a = SGLANG_A2A.get(backend, "") if backend else ""
            found = [(BLOCKS[b], flag(entry.get(b, ""), "--ep-dispatch-algorithm")) for b in BLOCKS]
            found = [(p, a) for p, a in found if a]
            pools, alg = found[0] if found else ("", "")
            seen = runs.setdefault((str(key), model), [])
            if seen and seen[-1][:3] == [a2a, alg, pools]:
                seen[-1][4] = date
            else:
                seen.append([a2a, alg, pools, date, date])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(FIELDS)
    for (key, model), seen in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        for a2a, alg, pools, first, last in seen:
            w.writerow((model, key, a2a, alg, pools, first, last))
    if unmapped:  # (keys no bundled model matches: their runs keep the engine's own)
        print(f"not mapped to a bundled model: {', '.join(sorted(unmapped))}", file=sys.stderr)
    if args.write:
        OUT.write_text(buf.getvalue(), encoding="utf-8")
        print(f"wrote {OUT}", file=sys.stderr)
    else:
        sys.stdout.write(buf.getvalue())


if __name__ == "__main__":
    main()

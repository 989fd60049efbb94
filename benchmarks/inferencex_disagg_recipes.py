"""Which recipe each disaggregated InferenceX row ran, and the batch limits it set (issue 11).

InferenceX's disaggregated DeepSeek-R1 runs on H100/H200 (``inferencex_hopper.csv``) name one
recipe per (pools, concurrency) in ``.github/configs/nvidia-master.yaml`` (``CONFIG_FILE=`` in
the prefill pool's ``additional-settings``, a file of ishandhanani/srt-slurm, branch
sa-submission-q1-2026, vendored into InferenceX under ``benchmarks/multi_node/srt-slurm-recipes``).
This script reads a git clone of SemiAnalysisAI/InferenceX, takes the master config of each
row's run date, finds the entry whose pools, lengths, speculative method and concurrency list
match the row, reads the recipe it names, and prints the limits as the bundled table
``data/validation/inferencex_disagg_limits.csv`` holds them:

* decode_max_batch: sequences one decode scheduling rank runs at once: TensorRT-LLM's
  ``max_batch_size`` (per attention-DP rank where the pool runs attention-DP), SGLang's
  ``max-running-requests`` // ``dp-size`` (SGLang's scheduler splits it over its DP ranks,
  sgl-project/sglang python/sglang/srt/managers/scheduler.py ``per_dp_max_running_requests``);
* prefill_max_batch / prefill_max_tokens: the prefill worker's ``max_batch_size`` and
  ``max_num_tokens`` (SGLang: ``max-running-requests`` // ``dp-size`` and ``chunked-prefill-size``).

Run: python benchmarks/inferencex_disagg_recipes.py --repo PATH_TO_INFERENCEX_GIT [--write]
(``--write``: replace the bundled table; without it, print the table and the unmatched rows)
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
GT = ROOT.parent / "shared" / "groundtruth" / "inferencex_hopper.csv"
OUT = ROOT / "src" / "llm_codesign" / "data" / "validation" / "inferencex_disagg_limits.csv"
VENDORED = "benchmarks/multi_node/srt-slurm-recipes"
FIELDS = (
    "gpu", "framework", "isl", "osl", "spec", "concurrency",
    "prefill_workers", "prefill_tp", "prefill_ep", "prefill_adp",
    "decode_workers", "decode_tp", "decode_ep", "decode_adp",
    "decode_max_batch", "prefill_max_batch", "prefill_max_tokens",
    "config_file", "master_commit",
)  # fmt: skip


def git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", repo, *args], capture_output=True, text=True, check=True
    ).stdout


def row_configs() -> dict[tuple, str]:
    """Distinct disaggregated row configurations of the shared file -> run date."""
    out: dict[tuple, str] = {}
    with GT.open(newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            n = r["notes"]
            if "disaggregated" not in n:
                continue
            m = re.search(
                r"prefill_gpus=(\d+) \(workers=(\d+)\), decode_gpus=(\d+) \(workers=(\d+)\)", n
            )
            assert m, n
            spec = re.search(r"spec_method=(\w+)", n).group(1)
            date = re.search(r"run date (\S+);", n).group(1)
            ptp, dtp = (int(v) for v in re.findall(r"tp(\d+)", r["tp"]))
            pep, dep = (int(v) for v in re.findall(r"ep(\d+)", r["ep"]))
            padp, dadp = (v == "True" for v in re.findall(r"dpattn=(\w+)", r["dp"]))
            fw = r["framework"].split()[0]
            key = (
                r["gpu"].lower(), fw, int(r["isl"]), int(r["osl"]), spec,
                int(float(r["concurrency_or_batch"])),
                int(m.group(2)), ptp, pep, padp, int(m.group(4)), dtp, dep, dadp,
            )  # fmt: skip
            out[key] = date
    return out


def master(repo: str, date: str) -> tuple[str, dict]:
    commit = git(
        repo, "log", "-1", "--format=%H", f"--before={date}T23:59:59", "main", "--",
        ".github/configs/nvidia-master.yaml",
    ).strip()  # fmt: skip
    text = git(repo, "show", f"{commit}:.github/configs/nvidia-master.yaml")
    return commit, yaml.safe_load(text)


def config_files(entry: dict, key: tuple) -> list[str]:
    """The recipes of the master entry's search spaces with the row's lengths, speculative
    method and pools (their concurrency is checked against the recipe itself: ``main``)."""
    gpu, fw, isl, osl, spec, conc, pw, ptp, pep, padp, dw, dtp, dep, dadp = key
    found = []
    for seq in entry.get("seq-len-configs", []):
        if (seq["isl"], seq["osl"]) != (isl, osl):
            continue
        for s in seq["search-space"]:
            p, d = s["prefill"], s["decode"]
            if (s.get("spec-decoding", "none") or "none") != spec:
                continue
            want = ((pw, ptp, pep, padp), (dw, dtp, dep, dadp))
            got = tuple(
                (x["num-worker"], x["tp"], x["ep"], bool(x.get("dp-attn", False))) for x in (p, d)
            )
            if got != want:
                continue
            for pool in (p, d):
                for setting in pool.get("additional-settings", []) or []:
                    if setting.startswith("CONFIG_FILE="):
                        found.append((setting.split("=", 1)[1], s["conc-list"]))
    return found


def recipe(repo: str, path: str) -> dict | None:
    """The vendored recipe (its first version, the closest to the run), by its srt-slurm path."""
    tail = path.removeprefix("recipes/")
    for cand in (f"{VENDORED}/dsr1/{tail}", f"{VENDORED}/{tail}"):
        commits = git(repo, "log", "--all", "--format=%H", "--", cand).split()
        for c in reversed(commits):  # oldest first; a deleting commit has no blob
            try:
                return yaml.safe_load(git(repo, "show", f"{c}:{cand}"))
            except subprocess.CalledProcessError:
                continue
    return None


def limits(rec: dict) -> tuple[int, int, int]:
    be = rec["backend"]
    if "trtllm_config" in be:
        p, d = be["trtllm_config"]["prefill"], be["trtllm_config"]["decode"]
        return int(d["max_batch_size"]), int(p["max_batch_size"]), int(p["max_num_tokens"])
    p, d = be["sglang_config"]["prefill"], be["sglang_config"]["decode"]

    def per_rank(c: dict) -> int:
        return int(c["max-running-requests"]) // int(c.get("dp-size", 1) or 1)

    return per_rank(d), per_rank(p), int(p["chunked-prefill-size"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True, help="git dir of SemiAnalysisAI/InferenceX")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    rows, missing = [], []
    for key, date in sorted(row_configs().items()):
        commit, cfg = master(args.repo, date)
        name = f"dsr1-fp8-{key[0]}-{key[1]}"
        conc = key[5]
        hits = set()
        for path, conc_list in config_files(cfg.get(name, {}), key):
            rec = recipe(args.repo, path)
            if rec is None:
                continue
            ran = {int(c) for c in str(rec["benchmark"]["concurrencies"]).split("x")}
            if conc in ran or conc in conc_list:
                hits.add((limits(rec), path))
        if len({h[0] for h in hits}) != 1:
            missing.append((key, date, sorted(hits)))
            continue
        lim, path = sorted(hits)[0]
        rows.append(key + lim + (path, commit[:12]))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(FIELDS)
    w.writerows(rows)
    if args.write:
        OUT.write_text(buf.getvalue(), encoding="utf-8")
    else:
        sys.stdout.write(buf.getvalue())
    for m in missing:
        print("unmatched:", *m, file=sys.stderr)


if __name__ == "__main__":
    main()

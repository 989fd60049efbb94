"""The KV cache format of InferenceX's aggregated SGLang and vLLM runs, read from the launch
scripts' history: ``data/validation/inferencex_kv.csv`` (``validate.launch_scripts``).

InferenceX runs each aggregated configuration with a launch script named for the model,
precision and GPU (``benchmarks/[single_node/[fixed_seq_len/]]<model>_<precision>_<gpu>
[_docker|_slurm|_sglang|_vllm][_mtp].sh``; DeepSeek-R1, DeepSeek-V4-Pro, GLM-5, Qwen3.5,
Kimi-K2.5, MiniMax-M2.5, gpt-oss). Some pass ``--kv-cache-dtype fp8`` / ``fp8_e4m3`` (an FP8
cache), the others none (the engines' ``auto``: the model's own dtype, BF16, unless the checkpoint
quantizes its cache). This walks the scripts' versions on the clone's current branch (``git
log --first-parent -m HEAD``: the commits as they landed on it, a merge as of its own date;
dates in UTC, as the runs' dates), reads the flag of each version that launches
``sglang.launch_server`` or ``vllm serve`` (TensorRT-LLM, ATOM, disaggregated and Dynamo
scripts are other files), and writes one row per version that changed the value for an
(engine, GPU, model, precision, speculative method), with the draft tokens a speculating
script proposes per step (``--speculative-num-steps``, or the variable it names) and the memory
fraction and token budget it passes (SGLang's ``--mem-fraction-static`` and
``--chunked-prefill-size``, vLLM's ``--gpu-memory-utilization`` and ``--max-num-batched-tokens``:
``script_value``): a run uses the latest version committed on or before its run date.
Agentic, speed-test, multi-node and deprecated folders are other benchmarks and are left out.

Run: python benchmarks/inferencex_kv.py INFERENCEX_CLONE [--write FILE]
(the shipped table: SemiAnalysisAI/InferenceX @ 843c6254)
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
from pathlib import Path

from llm_codesign.validate.launch_scripts import SCRIPT_FLAGS

MODELS = {
    "dsr1": "deepseek-r1",
    "glm5": "glm-5",
    "qwen3.5": "qwen3.5-397b-a17b",
    "kimik2.5": "kimi-k2.5",
    "minimaxm2.5": "minimax-m2.5",
    "minimaxm3": "minimax-m3",
    "gptoss": "gpt-oss-120b",
    "dsv4": "deepseek-v4-pro",  # (InferenceX's model-prefix dsv4: deepseek-ai/DeepSeek-V4-Pro)
}
SCRIPT = re.compile(
    r"(?P<model>dsr1|dsv4|glm5|qwen3\.5|kimik2\.5|minimaxm2\.5|minimaxm3|gptoss)_(?P<prec>fp8|fp4|int4|bf16)_"
    r"(?P<gpu>h100|h200|b200|b300|gb200|gb300|mi300x|mi325x|mi355x)(?P<rest>[a-z0-9_-]*)\.sh$"
)
OTHER_ENGINES = ("trt", "atom", "disagg", "dynamo", "llm-d", "monitor", "replay")
# the engine a script launches, by what it runs
LAUNCHERS = (("sglang.launch_server", "sglang"), ("vllm serve", "vllm"))
# other benchmarks (agentic traces, speed tests, multi-node) and retired copies
OTHER_DIRS = ("/agentic/", "/speedbench/", "/multi_node/", "/deprecated/")
KV_FLAG = re.compile(r"--kv-cache-dtype[= ]+\"?([A-Za-z0-9_]+)")
# vLLM's MiniMax-M3 index-key cache format (``--attention-config.indexer_kv_dtype fp8`` or the
# JSON form ``--attention-config '{"indexer_kv_dtype": "fp8"}'``; unset: bf16)
IDX_FLAG = re.compile(r"indexer_kv_dtype[\"'\s:=]+([A-Za-z0-9_]+)")
STEPS_FLAG = re.compile(r"--speculative-num-steps[= ]+\"?\$?\{?([A-Za-z0-9_]+)")
# what an SGLang or vLLM script passes as a number, a variable or $((ISL * k)), by engine and the
# table's column (validate.launch_scripts.SCRIPT_FLAGS: its memory fraction and token budget)
FLAGS = {
    engine: {
        column: re.compile(rf"{flag}[= ]+\"?(\$\(\([^)]*\)\)|\$?\{{?[A-Za-z0-9_.]+)")
        for column, (flag, _) in flags.items()
    }
    for engine, flags in SCRIPT_FLAGS.items()
}
SGLANG_FLAGS = FLAGS["sglang"]
# $((ISL * k)) or $((ISL + k)): the table's isl*k / isl+k (validate.launch_scripts.ISL_VALUE)
ISL_EXPR = re.compile(r"\$\(\(\s*\$?\{?ISL\}?\s*([*+])\s*(\d+)\s*\)\)")
TP_TEST = re.compile(r"^\s*(?:el)?if\s+\[\[?\s*\"?\$\{?TP\}?\"?\s+(?:-eq|==)\s+\"?(\d+)")
# a test of the run's attention-DP setting (``if [[ "$DP_ATTENTION" == "true" ]]``)
ADP_TEST = re.compile(
    r"^\s*(?:el)?if\s+\[\[?\s*\"?\$\{?DP_ATTENTION(?::-\w*)?\}?\"?\s+==?\s+\"?true\b"
)
COLUMNS = (
    "engine",
    "gpu",
    "model",
    "precision",
    "spec",
    "since",
    "kv",
    "draft",
    *SCRIPT_FLAGS["sglang"],
    "idx",
    "script",
    "commit",
)


def script_value(text: str, flag_re: re.Pattern[str] = SGLANG_FLAGS["mem"]) -> str:
    """The value a script passes to a flag (``flag_re``; SGLang's ``--mem-fraction-static`` by
    default, ``FLAGS``): its number; ``isl*k`` / ``isl+k`` for ``$((ISL * k))`` / ``$((ISL + k))``
    (the run's nominal input length); where it names a variable, the variable's assignments
    (``VAR=0.8``, ``VAR=${VAR:-0.8}``), one value, or per TP where each sits under an
    ``if``/``elif [[ $TP -eq N ]]`` test (``tp8=0.82 tp4=0.95``), or the value of the runs with
    attention-DP where one sits under an ``if [[ "$DP_ATTENTION" == "true" ]]`` test beside the
    others' (``16384 adp=32768``); "" where the script passes none or its value is not
    readable so (one assigned under any other test and differing from the rest)."""
    flag = flag_re.search(text)
    if flag is None:
        return ""
    if re.fullmatch(r"[0-9.]+", flag.group(1)):
        return flag.group(1)
    if expr := ISL_EXPR.fullmatch(flag.group(1)):
        return f"isl{expr.group(1)}{expr.group(2)}"
    var = flag.group(1).lstrip("${")
    assign = re.compile(rf"^\s*{var}=\"?(?:\$\{{{var}:-)?([0-9.]+)")
    # per open ``if``, what its current branch tests: tpN, adp, "" (the else of those: the other
    # runs) or "?" (any other test, and its else)
    frames: list[str] = []
    found: dict[str, str] = {}
    for line in text.splitlines():
        word = line.split()[0].rstrip(";") if line.split() else ""
        tp = TP_TEST.match(line)
        test = f"tp{tp.group(1)}" if tp else "adp" if ADP_TEST.match(line) else "?"
        if word == "if":
            frames.append(test)
            if re.search(r";\s*fi\s*$", line):  # (a test of one line: closed on it)
                frames.pop()
        elif word == "elif" and frames:
            frames[-1] = test
        elif word in ("else", "fi") and frames:
            if word == "fi":
                frames.pop()
            else:
                frames[-1] = "?" if frames[-1] == "?" else ""
        m = assign.match(line)
        if m:
            found[next((f for f in reversed(frames) if f), "")] = m.group(1)
    if len(set(found.values())) == 1:
        return next(iter(found.values()))
    if "?" in found:  # set under another test, to another value: not the run's to read
        return ""
    if found and ("" not in found or set(found) == {"", "adp"}):  # (the default first)
        items = sorted(found.items(), key=lambda kv: kv[0] != "")  # (stable: tp order kept)
        return " ".join(f"{k}={v}" if k else v for k, v in items)
    return ""


def versions(clone: Path) -> list[dict[str, str]]:
    log = subprocess.run(
        ["git", "-C", str(clone), "log", "--first-parent", "-m", "--format=C %H %cd",
         "--date=format-local:%Y-%m-%d", "--name-only", "HEAD", "--", "benchmarks/*.sh"],
        capture_output=True, text=True, check=True, env={**os.environ, "TZ": "UTC"},
    ).stdout  # fmt: skip
    out, commit, date = [], "", ""
    for line in log.splitlines():
        if line.startswith("C "):
            _, commit, date = line.split()
            continue
        m = SCRIPT.search(line.strip())
        if not m or any(x in m["rest"] for x in OTHER_ENGINES):
            continue
        if any(d in line for d in OTHER_DIRS):
            continue
        text = subprocess.run(
            ["git", "-C", str(clone), "show", f"{commit}:{line.strip()}"],
            capture_output=True, text=True,
        ).stdout  # fmt: skip
        engine = next((e for cmd, e in LAUNCHERS if cmd in text), None)
        if engine is None:
            continue  # deleted in this commit, or another engine's script
        flag = KV_FLAG.search(text)
        kv = flag.group(1) if flag else "auto"
        if kv.startswith("$"):
            continue  # set from the environment: not readable from the script
        kv = "fp8" if kv.startswith("fp8") else "bf16" if kv in ("bf16", "bfloat16") else kv
        spec = "mtp" if "mtp" in m["rest"] or "--speculative-algorithm" in text else "none"
        draft = ""  # the draft tokens a step proposes: --speculative-num-steps, or its variable
        steps = STEPS_FLAG.search(text) if spec == "mtp" else None
        if steps and not steps.group(1).isdigit():
            steps = re.search(rf"\b{steps.group(1)}=\"?(\d+)", text)
        draft = steps.group(1) if steps else ""
        out.append({
            "engine": engine, "gpu": m["gpu"], "model": MODELS[m["model"]],
            "precision": m["prec"], "spec": spec, "since": date, "kv": kv, "draft": draft,
            **{c: script_value(text, f) for c, f in FLAGS[engine].items()},
            "idx": idx.group(1) if (idx := IDX_FLAG.search(text)) else "",
            "script": line.strip(), "commit": commit[:9],
        })  # fmt: skip
    return out


def changes(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    """Per (engine, GPU, model, precision, spec), the versions whose KV format or draft length
    differs from the one before (oldest first; on one date, the day's last commit)."""
    key = ("engine", "gpu", "model", "precision", "spec")
    rows = sorted(rows, key=lambda r: (*(r[k] for k in key), r["since"]))
    last_of_day: dict[tuple, dict[str, str]] = {}
    for r in rows:  # git log is newest first: the first row seen per day is the day's last
        last_of_day.setdefault((*(r[k] for k in key), r["since"]), r)
    out: list[dict[str, str]] = []
    for k in sorted(last_of_day):
        r = last_of_day[k]
        same = (
            all(out[-1][c] == r[c] for c in (*key, "kv", "draft", *SGLANG_FLAGS, "idx"))
            if out
            else False
        )
        if same:
            continue
        out.append(r)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("clone", type=Path, help="a clone of SemiAnalysisAI/InferenceX")
    ap.add_argument("--write", type=Path, help="the table to write")
    args = ap.parse_args()
    rows = changes(versions(args.clone))
    if args.write:
        with args.write.open("w", newline="") as fh:
            w = csv.DictWriter(fh, COLUMNS, lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        print(f"wrote {len(rows)} rows to {args.write}")
    for r in rows:
        print(",".join(r[c] for c in COLUMNS))


if __name__ == "__main__":
    main()

"""Which recipe each disaggregated InferenceX run named, and the batch limits it set (issue 11).

InferenceX's disaggregated runs (Dynamo with TensorRT-LLM, SGLang or vLLM) name one recipe per
(model, precision, GPU, lengths, speculative method, pools, concurrency) in its NVIDIA master
config (``.github/configs/nvidia-master.yaml``, later ``configs/nvidia-master.yaml``:
``CONFIG_FILE=`` in a pool's ``additional-settings``, a file of the srt-slurm repositories
(ishandhanani/srt-slurm, NVIDIA/srt-slurm), vendored into InferenceX under
``benchmarks/multi_node/srt-slurm-recipes``). This script reads a git clone of
SemiAnalysisAI/InferenceX, walks every version of the master config since 2025-09-01, reads the
recipe each disaggregated search space names (its first vendored version; before the recipe
files, the limits the master config states as settings: DECODE_MAX_BATCH_SIZE,
PREFILL_MAX_BATCH_SIZE, PREFILL_MAX_NUM_TOKENS) and writes the limits,
with the dates the master config named that recipe for that run, to the bundled table
``data/validation/inferencex_disagg_limits.csv``:

* decode_max_batch: sequences one decode scheduling rank runs at once: TensorRT-LLM's
  ``max_batch_size`` (per attention-DP rank where the pool runs attention-DP), SGLang's
  ``max-running-requests`` // ``dp-size`` (or ``data-parallel-size``: its scheduler splits it
  over its DP ranks under ``enable-dp-attention``: sgl-project/sglang
  python/sglang/srt/model_executor/model_runner.py, ``dp_size`` where DP attention is on),
  vLLM's ``max-num-seqs`` (per engine, one per DP rank; where a pool sets none, vLLM's own
  for the OpenAI server, ``specs.gpu_defaults.VLLM_SERVER_LIMITS``, as for its token budget);
* prefill_max_batch / prefill_max_tokens: the prefill worker's limits in the same terms
  (token budget: ``max_num_tokens``; SGLang ``chunked-prefill-size``; vLLM
  ``max-num-batched-tokens``);
* decode_moe_comm / prefill_moe_comm: the MoE dispatch/combine family each pool runs
  (``pool_moe_comm``: SGLang's ``moe-a2a-backend`` and ``deepep-mode``, vLLM's
  ``all2all-backend``, TensorRT-LLM's ``TRTLLM_FORCE_ALLTOALL_METHOD`` where the pool's
  environment sets it; blank for TensorRT-LLM otherwise, which chooses its own, and for the
  master config's settings form);
* decode_draft_tokens: draft tokens a decode step proposes where the pool speculates
  (``pool_drafts``: TensorRT-LLM's ``num_nextn_predict_layers``, SGLang's
  ``speculative-num-steps``, vLLM's ``num_speculative_tokens``; the settings form's
  DECODE_MTP_SIZE), blank where it states none.

A run's concurrency is keyed both as its master-config ``conc-list`` and as the recipe's own
``benchmark.concurrencies`` (what InferenceX reports where they differ). Keys whose recipes
cannot be read (not vendored, another format) are left out: those rows keep the engine's limits.

Run: python benchmarks/inferencex_disagg_recipes.py --repo PATH_TO_INFERENCEX_GIT [--write]
(``--write``: replace the bundled table; without it, print a summary)
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import yaml

from llm_codesign.report.launch_data import SGLANG_A2A, SGLANG_DEEPEP_MODES, TRTLLM_A2A, VLLM_A2A
from llm_codesign.specs.gpu_defaults import VLLM_SERVER_LIMITS
from llm_codesign.validate.mapping import match_model_name

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "llm_codesign" / "data" / "validation" / "inferencex_disagg_limits.csv"
VENDORED = "benchmarks/multi_node/srt-slurm-recipes"
MASTERS = (".github/configs/nvidia-master.yaml", "configs/nvidia-master.yaml")
SINCE = "2025-09-01"
FIELDS = (
    "model", "precision", "gpu", "framework", "isl", "osl", "spec", "concurrency",
    "prefill_workers", "prefill_tp", "prefill_ep", "prefill_adp",
    "decode_workers", "decode_tp", "decode_ep", "decode_adp",
    "decode_max_batch", "prefill_max_batch", "prefill_max_tokens", "decode_moe_comm",
    "prefill_moe_comm", "decode_draft_tokens",
    "config_file", "first_seen", "last_seen",
)  # fmt: skip
Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", repo, *args], capture_output=True, text=True, check=True
    ).stdout


def vendored_index(repo: str) -> dict[str, str]:
    """Vendored recipe path -> the commit that first added it."""
    out: dict[str, str] = {}
    commit = ""
    log = git(repo, "log", "--all", "--reverse", "--format=C %H", "--name-only", "--", VENDORED)
    for line in log.splitlines():
        if line.startswith("C "):
            commit = line[2:]
        elif line.strip():
            out.setdefault(line.strip(), commit)
    return out


def versions(repo: str) -> list[tuple[str, str, str]]:
    """(commit, date, path) of every master-config version on main since SINCE, oldest first."""
    out = []
    for path in MASTERS:
        log = git(repo, "log", "main", "--format=%H %cs", f"--since={SINCE}", "--", path)
        out += [(*line.split(), path) for line in log.splitlines()]
    return sorted(out, key=lambda v: v[1])


# per backend: (its config key, the batch key, the prefill token-budget key, whether the batch
# is the whole server's, split over its DP ranks)
BACKENDS = (
    ("trtllm_config", "max_batch_size", "max_num_tokens", False),
    ("sglang_config", "max-running-requests", "chunked-prefill-size", True),
    ("vllm_config", "max-num-seqs", "max-num-batched-tokens", False),
)


def limits(rec: dict) -> tuple[int, int, int] | None:
    """(decode batch per scheduling rank, prefill batch per rank, prefill token budget) a
    recipe sets (module doc), None for a recipe of another form."""
    be = rec.get("backend") or {}
    # a vLLM pool that sets no limit runs vLLM's own for the OpenAI server on a GPU of 70 GiB or
    # more (every GPU InferenceX runs disaggregated: specs.gpu_defaults.VLLM_SERVER_LIMITS)
    vllm_tokens, vllm_seqs = VLLM_SERVER_LIMITS[True]

    def per_rank(cfg: dict, batch: str, split_dp: bool, own: int | None) -> int:
        # (SGLang's --dp-size, spelled --data-parallel-size in the later recipes; it splits the
        # batch over its DP ranks under --enable-dp-attention only)
        dp = cfg.get("dp-size") or cfg.get("data-parallel-size") or 1
        split = split_dp and bool(cfg.get("enable-dp-attention"))
        value = cfg[batch] if own is None or batch in cfg else own
        return int(value) // (int(dp) if split else 1)

    for key, batch, tokens, split_dp in BACKENDS:
        if key not in be:
            continue
        seqs, budget = (vllm_seqs, vllm_tokens) if key == "vllm_config" else (None, None)
        try:
            p, d = be[key]["prefill"], be[key]["decode"]
            prefill_tokens = int(p[tokens] if budget is None or tokens in p else budget)
            return (
                per_rank(d, batch, split_dp, seqs),
                per_rank(p, batch, split_dp, seqs),
                prefill_tokens,
            )
        except (KeyError, TypeError, ValueError):
            return None
    return None


def pool_moe_comm(rec: dict | None, pool: str) -> str:
    """The MoE dispatch/combine family the recipe's ``pool`` (prefill, decode) runs
    (``EngineConstants.moe_comm``): SGLang's ``moe-a2a-backend`` (older ``enable-deepep-moe``)
    with ``deepep-mode``, vLLM's ``all2all-backend``, TensorRT-LLM's
    ``TRTLLM_FORCE_ALLTOALL_METHOD`` in the pool's environment (the tables of
    ``report.launch_data``; absent: the engine's all-gather), "" for TensorRT-LLM without it (its
    own choice) or a backend the model has no family for."""
    be = (rec or {}).get("backend") or {}
    sg = ((be.get("sglang_config") or {}).get(pool)) or {}
    vl = ((be.get("vllm_config") or {}).get(pool)) or {}
    if "sglang_config" in be:
        # the older enable-deepep-moe selects DeepEP whatever moe-a2a-backend says (SGLang)
        a2a = "deepep" if sg.get("enable-deepep-moe") else str(sg.get("moe-a2a-backend", "none"))
        family = SGLANG_A2A.get(a2a, "")
        mode = str(sg.get("deepep-mode", "auto"))
        return SGLANG_DEEPEP_MODES.get(mode, "") if family == "deepep" else family
    if "vllm_config" in be:
        return VLLM_A2A.get(str(vl.get("all2all-backend", "allgather_reducescatter")), "")
    forced = ((be.get(f"{pool}_environment") or {}).get("TRTLLM_FORCE_ALLTOALL_METHOD")) or ""
    return TRTLLM_A2A.get(str(forced), "") if "trtllm_config" in be else ""


def pool_drafts(rec: dict | None, pool: str) -> int | str:
    """Draft tokens a step of the recipe's ``pool`` proposes, "" where it states none:
    TensorRT-LLM's ``speculative_config.num_nextn_predict_layers`` (or ``max_draft_len``),
    SGLang's ``speculative-num-steps`` (its EAGLE chain: with top-k 1, num-draft-tokens = steps +
    1, the convention of ``validate.conventions.MTP_DRAFT_TOKENS``), vLLM's
    ``speculative-config`` ``num_speculative_tokens``."""
    be = (rec or {}).get("backend") or {}
    trt = ((be.get("trtllm_config") or {}).get(pool) or {}).get("speculative_config") or {}
    sg = (be.get("sglang_config") or {}).get(pool) or {}
    vl = ((be.get("vllm_config") or {}).get(pool) or {}).get("speculative-config") or {}
    if isinstance(vl, str):
        try:
            vl = json.loads(vl)
        except ValueError:
            vl = {}
    for value in (
        trt.get("num_nextn_predict_layers", trt.get("max_draft_len")),
        # (SGLang takes --speculative-algo as the short form of --speculative-algorithm)
        sg.get("speculative-num-steps")
        if sg.get("speculative-algorithm") or sg.get("speculative-algo")
        else None,
        vl.get("num_speculative_tokens") if isinstance(vl, dict) else None,
    ):
        if value is not None and str(value).isdigit():
            return int(value)
    return ""


def search_spaces(entry: dict):
    seqs = entry.get("seq-len-configs") or (entry.get("scenarios") or {}).get("fixed-seq-len")
    for seq in seqs or []:
        for s in seq.get("search-space", []):
            yield int(seq["isl"]), int(seq["osl"]), s


def config_file(space: dict) -> str | None:
    for pool in (space["prefill"], space["decode"]):
        for setting in pool.get("additional-settings", []) or []:
            if isinstance(setting, str) and setting.startswith("CONFIG_FILE="):
                return setting.split("=", 1)[1].strip()
    return None


def stated_limits(space: dict) -> tuple[int, int, int, int | str] | None:
    """The limits a search space states as settings (the master config's form before the
    recipe files: DECODE_MAX_BATCH_SIZE, PREFILL_MAX_BATCH_SIZE, PREFILL_MAX_NUM_TOKENS) and its
    decode pool's draft tokens (DECODE_MTP_SIZE, "" where it states none)."""
    said = {}
    for pool in (space["prefill"], space["decode"]):
        for setting in pool.get("additional-settings", []) or []:
            key, eq, value = str(setting).partition("=")
            if eq and value.strip().isdigit():
                said[key.strip()] = int(value)
    keys = ("DECODE_MAX_BATCH_SIZE", "PREFILL_MAX_BATCH_SIZE", "PREFILL_MAX_NUM_TOKENS")
    if not all(k in said for k in keys):
        return None
    drafts = said.get("DECODE_MTP_SIZE") or ""
    return (*(said[k] for k in keys), drafts)  # type: ignore[return-value]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True, help="git dir of SemiAnalysisAI/InferenceX")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    index = vendored_index(args.repo)
    by_tail: dict[str, list[str]] = defaultdict(list)
    for path in index:
        parts = path[len(VENDORED) + 1 :].split("/")
        for i in range(len(parts)):
            by_tail["/".join(parts[i:])].append(path)
    recipe_cache: dict[str, tuple] = {}

    def recipe_limits(cfg_file: str, prefix: str) -> tuple[tuple | None, set]:
        tail = cfg_file.removeprefix("recipes/")
        cands = by_tail.get(tail, [])
        if len(cands) > 1:
            cands = [c for c in cands if f"/{prefix}/" in c] or cands
        if len(cands) != 1:
            return None, set()
        path = cands[0]
        if path not in recipe_cache:
            try:
                rec = yaml.load(git(args.repo, "show", f"{index[path]}:{path}"), Loader=Loader)
            except (subprocess.CalledProcessError, yaml.YAMLError):
                rec = None
            recipe_cache[path] = (limits(rec), rec) if isinstance(rec, dict) else (None, None)
        lim, rec = recipe_cache[path]
        comm = (pool_moe_comm(rec, "decode"), pool_moe_comm(rec, "prefill"))
        lim = (*lim, *comm, pool_drafts(rec, "decode")) if lim else None
        ran = set()
        if rec:
            text = str((rec.get("benchmark") or {}).get("concurrencies", ""))
            ran = {int(c) for c in text.replace(" ", "x").split("x") if c.isdigit()}
        return lim, ran

    seen: dict[tuple, dict[tuple, list[str]]] = defaultdict(lambda: defaultdict(list))
    models: dict[str, str | None] = {}
    for commit, date, path in versions(args.repo):
        try:
            cfg = yaml.load(git(args.repo, "show", f"{commit}:{path}"), Loader=Loader)
        except (subprocess.CalledProcessError, yaml.YAMLError):
            continue
        for name, e in (cfg or {}).items():
            if not isinstance(e, dict) or not e.get("disagg"):
                continue
            hf = str(e.get("model", ""))
            if hf not in models:
                models[hf] = match_model_name(hf.split("/")[-1])
            model = models[hf]
            parts = name.split("-")
            if model is None or len(parts) < 4:
                continue
            prec, gpu, fw = parts[1], parts[2], str(e.get("framework", ""))
            for isl, osl, s in search_spaces(e):
                cfg_file = config_file(s)
                if cfg_file:
                    lim, ran = recipe_limits(cfg_file, str(e.get("model-prefix", "")))
                else:  # the earlier form: the limits as settings of the master config itself
                    lim, ran, cfg_file = stated_limits(s), set(), f"{path} ({name} settings)"
                    lim = (*lim[:3], "", "", lim[3]) if lim else None  # (no dispatch stated)
                if lim is None:
                    continue
                spec = "mtp" if (s.get("spec-decoding") or "none") not in ("none", "") else "none"
                pools = tuple(
                    (int(x["num-worker"]), int(x["tp"]), int(x["ep"]), bool(x.get("dp-attn")))
                    for x in (s["prefill"], s["decode"])
                )
                for conc in set(int(c) for c in s.get("conc-list", [])) | ran:
                    key = (model, prec, gpu, fw, isl, osl, spec, conc, *pools)
                    seen[key][(*lim, cfg_file)].append(date)
    rows = []
    for key, values in sorted(seen.items(), key=lambda kv: str(kv[0])):
        model, prec, gpu, fw, isl, osl, spec, conc, p, d = key
        for value, dates in values.items():
            rows.append(
                (model, prec, gpu, fw, isl, osl, spec, conc, *p, *d, *value, min(dates), max(dates))
            )
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(FIELDS)
    w.writerows(rows)
    if args.write:
        OUT.write_text(buf.getvalue(), encoding="utf-8")
    keys = {r[:16] for r in rows}
    print(f"{len(rows)} rows, {len(keys)} keys, {len(recipe_cache)} recipes read", file=sys.stderr)
    if not args.write:
        sys.stdout.write(buf.getvalue())


if __name__ == "__main__":
    main()

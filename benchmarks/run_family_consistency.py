"""Closed-loop runs that contradict their own concurrency sweep (issue 11, the c257+ class).

The rule is ``validate.consistency`` (one home): in a steady closed loop a run's TPOT neither
falls as clients grow nor grows faster than they do (within ``SWEEP_TOLERANCE``), and the run
that breaks that against the most runs of its sweep is flagged first. ``validate`` keeps such
runs' rows as measured with a note; ``calibrate-fit`` leaves them out. This lists them for the
four calibration sets, each with the sequences it had in flight by Little's law where the run
states its TTFT: a closed loop at c clients decodes B = c x D / (TTFT + D) sequences a step,
D = (OSL - 1) x TPOT. A sweep is one engine release (stop 70): the vLLM gpt-oss-120b
512-client runs (vLLM 0.11.2, about 100 in flight) are no longer compared with the 0.18.0 runs
of their campaign.

Run: python benchmarks/run_family_consistency.py
"""

from __future__ import annotations

import importlib
from collections import defaultdict

from engine_by_gpu import FILES, GT

from llm_codesign.validate import map_row, read_measurements

consistency = importlib.import_module("llm_codesign.validate.consistency")


def main() -> None:
    rows = []
    for name in FILES:
        path = GT / name
        if path.exists():
            for i, raw in enumerate(read_measurements(path)):
                m = map_row(i, raw)
                if not isinstance(m, str):
                    rows.append(m)
    keys, flagged = consistency.mapped_contradictions(rows)
    runs: dict[tuple, dict[str, float]] = defaultdict(dict)
    for k, r in zip(keys, rows):
        if k is not None and (k, r.load) in flagged:
            runs[(k, r.load)][r.metric] = r.measured
    sweeps = {k for k, r in zip(keys, rows) if k is not None and r.metric == "tpot_ms"}
    print(f"closed-loop sweeps with TPOT: {len(sweeps)}; runs contradicting theirs: {len(flagged)}")
    head = "source | model | GPU | engine | plan | ISL/OSL | clients | TPOT ms | in flight | reason"
    print(f"| {head} |")
    print("|---|---|---|---|---|---|---:|---:|---:|---|")
    for (key, load), reason in sorted(flagged.items(), key=lambda kv: str(kv[0])):
        source, model, gpu, engine, plan = key.source, key.model, key.gpu, key.engine, key.plan
        isl, osl = key.isl, key.osl
        engine = f"{engine} ({key.release})" if key.release else engine
        m = runs[(key, load)]
        tpot, ttft = m.get("tpot_ms", float("nan")), m.get("ttft_ms")
        decode = (osl - 1) * tpot
        flight = f"{load * decode / (ttft + decode):.0f}" if ttft else "-"
        pairs = reason.split(" against ", 1)[1].split(" (a steady", 1)[0]
        print(
            f"| {source} | {model} | {gpu} | {engine} | {plan} | {isl}/{osl} | {load:g} | "
            f"{tpot:.2f} | {flight} | against {pairs} |"
        )


if __name__ == "__main__":
    main()

"""Validation: predict every row of a published-measurement CSV and report the error.

Input format: ``../shared/groundtruth/serving.csv`` (columns in ``REQUIRED_COLUMNS``; its
SOURCES.md explains them). Each row is mapped to (model, GPU, precision, plan, workload, serving
mode, metric) or skipped with a counted reason; nothing is dropped silently.

Serving modes:
  * ``concurrency``: a known client concurrency (closed loop) -> serving.evaluate;
  * ``static``: TensorRT-LLM <= v0.9 static batch -> serving.evaluate_static;
  * ``offline``: max-throughput runs with unknown concurrency -> the best prediction over the
    concurrencies that fit in memory (SOURCES.md caveat 1), at most ``OFFLINE_MAX_BATCH``;
  * ``rate``: open-loop request rate -> the concurrency whose throughput equals the rate
    (Little's law on the closed-loop curve); "INF" = offline.
Errors are (predicted - measured) / measured.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .calibrate import apply_profile, load_profile, match_hardware_id
from .errors import DataFileError
from .explore import POINTS_PER_OCTAVE, concurrency_grid
from .serving import evaluate, evaluate_static
from .specs.engine import EngineConstants, engine_for_framework, load_engine
from .specs.hardware import HardwareSpec, hardware_alias_table, hardware_chip_table, load_hardware
from .specs.model import ModelSpec, load_model, model_alias_table
from .specs.precision import parse_precision

REQUIRED_COLUMNS = (
    "source_id",
    "model",
    "gpu",
    "num_gpus",
    "precision",
    "tp",
    "pp",
    "ep",
    "dp",
    "framework",
    "isl",
    "osl",
    "concurrency_or_batch",
    "metric",
    "value",
)
METRICS = (
    "output_tok_s_total",
    "output_tok_s_per_gpu",
    "total_tok_s",
    "total_tok_s_per_gpu",
    "request_latency_ms",
    "tok_s_per_user",
    "ttft_ms",
    "tpot_ms",
    "itl_ms",
)
THROUGHPUT_METRICS = (
    "output_tok_s_total",
    "output_tok_s_per_gpu",
    "total_tok_s",
    "total_tok_s_per_gpu",
)
OFFLINE_MAX_BATCH = 4096  # trtllm-bench caps max_batch_size well below this; the grid stops here
# the sweeps' geometric grid (explore.grid), 4 points per doubling up to OFFLINE_MAX_BATCH
CONCURRENCY_GRID = concurrency_grid(np.array([OFFLINE_MAX_BATCH]), POINTS_PER_OCTAVE)[1]
MAX_CSV_BYTES = 200_000_000


@dataclass(frozen=True)
class MappedRow:
    index: int
    source_id: str
    model: str
    gpu: str
    hardware: str
    precision: str
    engine: str
    tp: int
    pp: int
    ep: int
    attention_dp: bool
    isl: int
    osl: int
    mode: str  # concurrency | static | offline | rate
    load: float  # concurrency, batch, or request rate (req/s); 0 for offline
    metric: str
    measured: float
    metric_gpus: int  # GPUs the measured metric refers to
    raw: dict[str, str] = field(compare=False, repr=False, default_factory=dict)


@dataclass
class ValidationReport:
    rows: list[dict[str, Any]]
    skipped: list[dict[str, Any]]
    summary: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "skipped": self.skipped, "summary": self.summary}


def read_measurements(path: str | Path) -> list[dict[str, str]]:
    p = Path(path)
    if not p.is_file():
        raise DataFileError(f"{p}: no such file")
    if p.stat().st_size > MAX_CSV_BYTES:
        raise DataFileError(f"{p}: larger than {MAX_CSV_BYTES} bytes")
    try:
        with p.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise DataFileError(
                    f"{p}: missing column(s) {', '.join(missing)}; required: {', '.join(REQUIRED_COLUMNS)}"
                )
            return list(reader)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise DataFileError(f"{p}: not a readable CSV ({exc})") from None


def _int(text: str) -> int | None:
    t = text.strip().upper()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*K", t)
    if m:
        return int(float(m.group(1)) * 1024)
    try:
        v = float(t)
    except ValueError:
        return None
    return int(v) if v > 0 and v == int(v) else None


def map_precision(model: ModelSpec, hw: HardwareSpec, text: str) -> str | None:
    """Precision string ``weights/activations/kv`` -> preset id (+ KV override).

    Rules: fp4 = NVFP4 on NVIDIA Blackwell, except gpt-oss whose checkpoints are MXFP4 (W4A8 on
    Blackwell, weight-only W4A16 on Hopper); fp8 = FP8 (gpt-oss on Hopper: MXFP4 weights, BF16
    compute, FP8 KV); bf16/fp16 as written. KV: an explicit fp8 third field sets FP8 KV.
    """
    parts = [p.strip().lower() for p in text.split("/")]
    w = parts[0] if parts else ""
    kv = parts[2].split()[0] if len(parts) > 2 and parts[2] else "?"
    hopper = hw.architecture in ("hopper", "ampere", "ada")
    if model.model_type == "gpt_oss":
        base = "mxfp4-a16" if hopper else "mxfp4-a8"
        return base + ("+fp8-kv" if kv == "fp8" or "fp8" in text.lower() else "")
    if w in ("fp4", "nvfp4"):
        base = "nvfp4" if hw.supports("nvfp4") else ("mxfp4" if hw.supports("mxfp4") else None)
    elif w in ("fp8", "bf16", "fp16"):
        base = w
    elif w in ("int4", "w4a16"):
        base = "w4a16"
    else:
        return None
    if base is None:
        return None
    if kv == "fp8" and base in ("bf16", "fp16", "w4a16"):
        base += "+fp8-kv"
    if kv in ("bf16", "fp16") and base in ("fp8", "nvfp4"):
        base += f"+{kv}-kv"
    return base


# checkpoint-variant suffixes that do not change the architecture
_MODEL_SUFFIXES = re.compile(
    r"(-(instruct|chat|hf|base|it|fp8|fp4|nvfp4|mxfp4|awq|gptq|int4|int8|w4a16|w8a8|bf16|fp16|dynamic|"
    r"v0\.\d|0528|2507|2501|2412|thinking|reasoning))+$"
)


def match_model_name(name: str) -> str | None:
    """A table's model name -> bundled model id: exact alias first, then the name without its
    organisation prefix and checkpoint-variant suffixes (``meta-llama/Llama-3.1-70B-Instruct-FP8``
    -> ``llama-3.1-70b``)."""
    table = model_alias_table()
    text = name.strip().lower()
    if text in table:
        return table[text]
    base = text.rsplit("/", 1)[-1]
    for candidate in (base, _MODEL_SUFFIXES.sub("", base)):
        if candidate in table:
            return table[candidate]
    return None


def match_gpu_name(name: str) -> str | None:
    """A table's GPU name -> bundled hardware id: an id or alias of a hardware file first, then
    the longest chip name (the files' ``name_match``) in the text with spaces and punctuation
    removed (``NVIDIA H100 80GB HBM3`` -> ``h100-sxm``); a name that also holds one of that
    file's ``unless`` words (PCIe/NVL variants, other memory sizes) is another product: None."""
    text = name.strip().lower()
    exact = hardware_alias_table().get(text)
    if exact:
        return exact
    squashed = re.sub(r"[^a-z0-9]", "", text)
    for chip, hid, unless in hardware_chip_table():
        if chip in squashed:
            return None if any(w in squashed for w in unless) else hid
    return None


def map_row(i: int, row: dict[str, str]) -> MappedRow | str:
    """A mapped row, or the reason it cannot be predicted."""
    metric = row["metric"].strip()
    if metric.endswith(("_p99", "_p90", "_p95", "_median")):
        return f"percentile metric {metric} (the model predicts means)"
    if metric not in METRICS:
        return f"unsupported metric {metric}"
    try:
        measured = float(row["value"])
    except ValueError:
        return "non-numeric value"
    if not math.isfinite(measured) or measured <= 0:
        return "non-positive value"
    context = " ".join((row.get("notes", ""), row["framework"], row["dp"])).lower()
    if "disagg" in context:
        return "disaggregated prefill/decode rows (pool split not mapped)"
    model_id = match_model_name(row["model"])
    if model_id is None:
        return f"unknown model {row['model'].strip()}"
    hw_id = match_gpu_name(row["gpu"])
    if hw_id is None:
        return f"unknown gpu {row['gpu'].strip()}"
    model, hw = load_model(model_id), load_hardware(hw_id)
    prec = map_precision(model, hw, row["precision"])
    if prec is None:
        return f"precision not runnable: {row['precision'].strip()} on {hw_id}"
    tp, pp = _int(row["tp"] or ""), _int(row["pp"] or "")
    if tp is None or pp is None:
        return "plan not stated (tp/pp blank)"
    dp = row["dp"].strip()
    adp = dp.lower().startswith("attn-dp")
    ep = _int(row["ep"] or "") or 1
    if adp and not row["ep"].strip() and model.moe is not None:
        ep = tp  # TRT-LLM MoE configs with attention DP run EP over the tp group (DEP)
    if model.moe is None:
        ep, adp = 1, False if not adp else adp
    isl, osl = _int(row["isl"] or ""), _int(row["osl"] or "")
    if isl is None or osl is None:
        return "isl/osl not a number (dataset lengths)"
    cob = row["concurrency_or_batch"].strip().lower()
    fw = row["framework"]
    if cob.startswith("max-throughput") or "offline" in cob:
        mode, load = "offline", 0.0
    elif cob.startswith("request rate"):
        notes = row.get("notes", "")
        n_req = re.search(r"(\d+) requests", notes)
        achieved = re.search(r"achieved Tput\(req/s\)=([\d.]+)", notes)
        if "inf" in cob:
            # all requests issued at once: a closed loop whose concurrency is the request count
            if not n_req:
                return "request rate INF without a request count"
            mode, load = "concurrency", float(n_req.group(1))
        else:
            m = re.search(r"([\d.]+)\s*qps", cob)
            if not m:
                return "unparsed request rate"
            # the achieved rate (when reported) is what the server actually carried
            mode, load = "rate", float(achieved.group(1)) if achieved else float(m.group(1))
    else:
        c = _int(cob)
        if c is None:
            return "unparsed concurrency/batch"
        mode = "static" if "static" in fw.lower() else "concurrency"
        load = float(c)
    gpus = _int(row["num_gpus"] or "") or tp * pp
    return MappedRow(
        index=i,
        source_id=row["source_id"],
        model=model_id,
        gpu=row["gpu"],
        hardware=hw_id,
        precision=prec,
        engine=engine_for_framework(fw),
        tp=tp,
        pp=pp,
        ep=ep,
        attention_dp=adp,
        isl=isl,
        osl=osl,
        mode=mode,
        load=load,
        metric=metric,
        measured=measured,
        metric_gpus=gpus,
        raw=row,
    )


def _metric_value(
    metric: str,
    per_gpu_out: Array,
    per_gpu_total: Array,
    ttft: Array,
    tpot: Array,
    gpus: Array,
    osl: Array | float = 1.0,
) -> Array:
    if metric == "request_latency_ms":  # first token, then OSL - 1 decode steps
        return (ttft + np.maximum(np.asarray(osl, dtype=float) - 1.0, 0.0) * tpot) * 1e3
    if metric == "output_tok_s_per_gpu":
        return per_gpu_out
    if metric == "output_tok_s_total":
        return per_gpu_out * gpus
    if metric == "total_tok_s_per_gpu":
        return per_gpu_total
    if metric == "total_tok_s":
        return per_gpu_total * gpus
    if metric == "ttft_ms":
        return ttft * 1e3
    if metric in ("tpot_ms", "itl_ms"):
        return tpot * 1e3
    if metric == "tok_s_per_user":
        return 1.0 / tpot
    raise AssertionError(metric)


Array = np.ndarray


def predict_rows(
    rows: list[MappedRow],
    engines: dict[str, EngineConstants] | None = None,
    engine_override: EngineConstants | None = None,
    hw_override: dict[str, HardwareSpec] | None = None,
) -> tuple[np.ndarray, list[str]]:
    """Predictions for mapped rows (NaN + reason where infeasible), grouped and vectorized."""
    preds = np.full(len(rows), np.nan)
    notes = [""] * len(rows)
    groups: dict[tuple[str, str, str, str], list[int]] = {}
    for j, r in enumerate(rows):
        groups.setdefault((r.model, r.hardware, r.precision, r.engine), []).append(j)
    for (mid, hid, pid, eid), idx in groups.items():
        model = load_model(mid)
        hw = (hw_override or {}).get(hid) or load_hardware(hid)
        prec = parse_precision(pid)
        eng = engine_override or (engines or {}).get(eid) or load_engine(eid)
        sub = [rows[j] for j in idx]
        for mode in ("concurrency", "static", "offline", "rate"):
            js = [j for j, r in zip(idx, sub) if r.mode == mode]
            if not js:
                continue
            rs = [rows[j] for j in js]

            def a(f: Any, rs: list[MappedRow] = rs) -> np.ndarray:
                return np.array([f(r) for r in rs])

            tp, pp, ep, adp = (
                a(lambda r: r.tp),
                a(lambda r: r.pp),
                a(lambda r: r.ep),
                a(lambda r: r.attention_dp),
            )
            isl, osl, gpus = a(lambda r: r.isl), a(lambda r: r.osl), a(lambda r: r.metric_gpus)
            if mode == "static":
                out = evaluate_static(
                    model,
                    hw,
                    prec,
                    eng,
                    tp=tp,
                    pp=pp,
                    ep=ep,
                    attention_dp=adp,
                    isl=isl,
                    osl=osl,
                    batch=a(lambda r: r.load),
                )
                values = {
                    m: _metric_value(
                        m,
                        out["output_tok_s_per_gpu"],
                        out["total_tok_s_per_gpu"],
                        out["ttft_s"],
                        out["tpot_s"],
                        gpus,
                        osl,
                    )
                    for m in {r.metric for r in rs}
                }
                for k, (j, r) in enumerate(zip(js, rs)):
                    if out["feasible"][k]:
                        preds[j] = values[r.metric][k]
                    else:
                        notes[j] = str(out["reason"][k])
                continue
            if mode == "concurrency":
                out = evaluate(
                    model,
                    hw,
                    prec,
                    eng,
                    tp=tp,
                    pp=pp,
                    ep=ep,
                    attention_dp=adp,
                    isl=isl,
                    osl=osl,
                    concurrency=a(lambda r: r.load),
                    benchmark_burst=True,
                )
                for k, (j, r) in enumerate(zip(js, rs)):
                    v = _metric_value(
                        r.metric,
                        out.output_tok_s_per_gpu[k],
                        out.total_tok_s_per_gpu[k],
                        out.ttft_s[k],
                        out.tpot_s[k],
                        gpus[k],
                        osl[k],
                    )
                    if out.feasible[k]:
                        preds[j] = float(v)
                    else:
                        notes[j] = str(out.reason[k])
                continue
            # offline / rate: a concurrency grid per row
            g = CONCURRENCY_GRID[CONCURRENCY_GRID <= eng.max_batch_size][None, :]
            out = evaluate(
                model,
                hw,
                prec,
                eng,
                tp=tp[:, None],
                pp=pp[:, None],
                ep=ep[:, None],
                attention_dp=adp[:, None],
                isl=isl[:, None],
                osl=osl[:, None],
                concurrency=g,
                benchmark_burst=mode == "offline",
            )
            thr = np.where(out.feasible, out.output_tok_s_per_gpu, -np.inf)
            for k, (j, r) in enumerate(zip(js, rs)):
                if not np.any(np.isfinite(thr[k])):
                    notes[j] = str(out.reason[k, 0])
                    continue
                if mode == "offline":
                    b = int(np.argmax(thr[k]))
                else:
                    req_rate = out.output_tok_s_per_gpu[k] * r.tp * r.pp / r.osl
                    ok = np.where(out.feasible[k] & (req_rate >= r.load * 0.999))[0]
                    b = int(ok[0]) if len(ok) else int(np.argmax(thr[k]))
                    if len(ok) == 0:
                        notes[j] = "rate above predicted capacity (saturated)"
                v = _metric_value(
                    r.metric,
                    out.output_tok_s_per_gpu[k, b],
                    out.total_tok_s_per_gpu[k, b],
                    out.ttft_s[k, b],
                    out.tpot_s[k, b],
                    gpus[k],
                    osl[k],
                )
                if mode == "rate" and r.metric in THROUGHPUT_METRICS and not notes[j]:
                    # below saturation the delivered throughput is the offered rate
                    per_gpu = r.load * r.osl / (r.tp * r.pp)
                    v = _metric_value(
                        r.metric, per_gpu, per_gpu * (r.isl + r.osl) / r.osl, 0.0, 1.0, gpus[k]
                    )
                preds[j] = float(v)
    return preds, notes


def metric_class(metric: str) -> str:
    """throughput | tpot | ttft | latency: the classes targets and fits are stated for."""
    if metric in THROUGHPUT_METRICS:
        return "throughput"
    if metric in ("tpot_ms", "itl_ms", "tok_s_per_user"):
        return "tpot"
    if metric == "request_latency_ms":
        return "latency"
    return "ttft"


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per source_id and metric: count, median |error|, p90 |error|, signed median (bias), in %;
    plus per metric class over rows with a known batch/concurrency."""
    out: dict[str, Any] = {"by_source_metric": {}, "known_load": {}, "all": {}}

    def stats(errs: list[float]) -> dict[str, float]:
        e = np.asarray(errs) * 100.0
        return {
            "count": int(e.size),
            "median_abs_pct_error": float(np.median(np.abs(e))),
            "p90_abs_pct_error": float(np.percentile(np.abs(e), 90)),
            "signed_median_pct_error": float(np.median(e)),
        }

    groups: dict[str, list[float]] = {}
    known: dict[str, list[float]] = {}
    for r in records:
        groups.setdefault(f"{r['source_id']}|{r['metric']}", []).append(r["error"])
        if r["mode"] in ("concurrency", "static"):
            cls = metric_class(r["metric"])
            known.setdefault(cls, []).append(r["error"])
    for k, v in sorted(groups.items()):
        src, metric = k.split("|")
        out["by_source_metric"].setdefault(src, {})[metric] = stats(v)
    for k, v in sorted(known.items()):
        out["known_load"][k] = stats(v)
    if records:
        out["all"] = stats([r["error"] for r in records])
    return out


def validate(
    data: str | Path | list[str | Path],
    *,
    engine: str | Path | EngineConstants | None = None,
    profile: str | Path | None = None,
) -> ValidationReport:
    """Predict every mappable row of one or more measurement CSVs and summarize the error.

    ``engine`` forces one engine's constants for all rows; by default each row's framework
    picks ``trtllm``, ``vllm`` or ``sglang``.
    """
    paths = data if isinstance(data, list) else [data]
    if len(paths) == 1 and Path(paths[0]).is_file() and is_gemm_table(paths[0]):
        return validate_gemm(paths[0], engine)
    raw: list[dict[str, str]] = []
    for p in paths:
        raw.extend(read_measurements(p))
    mapped: list[MappedRow] = []
    skipped: dict[str, int] = {}
    for i, row in enumerate(raw):
        m = map_row(i, row)
        if isinstance(m, str):
            skipped[m] = skipped.get(m, 0) + 1
        else:
            mapped.append(m)
    override = load_engine(engine) if engine is not None else None
    hw_over = None
    if profile is not None:
        prof = load_profile(profile)
        target = prof.device.hardware_id or match_hardware_id(prof.device.name)
        # the profile overlays its own GPU's rows; other GPUs keep their datasheet specs
        hw_over = {
            h: apply_profile(load_hardware(h), prof)
            for h in {r.hardware for r in mapped}
            if h == target
        }
    preds, notes = predict_rows(mapped, engine_override=override, hw_override=hw_over)
    records = []
    for r, p, note in zip(mapped, preds, notes):
        if not np.isfinite(p):
            reason = f"predicted infeasible: {note}"
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        records.append(
            {
                "source_id": r.source_id,
                "model": r.model,
                "gpu": r.hardware,
                "precision": r.precision,
                "engine": r.engine if override is None else override.id,
                "plan": f"tp{r.tp} pp{r.pp} ep{r.ep}" + (" adp" if r.attention_dp else ""),
                "isl": r.isl,
                "osl": r.osl,
                "mode": r.mode,
                "load": r.load,
                "metric": r.metric,
                "measured": r.measured,
                "predicted": float(p),
                "error": float(p / r.measured - 1.0),
                "note": note,
                "row": r.index,
            }
        )
    skipped_list = [
        {"reason": k, "count": v} for k, v in sorted(skipped.items(), key=lambda kv: -kv[1])
    ]
    return ValidationReport(records, skipped_list, summarize(records))


# ---------------------------------------------------------------------------------------------
# Kernel level: GEMM measurements (../shared/groundtruth/gemm.csv format)
# ---------------------------------------------------------------------------------------------

GEMM_COLUMNS = ("source_id", "gpu", "kernel", "dtype", "m", "n", "k", "batch_or_groups", "tflops")


def is_gemm_table(path: str | Path) -> bool:
    """True when the CSV header has the kernel-table columns (unreadable files: False, and
    read_measurements reports them)."""
    try:
        with Path(path).open(newline="", encoding="utf-8") as fh:
            header = next(csv.reader(fh), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return False
    return all(c in header for c in GEMM_COLUMNS)


def validate_gemm(
    path: str | Path, engine: str | EngineConstants | None = None
) -> ValidationReport:
    """Predict each GEMM row (TFLOP/s) with the cost model's GEMM time (tile/wave quantization,
    ceiling, memory-bound small M; grouped GEMMs as one launch over groups) plus the engine's
    per-kernel fixed cost (``default``: 3 us), as serving charges it. MAMF rows are the
    inputs of the hardware files' GEMM ceilings: reported separately as ``calibration input``
    (a self-consistency check), not as validation."""
    from .cost import gemm_time
    from .ops import Op

    p = Path(path)
    if not p.is_file():
        raise DataFileError(f"{p}: no such file")
    with p.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in GEMM_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise DataFileError(f"{p}: missing column(s) {', '.join(missing)}")
        raw = list(reader)
    eng = load_engine(engine)
    records: list[dict[str, Any]] = []
    skipped: dict[str, int] = {}

    def skip(why: str) -> None:
        skipped[why] = skipped.get(why, 0) + 1

    for i, r in enumerate(raw):
        m, n, k = (_int(r[c] or "") for c in ("m", "n", "k"))
        try:
            measured = float(r["tflops"])
        except ValueError:
            skip("no TFLOPS (bandwidth or latency row)")
            continue
        if m is None or n is None or k is None:
            skip("no GEMM shape")
            continue
        name = r["gpu"].strip().lower()
        hid = hardware_alias_table().get(name)  # kernel tables: an id or alias of a hardware file
        if hid is None:
            skip(f"unknown gpu {r['gpu'].strip()}")
            continue
        dtype = r["dtype"].lower()
        cls = "fp8" if "fp8" in dtype else ("fp16" if dtype.startswith("fp16") else "bf16")
        hw = load_hardware(hid)
        if not hw.supports(cls):
            skip(f"{cls} not native on {hid}")
            continue
        groups = float(_int(r["batch_or_groups"] or "") or 1)
        op = Op(
            "gemm",
            "ffn",
            "gemm",
            1.0,
            m=float(m),
            n=float(n),
            k=float(k),
            groups=groups,
            touched=groups,
            w_bytes=1.0 if cls == "fp8" else 2.0,
            a_bytes=1.0 if cls == "fp8" else 2.0,
            o_bytes=2.0,
            compute_class=cls,
        )
        t, _, mem = gemm_time(op, hw, eng)
        # one launch: the same fixed per-kernel cost serving adds per kernel
        predicted = 2.0 * m * n * k * groups / (float(t) + eng.kernel_overhead_s) / 1e12
        source = r["source_id"] + (
            " (calibration input)" if r["source_id"] == "mlengineering_mamf" else ""
        )
        records.append(
            {
                "source_id": source,
                "model": r["kernel"],
                "gpu": hid,
                "precision": cls,
                "engine": eng.id,
                "plan": "",
                "isl": m,
                "osl": n,
                "mode": "kernel",
                "load": groups,
                "metric": "tflops",
                "measured": measured,
                "predicted": predicted,
                "error": predicted / measured - 1.0,
                "note": f"m={m} n={n} k={k} groups={int(groups)}; {'memory' if float(mem) >= float(t) * 0.999 else 'compute'}-bound",
                "row": i,
            }
        )
    return ValidationReport(
        records,
        [{"reason": k2, "count": v} for k2, v in sorted(skipped.items(), key=lambda kv: -kv[1])],
        summarize(records),
    )

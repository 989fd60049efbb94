"""Measurement tables -> mapped rows: CSV reading, the columns and metrics, GPU and model name
matching (ids, aliases and chip names come from the data files) and precision mapping.

Input format: ``../shared/groundtruth/serving.csv`` (columns in ``REQUIRED_COLUMNS``; its
SOURCES.md explains them). Each row is mapped to (model, GPU, precision, plan, workload, serving
mode, metric) or skipped with a counted reason; nothing is dropped silently. Documented defaults
(blank ``pp`` = 1, blank ``dp`` = tensor-parallel attention), disaggregated pools and MTP are
read as ``conventions`` says, and each default a row relies on is named in its ``note``.
"""

from __future__ import annotations

import csv
import functools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..errors import DataFileError
from ..specs.checkpoint import checkpoint_precision, named_activations, named_checkpoint
from ..specs.engine import ATOM_FRAMEWORK, engine_for_framework
from ..specs.hardware import hardware_alias_table, hardware_chip_table, load_hardware
from ..specs.model import load_model, model_alias_table
from ..specs.plan import DisaggregatedPlan
from ..specs.precision import parse_precision
from .campaigns import campaign_model, campaign_share, is_inferencex, stated_notes
from .conventions import (
    POOL_KINDS,
    attention_dp_field,
    is_disaggregated,
    map_precision,
    moe_plan_conflict,
    parse_pools,
    pools_label,
    speculative,
    stated_block_weights,
    throughput_metric,
)
from .disagg_recipes import inferencex_disagg_recipe
from .launch_scripts import inferencex_draft, inferencex_script, inferencex_script_settings
from .recipes import (
    inferencex_client,
    inferencex_trtllm_script_plan,
    trtllm_bench_recipe,
    vllm_release_recipe,
)
from .trtllm_scripts import inferencex_trtllm_row_recipe

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
# percentile metrics: a latency metric with one of these suffixes (ttft_ms_p99); the request
# simulator predicts them (validate.simulated), on rows that state their plan and load
PERCENTILE_SUFFIXES = {"_p50": 50.0, "_median": 50.0, "_p90": 90.0, "_p95": 95.0, "_p99": 99.0}
PERCENTILE_BASES = ("ttft_ms", "tpot_ms", "itl_ms", "request_latency_ms")
THROUGHPUT_METRICS = (
    "output_tok_s_total",
    "output_tok_s_per_gpu",
    "total_tok_s",
    "total_tok_s_per_gpu",
)
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
    mode: str  # concurrency | static | offline | rate | disaggregated
    load: float  # concurrency, batch, or request rate (req/s); 0 for offline
    metric: str
    measured: float
    metric_gpus: int  # GPUs the measured metric refers to
    raw: dict[str, str] = field(compare=False, repr=False, default_factory=dict)
    spec_tokens: int = 0  # speculative decoding (MTP): draft tokens per step
    spec_acceptance: float = 0.0  # and the acceptance probability of each
    pools: DisaggregatedPlan | None = None  # disaggregated rows (tp/ep/adp: the decode pool's)
    note: str = ""  # the defaults and assumptions the mapping used
    # how requests arrived, for the request simulator: "poisson" at ``offered_rate`` req/s
    # (a request-rate row), "burst" (all at once: rate INF), "" (a client concurrency)
    arrival: str = ""
    offered_rate: float = 0.0
    requests: int = 0  # requests the benchmark sent (0: not stated)
    # the benchmark recipe whose engine limits the row ran with (``validate.recipes``; "": the
    # engine's own limits)
    recipe: str = ""
    # client mean lengths (0: nominal) and start-up share (< 0: ttft_burst); validate.recipes
    mean_isl: float = 0.0
    mean_osl: float = 0.0
    burst_share: float = -1.0

    @property
    def served_isl(self) -> float:
        """The mean input length the benchmark sent (the nominal ISL unless stated)."""
        return self.mean_isl or float(self.isl)

    @property
    def served_osl(self) -> float:
        """The mean output length the benchmark asked for (the nominal OSL unless stated)."""
        return self.mean_osl or float(self.osl)

    @property
    def plan_label(self) -> str:
        plan = (
            pools_label(self.pools)
            if self.pools is not None
            else f"tp{self.tp} pp{self.pp} ep{self.ep}" + (" adp" if self.attention_dp else "")
        )
        return plan + (f" mtp{self.spec_tokens}" if self.spec_tokens else "")


MAX_CSV_FIELD_BYTES = 8 * 2**20  # one cell (the csv module's default is 128 KiB)
MAX_CELL_INT = 2**24  # lengths, batch sizes and parallel degrees above this are not measurements
# no serving metric reaches this (tokens/s of a whole cluster, milliseconds of a day: < 1e9)
MAX_MEASURED_VALUE = 1e12


def read_measurements(
    path: str | Path, columns: tuple[str, ...] = REQUIRED_COLUMNS
) -> list[dict[str, str]]:
    """Every row of a measurement table (``iter_measurements`` reads it without keeping it)."""
    return list(iter_measurements(path, columns))


def has_columns(path: str | Path, columns: tuple[str, ...]) -> bool:
    """True when the CSV header holds ``columns`` (the kernel tables' test of their format;
    unreadable files: False, and the reader reports them)."""
    try:
        with Path(path).open(newline="", encoding="utf-8-sig") as fh:
            header = next(csv.reader(fh), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return False
    return all(c in header for c in columns)


def iter_measurements(
    path: str | Path, columns: tuple[str, ...] = REQUIRED_COLUMNS
) -> Iterator[dict[str, str]]:
    """The rows of a measurement table (serving rows by default; a kernel table passes its own
    ``columns``), one at a time: the columns are checked at once (before the first row is asked
    for), the rows as they are read."""
    p = Path(path)
    if not p.is_file():
        raise DataFileError(f"{p}: no such file")
    if p.stat().st_size > MAX_CSV_BYTES:
        raise DataFileError(f"{p}: larger than {MAX_CSV_BYTES} bytes")
    # a notes cell may be long (a quoted table); the file cap bounds the memory anyway
    csv.field_size_limit(max(csv.field_size_limit(), MAX_CSV_FIELD_BYTES))
    fh = p.open(newline="", encoding="utf-8-sig")  # a UTF-8 byte-order mark is not a column
    try:
        reader = csv.DictReader(fh)
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
    except (UnicodeDecodeError, csv.Error) as exc:
        fh.close()
        raise DataFileError(f"{p}: not a readable CSV ({exc})") from None
    except BaseException:
        fh.close()
        raise
    if missing:
        fh.close()
        raise DataFileError(
            f"{p}: missing column(s) {', '.join(missing)}; required: {', '.join(columns)}"
        )
    return _rows(p, fh, reader)


def _rows(p: Path, fh: IO[str], reader: csv.DictReader[str]) -> Iterator[dict[str, str]]:
    with fh:
        try:
            yield from reader
        except (UnicodeDecodeError, csv.Error) as exc:
            raise DataFileError(f"{p}: not a readable CSV ({exc})") from None


def parse_int(text: str) -> int | None:
    """A positive integer cell (``8K`` = 8192); None when blank, fractional or not a number."""
    t = text.strip().upper()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*K", t)
    if m:
        return int(float(m.group(1)) * 1024)
    try:
        v = float(t)
    except ValueError:
        return None
    if not math.isfinite(v) or v > MAX_CELL_INT:
        return None
    return int(v) if v > 0 and v == int(v) else None


def kernel_row(
    r: dict[str, str], dims: tuple[str, ...], what: str
) -> tuple[float, list[int], str] | str:
    """A kernel-table row's (measured ``time_us``, the positive integers of its ``dims`` columns,
    bundled GPU id), or why it cannot be priced (``what`` names the dims in that reason)."""
    try:
        measured = float(r["time_us"])
    except ValueError:
        return "no time"
    values = [parse_int(r[c] or "") for c in dims]
    if any(v is None for v in values):
        return f"no {what}"
    hid = hardware_alias_table().get(r["gpu"].strip().lower())
    if hid is None:
        return f"unknown gpu {r['gpu'].strip()}"
    return measured, [int(v) for v in values if v is not None], hid


# checkpoint-variant suffixes that do not change the architecture
# a request rate: a decimal number (exponent allowed: 1e3) then its unit, in symbols or words
_NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?"
_RATE = re.compile(
    rf"(?<![\w.])({_NUMBER})\s*(?:qps|rps|req/s|requests?/s|requests? per second)\b", re.I
)

# (one at a time from the end: ``amd/gpt-oss-120b-w-mxfp4-a-fp8`` -> ``gpt-oss-120b`` (AMD's
# Quark formats), while ``DeepSeek-V2-Chat`` stops at ``deepseek-v2``, a bundled id, before its
# ``-v2`` is read as a checkpoint revision)
_MODEL_SUFFIX = re.compile(
    r"-(instruct|chat|hf|base|it|fp8|fp4|nvfp4|mxfp4|mxfp8|awq|gptq|int4|int8|w4a16|w8a8|bf16|"
    r"fp16|dynamic|v0\.\d|v\d+|preview|0528|2507|2501|2412|thinking|reasoning|"
    r"[wa]-(?:mx|nv)?fp[48])$"
)


def match_model_name(name: str) -> str | None:
    """A table's model name -> bundled model id: exact alias first, then the name without its
    organisation prefix and checkpoint-variant suffixes (``meta-llama/Llama-3.1-70B-Instruct-FP8``
    -> ``llama-3.1-70b``)."""
    table = model_alias_table()
    text = name.strip().lower()
    if text in table:
        return table[text]
    candidate = text.rsplit("/", 1)[-1]
    while candidate not in table:
        suffix = _MODEL_SUFFIX.search(candidate)
        if suffix is None:
            return None
        candidate = candidate[: suffix.start()]
    return table[candidate]


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


@functools.lru_cache(maxsize=4096)
def matched_names(kind: str, name: str) -> str | None:
    """``match_model_name`` / ``match_gpu_name``, remembered: a table repeats a few names over
    many rows (``validate`` clears it, so data files read since are seen)."""
    return match_model_name(name) if kind == "model" else match_gpu_name(name)


def map_row(i: int, row: dict[str, str]) -> MappedRow | str:
    """A mapped row, or the reason it cannot be predicted."""
    checked = _metric_and_value(row)
    if isinstance(checked, str):
        return checked
    return _map_checked(i, row, *checked)


# the columns that only say where a measurement comes from and what it was; every other
# column is the configuration measured (``RowMapper`` maps each distinct one once)
_PER_ROW_COLUMNS = ("source_id", "value")
# distinct configurations a RowMapper remembers (then it forgets them all: memory stays bounded)
ROW_MAPPER_ENTRIES = 65_536


class RowMapper:
    """``map_row`` for the rows of one run, each distinct configuration mapped once.

    A table repeats its configurations (one row per metric, the same benchmark published
    twice): rows equal in every column but ``source_id`` and ``value`` map to the same model,
    GPU, precision, plan, workload and note, so only the first is mapped. Per run (no global
    state), at most ``ROW_MAPPER_ENTRIES`` configurations at a time.
    """

    def __init__(self) -> None:
        self._seen: dict[tuple[tuple[str, Any], ...], MappedRow | str] = {}

    def shared(self, i: int, row: dict[str, str]) -> tuple[MappedRow, float] | str:
        """(the mapped row of the first row of this configuration, this row's measured value),
        or the reason this row is skipped: what ``map_row(i, row)`` returns, with the first
        row's ``index``, ``source_id``, ``measured`` and ``raw``."""
        checked = _metric_and_value(row)
        if isinstance(checked, str):
            return checked
        key = tuple([kv for kv in row.items() if kv[0] not in _PER_ROW_COLUMNS])
        try:
            mapped, remembered = self._seen.get(key), True
        except TypeError:  # a row longer than its header holds a list: mapped on its own
            mapped, remembered = None, False
        if mapped is None:
            mapped = _map_checked(i, row, *checked)
            if remembered:
                if len(self._seen) >= ROW_MAPPER_ENTRIES:
                    self._seen.clear()
                self._seen[key] = mapped
        return mapped if isinstance(mapped, str) else (mapped, checked[1])


def _metric_and_value(row: dict[str, str]) -> tuple[str, float] | str:
    """(the metric, the measured value), or the reason the row cannot be used."""
    short = [c for c in REQUIRED_COLUMNS if row.get(c) is None]
    if short:
        return f"short row ({len(REQUIRED_COLUMNS) - len(short)} of the required columns)"
    if None in row:
        return "long row (more cells than columns)"
    metric = row["metric"].strip()
    if metric not in METRICS and split_percentile(metric) is None and not throughput_metric(metric):
        return f"unsupported metric {metric}"
    try:
        measured = float(row["value"])
    except ValueError:
        return "non-numeric value"
    if not math.isfinite(measured):
        return "value not a finite number"
    if measured <= 0:
        return "non-positive value"
    if measured > MAX_MEASURED_VALUE:
        return f"value beyond {MAX_MEASURED_VALUE:.0e} (no serving metric is that large)"
    return metric, measured


def _map_checked(i: int, row: dict[str, str], metric: str, measured: float) -> MappedRow | str:
    """``map_row`` past the metric and value checks."""
    model_id = matched_names("model", row["model"])
    if model_id is None:
        return f"unknown model {row['model'].strip()}"
    hw_id = matched_names("gpu", row["gpu"])
    if hw_id is None:
        return f"unknown gpu {row['gpu'].strip()}"
    model_id, model_note = campaign_model(row, model_id)
    # a row naming a published quantized checkpoint is priced in that checkpoint's weights
    base, hw = load_model(model_id), load_hardware(hw_id)
    model = named_checkpoint(base, row["model"])
    prec = map_precision(model, hw, row["precision"])
    if prec is None:
        return f"precision not runnable: {row['precision'].strip()} on {hw_id}"
    if not hw.supports(parse_precision(prec).compute_class):
        return f"precision not runnable: {row['precision'].strip()} ({prec}) on {hw_id}"
    notes: list[str] = [model_note] if model_note else []
    # a named checkpoint's own quantization_config (not a name only: ``unread_export``)
    if model.config is not base.config and (reading := checkpoint_precision(model.config)):
        notes.append(f"{model.name}: {reading[1]}")
    if (act := named_activations(model.name)) and model.model_type == "gpt_oss":
        notes.append(f"{model.name}: its name states {act} activations (AMD's Quark)")
    prec, note = stated_block_weights(row.get("notes", ""), prec, model.moe is not None)
    notes.extend([note] if note else [])
    pools: DisaggregatedPlan | None = None
    if is_disaggregated(row):
        parsed = parse_pools(row, model)
        if isinstance(parsed, str):
            return parsed
        pools = parsed
        d = pools.decode
        tp, pp, ep, adp = d.tp, d.pp, d.ep, d.attention_dp
        if not row["dp"].strip():
            notes.append("dp blank: tensor-parallel attention")
    else:
        dp = row["dp"].strip()
        read = attention_dp_field(dp)
        if isinstance(read, str):
            return read
        adp, group, label = read
        tp_text = (row["tp"] or "").strip()
        if not tp_text and not group:
            return "plan not stated (tp blank)"
        tp = parse_int(tp_text) if tp_text else group
        pp = parse_int(row["pp"] or "") if (row["pp"] or "").strip() else 1
        if tp is None or pp is None:
            return "plan not a number (tp/pp)"
        if group and group != tp:
            return f"dp {dp!r} states a group of {group}, the row's tp is {tp}"
        if group and not tp_text:
            notes.append(f"tp blank: {dp}'s group of {group}")
        ep_text = (row["ep"] or "").strip()
        ep = parse_int(ep_text) or 1
        if label and ep_text and ep != group:
            return f"dp {dp!r} states EP {group}, the row's ep is {ep}"
        if (adp or label) and not ep_text and model.moe is not None:
            # TRT-LLM MoE configs with attention DP run EP over the tp group (DEP); a TEP label
            # states EP over the group too
            ep = tp
        if model.moe is None:
            ep = 1
        if not dp and model.moe is not None:
            notes.append("dp blank: tensor-parallel attention")
        if conflict := moe_plan_conflict(row.get("notes", ""), tp, ep, model.moe is not None):
            return conflict
    if not (row["pp"] or "").strip():
        notes.insert(0, "pp blank: 1 (no pipeline parallelism)")
    isl, osl = parse_int(row["isl"] or ""), parse_int(row["osl"] or "")
    if isl is None or osl is None:
        return "isl/osl not a number (dataset lengths)"
    cob = row["concurrency_or_batch"].strip().lower()
    fw = row["framework"]
    arrival, offered, n_requests = "", 0.0, 0
    recipe = ""
    if cob.startswith("max-throughput") or "offline" in cob:
        mode, load = "offline", 0.0
        n_req = re.search(r"all (\d+) requests|num_requests=(\d+)", cob)
        n_requests = int(n_req.group(1) or n_req.group(2)) if n_req else 0
        limits = re.search(r"max_batch_size|max_num_tokens", row.get("notes", ""), re.I)
        if "trtllm-bench throughput" in fw.lower() and not limits:
            recipe, options = trtllm_bench_recipe(row["source_id"], model_id)
            notes.append(
                "trtllm-bench's own max_batch_size / max_num_tokens (validate.recipes)"
                + (f"; {options}" if options else "")
                + (f"; {n_requests} requests at once" if n_requests else "")
            )
    elif cob.startswith("request rate"):
        row_notes = row.get("notes", "")
        n_req = re.search(r"(\d+) requests", row_notes)
        achieved = re.search(rf"achieved Tput\(req/s\)=({_NUMBER})", row_notes, re.I)
        n_requests = int(n_req.group(1)) if n_req else 0
        if "inf" in cob:
            # all requests issued at once: a closed loop whose concurrency is the request count
            if not n_req:
                return "request rate INF without a request count"
            mode, load, arrival = "concurrency", float(n_req.group(1)), "burst"
        else:
            m = _RATE.search(cob)
            if not m:
                return "unparsed request rate (a number then qps, req/s or requests per second)"
            # the achieved rate (when reported) is what the server actually carried
            mode, load = "rate", float(achieved.group(1)) if achieved else float(m.group(1))
            # the simulator sends at the offered rate (what it carries is its own result)
            arrival, offered = "poisson", float(m.group(1))
            if not 0 < offered < math.inf:
                return f"request rate {offered:g} req/s is not a finite positive rate"
            if not 0 < load < math.inf:
                return f"request rate {load:g} req/s is not a finite positive rate"
    else:
        c = parse_int(cob)
        if c is None:
            return "unparsed concurrency/batch"
        mode = "static" if "static" in fw.lower() else "concurrency"
        load = float(c)
    engine = engine_for_framework(fw)
    ix = is_inferencex(row)
    # its launch script (ATOM's are not vLLM's, whose constants engine_for_framework gives it)
    launcher = "atom" if ATOM_FRAMEWORK.match(fw.lower().strip()) else engine
    script = inferencex_script(row, model.id, launcher) if ix and pools is None else None
    if engine in ("sglang", "vllm") and pools is None and ix:  # its KV format, prefill delayer
        prec, recipe, said = inferencex_script_settings(
            script, row, model, hw, launcher, prec, (tp, adp)
        )
        notes.extend(said)
    mean_isl = mean_osl = 0.0
    closed = mode == "concurrency" and not arrival  # a client concurrency (not a rate or INF)
    burst_share, note = campaign_share(row, engine, closed and pools is None and not ix)
    notes.extend([note] if note else [])
    if closed and ix:  # its client's lengths and request count
        mean_isl, mean_osl, n_requests, burst_share, note = inferencex_client(
            isl, osl, load, pools is not None
        )
        notes.append(note)
    stated, said = stated_notes(row)
    notes.extend([said] if said else [])
    spec = speculative(stated, engine, bool(adp), model, ix, inferencex_draft(script, row))
    if disagg := (pools is not None and ix and mode == "concurrency"):  # its recipe, drafts
        recipe, disagg_note, drafts = inferencex_disagg_recipe(  # (drafts: an MTP run's recipe)
            row, model_id, isl, osl, int(load), not isinstance(spec, str) and spec[0] > 0, pools, hw
        )
        spec = speculative(stated, engine, bool(adp), model, ix, drafts) if drafts[0] else spec
    if isinstance(spec, str):
        return spec
    k_spec, a_spec, spec_note = spec
    notes.extend([spec_note] if spec_note else [])
    if engine == "trtllm" and mode == "concurrency" and pools is None and ix:
        ep, adp, said = inferencex_trtllm_script_plan(
            row, model_id, isl, osl, int(load), tp, ep, adp
        )
        notes.extend([said] if said else [])
        recipe, note, prec = inferencex_trtllm_row_recipe(
            row, model, hw, prec, int(load), (isl, osl), (tp, ep, adp), k_spec
        )
        notes.append(note)
    notes.extend([disagg_note] if disagg else [])
    if engine == "vllm" and not recipe and model.moe:  # a release's MoE kernels (recipes)
        recipe, note = vllm_release_recipe(fw, hw, parse_precision(prec).weights.id)
        notes.extend([note] if note else [])
    gpus = parse_int(row["num_gpus"] or "") or tp * pp
    pool_rate = (throughput_metric(metric) or ("", ""))[0] in POOL_KINDS
    if pool_rate and pools is None:
        return f"{metric}: a prefill or decode pool's rate, on a row with no disaggregated pools"
    if pools is not None:
        if mode != "concurrency":
            return f"disaggregated row with {mode} load (needs a client concurrency)"
        mode = "disaggregated"
        gpus = pools.num_gpus
        if re.search(r"divides by decode gpus only", row.get("notes", ""), re.I):
            gpus = pools.decode_gpus
            notes.append("per-GPU value over the decode GPUs only (row note)")
    return MappedRow(
        index=i,
        source_id=row["source_id"],
        model=model_id,
        gpu=row["gpu"],
        hardware=hw_id,
        precision=prec,
        engine=engine,
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
        spec_tokens=k_spec,
        spec_acceptance=a_spec,
        pools=pools,
        note="; ".join(notes),
        arrival=arrival,
        offered_rate=offered,
        requests=n_requests,
        recipe=recipe,
        mean_isl=mean_isl,
        mean_osl=mean_osl,
        burst_share=burst_share,
    )


def split_percentile(metric: str) -> tuple[str, float] | None:
    """(base metric, percentile) of a percentile metric (``ttft_ms_p99`` -> ("ttft_ms", 99)),
    None for any other metric."""
    for suffix, q in PERCENTILE_SUFFIXES.items():
        if metric.endswith(suffix) and metric[: -len(suffix)] in PERCENTILE_BASES:
            return metric[: -len(suffix)], q
    return None


def metric_class(metric: str) -> str:
    """throughput | tpot | ttft | latency: the classes targets and fits are stated for (a
    percentile metric is in its base metric's class)."""
    pct = split_percentile(metric)
    metric = pct[0] if pct else metric
    if throughput_metric(metric):
        return "throughput"
    if metric in ("tpot_ms", "itl_ms", "tok_s_per_user"):
        return "tpot"
    if metric == "request_latency_ms":
        return "latency"
    return "ttft"

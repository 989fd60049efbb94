"""Traffic for the request-level simulator (``serving.simulate``): how requests arrive and how
long their prompts and outputs are, as validated inputs.

Arrivals: a closed loop of N clients (each sends its next request when the last one ends), an
open-loop Poisson process at a rate (conditioned on the run's requests arriving in
``num_requests / rate`` seconds), a burst (every request at t = 0), or a trace file.
Lengths: ``fixed:N``, ``uniform:LO:HI`` (integers, both ends included), ``normal:MEAN:STD``,
``lognormal:MEAN:STD`` (the lengths' own mean and standard deviation), ``file:PATH`` (one
length per line, drawn with replacement); every draw is rounded and held to >= 1.
A trace is JSONL (one object per line) or CSV (a header) with ``arrival_s``, ``isl``, ``osl``
and optionally ``prefix_id`` (requests with the same id share a prompt prefix) and
``prefix_len`` (that prefix's tokens; default the traffic's ``prefix_len``); with a
``prefix_len``, rows without an id share one common prefix of that many tokens.

Example:
    >>> t = Traffic(arrival="poisson", rate_per_s=10.0, num_requests=100,
    ...             isl=parse_length_dist("uniform:500:8000", "isl"))
    >>> r = t.requests()
    >>> len(r.isl), int(r.isl.min()) >= 500, int(r.isl.max()) <= 8000
    (100, True, True)
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from ..errors import SpecError
from .workload import MAX_CONTEXT_TOKENS

ARRIVALS = ("closed", "poisson", "burst", "trace")
# how a closed loop's clients start: spread over one request cycle (a loop that has run a
# while) or all at once (a benchmark client's run: InferenceX, vLLM's and SGLang's bench_serving)
CLIENT_STARTS = ("spread", "together")
LENGTH_KINDS = ("fixed", "uniform", "normal", "lognormal", "file")
MAX_REQUESTS = 10_000_000
# requests per client a closed loop needs before its statistics reach the steady state its
# clients settle into: Qwen3-30B-A3B on one H200, 1,024 clients, ISL/OSL 1024/1024 (spread
# start, a fifth left out as warm-up): mean TTFT 56.4 / 74.0 / 76.4 / 76.5 s at 2 / 5 / 10 / 20
# requests per client against the analytic 77.0 s; InferenceX's client sends 10 per client
# (validate.recipes.INFERENCEX_PROMPTS_PER_CLIENT)
STEADY_REQUESTS_PER_CLIENT = 10
DEFAULT_REQUESTS = 2000  # a run's requests when none are given (closed loops: at least the above)
MAX_TRACE_BYTES = 500_000_000
TRACE_COLUMNS = ("arrival_s", "isl", "osl")
MAX_TRACE_SECONDS = 1e8  # about three years of traffic
MEAN_DRAWS = 200_000  # lengths drawn for the mean of a clipped normal/lognormal (0.2% at CV 1)
TRACE_OPTIONAL = ("prefix_id", "prefix_len")

Array = np.ndarray


@dataclass(frozen=True)
class LengthDist:
    """A distribution of token lengths (``parse_length_dist`` builds it from text)."""

    kind: str
    a: float = 0.0
    b: float = 0.0
    values: tuple[int, ...] = ()  # ``file``: the lengths drawn from
    text: str = ""

    def draw(self, rng: np.random.Generator, n: int) -> Array:
        """``n`` lengths (int64, each in 1..MAX_CONTEXT_TOKENS)."""
        if self.kind == "fixed":
            x = np.full(n, self.a)
        elif self.kind == "uniform":
            x = rng.integers(int(self.a), int(self.b) + 1, size=n).astype(float)
        elif self.kind == "normal":
            x = rng.normal(self.a, self.b, size=n)
        elif self.kind == "lognormal":
            sigma2 = math.log1p((self.b / self.a) ** 2)
            x = rng.lognormal(math.log(self.a) - sigma2 / 2.0, math.sqrt(sigma2), size=n)
        else:
            x = np.asarray(self.values, dtype=float)[rng.integers(0, len(self.values), size=n)]
        return np.clip(np.rint(x), 1, MAX_CONTEXT_TOKENS).astype(np.int64)

    @property
    def mean(self) -> float:
        """The mean of the lengths ``draw`` gives (rounded and clipped to 1..max, so a normal
        whose mean sits near 1 has a larger mean than its parameter)."""
        if self.kind == "fixed":
            return max(self.a, 1.0)
        if self.kind in ("normal", "lognormal"):  # the clipped draw's mean (fixed seed)
            return float(np.mean(self.draw(np.random.default_rng(0), MEAN_DRAWS)))
        if self.kind == "uniform":
            return (self.a + self.b) / 2.0
        return float(np.mean(self.values))


def fixed(n: int) -> LengthDist:
    """Every request the same ``n`` tokens."""
    return LengthDist("fixed", float(n), text=f"fixed:{n}")


def parse_length_dist(text: str, name: str) -> LengthDist:
    """A length distribution from ``kind:args`` text (module docstring); ``name`` is the field
    an error names (``isl-dist``)."""
    parts = str(text).strip().split(":", 1)
    kind = parts[0].strip().lower()
    if kind not in LENGTH_KINDS or len(parts) < 2:
        raise SpecError(
            f"{name}: {text!r} is not a length distribution; use one of fixed:N, "
            "uniform:LO:HI, normal:MEAN:STD, lognormal:MEAN:STD, file:PATH"
        )
    if kind == "file":
        return LengthDist("file", values=_read_lengths(parts[1], name), text=text)
    args = parts[1].split(":")
    need = 1 if kind == "fixed" else 2
    try:
        nums = [float(x) for x in args]
    except ValueError:
        nums = []
    if len(nums) != need or not all(math.isfinite(x) for x in nums):
        raise SpecError(f"{name}: {kind} takes {need} number(s) after '{kind}:', got {text!r}")
    lo_ok = all(0 < x <= MAX_CONTEXT_TOKENS for x in nums[:1])
    if kind == "fixed":
        if not (lo_ok and nums[0] == int(nums[0])):
            raise SpecError(f"{name}: fixed:N needs an integer N >= 1, got {text!r}")
        return LengthDist("fixed", nums[0], text=text)
    a, b = nums
    if kind == "uniform" and not (lo_ok and a == int(a) and b == int(b) and a <= b):
        raise SpecError(f"{name}: uniform:LO:HI needs integers 1 <= LO <= HI, got {text!r}")
    if kind in ("normal", "lognormal") and not (lo_ok and 0 <= b <= MAX_CONTEXT_TOKENS):
        raise SpecError(f"{name}: {kind}:MEAN:STD needs MEAN > 0 and STD >= 0, got {text!r}")
    if b > MAX_CONTEXT_TOKENS:
        raise SpecError(f"{name}: {text!r} exceeds {MAX_CONTEXT_TOKENS} tokens")
    return LengthDist(kind, a, b, text=text)


def _read_lengths(path: str, name: str) -> tuple[int, ...]:
    p = Path(path.strip())
    if not p.is_file():
        raise SpecError(f"{name}: file {p} does not exist")
    if p.stat().st_size > MAX_TRACE_BYTES:
        raise SpecError(f"{name}: file {p} is larger than {MAX_TRACE_BYTES} bytes")
    out = []
    for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        v = _int_field(line.strip(), f"{name}: {p} line {n}")
        out.append(v)
    if not out:
        raise SpecError(f"{name}: file {p} holds no lengths (one integer per line)")
    return tuple(out)


def _int_field(text: str, where: str) -> int:
    try:
        v = float(text)
    except ValueError:
        raise SpecError(f"{where}: {text!r} is not a number") from None
    if not (math.isfinite(v) and v == int(v) and 1 <= v <= MAX_CONTEXT_TOKENS):
        raise SpecError(f"{where}: {text!r} must be an integer in 1..{MAX_CONTEXT_TOKENS}")
    return int(v)


@dataclass(frozen=True)
class Requests:
    """The requests of a run (arrays, one entry per request, in arrival order): engine-side
    arrival seconds (NaN in a closed loop: a client sends when its last request ends), prompt
    and output tokens, the shared prefix id (-1: none) and its tokens."""

    arrival_s: Array
    isl: Array
    osl: Array
    prefix_id: Array
    prefix_len: Array


@dataclass(frozen=True)
class Trace:
    """A trace file's requests (``read_trace``)."""

    path: str
    requests: Requests = field(repr=False)


def read_trace(path: str | Path, prefix_len: int = 0) -> Trace:
    """Requests from a JSONL or CSV trace (module docstring), sorted by arrival time."""
    p = Path(path)
    if not p.is_file():
        raise SpecError(f"trace: file {p} does not exist")
    if p.stat().st_size > MAX_TRACE_BYTES:
        raise SpecError(f"trace: {p} is larger than {MAX_TRACE_BYTES} bytes")
    text = p.read_text(encoding="utf-8-sig", errors="replace")  # an Excel export's BOM
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if first.lstrip().startswith("{"):
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                raise SpecError(f"trace: {p} line {n} is not a JSON object") from None
            if not isinstance(obj, dict):
                raise SpecError(f"trace: {p} line {n} is not a JSON object")
            rows.append((n, obj))
    else:
        reader = csv.DictReader(text.splitlines())
        rows = [(n, r) for n, r in enumerate(reader, 2)]
    if not rows:
        raise SpecError(f"trace: {p} holds no requests")
    if len(rows) > MAX_REQUESTS:
        raise SpecError(f"trace: {p} holds more than {MAX_REQUESTS} requests")
    arr, isl, osl, pid, plen = [], [], [], [], []
    seen: dict[str, tuple[int, int]] = {}  # prefix id -> (its length, the line that set it)
    for n, r in rows:
        where = f"trace: {p} line {n}"
        missing = [c for c in TRACE_COLUMNS if r.get(c) in (None, "")]
        if missing:
            raise SpecError(
                f"{where}: missing field {missing[0]} (fields: arrival_s, isl, osl; optional "
                "prefix_id, prefix_len)"
            )
        if None in r:  # csv.DictReader files cells beyond the header under None
            raise SpecError(f"{where}: more cells than the header has columns")
        unknown = sorted(set(r) - set(TRACE_COLUMNS) - set(TRACE_OPTIONAL))
        if unknown:
            raise SpecError(
                f"{where}: unknown field {unknown[0]} (fields: arrival_s, isl, osl; optional "
                "prefix_id, prefix_len)"
            )
        try:
            t = float(r["arrival_s"])
        except (TypeError, ValueError):
            t = math.nan
        if not (math.isfinite(t) and 0 <= t <= MAX_TRACE_SECONDS):
            raise SpecError(
                f"{where}: arrival_s must be a number of seconds in 0..{MAX_TRACE_SECONDS:g}"
            )
        arr.append(t)
        isl.append(_int_field(str(r["isl"]), f"{where}: isl"))
        osl.append(_int_field(str(r["osl"]), f"{where}: osl"))
        has_prefix = r.get("prefix_id") not in (None, "")
        # rows without an id share the traffic's common prefix, when it has one
        pid.append(str(r["prefix_id"]) if has_prefix else ("" if prefix_len else None))
        has_prefix = has_prefix or prefix_len > 0
        length = r.get("prefix_len")
        pl = _int_field(str(length), f"{where}: prefix_len") if length not in (None, "") else 0
        if pl and not has_prefix:
            raise SpecError(
                f"{where}: prefix_len {pl} without a prefix_id (and no common --prefix-len): "
                "which requests share the prefix is not stated"
            )
        plen.append(pl if has_prefix and pl else (prefix_len if has_prefix else 0))
        if plen[-1] > isl[-1]:
            raise SpecError(
                f"{where}: prefix_len {plen[-1]} is longer than the prompt (isl {isl[-1]})"
            )
        # one prefix id, one prefix: the same tokens cannot have two lengths
        first = seen.setdefault(pid[-1], (plen[-1], n)) if pid[-1] is not None else None
        if first is not None and first[0] != plen[-1]:
            raise SpecError(
                f"{where}: prefix_id {pid[-1] or '(common)'!s} has prefix_len {plen[-1]}, but "
                f"{first[0]} on line {first[1]}: one prefix has one length"
            )
    ids = {k: i for i, k in enumerate(dict.fromkeys(x for x in pid if x is not None))}
    order = np.argsort(np.asarray(arr), kind="stable")
    reqs = Requests(
        arrival_s=np.asarray(arr, dtype=float)[order],
        isl=np.asarray(isl, dtype=np.int64)[order],
        osl=np.asarray(osl, dtype=np.int64)[order],
        prefix_id=np.asarray([-1 if x is None else ids[x] for x in pid], dtype=np.int64)[order],
        prefix_len=np.asarray(plen, dtype=np.int64)[order],
    )
    return Trace(str(p), reqs)


@dataclass(frozen=True)
class Traffic:
    """How requests arrive (``ARRIVALS``) and their lengths, for ``serving.simulate``.

    ``clients``: the closed loop's clients per replica; ``rate_per_s``: the Poisson rate of
    the whole deployment (its replicas share it round robin); ``num_requests``: requests
    simulated (a trace: its own; None: ``default_requests``); ``prefix_len``: tokens of a
    prompt prefix every request shares (prefix caching; 0: off); ``seed``: the random draws'
    seed (same seed, same run);
    ``warmup``: leading requests left out of the statistics (None: a fifth of a closed loop's
    whose clients start spread, none of one whose clients start together, which a benchmark
    counts from its start, nor of an open loop's); ``clients_start``: a closed loop's clients
    start spread over one request cycle or all together (``CLIENT_STARTS``);
    ``ttft_slo_ms``/``tpot_slo_ms``: the SLA goodput counts against."""

    arrival: str = "closed"
    clients: int = 1
    rate_per_s: float = 0.0
    num_requests: int | None = None  # None: ``default_requests``
    isl: LengthDist = field(default_factory=lambda: fixed(1024))
    osl: LengthDist = field(default_factory=lambda: fixed(1024))
    prefix_len: int = 0
    trace: Trace | None = None
    seed: int = 0
    warmup: int | None = None
    ttft_slo_ms: float | None = None
    tpot_slo_ms: float | None = None
    clients_start: str = "spread"
    CLIENT_STARTS: ClassVar[tuple[str, ...]] = CLIENT_STARTS  # (the choices, for the CLI)

    def __post_init__(self) -> None:
        if self.arrival not in ARRIVALS:
            raise SpecError(
                f"traffic: arrival {self.arrival!r} is not one of {', '.join(ARRIVALS)}"
            )
        if self.clients_start not in CLIENT_STARTS:
            raise SpecError(
                f"traffic: clients_start {self.clients_start!r} is not one of "
                f"{', '.join(CLIENT_STARTS)}"
            )
        if self.arrival == "trace" and self.trace is None:
            raise SpecError("traffic: arrival 'trace' needs a trace file")
        if self.arrival == "poisson" and not (0 < self.rate_per_s < 1e9):
            raise SpecError(f"traffic: arrival rate must be > 0 requests/s, got {self.rate_per_s}")
        if not (isinstance(self.clients, int) and 1 <= self.clients <= MAX_REQUESTS):
            raise SpecError(f"traffic: clients must be an integer >= 1, got {self.clients!r}")
        n = self.num_requests
        if n is not None and not (isinstance(n, int) and 1 <= n <= MAX_REQUESTS):
            raise SpecError(
                f"traffic: num_requests must be an integer in 1..{MAX_REQUESTS}, "
                f"got {self.num_requests!r}"
            )
        if not (isinstance(self.prefix_len, int) and 0 <= self.prefix_len <= MAX_CONTEXT_TOKENS):
            raise SpecError(f"traffic: prefix_len must be an integer >= 0, got {self.prefix_len!r}")
        if not (isinstance(self.seed, int) and 0 <= self.seed < 2**63):
            raise SpecError(f"traffic: seed must be an integer >= 0, got {self.seed!r}")
        if self.warmup is not None and not (0 <= self.warmup < self.count):
            raise SpecError(f"traffic: warmup must lie in 0..{self.count - 1}, got {self.warmup}")
        for name in ("ttft_slo_ms", "tpot_slo_ms"):
            v = getattr(self, name)
            if v is not None and not (0 < v < 1e9):
                raise SpecError(f"traffic: {name} must be a positive number of ms, got {v!r}")

    @property
    def count(self) -> int:
        """Requests in the run."""
        if self.trace is not None:
            return len(self.trace.requests.isl)
        if self.num_requests is None:  # (the default for this arrival and these clients)
            return default_requests(self.arrival, self.clients)
        return self.num_requests

    @property
    def warmup_requests(self) -> int:
        if self.warmup is not None:
            return self.warmup
        spread = self.arrival == "closed" and self.clients_start == "spread"
        return self.count // 5 if spread else 0

    def requests(self) -> Requests:
        """The run's requests, drawn with ``seed`` (a trace's as they are)."""
        if self.trace is not None:
            return self.trace.requests
        rng = np.random.default_rng(self.seed)
        n = self.count
        isl = self.isl.draw(rng, n)
        osl = self.osl.draw(rng, n)
        if self.arrival == "poisson":
            # a Poisson process conditioned on its n arrivals falling in n / rate seconds:
            # uniform order statistics (the run offers exactly the stated rate; an unconditioned
            # draw of 1,000 arrivals strays by +-3% from it, which throughput would inherit)
            arrival = np.sort(rng.uniform(0.0, n / self.rate_per_s, size=n))
        elif self.arrival == "burst":
            arrival = np.zeros(n)
        else:
            arrival = np.full(n, np.nan)
        shared = self.prefix_len > 0
        if shared and int(isl.min()) < self.prefix_len:
            raise SpecError(
                f"traffic: prefix_len {self.prefix_len} is longer than some prompts drawn from "
                f"{self.isl.text} (shortest {int(isl.min())}): a shared prefix lies inside "
                "every prompt"
            )
        return Requests(
            arrival_s=arrival,
            isl=isl,
            osl=osl,
            prefix_id=np.full(n, 0 if shared else -1, dtype=np.int64),
            prefix_len=np.full(n, self.prefix_len, dtype=np.int64),
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "arrival": self.arrival,
            "clients": self.clients if self.arrival == "closed" else None,
            "clients_start": self.clients_start if self.arrival == "closed" else None,
            "rate_per_s": self.rate_per_s if self.arrival == "poisson" else None,
            "requests": self.count,
            "isl": self.isl.text if self.trace is None else None,
            "osl": self.osl.text if self.trace is None else None,
            "trace": self.trace.path if self.trace is not None else None,
            "prefix_len": self.prefix_len,
            "seed": self.seed,
            "warmup_requests": self.warmup_requests,
            "ttft_slo_ms": self.ttft_slo_ms,
            "tpot_slo_ms": self.tpot_slo_ms,
        }


def default_requests(arrival: str, clients: int) -> int:
    """The requests a run simulates when none are given: ``DEFAULT_REQUESTS``, and for a closed
    loop at least ``STEADY_REQUESTS_PER_CLIENT`` per client (capped at ``MAX_REQUESTS``).

    Example: a closed loop of 1,024 clients -> 10,240; Poisson arrivals -> 2,000."""
    if arrival != "closed":
        return DEFAULT_REQUESTS
    return max(DEFAULT_REQUESTS, steady_requests(clients))


def steady_requests(clients: int) -> int:
    """The requests a closed loop of ``clients`` needs before its statistics settle:
    ``STEADY_REQUESTS_PER_CLIENT`` per client, capped at ``MAX_REQUESTS``."""
    return min(STEADY_REQUESTS_PER_CLIENT * clients, MAX_REQUESTS)

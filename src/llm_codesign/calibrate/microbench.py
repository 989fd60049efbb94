"""Microbenchmarks behind ``llm-codesign calibrate``: measure the machine this runs on (a CUDA
GPU, or the CPU with the same code) and return a calibration profile
(:mod:`llm_codesign.calibrate.profile` documents the schema). Needs the optional ``[gpu]`` extra
(torch), imported only when a benchmark runs; :mod:`.device` finds the device and its facts.

What is measured: device-to-device copy bandwidth; GEMM throughput over a grid of (M, N, K)
with aligned (multiples of 128/256) and misaligned (off by a few) dims, small-M decode and
large-M prefill shapes, per dtype the device runs (BF16; FP8 where ``torch._scaled_mm`` runs,
i.e. compute capability 8.9+); decode (KV read) and causal prefill attention through
``scaled_dot_product_attention``; and, with several GPUs visible, all-reduce and all-to-all
over message sizes (one process per GPU, NCCL).

Timing: CUDA events on a GPU (``perf_counter`` on a CPU, where torch ops are synchronous);
warm-up calls first; each sample times enough back-to-back calls to last ``min_sample_s`` and
the reported time is the median of the samples; inputs rotate over buffer sets that together
exceed the last-level cache (2 x L2 on a GPU) so no call finds its operands cached; data is
random and never zero (|x| >= 1/64, so FP8 does not flush it to zero either); the whole run
keeps to a time budget (sections get shares of what is left; items left over are recorded as
skipped) and the profile records device, driver, torch version, date and every sample.

Example:
    >>> profile = calibrate(device="cpu", quick=True, out="cpu.json")  # doctest: +SKIP
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import SpecError
from . import profile
from .collectives import run_collectives
from .device import (
    Clock,
    cpu_cache_bytes,
    device_info,
    fp8_supported,
    require_torch,
    resolve_device,
)

ProgressFn = Callable[[str, int, int], None]

SECTION_SHARES = {
    "copy": 0.1,
    "gemm": 0.5,
    "attention_decode": 0.1,
    "attention_prefill": 0.1,
    "comm": 0.2,
}


@dataclass(frozen=True)
class AttentionShape:
    """One attention benchmark: batch B, query heads H, KV heads, head dim D, length S
    (decode: one query token over S cached tokens; prefill: S tokens, causal)."""

    batch: int
    heads: int
    kv_heads: int
    head_dim: int
    seq: int


@dataclass(frozen=True)
class BenchConfig:
    """Everything a calibration run measures and how (see :func:`default_config`)."""

    device: str
    dtypes: tuple[str, ...]
    copy_bytes: tuple[int, ...]
    gemm_shapes: tuple[tuple[int, int, int], ...]
    attention_decode: tuple[AttentionShape, ...]
    attention_prefill: tuple[AttentionShape, ...]
    attention_dtype: str = "bf16"
    comm_bytes: tuple[int, ...] = ()
    comm_ranks: int = 1
    budget_s: float = 60.0
    quick: bool = False
    warmup: int = 2
    min_repeats: int = 3
    max_repeats: int = 20
    min_sample_s: float = 2e-3
    rotate_bytes: int = 64 * 2**20
    max_alloc_bytes: int = 8 * 2**30
    max_buffers: int = 64
    notes: tuple[str, ...] = field(default_factory=tuple)


def gemm_grid(base: int, quick: bool) -> tuple[tuple[int, int, int], ...]:
    """(M, N, K) shapes around a hidden size ``base`` (4096 on a GPU): small-M decode shapes
    on weight-shaped (N, K), large-M prefill shapes, an alignment sweep at M = N = K = base
    (N or K + 128: a multiple of 128 but not 256; + 8, + 4, + 1: off by a few) and K sweeps."""
    b, b2, ffn = base, 2 * base, 7 * base // 2
    shapes: list[tuple[int, int, int]] = []
    small_m = (1, 16, 64, 256) if quick else (1, 8, 16, 32, 64, 128, 256)
    small_nk = ((b, b), (ffn, b)) if quick else ((b, b), (ffn, b), (b, ffn), (b2, b2))
    shapes += [(m, n, k) for n, k in small_nk for m in small_m]
    big_m = (b // 4, b, 4 * b) if quick else (b // 8, b // 4, b // 2, b, b2, 4 * b)
    big_nk = ((b, b), (b2, b2), (ffn, b)) if quick else ((b, b), (b2, b2), (ffn, b), (b, ffn))
    shapes += [(m, n, k) for n, k in big_nk for m in big_m]
    for off in (128, 8, 4, 1):
        shapes += [(b, b + off, b), (b, b, b + off)]
    for k in (b // 8,) if quick else (b // 16, b // 4, 4 * b):
        shapes.append((b, b, k))
    seen: set[tuple[int, int, int]] = set()
    return tuple(s for s in shapes if not (s in seen or seen.add(s)))  # type: ignore[func-returns-value]


def _pow2_at_least(x: float) -> int:
    return 1 << max(0, math.ceil(math.log2(max(x, 1.0))))


def default_config(
    device: str = "cpu",
    *,
    quick: bool = False,
    dtypes: tuple[str, ...] | None = None,
    budget_s: float | None = None,
    cache_bytes: float | None = None,
    comm_ranks: int = 1,
    fp8: bool = False,
) -> BenchConfig:
    """The standard grid for a device. GPU: hidden size 4096, copies from 4 x L2 up, Llama-8B
    attention heads (32/8, D=128); budget 90 s (quick) / 480 s. CPU: the same grid scaled to a
    hidden size of 512 and heads 8/2, D=64, copies capped at 256 MiB; budget 30 s / 120 s."""
    gpu = device.startswith("cuda")
    if dtypes is None:
        dtypes = ("bf16", "fp8") if (gpu and fp8) else ("bf16",)
    bad = [d for d in dtypes if d not in profile.DTYPES]
    if bad:
        raise SpecError(f"--dtypes: {', '.join(bad)} not one of {', '.join(profile.DTYPES)}")
    if gpu:
        cache = float(cache_bytes or 50 * 2**20)
        c = _pow2_at_least(4 * cache)
        copies = (c, 4 * c) if quick else (c, 4 * c, 16 * c)
        dec = [(1, 8192), (16, 4096), (64, 8192)] + (
            [] if quick else [(1, 32768), (8, 16384), (128, 4096)]
        )
        pre = [(1, 1024), (1, 4096), (1, 8192)] + ([] if quick else [(4, 2048), (1, 16384)])
        heads = (32, 8, 128)
        base = 4096
        comm = (
            tuple(2**e for e in range(12, 29, 2))
            if quick
            else tuple(2**e for e in range(10, 31, 2))
        )
        return BenchConfig(
            device=device,
            dtypes=tuple(dtypes),
            copy_bytes=copies,
            gemm_shapes=gemm_grid(base, quick),
            attention_decode=tuple(AttentionShape(b, *heads[:2], heads[2], s) for b, s in dec),
            attention_prefill=tuple(AttentionShape(b, *heads[:2], heads[2], s) for b, s in pre),
            comm_bytes=comm if comm_ranks > 1 else (),
            comm_ranks=comm_ranks,
            budget_s=budget_s or (90.0 if quick else 480.0),
            quick=quick,
            warmup=3,
            max_repeats=10 if quick else 30,
            min_sample_s=2e-4,
            rotate_bytes=max(int(2 * cache), 64 * 2**20),
            max_alloc_bytes=16 * 2**30,
        )
    cache = float(cache_bytes or 32 * 2**20)
    # CPU last-level caches can be hundreds of MiB (shared by many cores): cap the copies so a
    # run stays short; the profile records cache_bytes so a reader can see the overlap.
    c = min(_pow2_at_least(2 * cache), 16 * 2**20)
    copies = (c, 4 * c) if quick else (c, 4 * c, 16 * c)
    dec = [(1, 1024), (4, 2048)] + ([] if quick else [(8, 4096)])
    pre = [(1, 256), (1, 512)] + ([] if quick else [(2, 1024)])
    heads = (8, 2, 64)
    return BenchConfig(
        device="cpu",
        dtypes=tuple(dtypes),
        copy_bytes=copies,
        gemm_shapes=gemm_grid(512, quick),
        attention_decode=tuple(AttentionShape(b, *heads[:2], heads[2], s) for b, s in dec),
        attention_prefill=tuple(AttentionShape(b, *heads[:2], heads[2], s) for b, s in pre),
        comm_bytes=(),
        comm_ranks=1,
        budget_s=budget_s or (30.0 if quick else 120.0),
        quick=quick,
        warmup=2,
        max_repeats=7 if quick else 15,
        min_sample_s=2e-3,
        rotate_bytes=int(min(2 * cache, 64 * 2**20)),
        max_alloc_bytes=2 * 2**30,
    )


# --------------------------------------------------------------------------------------------
# timing
# --------------------------------------------------------------------------------------------


def _measure(
    clock: Clock, fn: Callable[[int], Any], cfg: BenchConfig, budget_s: float
) -> tuple[float, list[float]]:
    """(median seconds per call, per-sample seconds per call) within about ``budget_s``."""
    calls = 0
    for _ in range(cfg.warmup):
        fn(calls)
        calls += 1
    clock.sync()
    t1 = max(clock.run(fn, 1, calls), 1e-9)
    calls += 1
    inner = max(1, min(1000, math.ceil(cfg.min_sample_s / t1)))
    sample = t1 * inner
    repeats = int(min(max(budget_s / sample, cfg.min_repeats), cfg.max_repeats))
    if sample * cfg.min_repeats > 4 * budget_s:  # a very slow item: keep to the budget
        repeats = 1
    times: list[float] = []
    for _ in range(repeats):
        times.append(clock.run(fn, inner, calls) / inner)
        calls += inner
    return statistics.median(times), times


class _Run:
    """Bookkeeping of one calibration run: budget per section, progress, skipped items."""

    def __init__(self, cfg: BenchConfig, progress: ProgressFn | None, total_items: int):
        self.cfg = cfg
        self.progress = progress
        self.total = total_items
        self.done = 0
        self.start = time.perf_counter()
        self.skipped: list[str] = []
        self.shares = dict(SECTION_SHARES)

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def section_budget(self, name: str) -> float:
        """This section's share of the time left (shares of finished sections are dropped)."""
        share = self.shares.pop(name)
        left = max(self.cfg.budget_s - self.elapsed(), 0.0)
        return left * share / (share + sum(self.shares.values()))

    def tick(self, label: str) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(label, self.done, self.total)


def _items(run: _Run, name: str, items: list[Any], label: Callable[[Any], str]):
    """Yield (item, per-item budget); items past the section's budget are skipped (recorded),
    always measuring the first."""
    budget = run.section_budget(name)
    t0 = time.perf_counter()
    for i, item in enumerate(items):
        spent = time.perf_counter() - t0
        if i > 0 and spent > budget:
            run.skipped.append(f"{name} {label(item)}: time budget")
            run.tick(label(item))
            continue
        yield item, max((budget - spent) / (len(items) - i), 1e-3)
        run.tick(label(item))


# --------------------------------------------------------------------------------------------
# the benchmarks
# --------------------------------------------------------------------------------------------


def _torch_dtype(torch: Any, name: str) -> Any:
    return {
        "bf16": torch.bfloat16,
        "fp16": torch.float16,
        "fp8": torch.float8_e4m3fn,
        "tf32": torch.float32,
    }[name]


def _random(torch: Any, shape: tuple[int, ...], dtype: str, device: str) -> Any:
    """Random data, never zero: N(0, 1) with |x| < 1/64 pushed to 1/64 (FP8 keeps it too)."""
    work = torch.bfloat16 if dtype in ("fp8", "bf16") else _torch_dtype(torch, dtype)
    x = torch.randn(shape, device=device, dtype=work)
    x.masked_fill_(x.abs() < 2.0**-6, 2.0**-6)
    return x.to(_torch_dtype(torch, dtype)) if dtype == "fp8" else x


def _rotation(cfg: BenchConfig, set_bytes: float) -> int:
    """Buffer sets so that one pass over them exceeds the cache, within the allocation cap."""
    n = max(1, min(cfg.max_buffers, math.ceil(cfg.rotate_bytes / max(set_bytes, 1.0))))
    return max(1, min(n, int(cfg.max_alloc_bytes // max(set_bytes, 1.0))))


def _copy_fn(src: Any, dst: Any) -> Callable[[int], Any]:
    return lambda i: dst.copy_(src)


def _gemm_fn(
    torch: Any, dtype: str, a: list[Any], w: list[Any], device: str
) -> Callable[[int], Any]:
    """C = A W^T with weights stored (N, K) like nn.Linear, rotating over the buffer sets."""
    nbuf = len(a)
    if dtype == "fp8":
        one = torch.ones((), device=device, dtype=torch.float32)

        def fp8(i: int) -> Any:
            j = i % nbuf
            return torch._scaled_mm(
                a[j], w[j].t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16
            )

        return fp8
    c = torch.empty((a[0].shape[0], w[0].shape[0]), device=device, dtype=a[0].dtype)

    def mm(i: int) -> Any:
        j = i % nbuf
        return torch.mm(a[j], w[j].t(), out=c)

    return mm


def _sdpa_fn(
    torch: Any, qs: list[Any], ks: list[Any], vs: list[Any], causal: bool, gqa: bool
) -> Callable[[int], Any]:
    import torch.nn.functional as F

    nbuf = len(qs)

    def sdpa(i: int) -> Any:
        j = i % nbuf
        if gqa:  # grouped KV heads read once per group (torch 2.5+), as serving kernels do
            return F.scaled_dot_product_attention(
                qs[j], ks[j], vs[j], is_causal=causal, enable_gqa=True
            )
        return F.scaled_dot_product_attention(qs[j], ks[j], vs[j], is_causal=causal)

    return sdpa


def _bench_copy(
    torch: Any, clock: Clock, cfg: BenchConfig, run: _Run, out: dict[str, list]
) -> None:
    for nbytes, budget in _items(run, "copy", list(cfg.copy_bytes), lambda b: f"{b / 2**20:g} MiB"):
        numel = nbytes // 2
        src = _random(torch, (numel,), "bf16", cfg.device)
        dst = torch.empty_like(src)
        dst.fill_(1.0)  # touch the pages before timing
        med, times = _measure(clock, _copy_fn(src, dst), cfg, budget)
        b = numel * 2
        out["copy"].append(
            {"bytes": b, "seconds": med, "bytes_per_s": 2.0 * b / med, "times_s": times}
        )
        del src, dst


def _bench_gemm(
    torch: Any, clock: Clock, cfg: BenchConfig, run: _Run, out: dict[str, list]
) -> None:
    items = [(d, s) for d in cfg.dtypes for s in cfg.gemm_shapes]
    for (dtype, (m, n, k)), budget in _items(
        run, "gemm", items, lambda it: f"{it[0]} {it[1][0]}x{it[1][1]}x{it[1][2]}"
    ):
        eb = profile.element_bytes(dtype)
        nbuf = _rotation(cfg, (m * k + n * k) * eb)
        prev_tf32 = torch.backends.cuda.matmul.allow_tf32
        fn = None
        try:
            fn = _gemm_fn(
                torch,
                dtype,
                [_random(torch, (m, k), dtype, cfg.device) for _ in range(nbuf)],
                [_random(torch, (n, k), dtype, cfg.device) for _ in range(nbuf)],
                cfg.device,
            )
            torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
            med, times = _measure(clock, fn, cfg, budget)
        except RuntimeError as exc:  # e.g. FP8 needs dims % 16; out of memory
            run.skipped.append(f"gemm {dtype} {m}x{n}x{k}: {str(exc).splitlines()[0][:120]}")
            continue
        finally:
            torch.backends.cuda.matmul.allow_tf32 = prev_tf32
            del fn  # free this shape's buffers before the next shape allocates its own
        out["gemm"].append(
            {
                "dtype": dtype,
                "m": m,
                "n": n,
                "k": k,
                "seconds": med,
                "flops_per_s": 2.0 * m * n * k / med,
                "times_s": times,
            }
        )


def _sdpa_gqa(torch: Any) -> bool:
    """Whether this torch's scaled_dot_product_attention takes ``enable_gqa`` (2.5+)."""
    import torch.nn.functional as F

    q = torch.randn(1, 2, 1, 8)
    kv = torch.randn(1, 1, 4, 8)
    try:
        F.scaled_dot_product_attention(q, kv, kv, enable_gqa=True)
        return True
    except (TypeError, RuntimeError):
        return False


def _bench_attention(
    torch: Any, clock: Clock, cfg: BenchConfig, run: _Run, out: dict[str, list], phase: str
) -> None:
    gqa = _sdpa_gqa(torch)
    dtype = cfg.attention_dtype
    eb = profile.element_bytes(dtype)
    name = f"attention_{phase}"
    shapes = list(cfg.attention_decode if phase == "decode" else cfg.attention_prefill)

    def label(s: AttentionShape) -> str:
        return f"B{s.batch} H{s.heads}/{s.kv_heads} D{s.head_dim} S{s.seq}"

    for s, budget in _items(run, name, shapes, label):
        kvh = s.kv_heads if gqa else s.heads  # without enable_gqa, measure multi-head attention
        b, h, d, n = s.batch, s.heads, s.head_dim, s.seq
        q_len = 1 if phase == "decode" else n
        qo_bytes = 2.0 * b * h * q_len * d * eb
        kv_bytes = 2.0 * b * kvh * n * d * eb
        nbuf = _rotation(cfg, qo_bytes + kv_bytes)
        causal = phase == "prefill"
        fn = None
        try:
            fn = _sdpa_fn(
                torch,
                [_random(torch, (b, h, q_len, d), dtype, cfg.device) for _ in range(nbuf)],
                [_random(torch, (b, kvh, n, d), dtype, cfg.device) for _ in range(nbuf)],
                [_random(torch, (b, kvh, n, d), dtype, cfg.device) for _ in range(nbuf)],
                causal,
                gqa and kvh != h,
            )
            med, times = _measure(clock, fn, cfg, budget)
        except RuntimeError as exc:
            run.skipped.append(f"{name} {label(s)}: {str(exc).splitlines()[0][:120]}")
            continue
        finally:
            del fn
        # QK^T and PV: 4 B H D per (query, key) pair; causal prefill has S (S + 1) / 2 pairs
        pairs = float(n) if phase == "decode" else n * (n + 1) / 2.0
        flops = 4.0 * b * h * d * pairs
        out[name].append(
            {
                "dtype": dtype,
                "batch": b,
                "heads": h,
                "kv_heads": kvh,
                "head_dim": d,
                "seq": n,
                "flops": flops,
                "bytes": qo_bytes + kv_bytes,
                "seconds": med,
                "causal": causal,
                "times_s": times,
            }
        )


def run_benchmarks(cfg: BenchConfig, progress: ProgressFn | None = None) -> dict[str, Any]:
    """Run every benchmark of ``cfg`` and return the profile mapping (not yet validated)."""
    torch = require_torch()
    device = resolve_device(torch, cfg.device)
    cfg = replace(cfg, device=device)
    if device.startswith("cuda"):
        torch.cuda.set_device(int(device.split(":")[1]))
    torch.manual_seed(0)
    clock = Clock(torch, device)
    out: dict[str, list[dict[str, Any]]] = {k: [] for k in profile.MEASUREMENT_KINDS}
    comm = cfg.comm_ranks > 1 and bool(cfg.comm_bytes)
    total = (
        len(cfg.copy_bytes)
        + len(cfg.dtypes) * len(cfg.gemm_shapes)
        + len(cfg.attention_decode)
        + len(cfg.attention_prefill)
        + (1 if comm else 0)
    )
    run = _Run(cfg, progress, total)
    if not comm:
        run.shares.pop("comm")
    notes = list(cfg.notes)
    _bench_copy(torch, clock, cfg, run, out)
    _bench_gemm(torch, clock, cfg, run, out)
    _bench_attention(torch, clock, cfg, run, out, "decode")
    _bench_attention(torch, clock, cfg, run, out, "prefill")
    if comm:
        budget = run.section_budget("comm")
        rows, note = run_collectives(
            torch, cfg, budget, "cuda" if device.startswith("cuda") else "cpu"
        )
        notes.append(note)
        for r in rows:
            out[r.pop("kind")].append(r)
        run.tick("collectives")
    info = device_info(torch, device)
    settings = {
        "quick": cfg.quick,
        "budget_s": cfg.budget_s,
        "elapsed_s": round(run.elapsed(), 3),
        "timer": clock.kind,
        "warmup": cfg.warmup,
        "min_repeats": cfg.min_repeats,
        "max_repeats": cfg.max_repeats,
        "min_sample_s": cfg.min_sample_s,
        "rotate_bytes": cfg.rotate_bytes,
        "dtypes": list(cfg.dtypes),
        "attention_dtype": cfg.attention_dtype,
        "threads": int(torch.get_num_threads()),
        "skipped": run.skipped,
        "notes": notes,
    }
    return {
        "profile_version": profile.PROFILE_VERSION,
        "device": info,
        "settings": settings,
        "measurements": out,
    }


def calibrate(
    device: str | None = None,
    *,
    quick: bool = False,
    out: str | Path | None = None,
    dtypes: tuple[str, ...] | None = None,
    budget_s: float | None = None,
    threads: int | None = None,
    progress: ProgressFn | None = None,
    config: BenchConfig | None = None,
) -> profile.Profile:
    """Measure this machine and return (and, with ``out``, write) a validated profile.

    ``device``: ``cuda:N``, ``cpu`` or None (cuda:0 if available, else cpu). With several GPUs
    visible, collectives run over all of them. ``threads`` sets torch's CPU threads for the run
    (a CPU shared with other jobs measures far more steadily on fewer threads). ``config``
    replaces the standard grid.
    """
    torch = require_torch()
    dev = resolve_device(torch, device)
    if threads is not None:
        if threads < 1:
            raise SpecError(f"--threads {threads}: must be >= 1")
        previous = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            return calibrate(
                dev,
                quick=quick,
                out=out,
                dtypes=dtypes,
                budget_s=budget_s,
                progress=progress,
                config=config,
            )
        finally:
            torch.set_num_threads(previous)
    if config is None:
        if dev.startswith("cuda"):
            props = torch.cuda.get_device_properties(int(dev.split(":")[1]))
            cache = getattr(props, "L2_cache_size", None)
            ranks = torch.cuda.device_count()
            config = default_config(
                dev,
                quick=quick,
                dtypes=dtypes,
                budget_s=budget_s,
                cache_bytes=cache,
                comm_ranks=ranks,
                fp8=fp8_supported(torch, dev),
            )
        else:
            config = default_config(
                "cpu", quick=quick, dtypes=dtypes, budget_s=budget_s, cache_bytes=cpu_cache_bytes()
            )
    else:
        config = replace(config, device=dev)
    data = run_benchmarks(config, progress)
    if out is not None:
        return profile.save_profile(data, out)
    return profile.load_profile(data, "<calibrate>")

"""Chunked, optionally parallel evaluation of a sweep: tasks of (precision, plan rows x
concurrency) run inline or on a forked process pool; each task carries its job (no module
state), so several searches can run in one process."""

from __future__ import annotations

import functools
import math
import os
import signal
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Self

import numpy as np

from ..ops import OP_CLASSES
from ..serving import evaluate
from ..specs.engine import EngineConstants
from ..specs.hardware import HardwareSpec
from ..specs.model import ModelSpec
from ..specs.precision import Precision
from .points import Points

Array = np.ndarray

PARALLEL_MIN_STAGE_POINTS = 2000  # stages smaller than this run inline even with a pool


@dataclass(frozen=True)
class Job:
    """Shared, read-only inputs of one search (sent once to each worker process)."""

    model: ModelSpec
    hw: HardwareSpec
    eng: EngineConstants
    precisions: tuple[Precision, ...]
    isl: int
    osl: int
    spec_tokens: int = 0
    spec_acceptance: float = 0.0


def evaluate_task(job: Job, task: tuple[int, dict[str, Array]]) -> dict[str, Array]:
    """Evaluate one chunk of aggregated points of one precision (runs in a worker or inline)."""
    pi, a = task
    r = evaluate(
        job.model,
        job.hw,
        job.precisions[pi],
        job.eng,
        tp=a["tp"],
        pp=a["pp"],
        ep=a["ep"],
        dp=a["dp"],
        attention_dp=a["attention_dp"],
        cp=a["cp"],
        isl=job.isl,
        osl=job.osl,
        concurrency=a["concurrency"],
        spec_tokens=job.spec_tokens,
        spec_acceptance=job.spec_acceptance,
    )
    out = dict(a)
    out.update(
        precision=np.full(len(a["tp"]), pi, dtype=np.int64),
        ttft_s=r.ttft_s,
        tpot_s=r.tpot_s,
        tok_s_per_user=r.tok_s_per_user,
        output_tok_s_per_gpu=r.output_tok_s_per_gpu,
        total_tok_s_per_gpu=r.total_tok_s_per_gpu,
        num_gpus=np.asarray(r.num_gpus, dtype=float),
        memory_per_gpu_bytes=r.memory_per_gpu_bytes,
        max_concurrency=r.max_concurrency,
        running_concurrency=np.broadcast_to(r.running_concurrency, r.tpot_s.shape),
        fits_in_memory=r.fits_in_memory,
        feasible=r.feasible,
        reason=r.reason,
        step_decode_seqs=r.step_decode_seqs,
        step_prefill_tokens=r.step_prefill_tokens,
    )
    for phase, bd in (
        ("prefill", r.prefill_breakdown),
        ("decode", r.decode_breakdown),
        ("mixed_step", r.mixed_breakdown),
    ):
        for c in OP_CLASSES:
            out[f"bd_{phase}_{c}"] = np.broadcast_to(bd[c], r.tpot_s.shape).astype(float)
    return out


def split_tasks(
    tasks: list[tuple[int, dict[str, Array]]], chunk: int, workers: int
) -> list[tuple[int, dict[str, Array]]]:
    out = []
    total = sum(len(a["tp"]) for _, a in tasks)
    per = max(min(chunk, math.ceil(total / max(workers, 1))), 1)
    for pi, a in tasks:
        n = len(a["tp"])
        k = max(math.ceil(n / per), 1)
        for s in range(k):
            lo, hi = s * n // k, (s + 1) * n // k
            if hi > lo:
                out.append((pi, {name: v[lo:hi] for name, v in a.items()}))
    return out


class Executor:
    """Runs evaluation tasks inline, or on one forked process pool shared by every stage of a
    search (workers inherit the job at fork time; only index arrays and results travel)."""

    def __init__(self, job: Job, workers: int):
        self.job = job
        self.workers = workers
        self.pool: Any = None
        self._task = functools.partial(evaluate_task, job)

    def __enter__(self) -> Self:
        if self.workers > 1 and "fork" in _start_methods():
            import multiprocessing

            self.pool = multiprocessing.get_context("fork").Pool(
                self.workers, initializer=_worker_signals
            )
        return self

    def __exit__(self, exc_type: object = None, *exc: object) -> None:
        pool, self.pool = self.pool, None
        if pool is not None:
            _stop(pool, timeout_s=POOL_STOP_TIMEOUT_S)

    def run(
        self, tasks: Iterable[tuple[int, dict[str, Array]]], total: int, progress: Any
    ) -> Iterator[Points]:
        """Evaluate tasks (lazily produced); at most 2 x workers chunks are in flight at once."""
        if total == 0:
            return
        if self.pool is None or total < PARALLEL_MIN_STAGE_POINTS:
            results: Iterable[dict[str, Array]] = map(self._task, tasks)
        else:
            results = self._pooled(tasks)
        for out in results:
            if progress is not None:
                progress(len(out["tp"]))
            yield Points(out)

    def _pooled(self, tasks: Iterable[tuple[int, dict[str, Array]]]) -> Iterator[dict[str, Array]]:
        from collections import deque

        pending: deque[Any] = deque()
        for t in tasks:
            pending.append(self.pool.apply_async(self._task, (t,)))
            if len(pending) >= 2 * self.workers:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()


POOL_STOP_TIMEOUT_S = 3.0  # then the workers are killed and the pool's threads abandoned


def _worker_signals() -> None:
    """Workers leave Ctrl-C to the parent (a terminal sends SIGINT to the whole process group:
    a worker killed holding the pool's queue lock hangs ``Pool.terminate``, and each would
    print a traceback) and die quietly on SIGTERM, which is how the parent stops them."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _stop(pool: Any, timeout_s: float) -> None:
    """Terminate the pool within ``timeout_s``: ``Pool.terminate`` runs in a daemon thread;
    if it has not returned by then (a worker died holding a queue lock), the workers are
    killed and the thread is left behind (the process is ending or moving on)."""
    import threading

    def stop() -> None:
        pool.terminate()
        pool.join()

    t = threading.Thread(target=stop, name="pool-stop", daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        for p in list(getattr(pool, "_pool", [])):
            try:
                p.kill()
            except (OSError, ValueError):
                pass
        t.join(1.0)


def _start_methods() -> list[str]:
    import multiprocessing

    return multiprocessing.get_all_start_methods()


def default_workers() -> int:
    """Processes for large sweeps: the CPUs this process may use (numpy ufuncs are
    single-threaded)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # pragma: no cover - non-Linux
        return max(os.cpu_count() or 1, 1)


class Progress:
    """A rich progress bar on stderr for long sweeps (TTY only, or forced)."""

    def __init__(self, total: int, enabled: bool | None):
        self.bar = None
        if enabled is None:
            enabled = total >= 500_000 and sys.stderr.isatty()
        if enabled and total > 0:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn("frontier"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self.task = self.bar.add_task("points", total=total)
            self.bar.start()

    def add(self, total: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, total=(self.bar.tasks[0].total or 0) + total)

    def __call__(self, n: int) -> None:
        if self.bar is not None:
            self.bar.advance(self.task, n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()

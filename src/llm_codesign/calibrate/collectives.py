"""Collective microbenchmarks of ``llm-codesign calibrate``: all-reduce and all-to-all over
message sizes, one spawned process per GPU (NCCL; gloo on the CPU). Each rank times its calls
with the device's :class:`~.device.Clock`; the slowest rank sets each time, and rank 0 writes the
rows to a file the parent reads back.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .device import Clock

if TYPE_CHECKING:  # annotation only: microbench imports this module
    from .microbench import BenchConfig


def _collective_fn(dist: Any, coll: str, x: Any, y: Any) -> Callable[[int], Any]:
    if coll == "allreduce":
        return lambda i: dist.all_reduce(x)
    return lambda i: dist.all_to_all_single(y, x)


def _comm_worker(
    rank: int,
    world: int,
    backend: str,
    device_kind: str,
    sizes: list[int],
    init_file: str,
    result_file: str,
    warmup: int,
    max_repeats: int,
    budget_s: float,
) -> None:
    """One rank of the collective benchmarks (spawned per GPU). Rank 0 writes the rows."""
    import torch
    import torch.distributed as dist

    dist.init_process_group(backend, init_method=f"file://{init_file}", rank=rank, world_size=world)
    dev = f"cuda:{rank}" if device_kind == "cuda" else "cpu"
    if device_kind == "cuda":
        torch.cuda.set_device(rank)
    clock = Clock(torch, dev)
    dtype = torch.bfloat16 if device_kind == "cuda" else torch.float32  # gloo reduces fp32
    elem = 2 if device_kind == "cuda" else 4
    rows: list[dict[str, Any]] = []
    per_item = budget_s / max(2 * len(sizes), 1)
    for coll in ("allreduce", "alltoall"):
        for nbytes in sizes:
            numel = max(world, nbytes // elem // world * world)
            x = torch.randn(numel, device=dev, dtype=dtype)
            x.masked_fill_(x.abs() < 2.0**-6, 2.0**-6)
            fn = _collective_fn(dist, coll, x, torch.empty_like(x))
            for _ in range(warmup):
                fn(0)
            dist.barrier()
            t1 = torch.tensor([clock.run(fn, 1, 0)], device=dev, dtype=torch.float64)
            dist.all_reduce(t1, op=dist.ReduceOp.MAX)  # every rank takes the same decisions
            repeats = int(min(max(per_item / max(float(t1.item()), 1e-9), 3), max_repeats))
            times = []
            for _ in range(repeats):
                dist.barrier()
                times.append(clock.run(fn, 1, 0))
            med = torch.tensor([statistics.median(times)], device=dev, dtype=torch.float64)
            dist.all_reduce(med, op=dist.ReduceOp.MAX)  # the slowest rank sets the time
            b = numel * elem
            factor = 2.0 * (world - 1) / world if coll == "allreduce" else (world - 1) / world
            sec = float(med.item())
            rows.append(
                {
                    "kind": coll,
                    "bytes": b,
                    "ranks": world,
                    "seconds": sec,
                    "bus_bytes_per_s": b / sec * factor,
                    "times_s": times,
                }
            )
    if rank == 0:
        Path(result_file).write_text(json.dumps(rows))
    dist.barrier()
    dist.destroy_process_group()


def run_collectives(
    torch: Any, cfg: BenchConfig, budget_s: float, device_kind: str = "cuda"
) -> tuple[list[dict[str, Any]], str]:
    """All-reduce and all-to-all over ``cfg.comm_bytes`` on ``cfg.comm_ranks`` processes (NCCL
    on GPUs, gloo on CPU); returns (rows, note). A failure is a note, not an exception, so a
    long calibration keeps its other measurements."""
    import torch.multiprocessing as mp

    backend = "nccl" if device_kind == "cuda" else "gloo"
    with tempfile.TemporaryDirectory(prefix="llm_codesign_comm_") as tmp:
        init_file = os.path.join(tmp, "init")
        result = os.path.join(tmp, "rows.json")
        args = (
            cfg.comm_ranks,
            backend,
            device_kind,
            list(cfg.comm_bytes),
            init_file,
            result,
            cfg.warmup,
            cfg.max_repeats,
            budget_s,
        )
        deadline = time.perf_counter() + budget_s * 2 + 120.0
        try:
            ctx = mp.start_processes(
                _comm_worker, args=args, nprocs=cfg.comm_ranks, join=False, start_method="spawn"
            )
            while not ctx.join(timeout=1.0):
                if time.perf_counter() > deadline:
                    for p in ctx.processes:
                        p.terminate()
                    return [], f"collectives: stopped after {budget_s * 2 + 120:.0f} s"
        except Exception as exc:  # noqa: BLE001 - a broken collective setup must not lose the run
            text = str(exc).strip()
            why = text.splitlines()[-1][:160] if text else type(exc).__name__
            return [], f"collectives failed: {why}"
        rows = json.loads(Path(result).read_text())
    return rows, f"collectives: {backend}, {cfg.comm_ranks} ranks"

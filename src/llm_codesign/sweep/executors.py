"""Where a sweep's shards run: ``local`` (this process, or a forked process pool of
``workers``) or ``ray`` (Ray tasks on a local Ray instance of ``workers`` CPUs, or on an
existing cluster at ``address``). Both call the same ``sweep.shard.run_shard`` on the same
tasks and yield its outputs as shards finish (any order), so the results are the same.

Ray is optional (``pip install 'llm-codesign[ray]'``); asking for it without Ray installed is
a one-line error.
"""

from __future__ import annotations

import multiprocessing
import socket
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Self

from ..errors import SpecError, UnsupportedError
from ..explore.runner import POOL_STOP_TIMEOUT_S, _stop, _worker_signals

EXECUTORS = ("local", "ray")
RAY_IN_FLIGHT_PER_CPU = 2  # tasks submitted ahead per CPU of the Ray cluster


class LocalExecutor:
    """Shards inline (``workers=1``) or on a forked pool; workers ignore Ctrl-C (the driver
    stops them, within ``POOL_STOP_TIMEOUT_S``)."""

    def __init__(self, workers: int):
        self.workers = max(int(workers), 1)
        self.pool: Any = None

    def __enter__(self) -> Self:
        if self.workers > 1 and "fork" in multiprocessing.get_all_start_methods():
            self.pool = multiprocessing.get_context("fork").Pool(
                self.workers, initializer=_worker_signals
            )
        return self

    def __exit__(self, *exc: object) -> None:
        pool, self.pool = self.pool, None
        if pool is not None:
            _stop(pool, timeout_s=POOL_STOP_TIMEOUT_S)

    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Iterator[Any]:
        if self.pool is None:
            yield from map(fn, tasks)
            return
        yield from self.pool.imap_unordered(fn, tasks, chunksize=1)


def ray_module() -> Any:
    try:
        import ray
    except ImportError:
        raise UnsupportedError(
            "--executor ray needs Ray: pip install 'llm-codesign[ray]' (or pip install ray)"
        ) from None
    return ray


class RayExecutor:
    """Shards as Ray tasks (one CPU each). ``address`` None starts a local Ray instance with
    ``workers`` CPUs (stopped afterwards); ``"auto"`` or ``ray://host:10001`` joins a running
    cluster, whose nodes must have llm-codesign installed (README, "Sweeps")."""

    def __init__(self, workers: int, address: str | None = None):
        self.workers = max(int(workers), 1)
        self.address = address
        self.ray: Any = None
        self.started = False
        self.pending: list[Any] = []

    def __enter__(self) -> Self:
        ray = self.ray = ray_module()
        if self.address and not ray.is_initialized():
            _check_reachable(self.address)
        if not ray.is_initialized():
            kw: dict[str, Any] = {"logging_level": "ERROR", "log_to_driver": False}
            try:
                if self.address:
                    ray.init(address=self.address, **kw)
                else:
                    ray.init(num_cpus=self.workers, include_dashboard=False, **kw)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                where = self.address or "a local instance"
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise SpecError(f"cannot start Ray on {where}: {first}") from None
            self.started = True
        return self

    def __exit__(self, *exc: object) -> None:
        ray, pending, self.pending = self.ray, self.pending, []
        if ray is None:
            return
        for ref in pending:
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 - best effort: the task may have finished
                pass
        if self.started:
            ray.shutdown()
            self.started = False

    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Iterator[Any]:
        ray = self.ray
        remote = ray.remote(num_cpus=1, max_retries=0)(fn)
        cpus = int(ray.cluster_resources().get("CPU", self.workers)) or 1
        limit = RAY_IN_FLIGHT_PER_CPU * cpus
        it = iter(tasks)
        exhausted = False
        while True:
            while not exhausted and len(self.pending) < limit:
                try:
                    self.pending.append(remote.remote(next(it)))
                except StopIteration:
                    exhausted = True
            if not self.pending:
                return
            done, self.pending = ray.wait(self.pending, num_returns=1)
            yield ray.get(done[0])


RAY_CONNECT_TIMEOUT_S = 5.0  # ray.init retries an unreachable address for minutes


def _check_reachable(address: str) -> None:
    """A one-line error, within seconds, when ``HOST:PORT`` (or ``ray://HOST:PORT``) does
    not accept connections: ``ray.init`` would retry it for minutes in C code that neither
    Ctrl-C nor SIGTERM interrupts. ``auto`` (the local cluster's address file) is left to Ray,
    which fails fast without one."""
    rest = address.split("://", 1)[-1]
    host, sep, port = rest.rpartition(":")
    if address == "auto" or not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), RAY_CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise SpecError(
            f"cannot reach Ray at {address}: {exc.strerror or exc} (is `ray start --head` "
            "running there?)"
        ) from None


def make_executor(kind: str, workers: int, address: str | None = None) -> Any:
    if kind == "local":
        if address:
            raise SpecError("--ray-address needs --executor ray")
        return LocalExecutor(workers)
    if kind == "ray":
        return RayExecutor(workers, address)
    raise SpecError(f"executor {kind!r} is not one of {', '.join(EXECUTORS)}")

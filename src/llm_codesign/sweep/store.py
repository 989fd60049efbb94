"""A sweep's output directory: partitioned Parquet written whole or not at all.

Layout (``OUT``)::

    manifest.json                       the spec's digest and resolved axes (written first)
    points/model=M/hardware=H/precision=P/part-<shard>.parquet    every evaluated point
    frontier/model=M/hardware=H/precision=P/part-<shard>.parquet  the cell's Pareto points
    shards/<shard>.parquet              the cell's summary row: the shard's "done" mark
    summary.parquet, summary.csv        one row per cell (written when every shard is done)

A shard is one cell (model x GPU x precision x workload; ``explore.cells.Cell.shard``). Its
files are encoded where the shard runs (Parquet bytes: a worker process or a Ray task) and
written here by the driver through ``outputs.AtomicWriter`` (unique temporary sibling,
``os.replace``), the summary row last: a shard is finished exactly when ``shards/<shard>.parquet``
exists, and a rerun skips those. An interrupted run leaves whole files only; the shard it was
writing has no mark and is redone (its files replaced). Partition columns (model, hardware,
precision) are in the paths, not in the files (hive partitioning: DuckDB and pyarrow read them
back as columns).

A directory holds one sweep: a rerun with another spec (another digest) is refused unless
``restart`` clears the sweep's own entries; a non-empty directory without a manifest is refused.
Two runs into one directory at once are refused (an advisory lock on ``OUT/.lock``).
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import SpecError, UnsupportedError
from ..outputs import AtomicWriter, check_output_path

FORMAT = "llm-codesign sweep"
FORMAT_VERSION = 1
ENTRIES = ("manifest.json", "points", "frontier", "shards", "summary.parquet", "summary.csv")
COMPRESSION = "zstd"
_OBJECT = np.dtype(object)


def pyarrow_modules() -> tuple[Any, Any]:
    """``pyarrow`` and ``pyarrow.parquet``, or a one-line error saying how to install them."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UnsupportedError(
            "sweep writes Parquet and needs pyarrow: pip install 'llm-codesign[sweep]' "
            "(or pip install pyarrow)"
        ) from None
    return pa, pq


def arrow_table(cols: dict[str, Any]) -> Any:
    """A pyarrow Table of numpy columns (object columns are strings, even with no rows)."""
    pa, _ = pyarrow_modules()
    return pa.table(
        {
            k: pa.array(v, type=pa.string() if getattr(v, "dtype", None) is _OBJECT else None)
            for k, v in cols.items()
        }
    )


def summary_table(rows: list[dict[str, Any]]) -> Any:
    """Summary rows as a table; None becomes null, types come from the non-null values."""
    pa, _ = pyarrow_modules()
    if not rows:
        return pa.table({})
    return pa.Table.from_pylist(rows)


def parquet_bytes(table: Any) -> bytes:
    _, pq = pyarrow_modules()
    buf = io.BytesIO()
    pq.write_table(table, buf, compression=COMPRESSION)
    return buf.getvalue()


class PartWriter:
    """Streams column chunks into one in-memory Parquet file (one row group per chunk)."""

    def __init__(self) -> None:
        self.pa, self.pq = pyarrow_modules()
        self.buf = io.BytesIO()
        self.writer: Any = None
        self.rows = 0

    def __call__(self, cols: dict[str, Any]) -> None:
        t = arrow_table(cols)
        if self.writer is None:
            self.writer = self.pq.ParquetWriter(self.buf, t.schema, compression=COMPRESSION)
        self.writer.write_table(t)
        self.rows += t.num_rows

    def close(self, empty: dict[str, Any]) -> bytes:
        """The file's bytes (``empty``: columns of zero rows giving the schema of no chunk)."""
        if self.writer is None:
            return parquet_bytes(arrow_table(empty))
        self.writer.close()
        return self.buf.getvalue()


def partition(cell_ids: dict[str, str]) -> str:
    return "/".join(f"{k}={cell_ids[k]}" for k in ("model", "hardware", "precision"))


class Store:
    """The output directory of one sweep (see the module docstring)."""

    def __init__(self, out: str | Path):
        self.out = check_output_path(out, directory=True, create=True)
        self._lock_fh: Any = None

    # ---- lifecycle ----
    def open(self, digest: str, description: dict[str, Any], restart: bool) -> None:
        """Create or reopen the directory for the sweep with ``digest``; refuse another one."""
        self.out.mkdir(parents=True, exist_ok=True)
        self._lock()
        manifest = self.out / "manifest.json"
        if manifest.exists():
            try:
                old = json.loads(manifest.read_text())
                old_digest = old["spec_sha256"]
            except (OSError, ValueError, KeyError, TypeError):
                old_digest = None
            if old_digest != digest:
                if not restart:
                    raise SpecError(
                        f"{self.out} holds another sweep (spec sha256 "
                        f"{str(old_digest)[:12]}..., this spec {digest[:12]}...): use another "
                        "directory or --restart to clear it"
                    )
                self.clear()
        elif any(p.name != ".lock" for p in self.out.iterdir()):
            raise SpecError(
                f"{self.out} is not empty and holds no sweep (no manifest.json): "
                "use an empty or new directory"
            )
        if restart:
            self.clear()
        self.remove_temporaries()
        if not manifest.exists():
            doc = {
                "format": FORMAT,
                "format_version": FORMAT_VERSION,
                "spec_sha256": digest,
                "spec": description,
            }
            with AtomicWriter(manifest) as fh:
                fh.write(json.dumps(doc, indent=1, sort_keys=True) + "\n")

    def _lock(self) -> None:
        fh = open(self.out / ".lock", "a")  # noqa: SIM115 - held until close()
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            raise SpecError(f"another sweep is writing to {self.out}") from None
        self._lock_fh = fh

    def close(self) -> None:
        self.remove_temporaries()
        if self._lock_fh is not None:
            self._lock_fh.close()
            self._lock_fh = None

    def clear(self) -> None:
        """Remove the sweep's own entries (nothing else in the directory is touched)."""
        for name in ENTRIES:
            p = self.out / name
            if p.is_dir():
                shutil.rmtree(p)
            elif p.exists():
                p.unlink()

    def remove_temporaries(self) -> None:
        """Temporary files (``AtomicWriter``'s ``.NAME.*.tmp``) of a run killed outright; the
        lock makes sure no other run is writing them."""
        for dirpath, _dirs, names in os.walk(self.out):
            for name in names:
                if name.startswith(".") and name.endswith(".tmp"):
                    try:
                        os.unlink(os.path.join(dirpath, name))
                    except OSError:
                        pass

    # ---- shards ----
    def done(self) -> set[str]:
        d = self.out / "shards"
        if not d.is_dir():
            return set()
        return {p.name[: -len(".parquet")] for p in d.iterdir() if p.name.endswith(".parquet")}

    def write_shard(
        self, shard: str, ids: dict[str, str], points: bytes | None, frontier: bytes, summary: bytes
    ) -> None:
        """A finished shard's files, the summary row (the done mark) last."""
        part = partition(ids)
        if points is not None:
            self._write(self.out / "points" / part / f"part-{shard}.parquet", points)
        self._write(self.out / "frontier" / part / f"part-{shard}.parquet", frontier)
        self._write(self.out / "shards" / f"{shard}.parquet", summary)

    def _write(self, path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with AtomicWriter(path, "wb") as fh:
            fh.write(data)

    def write_summary(self, shards: Iterable[str]) -> Any:
        """``summary.parquet`` and ``summary.csv``: the rows of the given shards, sorted by
        model, hardware, precision, workload."""
        pa, pq = pyarrow_modules()
        tables = [pq.read_table(self.out / "shards" / f"{s}.parquet") for s in shards]
        table = pa.concat_tables(tables, promote_options="permissive") if tables else pa.table({})
        if table.num_rows:
            table = table.sort_by(
                [(c, "ascending") for c in ("model", "hardware", "precision", "workload")]
            )
        with AtomicWriter(self.out / "summary.parquet", "wb") as fh:
            pq.write_table(table, fh, compression=COMPRESSION)
        import pyarrow.csv as pacsv

        buf = io.BytesIO()
        pacsv.write_csv(table, buf)
        with AtomicWriter(self.out / "summary.csv", "wb") as fh:
            fh.write(buf.getvalue())
        return table

"""Result files written whole or not at all: the one home of output writing.

Every file a command writes (validate and calibrate-fit outputs, frontier CSV and plots, search
variants, the HTML report, launch artifacts, calibration profiles) goes through
:class:`AtomicWriter`: a uniquely named temporary file in the target's own directory
(``tempfile.mkstemp``, so concurrent writers never share one), renamed over the target with
``os.replace`` only when the writing finished, and removed on any error or interrupt (Ctrl-C,
SIGTERM turned into an exception by the CLI). A reader therefore sees the old file or the new
one, never a torn one.

:func:`check_output_path` says why a path cannot be written (missing directory, a directory
where a file goes, a parent that is a file, a read-only file or directory) as one
:class:`SpecError` line before any work is done. Read-only means what the mode bits say, even
for root (who may write anything): a file or directory without any write bit is refused.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

from .errors import SpecError

_WRITE_BITS = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH


def _writable(st: os.stat_result, path: Path) -> bool:
    return bool(st.st_mode & _WRITE_BITS) and os.access(path, os.W_OK)


def _fail(path: Path, why: str) -> SpecError:
    return SpecError(f"cannot write {path}: {why}")


def check_output_path(path: str | Path, *, directory: bool = False, create: bool = False) -> Path:
    """``path`` as a Path when it can be written, else a one-line :class:`SpecError`.

    ``directory``: the output is a directory (its files are checked when written); otherwise
    a file, which must not be a directory. ``create``: missing parent directories (and, for a
    directory output, the directory itself) may be created; their nearest existing ancestor
    must then be a writable directory.
    """
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        st = None  # a parent is a file: reported below
    except OSError as exc:
        raise _fail(p, exc.strerror or str(exc)) from None
    if st is not None:
        if directory and not stat.S_ISDIR(st.st_mode):
            raise _fail(p, "it exists and is not a directory")
        if not directory and stat.S_ISDIR(st.st_mode):
            raise _fail(p, "it is a directory")
        if not _writable(st, p):
            raise _fail(p, "it is read-only" if not directory else "the directory is read-only")
        if not directory:
            _check_parent(p, p.parent, create=False)
        return p
    _check_parent(p, p.parent, create=create)
    return p


def _check_parent(target: Path, parent: Path, *, create: bool) -> None:
    parent = parent if str(parent) else Path(".")
    missing = []
    d = parent
    while True:
        try:
            st = d.stat()
            break
        except FileNotFoundError:
            if not create:
                raise _fail(target, f"directory {d} does not exist") from None
            missing.append(d)
        except NotADirectoryError:
            missing.append(d)
        except OSError as exc:
            raise _fail(target, exc.strerror or str(exc)) from None
        if d.parent == d:
            raise _fail(target, f"directory {d} does not exist")
        d = d.parent
    if not stat.S_ISDIR(st.st_mode):
        raise _fail(target, f"{d} is a file, not a directory")
    if not _writable(st, d):
        raise _fail(target, f"directory {d} is read-only")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class AtomicWriter:
    """Write a file through a unique temporary sibling, renamed into place only on success,
    so an interrupted or failed run leaves the old file (or none) and no temporary file.

    ``mode`` is ``"w"`` (text, newline="" so CSV writers control line ends) or ``"wb"``;
    ``executable`` sets the execute bits of the written file.
    """

    def __init__(self, path: str | Path, mode: str = "w", *, executable: bool = False):
        self.path = Path(path)
        self.mode = mode
        self.executable = executable
        self.tmp: Path | None = None
        self.fh: Any = None

    def __enter__(self) -> Any:
        check_output_path(self.path)
        try:
            fd, name = tempfile.mkstemp(
                prefix=f".{self.path.name[:80]}.", suffix=".tmp", dir=self.path.parent or "."
            )
        except OSError as exc:
            raise _fail(self.path, exc.strerror or str(exc)) from None
        self.tmp = Path(name)
        try:
            if "b" in self.mode:
                self.fh = os.fdopen(fd, self.mode)
            else:
                self.fh = os.fdopen(fd, self.mode, newline="", encoding="utf-8")
        except BaseException:
            os.close(fd)
            self._discard()
            raise
        return self.fh

    def _discard(self) -> None:
        if self.tmp is not None:
            try:
                os.unlink(self.tmp)
            except OSError:
                pass
            self.tmp = None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if self.fh is not None:
                self.fh.close()
            if exc_type is not None or self.tmp is None:
                return
            mode = 0o777 if self.executable else 0o666
            os.chmod(self.tmp, mode & ~_umask())
            os.replace(self.tmp, self.path)
            self.tmp = None
        except OSError as exc:
            raise _fail(self.path, exc.strerror or str(exc)) from None
        finally:
            self.fh = None
            self._discard()


def write_text(path: str | Path, text: str, *, executable: bool = False) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path."""
    with AtomicWriter(path, executable=executable) as fh:
        fh.write(text)
    return Path(path)


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; returns the path."""
    with AtomicWriter(path, "wb") as fh:
        fh.write(data)
    return Path(path)


__all__ = ["AtomicWriter", "check_output_path", "write_bytes", "write_text"]

"""Output files: checked before any measuring, written atomically.

A run that measures for minutes must not find out at the end that it cannot
write its results (a missing directory, a read-only one, a path that is a
directory), nor silently replace an earlier results file. :func:`check_output`
says so before the run starts; :func:`write_atomic` writes a file next to its
destination and renames it into place, so a reader (or a crash) never sees a
half-written file.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from typing import IO, Any

PathLike = str | os.PathLike[str]

__all__ = ["OutputError", "check_output", "write_atomic", "write_json_atomic", "write_text_atomic"]


class OutputError(ValueError):
    """An output path that cannot (or must not) be written; the message names it."""


def check_output(path: PathLike, *, what: str = "output", keep_existing: bool = False,
                 override: str = "--force") -> None:
    """Raise :class:`OutputError` unless ``path`` can be written: its directory exists
    and takes a new file, and ``path`` is not a directory. ``keep_existing``: an
    existing file is refused too (``override`` names what allows replacing it).

    Writability is tried, not guessed: a temporary file is created in the
    directory and removed (``os.access`` is wrong for root and for read-only mounts).
    """
    shown = os.fspath(path)
    if not shown:
        raise OutputError(f"{what}: an empty path")
    if os.path.isdir(shown):
        raise OutputError(f"{what} {shown!r} is a directory; expected a file name")
    directory = os.path.dirname(os.path.abspath(shown))
    if not os.path.isdir(directory):
        raise OutputError(f"{what} {shown!r}: the directory {directory!r} does not exist")
    if keep_existing and os.path.exists(shown):
        raise OutputError(f"{what} {shown!r} already exists; it is kept (give {override} to "
                          "replace it, or another file name)")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".pcb-check-", dir=directory)
    except OSError as e:
        raise OutputError(f"{what} {shown!r}: cannot write in {directory!r} "
                          f"({e.strerror or e})") from None
    os.close(fd)
    os.unlink(tmp)


@contextlib.contextmanager
def _replacing(path: PathLike, mode: str) -> Iterator[IO[Any]]:
    """A file object on a temporary file beside ``path``, renamed onto it on success."""
    target = os.fspath(path)
    base = os.path.basename(target) or "out"
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(target)))
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomic(path: PathLike, write: Callable[[IO[Any]], object], *,
                 binary: bool = False) -> None:
    """Call ``write(f)`` on a temporary file beside ``path``, then rename it onto ``path``."""
    with _replacing(path, "wb" if binary else "w") as f:
        write(f)


def write_text_atomic(path: PathLike, text: str) -> None:
    """Replace ``path`` with ``text`` atomically."""
    write_atomic(path, lambda f: f.write(text))


def write_json_atomic(path: PathLike, doc: Any, indent: int = 1) -> None:
    """Replace ``path`` with ``doc`` as JSON atomically."""
    write_atomic(path, lambda f: json.dump(doc, f, indent=indent))

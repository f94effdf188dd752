"""Output files: checked before any measuring, claimed by one writer, written atomically.

A run that measures for minutes must not find out at the end that it cannot
write its results (a missing directory, a read-only one, a path that is a
directory, a device or a FIFO), nor silently replace an earlier results file,
nor share it with another run writing the same file. :func:`check_output` says
so before the run starts and, with ``claim``, takes the file: a lock file
``.NAME.pcb-lock`` beside it, created exclusively (``O_EXCL``) and holding the
writer's identity (its pid and, where ``/proc`` tells it, the process's start time),
removed when the writer ends; a second writer is refused, naming that pid. A lock
whose process is gone is taken over, and so is one whose pid now belongs to another
process (a killed writer's pid reused: alive, but started at another time; without
``/proc`` only the pid is compared). :func:`write_atomic`
writes a file next to its destination and renames it into place, so a reader
(or a crash) never sees a half-written file; the file's mode comes from the
umask (results and plots are not secrets).

``-`` is standard output, where a caller writes JSON (:data:`STDOUT`): it is
neither checked nor claimed.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from typing import IO, Any

PathLike = str | os.PathLike[str]

__all__ = ["STDOUT", "OutputError", "check_output", "claim_output", "release_output", "write_atomic",
           "write_json_atomic", "write_text_atomic"]

#: The path that means standard output.
STDOUT = "-"


class OutputError(ValueError):
    """An output path that cannot (or must not) be written; the message names it."""


def _kind(mode: int) -> str:
    for test, word in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return word
    return "not a regular file"


def check_output(path: PathLike, *, what: str = "output", keep_existing: bool = False,
                 override: str = "--force", claim: bool = False) -> None:
    """Raise :class:`OutputError` unless ``path`` can be written: its directory exists
    and takes a new file, and ``path`` is not a directory, nor a device, FIFO or socket
    (nor a link to one: results go to regular files only, whatever ``override`` says).
    ``keep_existing``: an existing file is refused too (``override`` names what allows
    replacing it). ``claim``: also take the file for this process (:func:`claim_output`).

    Writability is tried, not guessed: a temporary file is created in the
    directory and removed (``os.access`` is wrong for root and for read-only mounts).
    """
    shown = os.fspath(path)
    if not shown:
        raise OutputError(f"{what}: an empty path")
    if os.path.isdir(shown):
        raise OutputError(f"{what} {shown!r} is a directory; expected a file name")
    try:
        mode = os.stat(shown).st_mode
    except OSError:
        mode = None  # absent (or a dangling link): a new file
    if mode is not None and not stat.S_ISREG(mode):
        link = f" (a link to {os.path.realpath(shown)!r})" if os.path.islink(shown) else ""
        raise OutputError(f"{what} {shown!r} is {_kind(mode)}{link}: results are written to "
                          "regular files only (use '-' for standard output)")
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
    if claim:
        claim_output(path, what=what)


_held: dict[str, int] = {}  # lock file -> how many claims of this process hold it


def _lock_path(path: PathLike) -> str:
    target = os.path.realpath(os.fspath(path))
    return os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.pcb-lock")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _start_time(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot: field 22 of
    ``/proc/PID/stat``, read after the command name, which may hold spaces and
    parentheses); None where that cannot be read (no ``/proc``: macOS, BSD)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rpartition(")")[2].split()
        return int(fields[19])  # fields[0] is field 3 (the state)
    except (OSError, ValueError, IndexError):
        return None


def _identity(pid: int) -> str:
    """What a lock file holds: 'PID START', or 'PID' where the start time is unknown."""
    start = _start_time(pid)
    return f"{pid}" if start is None else f"{pid} {start}"


def _holder(text: str) -> int:
    """The pid of a live writer holding a lock of content ``text``; 0 when the lock is
    stale (its process gone, or its pid reused by a process started at another time)
    or unreadable. Raises ValueError for garbage."""
    fields = text.split()
    if not fields:
        return 0
    pid = int(fields[0])
    if pid <= 0 or not _alive(pid):
        return 0
    if len(fields) > 1:
        now = _start_time(pid)
        if now is not None and now != int(fields[1]):
            return 0  # the writer died and its pid went to another process
    return pid


def claim_output(path: PathLike, *, what: str = "output") -> None:
    """Take ``path`` for this process until :func:`release_output` (or the process ends): its
    lock file is created exclusively and holds this process's identity (:func:`_identity`).
    Another live process's lock is an :class:`OutputError` naming its pid; a dead one's,
    or one whose pid another process reuses, is taken over."""
    lock = _lock_path(path)
    if lock in _held:
        _held[lock] += 1
        return
    for _ in range(3):
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            try:
                with open(lock, encoding="ascii") as f:
                    text = f.read()
                pid = _holder(text)
            except (OSError, ValueError):
                pid, text = 0, ""  # being written this instant, or garbage: look again
            if pid and pid != os.getpid():
                raise OutputError(f"{what} {os.fspath(path)!r} is being written by another run "
                                  f"(pid {pid}; its lock {lock}): wait for it to end, or write "
                                  "another file") from None
            if text.strip():
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(lock)  # its writer is gone (or was this process, a fork's parent)
            continue
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(f"{_identity(os.getpid())}\n")
        if not _held:
            atexit.register(_release_all)
        _held[lock] = 1
        return
    raise OutputError(f"{what} {os.fspath(path)!r}: could not take its lock {lock}")


def release_output(path: PathLike) -> None:
    """Undo one :func:`claim_output` of ``path``; the last removes the lock file."""
    lock = _lock_path(path)
    if lock not in _held:
        return
    _held[lock] -= 1
    if _held[lock] <= 0:
        del _held[lock]
        with contextlib.suppress(OSError):
            os.unlink(lock)


@contextlib.contextmanager
def claims_released() -> Iterator[None]:
    """Claims taken in the block are released at its end (a command's files, in a process
    that runs more than one command: tests, notebooks)."""
    before = set(_held)
    try:
        yield
    finally:
        for lock in set(_held) - before:
            del _held[lock]
            with contextlib.suppress(OSError):
                os.unlink(lock)


def _release_all() -> None:
    for lock in list(_held):
        with contextlib.suppress(OSError):
            os.unlink(lock)
    _held.clear()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def _replacing(path: PathLike, mode: str) -> Iterator[IO[Any]]:
    """A file object on a temporary file beside ``path``, renamed onto it on success."""
    target = os.fspath(path)
    if os.path.islink(target):  # replace what the link names, not the link
        target = os.path.realpath(target)
    with contextlib.suppress(FileNotFoundError):
        st_mode = os.stat(target).st_mode
        if not stat.S_ISREG(st_mode):  # became one since check_output
            raise OutputError(f"{os.fspath(path)!r} is {_kind(st_mode)}: results are written to "
                              "regular files only")
    base = os.path.basename(target) or "out"
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(target)))
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp's 0600 is for secrets; results are not
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

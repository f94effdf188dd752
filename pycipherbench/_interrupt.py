"""Ctrl-C during a run that saves its results: the first stops it, later ones wait.

The first SIGINT raises KeyboardInterrupt where the run is (a sample returns
within about 0.1 s: see ``csrc/common/timing.h``), and the run keeps its
complete rounds. From then on -- and from the moment the rounds are over,
interrupted or not -- until the results are built and written, a further
SIGINT is only noted, so that pressing Ctrl-C twice does not lose the file
the first press was meant to keep. A SIGINT noted after the rounds ended
normally is raised as KeyboardInterrupt once the results are written.

Only in the main thread, and only while SIGINT has Python's default handler
(a program with its own handler keeps it). Not re-entrant across threads.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType

_active: list[SaveGuard] = []


class SaveGuard:
    """``with SaveGuard(): run ... save`` (see the module)."""

    def __init__(self) -> None:
        self.fired = False       # the first SIGINT was raised
        self.protecting = False  # the rounds are over: the results are being kept
        self.deferred = False    # a SIGINT came while protecting, before any was raised
        self._previous: object = None
        self._installed = False

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        if self.fired:
            return
        if self.protecting:
            self.deferred = True
            return
        self.fired = True
        raise KeyboardInterrupt

    def __enter__(self) -> SaveGuard:
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            self._previous = signal.signal(signal.SIGINT, self._handler)
            self._installed = True
        _active.append(self)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        _active.remove(self)
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)  # type: ignore[arg-type]
        if self.deferred and kind is None:
            raise KeyboardInterrupt


def rounds_over() -> None:
    """Called when a run's rounds end (interrupted or not): from here on the active
    guard, if any, only notes SIGINT until its block ends."""
    if _active:
        _active[-1].protecting = True


class TerminateAsInterrupt:
    """``with TerminateAsInterrupt() as s: ...``: SIGTERM and SIGHUP act as Ctrl-C does in
    the block (the run keeps and saves its complete rounds, temporary stores and keys are
    removed by the code that unwinds), and ``s.status(130)`` is then 143 or 129, the
    shell's status of a process those signals ended. Main thread only; outside it, or
    where a program set its own handlers, nothing changes."""

    SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP") if hasattr(signal, n))

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict[int, object] = {}

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):  # a SaveGuard's: stops the rounds, or waits while saving
            handler(signal.SIGINT, frame)
        else:
            raise KeyboardInterrupt

    def __enter__(self) -> TerminateAsInterrupt:
        _terminating.append(self)
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                if signal.getsignal(sig) is signal.SIG_DFL:
                    self._previous[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        _terminating.remove(self)
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)  # type: ignore[arg-type]

    def words(self) -> str:
        """What stopped the run, as its messages say it."""
        return "Ctrl-C" if self.received is None else signal.Signals(self.received).name

    def status(self, rc: int) -> int:
        """The exit status: an interrupted run's 130 is 128 + the signal received."""
        return 128 + self.received if rc == 130 and self.received is not None else rc


_terminating: list[TerminateAsInterrupt] = []


def interrupt_words() -> str:
    """What interrupted the run, for its messages: "Ctrl-C", or "SIGTERM"/"SIGHUP"."""
    return _terminating[-1].words() if _terminating else "Ctrl-C"

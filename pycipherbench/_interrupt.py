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

"""Progress bars for long runs: ``tqdm.auto`` (a widget in Jupyter) on stderr, with an ETA."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

# On a terminal the bar is redrawn in place; written to a file or a pipe (a CI log),
# it prints a line at most this often, plus the first and the last.
_PIPE_INTERVAL = 10.0
_FORMAT = "[{bar:20}] {n_fmt}/{total_fmt}  elapsed {elapsed}, ETA {remaining}  {desc}"


class Progress:
    """A bar over ``total`` steps, each step labelled with what it is doing (see :func:`progress`)."""

    def __init__(self, bar: Any) -> None:
        self._bar = bar

    def start(self, label: str) -> None:
        """Show ``label`` as the step now running (redrawn when the bar's interval allows)."""
        if self._bar is not None:
            self._bar.set_description_str(label, refresh=False)
            self._bar.update(0)

    def done(self) -> None:
        """One step finished (shown with the next step's label, or at the end)."""
        if self._bar is not None:
            self._bar.n += 1  # no redraw here: it would show the finished step as running


@contextlib.contextmanager
def progress(total: int, *, enabled: bool = True, delay: float = 0.0,
             leave: bool = True) -> Iterator[Progress]:
    """A progress bar on stderr for the duration of the ``with`` block.

    ``delay``: show nothing until the run has taken that many seconds.
    ``leave``: keep the last state on screen at the end (else erase it).
    Disabled, or with nothing to do, it shows nothing (and tqdm is not imported).
    """
    if not enabled or total <= 0:
        yield Progress(None)
        return
    from tqdm.auto import tqdm  # type: ignore[import-untyped]  # no stubs; imported when used

    tty = sys.stderr.isatty()
    width = _terminal_width() if tty else 150
    bar = tqdm(total=total, file=sys.stderr if tty else _Lines(sys.stderr), delay=delay,
               leave=leave, bar_format=_FORMAT,
               ascii=" #", miniters=0, mininterval=0.1 if tty else _PIPE_INTERVAL, ncols=width)
    try:
        yield Progress(bar)
        if bar.n == total:
            bar.set_description_str("done", refresh=False)
    finally:
        bar.close()


class _Lines:
    """A file for tqdm that is no terminal (a log, a pipe): each redraw one whole line,
    without the carriage returns and cursor moves that pile up in a log file."""

    def __init__(self, file: Any) -> None:
        self._file = file

    def write(self, text: str) -> None:
        line = text.replace("\x1b[A", "").replace("\r", "").rstrip()
        if line:
            self._file.write(line + "\n")

    def flush(self) -> None:
        self._file.flush()


def _terminal_width() -> int:
    """Columns of the terminal stderr writes to; 79 where it reports none (tqdm would draw
    nothing in a width of 0)."""
    try:
        columns = os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError):
        columns = 0
    return (columns or 80) - 1

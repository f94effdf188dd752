"""Text formatting shared by every report: times, sizes, table cells and aligned tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def count(n: int, noun: str, plural: str | None = None) -> str:
    """'1 entry', '3 entries', '0 names': a number with its noun agreeing."""
    if n == 1:
        return f"{n} {noun}"
    return f"{n} {plural or (noun[:-1] + 'ies' if noun.endswith('y') else noun + 's')}"


def format_ns(ns: float) -> str:
    """A duration in nanoseconds with three significant digits and a readable unit."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def format_size(n: int) -> str:
    """A byte count in the largest binary unit that divides it: ``4 KiB``, ``100 B``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def format_size_compact(n: int) -> str:
    """A message size as the seed article wrote it: ``10MB`` for whole MiB, else ``4096B``."""
    return f"{n >> 20}MB" if n % (1 << 20) == 0 else f"{n}B"


def format_cell(value: Any) -> str:
    """A parameter value in a table cell: ``-`` for None, floats in ``%g``."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def format_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned text columns separated by two spaces, with a dashed rule under the head."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]
    out = ["  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip(),
           "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(out)

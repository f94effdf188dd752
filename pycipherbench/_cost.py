"""What a run with large payloads costs, said before it starts.

Every cipher point of a run holds its buffers from preparation to the end (an
input and an output of about ``payload`` bytes per thread: the rounds
interleave the points, so all are prepared at once), and every sample runs at
least one whole operation, however short ``min_time`` is. Above
:data:`BIG_PAYLOAD` per message, :func:`payload_cost` says both; a run whose
buffers would take more than half the machine's memory is refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

__all__ = ["BIG_PAYLOAD", "SLOW_RATE", "PayloadCostError", "PayloadCostWarning", "payload_cost",
           "physical_memory"]

#: The largest message a kernel takes (measure()'s payload is 1 byte to 1 GiB).
MAX_PAYLOAD = 1 << 30
#: Families whose kernels run at about SLOW_RATE (the others are several times faster).
SLOW_FAMILIES = ("DES", "DESEDE", "3DES", "TRIPLEDES", "TEA-REF", "XTEA-REF")
#: Above this many bytes per message, a run says what it costs before it starts.
BIG_PAYLOAD = 64 << 20
#: Bytes per second of the slowest kernels (3DES, the reference TEA) on current CPUs.
SLOW_RATE = 25e6
#: Buffers per thread of a cipher point: the input and the output (about payload each).
BUFFERS = 2


class PayloadCostError(ValueError):
    """A run whose buffers would not fit in half of this machine's memory."""


class PayloadCostWarning(UserWarning):
    """What a run with large payloads costs (memory, time), before it starts."""


def physical_memory() -> int:
    """Bytes of RAM (0 when the system does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def payload_cost(points: Iterable[tuple[int, int]], repeats: int, *, what: str = "payload",
                 ram: int | None = None, transformations: Iterable[str] | None = None) -> str:
    """``points``: (payload bytes, threads) of each cipher point of one run.

    Returns '' when no point's payload exceeds :data:`BIG_PAYLOAD`, else a sentence with
    the memory the run holds and the time its samples take at least (a whole operation
    each, at :data:`SLOW_RATE` for the slowest kernels and 40 times that for AES with
    hardware support). Raises :class:`PayloadCostError` when the buffers exceed half of
    ``ram`` (default: this machine's)."""
    pts = [(int(p), max(1, int(t))) for p, t in points]
    big = [p for p, _ in pts if p > BIG_PAYLOAD]
    if not big:
        return ""
    if max(big) > MAX_PAYLOAD:  # refused by every kernel: say that, not what it would cost
        raise PayloadCostError(f"{what} {max(big):,} bytes: more than the {MAX_PAYLOAD >> 30} GiB "
                               f"({MAX_PAYLOAD:,} bytes) a message may hold")
    memory = sum(BUFFERS * p * t for p, t in pts)
    ram = physical_memory() if ram is None else ram
    largest = max(big)
    one = len(pts) == 1
    head = (f"{what} {largest / 2**20:,.0f} MiB: {len(pts)} point{'' if one else 's'} "
            f"hold{'s' if one else ''} about {_gib(memory)} of buffers ({BUFFERS} x payload "
            f"x threads{'' if one else ' each, all prepared at once'})")
    if ram and memory > ram // 2:
        raise PayloadCostError(f"{head}, more than half of this machine's {_gib(ram)}: "
                               "measure fewer or smaller points at a time")
    data = repeats * sum(p * t for p, t in pts)  # every sample runs one operation at least
    slow, fast = data / SLOW_RATE, data / (40 * SLOW_RATE)
    rounds = f"{repeats} round{'' if repeats == 1 else 's'} take{'s' if repeats == 1 else ''}"
    names = None if transformations is None else sorted(set(transformations))
    slowest = [t for t in (names or []) if t.split("/")[0].upper() in SLOW_FAMILIES]
    tail = (f", {slow / 60:,.1f} min at the slowest kernels' "
            f"({', '.join(slowest) if slowest else '3DES, TEA-ref'})"
            if names is None or slowest else "")
    return (f"{head}; every sample runs one whole message at least, so {rounds} at least "
            f"{fast:,.1f} s at hardware-AES speed (AES-NI, ARMv8 AES){tail}")

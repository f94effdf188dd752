"""The hardware floor beside the libraries (issue 21): each library's AES-256-GCM time per
message as a multiple of backend ``"floor"`` (pycipherbench's own AES-NI + PCLMULQDQ
kernels), every point of one sweep so that each multiple is a ratio paired by round.

Used by ``pycipherbench speed --backend all``; ``bench/bench_floor.py`` and the "Which
library?" notebook section print the same multiples from their own sweeps.
"""

from __future__ import annotations

from typing import Any, Sequence

GCM = "AES/GCM/NoPadding"
#: The message sizes the floor multiples are given at (bytes).
FLOOR_SIZES = (16, 64, 1024, 16384)


def floor_available() -> tuple[bool, str | None]:
    """(True, None) if backend "floor" runs on this CPU, else (False, what is missing)."""
    from . import backends

    b = next((b for b in backends() if b["name"] == "floor"), None)
    if b is None:
        return False, "this build has no floor backend"
    return bool(b["available"]), b["missing"]


def floor_multiples(names: Sequence[str], *, sizes: Sequence[int] = FLOOR_SIZES,
                    repeats: int = 10, min_time: float = 0.05, warmup: float | None = None,
                    progress: bool = False) -> tuple[Any, list[list[str]], list[str]]:
    """Sweep AES-256-GCM (message scope) over ``names`` (those with it; "floor" added) at
    ``sizes``; returns (Results, table rows, table head). Each cell is the library's time
    over the floor's with its interval, ``x2.61 [2.40, 2.85]``; the floor's row holds its
    ns per message."""
    from . import backends
    from .sweep import sweep

    have = {b["name"] for b in backends() if b["available"] and GCM in b["transformations"]}
    libs = [n for n in names if n in have and n != "floor"]
    timing: dict[str, Any] = dict(repeats=repeats, min_time=min_time)
    if warmup is not None:
        timing["warmup"] = warmup
    r = sweep("cipher", transformation=GCM, key_bits=256, scope="message", payload=list(sizes),
              backend=["floor", *libs], progress=progress, **timing)
    head = ["backend", *[f"{p} B" for p in sizes]]
    rows = [["floor (ns/msg)", *[f"{r.one(backend='floor', payload=p).ns_per_op:,.1f}"
                                 for p in sizes]]]
    for n in libs:
        cells = []
        for p in sizes:
            q = r.ratio({"backend": n, "payload": p}, {"backend": "floor", "payload": p})
            assert not isinstance(q, list)  # one point a side: one ratio
            cells.append(f"x{q.estimate:.2f} [{q.low:.2f}, {q.high:.2f}]")
        rows.append([n, *cells])
    return r, rows, head

"""measure() and the Measurement it returns."""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from . import _core, _names, _options
from ._cost import PayloadCostWarning, payload_cost
from ._format import format_size
from ._record import Record, TableColumn
from ._rounds import (DEFAULT_ROUNDS, KernelPoint, Plan, PointData, RunInfo, Workers,
                      record_fields, resolve_processes, run_one)

Op = Literal["enc", "dec"]
Scope = Literal["stream", "message", "rekey"]


@dataclass(frozen=True, repr=False, eq=False, kw_only=True)
class Measurement(Record):
    """One timed cipher kernel: its parameters, raw samples and derived statistics.

    ``samples`` holds nanoseconds per operation, one value per sample (each
    sample timed ``iterations`` operations back to back). An operation is one
    message in ``message``/``rekey`` scope and one update call of ``payload``
    bytes in ``stream`` scope. Throughputs derive from the median.
    ``cycles_per_byte`` counts time-stamp-counter ticks, which run at a fixed
    reference rate: they are not core cycles when the core clock differs.

    ``backend`` is the library that ran it (``"openssl"``, a C library, or a
    ``"py:"`` library timed as a Python program calls it: no TSC ticks then).
    With ``threads`` > 1, N independent contexts ran on N threads at once: a
    sample's operations are all N threads' and the throughputs are aggregate;
    ``thread_spread`` is the median over rounds of the slowest thread's time
    over the fastest's (1.0: perfectly even).
    """

    transformation: str
    op: str
    scope: str
    key_bits: int
    rounds: int | None
    iv_len: int | None
    impl: str | None = None
    backend: str = "openssl"
    threads: int = 1
    thread_spread: float | None = None

    @classmethod
    def _from_rounds(cls, data: PointData, run: RunInfo, *, min_time: float, repeats: int,
                     hw_aes: bool, hw_mask: str | None) -> Measurement:
        info = data.info
        fields = record_fields(data, run, repeats=repeats)
        if str(info.get("backend", "")).startswith("py:"):
            fields["tsc_samples"] = None  # timed by Python's clock
        spread = data.extra.get("thread_spread")
        fields["warnings"] += _thread_warnings(data, min_time, int(info.get("threads", 1)))
        return cls(
            transformation=info["transformation"], op=info["op"], payload=int(info["payload"]),
            scope=info["scope"], key_bits=int(info["key_bits"]), rounds=info["rounds"],
            iv_len=info["iv_len"], impl=info.get("impl"), hw_aes=hw_aes, hw_mask=hw_mask,
            backend=info.get("backend", "openssl"), threads=int(info.get("threads", 1)),
            thread_spread=float(sorted(spread)[len(spread) // 2]) if spread else None,
            min_time=min_time, **fields,
        )

    @classmethod
    def table_columns(cls, records: Sequence[Record]) -> list[TableColumn]:
        return [("MB/s", lambda m: f"{m.mb_per_s:,.1f}"), ("KB/ms", lambda m: f"{m.kb_per_ms:,.1f}")]

    def to_dict(self) -> dict[str, Any]:
        """Parameters, statistics and raw samples as JSON-serializable values."""
        return {
            "transformation": self.transformation, "op": self.op, "scope": self.scope,
            "key_bits": self.key_bits, "rounds": self.rounds, "iv_len": self.iv_len,
            "impl": self.impl, "backend": self.backend, "threads": self.threads,
            "thread_spread": None if self.thread_spread is None or math.isnan(self.thread_spread)
            else self.thread_spread, **super().to_dict(),
        }

    def _label(self) -> str:
        extra = [self.scope, f"{self.key_bits}-bit key"]
        if self.rounds is not None:
            extra.append(f"{self.rounds} cycles")
        if not self.hw_aes:
            extra.append("hw AES off")
        if self.backend != "openssl":
            extra.append(self.backend)
        if self.threads > 1:
            extra.append(f"{self.threads} threads")
        return f"{self.transformation} {self.op.upper()} {format_size(self.payload)} ({', '.join(extra)})"

    def _rates(self) -> str:
        return f"{self.mb_per_s:,.1f} MB/s = {self.kb_per_ms:,.1f} KB/ms, "

    def _html_rows(self) -> list[tuple[str, str]]:
        throughput = ("throughput", f"{self.mb_per_s:,.1f} MB/s ({self.kb_per_ms:,.1f} KB/ms)")
        return [throughput, *super()._html_rows()]


#: A thread run whose shortest-running thread covered less than this share of a sample's
#: span did not run its threads together in that round.
THREAD_OVERLAP_MIN = 0.8


def _thread_warnings(data: PointData, min_time: float, threads: int) -> tuple[str, ...]:
    """threads > 1: a specific warning when, in some rounds, the threads did not run
    together (one started late or finished early: compared per thread against the
    sample's span), which makes the aggregate a mix of one- and N-thread time."""
    overlap = data.extra.get("thread_overlap") or []
    bad = [o for o in overlap if o < THREAD_OVERLAP_MIN]
    if threads < 2 or not bad:
        return ()
    stagger = max(data.extra.get("thread_stagger") or [0.0])
    late = (f"; the last thread started up to {stagger:.0%} of the sample after the first"
            if stagger >= 0.05 else "")
    return (f"threads={threads}: in {len(bad)} of {len(overlap)} rounds the threads did not run "
            f"together: the shortest-running one covered only {min(bad):.0%} of the sample"
            f"{late}. min_time={min_time:g} s is too short for {threads} threads here (thread "
            f"start-up and scheduling are not negligible beside it), so the aggregate mixes one- "
            f"and {threads}-thread time: use a longer min_time (e.g. "
            f"{max(10 * min_time, 0.05):g} s)",)


def check_kernel(transformation: str, function: str = "measure", **args: Any) -> None:
    """The kernel's argument checks without preparing anything, for any backend; errors
    about names say the nearest valid one (``function``: whose argument it is)."""
    backend = args.get("backend", "openssl")
    _names.check_transformation_arg(transformation, function)
    for name in ("payload", "threads"):  # declared with speed's flags (_options.SETTINGS)
        if name in args:
            _options.SETTINGS[name].check(args[name])
    try:
        if isinstance(backend, str) and backend.startswith("py:"):
            from ._pybackends import check

            check(transformation, **args)
        else:
            _core.check_kernel(transformation, **args)
    except ValueError as e:  # UnsupportedCipherError too: name what to write instead
        raise _names.explain_kernel_error(e, transformation, backend) from None


def plan(
    transformation: str,
    *,
    op: Op = "enc",
    payload: int = 10 * 2**20,
    key_bits: int | None = None,
    rounds: int | None = None,
    scope: Scope = "message",
    iv_len: int | None = None,
    hw_aes: bool = True,
    backend: str = "openssl",
    threads: int = 1,
    min_time: float = 0.05,
    repeats: int = DEFAULT_ROUNDS,
    warmup: float | None = None,
    workers: Workers | None = None,
) -> Plan:
    """A kernel point, checked, ready for :func:`~._rounds.run_plans` (what
    :func:`measure` and :func:`~pycipherbench.sweep` run)."""
    args: dict[str, Any] = dict(op=op, payload=payload, key_bits=key_bits, rounds=rounds,
                                scope=scope, iv_len=iv_len)
    if not isinstance(backend, str) or backend != "openssl":
        args["backend"] = backend  # the checks below reject a non-str
    if type(threads) is not int or threads != 1:
        args["threads"] = threads
    if not isinstance(hw_aes, bool):
        raise TypeError(f"hw_aes must be a bool, not {type(hw_aes).__name__}")
    check_kernel(transformation, **args)
    warm = _options.timing_values(min_time, repeats, warmup)
    _core.check_timing(min_time, repeats, warm)
    if not hw_aes and args.get("backend", "openssl") != "openssl":
        raise ValueError(f"hw_aes=False hides the AES instructions from OpenSSL only; backend "
                         f"'{backend}' would still use them (measure it with hw_aes=True)")
    if workers is None and not hw_aes:
        raise ValueError("hw_aes=False needs the run's workers (the masked child process)")
    py = args.get("backend", "openssl").startswith("py:")
    factory, mask = (workers or Workers()).factory("PyKernel" if py else "Kernel", hw_aes)
    point = KernelPoint(factory, {"transformation": transformation, **args}, min_time, warm)
    build = functools.partial(Measurement._from_rounds, min_time=min_time, repeats=repeats,
                              hw_aes=hw_aes, hw_mask=mask)
    return Plan(point, build)


def measure(
    transformation: str,
    *,
    op: Op = "enc",
    payload: int = 10 * 2**20,
    key_bits: int | None = None,
    rounds: int | None = None,
    scope: Scope = "message",
    iv_len: int | None = None,
    hw_aes: bool = True,
    backend: str = "openssl",
    threads: int = 1,
    min_time: float = 0.05,
    repeats: int = DEFAULT_ROUNDS,
    warmup: float | None = None,
    progress: bool = False,
    processes: int | None = None,
) -> Measurement:
    """Time one cipher kernel in C, with the GIL released, in ``repeats`` rounds.

    Each round takes one sample of the kernel (operations calibrated to last
    ``min_time``) after the canary, which tells how fast the machine was in
    that round; the :class:`Measurement` holds every round, the 95% interval
    of the median across them (``ci``) and ``warnings`` when the machine was
    too unstable for the precision shown. To compare kernels, measure them
    together with :func:`~pycipherbench.sweep` and use
    :meth:`~pycipherbench.Results.ratio`: their rounds are then interleaved
    and paired, which holds up on a noisy machine where separate calls do not.

    Args:
        transformation: a name from :func:`ciphers`, e.g. ``"AES/GCM/NoPadding"``.
        op: ``"enc"`` or ``"dec"``. Decryption runs over a valid ciphertext
            (correct padding and tag), so every check passes as in real use.
        payload: plaintext bytes per operation (1 byte to 1 GiB).
        key_bits: key size; defaults are AES 128, AES-SIV 256 (AES-128 inside),
            DESede 192 (three-key), DES 64, TEA/XTEA 128, ChaCha20-Poly1305 256.
        rounds: TEA/XTEA cycles, 1..1024 (default 32). (Not the statistics'
            rounds: those are ``repeats``.)
        scope: ``"stream"`` one context fed repeated updates in place (what
            ``openssl speed -evp`` does for non-AEAD ciphers); ``"message"``
            each operation a whole message with a fresh IV, padding, final and
            tag, reusing the key schedule; ``"rekey"`` a message plus key setup
            (what ``openssl speed`` does for GCM).
        iv_len: GCM IV bytes (1..128, default 12).
        hw_aes: False hides AES-NI/PCLMULQDQ (or ARM's AES/PMULL) from OpenSSL
            by measuring in a child process, like a CPU without crypto extensions.
        backend: the library that runs it: ``"openssl"`` (default), a C library
            this build has (a ``name`` of :func:`backends` whose ``kind`` is
            ``"c"``), or a Python library timed as a program calls it (``"py:..."``,
            ``kind`` ``"python"``; message and rekey scopes).
        threads: N independent contexts on N threads at once (C backends), like
            ``openssl speed -multi``: aggregate throughput, and ``thread_spread``.
        min_time: seconds one sample lasts at least; the operation count is calibrated to it.
        repeats: rounds (default 10; fewer give a rough number and say so in ``warnings``).
        warmup: seconds of warm-up before calibrating (default: min_time).
        progress: a progress bar on stderr.
        processes: fresh worker processes the rounds run in, one after another (each
            runs complete rounds; the operation count is calibrated once, in the
            first), so that the interval covers what differs in the next process
            (memory layout, hash seeds, the frequency it starts at). Default: up to
            5 with at least 2 rounds each (10 rounds: 5 x 2, about 1-2 s of process
            start-up on top; fewer than 6 rounds: this process). ``1`` measures in
            this process, and its interval says it covers this process only.

    Ctrl-C stops it within about 0.1 s, inside a long sample too (KeyboardInterrupt).
    A payload over
    64 MiB warns (:class:`~pycipherbench._cost.PayloadCostWarning`) with the memory and
    least time the run takes, and is refused when its buffers exceed half the RAM.
    """
    if type(payload) is int and type(threads) is int and type(repeats) is int:
        note = payload_cost([(payload, threads)], repeats, what="payload",
                            transformations=[transformation] if isinstance(transformation, str)
                            else None)
        if note:
            warnings.warn(note, PayloadCostWarning, stacklevel=2)
    with Workers(resolve_processes(processes, repeats)) as workers:
        p = plan(transformation, op=op, payload=payload, key_bits=key_bits, rounds=rounds,
                 scope=scope, iv_len=iv_len, hw_aes=hw_aes, backend=backend, threads=threads,
                 min_time=min_time, repeats=repeats, warmup=warmup, workers=workers)
        m: Measurement = run_one(p, repeats, progress=progress, desc="measure", workers=workers)
    return m

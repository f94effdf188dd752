"""measure() and the Measurement it returns."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from . import _core
from ._machine import machine

Op = Literal["enc", "dec"]
Scope = Literal["stream", "message", "rekey"]


@dataclass(frozen=True, repr=False, eq=False)
class Measurement:
    """One timed kernel: its parameters, raw samples and derived statistics.

    ``samples`` holds nanoseconds per operation, one value per sample (each
    sample timed ``iterations`` operations back to back). An operation is one
    message in ``message``/``rekey`` scope and one update call of ``payload``
    bytes in ``stream`` scope. Throughputs derive from the median.
    ``cycles_per_byte`` counts time-stamp-counter ticks, which run at a fixed
    reference rate: they are not core cycles when the core clock differs.
    """

    transformation: str
    op: str
    payload: int
    scope: str
    key_bits: int
    rounds: int | None
    iv_len: int | None
    hw_aes: bool
    min_time: float
    repeats: int
    iterations: int
    samples: np.ndarray
    tsc_samples: np.ndarray | None
    impl: str | None = None
    hw_mask: str | None = None
    machine: dict[str, Any] = field(default_factory=machine)
    #: Workload-specific results (store benchmarks: parameters, stage
    #: breakdown, footprint, durable times of apply).
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def _from_raw(cls, raw: dict[str, Any], *, hw_aes: bool = True,
                  hw_mask: str | None = None) -> Measurement:
        iterations = int(raw["iterations"])
        samples = np.asarray(raw["elapsed_ns"], dtype=np.float64) / iterations
        ticks = raw.get("tsc_ticks")
        tsc = None if ticks is None else np.asarray(ticks, dtype=np.float64) / iterations
        return cls(
            transformation=raw["transformation"], op=raw["op"], payload=int(raw["payload"]),
            scope=raw["scope"], key_bits=int(raw["key_bits"]), rounds=raw["rounds"],
            iv_len=raw["iv_len"], hw_aes=hw_aes, min_time=float(raw["min_time"]),
            repeats=int(raw["repeats"]), iterations=iterations, samples=samples,
            tsc_samples=tsc, impl=raw.get("impl"), hw_mask=hw_mask,
        )

    # Statistics of ns per operation.
    @property
    def median(self) -> float:
        """Median nanoseconds per operation."""
        return float(np.median(self.samples))

    @property
    def iqr(self) -> float:
        """Interquartile range of nanoseconds per operation."""
        q1, q3 = np.percentile(self.samples, [25, 75])
        return float(q3 - q1)

    @property
    def cv(self) -> float:
        """Coefficient of variation (sample std / mean) of the samples; 0 for one sample."""
        if len(self.samples) < 2:
            return 0.0
        return float(np.std(self.samples, ddof=1) / np.mean(self.samples))

    @property
    def ns_per_op(self) -> float:
        return self.median

    @property
    def mb_per_s(self) -> float:
        """Throughput in 10^6 bytes per second (of plaintext)."""
        return self.payload / self.median * 1e3

    @property
    def kb_per_ms(self) -> float:
        """Throughput in KiB per millisecond, the seed article's unit."""
        return self.payload / 1024.0 / (self.median / 1e6)

    @property
    def cycles_per_byte(self) -> float | None:
        """Median TSC ticks per byte (reference ticks, not core cycles); None without a TSC."""
        if self.tsc_samples is None or self.payload <= 0:
            return None
        return float(np.median(self.tsc_samples)) / self.payload

    @property
    def samples_mb_per_s(self) -> np.ndarray:
        """Per-sample throughput in MB/s, for plots of spread."""
        return self.payload / self.samples * 1e3

    def to_dict(self) -> dict[str, Any]:
        """Parameters, statistics and raw samples as JSON-serializable values."""
        return {
            "transformation": self.transformation, "op": self.op, "payload": self.payload,
            "scope": self.scope, "key_bits": self.key_bits, "rounds": self.rounds,
            "iv_len": self.iv_len, "hw_aes": self.hw_aes, "hw_mask": self.hw_mask,
            "impl": self.impl, "min_time": self.min_time, "repeats": self.repeats,
            "iterations": self.iterations, "median": self.median, "iqr": self.iqr,
            "cv": self.cv, "ns_per_op": self.ns_per_op, "mb_per_s": self.mb_per_s,
            "kb_per_ms": self.kb_per_ms, "cycles_per_byte": self.cycles_per_byte,
            "samples": self.samples.tolist(),
            "tsc_samples": None if self.tsc_samples is None else self.tsc_samples.tolist(),
            "machine": self.machine,
            "extra": self.extra,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    def _label(self) -> str:
        extra = [self.scope, f"{self.key_bits}-bit key"]
        if self.rounds is not None:
            extra.append(f"{self.rounds} cycles")
        if not self.hw_aes:
            extra.append("hw AES off")
        return f"{self.transformation} {self.op.upper()} {_size(self.payload)} ({', '.join(extra)})"

    def __repr__(self) -> str:
        cpb = self.cycles_per_byte
        return (
            f"<Measurement {self._label()}: {self.mb_per_s:,.1f} MB/s = {self.kb_per_ms:,.1f} KB/ms, "
            f"{_ns(self.median)}/op, IQR {_ns(self.iqr)}, CV {self.cv:.1%}"
            + (f", {cpb:.2f} TSC ticks/B" if cpb is not None else "")
            + f"; {len(self.samples)} samples x {self.iterations} ops>"
        )

    def _repr_html_(self) -> str:
        rows = [
            ("throughput", f"{self.mb_per_s:,.1f} MB/s ({self.kb_per_ms:,.1f} KB/ms)"),
            ("per op", f"{_ns(self.median)} (IQR {_ns(self.iqr)}, CV {self.cv:.1%})"),
            ("TSC ticks/byte", "n/a" if self.cycles_per_byte is None else f"{self.cycles_per_byte:.3f}"),
            ("samples", f"{len(self.samples)} x {self.iterations} ops, min_time {self.min_time:g} s"),
            ("machine", f"{self.machine['cpu_model']}; {self.machine['openssl_version']}"),
        ]
        body = "".join(f"<tr><th style='text-align:left'>{k}</th><td>{v}</td></tr>" for k, v in rows)
        return f"<table><caption>{self._label()}</caption>{body}</table>"


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def _ns(ns: float) -> str:
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


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
    min_time: float = 0.05,
    repeats: int = 7,
    warmup: float | None = None,
) -> Measurement:
    """Time one cipher kernel in C, with the GIL released.

    Args:
        transformation: a name from :func:`ciphers`, e.g. ``"AES/GCM/NoPadding"``.
        op: ``"enc"`` or ``"dec"``. Decryption runs over a valid ciphertext
            (correct padding and tag), so every check passes as in real use.
        payload: plaintext bytes per operation (1 byte to 1 GiB).
        key_bits: key size; defaults are AES 128, AES-SIV 256 (AES-128 inside),
            DESede 192 (three-key), DES 64, TEA/XTEA 128, ChaCha20-Poly1305 256.
        rounds: TEA/XTEA cycles, 1..1024 (default 32).
        scope: ``"stream"`` one context fed repeated updates in place (what
            ``openssl speed -evp`` does for non-AEAD ciphers); ``"message"``
            each operation a whole message with a fresh IV, padding, final and
            tag, reusing the key schedule; ``"rekey"`` a message plus key setup
            (what ``openssl speed`` does for GCM).
        iv_len: GCM IV bytes (1..128, default 12).
        hw_aes: False hides AES-NI/PCLMULQDQ (or ARM's AES/PMULL) from OpenSSL
            by measuring in a child process, like a CPU without crypto extensions.
        min_time: seconds one sample lasts at least; the operation count is calibrated to it.
        repeats: number of samples.
        warmup: seconds of warm-up before calibrating (default: min_time).
    """
    kwargs: dict[str, Any] = dict(
        op=op, payload=payload, key_bits=key_bits, rounds=rounds, scope=scope,
        iv_len=iv_len, min_time=min_time, repeats=repeats,
        warmup=-1.0 if warmup is None else warmup,
    )
    if not isinstance(hw_aes, bool):
        raise TypeError(f"hw_aes must be a bool, not {type(hw_aes).__name__}")
    if hw_aes:
        raw = _core.measure(transformation, **kwargs)
        assert raw is not None  # only check_only=True returns None
        return Measurement._from_raw(raw)
    # Validate in-process first, so bad input fails fast with the same message.
    _core.measure(transformation, **kwargs, check_only=True)
    from ._hwaes import run_masked

    (raw,), mask = run_masked([("measure", {"transformation": transformation, **kwargs})])
    return Measurement._from_raw(raw, hw_aes=False, hw_mask=mask)

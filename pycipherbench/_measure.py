"""measure() and the Measurement it returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from . import _core
from ._format import format_size
from ._record import Record, TableColumn, per_operation

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
    """

    transformation: str
    op: str
    scope: str
    key_bits: int
    rounds: int | None
    iv_len: int | None
    impl: str | None = None

    @classmethod
    def _from_raw(cls, raw: dict[str, Any], *, hw_aes: bool = True,
                  hw_mask: str | None = None) -> Measurement:
        iterations = int(raw["iterations"])
        samples = per_operation(raw["elapsed_ns"], iterations)
        assert samples is not None
        return cls(
            transformation=raw["transformation"], op=raw["op"], payload=int(raw["payload"]),
            scope=raw["scope"], key_bits=int(raw["key_bits"]), rounds=raw["rounds"],
            iv_len=raw["iv_len"], hw_aes=hw_aes, min_time=float(raw["min_time"]),
            repeats=int(raw["repeats"]), iterations=iterations, samples=samples,
            tsc_samples=per_operation(raw.get("tsc_ticks"), iterations), impl=raw.get("impl"),
            hw_mask=hw_mask,
        )

    @classmethod
    def table_columns(cls, records: Sequence[Record]) -> list[TableColumn]:
        return [("MB/s", lambda m: f"{m.mb_per_s:,.1f}"), ("KB/ms", lambda m: f"{m.kb_per_ms:,.1f}")]

    def to_dict(self) -> dict[str, Any]:
        """Parameters, statistics and raw samples as JSON-serializable values."""
        return {
            "transformation": self.transformation, "op": self.op, "scope": self.scope,
            "key_bits": self.key_bits, "rounds": self.rounds, "iv_len": self.iv_len,
            "impl": self.impl, **super().to_dict(),
        }

    def _label(self) -> str:
        extra = [self.scope, f"{self.key_bits}-bit key"]
        if self.rounds is not None:
            extra.append(f"{self.rounds} cycles")
        if not self.hw_aes:
            extra.append("hw AES off")
        return f"{self.transformation} {self.op.upper()} {format_size(self.payload)} ({', '.join(extra)})"

    def _rates(self) -> str:
        return f"{self.mb_per_s:,.1f} MB/s = {self.kb_per_ms:,.1f} KB/ms, "

    def _html_rows(self) -> list[tuple[str, str]]:
        throughput = ("throughput", f"{self.mb_per_s:,.1f} MB/s ({self.kb_per_ms:,.1f} KB/ms)")
        return [throughput, *super()._html_rows()]


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

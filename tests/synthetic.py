"""Records with made-up samples (no timing), for the tests of results, comparisons, sweeps and plots."""

from __future__ import annotations

from typing import Any

import numpy as np

from pycipherbench import Measurement, Results
from pycipherbench.store import StoreMeasurement, StoreParams

GCM, TEA = "AES/GCM/NoPadding", "TEA/ECB/NoPadding"


def _timing(samples: Any, tsc: bool, kw: dict[str, Any]) -> dict[str, Any]:
    s = np.asarray(samples, dtype=np.float64)
    return dict(samples=s, tsc_samples=s * 3.0 if tsc else None, repeats=kw.pop("repeats", len(s)),
                iterations=kw.pop("iterations", 100), min_time=kw.pop("min_time", 0.001),
                hw_aes=kw.pop("hw_aes", True))


def cipher(samples: Any, *, transformation: str = GCM, payload: int = 4096, op: str = "enc",
           rounds: int | None = None, tsc: bool = True, **kw: Any) -> Measurement:
    """A Measurement of ``transformation`` with these samples (ns per operation)."""
    timing = _timing(samples, tsc, kw)
    return Measurement(transformation=transformation, op=op, payload=payload, scope="message",
                       key_bits=kw.pop("key_bits", 128), rounds=rounds, iv_len=kw.pop("iv_len", None),
                       **timing, **kw)


def store_params(**overrides: Any) -> StoreParams:
    """store.bench's default parameters, with these changed."""
    params: dict[str, Any] = dict(
        n_keys=1000, key_len=32, value_len=32, value_type="string", batch=1, encrypted=True,
        key_encryption="siv", value_encryption="gcm", cache=False, layout="entries",
        faithful=False, passphrase=False, stages=True)
    params.update(overrides)
    return params  # type: ignore[return-value]


def store(samples: Any, *, workload: str = "get", encrypted: bool = True, payload: int = 28,
          stages: dict[str, float] | None = None, durable: Any = None, entries: int = 1000,
          heap_bytes: int = 400_000, disk_bytes: int = 210_000, tsc: bool = True,
          **kw: Any) -> StoreMeasurement:
    """A StoreMeasurement of ``workload`` with these samples (and ``durable`` ones for apply)."""
    timing = _timing(samples, tsc, kw)
    return StoreMeasurement(
        workload=workload, params=store_params(encrypted=encrypted, **kw.pop("params", {})),
        payload=payload, stages=stages, heap_bytes=heap_bytes, disk_bytes=disk_bytes,
        entries=entries, durable_samples=None if durable is None else np.asarray(durable, dtype=np.float64),
        **timing, **kw)


def cipher_results(shift: float = 1.0, seed: int = 0) -> Results:
    """Four cipher points (GCM and TEA, two payloads), samples ~N(100 (i + 1) shift, 1)."""
    rng = np.random.default_rng(seed)
    params: list[dict[str, Any]] = [
        {"transformation": GCM, "payload": 16, "hw_aes": True},
        {"transformation": GCM, "payload": 4096, "hw_aes": True},
        {"transformation": TEA, "payload": 16, "rounds": 16, "hw_aes": True},
        {"transformation": TEA, "payload": 4096, "rounds": 16, "hw_aes": False},
    ]
    ms = [cipher(rng.normal(100.0 * (i + 1), 1.0, 8) * shift, transformation=p["transformation"],
                 payload=p["payload"], rounds=p.get("rounds"), tsc=i != 0)
          for i, p in enumerate(params)]
    return Results("cipher", params, ms, options={"repeats": 8}, grid={"payload": [16, 4096]}, seed=3)

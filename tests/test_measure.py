"""Structural tests of pcb.measure with tiny settings.

No timing assertions anywhere: only that the Measurement is internally
consistent and records what was asked.
"""

import json
import math
import platform
import re
import threading

import numpy as np
import pytest

import pycipherbench as pcb

TINY = dict(payload=4096, min_time=0.001, repeats=3)

SAMPLE = [
    # (transformation, op, scope, extra kwargs)
    ("AES/CBC/NoPadding", "enc", "stream", {}),
    ("AES/CBC/NoPadding", "dec", "message", {}),
    ("AES/ECB/PKCS5Padding", "enc", "message", {}),
    ("AES/CTR/NoPadding", "dec", "stream", dict(key_bits=256)),
    ("AES/GCM/NoPadding", "enc", "message", dict(key_bits=192)),
    ("AES/GCM/NoPadding", "dec", "rekey", dict(iv_len=16)),
    ("AES/GCM/NoPadding", "enc", "stream", {}),
    ("AES/SIV/NoPadding", "enc", "message", {}),
    ("AES/SIV/NoPadding", "dec", "rekey", {}),
    ("ChaCha20-Poly1305", "enc", "message", {}),
    ("ChaCha20-Poly1305", "dec", "rekey", {}),
    ("DES/CBC/PKCS5Padding", "dec", "message", {}),
    ("DESede/CBC/PKCS5Padding", "enc", "rekey", {}),
    ("DESede/ECB/NoPadding", "dec", "stream", {}),
    ("TEA/CTR/NoPadding", "enc", "stream", {}),
    ("TEA/CBC/PKCS5Padding", "dec", "rekey", dict(rounds=16)),
    ("XTEA/ECB/NoPadding", "enc", "message", dict(rounds=64)),
    ("TEA-ref/CTR/NoPadding", "dec", "message", {}),
    ("XTEA-ref/CBC/NoPadding", "enc", "stream", dict(rounds=1)),
    ("AES/CBC/NoPadding", "enc", "message", dict(hw_aes=False)),
]

MACHINE_KEYS = {"cpu_model", "cpu_flags", "cores", "openssl_version", "compiler", "python", "platform"}
PACKAGE_VERSION_KEYS = ("version", "package_version", "pycipherbench_version", "pycipherbench")


def _id(case):
    t, op, scope, extra = case
    return "-".join([t, op, scope] + [f"{k}={v}" for k, v in extra.items()])


def _is_tea(t):
    return t.split("/")[0] in ("TEA", "XTEA", "TEA-ref", "XTEA-ref")


def check_measurement(m, transformation, op, scope, payload, repeats, min_time, extra):
    ctx = repr(m)
    assert m.transformation == transformation, ctx
    assert m.op == op and m.scope == scope, ctx
    assert m.payload == payload and m.repeats == repeats, ctx
    assert m.min_time == pytest.approx(min_time), ctx
    assert isinstance(m.iterations, int) and m.iterations >= 1, ctx
    # samples
    s = m.samples
    assert isinstance(s, np.ndarray) and s.dtype == np.float64, ctx
    assert s.shape == (repeats,), ctx
    assert len(s) == repeats
    assert np.all(np.isfinite(s)) and np.all(s > 0), ctx
    # summary statistics
    assert m.median == pytest.approx(float(np.median(s)), rel=1e-12), ctx
    assert m.ns_per_op == pytest.approx(m.median, rel=1e-12), ctx
    assert m.mb_per_s == pytest.approx(payload / m.median * 1e3, rel=1e-9), ctx
    assert m.kb_per_ms == pytest.approx(payload / 1024 / (m.median / 1e6), rel=1e-9), ctx
    assert m.iqr >= 0 and math.isfinite(m.iqr), ctx
    assert m.iqr <= float(s.max() - s.min()) * (1 + 1e-12), ctx
    assert m.cv >= 0 and math.isfinite(m.cv), ctx
    assert m.cycles_per_byte is None or (math.isfinite(m.cycles_per_byte) and m.cycles_per_byte > 0), ctx
    # parameters recorded
    assert isinstance(m.hw_aes, bool)
    assert m.hw_aes == extra.get("hw_aes", m.hw_aes)
    if "key_bits" in extra:
        assert m.key_bits == extra["key_bits"], ctx
    else:
        assert isinstance(m.key_bits, int) and m.key_bits > 0, ctx
    if _is_tea(transformation):
        assert m.rounds == extra.get("rounds", 32), ctx
    else:
        assert m.rounds is None, ctx
    if "iv_len" in extra:
        assert m.iv_len == extra["iv_len"], ctx
    assert m.iv_len is None or (isinstance(m.iv_len, int) and m.iv_len >= 0), ctx
    assert isinstance(m.machine, dict) and MACHINE_KEYS <= set(m.machine), ctx


@pytest.mark.parametrize("case", SAMPLE, ids=[_id(c) for c in SAMPLE])
def test_measurement_structure(case):
    t, op, scope, extra = case
    m = pcb.measure(t, op=op, scope=scope, **TINY, **extra)
    check_measurement(m, t, op, scope, TINY["payload"], TINY["repeats"], TINY["min_time"], extra)


@pytest.mark.parametrize("case", SAMPLE[:6] + SAMPLE[-3:], ids=[_id(c) for c in SAMPLE[:6] + SAMPLE[-3:]])
def test_to_dict_and_repr(case):
    t, op, scope, extra = case
    m = pcb.measure(t, op=op, scope=scope, **TINY, **extra)
    d = m.to_dict()
    assert isinstance(d, dict)
    text = json.dumps(d)  # must be JSON-serializable as is (no numpy scalars/arrays)
    back = json.loads(text)
    for field in ("transformation", "op", "payload", "scope", "repeats", "iterations"):
        assert back[field] == getattr(m, field), field
    assert back["median"] == pytest.approx(m.median)
    assert back["samples"] == pytest.approx(list(m.samples))
    r = repr(m)
    assert t in r
    assert re.search(r"(?i)MB/s|mb_per_s|GB/s|KB/ms|kb_per_ms|KiB/ms", r), r


def test_default_scope_and_op():
    m = pcb.measure("AES/CTR/NoPadding", **TINY)
    assert m.op == "enc" and m.scope == "message"
    assert m.hw_aes is True or m.hw_aes is False


def test_name_alias_is_canonicalized_or_kept():
    m = pcb.measure("aes/cbc/pkcs7padding", **TINY)
    assert m.transformation in ("AES/CBC/PKCS5Padding", "aes/cbc/pkcs7padding")


def test_repeats_one():
    m = pcb.measure("AES/GCM/NoPadding", payload=256, min_time=0.001, repeats=1)
    assert len(m.samples) == 1
    assert m.median == pytest.approx(float(m.samples[0]))
    assert m.iqr == 0 or m.iqr >= 0
    assert m.cv >= 0


@pytest.mark.parametrize("payload", [1, 7, 16, 100, 65536])
def test_odd_payloads_for_any_length_modes(payload):
    for t in ("AES/CTR/NoPadding", "AES/GCM/NoPadding", "ChaCha20-Poly1305", "AES/SIV/NoPadding", "TEA/CTR/NoPadding"):
        m = pcb.measure(t, payload=payload, min_time=0.001, repeats=2)
        assert m.payload == payload and len(m.samples) == 2


def test_machine_keys():
    d = pcb.machine()
    assert isinstance(d, dict)
    assert MACHINE_KEYS <= set(d), sorted(d)
    assert any(k in d for k in PACKAGE_VERSION_KEYS), f"no package version key in {sorted(d)}"
    assert isinstance(d["cpu_model"], str)
    assert isinstance(d["cpu_flags"], list) and all(isinstance(f, str) for f in d["cpu_flags"])
    assert isinstance(d["cores"], int) and d["cores"] >= 1
    assert isinstance(d["openssl_version"], str) and "3." in d["openssl_version"]
    assert isinstance(d["compiler"], str) and d["compiler"]
    assert isinstance(d["python"], str) and d["python"]
    assert isinstance(d["platform"], str) and d["platform"]
    json.dumps(d)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="AES-NI switch is x86_64 only")
def test_hw_aes_false_recorded():
    m = pcb.measure("AES/CBC/NoPadding", hw_aes=False, **TINY)
    assert m.hw_aes is False
    assert m.to_dict()["hw_aes"] is False
    m2 = pcb.measure("AES/GCM/NoPadding", hw_aes=False, **TINY)
    assert m2.hw_aes is False
    # ... and it does not leak into later measurements
    m3 = pcb.measure("AES/CBC/NoPadding", **TINY)
    if "aes" in pcb.machine()["cpu_flags"]:
        assert m3.hw_aes is True


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="AES-NI switch is x86_64 only")
def test_hw_aes_false_does_not_change_results():
    key, iv, data = bytes(range(16)), bytes(16), bytes(range(64))
    before = pcb.encrypt("AES/CBC/NoPadding", key, data, iv=iv)
    pcb.measure("AES/CBC/NoPadding", hw_aes=False, **TINY)
    assert pcb.encrypt("AES/CBC/NoPadding", key, data, iv=iv) == before


def test_measure_from_four_threads():
    jobs = [
        ("AES/GCM/NoPadding", dict(op="enc")),
        ("ChaCha20-Poly1305", dict(op="dec")),
        ("TEA/CTR/NoPadding", dict(scope="stream")),
        ("AES/CBC/PKCS5Padding", dict(scope="rekey", hw_aes=False)),
    ] * 2
    results, errors = {}, []
    barrier = threading.Barrier(4)

    def worker(idx):
        try:
            barrier.wait(timeout=30)
            for j in range(idx, len(jobs), 4):
                t, kw = jobs[j]
                results[j] = pcb.measure(t, payload=2048, min_time=0.001, repeats=3, **kw)
                # encrypt/decrypt concurrently as well
                ct = pcb.encrypt("AES/GCM/NoPadding", bytes(16), b"abc" * j, iv=bytes(12))
                assert pcb.decrypt("AES/GCM/NoPadding", bytes(16), ct, iv=bytes(12)) == b"abc" * j
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not any(th.is_alive() for th in threads), "measure() threads did not finish"
    assert not errors, errors
    assert sorted(results) == list(range(len(jobs)))
    for j, (t, kw) in enumerate(jobs):
        m = results[j]
        check_measurement(
            m, t, kw.get("op", "enc"), kw.get("scope", "message"), 2048, 3, 0.001,
            {k: v for k, v in kw.items() if k == "hw_aes"},
        )

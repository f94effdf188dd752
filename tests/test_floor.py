"""The floor (issue 21): pycipherbench's own AES-GCM and AES-SIV kernels on AES-NI +
PCLMULQDQ, as backend="floor". test_backends.py runs it like every backend (published
vectors, Wycheproof SIV vectors, agreement with OpenSSL 0..1024, bad tags); here: what only
the floor has (the CPU rule, its limits, every key size on every length with associated
data of every shape, each bit of every tag, long messages across the 8-block loop)."""

import os
import platform
import random

import pytest

import pycipherbench as pcb
from pycipherbench import _core

FLOOR = next(b for b in pcb.backends() if b["name"] == "floor")
X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


def _cpu_has(*flags):
    try:
        with open("/proc/cpuinfo") as f:
            words = set(f.read().split())
    except OSError:
        return None
    return all(flag in words for flag in flags)


needs_floor = pytest.mark.skipif(not FLOOR["available"], reason=f"floor: {FLOOR['missing']}")
GCM, SIV = "AES/GCM/NoPadding", "AES/SIV/NoPadding"


def test_floor_is_listed_and_available_exactly_where_the_cpu_has_aes_ni_and_pclmul():
    assert FLOOR["kind"] == "c"
    has = _cpu_has("aes", "pclmulqdq", "sse4_1")
    if has is not None:
        assert FLOOR["available"] == (X86 and has)
    if FLOOR["available"]:
        assert set(FLOOR["transformations"]) == {GCM, SIV}
        assert FLOOR["hw_aes"] is True and FLOOR["missing"] is None
    else:
        assert "AES-NI" in FLOOR["missing"] or "PCLMULQDQ" in FLOOR["missing"]


@pytest.mark.skipif(FLOOR["available"], reason="this CPU has the floor")
def test_unavailable_floor_names_what_is_missing():
    with pytest.raises(pcb.UnsupportedCipherError, match="backend 'floor' is unavailable.*AES-NI"):
        pcb.encrypt(GCM, bytes(16), b"x", iv=bytes(12), backend="floor")


@needs_floor
def test_floor_limits_are_value_errors_naming_what_it_takes():
    with pytest.raises(ValueError, match="floor's AES-GCM takes a 12-byte IV only, got 16"):
        pcb.encrypt(GCM, bytes(16), b"x", iv=bytes(16), backend="floor")
    with pytest.raises(pcb.UnsupportedCipherError, match="24-byte key.*backends that have it: openssl"):
        pcb.encrypt(GCM, bytes(24), b"x", iv=bytes(12), backend="floor")
    with pytest.raises(pcb.UnsupportedCipherError, match="48-byte key.*backends that have it: openssl"):
        pcb.encrypt(SIV, bytes(48), b"x", aad=[b""], backend="floor")
    with pytest.raises(pcb.UnsupportedCipherError, match="backend 'floor' has no AES/CBC"):
        pcb.encrypt("AES/CBC/PKCS5Padding", bytes(16), b"x", iv=bytes(16), backend="floor")
    with pytest.raises(ValueError, match="no stream scope"):
        _core.Kernel(GCM, scope="stream", payload=64, backend="floor")


def _siv_aad(rng):
    return [rng.randbytes(rng.choice((0, 1, 15, 16, 17, 32, 40))) for _ in range(rng.randrange(0, 4))]


@needs_floor
@pytest.mark.parametrize("t,key_len", [(GCM, 16), (GCM, 32), (SIV, 32), (SIV, 64)])
def test_agrees_with_openssl_on_every_length_with_every_aad_shape(t, key_len):
    rng = random.Random(f"floor/{t}/{key_len}")
    key = rng.randbytes(key_len)
    for n in range(0, 1025):
        data = rng.randbytes(n)
        if t == GCM:
            iv, aad = rng.randbytes(12), rng.choice([None, b"", rng.randbytes(rng.randrange(1, 300))])
        else:
            iv, aad = rng.choice([None, rng.randbytes(rng.randrange(0, 24))]), _siv_aad(rng)
        want = pcb.encrypt(t, key, data, iv=iv, aad=aad)
        got = pcb.encrypt(t, key, data, iv=iv, aad=aad, backend="floor")
        assert got.hex() == want.hex(), n
        assert pcb.decrypt(t, key, want, iv=iv, aad=aad, backend="floor") == data, n


@needs_floor
@pytest.mark.parametrize("t,key_len", [(GCM, 16), (GCM, 32), (SIV, 32), (SIV, 64)])
def test_long_messages_across_the_eight_block_loop(t, key_len):
    rng = random.Random(f"floor-long/{t}")
    key = rng.randbytes(key_len)
    for n in (1151, 1152, 1153, 4096, 16384, 16384 + 113, 65536 + 5):
        data = rng.randbytes(n)
        iv = rng.randbytes(12) if t == GCM else None
        aad = rng.randbytes(1000) if t == GCM else [rng.randbytes(1000)]
        ct = pcb.encrypt(t, key, data, iv=iv, aad=aad, backend="floor")
        assert ct == pcb.encrypt(t, key, data, iv=iv, aad=aad), n
        assert pcb.decrypt(t, key, ct, iv=iv, aad=aad, backend="floor") == data


@needs_floor
@pytest.mark.parametrize("t,key_len", [(GCM, 16), (GCM, 32), (SIV, 32), (SIV, 64)])
def test_every_tampered_tag_bit_and_byte_is_rejected(t, key_len):
    rng = random.Random(f"floor-tag/{t}/{key_len}")
    key = rng.randbytes(key_len)
    for n in (0, 1, 16, 40, 129):
        iv = rng.randbytes(12) if t == GCM else None
        aad = b"name" if t == GCM else [b"name"]
        ct = pcb.encrypt(t, key, rng.randbytes(n), iv=iv, aad=aad, backend="floor")
        tag_at = len(ct) - 16 if t == GCM else 0
        for bit in range(128):
            bad = bytearray(ct)
            bad[tag_at + bit // 8] ^= 1 << (bit % 8)
            with pytest.raises(pcb.DecryptionError, match="authentication failed on floor"):
                pcb.decrypt(t, key, bytes(bad), iv=iv, aad=aad, backend="floor")
        for i in range(len(ct)):
            bad = bytearray(ct)
            bad[i] ^= 0x80
            with pytest.raises(pcb.DecryptionError):
                pcb.decrypt(t, key, bytes(bad), iv=iv, aad=aad, backend="floor")
        other_key = bytes(b ^ 1 for b in key)
        with pytest.raises(pcb.DecryptionError):
            pcb.decrypt(t, other_key, ct, iv=iv, aad=aad, backend="floor")


@needs_floor
def test_floor_kernels_time_every_message_scope():
    for t, bits in ((GCM, 128), (GCM, 256), (SIV, 256), (SIV, 512)):
        for scope in ("message", "rekey"):
            for op in ("enc", "dec"):
                k = _core.Kernel(t, op=op, payload=64, key_bits=bits, scope=scope, backend="floor")
                assert k.info["backend"] == "floor"
                times = k.sample(5)  # one message each: a clock tick may read 0
                assert len(times) == 5 and min(times) >= 0 and sum(times) > 0
                k.close()


@needs_floor
def test_gcm_spec_vector_with_a_random_key_agrees_with_every_gcm_backend():
    """A cross-check beside OpenSSL: each other library with AES-GCM at 12-byte IVs."""
    key, iv, data, aad = os.urandom(32), os.urandom(12), os.urandom(77), os.urandom(20)
    want = pcb.encrypt(GCM, key, data, iv=iv, aad=aad, backend="floor")
    others = [b["name"] for b in pcb.backends()
              if b["available"] and GCM in b["transformations"] and b["name"] != "floor"]
    assert len(others) >= 2
    for name in others:
        assert pcb.encrypt(GCM, key, data, iv=iv, aad=aad, backend=name) == want, name

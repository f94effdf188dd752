"""Round trips and agreement with independent implementations.

Everything is driven by fixed-seed ``random.Random`` instances (seeded from a
string, so runs are reproducible whatever PYTHONHASHSEED is).  Independent
implementations: ``cryptography`` (AES ECB/CBC/CTR, AES-GCM, AES-SIV,
ChaCha20-Poly1305), ``pycryptodome`` (DES, DES-EDE, AES-GCM with short
nonces, AES-SIV) and a small pure-Python TEA/XTEA written below.
"""

import array
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
import random

import numpy as np
import pytest

import pycipherbench as pcb

from cryptography.hazmat.primitives import padding as crypto_padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, AESSIV, ChaCha20Poly1305

try:
    from Crypto.Cipher import AES as PCD_AES
    from Crypto.Cipher import DES as PCD_DES
    from Crypto.Cipher import DES3 as PCD_DES3
    from Crypto.Util.Padding import pad as pcd_pad
except ImportError:
    # Only the sanitizer run goes without it (see conftest.py); elsewhere a
    # missing pycryptodome must fail loudly, not skip its comparisons.
    if not os.environ.get("PCB_SANITIZED"):
        raise
    PCD_AES = PCD_DES = PCD_DES3 = pcd_pad = None
needs_pycryptodome = pytest.mark.skipif(
    PCD_AES is None, reason="pycryptodome cannot load under AddressSanitizer (RTLD_DEEPBIND)")

SEED = "pycipherbench-interop-1"
# the directory the imported package comes from (subprocesses import the same one)
REPO = Path(pcb.__file__).resolve().parent.parent if getattr(pcb, "__file__", None) else Path(__file__).resolve().parent.parent


def rng_for(*parts):
    return random.Random("/".join([SEED, *map(str, parts)]))


# --------------------------------------------------------------------------
# What the spec says about each transformation
# --------------------------------------------------------------------------

FAMILIES = {
    "AES": dict(block=16, keys=(16, 24, 32)),
    "DES": dict(block=8, keys=(8,)),
    "DESede": dict(block=8, keys=(16, 24)),
    "TEA": dict(block=8, keys=(16,)),
    "XTEA": dict(block=8, keys=(16,)),
    "TEA-ref": dict(block=8, keys=(16,)),
    "XTEA-ref": dict(block=8, keys=(16,)),
}
TEA_FAMILIES = ("TEA", "XTEA", "TEA-ref", "XTEA-ref")
BLOCK_MODES = ("ECB/NoPadding", "ECB/PKCS5Padding", "CBC/NoPadding", "CBC/PKCS5Padding", "CTR/NoPadding")

EXPECTED_CIPHERS = sorted(
    ["AES/" + m for m in BLOCK_MODES]
    + ["AES/GCM/NoPadding", "AES/SIV/NoPadding", "ChaCha20-Poly1305"]
    + ["DES/" + m for m in BLOCK_MODES if not m.startswith("CTR")]
    + ["DESede/" + m for m in BLOCK_MODES if not m.startswith("CTR")]
    + [f"{fam}/{m}" for fam in TEA_FAMILIES for m in BLOCK_MODES]
)


class Info:
    """Properties of one transformation, derived from its name."""

    def __init__(self, name):
        self.name = name
        if name == "ChaCha20-Poly1305":
            self.family, self.mode, self.padding = "ChaCha20-Poly1305", "AEAD", "NoPadding"
            self.block, self.key_lens = 1, (32,)
        else:
            self.family, self.mode, self.padding = name.split("/")
            if self.mode == "SIV":
                self.block, self.key_lens = 16, (32, 48, 64)
            else:
                fam = FAMILIES[self.family]
                self.block, self.key_lens = fam["block"], fam["keys"]
        self.pkcs5 = self.padding == "PKCS5Padding"
        self.whole_blocks = self.mode in ("ECB", "CBC") and not self.pkcs5
        self.is_tea = self.family in TEA_FAMILIES

    def iv_lens(self):
        """IV lengths to try; () if the mode takes no IV; None = no IV allowed too."""
        if self.mode == "ECB":
            return (None,)
        if self.mode in ("CBC", "CTR"):
            return (self.block,)
        if self.mode == "GCM":
            return (12, 1, 8, 16, 60, 128)
        if self.mode == "AEAD":
            return (12,)
        if self.mode == "SIV":
            return (None, 16, 12)
        raise AssertionError(self.name)

    def aad(self, rng):
        if self.mode in ("GCM", "AEAD"):
            return rng.choice([None, b"", rng.randbytes(rng.randrange(1, 40))])
        if self.mode == "SIV":
            return rng.choice(
                [None, [], b"", [b""], rng.randbytes(5), [rng.randbytes(3), rng.randbytes(20)]]
            )
        return None

    def ct_len(self, n):
        if self.pkcs5:
            return (n // self.block + 1) * self.block
        if self.mode in ("GCM", "AEAD", "SIV"):
            return n + 16
        return n

    def lengths(self):
        small = [n for n in range(71) if not self.whole_blocks or n % self.block == 0]
        return small + ([4096, 65536] if self.whole_blocks else [4096, 65537])


ALL_CIPHERS = pcb.ciphers(backend="openssl")


def test_ciphers_list_matches_spec():
    assert sorted(ALL_CIPHERS) == EXPECTED_CIPHERS
    assert len(set(ALL_CIPHERS)) == len(ALL_CIPHERS)


@pytest.mark.parametrize(
    "alias, canonical",
    [
        ("aes/cbc/pkcs5padding", "AES/CBC/PKCS5Padding"),
        ("AES/CBC/PKCS7Padding", "AES/CBC/PKCS5Padding"),
        ("3DES/CBC/PKCS5Padding", "DESede/CBC/PKCS5Padding"),
        ("3des/ecb/nopadding", "DESede/ECB/NoPadding"),
        ("ChaCha20-Poly1305/None/NoPadding", "ChaCha20-Poly1305"),
        ("chacha20-poly1305", "ChaCha20-Poly1305"),
        ("xtea-ref/ctr/nopadding", "XTEA-ref/CTR/NoPadding"),
    ],
)
def test_aliases_give_same_output(alias, canonical):
    info = Info(canonical)
    rng = rng_for("alias", alias)
    key = rng.randbytes(info.key_lens[0])
    iv = None if info.iv_lens()[0] is None else rng.randbytes(info.iv_lens()[0])
    data = rng.randbytes(3 * info.block if info.whole_blocks else 37)
    ref = pcb.encrypt(canonical, key, data, iv=iv)
    assert pcb.encrypt(alias, key, data, iv=iv) == ref
    assert pcb.decrypt(alias, key, ref, iv=iv) == data


# --------------------------------------------------------------------------
# Random round trips for every transformation
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL_CIPHERS)
def test_round_trip(name):
    info = Info(name)
    rng = rng_for("roundtrip", name)
    for key_len in info.key_lens:
        for n in info.lengths():
            key = rng.randbytes(key_len)
            iv_len = rng.choice(info.iv_lens())
            iv = None if iv_len is None else rng.randbytes(iv_len)
            aad = info.aad(rng)
            kw = dict(iv=iv, aad=aad)
            if info.is_tea:
                kw["rounds"] = rng.choice([None, 1, 16, 32, 33, 64])
            pt = rng.randbytes(n)
            ct = pcb.encrypt(name, key, pt, **kw)
            ctx = f"{name} key_len={key_len} n={n} iv_len={iv_len} aad={aad!r:.40} rounds={kw.get('rounds')}"
            assert isinstance(ct, bytes), ctx
            assert len(ct) == info.ct_len(n), ctx
            # deterministic: same inputs, same output
            assert pcb.encrypt(name, key, pt, **kw) == ct, ctx
            assert pcb.decrypt(name, key, ct, **kw) == pt, ctx


# --------------------------------------------------------------------------
# AES against cryptography
# --------------------------------------------------------------------------

AES_SMALL_LENGTHS = list(range(0, 50)) + [63, 64, 65, 255, 256, 257, 1000, 4096, 4097]


def _crypto_aes(mode_name, key, iv, data, pkcs5):
    mode = {"ECB": lambda: modes.ECB(), "CBC": lambda: modes.CBC(iv), "CTR": lambda: modes.CTR(iv)}[mode_name]()
    if pkcs5:
        padder = crypto_padding.PKCS7(128).padder()
        data = padder.update(data) + padder.finalize()
    enc = Cipher(algorithms.AES(key), mode).encryptor()
    return enc.update(data) + enc.finalize()


@pytest.mark.parametrize("name", [n for n in ALL_CIPHERS if n.split("/")[0] == "AES" and n.split("/")[1] in ("ECB", "CBC", "CTR")])
@pytest.mark.parametrize("key_len", [16, 24, 32])
def test_aes_vs_cryptography(name, key_len):
    info = Info(name)
    rng = rng_for("aes-crypto", name, key_len)
    for n in AES_SMALL_LENGTHS:
        if info.whole_blocks and n % 16:
            continue
        key = rng.randbytes(key_len)
        iv = None if info.mode == "ECB" else rng.randbytes(16)
        pt = rng.randbytes(n)
        expected = _crypto_aes(info.mode, key, iv, pt, info.pkcs5)
        assert pcb.encrypt(name, key, pt, iv=iv) == expected, f"{name} n={n}"
        assert pcb.decrypt(name, key, expected, iv=iv) == pt, f"{name} n={n}"


@pytest.mark.parametrize(
    "iv_hex",
    ["ff" * 16, "00" * 8 + "ff" * 8, "00" * 12 + "ffffffff", "7f" + "ff" * 15, "00" * 15 + "fe"],
    ids=["all-ff", "low64-ff", "low32-ff", "7fff", "fe"],
)
def test_aes_ctr_counter_carry_vs_cryptography(iv_hex):
    iv = bytes.fromhex(iv_hex)
    rng = rng_for("aes-ctr-carry", iv_hex)
    for key_len in (16, 32):
        key = rng.randbytes(key_len)
        pt = rng.randbytes(16 * 5 + 7)
        expected = _crypto_aes("CTR", key, iv, pt, False)
        assert pcb.encrypt("AES/CTR/NoPadding", key, pt, iv=iv) == expected


# --------------------------------------------------------------------------
# AES-GCM
# --------------------------------------------------------------------------

GCM_IV_LENS = [1, 8, 12, 16, 60, 128]


def _gcm_reference(key, iv, pt, aad):
    if 8 <= len(iv) <= 128:
        return AESGCM(key).encrypt(iv, pt, aad)
    # cryptography refuses nonces shorter than 8 bytes (both AESGCM and
    # modes.GCM); pycryptodome accepts any non-empty nonce.
    c = PCD_AES.new(key, PCD_AES.MODE_GCM, nonce=iv, mac_len=16)
    if aad:
        c.update(aad)
    ct, tag = c.encrypt_and_digest(pt)
    return ct + tag


@needs_pycryptodome
def test_gcm_reference_helper_agrees_on_overlap():
    # the two independent references agree where both apply
    rng = rng_for("gcm-helper")
    key, iv, pt, aad = rng.randbytes(16), rng.randbytes(8), rng.randbytes(33), rng.randbytes(7)
    c = PCD_AES.new(key, PCD_AES.MODE_GCM, nonce=iv)
    c.update(aad)
    assert b"".join(c.encrypt_and_digest(pt)) == AESGCM(key).encrypt(iv, pt, aad)


@pytest.mark.parametrize("iv_len", GCM_IV_LENS)
@pytest.mark.parametrize("key_len", [16, 24, 32])
def test_gcm_vs_reference(key_len, iv_len):
    if iv_len < 8 and PCD_AES is None:
        pytest.skip("short GCM IVs need pycryptodome as the reference")
    rng = rng_for("gcm", key_len, iv_len)
    for n in [0, 1, 15, 16, 17, 31, 32, 33, 64, 100, 1000, 4097]:
        for aad in (None, b"", rng.randbytes(rng.randrange(1, 70))):
            key, iv, pt = rng.randbytes(key_len), rng.randbytes(iv_len), rng.randbytes(n)
            expected = _gcm_reference(key, iv, pt, aad)
            got = pcb.encrypt("AES/GCM/NoPadding", key, pt, iv=iv, aad=aad)
            assert got == expected, f"n={n} aad_len={None if aad is None else len(aad)}"
            assert pcb.decrypt("AES/GCM/NoPadding", key, expected, iv=iv, aad=aad) == pt


def test_gcm_short_iv_vs_hazmat_where_possible():
    # For 8-byte IVs the hazmat Cipher API (modes.GCM) is a third reference.
    rng = rng_for("gcm-hazmat")
    key, iv, pt, aad = rng.randbytes(32), rng.randbytes(8), rng.randbytes(77), rng.randbytes(9)
    enc = Cipher(algorithms.AES(key), modes.GCM(iv)).encryptor()
    enc.authenticate_additional_data(aad)
    expected = enc.update(pt) + enc.finalize() + enc.tag
    assert pcb.encrypt("AES/GCM/NoPadding", key, pt, iv=iv, aad=aad) == expected


# --------------------------------------------------------------------------
# AES-SIV
# --------------------------------------------------------------------------

def _siv_components(aad):
    if aad is None:
        return []
    if isinstance(aad, (bytes, bytearray)):
        return [bytes(aad)]
    return [bytes(a) for a in aad]


SIV_AADS = {
    "none": None,
    "empty-list": [],
    "one-empty": [b""],
    "empty-bytes": b"",
    "bytes": b"header",
    "two": [b"first component", b"second"],
    "three-tuple": (b"a", b"", b"c" * 100),
}


@pytest.mark.parametrize("aad_id", list(SIV_AADS))
@pytest.mark.parametrize("key_len", [32, 48, 64])
def test_siv_vs_cryptography(key_len, aad_id):
    aad = SIV_AADS[aad_id]
    rng = rng_for("siv", key_len, aad_id)
    # 256/257: where the CTR keystream moves from ECB counter blocks to the CTR context.
    for n in [0, 1, 15, 16, 17, 32, 33, 100, 255, 256, 257, 4096]:
        for iv in (None, rng.randbytes(16), rng.randbytes(12)):
            key, pt = rng.randbytes(key_len), rng.randbytes(n)
            comps = _siv_components(aad) + ([] if iv is None else [iv])
            expected = AESSIV(key).encrypt(pt, comps or None)
            got = pcb.encrypt("AES/SIV/NoPadding", key, pt, iv=iv, aad=aad)
            assert got == expected, f"n={n} iv={iv!r}"
            assert len(got) == n + 16
            assert pcb.decrypt("AES/SIV/NoPadding", key, expected, iv=iv, aad=aad) == pt


@pytest.mark.parametrize("aad_id", ["none", "one-empty", "two"])
def test_siv_empty_iv_is_a_component_or_refused(aad_id):
    """Spec: an iv, *if given*, is appended as the last AD component. iv=b"" is
    given: it must be an empty last component (as cryptography computes it) or
    be refused with ValueError -- never silently the same as iv=None."""
    aad = SIV_AADS[aad_id]
    key, pt = bytes(range(32)), b"attack at dawn"
    expected = AESSIV(key).encrypt(pt, _siv_components(aad) + [b""])
    try:
        got = pcb.encrypt("AES/SIV/NoPadding", key, pt, iv=b"", aad=aad)
    except ValueError as e:
        assert re.search(r"(?i)\biv\b|nonce", str(e)), e
        return
    assert got == expected, "iv=b'' was treated like iv=None (no nonce component)"


@needs_pycryptodome
@pytest.mark.parametrize("key_len", [32, 48, 64])
def test_siv_vs_pycryptodome(key_len):
    rng = rng_for("siv-pcd", key_len)
    for n in [0, 1, 16, 17, 100]:
        for aad in (None, [b""], [rng.randbytes(4), rng.randbytes(30)]):
            for nonce in (None, rng.randbytes(16)):
                key, pt = rng.randbytes(key_len), rng.randbytes(n)
                c = PCD_AES.new(key, PCD_AES.MODE_SIV, nonce=nonce)
                for comp in _siv_components(aad):
                    c.update(comp)
                ct, tag = c.encrypt_and_digest(pt)
                assert pcb.encrypt("AES/SIV/NoPadding", key, pt, iv=nonce, aad=aad) == tag + ct


# --------------------------------------------------------------------------
# ChaCha20-Poly1305
# --------------------------------------------------------------------------


def test_chacha20_poly1305_vs_cryptography():
    rng = rng_for("chacha")
    for n in [0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 255, 256, 1000, 4096, 65537]:
        for aad in (None, b"", rng.randbytes(rng.randrange(1, 50))):
            key, iv, pt = rng.randbytes(32), rng.randbytes(12), rng.randbytes(n)
            expected = ChaCha20Poly1305(key).encrypt(iv, pt, aad)
            assert pcb.encrypt("ChaCha20-Poly1305", key, pt, iv=iv, aad=aad) == expected, f"n={n}"
            assert pcb.decrypt("ChaCha20-Poly1305", key, expected, iv=iv, aad=aad) == pt


# --------------------------------------------------------------------------
# DES / DESede against pycryptodome
# --------------------------------------------------------------------------

DES_CASES = [
    (fam, mode, pad, key_len)
    for fam, key_lens in (("DES", (8,)), ("DESede", (16, 24)))
    for mode in ("ECB", "CBC")
    for pad in ("NoPadding", "PKCS5Padding")
    for key_len in key_lens
]


@pytest.mark.parametrize(
    "fam, mode, pad, key_len", DES_CASES, ids=[f"{f}-{m}-{p}-k{k}" for f, m, p, k in DES_CASES]
)
@needs_pycryptodome
def test_des_vs_pycryptodome(fam, mode, pad, key_len):
    name = f"{fam}/{mode}/{pad}"
    rng = rng_for("des", name, key_len)
    for n in list(range(0, 41)) + [63, 64, 65, 1000, 4096]:
        if pad == "NoPadding" and n % 8:
            continue
        key, pt = rng.randbytes(key_len), rng.randbytes(n)
        iv = rng.randbytes(8) if mode == "CBC" else None
        if fam == "DES":
            mod = PCD_DES
        else:
            mod = PCD_DES3
        args = (key, mod.MODE_CBC, iv) if mode == "CBC" else (key, mod.MODE_ECB)
        c = mod.new(*args)
        expected = c.encrypt(pcd_pad(pt, 8) if pad == "PKCS5Padding" else pt)
        assert pcb.encrypt(name, key, pt, iv=iv) == expected, f"{name} n={n}"
        assert pcb.decrypt(name, key, expected, iv=iv) == pt, f"{name} n={n}"


def test_desede_two_key_equals_three_key_k1_k2_k1():
    rng = rng_for("desede-2key")
    k1, k2 = rng.randbytes(8), rng.randbytes(8)
    pt = rng.randbytes(64)
    assert pcb.encrypt("DESede/ECB/NoPadding", k1 + k2, pt) == pcb.encrypt("DESede/ECB/NoPadding", k1 + k2 + k1, pt)


# --------------------------------------------------------------------------
# TEA / XTEA: a small pure-Python implementation
# --------------------------------------------------------------------------

_M = 0xFFFFFFFF
_DELTA = 0x9E3779B9


def _tea_block(k, v0, v1, rounds, encrypt):
    if encrypt:
        s = 0
        for _ in range(rounds):
            s = (s + _DELTA) & _M
            v0 = (v0 + ((((v1 << 4) + k[0]) & _M) ^ ((v1 + s) & _M) ^ (((v1 >> 5) + k[1]) & _M))) & _M
            v1 = (v1 + ((((v0 << 4) + k[2]) & _M) ^ ((v0 + s) & _M) ^ (((v0 >> 5) + k[3]) & _M))) & _M
    else:
        s = (_DELTA * rounds) & _M
        for _ in range(rounds):
            v1 = (v1 - ((((v0 << 4) + k[2]) & _M) ^ ((v0 + s) & _M) ^ (((v0 >> 5) + k[3]) & _M))) & _M
            v0 = (v0 - ((((v1 << 4) + k[0]) & _M) ^ ((v1 + s) & _M) ^ (((v1 >> 5) + k[1]) & _M))) & _M
            s = (s - _DELTA) & _M
    return v0, v1


def _xtea_block(k, v0, v1, rounds, encrypt):
    if encrypt:
        s = 0
        for _ in range(rounds):
            v0 = (v0 + (((((v1 << 4) ^ (v1 >> 5)) + v1) & _M) ^ ((s + k[s & 3]) & _M))) & _M
            s = (s + _DELTA) & _M
            v1 = (v1 + (((((v0 << 4) ^ (v0 >> 5)) + v0) & _M) ^ ((s + k[(s >> 11) & 3]) & _M))) & _M
    else:
        s = (_DELTA * rounds) & _M
        for _ in range(rounds):
            v1 = (v1 - (((((v0 << 4) ^ (v0 >> 5)) + v0) & _M) ^ ((s + k[(s >> 11) & 3]) & _M))) & _M
            s = (s - _DELTA) & _M
            v0 = (v0 - (((((v1 << 4) ^ (v1 >> 5)) + v1) & _M) ^ ((s + k[s & 3]) & _M))) & _M
    return v0, v1


def py_tea_block(variant, key, block, rounds=32, encrypt=True):
    k = [int.from_bytes(key[i : i + 4], "big") for i in range(0, 16, 4)]
    v0, v1 = int.from_bytes(block[:4], "big"), int.from_bytes(block[4:8], "big")
    fn = _tea_block if variant == "TEA" else _xtea_block
    v0, v1 = fn(k, v0, v1, rounds, encrypt)
    return v0.to_bytes(4, "big") + v1.to_bytes(4, "big")


def _xor(a, b):
    return bytes(x ^ y for x, y in zip(a, b))


def py_tea_encrypt(variant, mode, padding, key, data, iv=None, rounds=32):
    """Encrypt with the pure-Python TEA/XTEA in ECB, CBC or CTR."""
    if padding == "PKCS5Padding":
        p = 8 - len(data) % 8
        data = data + bytes([p]) * p
    blocks = [data[i : i + 8] for i in range(0, len(data), 8)]
    out = []
    if mode == "ECB":
        out = [py_tea_block(variant, key, b, rounds) for b in blocks]
    elif mode == "CBC":
        prev = iv
        for b in blocks:
            prev = py_tea_block(variant, key, _xor(b, prev), rounds)
            out.append(prev)
    elif mode == "CTR":
        ctr = int.from_bytes(iv, "big")
        for b in blocks:
            ks = py_tea_block(variant, key, ctr.to_bytes(8, "big"), rounds)
            out.append(_xor(b, ks))
            ctr = (ctr + 1) % (1 << 64)
    return b"".join(out)


@pytest.mark.parametrize(
    "variant, key_hex, pt_hex, rounds, ct_hex",
    [
        ("TEA", "00" * 16, "00" * 8, 32, "41ea3a0a94baa940"),
        ("XTEA", "000102030405060708090a0b0c0d0e0f", "4142434445464748", 32, "497df3d072612cb5"),
    ],
    ids=["TEA-zero", "XTEA-0001..0f"],
)
def test_python_tea_helper_known_vectors(variant, key_hex, pt_hex, rounds, ct_hex):
    """Sanity check of the test's own TEA/XTEA (published vectors) and of pcb."""
    key, pt = bytes.fromhex(key_hex), bytes.fromhex(pt_hex)
    assert py_tea_block(variant, key, pt, rounds).hex() == ct_hex
    assert py_tea_block(variant, key, bytes.fromhex(ct_hex), rounds, encrypt=False) == pt
    for fam in (variant, variant + "-ref"):
        assert pcb.encrypt(f"{fam}/ECB/NoPadding", key, pt).hex() == ct_hex


TEA_PY_ROUNDS = [1, 2, 3, 31, 32, 33, 64, 1024]
TEA_PY_CASES = [(fam, m, r) for fam in TEA_FAMILIES for m in BLOCK_MODES for r in TEA_PY_ROUNDS]


@pytest.mark.parametrize(
    "fam, mode, rounds", TEA_PY_CASES, ids=[f"{f}/{m}-r{r}" for f, m, r in TEA_PY_CASES]
)
def test_tea_vs_python(fam, mode, rounds):
    name = f"{fam}/{mode}"
    info = Info(name)
    variant = fam.replace("-ref", "")
    rng = rng_for("tea-py", name, rounds)
    if info.whole_blocks:
        lengths = [0, 8, 16, 24, 40]
    else:
        lengths = [0, 1, 7, 8, 9, 15, 16, 17, 23, 33]
    if rounds >= 1024:
        lengths = lengths[:4]
    for n in lengths:
        key, pt = rng.randbytes(16), rng.randbytes(n)
        iv = None if info.mode == "ECB" else rng.randbytes(8)
        m, p = mode.split("/")
        expected = py_tea_encrypt(variant, m, p, key, pt, iv, rounds)
        got = pcb.encrypt(name, key, pt, iv=iv, rounds=rounds)
        assert got == expected, f"{name} rounds={rounds} n={n}"
        assert pcb.decrypt(name, key, expected, iv=iv, rounds=rounds) == pt


@pytest.mark.parametrize("fam", TEA_FAMILIES)
def test_tea_default_rounds_is_32(fam):
    rng = rng_for("tea-default", fam)
    key, pt, iv = rng.randbytes(16), rng.randbytes(40), rng.randbytes(8)
    name = f"{fam}/CBC/NoPadding"
    assert pcb.encrypt(name, key, pt, iv=iv) == pcb.encrypt(name, key, pt, iv=iv, rounds=32)
    assert pcb.encrypt(name, key, pt, iv=iv) != pcb.encrypt(name, key, pt, iv=iv, rounds=31)


CTR_CARRY_IVS = {
    "all-ff": "ff" * 8,
    "ff-minus-2": "ff" * 7 + "fd",
    "low32-ff": "00000000ffffffff",
    "low32-fe": "12345678fffffffe",
    "7fff": "7fffffffffffffff",
    "low8-ff": "00000000000000ff",
}


@pytest.mark.parametrize("iv_id", list(CTR_CARRY_IVS))
@pytest.mark.parametrize("fam", TEA_FAMILIES)
def test_tea_ctr_counter_wrap(fam, iv_id):
    iv = bytes.fromhex(CTR_CARRY_IVS[iv_id])
    variant = fam.replace("-ref", "")
    rng = rng_for("tea-ctr-wrap", fam, iv_id)
    key = rng.randbytes(16)
    for n in (8, 16, 20, 5 * 8 + 3, 40 * 8 + 1):
        pt = rng.randbytes(n)
        expected = py_tea_encrypt(variant, "CTR", "NoPadding", key, pt, iv, 32)
        assert pcb.encrypt(f"{fam}/CTR/NoPadding", key, pt, iv=iv) == expected, f"n={n}"


def test_tea_ctr_wrap_keystream_structure():
    # Block i of the keystream (all-zero plaintext) is E(iv + i mod 2^64).
    key = bytes(range(16))
    iv = b"\xff" * 8
    ks = pcb.encrypt("TEA/CTR/NoPadding", key, bytes(24), iv=iv)
    assert ks[0:8] == pcb.encrypt("TEA/ECB/NoPadding", key, b"\xff" * 8)
    assert ks[8:16] == pcb.encrypt("TEA/ECB/NoPadding", key, bytes(8))
    assert ks[16:24] == pcb.encrypt("TEA/ECB/NoPadding", key, bytes(7) + b"\x01")


# --------------------------------------------------------------------------
# TEA / XTEA: optimized == reference
# --------------------------------------------------------------------------

OPT_REF_ROUNDS = [1, 2, 3, 16, 31, 32, 33, 64, 1024]
OPT_REF_CASES = [(v, m, r) for v in ("TEA", "XTEA") for m in BLOCK_MODES for r in OPT_REF_ROUNDS]


def _opt_ref_lengths(info, rng):
    if info.whole_blocks:
        return [8 * b for b in range(201)]
    if info.mode == "CTR":
        # every block count 0..200, plus odd byte lengths
        return [8 * b for b in range(201)] + [8 * b + rng.randrange(1, 8) for b in range(201)]
    # PKCS5: byte lengths 0..200 blocks, all of the first few, then a sample
    return list(range(0, 300)) + sorted(rng.sample(range(300, 1601), 100))


@pytest.mark.parametrize(
    "variant, mode, rounds", OPT_REF_CASES, ids=[f"{v}/{m}-r{r}" for v, m, r in OPT_REF_CASES]
)
def test_tea_optimized_equals_reference(variant, mode, rounds):
    opt, ref = f"{variant}/{mode}", f"{variant}-ref/{mode}"
    info = Info(opt)
    rng = rng_for("tea-opt-ref", opt, rounds)
    key = rng.randbytes(16)
    buf = rng.randbytes(1700)
    lengths = _opt_ref_lengths(info, rng)
    if rounds > 64:  # keep the file fast: the first 40 lengths, then every 9th
        lengths = [n for i, n in enumerate(lengths) if i < 40 or i % 9 == 0]
    for n in lengths:
        pt = buf[:n]
        iv = None if info.mode == "ECB" else rng.randbytes(8)
        if info.mode == "CTR" and rng.random() < 0.2:
            iv = b"\xff" * 7 + bytes([rng.randrange(256)])  # counter wraps mid-stream
        ct = pcb.encrypt(ref, key, pt, iv=iv, rounds=rounds)
        assert pcb.encrypt(opt, key, pt, iv=iv, rounds=rounds) == ct, f"{opt} rounds={rounds} n={n}"
        assert pcb.decrypt(opt, key, ct, iv=iv, rounds=rounds) == pt, f"{opt} rounds={rounds} n={n}"


# --------------------------------------------------------------------------
# TEA / XTEA: every SIMD implementation (selected by PCB_TEA_IMPL at import)
# --------------------------------------------------------------------------

_IMPL_SCRIPT = textwrap.dedent(
    """
    import random, sys
    import pycipherbench as pcb
    import pycipherbench._core
    impl = sys.argv[1]
    assert impl in pcb._core.tea_impls(), pcb._core.tea_impls()
    active = getattr(pcb._core, "TEA_IMPL", None)
    assert active in (None, impl), ("TEA_IMPL", active, impl)
    rng = random.Random("simd-" + impl)
    modes = ["ECB/NoPadding", "ECB/PKCS5Padding", "CBC/NoPadding", "CBC/PKCS5Padding", "CTR/NoPadding"]
    checked = 0
    for variant in ("TEA", "XTEA"):
        for mode in modes:
            for rounds in (1, 2, 31, 32, 33, 1024):
                key = rng.randbytes(16)
                counts = list(range(0, 70)) + [127, 128, 129, 200, 513]
                if rounds > 64:
                    counts = [0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 129]
                for nblocks in counts:
                    n = nblocks * 8
                    if mode.startswith("CTR") or "PKCS5" in mode:
                        n += rng.randrange(0, 8)
                    pt = rng.randbytes(n)
                    iv = None if mode.startswith("ECB") else rng.randbytes(8)
                    if mode.startswith("CTR") and nblocks % 7 == 0:
                        iv = b"\\xff" * 7 + bytes([rng.randrange(256)])
                    ref = pcb.encrypt(variant + "-ref/" + mode, key, pt, iv=iv, rounds=rounds)
                    got = pcb.encrypt(variant + "/" + mode, key, pt, iv=iv, rounds=rounds)
                    if got != ref:
                        print("MISMATCH", impl, variant, mode, rounds, n, iv and iv.hex())
                        sys.exit(3)
                    if pcb.decrypt(variant + "/" + mode, key, ref, iv=iv, rounds=rounds) != pt:
                        print("DECRYPT MISMATCH", impl, variant, mode, rounds, n, iv and iv.hex())
                        sys.exit(4)
                    checked += 1
    print("OK", impl, checked)
    """
)


def _tea_impls():
    return list(pcb._core.tea_impls())


def _run_with_impl(impl, script, *args):
    env = dict(os.environ)
    env["PCB_TEA_IMPL"] = impl
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("impl", ["scalar", "avx2", "avx512", "neon"])
def test_tea_simd_impl_equals_reference(impl):
    impls = _tea_impls()
    if impl not in impls:
        pytest.skip(f"TEA implementation {impl!r} not available on this CPU (have {impls})")
    r = _run_with_impl(impl, _IMPL_SCRIPT, impl)
    assert r.returncode == 0, f"rc={r.returncode}\nstdout:{r.stdout}\nstderr:{r.stderr}"
    assert r.stdout.startswith("OK " + impl), r.stdout


def test_tea_impls_lists_known_names():
    impls = _tea_impls()
    assert "scalar" in impls
    assert set(impls) <= {"ref", "scalar", "avx2", "avx512", "neon"}, impls


def test_tea_bogus_impl_env_does_not_crash():
    """An unknown PCB_TEA_IMPL must not crash the interpreter at import."""
    script = (
        "import pycipherbench as pcb\n"
        "k = bytes(range(16))\n"
        "assert pcb.encrypt('TEA/ECB/NoPadding', k, bytes(64)) == pcb.encrypt('TEA-ref/ECB/NoPadding', k, bytes(64))\n"
        "print('OK')\n"
    )
    r = _run_with_impl("bogus", script)
    # either it falls back (and works) or it raises a clean Python exception
    assert r.returncode >= 0, f"killed by signal {-r.returncode}: {r.stderr}"
    if r.returncode != 0:
        assert "Traceback" in r.stderr and "PCB_TEA_IMPL" in r.stderr, r.stderr
    else:
        assert r.stdout.strip() == "OK"


# --------------------------------------------------------------------------
# Bytes-like inputs
# --------------------------------------------------------------------------

CONVERTERS = {
    "bytearray": bytearray,
    "memoryview": memoryview,
    "memoryview-bytearray": lambda b: memoryview(bytearray(b)),
    "memoryview-offset-slice": lambda b: memoryview(b"\x00\x01\x02" + b + b"\x03")[3 : 3 + len(b)],
    "array-B": lambda b: array.array("B", b),
    "numpy-uint8": lambda b: np.frombuffer(b, dtype=np.uint8).copy(),
    "numpy-uint8-offset": lambda b: np.frombuffer(b"\xaa" * 5 + b, dtype=np.uint8)[5:],
    "numpy-readonly": lambda b: np.frombuffer(b, dtype=np.uint8),
}

BYTESLIKE_NAMES = [
    "AES/CBC/PKCS5Padding",
    "AES/CTR/NoPadding",
    "AES/GCM/NoPadding",
    "AES/SIV/NoPadding",
    "ChaCha20-Poly1305",
    "DESede/CBC/NoPadding",
    "TEA/CTR/NoPadding",
    "XTEA-ref/ECB/PKCS5Padding",
]


def _conv_aad(conv, aad):
    if aad is None:
        return None
    if isinstance(aad, list):
        return [conv(a) for a in aad]
    return conv(aad)


@pytest.mark.parametrize("conv_id", list(CONVERTERS))
@pytest.mark.parametrize("name", BYTESLIKE_NAMES)
def test_bytes_like_inputs(name, conv_id):
    conv = CONVERTERS[conv_id]
    info = Info(name)
    rng = rng_for("byteslike", name, conv_id)
    key = rng.randbytes(info.key_lens[-1])
    iv_len = next((x for x in info.iv_lens() if x is not None), None)
    iv = None if iv_len is None else rng.randbytes(iv_len)
    data = rng.randbytes(48 if info.whole_blocks else 45)
    if info.mode == "SIV":
        aad = [rng.randbytes(7), b"", rng.randbytes(3)]
    elif info.mode in ("GCM", "AEAD"):
        aad = rng.randbytes(11)
    else:
        aad = None
    ct = pcb.encrypt(name, key, data, iv=iv, aad=aad)
    got = pcb.encrypt(
        name, conv(key), conv(data), iv=None if iv is None else conv(iv), aad=_conv_aad(conv, aad)
    )
    assert got == ct
    assert isinstance(got, bytes)
    pt = pcb.decrypt(
        name, conv(key), conv(ct), iv=None if iv is None else conv(iv), aad=_conv_aad(conv, aad)
    )
    assert pt == data and isinstance(pt, bytes)


def test_siv_aad_tuple_of_bytes_like():
    rng = rng_for("siv-tuple")
    key, pt = rng.randbytes(32), rng.randbytes(20)
    comps = [rng.randbytes(5), rng.randbytes(9)]
    ref = pcb.encrypt("AES/SIV/NoPadding", key, pt, aad=comps)
    assert pcb.encrypt("AES/SIV/NoPadding", key, pt, aad=tuple(comps)) == ref
    assert pcb.encrypt("AES/SIV/NoPadding", key, pt, aad=[bytearray(comps[0]), memoryview(comps[1])]) == ref


def test_input_buffers_not_modified():
    rng = rng_for("not-modified")
    key, data, iv = bytearray(rng.randbytes(16)), bytearray(rng.randbytes(64)), bytearray(rng.randbytes(16))
    copies = bytes(key), bytes(data), bytes(iv)
    ct = pcb.encrypt("AES/CBC/NoPadding", key, data, iv=iv)
    pcb.decrypt("AES/CBC/NoPadding", key, ct, iv=iv)
    assert (bytes(key), bytes(data), bytes(iv)) == copies


def _strided_memoryview(n):
    return memoryview(bytearray(2 * n))[::2]


@pytest.mark.parametrize("which", ["key", "data", "iv"])
def test_non_contiguous_memoryview_rejected(which):
    args = dict(key=bytes(16), data=bytes(32), iv=bytes(16))
    args[which] = _strided_memoryview(len(args[which]))
    assert not args[which].contiguous
    for fn in (pcb.encrypt, pcb.decrypt):
        with pytest.raises((TypeError, BufferError)):
            fn("AES/CBC/NoPadding", args["key"], args["data"], iv=args["iv"])


@pytest.mark.parametrize("which", ["key", "data", "aad"])
def test_non_contiguous_numpy_rejected(which):
    args = dict(key=bytes(16), data=bytes(32), aad=bytes(8))
    args[which] = np.zeros(2 * len(args[which]), dtype=np.uint8)[::2]
    with pytest.raises((TypeError, BufferError, ValueError)) as ei:
        pcb.encrypt("AES/GCM/NoPadding", args["key"], args["data"], iv=bytes(12), aad=args["aad"])
    assert not isinstance(ei.value, pcb.CipherBenchError)


def test_non_contiguous_in_siv_aad_list_rejected():
    with pytest.raises((TypeError, BufferError)):
        pcb.encrypt("AES/SIV/NoPadding", bytes(32), b"abc", aad=[b"ok", _strided_memoryview(8)])

"""Published known-answer vectors (tests/vectors/*.json) run through pycipherbench.

Each JSON file holds {"source": ..., "vectors": [...]}; a vector gives the transformation, hex key,
iv (or null), aad (hex, list of hex components for AES-SIV, or null), plaintext, ciphertext in our
output format (AEAD: ct || tag, SIV: V || C) and rounds (TEA/XTEA cycles, null = default).
Every vector was checked against an independent implementation (cryptography, pycryptodome,
pure-Python TEA/XTEA) before it was added; the "source" field says where it was copied from.
"""

import json
import re
from pathlib import Path

import pytest

import pycipherbench as pcb

VECTOR_DIR = Path(__file__).parent / "vectors"
EXPECTED_FILES = {
    "sp800_38a.json",
    "gcm_spec.json",
    "rfc5297_siv.json",
    "rfc8439_chacha20poly1305.json",
    "des.json",
    "tea_xtea.json",
}
AEAD_TAG_LAST = ("AES/GCM/NoPadding", "ChaCha20-Poly1305")  # ct || tag
SIV = "AES/SIV/NoPadding"  # V || C
REF_ALIASES = {"TEA/": "TEA-ref/", "XTEA/": "XTEA-ref/"}


def _load():
    out = []
    for path in sorted(VECTOR_DIR.glob("*.json")):
        for vec in json.loads(path.read_text())["vectors"]:
            out.append((path.stem, vec))
    return out


ALL = _load()


def _id(stem, vec, suffix=""):
    name = re.sub(r"[^A-Za-z0-9.+#()-]+", "_", vec["name"]).strip("_")
    return f"{stem}/{name}{suffix}"


def _cases():
    cases = []
    for stem, vec in ALL:
        cases.append(pytest.param(vec, id=_id(stem, vec)))
        for prefix, ref in REF_ALIASES.items():
            if vec["transformation"].startswith(prefix):
                ref_vec = dict(vec, transformation=ref + vec["transformation"][len(prefix):])
                cases.append(pytest.param(ref_vec, id=_id(stem, vec, "[ref]")))
    return cases


def _aead_cases():
    return [
        pytest.param(vec, id=_id(stem, vec))
        for stem, vec in ALL
        if vec["transformation"] in AEAD_TAG_LAST or vec["transformation"] == SIV
    ]


def _args(vec):
    """(transformation, key, plaintext, ciphertext, kwargs) as bytes for pcb.encrypt/decrypt."""
    kw = {}
    if vec["iv"] is not None:
        kw["iv"] = bytes.fromhex(vec["iv"])
    aad = vec["aad"]
    if isinstance(aad, list):
        kw["aad"] = [bytes.fromhex(a) for a in aad]
    elif aad is not None:
        kw["aad"] = bytes.fromhex(aad)
    if vec["rounds"] is not None:
        kw["rounds"] = vec["rounds"]
    return (
        vec["transformation"],
        bytes.fromhex(vec["key"]),
        bytes.fromhex(vec["plaintext"]),
        bytes.fromhex(vec["ciphertext"]),
        kw,
    )


def _flip(data, index, bit=0):
    b = bytearray(data)
    b[index] ^= 1 << bit
    return bytes(b)


def test_vector_files_present_and_well_formed():
    names = {p.name for p in VECTOR_DIR.glob("*.json")}
    assert EXPECTED_FILES <= names
    hexre = re.compile(r"^(?:[0-9a-f]{2})*$")
    for name in sorted(names):
        doc = json.loads((VECTOR_DIR / name).read_text())
        assert isinstance(doc["source"], str) and len(doc["source"]) > 40, name
        assert doc["vectors"], name
        seen = set()
        for vec in doc["vectors"]:
            assert set(vec) == {"name", "transformation", "key", "iv", "aad", "plaintext",
                                "ciphertext", "rounds"}, (name, vec.get("name"))
            assert vec["name"] not in seen, (name, vec["name"])
            seen.add(vec["name"])
            assert vec["transformation"] in pcb.ciphers(), (name, vec["name"])
            for field in ("key", "plaintext", "ciphertext"):
                assert hexre.match(vec[field]), (name, vec["name"], field)
            assert vec["iv"] is None or hexre.match(vec["iv"])
            aad = vec["aad"]
            comps = aad if isinstance(aad, list) else ([] if aad is None else [aad])
            assert all(hexre.match(c) for c in comps), (name, vec["name"])
            assert vec["rounds"] is None or (isinstance(vec["rounds"], int) and vec["rounds"] != 32)


@pytest.mark.parametrize("vec", _cases())
def test_encrypt(vec):
    tr, key, pt, ct, kw = _args(vec)
    assert pcb.encrypt(tr, key, pt, **kw).hex() == ct.hex()


@pytest.mark.parametrize("vec", _cases())
def test_decrypt(vec):
    tr, key, pt, ct, kw = _args(vec)
    assert pcb.decrypt(tr, key, ct, **kw).hex() == pt.hex()


@pytest.mark.parametrize("vec", _aead_cases())
def test_aead_rejects_tampering(vec):
    tr, key, pt, ct, kw = _args(vec)
    body_len = len(ct) - 16
    if tr == SIV:  # V || C
        tag_idx, body_idx = range(0, 16), range(16, len(ct))
    else:  # C || T
        tag_idx, body_idx = range(body_len, len(ct)), range(0, body_len)

    # sanity: the untouched input decrypts
    assert pcb.decrypt(tr, key, ct, **kw) == pt

    # one flipped bit anywhere in the tag (first, last byte; low and high bit)
    for i, bit in ((tag_idx[0], 0), (tag_idx[-1], 7), (tag_idx[len(tag_idx) // 2], 3)):
        with pytest.raises(pcb.DecryptionError):
            pcb.decrypt(tr, key, _flip(ct, i, bit), **kw)

    # one flipped bit in the ciphertext body
    if body_len:
        for i, bit in ((body_idx[0], 0), (body_idx[-1], 7)):
            with pytest.raises(pcb.DecryptionError):
                pcb.decrypt(tr, key, _flip(ct, i, bit), **kw)

    # changed associated data
    for bad_kw in _changed_aad(tr, kw):
        with pytest.raises(pcb.DecryptionError):
            pcb.decrypt(tr, key, ct, **bad_kw)

    # changed nonce (SIV: the nonce is the last AD component)
    if "iv" in kw:
        with pytest.raises(pcb.DecryptionError):
            pcb.decrypt(tr, key, ct, **dict(kw, iv=_flip(kw["iv"], 0)))

    # truncated tag
    with pytest.raises(pcb.DecryptionError):
        pcb.decrypt(tr, key, ct[1:] if tr == SIV else ct[:-1], **kw)


def _changed_aad(tr, kw):
    """Variants of kw whose associated data differs from the vector's."""
    aad = kw.get("aad")
    out = []
    if tr != SIV:
        if aad:
            out.append(dict(kw, aad=_flip(aad, 0)))
            out.append(dict(kw, aad=aad[:-1]))
        out.append(dict(kw, aad=(aad or b"") + b"\x00"))
        return out
    if aad is None:
        out.append(dict(kw, aad=[b""]))  # one empty component != no component
        out.append(dict(kw, aad=b""))
        return out
    comps = list(aad)
    nonempty = [i for i, c in enumerate(comps) if c]
    if nonempty:
        i = nonempty[0]
        changed = list(comps)
        changed[i] = _flip(comps[i], 0)
        out.append(dict(kw, aad=changed))
    out.append(dict(kw, aad=comps + [b""]))  # extra empty component
    if len(comps) > 1 and comps != comps[::-1]:
        out.append(dict(kw, aad=comps[::-1]))  # same components, other order
    else:
        out.append(dict(kw, aad=comps[:-1] or None))  # one component fewer
    return out

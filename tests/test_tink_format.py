"""Issue 12: the store's keysets are Tink's, read and written interchangeably with the real
``tink`` package (PyPI).

``TinkEsp`` below is an independent EncryptedSharedPreferences built on tink-python, the way
ESP's Java code does it: both keysets through ``KeysetHandle`` write (tink-python's
``proto_keyset_format.serialize_encrypted``) with a master-key AEAD in the Android Keystore
layout ``IV(12) || ciphertext || tag(16)`` and empty associated data, hex-encoded
(``SharedPrefKeysetWriter``); names through the ``DeterministicAead`` primitive (associated
data: the prefs file's name), values through the ``Aead`` primitive (associated data: the
Base64 name). Tink picks the key by the ciphertext's 5-byte prefix, so rotated keysets work
as on a device. tink-python has no ChaCha20-Poly1305 key manager: for that option the
keyset is parsed by tink and the values opened with ``cryptography``'s ChaCha20Poly1305.
The typed value bytes and the XML use tests/esp_reference.py (independent of the store).
"""
import base64
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import esp_reference as ref  # noqa: E402
from esp_reference import BOOLEAN, FLOAT, INT, LONG, STRING, STRING_SET  # noqa: E402

tink = pytest.importorskip("tink", reason="the tink package (PyPI) is not installed")
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305  # noqa: E402
from tink import aead, daead, proto_keyset_format, secret_key_access  # noqa: E402
from tink.proto import tink_pb2  # noqa: E402

import pycipherbench as pcb  # noqa: E402
from pycipherbench import store  # noqa: E402

aead.register()
daead.register()

SIV_URL = "type.googleapis.com/google.crypto.tink.AesSivKey"
GCM_URL = "type.googleapis.com/google.crypto.tink.AesGcmKey"
CHACHA_URL = "type.googleapis.com/google.crypto.tink.ChaCha20Poly1305Key"

TYPED = [
    ("greeting", STRING, "hello"),
    ("empty string", STRING, ""),
    ("", STRING, "the empty name"),
    ("ключ 🔑 名前", STRING, "värde ✓ 🎉"),
    ("markup &<>\"' chars", STRING, "a&b<c>d\"e'f"),
    ("set", STRING_SET, {"a", "b", "ü", ""}),
    ("empty set", STRING_SET, set()),
    ("int", INT, -5),
    ("int max", INT, 2**31 - 1),
    ("long", LONG, -(2**63)),
    ("float", FLOAT, 1.5),
    ("bool", BOOLEAN, True),
    ("bool false", BOOLEAN, False),
]
PUTTERS = {STRING: "put_string", STRING_SET: "put_string_set", INT: "put_int", LONG: "put_long",
           FLOAT: "put_float", BOOLEAN: "put_bool"}


class KeystoreAead(aead.Aead):
    """The master key as Android's AndroidKeystoreAesGcm: IV(12) || ciphertext || tag."""

    def __init__(self, key: bytes):
        self._gcm = AESGCM(key)

    def encrypt(self, plaintext: bytes, associated_data: bytes) -> bytes:
        iv = os.urandom(12)
        return iv + self._gcm.encrypt(iv, plaintext, associated_data)

    def decrypt(self, ciphertext: bytes, associated_data: bytes) -> bytes:
        return self._gcm.decrypt(ciphertext[:12], ciphertext[12:], associated_data)


def keyset_of(handle) -> tink_pb2.Keyset:
    return tink_pb2.Keyset.FromString(proto_keyset_format.serialize(handle, secret_key_access.TOKEN))


def handle_of(keyset: tink_pb2.Keyset):
    return proto_keyset_format.parse(keyset.SerializeToString(), secret_key_access.TOKEN)


def rotated(handle, template):
    """handle's keyset plus a new key of template, made primary (KeysetManager.rotate)."""
    ks = keyset_of(handle)
    new = keyset_of(tink.new_keyset_handle(template))
    ks.key.append(new.key[0])
    ks.primary_key_id = new.primary_key_id
    return handle_of(ks)


def chacha_handle(key_ids=(None,)):
    """A keyset of ChaCha20Poly1305Key keys (tink-python cannot generate them)."""
    ks = tink_pb2.Keyset()
    for kid in key_ids:
        k = ks.key.add()
        k.key_id = kid or int.from_bytes(os.urandom(4), "big") >> 1 or 1
        k.status = tink_pb2.ENABLED
        k.output_prefix_type = tink_pb2.TINK
        k.key_data.type_url = CHACHA_URL
        k.key_data.key_material_type = tink_pb2.KeyData.SYMMETRIC
        k.key_data.value = b"\x12\x20" + os.urandom(32)  # ChaCha20Poly1305Key.key_value = 2
        ks.primary_key_id = k.key_id
    return handle_of(ks)


class ChaChaTinkAead:
    """Tink's AEAD over a ChaCha20Poly1305Key keyset: prefix || nonce || ct || tag."""

    def __init__(self, handle):
        ks = keyset_of(handle)
        self.primary = ks.primary_key_id
        self.keys = {k.key_id: ChaCha20Poly1305(k.key_data.value[2:]) for k in ks.key}

    def encrypt(self, pt, ad):
        nonce = os.urandom(12)
        return (b"\x01" + struct.pack(">I", self.primary) + nonce
                + self.keys[self.primary].encrypt(nonce, pt, ad))

    def decrypt(self, ct, ad):
        assert ct[0] == 1
        return self.keys[struct.unpack(">I", ct[1:5])[0]].decrypt(ct[5:17], ct[17:], ad)


class TinkEsp:
    """An ESP file through tink-python's primitives."""

    def __init__(self, master_key: bytes, chacha: bool = False, with_info: bool = True):
        self.master = KeystoreAead(master_key)
        self.chacha = chacha
        self.with_info = with_info

    def new_handles(self):
        siv = tink.new_keyset_handle(daead.deterministic_aead_key_templates.AES256_SIV)
        val = chacha_handle() if self.chacha else tink.new_keyset_handle(aead.aead_key_templates.AES256_GCM)
        return siv, val

    def value_primitive(self, handle):
        return ChaChaTinkAead(handle) if self.chacha else handle.primitive(aead.Aead)

    def keyset_text(self, handle) -> str:
        """As Java's KeysetHandle.write + SharedPrefKeysetWriter: the EncryptedKeyset with its
        keyset_info (tink-python's binary writer leaves keyset_info out; with_info=False
        writes what it writes)."""
        data = proto_keyset_format.serialize_encrypted(handle, self.master, b"")
        if not self.with_info:
            return data.hex()
        enc = tink_pb2.EncryptedKeyset.FromString(data)
        enc.keyset_info.CopyFrom(handle.keyset_info())
        return enc.SerializeToString().hex()

    def write(self, path, typed, handles=None, extra_pairs=()):
        """typed: [(name, type, value)]; handles: (siv handle, value handle) or new ones."""
        siv_h, val_h = handles or self.new_handles()
        sname = ref.store_name(path)
        siv, val = siv_h.primitive(daead.DeterministicAead), self.value_primitive(val_h)
        pairs = [(ref.KEY_KEYSET_NAME, self.keyset_text(siv_h)),
                 (ref.VALUE_KEYSET_NAME, self.keyset_text(val_h)), *extra_pairs]
        for name, t, value in typed:
            n = base64.b64encode(siv.encrypt_deterministically(name.encode(), sname.encode())).decode()
            v = val.encrypt(ref.encode_typed(value, t), n.encode())
            pairs.append((n, base64.b64encode(v).decode()))
        Path(path).write_text(ref._string_elements_xml(pairs), encoding="utf-8")
        return siv_h, val_h

    def handles(self, path):
        stored = dict(ref.raw_entries(path))
        return tuple(proto_keyset_format.parse_encrypted(bytes.fromhex(stored[n]), self.master, b"")
                     for n in (ref.KEY_KEYSET_NAME, ref.VALUE_KEYSET_NAME))

    def read(self, path) -> dict:
        """name -> (type, value), every entry decrypted by tink."""
        siv_h, val_h = self.handles(path)
        siv, val = siv_h.primitive(daead.DeterministicAead), self.value_primitive(val_h)
        sname = ref.store_name(path).encode()
        out = {}
        for n, v in ref.raw_entries(path):
            if n in ref.RESERVED_NAMES:
                continue
            name = siv.decrypt_deterministically(base64.b64decode(n), sname).decode()
            out[name] = ref.decode_typed(val.decrypt(base64.b64decode(v), n.encode()))
        return out


def expected(typed):
    return {n: v for n, _, v in typed}


def put_all(s, typed):
    e = s.edit()
    for n, t, v in typed:
        getattr(e, PUTTERS[t])(n, v)
    assert e.commit()


# ------------------------------------------------------------------ both ways

@pytest.mark.parametrize("venc", ["gcm", "chacha20-poly1305"])
@pytest.mark.parametrize("faithful", [False, True])
@pytest.mark.parametrize("with_info", [True, False], ids=["java-with-keyset-info", "no-keyset-info"])
def test_tink_written_file_opens_in_store(tmp_path, master, venc, faithful, with_info):
    kf, key = master
    path = tmp_path / "device_prefs.xml"
    TinkEsp(key, chacha=venc != "gcm", with_info=with_info).write(path, TYPED)
    with store.open(path, master_key_file=kf, value_encryption=venc, faithful=faithful) as s:
        assert s.all() == expected(TYPED)
        assert s.get_string("ключ 🔑 名前") == "värde ✓ 🎉"
        assert s.get_string("") == "the empty name"
        s.edit().put_string("added", "by the store").commit()
    got = TinkEsp(key, chacha=venc != "gcm").read(path)
    assert {n: v for n, (_, v) in got.items()} == {**expected(TYPED), "added": "by the store"}


@pytest.mark.parametrize("venc", ["gcm", "chacha20-poly1305"])
def test_store_written_file_reads_in_tink(tmp_path, master, venc):
    kf, key = master
    path = tmp_path / "ours.xml"
    with store.open(path, master_key_file=kf, value_encryption=venc) as s:
        put_all(s, TYPED)
    got = TinkEsp(key, chacha=venc != "gcm").read(path)
    assert got == {n: (t, v) for n, t, v in TYPED}


def test_keyset_bytes_are_tinks(tmp_path, master):
    """The store's keyset text is an EncryptedKeyset tink parses; keyset_info is the one tink
    derives from the decrypted keyset; the Keyset holds exactly what Tink's key managers
    make (version 0, SYMMETRIC, ENABLED, TINK, 64- and 32-byte keys)."""
    kf, key = master
    path = tmp_path / "bytes.xml"
    with store.open(path, master_key_file=kf) as s:
        s.edit().put_string("a", "b").commit()
    stored = dict(ref.raw_entries(path))
    for name, url, field, n in ((ref.KEY_KEYSET_NAME, SIV_URL, 2, 64),
                                (ref.VALUE_KEYSET_NAME, GCM_URL, 3, 32)):
        text = stored[name]
        assert re.fullmatch(r"12[0-9a-f]+", text), "lowercase hex, field 2 first"
        enc = tink_pb2.EncryptedKeyset.FromString(bytes.fromhex(text))
        h = proto_keyset_format.parse_encrypted(bytes.fromhex(text), KeystoreAead(key), b"")
        assert enc.keyset_info == h.keyset_info()
        ks = keyset_of(h)
        assert len(ks.key) == 1 and ks.primary_key_id == ks.key[0].key_id
        k = ks.key[0]
        assert (k.key_data.type_url, k.status, k.output_prefix_type) == (url, tink_pb2.ENABLED, tink_pb2.TINK)
        assert k.key_data.key_material_type == tink_pb2.KeyData.SYMMETRIC
        assert k.key_data.value[:2] == bytes([field << 3 | 2, n]) and len(k.key_data.value) == 2 + n
        # the bytes are exactly a canonical serialization (field order, no defaults)
        assert bytes.fromhex(text) == enc.SerializeToString()
        blob = enc.encrypted_keyset
        plain = AESGCM(key).decrypt(blob[:12], blob[12:], b"")
        assert plain == ks.SerializeToString()


def test_rotated_tink_keysets_open_in_store(tmp_path, master):
    """Keysets with several keys, as Tink writes them after a rotation: entries under the
    old and the new primary all read; new entries go under the primary."""
    kf, key = master
    path = tmp_path / "rotated.xml"
    esp = TinkEsp(key)
    siv_h, val_h = esp.new_handles()
    old = TYPED[:6]
    esp.write(path, old, (siv_h, val_h))
    old_pairs = [p for p in ref.raw_entries(path) if p[0] not in ref.RESERVED_NAMES]
    siv2 = rotated(siv_h, daead.deterministic_aead_key_templates.AES256_SIV)
    val2 = rotated(val_h, aead.aead_key_templates.AES256_GCM)
    esp.write(path, TYPED[6:], (siv2, val2), extra_pairs=old_pairs)
    with store.open(path, master_key_file=kf) as s:
        assert s.all() == expected(TYPED)
        assert s.get_int("int") == -5  # written under the new primary
        s.edit().put_string("new", "entry").commit()
    new_primary = keyset_of(val2).primary_key_id
    raw = dict(ref.raw_entries(path))
    got = esp.read(path)
    assert {n: v for n, (_, v) in got.items()} == {**expected(TYPED), "new": "entry"}
    assert len(keyset_of(esp.handles(path)[1]).key) == 2, "both keys kept"
    # the new entry's value carries the new primary's id
    siv = siv2.primitive(daead.DeterministicAead)
    n = base64.b64encode(siv.encrypt_deterministically(b"new", b"rotated")).decode()
    assert base64.b64decode(raw[n])[1:5] == struct.pack(">I", new_primary)


def test_reference_reads_rotated_keysets(tmp_path, master):
    """tests/esp_reference.py (no tink) reads a tink-written rotated file too."""
    kf, key = master
    path = tmp_path / "rotated_ref.xml"
    esp = TinkEsp(key)
    siv_h, val_h = esp.new_handles()
    esp.write(path, TYPED[:3], (siv_h, val_h))
    old_pairs = [p for p in ref.raw_entries(path) if p[0] not in ref.RESERVED_NAMES]
    esp.write(path, TYPED[3:], (rotated(siv_h, daead.deterministic_aead_key_templates.AES256_SIV),
                                rotated(val_h, aead.aead_key_templates.AES256_GCM)),
              extra_pairs=old_pairs)
    assert ref.read_store(path, key) == expected(TYPED)


# --------------------------------------------------------- options and master

def test_gcm_keyset_refused_as_chacha_and_back(tmp_path, master):
    kf, key = master
    gcm, cha = tmp_path / "gcm.xml", tmp_path / "cha.xml"
    TinkEsp(key).write(gcm, TYPED[:2])
    TinkEsp(key, chacha=True).write(cha, TYPED[:2])
    before = gcm.read_bytes(), cha.read_bytes()
    with pytest.raises(store.StoreFormatError, match="AesGcmKey.*chacha20-poly1305.*ChaCha20Poly1305Key"):
        store.open(gcm, master_key_file=kf, value_encryption="chacha20-poly1305")
    with pytest.raises(store.StoreFormatError, match="ChaCha20Poly1305Key.*value_encryption='gcm'"):
        store.open(cha, master_key_file=kf, value_encryption="gcm")
    assert (gcm.read_bytes(), cha.read_bytes()) == before


def test_siv_keyset_type_checked(tmp_path, master):
    """A key keyset that is not AesSivKey (here an AES-GCM keyset) is refused naming both."""
    kf, key = master
    path = tmp_path / "notsiv.xml"
    esp = TinkEsp(key)
    siv_h, val_h = esp.new_handles()
    pairs = [(ref.KEY_KEYSET_NAME, esp.keyset_text(tink.new_keyset_handle(aead.aead_key_templates.AES256_GCM))),
             (ref.VALUE_KEYSET_NAME, esp.keyset_text(val_h))]
    path.write_text(ref._string_elements_xml(pairs), encoding="utf-8")
    with pytest.raises(store.StoreFormatError, match="key keyset.*AesGcmKey.*key_encryption='siv'.*AesSivKey"):
        store.open(path, master_key_file=kf)


def test_wrong_master_key_on_device_file(tmp_path, master):
    kf, key = master
    path = tmp_path / "device.xml"
    TinkEsp(key).write(path, TYPED)
    other = tmp_path / "other.key"
    other.write_bytes(os.urandom(32))
    other.chmod(0o600)
    before = path.read_bytes()
    with pytest.raises(pcb.DecryptionError, match="master key does not match") as ei:
        store.open(path, master_key_file=other)
    assert "malformed" not in str(ei.value)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["device.xml", "master.key", "other.key"]


def test_aes128_gcm_keyset_refused(tmp_path, master):
    kf, key = master
    path = tmp_path / "aes128.xml"
    esp = TinkEsp(key)
    siv_h, _ = esp.new_handles()
    val_h = tink.new_keyset_handle(aead.aead_key_templates.AES128_GCM)
    esp.write(path, TYPED[:1], (siv_h, val_h))
    with pytest.raises(store.StoreFormatError, match="16 bytes.*needs 32"):
        store.open(path, master_key_file=kf)


# ------------------------------------------------------------ a strict codec

def _varint(n):
    out = b""
    while n > 0x7F:
        out += bytes([n & 0x7F | 0x80])
        n >>= 7
    return out + bytes([n])


def _ld(field, data):
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _sealed_text(key, keyset_bytes, info=b""):
    iv = os.urandom(12)
    enc = _ld(2, iv + AESGCM(key).encrypt(iv, keyset_bytes, b""))
    return (enc + (_ld(3, info) if info else b"")).hex()


def _good_keyset(url=GCM_URL, field=3, n=32, kid=7):
    key = _ld(field, os.urandom(n))
    data = _ld(1, url.encode()) + _ld(2, key) + b"\x18\x01"
    return b"\x08" + _varint(kid) + _ld(2, _ld(1, data) + b"\x10\x01" + b"\x18" + _varint(kid) + b"\x20\x01")


BROKEN_INNER = {
    "unknown field": lambda: _good_keyset() + b"\x28\x01",
    "repeated primary": lambda: b"\x08\x07" + _good_keyset(),
    "length past the end": lambda: _good_keyset()[:-3],
    "varint over 10 bytes": lambda: b"\x08" + b"\xff" * 10 + b"\x01" + _good_keyset()[2:],
    "wrong wire type": lambda: b"\x0a\x01\x07" + _good_keyset()[2:],
    "no key": lambda: b"\x08\x07",
    "primary names no key": lambda: b"\x08\x09" + _good_keyset()[2:],
}
BROKEN_MESSAGES = {
    "unknown field": "unknown field 5", "repeated primary": "appears twice",
    "length past the end": "past the end", "varint over 10 bytes": "longer than 10 bytes",
    "wrong wire type": "wire type length-delimited, expected varint", "no key": "no key",
    "primary names no key": "names no key",
}


@pytest.mark.parametrize("case", sorted(BROKEN_INNER))
def test_strict_keyset_decoder(tmp_path, master, case):
    """A malformed Keyset inside a keyset that decrypts: StoreFormatError naming the keyset,
    the field and what is wrong; the file untouched."""
    kf, key = master
    path = tmp_path / "broken.xml"
    esp = TinkEsp(key)
    esp.write(path, [])
    stored = dict(ref.raw_entries(path))
    stored[ref.VALUE_KEYSET_NAME] = _sealed_text(key, BROKEN_INNER[case]())
    path.write_text(ref._string_elements_xml(list(stored.items())), encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(store.StoreFormatError) as ei:
        store.open(path, master_key_file=kf)
    msg = str(ei.value)
    assert ref.VALUE_KEYSET_NAME in msg and "value keyset" in msg, msg
    assert re.search(BROKEN_MESSAGES[case], msg), msg
    assert path.read_bytes() == before


@pytest.mark.parametrize("outer,match", [
    ("0a00", "unknown field 1"),
    ("12", "past the end"),
    ("1205" + "00" * 4, "past the end"),
    ("1a00", "encrypted_keyset is missing"),
    ("10" + "ff" * 11, "longer than 10 bytes"),
    ("10" + "ff" * 9 + "02", "longer than 10 bytes"),
    ("15" + "00" * 4, "wire type"),
])
def test_strict_encrypted_keyset(tmp_path, master, outer, match):
    kf, key = master
    path = tmp_path / "outer.xml"
    TinkEsp(key).write(path, [])
    stored = dict(ref.raw_entries(path))
    stored[ref.KEY_KEYSET_NAME] = outer
    path.write_text(ref._string_elements_xml(list(stored.items())), encoding="utf-8")
    with pytest.raises(store.StoreFormatError, match=match) as ei:
        store.open(path, master_key_file=kf)
    assert ref.KEY_KEYSET_NAME in str(ei.value)


def test_keyset_info_refused_before_any_key(tmp_path):
    """keyset_info is plaintext: a type mismatch is refused before a master key is read or
    created (a missing key file stays missing)."""
    key = os.urandom(32)
    path = tmp_path / "info.xml"
    TinkEsp(key).write(path, TYPED[:1])
    kf = tmp_path / "absent.key"
    with pytest.raises(store.StoreFormatError, match="AesGcmKey"):
        store.open(path, master_key_file=kf, value_encryption="chacha20-poly1305")
    assert not kf.exists()


# ---------------------------------------------------------- earlier releases

@pytest.mark.parametrize("parses", [False, True], ids=["plain", "parses-as-encrypted-keyset"])
def test_pre_tink_keysets_read_and_upgraded(tmp_path, master, parses):
    """Files of earlier releases (keysets hex(nonce || GCM(master, kid || key) || tag)) open
    for one release; the next write stores Tink's keysets, which tink then reads. With
    parses, each nonce starts 0x12 <length of the rest>, so the old text is also a
    well-formed EncryptedKeyset (that does not decrypt): it still opens."""
    kf, key = master
    path = tmp_path / "old.xml"
    ref.write_store(path, key, {"a": "b", "n": 5}, siv_key=os.urandom(64))
    stored = dict(ref.raw_entries(path))
    ks = ref.read_keysets(path, key)

    def old_text(kid, raw):
        iv = os.urandom(12)
        if parses:
            iv = bytes([0x12, 12 + 4 + len(raw) + 16 - 2]) + iv[2:]
        return (iv + AESGCM(key).encrypt(iv, struct.pack(">I", kid) + raw, None)).hex()

    stored[ref.KEY_KEYSET_NAME] = old_text(ks.siv_key_id, ks.siv_key)
    stored[ref.VALUE_KEYSET_NAME] = old_text(ks.value_key_id, ks.value_key)
    path.write_text(ref._string_elements_xml(list(stored.items())), encoding="utf-8")
    # (a real Tink keyset is longer than these: the length tells them apart)
    assert {store.inspect(path).key_keyset.format, store.inspect(path).value_keyset.format} == {
        "pre-tink"}
    with store.open(path, master_key_file=kf) as s:
        assert s.all() == {"a": "b", "n": 5}
        s.edit().put_string("c", "d").commit()
    assert TinkEsp(key).read(path) == {"a": (STRING, "b"), "n": (INT, 5), "c": (STRING, "d")}


def test_pre_tink_file_under_the_other_aead_is_refused(tmp_path, master):
    """An earlier release's keyset names no AEAD: its entries tell (the first that
    authenticates under either AEAD), so a GCM file opened as ChaCha is refused naming both
    and left untouched."""
    kf, key = master
    path = tmp_path / "old.xml"
    ref.write_store(path, key, {"a": "b"}, siv_key=os.urandom(64))
    stored = dict(ref.raw_entries(path))
    ks = ref.read_keysets(path, key)

    def old_text(kid, raw):
        iv = os.urandom(12)
        return (iv + AESGCM(key).encrypt(iv, struct.pack(">I", kid) + raw, None)).hex()

    stored[ref.KEY_KEYSET_NAME] = old_text(ks.siv_key_id, ks.siv_key)
    stored[ref.VALUE_KEYSET_NAME] = old_text(ks.value_key_id, ks.value_key)
    path.write_text(ref._string_elements_xml(list(stored.items())), encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(store.StoreFormatError) as ei:
        store.open(path, master_key_file=kf, value_encryption="chacha20-poly1305")
    assert "'gcm'" in str(ei.value) and "'chacha20-poly1305'" in str(ei.value)
    assert path.read_bytes() == before


# ------------------------------------------------------------------- inspect

def test_inspect_device_file_without_key(tmp_path, master):
    """store.inspect on a rotated Tink file: key ids, types, status, primary from
    keyset_info; entries per key id; no key needed, nothing written."""
    kf, key = master
    path = tmp_path / "pulled.xml"
    esp = TinkEsp(key)
    siv_h, val_h = esp.new_handles()
    esp.write(path, TYPED[:4], (siv_h, val_h))
    old_pairs = [p for p in ref.raw_entries(path) if p[0] not in ref.RESERVED_NAMES]
    siv2 = rotated(siv_h, daead.deterministic_aead_key_templates.AES256_SIV)
    val2 = rotated(val_h, aead.aead_key_templates.AES256_GCM)
    esp.write(path, TYPED[4:], (siv2, val2), extra_pairs=old_pairs)
    before = path.read_bytes()
    info = store.inspect(path)
    assert path.read_bytes() == before
    assert (info.layout, info.entries, info.native_entries) == ("entries", len(TYPED), 0)
    assert info.file_bytes == len(before)
    for ks, handle, old_h, url, counts in (
            (info.key_keyset, siv2, siv_h, SIV_URL, info.names_by_key_id),
            (info.value_keyset, val2, val_h, GCM_URL, info.values_by_key_id)):
        tks = keyset_of(handle)
        old_id = keyset_of(old_h).primary_key_id
        assert ks.format == "tink" and ks.primary_key_id == tks.primary_key_id
        assert [(k.key_id, k.type_url, k.status, k.output_prefix_type, k.primary) for k in ks.keys] == [
            (k.key_id, url, "ENABLED", "TINK", k.key_id == tks.primary_key_id) for k in tks.key]
        assert counts == {old_id: 4, tks.primary_key_id: len(TYPED) - 4}
    assert (info.unprefixed_names, info.unprefixed_values) == (0, 0)
    text = info.describe()
    assert "AesSivKey ENABLED TINK" in text and "(primary)" in text


def test_inspect_layouts_and_formats(tmp_path, master):
    kf, key = master
    with store.open(tmp_path / "lean.xml", master_key_file=kf, key_encryption="none",
                    value_encryption="chacha20-poly1305") as s:
        s.edit().put_string("a", "b").put_int("n", 1).commit()
    info = store.inspect(tmp_path / "lean.xml")
    assert info.key_keyset is None and info.value_keyset.keys[0].type_url == CHACHA_URL
    assert info.unprefixed_names == 2 and sum(info.values_by_key_id.values()) == 2
    with store.open(tmp_path / "sealed.xml", master_key_file=kf, layout="file") as s:
        s.edit().put_string("a", "b").commit()
    info = store.inspect(tmp_path / "sealed.xml")
    assert info.layout == "file" and info.entries == 0
    assert info.values_by_key_id == {info.value_keyset.primary_key_id: 1}
    with store.open(tmp_path / "plain.xml", encrypted=False) as s:
        s.edit().put_string("a", "b").put_int("n", 1).commit()
    info = store.inspect(tmp_path / "plain.xml")
    assert (info.layout, info.entries, info.native_entries) == ("plain", 2, 1)
    assert info.key_keyset is None and info.value_keyset is None
    TinkEsp(key, with_info=False).write(tmp_path / "noinfo.xml", TYPED[:2])
    info = store.inspect(tmp_path / "noinfo.xml")
    assert info.key_keyset.format == "tink-no-info" and info.key_keyset.keys == ()
    assert sum(info.names_by_key_id.values()) == 2
    with pytest.raises(FileNotFoundError):
        store.inspect(tmp_path / "absent.xml")
    (tmp_path / "bad.xml").write_text(ref._string_elements_xml([(ref.KEY_KEYSET_NAME, "0a00")]))
    with pytest.raises(store.StoreFormatError, match="key keyset.*unknown field 1"):
        store.inspect(tmp_path / "bad.xml")


def _child_env() -> dict:
    """A child's environment that imports the pycipherbench under test (a checkout with an
    in-place build, or site-packages) from any working directory."""
    from conftest import child_env

    return child_env()


def test_cli_store_inspect(tmp_path, master):
    import json
    kf, key = master
    path = tmp_path / "cli.xml"
    TinkEsp(key).write(path, TYPED[:3])
    out = subprocess.run([sys.executable, "-m", "pycipherbench.cli", "store", "inspect", str(path),
                          "--json", "-"], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, env=_child_env())
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)  # --json -: standard output holds the JSON only
    assert data["layout"] == "entries"
    text = subprocess.run([sys.executable, "-m", "pycipherbench.cli", "store", "inspect", str(path)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=_child_env())
    assert "layout 'entries', 3 entries" in text.stdout
    assert data["key_keyset"]["keys"][0]["type_url"] == SIV_URL
    bad = subprocess.run([sys.executable, "-m", "pycipherbench.cli", "store", "inspect"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path, env=_child_env())
    assert bad.returncode == 2 and "usage: pycipherbench store inspect" in bad.stderr \
        and "required: FILE" in bad.stderr  # its own parser (issue 26: its own --help)


# ------------------------------------------------------------- lazy rotation

@pytest.mark.parametrize("venc", ["gcm", "chacha20-poly1305"])
@pytest.mark.parametrize("faithful", [False, True])
def test_lazy_rotation(tmp_path, master, venc, faithful):
    """rotate(lazy=True): a new primary value key, nothing re-encrypted; old and new entries
    read back (store, tink, the reference); the keyset holds both keys."""
    kf, key = master
    path = tmp_path / "lazy.xml"
    opts = dict(master_key_file=kf, value_encryption=venc, faithful=faithful)
    with store.open(path, **opts) as s:
        put_all(s, TYPED)
        before = {n: v for n, v in ref.raw_entries(path) if n not in ref.RESERVED_NAMES}
        old_info = store.inspect(path)
        s.rotate(lazy=True)
        after = dict(ref.raw_entries(path))
        assert {n: after[n] for n in before} == before, "nothing re-encrypted"
        assert after[ref.KEY_KEYSET_NAME] == dict(ref.raw_entries(path))[ref.KEY_KEYSET_NAME]
        assert s.all() == expected(TYPED)
        s.edit().put_string("after", "rotation").put_int("int", 42).commit()
        assert s.get_int("int") == 42 and s.get_string("greeting") == "hello"
    info = store.inspect(path)
    old_kid = old_info.value_keyset.primary_key_id
    new_kid = info.value_keyset.primary_key_id
    assert new_kid != old_kid
    assert [k.key_id for k in info.value_keyset.keys] == [old_kid, new_kid]
    assert info.values_by_key_id == {old_kid: len(TYPED) - 1, new_kid: 2}
    assert info.key_keyset == old_info.key_keyset, "the names' keyset does not rotate"
    want = {**expected(TYPED), "after": "rotation", "int": 42}
    with store.open(path, **opts) as s:
        assert s.all() == want
    got = TinkEsp(key, chacha=venc != "gcm").read(path)
    assert {n: v for n, (_, v) in got.items()} == want
    assert ref.read_store(path, key, value_encryption=venc) == want


def test_lazy_then_full_rotation(tmp_path, master):
    kf, key = master
    path = tmp_path / "both.xml"
    with store.open(path, master_key_file=kf) as s:
        put_all(s, TYPED)
        s.rotate(lazy=True)
        s.edit().put_string("x", "y").commit()
        s.rotate(lazy=True)
        assert len(store.inspect(path).value_keyset.keys) == 3
        s.rotate()  # everything re-encrypted: one key per keyset again
        info = store.inspect(path)
        assert len(info.value_keyset.keys) == 1 and len(info.key_keyset.keys) == 1
        assert info.values_by_key_id == {info.value_keyset.primary_key_id: len(TYPED) + 1}
        assert s.all() == {**expected(TYPED), "x": "y"}
    assert TinkEsp(key).read(path)["x"] == (STRING, "y")


def test_lazy_rotation_layout_file_and_refusals(tmp_path, master):
    kf, key = master
    with store.open(tmp_path / "f.xml", master_key_file=kf, layout="file") as s:
        s.edit().put_string("a", "b").commit()
        s.rotate(lazy=True)
        assert s.get_string("a") == "b"
    info = store.inspect(tmp_path / "f.xml")
    assert len(info.value_keyset.keys) == 2
    assert info.values_by_key_id == {info.value_keyset.primary_key_id: 1}  # resealed once
    with store.open(tmp_path / "f.xml", master_key_file=kf, layout="file") as s:
        assert s.all() == {"a": "b"}
    with store.open(tmp_path / "p.xml", encrypted=False) as s:
        with pytest.raises(ValueError, match="plain store"):
            s.rotate(lazy=True)
    with store.open(tmp_path / "n.xml", master_key_file=kf, value_encryption="none") as s:
        with pytest.raises(ValueError, match="no value keyset"):
            s.rotate(lazy=True)
    with store.open(tmp_path / "m.xml", master_key_file=kf) as s:
        with pytest.raises(ValueError, match="master key"):
            s.rotate(lazy=True, master_key_file=tmp_path / "new.key")
        with pytest.raises(TypeError):
            s.rotate(lazy=1)


def test_lazy_rotation_key_limit(tmp_path, master):
    kf, key = master
    path = tmp_path / "limit.xml"
    with store.open(path, master_key_file=kf) as s:
        s.edit().put_string("first", "1").commit()
        for i in range(31):
            s.rotate(lazy=True)
            s.edit().put_int(f"k{i}", i).commit()
        with pytest.raises(ValueError, match="32 keys"):
            s.rotate(lazy=True)
        assert s.get_string("first") == "1" and s.get_int("k30") == 30
    assert len(store.inspect(path).value_keyset.keys) == 32
    with store.open(path, master_key_file=kf) as s:
        assert len(s.all()) == 32


def test_bench_rotate_lazy_workload(tmp_path):
    """The rotate_lazy workload runs past a keyset's 32 keys (a full rotation, untimed,
    starts it again) and is refused where there is no value key to add."""
    from pycipherbench import _core
    k = _core.StoreKernel("rotate_lazy", directory=tmp_path, n_keys=20)
    try:
        for _ in range(3):
            elapsed = k.sample(25)[0]
            assert elapsed > 0
        assert k.info["workload"] == "rotate_lazy"
    finally:
        k.close()
    with pytest.raises(ValueError, match="encrypted"):
        _core.check_store_bench("rotate_lazy", encrypted=False)
    with pytest.raises(ValueError, match="value_encryption"):
        _core.check_store_bench("rotate_lazy", value_encryption="none")
    _core.check_store_bench("rotate_lazy", value_encryption="none", layout="file")
    m = store.bench("rotate_lazy", n_keys=10, min_time=0.001, repeats=2, directory=tmp_path)
    assert m.workload == "rotate_lazy" and m.payload == 0


# ------------------------------------------------- issue 17: Tink's output prefixes
#
# Tink accepts keysets whose non-primary ENABLED keys have any output prefix type and
# decrypts with them: prefixed keys (TINK 0x01 || id, LEGACY and CRUNCHY 0x00 || id)
# matching a ciphertext's first 5 bytes first, then the RAW keys on the whole ciphertext.
# For AEAD and deterministic AEAD, LEGACY changes only the prefix (its 0x00 appended to the
# data is a MAC rule). The entries below are sealed by tink-python's own primitives.

PREFIX = {"TINK": tink_pb2.TINK, "LEGACY": tink_pb2.LEGACY, "RAW": tink_pb2.RAW,
          "CRUNCHY": tink_pb2.CRUNCHY}
SIV_T = daead.deterministic_aead_key_templates.AES256_SIV
GCM_T = aead.aead_key_templates.AES256_GCM


def _key(template, prefix="TINK", status=tink_pb2.ENABLED):
    """One fresh tink key (its proto) with that output prefix and status."""
    k = keyset_of(tink.new_keyset_handle(template)).key[0]
    k.output_prefix_type = PREFIX[prefix]
    k.status = status
    return k


def _chacha_key(prefix="TINK", status=tink_pb2.ENABLED):
    k = keyset_of(chacha_handle()).key[0]
    k.output_prefix_type = PREFIX[prefix]
    k.status = status
    return k


def _keyset(keys, primary=0):
    ks = tink_pb2.Keyset()
    ks.key.extend(keys)
    ks.primary_key_id = keys[primary].key_id
    return ks


def _sealer(key, cls):
    """tink's primitive for this one key as the primary of its keyset (its own prefix)."""
    one = tink_pb2.Keyset()
    k = one.key.add()
    k.CopyFrom(key)
    k.status = tink_pb2.ENABLED
    one.primary_key_id = k.key_id
    if k.key_data.type_url == CHACHA_URL:  # by hand, with the key's own prefix
        aead_ = ChaCha20Poly1305(k.key_data.value[2:])
        lead = b"" if k.output_prefix_type == tink_pb2.RAW else (
            (b"\x01" if k.output_prefix_type == tink_pb2.TINK else b"\x00") + struct.pack(">I", k.key_id))

        class _C:
            def encrypt(self, pt, ad):
                nonce = os.urandom(12)
                return lead + nonce + aead_.encrypt(nonce, pt, ad)
        return _C()
    return handle_of(one).primitive(cls)


def _write_keyed(path, esp, siv_ks, val_ks, entries):
    """An ESP file: the two keysets (sealed under esp's master key, with keyset_info as Java
    writes) and entries [(name, type, value, siv key, value key)], each name sealed by tink
    under its siv key and each value under its value key."""
    sname = ref.store_name(path).encode()
    pairs = [(ref.KEY_KEYSET_NAME, esp.keyset_text(handle_of(siv_ks))),
             (ref.VALUE_KEYSET_NAME, esp.keyset_text(handle_of(val_ks)))]
    for name, t, value, sk, vk in entries:
        n = base64.b64encode(_sealer(sk, daead.DeterministicAead)
                             .encrypt_deterministically(name.encode(), sname)).decode()
        v = _sealer(vk, aead.Aead).encrypt(ref.encode_typed(value, t), n.encode())
        pairs.append((n, base64.b64encode(v).decode()))
    Path(path).write_text(ref._string_elements_xml(pairs), encoding="utf-8")
    return pairs


def _lead(blob: bytes, key) -> bytes:
    return blob[:0] if key.output_prefix_type == tink_pb2.RAW else blob[:5]


def _want_lead(key) -> bytes:
    if key.output_prefix_type == tink_pb2.RAW:
        return b""
    return (b"\x01" if key.output_prefix_type == tink_pb2.TINK else b"\x00") + struct.pack(">I", key.key_id)


def _have_backend(name):
    """Whether this build has the C backend (the aarch64 stage leaves gcrypt out: Debian's
    libgcrypt20-dev cannot be installed for two architectures at once)."""
    return any(b["name"] == name and b["available"] for b in pcb.backends())


@pytest.mark.parametrize("faithful,backend", [(False, None), (True, None), (False, "gcrypt")])
def test_nonprimary_keys_of_every_prefix_type_read(tmp_path, master, faithful, backend):
    """Both keysets: a TINK primary plus ENABLED RAW, LEGACY and CRUNCHY keys; names and
    values sealed by tink under each. The store opens (it refused: 'output prefix type 3'),
    reads every entry, writes under the TINK primary, and tink reads what it wrote; a
    rotation re-encrypts them all under one new key."""
    if backend and not _have_backend(backend):
        pytest.skip(f"backend {backend} not compiled into this build")
    kf, key = master
    path = tmp_path / "prefixes.xml"
    esp = TinkEsp(key)
    order = ["TINK", "RAW", "LEGACY", "CRUNCHY"]
    siv_keys = [_key(SIV_T, p) for p in order]
    val_keys = [_key(GCM_T, p) for p in order]
    siv_ks, val_ks = _keyset(siv_keys), _keyset(val_keys)
    entries = [(n, t, v, siv_keys[i % 4], val_keys[(i // 4 + i) % 4]) for i, (n, t, v) in enumerate(TYPED)]
    assert {(e[3].output_prefix_type, e[4].output_prefix_type) for e in entries} >= {
        (PREFIX[a], PREFIX[a]) for a in order}
    pairs = _write_keyed(path, esp, siv_ks, val_ks, entries)
    for (n, v), e in zip(pairs[2:], entries):  # tink wrote each prefix as expected
        assert _lead(base64.b64decode(n), e[3]) == _want_lead(e[3])
        assert _lead(base64.b64decode(v), e[4]) == _want_lead(e[4])
    assert {base64.b64decode(v)[0] for _, v in pairs[2:]} >= {0, 1}
    # Lookups seal the name under the primary; faithful all() is ESP's getAll(), which
    # looks each decrypted name up again (names under other keys: no value, left out).
    by_primary = {n: v for n, t, v, sk, _ in entries if sk.key_id == siv_ks.primary_key_id}
    assert {e[4].output_prefix_type for e in entries if e[0] in by_primary} == set(PREFIX.values())
    bk = dict(crypto_backend=backend) if backend else {}  # names and values on libgcrypt
    with store.open(path, master_key_file=kf, faithful=faithful, **bk) as s:
        assert s.all() == (by_primary if faithful else expected(TYPED))
        for n, v in by_primary.items():
            assert s.get(n) == v
        s.edit().put_string("new", "entry").put_int("int", 7).commit()
        want = {**expected(TYPED), "new": "entry", "int": 7}
        assert s.all() == ({**by_primary, "new": "entry", "int": 7} if faithful else want)
    raw = dict(ref.raw_entries(path))
    siv = handle_of(siv_ks).primitive(daead.DeterministicAead)
    n_new = base64.b64encode(siv.encrypt_deterministically(b"new", b"prefixes")).decode()
    assert base64.b64decode(n_new)[:5] == b"\x01" + struct.pack(">I", siv_ks.primary_key_id)
    assert base64.b64decode(raw[n_new])[:5] == b"\x01" + struct.pack(">I", val_ks.primary_key_id)
    got = esp.read(path)  # tink reads the store's file: every key kept
    assert {n: v for n, (_, v) in got.items()} == want
    for h, ks in zip(esp.handles(path), (siv_ks, val_ks)):
        assert keyset_of(h) == ks, "the keysets are kept as they were"
    info = store.inspect(path)  # described without a key: every key and its prefix type
    assert [(k.key_id, k.output_prefix_type) for k in info.value_keyset.keys] == [
        (k.key_id, n) for k, n in zip(val_keys, order)]
    with store.open(path, master_key_file=kf) as s:
        s.rotate(lazy=True)  # a new TINK primary; the keys of every prefix kept, still read
        s.edit().put_string("lazy", "too").commit()
        want["lazy"] = "too"
        assert s.all() == want
    assert {n: v for n, (_, v) in esp.read(path).items()} == want
    assert [k.output_prefix_type for k in keyset_of(esp.handles(path)[1]).key] == [
        *(PREFIX[p] for p in order), tink_pb2.TINK]
    with store.open(path, master_key_file=kf) as s:
        assert s.all() == want
        s.rotate()
        assert s.all() == want
    assert {n: v for n, (_, v) in esp.read(path).items()} == want
    assert all(len(keyset_of(h).key) == 1 for h in esp.handles(path))


@pytest.mark.parametrize("with_raw", [False, True], ids=["no-raw-key", "raw-key-present"])
def test_disabled_keys_do_not_decrypt(tmp_path, master, with_raw):
    """Entries under DISABLED keys (of any prefix) read as the store reports an unreadable
    entry (DecryptionError naming it); the others read; remove() then clears them."""
    kf, key = master
    path = tmp_path / "disabled.xml"
    esp = TinkEsp(key)
    siv_p = _key(SIV_T)
    siv_off = _key(SIV_T, "LEGACY", tink_pb2.DISABLED)
    val_p = _key(GCM_T)
    off = [_key(GCM_T, p, tink_pb2.DISABLED) for p in ("TINK", "LEGACY", "RAW")]
    extra = [_key(GCM_T, "RAW")] if with_raw else []
    siv_ks, val_ks = _keyset([siv_p, siv_off]), _keyset([val_p, *off, *extra])
    entries = [("ok", STRING, "fine", siv_p, val_p),
               ("off tink", STRING, "x", siv_p, off[0]),
               ("off legacy", STRING, "x", siv_p, off[1]),
               ("off raw", STRING, "x", siv_p, off[2]),
               ("name off", STRING, "x", siv_off, val_p)]
    if with_raw:
        entries.append(("raw", INT, 5, siv_p, extra[0]))
    _write_keyed(path, esp, siv_ks, val_ks, entries)
    with store.open(path, master_key_file=kf) as s:
        assert s.get_string("ok") == "fine"
        if with_raw:
            assert s.get_int("raw") == 5
        for n in ("off tink", "off legacy", "off raw"):
            assert n in s
            with pytest.raises(pcb.DecryptionError, match="entry '.*'.*value"):
                s.get_string(n)
        assert "name off" not in s
        with pytest.raises(pcb.DecryptionError, match="remove_unreadable|value"):
            s.all()
        e = s.edit().remove_unreadable()
        for n in ("off tink", "off legacy", "off raw"):
            e.remove(n)
        e.commit()
        assert s.all() == {"ok": "fine", **({"raw": 5} if with_raw else {})}


@pytest.mark.parametrize("which", ["key", "value"])
@pytest.mark.parametrize("prefix", ["LEGACY", "RAW", "CRUNCHY"])
def test_primary_not_tink_refused_naming_it(tmp_path, master, which, prefix):
    """A keyset whose primary is not TINK (Tink allows it; ESP never makes it): refused at
    open naming the prefix type, since every entry the store writes carries TINK's prefix.
    The file is left as it was."""
    kf, key = master
    path = tmp_path / "primary.xml"
    esp = TinkEsp(key)
    siv = [_key(SIV_T, prefix if which == "key" else "TINK"), _key(SIV_T)]
    val = [_key(GCM_T, prefix if which == "value" else "TINK"), _key(GCM_T)]
    _write_keyed(path, esp, _keyset(siv), _keyset(val), [("a", STRING, "b", siv[0], val[0])])
    before = path.read_bytes()
    for info in (True, False):  # refused from keyset_info in the clear, and from the keyset
        esp.with_info = info
        _write_keyed(path, esp, _keyset(siv), _keyset(val), [("a", STRING, "b", siv[0], val[0])])
        with pytest.raises(store.StoreFormatError,
                           match=f"{which} keyset.*primary key {(siv if which == 'key' else val)[0].key_id} "
                                 f"has output prefix type {prefix}"):
            store.open(path, master_key_file=kf)
    esp.with_info = True
    # the same keys read once a TINK key is primary
    _write_keyed(path, esp, _keyset(siv, primary=1), _keyset(val, primary=1),
                 [("a", STRING, "b", siv[0], val[0])])
    before = path.read_bytes()
    with store.open(path, master_key_file=kf) as s:
        assert s.all() == {"a": "b"}
    assert path.read_bytes() == before


@pytest.mark.parametrize("venc", ["gcm", "chacha20-poly1305"])
@pytest.mark.parametrize("prefix", ["TINK", "LEGACY", "RAW"])
def test_nonprimary_key_of_the_other_aead_reads(tmp_path, master, venc, prefix):
    """A value keyset whose primary is the store's AEAD and a non-primary ENABLED key is the
    other AEAD this store knows (AesGcmKey in a ChaCha20-Poly1305 store and back), as Tink's
    AeadConfig decrypts: its entries read; new values go under the primary. The primary of
    the other type stays refused (test_gcm_keyset_refused_as_chacha_and_back)."""
    kf, key = master
    path = tmp_path / "mixed.xml"
    esp = TinkEsp(key)
    siv = _key(SIV_T)
    mine, theirs = (_key(GCM_T), _chacha_key(prefix)) if venc == "gcm" else (_chacha_key(), _key(GCM_T, prefix))
    _write_keyed(path, esp, _keyset([siv]), _keyset([mine, theirs]),
                 [("mine", STRING, "primary", siv, mine), ("theirs", INT, 3, siv, theirs)])
    for backend in (None, "gcrypt"):  # the other AEAD's key runs on OpenSSL either way
        if backend and not _have_backend(backend):
            continue  # (the aarch64 build has no gcrypt; OpenSSL's run still counts)
        opts = dict(master_key_file=kf, value_encryption=venc)
        if backend:
            opts["crypto_backend"] = backend
        with store.open(path, **opts) as s:
            assert s.all() == {"mine": "primary", "theirs": 3}
    with store.open(path, master_key_file=kf, value_encryption=venc, faithful=True) as s:
        assert s.get_int("theirs") == 3
        s.edit().put_int("new", 4).commit()
    raw = dict(ref.raw_entries(path))
    n_new = base64.b64encode(handle_of(_keyset([siv])).primitive(daead.DeterministicAead)
                             .encrypt_deterministically(b"new", b"mixed")).decode()
    assert base64.b64decode(raw[n_new])[:5] == b"\x01" + struct.pack(">I", mine.key_id)
    with store.open(path, master_key_file=kf, value_encryption=venc) as s:
        assert s.all() == {"mine": "primary", "theirs": 3, "new": 4}
    # a key of that other type in the key (AES-SIV) keyset is no name key: refused
    _write_keyed(path, esp, _keyset([siv]), _keyset([mine, theirs]), [])
    bad = tink_pb2.Keyset.FromString(_keyset([siv, _key(GCM_T)]).SerializeToString())
    path.write_text(ref._string_elements_xml(
        [(ref.KEY_KEYSET_NAME, esp.keyset_text(handle_of(bad))),
         (ref.VALUE_KEYSET_NAME, esp.keyset_text(handle_of(_keyset([mine]))))]), encoding="utf-8")
    with pytest.raises(store.StoreFormatError, match="key keyset.*AesGcmKey"):
        store.open(path, master_key_file=kf, value_encryption=venc)


def test_nonprimary_key_of_an_unknown_type_refused(tmp_path, master):
    """A non-primary XChaCha20Poly1305Key (an AEAD Tink knows, this store does not): refused
    at open naming its type, as Tink fails without that key type registered."""
    kf, key = master
    path = tmp_path / "xchacha.xml"
    esp = TinkEsp(key)
    siv, gcm = _key(SIV_T), _key(GCM_T)
    x = _key(aead.aead_key_templates.XCHACHA20_POLY1305, "RAW")
    _write_keyed(path, esp, _keyset([siv]), _keyset([gcm, x]), [("a", STRING, "b", siv, gcm)])
    with pytest.raises(store.StoreFormatError, match="XChaCha20Poly1305Key.*this store reads only"):
        store.open(path, master_key_file=kf)

#!/usr/bin/env python3
"""Benchmark peer for pycipherbench.store: EncryptedSharedPreferences in straightforward Python.

``PeerStore`` reads and writes the same file format as ``pycipherbench.store`` (ESP 1.1.0 +
Tink, keysets as Tink's EncryptedKeyset protobuf) and behaves like Android's
SharedPreferencesImpl + EncryptedSharedPreferences, written the way a reasonable Python
user would write it on the ``cryptography`` package:

* In memory: a dict of Base64 entry name -> Base64 value text, exactly what the XML holds
  (SharedPreferencesImpl keeps the parsed map; ESP stores only ciphertext strings in it).
* ``get_string(name, default)``: encrypt the name with AES-SIV (AD = [store name]), look it
  up, decrypt the value with AES-256-GCM (AD = the Base64 name text), decode the typed bytes.
* ``edit()`` collects puts/removes/clear; ``commit()`` applies clear first, then the changes
  (EditorImpl.commitToMemory order), encrypts, and writes the whole XML file: temp file,
  fsync, rename.  ``apply()`` does the same synchronously (Android's apply writes on a
  background thread; a synchronous write is the honest cost to compare with).
* The AEAD objects (AESSIV, AESGCM) are built once per store, not once per call.
* ``all()`` decrypts each name and value directly (ESP's getAll re-encrypts every decrypted
  name to look it up again; a Python user would not).

``PlainPeerStore`` is the unencrypted baseline: SharedPreferences' native XML elements,
typed values in memory.

The format code is deliberately a copy (not shared with tests/esp_reference.py, which must
stay independent of everything else).  Run ``python bench/esp_peer.py`` for a quick timing.
"""

from __future__ import annotations

import base64
import math
import os
import stat
import struct
import time
import xml.etree.ElementTree as ET

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, AESSIV


def _pb_varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out) + bytes([n])


def _pb_int(field: int, v: int) -> bytes:
    return _pb_varint(field << 3) + _pb_varint(v) if v else b""


def _pb_len(field: int, data: bytes) -> bytes:
    return _pb_varint(field << 3 | 2) + _pb_varint(len(data)) + data


def _pb_read(data: bytes) -> list:
    """[(field, int or bytes)] of a message with varint and length-delimited fields."""
    out, i = [], 0

    def varint():
        nonlocal i
        v = shift = 0
        while True:
            if i >= len(data) or shift > 63:
                raise ValueError("bad varint")
            v |= (data[i] & 0x7F) << shift
            i, shift = i + 1, shift + 7
            if not data[i - 1] & 0x80:
                return v

    while i < len(data):
        tag = varint()
        if tag & 7 == 0:
            out.append((tag >> 3, varint()))
        elif tag & 7 == 2:
            n = varint()
            if i + n > len(data):
                raise ValueError("length past the end")
            out.append((tag >> 3, data[i:i + n]))
            i += n
        else:
            raise ValueError("wire type")
    return out

__all__ = ["PeerStore", "PlainPeerStore", "PeerError", "PeerDecryptionError",
           "PeerFormatError", "PeerReservedNameError"]

KEY_KEYSET_NAME = "__androidx_security_crypto_encrypted_prefs_key_keyset__"
VALUE_KEYSET_NAME = "__androidx_security_crypto_encrypted_prefs_value_keyset__"
RESERVED = frozenset((KEY_KEYSET_NAME, VALUE_KEYSET_NAME))
XML_HEADER = "<?xml version='1.0' encoding='utf-8' standalone='yes' ?>\n"

STRING, STRING_SET, INT, LONG, FLOAT, BOOLEAN = range(6)
_REMOVE = object()

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


class PeerError(Exception):
    pass


class PeerDecryptionError(PeerError, ValueError):
    """A keyset, entry name or value failed authentication."""


class PeerFormatError(PeerError, ValueError):
    """The file is not a store file."""


class PeerReservedNameError(PeerError, ValueError):
    """The name is one of the keyset names."""


# ---------------------------------------------------------------------------
# Format helpers (a standalone copy; see the module docstring)
# ---------------------------------------------------------------------------

def _pack_typed(type_id: int, value) -> bytes:
    """ESP's value plaintext: BE int32 type id, then the payload."""
    if type_id == STRING:
        data = value.encode("utf-8")
        return struct.pack(">ii", STRING, len(data)) + data
    if type_id == STRING_SET:
        parts = [struct.pack(">i", STRING_SET)]
        for member in value:
            data = member.encode("utf-8")
            parts.append(struct.pack(">i", len(data)))
            parts.append(data)
        return b"".join(parts)
    if type_id == INT:
        return struct.pack(">ii", INT, value)
    if type_id == LONG:
        return struct.pack(">iq", LONG, value)
    if type_id == FLOAT:
        return struct.pack(">if", FLOAT, value)
    if type_id == BOOLEAN:
        return struct.pack(">i?", BOOLEAN, value)
    raise ValueError(f"unknown type id {type_id}")


def _unpack_typed(plain: bytes):
    """Inverse of _pack_typed -> (type id, value); raises ValueError on malformed input."""
    (type_id,) = struct.unpack_from(">i", plain, 0)
    if type_id == STRING:
        (n,) = struct.unpack_from(">i", plain, 4)
        if n < 0 or 8 + n != len(plain):
            raise ValueError("bad STRING length")
        return STRING, plain[8:].decode("utf-8")
    if type_id == STRING_SET:
        members = set()
        pos = 4
        while pos < len(plain):
            (n,) = struct.unpack_from(">i", plain, pos)
            pos += 4
            if n < 0 or pos + n > len(plain):
                raise ValueError("bad STRING_SET member length")
            members.add(plain[pos:pos + n].decode("utf-8"))
            pos += n
        return STRING_SET, members
    sizes = {INT: (">i", 4), LONG: (">q", 8), FLOAT: (">f", 4), BOOLEAN: (">?", 1)}
    if type_id not in sizes:
        raise ValueError(f"unknown type id {type_id}")
    fmt, size = sizes[type_id]
    if len(plain) != 4 + size:
        raise ValueError("bad payload size")
    return type_id, struct.unpack_from(fmt, plain, 4)[0]


_ESC = {'"': "&quot;", "&": "&amp;", "<": "&lt;", ">": "&gt;",
        "\t": "&#9;", "\n": "&#10;", "\r": "&#13;"}


def _escape(text: str) -> str:
    if not any(c in _ESC for c in text):
        return text
    return "".join(_ESC.get(c, c) for c in text)


def _java_float(x: float) -> str:
    """Float.toString notation (a float32 value): shortest round-trip digits."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    for digits in range(1, 10):
        s = f"{x:.{digits - 1}e}"
        try:
            if struct.unpack(">f", struct.pack(">f", float(s)))[0] == x:
                break
        except OverflowError:
            continue
    mant, exp = s.split("e")
    exp = int(exp)
    sign = "-" if mant.startswith("-") else ""
    ds = mant.lstrip("-").replace(".", "").rstrip("0") or "0"
    if 1e-3 <= abs(x) < 1e7:
        point = exp + 1
        if point <= 0:
            return f"{sign}0.{'0' * -point}{ds}"
        if point >= len(ds):
            return f"{sign}{ds}{'0' * (point - len(ds))}.0"
        return f"{sign}{ds[:point]}.{ds[point:]}"
    return f"{sign}{ds[0]}.{ds[1:] or '0'}E{exp}"


def _write_file(path: str, text: str) -> None:
    """Temp file + fsync + rename (+ fsync of the directory, as pycipherbench.store's commit
    does, so both pay for the same durability; SharedPreferencesImpl fsyncs the file only)."""
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        data = text.encode("utf-8")
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dfd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def _parse_xml(path: str) -> ET.Element:
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise PeerFormatError(f"{path}: not a preferences file ({exc})") from None
    if root.tag != "map":
        raise PeerFormatError(f"{path}: root element <{root.tag}>, expected <map>")
    return root


def _load_master_key_file(path: str) -> bytes:
    """32 raw bytes, created 0600 if absent; refused if group/others may read it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        mode = os.stat(path).st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise PermissionError(f"{path}: master key file is accessible by group/others "
                                  f"(mode {stat.S_IMODE(mode):04o}); run: chmod 600 {path}")
        with open(path, "rb") as fh:
            key = fh.read()
        if len(key) != 32:
            raise PeerFormatError(f"{path}: master key file must hold exactly 32 bytes")
        return key
    key = os.urandom(32)
    try:
        os.write(fd, key)
        os.fsync(fd)
    finally:
        os.close(fd)
    return key


# ---------------------------------------------------------------------------
# Editor (SharedPreferences.Editor)
# ---------------------------------------------------------------------------

class PeerEditor:
    def __init__(self, store: "_PeerBase"):
        self._store = store
        self._modified: dict = {}
        self._clear = False

    def _put(self, name, type_id, value):
        # As ESP's Editor.putX: the store prepares (for PeerStore: encrypts)
        # the entry now, and commit only applies and writes.
        self._store._check_name(name)
        self._modified[name] = self._store._prepare_put(name, type_id, value)
        return self

    def put_string(self, name: str, value: str):
        if not isinstance(value, str):
            raise TypeError("put_string needs a str value")
        return self._put(name, STRING, value)

    def put_string_set(self, name: str, values):
        if isinstance(values, (str, bytes)):
            raise TypeError("put_string_set needs an iterable of str, not a single string")
        members = set(values)
        if not all(isinstance(m, str) for m in members):
            raise TypeError("put_string_set members must be str")
        return self._put(name, STRING_SET, members)

    def put_int(self, name: str, value: int):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError("put_int needs an int")
        if not INT32_MIN <= value <= INT32_MAX:
            raise ValueError(f"put_int: {value} is out of the int32 range")
        return self._put(name, INT, value)

    def put_long(self, name: str, value: int):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError("put_long needs an int")
        if not INT64_MIN <= value <= INT64_MAX:
            raise ValueError(f"put_long: {value} is out of the int64 range")
        return self._put(name, LONG, value)

    def put_float(self, name: str, value: float):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise TypeError("put_float needs a float")
        try:
            value = struct.unpack(">f", struct.pack(">f", value))[0]
        except OverflowError:
            raise ValueError(f"put_float: {value} is out of the float32 range") from None
        return self._put(name, FLOAT, value)

    def put_bool(self, name: str, value: bool):
        if not isinstance(value, bool):
            raise TypeError("put_bool needs a bool")
        return self._put(name, BOOLEAN, value)

    def remove(self, name: str):
        self._store._check_name(name)
        self._modified[name] = (_REMOVE, self._store._prepare_remove(name))
        return self

    def clear(self):
        self._clear = True
        return self

    def commit(self) -> bool:
        modified, clear = self._modified, self._clear
        self._modified, self._clear = {}, False
        return self._store._commit(modified, clear)

    def apply(self) -> None:
        self.commit()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.commit()
        else:
            self._modified, self._clear = {}, False
        return False


# ---------------------------------------------------------------------------
# Stores
# ---------------------------------------------------------------------------

class _PeerBase:
    """The SharedPreferences read API on top of _get_typed / _entries_typed / _commit."""

    def __init__(self, path):
        self.path = os.fspath(path)
        base = os.path.basename(self.path)
        self.name = base[:-4] if base.endswith(".xml") else base

    @staticmethod
    def _check_name(name):
        if not isinstance(name, str):
            raise TypeError("preference names are str")
        if name in RESERVED:
            raise PeerReservedNameError(f"{name!r} is reserved for the encryption keysets")

    def _typed_get(self, name, type_id, default):
        self._check_name(name)
        got = self._get_typed(name)
        if got is None or (type_id is not None and got[0] != type_id):
            return default
        return got[1]

    def get_string(self, name, default=None):
        return self._typed_get(name, STRING, default)

    def get_int(self, name, default=None):
        return self._typed_get(name, INT, default)

    def get_long(self, name, default=None):
        return self._typed_get(name, LONG, default)

    def get_float(self, name, default=None):
        return self._typed_get(name, FLOAT, default)

    def get_bool(self, name, default=None):
        return self._typed_get(name, BOOLEAN, default)

    def get_string_set(self, name, default=None):
        # (ESP returns the default for an empty set too; the spec and SharedPreferences don't.)
        value = self._typed_get(name, STRING_SET, None)
        return default if value is None else set(value)

    def get(self, name, default=None):
        value = self._typed_get(name, None, default)
        return set(value) if isinstance(value, set) else value

    def all(self) -> dict:
        return {k: (set(v) if t == STRING_SET else v) for k, (t, v) in self._entries_typed()}

    def edit(self) -> PeerEditor:
        return PeerEditor(self)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class PeerStore(_PeerBase):
    """The encrypted store (ESP format).  Give ``master_key`` (32 bytes) or ``master_key_file``."""

    def __init__(self, path, master_key: bytes | None = None, *, master_key_file=None):
        super().__init__(path)
        if (master_key is None) == (master_key_file is None):
            raise TypeError("give exactly one of master_key and master_key_file")
        if master_key_file is not None:
            master_key = _load_master_key_file(os.fspath(master_key_file))
        if len(master_key) != 32:
            raise ValueError("master_key must be 32 bytes")
        master = AESGCM(master_key)
        self._ad = [self.name.encode("utf-8")]

        if os.path.exists(self.path):
            self._map = {}  # Base64 name -> Base64 value, keysets included
            for el in _parse_xml(self.path):
                name = el.get("name")
                if el.tag != "string" or name is None:
                    raise PeerFormatError(f"{self.path}: unexpected <{el.tag}> element")
                self._map[name] = el.text or ""
            try:
                siv_kid, siv_key = self._open_keyset(master, KEY_KEYSET_NAME, 64)
                gcm_kid, gcm_key = self._open_keyset(master, VALUE_KEYSET_NAME, 32)
            except KeyError as exc:
                raise PeerFormatError(f"{self.path}: no keyset {exc}") from None
        else:
            siv_kid, siv_key = int.from_bytes(os.urandom(4), "big") >> 1 or 1, os.urandom(64)
            gcm_kid, gcm_key = int.from_bytes(os.urandom(4), "big") >> 1 or 1, os.urandom(32)
            self._map = {
                KEY_KEYSET_NAME: self._seal_keyset(master, siv_kid, siv_key),
                VALUE_KEYSET_NAME: self._seal_keyset(master, gcm_kid, gcm_key),
            }
            _write_file(self.path, self._xml())

        # Built once per store.
        self._siv = AESSIV(siv_key)
        self._gcm = AESGCM(gcm_key)
        self._siv_prefix = b"\x01" + siv_kid.to_bytes(4, "big")
        self._gcm_prefix = b"\x01" + gcm_kid.to_bytes(4, "big")

    # -- keysets ---------------------------------------------------------------

    # Tink's EncryptedKeyset {encrypted_keyset = 2, keyset_info = 3}, hex-encoded, the
    # Keyset inside sealed with the master key as IV || GCM(Keyset, AD empty) || tag.
    _URLS = {64: "type.googleapis.com/google.crypto.tink.AesSivKey",
             32: "type.googleapis.com/google.crypto.tink.AesGcmKey"}

    @staticmethod
    def _seal_keyset(master: AESGCM, key_id: int, key: bytes) -> str:
        url = PeerStore._URLS[len(key)].encode()
        kv_field = 2 if len(key) == 64 else 3  # AesSivKey.key_value = 2, AesGcmKey's = 3
        key_data = _pb_len(1, url) + _pb_len(2, _pb_len(kv_field, key)) + _pb_int(3, 1)
        keyset = _pb_int(1, key_id) + _pb_len(2, _pb_len(1, key_data) + _pb_int(2, 1)
                                             + _pb_int(3, key_id) + _pb_int(4, 1))
        info = _pb_int(1, key_id) + _pb_len(2, _pb_len(1, url) + _pb_int(2, 1) + _pb_int(3, key_id)
                                            + _pb_int(4, 1))
        nonce = os.urandom(12)
        sealed = nonce + master.encrypt(nonce, keyset, b"")
        return (_pb_len(2, sealed) + _pb_len(3, info)).hex()

    def _open_keyset(self, master: AESGCM, alias: str, key_len: int):
        text = self._map[alias]
        try:
            fields = _pb_read(bytes.fromhex(text))
            blob = next(v for f, v in fields if f == 2)
        except (ValueError, StopIteration):
            raise PeerFormatError(f"{self.path}: {alias} is not a hex EncryptedKeyset") from None
        try:
            plain = master.decrypt(blob[:12], blob[12:], b"")
        except InvalidTag:
            raise PeerDecryptionError(
                f"{self.path}: {alias} does not decrypt: the master key does not match "
                "(or the keyset was tampered with)") from None
        try:
            ks = _pb_read(plain)
            primary = next((v for f, v in ks if f == 1), 0)
            for key in (dict(_pb_read(v)) for f, v in ks if f == 2):
                if key.get(3, 0) == primary:
                    key_data = dict(_pb_read(key[1]))
                    raw = dict(_pb_read(key_data[2]))[2 if key_len == 64 else 3]
                    if len(raw) == key_len:
                        return primary, raw
        except (ValueError, KeyError):
            pass
        raise PeerFormatError(f"{self.path}: {alias} holds no {key_len}-byte primary key")

    # -- names and values ------------------------------------------------------

    def _encrypt_name(self, name: str) -> str:
        ct = self._siv.encrypt(name.encode("utf-8"), self._ad)
        return base64.b64encode(self._siv_prefix + ct).decode("ascii")

    def _decrypt_name(self, text: str) -> str:
        raw = base64.b64decode(text)
        if raw[:5] != self._siv_prefix:
            raise PeerDecryptionError(f"{self.path}: entry {text!r}: unknown key id")
        try:
            return self._siv.decrypt(raw[5:], self._ad).decode("utf-8")
        except InvalidTag:
            raise PeerDecryptionError(f"{self.path}: entry {text!r}: name does not decrypt") from None

    def _encrypt_value(self, name_text: str, type_id: int, value) -> str:
        nonce = os.urandom(12)
        ct = self._gcm.encrypt(nonce, _pack_typed(type_id, value), name_text.encode("utf-8"))
        return base64.b64encode(self._gcm_prefix + nonce + ct).decode("ascii")

    def _decrypt_value(self, name_text: str, value_text: str):
        raw = base64.b64decode(value_text)
        if raw[:5] != self._gcm_prefix:
            raise PeerDecryptionError(f"{self.path}: entry {name_text!r}: unknown value key id")
        try:
            plain = self._gcm.decrypt(raw[5:17], raw[17:], name_text.encode("utf-8"))
        except InvalidTag:
            raise PeerDecryptionError(
                f"{self.path}: entry {name_text!r}: value does not decrypt") from None
        try:
            return _unpack_typed(plain)
        except (ValueError, struct.error) as exc:
            raise PeerFormatError(f"{self.path}: entry {name_text!r}: {exc}") from None

    # -- SharedPreferences -----------------------------------------------------

    def _get_typed(self, name):
        name_text = self._encrypt_name(name)
        value_text = self._map.get(name_text)
        if value_text is None:
            return None
        return self._decrypt_value(name_text, value_text)

    def _entries_typed(self):
        for name_text, value_text in self._map.items():
            if name_text not in RESERVED:
                yield self._decrypt_name(name_text), self._decrypt_value(name_text, value_text)

    def __contains__(self, name) -> bool:
        self._check_name(name)
        return self._encrypt_name(name) in self._map

    def __len__(self) -> int:
        return sum(1 for k in self._map if k not in RESERVED)

    def _prepare_put(self, name, type_id, value):
        name_text = self._encrypt_name(name)  # ESP encrypts at put time
        return name_text, self._encrypt_value(name_text, type_id, value)

    def _prepare_remove(self, name):
        return self._encrypt_name(name)  # ESP's remove() encrypts the key too

    def _commit(self, modified: dict, clear: bool) -> bool:
        if clear:
            for k in [k for k in self._map if k not in RESERVED]:
                del self._map[k]
        for first, second in modified.values():
            if first is _REMOVE:
                self._map.pop(second, None)
            else:
                self._map[first] = second
        _write_file(self.path, self._xml())
        return True

    def _xml(self) -> str:
        # Base64 and hex need no escaping.
        lines = [XML_HEADER, "<map>\n"]
        lines += [f'    <string name="{n}">{v}</string>\n' for n, v in self._map.items()]
        lines.append("</map>\n")
        return "".join(lines)


class PlainPeerStore(_PeerBase):
    """The unencrypted baseline: SharedPreferences' native elements, typed values in memory."""

    _TAGS = {"int": (INT, int), "long": (LONG, int),
             "float": (FLOAT, lambda v: struct.unpack(">f", struct.pack(">f", float(v)))[0]),
             "boolean": (BOOLEAN, lambda v: {"true": True, "false": False}[v])}

    def __init__(self, path):
        super().__init__(path)
        self._map: dict = {}  # name -> (type id, value)
        if not os.path.exists(self.path):
            _write_file(self.path, self._xml())
            return
        for el in _parse_xml(self.path):
            name = el.get("name")
            if name is None:
                raise PeerFormatError(f"{self.path}: <{el.tag}> without a name")
            try:
                if el.tag == "string":
                    self._map[name] = (STRING, el.text or "")
                elif el.tag == "set":
                    self._map[name] = (STRING_SET, {m.text or "" for m in el})
                else:
                    type_id, conv = self._TAGS[el.tag]
                    self._map[name] = (type_id, conv(el.get("value")))
            except (KeyError, TypeError, ValueError):
                raise PeerFormatError(f"{self.path}: bad <{el.tag}> element {name!r}") from None

    def _get_typed(self, name):
        return self._map.get(name)

    def _entries_typed(self):
        return self._map.items()

    def __contains__(self, name) -> bool:
        self._check_name(name)
        return name in self._map

    def __len__(self) -> int:
        return len(self._map)

    def _prepare_put(self, name, type_id, value):
        return type_id, value

    def _prepare_remove(self, name):
        return None

    def _commit(self, modified: dict, clear: bool) -> bool:
        if clear:
            self._map.clear()
        for name, change in modified.items():
            if change[0] is _REMOVE:
                self._map.pop(name, None)
            else:
                self._map[name] = change
        _write_file(self.path, self._xml())
        return True

    def _xml(self) -> str:
        if not self._map:
            return XML_HEADER + "<map />\n"
        lines = [XML_HEADER, "<map>\n"]
        for name, (t, v) in self._map.items():
            n = _escape(name)
            if t == STRING:
                lines.append(f'    <string name="{n}">{_escape(v)}</string>\n')
            elif t == STRING_SET:
                if not v:
                    lines.append(f'    <set name="{n}" />\n')
                    continue
                lines.append(f'    <set name="{n}">\n')
                lines += [f"        <string>{_escape(m)}</string>\n" for m in v]
                lines.append("    </set>\n")
            elif t == BOOLEAN:
                lines.append(f'    <boolean name="{n}" value="{"true" if v else "false"}" />\n')
            elif t == FLOAT:
                lines.append(f'    <float name="{n}" value="{_java_float(v)}" />\n')
            else:
                tag = "int" if t == INT else "long"
                lines.append(f'    <{tag} name="{n}" value="{v}" />\n')
        lines.append("</map>\n")
        return "".join(lines)


# ---------------------------------------------------------------------------
# A quick timing (not the benchmark itself: pycipherbench.store.bench drives that)
# ---------------------------------------------------------------------------

def _main(argv=None) -> int:
    import argparse
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=100)
    ap.add_argument("--gets", type=int, default=20000)
    ap.add_argument("--commits", type=int, default=50)
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as d:
        for label, make in [("encrypted", lambda p: PeerStore(p, os.urandom(32))),
                            ("plain", PlainPeerStore)]:
            s = make(os.path.join(d, f"peer_{label}.xml"))
            with s.edit() as e:
                for i in range(args.entries):
                    e.put_string(f"key{i}", f"value number {i}")
            t0 = time.perf_counter()
            for i in range(args.gets):
                s.get_string(f"key{i % args.entries}")
            t1 = time.perf_counter()
            for i in range(args.commits):
                s.edit().put_string(f"key{i % args.entries}", "changed").commit()
            t2 = time.perf_counter()
            print(f"{label:9s}  get_string: {(t1 - t0) / args.gets * 1e6:8.2f} us   "
                  f"put_string+commit ({args.entries} entries): "
                  f"{(t2 - t1) / args.commits * 1e3:8.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())

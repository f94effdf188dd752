"""Store engines and designs driven from Python (issue 19): what the start-up scenario and
the Python-call-level store workloads open, read and write.

Every engine here is used through its Python call, and timed there (by
:mod:`pycipherbench.designs`): that is the only level at which SQLCipher is reachable
from this package (the ``sqlcipher3`` binding), so ESP and plain SharedPreferences are
driven the same way (``store.open``) beside it: same level, same rounds.

- ``"esp"``: :func:`pycipherbench.store.open` (EncryptedSharedPreferences' format; the
  options of ``store.open`` pass through, e.g. ``cache=True``). ``encrypted=False`` is
  plain SharedPreferences, the baseline every ratio is taken to.
- ``"sqlcipher"``: the real SQLCipher 4 library (``pip install "pycipherbench[peers]"``,
  the ``sqlcipher3`` package, which bundles it): one table ``(name TEXT PRIMARY KEY,
  value BLOB)`` holding ESP's value encodings, SQLCipher's own defaults
  (PBKDF2-HMAC-SHA512 with 256,000 iterations from a passphrase, 4 KiB pages, an
  HMAC-SHA512 per page). The passphrase is 32 random bytes (hex) kept in a 0600 key file,
  as ESP's master key is: a cold open creates it. ``encrypted=False``: plain SQLite (the
  same library without a key: what Room without encryption costs).
- ``"mmkv"``: a MODEL of Tencent MMKV's design in C (``csrc/store/mmkv.c``, written from
  its public description, not MMKV's code): an mmap'ed file of appended protobuf-style
  records, a CRC-32 meta file, full write-back when full, AES-128-CFB over the content
  with a crypt key (16 random bytes in a 0600 key file) and NO authentication. Values
  are MMKV's string encoding (varint length + UTF-8). Writes land in the mapping: ``put``
  with ``durable=False`` returns at once (as MMKV does), ``flush``/``durable=True`` msync.
- ``"tiered"``: the article's remedy: a plain store for the non-sensitive names and an ESP
  store for the sensitive ones (the caller says which, see :class:`Tiered`); ``lazy=True``
  opens the ESP store on first use of a sensitive name.

Handles are not thread-safe (one caller at a time); each engine's own thread safety is
what its library gives. Values are str (the start-up scenario's) or, for a replayed
preferences file (:mod:`pycipherbench.replay`), any preference type: int, :class:`Long`,
float, bool, a set of str; ``get`` returns None for a missing name (the MMKV model, which
like MMKV keeps no type, decodes by the ``kind`` the caller names).
"""

from __future__ import annotations

import os
import secrets
import struct
from collections.abc import Collection, Iterable
from typing import Any, Protocol

from . import store

__all__ = ["ENGINES", "Handle", "Long", "MMKV_MODEL", "encode_mmkv_value", "decode_mmkv_value", "put_typed", "PEERS_HINT", "Tiered", "cipher_version",
           "decode_mmkv_string", "encode_mmkv_string", "engine_version", "encode_esp_value",
           "decode_esp_value", "disk_bytes", "open_engine"]

#: The engines :func:`open_engine` knows.
ENGINES = ("esp", "sqlcipher", "mmkv", "tiered")
#: What to run when the SQLCipher binding is missing.
PEERS_HINT = 'pip install "pycipherbench[peers]"'

_STRING, _STRING_SET, _INT, _LONG, _FLOAT, _BOOLEAN = range(6)


class Long(int):
    """An int stored as a Java long (``putLong``) even where it fits 32 bits."""

    __slots__ = ()


def put_typed(editor: Any, name: str, value: Any) -> None:
    """``editor.put_<type>(name, value)`` for a preference value of any type."""
    if isinstance(value, bool):
        editor.put_bool(name, value)
    elif isinstance(value, str):
        editor.put_string(name, value)
    elif isinstance(value, Long) or (isinstance(value, int) and not -2**31 <= value < 2**31):
        editor.put_long(name, value)
    elif isinstance(value, int):
        editor.put_int(name, value)
    elif isinstance(value, float):
        editor.put_float(name, value)
    elif isinstance(value, (set, frozenset, list, tuple)):
        editor.put_string_set(name, value)
    else:
        raise TypeError(f"a store value is str, int, float, bool or a set of str, "
                        f"not {type(value).__name__}")


def encode_esp_value(value: Any) -> bytes:
    """ESP's plaintext value encoding (EncryptedSharedPreferences.encryptKeyValuePair):
    a big-endian int type id, then the value (string: int length + UTF-8; string set:
    int length + UTF-8 per member; int, long, float big-endian; bool one byte)."""
    if isinstance(value, bool):
        return struct.pack(">iB", _BOOLEAN, int(value))
    if isinstance(value, str):
        b = value.encode()
        return struct.pack(">ii", _STRING, len(b)) + b
    if isinstance(value, int):
        if -2**31 <= value < 2**31 and not isinstance(value, Long):
            return struct.pack(">ii", _INT, value)
        return struct.pack(">iq", _LONG, value)
    if isinstance(value, float):
        return struct.pack(">if", _FLOAT, value)
    if isinstance(value, (set, frozenset)):
        out = [struct.pack(">i", _STRING_SET)]
        for s in sorted(value):
            b = s.encode()
            out.append(struct.pack(">i", len(b)) + b)
        return b"".join(out)
    raise TypeError(f"a store value is str, int, float, bool or a set of str, "
                    f"not {type(value).__name__}")


def decode_esp_value(data: bytes) -> Any:
    """The inverse of :func:`encode_esp_value` (ValueError on a malformed encoding)."""
    if len(data) < 4:
        raise ValueError(f"an ESP value encoding is at least 4 bytes, got {len(data)}")
    (kind,) = struct.unpack_from(">i", data)
    body = data[4:]
    try:
        if kind == _STRING:
            (n,) = struct.unpack_from(">i", body)
            if n != len(body) - 4:
                raise ValueError(f"string length {n} but {len(body) - 4} bytes follow")
            return body[4:].decode()
        if kind == _INT:
            return struct.unpack(">i", body)[0]
        if kind == _LONG:
            return struct.unpack(">q", body)[0]
        if kind == _FLOAT:
            return struct.unpack(">f", body)[0]
        if kind == _BOOLEAN:
            return struct.unpack(">B", body)[0] != 0
        if kind == _STRING_SET:
            out, i = set(), 0
            while i < len(body):
                (n,) = struct.unpack_from(">i", body, i)
                out.add(body[i + 4:i + 4 + n].decode())
                i += 4 + n
            return out
    except struct.error as e:
        raise ValueError(f"truncated ESP value encoding of type {kind}: {e}") from None
    raise ValueError(f"unknown ESP value type id {kind} (0..5 expected)")


class Handle(Protocol):
    """An open store of some engine, as the start-up scenario uses it."""

    def get(self, name: str, kind: str = "string") -> Any: ...
    def contains(self, name: str) -> bool: ...
    def put(self, items: dict[str, Any], *, durable: bool) -> None: ...
    def editor(self) -> Any: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...


def _sqlcipher() -> Any:
    try:
        import sqlcipher3  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        raise ImportError(f"engine='sqlcipher' needs the SQLCipher 4 binding (sqlcipher3): "
                          f"{PEERS_HINT}") from None
    return sqlcipher3


def cipher_version() -> str | None:
    """SQLCipher's ``PRAGMA cipher_version`` (e.g. '4.6.1 community'), None if absent."""
    try:
        lib = _sqlcipher()
    except ImportError:
        return None
    c = lib.connect(":memory:")
    try:
        row = c.execute("PRAGMA cipher_version").fetchone()
        return None if row is None else str(row[0])
    finally:
        c.close()


#: What an MMKV-model result records as its engine version (it is no MMKV release).
MMKV_MODEL = "MMKV design model (pycipherbench's C, not Tencent MMKV; AES-128-CFB, unauthenticated)"


def engine_version(engine: str) -> str | None:
    """What a result of ``engine`` records as its library: SQLCipher's cipher_version,
    the MMKV model's label, None for ESP (the package's own store)."""
    if engine == "sqlcipher":
        return cipher_version()
    if engine == "mmkv":
        return MMKV_MODEL
    return None


class _Esp:
    """``store.open`` of ``directory/prefs.xml`` (master key ``directory/master.key``)."""

    def __init__(self, directory: str, options: dict[str, Any], name: str = "prefs") -> None:
        kw = dict(options)
        if kw.get("encrypted", True):
            kw["master_key_file"] = os.path.join(directory, f"{name}.key")
        self.s = store.open(os.path.join(directory, f"{name}.xml"), **kw)

    def get(self, name: str, kind: str = "string") -> Any:
        return self.s.get(name)  # one C call whatever the type (get_as), as get_string

    def contains(self, name: str) -> bool:
        return name in self.s

    def put(self, items: dict[str, Any], *, durable: bool) -> None:
        e = self.s.edit()
        for k, v in items.items():
            put_typed(e, k, v)
        if durable:
            e.commit()
        else:
            e.apply()

    def editor(self) -> Any:
        """The store's Editor (put_string, commit, apply)."""
        return self.s.edit()

    def flush(self) -> None:
        self.s.flush()

    def close(self) -> None:
        self.s.close()


class _Sqlcipher:
    """SQLCipher 4 with its default settings (a passphrase key), or plain SQLite."""

    def __init__(self, directory: str, encrypted: bool = True) -> None:
        lib = _sqlcipher()
        path = os.path.join(directory, "prefs.db")
        self.c = lib.connect(path, isolation_level=None, check_same_thread=False)
        if encrypted:
            keyfile = os.path.join(directory, "prefs.db.key")
            try:
                with open(keyfile, "rb") as f:
                    passphrase = f.read().decode()
            except FileNotFoundError:  # first launch: the passphrase is created
                passphrase = secrets.token_hex(32)
                fd = os.open(keyfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(passphrase.encode())
                    f.flush()
                    os.fsync(f.fileno())
            self.c.execute(f"PRAGMA key = '{passphrase}'")  # hex text: a passphrase (KDF)
        # the first statement reads (or writes) page 1: the key derivation happens here
        self.c.execute("CREATE TABLE IF NOT EXISTS prefs (name TEXT PRIMARY KEY, value BLOB)")

    def get(self, name: str, kind: str = "string") -> Any:
        row = self.c.execute("SELECT value FROM prefs WHERE name = ?", (name,)).fetchone()
        return None if row is None else decode_esp_value(row[0])  # type: ignore[no-any-return]

    def contains(self, name: str) -> bool:
        return self.c.execute("SELECT 1 FROM prefs WHERE name = ?", (name,)).fetchone() is not None

    def put(self, items: dict[str, Any], *, durable: bool) -> None:
        # SQLite has no apply(): every transaction is durable when COMMIT returns
        self.c.execute("BEGIN")
        try:
            self.c.executemany("INSERT OR REPLACE INTO prefs (name, value) VALUES (?, ?)",
                               [(k, encode_esp_value(v)) for k, v in items.items()])
        except BaseException:
            self.c.execute("ROLLBACK")
            raise
        self.c.execute("COMMIT")

    def editor(self) -> _SqlEditor:
        """A transaction shaped like an Editor (BEGIN now; put_string; commit/apply COMMIT)."""
        return _SqlEditor(self.c)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.c.close()


class _SqlEditor:
    """One SQLite transaction with an Editor's calls. SQLite has no apply(): both
    commit and apply are a durable COMMIT."""

    __slots__ = ("c",)

    def __init__(self, c: Any) -> None:
        self.c = c
        c.execute("BEGIN")

    def put_string(self, name: str, value: str) -> _SqlEditor:
        self.c.execute("INSERT OR REPLACE INTO prefs (name, value) VALUES (?, ?)",
                       (name, encode_esp_value(value)))
        return self

    def commit(self) -> bool:
        self.c.execute("COMMIT")
        return True

    def apply(self) -> None:
        self.c.execute("COMMIT")


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encode_mmkv_string(value: str) -> bytes:
    """MMKV's encoding of a string value: a protobuf string (varint length + UTF-8)."""
    b = value.encode()
    return _varint(len(b)) + b


def encode_mmkv_value(value: Any) -> bytes:
    """MMKV's encoding of a value of any preference type (MiniPBCoder): a string as
    :func:`encode_mmkv_string`, bool one byte, int and :class:`Long` a varint (a negative
    one in ten bytes, as protobuf's int32/int64), float four little-endian bytes, a
    string set a length-delimited run of strings."""
    if isinstance(value, bool):
        return bytes([int(value)])
    if isinstance(value, str):
        return encode_mmkv_string(value)
    if isinstance(value, int):
        return _varint(value & (2**64 - 1) if value < 0 else value)
    if isinstance(value, float):
        return struct.pack("<f", value)
    if isinstance(value, (set, frozenset, list, tuple)):
        body = b"".join(encode_mmkv_string(m) for m in sorted(value))
        return _varint(len(body)) + body
    raise TypeError(f"a store value is str, int, float, bool or a set of str, "
                    f"not {type(value).__name__}")


def _read_varint(data: bytes, i: int, max_shift: int = 63,
                 what: str = "a malformed MMKV varint") -> tuple[int, int]:
    """The varint at data[i:]: (its value, the index after it); ValueError(what) if malformed."""
    n = shift = 0
    while True:
        if i >= len(data) or shift > max_shift:
            raise ValueError(what)
        b = data[i]
        n |= (b & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if not b & 0x80:
            return n, i


def decode_mmkv_value(data: bytes, kind: str) -> Any:
    """The inverse of :func:`encode_mmkv_value` for a value of type ``kind`` (MMKV keeps
    no type: the caller's getter names it)."""
    if kind == "string":
        return decode_mmkv_string(data)
    if kind == "bool":
        return data != b"\x00"
    if kind in ("int", "long"):
        n, _ = _read_varint(data, 0)
        bits = 32 if kind == "int" and n < 2**32 else 64
        return n - 2**bits if n >= 2**(bits - 1) else n
    if kind == "float":
        return struct.unpack("<f", data)[0]
    if kind == "string_set":
        _size, i = _read_varint(data, 0)
        out = set()
        while i < len(data):
            n, i = _read_varint(data, i)
            out.add(data[i:i + n].decode())
            i += n
        return out
    raise ValueError(f"kind must be a preference type, not {kind!r}")


def decode_mmkv_string(data: bytes) -> str:
    """The inverse of :func:`encode_mmkv_string` (ValueError if malformed)."""
    n, i = _read_varint(data, 0, 28, "a malformed MMKV string value (its varint length)")
    if n != len(data) - i:
        raise ValueError(f"an MMKV string value of length {n} holds {len(data) - i} bytes")
    return data[i:].decode()


class _Mmkv:
    """The MMKV design model (``_core.mmkv_*``), a crypt key kept in a 0600 file."""

    def __init__(self, directory: str, encrypted: bool = True) -> None:
        from . import _core

        self.core = _core
        key = None
        if encrypted:
            keyfile = os.path.join(directory, "mmkv.key")
            try:
                with open(keyfile, "rb") as f:
                    key = f.read()
            except FileNotFoundError:  # first launch: the crypt key is created
                key = secrets.token_bytes(16)
                fd = os.open(keyfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(key)
                    f.flush()
                    os.fsync(f.fileno())
        self.h = _core.mmkv_open(os.path.join(directory, "prefs.mmkv"), key)

    def get(self, name: str, kind: str = "string") -> Any:
        v = self.core.mmkv_get(self.h, name.encode())
        return None if v is None else decode_mmkv_value(v, kind)

    def contains(self, name: str) -> bool:
        return bool(self.core.mmkv_contains(self.h, name.encode()))

    def put(self, items: dict[str, Any], *, durable: bool) -> None:
        for k, v in items.items():
            self.core.mmkv_put(self.h, k.encode(), encode_mmkv_value(v))
        if durable:
            self.core.mmkv_sync(self.h)

    def editor(self) -> _MmkvEditor:
        return _MmkvEditor(self)

    def flush(self) -> None:
        self.core.mmkv_sync(self.h)

    def close(self) -> None:
        self.core.mmkv_close(self.h)


class _MmkvEditor:
    """MMKV has no editor: each put is an append at once; commit msyncs, apply does not."""

    __slots__ = ("m",)

    def __init__(self, m: _Mmkv) -> None:
        self.m = m

    def put_string(self, name: str, value: str) -> _MmkvEditor:
        self.m.core.mmkv_put(self.m.h, name.encode(), encode_mmkv_string(value))
        return self

    def commit(self) -> bool:
        self.m.flush()
        return True

    def apply(self) -> None:
        pass


class Tiered:
    """A plain store for the non-sensitive names, an ESP store for ``sensitive`` ones.

    ``lazy=True`` opens the ESP store on the first get/put/contains of a sensitive name
    (the article: create the encrypted store lazily), so a start-up path that reads no
    sensitive name never pays for it."""

    def __init__(self, directory: str, sensitive: Collection[str], *, lazy: bool = False,
                 options: dict[str, Any] | None = None) -> None:
        self.directory, self.sensitive = directory, sensitive
        self.options = dict(options or {})
        self.plain = _Esp(directory, {"encrypted": False}, name="plain_prefs")
        self.enc: _Esp | None = None
        if not lazy:
            self._encrypted()

    def _encrypted(self) -> _Esp:
        if self.enc is None:
            self.enc = _Esp(self.directory, self.options, name="secret_prefs")
        return self.enc

    def _for(self, name: str) -> _Esp:
        return self._encrypted() if name in self.sensitive else self.plain

    def get(self, name: str, kind: str = "string") -> Any:
        return self._for(name).get(name, kind)

    def contains(self, name: str) -> bool:
        return self._for(name).contains(name)

    def put(self, items: dict[str, Any], *, durable: bool) -> None:
        enc = {k: v for k, v in items.items() if k in self.sensitive}
        plain = {k: v for k, v in items.items() if k not in self.sensitive}
        if plain:
            self.plain.put(plain, durable=durable)
        if enc:
            self._encrypted().put(enc, durable=durable)

    def editor(self) -> Any:
        raise NotImplementedError("the tiered design has two editors (one per store): "
                                  "use put()")

    def flush(self) -> None:
        self.plain.flush()
        if self.enc is not None:
            self.enc.flush()

    def close(self) -> None:
        try:
            self.plain.close()
        finally:
            if self.enc is not None:
                self.enc.close()


def open_engine(engine: str, directory: str, *, encrypted: bool = True,
                sensitive: Collection[str] = (), lazy: bool = False,
                options: dict[str, Any] | None = None) -> Handle:
    """Open (creating on first use) ``engine``'s store in ``directory``.

    ``options``: ``store.open``'s options for ESP stores (``cache``, ``faithful``, ...).
    ``sensitive``/``lazy``: the tiered design's names held encrypted, and whether its
    encrypted store opens on first use."""
    if not isinstance(directory, str) or not os.path.isdir(directory):
        raise NotADirectoryError(f"directory={directory!r} is not an existing directory")
    opts = dict(options or {})
    if engine == "esp":
        return _Esp(directory, {"encrypted": encrypted, **opts})
    if engine == "sqlcipher":
        if opts:
            raise ValueError(f"engine='sqlcipher' takes no store.open options, got {sorted(opts)}")
        return _Sqlcipher(directory, encrypted)
    if engine == "mmkv":
        if opts:
            raise ValueError(f"engine='mmkv' takes no store.open options, got {sorted(opts)}")
        return _Mmkv(directory, encrypted)
    if engine == "tiered":
        if not encrypted:
            raise ValueError("engine='tiered' is a plain and an encrypted store: "
                             "encrypted=False is engine='esp', encrypted=False")
        return Tiered(directory, sensitive, lazy=lazy, options=opts)
    import difflib

    close = difflib.get_close_matches(str(engine), ENGINES, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"engine must be one of {list(ENGINES)}, not {engine!r}{hint}")


def disk_bytes(directory: str) -> int:
    """Bytes of every file in ``directory`` (a store's files, keys included)."""
    total = 0
    for entry in os.scandir(directory):
        if entry.is_file(follow_symlinks=False):
            total += entry.stat().st_size
    return total


def fill(handle: Handle, items: Iterable[tuple[str, Any]], batch: int = 10_000) -> None:
    """Write ``items`` durably, ``batch`` per transaction (building a store to read)."""
    chunk: dict[str, Any] = {}
    for k, v in items:
        chunk[k] = v
        if len(chunk) >= batch:
            handle.put(chunk, durable=True)
            chunk = {}
    if chunk:
        handle.put(chunk, durable=True)

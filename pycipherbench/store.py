"""An encrypted key-value store with EncryptedSharedPreferences' format and semantics.

The store is C (``csrc/pcb_store.c``): a real, persistent store whose file is
Android's SharedPreferences XML. Encrypted, each entry's name is AES-256-SIV
encrypted (deterministic, so it can be looked up) and its value AES-256-GCM
encrypted with the name as associated data; the two keysets live in the same
file, sealed under a master key (a 0600 key file standing in for the Android
Keystore, or scrypt from a passphrase). ``encrypted=False`` is the plain
SharedPreferences baseline with the same API. This module is the store's API;
timing it is :mod:`pycipherbench.store_bench`'s (``store.bench`` is that harness's
:func:`~pycipherbench.store_bench.bench`).

>>> from pycipherbench import store
>>> with store.open("secret_prefs.xml", master_key_file="master.key") as s:  # doctest: +SKIP
...     with s.edit() as e:
...         e.put_string("username", "alice").put_int("launches", 3)
...     s.get_string("username")
'alice'
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

from . import _core, _options
from ._core import ReservedNameError, StoreFormatError
from ._format import count

__all__ = [
    "Editor",
    "ReservedNameError",
    "Store",
    "StoreFormatError",
    "StoreInfo",
    "KeysetInfo",
    "KeyInfo",
    "inspect",
    "open",
]

#: The benchmark harness is :mod:`pycipherbench.store_bench` (this module is the store's
#: API alone, which the harness and :mod:`pycipherbench.engines` import); its public
#: names stay reachable here, as the same objects: ``store.bench(...)`` is the README's,
#: ``store.replay(...)`` :func:`pycipherbench.replay.replay` (which the harness re-exports).
_HARNESS = frozenset({"bench", "plan_bench", "StoreMeasurement", "StoreParams", "replay"})


def __getattr__(name: str) -> Any:
    if name in _HARNESS:
        from . import store_bench

        return getattr(store_bench, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_HARNESS})


# ESP's type ids (EncryptedSharedPreferences.EncryptedType).
STRING, STRING_SET, INT, LONG, FLOAT, BOOLEAN = range(6)

# The options' types: pycipherbench._options declares every store option once (name,
# type, default, doc, calls); the signatures below spell them out for mypy and IDEs,
# and tests/test_options.py checks that they say what the table says.
from ._options import KeyEncryption, Layout, PathLike, ValueEncryption

T = TypeVar("T")


class Editor:
    """A batch of changes, applied by :meth:`commit` or :meth:`apply`.

    As in ESP, each put encrypts at once; ``commit`` writes durably (temporary
    file, fsync, rename, directory fsync) before returning, ``apply`` updates
    memory and leaves the write to a background thread. Used as a context
    manager, it commits on normal exit and discards the changes on an exception.
    """

    __slots__ = ("_editor",)

    def __init__(self, editor: _core.Editor) -> None:
        self._editor = editor

    def put_string(self, name: str, value: str) -> Editor:
        self._editor.put_string(name, value)
        return self

    def put_int(self, name: str, value: int) -> Editor:
        """A 32-bit int (ValueError outside its range; use put_long)."""
        self._editor.put_int(name, value)
        return self

    def put_long(self, name: str, value: int) -> Editor:
        self._editor.put_long(name, value)
        return self

    def put_float(self, name: str, value: float) -> Editor:
        """Stored as a 32-bit float, as Java's putFloat does: rounded to the nearest one
        (3.4028235e38 is Float.MAX_VALUE; ValueError if it would round to infinity),
        infinities kept, any NaN stored as Java's Float.NaN."""
        self._editor.put_float(name, value)
        return self

    def put_bool(self, name: str, value: bool) -> Editor:
        self._editor.put_bool(name, value)
        return self

    def put_string_set(self, name: str, values: Iterable[str]) -> Editor:
        self._editor.put_string_set(name, values)
        return self

    def remove(self, name: str) -> Editor:
        self._editor.remove(name)
        return self

    def clear(self) -> Editor:
        """Remove every entry first, whatever this editor puts (Android's order)."""
        self._editor.clear()
        return self

    def remove_unreadable(self) -> Editor:
        """Remove every entry whose name does not decrypt, at commit (before the puts).

        A corrupted or tampered name (not valid Base64, another key id, a failed
        tag) is reachable by no plain name: :meth:`Store.all` raises naming it,
        and this removes it. An entry whose value is bad is removed by name.
        """
        self._editor.remove_unreadable()
        return self

    def commit(self) -> bool:
        """Apply and write durably; True on success. If the write fails it raises
        (OSError) and the store's memory is as before the commit: nothing of it is
        visible or written later."""
        return self._editor.commit()

    def apply(self) -> None:
        """Apply in memory now; the file is written in the background (see Store.flush).
        A failed background write keeps the changes pending: they are retried, and
        flush/close raise until they are written."""
        self._editor.apply()

    def __enter__(self) -> Editor:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.commit()


class Store:
    """An open store; see :func:`open`. Safe to share between threads."""

    __slots__ = ("_store", "options")

    def __init__(self, store: _core.Store, options: dict[str, Any]) -> None:
        self._store = store
        self.options = options

    # -- reads: the default on a missing entry or a type mismatch, as Android.
    # Each is one C call (get_as): a getter's cost is mostly the store's own.
    def get_string(self, name: str, default: T = None) -> str | T:  # type: ignore[assignment]
        return self._store.get_as(name, STRING, default)  # type: ignore[no-any-return]

    def get_int(self, name: str, default: T = None) -> int | T:  # type: ignore[assignment]
        return self._store.get_as(name, INT, default)  # type: ignore[no-any-return]

    def get_long(self, name: str, default: T = None) -> int | T:  # type: ignore[assignment]
        return self._store.get_as(name, LONG, default)  # type: ignore[no-any-return]

    def get_float(self, name: str, default: T = None) -> float | T:  # type: ignore[assignment]
        return self._store.get_as(name, FLOAT, default)  # type: ignore[no-any-return]

    def get_bool(self, name: str, default: T = None) -> bool | T:  # type: ignore[assignment]
        return self._store.get_as(name, BOOLEAN, default)  # type: ignore[no-any-return]

    def get_string_set(self, name: str, default: T = None) -> set[str] | T:  # type: ignore[assignment]
        return self._store.get_as(name, STRING_SET, default)  # type: ignore[no-any-return]

    def get(self, name: str, default: Any = None) -> Any:
        """The entry's value whatever its type (str, set, int, float, bool), or default."""
        return self._store.get_as(name, -1, default)

    def __contains__(self, name: str) -> bool:
        return name in self._store

    def __len__(self) -> int:
        return len(self._store)

    def all(self) -> dict[str, Any]:
        """Every entry, decrypted (ESP's getAll)."""
        return self._store.all()

    # -- writes
    def edit(self) -> Editor:
        return Editor(self._store.edit())

    def flush(self) -> None:
        """Wait until every apply()'d change is durable. If a background write failed,
        write once more here; raises (OSError) while the changes stay unwritten."""
        self._store.flush()

    def rotate(self, *, master_key_file: PathLike | None = None,
               passphrase: str | bytes | None = None, lazy: bool = False) -> None:
        """Re-encrypt everything under new keysets, and a new master key if given (atomic).

        ``lazy=True`` is Tink's key rotation instead: a new primary key is added to the
        value keyset (the keysets are rewritten at once), nothing is re-encrypted, new
        values are sealed under the new key and older ones keep opening under theirs (the
        file then holds a multi-key keyset, which Tink and ESP read). Only the value keyset
        rotates: ESP finds a name by its deterministic encryption under the key keyset's
        primary, and each value's associated data is its encrypted name, so a new names
        key means re-encrypting every entry (``lazy=False``). It cannot change the master
        key. A keyset keeps at most 32 keys.
        """
        if not isinstance(lazy, bool):
            raise TypeError(f"lazy must be a bool, not {type(lazy).__name__}")
        if lazy:
            if master_key_file is not None or passphrase is not None:
                raise ValueError("rotate(lazy=True) adds a value key under the same master key; "
                                 "a new master key needs rotate(lazy=False)")
            self._store.rotate(lazy=True)
            return
        self._store.rotate(master_key_file=master_key_file, passphrase=passphrase)

    def close(self) -> None:
        """Flush pending writes, wipe the keys, release the store. Idempotent. Raises if
        applied changes could not be written (the store is released anyway)."""
        self._store.close()

    # -- facts
    @property
    def path(self) -> str:
        """The path as given to open (str). The store does not use it again: see ``file``."""
        return self._store.path

    @property
    def file(self) -> str:
        """The file the store reads and writes, fixed at open: absolute, in its canonical
        directory, with final symbolic links followed (a link is kept by every write). A
        later ``os.chdir()`` or a relinked path changes nothing; the lock file is
        ``file + "-lock"`` and a passphrase store's parameters ``file + ".scrypt"``."""
        return self._store.file

    @property
    def name(self) -> str:
        """The store's name (the names' AES-SIV associated data, ESP's prefs file name):
        the base name of ``file`` without .xml, so a store reached through a link is named
        after the file the link points to."""
        return self._store.name

    @property
    def closed(self) -> bool:
        return self._store.closed

    @property
    def heap_bytes(self) -> int:
        """Bytes of heap the store holds (its own allocations)."""
        return self._store.heap_bytes

    @property
    def disk_bytes(self) -> int:
        """The store file's size in bytes."""
        return self._store.disk_bytes

    def __enter__(self) -> Store:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else count(len(self), "entry")
        kind = "encrypted" if self.options["encrypted"] else "plain"
        return f"<pycipherbench.store.Store {kind} {self.path!r}: {state}>"


@dataclass(frozen=True)
class KeyInfo:
    """One key of a keyset, from its plaintext ``keyset_info`` (Tink's ``KeysetInfo.KeyInfo``)."""

    key_id: int
    type_url: str          #: e.g. ``type.googleapis.com/google.crypto.tink.AesSivKey``
    status: str            #: ``ENABLED``, ``DISABLED``, ``DESTROYED``
    output_prefix_type: str  #: ``TINK`` for ESP's keys
    primary: bool


@dataclass(frozen=True)
class KeysetInfo:
    """A keyset entry of the file, described without decrypting it.

    ``format``: ``"tink"`` (an ``EncryptedKeyset`` with ``keyset_info``, as Java's Tink
    writes it on a device and as this store writes it), ``"tink-no-info"`` (an
    ``EncryptedKeyset`` without the optional ``keyset_info``, as tink-python's binary
    writer makes it: key ids only show in the entries' prefixes) or ``"pre-tink"`` (the
    keyset text of releases before Tink's format; opened and rewritten as Tink's on the
    next write). ``keys`` is empty unless ``format == "tink"``.
    """

    format: str
    chars: int
    primary_key_id: int | None
    keys: tuple[KeyInfo, ...]


@dataclass(frozen=True)
class StoreInfo:
    """What a store file holds (see :func:`inspect`).

    ``layout``: ``"entries"`` (ESP: keysets, then one encrypted ``<string>`` per entry),
    ``"file"`` (keysets and one sealed map, ``layout="file"``) or ``"plain"`` (no
    keysets: SharedPreferences). ``entries`` counts the elements other than the keysets
    and the sealed map. ``names_by_key_id`` / ``values_by_key_id``: how many entry names
    and values carry each key id in their Tink prefix ``0x01 || key id`` (the sealed map
    counts as one value); ``unprefixed_*``: texts that are not Base64 of a prefixed
    ciphertext (plain names with ``key_encryption="none"``, plain values with
    ``value_encryption="none"``); ``*_overflow``: prefixed texts beyond the first 64
    distinct key ids.
    """

    path: str
    layout: str
    file_bytes: int
    entries: int
    native_entries: int
    key_keyset: KeysetInfo | None
    value_keyset: KeysetInfo | None
    names_by_key_id: dict[int, int]
    values_by_key_id: dict[int, int]
    unprefixed_names: int
    unprefixed_values: int
    names_overflow: int
    values_overflow: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (key ids as decimal strings in the count maps)."""
        from dataclasses import asdict
        d = asdict(self)
        for k in ("names_by_key_id", "values_by_key_id"):
            d[k] = {str(kid): n for kid, n in d[k].items()}
        return d

    def describe(self) -> str:
        """A few lines of text (what ``pycipherbench store inspect`` prints)."""
        lines = [f"{self.path}: {self.file_bytes} bytes, layout {self.layout!r}, "
                 f"{count(self.entries, 'entry')}" + (f" ({self.native_entries} native elements)"
                                              if self.native_entries else "")]
        for what, ks, counts in (("key keyset (names)", self.key_keyset, self.names_by_key_id),
                                 ("value keyset (values)", self.value_keyset, self.values_by_key_id)):
            if ks is None:
                lines.append(f"  {what}: absent")
                continue
            lines.append(f"  {what}: {ks.format}, {ks.chars} hex digits"
                         + (f", primary {ks.primary_key_id}" if ks.primary_key_id is not None else ""))
            for k in ks.keys:
                lines.append(f"    key {k.key_id}{' (primary)' if k.primary else ''}: "
                             f"{k.type_url.rsplit('.', 1)[-1]} {k.status} {k.output_prefix_type}, "
                             f"{count(counts.get(k.key_id, 0), 'entry')}")
            known = {k.key_id for k in ks.keys}
            for kid, n in sorted(counts.items()):
                if kid not in known:
                    lines.append(f"    key id {kid} (not in keyset_info): {count(n, 'entry')}")
        if self.unprefixed_names or self.unprefixed_values:
            lines.append(f"  unprefixed: {self.unprefixed_names} names, "
                         f"{self.unprefixed_values} values")
        return "\n".join(lines)


def inspect(path: PathLike) -> StoreInfo:
    """What the store file at ``path`` holds, read without any key.

    Useful on files pulled from a device: the keysets' key ids, type URLs, status and
    primary (Tink's ``keyset_info`` is stored in the clear), how many entries each key id
    encrypted, and the file's layout. Nothing is decrypted or written.

    Raises:
        FileNotFoundError: no such file.
        StoreFormatError: not SharedPreferences XML, or a keyset that is not a Tink
            ``EncryptedKeyset``.
    """
    raw = _core.store_inspect(path)

    def keyset(d: dict[str, Any] | None) -> KeysetInfo | None:
        if d is None:
            return None
        return KeysetInfo(format=d["format"], chars=d["chars"], primary_key_id=d["primary_key_id"],
                          keys=tuple(KeyInfo(**k) for k in d["keys"]))

    return StoreInfo(path=os.fspath(path), layout=raw["layout"], file_bytes=raw["file_bytes"],
                     entries=raw["entries"], native_entries=raw["native_entries"],
                     key_keyset=keyset(raw["key_keyset"]), value_keyset=keyset(raw["value_keyset"]),
                     names_by_key_id=raw["names_by_key_id"], values_by_key_id=raw["values_by_key_id"],
                     unprefixed_names=raw["unprefixed_names"],
                     unprefixed_values=raw["unprefixed_values"],
                     names_overflow=raw["names_overflow"], values_overflow=raw["values_overflow"])


@_options.keywords("open")
def open(  # noqa: A001 - the module's verb, as in io.open
    path: PathLike,
    *,
    master_key_file: PathLike | None = None,
    passphrase: str | bytes | None = None,
    encrypted: bool = True,
    key_encryption: KeyEncryption = "siv",
    value_encryption: ValueEncryption = "gcm",
    cache: bool = False,
    layout: Layout = "entries",
    faithful: bool = False,
    scrypt_n: int = 0,
    lock_timeout: float = 10.0,
    crypto_backend: str = "auto",
) -> Store:
    """Open the store at ``path``, creating it (and its keys) on first use.

    Args:
        path: the XML file; its base name without ``.xml`` is the store's name.
        master_key_file: 32 raw bytes, created 0600 if absent (first launch:
            key generation); a file group or others can read, one owned by
            another user, a symbolic link, or the store's own file is refused.
        passphrase: instead of a key file, derive the master key with scrypt;
            salt and costs are kept in ``<path>.scrypt``, tagged under the
            derived key (``scrypt_n`` sets N for a new store, a power of two
            up to 2**20, default 2**15; a new store refuses an existing
            ``.scrypt`` it cannot authenticate or one weaker than asked).
        encrypted: False gives the plain SharedPreferences baseline.
        key_encryption: ``"siv"`` (ESP) or ``"none"`` (names in plain text).
        value_encryption: ``"gcm"`` (ESP), ``"chacha20-poly1305"`` or ``"none"``.
        cache: keep decrypted values so repeated gets skip the crypto.
        layout: ``"entries"`` (ESP: one encrypted entry per key) or ``"file"``
            (the whole map sealed with one AEAD per commit, like DataStore + Tink).
        faithful: repeat ESP's per-call work (fresh key schedules, S2V from
            scratch, per-nonce CSPRNG calls, getAll re-encrypting names). Same file format.
        lock_timeout: seconds a write (commit, apply's background write, rotate,
            a new store's first write) waits for another writer's lock on
            ``<path>-lock`` before it fails with :class:`TimeoutError`; 0 tries
            once, at most 86400 (a day). Ctrl-C ends the wait of a commit, flush,
            rotate or open at once (:class:`KeyboardInterrupt`, nothing written;
            an interrupted commit keeps its changes in the editor). Reads never
            wait. See the README's "What the store promises".
        crypto_backend: the library that seals and opens entries: ``"auto"``
            (default: pycipherbench's own AES-NI kernels, ``"floor"``, where
            the CPU has AES-NI and PCLMULQDQ and the options are lean with
            AES-GCM values or none; OpenSSL otherwise), ``"openssl"``, or
            another C library of :func:`~pycipherbench.backends` (``kind``
            ``"c"``) that has the value AEAD; names use its AES-SIV where it has the store's
            shape (the floor, libgcrypt), else OpenSSL's (a result's
            ``crypto`` says which ran). The file format does not change:
            a store written with one backend opens with any other. Keysets and
            the master key stay on OpenSSL; ``faithful=True``, plain stores
            and ``layout="file"`` take ``"openssl"`` only. A backend lacking
            what the options need is a :class:`ValueError` naming those that
            have it.
    """
    given = _options.values("open", locals())
    _options.check_bools("open", given)
    store = _core.Store(path, **given)
    # what the Store shows: the options a store workload takes too (no key material)
    return Store(store, _options.values("open", given, kernel=True))

"""An encrypted key-value store with EncryptedSharedPreferences' format and semantics.

The store is C (``csrc/pcb_store.c``): a real, persistent store whose file is
Android's SharedPreferences XML. Encrypted, each entry's name is AES-256-SIV
encrypted (deterministic, so it can be looked up) and its value AES-256-GCM
encrypted with the name as associated data; the two keysets live in the same
file, sealed under a master key (a 0600 key file standing in for the Android
Keystore, or scrypt from a passphrase). ``encrypted=False`` is the plain
SharedPreferences baseline with the same API.

>>> from pycipherbench import store
>>> with store.open("secret_prefs.xml", master_key_file="master.key") as s:  # doctest: +SKIP
...     with s.edit() as e:
...         e.put_string("username", "alice").put_int("launches", 3)
...     s.get_string("username")
'alice'
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from types import TracebackType
from typing import Any, Literal, TypeVar

import numpy as np

from . import _core
from ._core import ReservedNameError, StoreFormatError
from ._measure import Measurement

__all__ = [
    "Editor",
    "bench",
    "ReservedNameError",
    "Store",
    "StoreFormatError",
    "open",
]

# ESP's type ids (EncryptedSharedPreferences.EncryptedType).
STRING, STRING_SET, INT, LONG, FLOAT, BOOLEAN = range(6)

KeyEncryption = Literal["siv", "none"]
ValueEncryption = Literal["gcm", "chacha20-poly1305", "none"]
Layout = Literal["entries", "file"]
PathLike = str | os.PathLike[str]
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
        """Stored as a 32-bit float, as Java's putFloat does."""
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

    def commit(self) -> bool:
        """Apply and write durably; True on success (an OSError if the write fails)."""
        return self._editor.commit()

    def apply(self) -> None:
        """Apply in memory now; the file is written in the background (see Store.flush)."""
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
        """Wait until every apply()'d change is durable; raises the background write's error."""
        self._store.flush()

    def rotate(self, *, master_key_file: PathLike | None = None,
               passphrase: str | bytes | None = None) -> None:
        """Re-encrypt everything under new keysets, and a new master key if given (atomic)."""
        self._store.rotate(master_key_file=master_key_file, passphrase=passphrase)

    def close(self) -> None:
        """Flush pending writes, wipe the keys, release the store. Idempotent."""
        self._store.close()

    # -- facts
    @property
    def path(self) -> str:
        return self._store.path

    @property
    def name(self) -> str:
        """The store's name: the file's base name without .xml (the SIV associated data)."""
        base = os.path.basename(self.path)
        return base[:-4] if base.endswith(".xml") else base

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
        state = "closed" if self.closed else f"{len(self)} entries"
        kind = "encrypted" if self.options["encrypted"] else "plain"
        return f"<pycipherbench.store.Store {kind} {self.path!r}: {state}>"


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
) -> Store:
    """Open the store at ``path``, creating it (and its keys) on first use.

    Args:
        path: the XML file; its base name without ``.xml`` is the store's name.
        master_key_file: 32 raw bytes, created 0600 if absent (first launch:
            key generation); a file group or others can read is refused.
        passphrase: instead of a key file, derive the master key with scrypt;
            salt and costs are kept in ``<path>.scrypt`` (``scrypt_n`` sets N
            for a new store, default 2**15).
        encrypted: False gives the plain SharedPreferences baseline.
        key_encryption: ``"siv"`` (ESP) or ``"none"`` (names in plain text).
        value_encryption: ``"gcm"`` (ESP), ``"chacha20-poly1305"`` or ``"none"``.
        cache: keep decrypted values so repeated gets skip the crypto.
        layout: ``"entries"`` (ESP: one encrypted entry per key) or ``"file"``
            (the whole map sealed with one AEAD per commit, like DataStore + Tink).
        faithful: repeat ESP's per-call work (fresh key schedules, S2V from
            scratch, per-nonce CSPRNG calls, getAll re-encrypting names). Same file format.
    """
    for flag, value in (("encrypted", encrypted), ("cache", cache), ("faithful", faithful)):
        if not isinstance(value, bool):
            raise TypeError(f"{flag} must be a bool, not {type(value).__name__}")
    options: dict[str, Any] = dict(encrypted=encrypted, key_encryption=key_encryption,
                   value_encryption=value_encryption, cache=cache, layout=layout,
                   faithful=faithful)
    store = _core.Store(path, master_key_file=master_key_file, passphrase=passphrase,
                        scrypt_n=scrypt_n, **options)
    return Store(store, options)


Workload = Literal["put", "get", "get_missing", "contains", "all", "commit", "apply",
                   "open_cold", "open_warm", "rotate"]
ValueType = Literal["string", "string_set", "int", "long", "float", "bool"]


def bench(
    workload: Workload,
    *,
    n_keys: int = 1000,
    key_len: int = 32,
    value_len: int = 32,
    value_type: ValueType = "string",
    batch: int = 1,
    encrypted: bool = True,
    key_encryption: KeyEncryption = "siv",
    value_encryption: ValueEncryption = "gcm",
    cache: bool = False,
    layout: Layout = "entries",
    faithful: bool = False,
    passphrase: bool = False,
    hw_aes: bool = True,
    min_time: float = 0.05,
    repeats: int = 7,
    warmup: float | None = None,
    stages: bool = True,
    directory: PathLike | None = None,
) -> Measurement:
    """Time one store workload in C, on a store of ``n_keys`` entries.

    Workloads: ``put`` (one editor put: the encryption ESP does at put time),
    ``get`` (a hit), ``get_missing``, ``contains``, ``all``, ``commit`` (``batch``
    puts + a durable commit), ``apply`` (``batch`` puts + apply: ``samples``
    is the time the caller is blocked, ``extra["durable_ns"]`` the time until
    the background write has landed), ``open_cold`` (no master key yet: key
    generation and keyset creation), ``open_warm`` (open and load every
    entry), ``rotate`` (re-encrypt everything). Keys and string values are
    random ``[A-Za-z0-9]`` text of ``key_len``/``value_len`` characters, read in
    a random order. ``ns_per_op`` is per operation; ``extra`` holds the
    parameters, the stage breakdown of put/get (ns per operation in SIV,
    nonce, AEAD, Base64, lookup, I/O, measured in a separate instrumented
    run) and the footprint (heap and disk bytes, per entry).

    ``directory`` is where the store's files go (default: a new temporary
    directory, removed afterwards); fsync costs depend on its filesystem.
    ``hw_aes=False`` runs in a child process with AES-NI/PCLMULQDQ hidden.
    """
    params: dict[str, Any] = dict(
        n_keys=n_keys, key_len=key_len, value_len=value_len, value_type=value_type, batch=batch,
        encrypted=encrypted, key_encryption=key_encryption, value_encryption=value_encryption,
        cache=cache, layout=layout, faithful=faithful, passphrase=passphrase, stages=stages,
        min_time=min_time, repeats=repeats, warmup=-1.0 if warmup is None else warmup,
    )
    for flag, value in (("encrypted", encrypted), ("cache", cache), ("faithful", faithful),
                        ("passphrase", passphrase), ("stages", stages), ("hw_aes", hw_aes)):
        if not isinstance(value, bool):
            raise TypeError(f"{flag} must be a bool, not {type(value).__name__}")
    _core.store_bench(workload, **params, check_only=True)  # fail fast on bad input
    if directory is not None and not os.path.isdir(directory):
        raise NotADirectoryError(f"directory={os.fspath(directory)!r} is not an existing directory")
    with tempfile.TemporaryDirectory(prefix="pcb-store-", dir=directory) as tmp:
        call = dict(params, directory=tmp)
        if hw_aes:
            raw = _core.store_bench(workload, **call)
            mask = None
        else:
            from ._hwaes import run_masked

            (raw,), mask = run_masked([("store_bench", {"workload": workload, **call})])
    assert raw is not None
    return _store_measurement(raw, params, hw_aes, mask)


def _store_measurement(raw: dict[str, Any], params: dict[str, Any], hw_aes: bool,
                       mask: str | None) -> Measurement:
    iterations = int(raw["iterations"])
    entries = max(1, int(raw["entries"]))
    extra = {
        "params": {k: v for k, v in params.items() if k not in ("min_time", "repeats", "warmup")},
        "stages": raw["stages"],
        "heap_bytes": raw["heap_bytes"],
        "disk_bytes": raw["disk_bytes"],
        "entries": raw["entries"],
        "heap_bytes_per_entry": raw["heap_bytes"] / entries,
        "disk_bytes_per_entry": raw["disk_bytes"] / entries,
    }
    if raw["durable_ns"] is not None:
        extra["durable_samples"] = (np.asarray(raw["durable_ns"], dtype=np.float64) / iterations).tolist()
        extra["durable_median"] = float(np.median(extra["durable_samples"]))
    ticks = raw["tsc_ticks"]
    return Measurement(
        transformation=f"store/{raw['workload']}", op=raw["workload"], payload=int(raw["payload"]),
        scope="store", key_bits=256 if params["encrypted"] else 0, rounds=None, iv_len=None,
        hw_aes=hw_aes, min_time=float(raw["min_time"]), repeats=int(raw["repeats"]),
        iterations=iterations, samples=np.asarray(raw["elapsed_ns"], dtype=np.float64) / iterations,
        tsc_samples=None if ticks is None else np.asarray(ticks, dtype=np.float64) / iterations,
        hw_mask=mask, extra=extra,
    )

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

import functools
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar, Literal, TypedDict, TypeVar, cast

import numpy as np

from . import _core
from ._core import ReservedNameError, StoreFormatError
from ._format import format_ns
from ._record import Record, TableColumn
from ._rounds import (DEFAULT_ROUNDS, Plan, PointData, RunInfo, StorePoint, Workers,
                      record_fields, run_one)

__all__ = [
    "Editor",
    "bench",
    "ReservedNameError",
    "Store",
    "StoreFormatError",
    "StoreMeasurement",
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
               passphrase: str | bytes | None = None) -> None:
        """Re-encrypt everything under new keysets, and a new master key if given (atomic)."""
        self._store.rotate(master_key_file=master_key_file, passphrase=passphrase)

    def close(self) -> None:
        """Flush pending writes, wipe the keys, release the store. Idempotent. Raises if
        applied changes could not be written (the store is released anyway)."""
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


class StoreParams(TypedDict):
    """The parameters a store workload ran with (as passed to :func:`bench`)."""

    n_keys: int
    key_len: int
    value_len: int
    value_type: str
    batch: int
    encrypted: bool
    key_encryption: str
    value_encryption: str
    cache: bool
    layout: str
    faithful: bool
    passphrase: bool
    stages: bool


@dataclass(frozen=True, repr=False, eq=False, kw_only=True)
class StoreMeasurement(Record):
    """One timed store workload (what :func:`bench` returns).

    Besides the samples (ns per operation; ``payload`` is the value bytes an
    operation handles, 0 for ``get_missing``/``contains``/``open_cold``):
    ``workload`` and its ``params``; ``stages``, ns per operation in each
    stage of put/get (SIV, nonce, AEAD, Base64, lookup, I/O and the total,
    from a separate instrumented run; None for other workloads or with
    ``stages=False``); the footprint (``heap_bytes``, ``disk_bytes`` of a
    store of ``entries`` entries); and for ``apply`` ``durable_samples``, ns
    per operation until the background write landed.
    """

    workload: str
    params: StoreParams
    stages: dict[str, float] | None
    heap_bytes: int
    disk_bytes: int
    entries: int
    durable_samples: np.ndarray | None = None

    METRICS: ClassVar[tuple[str, ...]] = (
        *Record.METRICS, "durable_median", "heap_bytes_per_entry", "disk_bytes_per_entry")
    _ARRAYS: ClassVar[tuple[str, ...]] = (*Record._ARRAYS, "durable_samples")

    @property
    def heap_bytes_per_entry(self) -> float:
        return self.heap_bytes / max(1, self.entries)

    @property
    def disk_bytes_per_entry(self) -> float:
        return self.disk_bytes / max(1, self.entries)

    @property
    def durable_median(self) -> float | None:
        """Median ns per operation until durable (``apply`` only; None otherwise)."""
        return None if self.durable_samples is None else float(np.median(self.durable_samples))

    @property
    def extra(self) -> dict[str, Any]:
        """The results as one dict, as pycipherbench 0.1 kept them in ``Measurement.extra``
        (a fresh copy each time: kept for code written against it)."""
        out: dict[str, Any] = {
            "params": dict(self.params), "stages": self.stages, "heap_bytes": self.heap_bytes,
            "disk_bytes": self.disk_bytes, "entries": self.entries,
            "heap_bytes_per_entry": self.heap_bytes_per_entry,
            "disk_bytes_per_entry": self.disk_bytes_per_entry,
        }
        if self.durable_samples is not None:
            out["durable_samples"] = self.durable_samples.tolist()
            out["durable_median"] = self.durable_median
        return out

    def metrics(self) -> dict[str, float | int]:
        durable = self.durable_median
        return {**super().metrics(), "durable_median": math.nan if durable is None else durable,
                "heap_bytes_per_entry": self.heap_bytes_per_entry,
                "disk_bytes_per_entry": self.disk_bytes_per_entry}

    @classmethod
    def table_columns(cls, records: Sequence[Record]) -> list[TableColumn]:
        """A ``durable`` column (time until durable) when some point is an ``apply``."""
        if not any(isinstance(m, StoreMeasurement) and m.durable_samples is not None for m in records):
            return []
        return [("durable", lambda m: "-" if m.durable_median is None else format_ns(m.durable_median))]

    def to_dict(self) -> dict[str, Any]:
        """Parameters, statistics, raw samples and the store's results as JSON-serializable values."""
        return {
            "workload": self.workload, "params": dict(self.params), **super().to_dict(),
            "stages": self.stages, "heap_bytes": self.heap_bytes, "disk_bytes": self.disk_bytes,
            "entries": self.entries, "heap_bytes_per_entry": self.heap_bytes_per_entry,
            "disk_bytes_per_entry": self.disk_bytes_per_entry, "durable_median": self.durable_median,
        }

    def _label(self) -> str:
        kind = "encrypted" if self.params["encrypted"] else "plain"
        hw = "" if self.hw_aes else ", hw AES off"
        return f"{self.workload} ({kind} store, {self.params['n_keys']} entries{hw})"

    @classmethod
    def _from_rounds(cls, data: PointData, run: RunInfo, *, params: StoreParams, min_time: float,
                     repeats: int, hw_aes: bool, hw_mask: str | None) -> StoreMeasurement:
        info = data.info
        durable = None
        if info["workload"] == "apply":
            durable = np.asarray(data.extra.get("durable_ns", []), dtype=np.float64)
        return cls(
            workload=info["workload"], params=params, payload=int(info["payload"]), hw_aes=hw_aes,
            hw_mask=hw_mask, min_time=min_time, stages=info.get("stages"),
            heap_bytes=int(info["heap_bytes"]), disk_bytes=int(info["disk_bytes"]),
            entries=int(info["entries"]), durable_samples=durable,
            **record_fields(data, run, repeats=repeats),
        )


Workload = Literal["put", "get", "get_missing", "contains", "all", "commit", "apply",
                   "open_cold", "open_warm", "rotate"]
ValueType = Literal["string", "string_set", "int", "long", "float", "bool"]


def plan_bench(
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
    repeats: int = DEFAULT_ROUNDS,
    warmup: float | None = None,
    stages: bool = True,
    directory: PathLike | None = None,
    workers: Workers | None = None,
) -> Plan:
    """A store workload point, checked, ready for :func:`~._rounds.run_plans` (what
    :func:`bench` and :func:`~pycipherbench.sweep` run)."""
    params: dict[str, Any] = dict(
        n_keys=n_keys, key_len=key_len, value_len=value_len, value_type=value_type, batch=batch,
        encrypted=encrypted, key_encryption=key_encryption, value_encryption=value_encryption,
        cache=cache, layout=layout, faithful=faithful, passphrase=passphrase,
    )
    for flag, value in (("encrypted", encrypted), ("cache", cache), ("faithful", faithful),
                        ("passphrase", passphrase), ("stages", stages), ("hw_aes", hw_aes)):
        if not isinstance(value, bool):
            raise TypeError(f"{flag} must be a bool, not {type(value).__name__}")
    _core.check_store_bench(workload, **params)  # fail fast on bad input
    warm = -1.0 if warmup is None else warmup
    _core.check_timing(min_time, repeats, warm)
    if directory is not None and not os.path.isdir(directory):
        raise NotADirectoryError(f"directory={os.fspath(directory)!r} is not an existing directory")
    if workers is None and not hw_aes:
        raise ValueError("hw_aes=False needs the run's workers (the masked child process)")
    factory, mask = (workers or Workers()).factory("StoreKernel", hw_aes)
    where = None if directory is None else os.fspath(directory)
    point = StorePoint(factory, workload, params, min_time, warm, stages, where)
    workload_params = cast(StoreParams, dict(params, stages=stages))
    build = functools.partial(StoreMeasurement._from_rounds, params=workload_params,
                              min_time=min_time, repeats=repeats, hw_aes=hw_aes, hw_mask=mask)
    return Plan(point, build)


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
    repeats: int = DEFAULT_ROUNDS,
    warmup: float | None = None,
    stages: bool = True,
    directory: PathLike | None = None,
    progress: bool = False,
) -> StoreMeasurement:
    """Time one store workload in C, on a store of ``n_keys`` entries.

    Workloads: ``put`` (one editor put: the encryption ESP does at put time),
    ``get`` (a hit), ``get_missing``, ``contains``, ``all``, ``commit`` (``batch``
    puts + a durable commit), ``apply`` (``batch`` puts + apply: ``samples``
    is the time the caller is blocked, ``durable_samples`` the time until
    the background write has landed), ``open_cold`` (no master key yet: key
    generation and keyset creation), ``open_warm`` (open and load every
    entry), ``rotate`` (re-encrypt everything). Keys and string values are
    random ``[A-Za-z0-9]`` text of ``key_len``/``value_len`` characters, read in
    a random order. ``ns_per_op`` is per operation; the
    :class:`StoreMeasurement` also holds the parameters, the stage breakdown
    of put/get (ns per operation in SIV, nonce, AEAD, Base64, lookup, I/O,
    measured in a separate instrumented run) and the footprint (heap and disk
    bytes, per entry).

    Rounds: each of the ``repeats`` rounds builds a new instance (new random
    names, a new store), warms it up and calibrates it, and takes one sample,
    so the interval (``ci``) covers instance-to-instance variation as well as
    the machine's. Compare workloads or options with :func:`~pycipherbench.sweep`
    and :meth:`~pycipherbench.Results.ratio`, which pair their rounds.

    ``directory`` is where the store's files go (default: a new temporary
    directory, removed afterwards); fsync costs depend on its filesystem.
    ``hw_aes=False`` runs in a child process with AES-NI/PCLMULQDQ hidden.
    Ctrl-C stops it within about ``min_time`` plus one store build.
    """
    with Workers() as workers:
        p = plan_bench(workload, n_keys=n_keys, key_len=key_len, value_len=value_len,
                       value_type=value_type, batch=batch, encrypted=encrypted,
                       key_encryption=key_encryption, value_encryption=value_encryption,
                       cache=cache, layout=layout, faithful=faithful, passphrase=passphrase,
                       hw_aes=hw_aes, min_time=min_time, repeats=repeats, warmup=warmup,
                       stages=stages, directory=directory, workers=workers)
        m: StoreMeasurement = run_one(p, repeats, progress=progress, desc="store.bench")
    return m

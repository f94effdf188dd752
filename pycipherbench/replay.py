"""An app's own preferences file replayed through every store design (issue 29).

The Android article's question ("which storage design fits my start-up budget?") asked
of the user's own data: :func:`read_prefs` reads a ``shared_prefs/*.xml`` pulled from a
device (``adb shell run-as PKG cat shared_prefs/config.xml``) with the store's own XML
parser (``_core.prefs_parse``: a bad file is refused naming its line), and
:func:`replay` builds every design of :mod:`pycipherbench.designs` with the same
entries (same count, types and value sizes; values random of the same type and UTF-8
length unless ``keep_values``; names kept or replaced by random ones of the same length
with ``anonymize``) and times, per design, in the same shuffled rounds:

- ``first_launch``: the first launch after the update: the plain SharedPreferences file
  is there, the design's store is not. The article's ``migrateIfNeeded``: open the plain
  file, read all, create the store (its keys), write all with one durable commit, remove
  the plain file (tiered designs move only the sensitive entries and keep the plain file
  for the rest; plain SharedPreferences migrates nothing); then the start-up reads.
- ``cold_start``: a later launch: open the existing store + the start-up reads.
- ``warm_start``: the reads on a store already open (the process alive).
- ``apply``: one typical write (the entry of median size rewritten) + ``apply()``:
  blocked time, and the time until durable.

Timed at the Python call, like :mod:`pycipherbench.designs` (see its ``LEVEL_NOTE``):
every design and phase is one point of one run, so ratios to plain SharedPreferences
pair round by round. The footprint per design: bytes on disk after the cold start's
reads, and the store's heap bytes where the engine reports them (ESP's).

An ESP file (its keysets present) opens with its ``master_key_file``; without one, only
its sizes are known: each sealed name gives the name's length (5 + 16 bytes of Tink
prefix and SIV), each sealed value its serialization's (5 + 12 + 16 bytes of prefix,
nonce and tag), the type guessed from that size (5 bytes: a boolean; 8: an int or a
float, taken as an int; 12: a long; 4: an empty string set; else a string of that
length); names are then anonymized.
"""

from __future__ import annotations

import base64
import difflib
import functools
import math
import os
import pathlib
import random
import re
import shutil
import struct
import tempfile
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import _core, engines, store
from ._rounds import (DEFAULT_ROUNDS, Plan, PointData, RunInfo, Workers, resolve_processes,
                      run_plans)
from .designs import DESIGNS, DesignMeasurement, build_record, check_design_names
from .engine_bench import ScratchPoint, nivcsw

__all__ = ["DEFAULT_SENSITIVE", "PHASES", "SAMPLE_PREFS", "Prefs", "ReplayResult", "Workload", "build_stores",
           "make_workload", "migrate", "parse_reads", "read_prefs", "replay"]

#: The phases timed per design, in the order the report lists them.
PHASES = ("first_launch", "cold_start", "warm_start", "apply")
#: Names held encrypted by the tiered designs unless ``sensitive=`` says otherwise.
#: A sample app's preferences file, installed with the package (96 entries of every type,
#: three JSON values of 1.4-3 KB): what the notebook and ``bench/bench_designs.py`` replay.
SAMPLE_PREFS = pathlib.Path(__file__).resolve().parent / "data" / "sample_app_prefs.xml"
DEFAULT_SENSITIVE = r"(?i)(token|secret|passw|pin\b|auth|session|cookie|credential|private|email|phone)"

_ESP_KEYSETS = ("__androidx_security_crypto_encrypted_prefs_key_keyset__",
                "__androidx_security_crypto_encrypted_prefs_value_keyset__")
_NAME_OVERHEAD = 5 + 16       # Tink prefix + AES-SIV tag
_VALUE_OVERHEAD = 5 + 12 + 16  # Tink prefix + GCM nonce + tag
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


@dataclass(frozen=True)
class Prefs:
    """A preferences file as read: ``entries`` are ``(name, type, value)`` in file order
    (type: string, string_set, int, long, float, bool); ``source`` is ``"plain"``,
    ``"esp"`` (opened with its key) or ``"esp-sizes"`` (no key: names are ``None`` and
    values their sizes only, see the module's notes)."""

    path: str
    source: str
    entries: tuple[tuple[str | None, str, Any], ...]

    def summary(self) -> str:
        """One line: the entries by type and their sizes."""
        kinds: dict[str, int] = {}
        for _, t, _v in self.entries:
            kinds[t] = kinds.get(t, 0) + 1
        sized = self.source == "esp-sizes"  # values are (name length, value or size)
        sizes = sorted(_value_size(t, v[1] if sized else v) for _, t, v in self.entries)
        big = sum(1 for s in sizes if s >= 1024)
        what = {"plain": "a plain SharedPreferences file", "esp": "an ESP file, opened with its key",
                "esp-sizes": "an ESP file without its key (sizes only, types guessed from them)"}
        return (f"{os.path.basename(self.path)}: {what[self.source]}; {len(self.entries)} entries ("
                + ", ".join(f"{n} {t}" for t, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
                + f"); values {sum(sizes):,} bytes, the largest {sizes[-1] if sizes else 0:,}"
                + (f", {big} of 1 KiB or more" if big else ""))


def _value_size(kind: str, value: Any) -> int:
    """UTF-8 bytes of a value (a sizes-only entry's value is its size)."""
    if isinstance(value, int) and kind == "string":  # esp-sizes
        return value
    if kind == "string":
        return len(value.encode())
    if kind == "string_set":
        return sum(len(m.encode()) for m in value)
    return {"int": 4, "long": 8, "float": 4, "bool": 1}[kind]


def read_prefs(path: str | os.PathLike[str], *, master_key_file: str | os.PathLike[str] | None = None
               ) -> Prefs:
    """Reads an Android SharedPreferences XML: plain, or ESP (with ``master_key_file`` its
    entries, else their sizes only; opened, an ESP long that fits 32 bits reads back as an
    int, since the store's ``all()`` gives Python ints). :class:`store.StoreFormatError` names the line of
    the first error of a file that is not one (the store's own parser)."""
    path = os.fspath(path)
    with open(path, "rb") as f:
        data = f.read()
    try:
        raw = _core.prefs_parse(data)
    except store.StoreFormatError as e:
        raise store.StoreFormatError(f"{path}: {e}") from None
    names = {n for n, _t, _v in raw}
    if not any(k in names for k in _ESP_KEYSETS):
        if master_key_file is not None:
            raise ValueError(f"{path} is a plain SharedPreferences file (no ESP keysets): "
                             "master_key_file is for an ESP file")
        entries = tuple((n, t, frozenset(v) if t == "string_set" else
                         engines.Long(v) if t == "long" else v) for n, t, v in raw)
        return Prefs(path, "plain", entries)
    if master_key_file is None:
        return Prefs(path, "esp-sizes", tuple(_sizes_only(n, t, v, path)
                                              for n, t, v in raw if n not in _ESP_KEYSETS))
    with tempfile.TemporaryDirectory(prefix="pcb-replay-read-") as tmp:
        copy = os.path.join(tmp, os.path.basename(path))  # its base name is the store's name
        shutil.copyfile(path, copy)
        with store.open(copy, master_key_file=master_key_file) as s:
            items = s.all()
    return Prefs(path, "esp", tuple((n, _kind_of(v), v) for n, v in items.items()))


def _kind_of(value: Any) -> str:
    """A value's preference type as ``Store.all`` gives it (an int beyond 32 bits: long)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int" if -2**31 <= value < 2**31 else "long"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    return "string_set"


def _sizes_only(name: str, kind: str, value: Any, path: str) -> tuple[None, str, Any]:
    """An ESP entry without its key: (None, guessed type, name length or value size)."""
    try:
        if kind != "string":
            raise ValueError(f"a {kind} entry")
        n = len(base64.b64decode(name, validate=True)) - _NAME_OVERHEAD
        v = len(base64.b64decode(value, validate=True)) - _VALUE_OVERHEAD
    except ValueError as e:  # binascii.Error is one
        raise store.StoreFormatError(f"{path}: an ESP file's entries are Base64 strings "
                                     f"(name {name[:40]!r}: {e})") from None
    if n < 1 or v < 4:
        raise store.StoreFormatError(f"{path}: entry {name[:40]!r} is too short for an ESP one")
    guess = {4: ("string_set", frozenset()), 5: ("bool", True), 8: ("int", 0),
             12: ("long", engines.Long(0))}.get(v)
    kind, val = guess if guess else ("string", v - 8)  # type id + length prefix
    return (None, kind, (n, val))


# -- the workload built from a file


@dataclass(frozen=True)
class Workload:
    """What every design stores and does (same for all designs of a run): ``entries``
    (name -> value), ``kinds`` (name -> type), ``reads`` (names read at start-up, some
    perhaps never set), ``write`` (the typical write: one name and its new value),
    ``sensitive`` (names the tiered designs encrypt), and how it was made."""

    entries: dict[str, Any]
    kinds: dict[str, str]
    reads: tuple[str, ...]
    write: tuple[str, Any]
    sensitive: frozenset[str]
    source: str
    anonymized: bool
    kept_values: bool
    missing_reads: int


def _text(rng: random.Random, n: int) -> str:
    return "".join(rng.choices(_ALPHABET, k=n))


def _like(rng: random.Random, kind: str, value: Any) -> Any:
    """A random value of the same type and UTF-8 size."""
    if kind == "string":
        return _text(rng, _value_size(kind, value))
    if kind == "string_set":
        out: set[str] = set()
        for m in value:
            n = len(m.encode())
            for _ in range(1000):
                t = _text(rng, n)
                if t not in out:
                    break
            out.add(t)
        return frozenset(out)
    if kind == "int":
        return rng.randrange(-2**31, 2**31)
    if kind == "long":
        return engines.Long(rng.randrange(-2**63, 2**63))
    if kind == "float":
        return struct.unpack("f", struct.pack("f", rng.uniform(-1e6, 1e6)))[0]
    return rng.random() < 0.5


def make_workload(prefs: Prefs, *, reads: str | Sequence[str] = "all",
                  sensitive: str | None = DEFAULT_SENSITIVE, keep_values: bool = False,
                  anonymize: bool | None = None, seed: int | None = None) -> Workload:
    """The entries every design stores, from ``prefs``: values random of the same type
    and size unless ``keep_values``; names replaced by random ones of the same length
    with ``anonymize`` (default: only for an ESP file read without its key, whose names
    are sealed). ``reads``: ``"all"`` or the (original) names read at start-up (names
    not in the file are reads of names never set); ``sensitive``: a regular expression
    searched in the original names (the tiered designs encrypt those)."""
    sized = prefs.source == "esp-sizes"
    if anonymize is None:
        anonymize = sized
    if sized and (keep_values or not anonymize):
        raise ValueError("an ESP file read without its master key gives sizes only: its "
                         "names and values cannot be kept (pass its master key: master_key_file= "
                         "or --master-key-file)")
    if not isinstance(keep_values, bool) or not isinstance(anonymize, bool):
        raise TypeError("keep_values and anonymize must be bools")
    try:
        pattern = re.compile(sensitive) if sensitive else None
    except re.error as e:
        raise ValueError(f"sensitive={sensitive!r} is not a regular expression: {e}") from None
    rng = random.Random(seed)
    entries: dict[str, Any] = {}
    kinds: dict[str, str] = {}
    renamed: dict[str, str] = {}
    sens: set[str] = set()
    originals = {n for n, _t, _v in prefs.entries if n is not None}
    for name, kind, value in prefs.entries:
        if sized:
            n_len, value = value
        if anonymize:
            n_len = n_len if sized else len(name)  # type: ignore[arg-type]
            new = _fresh_name(rng, n_len, entries, originals)
        else:
            new = name  # type: ignore[assignment]
        if name is not None:
            renamed[name] = new
            if pattern is not None and pattern.search(name):
                sens.add(new)
        if sized and kind == "string":
            value = "x" * value
        entries[new] = value if keep_values else _like(rng, kind, value)
        kinds[new] = kind
    if isinstance(reads, str):
        if reads != "all":
            raise ValueError(f"reads must be 'all' or a list of names, not {reads!r}")
        read_names = list(entries)
    else:
        if sized:
            raise ValueError("an ESP file read without its key has no names to read by: reads='all'")
        unknown = [n for n in reads if n not in originals]
        if unknown:  # an app may read names it never set; a typo reads the same way: say so
            near = {n: difflib.get_close_matches(n, originals, n=1) for n in unknown}
            warnings.warn(f"reads: {len(unknown)} name(s) not in {prefs.path}, read as never set: "
                          + ", ".join(f"{n!r}" + (f" (nearest in the file: {near[n][0]!r})"
                                                  if near[n] else "") for n in unknown),
                          stacklevel=2)
        read_names = [renamed.get(n) or (_fresh_name(rng, len(n), entries, originals) if anonymize
                                         else n) for n in reads]
    missing = sum(1 for n in read_names if n not in entries)
    if not entries:
        raise ValueError(f"{prefs.path} holds no entries: nothing to replay")
    # the typical write: the entry of median size, rewritten with a new value
    by_size = sorted(entries, key=lambda n: _value_size(kinds[n], entries[n]))
    wname = by_size[len(by_size) // 2]
    write = (wname, _like(rng, kinds[wname], entries[wname]))
    return Workload(entries, kinds, tuple(read_names), write, frozenset(sens), prefs.source,
                    anonymize, keep_values, missing)


def _fresh_name(rng: random.Random, n: int, taken: dict[str, Any], originals: set[str]) -> str:
    for _ in range(10_000):
        name = _text(rng, n)
        if name not in taken and name not in originals and name not in _ESP_KEYSETS:
            return name
    raise ValueError(f"too many {n}-character names to anonymize them all distinctly")


# -- the stores and the phases


def _old_name(design: str) -> str:
    """The plain file's name before the update, per design (the file the tiered designs
    keep for their plain part; plain SharedPreferences' own file)."""
    engine = DESIGNS[design][0]
    return "prefs" if design == "plain" else "plain_prefs" if engine == "tiered" else "old_prefs"


def _write_old(w: Workload, where: str, design: str) -> None:
    """The plain SharedPreferences file an app had before the update."""
    with store.open(os.path.join(where, _old_name(design) + ".xml"), encrypted=False) as s:
        with s.edit() as e:
            for k, v in w.entries.items():
                engines.put_typed(e, k, v)


def _open(design: str, where: str, w: Workload) -> engines.Handle:
    engine, options = DESIGNS[design]
    opts = dict(options)
    encrypted = opts.pop("encrypted", True)
    lazy = opts.pop("lazy", False)
    return engines.open_engine(engine, where, encrypted=encrypted, sensitive=w.sensitive,
                               lazy=lazy, options=opts)


def _typed(w: Workload, name: str, value: Any) -> Any:
    """A value as ``Store.all`` gave it, with its type restored (the app knows a long)."""
    if w.kinds.get(name) == "long":
        return engines.Long(value)
    return frozenset(value) if isinstance(value, set) else value


def migrate(design: str, where: str, w: Workload) -> engines.Handle:
    """The first launch after the update in ``where`` (holding the plain file): the
    design's store with every entry, the plain file removed (tiered: only the sensitive
    entries moved, the plain file kept for the rest; plain: nothing to move). Returns
    the open store."""
    engine = DESIGNS[design][0]
    if design == "plain":
        return _open(design, where, w)
    if engine == "tiered":
        h = _open(design, where, w)
        assert isinstance(h, engines.Tiered)
        moved = {k: _typed(w, k, v) for k, v in h.plain.s.all().items() if k in w.sensitive}
        if moved:
            h._encrypted().put(moved, durable=True)
            with h.plain.s.edit() as e:
                for k in moved:
                    e.remove(k)
        return h
    old_path = os.path.join(where, _old_name(design) + ".xml")
    with store.open(old_path, encrypted=False) as old:
        items = {k: _typed(w, k, v) for k, v in old.all().items()}
        h = _open(design, where, w)
        try:
            h.put(items, durable=True)
        except BaseException:
            h.close()
            raise
    os.remove(old_path)
    if os.path.exists(old_path + "-lock"):
        os.remove(old_path + "-lock")
    return h


def build_stores(directory: str | os.PathLike[str], w: Workload,
                 designs: Sequence[str] | None = None) -> dict[str, str]:
    """Every design's store after the migration, each in its own subdirectory of
    ``directory`` (what the replay's later phases start from), to look at: design ->
    its directory."""
    out = {}
    for d in designs or _available():
        where = os.path.join(os.fspath(directory), d)
        os.makedirs(where)
        _write_old(w, where, d)
        migrate(d, where, w).close()
        out[d] = where
    return out


def _heap(h: engines.Handle) -> int | None:
    if isinstance(h, engines.Tiered):
        return h.plain.s.heap_bytes + (h.enc.s.heap_bytes if h.enc is not None else 0)
    s = getattr(h, "s", None)
    return s.heap_bytes if s is not None else None


class _ReplayPoint(ScratchPoint):
    """One design in one phase: a copy of the prepared directory per operation (the
    plain file before the update, or the migrated store), the phase timed."""

    def __init__(self, design: str, phase: str, w: Workload, *, min_time: float,
                 directory: str | None) -> None:
        self.design, self.phase, self.w = design, phase, w
        self.min_time, self.directory = min_time, directory
        self.iterations = 1
        self.disk_bytes = 0
        self.heap_bytes: int | None = None
        self.data = PointData()
        self.data.info = {"design": design, "phase": phase}
        self.n_write = 0

    MIRRORED = ("disk_bytes", "heap_bytes")

    def build(self) -> None:
        template = self._make_template(f"pcb-replay-{self.design}-")
        _write_old(self.w, template, self.design)
        if self.phase != "first_launch":
            migrate(self.design, template, self.w).close()

    def calibrate(self) -> int:
        ns = self._sample_once(1)[0]  # also the warm-up
        cap = 2000 if self.phase == "warm_start" else 50
        return max(1, min(cap, math.ceil(self.min_time * 1e9 / max(ns, 1))))

    def warm_up(self) -> None:
        self._sample_once(1)

    def _reads(self, h: engines.Handle) -> None:
        kinds = self.w.kinds
        for name in self.w.reads:
            h.get(name, kinds.get(name, "string"))

    def _sample_once(self, n: int) -> tuple[int, int, int, int]:
        """n operations of the phase: ns blocked, until durable, CPU, context switches."""
        assert self.base is not None and self.template is not None
        where = tempfile.mkdtemp(dir=self.base)
        blocked = durable = cpu = niv = 0
        try:
            shutil.copytree(self.template, where, dirs_exist_ok=True)
            if self.phase in ("first_launch", "cold_start"):
                for i in range(n):
                    if i:  # a fresh copy per operation (untimed)
                        shutil.rmtree(where)
                        shutil.copytree(self.template, where)
                    niv0, cpu0 = nivcsw(), time.thread_time_ns()
                    t0 = time.perf_counter_ns()
                    h = (migrate(self.design, where, self.w) if self.phase == "first_launch"
                         else _open(self.design, where, self.w))
                    try:
                        self._reads(h)
                        t1 = time.perf_counter_ns()
                        h.flush()
                        t2 = time.perf_counter_ns()
                        cpu += time.thread_time_ns() - cpu0
                        niv += nivcsw() - niv0
                        if self.phase == "cold_start" and self.heap_bytes is None:
                            self.heap_bytes = _heap(h)
                    finally:
                        h.close()
                    blocked, durable = blocked + t1 - t0, durable + t2 - t0
                    if not self.disk_bytes:
                        self.disk_bytes = engines.disk_bytes(where)
                return blocked, durable, cpu, niv
            h = _open(self.design, where, self.w)  # the process is alive: opened untimed
            try:
                wname, wvalue = self.w.write
                alt = _like(random.Random(0), self.w.kinds[wname], wvalue)
                niv0, cpu0 = nivcsw(), time.thread_time_ns()
                for _ in range(n):
                    t0 = time.perf_counter_ns()
                    if self.phase == "warm_start":
                        self._reads(h)
                        t1 = t2 = time.perf_counter_ns()
                    else:
                        self.n_write += 1  # a new value each time, as an app updating
                        h.put({wname: wvalue if self.n_write % 2 else alt}, durable=False)
                        t1 = time.perf_counter_ns()
                        h.flush()
                        t2 = time.perf_counter_ns()
                    blocked, durable = blocked + t1 - t0, durable + t2 - t0
                cpu, niv = time.thread_time_ns() - cpu0, nivcsw() - niv0
            finally:
                h.close()
            return blocked, durable, cpu, niv
        finally:
            shutil.rmtree(where, ignore_errors=True)

    def sample(self, canary: float) -> None:
        b, d, c, n = self._sample_once(self.iterations)
        self._record(b, d, c, n, d, canary)


def _available() -> list[str]:
    return [d for d in DESIGNS if DESIGNS[d][0] != "sqlcipher" or engines.cipher_version() is not None]


@dataclass(frozen=True)
class ReplayResult:
    """What :func:`replay` measured: ``records`` (one per design and phase; ``workload``
    is the phase), how the run went (``run``), the file as read and the workload."""

    records: list[DesignMeasurement]
    run: RunInfo
    prefs: Prefs
    workload: Workload

    def to_dict(self) -> dict[str, Any]:
        """The file's summary, the workload's shape, the run and every record (raw rounds
        included) as JSON-serializable values; never a name or a value of the file."""
        from ._machine import machine

        return {"file": self.prefs.summary(), "source": self.prefs.source,
                "rounds": self.run.rounds, "interrupted": self.run.interrupted,
                "machine": machine(), "records": [m.to_dict() for m in self.records]}

    def format(self, budget_ms: float | None = None) -> str:
        """The per-design tables (see :func:`pycipherbench.designs.format_replay`)."""
        from .designs import format_replay

        return format_replay(self, budget_ms)


def replay(path: str | os.PathLike[str], *, designs: Sequence[str] | None = None,
           reads: str | Sequence[str] = "all", sensitive: str | None = DEFAULT_SENSITIVE,
           keep_values: bool = False, anonymize: bool | None = None,
           master_key_file: str | os.PathLike[str] | None = None,
           repeats: int = DEFAULT_ROUNDS, min_time: float = 0.02, seed: int | None = None,
           directory: str | os.PathLike[str] | None = None, processes: int | None = None,
           progress: bool = False) -> ReplayResult:
    """Replays the preferences file at ``path`` through every design (default: all of
    :data:`pycipherbench.designs.DESIGNS` whose library is installed), every phase of
    :data:`PHASES` one point of one run; see the module's notes and
    :func:`make_workload` for ``reads``, ``sensitive``, ``keep_values`` and
    ``anonymize``. ``directory``: where the stores' files go (default: the system's
    temporary directory). ``processes``: the fresh worker processes the rounds run in,
    one after another (default: up to 5, at least 2 rounds each; 1: this process, whose
    intervals cover this process only); each point is built and calibrated in the first
    and rebuilt with that operation count in each fresh one."""
    prefs = read_prefs(path, master_key_file=master_key_file)
    w = make_workload(prefs, reads=reads, sensitive=sensitive, keep_values=keep_values,
                      anonymize=anonymize, seed=seed)
    chosen = list(designs) if designs is not None else _available()
    check_design_names(chosen)
    if directory is not None and not os.path.isdir(directory):
        raise NotADirectoryError(f"directory={os.fspath(directory)!r} is not an existing directory")
    where = None if directory is None else os.fspath(directory)
    params = {"source": prefs.source, "file": os.path.basename(prefs.path),
              "entries": len(w.entries), "reads": len(w.reads), "missing_reads": w.missing_reads,
              "sensitive": len(w.sensitive), "write_type": w.kinds[w.write[0]],
              "write_bytes": _value_size(w.kinds[w.write[0]], w.write[1]),
              "anonymized": w.anonymized, "kept_values": w.kept_values}
    with Workers(resolve_processes(processes, repeats)) as workers:
        plans = []
        for phase in PHASES:
            for d in chosen:
                point = _ReplayPoint(d, phase, w, min_time=min_time, directory=where)
                build = functools.partial(build_record, design=d, workload=phase, params=params,
                                          point=point, min_time=min_time, repeats=repeats)
                plans.append(Plan(workers.point(point), build))
        records, info = run_plans(plans, repeats, seed=seed, progress=progress, desc="replay",
                                  workers=workers)
    return ReplayResult(records, info, prefs, w)


def parse_reads(text: str) -> str | list[str]:
    """``--reads``: ``all`` or comma-separated names."""
    text = text.strip()
    if text == "all":
        return "all"
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise ValueError("--reads takes 'all' or comma-separated names")
    return names

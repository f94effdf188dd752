"""Every I/O failure point of every store operation, SQLite's ioerr way (issue 25).

For each operation of tests/fault_table.py (create at open, open, commit, apply + flush,
clear + put + apply after another writer's commit, a commit merging another writer's,
full, lazy, passphrase and master-key rotation, a rotation with a change pending, close
with pending changes, the MMKV model's open and its put and flush), each store mode
(entries, ``layout="file"``, cache, faithful, plain, ``lock_timeout=0``), each system call
the operation makes (``_core._fault_calls()``), each of its calls of that name (nth = 1,
2, ... until nothing fires) and each errno mode (EIO, ENOSPC, EINTR once, a short write,
EIO from then on): the operation raises an ``OSError`` or succeeds as the model allows,
memory equals the model's state exactly, the reopened file holds the same outcome's state
(and keeps its mode), no descriptor, lock or temporary file is left, and a retry publishes
(fault_table.run_case says exactly what is checked).

Budget: every point in the default mode (entries), the MMKV model and the passphrase
store; in the other modes the first, the last and one more seeded point of each call
(``PCB_FAULT_SAMPLE=0`` runs every point everywhere; bench/bench_faults.py prints the full
table). Cases run on /dev/shm where there is one.

Fixed here, with regression tests:
- a failure after the rename put the new file in place (the directory's open or fsync)
  was reported as an unpublished write: a commit put memory back although the file held
  the change, a rotation put the old keys back over a file sealed under the new ones (every
  later write: "re-keyed by another writer"), and flush/close/open said the write failed.
  Now the change counts as published (memory keeps it; an apply's write stays pending until
  a write whose directory sync succeeds) and the error says the file holds it with its
  durability unknown (``test_post_rename_failure_counts_as_published``);
- a failed stat of the file a write replaces counted as "no file": the write succeeded and
  replaced a 0640 store by a 0600 one, its owner not kept
  (``test_a_failed_stat_of_the_file_being_replaced_keeps_its_mode``, and the table's mode
  check);
- a read error of the master key file said "must hold exactly 32 bytes, 0 could be read"
  (a StoreFormatError) instead of an OSError with its errno.

Bugs this table found, each fixed and kept as a regression test below (``FIXED_CASES``,
``test_the_file_lock_is_free_when_flush_returns``); ``KNOWN`` lists the bugs still open (none
now: a new one goes there with its own ``xfail(strict=True)`` test, which flips when the fix
lands), and the table tests use it to tell known mismatches from new ones:
- ``clear-merge``: issue 25's defect 1: after another writer's commit, a failed write of an
  applied ``clear()`` left the other writer's file in memory, and the next flush wrote it
  (merge.c's ``pcb_share_merge`` now says whether it replaced the map).
- ``flush-lock`` (found here, no fault needed): ``flush()`` returned while the background
  writer still held the file lock, so another writer trying once (``lock_timeout=0``) timed
  out (txn.c's ``pcb_txn_end`` now lets the file lock go before it wakes the waiters).
- ``lock-eintr``: an interrupted lock request counted as "held by another writer": with
  ``lock_timeout=0`` (one try) a commit raised ``TimeoutError`` with no other writer (the
  request is made again: common/sys.c's EINTR rule).
- ``create-tmp``: a failed unlink of the temporary file after ``link()`` made a new master
  key file (at a store's creation, or ``rotate(master_key_file=new)``) or ``.scrypt`` file
  left a second name of it (``.master.key.<pid><random>.tmp``: the key), which no sweep
  removes (it is tried twice, and an unlink that keeps failing is an error naming the file).
"""

from __future__ import annotations

import os

import pytest

from pycipherbench import _core

import fault_table as ft

SAMPLE = int(os.environ.get("PCB_FAULT_SAMPLE", "1"))
FULL_MODES = ("entries", "mmkv", "passphrase")


@pytest.fixture(autouse=True)
def _disarmed():
    """No fault stays armed after a test, whatever it did."""
    _core._fault()
    yield
    _core._fault()


# ------------------------------------------------------------------ known bugs


#: Bugs still open: name -> (predicate over a result, reason). None now (see the docstring).
KNOWN: dict[str, tuple] = {}


def known(r: ft.Result) -> str | None:
    for name, (pred, _) in KNOWN.items():
        if pred(r):
            return name
    return None


# ------------------------------------------------------------------ the table

_calls_cache: dict[tuple[str, str], dict[str, int]] = {}


def calls_of(op: str, mode: str) -> dict[str, int]:
    if (op, mode) not in _calls_cache:
        _calls_cache[(op, mode)] = ft.count_calls(ft.OPS[op], mode)
    return _calls_cache[(op, mode)]


CASES = [(op.name, mode, el) for op in ft.OPS.values() for mode in op.modes
         for el in ft.ERRNOS]


@pytest.mark.parametrize("op,mode,errno_label", CASES, ids=["-".join(c) for c in CASES])
def test_every_failure_point(op, mode, errno_label):
    calls = calls_of(op, mode)
    assert calls, f"{op} makes no system call through the fault table"
    sample = None if SAMPLE == 0 or mode in FULL_MODES else 1
    results = []
    for call in sorted(calls):
        if errno_label not in ft.errnos_for(call):
            continue
        results += list(ft.points(ft.OPS[op], mode, call, errno_label, sample=sample))
    if not results:
        pytest.skip(f"{errno_label} applies to none of {sorted(calls)}")
    assert any(r.fired for r in results), "no point fired"
    unknown = [r.describe() for r in results if r.problems and known(r) is None]
    assert not unknown, f"{len(unknown)} of {len(results)} points:\n" + "\n".join(unknown)
    # EINTR and a short write are retried: the operation succeeds (checked by run_case too).
    if errno_label == "EINTR":
        assert all(r.raised is None for r in results if not r.problems), \
            [r.describe() for r in results if r.raised]


def test_every_calls_name_is_a_fault_table_call():
    """The table covers the calls it means to: every name a store op makes is one of
    _fault_calls(), and the write path's calls are there."""
    names = set(_core._fault_calls())
    made = set(calls_of("commit", "entries"))
    assert made <= names
    assert {"open", "write", "fsync", "rename", "close"} <= made, made
    assert {"fcntl_lock", "flock"} & made, made  # the OFD lock, or flock (PCB_FORCE_FALLBACKS)
    assert {"posix_fallocate", "mmap", "msync"} <= set(calls_of("mmkv-put+flush", "mmkv"))


def test_a_fault_that_fires_is_counted_and_disarmed():
    """The hook itself: the nth call fails once, the count is returned, disarm stops it."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "x")
        _core._fault(nth=1, errno=5, calls=("open",))
        with pytest.raises(OSError):
            _core.mmkv_open(p, None)
        calls, fired = _core._fault()
        assert (calls, fired) == (1, 1)
        h = _core.mmkv_open(p, None)  # disarmed: works
        _core.mmkv_close(h)


# ------------------------------------------------------------------ the known bugs, one by one


def _last(op: str, mode: str, call: str) -> int:
    return calls_of(op, mode)[call]


FIXED_CASES = [
    # (fixed bug, op, mode, call, nth (-1: the op's last call of that name), errno)
    ("clear-merge", "clear+put+apply", "entries", "write", 1, "EIO"),
    ("clear-merge", "clear+put+apply", "file", "rename", 1, "EIO-persist"),
    ("clear-merge", "clear+put+apply", "cache", "fsync", 1, "ENOSPC"),
    ("clear-merge", "clear+put+apply", "faithful", "write", 1, "EIO-persist"),
    ("clear-merge", "clear+put+apply", "plain", "fsync", 1, "EIO"),
    ("lock-eintr", "commit", "try-once", "fcntl_lock", 1, "EINTR"),
    ("create-tmp", "create", "entries", "unlink", 1, "EIO"),
    ("create-tmp", "create", "passphrase", "unlink", 1, "EIO"),
    ("create-tmp", "rotate-master-key", "entries", "unlink", 1, "ENOSPC"),
]


POST_RENAME_CASES = [
    # (op, mode, call, nth (-1: the op's last call of that name: the directory's), errno)
    ("commit", "entries", "fsync", -1, "EIO"),
    ("commit", "file", "fsync", -1, "ENOSPC"),
    ("commit", "plain", "open", -1, "EIO"),
    ("merge-commit", "cache", "fsync", -1, "EIO"),
    ("rotate", "entries", "fsync", -1, "EIO"),
    ("rotate", "faithful", "open", -1, "ENOSPC"),
    ("rotate-lazy", "file", "fsync", -1, "EIO"),
    ("rotate-passphrase", "passphrase", "fsync", -1, "EIO"),
    ("apply+flush", "entries", "fsync", -1, "EIO"),
    ("close-pending", "faithful", "fsync", -1, "EIO"),
    ("create", "entries", "fsync", -1, "EIO"),
]


@pytest.mark.parametrize("op,mode,call,nth,errno_label", POST_RENAME_CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[2]}{c[3]}-{c[4]}" for c in POST_RENAME_CASES])
def test_post_rename_failure_counts_as_published(op, mode, call, nth, errno_label):
    """The directory's open or fsync fails after the rename: the change is in the file, so
    memory keeps it, the error says so (durability unknown), and a retry goes on (a
    rotation's next write is not refused as another writer's re-keying)."""
    n = _last(op, mode, call) if nth == -1 else nth
    r = ft.run_case(ft.OPS[op], mode, call, n, errno_label)
    assert r.fired, f"{r.key} fired nothing: the case no longer reaches the point"
    assert not r.problems, r.describe()
    assert r.outcome == "published", r.describe()
    if r.raised is not None:
        assert "durability is unknown" in r.raised, r.describe()


def test_post_rename_failure_of_an_apply_stays_pending_until_synced():
    """The background write's directory fsync fails from then on: flush raises saying the
    changes are in the file; once the disk is back a flush succeeds and nothing is pending."""
    import tempfile

    from pycipherbench import store

    with tempfile.TemporaryDirectory(dir=ft.base_dir()) as d:
        s = store.open(os.path.join(d, "s.xml"), master_key_file=os.path.join(d, "mk"))
        try:
            s.edit().put_string("a", "1").commit()
            _core._fault(nth=2, errno=5, calls=("fsync",), mode="persist")
            try:
                s.edit().put_string("b", "2").apply()
                with pytest.raises(OSError, match="in the file, but its durability is unknown"):
                    s.flush()
            finally:
                _core._fault()
            assert s.all() == {"a": "1", "b": "2"}
            with store.open(os.path.join(d, "s.xml"), master_key_file=os.path.join(d, "mk")) as f:
                assert f.all() == {"a": "1", "b": "2"}
            s.flush()
        finally:
            s.close()


@pytest.mark.parametrize("bug,op,mode,call,nth,errno_label", FIXED_CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[3]}{c[4]}-{c[5]}" for c in FIXED_CASES])
def test_fixed_bug(bug, op, mode, call, nth, errno_label):
    """Each bug the table found, at a point that showed it: no mismatch now."""
    if call == "fcntl_lock" and call not in calls_of(op, mode):
        call = "flock"  # a build without OFD locks (PCB_FORCE_FALLBACKS) locks with flock
    n = _last(op, mode, call) if nth == -1 else nth
    r = ft.run_case(ft.OPS[op], mode, call, n, errno_label)
    assert r.fired, f"{r.key} fired nothing: the case no longer reaches the point"
    assert not r.problems, r.describe()


FLUSH_LOCK_CHILD = """
    import os, sys, tempfile
    sys.path.insert(0, sys.argv[1])
    # One CPU for both threads: the woken flush() runs before the writer's last steps, as it
    # does most of the time anyway (measured 70-95% on 2 cores); pinned, the race is steady.
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    import fault_table as ft
    from pycipherbench import store
    with tempfile.TemporaryDirectory(dir=ft.base_dir()) as d:
        p, mk = os.path.join(d, "s.xml"), os.path.join(d, "mk")
        a = store.open(p, master_key_file=mk)
        b = store.open(p, master_key_file=mk, lock_timeout=0)  # tries once
        held = timeouts = 0
        for i in range(100):
            a.edit().put_int("k", i).apply()
            a.flush()
            if i % 2:
                held += not ft.lock_is_free(p + "-lock")
            else:
                try:
                    b.edit().put_int("j", i).commit()
                except TimeoutError:
                    timeouts += 1
        a.close()
        b.close()
    print(held, timeouts)
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="pins a child to one CPU")
def test_the_file_lock_is_free_when_flush_returns():
    """flush() waits for the background write; once it returns, the write is over: another
    Store (or process) trying the lock once gets it. In a child pinned to one CPU."""
    from conftest import TESTS_DIR, finish_child, spawn_child

    held, timeouts = map(int, finish_child(spawn_child(FLUSH_LOCK_CHILD, TESTS_DIR)).split())
    assert (held, timeouts) == (0, 0), f"of 100 flushes, {held} of 50 returned with the lock " \
        f"held and {timeouts} of 50 let a one-try commit time out"


def test_a_failed_stat_of_the_file_being_replaced_keeps_its_mode():
    """pcb_atomic_write stats the file it replaces to keep its mode and owner; a stat that
    fails (not ENOENT) used to count as "no file", so the commit succeeded and the 0640 store
    became 0600 (its owner not kept either). Now the write fails first and nothing changes."""
    import tempfile

    from pycipherbench import store

    with tempfile.TemporaryDirectory(dir=ft.base_dir()) as d:
        p = os.path.join(d, "s.xml")
        with store.open(p, master_key_file=os.path.join(d, "mk")) as s:
            s.edit().put_string("a", "1").commit()
            os.chmod(p, 0o640)
            # The file replaced is the last lstat of a commit (after the path's walk).
            _core._fault(nth=1 << 40, calls=("lstat",))
            s.edit().put_string("a", "1").commit()
            last, _ = _core._fault()
            _core._fault(nth=last, errno=5, calls=("lstat",))
            try:
                with pytest.raises(OSError, match="stat of the file it replaces"):
                    s.edit().put_string("b", "2").commit()
            finally:
                _core._fault()
            assert s.all() == {"a": "1"}
            s.edit().put_string("b", "2").commit()
        assert os.stat(p).st_mode & 0o7777 == 0o640

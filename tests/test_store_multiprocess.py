"""Processes and Store objects sharing one store file (issue 11, items 4 and 6).

Writers of one file are serialized by an OFD lock on ``<path>-lock``; a commit merges the
changes other writers made since this store read the file (last writer wins per key); a
lock wait is bounded by ``lock_timeout`` and does not hold the GIL; opening a store never
touches another writer's files. Everything that could hang runs in a child process with a
timeout; the locking is exercised by two processes.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pycipherbench import store
from pycipherbench.store import StoreFormatError

from conftest import CHILD_TIMEOUT as TIMEOUT, finish_child as _finish  # noqa: E402  (shared scaffolding)
from conftest import hold_lock as _hold_lock, spawn_child  # noqa: E402


OPTIONS = {
    "entries": {},
    "file": {"layout": "file"},
    "plain": {"encrypted": False},
    "faithful-chacha": {"faithful": True, "value_encryption": "chacha20-poly1305"},
    "passphrase-names-plain": {"passphrase": "correct horse", "key_encryption": "none"},
}


def _keyed(kind: str, mk: Path) -> dict:
    opts = dict(OPTIONS[kind])
    if opts.get("encrypted", True) and "passphrase" not in opts:
        opts["master_key_file"] = str(mk)
    return opts


def _start_together(procs: list[subprocess.Popen]) -> None:
    """Each child prints 'ready' once its store is open, then waits for a line on stdin."""
    for p in procs:
        line = p.stdout.readline()
        assert line.strip() == "ready", (line, p.stderr.read() if p.poll() is not None else "")
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()


WRITER = """
    import json, sys
    from pycipherbench import store
    path, opts, prefix, n, mode = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
    s = store.open(path, **opts)
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(n):
        e = s.edit().put_int(f"{prefix}{i}", i)
        e.commit() if mode == "commit" else e.apply()
    s.close()
    print("done", flush=True)
"""


def _writer(path: Path, opts: dict, prefix: str, n: int, mode: str) -> subprocess.Popen:
    return spawn_child(WRITER, str(path), json.dumps(opts), prefix, str(n), mode)


# ------------------------------------------------------------------------ item 6: merge


@pytest.mark.parametrize("kind,mode", [("entries", "commit"), ("file", "apply"), ("plain", "commit")])
def test_two_processes_commit_different_keys(tmp_path, kind, mode):
    """Two processes each commit their own keys at the same time: none is lost."""
    path, opts, n = tmp_path / "shared.xml", _keyed(kind, tmp_path / "master.key"), 150
    with store.open(path, **opts) as s:  # the keys exist before the race
        s.edit().put_string("before", "both").commit()
    procs = [_writer(path, opts, prefix, n, mode) for prefix in ("a", "b")]
    _start_together(procs)
    for p in procs:
        assert _finish(p).split()[-1] == "done"
    with store.open(path, **opts) as s:
        got = s.all()
    expected = {f"{prefix}{i}": i for prefix in ("a", "b") for i in range(n)}
    expected["before"] = "both"
    missing = sorted(set(expected) - set(got))
    assert not missing, f"{len(missing)} committed keys lost, e.g. {missing[:5]}"
    assert got == expected


def test_two_processes_create_the_same_store(tmp_path):
    """Two processes creating one new store at once agree on one set of keysets."""
    for trial in range(3):
        path, opts = tmp_path / f"new{trial}.xml", _keyed("entries", tmp_path / "master.key")
        procs = [_writer(path, opts, prefix, 5, "commit") for prefix in ("a", "b")]
        _start_together(procs)
        for p in procs:
            _finish(p)
        with store.open(path, **opts) as s:
            assert s.all() == {f"{prefix}{i}": i for prefix in ("a", "b") for i in range(5)}


@pytest.mark.parametrize("kind", list(OPTIONS))
def test_two_store_objects_merge_per_key(tmp_path, kind):
    path, opts = tmp_path / "two.xml", _keyed(kind, tmp_path / "master.key")
    a = store.open(path, **opts)
    b = store.open(path, **opts)
    try:
        a.edit().put_string("x", "from a").put_string("shared", "a").commit()
        b.edit().put_string("y", "from b").commit()
        assert b.all() == {"x": "from a", "shared": "a", "y": "from b"}  # merged on commit
        b.edit().put_string("shared", "b").commit()  # the later writer of a key wins
        a.edit().remove("x").apply()
        a.flush()
        assert a.all() == {"shared": "b", "y": "from b"}
        assert a.get_string("shared") == "b"
    finally:
        a.close()
        b.close()
    with store.open(path, **opts) as s:
        assert s.all() == {"shared": "b", "y": "from b"}


def test_clear_wins_over_other_writers(tmp_path):
    path, opts = tmp_path / "clear.xml", _keyed("entries", tmp_path / "master.key")
    with store.open(path, **opts) as a, store.open(path, **opts) as b:
        a.edit().put_string("old", "1").commit()
        b.edit().put_string("other", "2").commit()
        a.edit().clear().put_string("fresh", "3").commit()  # clear() covers b's entry too
        assert a.all() == {"fresh": "3"}
        b.edit().put_string("late", "4").commit()
        assert b.all() == {"fresh": "3", "late": "4"}
    with store.open(path, **opts) as s:
        assert s.all() == {"fresh": "3", "late": "4"}


def test_two_store_objects_in_threads(tmp_path):
    """Two Store objects of one process committing from two threads: OFD locks exclude
    each other within a process too."""
    path, opts, n = tmp_path / "threads.xml", _keyed("entries", tmp_path / "master.key"), 100
    stores = [store.open(path, **opts) for _ in range(2)]
    errors: list[BaseException] = []

    def run(s, prefix):
        try:
            for i in range(n):
                s.edit().put_int(f"{prefix}{i}", i).commit()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(s, p)) for s, p in zip(stores, "ab")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a committing thread hung"
    for s in stores:
        s.close()
    assert not errors, errors
    with store.open(path, **opts) as s:
        assert s.all() == {f"{p}{i}": i for p in "ab" for i in range(n)}


def test_rotated_by_another_writer_fails_clearly(tmp_path):
    path, opts = tmp_path / "rot.xml", _keyed("entries", tmp_path / "master.key")
    a = store.open(path, **opts)
    b = store.open(path, **opts)
    try:
        a.edit().put_string("k", "1").commit()
        a.rotate()
        with pytest.raises(StoreFormatError, match=r"re-keyed.*reopen"):
            b.edit().put_string("lost?", "no: refused").commit()
        assert a.get_string("k") == "1"
    finally:
        a.close()
        b.close()
    with store.open(path, **opts) as s:  # b wrote nothing
        assert s.all() == {"k": "1"}


# ------------------------------------------------------------------ item 6: the lock

def _ofd_locked(lock_file: Path) -> bool:
    """True if some open file description holds a lock on lock_file."""
    fd = os.open(lock_file, os.O_RDWR)
    try:
        got = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
        return struct.unpack("hhqqi4x", got)[0] != fcntl.F_UNLCK
    finally:
        os.close(fd)


COMMIT_WITH_TIMEOUT = """
    import json, sys
    from pycipherbench import store
    path, opts = sys.argv[1], json.loads(sys.argv[2])
    s = store.open(path, lock_timeout=0.3, **opts)
    try:
        s.edit().put_string("blocked", "1").commit()
    except TimeoutError as exc:
        print("timeout", exc)
    s.close()
"""


def test_lock_wait_times_out_naming_the_lock_file(tmp_path):
    path, opts = tmp_path / "held.xml", _keyed("entries", tmp_path / "master.key")
    with store.open(path, **opts) as s:
        s.edit().put_string("k", "v").commit()
    before = path.read_bytes()
    release = tmp_path / "release"
    holder = _hold_lock(f"{path}-lock", release)
    try:
        out = _finish(spawn_child(COMMIT_WITH_TIMEOUT, str(path), json.dumps(opts)))
    finally:
        release.touch()
        _finish(holder)
    assert out.startswith("timeout"), out
    assert f"{os.path.realpath(path)}-lock" in out and "lock_timeout" in out
    assert path.read_bytes() == before, "a commit that timed out wrote the file"


APPLY_WITH_TIMEOUT = """
    import json, sys
    from pycipherbench import store
    path, opts = sys.argv[1], json.loads(sys.argv[2])
    s = store.open(path, lock_timeout=0.3, **opts)
    s.edit().put_string("pending", "1").apply()
    try:
        s.flush()
        print("flushed")
    except TimeoutError as exc:
        print("timeout", exc)
    try:
        s.close()
    except OSError:
        pass
"""


def test_background_write_lock_timeout_is_reported(tmp_path):
    """apply()'s background write waits for the lock like commit() does, and its timeout
    reaches flush() instead of hanging it."""
    path, opts = tmp_path / "held-apply.xml", _keyed("entries", tmp_path / "master.key")
    with store.open(path, **opts) as s:
        s.edit().put_string("k", "v").commit()
    release = tmp_path / "release"
    holder = _hold_lock(f"{path}-lock", release)
    try:
        out = _finish(spawn_child(APPLY_WITH_TIMEOUT, str(path), json.dumps(opts)))
    finally:
        release.touch()
        _finish(holder)
    assert out.startswith("timeout") and f"{os.path.realpath(path)}-lock" in out, out


def test_lock_timeout_option_is_checked(tmp_path):
    for bad in (-1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="lock_timeout"):
            store.open(tmp_path / "x.xml", encrypted=False, lock_timeout=bad)
    with pytest.raises(TypeError):
        store.open(tmp_path / "x.xml", encrypted=False, lock_timeout="10")
    with store.open(tmp_path / "x.xml", encrypted=False, lock_timeout=0) as s:  # 0: try once
        s.edit().put_int("n", 1).commit()
        assert s.get_int("n") == 1


def test_dead_lock_holder_releases_the_lock(tmp_path):
    path, opts = tmp_path / "dead.xml", _keyed("plain", tmp_path / "master.key")
    holder = _hold_lock(f"{path}-lock", tmp_path / "never")
    assert _ofd_locked(Path(f"{path}-lock"))
    os.kill(holder.pid, signal.SIGKILL)
    holder.communicate(timeout=TIMEOUT)
    assert not _ofd_locked(Path(f"{path}-lock"))
    with store.open(path, lock_timeout=5, **opts) as s:
        s.edit().put_string("after", "death").commit()
    with store.open(path, **opts) as s:
        assert s.all() == {"after": "death"}


WAIT_WITHOUT_GIL = """
    import json, sys, threading, time
    from pycipherbench import store
    path, opts, release = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    s = store.open(path, lock_timeout=60, **opts)
    waiting = threading.Event()
    def helper():  # the holder lets go only when this thread has run during the wait
        waiting.wait()
        time.sleep(0.2)
        open(release, "w").close()
    t = threading.Thread(target=helper)
    t.start()
    e = s.edit().put_string("k", "v")
    waiting.set()
    e.commit()
    t.join()
    s.close()
    print("committed")
"""


def test_lock_wait_releases_the_gil(tmp_path):
    path, opts = tmp_path / "gil.xml", _keyed("entries", tmp_path / "master.key")
    with store.open(path, **opts):
        pass
    release = tmp_path / "release"
    holder = _hold_lock(f"{path}-lock", release)
    try:
        out = _finish(spawn_child(WAIT_WITHOUT_GIL, str(path), json.dumps(opts), str(release)))
    finally:
        release.touch()
        _finish(holder)
    assert out.split()[-1] == "committed"
    with store.open(path, **opts) as s:
        assert s.all() == {"k": "v"}


def test_gets_take_no_file_lock(tmp_path):
    """Reads never wait for a writer: with the lock held elsewhere, open/get/all work."""
    path, opts = tmp_path / "reads.xml", _keyed("entries", tmp_path / "master.key")
    with store.open(path, **opts) as s:
        s.edit().put_string("k", "v").commit()
    release = tmp_path / "release"
    holder = _hold_lock(f"{path}-lock", release)
    try:
        probe = spawn_child("""
            import json, sys
            from pycipherbench import store
            with store.open(sys.argv[1], lock_timeout=0, **json.loads(sys.argv[2])) as s:
                print(s.get_string("k"), len(s), sorted(s.all()))
        """, str(path), json.dumps(opts))
        out = _finish(probe)
    finally:
        release.touch()
        _finish(holder)
    assert out.split()[0] == "v"


# -------------------------------------------------------------- item 4: temp files

OPENER = """
    import json, os, sys
    from pycipherbench import store
    path, opts, stop = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    print("ready", flush=True)
    sys.stdin.readline()
    opens = 0
    while not os.path.exists(stop) or opens < 20:
        store.open(path, **opts).close()
        opens += 1
    print("opens", opens, flush=True)
"""

COMMITTER = """
    import json, sys
    from pycipherbench import store
    path, opts, n, stop = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    s = store.open(path, **opts)
    print("ready", flush=True)
    sys.stdin.readline()
    failed = []
    for i in range(n):
        try:
            s.edit().put_int("counter", i).commit()
        except OSError as exc:
            failed.append(repr(exc))
    s.close()
    open(stop, "w").close()
    print("failed", len(failed), failed[:3], flush=True)
"""


def test_opening_never_deletes_a_writers_temp_file(tmp_path):
    """A process opening and closing the store in a loop never breaks another's commits
    (it used to delete the committer's in-flight temp file: 1,852 of 2,000 failed)."""
    path, opts = tmp_path / "busy.xml", _keyed("plain", tmp_path / "master.key")
    stop = tmp_path / "stop"
    committer = spawn_child(COMMITTER, str(path), json.dumps(opts), "400", str(stop))
    opener = spawn_child(OPENER, str(path), json.dumps(opts), str(stop))
    _start_together([committer, opener])
    out = _finish(committer)
    opens = _finish(opener)
    assert out.startswith("failed 0 "), out
    assert int(opens.split()[1]) >= 20
    with store.open(path, **opts) as s:
        assert s.get_int("counter") == 399


def _tmp_name(path: Path, pid: int, rnd: int = 0xABCDEF01) -> Path:
    return path.parent / f".{path.name}.{pid:08x}{rnd:08x}.tmp"


def test_temp_files_carry_the_writers_pid(tmp_path):
    path = tmp_path / "named.xml"
    seen: set[str] = set()
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            seen.update(f for f in os.listdir(tmp_path) if f.endswith(".tmp"))

    t = threading.Thread(target=watch)
    t.start()
    try:
        with store.open(path, encrypted=False) as s:
            for i in range(200):
                s.edit().put_int("i", i).commit()
    finally:
        stop.set()
        t.join()
    prefix = f".{path.name}.{os.getpid():08x}"
    assert seen, "no temporary file seen during 200 commits"
    assert all(f.startswith(prefix) and len(f) == len(prefix) + 8 + 4 for f in seen), seen


def test_only_dead_writers_temp_files_are_removed(tmp_path):
    path, opts = tmp_path / "sweep.xml", _keyed("entries", tmp_path / "master.key")
    with store.open(path, **opts) as s:
        s.edit().put_string("a", "1").commit()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        stale = _tmp_name(path, dead.pid)
        busy = [_tmp_name(path, live.pid), _tmp_name(path, os.getpid())]
        for f in [stale, *busy]:
            f.write_bytes(b"<map>in flight")
        with store.open(path, **opts) as s:  # opening touches nothing
            assert stale.exists() and all(f.exists() for f in busy)
            s.edit().put_string("b", "2").commit()  # the first write sweeps, under the lock
        assert not stale.exists(), "a dead writer's temp file was kept"
        assert all(f.read_bytes() == b"<map>in flight" for f in busy), "a live writer's temp file was touched"
    finally:
        live.kill()
        live.wait()
    with store.open(path, **opts) as s:
        assert s.all() == {"a": "1", "b": "2"}


# ------------------------------------------------- a failed commit and the merge (items 5, 6)

@pytest.mark.parametrize("kind", ["entries", "file", "plain"])
@pytest.mark.parametrize("clear", [False, True], ids=["put", "clear"])
def test_failed_commit_gives_back_its_claim_on_other_writers_keys(tmp_path, kind, clear):
    """Store B's commit of k1 fails (RLIMIT_FSIZE) after store A committed k1: the undo takes
    back B's claim on k1, so B's next commit (of k2) merges A's k1 instead of writing B's old
    view over it; with clear(), A's keys come back too."""
    path, mk = tmp_path / "s.xml", tmp_path / "mk.bin"
    code = """
        import json, os, resource, signal, sys
        from pycipherbench import store
        path, opts = sys.argv[1], json.loads(sys.argv[2])
        clear = sys.argv[3] == "1"
        with store.open(path, **opts) as s0:
            s0.edit().put_string("k0", "zero").commit()
        a, b = store.open(path, **opts), store.open(path, **opts)
        a.edit().put_string("k1", "A").put_string("a_only", "x" * 64).commit()
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, hard))
        e = b.edit()
        if clear:
            e.clear()
        try:
            e.put_string("k1", "B").commit()
        except OSError as err:
            print("failed", err.errno)
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        assert b.get_string("k1") is None, b.get_string("k1")  # memory equals disk as B saw it
        b.edit().put_string("k2", "B2").commit()
        a.close(); b.close()
        with store.open(path, **opts) as s:
            print(json.dumps(s.all(), sort_keys=True))
    """
    p = spawn_child(code, str(path), json.dumps(_keyed(kind, mk)), "1" if clear else "0")
    out = _finish(p)
    assert "failed 27" in out, out  # EFBIG
    got = json.loads(out.strip().splitlines()[-1])
    assert got == {"k0": "zero", "k1": "A", "a_only": "x" * 64, "k2": "B2"}, got

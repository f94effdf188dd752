"""The MMKV design model's mapped files failing under it (issue 25, defect 3): another
process truncating the file, a full disk, RLIMIT_FSIZE. Each must be an OSError naming
the file with the process alive, and a put that failed must not be half-visible.

The crash-prone cases run in a child interpreter (a SIGBUS there is the old defect)."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import tempfile
import textwrap

import pytest

from conftest import CHILD_TIMEOUT, child_env, finish_child, spawn_child
from pycipherbench import _core

#: A child: opens the model (crypt key argv[2], "-" for none) on argv[1], fills it, has a
#: grandchild process truncate the file to argv[3] bytes, then runs argv[4] (get, contains,
#: put or sync) and prints what happened; then every other call, and a reopen.
TRUNCATED = """
    import faulthandler, os, subprocess, sys
    faulthandler.enable()  # its SIGBUS handler is there first: the model's must chain to it
    from pycipherbench import _core
    path, key, cut, op = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    name = sys.argv[5].encode() if len(sys.argv) > 5 else b"k001"
    key = None if key == "-" else key.encode()
    h = _core.mmkv_open(path, key)
    for i in range(300):
        _core.mmkv_put(h, b"k%03d" % i, b"v" * 40)
    _core.mmkv_sync(h)
    size = _core.mmkv_info(h)["file_bytes"] - 4096
    subprocess.run([sys.executable, "-c", "import os, sys; os.truncate(sys.argv[1], int(sys.argv[2]))",
                    path, str(cut)], check=True)
    calls = {"get": lambda: _core.mmkv_get(h, name),
             "contains": lambda: _core.mmkv_contains(h, name),
             "put": lambda: _core.mmkv_put(h, b"new", b"x" * 50),
             "sync": lambda: _core.mmkv_sync(h)}
    try:
        got = calls[op]()
        print("returned", repr(got))
    except OSError as e:
        print("OSError", e.errno, e)
    for what, call in calls.items():
        try:
            call()
            print("after", what, "returned")
        except OSError as e:
            print("after", what, "OSError", e.errno)
    print("info", _core.mmkv_info(h)["count"])
    _core.mmkv_close(h)
    print("size", size)
    print("alive")
"""


def _run_truncated(tmp_path, key, cut, op, *name):
    path = tmp_path / "t.mmkv"
    out = finish_child(spawn_child(TRUNCATED, str(path), key, str(cut), op, *name, stdin=False))
    return out.splitlines()


@pytest.mark.parametrize("key", ["-", "0123456789abcdef"])
@pytest.mark.parametrize("op", ["get", "contains", "put", "sync"])
def test_truncated_by_another_process_is_an_oserror_not_sigbus(tmp_path, key, op):
    lines = _run_truncated(tmp_path, key, 0, op)
    assert lines[-1] == "alive", lines
    first = lines[0]  # (the encrypted model's get reads its plaintext copy, and still refuses)
    assert first.startswith(f"OSError {errno.ESTALE} "), lines
    assert str(tmp_path / "t.mmkv") in first and "truncated by another process to 0 bytes" in first
    # broken from then on: every call but close refuses, naming the file
    after = [line for line in lines if line.startswith("after")]
    assert len(after) == 4 and all(line.endswith(f" OSError {errno.EIO}") for line in after), lines


@pytest.mark.parametrize("key", ["-", "0123456789abcdef"])
@pytest.mark.parametrize("op", ["get", "contains"])
def test_a_read_of_a_record_past_the_cut_is_refused(tmp_path, key, op):
    """Cut to one page: a record on a later page is refused, also where the encrypted model
    would answer from its plaintext copy."""
    lines = _run_truncated(tmp_path, key, 4096, op, "k299")
    assert lines[-1] == "alive" and lines[0].startswith(f"OSError {errno.ESTALE} "), lines
    assert "to 4096 bytes, below the 16384 bytes mapped" in lines[0], lines


def test_truncated_to_part_of_the_mapping(tmp_path):
    """A cut past the used records' first pages: a put appending past it faults."""
    lines = _run_truncated(tmp_path, "-", 4096, "put")
    assert lines[-1] == "alive" and lines[0].startswith(f"OSError {errno.ESTALE} "), lines
    assert "to 4096 bytes, below the" in lines[0]


def test_sigbus_from_elsewhere_still_reaches_faulthandler(tmp_path):
    """The guard only catches faults inside a handle's mappings: a SIGBUS of another mapping
    still kills the process, after faulthandler (installed first) has printed its traceback."""
    code = """
        import faulthandler, mmap, os, sys
        faulthandler.enable()
        from pycipherbench import _core
        h = _core.mmkv_open(sys.argv[1], None)
        _core.mmkv_put(h, b"k", b"v")
        with open(sys.argv[2], "wb") as f:
            f.truncate(8192)
        fd = os.open(sys.argv[2], os.O_RDWR)
        mm = mmap.mmap(fd, 8192)
        os.ftruncate(fd, 0)
        print("touching", flush=True)
        mm[5000]
        print("survived")
    """
    p = spawn_child(code, str(tmp_path / "m.mmkv"), str(tmp_path / "other"), stdin=False)
    out, err = p.communicate(timeout=CHILD_TIMEOUT)
    # the default action kills with SIGBUS; under ASan (PCB_SANITIZED) its handler, which
    # faulthandler chains to in turn, reports and aborts
    dying = (-signal.SIGBUS, -signal.SIGABRT) if os.environ.get("PCB_SANITIZED") else (-signal.SIGBUS,)
    assert p.returncode in dying, (p.returncode, out, err)
    assert "touching" in out and "survived" not in out
    assert "Bus error" in err, err  # faulthandler's report: the chain reached it


def test_a_sent_sigbus_keeps_the_previous_disposition(tmp_path):
    """kill -BUS is not a fault: with Python's own handler installed it runs that handler."""
    code = """
        import os, signal, sys
        from pycipherbench import _core
        seen = []
        signal.signal(signal.SIGBUS, lambda *a: seen.append(1))
        h = _core.mmkv_open(sys.argv[1], None)  # the guard goes on top of Python's handler
        os.kill(os.getpid(), signal.SIGBUS)
        _core.mmkv_put(h, b"k", b"v")
        print("seen", len(seen))
    """
    out = finish_child(spawn_child(code, str(tmp_path / "m.mmkv"), stdin=False))
    assert out.split() == ["seen", "1"], out


def _state(h, names):
    return {n: _core.mmkv_get(h, n) for n in names}, _core.mmkv_info(h)


def _fill_to_next_growth(h, tag):
    """Puts until the next one would need the file grown; returns the names put."""
    names, i = [], 0
    start = _core.mmkv_info(h)["file_bytes"]
    while True:
        name = b"%s%04d" % (tag, i)
        value = b"%d" % i * 40
        need = len(name) + len(value) + 4
        info = _core.mmkv_info(h)
        if info["used_bytes"] + need + 4 > info["file_bytes"] - 4096 - 64:
            return names
        _core.mmkv_put(h, name, value)
        assert _core.mmkv_info(h)["file_bytes"] == start
        names.append(name)
        i += 1


@pytest.mark.parametrize("key", [None, b"crypt key"])
@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EFBIG, errno.EIO])
def test_a_failed_grow_leaves_the_model_and_the_file_as_they_were(tmp_path, key, err):
    path = str(tmp_path / "g.mmkv")
    h = _core.mmkv_open(path, key)
    try:
        names = _fill_to_next_growth(h, b"n")
        before = _state(h, names + [b"big"])
        size = os.path.getsize(path)
        _core._fault(nth=1, errno=err, calls=("posix_fallocate",), mode="persist")
        try:
            with pytest.raises(OSError) as info:
                _core.mmkv_put(h, b"big", b"B" * 3000)
        finally:
            calls, fired = _core._fault()
        assert fired >= 1 and info.value.errno == err
        assert path in str(info.value) and "reserve" in str(info.value)
        assert _state(h, names + [b"big"]) == before  # the put is not half-visible
        assert os.path.getsize(path) == size
        _core.mmkv_sync(h)  # the handle is still usable
        _core.mmkv_put(h, b"big", b"B" * 3000)  # and the retry, with room, applies
        assert _core.mmkv_get(h, b"big") == b"B" * 3000
    finally:
        _core.mmkv_close(h)
    h = _core.mmkv_open(path, key)
    try:
        got, _ = _state(h, names + [b"big"])
        assert got == {**before[0], b"big": b"B" * 3000}
    finally:
        _core.mmkv_close(h)


def test_a_failed_reservation_at_open_names_the_file(tmp_path):
    path = str(tmp_path / "o.mmkv")
    _core._fault(nth=1, errno=errno.ENOSPC, calls=("posix_fallocate",))
    try:
        with pytest.raises(OSError, match="reserve") as info:
            _core.mmkv_open(path, None)
    finally:
        _core._fault()
    assert info.value.errno == errno.ENOSPC and path in str(info.value)
    assert os.path.getsize(path) == 0  # cut back: nothing reserved is left behind
    h = _core.mmkv_open(path, None)
    _core.mmkv_put(h, b"k", b"v")
    _core.mmkv_close(h)


#: A child: RLIMIT_FSIZE caps files at argv[2] bytes, SIGXFSZ ignored; puts until the grow
#: past the cap fails, then checks the model kept its state and still works.
FSIZE = """
    import errno, os, resource, signal, sys
    from pycipherbench import _core
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[2]), hard))
    key = None if sys.argv[3] == "-" else sys.argv[3].encode()
    h = _core.mmkv_open(sys.argv[1], key)
    done = {}
    for i in range(100000):
        name, value = b"k%05d" % i, b"v%d" % i * 30
        try:
            _core.mmkv_put(h, name, value)
        except OSError as e:
            assert e.errno == errno.EFBIG and sys.argv[1] in str(e), e
            break
        done[name] = value
    else:
        raise SystemExit("never failed")
    assert _core.mmkv_get(h, name) is None, "the failed put is visible"
    assert all(_core.mmkv_get(h, k) == v for k, v in done.items())
    assert _core.mmkv_info(h)["count"] == len(done)
    _core.mmkv_sync(h)  # still usable
    resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    _core.mmkv_put(h, name, value)  # the retry, with the limit lifted, applies
    done[name] = value
    _core.mmkv_close(h)
    h = _core.mmkv_open(sys.argv[1], key)
    assert all(_core.mmkv_get(h, k) == v for k, v in done.items())
    print("ok", len(done))
"""


@pytest.mark.parametrize("key", ["-", "crypt key"])
def test_rlimit_fsize_fails_the_grow_with_efbig(tmp_path, key):
    out = finish_child(spawn_child(FSIZE, str(tmp_path / "f.mmkv"), str(64 * 1024), key,
                                   stdin=False))
    assert out.startswith("ok "), out


def _small_tmpfs():
    """A 1 MiB tmpfs (unmounted by the caller), or None where mounting is not allowed."""
    if os.geteuid() != 0 or not sys.platform.startswith("linux"):
        return None
    d = tempfile.mkdtemp(prefix="pcb-tmpfs-")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", d],
                       capture_output=True, text=True)
    if r.returncode != 0:
        os.rmdir(d)
        return None
    return d


#: A child on a full file system: puts until the disk is full; ENOSPC at the grow.
FULL_DISK = """
    import errno, sys
    from pycipherbench import _core
    key = None if sys.argv[2] == "-" else sys.argv[2].encode()
    h = _core.mmkv_open(sys.argv[1] + "/full.mmkv", key)
    done = {}
    for i in range(1000000):
        name, value = b"k%06d" % i, b"v%d" % i * 20
        try:
            _core.mmkv_put(h, name, value)
        except OSError as e:
            assert e.errno == errno.ENOSPC and "full.mmkv" in str(e), e
            break
        done[name] = value
    else:
        raise SystemExit("never full")
    assert _core.mmkv_get(h, name) is None
    assert all(_core.mmkv_get(h, k) == v for k, v in done.items())
    _core.mmkv_sync(h)
    _core.mmkv_close(h)
    print("ok", len(done))
"""


@pytest.mark.parametrize("key", ["-", "crypt key"])
def test_a_full_tmpfs_fails_the_grow_with_enospc(key):
    d = _small_tmpfs()
    if d is None:
        pytest.skip("no tmpfs can be mounted here (not root, or no mount permission); "
                    "test_a_failed_grow_... injects ENOSPC instead")
    try:
        with open(os.path.join(d, "filler"), "wb") as f:  # leave ~300 KiB free
            f.write(b"\0" * (700 * 1024))
        p = subprocess.run([sys.executable, "-c", textwrap.dedent(FULL_DISK), d, key],
                           env=child_env(), cwd=tempfile.gettempdir(),  # not a checkout's sources
                           capture_output=True, text=True, timeout=CHILD_TIMEOUT)
        assert p.returncode == 0 and p.stdout.startswith("ok "), (p.returncode, p.stdout, p.stderr[-2000:])
    finally:
        subprocess.run(["umount", d], check=False)
        os.rmdir(d)


def test_a_fault_in_one_thread_leaves_another_threads_handle_alone(tmp_path):
    """The recovery point is the faulting thread's: a thread busy on a healthy handle keeps
    going while another thread's handle faults on its cut file."""
    code = """
        import os, sys, threading
        from pycipherbench import _core
        good = _core.mmkv_open(sys.argv[1], b"key")
        bad = _core.mmkv_open(sys.argv[2], None)
        for i in range(200):
            _core.mmkv_put(bad, b"k%d" % i, b"v" * 40)
        stop, done = threading.Event(), []
        def worker():
            i = 0
            while not stop.is_set():
                _core.mmkv_put(good, b"w%d" % (i % 500), b"x" * 30)
                assert _core.mmkv_get(good, b"w%d" % (i % 500)) == b"x" * 30
                i += 1
            done.append(i)
        t = threading.Thread(target=worker)
        t.start()
        os.truncate(sys.argv[2], 0)
        errors = 0
        for i in range(50):
            try:
                _core.mmkv_get(bad, b"k%d" % i)
            except OSError:
                errors += 1
        stop.set()
        t.join()
        _core.mmkv_sync(good)
        print(errors, done[0] > 0, _core.mmkv_info(good)["count"])
    """
    out = finish_child(spawn_child(code, str(tmp_path / "good.mmkv"), str(tmp_path / "bad.mmkv"),
                                   stdin=False))
    errors, worked, count = out.split()
    assert errors == "50" and worked == "True" and 0 < int(count) <= 500, out

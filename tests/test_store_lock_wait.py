"""Ctrl-C during a write that waits for another process's file lock, and lock_timeout's
range (issue 25, defect 5).

A commit, flush, rotate or open that waits for another writer's lock on ``<path>-lock``
used to ignore SIGINT until ``lock_timeout`` ran out (10 s by default, or an hour), and
``lock_timeout=1e300`` was accepted. Now the wait sleeps in short slices and asks Python's
signal handlers at least every 0.05 s: the call raises KeyboardInterrupt, takes no lock,
writes nothing, and an interrupted commit leaves its changes in the editor, so a later
commit writes them. lock_timeout is a finite number of seconds from 0 to 86400.

The waiting store runs in a child process (the test sends it SIGINT); another child holds
the lock (conftest's hold_lock). Only the hang bound is a time limit: the elapsed times the
children print are informative.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time

import pytest

from pycipherbench import store

from conftest import CHILD_TIMEOUT, finish_child, hold_lock, spawn_child

#: The waiting child: opens the store (lock_timeout: an hour), prints "waiting" just
#: before the call that waits, and reports how it ended. argv: path, opts, what, release.
WAITER = """
    import json, os, sys, time
    from pycipherbench import store
    path, opts, what, release = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
    if what == "open":  # a new store's first write waits for the lock
        print("waiting", flush=True)
        t0 = time.monotonic()
        try:
            store.open(path, lock_timeout=3600, **opts)
        except KeyboardInterrupt:
            print(f"interrupted {time.monotonic() - t0:.3f}", flush=True)
        open(release, "w").close()
        with store.open(path, lock_timeout=3600, **opts) as s:
            s.edit().put_string("after", "1").commit()
            print("opened", json.dumps(s.all()), flush=True)
        sys.exit(0)
    s = store.open(path, lock_timeout=3600, **opts)
    before = s.all()
    e = s.edit().put_string("new", "2").remove("old")
    if what == "flush":
        e.apply()
    print("waiting", flush=True)
    t0 = time.monotonic()
    try:
        if what == "commit":
            e.commit()
        elif what == "flush":
            s.flush()
        elif what == "rotate":
            s.rotate()
        elif what == "rotate_lazy":
            s.rotate(lazy=True)
    except KeyboardInterrupt:
        print(f"interrupted {time.monotonic() - t0:.3f}", flush=True)
    else:
        print("not interrupted", flush=True)
    if what in ("commit", "rotate", "rotate_lazy"):
        assert s.all() == before, (s.all(), before)  # memory equals disk
    print("state", json.dumps(s.all()), flush=True)
    open(release, "w").close()  # the holder lets go: the same calls now succeed
    if what == "commit":
        assert e.commit() is True  # the interrupted commit's changes, kept in the editor
    elif what == "flush":
        s.flush()
    else:
        s.rotate(lazy=what == "rotate_lazy")
    print("after", json.dumps(s.all()), flush=True)
    s.close()
"""

KEYED = {"encrypted": True, "layout": "entries"}


def _opts(tmp_path, kind: str) -> dict:
    if kind == "plain":
        return {"encrypted": False}
    if kind == "file":
        return {"layout": "file", "master_key_file": str(tmp_path / "master.key")}
    return {"master_key_file": str(tmp_path / "master.key")}


class _Lines:
    """A child's stdout lines, read by a thread: next() waits at most the hang bound."""

    def __init__(self, p: "subprocess.Popen[str]") -> None:
        self.q: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            for line in p.stdout:
                self.q.put(line.strip())
            self.q.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def next(self, timeout: float = CHILD_TIMEOUT) -> str | None:
        try:
            return self.q.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no line from the child in {timeout} s (hung)")

    def rest(self) -> list[str]:
        out = []
        while (line := self.next()) is not None:
            out.append(line)
        return out


def _kill_on_hang(p: "subprocess.Popen[str]") -> None:
    if p.poll() is None:
        p.kill()
    p.wait()


def _interrupt_while_waiting(tmp_path, what: str, opts: dict) -> tuple[list[str], float]:
    """Runs WAITER with the lock held, SIGINT once it waits: (its output lines, seconds
    from SIGINT to its report)."""
    path, release = tmp_path / "held.xml", tmp_path / "release"
    holder = hold_lock(f"{path}-lock", release)
    try:
        child = spawn_child(WAITER, str(path), json.dumps(opts), what, str(release), stdin=False)
        try:
            lines = _Lines(child)
            assert lines.next() == "waiting", child.stderr.read()
            time.sleep(0.5)  # well inside the wait
            sent = time.monotonic()
            child.send_signal(signal.SIGINT)
            first = lines.next()
            elapsed = time.monotonic() - sent
            rest = lines.rest()
            assert child.wait(timeout=CHILD_TIMEOUT) == 0, child.stderr.read()
        finally:
            release.touch()
            _kill_on_hang(child)
    finally:
        release.touch()
        finish_child(holder)
    return [first or "", *rest], elapsed


@pytest.mark.parametrize("kind", ["entries", "file", "plain"])
def test_sigint_interrupts_a_commit_waiting_for_the_lock(tmp_path, kind):
    opts = _opts(tmp_path, kind)
    path = tmp_path / "held.xml"
    with store.open(path, **opts) as s:
        s.edit().put_string("old", "1").commit()
    before = path.read_bytes()
    lines, elapsed = _interrupt_while_waiting(tmp_path, "commit", opts)
    assert lines[0].startswith("interrupted"), lines
    assert elapsed < 5, f"KeyboardInterrupt {elapsed:.2f} s after SIGINT"  # hang bound only
    assert lines[1] == "state " + json.dumps({"old": "1"}), lines
    assert lines[2] == "after " + json.dumps({"new": "2"}), lines  # the editor kept them
    with store.open(path, **opts) as s:
        assert s.all() == {"new": "2"}
    assert path.read_bytes() != before


def test_interrupted_commit_writes_nothing_and_takes_no_lock(tmp_path):
    """The file is unchanged while the holder still holds the lock (checked from here
    before the release), and the lock file is not held by the interrupted child."""
    opts = _opts(tmp_path, "entries")
    path, release = tmp_path / "held.xml", tmp_path / "release"
    with store.open(path, **opts) as s:
        s.edit().put_string("old", "1").commit()
    before = path.read_bytes()
    holder = hold_lock(f"{path}-lock", release)
    code = """
        import json, sys, time
        from pycipherbench import store
        s = store.open(sys.argv[1], lock_timeout=3600, **json.loads(sys.argv[2]))
        e = s.edit().put_string("new", "2")
        print("waiting", flush=True)
        try:
            e.commit()
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        sys.stdin.readline()  # the test looks at the file and the lock meanwhile
        print(json.dumps(s.all()), flush=True)
        s.close()
    """
    child = spawn_child(code, str(path), json.dumps(opts))
    try:
        lines = _Lines(child)
        assert lines.next() == "waiting", child.stderr.read()
        time.sleep(0.5)
        child.send_signal(signal.SIGINT)
        assert lines.next() == "interrupted"
        assert path.read_bytes() == before, "an interrupted commit wrote the file"
        assert not [n for n in os.listdir(tmp_path) if ".tmp" in n or n.startswith(".held")], \
            os.listdir(tmp_path)
    finally:
        release.touch()
        finish_child(holder)
        child.stdin.write("\n")
        child.stdin.flush()
    try:
        assert lines.next() == json.dumps({"old": "1"})
        assert child.wait(timeout=CHILD_TIMEOUT) == 0, child.stderr.read()
    finally:
        _kill_on_hang(child)
    assert path.read_bytes() == before


@pytest.mark.parametrize("what", ["flush", "rotate", "rotate_lazy"])
def test_sigint_interrupts_flush_and_rotate_waiting_for_the_lock(tmp_path, what):
    opts = _opts(tmp_path, "entries")
    path = tmp_path / "held.xml"
    with store.open(path, **opts) as s:
        s.edit().put_string("old", "1").commit()
    lines, elapsed = _interrupt_while_waiting(tmp_path, what, opts)
    assert lines[0].startswith("interrupted"), lines
    # flush: memory keeps the applied changes (pending; the background writer, which is
    # never interrupted, still waits for the lock and writes them once it is free).
    state = {"new": "2"} if what == "flush" else {"old": "1"}
    assert lines[1] == "state " + json.dumps(state), lines
    assert lines[-1].startswith("after"), lines
    want = {"new": "2"} if what == "flush" else {"old": "1"}
    with store.open(path, **opts) as s:
        assert s.all() == want


def test_sigint_interrupts_a_new_store_waiting_for_the_lock(tmp_path):
    opts = _opts(tmp_path, "entries")
    lines, elapsed = _interrupt_while_waiting(tmp_path, "open", opts)
    assert lines[0].startswith("interrupted"), lines
    assert lines[1] == "opened " + json.dumps({"after": "1"}), lines


@pytest.mark.parametrize("bad", [1e300, float("inf"), float("-inf"), float("nan"), -1, -1e-9,
                                 86400.5, 10**6])
def test_lock_timeout_out_of_range_is_refused(tmp_path, bad):
    with pytest.raises(ValueError) as info:
        store.open(tmp_path / "x.xml", encrypted=False, lock_timeout=bad)
    msg = str(info.value)
    assert "lock_timeout" in msg and "0 to 86400" in msg and repr(float(bad)) in msg, msg
    assert not (tmp_path / "x.xml").exists()


def test_lock_timeout_range_ends_are_accepted(tmp_path):
    for ok in (0, 0.0, 86400, 86400.0):
        with store.open(tmp_path / "x.xml", encrypted=False, lock_timeout=ok) as s:
            s.edit().put_int("n", 1).commit()


def test_lock_timeout_past_any_float_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="lock_timeout.*finite"):
        store.open(tmp_path / "x.xml", encrypted=False, lock_timeout=10**400)
    with pytest.raises(TypeError):
        store.open(tmp_path / "x.xml", encrypted=False, lock_timeout="10")

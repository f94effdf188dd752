"""A store's paths and names are fixed at open (issue 17, defects 2, 4 and 5).

- The file, its directory, the lock file and the .scrypt file are fixed when the store
  opens: absolute, in the canonical directory, with the path's final symbolic links
  followed. A later ``os.chdir()`` changes nothing (``Store.path`` stays what was given,
  ``Store.file`` is the absolute file).
- Through a symbolic link with another base name, the store name (the names' AES-SIV
  associated data) is the target's: entries read through the link, puts land under the
  target's name, the link is kept.
- A file whose names all fail to open under this store name (renamed, or written through
  a link by an older release) is said to be under another name, not "tampered".
- A fork while a thread waits for the file lock leaves the lock the parent's: the child
  closes its copy of the descriptor being acquired, so once the parent's commit closes it,
  other writers get the lock while the child lives. Lock descriptors are close-on-exec.

Everything that could hang runs in a child process with a timeout; the lock is held by a
real second process (an OFD lock and a flock on one descriptor, so it excludes the store
whichever lock it was built with: see store/lock.h).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from pycipherbench import store
from pycipherbench import DecryptionError

from conftest import PACKAGE_ROOT, finish_child as _finish, hold_lock as _hold_lock  # noqa: E402
from conftest import spawn_child  # noqa: E402  (shared scaffolding)

REPO = Path(PACKAGE_ROOT)

def _files(d: Path) -> set[str]:
    return {p.name for p in d.iterdir()}


# ------------------------------------------------------------- defect 2: chdir after open


@pytest.fixture()
def dirs(tmp_path, monkeypatch):
    d1, d2 = tmp_path / "d1", tmp_path / "d2"
    d1.mkdir()
    d2.mkdir()
    monkeypatch.chdir(d1)
    return d1, d2


def test_relative_path_commit_and_apply_stay_in_the_open_directory(dirs, monkeypatch):
    d1, d2 = dirs
    mk = str(d1 / "master.key")
    s = store.open("prefs.xml", master_key_file=mk)
    try:
        s.edit().put_string("before", "1").commit()
        monkeypatch.chdir(d2)
        s.edit().put_string("commit", "2").commit()
        s.edit().put_string("apply", "3").apply()
        s.flush()
        assert _files(d2) == set(), f"a write followed chdir(): {_files(d2)}"
        assert s.disk_bytes == (d1 / "prefs.xml").stat().st_size
        assert s.path == "prefs.xml"  # as given
        assert s.file == os.path.join(os.path.realpath(d1), "prefs.xml")  # fixed at open
    finally:
        s.close()
    assert _files(d2) == set(), f"a write followed chdir(): {_files(d2)}"
    assert {"prefs.xml", "prefs.xml-lock"} <= _files(d1)
    with store.open(d1 / "prefs.xml", master_key_file=mk) as t:
        assert t.all() == {"before": "1", "commit": "2", "apply": "3"}


def test_relative_path_after_chdir_merges_with_a_second_writer(dirs, monkeypatch):
    d1, d2 = dirs
    mk = str(d1 / "master.key")
    s = store.open("prefs.xml", master_key_file=mk)
    try:
        s.edit().put_string("a", "1").commit()
        monkeypatch.chdir(d2)
        with store.open(d1 / "prefs.xml", master_key_file=mk) as other:  # another Store object
            other.edit().put_string("other", "x").commit()
        s.edit().put_string("b", "2").commit()  # re-reads d1/prefs.xml under d1's lock: merges
        assert s.all() == {"a": "1", "other": "x", "b": "2"}
    finally:
        s.close()
    assert _files(d2) == set()


def test_relative_path_after_chdir_takes_the_open_directorys_lock(dirs, monkeypatch):
    d1, d2 = dirs
    s = store.open("prefs.xml", encrypted=False, lock_timeout=0.3)
    release = d1.parent / "release"
    try:
        s.edit().put_string("k", "v").commit()
        monkeypatch.chdir(d2)
        holder = _hold_lock(d1 / "prefs.xml-lock", release)
        try:
            with pytest.raises(TimeoutError, match="prefs.xml-lock"):
                s.edit().put_string("blocked", "1").commit()
        finally:
            release.touch()
            _finish(holder)
        s.edit().put_string("after", "1").commit()
    finally:
        s.close()
    assert _files(d2) == set()
    with store.open(d1 / "prefs.xml", encrypted=False) as t:
        assert t.all() == {"k": "v", "after": "1"}


def test_relative_path_after_chdir_rotate_writes_the_scrypt_file_beside_the_store(dirs, monkeypatch):
    d1, d2 = dirs
    s = store.open("pp.xml", passphrase="old", scrypt_n=16)
    try:
        s.edit().put_string("k", "v").commit()
        monkeypatch.chdir(d2)
        s.rotate(passphrase="new")
    finally:
        s.close()
    assert _files(d2) == set()
    with store.open(d1 / "pp.xml", passphrase="new") as t:
        assert t.all() == {"k": "v"}


# --------------------------------------------------- defect 5: a link with another name


def test_symlink_with_another_base_name_reads_and_writes_under_the_targets_name(tmp_path):
    mk = str(tmp_path / "master.key")
    real = tmp_path / "real.xml"
    with store.open(real, master_key_file=mk) as s:
        s.edit().put_string("k", "v").put_int("n", 1).commit()
    alias = tmp_path / "alias.xml"
    alias.symlink_to("real.xml")
    with store.open(alias, master_key_file=mk) as s:
        assert s.name == "real" and s.path == str(alias) and s.file == str(real.resolve())
        assert s.get_string("k") == "v" and s.all() == {"k": "v", "n": 1}
        s.edit().put_string("k", "through the link").commit()
    assert alias.is_symlink() and os.readlink(alias) == "real.xml"
    assert not (tmp_path / "alias.xml-lock").exists()
    with store.open(real, master_key_file=mk) as s:
        got = s.all()  # would raise "tampered" for an entry sealed under 'alias'
        assert got == {"k": "through the link", "n": 1}
        assert len(s) == 2  # one entry per name, not one per store name


def test_symlink_in_a_linked_directory_shares_the_targets_lock(tmp_path):
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    (tmp_path / "linkdir").symlink_to(real_dir)
    via = tmp_path / "linkdir" / "p.xml"
    with store.open(via, encrypted=False) as s:
        s.edit().put_string("k", "v").commit()
        assert s.name == "p" and s.file == str((real_dir / "p.xml").resolve())
    assert (real_dir / "p.xml-lock").exists() and (real_dir / "p.xml").is_file()


def test_renamed_file_is_said_to_be_under_another_name_not_tampered(tmp_path):
    mk = str(tmp_path / "master.key")
    with store.open(tmp_path / "first.xml", master_key_file=mk) as s:
        s.edit().put_string("a", "1").put_string("b", "2").commit()
    os.rename(tmp_path / "first.xml", tmp_path / "second.xml")
    with store.open(tmp_path / "second.xml", master_key_file=mk) as s:
        with pytest.raises(DecryptionError) as info:
            s.all()
    msg = str(info.value)
    assert "no entry's name opens under the store name 'second'" in msg, msg
    assert "another store name" in msg and "renamed or reached through a link" in msg
    assert "tampered)" not in msg


def test_one_bad_name_among_good_ones_is_still_tampered(tmp_path):
    """The other-name message only when no name opens: a single bad entry is tampered."""
    mk = str(tmp_path / "master.key")
    path = tmp_path / "p.xml"
    with store.open(path, master_key_file=mk) as s:
        s.edit().put_string("a", "1").put_string("b", "2").put_string("c", "3").commit()
    text = path.read_text()
    names = re.findall(r'<string name="([^"]+)"', text)
    entry = next(n for n in names if not n.startswith("__androidx"))
    i = 20  # inside the SIV tag: still Base64, no longer authentic
    bad = entry[:i] + ("B" if entry[i] != "B" else "C") + entry[i + 1:]
    path.write_text(text.replace(f'name="{entry}"', f'name="{bad}"'))
    with store.open(path, master_key_file=mk) as s:
        with pytest.raises(DecryptionError, match="tampered") as info:
            s.all()
    assert "no entry's name opens" not in str(info.value)


# --------------------------------------------------- defect 4: fork while waiting for the lock

FORK_WHILE_WAITING = """
    import os, signal, subprocess, sys, threading, time
    from pycipherbench import store
    path, release, other_code = sys.argv[1], sys.argv[2], sys.argv[3]
    lock_file = os.path.realpath(path) + "-lock"

    def lock_fds(pid="self"):
        found = []
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == lock_file:
                        found.append(fd)
                except OSError:
                    pass
        except OSError:
            return None
        return found

    s = store.open(path, encrypted=False, lock_timeout=60)
    result = {}
    def waiter():
        try:
            s.edit().put_string("waiter", "1").commit()
            result["ok"] = True
        except BaseException as exc:
            result["err"] = repr(exc)
    t = threading.Thread(target=waiter)
    t.start()
    for _ in range(500):  # until the thread has opened the lock file and waits
        fds = lock_fds()
        if fds is None:
            time.sleep(1.0)
            break
        if fds:
            break
        time.sleep(0.01)
    time.sleep(0.05)
    pid = os.fork()
    if pid == 0:  # the child: a long-lived process that never writes
        time.sleep(300)
        os._exit(0)
    try:
        time.sleep(0.2)
        child_fds = lock_fds(pid)
        print("child-lock-fds", child_fds if child_fds is not None else "unknown", flush=True)
        open(release, "w").close()  # the helper lets go
        t.join(60)
        assert not t.is_alive(), "the waiting commit never finished"
        assert result.get("ok"), result
        print("waiter-committed", flush=True)
        other = subprocess.run([sys.executable, "-c", other_code, path], capture_output=True,
                               text=True, timeout=60)
        print("other", other.stdout.strip(), other.stderr.strip()[-500:], flush=True)
        print("child-alive", os.waitpid(pid, os.WNOHANG) == (0, 0), flush=True)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        s.close()
"""

OTHER_COMMIT = """
import sys
from pycipherbench import store
s = store.open(sys.argv[1], encrypted=False, lock_timeout=3)
try:
    s.edit().put_string("other", "1").commit()
    print("committed")
except TimeoutError as exc:
    print("timeout", exc)
s.close()
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_fork_while_a_thread_waits_for_the_lock_leaves_the_lock_the_parents(tmp_path):
    path = tmp_path / "forked.xml"
    with store.open(path, encrypted=False) as s:
        s.edit().put_string("before", "1").commit()
    release = tmp_path / "release"
    holder = _hold_lock(Path(f"{path}-lock"), release)
    try:
        out = _finish(spawn_child(FORK_WHILE_WAITING, str(path), str(release), OTHER_COMMIT))
    finally:
        release.touch()
        _finish(holder)
    lines = dict(ln.split(" ", 1) for ln in out.strip().splitlines() if " " in ln)
    assert "waiter-committed" in out, out
    assert lines.get("child-alive") == "True", out  # the other commit ran while the child lived
    assert lines.get("other", "").startswith("committed"), f"another writer was locked out: {out}"
    if lines.get("child-lock-fds") != "unknown":
        assert lines.get("child-lock-fds") == "[]", f"the forked child kept the lock file open: {out}"
    with store.open(path, encrypted=False) as s:
        assert s.all() == {"before": "1", "waiter": "1", "other": "1"}


EXEC_WHILE_WAITING = """
    import os, subprocess, sys, threading, time
    from pycipherbench import store
    path, release = sys.argv[1], sys.argv[2]
    lock_file = os.path.realpath(path) + "-lock"
    def lock_fds():
        return [fd for fd in os.listdir("/proc/self/fd")
                if os.path.realpath(f"/proc/self/fd/{fd}") == lock_file]
    s = store.open(path, encrypted=False, lock_timeout=60)
    t = threading.Thread(target=lambda: s.edit().put_string("w", "1").commit())
    t.start()
    for _ in range(500):
        if lock_fds():
            break
        time.sleep(0.01)
    assert lock_fds(), "the waiting thread has no lock descriptor"
    listing = subprocess.run(
        [sys.executable, "-c", "import os; print(sorted(os.path.realpath('/proc/self/fd/' + f) "
         "for f in os.listdir('/proc/self/fd')))"],
        close_fds=False, capture_output=True, text=True, timeout=60).stdout
    open(release, "w").close()
    t.join(60)
    s.close()
    print("exec-child-has-lock", lock_file in listing, flush=True)
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd (Linux)")
def test_lock_descriptor_is_close_on_exec(tmp_path):
    path = tmp_path / "exec.xml"
    with store.open(path, encrypted=False) as s:
        s.edit().put_string("before", "1").commit()
    release = tmp_path / "release"
    holder = _hold_lock(Path(f"{path}-lock"), release)
    try:
        out = _finish(spawn_child(EXEC_WHILE_WAITING, str(path), str(release)))
    finally:
        release.touch()
        _finish(holder)
    assert "exec-child-has-lock False" in out, out

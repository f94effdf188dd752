"""Every change of the store's file is one transaction (issue 17): lazy rotation merges like
the full one, and a change that fails puts memory, keyset text and generations back exactly.

Defect 1 of issue 17: ``rotate(lazy=True)`` re-sealed the value keyset into the store's
keyset text before taking the file lock, so the merge compared the file with the changed
text and called another writer's commit a re-keying; every later commit of that Store then
failed, and a failed lazy rotation left a pending generation behind. Races use real second
processes; anything that could hang runs in a child with a timeout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

import pycipherbench as pcb
from pycipherbench import store

from conftest import PACKAGE_ROOT, child_env  # noqa: E402  (shared scaffolding)

REPO = Path(PACKAGE_ROOT)
ENV = child_env()
TIMEOUT = 180

KINDS = {
    "entries": {},
    "file": {"layout": "file"},
    "faithful-chacha": {"faithful": True, "value_encryption": "chacha20-poly1305"},
}


def _opts(kind: str, mk: Path) -> dict:
    return dict(KINDS[kind], master_key_file=str(mk))


def _value_key_count(path: Path) -> int:
    info = store.inspect(str(path))
    assert info.value_keyset is not None
    return len(info.value_keyset.keys)


def _run(code: str, *args: str) -> str:
    r = subprocess.run([sys.executable, "-X", "faulthandler", "-c", textwrap.dedent(code), *args],
                       env=ENV, cwd=tempfile.gettempdir(), capture_output=True, text=True,
                       timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_lazy_rotation_after_another_store_objects_commit(tmp_path, kind):
    path, mk = tmp_path / "s.xml", tmp_path / "mk.bin"
    opts = _opts(kind, mk)
    a = store.open(str(path), **opts)
    a.edit().put_string("a0", "A").commit()
    with store.open(str(path), **opts) as b:
        b.edit().put_string("b0", "B").commit()
    a.rotate(lazy=True)  # raised "re-keyed by another writer (rotate) or replaced"
    assert a.get_string("b0") == "B"  # the merge brought B's commit in
    a.edit().put_string("a1", "A1").commit()
    a.edit().put_string("a2", "A2").apply()
    a.close()
    with store.open(str(path), **opts) as s:
        assert s.all() == {"a0": "A", "b0": "B", "a1": "A1", "a2": "A2"}
    if kind != "file":
        assert _value_key_count(path) == 2


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_lazy_rotation_after_another_process_commits(tmp_path, kind):
    path, mk = tmp_path / "s.xml", tmp_path / "mk.bin"
    opts = _opts(kind, mk)
    a = store.open(str(path), **opts)
    a.edit().put_string("a0", "A").commit()
    _run("""
        import json, sys
        from pycipherbench import store
        with store.open(sys.argv[1], **json.loads(sys.argv[2])) as b:
            b.edit().put_string("b0", "B").commit()
    """, str(path), json.dumps(opts))
    a.rotate(lazy=True)
    a.edit().put_string("a1", "A1").commit()
    a.close()
    with store.open(str(path), **opts) as s:
        assert s.all() == {"a0": "A", "b0": "B", "a1": "A1"}


def test_other_writers_keep_committing_after_a_lazy_rotation(tmp_path):
    """A Store that opened before another one's lazy rotation adopts the rotated value keyset
    (a superset of its own) at its next commit instead of refusing it as a re-keying."""
    path, mk = tmp_path / "s.xml", tmp_path / "mk.bin"
    opts = _opts("entries", mk)
    a, b = store.open(str(path), **opts), store.open(str(path), **opts)
    a.edit().put_string("a0", "A").commit()
    a.rotate(lazy=True)
    a.edit().put_string("a1", "A1").commit()  # sealed under the new primary
    b.edit().put_string("b0", "B").commit()
    assert b.get_string("a1") == "A1"
    b.edit().put_string("b1", "B1").commit()
    a.close()
    b.close()
    with store.open(str(path), **opts) as s:
        assert s.all() == {"a0": "A", "a1": "A1", "b0": "B", "b1": "B1"}
    assert _value_key_count(path) == 2


def test_five_writers_and_a_lazy_rotator(tmp_path):
    """The issue's race: five writer processes and one lazy rotator; every rotation and every
    commit succeeds, and nobody's keys are lost."""
    path, mk = tmp_path / "s.xml", tmp_path / "mk.bin"
    opts = _opts("entries", mk)
    store.open(str(path), **opts).close()
    writer = """
        import json, sys
        from pycipherbench import store
        path, opts, who, n = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4])
        with store.open(path, **opts) as s:
            for i in range(n):
                s.edit().put_string(f"{who}-{i}", str(i)).commit()
                if who == "rot" and i % 2 == 0:
                    s.rotate(lazy=True)
        print("ok")
    """
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(writer), str(path),
                               json.dumps(opts), who, "12"], env=ENV, cwd=tempfile.gettempdir(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for who in ["w0", "w1", "w2", "w3", "w4", "rot"]]
    for p in procs:
        try:
            out, err = p.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail("a writer hung")
        assert p.returncode == 0 and out.strip() == "ok", err[-3000:]
    with store.open(str(path), **opts) as s:
        got = s.all()
    want = {f"{w}-{i}": str(i) for w in ["w0", "w1", "w2", "w3", "w4", "rot"] for i in range(12)}
    assert got == want
    assert _value_key_count(path) == 1 + 6  # the first key and one per rotation (i = 0, 2, ... 10)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_failed_lazy_rotation_restores_exactly(tmp_path, kind):
    """The path replaced by a directory: the lazy rotation fails, and afterwards nothing is
    pending (flush/close succeed), the value keyset is as before (one key), and the next
    commit writes the old keyset."""
    path, mk = tmp_path / "s.xml", tmp_path / "mk.bin"
    opts = _opts(kind, mk)
    with store.open(str(path), **opts) as s0:
        s0.edit().put_string("k", "v").commit()
    before = path.read_bytes()
    s = store.open(str(path), **opts)
    aside = tmp_path / "aside.xml"
    path.rename(aside)
    path.mkdir()
    with pytest.raises(OSError):
        s.rotate(lazy=True)
    path.rmdir()
    aside.rename(path)
    s.flush()  # raised "writing applied changes failed (they stay pending)"
    assert s.get_string("k") == "v"
    assert path.read_bytes() == before  # nothing was written
    s.edit().put_string("k2", "v2").commit()
    s.close()
    with store.open(str(path), **opts) as s2:
        assert s2.all() == {"k": "v", "k2": "v2"}
    if kind != "file":
        assert _value_key_count(path) == 1


def test_failed_lazy_rotation_never_applied_reports_nothing_pending(tmp_path):
    path, mk = tmp_path / "s.xml", tmp_path / "mk.bin"
    opts = _opts("entries", mk)
    store.open(str(path), **opts).close()
    s = store.open(str(path), **opts)
    path.unlink()
    path.mkdir()
    with pytest.raises(OSError):
        s.rotate(lazy=True)
    s.flush()
    s.close()  # raised: pending applied changes
    shutil.rmtree(path)


def test_failed_commit_after_a_merge_puts_memory_back_as_before(tmp_path):
    """A commit that merges another writer's change and then fails to write leaves memory as
    it was before the commit (the merge undone too), and the next commit merges again."""
    code = """
        import json, resource, signal, sys
        from pycipherbench import store
        path, opts = sys.argv[1], json.loads(sys.argv[2])
        a, b = store.open(path, **opts), store.open(path, **opts)
        a.edit().put_string("a", "A" * 32).commit()
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, hard))
        try:
            b.edit().put_string("b", "B").commit()
        except OSError:
            print("failed")
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        print(json.dumps(b.all()))
        b.edit().put_string("b", "B").commit()
        print(json.dumps(b.all(), sort_keys=True))
        a.close(); b.close()
    """
    path, mk = tmp_path / "s.xml", tmp_path / "mk.bin"
    out = _run(code, str(path), json.dumps(_opts("entries", mk))).splitlines()
    assert out[0] == "failed"
    assert json.loads(out[1]) == {}
    assert json.loads(out[2]) == {"a": "A" * 32, "b": "B"}


CLEAR_KINDS = {
    "entries": {},
    "file": {"layout": "file"},
    "cache": {"cache": True},
    "faithful": {"faithful": True},
    "plain": {"encrypted": False},
}


@pytest.mark.parametrize("kind", sorted(CLEAR_KINDS))
def test_failed_write_of_an_applied_clear_after_another_writer_keeps_it(tmp_path, kind):
    """Defect 1 of issue 25: b commits; a's applied clear() + put fails to write (a merge of
    b's file first). flush() raises, and a's memory still holds the cleared map and its put
    (not b's file, as the merge's "map before" was b's file while a clear was unwritten);
    once the write can succeed, flush() writes exactly {"mine": "A"}: the clear wins over
    b's entries."""
    code = """
        import json, resource, signal, sys
        from pycipherbench import store
        path, opts = sys.argv[1], json.loads(sys.argv[2])
        a, b = store.open(path, **opts), store.open(path, **opts)
        a.edit().put_string("old", "O").commit()
        b.edit().put_string("theirs", "B" * 64).commit()
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, hard))
        a.edit().clear().put_string("mine", "A").apply()
        try:
            a.flush()
            print("flushed")
        except OSError:
            print("failed")
        print(json.dumps(a.all(), sort_keys=True))
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        a.flush()
        print(json.dumps(a.all(), sort_keys=True))
        a.close(); b.close()
        with store.open(path, **opts) as c:
            print(json.dumps(c.all(), sort_keys=True))
    """
    path, mk = tmp_path / "s.xml", tmp_path / "mk.bin"
    opts = dict(CLEAR_KINDS[kind])
    if opts.get("encrypted", True):
        opts["master_key_file"] = str(mk)
    out = _run(code, str(path), json.dumps(opts)).splitlines()
    assert out[0] == "failed"
    assert json.loads(out[1]) == {"mine": "A"}
    assert json.loads(out[2]) == {"mine": "A"}
    assert json.loads(out[3]) == {"mine": "A"}


_FAILED_PASSPHRASE_ROTATION = """
    import json, os, resource, signal, sys
    from pycipherbench import store
    path, opts, new = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    scrypt = path + ".scrypt"
    with store.open(path, **opts) as s0:
        s0.edit().put_string("k", "v" * 600).commit()
    before = open(scrypt).read() if os.path.exists(scrypt) else None
    s = store.open(path, **opts)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (400, hard))  # a .scrypt fits, the store does not
    try:
        s.rotate(passphrase=new)
        print("rotated")
    except OSError:
        print("failed")
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    after = open(scrypt).read() if os.path.exists(scrypt) else None
    print(json.dumps(after == before))
    print(json.dumps(s.all()))
    s.close()
    with store.open(path, **opts) as s1:  # the old key still opens it, the side file unchanged
        print(json.dumps(s1.all()))
    print(json.dumps((open(scrypt).read() if os.path.exists(scrypt) else None) == before))
    with store.open(path, **opts) as s2:
        s2.rotate(passphrase=new)
    with store.open(path, passphrase=new, scrypt_n=opts.get("scrypt_n", 1024)) as s3:
        print(json.dumps(s3.all()))
"""


@pytest.mark.parametrize("origin", ["passphrase", "key-file"])
def test_failed_passphrase_rotation_leaves_the_scrypt_file_as_it_was(tmp_path, origin):
    """Issue 25: the .scrypt side file is part of the rotation's transaction. A rotation to a
    new passphrase whose store write fails leaves the .scrypt file byte for byte as it was
    (its new tag is written only after the store's file is published), and one from a key
    file leaves none behind (the .scrypt it created is removed); the old key opens the store,
    and a retry publishes."""
    path, mk = tmp_path / "s.xml", tmp_path / "mk.bin"
    opts = ({"passphrase": "old horse", "scrypt_n": 1024} if origin == "passphrase"
            else {"master_key_file": str(mk)})
    out = _run(_FAILED_PASSPHRASE_ROTATION, str(path), json.dumps(opts), "new battery").splitlines()
    assert out[0] == "failed"
    assert json.loads(out[1]) is True
    assert json.loads(out[2]) == {"k": "v" * 600}
    assert json.loads(out[3]) == {"k": "v" * 600}
    assert json.loads(out[4]) is True
    assert json.loads(out[5]) == {"k": "v" * 600}


@pytest.mark.parametrize("kind", ["entries", "cache", "file"])
def test_commit_failing_over_a_pending_clear_keeps_the_clear(tmp_path, kind):
    """Defect 1's neighbour: b commits; a's applied clear() fails to write, and so does a
    commit after it, which reads b's file again (the merge keeps the map: the clear wins)
    and is undone; memory is as before that commit (the cleared map and its put), and once
    writes succeed the file holds exactly the clear's put and the commit's."""
    code = """
        import json, resource, signal, sys
        from pycipherbench import store
        path, opts = sys.argv[1], json.loads(sys.argv[2])
        a, b = store.open(path, **opts), store.open(path, **opts)
        a.edit().put_string("old", "O").commit()
        b.edit().put_string("theirs", "B" * 64).commit()
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, hard))
        a.edit().clear().put_string("mine", "A").apply()
        try:
            a.flush()
        except OSError:
            pass
        try:
            a.edit().put_string("x", "X").commit()
            print("committed")
        except OSError:
            print("failed")
        print(json.dumps(a.all(), sort_keys=True))
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        a.edit().put_string("x", "X").commit()
        print(json.dumps(a.all(), sort_keys=True))
        a.close(); b.close()
        with store.open(path, **opts) as c:
            print(json.dumps(c.all(), sort_keys=True))
    """
    path, mk = tmp_path / "s.xml", tmp_path / "mk.bin"
    opts = dict(CLEAR_KINDS[kind], master_key_file=str(mk))
    out = _run(code, str(path), json.dumps(opts)).splitlines()
    assert out[0] == "failed"
    assert json.loads(out[1]) == {"mine": "A"}
    assert json.loads(out[2]) == {"mine": "A", "x": "X"}
    assert json.loads(out[3]) == {"mine": "A", "x": "X"}


def test_cache_never_outlives_the_map_it_describes(tmp_path):
    """entries.h: the map is replaced only with the plain cache forgotten. cache=True: a
    reads k (cached), b commits a new k, a's commit merges it (the map replaced), and a
    then reads b's value; a commit that merged and failed puts the map from before back,
    and a reads its own value again, not the merged one."""
    code = """
        import json, resource, signal, sys
        from pycipherbench import store
        path, opts = sys.argv[1], json.loads(sys.argv[2])
        a, b = store.open(path, **opts), store.open(path, **opts)
        a.edit().put_string("k", "1").commit()
        b.close(); b = store.open(path, **opts)
        print(a.get_string("k"))
        b.edit().put_string("k", "2").commit()
        a.edit().put_string("other", "o").commit()
        print(a.get_string("k"))
        b.edit().put_string("k", "3" * 64).commit()
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, hard))
        try:
            a.edit().put_string("x", "X").commit()
        except OSError:
            print("failed")
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        print(a.get_string("k"))
        a.edit().put_string("x", "X").commit()
        print(a.get_string("k"))
        a.close(); b.close()
    """
    path, mk = tmp_path / "s.xml", tmp_path / "mk.bin"
    out = _run(code, str(path), json.dumps({"cache": True, "master_key_file": str(mk)})).splitlines()
    assert out == ["1", "2", "failed", "2", "3" * 64]

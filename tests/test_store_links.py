"""Links and other users' files in a sticky world-writable directory (issue 25, defect 4).

The store follows a path's symbolic links by hand (fileio.c's walk: lstat and readlink,
then its writes go to the file the chain ends at), so the kernel's fs.protected_symlinks
never sees them. In a directory like /tmp another user may plant ``app_prefs.xml -> their
own 0666 file``; the victim's store must refuse it (PermissionError naming the link, its
owner and the rule) rather than commit its secrets into the attacker's file, and must never
replace (or take the mode and owner of) a file another user put there.

These run as root: the "other users" are unused uids given with os.chown/os.lchown; the
shared directory is one of our own, mode 1777, as /tmp is."""

from __future__ import annotations

import os
import stat
import tempfile

import pytest

from pycipherbench import store

needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                                reason="gives files to other uids (os.chown): root only")
pytestmark = needs_root

ATTACKER = 12345
DIR_OWNER = 23456
PASSWORD = "hunter2-" + "s3cr3t"
EMPTY_PREFS = "<?xml version='1.0' encoding='utf-8' standalone='yes' ?>\n<map />\n"


@pytest.fixture
def shared(tmp_path):
    """A sticky world-writable directory (as /tmp), owned by the test's user."""
    d = tmp_path / "shared"
    d.mkdir()
    os.chmod(d, 0o1777)
    return d


def _attacker_file(path, text=EMPTY_PREFS, mode=0o666, uid=ATTACKER):
    path.write_text(text)
    os.chmod(path, mode)
    os.chown(path, uid, uid)
    return path


def _plant_link(link, target, uid=ATTACKER):
    os.symlink(target, link)
    os.lchown(link, uid, uid)
    return link


def _snapshot(path):
    st = os.lstat(path)
    return path.read_bytes(), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, st.st_mtime_ns


def _commit_secret(path, **kw):
    with store.open(path, **kw) as s:
        s.edit().put_string("password", PASSWORD).commit()


# --------------------------------------------------------------- a planted link

@pytest.mark.parametrize("kw", [{"encrypted": False}, {"master_key_file": "KEY"}, {"passphrase": "pw"}])
def test_a_link_planted_in_a_sticky_directory_is_refused_at_open(tmp_path, shared, kw):
    kw = {k: str(tmp_path / "m.key") if v == "KEY" else v for k, v in kw.items()}
    if "passphrase" in kw:
        kw["scrypt_n"] = 16
    target = _attacker_file(shared / "attacker_file")
    link = _plant_link(shared / "app_prefs.xml", target)
    before = _snapshot(target)
    with pytest.raises(PermissionError) as info:
        _commit_secret(link, **kw)
    msg = str(info.value)
    assert str(link) in msg and f"owned by uid {ATTACKER}" in msg, msg
    assert "sticky world-writable" in msg and "fs.protected_symlinks" in msg, msg
    assert _snapshot(target) == before
    assert not (tmp_path / "m.key").exists()  # refused before any key file is made
    assert sorted(p.name for p in shared.iterdir()) == ["app_prefs.xml", "attacker_file"]


def test_a_relative_planted_link_and_a_chain_are_refused(shared):
    target = _attacker_file(shared / "attacker_file")
    own = shared / "mine.xml"
    os.symlink("app_prefs.xml", own)  # the victim's own link (followed) to a planted one
    _plant_link(shared / "app_prefs.xml", "attacker_file")
    before = _snapshot(target)
    with pytest.raises(PermissionError, match="app_prefs.xml is owned by uid 12345"):
        _commit_secret(own, encrypted=False)
    assert _snapshot(target) == before


def test_a_link_planted_after_open_is_refused_at_the_write(shared):
    path = shared / "app_prefs.xml"
    target = _attacker_file(shared / "attacker_file")
    s = store.open(path, encrypted=False)
    try:
        s.edit().put_string("k", "v").commit()
        os.unlink(path)  # (the attacker cannot remove the victim's file in a sticky
        _plant_link(path, target)  # directory; a store not yet written is the window)
        before = _snapshot(target)
        with pytest.raises(PermissionError, match="fs.protected_symlinks"):
            s.edit().put_string("password", PASSWORD).commit()
        assert _snapshot(target) == before
    finally:
        try:
            s.close()
        except OSError:
            pass
    assert PASSWORD not in target.read_text()


def test_a_planted_link_of_a_directory_is_refused(tmp_path, shared):
    attacker_dir = tmp_path / "attacker_dir"
    attacker_dir.mkdir()
    os.chmod(attacker_dir, 0o777)
    os.chown(attacker_dir, ATTACKER, ATTACKER)
    target = _attacker_file(attacker_dir / "prefs.xml")
    _plant_link(shared / "appdir", attacker_dir)
    before = _snapshot(target)
    with pytest.raises(PermissionError, match=r"appdir is owned by uid 12345 .*protected_symlinks"):
        _commit_secret(shared / "appdir" / "prefs.xml", encrypted=False)
    assert _snapshot(target) == before and sorted(os.listdir(attacker_dir)) == ["prefs.xml"]


def test_a_planted_link_behind_the_victims_own_link_is_refused(tmp_path, shared):
    """The walk checks every link on the way, also those a link's target passes through."""
    attacker_dir = tmp_path / "attacker_dir"
    attacker_dir.mkdir()
    os.chown(attacker_dir, ATTACKER, ATTACKER)
    inner = attacker_dir / "x.xml"
    victim_file = tmp_path / "victim_notes.txt"
    victim_file.write_text("the victim's own file\n")
    _plant_link(inner, victim_file)  # in the attacker's (non-sticky) dir: not the rule's case
    _plant_link(shared / "d", attacker_dir)  # but this one, in the sticky dir, is
    own = tmp_path / "prefs.xml"
    os.symlink(shared / "d" / "x.xml", own)
    with pytest.raises(PermissionError, match=r"shared/d is owned by uid 12345"):
        _commit_secret(own, encrypted=False)
    assert victim_file.read_text() == "the victim's own file\n"


def test_links_of_the_follower_and_of_the_directory_owner_are_followed(tmp_path, shared):
    private = tmp_path / "private"
    private.mkdir()
    mine = shared / "mine.xml"
    os.symlink(private / "a.xml", mine)  # the follower's own link
    _commit_secret(mine, encrypted=False)
    assert PASSWORD in (private / "a.xml").read_text() and mine.is_symlink()
    os.chown(shared, DIR_OWNER, DIR_OWNER)  # a sticky directory of another user (as root's /tmp)
    owners = _plant_link(shared / "owners.xml", private / "b.xml", uid=DIR_OWNER)
    _commit_secret(owners, encrypted=False)
    assert PASSWORD in (private / "b.xml").read_text()


def test_a_foreign_link_outside_sticky_directories_is_followed(tmp_path):
    """The rule is the kernel's: only sticky world-writable directories."""
    d = tmp_path / "plain"
    d.mkdir()
    link = _plant_link(d / "p.xml", tmp_path / "target.xml")
    _commit_secret(link, encrypted=False)
    assert PASSWORD in (tmp_path / "target.xml").read_text()


# ---------------------------------------------------------- another user's file

def test_another_users_file_in_a_sticky_directory_is_refused_at_open(shared):
    target = _attacker_file(shared / "app_prefs.xml")
    before = _snapshot(target)
    with pytest.raises(PermissionError) as info:
        _commit_secret(target, encrypted=False)
    msg = str(info.value)
    assert str(target) in msg and f"owned by uid {ATTACKER}" in msg and "sticky" in msg, msg
    assert _snapshot(target) == before


def test_another_users_file_planted_after_open_is_not_replaced(shared):
    path = shared / "app_prefs.xml"
    s = store.open(path, encrypted=False)
    try:
        _attacker_file(path)
        before = _snapshot(path)
        with pytest.raises(PermissionError, match=f"owned by uid {ATTACKER}"):
            s.edit().put_string("password", PASSWORD).commit()
        assert _snapshot(path) == before
    finally:
        try:
            s.close()
        except OSError:
            pass


def test_the_directory_owners_file_in_a_sticky_directory_is_used(shared):
    os.chown(shared, DIR_OWNER, DIR_OWNER)
    path = _attacker_file(shared / "p.xml", mode=0o640, uid=DIR_OWNER)
    _commit_secret(path, encrypted=False)
    st = path.stat()  # root may give the file back: owner and mode kept, as before
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (DIR_OWNER, 0o640)
    assert PASSWORD in path.read_text()


def _as_user(uid, fn):
    """Runs fn() in a forked child as uid (in-process: the interpreter lives under a
    directory other users cannot enter); its result, a short string, comes back."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            os.setgid(uid)
            os.setuid(uid)
            os.umask(0o022)
            os.write(w, fn().encode()[:4000])
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        out = f.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, out
    return out


def test_an_unprivileged_victim_gets_the_rule_not_a_rename_error():
    """The issue's scenario for a user who is not root: a PermissionError naming the link
    and the rule (before, the rename over the attacker's file failed with a bare EPERM, or,
    for root, succeeded)."""
    d = tempfile.mkdtemp(prefix="pcb-links-")
    try:
        os.chmod(d, 0o1777)
        target = os.path.join(d, "attacker_file")
        with open(target, "w") as f:
            f.write(EMPTY_PREFS)
        os.chmod(target, 0o666)
        os.chown(target, ATTACKER, ATTACKER)
        link = os.path.join(d, "app_prefs.xml")
        _plant_link(link, target)

        def victim():
            try:
                _commit_secret(link, encrypted=False)
            except PermissionError as e:
                return "PermissionError " + str(e)
            except Exception as e:  # noqa: BLE001 - reported to the parent
                return f"{type(e).__name__} {e}"
            return "committed"

        out = _as_user(DIR_OWNER + 1, victim)
        assert out.startswith("PermissionError") and "fs.protected_symlinks" in out, out
        assert f"{link} is owned by uid {ATTACKER}" in out, out
        with open(target) as f:
            assert f.read() == EMPTY_PREFS
    finally:
        for name in os.listdir(d):
            os.unlink(os.path.join(d, name))
        os.rmdir(d)


def test_a_writer_who_cannot_keep_the_owner_does_not_take_the_mode():
    """Outside sticky directories a foreign file may be replaced (the directory lets us),
    but its 0666 goes with its owner: a non-root writer's new file is its own, 0600."""
    d = tempfile.mkdtemp(prefix="pcb-links-")
    try:
        os.chmod(d, 0o777)  # world-writable, not sticky
        path = os.path.join(d, "p.xml")
        with open(path, "w") as f:
            f.write(EMPTY_PREFS)
        os.chmod(path, 0o666)
        os.chown(path, DIR_OWNER, DIR_OWNER)
        assert _as_user(ATTACKER, lambda: _commit_secret(path, encrypted=False) or "done") == "done"
        st = os.stat(path)
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (ATTACKER, 0o600)
        with open(path) as f:
            assert PASSWORD in f.read()
    finally:
        for name in os.listdir(d):
            os.unlink(os.path.join(d, name))
        os.rmdir(d)


# ------------------------------------------------ the key file, .scrypt, -lock

def test_a_planted_master_key_link_is_refused(tmp_path, shared):
    key = tmp_path / "attacker.key"
    key.write_bytes(os.urandom(32))
    os.chmod(key, 0o600)
    link = _plant_link(shared / "m.key", key)
    with pytest.raises(PermissionError, match="symbolic link"):
        _commit_secret(shared / "s.xml", master_key_file=link)
    assert not (shared / "s.xml").exists()


def test_a_planted_scrypt_link_is_refused(shared):
    target = _attacker_file(shared / "attacker_params", text='{"kdf": "scrypt"}\n')
    _plant_link(shared / "p.xml.scrypt", target)
    before = _snapshot(target)
    with pytest.raises(PermissionError, match=r"p.xml.scrypt is owned by uid 12345.*protected_symlinks"):
        _commit_secret(shared / "p.xml", passphrase="pw", scrypt_n=16)
    assert _snapshot(target) == before


def test_a_planted_lock_link_is_not_followed(shared):
    target = _attacker_file(shared / "attacker_lock", text="")
    _plant_link(shared / "p.xml-lock", target)
    before = _snapshot(target)
    with pytest.raises(OSError, match="lock file"):
        _commit_secret(shared / "p.xml", encrypted=False)
    assert _snapshot(target) == before


def test_a_master_key_behind_a_planted_directory_link_is_refused(tmp_path, shared):
    """The key file's name is never followed (O_NOFOLLOW, link(2)); its directories are
    walked under the rule too, so a new key is not created in the attacker's directory."""
    attacker_dir = tmp_path / "attacker_dir"
    attacker_dir.mkdir()
    os.chmod(attacker_dir, 0o777)
    os.chown(attacker_dir, ATTACKER, ATTACKER)
    _plant_link(shared / "keys", attacker_dir)
    with pytest.raises(PermissionError, match=r"shared/keys is owned by uid 12345"):
        _commit_secret(tmp_path / "s.xml", master_key_file=shared / "keys" / "m.key")
    assert os.listdir(attacker_dir) == [] and not (tmp_path / "s.xml").exists()


def test_another_users_lock_file_is_not_written(shared):
    """The store writes its change counter into <path>-lock: not into another user's file."""
    lock = _attacker_file(shared / "p.xml-lock", text="")
    before = _snapshot(lock)
    with pytest.raises(PermissionError, match="lock file"):
        _commit_secret(shared / "p.xml", encrypted=False)
    assert _snapshot(lock) == before

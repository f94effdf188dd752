"""The exhaustive failure test's machinery (issue 25; SQLite's ioerr tests): each store
operation, each system call it makes (common/sys.h's table, ``_core._fault``), each of its
calls of that name in turn (nth = 1, 2, ... until the operation makes no more: ``fired ==
0``), each errno mode; after each, the checks of :func:`run_case`.

Used by tests/test_store_faults.py (a sampled subset, within the README's test budget)
and bench/bench_faults.py (the full table, printed; non-zero exit on a mismatch).

A case's checks (all with the fault disarmed):
- the operation raised an ``OSError`` (EIO, ENOSPC, persist), or succeeded (EINTR once,
  a short write, or a call whose failure the store may survive: a stat for the merge's file
  identity, the lock counter's pwrite, a close of a read descriptor, the stale-temp sweep);
- the Store's memory (``all()``) equals the model's state exactly: the state before, or the
  published one; published with an error, the error must say the change is in the file;
- the file, reopened by a fresh Store, holds the state of the same outcome;
- no descriptor (``/proc/self/fd``), file lock (an OFD lock on ``<file>-lock`` is taken at
  once) or temporary file (``.*.tmp`` in the directory) is left behind;
- the store stays usable: a flush and a commit of :data:`store_model.RETRY_KEY` succeed,
  and then memory, model and file agree.
"""

from __future__ import annotations

import errno as E
import fcntl
import glob
import os
import random
import re
import shutil
import struct
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from pycipherbench import _core, store

from store_model import RETRY_KEY, Edit, StoreState, World

#: errno modes: (label, errno, _fault mode). "short" applies to write/pwrite only.
ERRNOS = {
    "EIO": (E.EIO, "once"),
    "ENOSPC": (E.ENOSPC, "once"),
    "EINTR": (E.EINTR, "once"),
    "short": (E.ENOSPC, "short"),
    "EIO-persist": (E.EIO, "persist"),
}
#: The calls a persist-mode plan is tried on (every later call of that name fails too).
PERSIST_CALLS = ("open", "write", "fsync", "rename", "read", "fcntl_lock", "flock", "ftruncate",
                 "msync")
#: Calls POSIX never interrupts (mmap(2), fdopendir(3) have no EINTR): not given EINTR.
NO_EINTR = ("mmap", "fdopendir")
#: An error saying the change was published although the call failed (durability unknown).
PUBLISHED_WORDS = re.compile(r"durab|is in the file|was written|published|replaced", re.I)

MODES = {
    "entries": {},
    "file": {"layout": "file"},
    "cache": {"cache": True},
    "faithful": {"faithful": True},
    "plain": {"encrypted": False},
    "passphrase": {},
    "try-once": {"lock_timeout": 0},  # a write tries the file lock once (README)
}

OLD_PASS, NEW_PASS = "old passphrase", "new passphrase"


def base_dir() -> str:
    """Where cases run: a tmpfs if there is one (fsync costs nothing; semantics the same)."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def lock_is_free(lock_file: str) -> bool:
    """An OFD write lock on lock_file is granted at once (no Store holds it)."""
    if not os.path.exists(lock_file):
        return True
    fd = os.open(lock_file, os.O_RDWR)
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def settled(check: Callable[[], bool], within: float = 1.0) -> bool:
    """check() holds now or within ``within`` seconds (polled)."""
    import time

    end = time.monotonic() + within
    while not check():
        if time.monotonic() > end:
            return False
        time.sleep(0.001)
    return True


def tmp_files(d: str) -> list[str]:
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(d, ".*.tmp")))


@dataclass
class Ctx:
    """One case's files, open handles and model."""

    dir: str
    mode: str
    path: str = ""
    stores: dict[str, Any] = field(default_factory=dict)
    world: World = field(default_factory=World)
    main: str = "a"          # the Store whose memory is checked
    extra: dict[str, Any] = field(default_factory=dict)

    def opts(self, passphrase: str | None = None) -> dict[str, Any]:
        o = dict(MODES[self.mode])
        if self.mode == "passphrase":
            o.update(passphrase=passphrase or OLD_PASS, scrypt_n=16)
        elif o.get("encrypted", True):
            o["master_key_file"] = os.path.join(self.dir, "master.key")
        return o

    def open(self, sid: str, path: str | None = None, **kw: Any) -> Any:
        s = store.open(path or self.path, **{**self.opts(), **kw})
        self.stores[sid] = s
        return s

    def close_all(self) -> None:
        for s in list(self.stores.values()):
            try:
                s.close()
            except Exception:
                pass
        self.stores.clear()


# ------------------------------------------------------------------ operations


class Op:
    """An operation of the table: setup (unarmed), run (armed), what the model says."""

    name = ""
    modes: tuple[str, ...] = ("entries", "file", "cache", "faithful", "plain")
    mmkv = False

    def setup(self, c: Ctx) -> None:
        c.path = os.path.join(c.dir, "s.xml")
        c.open("a")
        Edit().put("k0", "v0").put("n", 1).replay(c.stores["a"].edit()).commit()
        c.world = World().open("a").commit("a", Edit().put("k0", "v0").put("n", 1))
        os.chmod(c.path, 0o640)  # "an existing store keeps its mode": every write must keep it
        c.extra["mode"] = 0o640

    def run(self, c: Ctx) -> None:
        raise NotImplementedError

    def before(self, c: Ctx) -> World:
        """The world if the operation's write is not published (apply() changes memory at
        once, so for an apply the write's "before" is the applied, pending state)."""
        return c.world

    def middles(self, c: Ctx) -> list[tuple[str, World]]:
        """Outcomes between before and published, for an operation of two writes."""
        return []

    def after(self, c: Ctx) -> World:
        raise NotImplementedError

    #: A raise after the publish point must say the change is in the file (not for the MMKV
    #: model: its put returned, the flush's msync is only about durability).
    says_published = True
    #: A raise with no Store to hold memory (a failed open) may leave either file.
    either_file_on_raise = False

    def memory(self, c: Ctx) -> dict[str, Any] | None:
        s = c.stores.get(c.main)
        return None if s is None or s.closed else s.all()

    def fds_held(self, c: Ctx) -> int:
        """Descriptors the operation's result holds open by design (an MMKV handle: 2)."""
        return 0

    def mem_of(self, c: Ctx, w: World) -> dict[str, Any] | None:
        """What the model says memory() shows in world w."""
        st = w.stores.get(c.main)
        return None if st is None else st.mem

    def file_of(self, c: Ctx, w: World) -> Any:
        """What the model says file_state() shows in world w."""
        return None if w.file is None else dict(w.file)

    def file_state(self, c: Ctx, w: World) -> Any:
        """The file as a fresh Store reads it (None: no file), opened as world w says."""
        if not os.path.exists(c.path):
            return None
        kw = {"passphrase": w.passphrase} if c.mode == "passphrase" and w.passphrase else {}
        try:
            with store.open(c.path, **{**c.opts(), **kw}) as f:
                return f.all()
        except Exception as e:  # e.g. the other passphrase: not this outcome
            return ("cannot open", type(e).__name__, str(e)[:200])

    def retry(self, c: Ctx, w: World) -> tuple[World, dict[str, Any] | None]:
        """Flush and commit RETRY_KEY on the main Store (reopened if it is gone): the world
        after it, and memory."""
        s = c.stores.get(c.main)
        if s is None or s.closed:
            w = w.drop(c.main) if c.main in w.stores else w
            kw = {"passphrase": w.passphrase} if c.mode == "passphrase" and w.passphrase else {}
            s = c.open(c.main, **kw)
            w = w.open(c.main)
        s.flush()
        w = w.flush(c.main)
        s.edit().put_string(RETRY_KEY, "1").commit()
        w = w.commit(c.main, Edit().put(RETRY_KEY, "1"))
        return w, s.all()


class Commit(Op):
    name = "commit"
    modes = Op.modes + ("try-once",)
    EDIT = Edit().put("k1", "new").remove("n")

    def run(self, c: Ctx) -> None:
        self.EDIT.replay(c.stores["a"].edit()).commit()

    def after(self, c: Ctx) -> World:
        return c.world.commit("a", self.EDIT)


class ApplyFlush(Commit):
    name = "apply+flush"

    def run(self, c: Ctx) -> None:
        self.EDIT.replay(c.stores["a"].edit()).apply()
        c.stores["a"].flush()

    def before(self, c: Ctx) -> World:
        return c.world.apply("a", self.EDIT)

    def after(self, c: Ctx) -> World:
        return c.world.apply("a", self.EDIT).flush("a")


def setup_other_writer(op: Op, c: Ctx) -> None:
    """The base setup, then a second Store b that commits b1 (a has not seen it)."""
    Op.setup(op, c)
    b = c.open("b")
    b.edit().put_string("b1", "B").commit()
    c.world = c.world.open("b").commit("b", Edit().put("b1", "B"))


class ClearPutApply(ApplyFlush):
    """Issue 25's defect 1: b commits, then a applies clear + put; a's write fails."""

    name = "clear+put+apply"
    modes = Op.modes
    EDIT = Edit().do_clear().put("mine", "A")

    def setup(self, c: Ctx) -> None:
        setup_other_writer(self, c)


class MergeCommit(Commit):
    """A commit that merges another writer's commit."""

    name = "merge-commit"

    def setup(self, c: Ctx) -> None:
        setup_other_writer(self, c)


class Rotate(Op):
    """A rotation leaves the contents as they were: the file's state is its contents and
    whether its keysets are the ones before (the value keyset's primary key id, which
    every rotation changes)."""

    name = "rotate"
    modes = ("entries", "file", "cache", "faithful")

    def setup(self, c: Ctx) -> None:
        super().setup(c)
        c.extra["primary"] = store.inspect(c.path).value_keyset.primary_key_id

    def file_of(self, c: Ctx, w: World) -> Any:
        return (super().file_of(c, w), "keys rotated" if w.keys else "keys as before")

    def file_state(self, c: Ctx, w: World) -> Any:
        contents = super().file_state(c, w)
        ks = store.inspect(c.path).value_keyset
        rotated = ks is None or ks.primary_key_id != c.extra["primary"]
        return (contents, "keys rotated" if rotated else "keys as before")

    def run(self, c: Ctx) -> None:
        c.stores["a"].rotate()

    def after(self, c: Ctx) -> World:
        return c.world.full_rotate("a")


class RotateLazy(Rotate):
    name = "rotate-lazy"

    def run(self, c: Ctx) -> None:
        c.stores["a"].rotate(lazy=True)

    def after(self, c: Ctx) -> World:
        return c.world.rotate("a")


class RotatePassphrase(Rotate):
    name = "rotate-passphrase"
    modes = ("passphrase",)

    def setup(self, c: Ctx) -> None:
        super().setup(c)
        c.world.passphrase = OLD_PASS
        c.world.stores["a"].passphrase = OLD_PASS

    def run(self, c: Ctx) -> None:
        c.stores["a"].rotate(passphrase=NEW_PASS)

    def after(self, c: Ctx) -> World:
        return c.world.full_rotate("a", NEW_PASS)


class RotatePending(Rotate):
    """A rotation with an applied change pending: rotate() flushes it first (one write),
    then rotates (another); a failure of the second leaves the first published."""

    name = "rotate-pending"
    EDIT = Edit().put("k1", "new").remove("n")

    def run(self, c: Ctx) -> None:
        self.EDIT.replay(c.stores["a"].edit()).apply()
        c.stores["a"].rotate()

    def before(self, c: Ctx) -> World:
        return c.world.apply("a", self.EDIT)

    def middles(self, c: Ctx) -> list[tuple[str, World]]:
        return [("flushed", c.world.apply("a", self.EDIT).flush("a"))]

    def after(self, c: Ctx) -> World:
        return c.world.apply("a", self.EDIT).full_rotate("a")


class RotateMasterKey(Rotate):
    """rotate(master_key_file=new): a new key file created, everything sealed under it."""

    name = "rotate-master-key"
    modes = ("entries", "file")

    def new_key(self, c: Ctx) -> str:
        return os.path.join(c.dir, "new.key")

    def run(self, c: Ctx) -> None:
        c.stores["a"].rotate(master_key_file=self.new_key(c))

    def file_state(self, c: Ctx, w: World) -> Any:
        """Opened with the key world w says seals it (the new one once rotated)."""
        if not os.path.exists(c.path):
            return None
        key = self.new_key(c) if w.keys else os.path.join(c.dir, "master.key")
        try:
            with store.open(c.path, **{**c.opts(), "master_key_file": key}) as f:
                contents = f.all()
        except Exception as e:
            return (("cannot open", type(e).__name__, str(e)[:200]), "")
        ks = store.inspect(c.path).value_keyset
        rotated = ks is None or ks.primary_key_id != c.extra["primary"]
        return (contents, "keys rotated" if rotated else "keys as before")


class ClosePending(Commit):
    name = "close-pending"

    def run(self, c: Ctx) -> None:
        self.EDIT.replay(c.stores["a"].edit()).apply()
        c.stores["a"].close()

    def before(self, c: Ctx) -> World:
        return c.world.apply("a", self.EDIT).drop("a")

    def after(self, c: Ctx) -> World:
        return c.world.apply("a", self.EDIT).close("a")

    def memory(self, c: Ctx) -> dict[str, Any] | None:
        s = c.stores["a"]
        if not s.closed:
            return {"__not closed__": True}
        return None

    def mem_of(self, c: Ctx, w: World) -> dict[str, Any] | None:
        return None  # closed, whatever the flush did


class CreateAtOpen(Op):
    name = "create"
    either_file_on_raise = True
    modes = ("entries", "file", "faithful", "passphrase")

    def setup(self, c: Ctx) -> None:
        c.path = os.path.join(c.dir, "new.xml")
        c.world = World(passphrase=OLD_PASS if c.mode == "passphrase" else None)

    def run(self, c: Ctx) -> None:
        c.open("a")

    def after(self, c: Ctx) -> World:
        return c.world.open("a")

    def memory(self, c: Ctx) -> dict[str, Any] | None:
        s = c.stores.get("a")
        return None if s is None else s.all()


class OpenExisting(Op):
    name = "open"

    def setup(self, c: Ctx) -> None:
        super().setup(c)
        c.stores.pop("a").close()
        c.world = c.world.drop("a")

    def run(self, c: Ctx) -> None:
        c.open("a")

    def after(self, c: Ctx) -> World:
        return c.world.open("a")

    memory = CreateAtOpen.memory


class MMKVPutFlush(Op):
    """The MMKV model's put (one big enough to grow and remap the file) and its msync."""

    name = "mmkv-put+flush"
    modes = ("mmkv",)
    mmkv = True
    says_published = False
    KEY = b"0123456789abcdef"
    BIG = b"x" * 6000

    def setup(self, c: Ctx) -> None:
        c.path = os.path.join(c.dir, "prefs.mmkv")
        h = _core.mmkv_open(c.path, self.KEY)
        _core.mmkv_put(h, b"k0", b"v0")
        _core.mmkv_sync(h)
        c.stores["a"] = h
        c.world = World(file={"k0": b"v0"}, version=1)
        c.world.stores["a"] = StoreState(mem={"k0": b"v0"}, seen=1)

    def run(self, c: Ctx) -> None:
        _core.mmkv_put(c.stores["a"], b"big", self.BIG)
        _core.mmkv_sync(c.stores["a"])

    def after(self, c: Ctx) -> World:
        w = c.world.copy()
        w.stores["a"].mem["big"] = self.BIG
        w.file = dict(w.stores["a"].mem)
        return w

    @staticmethod
    def _read(h: Any) -> dict[str, Any]:
        out = {}
        for k in (b"k0", b"big", RETRY_KEY.encode()):
            v = _core.mmkv_get(h, k)
            if v is not None:
                out[k.decode()] = v
        return out

    def memory(self, c: Ctx) -> dict[str, Any] | None:
        return self._read(c.stores["a"])

    def file_state(self, c: Ctx, w: World) -> Any:
        h = c.stores.pop("a", None)
        if h is not None:
            _core.mmkv_close(h)
        try:
            h2 = _core.mmkv_open(c.path, self.KEY)
        except Exception as e:
            return ("cannot open", type(e).__name__, str(e)[:200])
        try:
            return self._read(h2)
        finally:
            _core.mmkv_close(h2)

    def retry(self, c: Ctx, w: World) -> tuple[World, dict[str, Any] | None]:
        h = c.stores.get("a") or _core.mmkv_open(c.path, self.KEY)
        c.stores["a"] = h
        _core.mmkv_put(h, RETRY_KEY.encode(), b"1")
        _core.mmkv_sync(h)
        w = w.copy()
        w.stores["a"].mem[RETRY_KEY] = b"1"
        w.file = dict(w.stores["a"].mem)
        return w, self._read(h)


class MMKVOpen(MMKVPutFlush):
    """Opening an existing MMKV-model file (both files mapped, the content checked)."""

    name = "mmkv-open"

    def setup(self, c: Ctx) -> None:
        super().setup(c)
        _core.mmkv_close(c.stores.pop("a"))
        c.world = c.world.drop("a")

    def run(self, c: Ctx) -> None:
        c.stores["a"] = _core.mmkv_open(c.path, MMKVPutFlush.KEY)

    def after(self, c: Ctx) -> World:
        w = c.world.copy()
        w.stores["a"] = StoreState(mem=dict(w.file), seen=1)
        return w

    def memory(self, c: Ctx) -> dict[str, Any] | None:
        h = c.stores.get("a")
        return None if h is None else MMKVPutFlush._read(h)

    def fds_held(self, c: Ctx) -> int:
        return 2 if c.stores.get("a") is not None else 0  # the file and its .crc

    def retry(self, c: Ctx, w: World) -> tuple[World, dict[str, Any] | None]:
        if "a" not in w.stores:
            w = self.after(c)
        return super().retry(c, w)


OPS: dict[str, Op] = {op.name: op for op in (
    CreateAtOpen(), OpenExisting(), Commit(), ApplyFlush(), ClearPutApply(), MergeCommit(),
    Rotate(), RotateLazy(), RotatePassphrase(), RotateMasterKey(), RotatePending(), ClosePending(),
    MMKVPutFlush(), MMKVOpen())}


def close_ctx(c: Ctx) -> None:
    for sid, h in list(c.stores.items()):
        try:
            if isinstance(h, store.Store):
                h.close()
            else:
                _core.mmkv_close(h)
        except Exception:
            pass
    c.stores.clear()


# ------------------------------------------------------------------ one case


@dataclass
class Result:
    op: str
    mode: str
    call: str
    nth: int
    errno: str
    fired: int
    raised: str | None
    outcome: str          # "before", "published", "none" (nothing matches)
    problems: list[str]

    @property
    def key(self) -> str:
        return f"{self.op}[{self.mode}] {self.call}#{self.nth} {self.errno}"

    def describe(self) -> str:
        return f"{self.key}: raised {self.raised!r}; " + "; ".join(self.problems)


def _new_ctx(mode: str, root: str | None) -> Ctx:
    return Ctx(dir=tempfile.mkdtemp(prefix="pcbfault-", dir=root or base_dir()), mode=mode)


def count_calls(op: Op, mode: str, root: str | None = None) -> dict[str, int]:
    """How many calls of each name the operation makes (one unfaulted run per name)."""
    out = {}
    for name in _core._fault_calls():
        c = _new_ctx(mode, root)
        try:
            op.setup(c)
            _core._fault(nth=1 << 60, calls=(name,))
            try:
                op.run(c)
            finally:
                n, _ = _core._fault()
            if n:
                out[name] = n
        finally:
            _core._fault()
            close_ctx(c)
            shutil.rmtree(c.dir, ignore_errors=True)
    return out


def run_case(op: Op, mode: str, call: str, nth: int, errno_label: str,
             root: str | None = None) -> Result:
    """One failure point: the nth call named ``call`` fails as errno_label says."""
    err, fmode = ERRNOS[errno_label]
    c = _new_ctx(mode, root)
    problems: list[str] = []
    raised: BaseException | None = None
    outcome = "none"
    fired = 0
    try:
        op.setup(c)
        before = op.before(c)
        after = op.after(c)
        fds = fd_count()
        _core._fault(nth=nth, errno=err, calls=(call,), mode=fmode)
        try:
            op.run(c)
        except BaseException as e:  # noqa: BLE001 - every exception is a finding or expected
            raised = e
        finally:
            _, fired = _core._fault()
        if fired == 0:
            return Result(op.name, mode, call, nth, errno_label, 0,
                          None if raised is None else f"{type(raised).__name__}: {raised}", "none",
                          [] if raised is None else ["raised without a fault firing"])
        must_succeed = errno_label == "EINTR" or (errno_label == "short" and call in ("write",))
        if raised is not None and not isinstance(raised, OSError):
            problems.append(f"raised {type(raised).__name__}, not an OSError")
        if raised is not None and must_succeed:
            problems.append("an interrupted call / a short write must be retried, not raised")
        mem = op.memory(c)
        # flush() returns once the change is durable; the writer thread may still be
        # releasing the file lock: "quickly" is within a second.
        lock_free = op.mmkv or settled(lambda: lock_is_free(c.path + "-lock"))
        held = op.fds_held(c)
        fd_ok = settled(lambda: fd_count() == fds + held)
        if not fd_ok:
            problems.append(f"{fd_count() - fds - held:+d} descriptors left open")
        if c.extra.get("mode") and os.path.exists(c.path) \
                and (os.stat(c.path).st_mode & 0o7777) != c.extra["mode"]:
            problems.append(f"the file's mode changed from {c.extra['mode']:04o} to "
                            f"{os.stat(c.path).st_mode & 0o7777:04o}")
        leftovers = tmp_files(c.dir)
        if leftovers:
            problems.append(f"temporary files left: {leftovers}")
        if not lock_free:
            problems.append("the file lock is still held")
        # Which outcome memory and the file show (a raise allows the state before too).
        cands = [("before", before), *op.middles(c), ("published", after)] if raised is not None \
            else [("published", after)]
        files = {lbl: op.file_state(c, w) for lbl, w in cands}
        mem_is = [lbl for lbl, w in cands if op.mem_of(c, w) == mem]
        file_is = [lbl for lbl, w in cands if files[lbl] == op.file_of(c, w)]
        if raised is not None and op.either_file_on_raise and mem is None:
            file_is = [lbl for lbl in ("before", "published") if lbl in file_is] or file_is
            mem_is = file_is if file_is else mem_is
        both = [lbl for lbl in mem_is if lbl in file_is]
        chosen = None
        if both:
            outcome = both[-1] if len(both) > 1 and raised is None else both[0]
            chosen = dict(cands)[outcome]
        elif not mem_is:
            problems.append(f"memory {mem!r} is neither the state before "
                            f"({op.mem_of(c, before)!r}) nor the published one ({op.mem_of(c, after)!r})")
        else:
            outcome = mem_is[0]
            problems.append(f"memory is the {'/'.join(mem_is)} state but the file holds "
                            + (f"the {'/'.join(file_is)} state" if file_is else
                               repr(files[mem_is[0]])))
        if chosen is not None and outcome == "published" and raised is not None and op.says_published \
                and op.file_of(c, before) != op.file_of(c, after) and not PUBLISHED_WORDS.search(str(raised)):
            problems.append("published, but the error does not say the change is in the file")
        # The store stays usable and a retry publishes.
        if chosen is not None:
            try:
                w2, mem2 = op.retry(c, chosen)
                want2 = w2.stores[c.main].mem
                if mem2 != want2:
                    problems.append(f"after the retry memory is {mem2!r}, the model says {want2!r}")
                f2 = op.file_state(c, w2)
                if f2 != op.file_of(c, w2):
                    problems.append(f"after the retry the file holds {f2!r}, the model says "
                                    f"{op.file_of(c, w2)!r}")
            except Exception as e:  # noqa: BLE001
                problems.append(f"the retry failed: {type(e).__name__}: {e}")
    except Exception as e:  # noqa: BLE001 - the harness itself must report, not die
        problems.append(f"harness: {type(e).__name__}: {e}")
    finally:
        _core._fault()
        close_ctx(c)
        shutil.rmtree(c.dir, ignore_errors=True)
    return Result(op.name, mode, call, nth, errno_label, fired,
                  None if raised is None else f"{type(raised).__name__}: {raised}"[:300],
                  outcome, problems)


# ------------------------------------------------------------------ the table


def errnos_for(call: str) -> list[str]:
    out = ["EIO", "ENOSPC"]
    if call not in NO_EINTR:
        out.append("EINTR")
    if call in ("write", "pwrite"):
        out.append("short")
    if call in PERSIST_CALLS:
        out.append("EIO-persist")
    return out


def points(op: Op, mode: str, call: str, errno_label: str, root: str | None = None,
           sample: int | None = None, seed: int = 25) -> Iterator[Result]:
    """Every failure point of (op, call) under one errno (nth = 1, 2, ... until nothing
    fires), or ``sample`` of them picked with a fixed seed (the first and last always)."""
    if sample is None:
        nth = 1
        while True:
            r = run_case(op, mode, call, nth, errno_label, root)
            if r.fired == 0:
                if r.problems:
                    yield r
                return
            yield r
            nth += 1
    n = count_calls_one(op, mode, call, root)
    picks = sorted(set([1, n] + random.Random(f"{seed}{op.name}{mode}{call}{errno_label}").sample(
        range(1, n + 1), min(n, sample)))) if n else []
    for nth in picks:  # a count can vary run to run (the writer thread's timing)
        r = run_case(op, mode, call, nth, errno_label, root)
        if r.fired or r.problems:
            yield r


def count_calls_one(op: Op, mode: str, call: str, root: str | None = None) -> int:
    c = _new_ctx(mode, root)
    try:
        op.setup(c)
        _core._fault(nth=1 << 60, calls=(call,))
        try:
            op.run(c)
        finally:
            n, _ = _core._fault()
        return n
    finally:
        _core._fault()
        close_ctx(c)
        shutil.rmtree(c.dir, ignore_errors=True)


def table(ops: list[str] | None = None, modes: list[str] | None = None,
          progress: Callable[[str], None] | None = None, root: str | None = None,
          ) -> list[Result]:
    """The full table: every op, mode, call, point, errno."""
    results = []
    for name, op in OPS.items():
        if ops and name not in ops:
            continue
        for mode in op.modes:
            if modes and mode not in modes and not (op.mmkv or mode == "passphrase"):
                continue
            calls = count_calls(op, mode, root)
            for call in sorted(calls):
                for el in errnos_for(call):
                    rs = list(points(op, mode, call, el, root))
                    results += rs
                    if progress:
                        bad = sum(1 for r in rs if r.problems)
                        progress(f"{name}[{mode}] {call} x{calls[call]} {el}: {len(rs)} points"
                                 + (f", {bad} MISMATCH" if bad else ""))
    return results

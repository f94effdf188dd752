"""A reference model of the store's documented semantics (issue 25), for the fault table
(tests/fault_table.py, tests/test_store_faults.py, bench/bench_faults.py) and the stateful
tests (tests/test_store_stateful.py).

What it models, from the README's "What the store promises" and the existing tests:

- An editor records puts and removes; ``clear()`` is done first at commit/apply, whenever
  it was called (Android's order), then the editor's ops in order (the last op on a key
  wins).
- ``commit()`` is a write: under the file lock, if another writer changed the file since
  this Store last read or wrote it, the file is read again and this Store's own changes
  since its last write (its *dirty* keys, with the values memory holds for them) are put on
  top of it, key by key; an unwritten ``clear()`` of this Store keeps its map as it is (the
  other writers' keys go: "the state it commits holds only the clearing editor's puts, and
  later changes"). Then the editor's changes, then the file is written; memory then holds
  the merged state.
- ``apply()`` changes memory at once, without merging; the background write (and
  ``flush()``, ``close()``, a later ``commit()``, a rotation) writes the pending changes
  with the same merge. A failed write leaves everything as before it (the changes stay
  pending).
- A rotation (full, lazy, passphrase) flushes, then writes the same contents (merged).
- A write that is not published changes nothing (memory, pending state, what the Store
  has seen); a write that is published moves the file and the writer to the new state.

The model is a :class:`World`: the file (contents, a version counting writes, the
passphrase that opens it) and, per Store, its memory, dirty keys, whether a clear is
unwritten, whether changes are pending and the file version it last saw. Every operation
returns the world after it *if it is published*; the world before is the one it was called
on (copies: worlds are values). For an operation that failed with an injected fault the
allowed outcomes are :func:`outcomes`: the world before (not published) or the world after
(published: the failure came after the publish point, and the error must say so).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

#: Keys a keyset keeps at most (README: rotate(lazy=True) past it is a ValueError, nothing
#: changed; a full rotation starts a new keyset).
MAX_KEYS = 32

#: The key of the README's retry step (tests write it after a fault to show a retry publishes).
RETRY_KEY = "__retry__"


@dataclass
class Edit:
    """A model editor: ``ops`` is a list of ("put", key, value) / ("remove", key)."""

    ops: list[tuple[Any, ...]] = field(default_factory=list)
    clear: bool = False

    def put(self, k: str, v: Any) -> Edit:
        self.ops.append(("put", k, v))
        return self

    def remove(self, k: str) -> Edit:
        self.ops.append(("remove", k))
        return self

    def do_clear(self) -> Edit:
        self.clear = True
        return self

    def keys(self) -> set[str]:
        return {op[1] for op in self.ops}

    def apply_to(self, d: dict[str, Any]) -> dict[str, Any]:
        out = {} if self.clear else dict(d)
        for op in self.ops:
            if op[0] == "put":
                out[op[1]] = op[2]
            else:
                out.pop(op[1], None)
        return out

    def replay(self, editor: Any) -> Any:
        """The same changes on a real ``store.Editor`` (clear first or last: the same)."""
        if self.clear:
            editor.clear()
        for op in self.ops:
            if op[0] == "remove":
                editor.remove(op[1])
            else:
                put(editor, op[1], op[2])
        return editor


def put(editor: Any, k: str, v: Any) -> None:
    """The typed put of a real editor for a model value."""
    if isinstance(v, bool):
        editor.put_bool(k, v)
    elif isinstance(v, int):
        editor.put_long(k, v) if not -2**31 <= v < 2**31 else editor.put_int(k, v)
    elif isinstance(v, float):
        editor.put_float(k, v)
    elif isinstance(v, (set, frozenset)):
        editor.put_string_set(k, v)
    else:
        editor.put_string(k, v)


@dataclass
class StoreState:
    """One Store object's view."""

    mem: dict[str, Any]
    seen: int                 # the file version this Store last read or wrote
    dirty: set[str] = field(default_factory=set)  # keys changed since its last write
    clear_pending: bool = False  # a clear() applied, not yet written
    pending: bool = False        # applied changes not yet on disk
    passphrase: str | None = None  # the passphrase its writes seal under (passphrase stores)
    stale: bool = False          # another Store re-keyed the file (full rotation)


@dataclass
class World:
    """The file and the Stores on it (a value: every operation returns a new one)."""

    file: dict[str, Any] | None = None   # None: no file
    version: int = 0
    passphrase: str | None = None        # what opens the file (passphrase stores)
    keys: int = 0                        # rotations of the file's keysets so far
    value_keys: int = 1                  # keys in the file's value keyset (lazy rotation adds one)
    stores: dict[str, StoreState] = field(default_factory=dict)

    def copy(self) -> World:
        return copy.deepcopy(self)

    # -- opening and closing
    def open(self, sid: str, *, creates: bool = True) -> World:
        """Store ``sid`` opened on the file (a new store's first write creates the file empty)."""
        w = self.copy()
        if w.file is None and creates:
            w.file = {}
            w.version += 1
        w.stores[sid] = StoreState(mem=dict(w.file or {}), seen=w.version, passphrase=w.passphrase)
        return w

    def close(self, sid: str) -> World:
        """A close that flushed (published); the Store is gone."""
        w = self.write(sid) if self.stores[sid].pending else self.copy()
        del w.stores[sid]
        return w

    def drop(self, sid: str) -> World:
        """A close whose flush failed: the Store is released, its pending changes lost."""
        w = self.copy()
        del w.stores[sid]
        return w

    # -- changes
    def merged(self, sid: str) -> dict[str, Any]:
        """What ``sid``'s memory is after a write's merge (before its own new change)."""
        st = self.stores[sid]
        if st.seen == self.version or st.clear_pending:
            return dict(st.mem)
        out = dict(self.file or {})
        for k in st.dirty:
            if k in st.mem:
                out[k] = st.mem[k]
            else:
                out.pop(k, None)
        return out

    def _published(self, sid: str, mem: dict[str, Any]) -> World:
        w = self.copy()
        st = w.stores[sid]
        st.mem = dict(mem)
        st.dirty = set()
        st.clear_pending = False
        st.pending = False
        w.file = dict(mem)
        w.version += 1
        st.seen = w.version
        w.passphrase = st.passphrase
        return w

    def commit(self, sid: str, e: Edit) -> World:
        """The world after ``sid`` commits ``e`` (published)."""
        return self._published(sid, e.apply_to(self.merged(sid)))

    def apply(self, sid: str, e: Edit) -> World:
        """``apply()``: memory now, the write pending."""
        w = self.copy()
        st = w.stores[sid]
        st.mem = e.apply_to(st.mem)
        st.dirty |= e.keys()
        if e.clear:
            st.clear_pending = True
        st.pending = True
        return w

    def write(self, sid: str) -> World:
        """The write of ``sid``'s pending changes (flush, the background writer), published."""
        return self._published(sid, self.merged(sid))

    def flush(self, sid: str) -> World:
        return self.write(sid) if self.stores[sid].pending else self.copy()

    def rotate(self, sid: str, passphrase: str | None = None) -> World:
        """A rotation: flush, then the same contents written (and, with ``passphrase``, the
        file then opens with it). Full rotations make the other Stores stale."""
        w = self.flush(sid).write(sid)
        w.keys += 1
        w.value_keys += 1
        if passphrase is not None:
            w.stores[sid].passphrase = passphrase
            w.passphrase = passphrase
        return w

    def full_rotate(self, sid: str, passphrase: str | None = None) -> World:
        w = self.rotate(sid, passphrase)
        w.value_keys = 1  # new keysets
        for other, st in w.stores.items():
            if other != sid:
                st.stale = True
        return w

    def view(self, sid: str) -> dict[str, Any]:
        return dict(self.stores[sid].mem)


def outcomes(before: World, after: World) -> list[tuple[str, World]]:
    """What a failed operation may leave: [("before", world), ("published", world)]."""
    return [("before", before), ("published", after)]

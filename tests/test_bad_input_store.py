"""The bad-input matrix (issue 5 §6) for the store and the rest of the public API.

tests/test_bad_input.py covers encrypt/decrypt/measure's cipher parameters; this
file covers everything else: every public function and method of
``pycipherbench.store`` (open, the Store getters, get, ``in``, all, edit, flush,
rotate, close; the Editor's puts, remove, clear, commit, apply; bench), plus
``machine``, ``ciphers`` and the measure() arguments test_bad_input.py lacks.

Each row: the exception type and a ``match=`` on a word saying what was
expected. Every row runs in a fresh copy of a directory of store files and key
files, snapshotted before and after (names, bytes, modes, mtimes, symlink
targets): a failed call changes no file. Calls that might crash or hang the
interpreter (a FIFO or a device instead of a file, ``None`` as the path, huge
files) run in a child process with a watchdog.

Rows marked xfail(strict=True) are package bugs; the reason says input,
expected and got.
"""

from __future__ import annotations

import collections
import json
import math
import os
import re
import resource
import shutil
import stat
import subprocess
import sys
import tracemalloc
import types
from pathlib import Path

import pytest

import pycipherbench as pcb
from pycipherbench import store

THREE = {"alpha": "one", "beta": 2, "gamma": {"x", "y"}}
PASSPHRASE = "correct horse"
KEYSET = "__androidx_security_crypto_encrypted_prefs_key_keyset__"


# --------------------------------------------------------------------------
# The world: a directory of stores and key files, copied fresh for every row
# --------------------------------------------------------------------------

def _key_file(path, data, mode=0o600):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    os.write(fd, data)
    os.close(fd)
    os.chmod(path, mode)


def _fill(s):
    with s.edit() as e:
        e.put_string("alpha", "one").put_int("beta", 2).put_string_set("gamma", {"x", "y"})


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    d = tmp_path_factory.mktemp("template")
    _key_file(d / "m.key", os.urandom(32))
    _key_file(d / "wrong.key", os.urandom(32))
    for n in (0, 31, 33):
        _key_file(d / f"k{n}.key", os.urandom(n))
    _key_file(d / "loose.key", os.urandom(32), 0o644)
    with store.open(str(d / "enc.xml"), master_key_file=str(d / "m.key")) as s:
        _fill(s)
    with store.open(str(d / "fenc.xml"), master_key_file=str(d / "m.key"), layout="file") as s:
        _fill(s)
    with store.open(str(d / "plain.xml"), encrypted=False) as s:
        _fill(s)
    with store.open(str(d / "plainstr.xml"), encrypted=False) as s:  # only <string> elements
        s.edit().put_string("alpha", "one").put_string("gamma", "three").commit()
    with store.open(str(d / "pp.xml"), passphrase=PASSPHRASE, scrypt_n=16) as s:
        _fill(s)
    (d / "adir").mkdir()
    (d / "adir.xml").mkdir()
    (d / "bench").mkdir()
    os.symlink("/dev/null", d / "devnull.key")
    os.symlink("/dev/null", d / "devnull.xml")
    os.symlink("/dev/zero", d / "devzero.key")
    return d


class World:
    """Paths (as str) in a fresh copy of the template, and lazily opened stores."""

    def __init__(self, d: Path):
        self.path = d
        self.d = str(d)
        self.key = self.p("m.key")
        self.enc, self.fenc, self.plain, self.pp = (self.p(n) for n in ("enc.xml", "fenc.xml", "plain.xml", "pp.xml"))
        self.bench = self.p("bench")
        self._s = self._e = self._closed = None

    def p(self, name):
        return os.path.join(self.d, name)

    @property
    def s(self):
        """The encrypted store enc.xml, open."""
        if self._s is None:
            self._s = store.open(self.enc, master_key_file=self.key)
        return self._s

    @property
    def e(self):
        """An editor of self.s."""
        if self._e is None:
            self._e = self.s.edit()
        return self._e

    @property
    def closed(self):
        """enc.xml opened, an editor made, then closed: (store, editor)."""
        if self._closed is None:
            s = store.open(self.enc, master_key_file=self.key)
            e = s.edit()
            s.close()
            self._closed = (s, e)
        return self._closed

    def close(self):
        if self._s is not None:
            self._s.close()


@pytest.fixture
def w(template, tmp_path, monkeypatch):
    d = tmp_path / "w"
    shutil.copytree(template, d, symlinks=True)  # copy2: bytes, modes and mtimes
    monkeypatch.chdir(d)  # a relative-path mishap lands here, where the snapshot sees it
    world = World(d)
    yield world
    world.close()


def snapshot(root) -> dict:
    """Every entry under root: kind, mode, mtime and bytes (or symlink target)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISREG(st.st_mode):
                if st.st_size > 16 << 20:  # huge sparse test files: size and mtime only
                    content = f"<{st.st_size} bytes>"
                else:
                    with open(p, "rb") as f:
                        content = f.read()
                out[rel] = ("file", st.st_mode, st.st_mtime_ns, content)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", st.st_mode)
            else:
                out[rel] = ("other", st.st_mode, st.st_mtime_ns)
    return out


def assert_unchanged(before, after):
    if before == after:
        return
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    pytest.fail(f"a failed call changed files: added {added}, removed {removed}, changed {changed}")


# --------------------------------------------------------------------------
# The matrix
# --------------------------------------------------------------------------

class Row:
    def __init__(self, id, call, exc, match, bug=None):
        self.id, self.call, self.exc, self.match, self.bug = id, call, exc, match, bug


ROWS: list[Row] = []


def row(id, call, exc, match, bug=None):
    ROWS.append(Row(id, call, exc, "(?i)" + match, bug))


RE_PATH = r"str, bytes or os\.PathLike"
RE_BOOL = r"\bbool\b"
RE_STR = r"\bstr\b"

# ---- store.open: the path
for what, val in [("int", 5), ("list", ["x.xml"]), ("float", 1.5), ("dict", {})]:
    row(f"open-path-{what}", lambda w, v=val: store.open(v, master_key_file=w.key), TypeError, RE_PATH)
row("open-path-empty", lambda w: store.open("", master_key_file=w.key), ValueError, "file name")
row("open-path-dir-slash", lambda w: store.open(w.d + "/", master_key_file=w.key), ValueError, "file name")
row("open-path-NUL", lambda w: store.open(w.p("a\x00.xml"), master_key_file=w.key), ValueError, "null")
row("open-path-is-dir", lambda w: store.open(w.p("adir"), master_key_file=w.key), IsADirectoryError, "regular file")
row("open-path-is-dir-xml", lambda w: store.open(w.p("adir.xml"), master_key_file=w.key), IsADirectoryError, "regular file")
row("open-path-is-dir-plain", lambda w: store.open(w.p("adir.xml"), encrypted=False), IsADirectoryError, "regular file")
row("open-path-is-dir-passphrase", lambda w: store.open(w.p("adir.xml"), passphrase=PASSPHRASE), IsADirectoryError, "regular file")
row("open-path-missing-dir", lambda w: store.open(w.p("nodir/s.xml"), master_key_file=w.key), FileNotFoundError, "No such file")
row("open-path-missing-dir-plain", lambda w: store.open(w.p("nodir/s.xml"), encrypted=False), FileNotFoundError, "No such file")
row("open-path-missing-dir-passphrase", lambda w: store.open(w.p("nodir/s.xml"), passphrase=PASSPHRASE), FileNotFoundError, "No such file")
row("open-path-missing-dir-new-key", lambda w: store.open(w.p("nodir/s.xml"), master_key_file=w.p("new.key")),
    FileNotFoundError, "No such file")
row("open-path-dir-is-a-file", lambda w: store.open(w.p("m.key/s.xml"), master_key_file=w.p("new.key")),
    NotADirectoryError, "directory")

# ---- store.open: master_key_file
for what, val in [("int", 5), ("list", ["m.key"]), ("float", 1.5)]:
    row(f"open-key-{what}", lambda w, v=val: store.open(w.enc, master_key_file=v), TypeError, RE_PATH)
row("open-key-NUL", lambda w: store.open(w.enc, master_key_file=w.p("m\x00.key")), ValueError, "null")
row("open-key-empty-existing-store", lambda w: store.open(w.enc, master_key_file=""), ValueError, "master_key_file")
row("open-key-empty-new-store", lambda w: store.open(w.p("new.xml"), master_key_file=""),
    ValueError, "master_key_file")
row("open-key-is-dir", lambda w: store.open(w.enc, master_key_file=w.p("adir")), IsADirectoryError, "regular file")
row("open-key-is-dir-new-store", lambda w: store.open(w.p("new.xml"), master_key_file=w.d), IsADirectoryError, "regular file")
for n in (0, 31, 33):
    row(f"open-key-{n}-bytes", lambda w, n=n: store.open(w.enc, master_key_file=w.p(f"k{n}.key")),
        store.StoreFormatError, "exactly 32 bytes")
    row(f"open-key-{n}-bytes-new-store", lambda w, n=n: store.open(w.p("new.xml"), master_key_file=w.p(f"k{n}.key")),
        store.StoreFormatError, "exactly 32 bytes")
row("open-key-missing-existing-store", lambda w: store.open(w.enc, master_key_file=w.p("absent.key")),
    FileNotFoundError, "missing")
row("open-key-missing-dir", lambda w: store.open(w.p("new.xml"), master_key_file=w.p("nodir/k.key")),
    FileNotFoundError, "No such file")
row("open-key-wrong", lambda w: store.open(w.enc, master_key_file=w.p("wrong.key")), pcb.DecryptionError, "master key")
row("open-key-wrong-layout-file", lambda w: store.open(w.fenc, master_key_file=w.p("wrong.key"), layout="file"),
    pcb.DecryptionError, "master key")
row("open-key-loose", lambda w: store.open(w.enc, master_key_file=w.p("loose.key")), PermissionError, r"chmod\s+0?600")
row("open-key-for-plain", lambda w: store.open(w.plain, master_key_file=w.key, encrypted=False), ValueError, "plain")
row("open-key-and-passphrase", lambda w: store.open(w.enc, master_key_file=w.key, passphrase="x"), ValueError, "exactly one")
row("open-no-key", lambda w: store.open(w.enc), ValueError, "exactly one")
row("open-plain-store-encrypted", lambda w: store.open(w.plain, master_key_file=w.key), store.StoreFormatError,
    "encrypted=False")
row("open-plain-store-encrypted-new-key", lambda w: store.open(w.plain, master_key_file=w.p("new.key")),
    store.StoreFormatError, "encrypted=False")
row("open-plain-strings-encrypted", lambda w: store.open(w.p("plainstr.xml"), master_key_file=w.key),
    store.StoreFormatError, "no keysets")
row("open-plain-strings-encrypted-new-key", lambda w: store.open(w.p("plainstr.xml"), master_key_file=w.p("new.key")),
    store.StoreFormatError, "no keysets")
row("open-plain-strings-passphrase", lambda w: store.open(w.p("plainstr.xml"), passphrase="new"),
    store.StoreFormatError, "no keysets")

# ---- store.open: passphrase
for what, val in [("int", 5), ("list", ["pw"]), ("bytearray", bytearray(b"pw"))]:
    row(f"open-passphrase-{what}", lambda w, v=val: store.open(w.pp, passphrase=v), TypeError, "str or bytes")
row("open-passphrase-empty", lambda w: store.open(w.pp, passphrase=""), ValueError, "empty")
row("open-passphrase-empty-bytes", lambda w: store.open(w.pp, passphrase=b""), ValueError, "empty")
row("open-passphrase-wrong", lambda w: store.open(w.pp, passphrase="wrong horse"), pcb.DecryptionError, "master key|passphrase")
row("open-passphrase-for-plain", lambda w: store.open(w.plain, passphrase="x", encrypted=False), ValueError, "plain")
row("open-passphrase-for-key-file-store", lambda w: store.open(w.enc, passphrase=PASSPHRASE), FileNotFoundError, "scrypt")
row("open-passphrase-surrogate", lambda w: store.open(w.pp, passphrase="\udc80"), UnicodeEncodeError, "surrogate")

# ---- store.open: options
for flag in ("encrypted", "cache", "faithful"):
    for what, val in [("int", 1), ("None", None), ("str", "yes")]:
        row(f"open-{flag}-{what}", lambda w, f=flag, v=val: store.open(w.enc, master_key_file=w.key, **{f: v}),
            TypeError, f"{flag}.*{RE_BOOL}")
for opt, bad_values in [("key_encryption", ["SIV", "", "aes", "siv "]),
                        ("value_encryption", ["GCM", "", "chacha20", "aes-gcm"]),
                        ("layout", ["single", "", "Entries"])]:
    for v in bad_values:
        row(f"open-{opt}-{v!r}", lambda w, o=opt, v=v: store.open(w.enc, master_key_file=w.key, **{o: v}),
            ValueError, f"{opt} must be one of")
    for what, val in [("int", 5), ("None", None), ("bytes", b"x")]:
        row(f"open-{opt}-{what}", lambda w, o=opt, v=val: store.open(w.enc, master_key_file=w.key, **{o: v}),
            TypeError, RE_STR)
# crypto_backend (issue 13): names, types, and what a backend lacks
for v in ["OpenSSL", "", "libressl", "py:cryptography"]:
    row(f"open-crypto_backend-{v!r}", lambda w, v=v: store.open(w.enc, master_key_file=w.key, crypto_backend=v),
        ValueError, "crypto_backend must be one of")
for what, val in [("int", 5), ("None", None), ("bytes", b"gcrypt")]:
    row(f"open-crypto_backend-{what}", lambda w, v=val: store.open(w.enc, master_key_file=w.key, crypto_backend=v),
        TypeError, RE_STR)
row("open-crypto_backend-faithful", lambda w: store.open(w.enc, master_key_file=w.key, faithful=True,
                                                         crypto_backend="gcrypt"), ValueError, "faithful=True")
row("open-crypto_backend-plain", lambda w: store.open(w.plain, encrypted=False, crypto_backend="gcrypt"),
    ValueError, "layout='entries'")
row("open-crypto_backend-layout-file", lambda w: store.open(w.fenc, master_key_file=w.key, layout="file",
                                                            crypto_backend="gcrypt"), ValueError, "layout='entries'")
for what, val in [("str", "16"), ("float", 16.0), ("None", None)]:
    row(f"open-scrypt_n-{what}", lambda w, v=val: store.open(w.p("new.xml"), passphrase="x", scrypt_n=v), TypeError, r"\bint\b")
for val in (3, 1, -1, -16, 2**25, 2**63):
    row(f"open-scrypt_n-{val}", lambda w, v=val: store.open(w.p("new.xml"), passphrase="x", scrypt_n=v),
        ValueError, "power of two")
for val, label in [(2**64 + 2, "2**64+2"), (2**65, "2**65")]:
    row(f"open-scrypt_n-{label}", lambda w, v=val: store.open(w.p("new.xml"), passphrase="x", scrypt_n=v),
        ValueError, "power of two")
row("open-unknown-option", lambda w: store.open(w.enc, master_key_file=w.key, compression="zlib"), TypeError, "unexpected keyword")
row("open-key-positional", lambda w: store.open(w.enc, w.key), TypeError, "positional")

# ---- store.open: a file opened with other options than it was written with
row("open-encrypted-as-plain", lambda w: store.open(w.enc, encrypted=False), store.StoreFormatError, "encrypted=True")
row("open-encrypted-key_encryption-none", lambda w: store.open(w.enc, master_key_file=w.key, key_encryption="none"),
    store.StoreFormatError, "key_encryption")
row("open-encrypted-value_encryption-none", lambda w: store.open(w.enc, master_key_file=w.key, value_encryption="none"),
    store.StoreFormatError, "value_encryption")
row("open-entries-as-layout-file", lambda w: store.open(w.enc, master_key_file=w.key, layout="file"),
    store.StoreFormatError, "layout")
row("open-layout-file-as-entries", lambda w: store.open(w.fenc, master_key_file=w.key), store.StoreFormatError, "keyset")
row("open-layout-file-as-plain", lambda w: store.open(w.fenc, encrypted=False), store.StoreFormatError, "encrypted=True")

# ---- Store reads
GETTERS = ["get_string", "get_int", "get_long", "get_float", "get_bool", "get_string_set", "get"]
WRONG_NAMES = [("int", 5), ("None", None), ("bytes", b"alpha"), ("list", ["alpha"]), ("float", 1.5)]
for g in GETTERS:
    for what, val in WRONG_NAMES:
        row(f"{g}-name-{what}", lambda w, g=g, v=val: getattr(w.s, g)(v), TypeError, "name must be a str")
    row(f"{g}-name-surrogate", lambda w, g=g: getattr(w.s, g)("\ud800"), UnicodeEncodeError, "surrogate")
    row(f"{g}-no-name", lambda w, g=g: getattr(w.s, g)(), TypeError, "argument")
for what, val in WRONG_NAMES:
    row(f"contains-name-{what}", lambda w, v=val: v in w.s, TypeError, "name must be a str")
row("contains-name-surrogate", lambda w: "\ud800" in w.s, UnicodeEncodeError, "surrogate")
for m in ("all", "edit", "flush", "close"):
    row(f"{m}-extra-argument", lambda w, m=m: getattr(w.s, m)(1), TypeError, "positional argument")

# ---- Store.rotate
for what, val in [("int", 5), ("list", ["k"])]:
    row(f"rotate-key-{what}", lambda w, v=val: w.s.rotate(master_key_file=v), TypeError, RE_PATH)
for what, val in [("int", 5), ("list", ["pw"])]:
    row(f"rotate-passphrase-{what}", lambda w, v=val: w.s.rotate(passphrase=v), TypeError, "str or bytes")
row("rotate-passphrase-empty", lambda w: w.s.rotate(passphrase=""), ValueError, "empty")
row("rotate-key-and-passphrase", lambda w: w.s.rotate(master_key_file=w.p("new.key"), passphrase="x"), ValueError, "at most one")
row("rotate-key-NUL", lambda w: w.s.rotate(master_key_file=w.p("n\x00.key")), ValueError, "null")
row("rotate-key-is-dir", lambda w: w.s.rotate(master_key_file=w.p("adir")), IsADirectoryError, "regular file")
for n in (0, 31, 33):
    row(f"rotate-key-{n}-bytes", lambda w, n=n: w.s.rotate(master_key_file=w.p(f"k{n}.key")),
        store.StoreFormatError, "exactly 32 bytes")
row("rotate-key-loose", lambda w: w.s.rotate(master_key_file=w.p("loose.key")), PermissionError, r"chmod\s+0?600")
row("rotate-key-missing-dir", lambda w: w.s.rotate(master_key_file=w.p("nodir/k.key")), FileNotFoundError, "No such file")
row("rotate-positional", lambda w: w.s.rotate(w.p("new.key")), TypeError, "positional")
row("rotate-unknown-option", lambda w: w.s.rotate(scrypt_n=16), TypeError, "unexpected keyword")
row("rotate-plain-store", lambda w: store.open(w.plain, encrypted=False).rotate(), (ValueError, store.StoreFormatError),
    "encrypt|plain")

# ---- a closed store and its editor
for what, call in [("get", lambda s, e: s.get("alpha")), ("contains", lambda s, e: "alpha" in s),
                   ("all", lambda s, e: s.all()), ("edit", lambda s, e: s.edit()), ("flush", lambda s, e: s.flush()),
                   ("rotate", lambda s, e: s.rotate()), ("len", lambda s, e: len(s)),
                   ("editor-put", lambda s, e: e.put_string("a", "b")), ("editor-remove", lambda s, e: e.remove("a")),
                   ("editor-clear", lambda s, e: e.clear()), ("editor-commit", lambda s, e: e.commit()),
                   ("editor-remove_unreadable", lambda s, e: e.remove_unreadable()),
                   ("editor-apply", lambda s, e: e.apply())]:
    row(f"closed-{what}", lambda w, c=call: c(*w.closed), ValueError, "closed")

# ---- Editor
PUTS = {"put_string": "v", "put_int": 1, "put_long": 1, "put_float": 1.0, "put_bool": True, "put_string_set": ["v"]}
for put, good in PUTS.items():
    for what, val in WRONG_NAMES:
        row(f"{put}-name-{what}", lambda w, p=put, v=val, g=good: getattr(w.e, p)(v, g), TypeError, "name must be a str")
    row(f"{put}-name-surrogate", lambda w, p=put, g=good: getattr(w.e, p)("\ud800", g), UnicodeEncodeError, "surrogate")
    row(f"{put}-no-value", lambda w, p=put: getattr(w.e, p)("n"), TypeError, "argument")
    row(f"{put}-extra-argument", lambda w, p=put, g=good: getattr(w.e, p)("n", g, g), TypeError, "argument")
VALUES = [
    ("put_string", [("int", 5), ("None", None), ("bytes", b"v"), ("list", ["v"]), ("float", 1.5)], TypeError, "str"),
    ("put_string", [("surrogate", "\udc80")], UnicodeEncodeError, "surrogate"),
    ("put_int", [("str", "1"), ("None", None), ("float", 1.0), ("bool", True), ("list", [1])], TypeError, r"\bint\b"),
    ("put_int", [("2**31", 2**31), ("-2**31-1", -(2**31) - 1), ("2**64", 2**64), ("-2**100", -(2**100))], ValueError, "32-bit"),
    ("put_long", [("str", "1"), ("None", None), ("float", 1.5), ("bool", False)], TypeError, r"\bint\b"),
    ("put_long", [("2**63", 2**63), ("-2**63-1", -(2**63) - 1), ("2**64", 2**64)], ValueError, "64-bit"),
    ("put_float", [("str", "1.5"), ("None", None), ("bool", True), ("list", [1.0]), ("complex", 1j)], TypeError, "float"),
    ("put_float", [("1e39", 1e39), ("-1e39", -1e39), ("3.5e38", 3.5e38), ("int-10**39", 10**39)], ValueError, "32-bit float"),
    ("put_float", [("int-2**2000", 2**2000)], OverflowError, "too large"),
    ("put_bool", [("int-1", 1), ("int-0", 0), ("None", None), ("str", "true"), ("bytes", b"\x01")], TypeError, r"\bbool\b"),
    ("put_string_set", [("str", "abc"), ("bytes", b"abc")], TypeError, "single string"),
    ("put_string_set", [("None", None), ("int", 5), ("float", 1.5)], TypeError, "iterable"),
    ("put_string_set", [("int-member", [1]), ("None-member", ["a", None]), ("bytes-member", [b"a"])], TypeError, "member must be a str"),
    ("put_string_set", [("surrogate-member", ["\udc80"])], UnicodeEncodeError, "surrogate"),
    # A mapping iterates as its keys, all str: refused rather than silently storing the keys.
    ("put_string_set", [("dict", {"a": 1}), ("dict-of-str", {"a": "b"}), ("empty-dict", {}),
                        ("OrderedDict", collections.OrderedDict(a=1)),
                        ("mappingproxy", types.MappingProxyType({"a": "b"}))], TypeError, "mapping"),
]
for put, cases, exc, match in VALUES:
    for what, val in cases:
        row(f"{put}-value-{what}", lambda w, p=put, v=val: getattr(w.e, p)("n", v), exc, match)


def _raising_iterable():
    yield "a"
    raise RuntimeError("the iterable broke")


row("put_string_set-iterable-raises", lambda w: w.e.put_string_set("n", _raising_iterable()), RuntimeError, "iterable broke")
for what, val in WRONG_NAMES:
    row(f"remove-name-{what}", lambda w, v=val: w.e.remove(v), TypeError, "name must be a str")
row("remove-name-surrogate", lambda w: w.e.remove("\ud800"), UnicodeEncodeError, "surrogate")
for m in ("clear", "remove_unreadable", "commit", "apply"):
    row(f"editor-{m}-extra-argument", lambda w, m=m: getattr(w.e, m)(1), TypeError, "positional argument")
row("editor-reserved-name", lambda w: w.e.put_string(KEYSET, "x"), store.ReservedNameError, "reserved|keyset")

# ---- store.bench
B = dict(n_keys=10, min_time=1e-4, repeats=1, warmup=0, stages=False)


def bench(workload="get", **over):
    def call(w):
        kw = dict(B, directory=w.bench)
        kw.update(over)
        return store.bench(workload, **kw)
    return call


for what, val in [("None", None), ("int", 5), ("bytes", b"get"), ("list", ["get"])]:
    row(f"bench-workload-{what}", bench(val), TypeError, RE_STR)
for val in ("", "GET", "gets", "put "):
    row(f"bench-workload-{val!r}", bench(val), ValueError, "workload must be one of")
for arg, lo, hi in [("n_keys", 0, 10**9), ("key_len", 0, 2**21), ("value_len", -1, 2**25), ("batch", 0, 10**7),
                    ("repeats", 0, 10**6)]:
    for label, val in [("low", lo), ("negative", -(2**40)), ("high", hi), ("2**64", 2**64)]:
        row(f"bench-{arg}-{label}", bench(**{arg: val}), ValueError, f"{arg} must be between")
    for what, val in [("str", "10"), ("None", None), ("float", 10.0), ("bool", True)]:
        row(f"bench-{arg}-{what}", bench(**{arg: val}), TypeError, f"{arg} must be an int")
row("bench-entries-over-4GB", bench(n_keys=10**7, value_len=2**20), ValueError, "4 GB")
for opt in ("value_type", "key_encryption", "value_encryption", "layout"):
    row(f"bench-{opt}-unknown", bench(**{opt: "nope"}), ValueError, f"{opt} must be one of")
    row(f"bench-{opt}-None", bench(**{opt: None}), TypeError, RE_STR)
for label, val in [("0", 0), ("negative", -1), ("nan", math.nan), ("61", 61), ("inf", math.inf)]:
    row(f"bench-min_time-{label}", bench(min_time=val), ValueError, "min_time")
for label, val in [("negative", -2), ("nan", math.nan), ("61", 61)]:
    row(f"bench-warmup-{label}", bench(warmup=val), ValueError, "warmup")
row("bench-min_time-str", bench(min_time="1"), TypeError, "number")
row("bench-rotate-plain", bench("rotate", encrypted=False), ValueError, "encrypted")
row("bench-plain-passphrase", bench(encrypted=False, passphrase=True), ValueError, "passphrase")
row("bench-hw_aes-int", bench(hw_aes=1), TypeError, "hw_aes must be a bool")
row("bench-crypto_backend-unknown", bench(crypto_backend="libressl"), ValueError, "crypto_backend must be one of")
row("bench-crypto_backend-None", bench(crypto_backend=None), TypeError, RE_STR)
row("bench-crypto_backend-faithful", bench(faithful=True, crypto_backend="gcrypt"), ValueError, "faithful=True")
row("bench-crypto_backend-no-siv", bench(value_encryption="none", crypto_backend="sodium"), ValueError,
    "no AES-SIV.*backends that have it|unavailable")
row("bench-directory-missing", bench(directory="missing-dir"), NotADirectoryError, "directory")
row("bench-directory-file", lambda w: store.bench("get", **dict(B, directory=w.key)), NotADirectoryError, "directory")
row("bench-directory-int", bench(directory=5), TypeError, RE_PATH)
row("bench-directory-bytes", lambda w: store.bench("get", **dict(B, directory=os.fsencode(w.bench))), TypeError, "bytes")
row("bench-unknown-option", bench(compression=True), TypeError, "unexpected keyword")
for flag, val in [("encrypted", 1), ("cache", "yes"), ("faithful", None), ("passphrase", "pw"), ("stages", 2)]:
    row(f"bench-{flag}-not-bool", bench(**{flag: val}), TypeError, f"{flag}.*{RE_BOOL}")

# ---- measure (what tests/test_bad_input.py lacks)
M = dict(payload=64, min_time=1e-5, repeats=1, warmup=0)


def meas(name="AES/GCM/NoPadding", **over):
    return lambda w: pcb.measure(name, **dict(M, **over))


for what, val in [("None", None), ("int", 5), ("bytes", b"AES/GCM/NoPadding"), ("list", ["AES/GCM/NoPadding"])]:
    row(f"measure-name-{what}", meas(val), TypeError, RE_STR)
for label, over in [("2**40", {}), ("2**40-dec", dict(op="dec")), ("2**40-stream", dict(scope="stream")),
                    ("2**40-rekey", dict(scope="rekey")), ("2**40-hw_aes-off", dict(hw_aes=False))]:
    row(f"measure-payload-{label}", meas(**dict(over, payload=2**40)), ValueError, "payload")
row("measure-payload-negative-huge", meas(payload=-(2**64)), ValueError, "payload")
for what, val in [("None", None), ("float", 64.0)]:
    row(f"measure-payload-{what}", meas(payload=val), TypeError, "payload")
for what, val in [("None", None), ("int", 5)]:
    row(f"measure-op-{what}", meas(op=val), TypeError, RE_STR)
    row(f"measure-scope-{what}", meas(scope=val), TypeError, RE_STR)
for val in ("ENC", "encrypt", "enc "):
    row(f"measure-op-{val!r}", meas(op=val), ValueError, r"\bop\b")
for val in ("MESSAGE", "messages", "file"):
    row(f"measure-scope-{val!r}", meas(scope=val), ValueError, "scope")
for label, val in [("0", 0), ("inf", math.inf), ("61", 61), ("1e9", 1e9)]:
    row(f"measure-min_time-{label}", meas(min_time=val), ValueError, "min_time")
for what, val in [("None", None), ("str", "1")]:
    row(f"measure-min_time-{what}", meas(min_time=val), TypeError, "number")
for label, val in [("negative", -2), ("nan", math.nan), ("inf", math.inf), ("61", 61)]:
    row(f"measure-warmup-{label}", meas(warmup=val), ValueError, "warmup")
row("measure-warmup-str", meas(warmup="0"), TypeError, "number")
for label, val in [("10**9", 10**9), ("2**64", 2**64)]:
    row(f"measure-repeats-{label}", meas(repeats=val), ValueError, "repeats")
for what, val in [("None", None), ("float", 1.0), ("str", "7"), ("bool", True)]:
    row(f"measure-repeats-{what}", meas(repeats=val), TypeError, "repeats")
row("measure-key_bits-2**64", meas(key_bits=2**64), ValueError, "key_bits")
for what, val in [("float", 128.0), ("bool", True)]:
    row(f"measure-key_bits-{what}", meas(key_bits=val), TypeError, "key_bits")
for label, val in [("negative", -1), ("2**64", 2**64)]:
    row(f"measure-iv_len-{label}", meas(iv_len=val), ValueError, "iv_len")
for what, val in [("str", "12"), ("float", 12.0), ("bool", True)]:
    row(f"measure-iv_len-{what}", meas(iv_len=val), TypeError, "iv_len")
row("measure-rounds-2**64", meas("TEA/CTR/NoPadding", rounds=2**64), ValueError, "rounds")
row("measure-rounds-bool", meas("TEA/CTR/NoPadding", rounds=True), TypeError, "rounds")
for what, val in [("None", None), ("str", "yes"), ("int", 0)]:
    row(f"measure-hw_aes-{what}", meas(hw_aes=val), TypeError, "hw_aes must be a bool")
row("measure-unknown-option", meas(compression=2), TypeError, "unexpected keyword")
row("measure-op-positional", lambda w: pcb.measure("AES/GCM/NoPadding", "enc"), TypeError, "positional")
row("measure-no-name", lambda w: pcb.measure(), TypeError, "transformation")

# ---- machine, ciphers
row("machine-positional", lambda w: pcb.machine(1), TypeError, "positional")
row("machine-keyword", lambda w: pcb.machine(cpu="x"), TypeError, "unexpected keyword")
row("ciphers-positional", lambda w: pcb.ciphers("AES"), TypeError, "no arguments")
row("ciphers-keyword", lambda w: pcb.ciphers(family="AES"), TypeError, "keyword")


def _params(rows):
    ids = [r.id for r in rows]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
    return [pytest.param(r, id=r.id, marks=[pytest.mark.xfail(strict=True, reason=r.bug)] if r.bug else [])
            for r in rows]


@pytest.mark.parametrize("r", _params(ROWS))
def test_bad_input(w, r):
    before = snapshot(w.path)
    with pytest.raises(r.exc, match=r.match):
        r.call(w)
    if w._s is not None:  # the open store is unharmed
        assert w.s.all() == THREE
    assert_unchanged(before, snapshot(w.path))


def test_the_matrix_covers_the_public_api():
    """Every public function and method of pycipherbench.store (and machine, ciphers) has rows."""
    ids = " ".join(r.id for r in ROWS)
    methods = [m for cls in (store.Store, store.Editor) for m in vars(cls)
               if not m.startswith("_") and callable(getattr(cls, m))]
    names = ["open", "bench", "machine", "ciphers", "measure", "contains"] + methods
    missing = [n for n in names if n not in ids]
    assert not missing, f"no bad-input rows for {missing}"


def test_baselines_are_valid(w):
    """Each row changes one thing: the unchanged calls succeed."""
    with store.open(w.enc, master_key_file=w.key) as s:
        assert s.all() == THREE
    with store.open(w.fenc, master_key_file=w.key, layout="file") as s:
        assert s.all() == THREE
    with store.open(w.plain, encrypted=False) as s:
        assert s.all() == THREE
    with store.open(w.pp, passphrase=PASSPHRASE) as s:
        assert s.all() == THREE
    m = store.bench("get", **dict(B, directory=w.bench))
    assert m.entries == 10
    assert os.listdir(w.bench) == []
    assert pcb.measure("AES/GCM/NoPadding", **M).payload == 64


# --------------------------------------------------------------------------
# Huge requests are refused before any allocation
# --------------------------------------------------------------------------

HUGE = {
    "bench-n_keys-10**9": lambda d: store.bench("get", n_keys=10**9, directory=d),
    "bench-n_keys-10**9-hw_aes-off": lambda d: store.bench("get", n_keys=10**9, hw_aes=False, directory=d),
    "bench-value_len-2**40": lambda d: store.bench("put", value_len=2**40, directory=d),
    "bench-entries-over-4GB": lambda d: store.bench("all", n_keys=10**7, key_len=2**10, value_len=2**10, directory=d),
    "bench-batch-2**40": lambda d: store.bench("commit", batch=2**40, directory=d),
    "measure-payload-2**40": lambda d: pcb.measure("AES/CTR/NoPadding", payload=2**40),
    "measure-payload-2**40-dec": lambda d: pcb.measure("AES/GCM/NoPadding", payload=2**40, op="dec"),
    "measure-payload-2**40-hw_aes-off": lambda d: pcb.measure("AES/GCM/NoPadding", payload=2**40, hw_aes=False),
    "measure-payload-2**40-tea-stream": lambda d: pcb.measure("TEA/CBC/NoPadding", payload=2**40, scope="stream"),
}


@pytest.mark.parametrize("what", list(HUGE))
def test_huge_request_is_refused_before_allocation(what, tmp_path):
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"(?i)n_keys|value_len|4 GB|batch|payload"):
            HUGE[what](str(tmp_path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - max_rss) * 1024
    # Refused before any work: no Python memory, no RSS growth, no files (what a duration
    # limit stood for, without failing on a busy machine).
    assert peak < 1 << 20, f"allocated {peak} bytes of Python memory before refusing"
    assert grew < 16 << 20, f"peak RSS grew {grew >> 20} MiB before refusing"
    assert os.listdir(tmp_path) == []


# --------------------------------------------------------------------------
# Corrupted and truncated store files
# --------------------------------------------------------------------------

def _sub(pattern, repl):
    return lambda data: re.sub(pattern, repl, data, count=1)


def _keyset_hex(data, which=0):
    return re.findall(rb'<string name="__androidx[^"]*">([0-9a-f]+)</string>', data)[which]


CORRUPT = [
    # (id, file, transform, exception, match)
    ("empty", "plain.xml", lambda d: b"", store.StoreFormatError, "expected <map>"),
    ("xml-declaration-only", "plain.xml", lambda d: d[: d.index(b"\n") + 1], store.StoreFormatError, "end of file"),
    ("no-map-end", "plain.xml", lambda d: d.replace(b"</map>", b""), store.StoreFormatError, "end of file"),
    ("wrong-root", "plain.xml", lambda d: d.replace(b"<map>", b"<set>").replace(b"</map>", b"</set>"),
     store.StoreFormatError, "expected <map>"),
    ("unknown-element", "plain.xml", lambda d: d.replace(b"</map>", b'<blob name="x">y</blob>\n</map>'),
     store.StoreFormatError, "unexpected element"),
    ("duplicate-name", "plain.xml", lambda d: d.replace(b"</map>", b'<string name="alpha">two</string>\n</map>'),
     store.StoreFormatError, "duplicate"),
    ("unterminated-attribute", "plain.xml", lambda d: d.replace(b'name="alpha"', b'name="alpha'),
     store.StoreFormatError, "attribute"),
    ("no-name-attribute", "plain.xml", lambda d: d.replace(b' name="alpha"', b""), store.StoreFormatError, "name attribute"),
    ("int-not-a-number", "plain.xml", _sub(rb'(<int name="beta" value=")2', rb"\1abc"), store.StoreFormatError, "invalid <int>"),
    ("int-overflow", "plain.xml", _sub(rb'(<int name="beta" value=")2', rb"\g<1>99999999999999999999"),
     store.StoreFormatError, "invalid <int>"),
    ("NUL-in-text", "plain.xml", lambda d: d.replace(b">one<", b">o\x00ne<"), store.StoreFormatError, "control character"),
    ("unknown-entity", "plain.xml", lambda d: d.replace(b">one<", b">&bomb;<"), store.StoreFormatError, "entity"),
    ("doctype-entity-expansion", "plain.xml",
     lambda d: d.replace(b"<map>", b'<!DOCTYPE map [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">]>\n<map>')
     .replace(b">one<", b">&b;<"), store.StoreFormatError, "expected <map>"),
    ("deep-nesting", "plain.xml", lambda d: d.replace(b"</map>", b'<set name="s">' + b"<string>" * 200_000 + b"</map>"),
     store.StoreFormatError, "markup is not allowed"),
    ("invalid-UTF-8", "plain.xml", lambda d: d.replace(b">one<", b">\xff\xfe<"), store.StoreFormatError, "UTF-8"),
    ("UTF-16", "plain.xml", lambda d: d.decode().encode("utf-16"), store.StoreFormatError, "expected <map>"),
    ("truncated-half", "enc.xml", lambda d: d[: len(d) // 2], store.StoreFormatError, "end of file|expected"),
    ("keyset-not-hex", "enc.xml", lambda d: d.replace(_keyset_hex(d), _keyset_hex(d)[:-1] + b"g"),
     store.StoreFormatError, "hexadecimal"),
    ("keyset-odd-length", "enc.xml", lambda d: d.replace(_keyset_hex(d), _keyset_hex(d)[:-1]), store.StoreFormatError, "hexadecimal"),
    ("keyset-empty", "enc.xml", lambda d: d.replace(_keyset_hex(d), b""), store.StoreFormatError, "encrypted_keyset is missing"),
    ("keyset-huge", "enc.xml", lambda d: d.replace(_keyset_hex(d), _keyset_hex(d) * 5000), store.StoreFormatError, "appears twice"),
    ("keyset-bit-flip", "enc.xml",
     lambda d: d.replace(_keyset_hex(d), _keyset_hex(d)[:40] + (b"0" if _keyset_hex(d)[40:41] != b"0" else b"1")
                         + _keyset_hex(d)[41:]), pcb.DecryptionError, "authentication|master key"),
    ("keysets-swapped", "enc.xml",
     lambda d: d.replace(_keyset_hex(d, 0), b"@").replace(_keyset_hex(d, 1), _keyset_hex(d, 0)).replace(b"@", _keyset_hex(d, 1)),
     store.StoreFormatError, "key keyset.*AesGcmKey.*needs AesSivKey"),
    ("keyset-missing", "enc.xml", _sub(rb'<string name="__androidx[^"]*value_keyset__">[0-9a-f]+</string>', b""),
     store.StoreFormatError, "lacks a value keyset"),
    ("keyset-duplicated", "enc.xml", lambda d: d.replace(b"</map>", b'<string name="' + KEYSET.encode() + b'">'
                                                           + _keyset_hex(d) + b"</string>\n</map>"),
     store.StoreFormatError, "duplicate"),
    ("native-int-in-encrypted", "enc.xml", lambda d: d.replace(b"</map>", b'<int name="x" value="1" />\n</map>'),
     store.StoreFormatError, "native <int>"),
    ("sealed-map-bit-flip", "fenc.xml", _sub(rb'(<string name="__[^"]*sealed[^"]*">[A-Za-z0-9+/]{30})([A-Za-z0-9+/])',
                                             lambda m: m.group(1) + (b"A" if m.group(2) != b"A" else b"B")),
     pcb.DecryptionError, "authentication|corrupted"),
]
LAZY = [  # the file opens (the other entries stay readable); the bad entry raises when read
    ("entry-name-not-Base64", _sub(rb'(<string name=")([A-Za-z0-9+/=]{20,})(">)', rb"\1!!!!\3"), "Base64"),
    ("value-not-Base64", _sub(rb'(<string name="[A-Za-z0-9+/=]{20,}">)([^<]+)(<)', rb"\1!!!!\3"), "Base64"),
    ("value-empty", _sub(rb'(<string name="[A-Za-z0-9+/=]{20,}">)([^<]+)(<)', rb"\1\3"), "not sealed|corrupted|length"),
]


def _open_for(w, name, **kw):
    path = w.p(name)
    if name == "plain.xml":
        return store.open(path, encrypted=False, **kw)
    return store.open(path, master_key_file=w.key, layout="file" if name == "fenc.xml" else "entries", **kw)


def _write(path, data):
    # No O_TRUNC: ext4 flushes a file truncated to zero on close, which is slow in a loop.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))  # a distinctive mtime


@pytest.mark.parametrize("case", CORRUPT, ids=[c[0] for c in CORRUPT])
def test_corrupted_store_file(w, case):
    _id, name, transform, exc, match = case
    data = transform(Path(w.p(name)).read_bytes())
    assert data != Path(w.p(name)).read_bytes(), "the corruption did not apply"
    _write(w.p(name), data)
    before = snapshot(w.path)
    with pytest.raises(exc, match="(?i)" + match) as ei:
        _open_for(w, name)
    assert name in str(ei.value), f"the message does not name the file: {ei.value}"
    assert_unchanged(before, snapshot(w.path))


@pytest.mark.parametrize("case", LAZY, ids=[c[0] for c in LAZY])
def test_corrupted_entry_raises_when_read(w, case):
    _id, transform, match = case
    data = transform(Path(w.enc).read_bytes())
    assert data != Path(w.enc).read_bytes()
    _write(w.enc, data)
    before = snapshot(w.path)
    s = _open_for(w, "enc.xml")
    with s:
        readable = {}
        for n in THREE:
            try:
                readable[n] = s.get(n)
            except pcb.DecryptionError as e:
                assert re.search("(?i)" + match, str(e)) and "enc.xml" in str(e), str(e)
        assert len(readable) >= 1, "one corrupted entry made the others unreadable"
        with pytest.raises(pcb.DecryptionError, match="(?i)" + match):
            s.all()
    assert_unchanged(before, snapshot(w.path))


@pytest.mark.parametrize("name", ["enc.xml", "fenc.xml", "plain.xml", "pp.xml"])
def test_every_truncation_is_refused_and_untouched(w, name):
    """The file cut at every byte (but the final newline): a clear error, bytes and mtime unchanged."""
    path = w.p(name)
    data = Path(path).read_bytes()
    assert data.endswith(b"</map>\n")
    rest = snapshot(w.path)
    del rest[name]
    for n in range(len(data) - 1):
        _write(path, data[:n])
        st = os.stat(path)
        with pytest.raises(store.StoreFormatError) as ei:
            if name == "pp.xml":
                store.open(path, passphrase=PASSPHRASE)
            else:
                _open_for(w, name)
        msg = str(ei.value)
        assert name in msg and re.search(r"(?i)expected|end of file|invalid|not allowed|malformed|unterminated|bad value", msg), (n, msg)
        st2 = os.stat(path)
        assert (st2.st_size, st2.st_mtime_ns) == (st.st_size, st.st_mtime_ns), f"truncated at {n}: file touched"
        assert Path(path).read_bytes() == data[:n], f"truncated at {n}: bytes changed"
    after = snapshot(w.path)
    del after[name]
    assert_unchanged(rest, after)


def test_gcm_store_opened_as_chacha_is_refused(w):
    """Opened with the wrong value cipher: refused at open or on reading, never wrong data."""
    before = snapshot(w.path)
    try:
        s = store.open(w.enc, master_key_file=w.key, value_encryption="chacha20-poly1305")
    except (store.StoreFormatError, pcb.DecryptionError) as e:
        assert re.search("(?i)value_encryption|chacha|option", str(e)), str(e)
    else:
        with s:
            with pytest.raises(pcb.DecryptionError, match="(?i)authentication"):
                s.all()
    assert_unchanged(before, snapshot(w.path))


def _bytes_read() -> int | None:
    """Bytes this process has read through read() and friends (Linux /proc/self/io), or None."""
    try:
        with open("/proc/self/io", encoding="ascii") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("rchar:"))
    except (OSError, StopIteration, ValueError):
        return None


def test_huge_store_file_is_refused_unread(w):
    """A (sparse) 5 GiB store file: refused from its size, at once, without reading it."""
    path = w.p("huge.xml")
    with open(path, "wb") as f:
        f.truncate(5 << 30)
    before = snapshot(w.path)
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    read0 = _bytes_read()
    with pytest.raises(store.StoreFormatError, match="(?i)larger|4 GiB"):
        store.open(path, encrypted=False)
    if read0 is not None:  # unread: this process read (almost) none of its 5 GiB
        assert _bytes_read() - read0 < 1 << 20
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - max_rss) * 1024 < 16 << 20
    assert_unchanged(before, snapshot(w.path))


# --------------------------------------------------------------------------
# Failed calls leave the store usable
# --------------------------------------------------------------------------

def test_failed_puts_leave_the_batch_unchanged(w):
    e = w.e
    e.put_string("alpha", "changed").put_int("delta", 4)
    for call in (lambda: e.put_int("alpha", 2**40), lambda: e.put_string("alpha", None),
                 lambda: e.put_string_set("alpha", ["ok", 5]), lambda: e.put_float("delta", 1e40),
                 lambda: e.put_string_set("alpha", _raising_iterable()), lambda: e.remove(None)):
        with pytest.raises((TypeError, ValueError, RuntimeError)):
            call()
    assert e.commit() is True
    assert w.s.all() == {**THREE, "alpha": "changed", "delta": 4}
    with store.open(w.enc, master_key_file=w.key) as s:
        assert s.all() == {**THREE, "alpha": "changed", "delta": 4}


def test_failed_rotations_leave_the_store_usable(w):
    s = w.s
    for bad in ("k31.key", "k33.key", "adir", "loose.key", "nodir/k.key"):
        with pytest.raises((OSError, ValueError)):
            s.rotate(master_key_file=w.p(bad))
    s.edit().put_string("after", "failed rotations").commit()
    with store.open(w.enc, master_key_file=w.key) as s2:
        assert s2.all() == {**THREE, "after": "failed rotations"}
    s.rotate(master_key_file=w.p("rotated.key"))
    with pytest.raises(pcb.DecryptionError):
        store.open(w.enc, master_key_file=w.key)
    with store.open(w.enc, master_key_file=w.p("rotated.key")) as s2:
        assert s2.all() == {**THREE, "after": "failed rotations"}


# --------------------------------------------------------------------------
# Calls that could crash or hang the interpreter: in a child process
# --------------------------------------------------------------------------

CHILD = r"""
import json, os, resource, sys, threading
import pycipherbench as pcb
from pycipherbench import store
D, expr, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])

def hung():
    sys.stdout.write(json.dumps({"hang": limit}) + "\n")
    sys.stdout.flush()
    os._exit(3)

timer = threading.Timer(limit, hung)
timer.daemon = True
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
timer.start()
try:
    r = eval(expr, {"store": store, "pcb": pcb, "D": D, "os": os})
    out = {"ok": repr(r)}
    if hasattr(r, "close"):
        r.close()
except BaseException as e:
    out = {"exc": type(e).__name__, "mro": [c.__name__ for c in type(e).__mro__], "msg": str(e)}
timer.cancel()
out["maxrss_grew_mib"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
print(json.dumps(out))
"""

ISOLATED = [
    # (id, setup(dir), expression evaluated in the child with D = the directory, exc name, match, bug)
    # regressions: None as the path was dereferenced as a path (SIGSEGV)
    ("open-path-None", None, "store.open(None, master_key_file=D + '/m.key')", "TypeError", RE_PATH, None),
    ("open-path-None-plain", None, "store.open(None, encrypted=False)", "TypeError", RE_PATH, None),
    ("open-key-symlink-devnull", None, "store.open(D + '/new.xml', master_key_file=D + '/devnull.key')",
     "OSError", "regular file", None),
    ("open-key-symlink-devzero", None, "store.open(D + '/enc.xml', master_key_file=D + '/devzero.key')",
     "OSError", "regular file", None),
    ("open-path-symlink-devnull", None, "store.open(D + '/devnull.xml', encrypted=False)", "OSError", "regular file", None),
    ("open-path-symlink-devnull-encrypted", None, "store.open(D + '/devnull.xml', master_key_file=D + '/new.key')",
     "OSError", "regular file", None),
    ("rotate-key-symlink-devnull", None,
     "store.open(D + '/enc.xml', master_key_file=D + '/m.key').rotate(master_key_file=D + '/devnull.key')",
     "OSError", "regular file", None),
    ("open-key-fifo", lambda d: os.mkfifo(d / "fifo.key"), "store.open(D + '/enc.xml', master_key_file=D + '/fifo.key')",
     "OSError", "regular file", None),
    ("open-path-fifo", lambda d: os.mkfifo(d / "fifo.xml"), "store.open(D + '/fifo.xml', encrypted=False)",
     "OSError", "regular file", None),
    ("open-scrypt-sidecar-fifo", lambda d: (os.remove(d / "pp.xml.scrypt"), os.mkfifo(d / "pp.xml.scrypt")),
     "store.open(D + '/pp.xml', passphrase='correct horse')", "OSError", "regular file", None),
    ("open-key-256MiB", lambda d: os.truncate(d / "k33.key", 256 << 20),
     "store.open(D + '/enc.xml', master_key_file=D + '/k33.key')", "StoreFormatError", "exactly 32 bytes",
     None),
    ("open-scrypt-sidecar-256MiB", lambda d: os.truncate(d / "pp.xml.scrypt", 256 << 20),
     "store.open(D + '/pp.xml', passphrase='correct horse')", "StoreFormatError", "scrypt", None),
]

CHILD_LIMIT = 3.0
MAX_RSS_MIB = 64


@pytest.mark.parametrize("case", [pytest.param(c, id=c[0], marks=[pytest.mark.xfail(strict=True, reason=c[5])] if c[5] else [])
                                  for c in ISOLATED])
def test_isolated(w, case):
    _id, setup, expr, exc_name, match, _bug = case
    if setup is not None:
        setup(w.path)
    before = snapshot(w.path)
    pkg_root = str(Path(pcb.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([pkg_root, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", CHILD, w.d, expr, str(CHILD_LIMIT)], cwd=w.d, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode >= 0, f"the interpreter crashed (signal {-proc.returncode}): {proc.stderr[-2000:]}"
    lines = proc.stdout.strip().splitlines()
    assert lines, f"no result (exit {proc.returncode}): {proc.stderr[-2000:]}"
    out = json.loads(lines[-1])
    assert "hang" not in out, f"the call hung (no answer in {CHILD_LIMIT} s)"
    assert "exc" in out, f"expected {exc_name}, the call succeeded: {out['ok']}"
    assert exc_name in out["mro"], f"expected {exc_name}, got {out['exc']}: {out['msg']}"
    assert re.search("(?i)" + match, out["msg"]), out["msg"]
    assert out["maxrss_grew_mib"] < MAX_RSS_MIB, f"peak RSS grew {out['maxrss_grew_mib']:.0f} MiB before refusing"
    assert_unchanged(before, snapshot(w.path))

"""Issue 11: bad entries and option/file mismatches.

Item 11: every bad entry, in every mode, reads as an error that names it, is
present for ``in`` and can be removed (``remove`` deletes it, ``put`` replaces
it, never a duplicate); an entry whose *name* does not open is reachable by no
plain name, so ``all()`` names it and ``Editor.remove_unreadable()`` drops it.
Item 12: a store opened with the other value AEAD than it was created with is
refused at open, naming both options.
The files are corrupted on disk, as a careless copy or an attacker would.
"""

from __future__ import annotations

import base64
import itertools
import os
import re
import shutil
from pathlib import Path

import pytest

import pycipherbench as pcb
from pycipherbench import store

KEYSET_PREFIX = "__androidx_security_crypto_encrypted_prefs_"
ENTRY = re.compile(rb'(<string name=")([^"]*)(">)([^<]*)(</string>)')

MODES = [
    dict(faithful=f, key_encryption=k, value_encryption=v)
    for f, k, v in itertools.product([False, True], ["siv", "none"], ["gcm", "chacha20-poly1305", "none"])
]


def _mode_id(m):
    return f"{'faithful' if m['faithful'] else 'lean'}-names_{m['key_encryption']}-values_{m['value_encryption']}"


def _entries(data: bytes):
    """The (match) of each entry element that is not a keyset, in file order."""
    return [m for m in ENTRY.finditer(data) if not m.group(2).startswith(KEYSET_PREFIX.encode())]


def _b64_edit(text: bytes, fn) -> bytes:
    return base64.b64encode(fn(bytearray(base64.b64decode(text, validate=True))))


def _flip(i):
    def f(b):
        b[i] ^= 0x01
        return b
    return f


# What each corruption does to the first entry's (name text, value text); None: not applicable.
def _value_corruptions(mode):
    aead = mode["value_encryption"] != "none"
    c = {
        "value-bad-Base64": lambda n, v: (n, v[:3] + b"!" + v[4:]),
        "value-truncated": lambda n, v: (n, _b64_edit(v, lambda b: b[:-2])),
        "value-empty": lambda n, v: (n, b""),
    }
    if aead:
        c["value-bad-tag"] = lambda n, v: (n, _b64_edit(v, _flip(-1)))
        c["value-wrong-prefix"] = lambda n, v: (n, _b64_edit(v, _flip(0)))
        c["value-wrong-key-id"] = lambda n, v: (n, _b64_edit(v, _flip(2)))
    else:
        c["value-bad-type-id"] = lambda n, v: (n, _b64_edit(v, lambda b: b[:3] + b"\x09" + b[4:]))
        c["value-bad-UTF-8"] = lambda n, v: (n, _b64_edit(v, lambda b: b[:-1] + b"\xff"))
    return c


def _name_corruptions(mode):
    if mode["key_encryption"] != "siv":
        return {}
    return {
        "name-bad-Base64": lambda n, v: (n[:3] + b"!" + n[4:], v),
        "name-bad-tag": lambda n, v: (_b64_edit(n, _flip(8)), v),
        "name-truncated": lambda n, v: (_b64_edit(n, lambda b: b[:-1]), v),
        "name-wrong-key-id": lambda n, v: (_b64_edit(n, _flip(2)), v),
        "name-wrong-prefix": lambda n, v: (_b64_edit(n, _flip(0)), v),
    }


CASES = [(m, c, "value") for m in MODES for c in _value_corruptions(m)] + \
        [(m, c, "name") for m in MODES for c in _name_corruptions(m)]


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    """One store per mode holding alpha (first in the file) and beta."""
    d = tmp_path_factory.mktemp("entries")
    key = str(d / "m.key")
    paths = {}
    for m in MODES:
        p = str(d / f"{_mode_id(m)}.xml")
        with store.open(p, master_key_file=key, **m) as s:
            s.edit().put_string("alpha", "one").put_int("beta", 2).commit()
        paths[_mode_id(m)] = p
    return d, key, paths


def _corrupt(src: str, dst: str, how) -> tuple[bytes, bytes]:
    """Copies src to dst with the first entry corrupted; returns its new (name, value) texts."""
    data = Path(src).read_bytes()
    first = _entries(data)[0]
    name, value = how(first.group(2), first.group(4))
    out = data[: first.start(2)] + name + data[first.end(2): first.start(4)] + value + data[first.end(4):]
    assert out != data
    Path(dst).write_bytes(out)
    return name, value


def _described(mode, name_text: bytes) -> str:
    """What an error message calls the entry: the plain name, or the start of the file's name text."""
    return "alpha" if mode["key_encryption"] == "none" else name_text[:20].decode()


def _open(path, key, mode):
    return store.open(path, master_key_file=key, **mode)


def _names_in_file(path) -> list[bytes]:
    return [m.group(2) for m in _entries(Path(path).read_bytes())]


@pytest.mark.parametrize("mode,corruption,part", CASES,
                         ids=[f"{_mode_id(m)}-{c}" for m, c, _ in CASES])
def test_bad_entry_reads_as_error_naming_it_and_can_be_removed(originals, tmp_path, mode,
                                                                            corruption, part):
    d, key, paths = originals
    how = {**_value_corruptions(mode), **_name_corruptions(mode)}[corruption]
    path = str(tmp_path / f"{_mode_id(mode)}.xml")  # the file name is the store name (SIV's AAD)
    name_text, _ = _corrupt(paths[_mode_id(mode)], path, how)
    who = _described(mode, name_text)

    def assert_names_it(excinfo):
        msg = str(excinfo.value)
        assert os.path.basename(path) in msg and who in msg, f"the error does not name the entry {who!r}: {msg}"

    with _open(path, key, mode) as s:
        assert s.get_int("beta") == 2, "one bad entry made another unreadable"
        with pytest.raises(pcb.DecryptionError) as ei:
            s.all()
        assert_names_it(ei)
        with pytest.raises(pcb.DecryptionError) as ei:
            s.rotate()
        assert_names_it(ei)
        if part == "value":
            # Reachable by its plain name: present, and reading it raises naming it.
            assert "alpha" in s
            for get in (s.get_string, s.get_int, lambda n: s.get(n)):
                with pytest.raises(pcb.DecryptionError) as ei:
                    get("alpha")
                assert_names_it(ei)
            assert len(s) == 2
            s.edit().remove("alpha").commit()
        else:
            # No plain name reaches it; its message says how to remove it.
            assert "alpha" not in s and s.get_string("alpha") is None
            assert "remove_unreadable" in str(ei.value)
            s.edit().remove_unreadable().commit()
        assert "alpha" not in s
        assert s.all() == {"beta": 2}
        s.rotate()  # possible again
    with _open(path, key, mode) as s:
        assert s.all() == {"beta": 2}
    assert len(_names_in_file(path)) == 1


@pytest.mark.parametrize("mode,corruption", [(m, c) for m, c, p in CASES if p == "value"],
                         ids=[f"{_mode_id(m)}-{c}" for m, c, p in CASES if p == "value"])
def test_put_replaces_a_bad_entry_never_a_duplicate(originals, tmp_path, mode, corruption):
    d, key, paths = originals
    path = str(tmp_path / f"{_mode_id(mode)}.xml")
    _corrupt(paths[_mode_id(mode)], path, _value_corruptions(mode)[corruption])
    with _open(path, key, mode) as s:
        s.edit().put_string("alpha", "fixed").commit()
        assert s.get_string("alpha") == "fixed"
        assert s.all() == {"alpha": "fixed", "beta": 2}
    names = _names_in_file(path)
    assert len(names) == len(set(names)) == 2, names
    with _open(path, key, mode) as s:  # a duplicate name would refuse to open
        assert s.all() == {"alpha": "fixed", "beta": 2}


@pytest.mark.parametrize("mode", [m for m in MODES if m["key_encryption"] == "siv"], ids=_mode_id)
def test_remove_unreadable_keeps_readable_entries_and_bad_values(originals, tmp_path, mode):
    """remove_unreadable() drops only entries whose names do not open; a bad value stays (remove it by name)."""
    d, key, paths = originals
    path = str(tmp_path / f"{_mode_id(mode)}.xml")
    _corrupt(paths[_mode_id(mode)], path, _value_corruptions(mode)["value-bad-Base64"])
    with _open(path, key, mode) as s:
        s.edit().remove_unreadable().put_string("gamma", "three").commit()
        assert "alpha" in s and len(s) == 3
        with pytest.raises(pcb.DecryptionError):
            s.get_string("alpha")
        assert s.get_string("gamma") == "three"


def test_unreadable_name_and_put_of_the_same_plain_name(originals, tmp_path):
    """A put of the plain name whose entry's name is corrupted adds a readable entry; the file
    never holds one name twice, and remove_unreadable() then leaves only readable entries."""
    d, key, paths = originals
    mode = MODES[0]
    path = str(tmp_path / f"{_mode_id(mode)}.xml")
    _corrupt(paths[_mode_id(mode)], path, _name_corruptions(mode)["name-bad-Base64"])
    with _open(path, key, mode) as s:
        s.edit().put_string("alpha", "new").commit()
        assert s.get_string("alpha") == "new"
    names = _names_in_file(path)
    assert len(names) == len(set(names)) == 3
    with _open(path, key, mode) as s:
        s.edit().remove_unreadable().commit()
        assert s.all() == {"alpha": "new", "beta": 2}


SEALED = [
    ("bad-Base64", lambda t: t[:10] + b"!" + t[11:]),
    ("bad-tag", lambda t: _b64_edit(t, _flip(-1))),
    ("truncated", lambda t: _b64_edit(t, lambda b: b[:20])),
    ("wrong-key-id", lambda t: _b64_edit(t, _flip(2))),
]


@pytest.mark.parametrize("case", SEALED, ids=[c[0] for c in SEALED])
@pytest.mark.parametrize("faithful", [False, True])
def test_layout_file_bad_sealed_map_names_it(tmp_path, case, faithful):
    """layout='file' holds one entry: a bad one refuses the open, naming it, and changes nothing."""
    key, path = str(tmp_path / "m.key"), str(tmp_path / "f.xml")
    with store.open(path, master_key_file=key, layout="file", faithful=faithful) as s:
        s.edit().put_string("alpha", "one").commit()
    data = Path(path).read_bytes()
    m = [m for m in ENTRY.finditer(data) if b"sealed" in m.group(2)][0]
    bad = data[: m.start(4)] + case[1](m.group(4)) + data[m.end(4):]
    Path(path).write_bytes(bad)
    with pytest.raises(pcb.DecryptionError, match="__pcb_sealed_map__") as ei:
        store.open(path, master_key_file=key, layout="file", faithful=faithful)
    assert "f.xml" in str(ei.value)
    assert Path(path).read_bytes() == bad


# --------------------------------------------------------------------------
# Item 12: the other value AEAD is refused at open, naming both
# --------------------------------------------------------------------------

OTHER = {"gcm": "chacha20-poly1305", "chacha20-poly1305": "gcm"}
AEAD_MODES = [dict(faithful=f, key_encryption=k, value_encryption=v, layout=lay)
              for f, k, v, lay in itertools.product([False, True], ["siv", "none"], ["gcm", "chacha20-poly1305"],
                                                    ["entries", "file"])
              if not (lay == "file" and k == "none")]


def _aead_id(m):
    return f"{m['layout']}-{'faithful' if m['faithful'] else 'lean'}-names_{m['key_encryption']}-{m['value_encryption']}"


def _assert_refused_naming_both(path, key, mode, wrong):
    before = Path(path).read_bytes()
    with pytest.raises(store.StoreFormatError) as ei:
        store.open(path, master_key_file=key, **{**mode, "value_encryption": wrong})
    msg = str(ei.value)
    assert f"'{mode['value_encryption']}'" in msg and f"'{wrong}'" in msg and os.path.basename(path) in msg, msg
    assert Path(path).read_bytes() == before


@pytest.mark.parametrize("mode", AEAD_MODES, ids=_aead_id)
def test_other_value_aead_is_refused_at_open(tmp_path, mode):
    key, path = str(tmp_path / "m.key"), str(tmp_path / "s.xml")
    with store.open(path, master_key_file=key, **mode) as s:
        s.edit().put_string("alpha", "one").put_int("beta", 2).commit()
    _assert_refused_naming_both(path, key, mode, OTHER[mode["value_encryption"]])
    with store.open(path, master_key_file=key, **mode) as s:
        assert s.all() == {"alpha": "one", "beta": 2}


@pytest.mark.parametrize("aead", ["gcm", "chacha20-poly1305"])
def test_a_tampered_first_entry_does_not_hide_the_mismatch(tmp_path, aead):
    key, path = str(tmp_path / "m.key"), str(tmp_path / "s.xml")
    mode = dict(value_encryption=aead)
    with store.open(path, master_key_file=key, **mode) as s:
        s.edit().put_string("alpha", "one").put_int("beta", 2).commit()
    _corrupt(path, path, lambda n, v: (n, _b64_edit(v, _flip(-1))))
    _assert_refused_naming_both(path, key, mode, OTHER[aead])
    with store.open(path, master_key_file=key, **mode) as s:  # the right option: only alpha is bad
        assert s.get_int("beta") == 2
        with pytest.raises(pcb.DecryptionError, match="authentication"):
            s.get_string("alpha")


@pytest.mark.parametrize("aead", ["gcm", "chacha20-poly1305"])
def test_empty_store_is_refused_under_the_other_aead_too(tmp_path, aead):
    """An empty store (keysets only): the value keyset's Tink type URL (AesGcmKey or
    ChaCha20Poly1305Key) records the AEAD, so the other option is refused at open, naming
    both, and the file is untouched; the right option opens it."""
    key, path = str(tmp_path / "m.key"), str(tmp_path / "s.xml")
    store.open(path, master_key_file=key, value_encryption=aead).close()
    _assert_refused_naming_both(path, key, dict(value_encryption=aead), OTHER[aead])
    with store.open(path, master_key_file=key, value_encryption=aead) as s:
        assert s.all() == {}


# --------------------------------------------------------------------------
# Smaller items
# --------------------------------------------------------------------------

JAVA_FLOATS = [3.4028235e38, -3.4028235e38, 3.4028234663852886e38, 1.4e-45, -1.4e-45, 1.17549435e-38,
               float("inf"), float("-inf"), 0.0, -0.0, 1.5, float.fromhex("0x1.fffffefffffffp127")]
FLOAT_STORES = {
    "plain": dict(encrypted=False),
    "lean": dict(),
    "faithful": dict(faithful=True),
    "file": dict(layout="file"),
}


@pytest.mark.parametrize("kind", list(FLOAT_STORES))
def test_put_float_accepts_every_java_float(tmp_path, kind):
    """Float.MAX_VALUE as Java prints it (3.4028235E38), MIN_VALUE (denormal), +-inf and NaN
    are stored as Java stores them (NaN as Float.NaN, 0x7fc00000) and read back exactly."""
    import math
    import struct

    kw = dict(FLOAT_STORES[kind])
    if kw.get("encrypted", True):
        kw["master_key_file"] = str(tmp_path / "m.key")
    path = str(tmp_path / "f.xml")
    want = {f"f{i}": struct.unpack(">f", struct.pack(">f", x))[0] for i, x in enumerate(JAVA_FLOATS)}
    with store.open(path, **kw) as s:
        e = s.edit()
        for i, x in enumerate(JAVA_FLOATS):
            e.put_float(f"f{i}", x)
        e.put_float("nan", float("nan")).put_float("negnan", -float("nan"))
        e.commit()
    with store.open(path, **kw) as s:
        for n, x in want.items():
            got = s.get_float(n)
            assert struct.pack(">f", got) == struct.pack(">f", x), (n, got, x)
        for n in ("nan", "negnan"):
            got = s.get_float(n)
            assert math.isnan(got) and struct.pack(">f", got) == b"\x7f\xc0\x00\x00", (n, struct.pack(">f", got))
        assert s.get_float("f0") == 3.4028234663852886e38  # Float.MAX_VALUE


def test_put_float_refuses_what_rounds_to_infinity(tmp_path):
    with store.open(str(tmp_path / "f.xml"), encrypted=False) as s:
        e = s.edit()
        for x in (float.fromhex("0x1.ffffffp127"), -float.fromhex("0x1.ffffffp127"), 3.5e38, 1e39):
            with pytest.raises(ValueError, match="32-bit float"):
                e.put_float("x", x)


B = dict(min_time=1e-4, repeats=1, warmup=0, stages=False)


@pytest.mark.parametrize("key_len,n_keys,min_len", [(1, 10_000, 3), (2, 10_000, 3), (1, 16, 2), (4, 10**7, 5)])
def test_bench_refuses_key_len_too_small_for_n_keys(tmp_path, key_len, n_keys, min_len):
    with pytest.raises(ValueError, match=rf"key_len.*>= {min_len}"):
        store.bench("get_missing", n_keys=n_keys, key_len=key_len, directory=str(tmp_path), **B)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("workload", ["put", "get", "get_missing", "contains", "all"])
def test_bench_names_are_distinct_and_get_missing_misses(tmp_path, workload):
    """At the shortest key_len allowed (15 of 62 one-character names, 15 missing ones): n_keys
    entries, and get_missing (which raises if a lookup hits) never finds one."""
    for _ in range(5):  # a repeat among random names would show within a few tries
        m = store.bench(workload, n_keys=15, key_len=1, directory=str(tmp_path), **B)
        assert m.entries == 15

"""pycipherbench.store's behaviour: Android semantics, persistence, durability, crash safety,
threads, errors and the store benchmark.

The file format itself is checked against an independent implementation in
tests/test_store_format.py; this file checks what the store *does*.
"""

from __future__ import annotations

import base64
import itertools
import json
import math
import os
import random
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path

import numpy as np
import pytest

import pycipherbench as pcb
from pycipherbench import store
from pycipherbench.store import StoreFormatError

TESTS = Path(__file__).resolve().parent  # on sys.path: conftest.py puts it there
import store_crash_child as crash_child  # noqa: E402

CHILD = TESTS / "store_crash_child.py"
from conftest import PACKAGE_ROOT, child_env  # noqa: E402  (shared scaffolding)

REPO = Path(PACKAGE_ROOT)
ENV = child_env()
MISSING = object()
KEYSET_NAMES = ("__androidx_security_crypto_encrypted_prefs_key_keyset__",
                "__androidx_security_crypto_encrypted_prefs_value_keyset__")


def f32(x: float) -> float:
    return float(np.float32(x))


# Every type, with values that survive float32 and XML.
DATA = {
    "greeting": "hello",
    "": "the empty name",
    "ключ 🔑 名前": "värde ✓ 🎉",
    "markup &<>\"'": "a&b<c>d\"e'f\n\ttab",
    "empty": "",
    "set": {"a", "b", "ü", "🔑"},
    "empty set": set(),
    "int": -5,
    "int max": 2**31 - 1,
    "long": 1 << 40,
    "long min": -(2**63),
    "float": f32(0.1),
    "float neg": -1.5,
    "true": True,
    "false": False,
}
DATA_TYPES = {"greeting": "string", "": "string", "ключ 🔑 名前": "string", "markup &<>\"'": "string",
              "empty": "string", "set": "string_set", "empty set": "string_set", "int": "int",
              "int max": "int", "long": "long", "long min": "long", "float": "float",
              "float neg": "float", "true": "bool", "false": "bool"}
PUT = {"string": "put_string", "string_set": "put_string_set", "int": "put_int", "long": "put_long",
       "float": "put_float", "bool": "put_bool"}
GET = {"string": "get_string", "string_set": "get_string_set", "int": "get_int", "long": "get_long",
       "float": "get_float", "bool": "get_bool"}


def put_all(s, data, types=DATA_TYPES, *, commit=True):
    e = s.edit()
    for name, value in data.items():
        getattr(e, PUT[types[name]])(name, value)
    if commit:
        assert e.commit() is True
    return e


def assert_typed(s, data, types=DATA_TYPES):
    """Every entry reads back through its own typed getter and through get()."""
    for name, value in data.items():
        assert getattr(s, GET[types[name]])(name, MISSING) == value, name
        assert s.get(name, MISSING) == value, name
    assert s.all() == data
    assert len(s) == len(data)


def entries_of(path) -> dict[str, str]:
    """The <string name=...>text</string> elements of a store file (raw text)."""
    text = Path(path).read_text(encoding="utf-8")
    return dict(re.findall(r'<string name="([^"]*)">([^<]*)</string>', text))


def tmp_files(directory) -> list[str]:
    return sorted(f for f in os.listdir(directory) if f.startswith(".") and f.endswith(".tmp"))


@pytest.fixture
def s(tmp_path, mk):
    st = store.open(tmp_path / "prefs.xml", master_key_file=mk)
    yield st
    st.close()


READ_SCRIPT = r"""
import json, sys
from pycipherbench import store
path, mk = sys.argv[1:3]
with store.open(path, master_key_file=mk) as s:
    print(json.dumps({k: sorted(v) if isinstance(v, set) else v for k, v in s.all().items()}))
"""


def read_in_subprocess(path, mk) -> dict:
    r = subprocess.run([sys.executable, "-c", READ_SCRIPT, str(path), str(mk)], env=ENV,
                       cwd=Path(path).parent, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def jsonable(d: dict) -> dict:
    return {k: sorted(v) if isinstance(v, set) else v for k, v in d.items()}


# ---------------------------------------------------------------- 1. Android semantics


def test_missing_entry_returns_default(s):
    for getter in GET.values():
        assert getattr(s, getter)("nope") is None
        assert getattr(s, getter)("nope", "dflt") == "dflt"
    assert s.get("nope") is None
    assert s.get("nope", 7) == 7
    assert "nope" not in s
    assert len(s) == 0
    assert s.all() == {}


def test_type_mismatch_returns_default(s):
    s.edit().put_int("i", 5).put_long("l", 7).put_string("s", "x").put_float("f", 1.5) \
        .put_bool("b", True).put_string_set("ss", {"x"}).commit()
    types = {"i": "int", "l": "long", "s": "string", "f": "float", "b": "bool", "ss": "string_set"}
    for name, t in types.items():
        for other, getter in GET.items():
            if other != t:
                assert getattr(s, getter)(name, "DEFAULT") == "DEFAULT", (name, getter)
    # the cases Android users trip on
    assert s.get_long("i") is None and s.get_string("i") is None and s.get_int("l") is None
    assert s.get_long("i", -1) == -1
    assert s.get_int("l", -1) == -1
    # get() returns the typed value whatever the type
    assert s.get("i") == 5 and type(s.get("i")) is int
    assert s.get("l") == 7 and type(s.get("l")) is int
    assert s.get("f") == 1.5 and type(s.get("f")) is float
    assert s.get("b") is True
    assert s.get("ss") == {"x"} and type(s.get("ss")) is set
    assert s.get("s") == "x"


def test_typed_roundtrip_in_memory(s):
    put_all(s, DATA)
    assert_typed(s, DATA)


def test_put_int_and_long_ranges(s):
    e = s.edit()
    for bad in (2**31, -(2**31) - 1, 2**40):
        with pytest.raises(ValueError, match="32-bit"):
            e.put_int("i", bad)
    for bad in (2**63, -(2**63) - 1):
        with pytest.raises(ValueError, match="64-bit"):
            e.put_long("l", bad)
    for bad in (1.0, "1", True, None):
        with pytest.raises(TypeError):
            e.put_int("i", bad)
        with pytest.raises(TypeError):
            e.put_long("l", bad)
    e.put_int("imax", 2**31 - 1).put_int("imin", -(2**31)).put_long("lmax", 2**63 - 1).put_long("lmin", -(2**63))
    assert e.commit()
    assert s.all() == {"imax": 2**31 - 1, "imin": -(2**31), "lmax": 2**63 - 1, "lmin": -(2**63)}
    # a failed put left nothing behind in the editor
    assert "i" not in s and "l" not in s


def test_put_float_rounds_to_float32(s):
    s.edit().put_float("tenth", 0.1).put_float("three", 3).put_float("inf", float("inf")) \
        .put_float("nan", float("nan")).put_float("neg0", -0.0).put_float("tiny", 1e-50).commit()
    got = s.get_float("tenth")
    assert got == float(np.float32(0.1)) and got != 0.1 and type(got) is float
    assert s.get_float("three") == 3.0 and type(s.get_float("three")) is float
    assert s.get_float("inf") == math.inf
    assert math.isnan(s.get_float("nan"))
    assert s.get_float("neg0") == 0.0 and math.copysign(1, s.get_float("neg0")) == -1
    assert s.get_float("tiny") == 0.0  # underflows in float32, as Java's (float) cast
    with pytest.raises(ValueError, match="32-bit float"):
        s.edit().put_float("big", 1e39)
    with pytest.raises(TypeError):
        s.edit().put_float("b", True)
    with pytest.raises(TypeError):
        s.edit().put_float("b", "1.0")


def test_put_bool_and_put_string_reject_other_types(s):
    e = s.edit()
    for bad in (1, 0, "true", None):
        with pytest.raises(TypeError, match="bool"):
            e.put_bool("b", bad)
    for bad in (b"bytes", 1, None, ["x"]):
        with pytest.raises(TypeError):
            e.put_string("s", bad)
    with pytest.raises(TypeError):
        e.put_string(b"name", "v")  # names are str too
    with pytest.raises(TypeError):
        s.get(b"name")
    with pytest.raises(UnicodeEncodeError):
        e.put_string("s", "\ud800")  # a lone surrogate has no UTF-8
    e.commit()
    assert len(s) == 0


def test_put_string_set_dedupes_and_rejects_a_str(tmp_path):
    path = tmp_path / "plain.xml"
    with store.open(path, encrypted=False) as s:
        s.edit().put_string_set("list", ["a", "b", "a", "a"]).put_string_set("gen", (c for c in "xyx")) \
            .put_string_set("empty", []).commit()
        assert s.get_string_set("list") == {"a", "b"}
        assert s.get_string_set("gen") == {"x", "y"}
        assert s.get_string_set("empty") == set()
        for bad in ("abc", b"abc"):
            with pytest.raises(TypeError, match="single string"):
                s.edit().put_string_set("x", bad)
        with pytest.raises(TypeError):
            s.edit().put_string_set("x", 5)
        with pytest.raises(TypeError):
            s.edit().put_string_set("x", ["ok", 1])
    # deduped in the file too: each member once
    text = path.read_text()
    block = re.search(r'<set name="list">(.*?)</set>', text, re.S).group(1)
    assert sorted(re.findall(r"<string>([^<]*)</string>", block)) == ["a", "b"]


def test_put_string_set_dedupes_in_the_serialization(tmp_path, mk):
    # value_encryption="none": the value is Base64 of type id + (len, bytes)* — one record per member
    path = tmp_path / "p.xml"
    with store.open(path, master_key_file=mk, key_encryption="none", value_encryption="none") as s:
        s.edit().put_string_set("set", ["q", "q", "r"]).commit()
    raw = base64.b64decode(entries_of(path)["set"])
    assert raw[:4] == (1).to_bytes(4, "big")
    members = []
    off = 4
    while off < len(raw):
        n = int.from_bytes(raw[off:off + 4], "big")
        members.append(raw[off + 4:off + 4 + n])
        off += 4 + n
    assert sorted(members) == [b"q", b"r"]


def test_unicode_and_empty_names_persist(tmp_path, mk):
    names = {"": "empty", "🔑🎉": "emoji", "名前": "cjk", " lead/trail ": "space",
             "tab\tnl\ncr\r": "ws", "x" * 3000: "long name", "\u0301": "combining mark"}
    path = tmp_path / "u.xml"
    with store.open(path, master_key_file=mk) as s:
        e = s.edit()
        for n, v in names.items():
            e.put_string(n, v)
        e.commit()
        assert s.all() == names
    with store.open(path, master_key_file=mk) as s:
        assert s.all() == names
        assert all(n in s for n in names)


# NUL ("\x00") in names and values. The encrypted default (SIV names, AEAD values, Base64 in the
# file) round-trips it. Where text reaches the XML as is (plain store; names with
# key_encryption="none"; the whole map with layout="file") XML cannot hold U+0000, and the put is
# refused with a ValueError naming it; the store stays usable and reopens.
NUL_REFUSED = [
    pytest.param(dict(encrypted=False), "name", id="plain-name"),
    pytest.param(dict(encrypted=False), "value", id="plain-value"),
    pytest.param(dict(encrypted=False), "set", id="plain-set-member"),
    pytest.param(dict(key_encryption="none"), "name", id="keyenc-none-name"),
    pytest.param(dict(key_encryption="none", value_encryption="none"), "name", id="no-crypto-name"),
    pytest.param(dict(layout="file"), "name", id="layout-file-name"),
    pytest.param(dict(layout="file"), "value", id="layout-file-value"),
    pytest.param(dict(layout="file"), "set", id="layout-file-set-member"),
]


@pytest.mark.parametrize("opts,where", NUL_REFUSED)
def test_nul_where_text_reaches_the_xml_is_refused(tmp_path, mk, opts, where):
    if opts.get("encrypted", True):
        opts = dict(opts, master_key_file=mk)
    path = tmp_path / "nul.xml"
    with store.open(path, **opts) as s:
        e = s.edit().put_string("before", "b")
        with pytest.raises(ValueError, match="U\\+0000"):
            if where == "name":
                e.put_string("a\x00b", "v")
            elif where == "value":
                e.put_string("n", "a\x00b")
            else:
                e.put_string_set("s", {"ok", "a\x00"})
        e.put_string("after", "a")
        assert e.commit()
        assert s.all() == {"before": "b", "after": "a"}
    with store.open(path, **opts) as s:  # the file stays readable
        assert s.all() == {"before": "b", "after": "a"}


@pytest.mark.parametrize("opts", [
    pytest.param(dict(key_encryption="none"), id="keyenc-none"),
    pytest.param(dict(key_encryption="none", value_encryption="none"), id="no-crypto"),
])
def test_nul_in_values_with_plain_names(tmp_path, mk, opts):
    """Values are Base64 in the file whenever the store is encrypted: NUL is fine there."""
    path = tmp_path / "nul.xml"
    data = {"n": "a\x00b", "s": {"\x00", "x"}}
    with store.open(path, master_key_file=mk, **opts) as s:
        put_all(s, data, {"n": "string", "s": "string_set"})
    with store.open(path, master_key_file=mk, **opts) as s:
        assert s.all() == data


@pytest.mark.parametrize("opts", [
    pytest.param(dict(), id="siv-gcm"),
    pytest.param(dict(value_encryption="chacha20-poly1305"), id="siv-chacha"),
    pytest.param(dict(value_encryption="none"), id="siv-novalue"),
])
def test_nul_in_names_and_values_roundtrips_when_encrypted(tmp_path, mk, opts):
    data = {"a\x00b": "v", "n": "a\x00b\x00", "\x00": "\x00", "set": {"x\x00", "\x00"}}
    types = {"a\x00b": "string", "n": "string", "\x00": "string", "set": "string_set"}
    path = tmp_path / "nul.xml"
    with store.open(path, master_key_file=mk, **opts) as s:
        put_all(s, data, types)
        assert s.all() == data
        assert "a" not in s and "a\x00b" in s  # NUL is not a terminator
    with store.open(path, master_key_file=mk, **opts) as s:
        assert_typed(s, data, types)


# ------------------------------------------------------------------------- Editor


def test_editor_chains_and_returns_itself(s):
    e = s.edit()
    assert e.put_string("a", "1") is e
    assert e.put_int("b", 2).put_long("c", 3).put_float("d", 4.0).put_bool("e", True) \
        .put_string_set("f", {"g"}).remove("zz").clear() is e
    assert e.commit() is True


def test_editor_changes_invisible_until_commit(s):
    s.edit().put_string("old", "1").commit()
    e = s.edit().put_string("new", "2").put_string("old", "changed").remove("old")
    assert "new" not in s and s.get("old") == "1" and len(s) == 1
    e2 = s.edit().clear()
    assert len(s) == 1
    assert e.commit()
    assert s.all() == {"new": "2"}
    del e2  # dropped without commit: nothing happens
    assert s.all() == {"new": "2"}
    e3 = s.edit().put_int("later", 1)
    assert "later" not in s
    assert e3.apply() is None
    assert s.get_int("later") == 1  # apply updates memory at once


def test_clear_applies_before_puts_whatever_the_order(s):
    s.edit().put_string("a", "1").put_string("b", "2").commit()
    # clear() after the puts still runs first (Android's commitToMemory)
    e = s.edit().put_string("c", "3")
    e.clear()
    e.put_string("d", "4")
    assert e.commit()
    assert s.all() == {"c": "3", "d": "4"}
    # clear + remove of a put name: the remove (last op for that name) wins, clear still first
    s.edit().put_string("x", "1").clear().remove("c").commit()
    assert s.all() == {"x": "1"}
    # clear alone empties
    s.edit().clear().commit()
    assert len(s) == 0 and s.all() == {}


def test_clear_then_reopen(tmp_path, mk):
    path = tmp_path / "c.xml"
    with store.open(path, master_key_file=mk) as s:
        put_all(s, DATA)
        s.edit().put_string("kept", "yes").clear().commit()
        assert s.all() == {"kept": "yes"}
    with store.open(path, master_key_file=mk) as s:
        assert s.all() == {"kept": "yes"}


def test_last_op_per_name_wins(s):
    s.edit().put_string("keep", "k").put_string("gone", "g").commit()
    e = s.edit()
    e.put_string("x", "1").put_int("x", 2).put_long("x", 3)      # type changes too
    e.put_string("y", "1").remove("y")                            # put then remove: removed
    e.remove("z").put_string("z", "back")                        # remove then put: present
    e.remove("gone").put_bool("gone", False).remove("gone")      # ends removed
    e.remove("never existed")
    assert e.commit()
    assert s.all() == {"keep": "k", "x": 3, "z": "back"}
    assert s.get_long("x") == 3 and s.get_int("x") is None and s.get_string("x") is None


def test_editor_context_manager(s):
    with s.edit() as e:
        e.put_string("a", "1")
        assert "a" not in s
    assert s.get_string("a") == "1"
    with pytest.raises(KeyError):
        with s.edit() as e:
            e.put_string("b", "2").remove("a").clear()
            raise KeyError("boom")
    assert s.all() == {"a": "1"}  # discarded


def test_editor_reuse_after_commit(s):
    e = s.edit().put_string("a", "1")
    assert e.commit()
    e.put_string("b", "2")
    assert e.commit()
    assert s.all() == {"a": "1", "b": "2"}
    assert e.commit()  # an empty commit is a success
    assert s.all() == {"a": "1", "b": "2"}


def test_two_editors_interleaved(s):
    e1 = s.edit().put_string("shared", "from e1").put_string("e1", "x")
    e2 = s.edit().put_string("shared", "from e2").put_string("e2", "y")
    assert e2.commit()
    assert e1.commit()  # committed last: its value wins
    assert s.all() == {"shared": "from e1", "e1": "x", "e2": "y"}


def test_len_in_all(s):
    assert len(s) == 0 and s.all() == {}
    put_all(s, DATA)
    assert len(s) == len(DATA)
    for name in DATA:
        assert name in s
    assert "not there" not in s
    got = s.all()
    assert got == DATA and got is not s.all()  # a fresh dict
    got.clear()
    assert len(s) == len(DATA)  # mutating the result does not touch the store
    s.edit().remove("greeting").commit()
    assert len(s) == len(DATA) - 1 and "greeting" not in s


def test_repr_name_path(tmp_path, mk):
    path = tmp_path / "secret_prefs.xml"
    s = store.open(path, master_key_file=mk)
    assert s.name == "secret_prefs" and s.path == str(path)
    assert "encrypted" in repr(s) and "0 entries" in repr(s)
    assert s.heap_bytes > 0 and s.disk_bytes == path.stat().st_size
    s.close()
    assert s.closed and "closed" in repr(s)
    s.close()  # idempotent


# ---------------------------------------------------------------- 2. persistence, all options

ENC_COMBOS = [dict(encrypted=True, key_encryption=k, value_encryption=v, layout=lay, cache=c, faithful=f)
              for k, v, lay, c, f in itertools.product(("siv", "none"), ("gcm", "chacha20-poly1305", "none"),
                                                       ("entries", "file"), (False, True), (False, True))]
PLAIN_COMBOS = [dict(encrypted=False, layout=lay, cache=c, faithful=f)
                for lay, c, f in itertools.product(("entries", "file"), (False, True), (False, True))]


def combo_id(o):
    if not o["encrypted"]:
        return f"plain-{o['layout']}-c{int(o['cache'])}-f{int(o['faithful'])}"
    return f"{o['key_encryption']}-{o['value_encryption']}-{o['layout']}-c{int(o['cache'])}-f{int(o['faithful'])}"


@pytest.mark.parametrize("opts", [pytest.param(o, id=combo_id(o)) for o in ENC_COMBOS + PLAIN_COMBOS])
def test_persistence_every_option_combination(tmp_path, mk, opts):
    key = dict(master_key_file=mk) if opts["encrypted"] else {}
    path = tmp_path / "prefs.xml"
    with store.open(path, **key, **opts) as s:
        put_all(s, DATA)
        s.edit().put_string("removed", "x").commit()
        s.edit().remove("removed").commit()
        assert_typed(s, DATA)
    with store.open(path, **key, **opts) as s:
        assert_typed(s, DATA)
        s.edit().put_string("second session", "2").commit()
    with store.open(path, **key, **opts) as s:
        assert s.all() == dict(DATA, **{"second session": "2"})
        s.edit().remove("second session").commit()
    with store.open(path, **key, **opts) as s:
        assert_typed(s, DATA)
    # (opening and reading alone never rewrites the file)
    mtime = path.stat().st_mtime_ns
    with store.open(path, **key, **opts) as s:
        s.all()
    assert path.stat().st_mtime_ns == mtime


BASE_COMBOS = [o for o in ENC_COMBOS + PLAIN_COMBOS if not o["cache"] and not o["faithful"]]


@pytest.mark.parametrize("opts,fw,fr", [
    pytest.param(o, fw, fr, id=f"{combo_id(o)[:-6]}-write{'F' if fw else 'L'}-read{'F' if fr else 'L'}")
    for o in BASE_COMBOS for fw in (False, True) for fr in (False, True)])
def test_lean_faithful_cache_read_each_others_files(tmp_path, mk, opts, fw, fr):
    key = dict(master_key_file=mk) if opts["encrypted"] else {}
    path = tmp_path / "prefs.xml"
    for cw, cr in ((False, True), (True, False)):  # cache on/off both ways
        writer = dict(opts, faithful=fw, cache=cw)
        reader = dict(opts, faithful=fr, cache=cr)
        if path.exists():
            path.unlink()
        with store.open(path, **key, **writer) as s:
            put_all(s, DATA)
        with store.open(path, **key, **reader) as s:
            assert_typed(s, DATA)
            assert_typed(s, DATA)  # again: from the cache, if on
            s.edit().put_string("reader", "r").remove("int").commit()
        with store.open(path, **key, **writer) as s:
            expected = dict(DATA, reader="r")
            del expected["int"]
            assert s.all() == expected


def test_options_change_the_file(tmp_path, mk):
    """A file written with one key/value encryption is not silently read as another."""
    path = tmp_path / "o.xml"
    with store.open(path, master_key_file=mk) as s:
        put_all(s, DATA)
    with pytest.raises(ValueError):  # DecryptionError / StoreFormatError are both ValueErrors
        with store.open(path, master_key_file=mk, value_encryption="chacha20-poly1305") as s:
            s.all()


# ------------------------------------------------------------------------- 3. apply()


def test_apply_durable_after_flush_and_close(tmp_path, mk):
    path = tmp_path / "a.xml"
    s = store.open(path, master_key_file=mk)
    for i in range(50):
        crash_child.write_state(s, i, apply=True)
        assert s.get_int("k0") == i  # memory updated at once
        assert s.all() == crash_child.state(i)
    s.flush()
    assert read_in_subprocess(path, mk) == jsonable(crash_child.state(49))
    for i in range(50, 250):
        crash_child.write_state(s, i, apply=True)
    s.edit().put_string("tail", "t").apply()
    s.close()  # flushes
    assert read_in_subprocess(path, mk) == jsonable(dict(crash_child.state(249), tail="t"))
    with store.open(path, master_key_file=mk) as s2:
        assert s2.all() == dict(crash_child.state(249), tail="t")


def test_apply_then_commit_ordering(s):
    s.edit().put_string("x", "applied").apply()
    s.edit().put_string("y", "committed").commit()  # a commit after apply includes it
    assert s.all() == {"x": "applied", "y": "committed"}
    s.flush()
    s.flush()  # nothing pending: returns at once


def test_unclosed_store_flushes_applies_at_exit(tmp_path, mk):
    path = tmp_path / "x.xml"
    script = ("import sys\nfrom pycipherbench import store\n"
              "s = store.open(sys.argv[1], master_key_file=sys.argv[2])\n"
              "for i in range(100):\n    s.edit().put_int('n', i).put_string('s', str(i)).apply()\n")
    r = subprocess.run([sys.executable, "-c", script, str(path), str(mk)], env=ENV,
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    with store.open(path, master_key_file=mk) as s:
        assert s.all() == {"n": 99, "s": "99"}


# ------------------------------------------------------------------------- 4. rotate()


@pytest.mark.parametrize("opts", [
    dict(),
    dict(key_encryption="none", value_encryption="chacha20-poly1305"),
    dict(value_encryption="none"),
    dict(layout="file"),
    dict(cache=True, faithful=True),
], ids=["siv-gcm", "plainnames-chacha", "siv-novalue", "file", "cache-faithful"])
def test_rotate_changes_keys_not_data(tmp_path, mk, opts):
    path = tmp_path / "r.xml"
    with store.open(path, master_key_file=mk, **opts) as s:
        put_all(s, DATA)
        before = entries_of(path)
        key_before = mk.read_bytes()
        s.rotate()
        assert_typed(s, DATA)  # data unchanged in memory
        after = entries_of(path)
        keysets = [ks for ks in KEYSET_NAMES if ks in before]
        assert keysets and [ks for ks in KEYSET_NAMES if ks in after] == keysets
        for ks in keysets:
            assert re.fullmatch(r"[0-9a-f]+", after[ks]) and after[ks] != before[ks]
        data_before = {k: v for k, v in before.items() if k not in KEYSET_NAMES}
        data_after = {k: v for k, v in after.items() if k not in KEYSET_NAMES}
        if opts.get("key_encryption") == "none" or opts.get("layout") == "file":
            assert data_before.keys() == data_after.keys()
        else:
            assert not set(data_before) & set(data_after)  # every SIV name changed
        if opts.get("value_encryption") == "none" and opts.get("layout") != "file":
            assert set(data_before.values()) == set(data_after.values())  # plain Base64 values
        else:
            assert not set(data_before.values()) & set(data_after.values())
        assert mk.read_bytes() == key_before  # same master key
        s.edit().put_string("after rotate", "x").commit()
    with store.open(path, master_key_file=mk, **opts) as s:
        assert s.all() == dict(DATA, **{"after rotate": "x"})


def test_rotate_with_pending_editor_and_applies(tmp_path, mk):
    """Puts encrypted before a rotate are committed correctly after it."""
    path = tmp_path / "r.xml"
    with store.open(path, master_key_file=mk) as s:
        s.edit().put_string("a", "1").apply()
        e = s.edit().put_string("pending", "p").put_int("n", 5)
        s.rotate()
        assert s.get("a") == "1"
        assert e.commit()
        assert s.all() == {"a": "1", "pending": "p", "n": 5}
    with store.open(path, master_key_file=mk) as s:
        assert s.all() == {"a": "1", "pending": "p", "n": 5}


def test_rotate_plain_store_is_value_error(tmp_path):
    with store.open(tmp_path / "p.xml", encrypted=False) as s:
        with pytest.raises(ValueError):
            s.rotate()


def test_rotate_to_new_master_key_file(tmp_path, mk):
    path = tmp_path / "r.xml"
    new_mk = tmp_path / "new.key"
    with store.open(path, master_key_file=mk) as s:
        put_all(s, DATA)
        old_key = mk.read_bytes()
        s.rotate(master_key_file=new_mk)
        assert new_mk.stat().st_size == 32 and stat.S_IMODE(new_mk.stat().st_mode) == 0o600
        assert new_mk.read_bytes() != old_key
        assert_typed(s, DATA)
        s.edit().put_int("post", 1).commit()  # writes use the new key
    with pytest.raises(pcb.DecryptionError, match="master key does not match"):
        store.open(path, master_key_file=mk)
    with store.open(path, master_key_file=new_mk) as s:
        assert s.all() == dict(DATA, post=1)
        with pytest.raises(ValueError):
            s.rotate(master_key_file=mk, passphrase="x")  # at most one


def test_passphrase_wrong_and_rotate(tmp_path):
    path = tmp_path / "pw.xml"
    with store.open(path, passphrase="correct horse", scrypt_n=1024) as s:
        put_all(s, DATA)
    assert json.loads((tmp_path / "pw.xml.scrypt").read_text())["n"] == 1024
    with pytest.raises(pcb.DecryptionError, match="master key does not match"):
        store.open(path, passphrase="wrong")
    with store.open(path, passphrase=b"correct horse") as s:  # bytes = its UTF-8
        assert_typed(s, DATA)
        s.rotate(passphrase="battery staple")
        assert_typed(s, DATA)
    with pytest.raises(pcb.DecryptionError, match="master key does not match"):
        store.open(path, passphrase="correct horse")
    with store.open(path, passphrase="battery staple") as s:
        assert_typed(s, DATA)
    with pytest.raises(ValueError):
        store.open(tmp_path / "e.xml", passphrase="")
    with pytest.raises(TypeError):
        store.open(tmp_path / "e.xml", passphrase=123)


# -------------------------------------------------------------------- 5. crash safety


def _spawn(path, mk, mode):
    return subprocess.Popen([sys.executable, str(CHILD), str(path), str(mk), mode], env=ENV,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


@pytest.mark.parametrize("mode", ["commit", "rotate"])
def test_crash_safety_sigkill(tmp_path, mk, mode):
    path = tmp_path / "crash.xml"
    with store.open(path, master_key_file=mk) as s:
        crash_child.write_state(s, 0)
    rng = random.Random(f"crash-{mode}")
    iterations = 30
    pool: deque = deque()
    spawned = 0
    counter = 0
    stale_seen = 0
    try:
        for it in range(iterations):
            while len(pool) < 3 and spawned < iterations:  # children import ahead of time
                pool.append(_spawn(path, mk, mode))
                spawned += 1
            p = pool.popleft()
            watchdog = threading.Timer(30, p.kill)
            watchdog.start()
            try:
                p.stdin.write("go\n")
                p.stdin.flush()
                ready = p.stdout.readline()
                assert ready.startswith("ready "), (ready, p.stderr.read() if p.poll() is not None else "")
                assert int(ready.split()[1]) == counter
                time.sleep(rng.uniform(0.005, 0.060))
                os.kill(p.pid, signal.SIGKILL)
                # Read through the text wrappers: readline() above may have buffered "c i"
                # lines already, which communicate() (reading the descriptors) would miss.
                out, err = p.stdout.read(), p.stderr.read()
                p.wait(timeout=30)
                for f in (p.stdin, p.stdout, p.stderr):
                    f.close()
            finally:
                watchdog.cancel()
            assert p.returncode == -signal.SIGKILL, f"child died by itself: {err}"
            acked = [int(line.split()[1]) for line in out.splitlines() if line.startswith("c ")]
            last_acked = acked[-1] if acked else counter
            stale_seen += bool(tmp_files(tmp_path))
            with store.open(path, master_key_file=mk) as s:  # always opens
                got = s.all()
            i = got["k0"]
            assert got == crash_child.state(i), f"iteration {it}: a mixed state"
            assert last_acked <= i <= last_acked + 1, (it, last_acked, i)  # no committed state lost
            assert i >= counter
            counter = i
            with store.open(path, master_key_file=mk) as s:  # the next write clears up
                s.edit().commit()
            assert tmp_files(tmp_path) == [], "a dead writer's temporary files survived the next commit"
    finally:
        for p in pool:
            p.kill()
            p.communicate(timeout=30)
    assert counter > 0, "the children never got a commit done"
    # informational: how often a kill left a temporary file behind
    print(f"{mode}: {counter} commits over {iterations} kills, {stale_seen} left a .tmp behind")


def test_stale_temp_files_removed_by_the_next_commit(tmp_path, mk):
    """Dead writers' temp files (no process has their pid) go at the next commit, under the
    file lock; opening touches none (issue 11 item 4: tests/test_store_multiprocess.py)."""
    path = tmp_path / "prefs.xml"
    with store.open(path, master_key_file=mk) as s:
        s.edit().put_string("a", "1").commit()
    stale = [tmp_path / ".prefs.xml.ffffffff01234567.tmp", tmp_path / ".prefs.xml.ffffffffffffffff.tmp"]
    unrelated = [tmp_path / ".other.xml.ffffffff01234567.tmp", tmp_path / "prefs.xml.bak",
                 tmp_path / ".prefs.xml.short.tmp"]
    for f in stale + unrelated:
        f.write_bytes(b"<map>garbage")
    with store.open(path, master_key_file=mk) as s:
        assert s.all() == {"a": "1"}
        assert all(f.exists() for f in stale)
        s.edit().put_string("b", "2").commit()
    assert not any(f.exists() for f in stale)
    assert all(f.exists() for f in unrelated)


# ---------------------------------------------------------------------------- 6. threads


def _random_value(rng):
    t = rng.choice(list(PUT))
    v = {"string": lambda: "s" * rng.randrange(40) + str(rng.random()),
         "string_set": lambda: {str(rng.randrange(9)) for _ in range(rng.randrange(4))},
         "int": lambda: rng.randrange(-(2**31), 2**31),
         "long": lambda: rng.randrange(-(2**63), 2**63),
         "float": lambda: f32(rng.uniform(-1e6, 1e6)),
         "bool": lambda: rng.random() < 0.5}[t]()
    return t, v


def _worker(s, t, model, stop, errors, rotate):
    rng = random.Random(f"thread-{t}")
    mine = [f"t{t}-{j}" for j in range(24)]
    try:
        while time.monotonic() < stop:
            r = rng.random()
            if r < 0.45:
                e = s.edit()
                staged = {}
                for _ in range(rng.randint(1, 5)):
                    name = rng.choice(mine)
                    if rng.random() < 0.2:
                        e.remove(name)
                        staged[name] = MISSING
                    else:
                        typ, v = _random_value(rng)
                        getattr(e, PUT[typ])(name, v)
                        staged[name] = v
                for name in staged:  # not visible yet
                    assert s.get(name, MISSING) == model.get(name, MISSING)
                if rng.random() < 0.5:
                    assert e.commit() is True
                else:
                    e.apply()
                for name, v in staged.items():
                    if v is MISSING:
                        model.pop(name, None)
                    else:
                        model[name] = v
                for name in staged:  # visible at once
                    assert s.get(name, MISSING) == model.get(name, MISSING)
            elif r < 0.85:
                name = rng.choice(mine)
                assert s.get(name, MISSING) == model.get(name, MISSING)
                assert (name in s) == (name in model)
                s.get(f"t{(t + 1) % 4}-{rng.randrange(24)}")  # another thread's key: just read
            elif r < 0.95:
                snapshot = s.all()
                assert {k: v for k, v in snapshot.items() if k in mine} == model
                assert len(s) >= len(model)
            elif r < 0.98 or not rotate:
                s.flush()
            else:
                s.rotate()
    except BaseException as exc:  # noqa: BLE001 - reported by the main thread
        errors.append((t, repr(exc)))


@pytest.mark.parametrize("rotate", [False, True], ids=["mixed", "mixed+rotate"])
def test_threads_one_store(tmp_path, mk, rotate):
    path = tmp_path / "t.xml"
    s = store.open(path, master_key_file=mk)
    models = [{} for _ in range(4)]
    errors: list = []
    stop = time.monotonic() + (2.0 if not rotate else 1.5)
    threads = [threading.Thread(target=_worker, args=(s, t, models[t], stop, errors, rotate), daemon=True)
               for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    assert not any(th.is_alive() for th in threads), "deadlock: a thread did not finish"
    assert errors == []
    expected = {k: v for m in models for k, v in m.items()}
    assert len(expected) > 20
    s.flush()
    assert s.all() == expected
    s.close()
    with store.open(path, master_key_file=mk) as s2:
        assert s2.all() == expected


def test_three_stores_three_threads(tmp_path, mk):
    configs = [dict(master_key_file=tmp_path / "k0"),
               dict(master_key_file=tmp_path / "k1", value_encryption="chacha20-poly1305", layout="file", cache=True),
               dict(encrypted=False)]
    results: dict = {}
    errors: list = []

    def run(k, opts):
        try:
            path = tmp_path / f"s{k}.xml"
            with store.open(path, **opts) as s:
                for i in range(60):
                    e = s.edit().put_int("i", i).put_string(f"n{i}", str(i) * 3)
                    if i % 2:
                        e.apply()
                    else:
                        e.commit()
                    assert s.get_int("i") == i
            with store.open(path, **opts) as s:
                results[k] = s.all()
        except BaseException as exc:  # noqa: BLE001
            errors.append((k, repr(exc)))

    threads = [threading.Thread(target=run, args=(k, o), daemon=True) for k, o in enumerate(configs)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    assert not any(th.is_alive() for th in threads), "deadlock"
    assert errors == []
    expected = dict({f"n{i}": str(i) * 3 for i in range(60)}, i=59)
    assert results == {0: expected, 1: expected, 2: expected}


# Regression: creating the master key file was not exclusive (a second opener's
# rename replaced the first one's key, whose store then could not be reopened).
def test_concurrent_first_open_with_one_master_key_file(tmp_path):
    lost = []
    for rnd in range(5):
        d = tmp_path / f"round{rnd}"
        d.mkdir()
        kf = d / "shared.key"
        barrier = threading.Barrier(4)
        errors: list = []

        def run(k):
            try:
                barrier.wait(timeout=30)
                with store.open(d / f"s{k}.xml", master_key_file=kf) as s:
                    s.edit().put_int("k", k).commit()
            except BaseException as exc:  # noqa: BLE001
                errors.append(repr(exc))

        threads = [threading.Thread(target=run, args=(k,), daemon=True) for k in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=60)
        assert not any(th.is_alive() for th in threads)
        assert errors == []
        for k in range(4):
            try:
                with store.open(d / f"s{k}.xml", master_key_file=kf) as s:
                    assert s.get_int("k") == k
            except pcb.DecryptionError:
                lost.append((rnd, k))
    assert lost == [], f"stores that no longer open with the shared key file: {lost}"


def test_close_waits_for_other_threads(tmp_path, mk):
    """close() from one thread while another commits: no crash, and later calls are ValueError."""
    path = tmp_path / "c.xml"
    s = store.open(path, master_key_file=mk)
    errors: list = []
    done = threading.Event()

    def writer():
        i = 0
        try:
            while True:
                s.edit().put_int("i", i).commit()
                i += 1
        except ValueError as exc:
            if "closed" not in str(exc):
                errors.append(repr(exc))
        except BaseException as exc:  # noqa: BLE001
            errors.append(repr(exc))
        finally:
            done.set()

    th = threading.Thread(target=writer, daemon=True)
    th.start()
    time.sleep(0.1)
    s.close()
    assert done.wait(30), "writer did not stop after close"
    th.join(timeout=30)
    assert errors == []
    with store.open(path, master_key_file=mk) as s2:
        assert s2.get_int("i") is not None


# ----------------------------------------------------------------------------- 7. errors


def test_open_directory_is_oserror(tmp_path, mk):
    d = tmp_path / "adir"
    d.mkdir()
    with pytest.raises(IsADirectoryError):
        store.open(d, master_key_file=mk)
    with pytest.raises(IsADirectoryError):
        store.open(d, encrypted=False)
    assert d.is_dir() and list(d.iterdir()) == []


def test_open_in_missing_directory(tmp_path, mk):
    path = tmp_path / "no" / "such" / "dir" / "p.xml"
    with pytest.raises(FileNotFoundError):
        store.open(path, master_key_file=mk)  # the keysets are written at first open
    assert not (tmp_path / "no").exists()
    # the plain store too fails at open, not at its first write
    with pytest.raises(FileNotFoundError):
        store.open(path, encrypted=False)
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("encrypted", [True, False], ids=["encrypted", "plain"])
@pytest.mark.parametrize("cut", [0.5, 0.1, 0.95])
def test_truncated_file_is_format_error_and_untouched(tmp_path, mk, encrypted, cut):
    path = tmp_path / "t.xml"
    key = dict(master_key_file=mk) if encrypted else dict(encrypted=False)
    with store.open(path, **key) as s:
        put_all(s, DATA)
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * cut)])
    broken = path.read_bytes()
    st_before = path.stat()
    with pytest.raises(StoreFormatError) as info:
        store.open(path, **key)
    assert isinstance(info.value, ValueError)
    assert str(path.name) in str(info.value)
    assert path.read_bytes() == broken
    assert path.stat().st_mtime_ns == st_before.st_mtime_ns
    assert tmp_files(tmp_path) == []


def test_operations_on_closed_store(tmp_path, mk):
    s = store.open(tmp_path / "c.xml", master_key_file=mk)
    s.edit().put_string("a", "1").commit()
    e = s.edit().put_string("b", "2")
    s.close()
    assert s.closed
    for call in (lambda: s.get("a"), lambda: s.get_string("a"), lambda: s.get_int("a"), lambda: len(s),
                 lambda: "a" in s, s.all, s.edit, s.flush, s.rotate, lambda: s.heap_bytes,
                 lambda: s.disk_bytes):
        with pytest.raises(ValueError, match="closed"):
            call()
    for call in (lambda: e.put_string("x", "y"), lambda: e.put_int("x", 1), lambda: e.remove("x"),
                 e.clear, e.commit, e.apply):
        with pytest.raises(ValueError, match="closed"):
            call()
    s.close()  # idempotent
    with store.open(tmp_path / "c.xml", master_key_file=mk) as s2:
        assert s2.all() == {"a": "1"}  # the orphaned editor wrote nothing


def test_context_manager_closes(tmp_path, mk):
    with store.open(tmp_path / "c.xml", master_key_file=mk) as s:
        pass
    assert s.closed
    with pytest.raises(ValueError):
        len(s)


def test_encrypted_needs_exactly_one_key_source(tmp_path, mk):
    with pytest.raises(ValueError, match="master_key_file"):
        store.open(tmp_path / "x.xml")
    with pytest.raises(ValueError, match="exactly one"):
        store.open(tmp_path / "x.xml", master_key_file=mk, passphrase="p")
    assert not (tmp_path / "x.xml").exists()


@pytest.mark.parametrize("size", [0, 31, 33])
def test_master_key_file_wrong_size(tmp_path, size):
    kf = tmp_path / "bad.key"
    kf.write_bytes(b"k" * size)
    kf.chmod(0o600)
    with pytest.raises(StoreFormatError, match=f"32 bytes, holds {size}"):
        store.open(tmp_path / "x.xml", master_key_file=kf)
    assert kf.read_bytes() == b"k" * size  # not replaced
    assert not (tmp_path / "x.xml").exists()


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_master_key_file_mode_refused(tmp_path, mode):
    kf = tmp_path / "open.key"
    kf.write_bytes(os.urandom(32))
    kf.chmod(mode)
    with pytest.raises(PermissionError, match="chmod 600"):
        store.open(tmp_path / "x.xml", master_key_file=kf)


def test_master_key_file_created_private(tmp_path, mk):
    with store.open(tmp_path / "x.xml", master_key_file=mk):
        pass
    assert stat.S_IMODE(mk.stat().st_mode) == 0o600 and mk.stat().st_size == 32


@pytest.mark.parametrize("kwargs,match", [
    (dict(key_encryption="aes"), "key_encryption"),
    (dict(value_encryption="aes-cbc"), "value_encryption"),
    (dict(layout="rows"), "layout"),
    (dict(key_encryption="SIV"), "key_encryption"),
])
def test_unknown_option_values(tmp_path, mk, kwargs, match):
    with pytest.raises(ValueError, match=match):
        store.open(tmp_path / "x.xml", master_key_file=mk, **kwargs)


def test_option_types(tmp_path, mk):
    for flag in ("encrypted", "cache", "faithful"):
        with pytest.raises(TypeError, match=flag):
            store.open(tmp_path / "x.xml", master_key_file=mk, **{flag: 1})
    with pytest.raises(ValueError, match="scrypt_n"):
        store.open(tmp_path / "x.xml", passphrase="p", scrypt_n=1000)


def test_plain_store_refuses_keys(tmp_path, mk):
    with pytest.raises(ValueError, match="plain store"):
        store.open(tmp_path / "x.xml", encrypted=False, passphrase="secret")
    with pytest.raises(ValueError, match="plain store"):
        store.open(tmp_path / "x.xml", encrypted=False, master_key_file=mk)
    assert not mk.exists()


# ------------------------------------------------------------------------------ 8. bench

WORKLOADS = ["put", "get", "get_missing", "contains", "all", "commit", "apply", "open_cold",
             "open_warm", "rotate", "rotate_lazy"]
TINY = dict(n_keys=50, min_time=0.001, repeats=2, warmup=0)


def check_measurement(m, workload, repeats=2):
    assert isinstance(m, store.StoreMeasurement) and not isinstance(m, pcb.Measurement)
    assert m.workload == workload and not hasattr(m, "transformation")
    assert m.repeats == repeats and len(m.samples) == repeats
    assert m.iterations >= 1
    assert np.all(np.asarray(m.samples) > 0)
    assert m.ns_per_op > 0 and math.isfinite(m.ns_per_op)
    assert m.params["n_keys"] == 50
    assert m.heap_bytes_per_entry > 0
    assert m.disk_bytes_per_entry > 0
    assert m.entries >= 1
    # the dict that code written for pycipherbench 0.1 reads
    extra = m.extra
    assert extra["params"] == m.params and extra["entries"] == m.entries
    assert extra["heap_bytes_per_entry"] == m.heap_bytes_per_entry
    assert ("durable_median" in extra) == (m.durable_median is not None)
    assert json.loads(m.to_json())["workload"] == workload


@pytest.mark.parametrize("workload", WORKLOADS)
def test_bench_every_workload(workload):
    m = store.bench(workload, **TINY)
    check_measurement(m, workload)
    if workload in ("get", "put"):
        stages = m.stages
        assert isinstance(stages, dict) and stages
        assert all(v >= 0 for v in stages.values())
    if workload == "apply":
        ds = m.durable_samples
        assert ds is not None and len(ds) == 2 and all(x > 0 for x in ds)
        assert m.durable_median == np.median(ds)
    else:
        assert m.durable_samples is None and m.durable_median is None


@pytest.mark.parametrize("value_type", ["string", "string_set", "int", "long", "float", "bool"])
def test_bench_value_types(value_type):
    m = store.bench("get", value_type=value_type, **TINY)
    check_measurement(m, "get")
    assert m.params["value_type"] == value_type


@pytest.mark.parametrize("opts", [dict(encrypted=False), dict(layout="file"), dict(cache=True, faithful=True),
                                  dict(key_encryption="none", value_encryption="chacha20-poly1305"),
                                  dict(passphrase=True)])
def test_bench_options(opts):
    m = store.bench("put", **TINY, **opts)
    check_measurement(m, "put")


def test_bench_bad_params(tmp_path):
    with pytest.raises(ValueError):
        store.bench("foo", **TINY)
    with pytest.raises(ValueError):
        store.bench("get", **dict(TINY, n_keys=0))
    with pytest.raises(ValueError):
        store.bench("get", value_type="x", **TINY)
    with pytest.raises(ValueError):
        store.bench("get", **dict(TINY, repeats=0))
    with pytest.raises(ValueError):
        store.bench("get", **dict(TINY, min_time=0))
    with pytest.raises(ValueError):
        store.bench("rotate", encrypted=False, **TINY)
    with pytest.raises(TypeError):
        store.bench("get", hw_aes=1, **TINY)
    with pytest.raises(NotADirectoryError):
        store.bench("get", directory=tmp_path / "missing", **TINY)


def test_bench_without_hw_aes():
    m = store.bench("get", hw_aes=False, **TINY)
    check_measurement(m, "get")
    assert m.hw_aes is False and m.hw_mask


def test_bench_directory_is_cleaned(tmp_path):
    m = store.bench("commit", directory=tmp_path, **TINY)
    check_measurement(m, "commit")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------
# get_as: the typed getters' one C call
# ---------------------------------------------------------------------------

TYPE_IDS = {"string": store.STRING, "string_set": store.STRING_SET, "int": store.INT,
            "long": store.LONG, "float": store.FLOAT, "bool": store.BOOLEAN}


def test_get_as_agrees_with_get_typed_for_every_type_and_mismatch(s):
    put_all(s, DATA)
    core = s._store
    for name in list(DATA) + ["missing"]:
        found = core.get_typed(name)
        assert core.get_as(name, -1, MISSING) == (MISSING if found is None else found[1])
        for label, tid in TYPE_IDS.items():
            want = found[1] if found is not None and found[0] == tid else MISSING
            got = core.get_as(name, tid, MISSING)
            assert got == want and type(got) is type(want), (name, label)
            assert getattr(s, GET[label])(name, MISSING) == want


@pytest.mark.parametrize("args, exc, pattern", [
    (("k", "0", None), TypeError, r"type_id must be an int"),
    (("k", 1.0, None), TypeError, r"type_id must be an int"),
    (("k", 6, None), ValueError, r"type_id must be -1 \(any\) or an ESP type id 0\.\.5"),
    (("k", -2, None), ValueError, r"type_id must be -1"),
    (("k", 2**70, None), OverflowError, r"too large"),
    ((b"k", 0, None), TypeError, r"str"),
    (("k", 0), TypeError, r"takes 3 arguments"),
    (("k", 0, None, None), TypeError, r"takes 3 arguments"),
])
def test_get_as_bad_input(s, args, exc, pattern):
    with pytest.raises(exc, match=pattern):
        s._store.get_as(*args)


@pytest.mark.parametrize("method", ["put_string", "put_int", "put_long", "put_float", "put_bool",
                                    "put_string_set"])
@pytest.mark.parametrize("args", [(), ("k",), ("k", "v", "extra")])
def test_core_editor_put_argument_count(s, method, args):
    e = s.edit()._editor
    with pytest.raises(TypeError, match=rf"{method}\(\) takes exactly 2 arguments \(name, value\)"):
        getattr(e, method)(*args)
    assert e.commit() is True and len(s) == 0  # nothing was queued

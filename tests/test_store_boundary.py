"""The Python boundary holds the store (issue 17): every Store and Editor call counts
itself as a user of the C store before any Python code runs on its arguments, so close()
can neither free the store under a call (a generator or a str subclass closing it, another
thread closing it) nor deadlock; and the C core imports no Python.

Crashes and hangs are what these defects produced, so each scenario runs in a child
interpreter (PYTHONPATH: this checkout, cwd: a scratch directory) under a generous
timeout; the child prints one JSON line with what it saw.
"""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pycipherbench as pcb
from pycipherbench import _core, store

from conftest import PACKAGE_ROOT as PKG_ROOT  # noqa: E402
CSRC = Path(__file__).resolve().parent.parent / "csrc"  # the checkout the tests belong to (the package may be installed elsewhere)
TIMEOUT = 120  # generous: the defects crashed or hung, they were never slow

PRELUDE = textwrap.dedent("""\
    import json, os, sys, threading, time
    from pycipherbench import store, _core
    D = sys.argv[1]
    def key_store(name="s.xml"):
        return store.open(os.path.join(D, name), master_key_file=os.path.join(D, "k.key"))
    def result(**kw):
        print(json.dumps(kw), flush=True)
    """)


def run_child(tmp_path, body):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([PKG_ROOT, os.environ.get("PYTHONPATH", "")]))
    env.pop("PYTHONSTARTUP", None)
    proc = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body), str(tmp_path)],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode >= 0, f"the interpreter crashed (signal {-proc.returncode}): {proc.stderr[-3000:]}"
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-3000:]}"
    lines = proc.stdout.strip().splitlines()
    assert lines, f"no result: {proc.stderr[-3000:]}"
    return json.loads(lines[-1])


SAME_THREAD_CLOSE = re.compile(r"close\(\) called while a call on this store is in progress in this thread")


def test_generator_closing_the_store_mid_put_string_set(tmp_path):
    out = run_child(tmp_path, """
        s = key_store()
        s.edit().put_string("before", "x").commit()
        ed = s.edit()
        seen = []
        def members():
            yield "a"
            try:
                s.close()  # while put_string_set iterates us
                seen.append("no error")
            except BaseException as e:
                seen.append(f"{type(e).__name__}: {e}")
            yield "b"
        ed.put_string_set("set", members())
        open_after = not s.closed
        # The store is whole: the put landed, and it commits and closes cleanly.
        ed.commit()
        value = s.get_string_set("set")
        s.close()
        s.close()  # idempotent
        s2 = key_store()
        result(got=seen[0], open_after=open_after, value=sorted(value) if value else None,
               before=s2.get_string("before"), closed=s.closed, reread=sorted(s2.get_string_set("set")))
        s2.close()
        """)
    assert SAME_THREAD_CLOSE.search(out["got"]) and out["got"].startswith("RuntimeError"), out
    assert out["open_after"] and out["closed"]
    assert out["value"] == ["a", "b"] and out["reread"] == ["a", "b"]
    assert out["before"] == "x"


@pytest.mark.parametrize("dunder", ["__hash__", "__eq__"])
def test_str_subclass_closing_the_store(tmp_path, dunder):
    out = run_child(tmp_path, f"""
        s = key_store()
        calls = []
        def close_once():
            if not calls:
                try:
                    s.close()
                    calls.append("no error")
                except BaseException as e:
                    calls.append(f"{{type(e).__name__}}: {{e}}")
        class Evil(str):
            def __hash__(self):
                if "{dunder}" == "__hash__":
                    close_once()
                return 7  # equal hashes: the set compares members with __eq__
            def __eq__(self, other):
                if "{dunder}" == "__eq__":
                    close_once()
                return str.__eq__(self, other)
        # equal hashes force __eq__ between the members
        ed = s.edit()
        try:
            ed.put_string_set("set", [Evil("m"), Evil("m"), Evil("n")])
            got = "no error"
        except BaseException as e:
            got = f"{{type(e).__name__}}: {{e}}"
        try:
            s.edit().put_string("after", "y").commit()
            later = "ok"
        except BaseException as e:
            later = f"{{type(e).__name__}}: {{e}}"
        s.close()
        result(got=got, inner=calls, later=later, closed=s.closed)
        """)
    assert out["inner"] and SAME_THREAD_CLOSE.search(out["inner"][0]), out
    assert out["inner"][0].startswith("RuntimeError"), out
    # The members m, m, n: a duplicate is the put's own ValueError (Java's set has none).
    assert out["got"] == "no error" or "ValueError" in out["got"], out
    assert out["later"] == "ok" and out["closed"], out


def test_fspath_closing_the_store_in_rotate(tmp_path):
    # rotate() converts its path-like (Python code: __fspath__) after claiming the store,
    # so a close from there is a same-thread close, refused; the store stays whole.
    out = run_child(tmp_path, """
        s = key_store()
        class P:
            def __fspath__(self):
                s.close()
                return os.path.join(D, "k2.key")
        try:
            s._store.rotate(master_key_file=P())
            got = "no error"
        except BaseException as e:
            got = f"{type(e).__name__}: {e}"
        open_after = not s.closed
        s.close()
        result(got=got, open_after=open_after, closed=s.closed)
        """)
    assert out["got"].startswith("RuntimeError") and SAME_THREAD_CLOSE.search(out["got"]), out
    assert out["open_after"] and out["closed"]


def test_other_thread_closing_while_a_put_iterates_a_slow_iterable(tmp_path):
    out = run_child(tmp_path, """
        s = key_store()
        ed = s.edit()
        started = threading.Event()
        state = {}
        def slow():
            started.set()
            for i in range(20):
                time.sleep(0.02)
                yield f"m{i}"
        def put():
            try:
                ed.put_string_set("set", slow())
                ed.commit()
                state["put"] = "ok"
            except BaseException as e:
                state["put"] = f"{type(e).__name__}: {e}"
        t = threading.Thread(target=put)
        t.start()
        started.wait()
        s.close()  # waits for the put in flight
        closed_when_put_done = "put" in state or not t.is_alive()
        t.join()
        try:
            s.get_string("x")
            late = "no error"
        except BaseException as e:
            late = f"{type(e).__name__}: {e}"
        result(put=state.get("put"), closed=s.closed, late=late, waited=closed_when_put_done)
        """)
    # The put either completed (it started before close) or raised cleanly at commit.
    assert out["put"] == "ok" or "closed store" in out["put"] or "store is closed" in out["put"], out
    assert out["closed"]
    assert out["late"].startswith("ValueError") and "closed store" in out["late"], out


def test_close_from_a_thread_while_many_threads_get(tmp_path):
    out = run_child(tmp_path, """
        s = key_store()
        ed = s.edit()
        for i in range(50):
            ed.put_string(f"k{i}", "v" * 40)
        ed.put_string_set("set", [f"m{i}" for i in range(20)])
        ed.commit()
        stop = threading.Event()
        errors, counts = [], []
        def reader(j):
            n = 0
            while True:
                try:
                    s.get_string(f"k{n % 50}")
                    s.get_string_set("set")
                    len(s._store); ("k1" in s._store); s.heap_bytes
                    if n % 7 == 0:
                        s.all()
                    if n % 5 == 0:
                        s.edit().put_string(f"w{j}", str(n)).apply()
                    n += 1
                except ValueError as e:
                    if "closed" not in str(e):
                        errors.append(repr(e))
                    break
                except BaseException as e:
                    errors.append(repr(e))
                    break
            counts.append(n)
        threads = [threading.Thread(target=reader, args=(j,)) for j in range(8)]
        for t in threads:
            t.start()
        time.sleep(0.3)
        s.close()
        for t in threads:
            t.join()
        result(errors=errors, counts=counts, closed=s.closed)
        """)
    assert out["errors"] == [], out
    assert out["closed"] and len(out["counts"]) == 8


def test_dealloc_flushes_applied_changes(tmp_path):
    out = run_child(tmp_path, """
        import gc
        s = key_store()
        s.edit().put_string("applied", "yes").apply()
        del s
        gc.collect()
        s2 = key_store()
        result(value=s2.get_string("applied"))
        s2.close()
        """)
    assert out["value"] == "yes"


def test_close_from_another_thread_while_one_waits_in_a_nested_call(tmp_path):
    # A put in thread A whose iterable waits for thread B's close to start: close waits
    # (with the GIL released) for A's put, which then finishes; no deadlock.
    out = run_child(tmp_path, """
        s = key_store()
        ed = s.edit()
        closing = threading.Event()
        def members():
            yield "a"
            closing.wait(5)
            time.sleep(0.1)  # close() is now waiting for us
            try:
                s.get_string("x")  # a new call after close began
                yield "late-ok"
            except ValueError as e:
                yield "refused" if "closed store" in str(e) else repr(e)
        state = {}
        def put():
            try:
                ed.put_string_set("set", members())
                state["put"] = "ok"
            except BaseException as e:
                state["put"] = repr(e)
        t = threading.Thread(target=put)
        t.start()
        time.sleep(0.05)
        closing.set()
        s.close()
        t.join()
        result(put=state.get("put"), closed=s.closed)
        """)
    assert out["put"] == "ok" and out["closed"], out


def test_close_waiting_for_a_stuck_call_is_interruptible(tmp_path):
    # close() waits with the GIL released, looking at the signals: a handler's exception
    # ends the wait, the store stays open, and a later close() succeeds.
    out = run_child(tmp_path, """
        import signal
        s = key_store()
        ed = s.edit()
        release = threading.Event()
        inside = threading.Event()
        def members():
            inside.set()
            release.wait(60)
            yield "a"
        t = threading.Thread(target=lambda: ed.put_string_set("set", members()))
        t.start()
        inside.wait()
        def on_alarm(signum, frame):
            raise TimeoutError("alarm")
        signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        try:
            s.close()
            first = "closed"
        except TimeoutError as e:
            first = f"TimeoutError: {e}"
        open_after = not s.closed
        s.get_string("x")  # usable again
        release.set()
        t.join()
        ed.commit()
        s.close()
        result(first=first, open_after=open_after, closed=s.closed)
        """)
    assert out == {"first": "TimeoutError: alarm", "open_after": True, "closed": True}, out


def test_calls_on_a_closed_store_and_editor(tmp_path):
    s = store.open(tmp_path / "s.xml", master_key_file=tmp_path / "k.key")
    ed = s.edit()
    s.close()
    with pytest.raises(ValueError, match="closed store"):
        s.get_string("x")
    with pytest.raises(ValueError, match="closed store"):
        len(s._store)
    with pytest.raises(ValueError, match="closed store"):
        s.heap_bytes
    with pytest.raises(ValueError, match="closed"):
        ed.put_string_set("x", iter(["a"]))
    with pytest.raises(ValueError, match="closed"):
        ed.commit()


# ------------------------------------------------------------ the module's slots, subinterpreters


def test_core_declares_its_interpreter_slots():
    # Multi-phase init (PyModuleDef_Init) gives each interpreter its own module; the slots
    # say what is supported. 3.11 has neither slot: the source is what is observable.
    spec = _core.__spec__
    assert spec is not None and spec.origin.endswith((".so", ".pyd"))
    code = re.sub(r"/\*.*?\*/", "", (CSRC / "py" / "module.c").read_text(), flags=re.S)
    m = re.search(r"\{Py_mod_multiple_interpreters, (\w+)\}", code)
    assert m and m.group(1) in ("Py_MOD_MULTIPLE_INTERPRETERS_SUPPORTED",
                                "Py_MOD_PER_INTERPRETER_GIL_SUPPORTED"), "no honest multiple-interpreters slot"
    if m.group(1) == "Py_MOD_PER_INTERPRETER_GIL_SUPPORTED":
        # what that promise needs: no function-static table filled per call in csrc/py
        for f in sorted((CSRC / "py").glob("*.c")):
            body = re.sub(r"/\*.*?\*/", "", f.read_text(), flags=re.S)
            assert not re.search(r"^\s+static (?!const char \*const|char \*kwlist)[^(]*\[", body, re.M), f.name
    assert re.search(r"\{Py_mod_gil, Py_MOD_GIL_USED\}", code)
    assert "0x030D0000" in code  # Py_mod_gil only where it exists


@pytest.mark.skipif(sys.version_info < (3, 12), reason="own-GIL subinterpreters need 3.12+")
def test_own_gil_subinterpreter_matches_the_declared_slot(tmp_path):
    _testinternalcapi = pytest.importorskip("_testinternalcapi")
    if not hasattr(_testinternalcapi, "run_in_subinterp_with_config"):
        pytest.skip("no run_in_subinterp_with_config")
    code = (CSRC / "py" / "module.c").read_text()
    per_gil = "{Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED}" in code
    script = (f"import sys; sys.path.insert(0, {PKG_ROOT!r})\n"
              f"try:\n    import pycipherbench._core\n    r = 'ok'\nexcept ImportError as e:\n    r = 'refused'\n"
              f"open({str(tmp_path / 'r')!r}, 'w').write(r)\n")
    try:
        _testinternalcapi.run_in_subinterp_with_config(script, own_gil=True)
    except TypeError:
        pytest.skip("run_in_subinterp_with_config takes other arguments in this Python")
    assert (tmp_path / "r").read_text() == ("ok" if per_gil else "refused")


def test_no_private_cpython_api():
    assert sorted((CSRC / "py").glob("*.[ch]")), f"no C sources under {CSRC}"
    for f in sorted((CSRC / "py").glob("*.[ch]")):
        text = f.read_text()
        code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        assert not re.search(r"\b_Py[A-Za-z]", code), f"{f.name} uses private CPython API"


def _subinterp_runner():
    try:
        import _testcapi  # noqa: F401
    except ImportError:
        _testcapi = None
    if _testcapi is not None and hasattr(_testcapi, "run_in_subinterp"):
        return "_testcapi"
    try:
        import _xxsubinterpreters  # noqa: F401
        return "_xxsubinterpreters"
    except ImportError:
        return None


SUBINTERP_CODE = """
import importlib.machinery, importlib.util, os
# _core alone: the package imports NumPy, which refuses a second interpreter on 3.11.
loader = importlib.machinery.ExtensionFileLoader("pycipherbench._core", {so!r})
spec = importlib.util.spec_from_file_location("pycipherbench._core", {so!r}, loader=loader)
_core = importlib.util.module_from_spec(spec)
spec.loader.exec_module(_core)
# the package hands _core its option table at import; here by hand (_options needs the stdlib only)
ospec = importlib.util.spec_from_file_location("pycipherbench._options", {opts!r})
_options = importlib.util.module_from_spec(ospec)
import sys
sys.modules["pycipherbench._options"] = _options  # its dataclasses look their module up
ospec.loader.exec_module(_options)
_core._load_store_options(_options.OPTIONS, _options.unexpected)
d = {d!r}
s = _core.Store(os.path.join(d, "sub.xml"), master_key_file=os.path.join(d, "k.key"))
s.edit().put_string("from", "subinterpreter").commit()
assert s.get_as("from", -1, None) == "subinterpreter"
s.close()
assert s.closed
with open(os.path.join(d, "ok"), "w") as f:
    f.write(_core.__name__)
"""


def test_core_in_a_subinterpreter(tmp_path):
    runner = _subinterp_runner()
    if runner is None:
        pytest.skip("neither _testcapi.run_in_subinterp nor _xxsubinterpreters in this Python")
    code = SUBINTERP_CODE.format(so=_core.__file__, opts=str(Path(_core.__file__).with_name("_options.py")), d=str(tmp_path))
    if runner == "_testcapi":
        call = f"import _testcapi; r = _testcapi.run_in_subinterp({code!r}); assert r == 0, r"
    else:
        call = (f"import _xxsubinterpreters as i; x = i.create(); i.run_string(x, {code!r}); "
                f"i.destroy(x)")
    body = f"""
        import pycipherbench._core  # loaded in the main interpreter first
        {call}
        result(ok=open(os.path.join({str(tmp_path)!r}, "ok")).read())
        """
    out = run_child(tmp_path, body)
    assert out["ok"] == "pycipherbench._core"
    s = store.open(tmp_path / "sub.xml", master_key_file=tmp_path / "k.key")
    assert s.get_string("from") == "subinterpreter"
    s.close()


# ------------------------------------------------------------ the C core imports no Python


def test_c_core_imports_no_python_package():
    assert sorted(CSRC.glob("*/*.[ch]")), f"no C sources under {CSRC}"
    for f in sorted(CSRC.glob("*/*.[ch]")):
        code = re.sub(r"/\*.*?\*/", "", f.read_text(), flags=re.S)  # comments may name them
        assert not re.search(r"PyImport_\w*\s*\(", code), f"{f} imports a Python module"
        assert not re.search(r"pycipherbench\._(?!core\b)", code), f"{f} names a Python module of the package"


def test_core_rejects_py_backends_pointing_to_the_python_api():
    with pytest.raises(ValueError, match=r"pycipherbench\.encrypt"):
        _core.encrypt("AES/GCM/NoPadding", bytes(16), b"x", iv=bytes(12), backend="py:cryptography")
    with pytest.raises(ValueError, match=r"pycipherbench\.decrypt"):
        _core.decrypt("AES/GCM/NoPadding", bytes(16), bytes(17), iv=bytes(12), backend="py:pynacl")


PY_BACKENDS = [b["name"] for b in pcb.backends() if b["name"].startswith("py:") and b["available"]]


@pytest.mark.skipif(not PY_BACKENDS, reason="no py: library installed")
def test_py_backends_through_the_public_api():
    name = PY_BACKENDS[0]
    b = next(x for x in pcb.backends() if x["name"] == name)
    t = "AES/GCM/NoPadding" if "AES/GCM/NoPadding" in b["transformations"] else b["transformations"][0]
    iv_len = 24 if t.startswith("XChaCha") else 12 if ("GCM" in t or "ChaCha" in t) else 16
    iv = None if "ECB" in t or "SIV" in t else bytes(iv_len)
    key = bytes(32 if ("ChaCha" in t or "SIV" in t) else 16)
    ct = pcb.encrypt(t, key, b"sixteen byte msg", iv=iv, backend=name)
    assert ct == pcb.encrypt(t, key, b"sixteen byte msg", iv=iv)  # the same bytes as OpenSSL
    assert pcb.decrypt(t, key, ct, iv=iv, backend=name) == b"sixteen byte msg"
    with pytest.raises(ValueError, match="unknown backend 'py:nope'"):
        pcb.encrypt(t, key, b"", iv=iv, backend="py:nope")

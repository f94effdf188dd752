"""A Store dropped with applied changes that cannot be written (issue 25, defect 2).

The store path is replaced by a directory after an ``apply()``, so the background write
and every later flush fail. Dropping such a store (``del``, a garbage-collected cycle, or
still open when the interpreter exits) used to crash the interpreter: the dealloc called
``PyErr_WriteUnraisable`` on the object whose reference count was already 0, and the
report's own reference freed it a second time. Now the store is closed in its PEP 442
finalizer while it is still alive, and the failure is reported there ("Exception ignored
in: ...", naming the failed write). Each case runs in a child process (a crash must not
take pytest with it), bounded by conftest's hang limit.
"""

from __future__ import annotations

import textwrap

import pytest

from conftest import CHILD_TIMEOUT, spawn_child

PRELUDE = """
    import gc, os, sys
    from pycipherbench import _core, store
    path = sys.argv[1]
    opts = dict(encrypted=False) if sys.argv[2] == "plain" else dict(master_key_file=path + ".key")

    def unwritable():
        s = store.open(path, **opts)
        s.edit().put_string("kept", "1").commit()
        os.replace(path, path + ".saved")
        os.mkdir(path)  # rename refuses to replace a directory, even for root
        s.edit().put_string("pending", "2").apply()
        try:
            s.flush()
        except OSError:
            pass
        else:
            raise AssertionError("the write into a directory succeeded")
        return s
"""

CASES = {
    "del": """
        s = unwritable()
        del s
        print("after del", flush=True)
    """,
    "core-del": """
        core = unwritable()._store  # the C object alone (the wrapper dropped first)
        del core
        print("after del", flush=True)
    """,
    "cycle": """
        s = unwritable()
        loop = [s]
        loop.append(loop)
        del s, loop
        gc.collect()
        print("after del", flush=True)
    """,
    "exit": """
        s = unwritable()  # still open when the interpreter exits
        print("after del", flush=True)
    """,
}


def _run(tmp_path, case: str, kind: str) -> tuple[int, str, str]:
    code = textwrap.dedent(PRELUDE) + textwrap.dedent(CASES[case])
    p = spawn_child(code, str(tmp_path / "s.xml"), kind, stdin=False)
    try:
        out, err = p.communicate(timeout=CHILD_TIMEOUT)
    except Exception:
        p.kill()
        out, err = p.communicate()
        pytest.fail(f"child hung; stdout={out!r} stderr={err[-2000:]!r}")
    return p.returncode, out, err


@pytest.mark.parametrize("kind", ["plain", "encrypted"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_dropped_store_with_unwritable_changes_reports_them(tmp_path, case, kind):
    rc, out, err = _run(tmp_path, case, kind)
    assert rc == 0, f"child died ({rc}): stdout={out!r} stderr={err[-3000:]!r}"
    assert "after del" in out
    assert "Exception ignored in" in err, err
    assert "writing applied changes failed" in err and "s.xml" in err, err
    assert "Segmentation fault" not in err and "Fatal Python error" not in err, err
    assert err.count("writing applied changes failed") == 1, err  # reported once, not again


def test_closed_store_dropped_reports_nothing(tmp_path):
    p = spawn_child("""
        import sys
        from pycipherbench import store
        s = store.open(sys.argv[1], encrypted=False)
        s.edit().put_string("a", "1").apply()
        del s  # flushed by the finalizer: nothing to report
        s = store.open(sys.argv[1], encrypted=False)
        assert s.get_string("a") == "1"
        s.close()
        del s
        print("ok")
    """, str(tmp_path / "s.xml"), stdin=False)
    out, err = p.communicate(timeout=CHILD_TIMEOUT)
    assert p.returncode == 0 and out.strip() == "ok" and err == "", (out, err)

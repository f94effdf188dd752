"""store.py is the store's API; the benchmark harness is store_bench.py (issue 25).

engines.py (and every module below the harness) imports the API without a cycle, and no
function imports a module lazily to dodge one: the package's module-level imports form
no cycle. The harness's public names stay reachable from ``store`` (the README's
``store.bench(...)``) as the very same objects.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tempfile
from pathlib import Path

import pycipherbench
from pycipherbench import engine_bench, engines, store, store_bench

from conftest import child_env

PKG = Path(pycipherbench.__file__).resolve().parent
MODULES = {p.stem: p for p in PKG.glob("*.py")}


def _imports(name: str, *, module_level: bool) -> set[str]:
    """The package modules `name` imports: at module level, or anywhere."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    nodes = tree.body if module_level else list(ast.walk(tree))
    out: set[str] = set()
    for n in nodes:
        if isinstance(n, ast.ImportFrom) and n.level == 1:
            out.update([n.module.split(".")[0]] if n.module else (a.name for a in n.names))
    return out & set(MODULES)


def test_module_level_imports_have_no_cycle():
    graph = {m: _imports(m, module_level=True) for m in MODULES}

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    assert [m for m in sorted(MODULES) if m in reach(m)] == []


def test_the_api_imports_no_harness_and_nothing_dodges_a_cycle():
    assert _imports("store", module_level=True) <= {"_core", "_options", "_format"}
    assert not _imports("_format", module_level=True)  # a leaf: words for counts and sizes
    assert "store" in _imports("engines", module_level=True)
    assert _imports("store_bench", module_level=True) >= {"engine_bench", "engines"}
    # no lazy import of the API or the harness below it (the cycle they used to dodge)
    for name in ("engines", "engine_bench", "store_bench"):
        lazy = _imports(name, module_level=False) - _imports(name, module_level=True)
        assert not lazy & {"store", "store_bench", "engine_bench", "engines"}, (name, lazy)
    # store's one deferred import is the harness's re-export (module __getattr__)
    assert _imports("store", module_level=False) - _imports("store", module_level=True) \
        == {"store_bench"}


def test_harness_names_are_reachable_from_store_as_the_same_objects():
    for name in ("bench", "plan_bench", "StoreMeasurement", "StoreParams"):
        assert getattr(store, name) is getattr(store_bench, name), name
        assert name in dir(store)
        assert name in store_bench.__all__
    from pycipherbench.store import StoreMeasurement  # the form tests and notebooks use

    assert StoreMeasurement is store_bench.StoreMeasurement
    assert not hasattr(store, "Workers") and "bench" not in store.__all__
    try:
        store.no_such_name  # noqa: B018
    except AttributeError as e:
        assert "no_such_name" in str(e)
    else:
        raise AssertionError("store.no_such_name resolved")
    assert engines.open_engine and engine_bench.py_point  # the modules import as they are


def test_engines_imports_alone_in_a_fresh_interpreter():
    """The modules, each imported first in a new interpreter, import without a cycle
    error, and importing the API does not need the harness to be importable first."""
    for mod in ("pycipherbench.engines", "pycipherbench.store", "pycipherbench.store_bench",
                "pycipherbench.engine_bench"):
        r = subprocess.run([sys.executable, "-c", f"import {mod}"], env=child_env(),
                           cwd=tempfile.gettempdir(),  # -c puts the cwd first: not a checkout
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (mod, r.stderr[-2000:])

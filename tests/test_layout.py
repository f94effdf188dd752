"""The C core's layering holds: folders are layers that include only downwards, nothing
below csrc/py/ knows Python (so the fuzzers can link it), every header says what it owns,
and no file outgrows a reader (csrc/README.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CSRC = Path(__file__).resolve().parent.parent / "csrc"
RANK = {"common": 0, "crypto": 1, "format": 1, "store": 2, "py": 3}
FILES = sorted(p for p in CSRC.glob("*/*.[ch]"))

pytestmark = pytest.mark.skipif(not CSRC.is_dir(), reason="needs the source tree")


def test_every_source_file_is_in_a_layer():
    assert FILES, "no C sources found"
    assert {p.parent.name for p in FILES} == set(RANK)
    assert not list(CSRC.glob("*.[ch]")), "C files outside the layer folders"


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_includes_only_look_down(path: Path):
    layer = path.parent.name
    for inc in re.findall(r'#include "([^"]+)"', path.read_text()):
        target = inc.split("/")[0]
        assert target in RANK, f"{inc}: not a layer path"
        assert target == layer or RANK[target] < RANK[layer], f"{layer} includes {inc}"


@pytest.mark.parametrize("path", [p for p in FILES if p.parent.name != "py"],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_core_is_free_of_python(path: Path):
    text = path.read_text()
    assert "Python.h" not in text and "PyObject" not in text


@pytest.mark.parametrize("path", [p for p in FILES if p.suffix == ".h"],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_headers_open_with_their_contract(path: Path):
    head = path.read_text()[:3000]
    assert head.startswith("/*\n * " + f"{path.parent.name}/{path.name}"), "first line names the file"
    assert "Owns" in head or "owns" in head
    assert re.search(r"thread|lock", head, re.I), "says its thread safety"


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_file_outgrows_a_reader(path: Path):
    assert len(path.read_text().splitlines()) <= 900


# ---- no cycles: between headers (includes) or between files (calls)

def _strip(text: str) -> str:
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)


def _call_graph() -> dict[Path, set[Path]]:
    """Which .c file calls a function defined (non-static) in which other .c file."""
    sources = {p: _strip(p.read_text()) for p in FILES if p.suffix == ".c"}
    defined: dict[str, Path] = {}
    for p, text in sources.items():
        for m in re.finditer(r"^(?!static\b)[\w \t\*]+?\b(pcb_\w+)\s*\([^;{]*\)\s*\{", text, re.M):
            defined.setdefault(m.group(1), p)
    return {p: {defined[n] for n in set(re.findall(r"\b(pcb_\w+)\s*\(", text))
                if n in defined and defined[n] != p}
            for p, text in sources.items()}


def _cycles(graph: dict) -> list[list]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    on: set = set()
    out: list[list] = []

    def visit(v) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(str(c) for c in comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def test_no_two_files_call_each_other():
    """One home per rule: no call cycle between the C files (csrc/store's pieces each have one
    owner; SQLite's pager is the model)."""
    graph = _call_graph()
    assert sum(len(v) for v in graph.values()) > 20, "the call graph looks empty: the scan broke"
    rel = {p: p.relative_to(CSRC) for p in graph}
    assert _cycles({rel[a]: {rel[b] for b in bs} for a, bs in graph.items()}) == []


def test_headers_include_no_cycle():
    graph = {p.relative_to(CSRC): {Path(i) for i in re.findall(r'#include "([^"]+)"', p.read_text())}
             for p in FILES if p.suffix == ".h"}
    assert _cycles(graph) == []


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]

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

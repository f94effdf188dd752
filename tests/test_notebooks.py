"""Both notebooks run clean in quick mode, and are committed with the outputs of a full run.

Each notebook is executed with nbclient in a fresh ``python3`` kernel whose
environment has ``PCB_QUICK=1`` (every sweep shrunk) and a ``PYTHONPATH`` that
makes the kernel import the same pycipherbench as this test process (a checkout
with an in-place build, or the installed package). The committed notebooks are
only read: the kernel runs in a temporary directory and the executed copy is
written there. Any cell error fails the test; so does a quick run that draws
fewer figures than the committed full run.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import pycipherbench

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
NAMES = ("cipher_speed.ipynb", "encrypted_store.ipynb")
KERNEL = "python3"
CELL_TIMEOUT = 900  # seconds per cell; a quick run takes well under a minute per notebook here


def ensure_kernel() -> None:
    """A fresh machine may have ipykernel without a registered kernel spec: install one."""
    from jupyter_client.kernelspec import find_kernel_specs

    if KERNEL not in find_kernel_specs():
        from ipykernel.kernelspec import install

        install(user=True, kernel_name=KERNEL)


def kernel_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PCB_QUICK"] = "1"
    # The directory holding the pycipherbench this process imported, first on the kernel's path.
    package_root = str(Path(pycipherbench.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    env["MPLBACKEND"] = "Agg"
    return env


def figures(nb: nbformat.NotebookNode) -> int:
    return sum("image/png" in out.get("data", {})
               for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs)


def errors(nb: nbformat.NotebookNode) -> list[str]:
    return [f"cell {i}: {out.get('ename')}: {out.get('evalue')}"
            for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
            for out in cell.outputs if out.output_type == "error"]


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_in_quick_mode(name: str, tmp_path: Path) -> None:
    ensure_kernel()
    committed = NOTEBOOKS / name
    before = committed.read_bytes()
    nb = nbformat.read(committed, as_version=4)
    expected_figures = figures(nb)
    client = NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name=KERNEL, allow_errors=False,
                            resources={"metadata": {"path": str(tmp_path)}})
    start = time.monotonic()
    try:
        client.execute(env=kernel_env())  # raises CellExecutionError on the first failing cell
    finally:
        nbformat.write(nb, tmp_path / name)  # the executed copy, for a look after a failure
    elapsed = time.monotonic() - start
    assert not errors(nb)
    text = "".join(out.get("text", "") for cell in nb.cells if cell.cell_type == "code"
                   for out in cell.outputs if out.output_type == "stream")
    assert "mode: QUICK" in text, "the notebook did not see PCB_QUICK=1"
    assert figures(nb) == expected_figures, (
        f"the quick run drew {figures(nb)} figures, the committed full run {expected_figures}")
    assert committed.read_bytes() == before, "the committed notebook was rewritten"
    print(f"{name}: quick run in {elapsed:.1f} s")


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_committed_with_full_run_outputs(name: str) -> None:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code and all(cell.execution_count is not None for cell in code), "not every cell was run"
    counts = [cell.execution_count for cell in code]
    assert counts == list(range(1, len(code) + 1)), "cells were not run once, top to bottom"
    assert not errors(nb)
    first = "".join(out.get("text", "") for out in code[0].outputs if out.output_type == "stream")
    assert "mode: full run" in first, "the committed outputs are not those of a full run"
    assert figures(nb) >= 5
    assert (NOTEBOOKS / name).stat().st_size < 2_000_000

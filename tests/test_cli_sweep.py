"""The sweep, compare, plot and store commands, run as `python -m pycipherbench.cli ...`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pycipherbench import cli, load_results
from pycipherbench._hwaes import python_command

TINY = ["--repeats", "4", "--min-time", "0.001", "--warmup", "0", "--no-progress"]
GRID = ["--param", "payload=16,256,4096",
        "--param", "transformation=AES/GCM/NoPadding,TEA/ECB/NoPadding",
        "--param", "rounds=8,16"]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(python_command("pycipherbench.cli", *args),
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def two_sweeps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    d = tmp_path_factory.mktemp("sweep")
    a, b = d / "a.json", d / "b.json"
    proc = run_cli("sweep", *GRID, *TINY, "--seed", "1", "--out", str(a))
    assert proc.returncode == 0, proc.stderr
    proc_b = run_cli("sweep", *GRID, *TINY, "--out", str(b))
    assert proc_b.returncode == 0, proc_b.stderr
    return a, b, proc.stdout


def test_parse_values() -> None:
    assert [cli.parse_value(v) for v in ("16", "0.5", "true", "False", "none", "AES/GCM/NoPadding")] \
        == [16, 0.5, True, False, None, "AES/GCM/NoPadding"]
    assert cli.parse_params(["payload=16,256", "op=enc", "hw-aes=on,off"]) == \
        {"payload": [16, 256], "op": "enc", "hw_aes": [True, False]}
    for bad in (["payload"], ["payload="], ["a=1", "a=2"]):
        with pytest.raises(ValueError):
            cli.parse_params(bad)


def test_sweep_writes_results(two_sweeps) -> None:
    a, _, out = two_sweeps
    r = load_results(a)
    assert r.complete and r.seed == 1 and len(r) == 3 + 6  # AES: no rounds, one row per payload
    assert r.options == {"repeats": 4, "min_time": 0.001, "warmup": 0.0, "processes": 1}
    assert all(len(m.samples) == 4 for m in r)
    # 4 rounds: the interval is their range, whose coverage (88%) the heading states
    assert out.splitlines()[0].split() == ["payload", "transformation", "rounds", "median/op", "88%",
                                           "interval", "CV", "MB/s", "KB/ms"]
    assert f"9 points written to {a}" in out


def test_sweep_resume(two_sweeps, tmp_path) -> None:
    a, _, _ = two_sweeps
    copy = tmp_path / "a.json"
    copy.write_text(a.read_text())
    proc = run_cli("sweep", *GRID, "--param", "op=enc,dec", *TINY, "--out", str(copy), "--resume")
    assert proc.returncode == 0, proc.stderr
    # op=enc,dec makes new points (op was not a parameter before); the old ones are kept
    r = load_results(copy)
    assert len(r) == 9 + 18 and r.complete


def test_sweep_errors(tmp_path) -> None:
    never = str(tmp_path / "never.json")  # a writable path: the errors are the grid's
    proc = run_cli("sweep", "--param", "transformation=AES/CBC/NoPadding", "--param", "payload=100",
                   "--out", never)
    assert proc.returncode == 2 and "invalid" in proc.stderr and "--skip-invalid" in proc.stderr
    proc = run_cli("sweep", "--param", "transformation=AES/GCM/NoPadding", "--param", "bogus=1",
                   "--out", never)
    assert proc.returncode == 2 and "unknown cipher parameter" in proc.stderr
    assert not (tmp_path / "never.json").exists()


def test_compare(two_sweeps) -> None:
    a, b, _ = two_sweeps
    proc = run_cli("compare", str(a), str(b))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "9 matched points" in lines[0]
    assert lines[1].split()[-6:] == ["baseline", "this", "speedup", "[95%]", "p", "verdict"]
    # 4 rounds a side are too few for a verdict between runs: said so, point by point
    assert sum(1 for line in lines if line.rstrip().endswith("too few rounds")) == 9
    assert any("rounds" in line and "verdict" in line for line in lines[-3:]), lines[-3:]


def test_compare_refuses_other_machine(two_sweeps, tmp_path) -> None:
    a, b, _ = two_sweeps
    doc = json.loads(b.read_text())
    doc["machine"]["cpu_model"] = "Some Phone SoC"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    proc = run_cli("compare", str(a), str(other))
    assert proc.returncode == 2 and "different machines" in proc.stderr
    assert "--allow-different-machines" in proc.stderr
    proc = run_cli("compare", str(a), str(other), "--allow-different-machines")
    assert proc.returncode == 0 and "WARNING: different machines" in proc.stdout


def test_plot(two_sweeps, tmp_path) -> None:
    pytest.importorskip("matplotlib")
    a, _, _ = two_sweeps
    png = tmp_path / "figure.png"
    proc = run_cli("plot", str(a), "-o", str(png))
    assert proc.returncode == 0, proc.stderr
    assert "throughput plot" in proc.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = tmp_path / "rounds.svg"
    proc = run_cli("plot", str(a), "-o", str(svg), "--kind", "rounds")
    assert proc.returncode == 0, proc.stderr
    assert svg.stat().st_size > 1000


def test_store_quick(tmp_path) -> None:
    path = tmp_path / "store.json"
    proc = run_cli("store", "--quick", "--no-progress", "--json", str(path))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for section in ("## Per operation", "## The 100-pair scenario", "## Commit vs apply",
                    "## Open: cold", "# Machine: "):
        assert section in out
    for row in ("put", "get", "contains", "get_missing", "100 puts + commit", "100 gets"):
        assert any(line.startswith(row + " ") for line in out.splitlines()), row
    assert "lean/plain" in out and "faithful/plain" in out and "apply (until durable)" in out
    r = load_results(path)
    assert r.target == "store" and r.complete
    assert {p["workload"] for p in r.params} == {
        "put", "get", "contains", "get_missing", "commit", "apply", "open_cold", "open_warm"}

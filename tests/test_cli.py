"""The pycipherbench command line: the speed table's format, --json and --no-hw-aes."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from pycipherbench import experiments
from pycipherbench._hwaes import python_command

LINE = re.compile(r"^\* \[(?P<name>[^\]]+)\] (?P<op>ENC|DEC): (?P<rate>\d+\.\d) KB/ms "
                  r"\[(?P<low>\d+\.\d), (?P<high>\d+\.\d)\]$")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        python_command("pycipherbench.cli", *args),
        capture_output=True, text=True, timeout=600, check=False,
    )


def parse_table(out: str) -> tuple[list[str], dict[tuple[str, str], float]]:
    groups, rates = [], {}
    for line in out.splitlines():
        if line.startswith("# ") and line.endswith(":"):
            groups.append(line[2:-1])
        m = LINE.match(line)
        if m:
            rates[(m["name"], m["op"])] = float(m["rate"])
            assert float(m["low"]) <= float(m["rate"]) <= float(m["high"]), line  # 95% interval
    return groups, rates


def expected_rows() -> list[tuple[str, str]]:
    return [(n, op) for _, group in experiments.SPEED_GROUPS for n in group for op in ("ENC", "DEC")]


@pytest.fixture(scope="module")
def speed_json(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], dict]:
    path = tmp_path_factory.mktemp("speed") / "speed.json"
    proc = run_cli("speed", "--quick", "--payload", "4096", "--json", str(path))
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads(path.read_text())


def test_speed_table_format(speed_json) -> None:
    proc, _ = speed_json
    out = proc.stdout
    assert out.splitlines()[0] == "# Speed Test of 4096B Data Enc/Decryption #"
    groups, rates = parse_table(out)
    assert groups == ["AES", "DES", "3DES", "TEA"]
    assert list(rates) == expected_rows()
    assert all(rate > 0 for rate in rates.values())
    assert re.search(r"^# TEA:AES = \d+\.\d:\d+\.\d KB/ms, the rows' medians \(quotient "
                     r"\d+\.\dx\) -> (AES|TEA) is \d+\.\dx faster \[\d+\.\d, \d+\.\d\], the "
                     r"paired median ratio", out, re.M)
    assert "# Machine: " in out and "OpenSSL" in out


def test_speed_json_has_raw_samples(speed_json) -> None:
    proc, doc = speed_json
    _, rates = parse_table(proc.stdout)
    assert doc["payload"] == 4096 and doc["hw_aes"] is True
    assert doc["machine"]["openssl_version"].startswith("OpenSSL 3")
    assert len(doc["results"]) == len(rates)
    for r in doc["results"]:
        assert len(r["samples"]) == r["repeats"] == 3
        # the table prints the same number the JSON holds
        assert rates[(r["transformation"], r["op"].upper())] == pytest.approx(r["kb_per_ms"], abs=0.051)


@pytest.mark.skipif(sys.platform != "linux", reason="hardware masking is tested on Linux")
def test_speed_no_hw_aes_marks_results(tmp_path) -> None:
    path = tmp_path / "nohw.json"
    proc = run_cli("speed", "--quick", "--payload", "4096", "--no-hw-aes", "--json", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "Hardware AES: OFF (OPENSSL_" in proc.stdout
    doc = json.loads(path.read_text())
    assert doc["hw_aes"] is False
    assert all(r["hw_aes"] is False and r["hw_mask"].startswith("OPENSSL_") for r in doc["results"])


@pytest.mark.parametrize("payload,words", [
    ("0", "argument --payload: payload must be between 1 and 1073741824, got 0"),
    ("-16", "argument --payload: payload must be between 1 and 1073741824, got -16"),
    ("100", "--payload must be a positive multiple of 16")])
def test_speed_rejects_bad_payload(payload: str, words: str) -> None:
    proc = run_cli("speed", "--payload", payload)
    assert proc.returncode != 0
    assert words in proc.stderr


def test_no_command_prints_help() -> None:
    proc = run_cli()  # bare pycipherbench: its help, not an error (issue 26)
    assert proc.returncode == 0
    assert "usage: pycipherbench" in proc.stdout and "COMMAND" in proc.stdout

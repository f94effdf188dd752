"""Rounds: the prepared C kernels, measure()/store.bench() in rounds, paired ratios, Ctrl-C.

No timing assertions: what is checked is structure (one sample per point per round, the
interval around the median, per-round CPU/context-switch/canary data), the pairing rules of
Results.ratio, bad input, and that Ctrl-C stops a run quickly keeping complete rounds.
"""

from __future__ import annotations

import importlib
import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import synthetic

import pycipherbench as pcb
from pycipherbench import Results, _core, cli, store
from pycipherbench._hwaes import python_command
from pycipherbench.stats import Ratio

from conftest import PACKAGE_ROOT  # noqa: E402  (where the tested package is)
rounds_mod = importlib.import_module("pycipherbench._rounds")


# -- the C kernels
def test_kernel_prepares_once_and_samples_on_demand() -> None:
    k = _core.Kernel("AES/GCM/NoPadding", payload=64, op="dec")
    assert k.info == {"transformation": "AES/GCM/NoPadding", "op": "dec", "scope": "message",
                      "payload": 64, "key_bits": 128, "rounds": None, "iv_len": 12, "impl": None,
                      "backend": "openssl", "threads": 1}
    n = k.calibrate(0.001, 0.0)
    assert n >= 1
    elapsed, ticks, cpu, nivcsw, call = k.sample(n)
    assert elapsed > 0 and call >= elapsed and cpu >= 0 and nivcsw >= 0
    assert ticks > 0 or not _core.TSC_AVAILABLE
    k.close()
    assert k.closed
    with pytest.raises(ValueError, match="closed"):
        k.sample(n)
    with pytest.raises(ValueError, match="closed"):
        k.calibrate(0.001)


@pytest.mark.parametrize("call, exc, match", [
    (lambda k: k.sample(0), ValueError, "iterations must be between"),
    (lambda k: k.sample(1.5), TypeError, "iterations must be an int"),
    (lambda k: k.sample(True), TypeError, "iterations must be an int"),
    (lambda k: k.calibrate(0), ValueError, "min_time"),
    (lambda k: k.calibrate(float("nan")), ValueError, "min_time"),
    (lambda k: k.calibrate(0.01, -2.0), ValueError, "warmup"),
    (lambda k: k.calibrate("1"), TypeError, "number"),
])
def test_kernel_bad_input(call, exc, match) -> None:
    k = _core.Kernel("AES/CTR/NoPadding", payload=16)
    with pytest.raises(exc, match=match):
        call(k)


def test_kernel_arguments_are_checked_like_measure() -> None:
    with pytest.raises(pcb.UnsupportedCipherError):
        _core.Kernel("NOPE/CBC/NoPadding")
    with pytest.raises(ValueError, match="whole number of 16-byte blocks"):
        _core.Kernel("AES/CBC/NoPadding", payload=100)
    with pytest.raises(TypeError):
        _core.Kernel("AES/CBC/NoPadding", min_time=0.1)  # timing belongs to calibrate()
    assert _core.check_kernel("AES/CBC/NoPadding", payload=160) is None
    with pytest.raises(ValueError, match="repeats must be between 1 and 100000"):
        _core.check_timing(0.01, 0)


def test_canary_counts_additions() -> None:
    elapsed, ticks, cpu, nivcsw, call = _core.canary(100_000)
    assert elapsed > 0 and call == elapsed
    with pytest.raises(ValueError):
        _core.canary(0)


def test_store_kernel_builds_a_store_and_removes_it(tmp_path: Path) -> None:
    k = _core.StoreKernel("get", directory=str(tmp_path), n_keys=50)
    assert any(tmp_path.iterdir())  # the populated store and its key file
    info = k.info
    assert info["workload"] == "get" and info["entries"] == 50 and info["disk_bytes"] > 0
    n = k.calibrate(0.001, 0.0)
    assert k.sample(n)[0] > 0
    stages = k.stages(100)
    base = {"siv", "nonce", "aead", "base64", "lookup", "io", "total"}
    assert base <= set(stages) <= base | {"siv_floor", "aead_floor"}  # floors: where the CPU has them
    k.close()
    assert k.closed and not any(tmp_path.iterdir())
    with pytest.raises(TypeError, match="directory"):
        _core.StoreKernel("get")
    with pytest.raises(ValueError, match="workload must be one of"):
        _core.StoreKernel("gets", directory=str(tmp_path))


# -- measure() and store.bench() in rounds
def test_measure_takes_one_sample_per_round() -> None:
    m = pcb.measure("AES/GCM/NoPadding", payload=16, min_time=0.001, repeats=6, warmup=0)
    assert m.n_rounds == 6 == len(m.samples) == len(m.cpu_fraction) == len(m.nivcsw) == len(m.canary)
    low, high = m.ci
    assert low <= m.median <= high
    assert np.all(m.cpu_fraction > 0) and np.all(m.cpu_fraction <= 1)
    assert np.all(m.canary > 0)
    assert isinstance(m.warnings, tuple) and all(isinstance(w, str) for w in m.warnings)
    assert "95%" in repr(m) and "6 rounds" in repr(m)
    d = m.to_dict()
    assert d["ci"] == [low, high] and len(d["canary"]) == 6 and d["warnings"] == list(m.warnings)
    back = pcb.Measurement.from_dict(json.loads(json.dumps(d)))
    assert back.ci == m.ci and back.warnings == m.warnings


def test_store_bench_builds_a_new_instance_per_round() -> None:
    m = store.bench("apply", n_keys=20, min_time=0.001, repeats=3, warmup=0)
    assert m.n_rounds == 3 and m.durable_samples is not None and len(m.durable_samples) == 3
    assert m.entries == 20
    got = store.bench("get", n_keys=20, min_time=0.001, repeats=2, warmup=0, stages=True)
    assert got.stages is not None and got.stages["total"] > 0


def test_a_long_run_without_progress_says_how_long(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rounds_mod, "LONG_RUN", 0.0)
    with pytest.warns(UserWarning, match="the rest will take about"):
        pcb.measure("AES/GCM/NoPadding", payload=16, min_time=0.001, repeats=2, warmup=0)


# -- Results.ratio
def paired(a_rounds: list[float], b_rounds: list[float]) -> Results:
    a = synthetic.cipher(a_rounds, transformation="AES/CTR/NoPadding", key_bits=256)
    b = synthetic.cipher(b_rounds, transformation="AES/CTR/NoPadding", key_bits=128)
    c = synthetic.cipher(a_rounds[:3], transformation="AES/CTR/NoPadding", key_bits=192)
    return Results("cipher", [{"key_bits": 256}, {"key_bits": 128}, {"key_bits": 192}], [a, b, c])


def test_ratio_pairs_rounds() -> None:
    # Round 3 is slow for both: paired, it cancels; the per-round ratios are all 1.3 or so.
    num = [130.0, 131.0, 260.0, 129.0, 130.0, 132.0, 128.0, 130.0, 131.0, 129.0]
    den = [100.0, 100.0, 200.0, 100.0, 100.0, 101.0, 99.0, 100.0, 100.0, 100.0]
    r = paired(num, den).ratio({"key_bits": 256}, {"key_bits": 128})
    assert isinstance(r, Ratio) and r.n == 10 and r.significant
    assert r.low <= r.estimate <= r.high and 1.28 < r.estimate < 1.32
    assert r.estimate == pytest.approx(float(np.median(np.array(num) / np.array(den))), rel=1e-9)


def test_ratio_refuses_what_cannot_be_paired() -> None:
    res = paired([1.0] * 10, [1.0] * 10)
    with pytest.raises(ValueError, match="not measured in the same rounds"):
        res.ratio({"key_bits": 192}, {"key_bits": 128})
    with pytest.raises(ValueError, match="no pair of points matches"):
        res.ratio({"key_bits": 512}, {"key_bits": 128})
    with pytest.raises(ValueError, match="both sides"):
        res.ratio({}, {"key_bits": 128})


def test_ratio_one_per_pair_when_several_match() -> None:
    r = pcb.sweep("cipher", transformation="AES/CTR/NoPadding", payload=[16, 64],
                  key_bits=[128, 256], min_time=0.001, repeats=3, warmup=0, progress=False)
    found = r.ratio({"key_bits": 256}, {"key_bits": 128})
    assert isinstance(found, list) and sorted(x.params["payload"] for x in found) == [16, 64]
    assert all(x.n == 3 and x.level < 0.95 for x in found)  # 3 rounds cannot reach 95%


def test_cli_ratio(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    pcb.sweep("store", workload="get", n_keys=20, key_encryption=["siv", "none"], min_time=0.001,
              repeats=3, warmup=0, stages=False, progress=False, out=out)
    buf = subprocess.run(python_command("pycipherbench.cli", "ratio", str(out), "--num",
                                        "key_encryption=siv", "--den", "key_encryption=none"),
                         capture_output=True, text=True, cwd=tmp_path, check=False, timeout=120)
    assert buf.returncode == 0, buf.stderr
    assert "key_encryption=siv / key_encryption=none" in buf.stdout and "(3 rounds" in buf.stdout
    bad = subprocess.run(python_command("pycipherbench.cli", "ratio", str(out), "--num",
                                        "key_encryption=nope", "--den", "key_encryption=none"),
                         capture_output=True, text=True, cwd=tmp_path, check=False, timeout=120)
    # the value is read by key_encryption's declaration, as the API checks it (issue 26)
    assert bad.returncode == 2 and "--num key_encryption='nope': expected one of 'siv', 'none'" \
        in bad.stderr


# -- Ctrl-C
def test_speed_interrupted_prints_the_rows_it_has(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    calls = {"n": 0}
    real = rounds_mod._canary

    def canary_then_ctrl_c(n: int) -> float:  # the canary opens every round: Ctrl-C in round 3
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(n)

    monkeypatch.setattr(rounds_mod, "_canary", canary_then_ctrl_c)
    rc = cli.main(["speed", "--quick", "--payload", "4096"])
    out = capsys.readouterr().out
    assert rc == 130
    assert out.count(" KB/ms [") == 30 and "Interrupted (Ctrl-C) after 2 complete rounds" in out
    # Two rounds' range covers the median half the time: the table says so, not "95%".
    assert "[50% interval: the range of 2 rounds of this process only; 95% needs 6]" in out


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery")
def test_ctrl_c_stops_a_sweep_within_a_second_keeping_complete_rounds(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    code = textwrap.dedent(f"""
        import pathlib, signal, sys
        # What this child inherited (a runner may start it with SIGINT ignored or blocked,
        # which Python keeps): said on stderr, then Ctrl-C restored as a user's shell has it.
        print("inherited SIGINT", signal.getsignal(signal.SIGINT),
              signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []), file=sys.stderr)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
        sys.path.insert(0, {PACKAGE_ROOT!r})  # this very pycipherbench, installed or built in place
        import pycipherbench as pcb
        from pycipherbench import _rounds
        real = _rounds._canary
        def canary(n):  # marks the start of round 2: one complete round exists
            canary.calls = getattr(canary, "calls", 0) + 1
            if canary.calls == 2:
                pathlib.Path({str(ready)!r}).write_text("x")
            return real(n)
        _rounds._canary = canary
        # A kernel proxy: in round 2 its main sample gets SIGINT 0.3 s in, and says how
        # many of the operations it was asked for it ran (the sample lasts >= min_time).
        from pycipherbench import _core
        Real = _core.Kernel
        cut = []
        class Kernel:
            def __init__(self, *a, **kw):
                self._k = Real(*a, **kw)
            def __getattr__(self, name):
                return getattr(self._k, name)
            def sample(self, n):
                import os, threading
                if canary.calls == 3 and n > 1 and not cut and n == kernel_n[0]:
                    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
                    try:
                        return self._k.sample(n)
                    finally:
                        cut.append((self._k.last_call[0], n))
                return self._k.sample(n)
            def calibrate(self, *a):
                kernel_n[0] = self._k.calibrate(*a)
                return kernel_n[0]
        kernel_n = [0]
        _core.Kernel = Kernel
        r = pcb.sweep("cipher", transformation=["AES/GCM/NoPadding", "AES/CTR/NoPadding"],
                      payload=64, min_time=1.0, repeats=100000, progress=False,
                      processes=1)  # the kernel proxy above lives in this process
        print("cut", *cut[0], flush=True)
        print("complete", r.complete, "rounds", min(m.n_rounds for m in r), flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        out, err = proc.communicate(timeout=120)   # a hang, not a duration
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"no exit 120 s in; child's stderr:\n{err}")
    assert proc.returncode == 0, err
    assert "complete False rounds" in out and int(out.split()[-1]) >= 1, out
    done, asked = (int(x) for x in out.split("cut ")[1].split()[:2])
    # Stopped inside the sample, between two of its ~0.1 s slices: not at its end.
    assert 0 < done < asked, (done, asked)

"""Ctrl-C: within about a slice (0.1 s) of a sample, however long the sample; one
KeyboardInterrupt with the masked hw_aes=False child too; the complete rounds kept and
written, also when Ctrl-C is pressed again; ``speed`` interrupted in its first round.

Every check runs in a child process that gets SIGINT, with a generous timeout for a hang;
none asserts a duration. That a long sample was cut is shown by counts: the kernel's
``last_call`` ran fewer operations than it was asked for.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from pycipherbench import stats

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery")

HANG = 120  # seconds: a child still running after this is stuck


def child(package_root: str, body: str, timeout: float = HANG) -> subprocess.CompletedProcess:
    """Runs ``body`` in a fresh interpreter importing this very pycipherbench, with Ctrl-C
    as a user's shell has it (a test runner may start children with SIGINT ignored)."""
    code = (f"import signal, sys\nsys.path.insert(0, {package_root!r})\n"
            "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])\n"
            + textwrap.dedent(body))
    # Its own process group: a SIGINT to the group (what a terminal's Ctrl-C is) stays there.
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, start_new_session=True)


def facts(out: str) -> dict[str, object]:
    """The child's last line: a JSON object of what it saw."""
    return json.loads(out.strip().splitlines()[-1])


# -- a long sample is cut between two slices
KERNELS = {
    "cipher, one thread": '_core.Kernel("AES/CTR/NoPadding", payload=16384, threads=1)',
    "cipher, two threads": '_core.Kernel("AES/CTR/NoPadding", payload=16384, threads=2)',
    "store get": '_core.StoreKernel("get", directory=DIR, n_keys=1000)',
}


@pytest.mark.parametrize("kernel", list(KERNELS.values()), ids=list(KERNELS))
def test_sigint_cuts_a_long_sample(package_root: str, tmp_path: Path, kernel: str) -> None:
    r = child(package_root, f"""
        import json, os, threading
        from pycipherbench import _core
        DIR = {str(tmp_path)!r}
        k = {kernel}
        n = k.calibrate(0.02, 0.0)            # n operations last about 20 ms
        asked = n * 3000                      # about a minute
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            k.sample(asked)
            cut = False
        except KeyboardInterrupt:
            cut = True
        done, slices = k.last_call
        if hasattr(k, "close"):
            k.close()
        print(json.dumps(dict(cut=cut, asked=asked, done=done, slices=slices)))
    """)
    assert r.returncode == 0, r.stderr
    f = facts(r.stdout)
    assert f["cut"], f
    assert 0 < f["done"] < f["asked"] // 10, f   # stopped early: not at the end of the sample
    assert f["slices"] >= 2, f


def test_a_sample_longer_than_a_slice_runs_in_slices_and_times_them_all() -> None:
    """A sample longer than a slice runs in several; its operations are all timed (the
    clocks summed over the slices: elapsed within the call's wall time). That slicing
    costs nothing per operation is measured side by side by bench/bench_slices.py."""
    from pycipherbench import _core

    k = _core.Kernel("AES/CTR/NoPadding", payload=4096)
    n = k.calibrate(0.01, 0.0)
    elapsed, _, _, _, call = k.sample(n * 30)   # ~0.3 s
    assert k.last_call[0] == n * 30 and k.last_call[1] >= 2
    assert 0 < elapsed <= call
    last = k.last_sample
    assert last is not None and last[0] == n * 30 and last[1][0] == elapsed
    k.sample(n)                                  # ~10 ms: one slice
    assert k.last_call == (n, 1)
    k.close()


def test_measure_with_a_long_min_time_stops_inside_its_first_sample(package_root: str) -> None:
    """Ctrl-C during measure(min_time=30): KeyboardInterrupt while the warm-up and
    calibration (each at least min_time long) are running, not after them."""
    r = child(package_root, """
        import json, os, threading, time
        import pycipherbench as pcb
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        t0 = time.monotonic()
        try:
            pcb.measure("AES/CTR/NoPadding", payload=4096, min_time=30.0, repeats=2)
            raised = False
        except KeyboardInterrupt:
            raised = True
        print(json.dumps(dict(raised=raised, before_one_sample=time.monotonic() - t0 < 30.0)))
    """)
    assert r.returncode == 0, r.stderr
    assert facts(r.stdout) == {"raised": True, "before_one_sample": True}


# -- the masked child
def test_ctrl_c_with_the_masked_child_raises_one_keyboard_interrupt(package_root: str) -> None:
    r = child(package_root, """
        import json, os, threading
        import pycipherbench as pcb
        from pycipherbench import _hwaes
        workers = []
        real = _hwaes.MaskedKernel.calibrate
        def calibrate(self, *a):
            # While the child runs its (30 s) warm-up, a terminal's Ctrl-C: SIGINT to the
            # whole process group.
            workers.append(self._worker)
            threading.Timer(0.5, os.killpg, (os.getpgid(0), signal.SIGINT)).start()
            return real(self, *a)
        _hwaes.MaskedKernel.calibrate = calibrate
        try:
            pcb.measure("AES/CTR/NoPadding", payload=4096, min_time=30.0, hw_aes=False)
            chained = "no interrupt"
        except KeyboardInterrupt as e:
            chained = repr(e.__context__ or e.__cause__)
        print(json.dumps(dict(chained=chained, child_exit=workers[0]._proc.poll())))
    """)
    assert r.returncode == 0, r.stderr
    assert "RuntimeError" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    f = facts(r.stdout)
    assert f["chained"] == "None", f            # nothing else raised while it unwound
    assert f["child_exit"] is not None, f       # the masked child was stopped, not left running


def test_a_terminals_ctrl_c_does_not_reach_the_masked_child(package_root: str) -> None:
    """The child runs in its own session: a SIGINT to the parent's process group (what a
    terminal's Ctrl-C is) reaches the parent only, which then stops the child."""
    r = child(package_root, """
        import json, os
        from pycipherbench._hwaes import MaskedWorker
        w = MaskedWorker()
        k = w.new("Kernel", "AES/CTR/NoPadding", payload=4096)
        print(json.dumps(dict(child_group=os.getpgid(w._proc.pid), ours=os.getpgid(0),
                              n=k.calibrate(0.001, 0.0) > 0)))
        k.close()
        w.close()
    """)
    assert r.returncode == 0, r.stderr
    f = facts(r.stdout)
    assert f["child_group"] != f["ours"] and f["n"], f


# -- the complete rounds are written, also when Ctrl-C comes twice
def _wait_for(proc: subprocess.Popen, path: Path) -> None:
    deadline = time.monotonic() + HANG
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the child never got there: {proc.communicate()[1]}")
        time.sleep(0.02)


@pytest.mark.parametrize("attempt", range(4))
def test_sweep_out_keeps_the_complete_rounds_after_repeated_ctrl_c(package_root: str,
                                                                 tmp_path: Path, attempt: int) -> None:
    """sweep --out with the masked child, Ctrl-C pressed twice in round 3 (a second press
    while the first is handled), sent to the process group as a terminal does: the file
    holds every point's complete rounds."""
    ready, out = tmp_path / "ready", tmp_path / "r.json"
    code = textwrap.dedent(f"""
        import pathlib, signal, sys
        sys.path.insert(0, {package_root!r})
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
        from pycipherbench import _hwaes, cli
        real = _hwaes.MaskedKernel.sample
        def sample(self, n):  # 2 points x (warm-up + sample) a round: call 9 starts round 3
            sample.calls = getattr(sample, "calls", 0) + 1
            if sample.calls == 9:  # the parent signals during round 3's first point
                pathlib.Path({str(ready)!r}).write_text("x")
            return real(self, n)
        _hwaes.MaskedKernel.sample = sample
        sys.exit(cli.main(["sweep", "--out", {str(out)!r}, "--repeats", "30", "--param",
                           "transformation=AES/CTR/NoPadding,AES/GCM/NoPadding", "--param",
                           "payload=4096", "--param", "hw_aes=false", "--min-time", "0.2"]))
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait_for(proc, ready)
        # In the child's warm-up (~0.04 s), between its warm-up and sample, in the sample:
        # each attempt lands elsewhere in the round.
        time.sleep(0.01 + 0.05 * attempt)
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
        time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=HANG)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "Traceback" not in err, err
    # 130: the CLI's own exit after an interrupt. The second press can also land after the
    # results were written and main() returned, while the interpreter exits: Python then dies
    # of that SIGINT (-2), which is what a terminal's late Ctrl-C does to any program; the
    # file below must be whole either way.
    assert proc.returncode in (0, 130) or (proc.returncode == -signal.SIGINT
                                           and "saved to" in err), (proc.returncode, err)
    doc = json.loads(out.read_text())
    rounds = {len(p["measurement"]["samples"]) for p in doc["points"]}
    assert len(doc["points"]) == 2 and rounds in ({2}, {3}), (rounds, err)
    assert doc["complete"] is False


# -- speed interrupted before its first round completes
def test_speed_interrupted_while_calibrating_prints_the_rows_sampled(package_root: str) -> None:
    """Ctrl-C after 3 rows were calibrated: those rows are printed as single samples
    (their calibration's final call, at least min_time long), without an interval; the
    rest say they were not sampled; exit 130, no traceback."""
    r = child(package_root, """
        import os, sys
        from pycipherbench import _rounds, cli
        real = _rounds.KernelPoint.prepare
        def prepare(self):
            prepare.calls = getattr(prepare, "calls", 0) + 1
            if prepare.calls == 4:
                os.kill(os.getpid(), signal.SIGINT)
            real(self)
        _rounds.KernelPoint.prepare = prepare
        sys.exit(cli.main(["speed", "--quick", "--payload", "4096"]))
    """)
    assert r.returncode == 130, r.stderr
    assert "Traceback" not in r.stderr, r.stderr
    assert r.stdout.count("(single sample, no interval)") == 3, r.stdout
    assert r.stdout.count("not sampled (interrupted)") == 27, r.stdout
    assert "TEA:AES" not in r.stdout   # no ratio from single samples
    assert "3 rows sampled once each" in r.stdout


# -- what intervals say
def test_interval_words_follow_the_coverage() -> None:
    assert stats.interval_words(10) == "95% interval"
    assert stats.interval_words(6) == "95% interval"
    assert stats.interval_words(3) == "75% interval: the range of 3 rounds; 95% needs 6"
    assert stats.interval_words(5).startswith("94% interval: the range of 5 rounds")
    assert stats.interval_words(1) == "no interval: 1 round"


def test_reprs_tables_and_json_say_the_coverage_of_few_rounds() -> None:
    import synthetic

    from pycipherbench import Results

    three = synthetic.cipher([900.0, 1000.0, 1100.0], payload=1000)
    assert "(75% interval: the range of 3 rounds of this process only; 95% needs 6)" in repr(three)
    assert "(95%)" not in repr(three)
    assert three.to_dict()["ci_level"] == 0.75
    one = synthetic.cipher([900.0], payload=1000)
    assert "(no interval: 1 round)" in repr(one) and "[" not in repr(one).split("ns/op")[1][:3]
    assert one.to_dict()["ci_level"] == 0.0
    ten = synthetic.cipher(np.linspace(900.0, 1100.0, 10), payload=1000)
    assert "(95% interval, this process only)" in repr(ten) and ten.ci_level > 0.95
    r = Results("cipher", [{"payload": 1000}], [three], options={"repeats": 3})
    assert r.table().splitlines()[0].split()[2:4] == ["75%", "interval"]


# -- ratios pair points of one run only
def test_ratio_refuses_points_of_different_runs_and_names_them() -> None:
    import dataclasses

    import synthetic

    from pycipherbench import Results

    a = dataclasses.replace(synthetic.cipher([100.0, 101, 99, 100, 102, 98], payload=16), run_id="aaaa")
    b = dataclasses.replace(synthetic.cipher([200.0, 201, 199, 200, 202, 198], payload=64), run_id="bbbb")
    r = Results("cipher", [{"payload": 16}, {"payload": 64}], [a, b], options={"repeats": 6})
    with pytest.raises(ValueError, match=r"different runs \(bbbb and aaaa"):
        r.ratio({"payload": 64}, {"payload": 16})
    same = Results("cipher", [{"payload": 16}, {"payload": 64}],
                   [a, dataclasses.replace(b, run_id="aaaa")], options={"repeats": 6})
    assert same.ratio({"payload": 64}, {"payload": 16}).estimate == pytest.approx(2.0, rel=0.02)


def test_resume_refuses_other_repeats_and_new_points_get_a_new_run(tmp_path: Path, capsys) -> None:
    import pycipherbench as pcb

    out = tmp_path / "r.json"
    grid = dict(transformation="AES/CTR/NoPadding", min_time=0.001, warmup=0.0, progress=False)
    first = pcb.sweep("cipher", payload=[16], repeats=4, out=out, **grid)
    with pytest.raises(ValueError, match=r"repeats=3: its points were measured with repeats=4"):
        pcb.sweep("cipher", payload=[16, 64], repeats=3, out=out, resume=True, **grid)
    again = pcb.sweep("cipher", payload=[16, 64], repeats=4, out=out, resume=True, **grid)
    runs = {p["payload"]: m.run_id for p, m in again.items()}
    assert runs[16] == first.measurements[0].run_id and runs[64] != runs[16]
    assert f"measured now in run {runs[64]}" in capsys.readouterr().err
    with pytest.raises(ValueError, match="different runs"):
        again.ratio({"payload": 64}, {"payload": 16})
    assert json.loads(out.read_text())["points"][1]["measurement"]["run_id"] == runs[64]


# -- a thread run too short for its threads
def test_thread_run_whose_threads_did_not_overlap_warns_specifically() -> None:
    from pycipherbench._measure import _thread_warnings
    from pycipherbench._rounds import PointData

    data = PointData()
    data.extra = {"thread_overlap": [0.95, 0.3, 0.9, 0.4], "thread_stagger": [0.01, 0.6, 0.02, 0.5]}
    (w,) = _thread_warnings(data, 0.002, 2)
    assert w.startswith("threads=2: in 2 of 4 rounds the threads did not run together")
    assert "covered only 30%" in w and "up to 60% of the sample" in w and "min_time=0.002 s" in w
    data.extra = {"thread_overlap": [0.95, 0.99], "thread_stagger": [0.01, 0.0]}
    assert _thread_warnings(data, 0.1, 2) == ()


def test_a_real_thread_run_records_overlap_per_round() -> None:
    import pycipherbench as pcb

    m = pcb.measure("AES/CTR/NoPadding", payload=4096, threads=2, min_time=0.005, repeats=3,
                    warmup=0.0)
    assert m.threads == 2 and m.n_rounds == 3
    # Whatever this machine did, a warning about overlap is computed from recorded spans:
    # it names the rounds it counted.
    for w in m.warnings:
        if w.startswith("threads=2:"):
            assert "of 3 rounds" in w


# -- store rows that cannot rank the modes
def test_store_row_whose_intervals_hold_one_says_it_cannot_rank() -> None:
    from pycipherbench.experiments import _rank_note
    from pycipherbench.stats import paired_ratio

    rng = np.random.default_rng(1)
    base = rng.uniform(1.0, 10.0, 10)           # fsync-like noise: 10x from round to round
    noisy = base * rng.uniform(0.3, 3.0, 10)
    clear = base * 2.0
    note = _rank_note("100 puts + commit", {"lean/plain": paired_ratio(noisy, base),
                                            "faithful/lean": paired_ratio(clear, base)}, durable=True)
    assert note is not None and "cannot rank the modes of lean/plain" in note
    assert "faithful/lean" not in note and "fsync" in note
    assert _rank_note("100 gets", {"lean/plain": paired_ratio(clear, base)}, durable=False) is None

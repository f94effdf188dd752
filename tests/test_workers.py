"""Worker processes as the unit of replication (issue 27), and the intervals of the hierarchy.

The plumbing is checked by counts: workers started, rounds per worker, the pairing of rounds
kept, calibration once, Ctrl-C in a worker keeping complete rounds and leaving no process
behind. The statistics are checked on simulated data with a process-level variance (no
timing): coverage of the two-level interval, and the A/A false-positive rate of compare
across runs. No test asserts a duration.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pycipherbench as pcb
from pycipherbench import _hwaes, _rounds, stats
from pycipherbench._measure import plan

from conftest import PACKAGE_ROOT  # noqa: E402  (where the tested package is)

HANG = 120  # seconds: a child still running after this is stuck
TINY = dict(payload=64, min_time=0.001, warmup=0.0)


def _gone(pid: int) -> bool:
    """True when no process ``pid`` runs (a reaped child; a zombie would still count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts the calibrations and samples the parent asks of worker kernels."""
    calls = {"calibrate": 0, "sample": 0}
    for name in calls:
        real = getattr(_hwaes.MaskedKernel, name)

        def counted(self, *a, _real=real, _name=name):  # type: ignore[no-untyped-def]
            calls[_name] += 1
            return _real(self, *a)
        monkeypatch.setattr(_hwaes.MaskedKernel, name, counted)
    return calls


# -- the plumbing, by counts
def test_rounds_run_in_fresh_workers_one_after_another_and_stay_paired(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch)
    with _rounds.Workers(3) as workers:
        plans = [plan(t, workers=workers, repeats=7, **TINY)
                 for t in ("AES/CTR/NoPadding", "AES/GCM/NoPadding")]
        records, run = _rounds.run_plans(plans, 7, workers=workers)
        pids = list(workers.pids)
    assert workers.started == 3 and len(set(pids)) == 3          # three fresh processes
    assert run.schedule == [0, 0, 0, 1, 1, 2, 2] and run.processes == 3
    assert calls["calibrate"] == 2                                # once per point, not per worker
    assert calls["sample"] == 2 * 7 * 2                           # warm-up + sample, per point per round
    a, b = records
    assert a.n_rounds == b.n_rounds == 7
    assert a.process.tolist() == b.process.tolist() == [0, 0, 0, 1, 1, 2, 2]  # pairs by round
    assert a.run_id == b.run_id and a.processes == 3 and a.n_processes == 3
    assert all(_gone(p) for p in pids)                            # none left behind
    assert a.ci_words == ("95% interval over 3 processes x 2-3 rounds; this machine's speed "
                          "between runs not recorded")  # the tests keep no history (conftest)
    r = pcb.Results("cipher", [{"transformation": "AES/CTR/NoPadding"},
                               {"transformation": "AES/GCM/NoPadding"}], records)
    ratio = r.ratio({"transformation": "AES/GCM/NoPadding"},
                    {"transformation": "AES/CTR/NoPadding"})
    assert ratio.processes == 3 and "3 processes x 2-3 rounds" in str(ratio)


def test_masked_points_use_the_same_workers_fresh_with_each_process() -> None:
    with _rounds.Workers(2) as workers:
        plans = [plan("AES/CTR/NoPadding", workers=workers, hw_aes=hw, repeats=4, **TINY)
                 for hw in (True, False)]
        records, run = _rounds.run_plans(plans, 4, workers=workers)
        pids = list(workers.pids)
    assert workers.started == 4                  # a fresh plain and a fresh masked worker, twice
    assert [m.hw_aes for m in records] == [True, False] and records[1].hw_mask
    assert records[0].process.tolist() == records[1].process.tolist() == [0, 0, 1, 1]
    assert all(_gone(p) for p in pids)


def test_processes_one_is_this_process_and_says_so() -> None:
    m = pcb.measure("AES/CTR/NoPadding", repeats=6, processes=1, **TINY)
    assert m.processes == 1 and m.n_processes == 1
    assert m.ci_words == "95% interval, this process only"
    d = m.to_dict()
    assert d["processes"] == 1 and d["ci_words"] == m.ci_words


def test_default_processes() -> None:
    assert _rounds.resolve_processes(None, 10) == 5   # 5 processes x 2 rounds
    assert _rounds.resolve_processes(None, 3) == 1    # too few rounds: this process
    assert _rounds.resolve_processes(None, 5) == 1    # 2 processes would say little
    assert _rounds.resolve_processes(None, 6) == 3
    assert _rounds.resolve_processes(None, 30) == 5
    assert _rounds.resolve_processes(None, 7) == 3
    assert _rounds.process_schedule(10, 5) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert _rounds.process_schedule(5, 2) == [0, 0, 0, 1, 1]
    with pytest.raises(ValueError, match="at least as many rounds"):
        _rounds.resolve_processes(4, 3)
    for bad in (0, -1):
        with pytest.raises(ValueError, match="processes must be between 1 and"):
            _rounds.resolve_processes(bad, 10)
    for bad in (1.5, True, "2"):
        with pytest.raises(TypeError, match="processes must be an int"):
            _rounds.resolve_processes(bad, 10)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="processes must be between 1 and"):
        pcb.measure("AES/CTR/NoPadding", processes=0, **TINY)


def test_store_bench_runs_in_workers() -> None:
    m = pcb.store.bench("get", n_keys=20, repeats=4, processes=2, min_time=0.001, warmup=0.0,
                        stages=False)
    assert m.process.tolist() == [0, 0, 1, 1] and m.processes == 2


def test_results_json_keeps_processes_and_reads_older_files(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    r = pcb.sweep("cipher", transformation="AES/CTR/NoPadding", payload=[16, 64], repeats=4,
                  processes=2, out=out, progress=False, min_time=0.001, warmup=0.0)
    assert r.options["processes"] == 2
    doc = json.loads(out.read_text())
    assert doc["options"]["processes"] == 2
    assert doc["points"][0]["measurement"]["process"] == [0, 0, 1, 1]
    back = pcb.load_results(out)
    assert back.measurements[0].process.tolist() == [0, 0, 1, 1]
    assert back.measurements[0].ci == r.measurements[0].ci
    # A file of an older version: no process column; one process, and its words say so.
    for p in doc["points"]:
        del p["measurement"]["process"], p["measurement"]["processes"]
    del doc["options"]["processes"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    m = pcb.load_results(old).measurements[0]
    assert m.process is None and m.processes == 1 and "this process only" in m.ci_words
    # --resume refuses another number of processes (an older file: 1)
    with pytest.raises(ValueError, match=r"processes=2: its points were measured in 1"):
        pcb.sweep("cipher", transformation="AES/CTR/NoPadding", payload=[16, 256], repeats=4,
                  processes=2, out=old, resume=True, progress=False, min_time=0.001, warmup=0.0)


def _ctrl_c_run(patched: str, call: int, plans: str, directory: Path) -> dict:
    """Runs 6 rounds over 3 workers in a child whose ``patched`` method (of ``_hwaes`` or
    ``_rounds``) sends SIGINT to its process group 0.15 s into its ``call``-th call (a
    terminal's Ctrl-C, landing while the parent waits on a worker); returns what the run
    kept, the workers' pids and what is left in ``directory``."""
    module, _, method = patched.rpartition(".")
    code = textwrap.dedent(f"""
        import json, os, signal, sys, threading
        sys.path.insert(0, {PACKAGE_ROOT!r})
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
        from pycipherbench import _hwaes, _rounds
        from pycipherbench._measure import plan
        from pycipherbench.store_bench import plan_bench
        owner = {module}
        real = getattr(owner, {method!r})
        def patched(self, *args):
            patched.calls = getattr(patched, "calls", 0) + 1
            if patched.calls == {call}:
                threading.Timer(0.15, os.killpg, (os.getpgid(0), signal.SIGINT)).start()
            return real(self, *args)
        setattr(owner, {method!r}, patched)
        with _rounds.Workers(3) as workers:
            plans = {plans}
            records, run = _rounds.run_plans(plans, 6, workers=workers)
            pids = list(workers.pids)
        print(json.dumps(dict(interrupted=run.interrupted, rounds=run.rounds,
                              process=[m.process.tolist() for m in records],
                              n=[m.n_rounds for m in records], pids=pids,
                              left=os.listdir({str(directory)!r}))))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=HANG, start_new_session=True)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_ctrl_c_in_a_worker_keeps_complete_rounds_and_leaves_no_process(tmp_path: Path) -> None:
    """SIGINT to the parent's process group (a terminal's Ctrl-C) while a worker samples
    round 4 of 6 (the second worker's): the complete rounds stay, paired, and every
    worker process started is gone."""
    # 2 points x (warm-up + sample) a round: call 13 starts round 4's 0.3 s samples
    f = _ctrl_c_run("_hwaes.MaskedKernel.sample", 13, """[
        plan(t, workers=workers, payload=4096, min_time=0.3, warmup=0.0, repeats=6)
        for t in ("AES/CTR/NoPadding", "AES/GCM/NoPadding")]""", tmp_path)
    assert f["interrupted"] and f["rounds"] == 3, f          # rounds 1-3 complete, round 4 cut
    assert f["n"] == [3, 3] and f["process"] == [[0, 0, 1], [0, 0, 1]], f
    assert len(f["pids"]) == 2 and all(_gone(p) for p in f["pids"]), f


# -- the statistics of the hierarchy, on simulated data
def _simulate(rng: np.random.Generator, w: int, r: int, between: float, within: float,
              center: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Per-round log values of a run: each process shifts all its rounds (``between``),
    each round has its own noise (``within``); and the process of each round."""
    shift = rng.normal(0.0, between, w)
    logs = center + np.repeat(shift, r) + rng.normal(0.0, within, w * r)
    return np.exp(logs), np.repeat(np.arange(w), r).astype(float)


def test_the_two_level_interval_covers_with_a_process_level_variance() -> None:
    """Simulated runs of 5 processes x 2 rounds whose processes differ (as the next process
    does): the interval over processes covers the true median about 95% of the time; the
    in-process interval of 10 rounds of one process covers that process only, and the
    true median far less often."""
    rng = np.random.default_rng(27)
    trials, over, within = 2000, 0, 0
    for _ in range(trials):
        x, proc = _simulate(rng, 5, 2, between=0.03, within=0.01)
        iv = stats.median_interval(x, proc)
        over += iv.low <= 1.0 <= iv.high
        one, proc1 = _simulate(rng, 1, 10, between=0.03, within=0.01)
        iv1 = stats.median_interval(one, proc1)
        within += iv1.low <= 1.0 <= iv1.high
        assert iv1.words == "95% interval, this process only"
    assert 0.92 <= over / trials <= 0.98, over / trials
    assert within / trials < 0.6, within / trials


def test_paired_ratio_over_processes_covers_and_has_no_constant() -> None:
    rng = np.random.default_rng(2027)
    trials, hits = 2000, 0
    for _ in range(trials):
        den, proc = _simulate(rng, 5, 2, between=0.05, within=0.02)
        # the numerator shares the round's slowdown, with its own process-level effect
        num = den * 1.2 * np.exp(np.repeat(rng.normal(0, 0.02, 5), 2) + rng.normal(0, 0.005, 10))
        r = stats.paired_ratio(num, den, process=proc)
        hits += r.low <= 1.2 <= r.high
    assert 0.92 <= hits / trials <= 0.98, hits / trials
    # identical values in every process: the interval is the estimate, nothing is added
    same = stats.paired_ratio([1.1] * 10, [1.0] * 10, process=[0, 0, 1, 1, 2, 2, 3, 3, 4, 4])
    assert same.low == pytest.approx(1.1) and same.high == pytest.approx(1.1)
    assert same.processes == 5 and str(same).startswith("1.10x [1.10, 1.10] (5 processes x 2 rounds")
    one = stats.paired_ratio([1.1] * 10, [1.0] * 10)
    assert one.low == pytest.approx(1.1) and one.high == pytest.approx(1.1) and one.processes == 1


def test_compare_across_runs_over_processes_keeps_the_false_positive_rate() -> None:
    """A/A: two runs of the same thing, each 5 processes x 2 rounds with a process-level
    variance: compare calls at most about alpha of them different; a real 15% difference
    (five times the processes' spread) is found."""
    rng = np.random.default_rng(4)
    trials, false, found = 2000, 0, 0
    for _ in range(trials):
        a, pa = _simulate(rng, 5, 2, between=0.03, within=0.01)
        b, pb = _simulate(rng, 5, 2, between=0.03, within=0.01)
        false += bool(stats.compare_rounds(a, b, process_a=pa, process_b=pb).significant)
        c, pc = _simulate(rng, 5, 2, between=0.03, within=0.01, center=np.log(1.15))
        found += bool(stats.compare_rounds(a, c, process_a=pa, process_b=pc).significant)
    assert false / trials <= 0.07, false / trials
    assert found / trials >= 0.8, found / trials


def test_words_of_the_intervals() -> None:
    assert stats.process_words(10, [2] * 5) == "95% interval over 5 processes x 2 rounds"
    assert stats.process_words(7, [3, 2, 2]) == "95% interval over 3 processes x 2-3 rounds"
    assert stats.process_words(10, [10]) == "95% interval, this process only"
    assert stats.process_words(1, [1]) == "no interval: 1 round"
    with pytest.raises(ValueError, match="one process index per round"):
        stats.median_interval([1.0, 2.0, 3.0], [0, 1])


def test_no_constant_measured_on_one_machine_is_left_in_any_interval() -> None:
    root = Path(__file__).resolve().parent.parent  # the checkout: its sources, bench/, README
    pattern = re.compile(r"RUN_TO_RUN|run_to_run")
    hits = [f"{p.relative_to(root)}:{i}" for p in [*(root / "pycipherbench").rglob("*.py"),
                                                   *(root / "bench").glob("*.py"),
                                                   root / "README.md"]
            if p.name != "bench_replication.py"  # computes the old interval beside the new
            for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, hits
    assert not hasattr(stats, "RUN_TO_RUN")


# -- what makes this machine noisy, read only
def test_machine_check_reads_and_says_effect_and_fix(capsys: pytest.CaptureFixture[str]) -> None:
    from pycipherbench import _machine, cli

    checks = _machine.check_machine()
    names = [c.name for c in checks]
    assert names == ["load average", "CPU frequency governor", "turbo/boost", "SMT siblings",
                     "transparent huge pages", "ASLR", "isolated CPUs", "thermal throttling"]
    for c in checks:
        assert c.state and c.ok in (True, False, None)
        if c.ok is False:  # what is off says what it does and how to fix it
            assert c.effect and c.fix, c
    assert cli.main(["machine", "--check"]) == 0
    out = capsys.readouterr().out
    assert all(f"] {n}: " in out for n in [*names, "clock between runs"])  # + the history's
    assert re.match(rf"# \d of {len(checks) + 1} off", out.rstrip().splitlines()[-1])  # load may move
    off = _machine.Check("turbo/boost", "on", False, "effect", "fix")
    assert _machine.check_summary([off]).startswith("# Noisy machine: turbo/boost on")
    assert _machine.check_summary([_machine.Check("ASLR", "on", True)]) == ""


def _calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple]]:
    """Records every request the parent sends to a worker process (method, arguments)."""
    seen: list[tuple[str, tuple]] = []
    real = _hwaes.WorkerProcess.call

    def call(self, obj, method, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append((method, args))
        return real(self, obj, method, *args, **kwargs)
    monkeypatch.setattr(_hwaes.WorkerProcess, "call", call)
    return seen


def test_a_point_timed_at_the_python_call_replicates_over_the_workers_too(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A Python-level point of a run over worker processes lives in them, as a C kernel
    does: built in each fresh worker, calibrated once (in the first), its rounds paired
    with the C point's; its scratch stores are gone afterwards, as are the workers."""
    from pycipherbench.store_bench import plan_bench

    seen = _calls(monkeypatch)
    with _rounds.Workers(3) as workers:
        plans = [plan_bench("get", n_keys=10, level="python", min_time=0.001, warmup=0.0,
                            repeats=6, stages=False, workers=workers, directory=tmp_path),
                 plan_bench("get", n_keys=10, min_time=0.001, warmup=0.0, repeats=6,
                            stages=False, workers=workers, directory=tmp_path)]
        (py, c), run = _rounds.run_plans(plans, 6, workers=workers)
        pids = list(workers.pids)
    assert run.schedule == [0, 0, 1, 1, 2, 2] and workers.started == 3
    assert py.process.tolist() == c.process.tolist() == [0, 0, 1, 1, 2, 2]  # pairs by round
    assert py.n_processes == 3 and "over 3 processes x 2 rounds" in py.ci_words
    built = [args for method, args in seen if method == "prepare_in_worker"]
    assert [m for m, _ in seen].count("Point") == 3                # one build per worker
    assert built[0] == (None,) and built[1:] == [(py.iterations,)] * 2  # calibrated once
    assert [m for m, _ in seen].count("sample_in_worker") == 6
    assert py.iterations >= 1 and len(py.samples) == 6 and py.disk_bytes > 0
    assert all(_gone(p) for p in pids) and os.listdir(tmp_path) == []


def test_designs_and_replay_take_processes(monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    from pycipherbench import designs, replay

    seen = _calls(monkeypatch)
    recs, run = designs.run(["plain", "esp"], cases=[{"cold": False}], repeats=4, processes=2,
                            min_time=0.0, directory=str(tmp_path))
    assert run.processes == 2 and [r.process.tolist() for r in recs] == [[0, 0, 1, 1]] * 2
    assert all(r.disk_bytes > 0 for r in recs) and os.listdir(tmp_path) == []
    assert [m for m, _ in seen].count("Point") == 4
    one, _ = designs.run(["plain"], cases=[{"cold": True}], repeats=3, processes=1, min_time=0.0)
    assert "this process only" in one[0].ci_words and one[0].processes == 1
    with pytest.raises(ValueError, match="at least as many rounds"):
        designs.run(["plain"], cases=[{"cold": True}], repeats=2, processes=3)
    result = replay.replay(replay.SAMPLE_PREFS, designs=["plain", "esp"], repeats=2, processes=2,
                           min_time=0.0, directory=tmp_path)
    assert result.run.processes == 2 and os.listdir(tmp_path) == []
    assert all(r.process.tolist() == [0, 1] for r in result.records)
    cold = [r for r in result.records if r.workload == "cold_start"]
    assert all(r.heap_bytes is None or r.heap_bytes > 0 for r in cold)


def test_ctrl_c_in_a_worker_holding_a_python_point_keeps_rounds_and_no_scratch(
        tmp_path: Path) -> None:
    """SIGINT while a worker samples a Python-level point in round 4 of 6: the complete
    rounds stay, every worker is gone, and the killed worker's scratch stores too."""
    # call 4 is round 4's 0.3 s sample (opens: well under the cap on operations that a
    # sample of gets would hit)
    f = _ctrl_c_run("_rounds.InWorkerPoint.sample", 4, f"""[
        plan_bench("open_warm", n_keys=10, level="python", min_time=0.3, warmup=0.0,
                   repeats=6, stages=False, workers=workers, directory={str(tmp_path)!r})]""",
                    tmp_path)
    assert f["interrupted"] and f["rounds"] == 3 and f["process"] == [[0, 0, 1]], f
    assert len(f["pids"]) == 2 and all(_gone(p) for p in f["pids"]), f
    assert f["left"] == [], f

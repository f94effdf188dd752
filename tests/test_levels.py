"""This machine's speed between runs (pycipherbench._levels) and compare across runs by
their canaries (issue 27): a run's clock level sits still for the whole run, so a median's
interval over processes takes the spread of the machine's recent levels from a per-user
history, and compare reads both runs' canaries. Counts and simulations only: no timing is
asserted."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import time
from pathlib import Path

import numpy as np
import pytest

import pycipherbench as pcb
from pycipherbench import _levels, stats

QUICK = dict(transformation="AES/CTR/NoPadding", payload=64, min_time=0.002, warmup=0.0)


@pytest.fixture
def history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    p = tmp_path / "cache" / "levels.jsonl"
    monkeypatch.setenv("PYCIPHERBENCH_LEVELS", str(p))
    return p


def _lines(p: Path) -> list[dict]:
    return [json.loads(x) for x in p.read_text().splitlines()]


def _seed(p: Path, levels: list[float], *, machine: str | None = None, age: float = 60.0) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    key = machine or _levels.machine_key()
    with open(p, "a") as f:
        for lv in levels:
            f.write(json.dumps({"t": time.time() - age, "machine": key, "canary": lv}) + "\n")


def test_every_run_notes_its_level_once(history: Path) -> None:
    m = pcb.measure(processes=3, repeats=6, **QUICK)
    rows = _lines(history)
    assert len(rows) == 1 and rows[0]["machine"] == _levels.machine_key()
    assert rows[0]["canary"] == pytest.approx(float(np.median(m.canary)))
    assert m.level_runs == 1 and m.level_sd is None
    assert m.ci_words.endswith("this machine's speed between runs not yet known "
                               f"(1 of {_levels.MIN_RUNS} runs recorded)")
    pcb.sweep("cipher", transformation="AES/CTR/NoPadding", payload=[16, 64], repeats=3,
              processes=1, min_time=0.002, warmup=0.0, progress=False)
    assert len(_lines(history)) == 2  # one line per run, not per point


def test_enough_runs_widen_the_interval_by_their_spread(history: Path) -> None:
    earlier = [0.24, 0.25, 0.245, 0.26, 0.238, 0.252]
    _seed(history, earlier)
    m = pcb.measure(processes=3, repeats=6, **QUICK)
    k = len(earlier) + 1
    assert m.level_runs == k
    logs = [math.log(x) for x in [*earlier, float(np.median(m.canary))]]
    assert m.level_sd == pytest.approx(_levels.spread(logs))
    assert m.ci_words == f"95% interval over 3 processes x 2 rounds and this machine's speed over {k} runs"
    assert m.level_shift == pytest.approx(float(np.median(logs)) - logs[-1])
    alone = stats.median_interval(m.samples, m.process)
    center = math.log(alone.low * alone.high) / 2
    half = math.hypot(math.log(alone.high) - center, stats.level_half(m.level_sd, k))
    moved = center + m.level_shift  # where a usual run of this machine would be
    assert m.ci == pytest.approx((min(alone.low, math.exp(moved - half)),
                                  max(alone.high, math.exp(moved + half))))
    # the hull of both: never narrower, and wider on the side the level moved it to (both
    # sides when the move is smaller than the widening; which, depends on this machine)
    assert m.ci[0] <= alone.low and m.ci[1] >= alone.high
    assert m.ci[0] < alone.low or m.ci[1] > alone.high
    back = type(m).from_dict(json.loads(m.to_json()))  # files keep it
    assert back.level_sd == m.level_sd and back.level_runs == k and back.ci == m.ci
    one = pcb.measure(processes=1, repeats=6, **QUICK)  # this process only: nothing added
    assert one.ci_words == "95% interval, this process only"
    assert one.ci == stats.median_interval(one.samples).interval


def test_other_machines_old_lines_and_garbage_do_not_count(history: Path) -> None:
    _seed(history, [0.2] * 10, machine="someone-else")
    _seed(history, [0.2] * 10, age=_levels.HORIZON + 3600)
    with open(history, "a") as f:
        f.write("not json\n{\"t\": 1}\n" + json.dumps({"t": time.time(), "machine":
                _levels.machine_key(), "canary": -1}) + "\n")
    assert _levels.earlier(_levels.machine_key()) == []
    _seed(history, [0.25] * (_levels.LATEST + 7))
    assert len(_levels.earlier(_levels.machine_key())) == _levels.LATEST


def test_no_history_when_the_variable_is_empty(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    monkeypatch.setenv("PYCIPHERBENCH_LEVELS", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    m = pcb.measure(processes=3, repeats=6, **QUICK)
    assert m.level_runs == 0 and m.ci_words.endswith("between runs not recorded")
    assert not any(tmp_path.iterdir())
    monkeypatch.delenv("PYCIPHERBENCH_LEVELS")
    assert _levels.path() == str(tmp_path / "pycipherbench" / "levels.jsonl")


def test_an_unwritable_history_fails_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("PYCIPHERBENCH_LEVELS", str(blocker / "levels.jsonl"))  # under a file
    m = pcb.measure(processes=3, repeats=6, **QUICK)
    assert m.level_runs == 1 and len(m.samples) == 6


def test_the_file_is_cut_back(history: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_levels, "TRIM_AT", 20)
    monkeypatch.setattr(_levels, "KEEP", 5)
    _seed(history, [0.25] * 400)
    _levels.note(_levels.machine_key(), 0.3)
    rows = _lines(history)
    assert len(rows) == 5 and rows[-1]["canary"] == 0.3


def _append(path: str, n: int) -> None:
    os.environ["PYCIPHERBENCH_LEVELS"] = path
    for i in range(n):
        _levels.note("concurrent", 0.25 + i * 1e-6)


def test_processes_appending_together_lose_no_line(history: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_append, args=(str(history), 200)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    assert len(_lines(history)) == 800  # every line parses: none interleaved


def _drifting_run(rng: np.random.Generator, level: float, effect: float = 0.0,
                  w: int = 5, r: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A run whose machine clock sits at ``level`` (log) throughout: every kernel round and
    every canary is that much slower; processes differ by 1%, rounds by 0.5%."""
    proc = np.repeat(np.arange(w), r).astype(float)
    times = np.exp(level + effect + np.repeat(rng.normal(0, 0.01, w), r) + rng.normal(0, 0.005, w * r))
    canary = 0.25 * np.exp(level + rng.normal(0, 0.003, w * r))
    return times, proc, canary


def test_compare_reads_the_clock_drift_between_runs_from_their_canaries() -> None:
    """A/A between runs whose clocks sit 4% apart (as on the development VM): Welch over
    the times alone calls most of them different; with the canaries the rate stays at
    about alpha and the note says why. A real 10% change with the clock unchanged is
    still found, and a change that does not scale with the clock (the canaries move, the
    times do not) is not called."""
    rng = np.random.default_rng(2712)
    trials = 1000
    drift = false_blind = false = found = clock_only = 0
    for _ in range(trials):
        la, lb = rng.normal(0, 0.02, 2)
        a, pa, ca = _drifting_run(rng, la)
        b, pb, cb = _drifting_run(rng, lb)
        blind = stats.compare_rounds(a, b, process_a=pa, process_b=pb)
        seen = stats.compare_rounds(a, b, process_a=pa, process_b=pb, canary_a=ca, canary_b=cb)
        false_blind += blind.p_value < 0.05
        false += bool(seen.significant)
        if seen.p_value < 0.05 and not seen.significant:
            drift += "the clock, not the code" in seen.note
        assert seen.machine == pytest.approx(math.exp(np.median(np.log(cb)) - np.median(np.log(ca))))
        c, pc, cc = _drifting_run(rng, la, effect=math.log(1.10))
        found += bool(stats.compare_rounds(a, c, process_a=pa, process_b=pc, canary_a=ca,
                                           canary_b=cc).significant)
        d, pd, cd = _drifting_run(rng, la)
        clock_only += bool(stats.compare_rounds(a, d, process_a=pa, process_b=pd, canary_a=ca,
                                                canary_b=cd * 1.1).significant)
    assert false_blind / trials > 0.3, false_blind / trials
    assert false / trials <= 0.06, false / trials
    assert drift > 0.2 * trials
    assert found / trials >= 0.9, found / trials
    assert clock_only / trials <= 0.06, clock_only / trials


def test_compare_checks_the_canaries() -> None:
    x, proc = [1.0] * 6, [0, 0, 1, 1, 2, 2]
    with pytest.raises(ValueError, match="one canary per round of b"):
        stats.compare_rounds(x, x, process_a=proc, process_b=proc, canary_a=x, canary_b=[1.0])
    with pytest.raises(ValueError, match="canary_a"):
        stats.compare_rounds(x, x, process_a=proc, process_b=proc, canary_a=[0.0] * 6,
                             canary_b=x)


def test_the_interval_covers_the_next_run_under_a_drifting_clock() -> None:
    """Simulated runs of 5 processes x 2 rounds whose clock sits at a level drawn afresh
    for each run (SD 2%), 20 earlier runs' levels known: the interval over the processes
    alone covers the usual run's median far less than 95% of the time; with the machine's
    levels it covers it at least 95%."""
    rng = np.random.default_rng(1227)
    trials, alone, with_levels = 2000, 0, 0
    for _ in range(trials):
        levels = list(rng.normal(0.0, 0.02, 20))
        this = float(rng.normal(0.0, 0.02))
        x, proc, canary = _drifting_run(rng, this)
        logs = [*levels, this]
        iv0 = stats.median_interval(x, proc)
        iv = stats.median_interval(x, proc, level_sd=_levels.spread(logs), level_runs=len(logs),
                                   level_shift=_levels.shift(logs, this))
        alone += iv0.low <= 1.0 <= iv0.high  # the usual run: level 0
        with_levels += iv.low <= 1.0 <= iv.high
    assert alone / trials < 0.7, alone / trials
    assert with_levels / trials >= 0.95, with_levels / trials


def test_machine_check_says_what_the_history_holds(history: Path) -> None:
    from pycipherbench._levels import check

    assert "not yet known: 0 of" in check().state
    _seed(history, [0.24, 0.25, 0.26, 0.245])
    c = check()
    assert c.ok is None and "latest 4 runs spread by" in c.state and str(history) in c.state
    assert "0.24-0.26 ns per addition" in c.state

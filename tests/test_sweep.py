"""pycipherbench.sweep: grid expansion, applicability rules, run order, Ctrl-C and resume.

Tiny settings everywhere; no timing assertions. Order, interruption and resume
use a fake measure() so they are exact and instant.
"""

from __future__ import annotations

import importlib
import json
from typing import Any

import pytest
from synthetic import cipher

import pycipherbench as pcb
from pycipherbench import Measurement, Results, load_results
from pycipherbench._params import point_key
from pycipherbench.store import StoreMeasurement

sw = importlib.import_module("pycipherbench.sweep")  # the attribute pcb.sweep is the function

TINY: dict[str, Any] = dict(min_time=0.001, repeats=2, warmup=0, progress=False)
GCM, TEA, TEA_REF = "AES/GCM/NoPadding", "TEA/ECB/NoPadding", "TEA-ref/ECB/NoPadding"


def fake_measurement(transformation: str, **kw: Any) -> Measurement:
    return cipher([100.0, 101.0, 102.0], transformation=transformation, op=kw.get("op", "enc"),
                  payload=kw.get("payload", 64), key_bits=kw.get("key_bits") or 128,
                  rounds=kw.get("rounds"), iv_len=kw.get("iv_len"), hw_aes=kw.get("hw_aes", True),
                  min_time=kw.get("min_time", 0.001), repeats=kw.get("repeats", 3), iterations=10,
                  tsc=False)


class FakeMeasure:
    """Records the calls; raises KeyboardInterrupt on call number `interrupt_at` (0-based)."""

    def __init__(self, interrupt_at: int | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.interrupt_at = interrupt_at

    def __call__(self, transformation: str, **kw: Any) -> Measurement:
        if self.interrupt_at is not None and len(self.calls) == self.interrupt_at:
            raise KeyboardInterrupt
        self.calls.append({"transformation": transformation, **kw})
        return fake_measurement(transformation, **kw)


GRID: dict[str, Any] = dict(transformation=[GCM, TEA, TEA_REF], payload=[16, 64, 256, 4096],
                            rounds=[8, 16])


# -- expansion and applicability
def test_rounds_dropped_for_aes_without_duplicates() -> None:
    points = sw.expand_grid("cipher", transformation=[GCM, TEA], payload=[16, 64], rounds=[8, 16])
    assert len(points) == 2 + 4
    assert len({point_key(p) for p in points}) == len(points)
    for p in points:
        assert ("rounds" in p) == (p["transformation"] == TEA)
    # grid order: the cartesian product's order, first parameter slowest
    assert [p["transformation"] for p in points] == [GCM, GCM, TEA, TEA, TEA, TEA]


def test_iv_len_only_for_gcm_and_names_canonical() -> None:
    points = sw.expand_grid("cipher", transformation=["aes/gcm/nopadding", "AES/CTR/NoPadding"],
                            iv_len=[12, 16])
    assert points == [{"transformation": GCM, "iv_len": 12}, {"transformation": GCM, "iv_len": 16},
                      {"transformation": "AES/CTR/NoPadding"}]


def test_key_bits_a_family_rejects_is_covered_by_another_value() -> None:
    points = sw.expand_grid("cipher", transformation=[GCM, TEA, "DES/ECB/NoPadding"],
                            key_bits=[64, 128, 256])
    assert [(p["transformation"], p.get("key_bits")) for p in points] == [
        (GCM, 128), (GCM, 256), (TEA, 128), ("DES/ECB/NoPadding", 64)]


def test_value_that_applies_nowhere_is_an_error() -> None:
    with pytest.raises(ValueError, match="rounds=8 applies to none"):
        sw.expand_grid("cipher", transformation=[GCM], rounds=[8])


def test_unknown_parameter_and_missing_subject() -> None:
    with pytest.raises(TypeError, match="unknown cipher parameter"):
        sw.expand_grid("cipher", transformation=[GCM], n_keys=[1, 2])
    with pytest.raises(TypeError, match="needs transformation="):
        pcb.sweep("cipher", payload=[16])
    with pytest.raises(ValueError, match="target must be"):
        pcb.sweep("nonsense", transformation=[GCM])  # type: ignore[arg-type]


def test_store_rules() -> None:
    points = sw.expand_grid("store", workload=["put", "commit", "open_cold"], encrypted=[True, False],
                            cache=[False, True], batch=[1, 10], n_keys=[10, 20])
    for p in points:
        if not p["encrypted"]:
            assert "cache" not in p
        assert ("batch" in p) == (p["workload"] == "commit")
        assert ("n_keys" in p) == (p["workload"] != "open_cold")
    # put: 2 caches x 2 sizes + plain 2 sizes; commit: (2 + 1) x 2 batches x 2 sizes; cold: 2 + 1
    assert len(points) == 6 + 12 + 3
    assert len({point_key(p) for p in points}) == len(points)


def test_invalid_point_fails_before_running(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeMeasure()
    monkeypatch.setattr(sw, "measure", fake)
    with pytest.raises(ValueError, match="1 of 2 points are invalid"):
        pcb.sweep("cipher", transformation=["AES/CBC/NoPadding"], payload=[100, 160], **TINY)
    assert fake.calls == []
    with pytest.warns(UserWarning, match="skipping 1 invalid point"):
        r = pcb.sweep("cipher", transformation=["AES/CBC/NoPadding"], payload=[100, 160],
                      skip_invalid=True, **TINY)
    assert r.params == [{"transformation": "AES/CBC/NoPadding", "payload": 160}]


# -- real measurements (tiny)
def test_cipher_sweep_measures_each_point_once() -> None:
    r = pcb.sweep("cipher", transformation=[GCM, TEA], payload=[16, 4096], rounds=[8, 16],
                  seed=1, **TINY)
    assert isinstance(r, Results) and r.complete and len(r) == 6
    assert r.target == "cipher" and r.seed == 1
    assert r.options == {"min_time": 0.001, "repeats": 2, "warmup": 0}
    for p, m in r.items():
        assert m.transformation == p["transformation"] and m.payload == p["payload"]
        assert m.rounds == p.get("rounds")  # None for AES: the parameter was dropped
        assert len(m.samples) == 2
    assert list(r) == r.measurements and r.swept == ["transformation", "payload", "rounds"]


def test_store_sweep_and_hw_aes_off() -> None:
    r = pcb.sweep("store", workload=["put", "get"], encrypted=[True, False], cache=[False, True],
                  n_keys=20, **TINY)
    assert len(r) == 6
    plain = r.select(encrypted=False)
    assert len(plain) == 2 and all("cache" not in p for p in plain.params)
    got = r.one(workload="get", encrypted=True, cache=True)
    assert isinstance(got, StoreMeasurement) and got.workload == "get" and got.params["cache"] is True
    off = pcb.sweep("cipher", transformation=["AES/CTR/NoPadding"], payload=256,
                    hw_aes=[True, False], **TINY)
    assert [m.hw_aes for m in off] == [True, False]


def test_progress_bar_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    pcb.sweep("cipher", transformation=[GCM], payload=[16, 64], **{**TINY, "progress": True})
    err = capsys.readouterr().err
    assert "ETA" in err and "2/2" in err


# -- order, interruption, resume (fake measure)
def test_shuffled_order_is_deterministic_with_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    def order(seed: int) -> list[tuple[Any, ...]]:
        fake = FakeMeasure()
        monkeypatch.setattr(sw, "measure", fake)
        r = pcb.sweep("cipher", seed=seed, **GRID, **TINY)
        assert [point_key(p) for p in r.params] == [point_key(p) for p in sw.expand_grid("cipher", **GRID)]
        return [point_key({k: v for k, v in c.items() if k not in TINY}) for c in fake.calls]

    grid_order = [point_key(p) for p in sw.expand_grid("cipher", **GRID)]
    assert order(7) == order(7)
    assert sorted(order(7)) == sorted(grid_order)
    assert order(7) != grid_order and order(7) != order(8)


def test_keyboard_interrupt_keeps_finished_points(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setattr(sw, "measure", FakeMeasure(interrupt_at=3))
    out = tmp_path / "r.json"
    r = pcb.sweep("cipher", seed=0, out=out, **GRID, **TINY)
    assert len(r) == 3 and not r.complete
    saved = load_results(out)
    assert len(saved) == 3 and not saved.complete
    assert [point_key(p) for p in saved.params] == [point_key(p) for p in r.params]


def test_resume_skips_points_already_measured(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    out = tmp_path / "r.json"
    total = len(sw.expand_grid("cipher", **GRID))
    monkeypatch.setattr(sw, "measure", FakeMeasure(interrupt_at=5))
    first = pcb.sweep("cipher", seed=0, out=out, **GRID, **TINY)
    fake = FakeMeasure()
    monkeypatch.setattr(sw, "measure", fake)
    r = pcb.sweep("cipher", seed=0, out=out, resume=True, **GRID, **TINY)
    assert len(fake.calls) == total - 5
    assert r.complete and len(r) == total
    done_before = {point_key(p) for p in first.params}
    remeasured = {point_key({k: v for k, v in c.items() if k not in TINY}) for c in fake.calls}
    assert not done_before & remeasured
    assert load_results(out).complete and len(load_results(out)) == total
    # resume=path reads that file and saves into it; nothing left to do
    fake2 = FakeMeasure()
    monkeypatch.setattr(sw, "measure", fake2)
    again = pcb.sweep("cipher", resume=out, **GRID, **TINY)
    assert fake2.calls == [] and len(again) == total


def test_resume_missing_file_starts_fresh_and_refuses_other_machine(
        monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setattr(sw, "measure", FakeMeasure())
    out = tmp_path / "new.json"
    r = pcb.sweep("cipher", out=out, resume=True, transformation=[GCM], payload=[16], **TINY)
    assert len(r) == 1 and out.exists()
    doc = json.loads(out.read_text())
    doc["machine"]["cpu_model"] = "Some Other CPU"
    out.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="another machine"):
        pcb.sweep("cipher", out=out, resume=True, transformation=[GCM], payload=[16], **TINY)
    with pytest.raises(ValueError, match="resume=True resumes into out="):
        pcb.sweep("cipher", resume=True, transformation=[GCM], payload=[16], **TINY)
    with pytest.raises(ValueError, match="not store"):
        pcb.sweep("store", resume=out, workload=["get"], n_keys=10, **TINY)

"""pycipherbench.sweep: grid expansion, applicability rules, run order, Ctrl-C and resume.

Tiny settings everywhere; no timing assertions. Order, interruption and resume
use fake kernels (in place of _core.Kernel) so they are exact and instant.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import Any

import pytest

import pycipherbench as pcb
from pycipherbench import Measurement, Results, load_results
from pycipherbench._params import point_key
from pycipherbench.store import StoreMeasurement

sw = importlib.import_module("pycipherbench.sweep")  # the attribute pcb.sweep is the function

TINY: dict[str, Any] = dict(min_time=0.001, repeats=2, warmup=0, progress=False)
GCM, TEA, TEA_REF = "AES/GCM/NoPadding", "TEA/ECB/NoPadding", "TEA-ref/ECB/NoPadding"


class FakeKernels:
    """Stands in for _core.Kernel: records every instance made (one to calibrate, then one
    per round) and every timed sample as its point's key, in the order the rounds take them;
    raises KeyboardInterrupt on timed sample number `interrupt_at` (0-based). A timed
    sample reports 1000 ns for the 10 operations calibrate() asks for."""

    def __init__(self, interrupt_at: int | None = None) -> None:
        self.samples: list[tuple[Any, ...]] = []
        self.made: list[dict[str, Any]] = []
        self.interrupt_at = interrupt_at

    def __call__(self, transformation: str, **kw: Any) -> Any:
        point = {"transformation": transformation, **{k: v for k, v in kw.items() if v is not None}}
        point = {k: v for k, v in point.items() if not (k in ("op", "scope") and v in ("enc", "message"))}
        self.made.append(point)
        fakes = self

        class Kernel:
            info = {"transformation": transformation, "op": kw.get("op", "enc"),
                    "scope": kw.get("scope", "message"), "payload": kw.get("payload", 64),
                    "key_bits": kw.get("key_bits") or 128, "rounds": kw.get("rounds"),
                    "iv_len": kw.get("iv_len"), "impl": None}

            def calibrate(self, min_time: float, warmup: float = -1.0) -> int:
                return 10

            def sample(self, iterations: int) -> tuple[int, int, int, int, int]:
                if iterations < 10:  # a new instance's warm-up, not a timed sample
                    return 100, 0, 100, 0, 100
                if fakes.interrupt_at is not None and len(fakes.samples) == fakes.interrupt_at:
                    raise KeyboardInterrupt
                fakes.samples.append(point_key(point))
                return 1000, 0, 1000, 0, 1000

            def close(self) -> None:
                pass

        return Kernel()


@pytest.fixture
def fake_kernels(monkeypatch: pytest.MonkeyPatch) -> Callable[..., FakeKernels]:
    """Installs FakeKernels(...) as _core.Kernel and returns it."""
    def install(interrupt_at: int | None = None) -> FakeKernels:
        fake = FakeKernels(interrupt_at)
        monkeypatch.setattr(importlib.import_module("pycipherbench._core"), "Kernel", fake)
        return fake
    return install


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


def test_invalid_point_fails_before_running(fake_kernels: Callable[..., FakeKernels]) -> None:
    fake = fake_kernels()
    with pytest.raises(ValueError, match="1 of 2 points are invalid"):
        pcb.sweep("cipher", transformation=["AES/CBC/NoPadding"], payload=[100, 160], **TINY)
    assert fake.made == []
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
    assert r.options == {"min_time": 0.001, "repeats": 2, "warmup": 0, "processes": 1}
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
    assert "ETA" in err and "4/4" in err  # 2 rounds x 2 points


def test_repeats_is_one_number_for_the_whole_sweep() -> None:
    with pytest.raises(ValueError, match="rounds of the whole sweep"):
        pcb.sweep("cipher", transformation=[GCM], payload=[16], repeats=[2, 3], min_time=0.001)


# -- rounds, interruption, resume (fake kernels)
def test_rounds_interleave_points_in_a_fresh_order(fake_kernels: Callable[..., FakeKernels]) -> None:
    grid_order = [point_key(p) for p in sw.expand_grid("cipher", **GRID)]
    n = len(grid_order)

    def order(seed: int) -> list[tuple[Any, ...]]:
        fake = fake_kernels()
        r = pcb.sweep("cipher", seed=seed, **GRID, **{**TINY, "repeats": 3})
        assert [point_key(p) for p in r.params] == grid_order  # results in grid order
        assert all(len(m.samples) == 3 for m in r)
        assert len(fake.made) == n * (1 + 3)  # calibrated once, a new instance every round
        return fake.samples

    a = order(7)
    assert a == order(7)                                    # the seed fixes the order
    rounds = [a[i * n:(i + 1) * n] for i in range(3)]
    assert all(sorted(r) == sorted(grid_order) for r in rounds)  # every point once per round
    assert rounds[0] != rounds[1] and a != order(8)          # a fresh shuffle each round and seed
    assert rounds[0] != grid_order


def test_keyboard_interrupt_keeps_complete_rounds(fake_kernels: Callable[..., FakeKernels],
                                                  tmp_path) -> None:
    n = len(sw.expand_grid("cipher", **GRID))
    fake_kernels(interrupt_at=n + 3)  # in round 2
    out = tmp_path / "r.json"
    r = pcb.sweep("cipher", seed=0, out=out, **GRID, **TINY)
    assert len(r) == n and not r.complete
    assert all(len(m.samples) == 1 for m in r)  # round 1 only: the partial round is dropped
    assert any("interrupted" in w for w in r[0].warnings)
    saved = load_results(out)
    assert len(saved) == n and not saved.complete
    assert [point_key(p) for p in saved.params] == [point_key(p) for p in r.params]
    fake_kernels(interrupt_at=3)  # in round 1: nothing complete
    r = pcb.sweep("cipher", seed=0, out=out, force=True, **GRID, **TINY)
    assert len(r) == 0 and not r.complete


def test_resume_measures_only_missing_or_incomplete_points(
        fake_kernels: Callable[..., FakeKernels], tmp_path) -> None:
    out = tmp_path / "r.json"
    small = dict(GRID, payload=[16, 64])
    first = pcb.sweep("cipher", seed=0, out=out, **small, **TINY)
    assert first.complete
    fake = fake_kernels()
    r = pcb.sweep("cipher", seed=0, out=out, resume=True, **GRID, **TINY)
    total = len(sw.expand_grid("cipher", **GRID))
    assert r.complete and len(r) == total
    done_before = {point_key(p) for p in first.params}
    prepared = {point_key(p) for p in fake.made}
    assert len(prepared) == total - len(first) and not done_before & prepared
    assert load_results(out).complete and len(load_results(out)) == total
    # resume=path reads that file and saves into it; nothing left to do
    fake2 = fake_kernels()
    again = pcb.sweep("cipher", resume=out, **GRID, **TINY)
    assert fake2.made == [] and len(again) == total
    # an interrupted file's points (fewer rounds than asked) are measured again
    part = tmp_path / "part.json"
    fake_kernels(interrupt_at=total + 1)
    pcb.sweep("cipher", seed=0, out=part, **GRID, **TINY)
    fake3 = fake_kernels()
    r = pcb.sweep("cipher", seed=0, out=part, resume=True, **GRID, **TINY)
    assert r.complete and len({point_key(p) for p in fake3.made}) == total
    assert all(len(m.samples) == 2 for m in r)


def test_resume_missing_file_starts_fresh_and_refuses_other_machine(
        monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setattr(importlib.import_module("pycipherbench._core"), "Kernel", FakeKernels())
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

"""pycipherbench.Results: NumPy/pandas/CSV/JSON, compare(), and the Mann-Whitney U test.

Results are built from synthetic samples (no timing), except one tiny real sweep
for the save/load round trip.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from typing import Any

import numpy as np
import pytest

import pycipherbench as pcb
from pycipherbench import Measurement, Results, load_results
from pycipherbench.results import DifferentMachinesError, MannWhitney, mann_whitney_u

GCM, TEA = "AES/GCM/NoPadding", "TEA/ECB/NoPadding"


def synthetic(samples: Any, *, transformation: str = GCM, payload: int = 4096,
              rounds: int | None = None, tsc: bool = True, **kw: Any) -> Measurement:
    s = np.asarray(samples, dtype=np.float64)
    return Measurement(
        transformation=transformation, op="enc", payload=payload, scope="message", key_bits=128,
        rounds=rounds, iv_len=None, hw_aes=kw.pop("hw_aes", True), min_time=0.001,
        repeats=len(s), iterations=100, samples=s, tsc_samples=s * 3.0 if tsc else None, **kw)


def cipher_results(shift: float = 1.0, seed: int = 0) -> Results:
    rng = np.random.default_rng(seed)
    params: list[dict[str, Any]] = [
        {"transformation": GCM, "payload": 16, "hw_aes": True},
        {"transformation": GCM, "payload": 4096, "hw_aes": True},
        {"transformation": TEA, "payload": 16, "rounds": 16, "hw_aes": True},
        {"transformation": TEA, "payload": 4096, "rounds": 16, "hw_aes": False},
    ]
    ms = [synthetic(rng.normal(100.0 * (i + 1), 1.0, 8) * shift, transformation=p["transformation"],
                    payload=p["payload"], rounds=p.get("rounds"), tsc=i != 0)
          for i, p in enumerate(params)]
    return Results("cipher", params, ms, options={"repeats": 8}, grid={"payload": [16, 4096]}, seed=3)


# -- tables
def test_to_numpy_fields_and_missing_values() -> None:
    r = cipher_results()
    arr = r.to_numpy()
    assert arr.dtype.names == ("transformation", "payload", "hw_aes", "rounds", "median", "iqr", "cv",
                               "n_samples", "mb_per_s", "kb_per_ms", "ns_per_op", "cycles_per_byte")
    assert arr.dtype["transformation"].kind == "U" and arr.dtype["payload"] == np.int64
    assert arr.dtype["hw_aes"] == np.bool_ and arr.dtype["n_samples"] == np.int64
    assert list(arr["rounds"]) == [-1, -1, 16, 16]  # MISSING_INT where rounds does not apply
    assert list(arr["transformation"]) == [GCM, GCM, TEA, TEA]
    assert list(arr["hw_aes"]) == [True, True, True, False]
    assert math.isnan(arr["cycles_per_byte"][0]) and arr["cycles_per_byte"][1] > 0
    for i, m in enumerate(r):
        assert arr["median"][i] == m.median and arr["mb_per_s"][i] == pytest.approx(m.mb_per_s)
        assert arr["n_samples"][i] == 8 and arr["ns_per_op"][i] == m.ns_per_op


def test_bool_column_with_missing_values_is_int8() -> None:
    params = [{"workload": "get", "encrypted": True, "cache": True},
              {"workload": "get", "encrypted": False}]
    ms = [synthetic([1.0, 2.0]), synthetic([1.0, 2.0])]
    arr = Results("store", params, ms).to_numpy()
    assert arr.dtype["cache"] == np.int8 and list(arr["cache"]) == [1, -1]
    assert arr.dtype["encrypted"] == np.bool_
    assert {"durable_median", "heap_bytes_per_entry", "disk_bytes_per_entry"} <= set(arr.dtype.names or ())


def test_container_protocol_and_select() -> None:
    r = cipher_results()
    assert len(r) == 4 and list(r) == r.measurements and r[2] is r.measurements[2]
    assert r.param_names == ["transformation", "payload", "hw_aes", "rounds"]
    assert r.swept == ["transformation", "payload", "hw_aes", "rounds"]
    assert len(r.select(transformation=GCM)) == 2
    assert r.one(transformation=TEA, payload=16).rounds == 16
    assert len(r.select(payload=True)) == 0  # True is not the payload 1
    with pytest.raises(LookupError):
        r.one(transformation=GCM)
    assert "4 points" in repr(r) and "payload" in r.table()


def test_to_pandas() -> None:
    pd = pytest.importorskip("pandas")
    df = cipher_results().to_pandas()
    assert isinstance(df, pd.DataFrame) and len(df) == 4
    assert list(df.columns[:4]) == ["transformation", "payload", "hw_aes", "rounds"]
    assert df["rounds"].isna().tolist() == [True, True, False, False]


def test_to_pandas_without_pandas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        cipher_results().to_pandas()


def test_csv_export(tmp_path) -> None:
    path = tmp_path / "r.csv"
    r = cipher_results()
    r.to_csv(path)
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and list(rows[0])[:4] == ["transformation", "payload", "hw_aes", "rounds"]
    assert rows[0]["rounds"] == "" and rows[2]["rounds"] == "16"
    assert rows[0]["cycles_per_byte"] == "" and float(rows[1]["median"]) == r[1].median


# -- files
def test_save_load_round_trip(tmp_path) -> None:
    r = pcb.sweep("cipher", transformation=[GCM, TEA], payload=[16, 64], rounds=[8], seed=5,
                  min_time=0.001, repeats=3, warmup=0, progress=False)
    path = tmp_path / "r.json"
    r.save(path)
    back = load_results(path)
    assert back.target == "cipher" and back.seed == 5 and back.complete
    assert back.machine == pcb.machine() == r.machine
    assert back.params == r.params and back.options == r.options and back.grid == r.grid
    for a, b in zip(r, back):
        np.testing.assert_array_equal(a.samples, b.samples)
        assert (a.tsc_samples is None) == (b.tsc_samples is None)
        if a.tsc_samples is not None:
            np.testing.assert_array_equal(a.tsc_samples, b.tsc_samples)
        assert a.to_dict() == b.to_dict()
    np.testing.assert_array_equal(r.to_numpy(), back.to_numpy())
    doc = json.loads(path.read_text())
    assert doc["format"] == "pycipherbench-results" and len(doc["points"][0]["measurement"]["samples"]) == 3


def test_extra_survives_round_trip(tmp_path) -> None:
    m = synthetic([5.0, 6.0], extra={"stages": {"siv": 1, "total": 3}, "durable_median": 9.0})
    r = Results("store", [{"workload": "apply"}], [m], complete=False)
    r.save(tmp_path / "s.json")
    back = load_results(tmp_path / "s.json")
    assert back[0].extra == m.extra and not back.complete
    assert back.to_numpy()["durable_median"][0] == 9.0


def test_load_speed_json_and_reject_other_files(tmp_path) -> None:
    ms = [synthetic([1.0, 2.0]), synthetic([3.0, 4.0], transformation=TEA)]
    doc = {"machine": pcb.machine(), "payload": 4096, "hw_aes": True, "results": [m.to_dict() for m in ms]}
    (tmp_path / "speed.json").write_text(json.dumps(doc))
    r = load_results(tmp_path / "speed.json")
    assert r.params[1] == {"transformation": TEA, "op": "enc", "payload": 4096, "hw_aes": True}
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(ValueError, match="not a pycipherbench results file"):
        load_results(tmp_path / "x.json")


# -- Mann-Whitney U
def test_mann_whitney_exact_reference_values() -> None:
    # SciPy's documentation example (Conover): U = 17, exact two-sided p = 14/126 = 0.1111...
    males, females = [19, 22, 16, 29, 24], [20, 11, 17, 12]
    res = mann_whitney_u(males, females)
    assert isinstance(res, MannWhitney) and (res.u, res.method) == (17.0, "exact")
    assert res.p_value == pytest.approx(1 / 9)
    # R's ?wilcox.test example (Hollander & Wolfe, permeability): W = 35, one-sided p = 0.1272
    x = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46]
    y = [1.15, 0.88, 0.90, 0.74, 1.21]
    res = mann_whitney_u(x, y)
    assert res.u == 35 and res.method == "exact"
    assert res.p_value == pytest.approx(2 * 0.1272, abs=2e-4)
    # The smallest exact p with 4 vs 4 samples: 2 / C(8, 4) = 2/70.
    assert mann_whitney_u([1, 2, 3, 4], [5, 6, 7, 8]).p_value == pytest.approx(2 / 70)


def test_mann_whitney_normal_approximation_with_ties_by_hand() -> None:
    # x = 1 2 2 3, y = 3 4 4 5. Mid-ranks: 1 -> 1; 2,2 -> 2.5; 3,3 -> 4.5; 4,4 -> 6.5; 5 -> 8.
    # R_x = 1 + 2.5 + 2.5 + 4.5 = 10.5, U_x = 10.5 - 4*5/2 = 0.5, mean 8.
    # Three tie pairs: sum(t^3 - t) = 18; var = 16/12 * (9 - 18/56) = 11.5714...
    # z = (|0.5 - 8| - 0.5) / sqrt(var) = 2.0578; p = 2 (1 - Phi(z)) = 0.03961 (R: W = 0.5, p = 0.03961)
    res = mann_whitney_u([1, 2, 2, 3], [3, 4, 4, 5])
    assert res.u == 0.5 and res.method == "normal"
    var = 16 / 12 * (9 - 18 / 56)
    assert res.p_value == pytest.approx(math.erfc(7 / math.sqrt(var) / math.sqrt(2)))
    assert res.p_value == pytest.approx(0.03961, abs=1e-5)


def test_mann_whitney_properties() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.normal(0, 1, 60), rng.normal(0.5, 1, 60)  # n1*n2 > 2500: normal approximation
    ab, ba = mann_whitney_u(a, b), mann_whitney_u(b, a)
    assert ab.method == "normal" and ab.p_value == pytest.approx(ba.p_value)
    assert ab.u + ba.u == 60 * 60
    assert mann_whitney_u([3, 3, 3], [3, 3]).p_value == 1.0
    # SciPy documents 0.11134688653314041 for the Conover example with its asymptotic method.
    import pycipherbench.results as results_mod

    old = results_mod.EXACT_LIMIT
    try:
        results_mod.EXACT_LIMIT = 0
        assert mann_whitney_u([19, 22, 16, 29, 24], [20, 11, 17, 12]).p_value == pytest.approx(
            0.11134688653314041, rel=1e-9)
    finally:
        results_mod.EXACT_LIMIT = old
    with pytest.raises(ValueError):
        mann_whitney_u([], [1.0])


# -- compare
def test_compare_verdicts_on_synthetic_samples() -> None:
    base = cipher_results()
    faster = cipher_results(shift=0.5, seed=1)  # half the time: twice as fast
    cmp = faster.compare(base)
    assert len(cmp) == 4 and {c.verdict for c in cmp} == {"faster"}
    assert all(c.speedup == pytest.approx(2.0, rel=0.05) and c.p_value < 0.001 for c in cmp)
    assert {c.verdict for c in base.compare(faster)} == {"slower"}
    # The same distribution: each sample a hair above one of the baseline's (interleaved).
    interleaved = Results("cipher", base.params, [synthetic(m.samples + 1e-6) for m in base])
    cmp_same = interleaved.compare(base)
    assert {c.verdict for c in cmp_same} == {"no significant difference"}
    assert all(c.p_value > 0.5 for c in cmp_same)
    assert {c.p_value for c in base.compare(base)} == {1.0}
    arr = cmp.to_numpy()
    assert arr["verdict"][0] == "faster" and arr["speedup"][0] == pytest.approx(2.0, rel=0.05)
    assert "faster" in cmp.table() and "Mann-Whitney" in str(cmp)


def test_compare_refuses_different_machines() -> None:
    base = cipher_results()
    other = cipher_results(shift=0.5)
    other.machine = {**other.machine, "cpu_model": "Another CPU", "openssl_version": "OpenSSL 3.9"}
    with pytest.raises(DifferentMachinesError, match="different machines.*allow_different_machines"):
        other.compare(base)
    cmp = other.compare(base, allow_different_machines=True)
    assert len(cmp) == 4 and any("cpu_model" in d for d in cmp.machine_differences)
    assert "WARNING: different machines" in cmp.table()


def test_compare_matching_ignore_and_unmatched() -> None:
    base = cipher_results()
    off = Results("cipher", [{**p, "hw_aes": False} for p in base.params], base.measurements)
    assert len(off.compare(base)) == 1  # only the point that was hw_aes=False in both
    cmp = off.compare(base, ignore=["hw_aes"])
    assert len(cmp) == 4 and "hw_aes" not in cmp.param_names
    partial = base.select(transformation=GCM).compare(base)
    assert len(partial) == 2 and len(partial.unmatched_baseline) == 2 and partial.unmatched == []

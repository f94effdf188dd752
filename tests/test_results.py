"""pycipherbench.Results: the container, NumPy/pandas/CSV export and JSON files.

Results are built from synthetic samples (no timing), except one tiny real sweep
for the save/load round trip. Comparisons: test_compare.py; the statistics: test_stats.py.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from synthetic import GCM, TEA, cipher, cipher_results, store

import pycipherbench as pcb
from pycipherbench import Measurement, Results, load_results
from pycipherbench.store import StoreMeasurement

DATA = Path(__file__).resolve().parent / "data"


# -- tables
def test_to_numpy_fields_and_missing_values() -> None:
    r = cipher_results()
    arr = r.to_numpy()
    assert arr.dtype.names == ("transformation", "payload", "hw_aes", "rounds", "median", "ci_low",
                               "ci_high", "iqr", "cv", "n_samples", "mb_per_s", "kb_per_ms",
                               "ns_per_op", "cycles_per_byte")
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
    ms = [store([1.0, 2.0]), store([1.0, 2.0], encrypted=False)]
    arr = Results("store", params, ms).to_numpy()
    assert arr.dtype["cache"] == np.int8 and list(arr["cache"]) == [1, -1]
    assert arr.dtype["encrypted"] == np.bool_
    assert {"durable_median", "heap_bytes_per_entry", "disk_bytes_per_entry"} <= set(arr.dtype.names or ())


def test_store_columns_and_table() -> None:
    params = [{"workload": "get"}, {"workload": "apply"}, {"workload": "contains"}]
    ms = [store([5.0, 6.0], stages={"siv": 1.0, "total": 3.0}),
          store([7.0, 8.0], workload="apply", durable=[9.0, 10.0, 11.0], entries=4, heap_bytes=100),
          store([1.0, 2.0], workload="contains", payload=0)]
    r = Results("store", params, ms)
    arr = r.to_numpy()
    assert arr["durable_median"][1] == 10.0 and math.isnan(arr["durable_median"][0])
    assert arr["heap_bytes_per_entry"][1] == 25.0
    assert math.isnan(arr["mb_per_s"][2]) and arr["mb_per_s"][0] > 0  # no bytes: no throughput
    lines = r.table().splitlines()
    assert lines[0].split()[-1] == "durable" and "MB/s" not in lines[0]
    assert lines[2].split()[-1] == "-" and lines[3].split()[-2:] == ["10", "ns"]
    assert "durable" not in r.select(workload="get").table()


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


def test_store_results_round_trip(tmp_path) -> None:
    m = store([5.0, 6.0], workload="apply", stages={"siv": 1.0, "total": 3.0}, durable=[8.0, 9.0, 10.0])
    r = Results("store", [{"workload": "apply"}], [m], complete=False)
    r.save(tmp_path / "s.json")
    back = load_results(tmp_path / "s.json")
    assert isinstance(back[0], StoreMeasurement) and not back.complete
    assert back[0].to_dict() == m.to_dict() and back[0].extra == m.extra
    assert back.to_numpy()["durable_median"][0] == 9.0
    point = json.loads((tmp_path / "s.json").read_text())["points"][0]["measurement"]
    assert point["workload"] == "apply" and not {"transformation", "scope", "key_bits"} & set(point)


def test_load_version_1_store_results() -> None:
    """A store sweep saved by pycipherbench before StoreMeasurement: cipher fields made up,
    the store's results in "extra"."""
    path = DATA / "results_v1_store.json"
    doc = json.loads(path.read_text())
    assert doc["version"] == 1
    r = load_results(path)
    assert r.target == "store" and len(r) == len(doc["points"]) == 4
    for p, m, point in zip(r.params, r, doc["points"]):
        old = point["measurement"]
        assert isinstance(m, StoreMeasurement) and not isinstance(m, Measurement)
        assert m.workload == p["workload"] == old["op"] and m.params == old["extra"]["params"]
        assert m.extra == old["extra"]  # the old dict, rebuilt from the typed fields
        np.testing.assert_array_equal(m.samples, old["samples"])
        assert m.median == old["median"] and m.heap_bytes_per_entry == old["extra"]["heap_bytes_per_entry"]
        assert (m.stages is not None) == (p["workload"] == "get")
        assert (m.durable_median is None) == (p["workload"] != "apply")
    assert r.to_numpy()["durable_median"][2] == doc["points"][2]["measurement"]["extra"]["durable_median"]


def test_load_speed_json_and_reject_other_files(tmp_path) -> None:
    ms = [cipher([1.0, 2.0]), cipher([3.0, 4.0], transformation=TEA)]
    doc = {"machine": pcb.machine(), "payload": 4096, "hw_aes": True, "results": [m.to_dict() for m in ms]}
    (tmp_path / "speed.json").write_text(json.dumps(doc))
    r = load_results(tmp_path / "speed.json")
    assert r.params[1] == {"transformation": TEA, "op": "enc", "payload": 4096, "hw_aes": True}
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(ValueError, match="not a pycipherbench results file"):
        load_results(tmp_path / "x.json")
    newer = {**cipher_results().to_dict(), "version": 99}
    (tmp_path / "newer.json").write_text(json.dumps(newer))
    with pytest.raises(ValueError, match="version 99 is newer"):
        load_results(tmp_path / "newer.json")



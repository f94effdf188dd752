"""An app's preferences file replayed through every design, and the migration workloads
(issue 29). No timing is asserted: only what the stores hold and what the files say."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from conftest import child_env

from pycipherbench import _core, engines, replay, store
from pycipherbench.designs import DESIGNS

SAMPLE = pathlib.Path(replay.SAMPLE_PREFS)

#: One entry of every preference type, some at the edges of their range.
EVERY_TYPE = {
    "a_string": ("string", "héllo <&> \"quoted\"\nline"),
    "empty_string": ("string", ""),
    "a_json_blob": ("string", '{"k": [' + ",".join(str(i) for i in range(400)) + "]}"),
    "an_int": ("int", -2**31),
    "a_long": ("long", 5),  # fits 32 bits, still a long
    "big_long": ("long", 2**62 + 7),
    "a_float": ("float", 1.5),
    "a_bool": ("bool", False),
    "a_set": ("string_set", frozenset({"x", "yy", "zzz"})),
    "empty_set": ("string_set", frozenset()),
}


def _put(e, kind, name, value):
    {"string": e.put_string, "int": e.put_int, "long": e.put_long, "float": e.put_float,
     "bool": e.put_bool, "string_set": e.put_string_set}[kind](name, value)


@pytest.fixture
def every_type_file(tmp_path):
    path = tmp_path / "app_prefs.xml"
    with store.open(path, encrypted=False) as s, s.edit() as e:
        for name, (kind, value) in EVERY_TYPE.items():
            _put(e, kind, name, value)
    os.remove(str(path) + "-lock")
    return path


def _designs():
    return [d for d in DESIGNS if DESIGNS[d][0] != "sqlcipher" or engines.cipher_version()]


def _read_back(design, where, w):
    h = replay._open(design, where, w)
    try:
        return {n: h.get(n, w.kinds[n]) for n in w.entries}
    finally:
        h.close()


def _same(kind, a, b):
    if kind == "string_set":
        return set(a) == set(b)
    return a == b and type(a) is type(b) if kind != "long" else int(a) == int(b)


def test_read_prefs_gives_every_type(every_type_file):
    p = replay.read_prefs(every_type_file)
    assert p.source == "plain"
    got = {n: (t, v) for n, t, v in p.entries}
    assert set(got) == set(EVERY_TYPE)
    for name, (kind, value) in EVERY_TYPE.items():
        assert got[name][0] == kind, name
        assert _same(kind, got[name][1], value), name
    assert isinstance(got["a_long"][1], engines.Long)
    assert "10 entries" in p.summary()


@pytest.mark.parametrize("keep", [True, False])
def test_round_trip_of_every_type_in_every_design(every_type_file, tmp_path, keep):
    """Every design's store, built from the replayed file, gives back every entry with
    its type: the file's own values (keep_values) or random ones of the same size."""
    p = replay.read_prefs(every_type_file)
    w = replay.make_workload(p, keep_values=keep, seed=1)
    assert set(w.entries) == set(EVERY_TYPE) and w.kinds == {n: k for n, (k, _) in EVERY_TYPE.items()}
    for name, (kind, value) in EVERY_TYPE.items():
        assert replay._value_size(kind, w.entries[name]) == replay._value_size(kind, value)
        if kind == "string_set":
            assert len(w.entries[name]) == len(value)
        if keep:
            assert _same(kind, w.entries[name], value)
    built = replay.build_stores(tmp_path / "stores", w, _designs())
    for design, where in built.items():
        got = _read_back(design, where, w)
        for name, value in w.entries.items():
            kind = w.kinds[name]
            if kind == "float":
                assert got[name] == pytest.approx(value, rel=1e-6), (design, name)
            elif kind == "string_set":
                assert set(got[name]) == set(value), (design, name)
            else:
                assert got[name] == value, (design, name)
        if DESIGNS[design][0] == "esp":  # the types themselves, where the store keeps them
            with store.open(os.path.join(where, "prefs.xml"),
                            **({} if DESIGNS[design][1].get("encrypted", True) is False
                               else {"master_key_file": os.path.join(where, "prefs.key")}),
                            encrypted=DESIGNS[design][1].get("encrypted", True)) as s:
                assert s.get_long("a_long") == int(w.entries["a_long"])
                assert s.get_int("a_long") is None  # stored as a long, not an int


@pytest.mark.parametrize("design", [d for d in DESIGNS if d != "plain"])
def test_migration_moves_exactly_the_old_entries(every_type_file, tmp_path, design):
    if DESIGNS[design][0] == "sqlcipher" and not engines.cipher_version():
        pytest.skip("sqlcipher3 not installed")
    w = replay.make_workload(replay.read_prefs(every_type_file), keep_values=True,
                             sensitive="string|set")
    where = str(tmp_path / "app")
    os.mkdir(where)
    replay._write_old(w, where, design)
    old = os.path.join(where, replay._old_name(design) + ".xml")
    assert os.path.exists(old)
    replay.migrate(design, where, w).close()
    got = _read_back(design, where, w)
    assert {n for n, v in got.items() if v is not None} == set(w.entries)
    for name, value in w.entries.items():
        assert _same(w.kinds[name], got[name], value) or w.kinds[name] == "float", name
    if DESIGNS[design][0] == "tiered":  # the plain file stays, for the non-sensitive names only
        with store.open(old, encrypted=False) as s:
            assert set(s.all()) == set(w.entries) - w.sensitive
        assert w.sensitive and w.sensitive < set(w.entries)
    else:
        assert not os.path.exists(old) and not os.path.exists(old + "-lock")


@pytest.mark.parametrize("text, line", [
    (b"<?xml version='1.0' encoding='utf-8' standalone='yes' ?>\n<map>\n"
     b"    <int name=\"a\" value=\"1\" />\n    <string name=\"b\">trunc", 4),
    (b"<?xml version='1.0' encoding='utf-8'?>\n<resources>\n  <string name=\"app\">x</string>\n"
     b"</resources>\n", 2),
    (b"", 1),
])
def test_bad_file_is_refused_naming_the_line(tmp_path, text, line):
    path = tmp_path / "bad.xml"
    path.write_bytes(text)
    with pytest.raises(store.StoreFormatError, match=rf"bad\.xml: .*line {line}\b"):
        replay.read_prefs(path)
    with pytest.raises(store.StoreFormatError, match=rf"line {line}\b"):
        replay.replay(path)
    r = subprocess.run([sys.executable, "-c", "import sys; from pycipherbench.cli import main; "
                        "sys.exit(main(sys.argv[1:]))", "store", "--from", str(path)],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path, env=child_env())
    assert r.returncode == 2 and f"line {line}" in r.stderr and "Traceback" not in r.stderr


def test_anonymize_leaves_no_original_name_in_any_file(tmp_path, monkeypatch):
    p = replay.read_prefs(SAMPLE)
    originals = [n for n, _t, _v in p.entries]
    with pytest.warns(UserWarning, match="never_set_flag"):  # a read of a name never set
        w = replay.make_workload(p, anonymize=True, reads=["auth_token", "theme", "never_set_flag"],
                                 seed=3)
    assert not set(originals) & set(w.entries)
    assert sorted(map(len, w.entries)) == sorted(map(len, originals))
    assert len(w.sensitive) == sum(1 for n in originals if replay.re.search(
        replay.DEFAULT_SENSITIVE, n))
    assert "never_set_flag" not in w.reads and w.missing_reads == 1
    built = replay.build_stores(tmp_path / "stores", w, _designs())
    # the replay itself, its scratch directories kept to be read
    monkeypatch.setattr(replay._ReplayPoint, "close", lambda self: None)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    result = replay.replay(SAMPLE, anonymize=True, designs=_designs(), repeats=1, min_time=0.0,
                           directory=run_dir, reads=["auth_token", "theme"], seed=4)
    assert {m.workload for m in result.records} == set(replay.PHASES)
    files = [f for root in (tmp_path / "stores", run_dir) for f in root.rglob("*") if f.is_file()]
    assert len(files) > len(built)
    blob = b"\n".join(f.read_bytes() for f in files)
    import json

    blob += json.dumps(result.to_dict()).encode() + result.format(900).encode()
    leaked = [n for n in originals if n.encode() in blob]
    assert not leaked


def test_esp_file_with_and_without_its_key(tmp_path):
    path, key = tmp_path / "secret_prefs.xml", tmp_path / "master.key"
    with store.open(path, master_key_file=key) as s, s.edit() as e:
        for name, (kind, value) in EVERY_TYPE.items():
            _put(e, kind, name, value)
    opened = replay.read_prefs(path, master_key_file=key)
    assert opened.source == "esp"
    assert {n: v for n, _t, v in opened.entries}["a_json_blob"] == EVERY_TYPE["a_json_blob"][1]
    sized = replay.read_prefs(path)
    assert sized.source == "esp-sizes" and len(sized.entries) == len(EVERY_TYPE)
    assert [n for n, _t, _v in sized.entries] == [None] * len(EVERY_TYPE)
    assert sorted(v[0] for _n, _t, v in sized.entries) == sorted(len(n) for n in EVERY_TYPE)
    lens = {v[1] for _n, t, v in sized.entries if t == "string"}
    assert {t for _n, t, _v in sized.entries} >= {"string", "bool", "int", "long", "string_set"}
    assert len(EVERY_TYPE["a_json_blob"][1].encode()) in lens
    w = replay.make_workload(sized)
    assert w.anonymized and not set(EVERY_TYPE) & set(w.entries)
    with pytest.raises(ValueError, match="sizes only"):
        replay.make_workload(sized, keep_values=True)


def test_bad_arguments_are_refused(every_type_file):
    p = replay.read_prefs(every_type_file)
    with pytest.raises(ValueError, match="regular expression"):
        replay.make_workload(p, sensitive="(")
    with pytest.raises(ValueError, match="did you mean 'esp'"):
        replay.replay(every_type_file, designs=["epp"])
    with pytest.raises(ValueError, match="plain SharedPreferences file"):
        replay.read_prefs(every_type_file, master_key_file="k")
    assert replay.parse_reads(" a, b ,") == ["a", "b"] and replay.parse_reads("all") == "all"
    assert store.replay is replay.replay


def test_prefs_parse_is_the_stores_parser():
    entries = _core.prefs_parse(SAMPLE.read_bytes())
    assert 40 <= len(entries) <= 200
    kinds = {t for _n, t, _v in entries}
    assert kinds == {"string", "string_set", "int", "long", "float", "bool"}
    assert sum(1 for _n, t, v in entries if t == "string" and len(v) >= 1024) >= 2


@pytest.mark.parametrize("workload", ["migrate", "migrate_keys"])
def test_migration_workloads_run_and_clean_up(tmp_path, workload):
    m = store.bench(workload, n_keys=30, min_time=0.001, repeats=2, directory=tmp_path)
    assert m.workload == workload and m.entries == 30 and m.payload > 0
    assert not os.listdir(tmp_path)  # every file of the benchmark removed
    with pytest.raises(ValueError, match="encrypted"):
        store.bench(workload, encrypted=False)
    with pytest.raises(ValueError, match="did you mean 'migrate'"):
        store.bench("migrat")


def test_migrations_are_a_sweep_dimension(tmp_path):
    import pycipherbench as pcb

    r = pcb.sweep("store", workload=["rotate", "migrate", "migrate_keys"], n_keys=20,
                  repeats=2, min_time=0.001, directory=tmp_path)
    assert {m.workload for m in r.measurements} == {"rotate", "migrate", "migrate_keys"}
    with pytest.raises(ValueError, match="passphrase"):
        store.bench("migrate_keys", passphrase=True)


def test_verdict_follows_the_data():
    """The verdict's design and words come from the records: a design that gives up less
    wins a tie the paired ratios cannot break; one that misses the budget is never named."""
    import numpy as np

    from pycipherbench import designs

    def rec(design, phase, values):
        return designs.DesignMeasurement(
            design=design, workload=phase, params={}, payload=0, hw_aes=True, min_time=0.0,
            repeats=8, iterations=1, samples=np.asarray(values, dtype=float), tsc_samples=None,
            durable_samples=np.asarray(values, dtype=float), machine={})

    ms = 1e6
    noise = [1.0, 1.1, 0.9, 1.05, 0.95, 1.2, 0.8, 1.0]
    recs = [rec("plain", p, [0.1 * ms * x for x in noise]) for p in ("first_launch", "cold_start")]
    recs += [rec("esp", "first_launch", [20 * ms] * 8), rec("esp", "cold_start", [1 * ms * x for x in noise]),
             rec("esp_cache", "first_launch", [20 * ms] * 8),
             rec("esp_cache", "cold_start", [0.98 * ms * x for x in reversed(noise)]),
             rec("sqlcipher", "first_launch", [200 * ms] * 8), rec("sqlcipher", "cold_start", [150 * ms] * 8),
             rec("mmkv_model", "first_launch", [5 * ms] * 8), rec("mmkv_model", "cold_start", [0.2 * ms] * 8)]
    assert designs.replay_choice(recs, 900) == "esp"  # tied with esp_cache, gives up less
    v = designs.replay_verdict(recs, 900)
    assert v.startswith("esp fits 900 ms") and "esp_cache by the median" in v
    assert designs.replay_choice(recs, 100) == "esp"  # sqlcipher misses 100 ms
    assert "sqlcipher" not in designs.replay_verdict(recs, 100).split("(esp, ")[0]
    assert designs.replay_choice(recs, 10) == "mmkv_model"  # no authenticated design fits
    assert "gives up: " in designs.replay_verdict(recs, 10)
    assert designs.replay_choice(recs, 0.01) is None
    assert designs.replay_verdict(recs, 0.01).startswith("No encrypted design fits 0.01 ms")


def test_a_read_name_not_in_the_file_is_said_with_the_nearest():
    """An app may read names it never set; a typo reads the same way, so the replay says
    which names are not in the file and the nearest one that is."""
    p = replay.read_prefs(SAMPLE)
    with pytest.warns(UserWarning, match=r"'launch_cnt'.*nearest in the file: 'launch_count'"):
        w = replay.make_workload(p, reads=["launch_cnt", "app_version_code"])
    assert w.missing_reads == 1 and len(w.reads) == 2


def test_replay_flags_without_from_are_refused_even_at_their_default_values(tmp_path):
    """`store --reads all` without --from: refused (it used to run the whole store table)."""
    r = subprocess.run([sys.executable, "-c", "import sys; from pycipherbench.cli import main; "
                        "sys.exit(main(sys.argv[1:]))", "store", "--reads", "all"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path, env=child_env())
    assert r.returncode == 2 and "--reads" in r.stderr and "--from" in r.stderr, r.stderr

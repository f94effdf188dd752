"""Store engines and designs (issue 19): SQLCipher's encryption at rest, ESP's value
encoding, the tiered/lazy designs, the start-up scenario and its report."""

from __future__ import annotations

import base64
import os
import re
import sys
import zlib

import numpy as np
import pytest

import pycipherbench as pcb
from pycipherbench import designs, engines, store

sqlcipher3 = pytest.importorskip("sqlcipher3", reason='pip install "pycipherbench[peers]"')

NAMES = {f"secret_name_{i:03d}_Zq": f"secret_value_{i:03d}_Xk" for i in range(50)}


def _files(directory, skip=()):
    out = b""
    for name in sorted(os.listdir(directory)):
        if name not in skip:
            with open(os.path.join(directory, name), "rb") as f:
                out += f.read()
    return out


def _filled(tmp_path, engine="sqlcipher", **kw):
    h = engines.open_engine(engine, str(tmp_path), **kw)
    try:
        engines.fill(h, NAMES.items(), batch=17)
    finally:
        h.close()


# ---- SQLCipher at rest


def test_sqlcipher_file_holds_no_plaintext(tmp_path):
    _filled(tmp_path)
    data = _files(tmp_path, skip=("prefs.db.key",))
    assert os.path.getsize(tmp_path / "prefs.db") >= 4096
    assert not data.startswith(b"SQLite format 3")
    for k, v in NAMES.items():
        assert k.encode() not in data and v.encode() not in data
    assert b"secret_" not in data and b"prefs" not in data  # nor the table's name


def test_plain_sqlite_holds_the_plaintext(tmp_path):  # the check above can see plaintext
    _filled(tmp_path, encrypted=False)
    data = _files(tmp_path)
    assert data.startswith(b"SQLite format 3")
    assert all(k.encode() in data and v.encode() in data for k, v in NAMES.items())


def test_sqlcipher_reader_wrong_key_fails_right_key_reads_all(tmp_path):
    _filled(tmp_path)
    path = str(tmp_path / "prefs.db")
    c = sqlcipher3.connect(path)
    c.execute("PRAGMA key = 'not the passphrase'")
    with pytest.raises(sqlcipher3.DatabaseError):
        c.execute("SELECT count(*) FROM prefs").fetchall()
    c.close()
    c = sqlcipher3.connect(path)
    c.execute("PRAGMA key = '%s'" % (tmp_path / "prefs.db.key").read_text())
    assert c.execute("PRAGMA cipher_kdf_algorithm").fetchone()[0] == "PBKDF2_HMAC_SHA512"
    assert c.execute("PRAGMA kdf_iter").fetchone()[0] == "256000"
    assert c.execute("PRAGMA cipher_page_size").fetchone()[0] == "4096"
    got = {n: engines.decode_esp_value(v) for n, v in c.execute("SELECT name, value FROM prefs")}
    c.close()
    assert got == NAMES


def test_sqlcipher_engine_reads_back_after_reopen(tmp_path):
    _filled(tmp_path)
    h = engines.open_engine("sqlcipher", str(tmp_path))
    try:
        assert all(h.get(k) == v for k, v in NAMES.items())
        assert h.get("never set") is None and not h.contains("never set")
        assert h.contains(next(iter(NAMES)))
    finally:
        h.close()
    assert oct(os.stat(tmp_path / "prefs.db.key").st_mode & 0o777) == "0o600"


def test_missing_binding_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "sqlcipher3", None)
    with pytest.raises(ImportError, match=re.escape('pip install "pycipherbench[peers]"')):
        engines.open_engine("sqlcipher", str(tmp_path))
    with pytest.raises(ImportError, match="pycipherbench\\[peers\\]"):
        store.bench("get", engine="sqlcipher", n_keys=10, repeats=1)
    with pytest.raises(ImportError, match="pycipherbench\\[peers\\]"):
        designs.plan_design("sqlcipher")
    assert engines.cipher_version() is None


# ---- the MMKV model


def _varint(b, i):
    n = shift = 0
    while True:
        n |= (b[i] & 0x7F) << shift
        shift += 7
        i += 1
        if not b[i - 1] & 0x80:
            return n, i


def _parse_mmkv(path):
    """An independent reader of the model's unencrypted file: [u32 LE size][holder][records]."""
    data = open(path, "rb").read()
    size = int.from_bytes(data[:4], "little")
    content = data[4:4 + size]
    _, i = _varint(content, 0)
    out = {}
    while i < len(content):
        n, i = _varint(content, i)
        name = content[i:i + n].decode()
        i += n
        n, i = _varint(content, i)
        value = content[i:i + n]
        i += n
        if value:
            out[name] = engines.decode_mmkv_string(value)
        else:
            out.pop(name, None)
    meta = open(str(path) + ".crc", "rb").read()
    assert int.from_bytes(meta[0:4], "little") == zlib.crc32(content)  # zlib's CRC-32
    assert int.from_bytes(meta[28:32], "little") == size
    return out, int.from_bytes(meta[8:12], "little")


def test_mmkv_model_round_trips_and_compacts(tmp_path):
    h = engines.open_engine("mmkv", str(tmp_path), encrypted=False)
    try:
        for rnd in range(40):  # overwrites: the file must compact, not grow without bound
            h.put({k: f"{v}-{rnd}" for k, v in NAMES.items()}, durable=False)
        h.put({"gone": "x", "empty": ""}, durable=False)  # "" is a value (varint 0)
        pcb._core.mmkv_put(h.h, b"gone", b"")  # an empty record removes (MMKV's convention)
        h.flush()
    finally:
        h.close()
    want = {**{k: f"{v}-39" for k, v in NAMES.items()}, "empty": ""}
    got, seq = _parse_mmkv(tmp_path / "prefs.mmkv")
    assert got == want and seq >= 1  # at least one full write-back happened
    assert os.path.getsize(tmp_path / "prefs.mmkv") <= 16384
    h = engines.open_engine("mmkv", str(tmp_path), encrypted=False)
    try:
        assert all(h.get(k) == v for k, v in want.items()) and h.get("gone") is None
    finally:
        h.close()


def test_mmkv_model_with_a_crypt_key_holds_no_plaintext(tmp_path):
    _filled(tmp_path, "mmkv")
    data = _files(tmp_path, skip=("mmkv.key",))
    for k, v in NAMES.items():
        assert k.encode() not in data and v.encode() not in data
    h = engines.open_engine("mmkv", str(tmp_path))
    try:
        assert all(h.get(k) == v for k, v in NAMES.items())
    finally:
        h.close()
    with pytest.raises(store.StoreFormatError, match="wrong crypt key"):
        pcb._core.mmkv_open(str(tmp_path / "prefs.mmkv"), b"another key 0123")


def test_mmkv_model_crc_catches_corruption_but_not_tampering(tmp_path):
    """Its encryption is unauthenticated: flip a ciphertext bit, recompute the CRC (as an
    attacker can), and the file opens with that plaintext bit flipped."""
    h = engines.open_engine("mmkv", str(tmp_path))
    try:
        h.put({"balance": "100"}, durable=True)
    finally:
        h.close()
    path = tmp_path / "prefs.mmkv"
    data = bytearray(path.read_bytes())
    size = int.from_bytes(data[:4], "little")
    data[4 + size - 1] ^= 0x01  # the last byte: the value's last character ('0' -> '1')
    path.write_bytes(bytes(data))
    with pytest.raises(store.StoreFormatError, match="CRC-32"):
        engines.open_engine("mmkv", str(tmp_path))
    meta = bytearray((tmp_path / "prefs.mmkv.crc").read_bytes())
    meta[0:4] = zlib.crc32(bytes(data[4:4 + size])).to_bytes(4, "little")
    (tmp_path / "prefs.mmkv.crc").write_bytes(bytes(meta))
    h = engines.open_engine("mmkv", str(tmp_path))
    try:
        assert h.get("balance") == "101"
    finally:
        h.close()


def test_mmkv_results_say_model_and_unauthenticated(tmp_path):
    m = store.bench("get", engine="mmkv", n_keys=20, repeats=2, min_time=0.002, directory=tmp_path)
    assert m.engine == "mmkv" and m.level == "python"
    assert "model" in m.engine_version.lower() and "unauthenticated" in m.engine_version
    assert "MODEL" in designs.GIVES_UP["mmkv_model"] and "WITHOUT authentication" in designs.GIVES_UP["mmkv_model"]
    with pytest.raises(ValueError, match="at most 16 bytes"):
        pcb._core.mmkv_open(str(tmp_path / "x"), b"k" * 17)
    h = pcb._core.mmkv_open(str(tmp_path / "y"), None)
    pcb._core.mmkv_close(h)
    with pytest.raises(ValueError, match="closed"):
        pcb._core.mmkv_get(h, b"a")
    with pytest.raises(TypeError, match="mmkv_open"):
        pcb._core.mmkv_get(object(), b"a")


# ---- ESP's value encoding, checked against the C store's own bytes


@pytest.mark.parametrize("value", ["hello", "", "é漢", 7, -2**31, 2**40, 1.5, True, False,
                                   {"a", "bc"}])
def test_esp_value_encoding_is_the_stores(tmp_path, value):
    with store.open(tmp_path / "p.xml", master_key_file=tmp_path / "k",
                    key_encryption="none", value_encryption="none") as s:
        e = s.edit()
        {str: e.put_string, int: e.put_int if -2**31 <= (value if isinstance(value, int) else 0)
         < 2**31 else e.put_long, float: e.put_float, bool: e.put_bool,
         set: e.put_string_set}[type(value)]("v", value)
        e.commit()
    xml = (tmp_path / "p.xml").read_text()
    b64 = re.search(r'name="v"[^>]*>([^<]*)<', xml)
    if b64 is None:  # an empty set is written as a self-closing element's body
        pytest.skip("no element body")
    stored = base64.b64decode(b64.group(1))
    if isinstance(value, set):  # set members in any order
        assert engines.decode_esp_value(stored) == value
        assert len(stored) == len(engines.encode_esp_value(value))
    else:
        assert stored == engines.encode_esp_value(value)
    assert engines.decode_esp_value(engines.encode_esp_value(value)) == value


def test_esp_value_decoding_rejects_garbage():
    with pytest.raises(ValueError, match="unknown ESP value type id 9"):
        engines.decode_esp_value(b"\0\0\0\x09xx")
    with pytest.raises(ValueError, match="at least 4 bytes"):
        engines.decode_esp_value(b"\0")
    with pytest.raises(ValueError, match="string length"):
        engines.decode_esp_value(b"\0\0\0\0\0\0\0\x09ab")
    with pytest.raises(TypeError, match="not bytes"):
        engines.encode_esp_value(b"raw")


# ---- the tiered and lazy designs


def test_tiered_keeps_sensitive_names_encrypted(tmp_path):
    sensitive = frozenset(list(NAMES)[:10])
    h = engines.open_engine("tiered", str(tmp_path), sensitive=sensitive)
    try:
        engines.fill(h, NAMES.items())
        assert all(h.get(k) == v for k, v in NAMES.items())
    finally:
        h.close()
    plain = (tmp_path / "plain_prefs.xml").read_bytes()
    secret = (tmp_path / "secret_prefs.xml").read_bytes()
    for k, v in NAMES.items():
        if k in sensitive:
            assert k.encode() not in plain + secret and v.encode() not in plain + secret
        else:
            assert k.encode() in plain and v.encode() in plain


def test_lazy_opens_the_encrypted_store_on_first_sensitive_use(tmp_path):
    h = engines.open_engine("tiered", str(tmp_path), sensitive={"token"}, lazy=True)
    try:
        h.put({"flag": "1"}, durable=True)
        assert h.get("flag") == "1" and h.get("other") is None
        assert not (tmp_path / "secret_prefs.key").exists()  # no master key created yet
        assert h.get("token") is None
        assert (tmp_path / "secret_prefs.key").exists()
    finally:
        h.close()


def test_engine_names_are_checked():
    with pytest.raises(ValueError, match="did you mean 'sqlcipher'"):
        engines.open_engine("sqlciper", ".")
    with pytest.raises(ValueError, match="did you mean 'sqlcipher'"):
        store.bench("get", engine="sqlciphr", repeats=1)
    with pytest.raises(ValueError, match="did you mean 'python'"):
        store.bench("get", level="pyhton", repeats=1)
    with pytest.raises(ValueError, match="did you mean 'tiered_lazy'"):
        designs.plan_design("tiered-lazy")
    with pytest.raises(ValueError, match="sensitive_fraction must be a number in \\[0, 1\\]"):
        designs.plan_design("tiered", sensitive_fraction=1.5)
    with pytest.raises(ValueError, match="not timed at the Python call"):
        store.bench("rotate", engine="sqlcipher", repeats=1)
    with pytest.raises(ValueError, match="has no cache option"):
        store.bench("get", engine="sqlcipher", cache=True, repeats=1)
    with pytest.raises(ValueError, match="has no apply"):
        store.bench("apply", engine="sqlcipher", repeats=1)


# ---- workloads and the start-up scenario


def test_store_bench_sqlcipher_records_its_version_and_level(tmp_path):
    m = store.bench("get", engine="sqlcipher", n_keys=20, repeats=2, min_time=0.002,
                    directory=tmp_path)
    assert m.engine == "sqlcipher" and m.level == "python"
    assert m.engine_version == engines.cipher_version() and m.engine_version.startswith("4.")
    assert m.to_dict()["engine_version"] == m.engine_version
    assert "timed at the Python call" in repr(m) and m.disk_bytes >= 4096
    assert len(m.samples) == 2 and np.all(m.samples > 0)
    back = store.StoreMeasurement.from_dict(m.to_dict())
    assert back.engine_version == m.engine_version and back.level == "python"


def test_sweep_pairs_engines_at_the_python_level(tmp_path):
    r = pcb.sweep("store", workload=["get", "commit"], engine=["esp", "sqlcipher"],
                  level="python", n_keys=20, batch=3, repeats=3, min_time=0.002,
                  directory=tmp_path)
    levels = {(m.engine, m.level) for m in r}
    assert levels == {("esp", "python"), ("sqlcipher", "python")}
    ratio = r.ratio({"engine": "sqlcipher", "workload": "get"},
                    {"engine": "esp", "level": "python", "workload": "get"})
    assert ratio.n == 3 and ratio.low <= ratio.estimate <= ratio.high


def test_startup_runs_every_design_in_the_same_rounds(tmp_path):
    recs, info = designs.run(cases=[{"cold": True}, {"cold": False}], repeats=3, min_time=0.0,
                             n_entries=30, n_reads=8, directory=str(tmp_path))
    assert info.rounds == 3
    assert {m.design for m in recs} == set(designs.DESIGNS)
    for m in recs:
        assert len(m.samples) == 3 and np.all(m.samples > 0)
        assert np.all(m.durable_samples >= m.samples)  # durable includes the blocked part
        assert m.level == "python" and m.gives_up == designs.GIVES_UP[m.design]
        assert (m.engine_version is not None) == (m.design in ("sqlcipher", "sqlite", "mmkv_model"))
        assert m.disk_bytes > 0
    text = designs.format_designs(recs, budget_ms=1e9)
    assert text.count("1 (baseline)") == 2 and "Python call" in text
    assert text.count("  yes") == len(recs)  # every interval fits a budget of 10^6 s
    for d in designs.DESIGNS:
        assert re.search(rf"^{d}\s", text, re.M), d


def test_lazy_skips_the_encrypted_open_when_startup_reads_no_secret(tmp_path, monkeypatch):
    """tiered_lazy with no sensitive read at start-up never creates the encrypted store's
    key: its cold start-up does not pay ESP's key generation (the article's remedy)."""
    p = designs.plan_design("tiered_lazy", cold=True, n_entries=30, n_reads=10,
                            sensitive_reads=0.0, min_time=0.0, directory=str(tmp_path))
    opened = []
    real = engines._Esp.__init__

    def spy(self, directory, options, name="prefs"):
        opened.append(name)
        real(self, directory, options, name)

    monkeypatch.setattr(engines._Esp, "__init__", spy)
    try:
        p.point.prepare()
        p.point.sample(1.0)
    finally:
        p.point.close()
    assert opened and set(opened) == {"plain_prefs"}
    assert not any(n in p.point.sensitive for n in p.point.reads)


def test_budget_sentences_follow_the_data():
    def rec(design, values):
        return designs.DesignMeasurement(
            design=design, workload="startup_warm",
            params=dict(cold=False, n_entries=100, n_reads=20, writes=1, sensitive_fraction=0.2,
                        sensitive_reads=0.2, missing_fraction=0.25, key_len=32, value_len=32),
            payload=0, hw_aes=True, min_time=0.0, repeats=6, iterations=1,
            samples=np.asarray(values, dtype=float), tsc_samples=None,
            durable_samples=np.asarray(values, dtype=float), machine={})
    ms = 1e6
    recs = [rec("plain", [1 * ms] * 6), rec("esp", [4 * ms, 4 * ms, 4 * ms, 4 * ms, 6 * ms, 6 * ms]),
            rec("sqlcipher", [300 * ms] * 6)]
    [s] = designs.budget_sentences(recs, 5)
    assert s.startswith("Warm (100 entries), 20 reads: plain fits 5 ms with the whole interval")
    assert "esp only by the median" in s and "sqlcipher misses it" in s
    assert "slowest: sqlcipher, 300.00 ms" in s
    [s] = designs.budget_sentences(recs, 0.5)
    assert "no design fits 0.5 ms" in s and "plain, esp, sqlcipher miss it" in s


def test_cli_store_designs_prints_the_budget_table(tmp_path):
    import subprocess

    from pycipherbench._hwaes import python_command

    r = subprocess.run(python_command("pycipherbench.cli", "store", "--designs", "--quick",
                                      "--no-progress", "--budget", "1e9",
                                      "--directory", str(tmp_path)),
                       capture_output=True, text=True, timeout=600, check=False)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for d in designs.DESIGNS:
        assert re.search(rf"^{d}\s+\S+ (ms|us|ns)\s+\[", out, re.M), (d, out)
    assert "fits 1e+09 ms" in out and out.count("1 (baseline)") == 2
    assert "# Budget 1e+09 ms of blocked start-up time:" in out
    assert "Cold, 20 reads: plain, esp" in out and "with the whole interval" in out
    assert "MMKV design model" in out and "Python call" in out

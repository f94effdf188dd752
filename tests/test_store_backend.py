"""Issue 13, the store's crypto floor: store.open/bench(crypto_backend=...).

The entries' AEAD (and AES-SIV names where the library has the store's
shape) run on another library; the file format does not change, so a file
written with one backend opens with any other.
"""
from __future__ import annotations

import base64
import math
import re
from pathlib import Path

import pytest

import pycipherbench as pcb
from pycipherbench import store

KEYSET_PREFIX = "__androidx_security_crypto_encrypted_prefs_"
ENTRY = re.compile(rb'(<string name=")([^"]*)(">)([^<]*)(</string>)')
VALUE_T = {"gcm": "AES/GCM/NoPadding", "chacha20-poly1305": "ChaCha20-Poly1305"}
TINY = dict(n_keys=50, min_time=0.001, repeats=2, warmup=0, stages=False)


def _available():
    return {b["name"]: b for b in pcb.backends() if b["available"] and b.get("kind") == "c"}


def _points():
    """(backend, value_encryption) for every available C backend with that AEAD."""
    out = []
    for name, b in _available().items():
        for ve, t in VALUE_T.items():
            if name != "openssl" and t in b["transformations"]:
                out.append((name, ve))
    return out


POINTS = _points()
IDS = [f"{b}-{ve}" for b, ve in POINTS]


def _fill(s):
    (s.edit().put_string("s", "hé llo").put_string("empty", "").put_int("i", -7)
     .put_long("l", 2**40).put_float("f", 1.5).put_bool("b", True)
     .put_string_set("ss", {"x", "y", ""}).commit())


def _check(s):
    assert s.get_string("s") == "hé llo"
    assert s.get_string("empty") == ""
    assert s.get_int("i") == -7
    assert s.get_long("l") == 2**40
    assert s.get_float("f") == 1.5
    assert s.get_bool("b") is True
    assert s.get_string_set("ss") == {"x", "y", ""}
    assert len(s.all()) == 7


@pytest.mark.parametrize("backend,ve", POINTS, ids=IDS)
def test_store_backend_round_trip_and_files_interchangeable(tmp_path, backend, ve):
    key = str(tmp_path / "m.key")
    path = str(tmp_path / "prefs.xml")
    with store.open(path, master_key_file=key, value_encryption=ve, crypto_backend=backend) as s:
        _fill(s)
        _check(s)
    for other in ("openssl", backend):  # written on the backend, read on both
        with store.open(path, master_key_file=key, value_encryption=ve, crypto_backend=other) as s:
            _check(s)
    # written on OpenSSL, read on the backend (and a put on it read back by OpenSSL)
    path2 = str(tmp_path / "other.xml")
    with store.open(path2, master_key_file=key, value_encryption=ve) as s:
        _fill(s)
    with store.open(path2, master_key_file=key, value_encryption=ve, crypto_backend=backend) as s:
        _check(s)
        s.edit().put_string("s", "again").commit()
    with store.open(path2, master_key_file=key, value_encryption=ve) as s:
        assert s.get_string("s") == "again"


@pytest.mark.parametrize("backend,ve", POINTS, ids=IDS)
def test_store_backend_rotation_and_older_keys(tmp_path, backend, ve):
    """Rotate re-keys the backend's contexts; a lazily rotated keyset's older key still opens."""
    key = str(tmp_path / "m.key")
    path = str(tmp_path / "prefs.xml")
    with store.open(path, master_key_file=key, value_encryption=ve, crypto_backend=backend) as s:
        _fill(s)
        s.rotate()
        _check(s)
        s.rotate(lazy=True)  # a new primary value key: older entries open under theirs
        s.edit().put_string("new", "after").commit()
        _check_plus = s.all()
        assert _check_plus["new"] == "after" and _check_plus["i"] == -7
    with store.open(path, master_key_file=key, value_encryption=ve) as s:
        assert s.get_string("new") == "after" and s.get_int("i") == -7


def _tamper_first_value(path: str) -> bytes:
    data = Path(path).read_bytes()
    first = [m for m in ENTRY.finditer(data) if not m.group(2).startswith(KEYSET_PREFIX.encode())][0]
    raw = bytearray(base64.b64decode(first.group(4)))
    raw[-1] ^= 1  # the tag
    Path(path).write_bytes(data[: first.start(4)] + base64.b64encode(raw) + data[first.end(4):])
    return first.group(2)


@pytest.mark.parametrize("backend,ve", POINTS, ids=IDS)
def test_store_backend_tampered_value_names_the_entry(tmp_path, backend, ve):
    key = str(tmp_path / "m.key")
    path = str(tmp_path / "prefs.xml")
    with store.open(path, master_key_file=key, value_encryption=ve, crypto_backend=backend) as s:
        s.edit().put_string("alpha", "one").commit()
    name_text = _tamper_first_value(path)
    with store.open(path, master_key_file=key, value_encryption=ve, crypto_backend=backend) as s:
        with pytest.raises(pcb.DecryptionError) as ei:
            s.get_string("alpha")
    msg = str(ei.value)
    assert "prefs.xml" in msg and name_text[:20].decode() in msg and "authentication" in msg, msg


def test_store_backend_tampered_name_on_gcrypt_siv(tmp_path):
    """libgcrypt runs the names' AES-SIV too: a flipped name tag does not open."""
    if "gcrypt" not in _available():
        pytest.skip("libgcrypt not compiled in")
    key = str(tmp_path / "m.key")
    path = str(tmp_path / "prefs.xml")
    with store.open(path, master_key_file=key, crypto_backend="gcrypt") as s:
        s.edit().put_string("alpha", "one").commit()
    data = Path(path).read_bytes()
    first = [m for m in ENTRY.finditer(data) if not m.group(2).startswith(KEYSET_PREFIX.encode())][0]
    raw = bytearray(base64.b64decode(first.group(2)))
    raw[6] ^= 1  # inside the SIV tag
    Path(path).write_bytes(data[: first.start(2)] + base64.b64encode(raw) + data[first.end(2):])
    with store.open(path, master_key_file=key, crypto_backend="gcrypt") as s:
        assert "alpha" not in s
        with pytest.raises(pcb.DecryptionError, match="the name failed authentication"):
            s.all()


@pytest.mark.parametrize("backend,ve", POINTS, ids=IDS)
@pytest.mark.parametrize("workload", ["get", "put"])
def test_store_bench_runs_on_backend(backend, ve, workload):
    m = store.bench(workload, value_encryption=ve, crypto_backend=backend, **TINY)
    assert m.params["crypto_backend"] == backend
    assert m.ns_per_op > 0 and math.isfinite(m.ns_per_op)


def test_store_sweep_over_crypto_backend():
    backends = ["openssl"] + (["gcrypt"] if "gcrypt" in _available() else [])
    r = pcb.sweep("store", workload="get", crypto_backend=backends, **TINY)
    assert sorted(m.params["crypto_backend"] for m in r) == sorted(backends)


def test_store_backend_bad_name_lists_the_names(tmp_path):
    key = str(tmp_path / "m.key")
    with pytest.raises(ValueError, match=r"crypto_backend must be one of .*'openssl'.*'gcrypt'"):
        store.open(str(tmp_path / "p.xml"), master_key_file=key, crypto_backend="libressl")
    with pytest.raises(ValueError, match="crypto_backend must be one of"):
        store.bench("get", crypto_backend="libressl", **TINY)
    with pytest.raises(TypeError):
        store.open(str(tmp_path / "p.xml"), master_key_file=key, crypto_backend=1)


def test_store_backend_unsupported_combinations(tmp_path):
    key = str(tmp_path / "m.key")
    p = str(tmp_path / "p.xml")
    avail = _available()
    other = next((b for b in avail if b != "openssl"), None)
    if other is None:
        pytest.skip("no backend other than OpenSSL compiled in")
    with pytest.raises(ValueError, match="faithful=True.*OpenSSL only"):
        store.open(p, master_key_file=key, faithful=True, crypto_backend=other)
    with pytest.raises(ValueError, match="faithful=True"):
        store.bench("get", faithful=True, crypto_backend=other, **TINY)
    with pytest.raises(ValueError, match="layout='entries'"):
        store.open(p, master_key_file=key, layout="file", crypto_backend=other)
    with pytest.raises(ValueError, match="layout='entries'"):
        store.open(p, encrypted=False, crypto_backend=other)
    with pytest.raises(ValueError, match="encrypts nothing per entry"):
        store.open(p, master_key_file=key, key_encryption="none", value_encryption="none",
                   crypto_backend=other)
    if "sodium" in avail:  # no AES-SIV at all; alone it would run nothing
        with pytest.raises(ValueError, match=r"no AES-SIV.*backends that have it: 'openssl'.*'gcrypt'"):
            store.open(p, master_key_file=key, value_encryption="none", crypto_backend="sodium")
    if "nettle" in avail:  # SIV-CMAC needs two components: the store's shape has one
        with pytest.raises(ValueError, match="no AES-SIV in the store's shape"):
            store.bench("get", value_encryption="none", crypto_backend="nettle", **TINY)
    for name, b in avail.items():
        for ve, t in VALUE_T.items():
            if t not in b["transformations"]:
                with pytest.raises(ValueError, match=rf"'{name}' has no .*backends that have it: 'openssl'"):
                    store.open(p, master_key_file=key, value_encryption=ve, crypto_backend=name)
    assert not Path(p).exists(), "a refused open left a file behind"


FLOOR = _available().get("floor")


@pytest.mark.skipif(FLOOR is None, reason="the floor kernels need AES-NI + PCLMULQDQ")
@pytest.mark.parametrize("workload", ["get", "put"])
@pytest.mark.parametrize("opts", [{}, {"crypto_backend": "openssl"}, {"faithful": True}],
                         ids=["lean", "openssl", "faithful"])
def test_stage_floors_sit_under_their_stages(tmp_path, workload, opts):
    """stages() carries each crypto stage's floor (that stage's crypto alone on the floor
    kernels, same sizes, the store's AAD): present, positive, and not above its stage."""
    k = pcb._core.StoreKernel(workload, directory=str(tmp_path), n_keys=200, **opts)
    try:
        st = k.stages(5000)
    finally:
        k.close()
    for stage in ("siv", "aead"):
        floor = st[f"{stage}_floor"]
        assert isinstance(floor, int) and floor > 0
        assert floor <= st[stage], (stage, st)


@pytest.mark.skipif(FLOOR is None, reason="the floor kernels need AES-NI + PCLMULQDQ")
def test_stage_floors_only_where_the_store_seals_that_part(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "c").mkdir()
    plain = pcb._core.StoreKernel("get", directory=str(tmp_path / "p"), n_keys=20, encrypted=False)
    chacha = pcb._core.StoreKernel("get", directory=str(tmp_path / "c"), n_keys=20,
                                   value_encryption="chacha20-poly1305")
    try:
        p, c = plain.stages(100), chacha.stages(100)
    finally:
        plain.close()
        chacha.close()
    assert "siv_floor" not in p and "aead_floor" not in p
    assert c["siv_floor"] > 0 and "aead_floor" not in c  # no ChaCha20-Poly1305 floor
    m = store.bench("get", n_keys=20, min_time=0.001, repeats=1, warmup=0, stages=True)
    assert m.stages is not None and 0 < m.stages["aead_floor"] <= m.stages["aead"]


# -- every store result records the library that ran (crypto_backend="auto" resolved)
FLOOR_OK = any(b["name"] == "floor" and b["available"] for b in pcb.backends())
AUTO = "floor" if FLOOR_OK else "openssl"


@pytest.mark.parametrize("opts, names, values", [
    ({}, AUTO, AUTO),
    ({"crypto_backend": "openssl"}, "openssl", "openssl"),
    ({"faithful": True}, "openssl", "openssl"),                  # the floor serves lean mode only
    ({"value_encryption": "chacha20-poly1305"}, "openssl", "openssl"),  # no ChaCha on the floor
    ({"key_encryption": "none"}, "none", AUTO),
    ({"value_encryption": "none"}, AUTO, "none"),
    ({"layout": "file"}, "openssl", "openssl"),                  # the map sealed whole
    ({"encrypted": False}, "none", "none"),
], ids=["auto", "openssl", "faithful", "chacha", "plain names", "plain values", "file", "plain"])
def test_store_results_record_the_library_that_ran(opts, names, values):
    m = store.bench("get", **TINY, **opts)
    assert m.crypto == {"names": names, "values": values}
    back = type(m).from_dict(m.to_dict())
    assert back.crypto == m.crypto


@pytest.mark.parametrize("name", sorted({n for n, _ in POINTS}) or ["(none)"])
def test_store_results_name_an_explicit_backend(name):
    if name == "(none)":
        pytest.skip("no optional C backend in this build")
    ve = next(v for n, v in POINTS if n == name)
    m = store.bench("get", crypto_backend=name, value_encryption=ve, **TINY)
    assert m.crypto["values"] == name
    assert m.crypto["names"] in (name, "openssl")  # AES-SIV in the store's shape: gcrypt, floor
    assert name in repr(m)


@pytest.mark.skipif(not FLOOR_OK, reason="no floor on this CPU")
def test_hw_aes_off_records_openssl_not_the_floor():
    m = store.bench("get", hw_aes=False, **TINY)
    assert m.crypto == {"names": "openssl", "values": "openssl"}

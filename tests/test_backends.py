"""Every backend (pcb.backends(): the C libraries this build has and the Python libraries
installed) against the published vectors, against OpenSSL on random inputs of every length
0..1024 and every key size, on bad tags and padding, and on what it lacks (issue 13)."""

import importlib.util
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pycipherbench as pcb
from pycipherbench import _core
from test_vectors import _args  # one reading of a vector file's hex fields

VECTOR_DIR = Path(__file__).parent / "vectors"
ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("backends_def", ROOT / "csrc/crypto/backends_def.py")
backends_def = importlib.util.module_from_spec(_spec)
sys.modules["backends_def"] = backends_def
_spec.loader.exec_module(backends_def)
TABLE = backends_def.table()  # csrc/crypto/backends.def: the one list of the C backends
ALL_BACKENDS = pcb.backends()
AVAILABLE = [b for b in ALL_BACKENDS if b["available"]]
OTHERS = [b["name"] for b in AVAILABLE if b["name"] != "openssl"]
HAS = {b["name"]: set(b["transformations"]) for b in AVAILABLE}
PY = [n for n in OTHERS if n.startswith("py:")]
LABEL = {b["name"]: b["label"] for b in ALL_BACKENDS}

KEY_SIZES = {"AES/SIV/NoPadding": (32, 48, 64), "DES": (8,), "DESede": (16, 24),
             "ChaCha20-Poly1305": (32,), "XChaCha20-Poly1305": (32,), "TEA": (16,), "XTEA": (16,)}
AEAD = ("AES/GCM/NoPadding", "ChaCha20-Poly1305", "XChaCha20-Poly1305", "AES/SIV/NoPadding")


def _key_sizes(t):
    return KEY_SIZES.get(t) or KEY_SIZES.get(t.split("/")[0]) or (16, 24, 32)


def _iv_len(t):
    if "/ECB/" in t:
        return None
    if t in ("AES/GCM/NoPadding", "ChaCha20-Poly1305"):
        return 12
    if t == "XChaCha20-Poly1305":
        return 24
    if t == "AES/SIV/NoPadding":
        return 16
    return 16 if t.startswith("AES") else 8


def _block(t):
    return 16 if t.startswith("AES") else 8


def _lengths(t):
    if "NoPadding" in t and ("/ECB/" in t or "/CBC/" in t):
        return range(0, 1025, _block(t))
    return range(0, 1025)


def _reference(t):
    """The backend that answers for t: OpenSSL, or (XChaCha20) the first other that has it."""
    if t in HAS["openssl"]:
        return "openssl"
    return next(n for n in ("sodium", "py:pynacl", "py:pycryptodome") if n in HAS and t in HAS[n])


def _refusal_ok(backend, exc):
    """A library limit, said as such: ValueError naming the library, or a key size the
    backend lacks, naming the backends that have it."""
    msg = str(exc)
    if isinstance(exc, pcb.UnsupportedCipherError):
        return "backends that have it" in msg and "-byte key" in msg
    return isinstance(exc, ValueError) and (LABEL[backend] in msg or backend in msg)


# ------------------------------------------------------------------- published vectors

def _vectors():
    out = []
    for path in sorted(VECTOR_DIR.glob("*.json")):
        for vec in json.loads(path.read_text())["vectors"]:
            for backend in OTHERS:
                if vec["transformation"] in HAS[backend]:
                    out.append(pytest.param(backend, vec, id=f"{backend}-{path.stem}-{vec['name']}"))
    return out


RAN = {}


@pytest.mark.parametrize("backend,vec", _vectors())
def test_published_vectors(backend, vec):
    t, key, pt, ct, kw = _args(vec)
    try:
        out = pcb.encrypt(t, key, pt, backend=backend, **kw)
    except (ValueError, pcb.UnsupportedCipherError) as e:
        assert _refusal_ok(backend, e), e
        with pytest.raises(type(e)):
            pcb.decrypt(t, key, ct, backend=backend, **kw)
        return
    assert out.hex() == ct.hex()
    assert pcb.decrypt(t, key, ct, backend=backend, **kw) == pt
    RAN.setdefault(backend, set()).add(t)


def test_published_vectors_ran_on_every_backend():
    """Every backend ran at least one published vector of every transformation it has
    that the vectors cover (a backend refusing them all would pass the test above)."""
    covered = {v["transformation"] for p in VECTOR_DIR.glob("*.json")
               for v in json.loads(p.read_text())["vectors"]}
    for backend in OTHERS:
        want = HAS[backend] & covered
        if backend == "nettle":
            # Nettle's SIV call takes exactly (one AD component, a non-empty nonce); no
            # published vector has that shape (RFC 5297 A.2 has two ADs and a nonce):
            # the agreement test below checks Nettle's SIV against OpenSSL instead.
            want.discard("AES/SIV/NoPadding")
        if not want:
            continue
        for vec in (v for p in VECTOR_DIR.glob("*.json") for v in json.loads(p.read_text())["vectors"]):
            if vec["transformation"] in want:
                t, key, pt, ct, kw = _args(vec)
                try:
                    if pcb.encrypt(t, key, pt, backend=backend, **kw) == ct:
                        want.discard(t)
                except (ValueError, pcb.UnsupportedCipherError):
                    pass
        assert not want, f"{backend} ran no published vector of {sorted(want)}"


# ------------------------------------------------------- agreement on random inputs

def _cases():
    return [pytest.param(b, t, id=f"{b}-{t}") for b in OTHERS for t in sorted(HAS[b])]


def _aad_for(backend, t, rng):
    """Associated data the backend takes: SIV components (Nettle: exactly one plus a nonce)."""
    if t == "AES/SIV/NoPadding":
        if backend == "nettle":
            return [rng.randbytes(rng.randrange(0, 40))]
        return [rng.randbytes(rng.randrange(1, 40)) for _ in range(rng.randrange(0, 3))]
    if t in AEAD:
        return rng.choice([None, rng.randbytes(rng.randrange(0, 40))])
    return None


@pytest.mark.parametrize("backend,t", _cases())
def test_agrees_with_reference_every_length_and_key_size(backend, t):
    ref = _reference(t)
    if ref == backend:
        pytest.skip(f"{backend} is the reference for {t}")
    rng = random.Random(f"{backend}/{t}")
    ran = 0
    for key_len in _key_sizes(t):
        key = rng.randbytes(key_len)
        try:
            pcb.encrypt(t, key, bytes(_block(t)), backend=backend,
                        iv=None if _iv_len(t) is None else bytes(_iv_len(t)),
                        aad=_aad_for(backend, t, rng))
        except pcb.UnsupportedCipherError as e:  # a key size this backend lacks
            assert _refusal_ok(backend, e), e
            continue
        for n in _lengths(t):
            iv = None if _iv_len(t) is None else rng.randbytes(_iv_len(t))
            aad = _aad_for(backend, t, rng)
            data = rng.randbytes(n)
            try:
                ct = pcb.encrypt(t, key, data, iv=iv, aad=aad, backend=backend)
            except ValueError as e:  # e.g. py:cryptography's AESSIV and the empty plaintext
                assert n == 0 and _refusal_ok(backend, e), e
                continue
            assert ct == pcb.encrypt(t, key, data, iv=iv, aad=aad, backend=ref), (key_len, n)
            assert pcb.decrypt(t, key, ct, iv=iv, aad=aad, backend=backend) == data, (key_len, n)
            ran += 1
    assert ran > 0


# ------------------------------------------------------------------ bad tag / padding

@pytest.mark.parametrize("backend,t", [p for p in _cases() if p.values[1] in AEAD])
def test_bad_tag_is_decryption_error(backend, t):
    rng = random.Random(t)
    key = rng.randbytes(max(_key_sizes(t)) if backend != "nettle" else min(_key_sizes(t)))
    iv = rng.randbytes(_iv_len(t))
    aad = [b"ad"] if t == "AES/SIV/NoPadding" else b"ad"
    for n in (0, 1, 100):
        try:
            ct = pcb.encrypt(t, key, rng.randbytes(n), iv=iv, aad=aad, backend=backend)
        except ValueError as e:
            assert n == 0 and _refusal_ok(backend, e), e
            continue
        tag_at = 0 if t == "AES/SIV/NoPadding" else len(ct) - 16
        for i in (tag_at, tag_at + 15, *((0,) if n and t != "AES/SIV/NoPadding" else ())):
            bad = bytearray(ct)
            bad[i] ^= 1
            with pytest.raises(pcb.DecryptionError):
                pcb.decrypt(t, key, bytes(bad), iv=iv, aad=aad, backend=backend)
        with pytest.raises(pcb.DecryptionError):
            other = [b"AD"] if t == "AES/SIV/NoPadding" else b"AD"
            pcb.decrypt(t, key, ct, iv=iv, aad=other, backend=backend)
        with pytest.raises(pcb.DecryptionError):
            pcb.decrypt(t, key, ct[:15], iv=iv, aad=aad, backend=backend)


@pytest.mark.parametrize("backend,t", [p for p in _cases() if "PKCS5" in p.values[1]])
def test_bad_padding_is_decryption_error(backend, t):
    b = _block(t)
    key = random.Random(t).randbytes(max(_key_sizes(t)))
    iv = None if _iv_len(t) is None else bytes(range(_iv_len(t)))
    nopad = t.replace("PKCS5Padding", "NoPadding")
    # A block that decrypts to zeros: its pad byte is 0, never valid.
    zeros = pcb.encrypt(nopad, key, bytes(2 * b), iv=iv, backend=backend)
    with pytest.raises(pcb.DecryptionError, match="padding"):
        pcb.decrypt(t, key, zeros, iv=iv, backend=backend)
    # Pad bytes that disagree: ... 03 02 03.
    body = bytes(b - 3) + b"\x03\x02\x03"
    with pytest.raises(pcb.DecryptionError, match="padding"):
        pcb.decrypt(t, key, pcb.encrypt(nopad, key, body, iv=iv, backend=backend), iv=iv,
                    backend=backend)
    with pytest.raises(pcb.DecryptionError):
        pcb.decrypt(t, key, zeros[:-1], iv=iv, backend=backend)
    with pytest.raises(pcb.DecryptionError):
        pcb.decrypt(t, key, b"", iv=iv, backend=backend)


# --------------------------------------------------------------------- what is lacking

def test_lacking_transformation_names_the_backends_that_have_it():
    for backend in ("openssl", *OTHERS):
        for t in sorted(set().union(*HAS.values()) - HAS[backend]):
            with pytest.raises(pcb.UnsupportedCipherError, match="backends that have it") as e:
                pcb.encrypt(t, bytes(32), b"", iv=bytes(_iv_len(t) or 0) or None, backend=backend)
            # The C core names the C libraries; the Python layer names every backend.
            have = [n for n in HAS if t in HAS[n] and (backend.startswith("py:") or ":" not in n)]
            assert all(n in str(e.value) for n in have), (backend, t, str(e.value))
            assert f"'{backend}'" in str(e.value)


def test_lacking_in_measure_too():
    if "sodium" not in HAS:
        pytest.skip("no libsodium in this build")
    with pytest.raises(pcb.UnsupportedCipherError, match="backends that have it: openssl"):
        pcb.measure("AES/CBC/PKCS5Padding", payload=16, backend="sodium", repeats=1, min_time=0.001)


def test_unknown_backend_is_value_error():
    with pytest.raises(ValueError, match="unknown backend 'libressl'"):
        pcb.encrypt("AES/GCM/NoPadding", bytes(16), b"", iv=bytes(12), backend="libressl")
    with pytest.raises(ValueError, match="unknown backend"):
        _core.check_kernel("AES/GCM/NoPadding", backend="OpenSSL")
    with pytest.raises(ValueError, match="unknown backend 'py:nope'"):
        pcb.encrypt("AES/GCM/NoPadding", bytes(16), b"", iv=bytes(12), backend="py:nope")


def test_backends_lists_each_with_version_support_and_hw_aes():
    names = [b["name"] for b in ALL_BACKENDS]
    assert names[0] == "openssl"
    assert {"py:cryptography", "py:pycryptodome", "py:pynacl"} <= set(names)
    for b in ALL_BACKENDS:
        assert set(b) >= {"name", "label", "version", "available", "transformations", "hw_aes",
                          "missing", "apt", "kind"}
        assert b["available"] == (b["missing"] is None)
        assert b["hw_aes"] in (True, False, None)
        if b["available"]:
            assert b["version"] and b["transformations"]
        if b["kind"] == "c" and not b["available"]:
            assert b["apt"] in b["missing"]
    openssl = ALL_BACKENDS[0]
    assert openssl["available"] and set(openssl["transformations"]) == set(pcb.ciphers(backend="openssl"))


# ------------------------------------------------------------- the table, declared once

def test_table_and_backends_agree():
    """backends() lists backends.def's rows, in order, with their labels and packages;
    a probed row is available exactly when this build compiled it in."""
    c = [b for b in ALL_BACKENDS if b["kind"] == "c"]
    assert [b["name"] for b in c] == [row.name for row in TABLE]
    for b, row in zip(c, TABLE):
        assert (b["label"], b["apt"]) == (row.label, row.apt)
        if row.build == "required":
            assert b["available"]
        if not b["available"] and row.probed:
            assert row.apt in b["missing"]
    assert len({row.id for row in TABLE}) == len({row.name for row in TABLE}) == len(TABLE)
    # the error text for an unknown name lists them from the table too
    with pytest.raises(ValueError) as e:
        _core.check_kernel("AES/GCM/NoPadding", backend="nope")
    assert all(row.name in str(e.value) for row in TABLE)


# Where a hand-kept list of backends would hide: the sources, the build and CI scripts, the
# benchmarks. (The table and its reader, each backend's own files, the tests and the prose of
# README/docs/notebooks name them on purpose.)
_SCANNED = ("setup.py", ".ci/*", "csrc/*/*.[ch]", "csrc/*/*.cpp", "pycipherbench/*.py",
            "pycipherbench/*.pyi", "bench/*.py", "bench/*.c", "bench/*.sh", "fuzz/*")
_OWN = re.compile(r"csrc/crypto/(backends\.def|backends_def\.py|backend_[a-z]+(_shim)?\.(c|h|cpp))$")


def _mentions(line, names):
    """The backends a line names as a quoted string or a C identifier of theirs."""
    found = set()
    for n in names:
        if re.search(rf"[\"'`]{n}[\"'`]|PCB_(BK|HAVE)_{n.upper()}\b|pcb_ops_{n.upper()}\b", line):
            found.add(n)
    return found


def test_no_backend_is_hand_listed_outside_the_table():
    """No line (nor two neighbouring lines) outside backends.def names two or more of the
    optional backends: such a list is what adding a backend would have to edit."""
    names = [row.name for row in TABLE if row.build != "required"]
    offenders = []
    for pattern in _SCANNED:
        for path in sorted(ROOT.glob(pattern)):
            rel = path.relative_to(ROOT).as_posix()
            if not path.is_file() or _OWN.search(rel):
                continue
            lines = path.read_text(errors="replace").splitlines()
            per_line = [_mentions(line, names) for line in lines]
            for i in range(len(lines)):
                window = set().union(*per_line[i:i + 2])
                if len(window) >= 2:
                    offenders.append(f"{rel}:{i + 1}: {sorted(window)}")
    assert not offenders, "backends listed by hand:\n" + "\n".join(offenders)


def test_the_hand_list_check_finds_a_list():
    assert _mentions('C_BACKENDS = ("openssl", "sodium", "nettle")', ["sodium", "nettle"]) \
        == {"sodium", "nettle"}
    assert _mentions("case PCB_BK_GCRYPT: return pcb_ops_MBEDTLS;", ["gcrypt", "mbedtls"]) \
        == {"gcrypt", "mbedtls"}
    assert _mentions("the nettle-dev package", ["nettle"]) == set()


def test_table_reader_rejects_a_bad_row(tmp_path):
    bad = tmp_path / "backends.def"
    bad.write_text('PCB_BACKEND(X, "x", "X", "probe")\n')
    with pytest.raises(ValueError, match="needs 8 strings"):
        backends_def.table(bad)


# ---------------------------------------------------- TEA/XTEA: the reference kernel decides

@pytest.mark.parametrize("backend,t", [p for p in _cases() if "TEA" in p.values[1]])
def test_tea_agrees_with_the_reference_kernel_at_every_rounds(backend, t):
    """A library's TEA/XTEA against our one-block-at-a-time reference (TEA-ref/...), at
    rounds 1..64 (Crypto++'s Rounds counts cycles, as ours does), every length."""
    alg, mode, pad = t.split("/")
    ref_t = f"{alg}-ref/{mode}/{pad}"
    rng = random.Random(t)
    key = rng.randbytes(16)
    outs = set()
    for rounds in (1, 2, 16, 32, 33, 64):
        for n in range(0, 200, 1 if "PKCS5" in t or mode == "CTR" else 8):
            iv = None if mode == "ECB" else rng.randbytes(8)
            data = rng.randbytes(n)
            ct = pcb.encrypt(t, key, data, iv=iv, rounds=rounds, backend=backend)
            assert ct == pcb.encrypt(ref_t, key, data, iv=iv, rounds=rounds), (rounds, n)
            assert pcb.decrypt(t, key, ct, iv=iv, rounds=rounds, backend=backend) == data
        outs.add(pcb.encrypt(t, key, bytes(16), iv=None if mode == "ECB" else bytes(8),
                             rounds=rounds, backend=backend))
    assert len(outs) == 6  # the rounds reach the library


# --------------------------------------------------------------------- library limits

def test_library_limits_are_value_errors_saying_so():
    # libsodium's AES-256-GCM needs hardware AES it knows: AES-NI (1.0.18, Debian 12's,
    # has no ARMv8 path), so on aarch64 it is absent and said so
    if "sodium" in HAS and "AES/GCM/NoPadding" in HAS["sodium"]:
        with pytest.raises(ValueError, match="libsodium's AES-256-GCM takes a 12-byte IV"):
            pcb.encrypt("AES/GCM/NoPadding", bytes(32), b"x", iv=bytes(16), backend="sodium")
        with pytest.raises(ValueError, match="libsodium"):
            _core.check_kernel("AES/GCM/NoPadding", key_bits=256, iv_len=16, backend="sodium")
    elif "sodium" in HAS:
        with pytest.raises(ValueError, match="backend 'sodium' has no AES/GCM/NoPadding; "
                                             "backends that have it: openssl"):
            pcb.encrypt("AES/GCM/NoPadding", bytes(32), b"x", backend="sodium")
    if "sodium" in HAS:
        with pytest.raises(ValueError, match="no stream scope"):
            _core.check_kernel("ChaCha20-Poly1305", scope="stream", payload=64, backend="sodium")
    if "nettle" in HAS:
        with pytest.raises(ValueError, match="Nettle's SIV-CMAC takes exactly one"):
            pcb.encrypt("AES/SIV/NoPadding", bytes(32), b"x", backend="nettle")
        with pytest.raises(ValueError, match="Nettle's SIV-CMAC"):
            pcb.encrypt("AES/SIV/NoPadding", bytes(32), b"x", aad=[b"a", b"b"], iv=b"n",
                        backend="nettle")
    if "py:cryptography" in HAS:
        with pytest.raises(ValueError, match="py:cryptography's AESSIV takes no empty plaintext"):
            pcb.encrypt("AES/SIV/NoPadding", bytes(32), b"", backend="py:cryptography")
        with pytest.raises(ValueError, match="py:cryptography's AESGCM takes an IV of 8 to 128"):
            pcb.encrypt("AES/GCM/NoPadding", bytes(16), b"x", iv=bytes(4),
                        backend="py:cryptography")
    # the rules every backend shares stay the C core's
    for backend in OTHERS:
        if "AES/GCM/NoPadding" in HAS[backend]:
            with pytest.raises(ValueError, match="takes a key of 16, 24 or 32 bytes"):
                pcb.encrypt("AES/GCM/NoPadding", bytes(15), b"", iv=bytes(12), backend=backend)


# ------------------------------------------------------------------- kernels, threads

@pytest.mark.parametrize("backend", [n for n in OTHERS if not n.startswith("py:")])
def test_c_backend_kernels_run_every_scope(backend):
    for t in sorted(HAS[backend]):
        key_bits = 8 * (64 if t == "AES/SIV/NoPadding" else max(_key_sizes(t)))
        for scope in ("stream", "message", "rekey"):
            for op in ("enc", "dec"):
                try:
                    k = _core.Kernel(t, op=op, payload=4096, key_bits=key_bits, scope=scope,
                                     backend=backend)
                except ValueError as e:  # SIV has no stream; libsodium's AEAD neither
                    assert "stream scope" in str(e) or "Nettle's SIV" in str(e), e
                    continue
                assert k.info["backend"] == backend and k.info["threads"] == 1
                assert k.sample(3)[0] > 0
                k.close()


def test_threads_kernel_runs_n_contexts():
    k = _core.Kernel("AES/CTR/NoPadding", payload=1024, scope="stream", threads=3)
    try:
        assert k.info["threads"] == 3
        n = k.calibrate(0.001, 0.0)
        s = k.sample(n)
        assert s[0] > 0 and len(k.thread_ns) == 3 and all(t > 0 for t in k.thread_ns)
        assert max(k.thread_ns) <= s[0] * 1.01 + 1000
    finally:
        k.close()
    for bad in (0, 257, -1):
        with pytest.raises(ValueError, match="threads"):
            _core.check_kernel("AES/CTR/NoPadding", threads=bad)


def test_measure_threads_and_backends_are_recorded():
    m = pcb.measure("AES/CTR/NoPadding", payload=1024, scope="stream", threads=2, repeats=2,
                    min_time=0.002)
    assert m.threads == 2 and m.thread_spread is not None and m.thread_spread >= 1.0
    assert m.iterations % 2 == 0
    d = m.to_dict()
    assert d["threads"] == 2 and d["backend"] == "openssl"
    assert pcb.Measurement.from_dict(d).threads == 2
    for backend in OTHERS[:2]:
        t = "ChaCha20-Poly1305"
        if t in HAS[backend]:
            m = pcb.measure(t, payload=64, backend=backend, repeats=2, min_time=0.002)
            assert m.backend == backend and m.ns_per_op > 0


@pytest.mark.parametrize("backend", PY)
def test_python_backend_kernels(backend):
    t = "ChaCha20-Poly1305"
    for op in ("enc", "dec"):
        for scope in ("message", "rekey"):
            m = pcb.measure(t, op=op, payload=64, scope=scope, backend=backend, repeats=2,
                            min_time=0.002, warmup=0.0)
            assert m.backend == backend and m.ns_per_op > 0 and m.tsc_samples is None
    with pytest.raises(ValueError, match="scope must be 'message' or 'rekey'"):
        pcb.measure(t, scope="stream", backend=backend)
    with pytest.raises(ValueError, match="threads applies to the C backends"):
        pcb.measure(t, threads=2, backend=backend)
    with pytest.raises(ValueError, match="timed in Python"):
        _core.Kernel(t, backend=backend)


def test_sweep_over_backends_and_threads():
    backends = ["openssl", *[n for n in OTHERS if "AES/GCM/NoPadding" in HAS[n]
                             and n != "sodium"][:2]]
    r = pcb.sweep("cipher", transformation="AES/GCM/NoPadding", payload=64, backend=backends,
                  repeats=3, min_time=0.002, warmup=0.0)
    assert len(r) == len(backends)
    ratio = r.ratio({"backend": backends[1]}, {"backend": "openssl"})
    assert ratio.estimate > 0
    r2 = pcb.sweep("cipher", transformation="AES/CTR/NoPadding", payload=1024, scope="stream",
                   threads=[1, 2], repeats=2, min_time=0.002, warmup=0.0)
    assert sorted(m.threads for m in r2) == [1, 2]


# ------------------------------------------------------------------- OpenSSL alone

@pytest.mark.skipif(not os.environ.get("PCB_TEST_BUILD"),
                    reason="builds the extension again (about a minute): set PCB_TEST_BUILD=1")
def test_openssl_alone_build(tmp_path):
    """PCB_NO_BACKENDS=1 builds with OpenSSL alone; backends() says what is missing."""
    root = Path(__file__).resolve().parent.parent
    subprocess.run(["cp", "-r", str(root / "csrc"), str(root / "pycipherbench"),
                    str(root / "setup.py"), str(root / "pyproject.toml"), str(tmp_path)], check=True)
    for so in (tmp_path / "pycipherbench").glob("_core*.so"):  # else "up to date"
        so.unlink()
    env = dict(os.environ, PCB_NO_BACKENDS="1")
    subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tmp_path,
                   env=env, check=True, capture_output=True)
    code = ("import pycipherbench as pcb\n"
            "b = {x['name']: x for x in pcb.backends()}\n"
            "assert b['openssl']['available'] and not b['nettle']['available']\n"
            "assert 'nettle-dev' in b['nettle']['missing']\n"
            "pcb.measure('AES/GCM/NoPadding', payload=16, repeats=1, min_time=0.001)\n"
            "try:\n    pcb.encrypt('AES/GCM/NoPadding', bytes(16), b'', iv=bytes(12), backend='nettle')\n"
            "except pcb.UnsupportedCipherError as e:\n    assert 'nettle-dev' in str(e), e\n"
            "else:\n    raise AssertionError('nettle ran')\n")
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True)
    out = subprocess.run([sys.executable, "-c", "from pycipherbench.cli import main; main(['backends'])"],
                         cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    apt = [b.apt for b in TABLE if b.probed]  # every probed library is missing there
    assert "apt-get install " + " ".join(apt) in out
    nm = subprocess.run(["ldd", *map(str, (tmp_path / "pycipherbench").glob("_core*.so"))],
                        capture_output=True, text=True).stdout
    assert "libnettle" not in nm and "libsodium" not in nm and "libgcrypt" not in nm
    assert "libcrypto++" not in nm and "libstdc++" not in nm  # C++ only with a C++ shim


# ------------------------------------------------------------------------------- CLI

def test_cli_backends_lists_every_backend(capsys):
    from pycipherbench.cli import main

    assert main(["backends", "-v"]) == 0
    out = capsys.readouterr().out
    for b in ALL_BACKENDS:
        assert b["name"] in out
    missing = [b for b in ALL_BACKENDS if not b["available"]]
    # a package adds a missing C library; nothing adds the floor on a CPU without AES-NI
    assert ("apt-get install" in out) == any(b["kind"] == "c" and b["apt"] for b in missing)
    assert ("Every backend is available" in out) == (not missing)


def test_cli_speed_one_column_per_backend(capsys):
    from pycipherbench.cli import main

    names = [n for n in ("openssl", "sodium", "py:pynacl") if n in HAS]
    assert main(["speed", "--quick", "--payload", "64", "--backend", ",".join(names)]) == 0
    out = capsys.readouterr().out
    head = next(line for line in out.splitlines() if line.startswith("transformation"))
    assert head.split()[2:] == names
    row = next(line for line in out.splitlines() if line.startswith("ChaCha20-Poly1305"))
    assert len(row.split()) == 2 + len(names) and "-" not in row.split()[2:]
    tea = next(line for line in out.splitlines() if line.startswith("TEA/ECB"))
    assert tea.split()[3:] == ["-"] * (len(names) - 1)  # only OpenSSL's build has our TEA
    assert main(["speed", "--quick", "--backend", "libressl"]) == 2
    assert "unknown backend 'libressl'" in capsys.readouterr().err


def test_threads_in_the_masked_child_report_their_spread():
    m = pcb.measure("AES/CTR/NoPadding", payload=1024, scope="stream", threads=2, hw_aes=False,
                    repeats=2, min_time=0.002)
    assert m.threads == 2 and not m.hw_aes and m.thread_spread is not None
    with pytest.raises(ValueError, match="hides the AES instructions from OpenSSL only"):
        pcb.measure("ChaCha20-Poly1305", payload=1024, hw_aes=False, backend=OTHERS[0])


def test_backend_and_threads_bad_types():
    for bad in (5, None, b"nettle"):
        with pytest.raises(TypeError):
            pcb.encrypt("AES/GCM/NoPadding", bytes(16), b"", iv=bytes(12), backend=bad)
        with pytest.raises(TypeError):
            _core.check_kernel("AES/GCM/NoPadding", backend=bad)
    for bad in ("2", 2.0, True, None):
        with pytest.raises(TypeError, match="threads"):
            _core.check_kernel("AES/CTR/NoPadding", threads=bad)
    for bad in (True, 2.0):
        with pytest.raises(TypeError, match="threads"):
            pcb.measure("AES/CTR/NoPadding", threads=bad, repeats=1, min_time=0.001)
    with pytest.raises(TypeError):
        pcb.measure("AES/CTR/NoPadding", backend=1, repeats=1, min_time=0.001)

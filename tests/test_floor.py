"""The floor (issue 21): pycipherbench's own AES-GCM and AES-SIV kernels on AES-NI +
PCLMULQDQ, as backend="floor". test_backends.py runs it like every backend (published
vectors, Wycheproof SIV vectors, agreement with OpenSSL 0..1024, bad tags); here: what only
the floor has (the CPU rule, its limits, every key size on every length with associated
data of every shape, each bit of every tag, long messages across the 8-block loop)."""

import os
import platform
import random
import re
import shutil
import subprocess
import tempfile
import sys
from pathlib import Path

import pytest

import pycipherbench as pcb
from conftest import child_env  # noqa: E402
from pycipherbench import _core, store

FLOOR = next(b for b in pcb.backends() if b["name"] == "floor")
X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


def _cpu_has(*flags):
    try:
        with open("/proc/cpuinfo") as f:
            words = set(f.read().split())
    except OSError:
        return None
    return all(flag in words for flag in flags)


needs_floor = pytest.mark.skipif(not FLOOR["available"], reason=f"floor: {FLOOR['missing']}")
GCM, SIV = "AES/GCM/NoPadding", "AES/SIV/NoPadding"


def test_floor_is_listed_and_available_exactly_where_the_cpu_has_aes_ni_and_pclmul():
    assert FLOOR["kind"] == "c"
    has = _cpu_has("aes", "pclmulqdq", "sse4_1")
    if has is not None:
        assert FLOOR["available"] == (X86 and has)
    if FLOOR["available"]:
        assert set(FLOOR["transformations"]) == {GCM, SIV}
        assert FLOOR["hw_aes"] is True and FLOOR["missing"] is None
    else:
        assert "AES-NI" in FLOOR["missing"] or "PCLMULQDQ" in FLOOR["missing"]


@pytest.mark.skipif(FLOOR["available"], reason="this CPU has the floor")
def test_unavailable_floor_names_what_is_missing():
    with pytest.raises(pcb.UnsupportedCipherError, match="backend 'floor' is unavailable.*AES-NI"):
        pcb.encrypt(GCM, bytes(16), b"x", iv=bytes(12), backend="floor")


@needs_floor
def test_floor_limits_are_value_errors_naming_what_it_takes():
    with pytest.raises(ValueError, match="floor's AES-GCM takes a 12-byte IV only, got 16"):
        pcb.encrypt(GCM, bytes(16), b"x", iv=bytes(16), backend="floor")
    with pytest.raises(pcb.UnsupportedCipherError, match="24-byte key.*backends that have it: openssl"):
        pcb.encrypt(GCM, bytes(24), b"x", iv=bytes(12), backend="floor")
    with pytest.raises(pcb.UnsupportedCipherError, match="48-byte key.*backends that have it: openssl"):
        pcb.encrypt(SIV, bytes(48), b"x", aad=[b""], backend="floor")
    with pytest.raises(pcb.UnsupportedCipherError, match="backend 'floor' has no AES/CBC"):
        pcb.encrypt("AES/CBC/PKCS5Padding", bytes(16), b"x", iv=bytes(16), backend="floor")
    with pytest.raises(ValueError, match="no stream scope"):
        _core.Kernel(GCM, scope="stream", payload=64, backend="floor")


def _siv_aad(rng):
    return [rng.randbytes(rng.choice((0, 1, 15, 16, 17, 32, 40))) for _ in range(rng.randrange(0, 4))]


@needs_floor
@pytest.mark.parametrize("t,key_len", [(GCM, 16), (GCM, 32), (SIV, 32), (SIV, 64)])
def test_agrees_with_openssl_on_every_length_with_every_aad_shape(t, key_len):
    rng = random.Random(f"floor/{t}/{key_len}")
    key = rng.randbytes(key_len)
    for n in range(0, 1025):
        data = rng.randbytes(n)
        if t == GCM:
            iv, aad = rng.randbytes(12), rng.choice([None, b"", rng.randbytes(rng.randrange(1, 300))])
        else:
            iv, aad = rng.choice([None, rng.randbytes(rng.randrange(0, 24))]), _siv_aad(rng)
        want = pcb.encrypt(t, key, data, iv=iv, aad=aad)
        got = pcb.encrypt(t, key, data, iv=iv, aad=aad, backend="floor")
        assert got.hex() == want.hex(), n
        assert pcb.decrypt(t, key, want, iv=iv, aad=aad, backend="floor") == data, n


@needs_floor
@pytest.mark.parametrize("t,key_len", [(GCM, 16), (GCM, 32), (SIV, 32), (SIV, 64)])
def test_long_messages_across_the_eight_block_loop(t, key_len):
    rng = random.Random(f"floor-long/{t}")
    key = rng.randbytes(key_len)
    for n in (1151, 1152, 1153, 4096, 16384, 16384 + 113, 65536 + 5):
        data = rng.randbytes(n)
        iv = rng.randbytes(12) if t == GCM else None
        aad = rng.randbytes(1000) if t == GCM else [rng.randbytes(1000)]
        ct = pcb.encrypt(t, key, data, iv=iv, aad=aad, backend="floor")
        assert ct == pcb.encrypt(t, key, data, iv=iv, aad=aad), n
        assert pcb.decrypt(t, key, ct, iv=iv, aad=aad, backend="floor") == data


@needs_floor
@pytest.mark.parametrize("t,key_len", [(GCM, 16), (GCM, 32), (SIV, 32), (SIV, 64)])
def test_every_tampered_tag_bit_and_byte_is_rejected(t, key_len):
    rng = random.Random(f"floor-tag/{t}/{key_len}")
    key = rng.randbytes(key_len)
    for n in (0, 1, 16, 40, 129):
        iv = rng.randbytes(12) if t == GCM else None
        aad = b"name" if t == GCM else [b"name"]
        ct = pcb.encrypt(t, key, rng.randbytes(n), iv=iv, aad=aad, backend="floor")
        tag_at = len(ct) - 16 if t == GCM else 0
        for bit in range(128):
            bad = bytearray(ct)
            bad[tag_at + bit // 8] ^= 1 << (bit % 8)
            with pytest.raises(pcb.DecryptionError, match="authentication failed on floor"):
                pcb.decrypt(t, key, bytes(bad), iv=iv, aad=aad, backend="floor")
        for i in range(len(ct)):
            bad = bytearray(ct)
            bad[i] ^= 0x80
            with pytest.raises(pcb.DecryptionError):
                pcb.decrypt(t, key, bytes(bad), iv=iv, aad=aad, backend="floor")
        other_key = bytes(b ^ 1 for b in key)
        with pytest.raises(pcb.DecryptionError):
            pcb.decrypt(t, other_key, ct, iv=iv, aad=aad, backend="floor")


@needs_floor
def test_floor_kernels_time_every_message_scope():
    for t, bits in ((GCM, 128), (GCM, 256), (SIV, 256), (SIV, 512)):
        for scope in ("message", "rekey"):
            for op in ("enc", "dec"):
                k = _core.Kernel(t, op=op, payload=64, key_bits=bits, scope=scope, backend="floor")
                assert k.info["backend"] == "floor"
                times = k.sample(5)  # one message each: a clock tick may read 0
                assert len(times) == 5 and min(times) >= 0 and sum(times) > 0
                k.close()


@needs_floor
def test_gcm_spec_vector_with_a_random_key_agrees_with_every_gcm_backend():
    """A cross-check beside OpenSSL: each other library with AES-GCM at 12-byte IVs."""
    key, iv, data, aad = os.urandom(32), os.urandom(12), os.urandom(77), os.urandom(20)
    want = pcb.encrypt(GCM, key, data, iv=iv, aad=aad, backend="floor")
    others = [b["name"] for b in pcb.backends()
              if b["available"] and GCM in b["transformations"] and b["name"] != "floor"]
    assert len(others) >= 2
    for name in others:
        assert pcb.encrypt(GCM, key, data, iv=iv, aad=aad, backend=name) == want, name


# ------------------------------------------------------------- the lean store on the floor

ENTRY = re.compile(rb'<string name="([^"]*)">([^<]*)</string>')


def _names(path):
    return sorted(m.group(1) for m in ENTRY.finditer(Path(path).read_bytes())
                  if not m.group(1).startswith(b"__androidx_security_crypto_encrypted_prefs_"))


@needs_floor
def test_default_store_on_the_floor_writes_openssls_bytes(tmp_path):
    """crypto_backend='auto' (the default) seals on the floor: its AES-SIV names are
    byte-for-byte OpenSSL's (a put of an existing key replaces its entry, it does not add
    one), its values open on OpenSSL and OpenSSL's on it."""
    key, path = str(tmp_path / "m.key"), str(tmp_path / "prefs.xml")
    names = [f"key{i}" * (i % 5 + 1) for i in range(40)] + ["", "é", "x" * 300]
    with store.open(path, master_key_file=key, crypto_backend="openssl") as s:
        e = s.edit()
        for i, n in enumerate(names):
            e.put_string(n, f"v{i}" * i)
        e.commit()
    before = _names(path)
    with store.open(path, master_key_file=key) as s:  # auto: the floor
        assert {n: s.get_string(n) for n in names} == {n: f"v{i}" * i for i, n in enumerate(names)}
        e = s.edit()
        for i, n in enumerate(names):
            e.put_string(n, f"w{i}" * i)
        e.commit()
    assert _names(path) == before
    with store.open(path, master_key_file=key, crypto_backend="openssl") as s:
        assert {n: s.get_string(n) for n in names} == {n: f"w{i}" * i for i, n in enumerate(names)}


@needs_floor
def test_default_store_on_the_floor_rejects_a_tampered_value_and_name(tmp_path):
    key, path = str(tmp_path / "m.key"), str(tmp_path / "prefs.xml")
    with store.open(path, master_key_file=key) as s:
        s.edit().put_string("a", "secret").commit()
    data = Path(path).read_bytes()
    m = next(m for m in ENTRY.finditer(data) if not m.group(1).startswith(b"__androidx"))
    for start in (m.start(2) + 30, m.start(1) + 20):  # a byte of the value, then of the name
        bad = bytearray(data)
        bad[start] = ord("A") if bad[start] != ord("A") else ord("B")
        Path(path).write_bytes(bytes(bad))
        with store.open(path, master_key_file=key) as s:
            with pytest.raises(pcb.DecryptionError):
                s.all()
    Path(path).write_bytes(data)
    with store.open(path, master_key_file=key) as s:
        assert s.get_string("a") == "secret"


def test_auto_falls_back_to_openssl_where_the_floor_does_not_serve(tmp_path):
    """faithful, plain, layout='file' and ChaCha20 values take 'auto' (OpenSSL there)."""
    key = str(tmp_path / "m.key")
    for i, kw in enumerate((dict(faithful=True), dict(layout="file"),
                            dict(value_encryption="chacha20-poly1305"))):
        path = str(tmp_path / f"p{i}.xml")
        with store.open(path, master_key_file=key, **kw) as s:
            s.edit().put_string("a", "b").commit()
        with store.open(path, master_key_file=key, crypto_backend="openssl", **kw) as s:
            assert s.get_string("a") == "b"
    with store.open(str(tmp_path / "plain.xml"), encrypted=False) as s:
        s.edit().put_string("a", "b").commit()
    with pytest.raises(ValueError, match=r"crypto_backend must be one of \['auto', 'openssl'"):
        store.open(str(tmp_path / "x.xml"), master_key_file=key, crypto_backend="fastest")


@pytest.mark.skipif(not X86, reason="OPENSSL_ia32cap is x86's mask")
@pytest.mark.parametrize("mask", ["~0x200000200000000:~0x60000000000", ""],
                         ids=["hw_aes=False mask", "empty (OpenSSL: every capability off)"])
def test_openssl_ia32cap_hides_the_floor_as_it_hides_openssls_aes(tmp_path, mask):
    """hw_aes=False runs in a child with OpenSSL's mask set: there the floor is missing,
    and the default store runs on OpenSSL (its AES in software). An empty mask is a set
    one: OpenSSL reads it as 0, every capability off, so the floor is off too."""
    code = ("import pycipherbench as p, sys\n"
            "from pycipherbench import store\n"
            "f = next(b for b in p.backends() if b['name'] == 'floor')\n"
            "assert not f['available'] and 'OPENSSL_ia32cap' in f['missing'], f\n"
            f"with store.open({str(tmp_path / 'p.xml')!r}, master_key_file={str(tmp_path / 'k')!r}) as s:\n"
            "    s.edit().put_string('a', 'b').commit()\n"
            "    assert s.get_string('a') == 'b'\n"
            "print('ok')\n")
    env = child_env(OPENSSL_ia32cap=mask)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=tempfile.gettempdir(),
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


# ------------------------------------------------------------------ speed --backend

@needs_floor
def test_cli_speed_prints_each_library_as_a_multiple_of_the_floor(capsys, tmp_path):
    from pycipherbench.cli import main

    out_json = tmp_path / "speed.json"
    assert main(["speed", "--quick", "--payload", "64", "--backend", "openssl,nettle,floor",
                 "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    i = next(i for i, line in enumerate(lines) if "multiple of the floor" in line)
    assert lines[i + 1].split() == ["backend", "16", "B", "64", "B", "1024", "B", "16384", "B"]
    floor_row = lines[i + 3].split()
    assert floor_row[:2] == ["floor", "(ns/msg)"] and all(float(c.replace(",", "")) > 0
                                                          for c in floor_row[2:])
    want = ["openssl"] + (["nettle"] if "nettle" in {b["name"] for b in pcb.backends()
                                                    if b["available"]} else [])
    rows = {line.split()[0]: line for line in lines[i + 4:i + 4 + len(want)]}
    assert list(rows) == want
    for row in rows.values():
        cells = re.findall(r"x([\d.]+) \[([\d.]+), ([\d.]+)\]", row)
        assert len(cells) == 4 and all(float(lo) <= float(est) <= float(hi) for est, lo, hi in cells)
    import json
    doc = json.loads(out_json.read_text())
    assert doc["floor_multiples"]["head"][0] == "backend"
    assert len(doc["floor_multiples"]["results"]) == 4 * (1 + len(want))


# ------------------------------------------------------- every GCM loop this CPU has

ROOT = Path(__file__).resolve().parent.parent
AVX512_VAES = ("avx512f", "avx512bw", "avx512vl", "vaes", "vpclmulqdq")


def _loops():
    """PCB_FLOOR_VAES values for the GCM loops this CPU runs (floor.h): the backend's
    version names the widest ("..., VAES-512" / "..., VAES-256")."""
    version = FLOOR["version"] or ""
    return (["512"] if "VAES-512" in version else []) + \
        (["256"] if "VAES-" in version else []) + ["none"]


@needs_floor
def test_the_widest_gcm_loop_is_named_and_only_where_the_cpu_has_it():
    version = FLOOR["version"]
    forced = os.environ.get("PCB_FLOOR_VAES") or os.environ.get("PCB_FLOOR_NO_VAES")
    if "VAES-512" in version:
        assert _cpu_has(*AVX512_VAES) is not False
    elif _cpu_has(*AVX512_VAES) and not forced:  # Linux lists avx512f only where XCR0 has zmm
        pytest.fail(f"this CPU has {AVX512_VAES} but the floor runs {version!r}")
    if "VAES-" in version:
        assert _cpu_has("vaes", "vpclmulqdq", "avx2") is not False


_LOOP_CHILD = """
import random, sys, pycipherbench as p
G, want_version = 'AES/GCM/NoPadding', sys.argv[1]
f = next(b for b in p.backends() if b['name'] == 'floor')
assert f['version'] == want_version, (f['version'], want_version)
rng = random.Random(sys.argv[1])
lengths = list(range(0, 1025)) + list(range(1025, 1300, 2)) + [2047, 4096 - 17, 4096 + 17, 16384,
                                                             16384 + 113, 65536 + 5]
for kl in (16, 32):
    key = rng.randbytes(kl)
    for n in lengths:
        d, iv = rng.randbytes(n), rng.randbytes(12)
        for aad in (None, rng.randbytes(1 + n % 70)):
            ct = p.encrypt(G, key, d, iv=iv, aad=aad, backend='floor')
            assert ct == p.encrypt(G, key, d, iv=iv, aad=aad, backend='openssl'), (kl, n, aad)
            assert p.decrypt(G, key, ct, iv=iv, aad=aad, backend='floor') == d, (kl, n)
            if n % 61 == 0 or n in (255, 256, 511, 512, 513, 623, 624, 625, 1135, 1136) or n > 1300:
                for at in (len(ct) - 1 - rng.randrange(16), rng.randrange(len(ct))):
                    bad = bytearray(ct)
                    bad[at] ^= 1 << rng.randrange(8)
                    try:
                        p.decrypt(G, key, bytes(bad), iv=iv, aad=aad, backend='floor')
                    except p.DecryptionError:
                        pass
                    else:
                        raise AssertionError(('tampered byte accepted', kl, n, at))
print('ok')
"""


@needs_floor
@pytest.mark.parametrize("loop", ["512", "256", "none"])
def test_each_gcm_loop_agrees_with_openssl_across_its_thresholds(loop):
    """PCB_FLOOR_VAES (read at key set-up) narrows the GCM loop: messages of 512 bytes and
    more run 32 blocks per pass on 512-bit VAES (the last pass masked), else from 256 bytes
    16 per pass on 256-bit VAES, the rest eight on AES-NI. In a child per loop: every length 0..1024, odd ones to 1300, around
    4 KiB, 16 KiB and 64 KiB, both key sizes, with and without associated data, sealed to
    OpenSSL's bytes, opened, and a flipped tag or ciphertext bit refused."""
    if loop not in _loops():
        pytest.skip(f"this CPU has no {loop}-bit VAES loop (floor: {FLOOR['version']})")
    want = {"512": "AES-NI+PCLMULQDQ, VAES-512", "256": "AES-NI+PCLMULQDQ, VAES-256",
            "none": "AES-NI+PCLMULQDQ"}[loop]
    env = child_env(PCB_FLOOR_VAES=loop)
    env.pop("PCB_FLOOR_NO_VAES", None)
    out = subprocess.run([sys.executable, "-c", _LOOP_CHILD, want], env=env, capture_output=True,
                         text=True, cwd=tempfile.gettempdir(), timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


@needs_floor
def test_the_older_no_vaes_switch_still_keeps_the_aes_ni_loop():
    env = child_env(PCB_FLOOR_NO_VAES="1")
    env.pop("PCB_FLOOR_VAES", None)
    code = ("import pycipherbench as p\n"
            "print(next(b for b in p.backends() if b['name'] == 'floor')['version'])\n")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=tempfile.gettempdir(), timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "AES-NI+PCLMULQDQ", out.stderr[-2000:]


def _c_build_flags():
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    pkg = shutil.which("pkg-config")
    if not cc or not pkg:
        return None
    flags = subprocess.run([pkg, "--cflags", "--libs", "libcrypto"], capture_output=True, text=True)
    return (cc, flags.stdout.split()) if flags.returncode == 0 else None


@needs_floor
@pytest.mark.skipif(not (ROOT / "fuzz" / "fuzz_floor.c").is_file(), reason="needs the source tree")
def test_fuzz_floor_sweep_in_place_and_not_on_every_loop(tmp_path):
    """What Python cannot reach: sealing and opening in place (out == in). fuzz/fuzz_floor.c
    built with -DPCB_FLOOR_SWEEP runs its differential checks (OpenSSL's bytes, opens,
    refuses a flipped byte leaving zeroes) on every GCM loop this CPU has, for every length
    0..1200 and some to 64 KiB, both key sizes, with and without associated data, in place
    and not."""
    build = _c_build_flags()
    if build is None:
        pytest.skip("no C compiler or pkg-config libcrypto")
    cc, crypto = build
    srcs = [ROOT / "fuzz" / "fuzz_floor.c", *sorted((ROOT / "csrc" / "crypto").glob("floor*.c")),
            *(ROOT / "csrc" / f for f in ("crypto/siv.c", "crypto/evp.c", "common/status.c",
                                          "common/cpu.c"))]
    exe = tmp_path / "sweep"
    cmd = [cc, "-std=c11", "-O1", "-DPCB_FLOOR_SWEEP", f"-I{ROOT / 'csrc'}",
           *map(str, srcs), "-o", str(exe), *crypto]
    made = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr[-3000:]
    env = dict(os.environ)
    env.pop("PCB_FLOOR_VAES", None), env.pop("PCB_FLOOR_NO_VAES", None)
    env.pop("LD_PRELOAD", None)  # a sanitizer run's preload is for Python, not this program
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0 and out.stdout.startswith("ok "), (out.stdout + out.stderr)[-2000:]

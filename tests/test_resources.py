"""Resources and secrets (issue 5 §5): looping the public API leaves memory flat.

Method (``assert_flat``): run a step ``warmup`` times (caches, arenas and free
lists reach their steady state), then record the process's resident set size
(``/proc/self/statm``), the Python heap traced by ``tracemalloc``, the number of
open file descriptors and of OS threads; run the step ``n`` more times and
record again. C memory (OpenSSL, the store's own heap) is invisible to
tracemalloc, so it shows in RSS; leaked Python objects show in tracemalloc;
leaked descriptors and unjoined threads show in their counts. ``malloc_trim``
before each reading returns free heap pages to the system, so only memory still
in use counts. The instrument itself is checked against deliberate leaks.

The cheap calls (encrypt/decrypt of small inputs, failing decrypts, bad
arguments) run 100,000 times; 50,000 editors of 9 puts each are dropped
uncommitted; measure() runs 10,000 times; failing store calls 37,500 times;
store open/commit/close cycles, which fsync, 300 times on disk (and 5,000
times on tmpfs, where fsync is free).

Secrets: C memory cannot be read from Python, so what is checked is what can
be: the master key file is created 0600 (whatever the umask, also by rotate), a
key file accessible by group or others is refused, a closed store refuses all
use, and no Store/Editor object outlives its last reference.
"""

from __future__ import annotations

import array
import ctypes
import gc
import os
import shutil
import stat
import sys
import tempfile
import tracemalloc
import weakref
from pathlib import Path

import pytest

import pycipherbench as pcb
from pycipherbench import _core, store

KiB, MiB = 1 << 10, 1 << 20
RSS_LIMIT = 2 * MiB
TRACED_LIMIT = 64 * KiB
PAGE = os.sysconf("SC_PAGE_SIZE")

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/statm"),
                                reason="needs Linux /proc for RSS, descriptors and threads")

# --------------------------------------------------------------------------
# The instrument
# --------------------------------------------------------------------------

try:
    _libc = ctypes.CDLL(None)
    _malloc_trim = _libc.malloc_trim
    _malloc_trim.argtypes = [ctypes.c_size_t]
except (OSError, AttributeError):  # not glibc
    _libc = _malloc_trim = None


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _threads() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    return 0


def _usage() -> dict[str, int]:
    gc.collect()
    gc.collect()
    if _malloc_trim is not None:
        _malloc_trim(0)
    traced, _peak = tracemalloc.get_traced_memory()
    return dict(rss=_rss(), traced=traced, tm_own=tracemalloc.get_tracemalloc_memory(),
                fds=_fds(), threads=_threads())


def assert_flat(step, n, *, warmup=2000, rss_limit=RSS_LIMIT, traced_limit=TRACED_LIMIT):
    """Run step(i) warmup + n times; memory, descriptors and threads stay flat over the n."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        for i in range(warmup):
            step(i)
        a = _usage()
        for i in range(n):
            step(i)
        b = _usage()
    finally:
        if not was_tracing:
            tracemalloc.stop()
    # tracemalloc's own tables live in RSS too; they are not the code under test.
    rss = (b["rss"] - a["rss"]) - (b["tm_own"] - a["tm_own"])
    traced = b["traced"] - a["traced"]
    print(f"{getattr(step, '__qualname__', step)}: n={n} RSS {rss:+d} B, traced {traced:+d} B, "
          f"fds {a['fds']}->{b['fds']}, threads {a['threads']}->{b['threads']}")
    assert b["fds"] == a["fds"], f"open file descriptors grew from {a['fds']} to {b['fds']} over {n} iterations"
    assert b["threads"] == a["threads"], f"OS threads grew from {a['threads']} to {b['threads']} over {n} iterations"
    assert traced < traced_limit, (
        f"tracemalloc: the Python heap grew {traced} bytes over {n} iterations "
        f"({traced / n:.1f} B/iteration): leaked Python objects")
    assert rss < rss_limit, (
        f"RSS grew {rss / MiB:.2f} MiB over {n} iterations ({rss / n:.1f} B/iteration): "
        f"leaked C memory")
    return dict(rss=rss, traced=traced)


class _Leaks:
    """Deliberate leaks, to show the instrument sees them."""

    def __init__(self):
        self.objs, self.fds = [], []
        self.ptrs = array.array("Q", bytes(8 * 8192))  # preallocated: no Python objects per leak

    def python(self, i):
        self.objs.append(bytes(64) + i.to_bytes(4, "little"))

    def c(self, i):
        p = _libc.malloc(1024)
        ctypes.memset(p, 1, 1024)
        self.ptrs[self._next()] = p

    def _next(self):
        self.n = getattr(self, "n", 0) + 1
        return self.n - 1

    def fd(self, i):
        self.fds.append(os.open(os.devnull, os.O_RDONLY))

    def release(self):
        self.objs.clear()
        for p in self.ptrs[: getattr(self, "n", 0)]:
            _libc.free(p)
        for fd in self.fds:
            os.close(fd)


@pytest.mark.parametrize("kind, n, message", [
    ("python", 4000, "tracemalloc"),
    ("c", 4096, "RSS"),
    ("fd", 10, "descriptors"),
])
def test_the_instrument_sees_leaks(kind, n, message):
    if kind == "c" and _libc is None:
        pytest.skip("no libc malloc through ctypes")
    if kind == "c":
        _libc.malloc.restype = ctypes.c_void_p
        _libc.malloc.argtypes = [ctypes.c_size_t]
        _libc.free.argtypes = [ctypes.c_void_p]
    leaks = _Leaks()
    try:
        with pytest.raises(AssertionError, match=message):
            assert_flat(getattr(leaks, kind), n, warmup=10)
    finally:
        leaks.release()


# --------------------------------------------------------------------------
# encrypt / decrypt: every family, successes, failing decrypts, bad arguments
# --------------------------------------------------------------------------

NAMES = pcb.ciphers(backend="openssl")
TEA_FAMILIES = ("TEA", "XTEA", "TEA-ref", "XTEA-ref")


def _family(name):
    return name if name == "ChaCha20-Poly1305" else name.split("/")[0]


def _mode(name):
    return "AEAD" if name == "ChaCha20-Poly1305" else name.split("/")[1]


def _block(name):
    return {"AES": 16, "ChaCha20-Poly1305": 1}.get(_family(name), 8)


def _key_lens(name):
    if _mode(name) == "SIV":
        return (32, 48, 64)
    return {"AES": (16, 24, 32), "DES": (8,), "DESede": (16, 24),
            "ChaCha20-Poly1305": (32,)}.get(_family(name), (16,))


def _iv_len(name):
    m = _mode(name)
    if m in ("CBC", "CTR"):
        return _block(name)
    if m == "GCM":
        return 12
    if m == "AEAD":
        return 12
    return None


def _is_tea(name):
    return _family(name) in TEA_FAMILIES


class Call:
    __slots__ = ("name", "key", "data", "kw", "expect")

    def __init__(self, name, key, data, kw, expect=None):
        self.name, self.key, self.data, self.kw, self.expect = name, key, data, kw, expect


def _good_calls():
    """Two or three argument sets per transformation, some as bytearray/memoryview."""
    calls = []
    for name in NAMES:
        for v, klen in enumerate(_key_lens(name) * (2 if len(_key_lens(name)) == 1 else 1)):
            key = bytes((7 * j + v) % 256 for j in range(klen))
            b = _block(name)
            n = (2 + v) * b if _mode(name) in ("ECB", "CBC") and name.endswith("NoPadding") else 29 + 5 * v
            data = bytes((j * 13 + v) % 256 for j in range(n))
            kw = {}
            if _iv_len(name):
                kw["iv"] = bytes(range(40 + v, 40 + v + _iv_len(name)))
            if _mode(name) in ("GCM", "AEAD"):
                kw["aad"] = b"header" * v
            if _mode(name) == "SIV":
                kw["aad"] = [b"component one", bytearray(b"two"), b""][: v + 1] if v else b"hdr"
            if _is_tea(name):
                kw["rounds"] = (32, 16, 64)[v % 3]
            if v == 1:  # buffers other than bytes: each must be released again
                key, data = bytearray(key), memoryview(bytearray(data))
            calls.append(Call(name, key, data, kw, pcb.encrypt(name, key, data, **kw)))
    return calls


GOOD = _good_calls()


def _flip(b, i):
    b = bytearray(b)
    b[i] ^= 1
    return bytes(b)


def _failing_decrypts():
    """Ciphertexts that raise DecryptionError, for every family."""
    out = []
    for c in GOOD:
        name, m = c.name, _mode(c.name)
        if m in ("GCM", "AEAD", "SIV"):
            out.append(Call(name, c.key, _flip(c.expect, -1), c.kw))          # bad tag
            out.append(Call(name, c.key, c.expect[:7], c.kw))                  # shorter than a tag
        elif name.endswith("PKCS5Padding"):
            b = _block(name)
            bad = bytes(2 * b - 1) + b"\x00"                                   # padding byte 0
            ct = pcb.encrypt(name.replace("PKCS5Padding", "NoPadding"), c.key, bad, **c.kw)
            out.append(Call(name, c.key, ct, c.kw))
            out.append(Call(name, c.key, c.expect[:-1], c.kw))                 # not whole blocks
        elif m in ("ECB", "CBC"):
            out.append(Call(name, c.key, c.expect + b"\x01", c.kw))           # not whole blocks
    return out


FAILING = _failing_decrypts()


def test_every_family_is_covered():
    families = {_family(n) for n in NAMES}
    assert {_family(c.name) for c in GOOD} == families
    assert {_family(c.name) for c in FAILING} == families


def _roundtrip(i):
    c = GOOD[i % len(GOOD)]
    ct = pcb.encrypt(c.name, c.key, c.data, **c.kw)
    if ct != c.expect:
        raise AssertionError(f"{c.name}: encrypt is not deterministic for fixed inputs")
    if pcb.decrypt(c.name, c.key, ct, **c.kw) != bytes(c.data):
        raise AssertionError(f"{c.name}: round trip failed")


def _failing_decrypt(i):
    c = FAILING[i % len(FAILING)]
    try:
        pcb.decrypt(c.name, c.key, c.data, **c.kw)
    except pcb.DecryptionError:
        return
    raise AssertionError(f"{c.name}: decrypt of a bad ciphertext did not raise")


def test_encrypt_decrypt_100k_flat():
    """100,000 encrypt + decrypt pairs over every transformation and key size."""
    assert_flat(_roundtrip, 100_000)


def test_failing_decrypt_100k_flat():
    """100,000 decrypts that raise DecryptionError (bad tag, padding, length)."""
    assert_flat(_failing_decrypt, 100_000)


def _bad_calls():
    """Calls that raise on bad arguments, each with the exception it raises."""
    aes, gcm, siv, tea = "AES/CBC/PKCS5Padding", "AES/GCM/NoPadding", "AES/SIV/NoPadding", "TEA/CTR/NoPadding"
    k16, iv16, iv12 = bytes(16), bytes(16), bytes(12)
    ba = bytearray(b"a bytearray argument")
    E, D = pcb.encrypt, pcb.decrypt
    M = dict(payload=64, min_time=1e-5, repeats=1, warmup=0)
    calls = [
        (ValueError, lambda: E(aes, bytes(15), ba, iv=iv16)),                        # key length
        (ValueError, lambda: D(gcm, bytes(33), ba, iv=iv12)),
        (ValueError, lambda: E("DESede/CBC/NoPadding", bytes(23), bytes(8), iv=bytes(8))),
        (ValueError, lambda: E("ChaCha20-Poly1305", bytes(16), ba, iv=iv12)),
        (TypeError, lambda: E(aes, "k" * 16, ba, iv=iv16)),                           # key type
        (TypeError, lambda: E(aes, k16, None, iv=iv16)),                              # data type
        (TypeError, lambda: D(aes, k16, [1, 2], iv=iv16)),
        (ValueError, lambda: E(aes, k16, ba, iv=bytes(15))),                          # iv length
        (ValueError, lambda: E(aes, k16, ba)),                                        # iv missing
        (ValueError, lambda: E("AES/ECB/PKCS5Padding", k16, ba, iv=iv16)),           # iv to ECB
        (TypeError, lambda: E(gcm, k16, ba, iv="nonce")),                             # iv type
        (ValueError, lambda: E(aes, k16, ba, iv=iv16, aad=b"x")),                    # aad to non-AEAD
        (TypeError, lambda: E(gcm, k16, ba, iv=iv12, aad="text")),
        (TypeError, lambda: E(siv, bytes(32), ba, aad=[ba, b"ok", "not bytes"])),     # list, bad 3rd
        (TypeError, lambda: D(siv, bytes(32), bytes(32), aad=[b"a", None])),
        (ValueError, lambda: E(tea, k16, ba, iv=bytes(8), rounds=0)),                 # rounds
        (ValueError, lambda: E(tea, k16, ba, iv=bytes(8), rounds=2**64)),
        (TypeError, lambda: E(tea, k16, ba, iv=bytes(8), rounds=3.5)),
        (ValueError, lambda: E(aes, k16, ba, iv=iv16, rounds=32)),                    # rounds to AES
        (ValueError, lambda: E("AES/ECB/NoPadding", k16, bytes(17))),                 # partial block
        (pcb.UnsupportedCipherError, lambda: E("Blowfish/CBC/NoPadding", k16, ba, iv=bytes(8))),
        (ValueError, lambda: D("AES/CBC/NoPadding\x00", k16, bytes(16), iv=iv16)),
        (TypeError, lambda: E(b"AES/ECB/NoPadding", k16, bytes(16))),                 # name type
        (TypeError, lambda: E(None, k16, bytes(16))),
        (pcb.UnsupportedCipherError, lambda: pcb.measure("Foo/CBC/NoPadding", **M)),
        (pcb.UnsupportedCipherError, lambda: pcb.measure("Foo/CBC/NoPadding", hw_aes=False, **M)),
        (ValueError, lambda: pcb.measure(gcm, **dict(M, payload=2**40))),
        (ValueError, lambda: pcb.measure(gcm, **dict(M, op="x"))),
        (ValueError, lambda: pcb.measure(gcm, **dict(M, scope="x"))),
        (ValueError, lambda: pcb.measure(gcm, **dict(M, key_bits=100))),
        (TypeError, lambda: pcb.measure(gcm, **dict(M, hw_aes=1))),
        (ValueError, lambda: store.bench("get", n_keys=10**9)),
        (ValueError, lambda: store.bench("nope")),
        (TypeError, lambda: pcb.machine(1)),
        (TypeError, lambda: pcb.ciphers(1)),
    ]
    return calls, ba


BAD, _BAD_BYTEARRAY = _bad_calls()


def _bad_call(i):
    exc, call = BAD[i % len(BAD)]
    try:
        call()
    except exc:
        return
    raise AssertionError(f"bad call #{i % len(BAD)} did not raise {exc.__name__}")


def test_bad_arguments_100k_flat():
    """100,000 calls refused for bad arguments (ValueError, TypeError, unknown names)."""
    args = [pcb.DecryptionError, pcb.UnsupportedCipherError, ValueError, TypeError]
    before = [sys.getrefcount(a) for a in args]
    assert_flat(_bad_call, 100_000)
    # Every argument buffer was released again: a bytearray with exports cannot resize.
    _BAD_BYTEARRAY.append(0)
    _BAD_BYTEARRAY.pop()
    assert [sys.getrefcount(a) for a in args] == before, "references to exception types leaked"


def test_argument_references_are_not_leaked():
    """The objects passed in (names, keys, data, IVs, AAD lists) keep their reference counts."""
    good = GOOD[: len(NAMES) * 2]
    objs = [o for c in good for o in (c.name, c.key, c.data, *c.kw.values())]
    objs += [o for c in FAILING for o in (c.data, *c.kw.values())]
    # Not ints or empty bytes: shared singletons whose counts move with any other code.
    objs = [o for o in objs if isinstance(o, (str, bytes, bytearray, memoryview, list)) and len(o) > 1]
    before = [sys.getrefcount(o) for o in objs]
    for i in range(5 * len(GOOD)):
        _roundtrip(i)
        _failing_decrypt(i)
    gc.collect()
    assert [sys.getrefcount(o) for o in objs] == before
    for c in GOOD:  # the bytearray/memoryview arguments were all released
        if isinstance(c.key, bytearray):
            c.key.append(0)
            del c.key[-1]


# --------------------------------------------------------------------------
# measure(), machine(), ciphers()
# --------------------------------------------------------------------------

def _measure_calls():
    out = []
    for name in NAMES:
        scopes = ["message", "rekey"] + ([] if _mode(name) in ("SIV",) else ["stream"])
        for j, scope in enumerate(scopes):
            out.append((name, dict(op=("enc", "dec")[j % 2], scope=scope)))
    return out


MEASURES = _measure_calls()


def _measure(i):
    name, kw = MEASURES[i % len(MEASURES)]
    m = pcb.measure(name, payload=64, min_time=1e-5, repeats=1, warmup=0, **kw)
    if not m.median > 0:
        raise AssertionError(f"{name}: {m!r}")
    if i % 16 == 0:
        pcb.machine()
        pcb.ciphers(backend="openssl")
        m.to_dict()


def test_measure_10k_flat():
    """10,000 tiny measurements (payload 64 B) over every transformation and scope."""
    assert_flat(_measure, 10_000, warmup=1000)


# --------------------------------------------------------------------------
# The store
# --------------------------------------------------------------------------

def _new_key(path, data=None, mode=0o600):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    os.write(fd, os.urandom(32) if data is None else data)
    os.close(fd)
    os.chmod(path, mode)
    return str(path)


STORE_VARIANTS = [
    dict(),
    dict(layout="file"),
    dict(value_encryption="chacha20-poly1305", cache=True),
    dict(encrypted=False),
]


def _lifecycle_step(directory, key):
    def step(i):
        opts = STORE_VARIANTS[i % len(STORE_VARIANTS)]
        path = os.path.join(directory, f"life{i % len(STORE_VARIANTS)}.xml")
        kw = dict(opts) if opts.get("encrypted") is False else dict(opts, master_key_file=key)
        with store.open(path, **kw) as s:
            e = s.edit()
            e.put_string(f"k{i % 8}", "v" * (i % 50)).put_int("n", i % 1000).put_long("l", -i)
            e.put_float("f", 0.5).put_bool("b", i % 2 == 0).put_string_set("set", {"a", str(i % 3)})
            e.remove(f"k{(i + 3) % 8}")
            if i % 2:
                e.apply()
                s.flush()
            else:
                e.commit()
            if s.get_int("n") != i % 1000 or s.get_string(f"k{i % 8}") != "v" * (i % 50):
                raise AssertionError("the store lost a committed value")
            "set" in s  # noqa: B015
            f"k{(i + 3) % 8}" in s  # noqa: B015
            s.get("missing", 0)
            s.all()
            len(s)
    return step


def _no_tmp_files(directory):
    stray = [n for n in os.listdir(directory) if n.endswith(".tmp")]
    assert not stray, f"temporary files left behind: {stray}"


def test_store_commit_cycles_on_disk_flat(tmp_path):
    """300 open / put / commit-or-apply / get / contains / all / close cycles (fsync on disk)."""
    key = str(tmp_path / "master.key")
    assert_flat(_lifecycle_step(str(tmp_path), key), 300, warmup=40)
    _no_tmp_files(tmp_path)


@pytest.fixture
def tmpfs_dir():
    base = "/dev/shm"
    if not (os.path.isdir(base) and os.access(base, os.W_OK)):
        pytest.skip("no writable /dev/shm")
    d = tempfile.mkdtemp(prefix="pcb-res-", dir=base)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_store_commit_cycles_on_tmpfs_flat(tmpfs_dir):
    """The same cycle 5,000 times where fsync is free, for a finer leak bound per commit."""
    key = os.path.join(tmpfs_dir, "master.key")
    assert_flat(_lifecycle_step(tmpfs_dir, key), 5_000, warmup=400)
    _no_tmp_files(tmpfs_dir)


@pytest.fixture
def filled(tmp_path):
    """An encrypted store with a few entries: (path, key file)."""
    key = str(tmp_path / "master.key")
    path = str(tmp_path / "filled.xml")
    with store.open(path, master_key_file=key) as s:
        with s.edit() as e:
            for j in range(20):
                e.put_string(f"name{j}", f"value{j}" * j)
            e.put_string_set("set", {"x", "y"}).put_long("long", 1 << 40)
    return path, key


def test_store_open_read_close_20k_flat(filled):
    """20,000 open / get / contains / all / close cycles without writes."""
    path, key = filled
    mtime = os.stat(path).st_mtime_ns

    def step(i):
        with store.open(path, master_key_file=key, cache=i % 2 == 1) as s:
            if s.get_string(f"name{i % 20}") != f"value{i % 20}" * (i % 20):
                raise AssertionError("wrong value read back")
            f"name{i % 25}" in s  # noqa: B015
            s.get_string_set("set")
            s.get_int("name1", -1)  # a type mismatch gives the default
            if i % 4 == 0:
                s.all()

    assert_flat(step, 20_000, warmup=1000)
    assert os.stat(path).st_mtime_ns == mtime, "reads changed the store file"


def test_editors_dropped_without_commit_flat(filled):
    """50,000 editors, each with 9 puts/removes (some failing), dropped without commit."""
    path, key = filled
    before = Path(path).read_bytes()
    with store.open(path, master_key_file=key) as s:
        def step(i):
            e = s.edit()
            e.put_string(f"name{i % 30}", "x" * (i % 64)).put_int("i", i).put_long("l", i << 33)
            e.put_float("f", i / 7).put_bool("b", True).put_string_set("set", ["p", "q", str(i % 5)])
            e.remove("name3").clear()
            try:
                e.put_int("too big", 2**40)
            except ValueError:
                pass
            try:
                e.put_string_set("bad", ["ok", 5])
            except TypeError:
                pass
            if i % 8 == 0:  # an editor used as a context manager, discarded by an exception
                try:
                    with s.edit() as e2:
                        e2.put_string("discarded", "!")
                        raise KeyError("discard")
                except KeyError:
                    pass

        assert_flat(step, 50_000, warmup=2000)
        assert "discarded" not in s and "i" not in s
        assert s.get_string("name3") == "value3" * 3
    assert Path(path).read_bytes() == before, "uncommitted editors changed the file"


def test_failing_store_calls_flat(filled, tmp_path):
    """37,500 failing opens and refused calls (2,500 of each kind): no descriptor, object or byte leaks."""
    path, key = filled
    data = Path(path).read_bytes()
    wrong_key = _new_key(tmp_path / "wrong.key")
    short_key = _new_key(tmp_path / "short.key", os.urandom(31))
    loose_key = _new_key(tmp_path / "loose.key", mode=0o640)
    truncated = tmp_path / "truncated.xml"
    truncated.write_bytes(data[: len(data) // 2])
    corrupted = tmp_path / "corrupted.xml"
    corrupted.write_bytes(data.replace(b"<map>", b"<set>"))
    nokey = tmp_path / "nokey.xml"
    nokey.write_bytes(data)
    closed = store.open(path, master_key_file=key)
    closed_editor = closed.edit()
    closed.close()
    live = store.open(path, master_key_file=key)
    reserved = "__androidx_security_crypto_encrypted_prefs_key_keyset__"
    cases = [
        (pcb.DecryptionError, lambda: store.open(path, master_key_file=wrong_key)),
        (store.StoreFormatError, lambda: store.open(str(truncated), master_key_file=key)),
        (store.StoreFormatError, lambda: store.open(str(corrupted), master_key_file=key)),
        (store.StoreFormatError, lambda: store.open(path, master_key_file=short_key)),
        (PermissionError, lambda: store.open(path, master_key_file=loose_key)),
        (FileNotFoundError, lambda: store.open(str(nokey), master_key_file=str(tmp_path / "absent.key"))),
        (IsADirectoryError, lambda: store.open(str(tmp_path), master_key_file=key)),
        (ValueError, lambda: store.open(path, master_key_file=key, layout="nope")),
        (ValueError, lambda: closed.get("name1")),
        (ValueError, lambda: closed.all()),
        (ValueError, lambda: closed_editor.put_string("a", "b")),
        (store.ReservedNameError, lambda: live.get(reserved)),
        (TypeError, lambda: live.get(5)),
        (ValueError, lambda: live.edit().put_int("x", 2**31)),
        (store.StoreFormatError, lambda: live.rotate(master_key_file=short_key)),
    ]

    def step(i):
        exc, call = cases[i % len(cases)]
        try:
            call()
        except exc:
            return
        raise AssertionError(f"failing store call #{i % len(cases)} did not raise {exc.__name__}")

    try:
        assert_flat(step, 2_500 * len(cases), warmup=20 * len(cases))
        with store.open(path, master_key_file=key) as fresh:
            assert live.all() == fresh.all()
    finally:
        live.close()
    assert Path(path).read_bytes() == data
    assert not os.path.exists(tmp_path / "absent.key"), "a failed open created a master key"
    _no_tmp_files(tmp_path)


# --------------------------------------------------------------------------
# Object lifetimes: no Store or Editor outlives its last reference
# --------------------------------------------------------------------------

TRACKED = (_core.Store, _core.Editor, store.Store, store.Editor)


def _count_live():
    gc.collect()
    counts = dict.fromkeys(TRACKED, 0)
    for o in gc.get_objects():
        t = type(o)
        if t in counts:
            counts[t] += 1
    return {t.__qualname__ if t.__module__ == "pycipherbench.store" else "_core." + t.__name__: n
            for t, n in counts.items()}


def test_no_store_or_editor_objects_leak(filled, tmp_path):
    path, key = filled
    before = _count_live()
    refs = []
    for i in range(200):
        s = store.open(path, master_key_file=key, cache=bool(i % 2))
        refs.append(weakref.ref(s._store))
        e = s.edit().put_string("tmp", "x")
        if i % 3 == 0:
            s.close()            # an editor outliving the close
        elif i % 3 == 1:
            del s                # the editor keeps the store alive; dropped later
        else:
            with s:
                s.get("name1")
        del e
        try:
            store.open(path, master_key_file=_new_key(tmp_path / f"w{i}.key"))
        except pcb.DecryptionError:
            pass
    s = None
    assert _count_live() == before, "Store/Editor objects outlived their references"
    assert all(r() is None for r in refs), "a _core.Store is still alive"


def test_objects_are_freed_without_the_cycle_collector(filled):
    """No reference cycles: dropping the last reference frees (and closes) a store at once."""
    path, key = filled
    gc.disable()
    try:
        s = store.open(path, master_key_file=key)
        e = s.edit()
        ref = weakref.ref(s._store)
        del s
        assert ref() is not None, "the editor does not keep its store alive"
        e.put_string("from the editor", "kept").commit()
        del e
        assert ref() is None, "the store was not freed when its last reference went"
    finally:
        gc.enable()
    with store.open(path, master_key_file=key) as s:
        assert s.get_string("from the editor") == "kept"


def test_a_dropped_store_flushes_applied_changes(filled):
    path, key = filled
    s = store.open(path, master_key_file=key)
    s.edit().put_string("applied", "then dropped").apply()
    ref = weakref.ref(s._store)
    del s
    gc.collect()
    assert ref() is None
    with store.open(path, master_key_file=key) as s:
        assert s.get_string("applied") == "then dropped"


# --------------------------------------------------------------------------
# Secrets
# --------------------------------------------------------------------------

def test_closed_store_refuses_every_use(filled):
    path, key = filled
    s = store.open(path, master_key_file=key)
    e = s.edit()
    s.close()
    assert s.closed
    s.close()  # idempotent
    refused = {
        "get": lambda: s.get("name1"), "get_string": lambda: s.get_string("name1"),
        "get_int": lambda: s.get_int("x"), "get_long": lambda: s.get_long("x"),
        "get_float": lambda: s.get_float("x"), "get_bool": lambda: s.get_bool("x"),
        "get_string_set": lambda: s.get_string_set("set"), "contains": lambda: "name1" in s,
        "len": lambda: len(s), "all": s.all, "edit": s.edit, "flush": s.flush,
        "rotate": s.rotate, "heap_bytes": lambda: s.heap_bytes, "disk_bytes": lambda: s.disk_bytes,
        "editor.put_string": lambda: e.put_string("a", "b"), "editor.put_int": lambda: e.put_int("a", 1),
        "editor.remove": lambda: e.remove("a"), "editor.clear": e.clear,
        "editor.commit": e.commit, "editor.apply": e.apply,
    }
    for what, call in refused.items():
        with pytest.raises(ValueError, match="closed"):
            call()
    assert "closed" in repr(s)


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_master_key_file_created_0600(tmp_path, umask):
    kf = tmp_path / "created.key"
    old = os.umask(umask)
    try:
        with store.open(str(tmp_path / "s.xml"), master_key_file=str(kf)) as s:
            s.edit().put_string("k", "v").commit()
            rotated = tmp_path / "rotated.key"
            s.rotate(master_key_file=str(rotated))
    finally:
        os.umask(old)
    for f in (kf, rotated):
        st = os.stat(f)
        assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600, (f.name, oct(st.st_mode))
        assert st.st_size == 32
    _no_tmp_files(tmp_path)


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o610, 0o601])
def test_master_key_accessible_by_others_is_refused(tmp_path, mode):
    """Beyond test_store_format's readable modes: any group/other bit is refused, ssh-style."""
    kf = _new_key(tmp_path / "loose.key", mode=mode)
    with pytest.raises(PermissionError, match=r"chmod\s+0?600"):
        store.open(str(tmp_path / "s.xml"), master_key_file=kf)
    assert stat.S_IMODE(os.stat(kf).st_mode) == mode, "the store changed the key file's mode"
    assert not (tmp_path / "s.xml").exists()

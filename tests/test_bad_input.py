"""Table-driven matrix of invalid inputs for encrypt / decrypt / measure.

Every case asserts the exception type and that its message names what was
expected (a ``match=`` on a key word).  Everything runs in-process: a crash
here is a bug.
"""

import math

import pytest

import pycipherbench as pcb

# --------------------------------------------------------------------------
# Transformations and their parameters (from the spec)
# --------------------------------------------------------------------------

ALL = pcb.ciphers(backend="openssl")
TEA_FAMILIES = ("TEA", "XTEA", "TEA-ref", "XTEA-ref")


def family(name):
    return "ChaCha20-Poly1305" if name == "ChaCha20-Poly1305" else name.split("/")[0]


def mode(name):
    return "AEAD" if name == "ChaCha20-Poly1305" else name.split("/")[1]


def block(name):
    if family(name) == "AES":
        return 16
    if name == "ChaCha20-Poly1305":
        return 1
    return 8


def key_len(name):
    if mode(name) == "SIV":
        return 32
    return {"AES": 16, "DES": 8, "DESede": 24, "ChaCha20-Poly1305": 32}.get(family(name), 16)


def iv_len(name):
    m = mode(name)
    if m in ("CBC", "CTR"):
        return block(name)
    if m in ("GCM", "AEAD"):
        return 12
    return None


def is_tea(name):
    return family(name) in TEA_FAMILIES


def is_pkcs5(name):
    return name.endswith("PKCS5Padding")


def whole_blocks(name):
    return mode(name) in ("ECB", "CBC") and name.endswith("NoPadding")


def takes_aad(name):
    return mode(name) in ("GCM", "AEAD", "SIV")


WRONG_KEY_LENS = {
    "AES": [0, 8, 15, 17, 20, 33, 64],
    "SIV": [0, 16, 24, 31, 33, 65],
    "DES": [0, 7, 9, 16, 24],
    "DESede": [0, 8, 15, 17, 23, 25, 32],
    "TEA": [0, 8, 15, 17, 24, 32],
    "ChaCha20-Poly1305": [0, 16, 31, 33],
}


def wrong_key_lens(name):
    if mode(name) == "SIV":
        return WRONG_KEY_LENS["SIV"]
    fam = family(name)
    return WRONG_KEY_LENS["TEA" if fam in TEA_FAMILIES else fam]


PLAINTEXT = bytes(range(48))  # 3 AES blocks, 6 DES blocks


def base_args(name, op):
    """Arguments for which `op` succeeds; cases override one of them."""
    args = dict(
        key=bytes(range(1, key_len(name) + 1)),
        data=PLAINTEXT,
        iv=None if iv_len(name) is None else bytes(range(100, 100 + iv_len(name))),
        aad=b"header" if takes_aad(name) else None,
    )
    if is_tea(name):
        args["rounds"] = 32
    if op == "decrypt":
        args["data"] = pcb.encrypt(name, **args)
    return args


OPS = {"encrypt": pcb.encrypt, "decrypt": pcb.decrypt}


class Case:
    def __init__(self, name, ops, over, exc, match, tag):
        self.name, self.ops, self.over, self.exc, self.match, self.tag = name, ops, over, exc, match, tag

        self.raw = False  # True: `over` is the whole argument set
        self.strict = True  # False: skip the exception-class refinement check


def check_exc(excinfo, expected):
    e = excinfo.value
    if expected is ValueError:
        # a parameter error is not a decryption failure or an unknown cipher
        assert not isinstance(e, (pcb.DecryptionError, pcb.UnsupportedCipherError)), repr(e)
    if expected in (pcb.DecryptionError, pcb.UnsupportedCipherError):
        assert isinstance(e, ValueError) and isinstance(e, pcb.CipherBenchError), repr(e)


BOTH = ("encrypt", "decrypt")
ENC = ("encrypt",)
DEC = ("decrypt",)

RE_KEY = r"(?i)key"
RE_IV = r"(?i)\biv\b|iv[ _]|nonce|initiali[sz]ation vector|counter"
RE_AAD = r"(?i)aad|associated"
RE_ROUNDS = r"(?i)rounds"
RE_BLOCK = r"(?i)block|multiple"
RE_TYPE = r"(?i)bytes|buffer"
RE_TAG = r"(?i)tag|auth|verif|integrity|mac\b"
RE_PAD = r"(?i)pad"
RE_LEN = r"(?i)length|short|block|multiple|empty|truncat|least"

# --------------------------------------------------------------------------
# The matrix
# --------------------------------------------------------------------------

CASES = []

# unknown names
for bad in [
    "AES/XYZ/NoPadding",
    "",
    "Blowfish/CBC/NoPadding",
    "AES",
    "AES/CBC",
    "AES/CBC/NoPadding/extra",
    "AES/CBC/ISO10126Padding",
    "AES/CTR/PKCS5Padding",
    "AES/GCM/PKCS5Padding",
    "DES/CTR/NoPadding",
    "TEA-ref/GCM/NoPadding",
    "ChaCha20",
]:
    c = Case(bad, BOTH, dict(key=bytes(16), data=bytes(16), iv=bytes(16)), pcb.UnsupportedCipherError,
             r"(?i)unsupported|unknown|not supported|cipher|transformation", "unknown-name")
    c.raw = True
    CASES.append(c)

# an embedded NUL must not be cut off by C string handling (a plain ValueError is fine)
c = Case("AES/CBC/NoPadding\x00", BOTH, dict(key=bytes(16), data=bytes(16), iv=bytes(16)), ValueError,
         r"(?i)null|nul\b|unsupported|unknown|not supported|cipher|transformation", "embedded-NUL")
c.raw, c.strict = True, False
CASES.append(c)

for name in ALL:
    # wrong key lengths
    for n in wrong_key_lens(name):
        CASES.append(Case(name, BOTH, dict(key=bytes(n)), ValueError, RE_KEY, f"key{n}"))
    # key / data of wrong type
    for what, val in [("str", "k" * key_len(name)), ("int", 16), ("None", None), ("list", [0] * key_len(name)), ("float", 1.5)]:
        CASES.append(Case(name, BOTH, dict(key=val), TypeError, r"(?i)key|bytes|buffer", f"key-{what}"))
    for what, val in [("str", "d" * 16), ("int", 16), ("None", None), ("list", [0] * 16)]:
        CASES.append(Case(name, BOTH, dict(data=val), TypeError, r"(?i)data|bytes|buffer", f"data-{what}"))

    m, b = mode(name), block(name)
    # IV
    if m == "ECB":
        CASES.append(Case(name, BOTH, dict(iv=bytes(b)), ValueError, RE_IV, "iv-to-ECB"))
        CASES.append(Case(name, BOTH, dict(iv=b""), ValueError, RE_IV, "empty-iv-to-ECB"))
    if m in ("CBC", "CTR", "GCM", "AEAD"):
        CASES.append(Case(name, BOTH, dict(iv=None), ValueError, RE_IV, "iv-missing"))
        for what, val in [("str", "i" * iv_len(name)), ("int", 12), ("list", [0] * iv_len(name))]:
            CASES.append(Case(name, BOTH, dict(iv=val), TypeError, r"(?i)\biv\b|nonce|bytes|buffer", f"iv-{what}"))
    if m in ("CBC", "CTR"):
        for n in sorted({0, 1, b - 1, b + 1, 2 * b, 12}):
            if n != b:
                CASES.append(Case(name, BOTH, dict(iv=bytes(n)), ValueError, RE_IV, f"iv{n}"))
    if m == "AEAD":
        for n in (0, 1, 8, 11, 13, 16, 24):
            CASES.append(Case(name, BOTH, dict(iv=bytes(n)), ValueError, RE_IV, f"iv{n}"))
    if m == "GCM":
        for n in (0, 129, 256, 1000):
            CASES.append(Case(name, BOTH, dict(iv=bytes(n)), ValueError, RE_IV, f"iv{n}"))
    if m == "SIV":
        for what, val in [("str", "nonce"), ("int", 16)]:
            CASES.append(Case(name, BOTH, dict(iv=val), TypeError, r"(?i)\biv\b|nonce|bytes|buffer", f"iv-{what}"))

    # AAD
    if not takes_aad(name):
        for what, val in [("bytes", b"x"), ("empty", b"")]:
            CASES.append(Case(name, BOTH, dict(aad=val), ValueError, RE_AAD, f"aad-{what}-to-non-AEAD"))
    elif m in ("GCM", "AEAD"):
        for what, val in [("str", "header"), ("int", 5), ("list", [b"a", b"b"])]:
            CASES.append(Case(name, BOTH, dict(aad=val), TypeError, r"(?i)aad|associated|bytes|buffer", f"aad-{what}"))
    else:  # SIV
        for what, val in [("str", "header"), ("int", 5), ("list-with-str", [b"a", "b"]), ("list-with-None", [b"a", None]),
                          ("dict", {b"a": b"b"})]:
            CASES.append(Case(name, BOTH, dict(aad=val), TypeError, r"(?i)aad|associated|bytes|buffer", f"aad-{what}"))

    # NoPadding ECB/CBC with partial blocks
    if whole_blocks(name):
        for n in (1, b - 1, b + 1, 2 * b + 3):
            CASES.append(Case(name, ENC, dict(data=bytes(n)), ValueError, RE_BLOCK, f"data{n}-not-whole-blocks"))
            CASES.append(Case(name, DEC, dict(data=bytes(n)), pcb.DecryptionError, RE_LEN, f"data{n}-not-whole-blocks"))

    # rounds
    if is_tea(name):
        for val in (0, 1025, -1, 2048, 2**31, 2**32 + 32, 2**64, -(2**64)):
            CASES.append(Case(name, BOTH, dict(rounds=val), ValueError, RE_ROUNDS, f"rounds{val}"))
        for what, val in [("str", "32"), ("float", 3.5), ("float-integral", 32.0), ("bytes", b"32"), ("list", [32])]:
            CASES.append(Case(name, BOTH, dict(rounds=val), TypeError, r"(?i)rounds|int", f"rounds-{what}"))
    else:
        for val in (32, 1, 0):
            CASES.append(Case(name, BOTH, dict(rounds=val), ValueError, RE_ROUNDS, f"rounds{val}-to-non-TEA"))

    # ciphertexts that cannot be decrypted
    if takes_aad(name):
        for n in (0, 1, 15):
            CASES.append(Case(name, DEC, dict(data=bytes(n)), pcb.DecryptionError, RE_LEN + "|" + RE_TAG[4:], f"truncated{n}"))
    if is_pkcs5(name):
        for n in sorted({0, 1, b - 1, b + 1, 2 * b + 1}):
            CASES.append(Case(name, DEC, dict(data=bytes(n)), pcb.DecryptionError, RE_LEN, f"ciphertext{n}-bad-length"))


def _case_params(ops):
    out = []
    for c in CASES:
        for op in c.ops:
            if op in ops:
                out.append(pytest.param(c, op, id=f"{op}-{c.name}-{c.tag}"))
    return out


@pytest.mark.parametrize("case, op", _case_params(BOTH))
def test_bad_input(case, op):
    if case.raw:
        args = dict(case.over)
    else:
        args = base_args(case.name, op)
        args.update(case.over)
    with pytest.raises(case.exc, match=case.match) as ei:
        OPS[op](case.name, **args)
    if case.strict:
        check_exc(ei, case.exc)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("op", BOTH)
def test_base_args_are_valid(name, op):
    """The matrix's baseline arguments succeed (so each case tests one thing)."""
    args = base_args(name, op)
    out = OPS[op](name, **args)
    if op == "decrypt":
        assert out == PLAINTEXT


@pytest.mark.parametrize("bad", [b"AES/ECB/NoPadding", None, 5, ["AES/ECB/NoPadding"]], ids=["bytes", "None", "int", "list"])
@pytest.mark.parametrize("op", BOTH)
def test_name_wrong_type(op, bad):
    with pytest.raises(TypeError):
        OPS[op](bad, bytes(16), bytes(16))


def test_exception_hierarchy():
    assert issubclass(pcb.CipherBenchError, Exception)
    assert issubclass(pcb.DecryptionError, pcb.CipherBenchError)
    assert issubclass(pcb.DecryptionError, ValueError)
    assert issubclass(pcb.UnsupportedCipherError, pcb.CipherBenchError)
    assert issubclass(pcb.UnsupportedCipherError, ValueError)
    assert issubclass(pcb.OpenSSLError, pcb.CipherBenchError)


def test_unknown_name_message_mentions_the_name():
    with pytest.raises(pcb.UnsupportedCipherError, match="Blowfish"):
        pcb.encrypt("Blowfish/CBC/NoPadding", bytes(16), bytes(16), iv=bytes(8))


# --------------------------------------------------------------------------
# Authentication / padding failures (need a real ciphertext)
# --------------------------------------------------------------------------

AEAD_NAMES = [n for n in ALL if takes_aad(n)]


def _flip(b, i):
    b = bytearray(b)
    b[i] ^= 0x01
    return bytes(b)


TAMPERS = {
    "tag-last-byte": lambda name, a: dict(data=_flip(a["data"], -1)),
    "tag-first-byte": lambda name, a: dict(data=_flip(a["data"], len(a["data"]) - 16 if mode(name) != "SIV" else 0)),
    "ciphertext-byte": lambda name, a: dict(data=_flip(a["data"], 0 if mode(name) != "SIV" else 16)),
    "truncated-by-one": lambda name, a: dict(data=a["data"][:-1]),
    "extended-by-one": lambda name, a: dict(data=a["data"] + b"\x00"),
    "wrong-aad": lambda name, a: dict(aad=b"other"),
    "aad-missing": lambda name, a: dict(aad=None),
    "wrong-key": lambda name, a: dict(key=_flip(a["key"], 3)),
    "wrong-iv": lambda name, a: dict(iv=_flip(a["iv"], 0) if a["iv"] is not None else b"nonce!"),
    "tag-only-zeros": lambda name, a: dict(data=bytes(16)),
}


@pytest.mark.parametrize("tamper", list(TAMPERS))
@pytest.mark.parametrize("name", AEAD_NAMES)
def test_aead_tampered(name, tamper):
    args = base_args(name, "decrypt")
    args.update(TAMPERS[tamper](name, args))
    with pytest.raises(pcb.DecryptionError, match=RE_TAG) as ei:
        pcb.decrypt(name, **args)
    check_exc(ei, pcb.DecryptionError)


PKCS5_NAMES = [n for n in ALL if is_pkcs5(n)]


def _bad_pad_tails(b):
    return {
        "pad-byte-0": bytes(b - 1) + b"\x00",
        "pad-byte-too-big": bytes(b - 1) + bytes([b + 1]),
        "pad-byte-ff": bytes(b - 1) + b"\xff",
        "inconsistent": bytes(b - 3) + b"\x01\x03\x03",
        "inconsistent-full": bytes([b - 1]) + bytes([b]) * (b - 1),
    }


PAD_CASES = [(n, t) for n in PKCS5_NAMES for t in _bad_pad_tails(8)]


@pytest.mark.parametrize("name, tail_id", PAD_CASES, ids=[f"{n}-{t}" for n, t in PAD_CASES])
def test_bad_pkcs5_padding(name, tail_id):
    b = block(name)
    plain = bytes(range(1, b + 1)) + _bad_pad_tails(b)[tail_id]  # two blocks, the last badly padded
    args = base_args(name, "encrypt")
    args["data"] = plain
    ct = pcb.encrypt(name.replace("PKCS5Padding", "NoPadding"), **args)
    args["data"] = ct
    with pytest.raises(pcb.DecryptionError, match=RE_PAD) as ei:
        pcb.decrypt(name, **args)
    check_exc(ei, pcb.DecryptionError)


@pytest.mark.parametrize("name", PKCS5_NAMES)
def test_pkcs5_good_padding_via_nopadding(name):
    """Counterpart of the bad-padding cases: a correctly padded block decrypts."""
    b = block(name)
    plain = bytes(range(1, b + 1)) + bytes(b - 3) + b"\x03\x03\x03"
    args = base_args(name, "encrypt")
    args["data"] = plain
    args["data"] = pcb.encrypt(name.replace("PKCS5Padding", "NoPadding"), **args)
    assert pcb.decrypt(name, **args) == plain[:-3]


# --------------------------------------------------------------------------
# measure()
# --------------------------------------------------------------------------

MEASURE_BASE = dict(payload=64, min_time=0.001, repeats=1)

MEASURE_CASES = [
    # (id, transformation, overrides, exception(s), match)
    ("unknown-name", "Foo/CBC/NoPadding", {}, pcb.UnsupportedCipherError, r"(?i)unsupported|unknown|cipher|Foo"),
    ("unknown-mode", "AES/XYZ/NoPadding", {}, pcb.UnsupportedCipherError, r"(?i)unsupported|unknown|cipher|XYZ"),
    ("op-foo", "AES/CBC/NoPadding", dict(op="foo"), ValueError, r"(?i)\bop\b|enc"),
    ("op-empty", "AES/CBC/NoPadding", dict(op=""), ValueError, r"(?i)\bop\b|enc"),
    ("scope-foo", "AES/CBC/NoPadding", dict(scope="foo"), ValueError, r"(?i)scope|message|stream|rekey"),
    ("scope-empty", "AES/GCM/NoPadding", dict(scope=""), ValueError, r"(?i)scope|message|stream|rekey"),
    ("payload-0", "AES/CTR/NoPadding", dict(payload=0), ValueError, r"(?i)payload"),
    ("payload-neg", "AES/CTR/NoPadding", dict(payload=-1), ValueError, r"(?i)payload"),
    ("payload-2^62", "AES/CTR/NoPadding", dict(payload=2**62), (ValueError, MemoryError), r"(?i)payload|memory|large|alloc"),
    ("payload-2^62-gcm", "AES/GCM/NoPadding", dict(payload=2**62), (ValueError, MemoryError), r"(?i)payload|memory|large|alloc"),
    ("payload-2^62-siv-rekey", "AES/SIV/NoPadding", dict(payload=2**62, scope="rekey"), (ValueError, MemoryError), r"(?i)payload|memory|large|alloc"),
    ("payload-2^62-tea-dec", "TEA/CBC/PKCS5Padding", dict(payload=2**62, op="dec"), (ValueError, MemoryError), r"(?i)payload|memory|large|alloc"),
    ("payload-2^64", "AES/CTR/NoPadding", dict(payload=2**64), (ValueError, OverflowError, MemoryError), r"(?i)payload|large|memory|overflow|int"),
    ("payload-str", "AES/CTR/NoPadding", dict(payload="4096"), TypeError, r"(?i)payload|int"),
    ("repeats-0", "AES/CBC/NoPadding", dict(repeats=0), ValueError, r"(?i)repeats"),
    ("repeats-neg", "AES/CBC/NoPadding", dict(repeats=-1), ValueError, r"(?i)repeats"),
    ("min_time-neg", "AES/CBC/NoPadding", dict(min_time=-1), ValueError, r"(?i)min_time|time"),
    ("min_time-nan", "AES/CBC/NoPadding", dict(min_time=math.nan), ValueError, r"(?i)min_time|time"),
    ("stream-SIV", "AES/SIV/NoPadding", dict(scope="stream"), ValueError, r"(?i)stream|scope|SIV"),
    ("stream-SIV-dec", "AES/SIV/NoPadding", dict(scope="stream", op="dec"), ValueError, r"(?i)stream|scope|SIV"),
    ("key_bits-100", "AES/CBC/NoPadding", dict(key_bits=100), ValueError, r"(?i)key"),
    ("key_bits-0", "AES/GCM/NoPadding", dict(key_bits=0), ValueError, r"(?i)key"),
    ("key_bits-neg", "AES/CTR/NoPadding", dict(key_bits=-128), ValueError, r"(?i)key"),
    ("key_bits-512-AES", "AES/ECB/NoPadding", dict(key_bits=512), ValueError, r"(?i)key"),
    ("key_bits-128-ChaCha", "ChaCha20-Poly1305", dict(key_bits=128), ValueError, r"(?i)key"),
    ("key_bits-64-TEA", "TEA/CTR/NoPadding", dict(key_bits=64), ValueError, r"(?i)key"),
    ("key_bits-256-XTEA", "XTEA/ECB/NoPadding", dict(key_bits=256), ValueError, r"(?i)key"),
    ("key_bits-128-DES", "DES/CBC/NoPadding", dict(key_bits=128), ValueError, r"(?i)key"),
    ("key_bits-64-DESede", "DESede/CBC/NoPadding", dict(key_bits=64), ValueError, r"(?i)key"),
    ("key_bits-str", "AES/CBC/NoPadding", dict(key_bits="128"), TypeError, r"(?i)key|int"),
    ("rounds-0", "TEA/CTR/NoPadding", dict(rounds=0), ValueError, RE_ROUNDS),
    ("rounds-1025", "XTEA/CBC/NoPadding", dict(rounds=1025), ValueError, RE_ROUNDS),
    ("rounds-neg", "TEA-ref/ECB/NoPadding", dict(rounds=-1), ValueError, RE_ROUNDS),
    ("rounds-str", "TEA/CTR/NoPadding", dict(rounds="32"), TypeError, r"(?i)rounds|int"),
    ("rounds-float", "TEA/CTR/NoPadding", dict(rounds=3.5), TypeError, r"(?i)rounds|int"),
    ("rounds-to-AES", "AES/CTR/NoPadding", dict(rounds=32), ValueError, RE_ROUNDS),
    ("rounds-to-ChaCha", "ChaCha20-Poly1305", dict(rounds=10), ValueError, RE_ROUNDS),
    ("iv_len-0-GCM", "AES/GCM/NoPadding", dict(iv_len=0), ValueError, RE_IV),
    ("iv_len-129-GCM", "AES/GCM/NoPadding", dict(iv_len=129), ValueError, RE_IV),
    ("iv_len-8-ChaCha", "ChaCha20-Poly1305", dict(iv_len=8), ValueError, RE_IV),
    ("iv_len-8-AES-CBC", "AES/CBC/NoPadding", dict(iv_len=8), ValueError, RE_IV),
    ("iv_len-to-ECB", "AES/ECB/NoPadding", dict(iv_len=16), ValueError, RE_IV),
    ("payload-2^30+1", "AES/GCM/NoPadding", dict(payload=2**30 + 1), (ValueError, MemoryError), r"(?i)payload|memory"),
    ("payload-bool", "AES/GCM/NoPadding", dict(payload=True), TypeError, r"(?i)payload|int"),
    ("payload-not-whole-blocks-message", "AES/ECB/NoPadding", dict(payload=4097), ValueError, RE_BLOCK + "|payload"),
    ("payload-not-whole-blocks-stream", "AES/CBC/NoPadding", dict(payload=4100, scope="stream"), ValueError, RE_BLOCK + "|payload"),
    ("payload-not-whole-blocks-DES", "DES/CBC/NoPadding", dict(payload=12), ValueError, RE_BLOCK + "|payload"),
    ("hw_aes-int", "AES/GCM/NoPadding", dict(hw_aes=1), TypeError, r"(?i)hw_aes|bool"),
    # hw_aes=False measures in a child process: bad input must still fail the same way
    ("hwaes-off-unknown-name", "Foo/CBC/NoPadding", dict(hw_aes=False), pcb.UnsupportedCipherError, r"(?i)unsupported|unknown|Foo"),
    ("hwaes-off-stream-SIV", "AES/SIV/NoPadding", dict(scope="stream", hw_aes=False), ValueError, r"(?i)stream|scope|SIV"),
    ("hwaes-off-iv_len-0", "AES/GCM/NoPadding", dict(iv_len=0, hw_aes=False), ValueError, RE_IV),
    ("hwaes-off-payload-2^62", "AES/GCM/NoPadding", dict(payload=2**62, hw_aes=False), (ValueError, MemoryError), r"(?i)payload|memory"),
    ("hwaes-off-payload-not-whole", "AES/CBC/NoPadding", dict(payload=4097, hw_aes=False), ValueError, RE_BLOCK + "|payload"),
    ("hwaes-off-rounds-0", "TEA/CTR/NoPadding", dict(rounds=0, hw_aes=False), ValueError, RE_ROUNDS),
    ("hwaes-off-key_bits", "AES/CBC/NoPadding", dict(key_bits=100, hw_aes=False), ValueError, r"(?i)key"),
]


@pytest.mark.parametrize(
    "transformation, over, exc, match",
    [pytest.param(t, o, e, m, id=i) for i, t, o, e, m in MEASURE_CASES],
)
def test_measure_bad_input(transformation, over, exc, match):
    kw = dict(MEASURE_BASE)
    kw.update(over)
    with pytest.raises(exc, match=match) as ei:
        pcb.measure(transformation, **kw)
    if exc is ValueError:
        check_exc(ei, ValueError)
    if exc is pcb.UnsupportedCipherError:
        check_exc(ei, exc)


def test_measure_payload_huge_prefers_value_error():
    """2**62 bytes can never be allocated; the spec prefers a ValueError up front."""
    with pytest.raises(ValueError, match=r"(?i)payload"):
        pcb.measure("AES/CTR/NoPadding", payload=2**62, min_time=0.001, repeats=1)


def test_measure_base_is_valid():
    m = pcb.measure("AES/CBC/NoPadding", **MEASURE_BASE)
    assert m.payload == 64


def test_still_works_after_errors():
    """After the whole matrix the module still behaves (no corrupted state)."""
    key, iv = bytes(range(16)), bytes(16)
    for _ in range(3):
        with pytest.raises(ValueError):
            pcb.encrypt("AES/CBC/NoPadding", key, b"x", iv=iv)
        with pytest.raises(pcb.DecryptionError):
            pcb.decrypt("AES/GCM/NoPadding", key, bytes(20), iv=bytes(12))
    ct = pcb.encrypt("AES/CBC/PKCS5Padding", key, b"hello", iv=iv)
    assert pcb.decrypt("AES/CBC/PKCS5Padding", key, ct, iv=iv) == b"hello"

"""pycipherbench.store's files against an independent reference (tests/esp_reference.py).

The reference is pure Python on ``cryptography`` and shares no code with the package. Files
go both ways: the store writes, the reference reads; the reference writes, the store opens.
Tests that need the store skip (with the import error as the reason) until it exists; the
reference's own self-test (RFC 5297 vectors, round trips) always runs.
"""

import base64
import os
import random
import re
import stat
import struct
import sys
from pathlib import Path

import pytest

import esp_reference as ref  # noqa: E402
from esp_reference import BOOLEAN, FLOAT, INT, LONG, STRING, STRING_SET, f32  # noqa: E402

try:
    import pycipherbench as pcb
    from pycipherbench import store

    store.open  # noqa: B018
    STORE_MISSING = ""
except Exception as exc:  # ImportError, or a half-built package
    store = None
    STORE_MISSING = f"pycipherbench.store is not importable: {exc!r}"

needs_store = pytest.mark.skipif(store is None, reason=STORE_MISSING or "store present")

GETTERS = {STRING: "get_string", STRING_SET: "get_string_set", INT: "get_int", LONG: "get_long",
           FLOAT: "get_float", BOOLEAN: "get_bool"}
PUTTERS = {STRING: "put_string", STRING_SET: "put_string_set", INT: "put_int", LONG: "put_long",
           FLOAT: "put_float", BOOLEAN: "put_bool"}

# (name, type, value): every type, edge values, unicode, markup characters, empties.
TYPED = [
    ("greeting", STRING, "hello"),
    ("empty string", STRING, ""),
    ("ключ 🔑 名前", STRING, "värde ✓ 🎉"),
    ("markup &<>\"' chars", STRING, "a&b<c>d\"e'f"),
    ("multi\nline\tname", STRING, "line1\nline2\ttab\r\n"),
    ("", STRING, "the empty name"),
    ("long text", STRING, "x" * 5000),
    ("set", STRING_SET, {"a", "b", "ü", "🔑"}),
    ("set of the empty string", STRING_SET, {""}),
    ("empty set", STRING_SET, set()),
    ("int", INT, -5),
    ("int zero", INT, 0),
    ("int max", INT, 2**31 - 1),
    ("int min", INT, -(2**31)),
    ("long", LONG, 1 << 40),
    ("long small", LONG, 7),
    ("long max", LONG, 2**63 - 1),
    ("long min", LONG, -(2**63)),
    ("float", FLOAT, 1.5),
    ("float tenth", FLOAT, f32(0.1)),
    ("float tiny negative", FLOAT, f32(-3.25e-20)),
    ("float max", FLOAT, f32(3.4028234663852886e38)),
    ("true", BOOLEAN, True),
    ("false", BOOLEAN, False),
]
TYPED_DICT = {n: (t, v) for n, t, v in TYPED}
PLAIN_DICT = {n: v for n, _, v in TYPED}


def as_ref_value(t, v):
    """A value write_store stores with type t (Long forces LONG for small ints)."""
    return ref.Long(v) if t == LONG else v


REF_ENTRIES = {n: as_ref_value(t, v) for n, t, v in TYPED}


def open_store(path, master_key_file=None, **kw):
    if kw.get("encrypted", True):
        kw["master_key_file"] = master_key_file
    return store.open(str(path), **kw)


def put_typed(editor, items):
    for name, t, v in items:
        getattr(editor, PUTTERS[t])(name, v)


def check_reads(s, items):
    """Every getter of the right type returns the value; the other typed getters the default."""
    missing = object()
    for name, t, v in items:
        assert name in s, name
        got = getattr(s, GETTERS[t])(name)
        assert got == v and type(got) is type(v), (name, GETTERS[t], v, got)
        assert s.get(name) == v, (name, "get", v, s.get(name))
        for other_t, getter in GETTERS.items():
            if other_t != t:
                assert getattr(s, getter)(name, missing) is missing, (name, getter)
    assert s.get_string("no such name", "dflt") == "dflt"
    assert "no such name" not in s


def import_peer():
    """bench/esp_peer.py (the benchmark peer; not part of the package)."""
    bench = str(Path(__file__).resolve().parent.parent / "bench")
    if bench not in sys.path:
        sys.path.insert(0, bench)
    import esp_peer

    return esp_peer


def flip_b64_bit(text, index=-1, bit=0):
    raw = bytearray(base64.b64decode(text))
    raw[index] ^= 1 << bit
    return base64.b64encode(bytes(raw)).decode()


def decrypted_names(path, master_key):
    """{plain key: Base64 name text} of an SIV/GCM store file, by the reference."""
    ks = ref.read_keysets(path, master_key)
    sname = ref.store_name(path)
    return {ref.decrypt_name(ks.siv_key, ks.siv_key_id, sname, n, "t"): n
            for n, _ in ref.raw_entries(path) if n not in ref.RESERVED_NAMES}


def assert_message_names(exc, path, *entry_forms):
    msg = str(exc)
    assert os.path.basename(str(path)) in msg, f"message does not name the file: {msg!r}"
    if entry_forms:
        forms = [f for f in entry_forms if f]
        forms += [f[:12] for f in forms if len(f) > 12]  # a shortened Base64 name is fine
        assert any(f in msg for f in forms), (
            f"message does not name the entry (any of {entry_forms!r}): {msg!r}")


# ---------------------------------------------------------------------------
# The reference itself (always runs)
# ---------------------------------------------------------------------------

def test_reference_self_test(tmp_path):
    """RFC 5297 A.1/A.2 through cryptography's AESSIV (S2V key first), then round trips of
    every type through write_store/read_store for all option combinations and layouts."""
    ref.self_test(tmp_path)


def test_reference_rfc5297_key_order():
    """cryptography's AESSIV takes K1 (S2V) || K2 (CTR), like Tink's AesSiv (first half CMAC)."""
    v = ref.RFC5297_VECTORS[0]
    key = bytes.fromhex(v["key"])
    swapped = key[16:] + key[:16]
    from cryptography.hazmat.primitives.ciphers.aead import AESSIV
    ad = [bytes.fromhex(a) for a in v["ad"]]
    assert AESSIV(key).encrypt(bytes.fromhex(v["plaintext"]), ad).hex() == v["output"]
    assert AESSIV(swapped).encrypt(bytes.fromhex(v["plaintext"]), ad).hex() != v["output"]


def test_reference_typed_encoding_is_esp():
    """ESP's put* byte layouts, written out by hand (big-endian, no set count)."""
    assert ref.encode_typed("hé") == bytes.fromhex("00000000" "00000003") + "hé".encode()
    assert ref.encode_typed({"b", "a"}) == bytes.fromhex("00000001" "00000001") + b"a" + \
        bytes.fromhex("00000001") + b"b"
    assert ref.encode_typed(set()) == bytes.fromhex("00000001")
    assert ref.encode_typed(-2) == bytes.fromhex("00000002" "fffffffe")
    assert ref.encode_typed(ref.Long(1)) == bytes.fromhex("00000003" "0000000000000001")
    assert ref.encode_typed(1 << 31) == bytes.fromhex("00000003" "0000000080000000")
    assert ref.encode_typed(1.0) == bytes.fromhex("00000004" "3f800000")
    assert ref.encode_typed(True) == bytes.fromhex("00000005" "01")


def test_peer_matches_reference(tmp_path):
    """bench/esp_peer.py (the benchmark peer) reads and writes the reference's format."""
    esp_peer = import_peer()

    key = os.urandom(32)
    p = tmp_path / "peer.xml"
    s = esp_peer.PeerStore(p, key)
    with s.edit() as e:
        put_typed(e, TYPED)
    ref.check_layout(p)
    assert ref.read_store_typed(p, key) == TYPED_DICT
    q = tmp_path / "ref.xml"
    ref.write_store(q, key, REF_ENTRIES)
    assert esp_peer.PeerStore(q, key).all() == PLAIN_DICT
    r = tmp_path / "plain.xml"
    ref.write_plain_prefs(r, REF_ENTRIES)
    assert esp_peer.PlainPeerStore(r).all() == PLAIN_DICT
    pp = esp_peer.PlainPeerStore(tmp_path / "plain2.xml")
    with pp.edit() as e:
        put_typed(e, TYPED)
    assert ref.read_plain_prefs_typed(tmp_path / "plain2.xml") == TYPED_DICT


# ---------------------------------------------------------------------------
# (a) the store writes, the reference reads
# ---------------------------------------------------------------------------

@needs_store
def test_a_store_file_reads_in_reference(tmp_path, master):
    kf, key = master
    path = tmp_path / "secret_prefs.xml"
    with open_store(path, kf) as s:
        with s.edit() as e:
            put_typed(e, TYPED)
    ref.check_layout(path)
    assert ref.read_store_typed(path, key) == TYPED_DICT
    names = [n for n, _ in ref.raw_entries(path)]
    assert ref.KEY_KEYSET_NAME in names and ref.VALUE_KEYSET_NAME in names


@needs_store
def test_a_store_file_1000_entries(tmp_path, master):
    kf, key = master
    path = tmp_path / "many.xml"
    rng = random.Random("pcb-store-1000")
    items = []
    for i in range(1000):
        t = i % 6
        v = {STRING: f"value {i} ü" * (i % 5), STRING_SET: {f"m{j}" for j in range(i % 4)},
             INT: rng.randint(-(2**31), 2**31 - 1), LONG: rng.randint(-(2**63), 2**63 - 1),
             FLOAT: f32(rng.uniform(-1e6, 1e6)), BOOLEAN: bool(i % 2)}[t]
        items.append((f"key-{i:04d}-é", t, v))
    with open_store(path, kf) as s:
        with s.edit() as e:
            put_typed(e, items)
        assert len(s) == 1000
    ref.check_layout(path)
    assert ref.read_store_typed(path, key) == {n: (t, v) for n, t, v in items}
    # an edit of an existing file keeps its keysets and the other entries
    with open_store(path, kf) as s:
        s.edit().put_string("key-0000-é", "changed").remove("key-0001-é").commit()
    got = ref.read_store(path, key)
    assert len(got) == 999 and got["key-0000-é"] == "changed" and "key-0001-é" not in got


# ---------------------------------------------------------------------------
# (b) the reference writes, the store reads
# ---------------------------------------------------------------------------

@needs_store
@pytest.mark.parametrize("key_ids", [None, (0xFFFFFFFF, 0x80000000), (0, 1)],
                         ids=["random", "high-bit", "zero"])
def test_b_reference_file_opens_in_store(tmp_path, master, key_ids):
    kf, key = master
    path = tmp_path / "from_ref.xml"
    kid_siv, kid_gcm = key_ids or (None, None)
    ref.write_store(path, key, REF_ENTRIES, key_id_siv=kid_siv, key_id_gcm=kid_gcm)
    before = path.read_bytes()
    with open_store(path, kf) as s:
        check_reads(s, TYPED)
        assert s.all() == PLAIN_DICT
        assert len(s) == len(TYPED)
    assert path.read_bytes() == before, "opening and reading changed the file"
    # a commit by the store keeps the reference's keysets (the reference still reads it)
    with open_store(path, kf) as s:
        s.edit().put_int("added", 42).commit()
    assert ref.read_store(path, key) == {**PLAIN_DICT, "added": 42}


@needs_store
def test_b_reference_file_1000_entries(tmp_path, master):
    kf, key = master
    path = tmp_path / "many_ref.xml"
    entries = {f"ref key {i} ✓": (f"v{i}" * (i % 7) if i % 3 else i - 500) for i in range(1000)}
    ref.write_store(path, key, entries)
    with open_store(path, kf) as s:
        assert len(s) == 1000
        assert s.all() == entries
        for name, v in entries.items():
            assert s.get(name) == v, name


# ---------------------------------------------------------------------------
# (c) sizes: k-byte key -> k+21 bytes, p plaintext bytes -> p+33
# ---------------------------------------------------------------------------

@needs_store
def test_c_name_and_value_sizes(tmp_path, master):
    kf, key = master
    path = tmp_path / "sizes.xml"
    # Names around the SIV boundaries (CMAC blocks; 256 bytes, where the CTR
    # keystream switches from ECB counter blocks to the CTR context) and values
    # around the Base64 decoder's SIMD steps (16/32/64 characters).
    sizes = (0, 1, 15, 16, 17, 31, 32, 33, 47, 48, 49, 100, 239, 240, 241, 255, 256, 257, 1000, 5000)
    items = [("k" * k, STRING, "v" * k) for k in sizes]
    items += [("ü" * 10, INT, 1), ("🔑", LONG, 2), ("f", FLOAT, 0.5), ("b", BOOLEAN, True),
              ("s", STRING_SET, {"aa", "bbb", ""}), ("e", STRING_SET, set())]
    with open_store(path, kf) as s:
        with s.edit() as e:
            put_typed(e, items)
    ks = ref.read_keysets(path, key)
    sname = ref.store_name(path)
    by_name = {n: (t, v) for n, t, v in items}
    seen = 0
    for name_text, value_text in ref.raw_entries(path):
        if name_text in ref.RESERVED_NAMES:
            continue
        seen += 1
        plain_key = ref.decrypt_name(ks.siv_key, ks.siv_key_id, sname, name_text, "t")
        t, v = by_name[plain_key]
        k = len(plain_key.encode("utf-8"))
        p = len(ref.encode_typed(v, t))
        name_raw = base64.b64decode(name_text)
        value_raw = base64.b64decode(value_text)
        assert len(name_raw) == k + 21, (plain_key, len(name_raw), k)
        assert len(value_raw) == p + 33, (plain_key, len(value_raw), p)
        assert name_raw[:5] == b"\x01" + struct.pack(">I", ks.siv_key_id)
        assert value_raw[:5] == b"\x01" + struct.pack(">I", ks.value_key_id)
    assert seen == len(items)
    # Read back in a mixed order: one SIV state serves every length in turn.
    order = items[::2] + items[1::2][::-1]
    with open_store(path, kf) as s:
        for n, t, v in order:
            assert getattr(s, GETTERS[t])(n, None) == v, n
            assert n in s
        assert s.all() == {n: v for n, t, v in items}


# ---------------------------------------------------------------------------
# (d) the plain baseline
# ---------------------------------------------------------------------------

@needs_store
def test_d_plain_store_file_reads_in_reference(tmp_path):
    path = tmp_path / "plain_prefs.xml"
    with open_store(path, encrypted=False) as s:
        with s.edit() as e:
            put_typed(e, TYPED)
    text = path.read_text("utf-8")
    assert text.startswith(ref.XML_HEADER + "<map>\n") and text.endswith("</map>\n")
    assert ref.read_plain_prefs_typed(path) == TYPED_DICT


@needs_store
def test_d_plain_reference_file_opens_in_store(tmp_path):
    path = tmp_path / "plain_ref.xml"
    extra = [("java float 1e10", FLOAT, 1e10), ("java float 1e-4", FLOAT, f32(1e-4)),
             ("java float -0.0", FLOAT, -0.0)]
    ref.write_plain_prefs(path, {**REF_ENTRIES, **{n: v for n, _, v in extra}})
    assert 'value="1.0E10"' in path.read_text("utf-8")
    before = path.read_bytes()
    with open_store(path, encrypted=False) as s:
        check_reads(s, TYPED + extra)
        assert s.all() == {**PLAIN_DICT, **{n: v for n, _, v in extra}}
    assert path.read_bytes() == before
    empty = tmp_path / "plain_empty.xml"
    ref.write_plain_prefs(empty, {})
    assert empty.read_text() == ref.XML_HEADER + "<map />\n"
    with open_store(empty, encrypted=False) as s:
        assert len(s) == 0 and s.all() == {}


# ---------------------------------------------------------------------------
# (e) key_encryption="none", value_encryption="chacha20-poly1305" (and "none")
# ---------------------------------------------------------------------------

OPTION_SETS = [
    dict(key_encryption="none"),
    dict(value_encryption="chacha20-poly1305"),
    dict(key_encryption="none", value_encryption="chacha20-poly1305"),
    dict(value_encryption="none"),
]


@needs_store
@pytest.mark.parametrize("opts", OPTION_SETS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_e_options_store_to_reference(tmp_path, master, opts):
    kf, key = master
    path = tmp_path / "opts.xml"
    with open_store(path, kf, **opts) as s:
        with s.edit() as e:
            put_typed(e, TYPED)
    ref.check_layout(path)
    assert ref.read_store_typed(path, key, **opts) == TYPED_DICT
    names = {n for n, _ in ref.raw_entries(path)} - set(ref.RESERVED_NAMES)
    if opts.get("key_encryption") == "none":
        assert names == set(PLAIN_DICT), "key_encryption='none' must store the plain names"
    if opts.get("value_encryption") == "none":
        # V = Base64 of the plaintext serialization, no prefix
        for n, v in ref.raw_entries(path):
            if n not in ref.RESERVED_NAMES:
                assert base64.b64decode(v)[:4] in {struct.pack(">i", t) for t in range(6)}


@needs_store
@pytest.mark.parametrize("opts", OPTION_SETS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_e_options_reference_to_store(tmp_path, master, opts):
    kf, key = master
    path = tmp_path / "opts_ref.xml"
    ref.write_store(path, key, REF_ENTRIES, **opts)
    with open_store(path, kf, **opts) as s:
        check_reads(s, TYPED)
        assert s.all() == PLAIN_DICT


@needs_store
def test_e_chacha_file_is_not_gcm(tmp_path, master):
    """A ChaCha20-Poly1305 file does not decrypt as AES-GCM (the option really changes the AEAD)."""
    kf, key = master
    path = tmp_path / "chacha.xml"
    with open_store(path, kf, value_encryption="chacha20-poly1305") as s:
        s.edit().put_string("a", "b").commit()
    with pytest.raises(ref.ReferenceFormatError, match="ChaCha20Poly1305Key"):
        ref.read_store(path, key)  # the keyset's type URL says which AEAD it is
    # and the key really is a ChaCha20-Poly1305 key: AES-GCM under it does not authenticate
    ks = ref.read_keysets(path, key, value_encryption="chacha20-poly1305")
    gcm = ref._value_aead("gcm", ks.value_key)
    name_text, value_text = [e for e in ref.raw_entries(path) if e[0] not in ref.RESERVED_NAMES][0]
    with pytest.raises(ref.ReferenceAuthError):
        ref.decrypt_value(gcm, ks.value_key_id, value_text, name_text.encode(), "t")
    assert ref.read_store(path, key, value_encryption="chacha20-poly1305") == {"a": "b"}


# ---------------------------------------------------------------------------
# (f) tampering and broken files
# ---------------------------------------------------------------------------

THREE = {"alpha": "one", "beta": "two", "gamma": "three"}


def _replace_once(path, old, new):
    text = path.read_text("utf-8")
    assert text.count(old) == 1
    path.write_text(text.replace(old, new), "utf-8")


@needs_store
@pytest.mark.parametrize("where", ["ciphertext", "siv", "key id", "prefix byte"])
def test_f_tampered_name(tmp_path, master, where):
    kf, key = master
    path = tmp_path / "tamper_name.xml"
    ref.write_store(path, key, THREE)
    name_text = decrypted_names(path, key)["beta"]
    bad = flip_b64_bit(name_text, index={"ciphertext": -1, "siv": 5, "key id": 1,
                                         "prefix byte": 0}[where])
    _replace_once(path, f'name="{name_text}"', f'name="{bad}"')
    before = path.read_bytes()
    try:
        s = open_store(path, kf)
    except pcb.DecryptionError as exc:
        assert_message_names(exc, path, bad, "beta")
        pytest.fail(f"store.open raised for one tampered entry name, so the other entries "
                    f"cannot be read: {exc}")
    with s:
        assert s.get_string("alpha") == "one" and s.get_string("gamma") == "three"
        with pytest.raises(pcb.DecryptionError) as ei:
            s.all()
        assert_message_names(ei.value, path, bad)
    assert path.read_bytes() == before


@needs_store
@pytest.mark.parametrize("where", ["ciphertext", "tag", "nonce", "key id", "prefix byte"])
def test_f_tampered_value(tmp_path, master, where):
    kf, key = master
    path = tmp_path / "tamper_value.xml"
    ref.write_store(path, key, THREE)
    name_text = decrypted_names(path, key)["beta"]
    value_text = dict(ref.raw_entries(path))[name_text]
    index = {"ciphertext": -17, "tag": -1, "nonce": 6, "key id": 4, "prefix byte": 0}[where]
    bad = flip_b64_bit(value_text, index=index)
    _replace_once(path, f">{value_text}<", f">{bad}<")
    before = path.read_bytes()
    try:
        s = open_store(path, kf)
    except pcb.DecryptionError as exc:
        assert_message_names(exc, path, "beta", name_text)
        pytest.fail(f"store.open raised for one tampered value, so the other entries "
                    f"cannot be read: {exc}")
    with s:
        assert s.get_string("alpha") == "one" and s.get_string("gamma") == "three"
        with pytest.raises(pcb.DecryptionError) as ei:
            s.get_string("beta")
        assert_message_names(ei.value, path, "beta", name_text)
        with pytest.raises(pcb.DecryptionError):
            s.all()
    assert path.read_bytes() == before


@needs_store
@pytest.mark.parametrize("keyset", [ref.KEY_KEYSET_NAME, ref.VALUE_KEYSET_NAME],
                         ids=["key-keyset", "value-keyset"])
def test_f_tampered_keyset(tmp_path, master, keyset):
    kf, key = master
    path = tmp_path / "tamper_keyset.xml"
    ref.write_store(path, key, THREE)
    hex_text = dict(ref.raw_entries(path))[keyset]
    pos = 2 * 20  # a nibble inside the GCM ciphertext (after the 12-byte nonce)
    bad = hex_text[:pos] + format(int(hex_text[pos], 16) ^ 1, "x") + hex_text[pos + 1:]
    _replace_once(path, f">{hex_text}<", f">{bad}<")
    before = path.read_bytes()
    with pytest.raises(pcb.DecryptionError) as ei:
        open_store(path, kf)
    assert_message_names(ei.value, path, keyset, "keyset")
    assert path.read_bytes() == before


@needs_store
def test_f_wrong_master_key(tmp_path, master):
    kf, key = master
    path = tmp_path / "wrong_master.xml"
    ref.write_store(path, os.urandom(32), THREE)
    before = path.read_bytes()
    with pytest.raises(pcb.DecryptionError) as ei:
        open_store(path, kf)
    assert "master key" in str(ei.value), str(ei.value)
    assert path.read_bytes() == before


def _truncated_half(data):
    return data[: len(data) // 2]


def _without_map_end(data):
    assert data.endswith(b"</map>\n")
    return data[: -len(b"</map>\n")]


def _cut_in_keyset(data):
    return data[: data.index(b"__androidx") + 80]


BROKEN = {
    "truncated half": _truncated_half,
    "truncated before </map>": _without_map_end,
    "truncated in a keyset": _cut_in_keyset,
    "not xml": lambda data: b"this is not an XML file\n",
    "binary garbage": lambda data: random.Random("pcb-garbage").randbytes(300),
    "garbage after </map>": lambda data: data + b"<string name=\"x\">y</string>\n",
}


@needs_store
@pytest.mark.parametrize("encrypted", [True, False], ids=["encrypted", "plain"])
@pytest.mark.parametrize("breakage", list(BROKEN))
def test_f_broken_file_is_format_error_and_untouched(tmp_path, master, encrypted, breakage):
    kf, key = master
    path = tmp_path / "broken.xml"
    if encrypted:
        ref.write_store(path, key, THREE)
    else:
        ref.write_plain_prefs(path, THREE)
        if breakage == "truncated in a keyset":
            pytest.skip("a plain file has no keyset")
    data = BROKEN[breakage](path.read_bytes())
    path.write_bytes(data)
    with pytest.raises(store.StoreFormatError) as ei:
        open_store(path, kf, encrypted=encrypted)
    assert isinstance(ei.value, ValueError)
    assert path.read_bytes() == data, "the store changed a file it could not parse"


# ---------------------------------------------------------------------------
# (g) the master key file
# ---------------------------------------------------------------------------

@needs_store
def test_g_master_key_file_created_0600(tmp_path):
    kf = tmp_path / "new_master.key"
    path = tmp_path / "new_store.xml"
    old = os.umask(0)  # the store must not rely on the umask
    try:
        with open_store(path, str(kf)) as s:
            s.edit().put_string("k", "v").commit()
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(kf).st_mode) == 0o600, oct(os.stat(kf).st_mode)
    key = kf.read_bytes()
    assert len(key) == 32
    assert ref.read_store(path, key) == {"k": "v"}


@needs_store
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_g_master_key_readable_by_others_is_refused(tmp_path, mode):
    kf = tmp_path / "loose.key"
    kf.write_bytes(os.urandom(32))
    os.chmod(kf, mode)
    before = kf.read_bytes()
    path = tmp_path / "loose_store.xml"
    with pytest.raises(PermissionError) as ei:
        open_store(path, str(kf))
    assert re.search(r"chmod\s+0?600", str(ei.value)), str(ei.value)
    assert kf.read_bytes() == before and stat.S_IMODE(os.stat(kf).st_mode) == mode


@needs_store
def test_g_master_key_owner_read_only_is_accepted(tmp_path):
    kf = tmp_path / "ro.key"
    kf.write_bytes(os.urandom(32))
    os.chmod(kf, 0o400)
    with open_store(tmp_path / "ro_store.xml", str(kf)) as s:
        s.edit().put_bool("ok", True).commit()
    assert ref.read_store(tmp_path / "ro_store.xml", kf.read_bytes()) == {"ok": True}


# ---------------------------------------------------------------------------
# (h) reserved names
# ---------------------------------------------------------------------------

@needs_store
@pytest.mark.parametrize("name", ref.RESERVED_NAMES, ids=["key-keyset", "value-keyset"])
def test_h_reserved_names(tmp_path, master, name):
    kf, key = master
    path = tmp_path / "reserved.xml"
    ref.write_store(path, key, THREE)
    before = dict(ref.raw_entries(path))
    assert issubclass(store.ReservedNameError, ValueError)
    with open_store(path, kf) as s:
        for getter in [*GETTERS.values(), "get"]:
            with pytest.raises(store.ReservedNameError):
                getattr(s, getter)(name)
        with pytest.raises(store.ReservedNameError):
            name in s  # noqa: B015
        e = s.edit()
        for putter, value in [("put_string", "x"), ("put_int", 1), ("put_long", 1),
                              ("put_float", 1.0), ("put_bool", True), ("put_string_set", ["x"])]:
            with pytest.raises(store.ReservedNameError):
                getattr(e, putter)(name, value)
        with pytest.raises(store.ReservedNameError):
            e.remove(name)
        e.commit()
        assert s.all() == THREE
    assert ref.read_store(path, key) == THREE
    assert dict(ref.raw_entries(path)) == before, "the keysets or entries changed"


# ---------------------------------------------------------------------------
# Beyond the brief: layout="file", passphrase, the peer against the store
# ---------------------------------------------------------------------------

@needs_store
def test_layout_file_both_ways(tmp_path, master):
    kf, key = master
    path = tmp_path / "sealed.xml"
    with open_store(path, kf, layout="file") as s:
        with s.edit() as e:
            put_typed(e, TYPED)
    ref.check_layout(path)
    assert ref.read_store_typed(path, key, layout="file") == TYPED_DICT
    path2 = tmp_path / "sealed_ref.xml"
    ref.write_store(path2, key, REF_ENTRIES, layout="file")
    with open_store(path2, kf, layout="file") as s:
        check_reads(s, TYPED)


@needs_store
def test_passphrase_scrypt_sidecar(tmp_path):
    import hashlib
    import json

    path = tmp_path / "pass.xml"
    with store.open(str(path), passphrase="correct horse") as s:
        s.edit().put_string("k", "v").commit()
    params = json.loads(Path(str(path) + ".scrypt").read_text())
    key = hashlib.scrypt(b"correct horse", salt=bytes.fromhex(params["salt"]), n=params["n"],
                         r=params["r"], p=params["p"], dklen=32,
                         maxmem=256 * params["n"] * params["r"] + (1 << 20))
    assert ref.read_store(path, key) == {"k": "v"}
    with pytest.raises(pcb.DecryptionError) as ei:
        store.open(str(path), passphrase="wrong horse")
    assert "master key" in str(ei.value) or "passphrase" in str(ei.value), str(ei.value)


@needs_store
def test_peer_and_store_share_files(tmp_path, master):
    esp_peer = import_peer()

    kf, key = master
    path = tmp_path / "shared.xml"
    with open_store(path, kf) as s:
        with s.edit() as e:
            put_typed(e, TYPED)
    peer = esp_peer.PeerStore(path, key)
    assert peer.all() == PLAIN_DICT
    peer.edit().put_string("from peer", "yes").commit()
    with open_store(path, kf) as s:
        assert s.get_string("from peer") == "yes"
        assert s.all() == {**PLAIN_DICT, "from peer": "yes"}


SCALAR_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])  # the very pycipherbench the parent imported
from pycipherbench import _core, store
path, kf = sys.argv[2:4]
with store.open(path, master_key_file=kf) as s:
    got = s.all()
    with s.edit() as e:  # the file rewritten, and a value sealed, with the scalar encoder
        e.put_string("from scalar", "z" * 77)
    print(json.dumps({"impl": _core.B64_IMPL, "all": got}))
"""


@needs_store
def test_scalar_base64_decoder_reads_the_same_store(tmp_path, master):
    """PCB_B64_SCALAR=1 forces the scalar decoder and encoder; a store (values of every length
    class the SIMD kernels step through) reads the same either way, what the scalar side writes
    reads here, and machine() names the decoder in use."""
    import json
    import subprocess

    kf, _ = master
    path = tmp_path / "scalar.xml"
    items = {f"k{n}": "v" * n for n in range(0, 200, 7)} | {"big": "x" * 5000}
    with open_store(path, kf) as s:
        with s.edit() as e:
            for k, v in items.items():
                e.put_string(k, v)
        assert s.all() == items
    assert pcb.machine()["b64_impl"] in ("scalar", "ssse3", "avx2", "avx512vbmi")
    root = str(Path(pcb.__file__).resolve().parent.parent)
    env = dict(os.environ, PCB_B64_SCALAR="1")
    out = subprocess.run([sys.executable, "-c", SCALAR_CHILD, root, str(path), kf], env=env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["impl"] == "scalar"
    assert got["all"] == items
    # Written by the scalar encoder (names, values, and the AAD the child sealed under: the
    # Base64 of the sealed name), read back here with the SIMD one: the same bytes.
    with open_store(path, kf) as s:
        assert s.all() == items | {"from scalar": "z" * 77}

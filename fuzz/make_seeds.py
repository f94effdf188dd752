"""Regenerates the seed corpora in fuzz/corpus/ (run from anywhere; needs pycipherbench built).

    python fuzz/make_seeds.py

Store seeds are real store files written by pycipherbench.store under the name the fuzzer
uses ("fuzz.xml": the store name "fuzz" is SIV's associated data) with the fuzzer's fixed
master key (bytes 0x00..0x1f), so their keysets authenticate and mutations reach the
entries. Cipher seeds follow fuzz_cipher_args.c's input layout. Encrypted seeds hold random
nonces and keys: regenerating changes the files (any version is as good a seed).
"""

from __future__ import annotations

import os
import shutil
import struct
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from pycipherbench import ciphers, store  # noqa: E402

MASTER_KEY = bytes(range(32))


def fill(s: store.Store) -> None:
    with s.edit() as e:
        e.put_string("username", "alice").put_string("empty", "")
        e.put_string("escapes", "a<b>&\"'\t\n\r\x01 é ☃ 🔑")
        e.put_int("launches", -7).put_long("big", 2**40 + 3)
        e.put_float("ratio", 1.5).put_float("tiny", 1e-45).put_bool("on", True)
        e.put_string_set("tags", ["x", "y&z", ""]).put_string_set("none", [])


def store_seeds(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    variants = {
        "plain": dict(encrypted=False),
        "lean": dict(),
        "file": dict(layout="file"),
        "names-plain-chacha": dict(key_encryption="none", value_encryption="chacha20-poly1305"),
        "lean-empty": dict(),
        "plain-many": dict(encrypted=False),
        "lean-many": dict(),
    }
    for label, opts in variants.items():
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "fuzz.xml")
            key = os.path.join(tmp, "master.key")
            fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, MASTER_KEY)
            os.close(fd)
            kwargs = dict(opts)
            if kwargs.get("encrypted", True):
                kwargs["master_key_file"] = key
            with store.open(path, **kwargs) as s:
                if label.endswith("-many"):  # past the map's first growth (rehash)
                    with s.edit() as e:
                        for i in range(40):
                            e.put_int(f"k{i}", i)
                elif label != "lean-empty":
                    fill(s)
            shutil.copyfile(path, out / f"{label}.xml")
    # Hand-written corner cases of the XML syntax the parser accepts.
    (out / "syntax.xml").write_text(
        "<?xml version='1.0' encoding='utf-8' standalone='yes' ?>\n"
        "<!-- a comment -->\n<map>\n"
        "    <string name='single'>&#10;&#x41;&lt;&amp;&gt;&quot;&apos;</string>\n"
        '    <int name="i" value="+2147483647" />\n'
        '    <long name="l" value="-9223372036854775808" />\n'
        '    <float name="f" value="-Infinity" />\n'
        '    <float name="g" value="1.0E-5" />\n'
        '    <float name="n" value="NaN" />\n'
        '    <boolean name="b" value="false" />\n'
        '    <set name="s">\n        <string>m</string>\n    </set>\n'
        '    <set name="e" />\n'
        '    <string name="empty"></string>\n'
        "</map>\n")
    (out / "empty-map.xml").write_text("<map />")


def cipher_seed(name: str, key_len: int, iv_len: int | None, aad: list[bytes], rounds: int | None,
                data: bytes, spelled: str | None = None) -> bytes:
    names = ciphers()
    # fuzz_cipher_args indexes the C table, which ciphers() lists in the same order;
    # `spelled` is the name given as text instead (an alias or another case).
    index = names.index(name)
    flags = len(aad) | (4 if rounds is None else 0) | (8 if spelled is not None else 0)
    head = bytes([index, key_len, 141 if iv_len is None else iv_len, flags])
    head += struct.pack(">H", 0 if rounds is None else rounds)
    if spelled is not None:
        head += bytes([len(spelled)]) + spelled.encode()
    for a in aad:
        head += bytes([len(a)]) + a
    key = bytes((7 * i + 1) & 0xFF for i in range(key_len))
    iv = bytes((3 * i + 5) & 0xFF for i in range(iv_len or 0))
    return head + key + iv + data


def cipher_seeds(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    seeds = {
        "aes-gcm": cipher_seed("AES/GCM/NoPadding", 16, 12, [b"header"], None, b"attack at dawn"),
        "aes-cbc-pkcs5": cipher_seed("AES/CBC/PKCS5Padding", 32, 16, [], None, b"x" * 33),
        "aes-siv": cipher_seed("AES/SIV/NoPadding", 32, 8, [b"a", b"bc", b""], None, b"secret"),
        "chacha": cipher_seed("ChaCha20-Poly1305", 32, 12, [b"ad"], None, b"\x00" * 40),
        "desede-ecb": cipher_seed("DESede/ECB/NoPadding", 24, None, [], None, b"12345678" * 3),
        "tea-ctr": cipher_seed("TEA/CTR/NoPadding", 16, 8, [], 64, bytes(range(100))),
        "xtea-cbc": cipher_seed("XTEA/CBC/PKCS5Padding", 16, 8, [], 1024, b"y" * 77),
        "aes-ctr": cipher_seed("AES/CTR/NoPadding", 24, 16, [], None, b"z" * 19),
        "name-3des-alias": cipher_seed("DESede/CBC/PKCS5Padding", 16, 8, [], None, b"q" * 9,
                                       spelled="3des/cbc/pkcs7padding"),
        "name-chacha-jce": cipher_seed("ChaCha20-Poly1305", 32, 12, [], None, b"w" * 5,
                                       spelled="ChaCha20-Poly1305/None/NoPadding"),
    }
    for label, blob in seeds.items():
        (out / label).write_bytes(blob)


if __name__ == "__main__":
    store_seeds(HERE / "corpus" / "fuzz_store_load")
    cipher_seeds(HERE / "corpus" / "fuzz_cipher_args")
    print(f"seeds written under {HERE / 'corpus'}")

"""Python crypto libraries as backends: ``backend="py:cryptography"``, ``"py:pycryptodome"``,
``"py:pynacl"``.

They answer a different question from the C backends: what a *Python program* pays per
call of the library it would use, call overhead included. :class:`PyKernel` times that call
in a Python loop (message scope: the library's object reused across messages where the
library allows it; rekey scope: the object built again per message, key schedule included)
and offers the ``calibrate``/``sample``/``close``/``info`` interface of the C ``Kernel``, so
:func:`pycipherbench.measure` and :func:`~pycipherbench.sweep` run it in the same rounds,
with the same statistics. Each encrypted message gets a fresh nonce, as in C (drawn from a
precomputed cycle of nonces: the loop itself hands it over).

Outputs are pycipherbench's formats (AEAD: ct || tag; SIV: V || C, the nonce, if any, the
last associated-data component), so ``encrypt``/``decrypt`` agree byte for byte with
OpenSSL. The imports are optional: a library that is not installed is listed by
:func:`backends` with the ``pip install`` line that adds it.

The package dispatches ``py:`` names here before the C core is called
(:func:`pycipherbench.encrypt`/``decrypt`` in ``__init__``, ``measure`` and
``check_kernel`` in ``_measure``): ``_core`` imports no Python and refuses ``py:`` names.
"""

from __future__ import annotations

import importlib
import itertools
import os
import resource
import time
from collections.abc import Callable, Sequence
from typing import Any

from . import _core

#: name -> (module to import, pip package)
LIBRARIES = {
    "py:cryptography": ("cryptography", "cryptography"),
    "py:pycryptodome": ("Crypto", "pycryptodome"),
    "py:pynacl": ("nacl", "pynacl"),
}

_AES_BLOCK = ("AES/ECB/NoPadding", "AES/ECB/PKCS5Padding", "AES/CBC/NoPadding",
              "AES/CBC/PKCS5Padding", "AES/CTR/NoPadding")
_DES_BLOCK = tuple(f"{alg}/{mode}/{pad}" for alg in ("DES", "DESede") for mode in ("ECB", "CBC")
                   for pad in ("NoPadding", "PKCS5Padding"))
SUPPORTS = {
    "py:cryptography": (*_AES_BLOCK, "AES/GCM/NoPadding", "AES/SIV/NoPadding",
                        "ChaCha20-Poly1305", *_DES_BLOCK),
    "py:pycryptodome": (*_AES_BLOCK, "AES/GCM/NoPadding", "AES/SIV/NoPadding",
                        "ChaCha20-Poly1305", "XChaCha20-Poly1305", *_DES_BLOCK),
    "py:pynacl": ("ChaCha20-Poly1305", "XChaCha20-Poly1305"),
}

Op = Callable[..., bytes]


def _module(name: str) -> Any:
    mod, pip = LIBRARIES[name]
    try:
        return importlib.import_module(mod)
    except ImportError as e:
        raise _core.UnsupportedCipherError(
            f"backend '{name}' is unavailable: {e} (pip install {pip})") from None


def _version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(LIBRARIES[name][1])
    except PackageNotFoundError:
        return None


def all_backends() -> list[dict[str, Any]]:
    """Every backend: the C libraries this build knows, then the Python ones.

    Each is a dict: ``name`` (what ``backend=`` takes), ``label`` (the library's own
    name, as its messages say it), ``version``, ``available``,
    ``transformations`` (the names it runs), ``hw_aes`` (AES instructions in use: True,
    False, or None when the library does not say), ``missing`` (why it is unavailable,
    or None), ``apt`` (the Debian package that adds a C library), ``kind``
    (``"c"`` or ``"python"``). A Python library's AES is its bundled C code's.
    """
    return [*_core.backends(), *py_backends()]


def py_backends() -> list[dict[str, Any]]:
    """The Python libraries, as :func:`pycipherbench.backends` lists them."""
    out = []
    for name, (mod, pip) in LIBRARIES.items():
        try:
            importlib.import_module(mod)
            missing = None
        except ImportError as e:
            missing = f"not installed ({e}); pip install {pip}"
        out.append({"name": name, "label": name, "version": _version(name) if missing is None else None,
                    "available": missing is None, "transformations": list(SUPPORTS[name]),
                    "hw_aes": None, "missing": missing, "apt": "", "pip": pip, "kind": "python"})
    return out


def _canonical(transformation: str) -> str:
    names = {*_core.ciphers(), *(t for ts in SUPPORTS.values() for t in ts)}
    canon = {t.lower(): t for t in names}
    aliases = {"aes/gcm/pkcs7padding": "aes/gcm/nopadding"}
    key = transformation.lower().replace("pkcs7padding", "pkcs5padding")
    for prefix in ("3des/", "tripledes/"):
        if key.startswith(prefix):
            key = "desede/" + key[len(prefix):]
    key = aliases.get(key, key)
    if key == "chacha20-poly1305/none/nopadding":
        key = "chacha20-poly1305"
    if key not in canon:
        raise _core.UnsupportedCipherError(
            f"unknown transformation '{transformation}'; expected a name like "
            "'AES/GCM/NoPadding' (see pycipherbench.ciphers())")
    return canon[key]


def _lacks(name: str, t: str) -> _core.UnsupportedCipherError:
    have = [b["name"] for b in _core.backends() if b["available"] and t in b["transformations"]]
    have += [n for n, ts in SUPPORTS.items() if t in ts and n != name]
    return _core.UnsupportedCipherError(
        f"backend '{name}' has no {t}; backends that have it: {', '.join(have) or 'none'}")


def _check_args(t: str, key: bytes, iv: bytes | None, aad: Any) -> None:
    """The argument rules every backend shares (the C core's, asked through OpenSSL where
    it has the transformation)."""
    if t == "XChaCha20-Poly1305":
        if len(key) != 32:
            raise ValueError(f"{t} takes a key of 32 bytes, got {len(key)} bytes")
        if iv is None or len(iv) != 24:
            raise ValueError(f"{t} takes an IV of 24 bytes, got "
                             f"{'none' if iv is None else f'{len(iv)} bytes'}")
        if isinstance(aad, (list, tuple)):
            raise TypeError(f"{t} takes one bytes-like aad; only AES/SIV takes a list of components")
        return
    # encrypt() of an empty message checks key, IV, aad and rounds exactly as C does.
    block = 16 if t.startswith("AES") else 8
    probe = b"" if "PKCS5" in t or "/" not in t or "CTR" in t or "GCM" in t or "SIV" in t \
        else bytes(block)
    try:
        _core.encrypt(t, key, probe, iv=iv, aad=aad)
    except _core.UnsupportedCipherError:
        pass  # not in this OpenSSL (DES without the legacy provider): the library checks


def _pad(data: bytes, block: int) -> bytes:
    n = block - len(data) % block
    return data + bytes([n]) * n


def _unpad(t: str, data: bytes, block: int) -> bytes:
    if not data or len(data) % block:
        raise _core.DecryptionError(f"{t} ciphertext must be a non-zero whole number of "
                                    f"{block}-byte blocks, got {len(data)} bytes")
    n = data[-1]
    if not 1 <= n <= block or data[-n:] != bytes([n]) * n:
        raise _core.DecryptionError(f"{t}: bad padding (wrong key, IV or corrupted data)")
    return data[:-n]


def _siv_parts(aad: Any, iv: bytes | None) -> list[bytes]:
    parts = [] if aad is None else list(aad) if isinstance(aad, (list, tuple)) else [aad]
    return [bytes(p) for p in parts] + ([bytes(iv)] if iv is not None else [])


def _one_aad(aad: Any) -> bytes | None:
    return None if aad is None else bytes(aad)


# ------------------------------------------------------------ per-library message calls
#
# make_<lib>(t, key, encrypt, rekey) -> fn(iv, data, aad) -> bytes, the call a program makes.


def _make_cryptography(t: str, key: bytes, encrypt: bool, rekey: bool) -> Op:
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers import Cipher, aead, algorithms, modes

    def aead_fn(cls: Any) -> Op:
        obj = cls(key)

        def fn(iv: bytes, data: bytes, aad: Any) -> bytes:
            o = cls(key) if rekey else obj
            try:
                if encrypt:
                    return o.encrypt(iv, data, _one_aad(aad))  # type: ignore[no-any-return]
                return o.decrypt(iv, data, _one_aad(aad))  # type: ignore[no-any-return]
            except InvalidTag:
                raise _core.DecryptionError(f"{t}: authentication failed on py:cryptography "
                                            "(wrong key, IV, associated data or corrupted data)") from None
        return fn

    if t == "AES/GCM/NoPadding":
        return aead_fn(aead.AESGCM)
    if t == "ChaCha20-Poly1305":
        return aead_fn(aead.ChaCha20Poly1305)
    if t == "AES/SIV/NoPadding":
        siv = aead.AESSIV(key)

        def siv_fn(iv: bytes | None, data: bytes, aad: Any) -> bytes:
            o = aead.AESSIV(key) if rekey else siv
            parts = _siv_parts(aad, iv)
            try:
                if encrypt:
                    return o.encrypt(data, parts or None)  # type: ignore[no-any-return]
                return o.decrypt(data, parts or None)  # type: ignore[no-any-return]
            except InvalidTag:
                raise _core.DecryptionError(f"{t}: authentication failed on py:cryptography "
                                            "(wrong key, associated data or corrupted data)") from None
        return siv_fn
    alg_name, mode_name, pad = t.split("/")
    if alg_name == "AES":
        alg: Any = algorithms.AES(key)
        block = 16
    else:
        try:
            from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
        except ImportError:  # cryptography < 43
            TripleDES = algorithms.TripleDES  # type: ignore[attr-defined,misc]  # noqa: N806
        # single DES is k k k; two-key 3DES is k1 k2 k1
        alg = TripleDES(key * 3 if len(key) == 8 else key + key[:8] if len(key) == 16 else key)
        block = 8
    padded = pad == "PKCS5Padding"

    def block_fn(iv: bytes | None, data: bytes, aad: Any) -> bytes:
        mode = (modes.ECB() if mode_name == "ECB" else modes.CBC(iv or b"") if mode_name == "CBC"
                else modes.CTR(iv or b""))
        c = Cipher(alg, mode)
        if encrypt:
            e = c.encryptor()
            return e.update(_pad(data, block) if padded else data) + e.finalize()  # type: ignore[no-any-return]
        d = c.decryptor()
        out = d.update(data) + d.finalize()
        return _unpad(t, out, block) if padded else out  # type: ignore[no-any-return]
    return block_fn


def _make_pycryptodome(t: str, key: bytes, encrypt: bool, rekey: bool) -> Op:
    from Crypto.Cipher import AES, DES, DES3, ChaCha20_Poly1305

    def auth_failed() -> _core.DecryptionError:
        return _core.DecryptionError(f"{t}: authentication failed on py:pycryptodome "
                                     "(wrong key, IV, associated data or corrupted data)")

    if t in ("AES/GCM/NoPadding", "ChaCha20-Poly1305", "XChaCha20-Poly1305"):
        def new(iv: bytes) -> Any:
            if t == "AES/GCM/NoPadding":
                return AES.new(key, AES.MODE_GCM, nonce=iv)
            return ChaCha20_Poly1305.new(key=key, nonce=iv)

        def aead_fn(iv: bytes, data: bytes, aad: Any) -> bytes:
            c = new(iv)  # one object per message: the library's rule
            if aad is not None:
                c.update(aad)
            if encrypt:
                ct, tag = c.encrypt_and_digest(data)
                return ct + tag  # type: ignore[no-any-return]
            try:
                return c.decrypt_and_verify(data[:-16], data[-16:])  # type: ignore[no-any-return]
            except ValueError:
                raise auth_failed() from None
        return aead_fn
    if t == "AES/SIV/NoPadding":
        def siv_fn(iv: bytes | None, data: bytes, aad: Any) -> bytes:
            c = AES.new(key, AES.MODE_SIV, nonce=iv)
            for part in _siv_parts(aad, None):
                c.update(part)
            if encrypt:
                ct, tag = c.encrypt_and_digest(data)
                return tag + ct  # type: ignore[no-any-return]
            try:
                return c.decrypt_and_verify(data[16:], data[:16])  # type: ignore[no-any-return]
            except ValueError:
                raise auth_failed() from None
        return siv_fn
    alg_name, mode_name, pad = t.split("/")
    mod: Any = AES if alg_name == "AES" else DES if alg_name == "DES" else DES3
    block = 16 if alg_name == "AES" else 8
    padded = pad == "PKCS5Padding"
    des3_key = key + key[:8] if alg_name == "DESede" and len(key) == 16 else key

    def block_fn(iv: bytes | None, data: bytes, aad: Any) -> bytes:
        if mode_name == "ECB":
            c = mod.new(des3_key, mod.MODE_ECB)
        elif mode_name == "CBC":
            c = mod.new(des3_key, mod.MODE_CBC, iv=iv)
        else:
            c = mod.new(des3_key, mod.MODE_CTR, nonce=b"", initial_value=iv)
        if encrypt:
            return c.encrypt(_pad(data, block) if padded else data)  # type: ignore[no-any-return]
        out = c.decrypt(data)
        return _unpad(t, out, block) if padded else out  # type: ignore[no-any-return]
    return block_fn


def _make_pynacl(t: str, key: bytes, encrypt: bool, rekey: bool) -> Op:
    from nacl import bindings
    from nacl.exceptions import CryptoError

    x = t == "XChaCha20-Poly1305"
    enc = (bindings.crypto_aead_xchacha20poly1305_ietf_encrypt if x
           else bindings.crypto_aead_chacha20poly1305_ietf_encrypt)
    dec = (bindings.crypto_aead_xchacha20poly1305_ietf_decrypt if x
           else bindings.crypto_aead_chacha20poly1305_ietf_decrypt)

    def fn(iv: bytes, data: bytes, aad: Any) -> bytes:
        if encrypt:
            return enc(data, _one_aad(aad), iv, key)  # type: ignore[no-any-return]
        try:
            return dec(data, _one_aad(aad), iv, key)  # type: ignore[no-any-return]
        except CryptoError:
            raise _core.DecryptionError(f"{t}: authentication failed on py:pynacl (wrong key, "
                                        "IV, associated data or corrupted data)") from None
    return fn


_MAKERS = {"py:cryptography": _make_cryptography, "py:pycryptodome": _make_pycryptodome,
           "py:pynacl": _make_pynacl}


def _limits(name: str, t: str, iv: bytes | None, data_len: int, encrypt: bool) -> None:
    """The libraries' own limits, as ValueError naming the library."""
    if name == "py:cryptography":
        if t == "AES/GCM/NoPadding" and iv is not None and not 8 <= len(iv) <= 128:
            raise ValueError(f"py:cryptography's AESGCM takes an IV of 8 to 128 bytes, got "
                             f"{len(iv)} bytes (OpenSSL takes 1 to 128)")
        if t == "AES/SIV/NoPadding" and data_len == (0 if encrypt else 16):
            raise ValueError("py:cryptography's AESSIV takes no empty plaintext "
                             "(the C backends do)")
        if t == "AES/SIV/NoPadding" and iv is not None and len(iv) == 0:
            raise ValueError("py:cryptography's AESSIV takes no empty associated-data component")
    if name == "py:pycryptodome":
        if t == "AES/SIV/NoPadding" and iv is not None and len(iv) == 0:
            raise ValueError("py:pycryptodome's SIV takes no empty nonce: pass iv=None or a "
                             "non-empty one")


def _resolve(name: str, transformation: str) -> str:
    if name not in LIBRARIES:
        raise ValueError(f"unknown backend '{name}'; expected one of {', '.join(LIBRARIES)} "
                         "or a C library (see pycipherbench.backends())")
    t = _canonical(transformation)
    if t not in SUPPORTS[name]:
        raise _lacks(name, t)
    _module(name)
    return t


def _oneshot(encrypt: bool, transformation: str, key: Any, data: Any, *, iv: Any = None,
             aad: Any = None, rounds: Any = None, backend: str = "openssl") -> bytes:
    t = _resolve(backend, transformation)
    if rounds is not None:
        raise ValueError(f"{t} has no rounds parameter (only TEA and XTEA do); pass rounds=None")
    key, data = bytes(key), bytes(data)
    iv = None if iv is None else bytes(iv)
    _check_args(t, key, iv, aad)
    _limits(backend, t, iv, len(data), encrypt)
    if not encrypt and ("GCM" in t or "Poly1305" in t or "SIV" in t) and len(data) < 16:
        raise _core.DecryptionError(f"{t} ciphertext must hold at least the 16-byte "
                                    f"{'synthetic IV' if 'SIV' in t else 'tag'}, got {len(data)} bytes")
    if (not encrypt and "PKCS5" in t
            and (not data or len(data) % (16 if t.startswith("AES") else 8))):
        raise _core.DecryptionError(f"{t} ciphertext must be a non-zero whole number of blocks, "
                                    f"got {len(data)} bytes")
    if "NoPadding" in t and ("ECB" in t or "CBC" in t) and len(data) % (16 if t.startswith("AES") else 8):
        block = 16 if t.startswith("AES") else 8
        err = ValueError if encrypt else _core.DecryptionError
        raise err(f"{t} needs data that is a whole number of {block}-byte blocks, got {len(data)} bytes")
    fn = _MAKERS[backend](t, key, encrypt, False)
    return fn(iv, data, aad)


def encrypt(transformation: str, key: Any, data: Any, **kwargs: Any) -> bytes:
    """``pycipherbench.encrypt(..., backend="py:...")``."""
    return _oneshot(True, transformation, key, data, **kwargs)


def decrypt(transformation: str, key: Any, data: Any, **kwargs: Any) -> bytes:
    """``pycipherbench.decrypt(..., backend="py:...")``."""
    return _oneshot(False, transformation, key, data, **kwargs)


# ---------------------------------------------------------------------------- the kernel

_NONCES = 251  # a prime: the cycle of fresh nonces a sample walks through

_DEFAULT_KEY_BITS = {"AES/SIV/NoPadding": 256, "DES": 64, "DESede": 192}


def _key_len(t: str, key_bits: int | None) -> int:
    if key_bits is not None:
        if isinstance(key_bits, bool) or not isinstance(key_bits, int):
            raise TypeError(f"key_bits must be an int or None, not {type(key_bits).__name__}")
        if key_bits % 8:
            raise ValueError(f"key_bits must be a multiple of 8, got {key_bits}")
        return key_bits // 8
    alg = t.split("/")[0]
    if t in _DEFAULT_KEY_BITS:
        return _DEFAULT_KEY_BITS[t] // 8
    if alg in _DEFAULT_KEY_BITS:
        return _DEFAULT_KEY_BITS[alg] // 8
    return 32 if "ChaCha" in t else 16


def _iv_len(t: str, iv_len: int | None) -> int | None:
    if iv_len is not None:
        if not t.startswith("AES/GCM"):
            raise ValueError(f"iv_len applies to AES/GCM only; {t} has a fixed IV size")
        if isinstance(iv_len, bool) or not isinstance(iv_len, int) or not 1 <= iv_len <= 128:
            raise ValueError(f"iv_len (GCM IV bytes) must be an int in [1, 128], got {iv_len!r}")
        return iv_len
    if "/ECB/" in t or "SIV" in t:
        return None
    if t == "AES/GCM/NoPadding" or t == "ChaCha20-Poly1305":
        return 12
    if t == "XChaCha20-Poly1305":
        return 24
    return 16 if t.startswith("AES") else 8


def check(transformation: str, *, op: str = "enc", payload: int = 10 * 2**20,
          key_bits: int | None = None, rounds: int | None = None, scope: str = "message",
          iv_len: int | None = None, backend: str = "openssl", threads: int = 1) -> dict[str, Any]:
    """PyKernel's argument checks, preparing nothing; returns the arguments as used."""
    t = _resolve(backend, transformation)
    if op not in ("enc", "dec"):
        raise ValueError(f"op must be 'enc' or 'dec', got {op!r}")
    if scope not in ("message", "rekey"):
        raise ValueError(f"backend '{backend}' times whole calls of the library: scope must be "
                         f"'message' or 'rekey', got {scope!r}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads != 1:
        raise ValueError(f"threads applies to the C backends; backend '{backend}' runs one "
                         f"Python thread (threads=1), got {threads!r}")
    if rounds is not None:
        raise ValueError(f"{t} has no rounds parameter (only TEA and XTEA do); pass rounds=None")
    if isinstance(payload, bool) or not isinstance(payload, int) or not 1 <= payload <= 2**30:
        raise ValueError(f"payload (bytes) must be an int in [1, 1073741824], got {payload!r}")
    klen = _key_len(t, key_bits)
    n_iv = _iv_len(t, iv_len)
    block = 16 if t.startswith("AES") else 8
    if ("/ECB/" in t or "/CBC/" in t) and "NoPadding" in t and payload % block:
        raise ValueError(f"{t} in {scope} scope needs a payload that is a whole number of "
                         f"{block}-byte blocks, got {payload} bytes")
    _check_args(t, os.urandom(klen), None if n_iv is None else os.urandom(n_iv), None)
    _limits(backend, t, None if n_iv is None else bytes(n_iv), payload, True)
    return {"transformation": t, "op": op, "scope": scope, "payload": payload,
            "key_bits": klen * 8, "rounds": None, "iv_len": n_iv if t.startswith("AES/GCM") else None,
            "impl": None, "backend": backend, "threads": 1, "_iv": n_iv}


def _thread_usage() -> tuple[int, int]:
    """This thread's CPU ns and involuntary context switches."""
    try:
        ru = resource.getrusage(resource.RUSAGE_THREAD)  # type: ignore[attr-defined]
        return time.thread_time_ns(), int(ru.ru_nivcsw)
    except (AttributeError, OSError):
        return time.thread_time_ns(), 0


class PyKernel:
    """A Python library's call, prepared: key, data, nonces and (for ``op='dec'``) a valid
    ciphertext made before any clock starts. The C ``Kernel``'s interface; the loop and the
    clock are Python's (``time.perf_counter_ns``), with the GIL held, as in the program."""

    def __init__(self, transformation: str, **kwargs: Any) -> None:
        args = check(transformation, **kwargs)
        self._iv_n = args.pop("_iv")
        self.info = args
        t, backend = args["transformation"], args["backend"]
        key = os.urandom(args["key_bits"] // 8)
        plain = os.urandom(args["payload"])
        encrypt = args["op"] == "enc"
        rekey = args["scope"] == "rekey"
        fn = _MAKERS[backend](t, key, encrypt, rekey)
        if self._iv_n is None:
            nonces: Sequence[bytes | None] = [None]
        elif encrypt:
            nonces = [os.urandom(self._iv_n) for _ in range(_NONCES)]
        else:
            nonces = [os.urandom(self._iv_n)]
        data = plain if encrypt else _MAKERS[backend](t, key, True, False)(nonces[0], plain, None)
        self._fn, self._data, self._nonces = fn, data, nonces
        self.closed = False
        fn(nonces[0], data, None)  # fails here, not in the clock, if the library refuses

    def _run(self, n: int) -> int:
        fn, data = self._fn, self._data
        t0 = time.perf_counter_ns()
        for iv in itertools.islice(itertools.cycle(self._nonces), n):
            fn(iv, data, None)
        return time.perf_counter_ns() - t0

    def calibrate(self, min_time: float, warmup: float = -1.0) -> int:
        """Warm up (default: as long as min_time), then the operation count that makes one
        sample last at least min_time seconds."""
        if self.closed:
            raise ValueError("the kernel is closed")
        _core.check_timing(min_time, 1, warmup)
        warm_ns = (min_time if warmup < 0 else warmup) * 1e9
        spent, n = 0, 1
        while spent < warm_ns:
            spent += self._run(n)
            n = min(n * 2, 1 << 30)
        target, n = min_time * 1e9, 1
        while True:
            ns = self._run(n)
            if ns >= target:
                return n
            n = max(n + 1, min(int(n * target / max(ns, 1) * 1.1), n * 10))

    def sample(self, iterations: int, /) -> tuple[int, int, int, int, int]:
        """(elapsed_ns, tsc_ticks=0, cpu_ns, nivcsw, call_ns) of ``iterations`` calls."""
        if self.closed:
            raise ValueError("the kernel is closed")
        if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
            raise ValueError(f"iterations must be a positive int, got {iterations!r}")
        cpu0, cs0 = _thread_usage()
        w0 = time.perf_counter_ns()
        elapsed = self._run(iterations)
        call = time.perf_counter_ns() - w0
        cpu1, cs1 = _thread_usage()
        return elapsed, 0, cpu1 - cpu0, cs1 - cs0, call

    @property
    def thread_ns(self) -> tuple[int, ...]:
        return ()

    def close(self) -> None:
        self._fn = None  # type: ignore[assignment]
        self._data = b""
        self.closed = True

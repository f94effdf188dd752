"""Type stub of pycipherbench._core, the C extension (checked against it by tests/test_stub.py)."""

from collections.abc import Sequence
from typing import Any

from typing_extensions import Buffer

OPENSSL_VERSION: str
OPENSSL_BUILD_VERSION: str
COMPILER: str
TEA_IMPL: str
TSC_AVAILABLE: int
LEGACY_PROVIDER: bool

class CipherBenchError(Exception): ...
class DecryptionError(CipherBenchError, ValueError): ...
class UnsupportedCipherError(CipherBenchError, ValueError): ...
class OpenSSLError(CipherBenchError): ...

def ciphers() -> list[str]: ...
def encrypt(
    transformation: str,
    key: Buffer,
    data: Buffer,
    *,
    iv: Buffer | None = None,
    aad: Buffer | Sequence[Buffer] | None = None,
    rounds: int | None = None,
) -> bytes: ...
def decrypt(
    transformation: str,
    key: Buffer,
    data: Buffer,
    *,
    iv: Buffer | None = None,
    aad: Buffer | Sequence[Buffer] | None = None,
    rounds: int | None = None,
) -> bytes: ...
def measure(
    transformation: str,
    *,
    op: str = "enc",
    payload: int = 10485760,
    key_bits: int | None = None,
    rounds: int | None = None,
    scope: str = "message",
    iv_len: int | None = None,
    min_time: float = 0.05,
    repeats: int = 7,
    warmup: float = -1.0,
    check_only: bool = False,
) -> dict[str, Any] | None: ...
def tea_impls() -> list[str]: ...

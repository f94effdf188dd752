"""Type stub of pycipherbench._core, the C extension (checked against it by tests/test_stub.py)."""

from collections.abc import Iterable, Sequence
from os import PathLike
from typing import Any, final

from typing_extensions import Buffer

# The store options' types (pycipherbench._options declares every option once; the
# signatures below are checked against it by tests/test_options.py).
from pycipherbench._options import KeyEncryption, Layout, ValueEncryption, ValueType

OPENSSL_VERSION: str
OPENSSL_BUILD_VERSION: str
COMPILER: str
TEA_IMPL: str
B64_IMPL: str
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
    backend: str = "openssl",
) -> bytes: ...
def decrypt(
    transformation: str,
    key: Buffer,
    data: Buffer,
    *,
    iv: Buffer | None = None,
    aad: Buffer | Sequence[Buffer] | None = None,
    rounds: int | None = None,
    backend: str = "openssl",
) -> bytes: ...
_Sample = tuple[int, int, int, int, int]  # elapsed_ns, tsc_ticks, cpu_ns, nivcsw, call_ns

def check_kernel(
    transformation: str,
    *,
    op: str = "enc",
    payload: int = 10485760,
    key_bits: int | None = None,
    rounds: int | None = None,
    scope: str = "message",
    iv_len: int | None = None,
    backend: str = "openssl",
    threads: int = 1,
) -> None: ...
def check_timing(min_time: float, repeats: int, warmup: float = -1.0) -> None: ...
def canary(n: int, /) -> _Sample: ...

@final
class Kernel:
    def __new__(
        cls,
        transformation: str,
        *,
        op: str = "enc",
        payload: int = 10485760,
        key_bits: int | None = None,
        rounds: int | None = None,
        scope: str = "message",
        iv_len: int | None = None,
        backend: str = "openssl",
        threads: int = 1,
    ) -> Kernel: ...
    def calibrate(self, min_time: float, warmup: float = -1.0) -> int: ...
    def sample(self, iterations: int, /) -> _Sample: ...
    def close(self) -> None: ...
    @property
    def info(self) -> dict[str, Any]: ...
    @property
    def closed(self) -> bool: ...
    @property
    def thread_ns(self) -> tuple[int, ...]: ...

def tea_impls() -> list[str]: ...
def backends() -> list[dict[str, Any]]: ...
def cpu_info() -> dict[str, Any]: ...

class StoreFormatError(CipherBenchError, ValueError): ...
class ReservedNameError(CipherBenchError, ValueError): ...

@final
class Store:
    def __new__(
        cls,
        path: str | PathLike[str],
        *,
        master_key_file: str | PathLike[str] | None = None,
        passphrase: str | bytes | None = None,
        encrypted: bool = True,
        key_encryption: KeyEncryption = "siv",
        value_encryption: ValueEncryption = "gcm",
        cache: bool = False,
        layout: Layout = "entries",
        faithful: bool = False,
        scrypt_n: int = 0,
        lock_timeout: float = 10.0,
        crypto_backend: str = "openssl",
    ) -> Store: ...
    @property
    def heap_bytes(self) -> int: ...
    @property
    def disk_bytes(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    @property
    def path(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def file(self) -> str: ...
    def get_typed(self, name: str, /) -> tuple[int, Any] | None: ...
    def get_as(self, name: str, type_id: int, default: Any, /) -> Any: ...
    def all(self) -> dict[str, Any]: ...
    def edit(self) -> Editor: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...
    def rotate(
        self,
        *,
        master_key_file: str | PathLike[str] | None = None,
        passphrase: str | bytes | None = None,
        scrypt_n: int = 0,
        lazy: bool = False,
    ) -> None: ...
    def __contains__(self, name: object, /) -> bool: ...
    def __len__(self) -> int: ...

@final
class Editor:
    def put_string(self, name: str, value: str, /) -> Editor: ...
    def put_int(self, name: str, value: int, /) -> Editor: ...
    def put_long(self, name: str, value: int, /) -> Editor: ...
    def put_float(self, name: str, value: float, /) -> Editor: ...
    def put_bool(self, name: str, value: bool, /) -> Editor: ...
    def put_string_set(self, name: str, values: Iterable[str], /) -> Editor: ...
    def remove(self, name: str, /) -> Editor: ...
    def clear(self) -> Editor: ...
    def remove_unreadable(self) -> Editor: ...
    def commit(self) -> bool: ...
    def apply(self) -> None: ...

def _store_options(table: Sequence[Any] | None = None, /) -> dict[str, tuple[tuple[str, Any, str], ...]]: ...
def store_inspect(path: str | PathLike[str], /) -> dict[str, Any]: ...

def check_store_bench(
    workload: str,
    *,
    directory: str | PathLike[str] | None = None,
    n_keys: int = 1000,
    key_len: int = 32,
    value_len: int = 32,
    value_type: ValueType = "string",
    batch: int = 1,
    encrypted: bool = True,
    key_encryption: KeyEncryption = "siv",
    value_encryption: ValueEncryption = "gcm",
    cache: bool = False,
    layout: Layout = "entries",
    faithful: bool = False,
    passphrase: bool = False,
    crypto_backend: str = "openssl",
) -> None: ...

@final
class StoreKernel:
    def __new__(
        cls,
        workload: str,
        *,
        directory: str | PathLike[str] | None = None,
        n_keys: int = 1000,
        key_len: int = 32,
        value_len: int = 32,
        value_type: ValueType = "string",
        batch: int = 1,
        encrypted: bool = True,
        key_encryption: KeyEncryption = "siv",
        value_encryption: ValueEncryption = "gcm",
        cache: bool = False,
        layout: Layout = "entries",
        faithful: bool = False,
        passphrase: bool = False,
        crypto_backend: str = "openssl",
    ) -> StoreKernel: ...
    def calibrate(self, min_time: float, warmup: float = -1.0) -> int: ...
    def sample(self, iterations: int, /) -> _Sample: ...
    def stages(self, iterations: int, /) -> dict[str, int]: ...
    def close(self) -> None: ...
    @property
    def info(self) -> dict[str, Any]: ...
    @property
    def closed(self) -> bool: ...

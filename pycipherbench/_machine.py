"""The fingerprint of the machine every result carries."""

from __future__ import annotations

import functools
import os
import platform
from typing import Any

from . import _core

# Flags that decide how fast symmetric ciphers run.
X86_CRYPTO_FLAGS = (
    "aes", "vaes", "pclmulqdq", "vpclmulqdq", "ssse3", "avx", "avx2",
    "avx512f", "avx512bw", "avx512vl", "sha_ni", "bmi2", "adx",
)
ARM_CRYPTO_FLAGS = ("aes", "pmull", "sha1", "sha2", "sha512", "asimd", "neon")


def _cpuinfo() -> tuple[str, list[str]]:
    """CPU model and its crypto-relevant flags, from /proc/cpuinfo where there is one."""
    model = platform.processor() or platform.machine()
    flags: set[str] = set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return model, []
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "hardware", "cpu model") and value.strip():
            model = value.strip()
        elif key in ("flags", "features") and not flags:
            flags = set(value.split())
    wanted = X86_CRYPTO_FLAGS if platform.machine() in ("x86_64", "AMD64", "i686", "i386") else ARM_CRYPTO_FLAGS
    return model, [f for f in wanted if f in flags]


@functools.lru_cache(maxsize=1)
def _fingerprint() -> dict[str, Any]:
    from . import __version__

    model, flags = _cpuinfo()
    return {
        "cpu_model": model,
        "cpu_flags": flags,
        "arch": platform.machine(),
        "cores": os.cpu_count(),
        "openssl_version": _core.OPENSSL_VERSION,
        "openssl_build_version": _core.OPENSSL_BUILD_VERSION,
        "compiler": _core.COMPILER,
        "tea_impl": _core.TEA_IMPL,
        "b64_impl": _core.B64_IMPL,  # the store's Base64 decoder (PCB_B64_SCALAR=1 forces scalar)
        "tsc": bool(_core.TSC_AVAILABLE),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "package_version": __version__,
    }


def machine() -> dict[str, Any]:
    """CPU model and crypto flags, cores, OpenSSL version, compiler, Python and package version.

    Every :class:`~pycipherbench.Measurement` carries this dict so that results
    from different machines are never mistaken for each other.
    """
    fp = _fingerprint()
    return {**fp, "cpu_flags": list(fp["cpu_flags"])}

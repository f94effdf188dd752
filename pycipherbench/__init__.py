"""pycipherbench: what symmetric encryption really costs, measured on your machine.

Timed cipher kernels (OpenSSL 3 EVP, plus our own TEA/XTEA) run in C with the
GIL released; results come back as :class:`Measurement` objects with the raw
samples as NumPy arrays and the machine they were taken on.

>>> import pycipherbench as pcb
>>> m = pcb.measure("AES/GCM/NoPadding", payload=16384)      # doctest: +SKIP
>>> ct = pcb.encrypt("AES/GCM/NoPadding", key, data, iv=iv)   # doctest: +SKIP
"""

from ._core import (
    CipherBenchError,
    DecryptionError,
    OpenSSLError,
    UnsupportedCipherError,
    ciphers,
    decrypt,
    encrypt,
)
from ._machine import machine
from ._measure import Measurement, measure

__version__ = "0.1.0"

__all__ = [
    "CipherBenchError",
    "DecryptionError",
    "Measurement",
    "OpenSSLError",
    "UnsupportedCipherError",
    "ciphers",
    "decrypt",
    "encrypt",
    "machine",
    "measure",
    "__version__",
]

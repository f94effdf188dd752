"""pycipherbench: what symmetric encryption really costs, measured on your machine.

Timed cipher kernels (OpenSSL 3 EVP, plus our own TEA/XTEA) run in C with the
GIL released; results come back as :class:`Measurement` objects with the raw
samples as NumPy arrays and the machine they were taken on.

>>> import pycipherbench as pcb
>>> m = pcb.measure("AES/GCM/NoPadding", payload=16384)      # doctest: +SKIP
>>> ct = pcb.encrypt("AES/GCM/NoPadding", key, data, iv=iv)   # doctest: +SKIP
>>> r = pcb.sweep("cipher", transformation=["AES/GCM/NoPadding"], payload=[16, 4096])  # doctest: +SKIP
>>> r.ratio({"payload": 4096}, {"payload": 16})   # paired by round, with a 95% interval  # doctest: +SKIP
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
from ._pybackends import all_backends as backends
from .results import Results, load_results
from .stats import Ratio
from .sweep import sweep

__version__ = "0.1.0"

__all__ = [
    "CipherBenchError",
    "DecryptionError",
    "Measurement",
    "OpenSSLError",
    "Ratio",
    "Results",
    "UnsupportedCipherError",
    "backends",
    "ciphers",
    "decrypt",
    "encrypt",
    "load_results",
    "machine",
    "measure",
    "sweep",
    "__version__",
]

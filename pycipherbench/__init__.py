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

import inspect as _inspect
from typing import Any, Literal, overload

try:
    from . import _core
except ImportError as _e:  # not "circular import": say that the C extension is not built
    import os as _os

    _here = _os.path.dirname(_os.path.abspath(__file__))
    if not any(n.startswith("_core.") and n.endswith((".so", ".pyd")) for n in _os.listdir(_here)):
        raise ImportError(
            f"pycipherbench's C extension (_core) is not built in {_here}: this is a source "
            "checkout. Build it in place (python setup.py build_ext --inplace) or install the "
            "package (pip install .), and import it from outside the checkout") from None
    raise
from . import _names, _options, _pybackends

# The store options are declared once, in _options; the C parser takes them from there. (_core
# imports no Python module: the package hands the table over.)
try:
    _core._load_store_options(_options.OPTIONS, _options.unexpected)
except ValueError as _e:
    raise ImportError(str(_e)) from None
from ._core import (
    CipherBenchError,
    DecryptionError,
    OpenSSLError,
    UnsupportedCipherError,
)
from ._machine import machine
from ._measure import Measurement, measure
from ._pybackends import all_backends as backends


def _is_py_backend(kwargs: dict[str, Any]) -> bool:
    backend = kwargs.get("backend")
    return isinstance(backend, str) and backend.startswith("py:")


# The "py:" libraries are dispatched here, before _core is called: the C core knows
# only the C libraries (it imports no Python). Arguments pass through untouched, so a
# C-library call raises exactly what _core raises.
def _call(py: Any, c: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes:
    try:
        return py(*args, **kwargs) if _is_py_backend(kwargs) else c(*args, **kwargs)
    except ValueError as e:  # an unknown name: add the nearest valid one
        raise _names.explain_kernel_error(
            e, args[0] if args else kwargs.get("transformation"), kwargs.get("backend")) from None


def encrypt(*args: Any, **kwargs: Any) -> bytes:
    return _call(_pybackends.encrypt, _core.encrypt, args, kwargs)


def decrypt(*args: Any, **kwargs: Any) -> bytes:
    return _call(_pybackends.decrypt, _core.decrypt, args, kwargs)


@overload
def ciphers(*, aliases: Literal[False] = False, backend: str = "all") -> list[str]: ...
@overload
def ciphers(*, aliases: Literal[True], backend: str = "all") -> dict[str, str]: ...
@overload
def ciphers(*, aliases: bool, backend: str = "all") -> list[str] | dict[str, str]: ...


def ciphers(*args: Any, aliases: bool = False, backend: str = "all") -> list[str] | dict[str, str]:
    """Canonical names of every transformation this build and the Python libraries
    installed run: OpenSSL's (with the package's own TEA/XTEA kernels), then any other an
    available backend runs (XChaCha20-Poly1305 with libsodium or PyNaCl: measure it with
    that ``backend=``, as the error of the default backend says).

    ``backend``: one library's (a name of :func:`backends`; ``"openssl"``: what
    ``measure()`` runs by default).

    ``aliases=True``: a dict from every other accepted spelling to the name it stands
    for (``'AES/CBC/PKCS7Padding'`` -> ``'AES/CBC/PKCS5Padding'``, ``'3DES/...'`` and
    ``'TripleDES/...'`` -> ``'DESede/...'``, ``'ChaCha20-Poly1305/None/NoPadding'``;
    names match case-insensitively as well). A sweep folds an alias into its name:
    ``PKCS7Padding`` and ``PKCS5Padding`` are one point, measured once.
    """
    if args:
        raise TypeError(f"ciphers() takes no arguments but the keyword aliases=; got "
                        f"{len(args)} positional")
    if not isinstance(aliases, bool):
        raise TypeError(f"ciphers(aliases=) must be a bool, not {type(aliases).__name__}")
    if aliases:
        return dict(_names.alias_table())
    if backend == "openssl":
        return _core.ciphers()
    found = {b["name"]: b for b in backends()}
    if backend == "all":
        names = dict.fromkeys(_core.ciphers())
        for b in found.values():
            if b["available"]:
                names.update(dict.fromkeys(b["transformations"]))
        return list(names)
    if backend not in found:
        raise ValueError(f"backend must be 'all' or one of {', '.join(found)}, not "
                         f"{backend!r}{_names.nearest(str(backend), found)}")
    return list(found[backend]["transformations"]) if found[backend]["available"] else []


def _signature(transformation: str, key: Any, data: Any, *, iv: Any = None, aad: Any = None,
               rounds: int | None = None, backend: str = "openssl") -> bytes:
    raise NotImplementedError  # only its signature is used


for _fn, _c in ((encrypt, _core.encrypt), (decrypt, _core.decrypt)):
    _fn.__doc__ = (_c.__doc__ or "") + (
        "\n\nbackend: a C library of backends() or a Python one (\"py:cryptography\",\n"
        "\"py:pycryptodome\", \"py:pynacl\"), which pycipherbench._pybackends runs.")
    _fn.__signature__ = _inspect.signature(_signature)  # type: ignore[attr-defined]
del _fn, _c, _signature
from ._cost import PayloadCostError, PayloadCostWarning
from .results import Results, load_results
from .stats import Ratio
from .sweep import sweep

#: The package version, written only here (pyproject.toml reads it: dynamic = ["version"]).
__version__ = "0.1.0"

__all__ = [
    "CipherBenchError",
    "DecryptionError",
    "Measurement",
    "OpenSSLError",
    "PayloadCostError",
    "PayloadCostWarning",
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

"""Names users type: transformation aliases, and the nearest valid name when one is wrong.

The C core accepts a transformation case-insensitively and with a few aliases
(``csrc/crypto/transform.c``, ``pcb_find_transform``): Java's ``PKCS7Padding``
for ``PKCS5Padding`` (the same padding, on 8- and 16-byte blocks alike),
``3DES``/``TripleDES`` for ``DESede``, and JCE's
``ChaCha20-Poly1305/None/NoPadding``. :func:`alias_table` lists every alias
with the name it stands for; :func:`canonical` maps any accepted spelling to
the name :func:`pycipherbench.ciphers` lists (so a sweep measures an alias and
its name once). The hints here are added to the core's error messages in
Python: :func:`transformation_hint` (whitespace, OpenSSL's ``aes-128-gcm``
style, a bare algorithm such as ``DESede``, difflib's nearest names) and
:func:`nearest` for backends, parameters and workloads.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable

from . import _core

__all__ = ["alias_table", "canonical", "known_transformations", "nearest", "transformation_hint"]


@functools.lru_cache(maxsize=1)
def known_transformations() -> tuple[str, ...]:
    """Every transformation some backend of this build runs (C libraries and Python
    ones), OpenSSL's first in :func:`pycipherbench.ciphers` order."""
    from ._pybackends import SUPPORTS

    names = dict.fromkeys(_core.ciphers())
    for b in _core.backends():
        names.update(dict.fromkeys(b["transformations"]))
    for ts in SUPPORTS.values():
        names.update(dict.fromkeys(ts))
    return tuple(names)


@functools.lru_cache(maxsize=1)
def alias_table() -> dict[str, str]:
    """alias -> the transformation name it stands for (as :func:`pycipherbench.ciphers`
    spells it); names are matched case-insensitively as well."""
    table: dict[str, str] = {}
    for name in known_transformations():
        spellings = {name}
        if name.startswith("DESede/"):
            rest = name[len("DESede/"):]
            spellings |= {f"3DES/{rest}", f"TripleDES/{rest}"}
        spellings |= {s.replace("PKCS5Padding", "PKCS7Padding") for s in spellings}
        if name == "ChaCha20-Poly1305":
            spellings.add("ChaCha20-Poly1305/None/NoPadding")
        table.update({s: name for s in sorted(spellings - {name})})
    return table


@functools.lru_cache(maxsize=1)
def _by_upper() -> dict[str, str]:
    out = {a.upper(): c for a, c in alias_table().items()}
    out.update({n.upper(): n for n in known_transformations()})
    return out


def canonical(name: object) -> str | None:
    """The listed name of a transformation spelled any way the core accepts (case,
    aliases); None if it is no transformation."""
    if not isinstance(name, str):
        return None
    return _by_upper().get(name.upper())


def nearest(name: object, choices: Iterable[str], *, what: str = "") -> str:
    """"; did you mean 'x'?" (and the next nearest) for the difflib-nearest of ``choices``
    (case-insensitive), '' when none is near. ``what`` names them in the sentence."""
    if not isinstance(name, str):
        return ""
    options = list(dict.fromkeys(choices))
    upper = {c.upper(): c for c in options}
    close = difflib.get_close_matches(name.strip().upper(), list(upper), n=3, cutoff=0.6)
    if not close:
        return ""
    also = f" (also near: {', '.join(repr(upper[c]) for c in close[1:])})" if close[1:] else ""
    return f"; did you mean {f'the {what} ' if what else ''}{upper[close[0]]!r}?{also}"


_OPENSSL_STYLE = re.compile(r"^(aes|camellia|aria)[-_]?(128|192|256)[-_]?(gcm|cbc|ctr|ecb|siv)$", re.I)
_DES_STYLE = re.compile(r"^(des-ede3|des3|des)(?:[-_](cbc|ecb))?$", re.I)


def _openssl_style(name: str) -> str:
    """A hint for OpenSSL's cipher names (aes-128-gcm, des-ede3-cbc, chacha20)."""
    m = _OPENSSL_STYLE.match(name)
    if m and m[1].lower() == "aes":
        bits, mode = int(m[2]), m[3].upper()
        if mode == "SIV":  # OpenSSL's aes-128-siv takes two AES-128 keys: 256 bits in all
            return (f"OpenSSL's {name!r} is 'AES/SIV/NoPadding' with key_bits={2 * bits} "
                    f"(a {bits // 4}-byte key: two AES-{bits} keys)")
        if mode in ("GCM", "CTR"):
            return f"OpenSSL's {name!r} is 'AES/{mode}/NoPadding' with a {bits // 8}-byte key (key_bits={bits})"
        return (f"OpenSSL's {name!r} is 'AES/{mode}/PKCS5Padding' (OpenSSL pads by default; "
                f"'AES/{mode}/NoPadding' without padding) with a {bits // 8}-byte key "
                f"(key_bits={bits})")
    m = _DES_STYLE.match(name)
    if m:
        alg = "DES" if m[1].lower() == "des" else "DESede"
        mode = (m[2] or ("ecb" if m[1].lower() == "des-ede3" else "cbc")).upper()  # OpenSSL's
        bits = 64 if alg == "DES" else 192
        return (f"OpenSSL's {name!r} is '{alg}/{mode}/PKCS5Padding' (or '{alg}/{mode}/NoPadding') "
                f"with key_bits={bits}")
    return ""


def transformation_hint(name: object) -> str:
    """What to write instead of an unknown transformation name, as a clause starting
    with '; ' ('' when nothing is near)."""
    if not isinstance(name, str):
        return ""
    stripped = name.strip()
    if stripped != name and canonical(stripped):
        return (f"; the name has spaces around it: write {canonical(stripped)!r} "
                "without them")
    openssl = _openssl_style(stripped)
    if openssl:
        return f"; {openssl}"
    names = known_transformations()
    up = stripped.upper().replace("TRIPLEDES", "DESEDE").replace("3DES", "DESEDE")
    if up and "/" not in up:  # a bare algorithm: 'DESede', 'AES', 'ChaCha20'
        family = [n for n in names if n.upper().split("/")[0] == up]
        family = family or [n for n in names if n.upper().startswith(up)]
        if family:
            shown = ", ".join(repr(n) for n in family[:8])
            more = f" (and {len(family) - 8} more)" if len(family) > 8 else ""
            return (f"; a transformation names algorithm/mode/padding: {shown}{more}")
    return nearest(stripped, [*names, *alias_table()])


def with_hint(error: BaseException, hint: str) -> BaseException:
    """The same kind of exception with ``hint`` appended to its message (the original
    chained as its cause); ``error`` itself when there is no hint."""
    if not hint:
        return error
    new = type(error)(f"{error}{hint}")
    new.__cause__ = None
    return new


def check_transformation_arg(transformation: object, function: str) -> None:
    """A TypeError naming ``function``'s first argument when it is not a string."""
    if not isinstance(transformation, str):
        raise TypeError(f"{function}() argument 'transformation' must be a str, a name of "
                        f"pycipherbench.ciphers() such as 'AES/GCM/NoPadding', not "
                        f"{type(transformation).__name__} {transformation!r}")


def explain_kernel_error(error: Exception, transformation: object, backend: object) -> BaseException:
    """The core's error about a kernel's names with what to write instead: the nearest
    transformation or backend, or every library (Python ones too) that has it."""
    text = str(error)
    if text.startswith("unknown transformation"):
        return with_hint(error, transformation_hint(transformation))
    if text.startswith("unknown backend"):
        from ._pybackends import all_backends

        return with_hint(error, nearest(backend, [b["name"] for b in all_backends()]))
    if "backends that have it" in text or "no backend of this build has it" in text:
        from ._pybackends import SUPPORTS

        name = canonical(transformation)
        extra = [n for n, ts in SUPPORTS.items() if name in ts and n not in text]
        if extra:
            sep = ", " if "backends that have it: " in text else "; Python libraries that have it: "
            return with_hint(error, sep + ", ".join(extra))
    return error


def explain_workload_error(error: Exception, workload: object) -> BaseException:
    """The core's 'workload must be one of ...' with the nearest store workload."""
    import typing

    from ._options import Workload

    if str(error).startswith("workload must be one of"):
        return with_hint(error, nearest(workload, typing.get_args(Workload)))
    return error

"""The store's options, declared once (issue 17).

Every argument of the store calls is one :class:`Option` of :data:`OPTIONS`: its name,
its type (the annotation as the public signatures spell it, with the aliases below),
its default, a line of documentation, which calls take it, and where in a sweep it
means something. What reads the table:

- ``pycipherbench._core`` at import (``csrc/py/store_options_py.c``): the keyword
  arguments of ``_core.Store`` (call ``"open"``), ``_core.StoreKernel`` and
  ``_core.check_store_bench`` (call ``"kernel"``) are this table's names with this
  table's defaults; no format string or keyword list restates them. The import fails
  if an option here has no C conversion or C converts one that is not here.
- :func:`pycipherbench.store.open` (``"open"``), :func:`~pycipherbench.store_bench.bench`
  and :func:`~pycipherbench.store_bench.plan_bench` (``"bench"``) keep explicit, typed
  signatures, so mypy and IDEs see real types; ``tests/test_options.py`` checks that
  those signatures and ``_core.pyi`` say exactly what this table says (names, kinds,
  defaults, types), and prints the line to paste when they do not. Their bodies pass
  the options on through :func:`values`.
- :func:`pycipherbench.sweep.applies` takes which store parameters apply to a point
  from ``when``/``unless`` here; ``tests/test_options.py`` checks those against what
  the C layer accepts.

A new option is one entry here, its C conversion in ``store_options_py.c`` and what it
does; the tests then name each signature that lacks it.

This module imports nothing of the package (``_core`` reads it while it is imported).
"""

from __future__ import annotations

import difflib
import functools
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, ParamSpec, TypeVar

__all__ = ["OPTIONS", "Option", "REQUIRED", "applies", "check_bools", "for_call", "keywords",
           "unexpected", "values"]

KeyEncryption = Literal["siv", "none"]
ValueEncryption = Literal["gcm", "chacha20-poly1305", "none"]
Layout = Literal["entries", "file"]
Workload = Literal["put", "get", "get_missing", "contains", "all", "commit", "apply",
                   "open_cold", "open_warm", "rotate", "rotate_lazy", "migrate", "migrate_keys"]
ValueType = Literal["string", "string_set", "int", "long", "float", "bool"]
Engine = Literal["esp", "sqlcipher", "mmkv"]
Level = Literal["c", "python"]
PathLike = str | os.PathLike[str]


class _Required:
    """The default of a parameter that has none (the call's subject)."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()

#: The calls, and the functions that take each call's options.
CALLS: dict[str, tuple[str, ...]] = {
    "open": ("pycipherbench.store.open", "pycipherbench._core.Store"),
    "bench": ("pycipherbench.store_bench.bench", "pycipherbench.store_bench.plan_bench"),
    "kernel": ("pycipherbench._core.StoreKernel", "pycipherbench._core.check_store_bench"),
}

Condition = tuple[tuple[str, tuple[Any, ...]], ...]


@dataclass(frozen=True)
class Option:
    """One argument of the store calls.

    ``type`` is the annotation as written in the signatures (names of this module).
    ``calls``: of :data:`CALLS`. ``positional``: the call's subject (its one positional
    parameter, also accepted by name; ``default`` is :data:`REQUIRED`). ``run``: a
    setting of how a point is timed, not a point parameter (it passes through a sweep
    to every point and is no column of the results). ``when``: the option means
    something for a point only where each named parameter has one of the values
    listed; ``unless``: nor where one has one of those.
    """

    name: str
    type: str
    default: Any
    doc: str
    calls: frozenset[str]
    positional: bool = False
    run: bool = False
    when: Condition = ()
    unless: Condition = ()


def _opt(name: str, type: str, default: Any, doc: str, calls: str, **kw: Any) -> Option:
    return Option(name, type, default, doc, frozenset(calls.split()), **kw)


_ENCRYPTED: Condition = (("encrypted", (True,)),)
_ENTRIES: Condition = (("encrypted", (True,)), ("layout", ("entries",)))
_NOT_COLD: Condition = (("workload", ("open_cold",)),)
_PEER: Condition = (("engine", ("sqlcipher", "mmkv")),)  # engines without ESP's options (issue 19)

#: Every store option, in the order the documentation lists them.
OPTIONS: tuple[Option, ...] = (
    # the subjects
    _opt("path", "PathLike", REQUIRED, "the XML file; its base name without .xml is the "
         "store's name", "open", positional=True),
    _opt("workload", "Workload", REQUIRED, "what is timed (see store.bench)", "bench",
         positional=True),
    _opt("workload", "str", REQUIRED, "what is timed, by name", "kernel", positional=True),
    # the master key
    _opt("master_key_file", "PathLike | None", None,
         "32 raw bytes, created 0600 if absent", "open"),
    _opt("passphrase", "str | bytes | None", None,
         "derive the master key with scrypt instead of a key file", "open"),
    _opt("scrypt_n", "int", 0, "scrypt's N for a new store (0: 2**15)", "open"),
    _opt("lock_timeout", "float", 10.0,
         "seconds a write waits for another writer's lock (0: try once; at most 86400)",
         "open"),
    # the workload point
    _opt("n_keys", "int", 1000, "entries in the store", "bench kernel", unless=_NOT_COLD),
    _opt("key_len", "int", 32, "characters of each entry's name", "bench kernel",
         unless=_NOT_COLD),
    _opt("value_len", "int", 32, "characters of each string value", "bench kernel",
         when=(("value_type", ("string", "string_set")),), unless=_NOT_COLD),
    _opt("value_type", "ValueType", "string", "the values' type", "bench kernel",
         unless=_NOT_COLD),
    _opt("batch", "int", 1, "puts per commit/apply", "bench kernel",
         when=(("workload", ("commit", "apply")),)),
    # what the store is
    _opt("encrypted", "bool", True, "False: the plain SharedPreferences baseline",
         "open bench kernel"),
    _opt("key_encryption", "KeyEncryption", "siv", "names: AES-SIV (ESP) or plain",
         "open bench kernel", when=_ENTRIES, unless=_PEER),
    _opt("value_encryption", "ValueEncryption", "gcm", "values' AEAD, or none",
         "open bench kernel", when=_ENCRYPTED, unless=_PEER),
    _opt("cache", "bool", False, "keep decrypted values", "open bench kernel", when=_ENCRYPTED,
         unless=_PEER),
    _opt("layout", "Layout", "entries", "one entry per key (ESP) or the map sealed whole",
         "open bench kernel", when=_ENCRYPTED, unless=_PEER),
    _opt("faithful", "bool", False, "repeat ESP's per-call work", "open bench kernel",
         when=_ENCRYPTED, unless=_PEER),
    _opt("passphrase", "bool", False, "the store's master key from a passphrase (scrypt)",
         "bench kernel", when=_ENCRYPTED, unless=_PEER),
    _opt("crypto_backend", "str", "auto", "the library that seals and opens entries",
         "open bench kernel", when=(*_ENTRIES, ("faithful", (False,))), unless=_PEER),
    # which store, and where it is timed (issue 19; Python only)
    _opt("engine", "Engine", "esp", "the store: ESP ('esp', this package's C store), "
         "SQLCipher 4 ('sqlcipher', pycipherbench[peers]) or our MODEL of MMKV's design "
         "('mmkv', unauthenticated AES-CFB); the last two timed at the Python call", "bench"),
    _opt("level", "Level", "c", "where ESP is timed: in C with the GIL released ('c') or at "
         "the Python call ('python', as engines with only a Python binding are)", "bench",
         when=(("engine", ("esp",)),)),
    # how the point is run (Python only)
    _opt("hw_aes", "bool", True, "False: in a child process with AES-NI/PCLMULQDQ hidden",
         "bench", when=_ENCRYPTED, unless=_PEER),
    _opt("min_time", "float", 0.05, "seconds one sample lasts at least", "bench", run=True),
    _opt("repeats", "int", 10, "rounds", "bench", run=True),
    _opt("warmup", "float | None", None, "seconds of warm-up (None: min_time)", "bench",
         run=True),
    _opt("stages", "bool", True, "also time put/get's stages", "bench", run=True),
    _opt("directory", "PathLike | None", None,
         "where the store's files go (store.bench: None is a new temporary directory; "
         "StoreKernel needs one)", "bench kernel", run=True),
)


def for_call(call: str, options: Iterable[Option] = OPTIONS) -> dict[str, Option]:
    """The options of one call (of :data:`CALLS`) by name, in table order."""
    if call not in CALLS:
        raise ValueError(f"call must be one of {sorted(CALLS)}, not {call!r}")
    out: dict[str, Option] = {}
    for o in options:
        if call in o.calls:
            if o.name in out:
                raise ValueError(f"option {o.name!r} is declared twice for {call!r}")
            out[o.name] = o
    return out


def values(call: str, namespace: Mapping[str, Any], *, point: bool = False,
           kernel: bool = False) -> dict[str, Any]:
    """The values of ``call``'s keyword options in ``namespace`` (a function's ``locals()``),
    in table order. ``point``: only point parameters (no run settings); ``kernel``: only
    those the C kernel takes too."""
    ks = for_call("kernel") if kernel else None
    return {name: namespace[name] for name, o in for_call(call).items()
            if not o.positional and not (point and o.run) and (ks is None or name in ks)}


def check_bools(call: str, given: Mapping[str, Any]) -> None:
    """TypeError for a bool option given anything but a bool (1 is not True here)."""
    opts = for_call(call)
    for name, value in given.items():
        o = opts.get(name)
        if o is not None and o.type == "bool" and not isinstance(value, bool):
            raise TypeError(f"{name} must be a bool, not {type(value).__name__}")


def unexpected(func: str, name: str, known: Iterable[str]) -> TypeError:
    """The TypeError of an unknown keyword argument, with a "did you mean" hint."""
    close = difflib.get_close_matches(str(name), list(known), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return TypeError(f"{func}() got an unexpected keyword argument {name!r}{hint}")


def check_names(func: str, call: str, given: Iterable[str], extra: Iterable[str] = ()) -> None:
    """Raise :func:`unexpected` for the first name ``call`` (nor ``extra``) does not take."""
    known = [*for_call(call), *extra]
    for name in given:
        if name not in known:
            raise unexpected(func, name, known)


def _holds(value: Any, allowed: tuple[Any, ...]) -> bool:
    # bools apart from ints, as the sweep keeps them (True is not 1)
    return any(value == a and isinstance(value, bool) == isinstance(a, bool) for a in allowed)


def applies(name: str, point: Mapping[str, Any], call: str = "bench") -> bool:
    """Whether store parameter ``name`` means anything for ``point`` (missing parameters
    take their defaults): its ``when`` and ``unless`` conditions. Names not in the
    table apply."""
    o = for_call(call).get(name)
    if o is None:
        return True
    opts = for_call(call)

    def get(key: str) -> Any:
        if key in point:
            return point[key]
        return (opts[key] if key in opts else for_call("bench")[key]).default

    return (all(_holds(get(k), allowed) for k, allowed in o.when)
            and not any(_holds(get(k), allowed) for k, allowed in o.unless))


P = ParamSpec("P")
R = TypeVar("R")


def keywords(call: str, *, extra: Iterable[str] = ()) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorates a public function taking ``call``'s options (and ``extra``): an unknown
    keyword is a TypeError with a "did you mean" hint (the signature is kept)."""
    extras = tuple(extra)

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        known = frozenset(for_call(call)) | frozenset(extras)

        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            if not known.issuperset(kwargs):
                check_names(fn.__name__, call, kwargs, extras)
            return fn(*args, **kwargs)

        return wrapper

    return decorate


# -- values: one parser and one check for the CLI's text and the API's objects (issue 26) ------

_TRUE = ("true", "yes", "on")
_FALSE = ("false", "no", "off")


def _members(annotation: Any) -> list[Any]:
    """The alternatives of an annotation: Union members flattened, Literal kept whole."""
    import typing

    origin = typing.get_origin(annotation)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return [m for a in typing.get_args(annotation) for m in _members(a)]
    return [annotation]


def _literal(member: Any) -> tuple[Any, ...] | None:
    import typing

    return typing.get_args(member) if typing.get_origin(member) is typing.Literal else None


def accepted(annotation: Any) -> str:
    """What a parameter of this annotation accepts, in words ("one of 'enc', 'dec'")."""
    words: list[str] = []
    for m in _members(annotation):
        lit = _literal(m)
        if lit is not None:
            words.append("one of " + ", ".join(repr(v) for v in lit))
        elif m is type(None):
            words.append("none (the default)")
        elif m is bool:
            words.append("true or false")
        elif m is int:
            words.append("a whole number")
        elif m is float:
            words.append("a number")
        else:
            words.append("a text")
    return " or ".join(dict.fromkeys(words))


def _choices(annotation: Any) -> list[str]:
    return [str(v) for m in _members(annotation) for v in (_literal(m) or ())]


def check_value(name: str, value: Any, annotation: Any) -> None:
    """Raise a TypeError (wrong kind) or ValueError (a name not among the accepted ones)
    naming ``name``, what it accepts and the nearest valid name, unless ``value`` fits
    ``annotation`` (bools apart from ints; an int is a number; unknown kinds pass)."""
    members = _members(annotation)
    kinds: list[type] = []
    for m in members:
        lit = _literal(m)
        if lit is not None:
            if any(value == v and type(value) is type(v) for v in lit):
                return
            kinds.append(type(lit[0]))
        elif m is type(None):
            if value is None:
                return
        elif m is bool:
            if isinstance(value, bool):
                return
        elif m is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return
        elif m is float:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return
        elif m is str:
            if isinstance(value, str):
                return
        else:
            return  # PathLike and others: the callee checks them
    choices = _choices(annotation)
    close = difflib.get_close_matches(str(value), choices, n=1) if isinstance(value, str) else []
    hint = f"; did you mean {close[0]!r}?" if close else ""
    if any(isinstance(value, k) for k in kinds):
        raise ValueError(f"{name}={value!r}: expected {accepted(annotation)}{hint}")
    raise TypeError(f"{name}={value!r} ({type(value).__name__}): expected "
                    f"{accepted(annotation)}{hint}")


def parse_text(name: str, text: str, annotation: Any, *, flag: str = "--param") -> Any:
    """One command-line value of parameter ``name`` as the API takes it, read by its
    annotation: a listed name exactly (``none`` is the name 'none' where the parameter
    lists it, as key_encryption does), ``none`` for an optional one's default,
    true/false/yes/no/on/off for a bool, a whole number, a number, else text. A value
    that fits none of them is a ValueError naming the flag, the parameter, what it
    accepts and the nearest valid name."""
    value = text.strip()
    low = value.lower()
    if not value:
        raise ValueError(f"{flag} {name}: an empty value (two commas in a row?); expected "
                         f"{accepted(annotation)}")
    members = _members(annotation)
    for m in members:
        for v in _literal(m) or ():
            if isinstance(v, str) and low == v.lower():
                return v
    if low == "none" and type(None) in members:
        return None
    if bool in members and low in _TRUE + _FALSE:
        return low in _TRUE
    if int in members:
        try:
            return int(value)
        except ValueError:
            pass
    if float in members:
        try:
            return float(value)
        except ValueError:
            pass
    if any(m is str or (_literal(m) is None and m not in (bool, int, float, type(None)))
           for m in members):
        return value
    choices = _choices(annotation)
    close = difflib.get_close_matches(value, choices, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"{flag} {name}={value!r}: expected {accepted(annotation)}{hint}")


def warmup_value(warmup: Any) -> Any:
    """``warmup`` as the C layer takes it, checked by its declaration (:data:`SETTINGS`):
    None (warm up for min_time) is its internal -1, which a caller may not give itself."""
    SETTINGS["warmup"].check(warmup)
    return -1.0 if warmup is None else warmup


def timing_values(min_time: Any, repeats: Any, warmup: Any) -> Any:
    """The timing keywords checked by their declarations (the messages the CLI's flags
    give too); returns ``warmup`` as the C layer takes it (:func:`warmup_value`)."""
    SETTINGS["repeats"].check(repeats)
    SETTINGS["min_time"].check(min_time)
    return warmup_value(warmup)


# -- run settings: one declaration each for a subcommand's flag and the API's keyword ---------

@dataclass(frozen=True)
class Setting:
    """A run setting that flags of several subcommands and keywords of the API share
    (``sweep --repeats`` and ``measure(repeats=)``): its kind (int or float), accepted
    range, default and help. :meth:`add_to` builds the argparse option from it and
    :meth:`check` is what the API runs on the keyword, so a bad value gets the same
    message on both sides, naming the parameter and the range. ``low_open``/``high_open``:
    the range excludes ``low``/``high``; ``note``: what else is accepted or what a value means (None's
    meaning, where ``default`` is None)."""

    name: str
    kind: type
    low: float
    high: float
    default: Any
    help: str
    default_words: str = ""
    low_open: bool = False
    high_open: bool = False
    unit: str = ""
    note: str = ""
    flag_name: str = ""  # the flag, where it is not the keyword's name

    @property
    def flag(self) -> str:
        return self.flag_name or "--" + self.name.replace("_", "-")

    def range_words(self) -> str:
        """'between 1 and 100000', 'in (0, 60] seconds'."""
        if self.kind is int:
            return f"between {self.low:d} and {self.high:d}"
        def num(x: float) -> str:  # 86400000, not 8.64e+07
            return f"{int(x)}" if float(x).is_integer() else f"{x:g}"

        return (f"in {'(' if self.low_open else '['}{num(self.low)}, {num(self.high)}"
                f"{')' if self.high_open else ']'}"
                + (f" {self.unit}" if self.unit else ""))

    def check(self, value: Any) -> None:
        """TypeError (not the setting's kind; bools are no numbers) or ValueError (out
        of range), each naming the setting; None passes where it is the default."""
        if value is None and self.default is None:
            return
        note = f" ({self.note})" if self.note else ""
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not numeric or (self.kind is int and not isinstance(value, int)):
            kind = "an int" if self.kind is int else "a number"
            raise TypeError(f"{self.name} must be {kind}{note}, not {type(value).__name__}")
        low_ok = value > self.low if self.low_open else value >= self.low
        high_ok = value < self.high if self.high_open else value <= self.high
        if not (low_ok and high_ok):  # NaN fails both
            raise ValueError(f"{self.name} must be {self.range_words()}{note}, got {value!r}")

    def parse(self, text: str) -> Any:
        """The flag's value (argparse's ``type``): read as the setting's kind, checked by
        :meth:`check` (argparse prints the message after the flag's name)."""
        import argparse

        try:
            value = self.kind(text)
        except ValueError:
            kind = "an int" if self.kind is int else "a number"
            raise argparse.ArgumentTypeError(f"{self.name} must be {kind}, not {text!r}") from None
        try:
            self.check(value)
        except (TypeError, ValueError) as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return value

    def add_to(self, parser: Any, *, default: Any = None, help: str | None = None,
               default_words: str | None = None) -> Any:
        """The setting's option on an argparse ``parser``: ``default`` None leaves it to
        the call (the help then says the API's default, or ``default_words`` where the
        command picks its own); ``help`` replaces the text."""
        words = default_words or self.default_words or f"{self.default:g}"
        parse = functools.partial(Setting.parse, self)
        parse.__name__ = self.name  # type: ignore[attr-defined]  # argparse's error text
        parse.setting = self  # type: ignore[attr-defined]  # which declaration (tests)
        return parser.add_argument(
            self.flag, dest=self.name, type=parse, default=default,
            metavar=self.kind.__name__.upper(),
            help=f"{help or self.help} (default {words}; {self.range_words()})")


def _setting(name: str, kind: type, low: float, high: float, default: Any, help: str,
             **kw: Any) -> tuple[str, Setting]:
    return name, Setting(name, kind, low, high, default, help, **kw)


#: The run settings the CLI's flags and the API's keywords share (issue 26).
SETTINGS: dict[str, Setting] = dict((
    _setting("repeats", int, 1, 100_000, 10,
             "rounds: every point takes one sample per round"),
    _setting("min_time", float, 0.0, 60.0, 0.05, "seconds one sample lasts at least",
             low_open=True, unit="seconds"),
    _setting("warmup", float, 0.0, 60.0, None, "seconds of warm-up per point",
             unit="seconds", note="or None: as long as min_time",
             default_words="as long as --min-time"),
    _setting("processes", int, 1, 100_000, None,
             "fresh worker processes the rounds run in, one after another",
             note="1: in this process, whose intervals cover it only",
             default_words="up to 5, at least 2 rounds each"),
    _setting("payload", int, 1, 1 << 30, 10 << 20, "bytes per message",
             default_words="10 MiB"),
    _setting("threads", int, 1, 256, 1,
             "independent contexts on as many threads per cell (aggregate KB/ms)"),
    _setting("n_keys", int, 1, 10_000_000, 1000, "entries in the store"),
    _setting("alpha", float, 0.0, 1.0, 0.05, "significance level of a verdict",
             low_open=True, high_open=True),
    _setting("budget_ms", float, 0.0, float("inf"), 900.0, "the start-up budget",
             low_open=True, high_open=True, unit="ms", flag_name="--budget",
             default_words="900, the article's"),
    _setting("seed", int, 0, 2**32 - 1, None, "seed of the shuffled run order",
             default_words="random, recorded with the results"),
))

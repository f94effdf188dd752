"""The store options are declared once (pycipherbench/_options.py, issue 17).

The table, the public signatures (store.open, store.bench, store.plan_bench), the
stub's (_core.Store, _core.StoreKernel, _core.check_store_bench) and the C parser
agree; the check is shown to catch an option added to the table alone; unknown names
get a did-you-mean; and sweep's applies() agrees with what the C layer accepts.
"""

import ast
import dataclasses
import inspect
import itertools
import os
import typing
from pathlib import Path

import pytest

import pycipherbench
import importlib

from pycipherbench import _core, _options, store
from pycipherbench._options import OPTIONS, REQUIRED, Option, for_call
from pycipherbench._params import RUN_OPTIONS

sweep = importlib.import_module("pycipherbench.sweep")  # the module (the package exports the function)
STUB = Path(pycipherbench.__file__).resolve().parent / "_core.pyi"
_NS = {**vars(typing), **vars(_options), "os": os}

# Parameters of the public functions that are not store options.
PYTHON_SURFACES = {  # function -> (call, its own extra parameters)
    "open": (store.open, "open", ()),
    "bench": (store.bench, "bench", ("progress", "processes")),
    "plan_bench": (store.plan_bench, "bench", ("workers",)),
}
STUB_SURFACES = {  # stub function or class.__new__ -> call
    "Store": "open",
    "StoreKernel": "kernel",
    "check_store_bench": "kernel",
}
C_KINDS = {"bool": "bool", "float": "float"}  # the table's type -> the C conversion (else str/object)


def _type(text):
    """An annotation's text as a type (the table's aliases; the stub's PathLike is os's)."""
    return eval(text, dict(_NS))  # noqa: S307 - our own annotations


def _stub_type(text):
    # the stub spells store.PathLike out as `str | PathLike[str]`
    return eval(text, {**_NS, "PathLike": os.PathLike})  # noqa: S307


def _expected(call, options):
    """[(name, kind, default, type)] the table gives a call, subject first."""
    opts = for_call(call, options)
    out = []
    for o in opts.values():
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD if o.positional else inspect.Parameter.KEYWORD_ONLY
        out.append((o.name, kind, inspect.Parameter.empty if o.default is REQUIRED else o.default,
                    _type(o.type)))
    return sorted(out, key=lambda r: (r[1] != inspect.Parameter.POSITIONAL_OR_KEYWORD, r[0]))


def _line(o):
    default = "" if o.default is REQUIRED else f" = {o.default!r}"
    return f"{o.name}: {o.type}{default},"


def _diff(where, call, got, options):
    """Problems of one surface: what it lacks (with the line to paste), has extra, or
    says otherwise than the table."""
    want = {r[0]: r for r in _expected(call, options)}
    have = {r[0]: r for r in got}
    opts = for_call(call, options)
    problems = [f"{where} lacks option {n!r}: add `{_line(opts[n])}`" for n in want.keys() - have.keys()]
    problems += [f"{where} has {n!r}, which the table does not declare for {call!r}"
                 for n in have.keys() - want.keys()]
    for n in want.keys() & have.keys():
        for label, w, h in zip(("kind", "default", "type"), want[n][1:], have[n][1:]):
            if w != h or type(w) is not type(h):
                problems.append(f"{where}: {n} {label} is {h!r}, the table says {w!r}")
    return problems


def _python_params(fn, extra):
    sig = inspect.signature(fn)
    hints = typing.get_type_hints(fn)
    return [(p.name, p.kind, p.default, hints[p.name]) for p in sig.parameters.values()
            if p.name not in extra]


def _stub_defs():
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    defs = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            defs[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__new__":
                    defs[node.name] = item
    return defs


def _stub_params(fn):
    a = fn.args
    positional = [p for p in a.args if p.arg not in ("cls", "self")]
    out = []
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for p, d in zip(positional, defaults):
        out.append((p.arg, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                    inspect.Parameter.empty if d is None else ast.literal_eval(d),
                    _stub_type(ast.unparse(p.annotation))))
    for p, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append((p.arg, inspect.Parameter.KEYWORD_ONLY,
                    inspect.Parameter.empty if d is None else ast.literal_eval(d),
                    _stub_type(ast.unparse(p.annotation))))
    return out


def _c_params(call, described, options):
    """What the C parser took from a table: [(name, kind, default, type)]; its
    conversion must fit the table's type."""
    opts = for_call(call, options)
    rows = []
    for i, (name, default, conv) in enumerate(described[call]):
        o = opts.get(name)
        t = _type(o.type) if o else None
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD if i == 0 else inspect.Parameter.KEYWORD_ONLY
        rows.append((name, kind, inspect.Parameter.empty if default is REQUIRED else default, t))
        if o is not None:
            want = C_KINDS.get(o.type, "str" if _is_str(t) else "object")
            assert conv == want or (want == "str" and conv == "object"), (call, name, conv, want)
    return rows


def _is_str(t):
    return t is str or (typing.get_origin(t) is typing.Literal
                        and all(isinstance(a, str) for a in typing.get_args(t)))


def agreement(options=OPTIONS):
    """Every problem between ``options`` and the signatures, the stub and the C parser."""
    problems = []
    for where, (fn, call, extra) in PYTHON_SURFACES.items():
        problems += _diff(f"store.{where}", call, _python_params(fn, extra), options)
    stub = _stub_defs()
    for where, call in STUB_SURFACES.items():
        problems += _diff(f"_core.pyi {where}", call, _stub_params(stub[where]), options)
    try:
        described = _core._store_options(options)
    except ValueError as e:
        problems.append(f"C parser: {e}")
    else:
        for call in ("open", "kernel"):
            problems += _diff(f"C {call}", call, _c_params(call, described, options), options)
    return problems


# ---- agreement


def test_table_is_well_formed():
    for call in _options.CALLS:
        opts = for_call(call)  # raises on a name declared twice for a call
        assert sum(o.positional for o in opts.values()) == 1, call
        for o in opts.values():
            _type(o.type)
            assert o.doc, o.name
            for k, _ in o.when + o.unless:
                assert k in for_call("bench"), (o.name, k)


def test_table_signatures_stub_and_c_agree():
    assert agreement() == []


def test_c_parser_reads_the_table_at_import():
    assert _core._store_options() == _core._store_options(OPTIONS)
    for call, rows in _core._store_options().items():
        assert [(n, d) for n, d, _ in rows[1:]] == [
            (o.name, o.default) for o in for_call(call).values() if not o.positional]


def test_an_option_in_the_table_alone_is_caught():
    fake = Option("compression", "str", "zlib", "a made-up option", frozenset({"open", "bench", "kernel"}))
    problems = agreement((*OPTIONS, fake))
    text = "\n".join(problems)
    for where in ("store.open", "store.bench", "store.plan_bench", "_core.pyi Store",
                  "_core.pyi StoreKernel", "_core.pyi check_store_bench"):
        assert f"{where} lacks option 'compression': add `compression: str = 'zlib',`" in text, text
    assert "C parser" in text and "compression" in text and "no C conversion" in text


def test_a_changed_default_or_type_is_caught():
    changed = tuple(dataclasses.replace(o, default=5000) if o.name == "n_keys" else
                    dataclasses.replace(o, type="str") if o.name == "layout" else o for o in OPTIONS)
    text = "\n".join(agreement(changed))
    assert "store.bench: n_keys default is 1000, the table says 5000" in text
    assert "_core.pyi Store: layout type" in text


def test_an_option_c_converts_but_the_table_lacks_is_caught():
    text = "\n".join(agreement(tuple(o for o in OPTIONS if o.name != "cache")))
    assert "does not declare" in text and "'cache'" in text


def test_storeparams_and_run_options_follow_the_table():
    point = _options.values("bench", {n: 0 for n in for_call("bench")}, point=True, kernel=True)
    assert list(store.StoreParams.__annotations__) == [*point, "stages"]
    assert set(RUN_OPTIONS["store"]) == {o.name for o in for_call("bench").values() if o.run}


# ---- the C parser


def test_every_option_is_accepted_with_its_default(tmp_path):
    key = str(tmp_path / "k.key")
    for o in for_call("kernel").values():
        if not o.positional:
            _core.check_store_bench("get", **{o.name: o.default})
    _core.check_store_bench("get", **{o.name: o.default for o in for_call("kernel").values()
                                      if not o.positional})
    for i, o in enumerate(for_call("open").values()):
        if o.positional:
            continue
        base = {"passphrase": "pw", "scrypt_n": 2} if o.name == "master_key_file" else {"master_key_file": key}
        _core.Store(str(tmp_path / f"s{i}.xml"), **{**base, o.name: o.default}).close()


def test_the_subject_by_position_or_name(tmp_path):
    _core.check_store_bench(workload="get")
    with pytest.raises(TypeError, match="multiple values for argument 'workload'"):
        _core.check_store_bench("get", workload="put")
    with pytest.raises(TypeError, match="missing required argument 'workload'"):
        _core.check_store_bench()
    with pytest.raises(TypeError, match="1 positional argument"):
        _core.check_store_bench("get", "put")
    _core.Store(path=str(tmp_path / "a.xml"), master_key_file=str(tmp_path / "k")).close()


@pytest.mark.parametrize("call, typo, meant", [
    (lambda p, **kw: store.open(p, master_key_file=p + ".key", **kw), "lock_timout", "lock_timeout"),
    (lambda p, **kw: _core.Store(p, master_key_file=p + ".key", **kw), "scrypt", "scrypt_n"),
    (lambda p, **kw: store.bench("get", **kw), "n_key", "n_keys"),
    (lambda p, **kw: store.plan_bench("get", **kw), "crypto_bakend", "crypto_backend"),
    (lambda p, **kw: _core.StoreKernel("get", **kw), "valu_len", "value_len"),
    (lambda p, **kw: _core.check_store_bench("get", **kw), "layuot", "layout"),
])
def test_unknown_option_gets_did_you_mean(tmp_path, call, typo, meant):
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{typo}'; did you mean '{meant}'"):
        call(str(tmp_path / "s.xml"), **{typo: 1})


def test_unknown_option_without_a_close_name():
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'zzz'$"):
        store.bench("get", zzz=1)


def test_import_fails_loudly_on_a_mismatch(tmp_path):
    import subprocess
    import sys
    # The package hands the table to _core at import; a table C does not implement fails it.
    code = ("import importlib.util, sys, types\n"  # the package without its __init__ (which loads the table)
            "pkg = types.ModuleType('pycipherbench')\n"
            "pkg.__path__ = importlib.util.find_spec('pycipherbench').submodule_search_locations\n"
            "sys.modules['pycipherbench'] = pkg\n"
            "import pycipherbench._options as o\n"
            "import pycipherbench._core as c\n"
            "bad = o.OPTIONS + (o.Option('compression', 'str', 'z', 'x', frozenset({'open'})),)\n"
            "try:\n"
            "    c._load_store_options(bad, o.unexpected)\n"
            "except ValueError as e:\n"
            "    print('refused', e)\n"
            "try:\n"
            "    c.Store('x.xml')\n"  # nothing loaded: the parser says so, it does not guess
            "except RuntimeError as e:\n"
            "    print('unloaded', e)\n"
            "c._load_store_options(o.OPTIONS, o.unexpected)\n"
            "print('loaded', sorted(c._store_options()))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=Path(pycipherbench.__file__).resolve().parent.parent)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("refused") and "compression" in lines[0] and "disagree" in lines[0]
    assert lines[1].startswith("unloaded") and "not loaded" in lines[1]
    assert lines[2].startswith("loaded")


# ---- sweep's applies() against the C layer

CONTEXTS = [dict(zip(("workload", "encrypted", "layout", "faithful", "value_type"), c))
            for c in itertools.product(["get", "commit", "rotate_lazy", "open_cold"], [True, False],
                                       ["entries", "file"], [False, True], ["string", "int"])]


def _probes():
    backends = [b["name"] for b in _core.backends() if b["name"] != "openssl"]
    return {
        "key_encryption": ["none"], "value_encryption": ["none", "chacha20-poly1305"],
        "cache": [True], "faithful": [True], "passphrase": [True], "layout": ["file"],
        "crypto_backend": backends, "n_keys": [10], "key_len": [8], "value_len": [0],
        "value_type": ["int"], "batch": [5],
    }


def _accepted(point):
    try:
        _core.check_store_bench(**point)
        return True
    except (ValueError, TypeError):
        return False


def test_applies_agrees_with_the_c_checks():
    """An option applies() keeps for a point must be usable there: some non-default value
    is accepted by the C checks (else a sweep would report it invalid instead of dropping
    it); and the point a sweep makes of a combination is accepted whenever the C accepts
    the combination's context."""
    problems = []
    for ctx in CONTEXTS:
        if not _accepted(ctx):
            continue  # an invalid context (rotate_lazy on a plain store): the sweep reports it
        for name, probes in _probes().items():
            if name in ctx and len(probes) == 1 and ctx[name] == probes[0]:
                continue
            usable = [v for v in probes if _accepted({**ctx, name: v})]
            if probes and sweep.applies("store", name, ctx) and not usable:
                problems.append(f"{name} applies to {ctx} but the C refuses every {probes}")
            for v in probes:
                combo = {k: x for k, x in ctx.items() if sweep.applies("store", k, ctx)}
                try:
                    points = sweep.expand_grid("store", **{**combo, name: v})
                except ValueError as e:  # "applies to none of the points": the sweep says so
                    assert f"{name}=" in str(e) and not sweep.applies("store", name, ctx), e
                    continue
                for p in points:
                    if not sweep.applies("store", name, ctx) and not _accepted(
                            {k: x for k, x in p.items() if k != "hw_aes"}):
                        problems.append(f"the sweep's point {p} of {ctx} + {name}={v!r} is refused")
    assert not problems, "\n".join(problems[:20])


def test_applies_reads_the_table():
    assert not sweep.applies("store", "passphrase", {"workload": "get", "encrypted": False})
    assert sweep.applies("store", "passphrase", {"workload": "get"})
    assert not sweep.applies("store", "crypto_backend", {"workload": "get", "faithful": True})
    assert not sweep.applies("store", "batch", {"workload": "get"})
    assert sweep.applies("store", "batch", {"workload": "apply"})
    assert not sweep.applies("store", "value_len", {"workload": "get", "value_type": "int"})
    assert not sweep.applies("store", "n_keys", {"workload": "open_cold"})

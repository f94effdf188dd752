"""The checked-in stub pycipherbench/_core.pyi matches the compiled module."""

import ast
import importlib.util
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pycipherbench
from pycipherbench import _core

STUB = Path(pycipherbench.__file__).resolve().parent / "_core.pyi"
REPO = Path(__file__).resolve().parent.parent


def _stub_tree():
    assert STUB.is_file(), f"missing stub {STUB}"
    return ast.parse(STUB.read_text(encoding="utf-8"), filename=str(STUB))


def _top_level_names(tree):
    """Names the stub defines at module level (defs, classes, annotated or
    plain assignments, explicit re-exports `import x as x`)."""
    names = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    names[t.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.asname is not None and alias.asname == alias.name:
                    names[alias.asname] = node
        elif isinstance(node, ast.If):  # e.g. `if sys.version_info >= ...:` blocks
            names.update(_top_level_names(ast.Module(body=node.body + node.orelse, type_ignores=[])))
    return names


def _public(names):
    return {n for n in names if not n.startswith("_")}


def _runtime_public():
    return {n for n in dir(_core) if not n.startswith("_")}


def test_stub_parses():
    _stub_tree()


def test_every_runtime_name_is_in_stub():
    missing = sorted(_runtime_public() - _public(_top_level_names(_stub_tree())))
    assert not missing, f"in pycipherbench._core but not in {STUB.name}: {missing}"


def test_every_stub_name_exists_at_runtime():
    extra = sorted(_public(_top_level_names(_stub_tree())) - _runtime_public())
    assert not extra, f"in {STUB.name} but not in pycipherbench._core: {extra}"


def test_stub_kinds_match_runtime():
    """A `def` in the stub is callable at runtime, a `class` is a class."""
    problems = []
    for name, node in _top_level_names(_stub_tree()).items():
        if name.startswith("_") or not hasattr(_core, name):
            continue
        obj = getattr(_core, name)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not callable(obj):
            problems.append(f"{name}: def in stub, {type(obj).__name__} at runtime")
        if isinstance(node, ast.ClassDef) and not isinstance(obj, type):
            problems.append(f"{name}: class in stub, {type(obj).__name__} at runtime")
        if isinstance(node, (ast.AnnAssign, ast.Assign)) and isinstance(obj, type):
            # `X: type[...]` is acceptable for a class alias; a plain value is not
            ann = getattr(node, "annotation", None)
            if ann is None or "type" not in ast.unparse(ann).lower():
                problems.append(f"{name}: variable in stub, class at runtime")
    assert not problems, problems


def _stub_params(fn):
    a = fn.args
    out = []
    for p in a.posonlyargs:
        out.append((p.arg, inspect.Parameter.POSITIONAL_ONLY))
    for p in a.args:
        out.append((p.arg, inspect.Parameter.POSITIONAL_OR_KEYWORD))
    if a.vararg:
        out.append((a.vararg.arg, inspect.Parameter.VAR_POSITIONAL))
    for p in a.kwonlyargs:
        out.append((p.arg, inspect.Parameter.KEYWORD_ONLY))
    if a.kwarg:
        out.append((a.kwarg.arg, inspect.Parameter.VAR_KEYWORD))
    # stub convention: names starting with "__" are positional-only
    return [(n, inspect.Parameter.POSITIONAL_ONLY if n.startswith("__") and not n.endswith("__") else k) for n, k in out]


def _function_cases():
    try:
        tree = _stub_tree()
    except AssertionError:
        return []
    return [
        pytest.param(name, node, id=name)
        for name, node in _top_level_names(tree).items()
        if isinstance(node, ast.FunctionDef) and not name.startswith("_")
    ]


def _doc_signature(obj, name):
    """The signature a C function documents on its first docstring line(s),
    e.g. ``encrypt(transformation, key, data, *, iv=None) -> bytes``, as an
    ast.arguments; None if the docstring has none."""
    doc = inspect.getdoc(obj) or ""
    m = re.match(r"\s*" + re.escape(name) + r"\((.*?)\)\s*(?:->|\n\n|$)", doc, re.S)
    if not m:
        return None
    try:
        return ast.parse(f"def {name}({m.group(1)}): pass").body[0]
    except SyntaxError:
        return None


def _with_defaults(fn):
    """[(name, kind, has_default)] of a FunctionDef."""
    a = fn.args
    positional = a.posonlyargs + a.args
    first_default = len(positional) - len(a.defaults)
    kinds = dict(_stub_params(fn))
    out = [(p.arg, kinds[p.arg], i >= first_default) for i, p in enumerate(positional)]
    if a.vararg:
        out.append((a.vararg.arg, kinds[a.vararg.arg], False))
    out += [(p.arg, kinds[p.arg], d is not None) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        out.append((a.kwarg.arg, kinds[a.kwarg.arg], False))
    # positional-only names are not part of the interface: compare kinds only
    return [(None if k == inspect.Parameter.POSITIONAL_ONLY else n, k, d) for n, k, d in out]


@pytest.mark.parametrize("name, node", _function_cases())
def test_function_signature_matches_stub(name, node):
    """Parameter names, kinds and which ones have defaults agree with the
    runtime: from __text_signature__ if the C function has one, else from the
    signature its docstring documents."""
    obj = getattr(_core, name, None)
    if obj is None:
        pytest.skip(f"{name} missing at runtime (reported by another test)")
    try:
        sig = inspect.signature(obj)
        runtime = [
            (None if p.kind == inspect.Parameter.POSITIONAL_ONLY else p.name, p.kind, p.default is not p.empty)
            for p in sig.parameters.values()
        ]
        shown = str(sig)
    except (ValueError, TypeError):
        doc_fn = _doc_signature(obj, name)
        if doc_fn is None:
            pytest.skip(f"{name}: no __text_signature__ and no signature in its docstring")
        runtime = _with_defaults(doc_fn)
        shown = "(docstring) " + ast.unparse(doc_fn.args)
    stub = _with_defaults(node)
    assert runtime == stub, f"runtime {shown} vs stub ({ast.unparse(node.args)})"
    # literal defaults written in the stub (not `...`) equal the runtime's
    stub_defaults = _literal_defaults(node)
    try:
        rt_defaults = {p.name: p.default for p in inspect.signature(obj).parameters.values() if p.default is not p.empty}
    except (ValueError, TypeError):
        rt_defaults = _literal_defaults(_doc_signature(obj, name))
    wrong = {k: (v, rt_defaults.get(k)) for k, v in stub_defaults.items() if k in rt_defaults and rt_defaults[k] != v}
    assert not wrong, f"stub default vs runtime default: {wrong}"


def _literal_defaults(fn):
    """{name: value} of a FunctionDef's defaults that are literals other than `...`."""
    a = fn.args
    positional = a.posonlyargs + a.args
    pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults))
    pairs += [(p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
    out = {}
    for p, d in pairs:
        try:
            v = ast.literal_eval(d)
        except ValueError:
            continue
        if v is not Ellipsis:
            out[p.arg] = v
    return out


def test_stub_class_members_exist():
    """Public members declared in stub classes exist on the runtime classes."""
    problems = []
    for name, node in _top_level_names(_stub_tree()).items():
        if not isinstance(node, ast.ClassDef) or not hasattr(_core, name):
            continue
        cls = getattr(_core, name)
        for item in node.body:
            member = None
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                member = item.name
            elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                member = item.target.id
            if member and not member.startswith("_") and not hasattr(cls, member):
                # instance attributes of Python-level classes may only exist on
                # instances; a C type declares them as descriptors on the class
                problems.append(f"{name}.{member}")
        own = {m for m in vars(cls) if not m.startswith("_")}
        declared = {
            (i.name if isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef)) else getattr(getattr(i, "target", None), "id", None))
            for i in node.body
        }
        for m in sorted(own - declared):
            problems.append(f"{name}.{m} (runtime only)")
    assert not problems, problems


def _stubtest_cwd(tmp_path: Path) -> Path:
    """Where stubtest must run to see the package this process imported.

    A source checkout (in-place build) is found from its own root; an
    installed package from anywhere but the checkout, whose uncompiled copy
    would shadow it, and not from site-packages itself, where mypy mistakes
    every installed module for user code.
    """
    import site

    parent = Path(pycipherbench.__file__).resolve().parent.parent
    site_dirs = {Path(p).resolve() for p in site.getsitepackages() + [site.getusersitepackages()]}
    return tmp_path if parent in site_dirs else parent


def test_stubtest(tmp_path):
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed")
    r = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "pycipherbench._core"],
        cwd=_stubtest_cwd(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr

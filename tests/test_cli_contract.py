"""The CLI and the API as one contract (issue 26): every option of every subcommand, walked
from the argparse tree and the option declarations (no hand list), with a valid, an invalid
and an edge value; for the valid ones the CLI's result is the API's.

Nothing here measures: :func:`no_rounds` replaces the rounds with an exception, so a command
that accepted its options stops where it would start measuring ("would measure"), and one
that refused them returned its error first. No timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest
from conftest import signals_as_a_shell_leaves_them
from synthetic import cipher_results

import pycipherbench as pcb
from pycipherbench import _options, _output, cli
from pycipherbench import _rounds as rounds_mod
from pycipherbench.sweep import SUBJECT, param_types


class WouldMeasure(Exception):
    """The options were accepted: the rounds were about to start."""


@pytest.fixture
def no_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise WouldMeasure

    monkeypatch.setattr(rounds_mod, "run_rounds", refuse)


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[Any, str]:
    """(exit status, or WouldMeasure / SystemExit's code; stderr) of ``cli.main(argv)``."""
    try:
        outcome: Any = cli.main(argv)
    except WouldMeasure:
        outcome = WouldMeasure
    except SystemExit as e:
        outcome = ("exit", e.code)
    err = capsys.readouterr().err
    return outcome, err


# -- the --param table: every parameter of both targets ----------------------------------------

SUBJECT_VALUE = {"cipher": "AES/CTR/NoPadding", "store": "put"}


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def param_cases() -> list[tuple[str, str, str, Any]]:
    """(target, name, text, the API's value) of a valid value of every parameter, read
    from its declaration: each listed name, a bool's both values, a number's default."""
    from pycipherbench.sweep import _signature

    cases = []
    for target in ("cipher", "store"):
        for name, ann in param_types(target).items():
            if name == SUBJECT[target]:
                continue
            lits = [v for m in _options._members(ann) for v in (_options._literal(m) or ())]
            default = _signature(target)[name]
            if lits:
                values = lits
            elif bool in _options._members(ann):
                values = [True, False]
            elif default is not None and not isinstance(default, os.PathLike):
                values = [default]
            elif int in _options._members(ann):
                values = [1]
            elif float in _options._members(ann):
                values = [0.5]
            else:
                continue  # directory (a path: see test_directory_param)
            cases += [(target, name, _text(v), v) for v in values]
    return cases


@pytest.mark.parametrize("target,name,text,value", param_cases(),
                         ids=lambda x: str(x) if not isinstance(x, bool) else str(x).lower())
def test_param_valid_value_means_what_the_api_means(target: str, name: str, text: str,
                                                    value: Any) -> None:
    ann = param_types(target)[name]
    parsed = cli.parse_params([f"{name}={text}"], target=target)[name]
    assert parsed == value and type(parsed) is type(value)
    _options.check_value(name, parsed, ann)  # the API's check takes what the CLI read


def invalid_text(ann: Any) -> str | None:
    members = _options._members(ann)
    if any(_options._literal(m) for m in members):
        return "nosuch"
    if bool in members:
        return "maybe"
    if int in members:
        return "1.5x"
    if float in members:
        return "fast"
    return None  # free text (a name the target checks later: see the sweep walk)


@pytest.mark.parametrize("target,name", [(t, n) for t in ("cipher", "store")
                                         for n in param_types(t) if n != SUBJECT[t]])
def test_param_invalid_and_edge_values_are_named(target: str, name: str) -> None:
    ann = param_types(target)[name]
    bad = invalid_text(ann)
    if bad is not None:
        with pytest.raises(ValueError, match=rf"--param {name}='{bad}': expected"):
            cli.parse_params([f"{name}={bad}"], target=target)
    with pytest.raises(ValueError, match=rf"--param {name}: an empty value"):  # edge: 16,,256
        cli.parse_params([f"{name}=,x"], target=target)
    # edge: "none" is a listed name where the parameter lists it, else the default if it
    # has one, else (a number, a bool) refused: never silently the default of a listed name
    lits = [v for m in _options._members(ann) for v in (_options._literal(m) or ())]
    members = _options._members(ann)
    if "none" in lits:
        assert cli.parse_params([f"{name}=none"], target=target)[name] == "none"
    elif type(None) in members:
        assert cli.parse_params([f"{name}=none"], target=target)[name] is None
    elif str in members:
        assert cli.parse_params([f"{name}=none"], target=target)[name] == "none"
    else:
        with pytest.raises(ValueError, match=name):
            cli.parse_params([f"{name}=none"], target=target)


def _outcome_api(target: str, grid: dict[str, Any], out: Path) -> Any:
    try:
        pcb.sweep(target, out=out, progress=False, **{SUBJECT[target]: SUBJECT_VALUE[target]},
                  **grid)
    except WouldMeasure:
        return WouldMeasure
    except (ValueError, TypeError, ImportError) as e:
        return e
    raise AssertionError("the sweep neither measured nor failed")


SWEEP_CASES = [(t, n, text) for t, n, text, _ in param_cases()] + [
    ("cipher", "payload", "-1"), ("cipher", "payload", "0"), ("cipher", "key_bits", "100"),
    ("cipher", "backend", "nosuch"), ("cipher", "threads", "0"), ("cipher", "repeats", "0"),
    ("cipher", "min_time", "0"), ("cipher", "warmup", "-1"), ("store", "n_keys", "-1"),
    ("store", "batch", "0"), ("store", "crypto_backend", "nosuch"), ("store", "repeats", "-1"),
]


@pytest.mark.parametrize("target,name,text", SWEEP_CASES)
def test_sweep_cli_result_is_the_apis(target: str, name: str, text: str, tmp_path: Path,
                                      no_rounds: None, capsys: pytest.CaptureFixture[str]) -> None:
    """The same --param through the CLI and the same value through the API: both accept
    it (and would measure the same points), or both refuse it naming the parameter."""
    value = cli.parse_params([f"{name}={text}"], target=target)[name]
    api = _outcome_api(target, {name: value}, tmp_path / "api.json")
    argv = ["sweep", "--target", target, "--param", f"{SUBJECT[target]}={SUBJECT_VALUE[target]}",
            "--param", f"{name}={text}", "--out", str(tmp_path / "cli.json"), "--no-progress"]
    outcome, err = run_main(argv, capsys)
    if api is WouldMeasure:
        assert outcome is WouldMeasure, err
    else:
        assert outcome == 2, (api, err)
        assert str(api).splitlines()[0] in err
        assert name in err or name.replace("_", "-") in err or "invalid" in err
    assert not (tmp_path / "cli.json").exists() and not (tmp_path / "api.json").exists()


def test_none_is_no_encryption_as_in_the_api() -> None:
    from pycipherbench.sweep import expand_grid

    grid = cli.parse_params(["workload=put", "key_encryption=siv,none",
                             "value_encryption=gcm,none"], target="store")
    api = expand_grid("store", workload="put", key_encryption=["siv", "none"],
                      value_encryption=["gcm", "none"])
    assert expand_grid("store", **grid) == api
    assert {p["key_encryption"] for p in api} == {"siv", "none"}  # none is kept, not the default


# -- every flag of every subcommand, from the argparse tree -------------------------------------

def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("no subcommands")


@pytest.fixture
def results_file(tmp_path: Path) -> Path:
    path = tmp_path / "r.json"
    cipher_results().save(path)
    return path


def required_argv(cmd: str, sub: argparse.ArgumentParser, results: Path, tmp: Path) -> list[str]:
    """What the subcommand needs besides the flag under test, from its parser: a results
    file for each positional, a value for each required flag."""
    argv = [cmd]
    for a in sub._actions:
        if not a.option_strings and a.nargs not in ("*", "?"):
            argv.append(str(results))
        elif a.option_strings and a.required:
            flag = a.option_strings[-1]
            argv += [flag, {"--out": str(tmp / "out.json"), "--output": str(tmp / "o.png"),
                            "--num": "payload=4096", "--den": "payload=16"}[flag]]
    return argv


#: Per flag with a value: (valid, invalid, edge); edge is refused unless listed in EDGE_OK.
def flag_values(action: argparse.Action) -> tuple[str, str, str] | None:
    setting = getattr(action.type, "setting", None)
    if setting is not None:  # a declared run setting: its edge is just outside its range
        if setting.kind is int:
            return "1", "x", str(int(setting.low) - 1)
        return "0.5", "fast", "0" if setting.low_open else "-1"
    if action.choices:  # edge: a choice in capitals (argparse's choices are exact)
        first = str(list(action.choices)[0])
        return first, "nosuch", first.upper()
    if action.type is int:
        return "4096", "x", "-1"
    if action.type is float:
        return "0.5", "fast", "-1"
    return None


EDGE_OK: set[tuple[str, str]] = set()  # (command, flag) whose edge value is accepted
#: Flags whose value the walk gives a meaning-specific valid value (a file, a name).
VALID = {"--param": "transformation=AES/CTR/NoPadding", "--json": "FILE", "--out": "FILE",
         "--output": "IMG", "--backend": "openssl", "--directory": "DIR", "--ignore": "hw_aes",
         "--num": "payload=4096", "--den": "payload=16", "--alpha": "0.05", "--dpi": "50",
         "--payload": "4096", "--budget": "900", "--from": "PREFS", "--reads": "all",
         "--sensitive": "token|secret"}
INVALID = {"--param": "payload=16,,256", "--backend": "opensssl", "--ignore": "nosuch",
           "--num": "payload=x", "--den": "hw_aes=maybe", "--alpha": "2", "--dpi": "0",
           "--json": "/dev/null", "--out": "/dev/null", "--output": "/dev/null",
           "--directory": "/nonexistent-dir-pcb", "--from": "/nonexistent-dir-pcb/prefs.xml",
           "--reads": ",", "--sensitive": "(unclosed"}
#: store's flags that go with --from PREFS.xml (issue 29), and the sample file they replay.
REPLAY_FLAGS = ("--reads", "--sensitive", "--master-key-file")
SAMPLE_PREFS = Path(importlib.import_module("pycipherbench.replay").SAMPLE_PREFS)


def walk_flags() -> list[tuple[str, str]]:
    return [(cmd, a.option_strings[-1]) for cmd, sub in subcommands().items()
            for a in sub._actions if a.option_strings and a.dest not in ("help",)]


@pytest.mark.parametrize("cmd,flag", walk_flags())
def test_every_flag_valid_invalid_edge(cmd: str, flag: str, tmp_path: Path, results_file: Path,
                                       no_rounds: None, capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    sub = subcommands()[cmd]
    action = next(a for a in sub._actions if flag in a.option_strings)
    base = required_argv(cmd, sub, results_file, tmp_path)
    if cmd == "store" and flag in ("--budget",):
        base.append("--designs")
    if cmd == "store" and flag in REPLAY_FLAGS:  # they go with --from (refused without it)
        base += ["--from", str(SAMPLE_PREFS)]
    if cmd == "sweep" and flag != "--param":
        base += ["--param", "transformation=AES/CTR/NoPadding", "--no-progress"]
    if cmd in ("speed", "store") and flag != "--quick":
        base.append("--quick")
    if cmd == "store" and flag not in ("--no-progress",):
        base.append("--no-progress")
    files = {"FILE": str(tmp_path / "new.json"), "IMG": str(tmp_path / "new.png"),
             "DIR": str(tmp_path), "PREFS": str(SAMPLE_PREFS)}
    if action.nargs == 0:  # a switch: given, it is accepted or refused with a reason
        outcome, err = run_main([*base, flag], capsys)
        assert outcome in (WouldMeasure, 0, 2) or outcome == ("exit", 0), (outcome, err)
        if outcome == 2:
            assert "error" in err and (flag in err or "--designs" in err), err
        return
    values = flag_values(action) or (VALID.get(flag, "1"), INVALID.get(flag), None)
    valid = files.get(VALID.get(flag, values[0]), VALID.get(flag, values[0]))
    argv = [a for a in base]
    if flag in argv:  # a required flag under test: replace its value
        i = argv.index(flag)
        del argv[i:i + 2]
    if flag == "--master-key-file":  # valid with an ESP file: one made here, with its key
        valid = str(tmp_path / "esp.key")
        with pcb.store.open(tmp_path / "esp.xml", master_key_file=valid) as s, s.edit() as e:
            e.put_string("token", "abc")
        argv[argv.index("--from") + 1] = str(tmp_path / "esp.xml")
    outcome, err = run_main([*argv, flag, valid], capsys)
    assert outcome in (WouldMeasure, 0), (flag, valid, outcome, err)
    invalid = INVALID.get(flag, values[1])
    if invalid is not None:
        outcome, err = run_main([*argv, flag, invalid], capsys)
        assert outcome in (2, ("exit", 2), 1), (flag, invalid, outcome, err)
        shown = flag.lstrip("-").replace("-", "_")
        assert (flag in err or shown in err or invalid in err or "invalid choice" in err), err
    edge = values[2]
    if edge is not None:
        outcome, err = run_main([*argv, flag, edge], capsys)
        if (cmd, flag) in EDGE_OK:
            assert outcome in (WouldMeasure, 0), (flag, edge, outcome, err)
        else:
            assert outcome in (2, ("exit", 2), 1), (flag, edge, outcome, err)
            assert "error" in err and (flag in err or flag.lstrip("-").replace("-", "_") in err), err


def _declared_flags() -> list[tuple[str, argparse.Action]]:
    return [(cmd, a) for cmd, sub in subcommands().items() for a in sub._actions
            if getattr(a.type, "setting", None) is not None]


def _api_error(name: str, value: Any) -> Exception:
    """The exception the API raises for ``name=value``: measure(), store.bench(), sweep()
    (each that takes the keyword: all must say the same)."""
    calls = [lambda kw: pcb.sweep("cipher", transformation="AES/CTR/NoPadding", payload=16,
                                  progress=False, **kw)]
    if name == "alpha":  # compare's: Results.compare
        calls = [lambda kw: cipher_results().compare(cipher_results(1.1), **kw)]
    if name == "budget_ms":  # store --designs/--from's: the tables' budget
        from pycipherbench import designs

        calls = [lambda kw: designs.format_designs([], **kw),
                 lambda kw: designs.format_replay(None, **kw)]
    if name in ("repeats", "min_time", "warmup", "processes", "payload", "threads"):
        calls.append(lambda kw: pcb.measure("AES/CTR/NoPadding", **{"payload": 16, **kw}))
    if name in ("repeats", "min_time", "warmup", "processes", "n_keys"):
        calls.append(lambda kw: pcb.store.bench("put", **{"n_keys": 10, **kw}, progress=False))
    if name in ("payload", "threads", "n_keys"):  # point parameters: not sweep's keywords
        calls.pop(0)
    errors = []
    for call in calls:
        with pytest.raises((ValueError, TypeError)) as e:
            call({name: value})
        errors.append(e.value)
    assert len({str(e) for e in errors}) == 1, errors
    return errors[0]


def test_declared_flags_cover_the_shared_run_settings() -> None:
    by_cmd: dict[str, set[str]] = {}
    for cmd, action in _declared_flags():
        by_cmd.setdefault(cmd, set()).add(action.dest)
    assert by_cmd == {"speed": {"payload", "threads", "processes"},
                      "sweep": {"repeats", "min_time", "warmup", "seed", "processes"},
                      "store": {"n_keys", "seed", "processes", "budget_ms"},
                      "compare": {"alpha"}}


@pytest.mark.parametrize("cmd,flag", [(c, a.option_strings[-1]) for c, a in _declared_flags()])
def test_flag_and_keyword_share_their_declaration(cmd: str, flag: str, no_rounds: None,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    import inspect

    action = next(a for a in subcommands()[cmd]._actions if flag in a.option_strings)
    setting = action.type.setting  # type: ignore[union-attr]
    assert setting is _options.SETTINGS[action.dest] and flag == setting.flag
    # one default: the flag leaves it to the call (or gives the declared one), and the
    # call's signature has the declared one
    assert action.default in (None, setting.default)
    for fn in (pcb.measure, pcb.store.bench, pcb.sweep, pcb.Results.compare):  # (the designs'
        # tables take budget_ms=None: no budget column; the CLI's is always the article's)
        param = inspect.signature(fn).parameters.get(setting.name)
        if param is not None and param.kind is not param.VAR_KEYWORD:
            assert param.default == setting.default, (fn, param)
    if setting.name in ("repeats", "min_time", "warmup"):  # sweep's **grid passes them on
        assert inspect.signature(pcb.measure).parameters[setting.name].default == setting.default
    words = setting.range_words()
    assert words in " ".join(action.help.split())  # type: ignore[union-attr]
    # one refusal: the same words from the flag and from the keyword
    bad = flag_values(action)[2]  # type: ignore[index]
    outcome, err = run_main([cmd, flag, bad], capsys)
    assert outcome == ("exit", 2)
    if setting.high_open:  # the high end is refused alike
        with pytest.raises(argparse.ArgumentTypeError) as refused:
            action.type(str(setting.high))  # type: ignore[misc]
        assert str(refused.value) == str(_api_error(setting.name, setting.high))
    api = _api_error(setting.name, setting.kind(bad))
    assert f"argument {flag}: {api}" in err, (err, api)
    assert setting.name in str(api) and words in str(api)
    # and a wrong kind: named alike on both sides
    outcome, err = run_main([cmd, flag, "x"], capsys)
    assert outcome == ("exit", 2) and f"{setting.name} must be" in err
    assert f"{setting.name} must be" in str(_api_error(setting.name, "x"))


# -- results files ------------------------------------------------------------------------------

def test_second_writer_is_refused_naming_the_first_pid(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    child = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; sys.path.insert(0, sys.argv[1]); from pycipherbench import _output; "
        "_output.check_output(sys.argv[2], claim=True); print('claimed', flush=True); "
        "time.sleep(120)"), os.path.dirname(os.path.dirname(cli.__file__)), str(out)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "claimed"
        with pytest.raises(_output.OutputError, match=rf"another run \(pid {child.pid}"):
            _output.check_output(out, claim=True)
        with pytest.raises(_output.OutputError, match=rf"pid {child.pid}"):
            pcb.sweep("cipher", transformation="AES/CTR/NoPadding", payload=16, repeats=1,
                      min_time=0.001, out=out, progress=False)
    finally:
        child.kill()
        child.wait(timeout=60)
    _output.check_output(out, claim=True)  # a dead writer's lock is taken over
    _output.release_output(out)
    assert not list(tmp_path.iterdir())


@pytest.mark.skipif(_output._start_time(os.getpid()) is None,
                    reason="no /proc/PID/stat: locks hold the pid only")
def test_a_lock_whose_pid_was_reused_is_stale(tmp_path: Path) -> None:
    """A SIGKILLed writer's lock, its pid since given to an unrelated process: that
    process is alive, but started at another time, so the lock is taken over."""
    out = tmp_path / "r.json"
    lock = tmp_path / ".r.json.pcb-lock"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        start = _output._start_time(other.pid)
        assert start is not None
        lock.write_text(f"{other.pid} {start}\n")  # its own lock: refused, naming it
        with pytest.raises(_output.OutputError, match=rf"another run \(pid {other.pid}"):
            _output.check_output(out, claim=True)
        lock.write_text(f"{other.pid} {start + 1}\n")  # a writer of that pid, started earlier
        _output.check_output(out, claim=True)
        assert lock.read_text().split() == [str(os.getpid()), str(_output._start_time(os.getpid()))]
        _output.release_output(out)
        lock.write_text(f"{other.pid}\n")  # no start time recorded: the pid alone decides
        with pytest.raises(_output.OutputError, match=rf"pid {other.pid}"):
            _output.check_output(out, claim=True)
    finally:
        other.kill()
        other.wait(timeout=60)
    _output.check_output(out, claim=True)  # its process gone: taken over
    _output.release_output(out)
    assert not list(tmp_path.iterdir())


def test_start_time_reads_past_a_command_name_with_parentheses(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    stat = "4242 (a) b (c) S 1 " + " ".join(str(i) for i in range(5, 22)) + " 987654 0 0\n"
    real = open

    def fake(path: Any, *args: Any, **kwargs: Any) -> Any:
        if path == "/proc/4242/stat":
            p = tmp_path / "stat"
            p.write_text(stat)
            return real(p, *args, **kwargs)
        return real(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", fake)
    assert _output._start_time(4242) == 987654


@pytest.mark.parametrize("kind", ["chr", "fifo", "link-to-chr"])
def test_only_regular_files_even_with_force(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "dev"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "chr":
        if os.geteuid() != 0:
            pytest.skip("mknod needs root")
        os.mknod(path, 0o600 | 0o020000, os.makedev(1, 3))
    else:
        os.symlink("/dev/null", path)
    for argv in (["speed", "--quick", "--json", str(path), "--force"],
                 ["store", "--quick", "--json", str(path), "--force"],
                 ["sweep", "--param", "transformation=AES/CTR/NoPadding", "--out", str(path),
                  "--force"]):
        assert cli.main(argv) == 2
    with pytest.raises(ValueError, match="regular files only"):
        pcb.sweep("cipher", transformation="AES/CTR/NoPadding", out=path, force=True)
    with pytest.raises(_output.OutputError, match="regular files only"):
        _output.write_text_atomic(path, "x")
    assert not path.is_file()


def test_api_out_keeps_an_existing_file_unless_force(tmp_path: Path, no_rounds: None) -> None:
    out = tmp_path / "r.json"
    out.write_text("precious")
    with pytest.raises(ValueError, match="already exists; it is kept .*force=True"):
        pcb.sweep("cipher", transformation="AES/CTR/NoPadding", payload=16, out=out)
    assert out.read_text() == "precious"
    with pytest.raises(WouldMeasure):
        pcb.sweep("cipher", transformation="AES/CTR/NoPadding", payload=16, out=out, force=True)


def test_results_mode_follows_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        cipher_results().save(tmp_path / "r.json")
        _output.write_text_atomic(tmp_path / "t.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "r.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "t.txt").stat().st_mode & 0o777 == 0o644


def test_dash_is_standard_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli.main(["sweep", "--param", "transformation=AES/CTR/NoPadding", "--param", "payload=16",
                   "--repeats", "2", "--min-time", "0.001", "--warmup", "0", "--no-progress",
                   "--out", "-"])
    out, err = capsys.readouterr()
    assert rc == 0 and json.loads(out)["points"][0]["params"]["payload"] == 16
    assert "median/op" in err and not (tmp_path / "-").exists() and not Path("-").exists()
    assert "# Hardware AES: on" in err  # the table says it
    assert cli.main(["sweep", "--param", "transformation=AES/CTR/NoPadding", "--out", "-",
                     "--resume"]) == 2


def test_resume_onto_a_speed_file_refuses(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                          ) -> None:
    doc = cipher_results().to_dict()
    speed = {"machine": doc["machine"], "payload": 16, "hw_aes": True,
             "results": [p["measurement"] for p in doc["points"]]}
    path = tmp_path / "speed.json"
    path.write_text(json.dumps(speed))
    rc = cli.main(["sweep", "--param", "transformation=AES/CTR/NoPadding", "--out", str(path),
                   "--resume", "--repeats", "3"])
    assert rc == 2 and "holds no sweep" in capsys.readouterr().err
    assert json.loads(path.read_text()) == speed


def test_saved_after_every_round(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "r.json"
    seen: list[int] = []
    real = pcb.Results.save

    def spy(self: Any, path: Any) -> None:
        real(self, path)
        seen.append(min(m.n_rounds for m in self.measurements))

    monkeypatch.setattr(pcb.Results, "save", spy)
    pcb.sweep("cipher", transformation="AES/CTR/NoPadding", payload=[16, 64], repeats=3,
              min_time=0.0005, warmup=0, out=out, progress=False)
    assert seen == [1, 2, 3]  # rounds 1 and 2 as they complete, then the whole run


# -- signals (child processes, generous timeouts; no timings asserted) -------------------------

def _spawn(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    from pycipherbench._hwaes import python_command

    return subprocess.Popen(python_command("pycipherbench.cli", *args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=signals_as_a_shell_leaves_them)


def signal_when(proc: subprocess.Popen[str], ready: Any, sig: int) -> tuple[str, str]:
    """Wait (up to 5 min) until ``ready()`` or the child's end, send ``sig``, and return its
    output; the child is killed if it hangs. No timing is asserted."""
    import time

    try:
        for _ in range(3000):
            if ready() or proc.poll() is not None:
                break
            time.sleep(0.1)
        proc.send_signal(sig)
        return proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("sig,status", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_sighup_keep_rounds_and_clean_up(sig: int, status: int, tmp_path: Path) -> None:
    tmp = tmp_path / "tmpdir"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    out = tmp_path / "r.json"
    proc = _spawn(["sweep", "--target", "store", "--param", "workload=put,get",
                   "--param", "n_keys=50", "--repeats", "100000", "--min-time", "0.002",
                   "--warmup", "0", "--no-progress", "--out", str(out)], env)
    _, stderr = signal_when(proc, out.exists, sig)  # once a round is on disk
    assert proc.returncode == status, stderr
    assert signal.Signals(sig).name in stderr
    saved = pcb.load_results(out)
    assert not saved.complete and all(m.n_rounds >= 1 for m in saved)
    assert not any(p.name.startswith("pcb-") for p in tmp.iterdir()), list(tmp.iterdir())
    assert not any(p.name.endswith(".pcb-lock") for p in tmp_path.iterdir())


# -- rough edges --------------------------------------------------------------------------------

def test_version_main_module_and_bare_command() -> None:
    from pycipherbench._hwaes import python_command

    for args in (["--version"], []):
        cmd = python_command("pycipherbench", *args)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        assert ("pycipherbench " in proc.stdout) if args else "COMMAND" in proc.stdout


def test_help_texts(capsys: pytest.CaptureFixture[str]) -> None:
    for cmd in ("ratio", "sweep"):
        with pytest.raises(SystemExit):
            cli.main([cmd, "--help"])
        text = capsys.readouterr().out
        assert "%%" not in text
    with pytest.raises(SystemExit):
        cli.main(["sweep", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in ("default cipher", "default 0.05", "default as long as --min-time"):
        assert words in text


def test_store_designs_refuses_what_it_does_not_apply(capsys: pytest.CaptureFixture[str]) -> None:
    for flag in (["--no-hw-aes"], ["--json", "x.json"], ["--seed", "1"], ["--n-keys", "5"]):
        assert cli.main(["store", "--designs", "--quick", *flag]) == 2
        assert flag[0] in capsys.readouterr().err
    assert cli.main(["store", "--budget", "100"]) == 2
    assert "--designs" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:  # its range: the declaration's, at parsing
        cli.main(["store", "--designs", "--budget", "-5"])
    assert refused.value.code == 2
    assert "argument --budget: budget_ms must be in (0, inf) ms" in capsys.readouterr().err


def test_sqlcipher_missing_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    from pycipherbench import engines

    def missing() -> Any:
        raise ImportError(f"engine='sqlcipher' needs the SQLCipher 4 binding (sqlcipher3): "
                          f"{engines.PEERS_HINT}")

    monkeypatch.setattr(engines, "_sqlcipher", missing)
    rc = cli.main(["sweep", "--target", "store", "--param", "workload=get",
                   "--param", "engine=sqlcipher", "--out", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "pycipherbench[peers]" in err


def test_ratio_refuses_sides_differing_in_other_parameters(results_file: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli.main(["ratio", str(results_file), "--num", "payload=4096", "--den", "rounds=16"])
    assert rc == 2 and "must differ in the same parameters" in capsys.readouterr().err
    rc = cli.main(["ratio", str(results_file), "--num", "payload=16", "--den", "payload=16"])
    assert rc == 2 and "the same points" in capsys.readouterr().err


def test_store_no_hw_aes_tables_pair_plain_points() -> None:
    from synthetic import store

    from pycipherbench.experiments import format_store, store_points

    points = store_points(100, hw_aes=False)
    ms = []
    for i, p in enumerate(points):
        params = {k: v for k, v in p.items()
                  if k not in ("workload", "min_time", "hw_aes", "encrypted")}
        ms.append(store([100.0 + i, 101.0 + i, 102.0 + i], workload=p["workload"],
                        encrypted=p.get("encrypted", True), params=params,
                        hw_aes=p.get("hw_aes", True), durable=[1e6, 1e6, 1e6]))
    r = pcb.Results("store", points, ms)
    text = format_store(r, 100)
    assert "Hardware AES: OFF" in text
    assert r.ratio({"encrypted": True, "faithful": False}, {"encrypted": False},
                   ) is not None


def test_progress_in_a_log_has_no_carriage_returns(tmp_path: Path) -> None:
    from pycipherbench._hwaes import python_command

    log = tmp_path / "log"
    with open(log, "w") as f:
        subprocess.run(python_command("pycipherbench.cli", "sweep", "--param",
                                      "transformation=AES/CTR/NoPadding", "--param", "payload=16",
                                      "--repeats", "2", "--min-time", "0.001", "--warmup", "0",
                                      "--out", str(tmp_path / "r.json")),
                       stderr=f, stdout=subprocess.DEVNULL, timeout=300, check=True)
    text = log.read_text()
    assert "\r" not in text and "2/2" in text


def test_speed_ratio_line_names_its_statistic() -> None:
    from synthetic import cipher

    from pycipherbench.experiments import RATIO_AES, SPEED_GROUPS, format_speed

    ms = [cipher([1000.0 + i, 1010.0, 990.0, 1005.0], transformation=t, op=op, payload=4096)
          for _, g in SPEED_GROUPS for t in g for i, op in enumerate(("enc", "dec"))]
    text = format_speed(ms, 4096)
    line = next(x for x in text.splitlines() if x.startswith("# TEA:AES"))
    assert "the rows' medians" in line and "paired median ratio" in line and "quotient" in line
    assert RATIO_AES in line and "need not agree" in text


def test_public_names() -> None:
    assert issubclass(pcb.PayloadCostWarning, Warning) and issubclass(pcb.PayloadCostError, Exception)
    assert "XChaCha20-Poly1305" in pcb.ciphers() or not any(
        "XChaCha20-Poly1305" in b["transformations"] for b in pcb.backends() if b["available"])
    assert typing.get_type_hints(pcb.sweep)["force"] is bool
    assert set(pcb.ciphers(backend="openssl")) <= set(pcb.ciphers())
    with pytest.raises(ValueError, match="did you mean 'sodium'"):
        pcb.ciphers(backend="sodiumm")


def test_unbuilt_checkout_says_build_it(tmp_path: Path) -> None:
    import shutil

    src = Path(cli.__file__).parent
    shutil.copytree(src, tmp_path / "pycipherbench",
                    ignore=shutil.ignore_patterns("_core*.so", "_core*.pyd", "__pycache__"))
    proc = subprocess.run([sys.executable, "-c", "import pycipherbench"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 1 and "circular" not in proc.stderr
    assert "C extension (_core) is not built" in proc.stderr and "build_ext --inplace" in proc.stderr


def test_store_inspect_help_is_its_own(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main(["store", "inspect", "--help"])
    assert e.value.code == 0
    assert capsys.readouterr().out.startswith("usage: pycipherbench store inspect")


def test_counts_agree_with_their_nouns(tmp_path: Path) -> None:
    from pycipherbench import store
    from pycipherbench._format import count

    assert [count(n, "entry") for n in (0, 1, 2)] == ["0 entries", "1 entry", "2 entries"]
    s = store.open(tmp_path / "p.xml", master_key_file=tmp_path / "k")
    with s.edit() as e:
        e.put_string("a", "b")
    assert repr(s).endswith(": 1 entry>")
    s.close()
    assert "1 entry" in store.inspect(tmp_path / "p.xml").describe()


def test_payload_cost_names_the_limit_and_only_the_run_s_kernels() -> None:
    from pycipherbench._cost import payload_cost

    with pytest.raises(pcb.PayloadCostError, match="more than the 1 GiB"):
        payload_cost([(1 << 40, 1)], 10)
    aes = payload_cost([(128 << 20, 1)], 10, ram=1 << 40, transformations=["AES/CTR/NoPadding"])
    assert "3DES" not in aes and "TEA-ref" not in aes and "hardware-AES" in aes
    slow = payload_cost([(128 << 20, 1)], 10, ram=1 << 40,
                        transformations=["AES/CTR/NoPadding", "TEA-ref/ECB/NoPadding"])
    assert "slowest kernels' (TEA-ref/ECB/NoPadding)" in slow


def test_a_list_of_ratios_prints_as_lines() -> None:
    r = cipher_results()
    found = r.ratio({"payload": 4096}, {"payload": 16})
    assert isinstance(found, list) and len(found) == 1 or not isinstance(found, list)
    both = pcb.Results("cipher", [*r.params[:2], {**r.params[0], "transformation": "X"},
                                  {**r.params[1], "transformation": "X"}],
                       [*r.measurements[:2], *r.measurements[:2]])
    lines = repr(both.ratio({"payload": 4096}, {"payload": 16})).splitlines()
    assert len(lines) == 2 and all("Ratio(" not in x and "transformation=" in x for x in lines)


def test_compare_notes_name_their_rows() -> None:
    from synthetic import cipher

    def few(shift: float) -> pcb.Results:  # 3 rounds a side: too few for a verdict
        params = [{"transformation": "AES/GCM/NoPadding", "payload": p} for p in (16, 64)]
        return pcb.Results("cipher", params, [cipher([100.0 * shift, 101.0, 99.0], payload=p)
                                              for p in (16, 64)])

    a, b = few(1.0), few(1.5)
    lines = a.compare(b).table().splitlines()
    notes = lines[next(i for i, x in enumerate(lines) if x.startswith("speedup =")) + 1:]
    assert notes and all("every row" in x or "payload=" in x for x in notes), notes
    with pytest.raises(ValueError, match="no point of either file has a parameter 'nosuch'"):
        a.compare(b, ignore=["nosuch"])


def test_backends_counts_own_kernels_apart(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["backends"]) == 0
    out = capsys.readouterr().out
    row = next(x for x in out.splitlines() if x.startswith("openssl"))
    assert row.rstrip().endswith("own") and "# own: pycipherbench's TEA and XTEA" in out


def test_plot_hint_is_a_kind_that_fits() -> None:
    pytest.importorskip("matplotlib")
    from pycipherbench import plot

    one = pcb.Results("cipher", cipher_results().params[:1], cipher_results().measurements[:1])
    with pytest.raises(ValueError, match="--kind seed_table"):
        plot.PLOTS["throughput"](one)


@pytest.mark.parametrize("repeats,words", [(1, "no interval"), (3, "75% interval")])
def test_designs_header_says_the_real_coverage(repeats: int, words: str, tmp_path: Path) -> None:
    from pycipherbench import designs

    recs, _ = designs.run(["plain", "esp"], cases=[{"cold": False}], repeats=repeats,
                          min_time=0.0, n_entries=10, n_reads=4, directory=str(tmp_path))
    text = designs.format_designs(recs)
    head = next(x for x in text.splitlines() if x.startswith("design"))
    assert words in head and "95%" not in head
    if repeats == 1:
        assert "none (1 round)" in text


def test_plot_title_names_what_every_point_shares() -> None:
    pytest.importorskip("matplotlib")
    from pycipherbench import plot

    r = cipher_results()
    gcm = pcb.Results("cipher", r.params[:2], r.measurements[:2])
    fig = plot.PLOTS["throughput"](gcm)
    assert "AES/GCM" in fig.axes[0].get_title()


def test_designs_say_why_sqlcipher_rows_are_absent(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    from pycipherbench import designs, engines
    from pycipherbench.experiments import run_store_designs

    real = designs.run

    def tiny(designs_: Any = None, **kw: Any) -> Any:
        return real(["plain", "esp"], cases=[{"cold": False}], repeats=1, min_time=0.0,
                    n_entries=10, n_reads=4, directory=str(tmp_path))

    monkeypatch.setattr(designs, "run", tiny)
    monkeypatch.setattr(engines, "cipher_version", lambda: None)
    text, interrupted = run_store_designs(True, 900.0, progress=False)
    assert not interrupted
    assert "No sqlcipher, sqlite rows: SQLCipher 4's Python binding (sqlcipher3) is not " \
           "installed" in text and "pycipherbench[peers]" in text


def test_store_designs_interrupted_exits_like_the_others(tmp_path: Path) -> None:
    proc = _spawn(["store", "--designs", "--no-progress", "--directory", str(tmp_path)],
                  dict(os.environ))
    # once its stores are being built: the run has begun
    out, err = signal_when(proc, lambda: any(tmp_path.iterdir()), signal.SIGINT)
    assert proc.returncode == 130, err
    assert "Interrupted after" in out or "no figures" in err


def _fake_backend_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from synthetic import cipher

    from pycipherbench._rounds import RunInfo

    def run_plans(plans: Any, repeats: int, **kw: Any) -> Any:
        return ([cipher([100.0, 101.0, 99.0], hw_aes=False, hw_mask="OPENSSL_ia32cap=~0x2")
                 for _ in plans], RunInfo(rounds=3, interrupted=False, loadavg=None, seed=0))

    monkeypatch.setattr(rounds_mod, "run_plans", run_plans)


def test_backends_table_says_why_cells_are_empty(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    names = {b["name"] for b in pcb.backends() if b["available"]}
    if "sodium" not in names:
        pytest.skip("needs libsodium compiled in")
    _fake_backend_run(monkeypatch)
    assert cli.main(["speed", "--quick", "--payload", "4096", "--backend",
                     "openssl,sodium,openssl", "--no-hw-aes"]) == 0
    out = capsys.readouterr().out
    head = next(x for x in out.splitlines() if x.startswith("transformation"))
    assert head.split() == ["transformation", "op", "openssl", "sodium"]  # one column each
    chacha = next(x for x in out.splitlines() if x.startswith("ChaCha20-Poly1305"))
    assert chacha.split()[-1] == "off"
    assert "off: not measured, as --no-hw-aes hides the AES instructions from OpenSSL only" in out
    assert "# Hardware AES: OFF for OpenSSL" in out


def test_measure_refuses_the_internal_warmup_sentinel() -> None:
    for warmup in (-1, -1.0, -5):
        with pytest.raises(ValueError, match="warmup must be in"):
            pcb.measure("AES/CTR/NoPadding", payload=16, warmup=warmup)
        with pytest.raises(ValueError, match="warmup must be in"):
            pcb.store.bench("get", n_keys=10, warmup=warmup)


def test_close_reference_labels_do_not_overlap() -> None:
    pytest.importorskip("matplotlib")
    from synthetic import TEA, cipher

    from pycipherbench import plot

    params = [{"transformation": TEA, "payload": 16, "rounds": r} for r in (8, 16)] + [
        {"transformation": t, "payload": 16} for t in ("AES/GCM/NoPadding", "AES/CTR/NoPadding")]
    ms = [cipher([v, v + 1, v - 1], transformation=p["transformation"], rounds=p.get("rounds"))
          for p, v in zip(params, (400.0, 800.0, 100.0, 105.0))]
    fig = plot.PLOTS["rounds"](pcb.Results("cipher", params, ms))
    refs = [t for t in fig.axes[0].texts if "AES" in t.get_text()]
    assert len(refs) == 2 and len({t.get_position()[0] for t in refs}) == 2


def test_compare_and_ratio_print_what_the_api_returns(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    cipher_results().save(a)
    cipher_results(shift=1.2, seed=1).save(b)
    assert cli.main(["compare", str(a), str(b), "--ignore", "hw_aes", "--alpha", "0.01"]) == 0
    api = pcb.load_results(b).compare(pcb.load_results(a), ignore=["hw_aes"], alpha=0.01)
    assert api.table() in capsys.readouterr().out
    assert cli.main(["ratio", str(a), "--num", "payload=4096", "--den", "payload=16"]) == 0
    found = pcb.load_results(a).ratio({"payload": 4096}, {"payload": 16})
    out = capsys.readouterr().out
    assert all(str(r) in out for r in (found if isinstance(found, list) else [found]))


def test_speed_sigterm_exits_143(tmp_path: Path) -> None:
    proc = _spawn_long(["speed", "--quick", "--payload", "4096"])  # cannot end before the signal
    assert proc.stderr is not None
    proc.stderr.readline()  # the progress bar's first line: the rounds have begun
    out, err = signal_when(proc, lambda: True, signal.SIGTERM)
    assert proc.returncode == 143, err
    assert "SIGTERM" in out + err and "Traceback" not in err


def _spawn_long(args: list[str]) -> subprocess.Popen[str]:
    """``pycipherbench ARGS`` in a child whose --quick runs take 100000 short rounds (so a
    signal surely comes mid-run; the test never waits for the end)."""
    root = str(Path(pcb.__file__).resolve().parent.parent)
    code = (f"import sys; sys.path.insert(0, {root!r}); "
            "from pycipherbench import cli, experiments as e; "
            "[t[True].update(repeats=100000, min_time=0.001, warmup=0.0) "
            " for t in (e.SPEED_TIMING, e.STORE_TIMING)]; "
            f"sys.exit(cli.main({args!r}))")
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=signals_as_a_shell_leaves_them)


def _rounds_on_disk(path: Path) -> int:
    """The rounds a speed/store --json file holds, checking it parses and that every
    point holds the same complete rounds."""
    doc = json.loads(path.read_text())
    assert doc["complete"] is False
    records = doc["results"] if "results" in doc else [p["measurement"] for p in doc["points"]]
    counts = {len(r["samples"]) for r in records}
    assert len(counts) == 1, counts
    return counts.pop()


@pytest.mark.parametrize("cmd,sig,status", [
    ("speed", signal.SIGKILL, -signal.SIGKILL), ("speed", signal.SIGTERM, 143),
    ("speed", signal.SIGHUP, 129), ("speed --threads", signal.SIGKILL, -signal.SIGKILL),
    ("store", signal.SIGKILL, -signal.SIGKILL)])
def test_json_saved_after_every_round(cmd: str, sig: int, status: int, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    extra = {"speed": ["--payload", "4096"], "store": ["--n-keys", "20", "--no-progress"],
             "speed --threads": ["--payload", "4096", "--threads", "2"]}[cmd]  # the backends table
    cmd = cmd.split()[0]
    proc = _spawn_long([cmd, "--quick", "--processes", "1", "--json", str(out), *extra])
    said, err = signal_when(proc, out.exists, sig)  # once a round is on disk
    assert proc.returncode == status, err
    assert "Traceback" not in err
    assert _rounds_on_disk(out) >= 1
    if sig == signal.SIGKILL:  # its lock is left behind: the next run takes it over
        assert (tmp_path / ".r.json.pcb-lock").exists()
    else:
        assert signal.Signals(sig).name in said + err
        assert not (tmp_path / ".r.json.pcb-lock").exists()


def test_a_command_leaves_no_lock_behind(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    out = tmp_path / "r.json"
    assert cli.main(["sweep", "--param", "transformation=AES/CTR/NoPadding", "--param",
                     "payload=16", "--repeats", "2", "--min-time", "0.001", "--warmup", "0",
                     "--no-progress", "--out", str(out)]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
    assert out.stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask

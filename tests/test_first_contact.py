"""What a new user meets first: --help of every command, light imports, output files
checked before measuring and written atomically, files named in errors, name hints."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import sys

import pytest

import pycipherbench as pcb
from conftest import child_env  # noqa: E402
from pycipherbench import _output, cli
from pycipherbench._hwaes import python_command

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBCOMMANDS = ("speed", "backends", "sweep", "compare", "ratio", "plot", "store", "machine")


def run_cli(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(python_command("pycipherbench.cli", *args), capture_output=True,
                          text=True, timeout=600, check=False, cwd=cwd)


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    # the pycipherbench under test, from a neutral directory (not the checkout's sources)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, check=False, env=child_env(), cwd=tempfile.gettempdir())


def tiny_sweep(tmp_path, name: str = "r.json") -> str:
    out = str(tmp_path / name)
    pcb.sweep("cipher", transformation="AES/CTR/NoPadding", payload=[16, 64], repeats=2,
              min_time=0.0005, warmup=0.0, progress=False, out=out)
    return out


# -- help

def test_top_level_help_lists_every_command() -> None:
    for flag in ("--help", "-h"):
        proc = run_cli(flag)
        assert proc.returncode == 0, proc.stderr
        for name in SUBCOMMANDS:
            assert name in proc.stdout


def test_every_subcommand_help_works() -> None:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    assert set(sub.choices) == set(SUBCOMMANDS)  # a new command gets its --help tested here
    for name in SUBCOMMANDS:
        proc = run_cli(name, "--help")
        assert proc.returncode == 0, (name, proc.stderr)
        assert proc.stdout.startswith("usage: pycipherbench " + name), proc.stdout
        # every option of the parser is listed
        for action in sub.choices[name]._actions:
            for opt in action.option_strings:
                assert opt in proc.stdout, (name, opt)


def test_sweep_help_lists_each_targets_parameters_with_defaults() -> None:
    from pycipherbench.sweep import _signature

    out = run_cli("sweep", "--help").stdout
    flat = " ".join(out.split())
    for target in ("cipher", "store"):
        for name, default in _signature(target).items():
            if name in ("min_time", "repeats", "warmup", "stages"):
                continue  # their own options (--min-time ...)
            assert name in flat, name
            if default is not None and name not in ("transformation", "workload"):
                assert f"{name}={default}" in flat, name
    assert "open_cold" in flat and "rotate_lazy" in flat  # the store workloads


def test_plot_help_says_kinds_and_dpi_default() -> None:
    out = " ".join(run_cli("plot", "--help").stdout.split())
    assert "commit_apply" in out and "default 150" in out and "auto (default" in out


def test_store_inspect_without_file_says_what_is_missing() -> None:
    proc = run_cli("store", "inspect")
    assert proc.returncode == 2
    # store inspect has its own parser (its own --help): it names the FILE it needs
    assert "store inspect" in proc.stderr and "required: FILE" in proc.stderr
    assert "unknown arguments" not in proc.stderr
    assert "Traceback" not in proc.stderr


# -- imports

def test_import_loads_no_scipy_pandas_matplotlib() -> None:
    code = ("import sys, pycipherbench, pycipherbench.cli as c; c.build_parser(); "
            "import pycipherbench.results, pycipherbench.compare, pycipherbench.plot, "
            "pycipherbench.stats, pycipherbench.store; "
            "print([m for m in ('scipy', 'pandas', 'matplotlib') if m in sys.modules])")
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_a_statistic_loads_scipy_when_needed() -> None:
    code = ("import sys, numpy as np; from pycipherbench import stats; "
            "stats.mann_whitney_u(np.arange(8.0), np.arange(8.0) + 3); "
            "print('scipy' in sys.modules)")
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"


# -- outputs checked before measuring

@pytest.mark.parametrize("argv", [
    ("speed", "--quick", "--json", "{missing}/x.json"),
    ("store", "--quick", "--json", "{missing}/x.json"),
    ("sweep", "--param", "transformation=AES/CTR/NoPadding", "--out", "{missing}/x.json"),
])
def test_output_in_a_missing_directory_fails_before_measuring(tmp_path, argv) -> None:
    missing = str(tmp_path / "no-such-dir")
    proc = run_cli(*(a.format(missing=missing) for a in argv))
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr and missing in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""  # nothing was measured: no table


@pytest.mark.parametrize("argv", [
    ("speed", "--quick", "--json", "{path}"),
    ("store", "--quick", "--json", "{path}"),
    ("sweep", "--param", "transformation=AES/CTR/NoPadding", "--out", "{path}"),
])
def test_existing_results_file_is_kept_without_force(tmp_path, argv) -> None:
    path = tmp_path / "old.json"
    path.write_text('{"precious": 1}')
    proc = run_cli(*(a.format(path=path) for a in argv))
    assert proc.returncode == 2
    assert "already exists" in proc.stderr and "--force" in proc.stderr
    assert proc.stdout == ""
    assert json.loads(path.read_text()) == {"precious": 1}


def test_sweep_force_replaces_and_resume_continues(tmp_path) -> None:
    path = tmp_path / "r.json"
    path.write_text("{}")
    base = ("sweep", "--param", "transformation=AES/CTR/NoPadding", "--param", "payload=16",
            "--repeats", "2", "--min-time", "0.0005", "--warmup", "0", "--no-progress",
            "--out", str(path))
    proc = run_cli(*base, "--force")
    assert proc.returncode == 0, proc.stderr
    assert len(pcb.load_results(path)) == 1
    proc = run_cli(*base[:3], "--param", "payload=16,32", *base[5:], "--resume")
    assert proc.returncode == 0, proc.stderr
    assert len(pcb.load_results(path)) == 2


def test_check_output_refuses_directories_and_unwritable_dirs(tmp_path) -> None:
    with pytest.raises(_output.OutputError, match="is a directory"):
        _output.check_output(tmp_path)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if os.access(ro, os.W_OK) and os.geteuid() == 0:
            pytest.skip("root writes into a read-only directory")
        with pytest.raises(_output.OutputError, match="cannot write"):
            _output.check_output(ro / "x.json")
    finally:
        ro.chmod(0o700)


def test_sweep_api_checks_out_before_measuring(tmp_path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        pcb.sweep("cipher", transformation="AES/CTR/NoPadding", payload=16, repeats=2,
                  min_time=0.0005, progress=False, out=tmp_path / "missing" / "r.json")


def test_atomic_write_leaves_the_old_file_when_writing_fails(tmp_path) -> None:
    path = tmp_path / "r.json"
    path.write_text("old")

    def fail(f) -> None:
        f.write("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        _output.write_atomic(path, fail)
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["r.json"]  # no temporary file left behind
    _output.write_json_atomic(path, {"a": 1})
    assert json.loads(path.read_text()) == {"a": 1}


def test_plot_output_checked_before_drawing(tmp_path) -> None:
    results = tiny_sweep(tmp_path)
    proc = run_cli("plot", results, "-o", str(tmp_path / "x.gif"))
    assert proc.returncode == 2 and ".png" in proc.stderr
    proc = run_cli("plot", results, "-o", str(tmp_path / "nodir" / "x.png"))
    assert proc.returncode == 2 and "does not exist" in proc.stderr
    pytest.importorskip("matplotlib")
    proc = run_cli("plot", results, "-o", str(tmp_path / "x.png"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "x.png").read_bytes()[:4] == b"\x89PNG"


# -- files named in errors

@pytest.mark.parametrize("command", ["plot", "compare", "ratio"])
def test_non_json_results_file_is_named(tmp_path, command) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("not json\n")
    good = tiny_sweep(tmp_path)
    argv = {"plot": ("plot", str(bad), "-o", str(tmp_path / "x.png")),
            "compare": ("compare", good, str(bad)),
            "ratio": ("ratio", str(bad), "--num", "payload=64", "--den", "payload=16")}[command]
    proc = run_cli(*argv)
    assert proc.returncode == 2
    assert str(bad) in proc.stderr and "not JSON" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_store_inspect_json_to_stdout_is_only_json(tmp_path) -> None:
    from pycipherbench import store

    path = tmp_path / "prefs.xml"
    with store.open(path, master_key_file=tmp_path / "master.key") as s:
        s.edit().put_string("k", "v").commit()
    proc = run_cli("store", "inspect", str(path), "--json", "-")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert isinstance(doc, dict) and doc


# -- names: the nearest valid one

@pytest.mark.parametrize("name, hint", [
    ("AES/GCM/NoPading", "did you mean 'AES/GCM/NoPadding'?"),
    (" AES/GCM/NoPadding", "spaces around it: write 'AES/GCM/NoPadding'"),
    ("aes-128-gcm", "'AES/GCM/NoPadding' with a 16-byte key (key_bits=128)"),
    ("aes-256-cbc", "'AES/CBC/PKCS5Padding'"),
    ("DESede", "'DESede/ECB/NoPadding'"),
    ("3DES", "'DESede/CBC/PKCS5Padding'"),
    ("ChaCha20", "'ChaCha20-Poly1305'"),
])
def test_unknown_transformation_names_the_nearest(name, hint) -> None:
    for call in (lambda: pcb.measure(name, payload=16, repeats=2),
                 lambda: pcb.encrypt(name, b"k" * 16, b"data", iv=b"i" * 12),
                 lambda: pcb.encrypt(name, b"k" * 16, b"data", iv=b"i" * 12,
                                     backend="py:cryptography")):
        with pytest.raises(pcb.UnsupportedCipherError) as info:
            call()
        assert hint in str(info.value), str(info.value)
        assert str(info.value).startswith("unknown transformation")


def test_measure_non_string_names_measures_argument() -> None:
    with pytest.raises(TypeError) as info:
        pcb.measure(123)  # type: ignore[arg-type]
    text = str(info.value)
    assert "measure()" in text and "'transformation'" in text and "int" in text
    assert "Kernel()" not in text


def test_unknown_backend_names_the_nearest() -> None:
    with pytest.raises(ValueError, match=r"did you mean 'openssl'\?"):
        pcb.measure("AES/GCM/NoPadding", backend="opensl", payload=16)
    proc = run_cli("speed", "--quick", "--backend", "sodiun")
    assert proc.returncode != 0 and "did you mean 'sodium'?" in proc.stderr


def test_missing_transformation_lists_python_libraries_too() -> None:
    from pycipherbench._pybackends import SUPPORTS

    have = [n for n, ts in SUPPORTS.items() if "XChaCha20-Poly1305" in ts]
    assert have  # pycryptodome and pynacl run it
    with pytest.raises(pcb.UnsupportedCipherError) as info:
        pcb.measure("XChaCha20-Poly1305", payload=16)
    for name in have:
        assert name in str(info.value)


def test_unknown_sweep_parameter_and_workload_name_the_nearest() -> None:
    with pytest.raises(TypeError, match=r"paylod: did you mean 'payload'\?"):
        pcb.sweep("cipher", transformation="AES/GCM/NoPadding", paylod=[16])
    with pytest.raises(ValueError, match=r"did you mean 'get'\?"):
        pcb.store.bench("gett")
    with pytest.raises(ValueError, match=r"did you mean 'commit'\?"):
        pcb.sweep("store", workload=["comit"])


def test_alias_table_is_what_the_core_accepts() -> None:
    table = pcb.ciphers(aliases=True)
    assert table["AES/CBC/PKCS7Padding"] == "AES/CBC/PKCS5Padding"
    assert table["3DES/ECB/PKCS5Padding"] == "DESede/ECB/PKCS5Padding"
    assert table["TripleDES/CBC/NoPadding"] == "DESede/CBC/NoPadding"
    assert table["ChaCha20-Poly1305/None/NoPadding"] == "ChaCha20-Poly1305"
    listed = set(pcb.ciphers())
    for alias, name in table.items():
        assert alias not in listed
        if name in listed:  # OpenSSL runs it: the core takes the alias, as the same kernel
            from pycipherbench import _core

            _core.check_kernel(alias)
            _core.check_kernel(alias.upper())


def test_sweep_folds_aliases_into_one_point() -> None:
    r = pcb.sweep("cipher", transformation=["AES/CBC/PKCS7Padding", "AES/CBC/PKCS5Padding",
                                            "aes/cbc/pkcs5padding"],
                  payload=16, repeats=2, min_time=0.0005, warmup=0.0, progress=False)
    assert len(r) == 1
    assert r.params[0]["transformation"] == "AES/CBC/PKCS5Padding"


# -- compare and ratio as the tables print them

def test_compare_with_no_matched_points_names_the_parameters(tmp_path) -> None:
    a = tiny_sweep(tmp_path, "a.json")
    b = str(tmp_path / "b.json")
    pcb.sweep("cipher", transformation="AES/CTR/NoPadding", payload=[16, 64], op="dec",
              repeats=2, min_time=0.0005, warmup=0.0, progress=False, out=b)
    proc = run_cli("compare", a, b)
    assert proc.returncode != 0
    assert "op" in proc.stderr and "--ignore op" in proc.stderr
    assert "ignore=" not in proc.stderr  # the CLI's words, not Python's
    proc = run_cli("compare", a, b, "--ignore", "op")
    assert proc.returncode == 0, proc.stderr
    assert "2 matched points" in proc.stdout


def test_ratio_matches_values_as_printed_and_blames_the_right_option(tmp_path) -> None:
    out = str(tmp_path / "r.json")
    pcb.sweep("cipher", transformation="AES/CTR/NoPadding", payload=16, op=["enc", "dec"],
              repeats=2, min_time=0.0005, warmup=0.0, progress=False, out=out)
    proc = run_cli("ratio", out, "--num", "op=ENC", "--den", "op=DEC")
    assert proc.returncode == 0, proc.stderr
    assert "x [" in proc.stdout
    proc = run_cli("ratio", out, "--num", "payload16", "--den", "op=dec")
    assert proc.returncode == 2
    assert "--num 'payload16'" in proc.stderr and "--param" not in proc.stderr
    proc = run_cli("ratio", out, "--num", "op=enc", "--den", "opp=dec")
    assert proc.returncode == 2 and "did you mean 'op'?" in proc.stderr


# -- large payloads: an estimate first, a refusal when it cannot fit

def test_payload_cost_estimates_and_refuses() -> None:
    from pycipherbench import _cost

    assert _cost.payload_cost([(4096, 1)], 10) == ""
    note = _cost.payload_cost([(1 << 30, 1)], 10, ram=64 << 30)
    assert "1,024 MiB" in note and "2.0 GiB" in note and "10 rounds" in note
    with pytest.raises(_cost.PayloadCostError, match="more than half of this machine's 4.0 GiB"):
        _cost.payload_cost([(1 << 30, 1), (1 << 30, 1)], 10, ram=4 << 30)


def test_measure_and_sweep_refuse_buffers_beyond_memory(monkeypatch) -> None:
    from pycipherbench import _cost

    # A machine of 1 GiB: a 1 GiB payload's 2 GiB of buffers exceed half of it. (Pretended,
    # so that a regression allocates 2 GiB at worst, not more than this machine has.)
    monkeypatch.setattr(_cost, "physical_memory", lambda: 1 << 30)
    with pytest.raises(_cost.PayloadCostError, match="more than half of this machine's 1.0 GiB"):
        pcb.measure("AES/CTR/NoPadding", payload=1 << 30)
    with pytest.raises(_cost.PayloadCostError):
        pcb.sweep("cipher", transformation="AES/CTR/NoPadding", payload=[1 << 29, 1 << 30],
                  progress=False)


def _limit_memory() -> None:  # a regression fails with MemoryError, not the OOM killer
    import resource

    if os.environ.get("PCB_SANITIZED"):  # ASan reserves terabytes of shadow: no RLIMIT_AS there
        return
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def test_large_payload_without_a_terminal_needs_yes(tmp_path) -> None:
    for argv in (("speed", "--payload", str(128 << 20)),
                 ("sweep", "--param", "transformation=AES/CTR/NoPadding", "--param",
                  f"payload={128 << 20}", "--out", str(tmp_path / "big.json"))):
        proc = subprocess.run(python_command("pycipherbench.cli", *argv), capture_output=True,
                              text=True, timeout=300, check=False, stdin=subprocess.DEVNULL,
                              preexec_fn=_limit_memory)
        assert proc.returncode == 1, proc.stderr
        assert "128 MiB" in proc.stderr and "--yes" in proc.stderr
        assert proc.stdout == ""  # nothing measured
    assert not (tmp_path / "big.json").exists()


# -- wording

def test_slowdown_over_100_percent_reads_as_a_factor() -> None:
    from pycipherbench.stats import instability_warnings

    steady = [100.0] * 10
    canary = [10.0] * 9 + [46.6]
    text = " ".join(instability_warnings(rounds_ns=steady, canary_ns=canary, canary_best_ns=10.0))
    assert "4.7x slower than its best" in text and "%" not in text.split("slower")[0][-8:]
    canary = [10.0] * 9 + [13.0]
    text = " ".join(instability_warnings(rounds_ns=steady, canary_ns=canary, canary_best_ns=10.0))
    assert "30% slower than its best" in text


def test_rounds_and_points_singular() -> None:
    assert cli.rounds_text(1) == "1 complete round"
    assert cli.rounds_text(3) == "3 complete rounds"


def test_interrupted_sweep_message_uses_cli_words(tmp_path, capsys, monkeypatch) -> None:
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(sys.modules["pycipherbench.sweep"], "run_plans", interrupted)
    out = str(tmp_path / "r.json")
    rc = cli.main(["sweep", "--param", "transformation=AES/CTR/NoPadding", "--param", "payload=16",
                   "--repeats", "2", "--no-progress", "--out", out])
    err = capsys.readouterr().err
    assert rc == 130
    assert "--resume" in err and "resume=True" not in err and "pycipherbench.sweep" not in err


def test_backend_table_counts_cells_and_names_the_machine() -> None:
    proc = run_cli("speed", "--quick", "--payload", "4096", "--backend", "openssl,sodium")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    rows = [line for line in out.splitlines() if line.split()[:1] and
            line.split()[1:2] in (["ENC"], ["DEC"])]
    cells = sum(1 for line in rows for c in line.split()[2:] if c != "-")
    assert "# Machine: " in out
    import re

    counts = {int(m[1]) for m in re.finditer(r"\(\d+ of (\d+) (\w+)\)", out)}
    assert counts <= {cells}, (counts, cells)
    assert " rows)" not in out
    assert "seed-000" not in out


def test_store_table_says_no_internal_names(tmp_path) -> None:
    proc = run_cli("store", "--quick", "--no-progress", "--directory", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "seed-000" not in proc.stdout and "# Machine: " in proc.stdout


# -- plots: titles from the data, refusals, plain tick labels

def test_throughput_title_names_the_cipher_and_backend(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    from pycipherbench import plot

    titles = []
    for t in ("AES/CTR/NoPadding", "ChaCha20-Poly1305"):
        r = pcb.sweep("cipher", transformation=t, payload=[16, 64], repeats=2, min_time=0.0005,
                      warmup=0.0, progress=False, backend=["openssl", "sodium"]
                      if t == "ChaCha20-Poly1305" else "openssl")
        titles.append(plot.plot_throughput(r).axes[0].get_title())
    assert titles[0] == "Throughput vs payload: AES/CTR/NoPadding"
    assert titles[1] == "Throughput vs payload: ChaCha20-Poly1305, by backend"


def test_throughput_of_one_payload_refuses_clearly(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    out = str(tmp_path / "one.json")
    pcb.sweep("cipher", transformation=["AES/CTR/NoPadding", "AES/GCM/NoPadding"], payload=4096,
              repeats=2, min_time=0.0005, warmup=0.0, progress=False, out=out)
    proc = run_cli("plot", out, "-o", str(tmp_path / "x.png"), "--kind", "throughput")
    assert proc.returncode == 2
    assert "same one (4 KiB)" in proc.stderr and "seed_table" in proc.stderr
    assert not (tmp_path / "x.png").exists()


def test_store_axes_read_in_plain_numbers_and_words(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    from pycipherbench import plot

    r = pcb.sweep("store", workload="get", n_keys=[100, 300, 600], repeats=2, min_time=0.001,
                  warmup=0.0, progress=False, directory=str(tmp_path))
    fig = plot.plot_store_latency(r)
    fig.canvas.draw()
    ax = fig.axes[0]
    labels = [t.get_text() for axis in (ax.xaxis, ax.yaxis)
              for t in (*axis.get_majorticklabels(), *axis.get_minorticklabels())]
    assert labels and not any("times" in t or "^" in t or "\\mathdefault" in t for t in labels)
    assert "n_keys" not in ax.get_title() and "n_keys" not in ax.get_xlabel()
    assert "keys" in ax.get_title()


def test_commit_apply_y_label_fits(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    from pycipherbench import plot

    r = pcb.sweep("store", workload=["commit", "apply"], n_keys=100, repeats=2, min_time=0.001,
                  warmup=0.0, progress=False, directory=str(tmp_path))
    fig = plot.plot_commit_apply(r)
    fig.canvas.draw()
    label = fig.axes[0].yaxis.label
    box = label.get_window_extent()
    assert box.x0 >= 0 and box.y0 >= 0 and box.y1 <= fig.bbox.height


# -- the version, written once

def test_version_is_written_once() -> None:
    tomllib = pytest.importorskip("tomllib")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "pycipherbench.__version__"}
    from setuptools.config.pyprojecttoml import read_configuration

    here = os.getcwd()
    try:
        os.chdir(ROOT)
        assert read_configuration("pyproject.toml")["project"]["version"] == pcb.__version__
    finally:
        os.chdir(here)

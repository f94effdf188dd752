"""The ``pycipherbench`` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from typing import Any

from ._machine import machine
from ._options import SETTINGS
from ._cost import PayloadCostError, PayloadCostWarning
from ._format import format_size_compact, format_table
from ._interrupt import SaveGuard, interrupt_words
from ._output import (STDOUT, OutputError, check_output, claims_released, write_atomic,
                      write_json_atomic, write_text_atomic)
from .experiments import (QUICK_NOTE, SPEED_GROUPS, SPEED_TIMING, STORE_TIMING, format_speed,
                          format_store, machine_line, run_speed, store_points, warning_lines)

# Moved to .experiments; still importable from here (notebooks/encrypted_store.ipynb does).
from .experiments import (  # noqa: F401
    APPLY_MIN_TIME_SCALE, RATIO_AES, RATIO_TEAS, STORE_OPS)


def rounds_text(n: int) -> str:
    """'1 complete round', '3 complete rounds'."""
    return f"{n} complete round{'' if n == 1 else 's'}"


def cmd_speed(args: argparse.Namespace) -> int:
    payload = args.payload if args.payload is not None else (1 << 20 if args.quick else 10 << 20)
    if payload % 16:  # its range: the declaration's (argparse)
        return _fail("speed", f"--payload must be a positive multiple of 16 bytes (the NoPadding "
                              f"rows need whole blocks), not {payload}")
    if args.json:
        try:
            _check_json(args.json, "--json", args.force)
        except OutputError as e:
            return _fail("speed", e)
    if not _payload_ok(payload, args.yes):
        return 1
    if args.backend not in (None, "openssl") or args.threads != 1:
        return _speed_backends(args, payload)
    with SaveGuard():  # after the rounds, a second Ctrl-C does not cut the table or --json
        return _speed_table(args, payload)


def _speed_table(args: argparse.Namespace, payload: int) -> int:
    from ._machine import check_summary

    said = check_summary()  # before the run: what on this machine will move the figures
    if said:
        print(said, file=sys.stderr, flush=True)
    def doc(records: list[Any], run: Any) -> dict[str, Any]:
        return {"machine": machine(), "payload": payload, "hw_aes": not args.no_hw_aes,
                "processes": run.processes, "results": [m.to_dict() for m in records]}

    results, run = run_speed(payload, args.quick, hw_aes=not args.no_hw_aes,
                             processes=args.processes, on_round=_round_saver(args, doc))
    if not results:
        print(f"# Interrupted ({interrupt_words()}) before any row was sampled: no figures.", file=sys.stderr)
        return 130
    title, _, table = format_speed(results, payload).partition("\n")
    print("\n".join([title, said, table] if said else [title, table]))  # said in the header too
    if args.quick:
        print(f"# {QUICK_NOTE}")
    if run.partial:
        print(f"# Interrupted ({interrupt_words()}) during the first round: {len(results)} rows sampled once "
              "each, shown without an interval.")
    elif run.interrupted:
        print(f"# Interrupted ({interrupt_words()}) after {rounds_text(run.rounds)}: the figures above "
              "are from those rounds only.")
    if args.json:
        _write_json(args, args.json, {**doc(results, run), "complete": not run.interrupted})
    return 130 if run.interrupted else 0


#: Why a backends-table cell is empty under --no-hw-aes.
MASKED = "--no-hw-aes masks OpenSSL only"


def _hw_words(no_hw_aes: bool, records: list[Any]) -> str:
    """Whether the table's cells ran with hardware AES, from the records."""
    if not no_hw_aes:
        return "on"
    masks = sorted({str(m.hw_mask) for m in records if not m.hw_aes})
    return f"OFF for OpenSSL ({', '.join(masks) or 'masked'}); other libraries not measured"


#: Rows the backends table adds to the seed's: what the other libraries are about.
BACKEND_ROWS = ("AES/CTR/NoPadding", "ChaCha20-Poly1305", "XChaCha20-Poly1305")


def _speed_backends(args: argparse.Namespace, payload: int) -> int:
    """The seed's table (and BACKEND_ROWS) with one KB/ms column per backend, all points
    in one interleaved run; '-' where a backend lacks the row (at its default key)."""
    from . import backends
    from ._measure import check_kernel, plan
    from ._names import nearest
    from ._rounds import Workers, resolve_processes, run_plans

    known = {b["name"]: b for b in backends()}
    if args.backend == "all":
        names = [n for n, b in known.items() if b["available"]]
    else:
        names = list(dict.fromkeys(n.strip() for n in args.backend.split(","))) \
            if args.backend else ["openssl"]  # a name given twice is one column
        for n in names:
            if n not in known:
                return _fail("speed", f"--backend: unknown backend {n!r}{nearest(n, known)}; "
                                      "pycipherbench backends lists them")
            if not known[n]["available"]:
                return _fail("speed", f"--backend: backend {n!r} is unavailable: "
                                      f"{known[n]['missing']}")
    rows = [t for _, group in SPEED_GROUPS for t in group] + list(BACKEND_ROWS)
    timing = SPEED_TIMING[args.quick]
    skipped: dict[tuple[str, str], str] = {}
    jobs = []
    for t in rows:
        for op in ("enc", "dec"):
            for b in names:
                kw = dict(op=op, payload=payload, backend=b, threads=args.threads)
                try:
                    check_kernel(t, **kw)
                    if not args.no_hw_aes or b == "openssl":
                        jobs.append((t, op, b, kw))
                    else:
                        skipped[(t, b)] = MASKED
                except (ValueError, TypeError) as e:  # UnsupportedCipherError is a ValueError
                    skipped[(t, b)] = str(e)

    def doc(records: list[Any], run: Any) -> dict[str, Any]:
        return {"machine": machine(), "payload": payload, "hw_aes": not args.no_hw_aes,
                "backends": names, "threads": args.threads, "processes": run.processes,
                "results": [m.to_dict() for m in records]}

    with Workers(resolve_processes(args.processes, timing["repeats"])) as workers:
        plans = [plan(t, hw_aes=not args.no_hw_aes, workers=workers, **kw, **timing)
                 for t, op, b, kw in jobs]
        try:
            records, run = run_plans(plans, timing["repeats"], progress=True, desc="speed",
                                     workers=workers, on_round=_round_saver(args, doc))
        except KeyboardInterrupt:
            records = []
    if not records:
        print(f"# Interrupted ({interrupt_words()}) before the first round finished: no figures.", file=sys.stderr)
        return 130
    by_key = {(t, op, b): m for (t, op, b, _), m in zip(jobs, records)}
    head = ["transformation", "op", *names]
    table = []
    for t in rows:
        if not any((t, op, b) in by_key for op in ("enc", "dec") for b in names):
            continue
        for op in ("enc", "dec"):
            cells = [f"{by_key[(t, op, b)].kb_per_ms:,.1f}" if (t, op, b) in by_key
                     else "off" if skipped.get((t, b)) == MASKED else "-" for b in names]
            table.append([t, op.upper(), *cells])
    threads = f", {args.threads} threads each (aggregate)" if args.threads > 1 else ""
    print(f"# Speed Test of {format_size_compact(payload)} Data Enc/Decryption, KB/ms per "
          f"backend (message scope{threads}) #")
    print(format_table(head, table))
    legend = ["-: the backend lacks the row at its default key size (pycipherbench backends)"]
    if any(v == MASKED for v in skipped.values()):
        legend.append("off: not measured, as --no-hw-aes hides the AES instructions from "
                      "OpenSSL only (this library would use them, or is no OpenSSL to mask)")
    if any(b.startswith("py:") for b in names):
        legend.append("py: columns time the Python call a program makes")
    print("# " + "; ".join(legend))
    print(f"# Hardware AES: {_hw_words(args.no_hw_aes, records)}")
    print(f"# Median of {records[0].n_rounds} rounds, every cell sampled once per round.")
    for line in warning_lines(records, noun="cells"):
        print(line)
    print(f"{machine_line(records[0].machine)}; {records[0].machine['openssl_version']}")
    floor_doc = _floor_table(args, names, timing) if not run.interrupted else None
    if args.quick:
        print(f"# {QUICK_NOTE}")
    if args.json:
        whole = {**doc(records, run), "complete": not run.interrupted}
        if floor_doc is not None:
            whole["floor_multiples"] = floor_doc
        _write_json(args, args.json, whole)
    return 130 if run.interrupted else 0


def _level_words(records: Any) -> str:
    """The intervals' coverage, from the rounds (e.g. '95% intervals', '75% intervals')."""
    from .stats import median_ci_level

    n = min((m.n_rounds for m in records), default=1)
    return f"{median_ci_level(n):.0%} intervals" if n > 1 else "no intervals (1 round)"


def _floor_table(args: argparse.Namespace, names: list[str], timing: dict[str, Any]) -> Any:
    """speed --backend all (or a list with "floor"): each library's AES-256-GCM per message
    as a multiple of the floor at 16 B..16 KiB, one more interleaved sweep (issue 21)."""
    from ._floor import FLOOR_SIZES, floor_available, floor_multiples

    if "floor" not in names or args.threads != 1:
        return None
    ok, missing = floor_available()
    if not ok or args.no_hw_aes:
        print(f"# No floor column: {missing or '--no-hw-aes hides the AES instructions it needs'}")
        return None
    try:
        r, rows, head = floor_multiples(names, repeats=timing["repeats"],
                                        min_time=timing["min_time"], warmup=timing.get("warmup"),
                                        progress=True)
    except KeyboardInterrupt:
        print(f"# Interrupted ({interrupt_words()}): no floor multiples.")
        return None
    print(f"\n# AES-256-GCM per message, each library's time as a multiple of the floor "
          f"(pycipherbench's own AES-NI + PCLMULQDQ kernels) at "
          f"{', '.join(format_size_compact(p) for p in FLOOR_SIZES)}; paired by round, "
          f"{_level_words(r.measurements)}; hardware AES on #")
    print(format_table(head, rows))
    for line in warning_lines(list(r.measurements)):
        print(line)
    return {"rows": rows, "head": head, "results": [m.to_dict() for m in r.measurements]}


def cmd_backends(args: argparse.Namespace) -> int:
    """Every backend: version, hardware AES, what it runs; what is missing and what adds it."""
    from . import backends

    items = backends()
    hw = {True: "yes", False: "no", None: "unknown"}
    table = [[b["name"], b["version"] or "-", "yes" if b["available"] else "NO",
              hw[b["hw_aes"]] if b["available"] else "-",
              _transformation_count(b) if b["available"] else "-"] for b in items]
    print(format_table(["backend", "version", "available", "hw AES", "transformations"], table))
    if any(_own(b) for b in items if b["available"]):
        print("# own: pycipherbench's TEA and XTEA kernels, run beside the library (no "
              "library has them)")
    if args.verbose:
        for b in items:
            if b["available"]:
                print(f"\n{b['name']}: {', '.join(b['transformations'])}")
    apt = [b["apt"] for b in items if b["kind"] == "c" and not b["available"] and b["apt"]]
    pip = [b["pip"] for b in items if b["kind"] == "python" and not b["available"]]
    for b in items:
        if not b["available"]:
            print(f"# {b['name']}: {b['missing']}")
    if apt:
        print(f"# To add the C libraries: apt-get install {' '.join(apt)} pkg-config, then "
              "rebuild (pip install --force-reinstall --no-deps .)")
    if pip:
        print(f"# To add the Python libraries: pip install {' '.join(pip)}")
    if not apt and not pip:  # nothing to install: all there, or what is missing needs other hardware
        print("# Every backend is available." if all(b["available"] for b in items)
              else "# No package adds what is missing (see why above).")
    return 0


def _own(backend: dict[str, Any]) -> list[str]:
    """The transformations a backend lists that are this package's own kernels (TEA, XTEA)."""
    return [t for t in backend["transformations"]
            if t.split("/")[0].removesuffix("-ref") in ("TEA", "XTEA")]


def _transformation_count(backend: dict[str, Any]) -> str:
    """'26 + 10 own': the library's transformations, then the package's own kernels."""
    own = len(_own(backend))
    theirs = len(backend["transformations"]) - own
    return f"{theirs} + {own} own" if own else str(theirs)


#: Above this, a speed run's buffers and time grow large enough to ask first.
BIG_PAYLOAD = 64 << 20


def _payload_ok(payload: int, yes: bool) -> bool:
    """Says what a large --payload costs (memory for every row's buffers, time of the
    slowest rows) and, on a terminal, asks before going on; refuses what cannot fit."""
    if payload <= BIG_PAYLOAD:
        return True
    rows = 2 * sum(len(g) for _, g in SPEED_GROUPS)
    memory = 2 * payload * rows
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        ram = 0
    if ram and memory > ram // 2:
        print(f"error: --payload {payload} needs about {memory / 2**30:.1f} GiB of buffers "
              f"({rows} rows x 2 x payload), more than half this machine's "
              f"{ram / 2**30:.0f} GiB", file=sys.stderr)
        return False
    # The slowest rows (3DES, the reference TEA) run at roughly 25 MB/s on current CPUs.
    seconds = SPEED_TIMING[False]["repeats"] * 8 * payload / 25e6
    print(f"# --payload {payload / 2**20:.0f} MiB: about {memory / 2**30:.1f} GiB of buffers, "
          f"and the slowest rows alone take about {seconds / 60:.0f} min", file=sys.stderr)
    return _confirm(yes)


def _confirm(yes: bool) -> bool:
    """After a printed estimate: --yes goes on; a terminal is asked; without one (a
    script, CI, a pipe) nobody can answer, so the run is refused rather than started
    unasked for many minutes."""
    if yes:
        return True
    if not sys.stdin.isatty():
        print("error: standard input is not a terminal, so nobody can answer: give --yes "
              "to run it anyway", file=sys.stderr)
        return False
    try:
        return input("Go on? [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


# -- sweep / compare / plot / store

def parse_value(text: str, none: bool = True) -> Any:
    """A value of a parameter no declaration types (a --num/--den name a results file has
    but no signature takes): bool (true/false/yes/no/on/off), None (none; with
    ``none=False`` the text), int, float, else the text. Declared parameters are read by
    their declaration instead (:func:`parse_params` with ``target``)."""
    low = text.strip().lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low == "none" and none:
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip()


def parse_params(specs: list[str], none: bool = True, flag: str = "--param",
                 target: str | None = None) -> dict[str, Any]:
    """['payload=16,256', 'op=enc'] -> {'payload': [16, 256], 'op': 'enc'} (one value: a scalar).
    ``target`` ("cipher"/"store"): each value is read by its parameter's declaration, as the
    API checks it (:func:`._options.parse_text`: ``key_encryption=none`` is no encryption,
    ``payload=16,,256`` and ``hw_aes=maybe`` are errors naming the parameter). Names no
    declaration has: ``none`` means None when ``none`` is set, else it is the text.
    ``flag``: the option the specs came from, as errors name it."""
    from ._options import parse_text

    types: dict[str, Any] = {}
    if target is not None:
        from .sweep import param_types

        types = param_types(target)
    grid: dict[str, Any] = {}
    for spec in specs:
        name, sep, values = spec.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name or not values:
            raise ValueError(f"{flag} {spec!r}: expected NAME=VALUE[,VALUE...]")
        if name in grid:
            raise ValueError(f"{flag} {name} given twice; list every value in one {flag}")
        parsed = [parse_text(name, v, types[name], flag=flag) if name in types
                  else parse_value(v, none) for v in values.split(",")]
        grid[name] = parsed if len(parsed) > 1 else parsed[0]
    return grid


def _fail(command: str, message: object) -> int:
    print(f"pycipherbench {command}: error: {message}", file=sys.stderr)
    return 2


def _check_json(path: str, flag: str, force: bool, override: str = "--force") -> None:
    """Before measuring: a results file that can be written, not another's, taken by this
    run until it ends ('-', standard output, needs nothing)."""
    if path != STDOUT:
        check_output(path, what=flag, keep_existing=not force, override=override, claim=True)


def _write_json(args: argparse.Namespace, path: str, doc: Any) -> None:
    """``doc`` (a dict, or Results) as JSON: to standard output for '-' (the command's
    text went to stderr: see :func:`main`), else atomically to ``path``."""
    data = doc.to_dict() if hasattr(doc, "to_dict") else doc
    if path == STDOUT:
        out = getattr(args, "stdout", None) or sys.stdout
        json.dump(data, out, indent=1)
        out.write("\n")
        out.flush()
        print("# Raw samples written to standard output")
        return
    write_json_atomic(path, data)
    print(f"# Raw samples written to {os.fspath(path)}")


def _round_saver(args: argparse.Namespace, doc: Any) -> Any:
    """speed --json FILE: after every complete round, ``doc(records, run)`` of the rounds so
    far is saved atomically (``"complete": false``), so a killed run keeps them (sweep and
    store save their Results the same way, through run_points' ``out``). None for '-' or
    no --json: standard output gets the JSON once, at the end."""
    path = getattr(args, "json", None)
    if not path or path == STDOUT:
        return None
    return lambda records, run: write_json_atomic(path, {**doc(records, run), "complete": False})


def cmd_sweep(args: argparse.Namespace) -> int:
    from .sweep import sweep

    to_stdout = args.out == STDOUT
    try:
        if to_stdout and args.resume:
            raise ValueError("--resume continues a file: --out - (standard output) has none")
        _check_json(args.out, "--out", args.force or args.resume,
                    override="--resume to continue it, --force")
        grid = parse_params(args.param or [], target=args.target)
        for name in ("repeats", "min_time", "warmup", "processes"):
            if getattr(args, name) is not None:
                if name in grid:
                    raise ValueError(f"--param {name}= and {SETTINGS[name].flag} both given: "
                                     "give one")
                grid[name] = getattr(args, name)
        processes = grid.pop("processes", None)  # sweep()'s keyword, as --processes
        if args.target == "cipher":  # a large payload: the estimate, and ask (as speed does)
            from .sweep import cost_of, expand_grid

            note = cost_of("cipher", expand_grid("cipher", **grid), grid)
            if note:
                print(f"# {note}", file=sys.stderr)
                if not _confirm(args.yes):
                    return 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PayloadCostWarning)  # said above
            results = sweep(args.target, seed=args.seed, out=None if to_stdout else args.out,
                            resume=args.resume, skip_invalid=args.skip_invalid,
                            progress=not args.no_progress, resume_hint="--resume",
                            force=args.force, processes=processes, **grid)
    except (ValueError, TypeError, ImportError) as e:
        return _fail("sweep", e)
    print(results.table())
    hw = {m.hw_aes for m in results.measurements}
    state = "on" if hw == {True} else "OFF" if hw == {False} else "on or off (the hw_aes column)"
    print(f"# Hardware AES: {state}" if hw else "# No points.")
    if any(m.warnings for m in results.measurements):
        print("# !: the row has warnings, listed below")
    for line in warning_lines(results.measurements, where="--out"):
        print(line)
    if to_stdout:
        _write_json(args, STDOUT, results)
    state = "" if results.complete else " (interrupted: incomplete; --resume measures it again)"
    print(f"# {len(results)} point{'' if len(results) == 1 else 's'} written to "
          f"{'standard output' if to_stdout else os.fspath(args.out)}{state}")
    return 0 if results.complete else 130


def cmd_compare(args: argparse.Namespace) -> int:
    from .results import load_results

    try:
        baseline, new = load_results(args.baseline), load_results(args.new)
        comparison = new.compare(baseline, alpha=args.alpha, ignore=args.ignore or (),
                                 allow_different_machines=args.allow_different_machines)
    except (OSError, ValueError) as e:
        return _fail("compare", e)
    if not len(comparison):
        return _fail("compare", f"no point of {os.fspath(args.new)} matches one of the baseline "
                                f"{os.fspath(args.baseline)}: {comparison.unmatched_reason(cli=True)}")
    print(f"# {os.fspath(args.new)} vs the baseline {os.fspath(args.baseline)}: "
          f"{len(comparison)} matched points")
    print(comparison.table())
    return 0


def cmd_ratio(args: argparse.Namespace) -> int:
    from .results import load_results

    try:
        results = load_results(args.results)
        num = parse_params(args.num or [], none=False, flag="--num", target=results.target)
        den = parse_params(args.den or [], none=False, flag="--den", target=results.target)
        found = results.ratio(num, den)
    except (OSError, ValueError, TypeError) as e:
        return _fail("ratio", e)
    ratios = found if isinstance(found, list) else [found]
    side = lambda d: ", ".join(f"{k}={v}" for k, v in d.items())  # noqa: E731
    short = any(r.level < 0.95 for r in ratios)  # each such ratio names its coverage
    print(f"# {side(num)} / {side(den)}: ns per operation, paired by round "
          f"(> 1: the first is slower), [{'interval, coverage as marked' if short else '95% interval'}]")
    for r in ratios:
        where = f"  ({side(r.params)})" if r.params else ""
        print(f"{r}{where}")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from .results import load_results

    try:
        from . import plot

        check_output(args.output, what="--output", claim=True)
        fmt = os.path.splitext(os.fspath(args.output))[1].lstrip(".").lower()
        if fmt not in IMAGE_FORMATS:
            raise ValueError(f"--output {os.fspath(args.output)!r}: expected a file name ending "
                             f"in {', '.join('.' + f for f in IMAGE_FORMATS)}")
        results = load_results(args.results)
        kind = plot.choose_plot(results) if args.kind == "auto" else args.kind
        fig = plot.PLOTS[kind](results)
        write_atomic(args.output, lambda f: fig.savefig(f, format=fmt, dpi=args.dpi,
                                                        bbox_inches="tight"),  # no clipped labels
                     binary=True)
    except (OSError, ValueError, ImportError) as e:
        return _fail("plot", e)
    print(f"# {kind} plot of {os.fspath(args.results)} written to {os.fspath(args.output)}")
    return 0


#: The image formats plot -o takes (matplotlib's, without the raw ones).
IMAGE_FORMATS = ("png", "svg", "pdf", "jpg", "jpeg", "eps", "ps", "tif", "tiff", "webp")


def cmd_store_inspect(args: argparse.Namespace) -> int:
    """pycipherbench store inspect FILE: what a store file holds, without any key."""
    import json

    from . import store

    usage = "usage: pycipherbench store inspect FILE [--json OUT|-]"
    if args.action[0] != "inspect":
        return _fail("store", f"unknown action {args.action[0]!r}: the only action is "
                              f"'inspect' (without one, store measures; {usage})")
    if len(args.action) != 2:
        what = "needs the store FILE to describe" if len(args.action) == 1 else \
            f"takes one FILE, not {len(args.action) - 1}"
        return _fail("store inspect", f"{what} ({usage})")
    try:
        if args.json and args.json != "-":
            check_output(args.json, what="--json")
        info = store.inspect(args.action[1])
    except (ValueError, OSError) as e:
        return _fail("store inspect", e)
    text = json.dumps(info.to_dict(), indent=2)
    if args.json == "-":  # standard output holds the JSON only, so that it parses
        print(text)
        return 0
    print(info.describe())
    if args.json:
        write_text_atomic(args.json, text + "\n")
    return 0


def cmd_store_replay(args: argparse.Namespace) -> int:
    """pycipherbench store --from PREFS.xml: the file replayed through every design."""
    from . import replay

    try:
        budget = _budget_ms(args)
        if args.json:
            _check_json(args.json, "--json", args.force)
        result = replay.replay(args.from_file, reads=replay.parse_reads(args.reads or "all"),
                               sensitive=replay.DEFAULT_SENSITIVE if args.sensitive is None
                               else args.sensitive, keep_values=args.keep_values,
                               anonymize=True if args.anonymize else None,
                               master_key_file=args.master_key_file,
                               repeats=3 if args.quick else 10,
                               min_time=0.0 if args.quick else 0.02, seed=args.seed,
                               directory=args.directory, processes=args.processes,
                               progress=not args.no_progress)
    except (ValueError, TypeError, OSError, ImportError) as e:
        return _fail("store --from", e)
    if not result.records:
        print("# Interrupted (Ctrl-C) before the first round finished: no figures.", file=sys.stderr)
        return 130
    print(result.format(budget))
    if args.quick:
        print(f"# {QUICK_NOTE}")
    if args.json:
        _write_json(args, args.json, result.to_dict())
    return 130 if result.run.interrupted else 0


def cmd_store(args: argparse.Namespace) -> int:
    from .sweep import run_points

    if args.action:
        return cmd_store_inspect(args)
    if args.from_file is not None:  # issue 29: an app's own preferences file
        return cmd_store_replay(args)
    stray = [f for f, on in (("--reads", args.reads is not None), ("--sensitive", args.sensitive),
                             ("--keep-values", args.keep_values), ("--anonymize", args.anonymize),
                             ("--master-key-file", args.master_key_file)) if on]
    if stray:
        return _fail("store", f"{', '.join(stray)} go(es) with --from PREFS.xml")
    if args.designs:  # issue 19: the store designs' start-up table
        return _store_designs(args)
    if args.budget_ms is not None:
        return _fail("store", "--budget is the start-up budget of --designs; without "
                              "--designs it means nothing (give --designs too)")

    n_keys = args.n_keys if args.n_keys is not None else (100 if args.quick else 1000)
    timing: dict[str, Any] = dict(STORE_TIMING[args.quick])
    if args.directory is not None:
        timing["directory"] = args.directory
    try:
        if args.json:
            _check_json(args.json, "--json", args.force)
        points = store_points(n_keys, hw_aes=not args.no_hw_aes, min_time=timing["min_time"])
        results = run_points("store", points, timing, seed=args.seed, progress=not args.no_progress,
                             resume_hint="", processes=args.processes, force=args.force,
                             out=args.json if args.json and args.json != STDOUT else None)
    except (ValueError, TypeError, OSError) as e:
        return _fail("store", e)
    if not len(results):
        print(f"# Interrupted ({interrupt_words()}) before the first round finished: no figures.", file=sys.stderr)
        return 130
    print(format_store(results, n_keys))
    if args.quick:
        print(f"# {QUICK_NOTE}")
    if not results.complete:
        print(f"# Interrupted ({interrupt_words()}) after {rounds_text(results.measurements[0].n_rounds)}: "
              "the figures above are from those rounds only.")
    if args.json:
        _write_json(args, args.json, results)
    return 0 if results.complete else 130


#: The store flags --designs does not take (what it measures is fixed: every design on
#: hardware AES, start-up cases of its own store size), with why.
DESIGNS_REFUSES = {
    "no_hw_aes": "--no-hw-aes (the designs are timed at the Python call, with hardware AES)",
    "json": "--json (its table is the result; no results file is written)",
    "seed": "--seed (each run draws its own order)",
    "n_keys": "--n-keys (the start-up cases have their own 100-entry store)",
    "force": "--force (no file is written)",
}


def _budget_ms(args: argparse.Namespace) -> float:
    """--budget (store --designs, store --from): the declared default (the article's 900 ms)
    unless given; its range is the declaration's (argparse)."""
    return SETTINGS["budget_ms"].default if args.budget_ms is None else args.budget_ms


def _store_designs(args: argparse.Namespace) -> int:
    """store --designs: refuses the flags it does not apply, runs, exits 130 when cut."""
    from .experiments import run_store_designs

    given = [words for name, words in DESIGNS_REFUSES.items() if getattr(args, name)
             not in (None, False)]
    if given:
        return _fail("store --designs", "does not take " + "; ".join(given))
    try:
        text, interrupted = run_store_designs(args.quick, _budget_ms(args), directory=args.directory,
                                              processes=args.processes,
                                              progress=not args.no_progress)
    except (ValueError, TypeError, OSError, ImportError) as e:
        return _fail("store --designs", e)
    if not text:
        print("# Interrupted before the first round finished: no figures.", file=sys.stderr)
        return 130
    print(text)
    return 130 if interrupted else 0


def sweep_parameters_help() -> str:
    """What ``sweep --help`` lists: each target's --param names with their defaults."""
    import textwrap
    import typing

    from . import _options
    from ._params import RUN_OPTIONS
    from .sweep import SUBJECT, _signature

    first = {"cipher": "a name of pycipherbench.ciphers(), e.g. AES/GCM/NoPadding",
             "store": ", ".join(typing.get_args(_options.Workload))}
    lines = textwrap.wrap("--param names and their defaults (--target cipher: the arguments of "
                          "pycipherbench.measure(); --target store: of pycipherbench.store.bench()):",
                          width=88)
    for target in ("cipher", "store"):
        shown = [f"{SUBJECT[target]} (required: {first[target]})"]
        for name, default in _signature(target).items():
            if name == SUBJECT[target] or name in RUN_OPTIONS[target] and name != "directory":
                continue
            shown.append(f"{name}={'default' if default is None else default}")
        lines += textwrap.wrap(f"{target}: {'; '.join(shown)}", width=88,
                               initial_indent="  ", subsequent_indent="    ")
    lines += textwrap.wrap("'default': the target picks it per point (key_bits: the "
                           "transformation's usual size). --repeats, --min-time and --warmup "
                           "set the timing.", width=88)
    return "\n".join(lines)


def _add_sweep_commands(sub: Any) -> None:
    from .plot import PLOTS

    sw = sub.add_parser(
        "sweep", help="measure every point of a parameter grid; save the results as JSON",
        description="Sweep measure() (--target cipher) or store.bench() (--target store) "
                    "parameters. Each --param NAME=V1,V2,... is swept (cartesian product); "
                    "values that look like ints, floats or booleans are parsed as such. "
                    "Parameters that do not apply to a point (rounds for AES) are dropped.",
        epilog=sweep_parameters_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    sw.add_argument("--param", action="append", metavar="NAME=V1,V2",
                    help="a parameter and its values (repeat for more parameters)")
    sw.add_argument("--target", choices=("cipher", "store"), default="cipher",
                    help="what is swept: measure() (default cipher) or store.bench() (store)")
    for name in ("repeats", "min_time", "warmup", "seed"):  # declared with the API's keywords
        SETTINGS[name].add_to(sw)
    sw.add_argument("--out", required=True,
                    help="results file (JSON, saved after every complete round; '-': standard "
                         "output at the end, the table then on stderr)")
    sw.add_argument("--resume", action="store_true",
                    help="keep the points --out already holds and measure the rest")
    sw.add_argument("--force", action="store_true",
                    help="replace an existing --out file (without it, an existing file is kept)")
    sw.add_argument("--yes", action="store_true",
                    help="do not ask before payloads over 64 MiB (needed without a terminal)")
    sw.add_argument("--skip-invalid", action="store_true",
                    help="skip points the target rejects instead of failing")
    sw.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_processes_option(sw)
    sw.set_defaults(func=cmd_sweep)

    cmp = sub.add_parser(
        "compare", help="per-point speedups and verdicts of two results files",
        description="Match the points of NEW with those of BASELINE on their parameters; print "
                    "the medians, speedup (baseline/new time) and a verdict: runs over worker "
                    "processes, Welch's t over the processes, called only if it holds on the "
                    "times and in canary units (the machine's clock drifts between runs); "
                    "runs in one process, a guarded Mann-Whitney U over the rounds. Refuses "
                    "results from different machines.")
    cmp.add_argument("baseline", help="results file (JSON) to compare against")
    cmp.add_argument("new", help="results file (JSON) to compare")
    SETTINGS["alpha"].add_to(cmp, default=SETTINGS["alpha"].default)
    cmp.add_argument("--ignore", action="append", metavar="PARAM",
                     help="a parameter to leave out of the matching (e.g. hw_aes)")
    cmp.add_argument("--allow-different-machines", action="store_true",
                     help="compare even if CPU model, flags or OpenSSL differ")
    cmp.set_defaults(func=cmd_compare)

    ra = sub.add_parser(
        "ratio", help="paired ratio of two kinds of points of one sweep, with a 95%% interval",
        description="For points of one sweep that differ only in the given parameters: the "
                    "per-round ratio of their ns per operation (the rounds were interleaved, so "
                    "a slow period hits both alike), its median and 95% interval. Example: "
                    "pycipherbench ratio r.json --num key_encryption=siv --den key_encryption=none")
    ra.add_argument("results", help="results file (JSON) of a sweep")
    ra.add_argument("--num", action="append", metavar="NAME=VALUE", required=True,
                    help="what the numerator points have (repeatable)")
    ra.add_argument("--den", action="append", metavar="NAME=VALUE", required=True,
                    help="what the denominator points have (repeatable)")
    ra.set_defaults(func=cmd_ratio)

    pl = sub.add_parser("plot", help="plot a results file",
                        description="Draw the plot that fits the swept parameters (or --kind).")
    pl.add_argument("results", help="results file (JSON)")
    pl.add_argument("-o", "--output", required=True, help="image file (.png, .svg, .pdf)")
    pl.add_argument("--kind", choices=("auto", *PLOTS), default="auto", metavar="KIND",
                    help="auto (default: the plot that fits what was swept) or one of "
                         f"{', '.join(PLOTS)}")
    pl.add_argument("--dpi", type=int, default=150,
                    help="resolution of a .png in dots per inch (default 150)")
    pl.set_defaults(func=cmd_plot)

    st = sub.add_parser(
        "store", help="the seed's encrypted-store experiments as a table; "
                      "'store inspect FILE': what a store file holds, without a key",
        description="Per-op latency plain vs encrypted (put/get/contains/get_missing), the "
                    "100-pair scenario (plain, lean, faithful), commit vs apply, cold vs warm open. "
                    "'pycipherbench store inspect FILE' instead describes a store file without any "
                    "key: layout, the keysets' key ids, type URLs, status and primary (Tink's "
                    "plaintext keyset_info), entries per key id.")
    st.add_argument("action", nargs="*", metavar="inspect FILE",
                    help="describe the store file FILE (no key needed) instead of measuring")
    st.add_argument("--quick", action="store_true", help="short samples, 100-entry stores")
    SETTINGS["n_keys"].add_to(st, help="entries for the per-op table",
                              default_words="1000; 100 with --quick")
    st.add_argument("--no-hw-aes", action="store_true", help="hide AES-NI/PCLMULQDQ from OpenSSL")
    st.add_argument("--directory", help="where the stores' files go (fsync costs depend on it)")
    SETTINGS["seed"].add_to(st)
    st.add_argument("--json", metavar="FILE", help="also save the results (raw samples, saved "
                    "after every complete round); with inspect: the description as JSON ('-': "
                    "standard output, the table then on stderr)")
    st.add_argument("--force", action="store_true",
                    help="replace an existing --json file (without it, an existing file is kept)")
    st.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    st.add_argument("--designs", action="store_true",
                    help="the start-up table of the store designs (ESP, cache, tiered, lazy, "
                         "SQLCipher 4, SQLite, an MMKV design model): which fits --budget")
    SETTINGS["budget_ms"].add_to(st, help="with --designs or --from: the start-up budget in ms")
    # issue 29: replay an app's own preferences file through every design
    st.add_argument("--from", dest="from_file", metavar="PREFS.xml",
                    help="replay this SharedPreferences XML (adb shell run-as PKG cat "
                         "shared_prefs/NAME.xml) through every design: first launch with the "
                         "migration, cold and warm start, one apply, footprint")
    st.add_argument("--reads", default=None, metavar="NAMES|all",
                    help="with --from: the names read at start-up, comma-separated (default all)")
    st.add_argument("--sensitive", default=None, metavar="REGEX",
                    help="with --from: names the tiered designs encrypt (default: token, secret, "
                         "password, auth, session, ... in the name)")
    st.add_argument("--keep-values", action="store_true",
                    help="with --from: store the file's own values (default: random ones of the "
                         "same type and size)")
    st.add_argument("--anonymize", action="store_true",
                    help="with --from: random names of the same lengths (the default for an ESP "
                         "file without --master-key-file)")
    st.add_argument("--master-key-file", metavar="KEY",
                    help="with --from and an ESP file: its master key (without it, only sizes)")
    add_processes_option(st)
    st.set_defaults(func=cmd_store)


def inspect_parser() -> argparse.ArgumentParser:
    """``pycipherbench store inspect FILE``: its own parser, so that --help is its help."""
    ins = argparse.ArgumentParser(
        prog="pycipherbench store inspect",
        description="Describe a store file without any key: layout, the keysets' key ids, "
                    "type URLs, status and primary (Tink's plaintext keyset_info), entries per "
                    "key id.")
    ins.add_argument("file", metavar="FILE", help="the store's XML file")
    ins.add_argument("--json", metavar="OUT", help="also write the description as JSON "
                     "('-': standard output, and nothing else there)")
    return ins


def _version() -> str:
    """The installed distribution's version, else pyproject's (an in-tree checkout)."""
    from importlib import metadata

    try:
        return metadata.version("pycipherbench")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pycipherbench",
        description="What symmetric encryption really costs, measured on this machine: cipher "
                    "kernels (speed, sweep --target cipher), libraries (backends), an encrypted "
                    "key-value store (store, sweep --target store), and their results files "
                    "(compare, ratio, plot). 'pycipherbench COMMAND --help' says what each takes.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    speed = sub.add_parser(
        "speed", help="the seed article's cipher speed table, measured on this machine",
        description="Encrypt and decrypt a payload with every transformation of the seed "
                    "article's table; print KB/ms per line, the TEA:AES ratio and the machine.")
    SETTINGS["payload"].add_to(speed, help="bytes per message, a multiple of 16",
                               default_words="10 MiB; 1 MiB with --quick")
    speed.add_argument("--quick", action="store_true",
                       help="3 short rounds: done in well under a minute, rough numbers")
    speed.add_argument("--no-hw-aes", action="store_true",
                       help="hide AES-NI/PCLMULQDQ (ARM: AES/PMULL) from OpenSSL, as on a CPU without them")
    speed.add_argument("--json", metavar="FILE", help="also write every measurement with raw "
                       "samples (saved after every complete round; '-': standard output at "
                       "the end, the table then on stderr)")
    speed.add_argument("--force", action="store_true",
                       help="replace an existing --json file (without it, an existing file is kept)")
    speed.add_argument("--yes", action="store_true",
                       help="do not ask before a large --payload (over 64 MiB); without a "
                            "terminal to ask, a large payload needs it")
    speed.add_argument("--backend", metavar="NAME[,NAME]|all",
                       help="the library or libraries to measure, one column each "
                            "(default openssl; all: every available one; see `pycipherbench backends`)")
    SETTINGS["threads"].add_to(speed, default=SETTINGS["threads"].default)
    add_processes_option(speed)
    speed.set_defaults(func=cmd_speed)
    bk = sub.add_parser(
        "backends", help="the crypto libraries this build and this Python have",
        description="List every backend (OpenSSL, the C libraries compiled in, the Python "
                    "libraries installed): version, hardware AES, transformations; and what "
                    "adds the missing ones.")
    bk.add_argument("-v", "--verbose", action="store_true", help="list each one's transformations")
    bk.set_defaults(func=cmd_backends)
    _add_sweep_commands(sub)
    add_machine_command(sub)
    return parser


# -- issue 27: worker processes and the machine check (kept local for the merge) ------------

def add_processes_option(parser: argparse.ArgumentParser) -> None:
    """``--processes N``: the fresh worker processes the rounds run in."""
    SETTINGS["processes"].add_to(parser)


def add_machine_command(sub: Any) -> None:
    mc = sub.add_parser(
        "machine", help="this machine's fingerprint; --check: what makes its figures move",
        description="Print the machine fingerprint recorded with every result. --check reads "
                    "(never changes) what makes timings noisy: load, CPU frequency governor, "
                    "boost/turbo, busy SMT siblings, transparent huge pages, ASLR, isolated "
                    "CPUs, thermal throttling; each with its effect and the command that fixes it.")
    mc.add_argument("--check", action="store_true", help="check what makes figures move")
    mc.set_defaults(func=cmd_machine)


def cmd_machine(args: argparse.Namespace) -> int:
    from ._machine import check_machine, format_checks

    if not args.check:
        print(json.dumps(machine(), indent=2))
        return 0
    from ._levels import check as check_levels

    checks = [*check_machine(), check_levels()]
    print(format_checks(checks))
    return 0


def _show_warning(message: Any, category: Any, filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """Warnings as the CLI's own lines on stderr (no file name and line of our code)."""
    print(f"# WARNING: {message}", file=file or sys.stderr)


def _json_destination(args: argparse.Namespace) -> str | None:
    """Where the command writes its JSON (None: nowhere); store inspect prints its own."""
    if args.command == "sweep":
        return str(args.out)
    if args.command == "store" and args.action:
        return None
    return getattr(args, "json", None)


def main(argv: list[str] | None = None) -> int:
    """The command line: its exit status (0; 2 a usage or input error; 130 Ctrl-C, 143
    SIGTERM, 129 SIGHUP, each after keeping the complete rounds)."""
    import contextlib

    from ._interrupt import TerminateAsInterrupt

    warnings.showwarning = _show_warning
    parser = build_parser()
    given = sys.argv[1:] if argv is None else list(argv)
    if given[:2] == ["store", "inspect"]:  # its own usage and --help
        args = inspect_parser().parse_args(given[2:])
        args.command, args.action, args.func = "store", ["inspect", args.file], cmd_store_inspect
    else:
        args = parser.parse_args(given)
    if args.command is None:  # bare pycipherbench: what it does and its commands
        parser.print_help()
        return 0
    args.stdout = sys.stdout
    # --json - / --out -: standard output holds the JSON only, so the tables go to stderr
    quiet = (contextlib.redirect_stdout(sys.stderr) if _json_destination(args) == STDOUT
             else contextlib.nullcontext())
    with TerminateAsInterrupt() as signals, quiet, claims_released():
        try:
            rc = int(args.func(args))
        except KeyboardInterrupt:  # where nothing was left to keep: one line, no traceback
            print(f"# Interrupted ({signals.words()}).", file=sys.stderr)
            rc = 130
        except BrokenPipeError:  # `pycipherbench ... | head`: the reader left; no traceback
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            rc = 141  # 128 + SIGPIPE, as the shell reports it
    return signals.status(rc)


if __name__ == "__main__":
    sys.exit(main())

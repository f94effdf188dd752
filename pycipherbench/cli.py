"""The ``pycipherbench`` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ._machine import machine
from .experiments import (QUICK_NOTE, SPEED_GROUPS, SPEED_TIMING, STORE_TIMING, format_speed,
                          format_store, run_speed, store_points, warning_lines)

# Moved to .experiments; still importable from here (notebooks/encrypted_store.ipynb does).
from .experiments import (  # noqa: F401
    APPLY_MIN_TIME_SCALE, RATIO_AES, RATIO_TEAS, STORE_OPS)


def cmd_speed(args: argparse.Namespace) -> int:
    payload = args.payload if args.payload is not None else (1 << 20 if args.quick else 10 << 20)
    if payload <= 0 or payload % 16:
        sys.exit("error: --payload must be a positive multiple of 16 bytes (the NoPadding rows need whole blocks)")
    if not _payload_ok(payload, args.yes):
        return 1
    results, run = run_speed(payload, args.quick, hw_aes=not args.no_hw_aes)
    if not results:
        print("# Interrupted (Ctrl-C) before the first round finished: no figures.", file=sys.stderr)
        return 130
    print(format_speed(results, payload))
    if args.quick:
        print(f"# {QUICK_NOTE}")
    if run.interrupted:
        print(f"# Interrupted (Ctrl-C) after {run.rounds} complete rounds: the figures above "
              "are from those rounds only.")
    if args.json:
        doc = {"machine": machine(), "payload": payload, "hw_aes": not args.no_hw_aes,
               "results": [m.to_dict() for m in results]}
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
        print(f"# Raw samples written to {os.fspath(args.json)}")
    return 130 if run.interrupted else 0


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
    if yes or not sys.stdin.isatty():
        return True
    return input("Go on? [y/N] ").strip().lower() in ("y", "yes")


# -- sweep / compare / plot / store

def parse_value(text: str, none: bool = True) -> Any:
    """A --param value: bool (true/false/yes/no/on/off), None (none; with ``none=False``
    the text, as in ``key_encryption=none``), int, float, else the text."""
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


def parse_params(specs: list[str], none: bool = True) -> dict[str, Any]:
    """['payload=16,256', 'op=enc'] -> {'payload': [16, 256], 'op': 'enc'} (one value: a scalar).
    ``none``: "none" means None (a sweep's default), else it is the text (a value to match)."""
    grid: dict[str, Any] = {}
    for spec in specs:
        name, sep, values = spec.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name or not values:
            raise ValueError(f"--param {spec!r}: expected NAME=VALUE[,VALUE...]")
        if name in grid:
            raise ValueError(f"--param {name} given twice; list every value in one --param")
        parsed = [parse_value(v, none) for v in values.split(",")]
        grid[name] = parsed if len(parsed) > 1 else parsed[0]
    return grid


def _fail(command: str, message: object) -> int:
    print(f"pycipherbench {command}: error: {message}", file=sys.stderr)
    return 2


def cmd_sweep(args: argparse.Namespace) -> int:
    from .sweep import sweep

    try:
        grid = parse_params(args.param or [])
        for name in ("repeats", "min_time", "warmup"):
            if getattr(args, name) is not None:
                grid[name] = getattr(args, name)
        results = sweep(args.target, seed=args.seed, out=args.out, resume=args.resume,
                        skip_invalid=args.skip_invalid, progress=not args.no_progress, **grid)
    except (ValueError, TypeError) as e:
        return _fail("sweep", e)
    print(results.table())
    for line in warning_lines(results.measurements):
        print(line)
    state = "" if results.complete else " (interrupted: incomplete; --resume measures it again)"
    print(f"# {len(results)} points written to {os.fspath(args.out)}{state}")
    return 0 if results.complete else 130


def cmd_compare(args: argparse.Namespace) -> int:
    from .results import load_results

    try:
        baseline, new = load_results(args.baseline), load_results(args.new)
        comparison = new.compare(baseline, alpha=args.alpha, ignore=args.ignore or (),
                                 allow_different_machines=args.allow_different_machines)
    except (OSError, ValueError) as e:
        return _fail("compare", e)
    print(f"# {os.fspath(args.new)} vs the baseline {os.fspath(args.baseline)}: "
          f"{len(comparison)} matched points")
    print(comparison.table())
    return 0


def cmd_ratio(args: argparse.Namespace) -> int:
    from .results import load_results

    try:
        results = load_results(args.results)
        num, den = parse_params(args.num or [], none=False), parse_params(args.den or [], none=False)
        found = results.ratio(num, den)
    except (OSError, ValueError, TypeError) as e:
        return _fail("ratio", e)
    ratios = found if isinstance(found, list) else [found]
    side = lambda d: ", ".join(f"{k}={v}" for k, v in d.items())  # noqa: E731
    print(f"# {side(num)} / {side(den)}: ns per operation, paired by round "
          f"(> 1: the first is slower), [95% interval]")
    for r in ratios:
        where = f"  ({side(r.params)})" if r.params else ""
        print(f"{r}{where}")
    return 0


def cmd_plot(args: argparse.Namespace) -> int:
    from .results import load_results

    try:
        from . import plot

        results = load_results(args.results)
        kind = plot.choose_plot(results) if args.kind == "auto" else args.kind
        fig = plot.PLOTS[kind](results)
        fig.savefig(args.output, dpi=args.dpi)
    except (OSError, ValueError, ImportError) as e:
        return _fail("plot", e)
    print(f"# {kind} plot of {os.fspath(args.results)} written to {os.fspath(args.output)}")
    return 0


def cmd_store_inspect(args: argparse.Namespace) -> int:
    """pycipherbench store inspect FILE: what a store file holds, without any key."""
    import json

    from . import store

    if len(args.action) != 2 or args.action[0] != "inspect":
        return _fail("store", f"unknown arguments {' '.join(args.action)!r} "
                              "(usage: pycipherbench store inspect FILE [--json OUT])")
    try:
        info = store.inspect(args.action[1])
    except (ValueError, OSError) as e:
        return _fail("store inspect", e)
    print(info.describe())
    if args.json:
        text = json.dumps(info.to_dict(), indent=2)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w", encoding="utf-8") as f:
                f.write(text + "\n")
    return 0


def cmd_store(args: argparse.Namespace) -> int:
    from .sweep import run_points

    if args.action:
        return cmd_store_inspect(args)

    n_keys = args.n_keys if args.n_keys is not None else (100 if args.quick else 1000)
    timing: dict[str, Any] = dict(STORE_TIMING[args.quick])
    if args.directory is not None:
        timing["directory"] = args.directory
    try:
        points = store_points(n_keys, hw_aes=not args.no_hw_aes, min_time=timing["min_time"])
        results = run_points("store", points, timing, seed=args.seed, progress=not args.no_progress)
    except (ValueError, TypeError, OSError) as e:
        return _fail("store", e)
    if not len(results):
        print("# Interrupted (Ctrl-C) before the first round finished: no figures.", file=sys.stderr)
        return 130
    print(format_store(results, n_keys))
    if args.quick:
        print(f"# {QUICK_NOTE}")
    if not results.complete:
        print(f"# Interrupted (Ctrl-C) after {results.measurements[0].n_rounds} complete rounds: "
              "the figures above are from those rounds only.")
    if args.json:
        results.save(args.json)
        print(f"# Raw samples written to {os.fspath(args.json)}")
    return 0 if results.complete else 130


def _add_sweep_commands(sub: Any) -> None:
    from .plot import PLOTS

    sw = sub.add_parser(
        "sweep", help="measure every point of a parameter grid; save the results as JSON",
        description="Sweep measure() (--target cipher) or store.bench() (--target store) "
                    "parameters. Each --param NAME=V1,V2,... is swept (cartesian product); "
                    "values that look like ints, floats or booleans are parsed as such. "
                    "Parameters that do not apply to a point (rounds for AES) are dropped.")
    sw.add_argument("--param", action="append", metavar="NAME=V1,V2",
                    help="a parameter and its values (repeat for more parameters)")
    sw.add_argument("--target", choices=("cipher", "store"), default="cipher")
    sw.add_argument("--repeats", type=int,
                    help="rounds (default 10): every point takes one sample per round")
    sw.add_argument("--min-time", type=float, help="seconds per sample at least")
    sw.add_argument("--warmup", type=float, help="seconds of warm-up per point")
    sw.add_argument("--seed", type=int, help="seed of the shuffled run order")
    sw.add_argument("--out", required=True, help="results file (JSON, saved after every point)")
    sw.add_argument("--resume", action="store_true",
                    help="keep the points --out already holds and measure the rest")
    sw.add_argument("--skip-invalid", action="store_true",
                    help="skip points the target rejects instead of failing")
    sw.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    sw.set_defaults(func=cmd_sweep)

    cmp = sub.add_parser(
        "compare", help="per-point speedups and Mann-Whitney verdicts of two results files",
        description="Match the points of NEW with those of BASELINE on their parameters; print "
                    "the medians, speedup (baseline/new time) and a two-sided Mann-Whitney U "
                    "verdict on the raw samples. Refuses results from different machines.")
    cmp.add_argument("baseline", help="results file (JSON) to compare against")
    cmp.add_argument("new", help="results file (JSON) to compare")
    cmp.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    cmp.add_argument("--ignore", action="append", metavar="PARAM",
                     help="a parameter to leave out of the matching (e.g. hw_aes)")
    cmp.add_argument("--allow-different-machines", action="store_true",
                     help="compare even if CPU model, flags or OpenSSL differ")
    cmp.set_defaults(func=cmd_compare)

    ra = sub.add_parser(
        "ratio", help="paired ratio of two kinds of points of one sweep, with a 95% interval",
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
    pl.add_argument("--kind", choices=("auto", *PLOTS), default="auto")
    pl.add_argument("--dpi", type=int, default=150)
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
    st.add_argument("--n-keys", type=int, help="entries for the per-op table (default 1000; 100 with --quick)")
    st.add_argument("--no-hw-aes", action="store_true", help="hide AES-NI/PCLMULQDQ from OpenSSL")
    st.add_argument("--directory", help="where the stores' files go (fsync costs depend on it)")
    st.add_argument("--seed", type=int, help="seed of the shuffled run order")
    st.add_argument("--json", metavar="FILE", help="also save the results (raw samples); with "
                    "inspect: the description as JSON ('-': standard output)")
    st.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    st.set_defaults(func=cmd_store)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pycipherbench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    speed = sub.add_parser(
        "speed", help="the seed article's cipher speed table, measured on this machine",
        description="Encrypt and decrypt a payload with every transformation of the seed "
                    "article's table; print KB/ms per line, the TEA:AES ratio and the machine.")
    speed.add_argument("--payload", type=int, default=None,
                       help="bytes per message (default 10 MiB; 1 MiB with --quick)")
    speed.add_argument("--quick", action="store_true",
                       help="3 short rounds: done in well under a minute, rough numbers")
    speed.add_argument("--no-hw-aes", action="store_true",
                       help="hide AES-NI/PCLMULQDQ (ARM: AES/PMULL) from OpenSSL, as on a CPU without them")
    speed.add_argument("--json", metavar="FILE", help="also write every measurement with raw samples")
    speed.add_argument("--yes", action="store_true",
                       help="do not ask before a large --payload (over 64 MiB)")
    speed.set_defaults(func=cmd_speed)
    _add_sweep_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())

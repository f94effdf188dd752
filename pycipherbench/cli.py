"""The ``pycipherbench`` command line."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

from ._machine import machine
from ._measure import Measurement, Op, _ns, measure

# The seed article's table, in its order (003: "Speed Test of 10MB Data Enc/Decryption").
SPEED_GROUPS: list[tuple[str, list[str]]] = [
    ("AES", ["AES/CBC/PKCS5Padding", "AES/CBC/NoPadding", "AES/ECB/PKCS5Padding",
             "AES/ECB/NoPadding", "AES/GCM/NoPadding"]),
    ("DES", ["DES/CBC/PKCS5Padding", "DES/CBC/NoPadding", "DES/ECB/PKCS5Padding",
             "DES/ECB/NoPadding"]),
    ("3DES", ["DESede/CBC/PKCS5Padding", "DESede/CBC/NoPadding", "DESede/ECB/PKCS5Padding",
              "DESede/ECB/NoPadding"]),
    # Our vectorized TEA, and the one-block-at-a-time reference code like the seed's port.
    ("TEA", ["TEA/ECB/NoPadding", "TEA-ref/ECB/NoPadding"]),
]
# The seed's ratio compared TEA with AES/ECB/PKCS5Padding encryption ("TEA:AES=16:990").
RATIO_AES = "AES/ECB/PKCS5Padding"
RATIO_TEAS = ("TEA-ref/ECB/NoPadding", "TEA/ECB/NoPadding")
HIDDEN_MASKED_FLAG = "--hw-masked-child"


class _Progress:
    """A status line on stderr, shown only once a run has taken a few seconds."""

    def __init__(self, total: int, delay: float = 2.0) -> None:
        self.total, self.delay, self.start = total, delay, time.monotonic()
        self.tty = sys.stderr.isatty()
        self.shown = False

    def update(self, done: int, label: str) -> None:
        elapsed = time.monotonic() - self.start
        if elapsed < self.delay:
            return
        eta = elapsed / done * (self.total - done) if done else float("nan")
        line = f"[{done}/{self.total}] {label}  elapsed {elapsed:.0f} s, ETA {eta:.0f} s"
        if self.tty:
            sys.stderr.write("\r\x1b[2K" + line)
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown and self.tty:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()


def _payload_label(n: int) -> str:
    return f"{n >> 20}MB" if n % (1 << 20) == 0 else f"{n}B"


def run_speed(payload: int, quick: bool, hw_aes: bool) -> list[Measurement]:
    names = [n for _, group in SPEED_GROUPS for n in group]
    jobs: list[tuple[str, Op]] = [(n, op) for n in names for op in ("enc", "dec")]
    timing: dict[str, Any] = (
        dict(min_time=0.01, repeats=3, warmup=0.0) if quick else dict(min_time=0.1, repeats=7)
    )
    progress = _Progress(len(jobs))
    results = []
    try:
        for i, (name, op) in enumerate(jobs):
            progress.update(i, f"{name} {op.upper()}")
            m = measure(name, op=op, payload=payload, **timing)
            if not hw_aes:  # measured in-process under a masked environment
                m = _mark_masked(m)
            results.append(m)
    finally:
        progress.close()
    return results


def _mark_masked(m: Measurement) -> Measurement:
    from dataclasses import replace

    from ._hwaes import masked_environment

    _, mask = masked_environment()
    return replace(m, hw_aes=False, hw_mask=mask)


def format_speed(results: list[Measurement], payload: int) -> str:
    by_key = {(m.transformation, m.op): m for m in results}
    lines = [f"# Speed Test of {_payload_label(payload)} Data Enc/Decryption #"]
    for title, group in SPEED_GROUPS:
        lines.append(f"# {title}:")
        for name in group:
            for op in ("enc", "dec"):
                m = by_key[(name, op)]
                lines.append(f"* [{name}] {op.upper()}: {m.kb_per_ms:.1f} KB/ms")
    aes = by_key[(RATIO_AES, "enc")]
    for tea_name in RATIO_TEAS:
        tea = by_key[(tea_name, "enc")]
        ratio = aes.kb_per_ms / tea.kb_per_ms
        verdict = f"AES is {ratio:.1f}x faster" if ratio >= 1 else f"TEA is {1 / ratio:.1f}x faster"
        lines.append(
            f"# TEA:AES = {tea.kb_per_ms:.1f}:{aes.kb_per_ms:.1f} -> {verdict} "
            f"({RATIO_AES} vs {tea_name}, ENC, {tea.rounds} cycles)"
        )
    fp = results[0].machine
    hw = "on" if results[0].hw_aes else f"OFF ({results[0].hw_mask})"
    lines += [
        f"# Machine: {fp['cpu_model']}, {fp['cores']} cores, {fp['arch']}; "
        f"crypto flags: {' '.join(fp['cpu_flags']) or 'none'}",
        f"# {fp['openssl_version']}; compiled by {fp['compiler']}; TEA kernel {fp['tea_impl']}; "
        f"Python {fp['python']}; pycipherbench {fp['package_version']}",
        f"# Hardware AES: {hw}. Median of {results[0].repeats} samples, message scope "
        f"(each operation one whole {_payload_label(payload)} message, padding and tag included).",
    ]
    return "\n".join(lines)


def cmd_speed(args: argparse.Namespace) -> int:
    payload = args.payload if args.payload is not None else (1 << 20 if args.quick else 10 << 20)
    if payload <= 0 or payload % 16:
        sys.exit("error: --payload must be a positive multiple of 16 bytes (the NoPadding rows need whole blocks)")
    hw_masked = getattr(args, "hw_masked_child", False)
    if args.no_hw_aes and not hw_masked:
        # OpenSSL reads its CPU mask at start-up: rerun this command in a masked child.
        from ._hwaes import masked_environment, python_command

        env, _ = masked_environment()
        argv = python_command("pycipherbench.cli", *sys.argv[1:], HIDDEN_MASKED_FLAG)
        return subprocess.run(argv, env=env, check=False).returncode
    results = run_speed(payload, args.quick, hw_aes=not hw_masked)
    print(format_speed(results, payload))
    if args.json:
        doc = {"machine": machine(), "payload": payload, "hw_aes": not hw_masked,
               "results": [m.to_dict() for m in results]}
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
        print(f"# Raw samples written to {os.fspath(args.json)}")
    return 0


# -- sweep / compare / plot / store

def parse_value(text: str) -> Any:
    """A --param value: bool (true/false/yes/no/on/off), None (none), int, float, else the text."""
    low = text.strip().lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low == "none":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip()


def parse_params(specs: list[str]) -> dict[str, Any]:
    """['payload=16,256', 'op=enc'] -> {'payload': [16, 256], 'op': 'enc'} (one value: a scalar)."""
    grid: dict[str, Any] = {}
    for spec in specs:
        name, sep, values = spec.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name or not values:
            raise ValueError(f"--param {spec!r}: expected NAME=VALUE[,VALUE...]")
        if name in grid:
            raise ValueError(f"--param {name} given twice; list every value in one --param")
        parsed = [parse_value(v) for v in values.split(",")]
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
    state = "" if results.complete else " (interrupted: incomplete; --resume continues)"
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


STORE_OPS = ("put", "get", "contains", "get_missing")


# store.bench("apply") calibrates its operation count on the time the caller is blocked,
# but every operation also waits for its durable write (an fsync, ~100x longer): scale
# min_time down so an apply sample lasts about as long as the others.
APPLY_MIN_TIME_SCALE = 0.01


def store_points(n_keys: int, hw_aes: bool = True,
                 min_time: float | None = None) -> list[dict[str, Any]]:
    """The points of the seed-000 experiments (see cmd_store), deduplicated."""
    from .results import point_key
    from .sweep import expand_grid

    hw: dict[str, Any] = {} if hw_aes else {"hw_aes": False}
    both = [False, True]
    grids: list[dict[str, Any]] = [
        dict(workload=list(STORE_OPS), encrypted=both, faithful=False, n_keys=n_keys),
        dict(workload="commit", batch=100, n_keys=100, encrypted=both, faithful=both),
        dict(workload="get", n_keys=100, encrypted=both, faithful=both),
        dict(workload=["commit", "apply"], batch=1, n_keys=100, encrypted=both, faithful=False),
        dict(workload=["open_cold", "open_warm"], n_keys=100, encrypted=both, faithful=False),
    ]
    points: dict[tuple[Any, ...], dict[str, Any]] = {}
    for grid in grids:
        for p in expand_grid("store", **grid, **hw):
            if p["workload"] == "apply" and min_time is not None:
                p["min_time"] = min_time * APPLY_MIN_TIME_SCALE
            points.setdefault(point_key(p), p)
    return list(points.values())


def format_store(results: Any, n_keys: int) -> str:
    from .results import format_table

    def med(**params: Any) -> float:
        return float(results.one(**params).median)

    lines = ["# Encrypted store vs plain SharedPreferences (the seed-000 experiments), this machine",
             f"## Per operation, store of {n_keys} entries (32-character names, 32-character string values)"]
    rows = []
    for op in STORE_OPS:
        plain = med(workload=op, encrypted=False, n_keys=n_keys)
        enc = med(workload=op, encrypted=True, faithful=False, n_keys=n_keys)
        rows.append([op, _ns(plain), _ns(enc), f"{enc / plain:.1f}x"])
    lines += [format_table(["operation", "plain", "encrypted", "encrypted/plain"], rows), ""]

    lines.append("## The 100-pair scenario: 100 puts + one commit, then 100 gets (store of 100 entries)")
    rows = []
    for step, kw, times in (("100 puts + commit", dict(workload="commit", batch=100), 1),
                            ("100 gets", dict(workload="get", n_keys=100), 100)):
        plain = med(**kw, encrypted=False) * times
        lean = med(**kw, encrypted=True, faithful=False) * times
        faithful = med(**kw, encrypted=True, faithful=True) * times
        rows.append([step, _ns(plain), _ns(lean), _ns(faithful), f"{lean / plain:.1f}x",
                     f"{faithful / plain:.1f}x"])
    lines += [format_table(["step", "plain", "lean", "faithful", "lean/plain", "faithful/plain"],
                           rows), ""]

    lines.append("## Commit vs apply: one put per edit (store of 100 entries)")
    rows = []
    for enc in (False, True):
        commit = med(workload="commit", batch=1, encrypted=enc)
        apply = results.one(workload="apply", encrypted=enc)
        rows.append(["encrypted" if enc else "plain", _ns(commit), _ns(apply.median),
                     _ns(apply.extra.get("durable_median", float("nan")))])
    lines += [format_table(["store", "commit (blocked until durable)", "apply (caller blocked)",
                            "apply (until durable)"], rows), ""]

    lines.append("## Open: cold (first launch: keys generated) vs warm (load 100 entries)")
    rows = []
    for enc in (False, True):
        cold = med(workload="open_cold", encrypted=enc)
        warm = med(workload="open_warm", encrypted=enc, n_keys=100)
        rows.append(["encrypted" if enc else "plain", _ns(cold), _ns(warm)])
    lines += [format_table(["store", "cold", "warm"], rows), ""]

    m = results.measurements[0]
    fp = results.machine
    hw = "on" if all(x.hw_aes for x in results) else "OFF for the encrypted store"
    lines += [
        f"# Machine: {fp['cpu_model']}, {fp['cores']} cores, {fp['arch']}; "
        f"crypto flags: {' '.join(fp['cpu_flags']) or 'none'}; {fp['openssl_version']}",
        f"# Hardware AES: {hw}. Median of {m.repeats} samples. lean: this store's encrypted "
        "mode; faithful: ESP's per-call work repeated (fresh key schedules, S2V from scratch, "
        "a CSPRNG call per nonce). Same file format.",
    ]
    return "\n".join(lines)


def cmd_store(args: argparse.Namespace) -> int:
    from .sweep import run_points

    n_keys = args.n_keys if args.n_keys is not None else (100 if args.quick else 1000)
    timing: dict[str, Any] = (dict(min_time=0.005, repeats=3, warmup=0.0) if args.quick
                              else dict(min_time=0.05, repeats=7))
    if args.directory is not None:
        timing["directory"] = args.directory
    try:
        points = store_points(n_keys, hw_aes=not args.no_hw_aes, min_time=timing["min_time"])
        results = run_points("store", points, timing, seed=args.seed, progress=not args.no_progress)
    except (ValueError, TypeError, OSError) as e:
        return _fail("store", e)
    if not results.complete:
        print("# interrupted", file=sys.stderr)
        return 130
    print(format_store(results, n_keys))
    if args.json:
        results.save(args.json)
        print(f"# Raw samples written to {os.fspath(args.json)}")
    return 0


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
    sw.add_argument("--repeats", type=int, help="samples per point")
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

    pl = sub.add_parser("plot", help="plot a results file",
                        description="Draw the plot that fits the swept parameters (or --kind).")
    pl.add_argument("results", help="results file (JSON)")
    pl.add_argument("-o", "--output", required=True, help="image file (.png, .svg, .pdf)")
    pl.add_argument("--kind", choices=("auto", *PLOTS), default="auto")
    pl.add_argument("--dpi", type=int, default=150)
    pl.set_defaults(func=cmd_plot)

    st = sub.add_parser(
        "store", help="the seed's encrypted-store experiments as a table",
        description="Per-op latency plain vs encrypted (put/get/contains/get_missing), the "
                    "100-pair scenario (plain, lean, faithful), commit vs apply, cold vs warm open.")
    st.add_argument("--quick", action="store_true", help="short samples, 100-entry stores")
    st.add_argument("--n-keys", type=int, help="entries for the per-op table (default 1000; 100 with --quick)")
    st.add_argument("--no-hw-aes", action="store_true", help="hide AES-NI/PCLMULQDQ from OpenSSL")
    st.add_argument("--directory", help="where the stores' files go (fsync costs depend on it)")
    st.add_argument("--seed", type=int, help="seed of the shuffled run order")
    st.add_argument("--json", metavar="FILE", help="also save the results (raw samples)")
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
    speed.add_argument("--quick", action="store_true", help="short samples: done in well under a minute")
    speed.add_argument("--no-hw-aes", action="store_true",
                       help="hide AES-NI/PCLMULQDQ (ARM: AES/PMULL) from OpenSSL, as on a CPU without them")
    speed.add_argument("--json", metavar="FILE", help="also write every measurement with raw samples")
    speed.add_argument(HIDDEN_MASKED_FLAG, action="store_true", help=argparse.SUPPRESS)
    speed.set_defaults(func=cmd_speed)
    _add_sweep_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())

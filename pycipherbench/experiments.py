"""The seed articles' experiments, as run by ``pycipherbench speed`` and ``pycipherbench store``.

``speed``: article 003's table, every transformation encrypting and decrypting
one large message, and its TEA:AES ratio. ``store``: article 000's comparison
of the encrypted store with plain SharedPreferences (per-operation latency,
the 100-pair scenario, commit vs apply, cold vs warm open). Each experiment
has its points (what to measure), a runner and a text report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ._interrupt import interrupt_words
from ._format import format_ns, format_size_compact, format_table
from ._measure import Measurement, Op, plan
from ._params import point_key
from ._record import Record
from ._rounds import DEFAULT_ROUNDS, RunInfo, Workers, resolve_processes, run_plans
from .results import Results
from .stats import paired_ratio, summarize_warnings
from .store_bench import StoreMeasurement
from .sweep import expand_grid

# -- speed: article 003, "Speed Test of 10MB Data Enc/Decryption"

#: The seed article's table, in its order.
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
#: Timing of every speed measurement: quick (rough: says so), and the default.
SPEED_TIMING: dict[bool, dict[str, Any]] = {
    True: dict(min_time=0.01, repeats=3, warmup=0.0),
    False: dict(min_time=0.1, repeats=DEFAULT_ROUNDS),
}
QUICK_NOTE = ("--quick: 3 short rounds; the intervals are rough (3 rounds cannot reach 95%) and "
              "warnings are likely: rerun without --quick for numbers to act on")


def run_speed(payload: int, quick: bool, hw_aes: bool, progress: bool = True,
              processes: int | None = None,
              on_round: Callable[[list[Measurement], RunInfo], None] | None = None,
              ) -> tuple[list[Measurement], RunInfo]:
    """Every transformation of :data:`SPEED_GROUPS`, encrypting and decrypting ``payload``
    bytes, in interleaved rounds (so the TEA:AES ratios pair round by round), in
    ``processes`` fresh worker processes (default: see :func:`~._rounds.resolve_processes`).

    Returns the measurements (if Ctrl-C came before the first round ended, the rows
    sampled so far with one sample each, ``RunInfo.partial``; with fewer rounds if it
    came later: ``RunInfo.interrupted``) and how the run went. ``on_round``: called with
    the measurements so far after each complete round but the last (speed --json saves them).
    """
    names = [n for _, group in SPEED_GROUPS for n in group]
    jobs: list[tuple[str, Op]] = [(n, op) for n in names for op in ("enc", "dec")]
    timing = SPEED_TIMING[quick]
    with Workers(resolve_processes(processes, timing["repeats"])) as workers:
        plans = [plan(name, op=op, payload=payload, hw_aes=hw_aes, workers=workers, **timing)
                 for name, op in jobs]
        try:
            records, run = run_plans(plans, timing["repeats"], progress=progress, desc="speed",
                                     workers=workers, on_round=on_round)
        except KeyboardInterrupt:  # while preparing: nothing measured
            return [], RunInfo(rounds=0, interrupted=True, loadavg=None, seed=0)
    if run.partial:  # Ctrl-C in the first round: the rows it sampled, one sample each
        records = [p.build(p.point.data, run) for p in plans if p.point.data.ns]
    return records, run


def format_speed(results: list[Measurement], payload: int) -> str:
    """The seed's table with this machine's KB/ms, the TEA:AES ratios and the machine."""
    by_key = {(m.transformation, m.op): m for m in results}
    lines = [f"# Speed Test of {format_size_compact(payload)} Data Enc/Decryption #"]
    for title, group in SPEED_GROUPS:
        lines.append(f"# {title}:")
        for name in group:
            for op in ("enc", "dec"):
                m = by_key.get((name, op))
                if m is None:  # Ctrl-C before this row's first sample
                    lines.append(f"* [{name}] {op.upper()}: not sampled (interrupted)")
                    continue
                lines.append(f"* [{name}] {op.upper()}: {m.kb_per_ms:.1f} KB/ms "
                             + _kb_per_ms_interval(m, payload))
    aes = by_key.get((RATIO_AES, "enc"))
    for tea_name in RATIO_TEAS:
        tea = by_key.get((tea_name, "enc"))
        if aes is None or tea is None or min(aes.n_rounds, tea.n_rounds) < 2:
            continue  # no pairs: single samples say nothing about a ratio's interval
        # TEA's time per AES time: AES's speedup
        r = paired_ratio(tea.samples, aes.samples, process=aes.process)
        verdict = (f"AES is {r.estimate:.1f}x faster [{r.low:.1f}, {r.high:.1f}]" if r.estimate >= 1
                   else f"TEA is {1 / r.estimate:.1f}x faster [{1 / r.high:.1f}, {1 / r.low:.1f}]")
        quotient = tea.kb_per_ms / aes.kb_per_ms
        lines.append(
            f"# TEA:AES = {tea.kb_per_ms:.1f}:{aes.kb_per_ms:.1f} KB/ms, the rows' medians "
            f"(quotient {max(quotient, 1 / quotient):.1f}x) -> {verdict}, the paired median "
            f"ratio: the median of the per-round time ratios, [{r.level:.0%} interval] "
            f"({RATIO_AES} vs {tea_name}, ENC, {tea.rounds} cycles)")
    if any(line.startswith("# TEA:AES") for line in lines):
        lines.append("# The paired ratio pairs each round's two samples (a slow round slows "
                     "both); the quotient of the medians takes them from different rounds, so "
                     "the two statistics need not agree.")
    fp = results[0].machine
    hw = "on" if results[0].hw_aes else f"OFF ({results[0].hw_mask})"
    lines += [
        _machine_line(fp),
        f"# {fp['openssl_version']}; compiled by {fp['compiler']}; TEA kernel {fp['tea_impl']}; "
        f"Python {fp['python']}; pycipherbench {fp['package_version']}",
        f"# Hardware AES: {hw}. {_rounds_words(results)}; message scope (each operation one "
        f"whole {format_size_compact(payload)} message, padding and tag included).",
    ]
    lines += warning_lines(results)
    return "\n".join(lines)


def _interval_of(m: Record) -> str:
    """What a table's intervals are, from its rounds and processes (:attr:`Record.ci_words`)."""
    return m.ci_words


def _kb_per_ms_interval(m: Measurement, payload: int) -> str:
    """A row's interval in KB/ms, or why it has none."""
    if m.n_rounds < 2:
        return "(single sample, no interval)"
    low, high = (payload / 1024.0 / (ns / 1e6) for ns in reversed(m.ci))
    return f"[{low:.1f}, {high:.1f}]"


def _rounds_words(results: Sequence[Record]) -> str:
    """How the table's rows were measured, from their rounds: the interval's coverage
    when it falls short of 95%, and whether it covers worker processes or this process
    only (:attr:`~._record.Record.ci_words`)."""
    n = results[0].n_rounds
    if n < 2:
        return (f"Single samples ({interrupt_words()} came before the first round finished): "
                "no interval, no ratio")
    return (f"Median of {n} rounds (every row sampled once per round, rows interleaved), "
            f"[{results[0].ci_words}]")


def warning_lines(records: Sequence[Record], limit: int = 6, noun: str = "rows",
                  where: str | None = None) -> list[str]:
    """'# WARNING ...' lines: each distinct warning once, with how many rows carry it
    (what :attr:`Results.warnings` says, for a plain list of records too); ``noun``: what
    one record is in the table printed ("cells" where a row holds several); ``where``:
    the flag of the file that holds the rest (None: say that --json saves them)."""
    found = summarize_warnings([m.warnings for m in records], noun=noun)
    out = [f"# WARNING {w}" for w in found[:limit]]
    if len(found) > limit:
        out.append(f"# ... and {len(found) - limit} more distinct warning{'' if len(found) - limit == 1 else 's'} "
                   + (f"(in the {where} file)" if where else "(--json saves every one)"))
    return out


def machine_line(fp: dict[str, Any]) -> str:
    """'# Machine: CPU, cores, arch; crypto flags' of a machine fingerprint."""
    return _machine_line(fp)


def _machine_line(fp: dict[str, Any]) -> str:
    return (f"# Machine: {fp['cpu_model']}, {fp['cores']} cores, {fp['arch']}; "
            f"crypto flags: {' '.join(fp['cpu_flags']) or 'none'}")


# -- store: article 000, the encrypted store vs plain SharedPreferences

STORE_OPS = ("put", "get", "contains", "get_missing")
# store.bench("apply") calibrates its operation count on the time the caller is blocked,
# but every operation also waits for its durable write (an fsync, ~100x longer): scale
# min_time down so an apply sample lasts about as long as the others.
APPLY_MIN_TIME_SCALE = 0.01
#: Timing of every store measurement: quick, and the default.
STORE_TIMING: dict[bool, dict[str, Any]] = {
    True: dict(min_time=0.005, repeats=3, warmup=0.0),
    False: dict(min_time=0.05, repeats=DEFAULT_ROUNDS),
}


def store_points(n_keys: int, hw_aes: bool = True,
                 min_time: float | None = None) -> list[dict[str, Any]]:
    """The points of the seed-000 experiments (see :func:`format_store`), deduplicated."""
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


def format_store(results: Results, n_keys: int) -> str:
    """The seed-000 tables from the results of :func:`store_points`."""
    sections = [
        _store_per_op(results, n_keys), _store_pairs(results), _store_commit_apply(results),
        _store_open(results),
    ]
    m = results.measurements[0]
    hw = "on" if all(x.hw_aes for x in results) else "OFF for the encrypted store"
    sections.append("\n".join([
        f"{_machine_line(results.machine)}; {results.machine['openssl_version']}",
        f"# Hardware AES: {hw}. Median of {m.n_rounds} rounds (a new store instance per round, "
        f"every point sampled once per round, points interleaved); ratios [{_interval_of(m)}] "
        "pair the rounds. lean: this store's encrypted "
        "mode; faithful: ESP's per-call work repeated (fresh key schedules, S2V from scratch, "
        "a CSPRNG call per nonce). Same file format.",
    ]))
    warned = warning_lines(results.measurements)
    if warned:
        sections.append("\n".join(warned))
    return "\n\n".join(sections)


def _ratio(results: Results, num: dict[str, Any], den: dict[str, Any], **common: Any) -> str:
    """``num / den`` (ns per op) of two points that differ in the given parameters."""
    r = results.ratio({**num, **common}, {**den, **common})
    r = r if not isinstance(r, list) else r[0]
    return f"{r.estimate:.1f}x [{r.low:.1f}, {r.high:.1f}]"


def _median(results: Results, **params: Any) -> float:
    return results.one(**params).median


def _store_per_op(results: Results, n_keys: int) -> str:
    rows = []
    for op in STORE_OPS:
        plain = _median(results, workload=op, encrypted=False, n_keys=n_keys)
        enc = _median(results, workload=op, encrypted=True, faithful=False, n_keys=n_keys)
        ratio = _ratio(results, dict(encrypted=True, faithful=False), dict(encrypted=False),
                       workload=op, n_keys=n_keys)
        rows.append([op, format_ns(plain), format_ns(enc), ratio])
    return "\n".join([
        "# Encrypted store vs plain SharedPreferences (the seed article's experiments), this machine",
        f"## Per operation, store of {n_keys} entries (32-character names, 32-character string values)",
        format_table(["operation", "plain", "encrypted", "encrypted/plain"], rows)])


def _rank_note(step: str, ratios: dict[str, Any], durable: bool) -> str | None:
    """Which of a row's pairs of modes its ratios cannot rank (None: every pair is ranked),
    from their intervals: a paired ratio ranks its two modes when its interval excludes 1;
    the medians of a pair whose interval holds 1 do not order them, however far apart."""
    def g(x: float) -> str:
        return f"{x:.0f}" if x >= 100 else f"{x:.2g}"

    unranked = [f"{name} {g(r.estimate)}x [{g(r.low)}, {g(r.high)}]"
                for name, r in ratios.items() if r.low <= 1.0 <= r.high]
    if not unranked:
        return None
    noise = ("the durable writes (fsync) vary from round to round more than the modes differ"
             if durable else "the rounds vary more than the modes differ")
    return (f"# * {step}: cannot rank the modes of {', '.join(unranked)} (the interval holds "
            f"1): {noise}; more rounds or a quieter machine may tell them apart")


def _paired(results: Results, num: dict[str, Any], den: dict[str, Any], **common: Any) -> Any:
    r = results.ratio({**num, **common}, {**den, **common})
    return r if not isinstance(r, list) else r[0]


def _store_pairs(results: Results) -> str:
    rows, notes = [], []
    lean_kw, faithful_kw, plain_kw = (dict(encrypted=True, faithful=False),
                                      dict(encrypted=True, faithful=True), dict(encrypted=False))
    for step, kw, times in (("100 puts + commit", dict(workload="commit", batch=100), 1),
                            ("100 gets", dict(workload="get", n_keys=100), 100)):
        plain = _median(results, **kw, encrypted=False) * times
        lean = _median(results, **kw, encrypted=True, faithful=False) * times
        faithful = _median(results, **kw, encrypted=True, faithful=True) * times
        ratios = {"lean/plain": _paired(results, lean_kw, plain_kw, **kw),
                  "faithful/plain": _paired(results, faithful_kw, plain_kw, **kw),
                  "faithful/lean": _paired(results, {"faithful": True}, {"faithful": False},
                                           encrypted=True, **kw)}
        note = _rank_note(step, ratios, durable=kw["workload"] in ("commit", "apply"))
        notes += [note] if note else []
        rows.append([step + (" *" if note else ""), format_ns(plain), format_ns(lean),
                     format_ns(faithful),
                     *(f"{r.estimate:.1f}x [{r.low:.1f}, {r.high:.1f}]"
                       for r in (ratios["lean/plain"], ratios["faithful/plain"]))])
    return "\n".join([
        "## The 100-pair scenario: 100 puts + one commit, then 100 gets (store of 100 entries)",
        format_table(["step", "plain", "lean", "faithful", "lean/plain", "faithful/plain"], rows),
        *notes])


def _store_commit_apply(results: Results) -> str:
    rows = []
    for enc in (False, True):
        commit = _median(results, workload="commit", batch=1, encrypted=enc)
        apply = results.one(workload="apply", encrypted=enc)
        durable = apply.durable_median if isinstance(apply, StoreMeasurement) else None
        rows.append(["encrypted" if enc else "plain", format_ns(commit), format_ns(apply.median),
                     format_ns(float("nan") if durable is None else durable)])
    return "\n".join([
        "## Commit vs apply: one put per edit (store of 100 entries)",
        format_table(["store", "commit (blocked until durable)", "apply (caller blocked)",
                      "apply (until durable)"], rows)])


def _store_open(results: Results) -> str:
    rows = []
    for enc in (False, True):
        cold = _median(results, workload="open_cold", encrypted=enc)
        warm = _median(results, workload="open_warm", encrypted=enc, n_keys=100)
        rows.append(["encrypted" if enc else "plain", format_ns(cold), format_ns(warm)])
    return "\n".join([
        "## Open: cold (first launch: keys generated) vs warm (load 100 entries)",
        format_table(["store", "cold", "warm"], rows)])


# -- store designs: issue 19, "which design meets my start-up budget?"

#: The start-up cases of ``pycipherbench store --designs``: cold and warm, the article's
#: 20 configuration reads and its 100 pairs, and a start-up path that reads no secret.
DESIGN_CASES: list[dict[str, Any]] = [
    {"cold": c, "n_reads": n} for n in (20, 100) for c in (True, False)
] + [{"cold": c, "n_reads": 20, "sensitive_reads": 0.0} for c in (True, False)]


def run_store_designs(quick: bool, budget_ms: float, *, directory: str | None = None,
                      n_entries: int = 100, processes: int | None = None,
                      progress: bool = True) -> tuple[str, bool]:
    """Every design's start-up (:mod:`pycipherbench.designs`) in shared rounds, as the
    table and the budget sentences (computed from the run), and whether Ctrl-C (or
    SIGTERM/SIGHUP) cut the run; the text is empty if it came before the first round ended."""
    from . import designs, engines

    repeats = 3 if quick else DEFAULT_ROUNDS  # QUICK_NOTE's 3 rounds
    cases = DESIGN_CASES[:2] if quick else DESIGN_CASES
    recs, run = designs.run(cases=cases, repeats=repeats, min_time=0.0 if quick else 0.02,
                            processes=processes, progress=progress, directory=directory,
                            n_entries=n_entries)
    if not recs:
        return "", True
    lines = [designs.format_designs(recs, budget_ms=budget_ms), ""]
    dropped = [d for d, (engine, _) in designs.DESIGNS.items() if engine == "sqlcipher"
               and d not in {m.design for m in recs}]
    if dropped and engines.cipher_version() is None:
        lines.append(f"# No {', '.join(dropped)} rows: SQLCipher 4's Python binding (sqlcipher3) "
                     f"is not installed ({engines.PEERS_HINT})")
    lines.append(f"# Budget {budget_ms:g} ms of blocked start-up time:")
    lines += [f"#   {s}" for s in designs.budget_sentences(recs, budget_ms)]
    if run.interrupted:
        lines.append(f"# Interrupted after {run.rounds} of {repeats} rounds.")
    if quick:
        lines.append(f"# {QUICK_NOTE}")
    return "\n".join(lines), run.interrupted

"""Plots of sweep results (matplotlib, an optional dependency).

Every function takes a :class:`~pycipherbench.Results` and returns a new
``matplotlib.figure.Figure`` (not registered with pyplot: show it in Jupyter
by returning it, or ``fig.savefig("x.png")``). Axes carry units, medians are
drawn with their interquartile range (bands or error bars), and a caption at
the bottom names the machine. Lines and bars are grouped by the swept
parameters other than the one on the x axis; :func:`plot_auto` picks a plot
from what was swept.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._format import format_size
from ._record import Record
from .results import Results
from .store import StoreMeasurement

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "PLOTS",
    "plot_auto",
    "plot_cache",
    "plot_commit_apply",
    "plot_faithful",
    "plot_footprint",
    "plot_latency",
    "plot_rounds",
    "plot_seed_table",
    "plot_siv",
    "plot_stages",
    "plot_store_latency",
    "plot_throughput",
]

# How a boolean parameter reads in a legend: (False, True).
_BOOL_LABELS = {
    "hw_aes": ("hardware AES off", "hardware AES on"),
    "encrypted": ("plain", "encrypted"),
    "faithful": ("lean", "faithful"),
    "cache": ("no cache", "cache"),
    "passphrase": ("key file", "passphrase"),
    "stages": ("no stages", "stages"),
}
_STAGES = (("siv", "SIV (names)"), ("nonce", "nonce"), ("aead", "AEAD (values)"),
           ("base64", "Base64"), ("lookup", "lookup"), ("io", "I/O"))


def _width(n_bars: int) -> float:
    """Figure width in inches: 8, growing with many bars so that labels stay legible."""
    return float(min(24.0, max(8.0, 0.3 * n_bars)))


def _figure(width: float = 8.0, height: float = 5.0) -> tuple[Figure, Axes]:
    try:
        from matplotlib.figure import Figure
    except ImportError as e:  # optional dependency
        raise ImportError("pycipherbench.plot needs matplotlib: pip install matplotlib "
                          "(or pip install 'pycipherbench[notebooks]')") from e
    fig = Figure(figsize=(width, height))
    return fig, fig.add_subplot()


def _finish(fig: Figure, results: Results, note: str = "") -> Figure:
    """Tight layout, leaving room at the bottom for the machine caption."""
    fp = results.machine
    flags = " ".join(fp.get("cpu_flags") or []) or "none"
    caption = (f"{fp.get('cpu_model')} ({fp.get('arch')}, {fp.get('cores')} cores; crypto flags: "
               f"{flags}); {fp.get('openssl_version')}; {fp.get('compiler')}; TEA kernel "
               f"{fp.get('tea_impl')}; pycipherbench {fp.get('package_version')}. "
               f"Median of the samples; bands/error bars: interquartile range. {note}").strip()
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.text(0.01, 0.01, caption, fontsize=6, ha="left", va="bottom", wrap=True)
    return fig


def _value_label(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return _BOOL_LABELS.get(name, (f"no {name}", name))[int(value)]
    if isinstance(value, str):
        return value
    if name == "payload":
        return format_size(int(value))
    return f"{name}={value}"


def _point_label(params: dict[str, Any], names: Sequence[str]) -> str:
    return ", ".join(_value_label(n, params[n]) for n in names if n in params) or "all points"


def _quartiles(values: np.ndarray) -> tuple[float, float, float]:
    q1, med, q3 = np.percentile(values, [25, 50, 75])
    return float(med), float(q1), float(q3)


def _time_unit(ns: Sequence[float]) -> tuple[float, str]:
    """A scale and unit that keep typical times readable."""
    typical = float(np.median(ns)) if len(ns) else 1.0
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if typical >= scale:
            return scale, unit
    return 1.0, "ns"


def _lines(
    results: Results, x: str, per_sample: Callable[[Record], np.ndarray], *,
    xlabel: str, ylabel: str, title: str, logx: bool = True, logy: bool = True,
    base: float = 10, xfmt: Callable[[float], str] | None = None,
) -> Figure:
    """Median lines with IQR bands vs parameter x, one line per other swept combination;
    points without x (rounds for AES) become horizontal reference lines."""
    fig, ax = _figure()
    others = [n for n in results.swept if n != x]
    groups: dict[str, list[tuple[float, float, float, float]]] = {}
    flat: dict[str, float] = {}
    for p, m in results.items():
        med, q1, q3 = _quartiles(per_sample(m))
        label = _point_label(p, others)
        if x in p:
            groups.setdefault(label, []).append((float(p[x]), med, q1, q3))
        else:
            flat[label] = med
    if not groups:
        raise ValueError(f"no point has the parameter {x!r} to plot along")
    for label, rows in groups.items():
        xs, meds, lows, highs = (np.array(c) for c in zip(*sorted(rows)))
        style = "--" if "-ref/" in label.lower() else "-"
        (line,) = ax.plot(xs, meds, style, marker="o", markersize=3, label=label)
        ax.fill_between(xs, lows, highs, color=line.get_color(), alpha=0.2, linewidth=0)
    for label, level in flat.items():
        ax.axhline(level, linestyle=":", linewidth=1, color="gray")
        ax.annotate(label, (0.99, level), xycoords=("axes fraction", "data"), ha="right",
                    va="bottom", fontsize=7, color="gray")
    if logx:
        ax.set_xscale("log", base=base)
    if logy:
        ax.set_yscale("log")
    if xfmt is not None:
        from matplotlib.ticker import FuncFormatter, NullFormatter

        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: xfmt(v)))
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    if len(groups) + len(flat) > 1:
        ax.legend(fontsize=7)
    return fig


def _bars(
    ax: Axes, categories: list[str], series: dict[str, dict[str, tuple[float, float, float]]],
) -> None:
    """Grouped bars with IQR error bars: series -> category -> (median, q1, q3)."""
    n = max(1, len(series))
    width = 0.8 / n
    for i, (label, values) in enumerate(series.items()):
        idx = [j for j, c in enumerate(categories) if c in values]
        if not idx:
            continue
        med = np.array([values[categories[j]][0] for j in idx])
        err = np.array([[med[k] - values[categories[j]][1], values[categories[j]][2] - med[k]]
                        for k, j in enumerate(idx)]).T
        xs = np.array(idx) + (i - (n - 1) / 2) * width
        ax.bar(xs, med, width, yerr=err, capsize=2, label=label)
    ax.set_xticks(range(len(categories)), categories, rotation=30 if len(categories) > 3 else 0,
                  ha="right" if len(categories) > 3 else "center", fontsize=8)
    tops = [v[0] for s in series.values() for v in s.values() if v[0] > 0]
    if tops and max(tops) / min(tops) > 30:  # DES vs AES, get vs commit: orders of magnitude
        ax.set_yscale("log")
    if len(series) > 1:
        ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)


def _bar_chart(
    results: Results, series_param: str | None, value_names: dict[Any, str],
    per_sample: Callable[[Record], np.ndarray], *, xlabel: str, ylabel: str, title: str,
    missing_label: str = "does not apply", scale: float = 1.0,
) -> Figure:
    """Bars per point of the other swept parameters, one series per value of series_param."""
    others = [n for n in results.swept if n != series_param]
    categories: list[str] = []
    series: dict[str, dict[str, tuple[float, float, float]]] = {}
    for p, m in results.items():
        cat = _point_label(p, others)
        if cat not in categories:
            categories.append(cat)
        if series_param is None:
            name = ylabel.split(" (")[0]
        elif series_param in p:
            name = value_names.get(p[series_param], _value_label(series_param, p[series_param]))
        else:
            name = missing_label
        med, q1, q3 = _quartiles(per_sample(m) / scale)
        series.setdefault(name, {})[cat] = (med, q1, q3)
    if not categories:
        raise ValueError("no points to plot")
    fig, ax = _figure(_width(len(categories) * len(series)))
    # Series in a stable order: the named values first, as given.
    order = [v for v in value_names.values() if v in series] + [s for s in series if s not in value_names.values()]
    _bars(ax, categories, {s: series[s] for s in order})
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return fig


def _need(results: Results, name: str, why: str) -> None:
    if name not in results.param_names:
        raise ValueError(f"{why} needs results with the parameter {name!r} (swept: "
                         f"{', '.join(results.swept) or 'nothing'})")


def _store_only(results: Results, what: str) -> None:
    if results.target != "store":
        raise ValueError(f"{what} plots store results (sweep('store', ...)), not {results.target}")


def _store_items(results: Results) -> list[tuple[dict[str, Any], StoreMeasurement]]:
    """The (params, record) pairs of the store workloads among ``results``."""
    return [(p, m) for p, m in results.items() if isinstance(m, StoreMeasurement)]


def _durable_samples(m: Record) -> np.ndarray:
    """Time until durable per operation of an apply (one NaN where there is none)."""
    durable = m.durable_samples if isinstance(m, StoreMeasurement) else None
    return np.array([math.nan]) if durable is None else durable


# -- cipher plots
def plot_throughput(results: Results) -> Figure:
    """Throughput vs payload, log-log, one line per kernel (or other swept combination)."""
    _need(results, "payload", "plot_throughput")
    return _finish(_lines(
        results, "payload", lambda m: m.samples_mb_per_s,
        xlabel="payload (bytes per operation)", ylabel="throughput (MB/s = 10⁶ bytes/s)",
        title="Throughput vs payload", base=2, xfmt=lambda v: format_size(int(v)) if v >= 1 else ""),
        results, "Where a line flattens, per-message overhead has stopped dominating.")


def plot_seed_table(results: Results) -> Figure:
    """The seed's speed table as grouped bars in KB/ms, hardware AES on and off side by side."""
    _need(results, "transformation", "plot_seed_table")
    series = "hw_aes" if "hw_aes" in results.param_names else None
    fig = _bar_chart(
        results, series, {True: "hardware AES on", False: "hardware AES off"},
        lambda m: m.payload / 1024.0 / (m.samples / 1e6),
        xlabel="transformation, operation (ALG/MODE/PADDING)",
        ylabel="throughput (KB/ms = KiB per ms, the seed's unit)",
        title="Cipher speed" + (": hardware AES on vs off" if series else ""))
    return _finish(fig, results, "Hardware AES off: OpenSSL started with AES-NI/PCLMULQDQ masked.")


def plot_rounds(results: Results) -> Figure:
    """TEA/XTEA cost per byte vs rounds, optimized (solid) vs reference (dashed); others flat."""
    _need(results, "rounds", "plot_rounds")
    return _finish(_lines(
        results, "rounds", lambda m: m.samples / max(1, m.payload),
        xlabel="rounds (TEA/XTEA cycles, two Feistel rounds each)", ylabel="cost (ns per byte)",
        title="TEA/XTEA cost vs rounds", base=2, xfmt=lambda v: f"{v:g}"), results,
        "Dashed: the one-block-at-a-time reference kernel; dotted: kernels without rounds.")


def plot_latency(results: Results) -> Figure:
    """Time per operation for every point, as bars (the fallback of :func:`plot_auto`)."""
    scale, unit = _time_unit([m.median for m in results])
    fig = _bar_chart(results, None, {}, lambda m: m.samples, scale=scale,
                     xlabel="point (swept parameters)", ylabel=f"time ({unit} per operation)",
                     title="Time per operation")
    return _finish(fig, results)


# -- store plots
def plot_store_latency(results: Results, x: str = "n_keys") -> Figure:
    """Store latency per operation vs key count (or another numeric parameter ``x``)."""
    _store_only(results, "plot_store_latency")
    _need(results, x, "plot_store_latency")
    scale, unit = _time_unit([m.median for m in results])
    xlabel = "store size (entries)" if x == "n_keys" else f"{x} ({'bytes' if x.endswith('_len') else 'count'})"
    return _finish(_lines(
        results, x, lambda m: m.samples / scale, xlabel=xlabel,
        ylabel=f"latency ({unit} per operation)", title=f"Store latency vs {x}",
        xfmt=lambda v: f"{v:g}"), results)


def _toggle(results: Results, param: str, names: dict[Any, str], title: str,
            missing_label: str = "plain store") -> Figure:
    _store_only(results, title)
    _need(results, param, title)
    scale, unit = _time_unit([m.median for m in results])
    fig = _bar_chart(results, param, names, lambda m: m.samples, scale=scale,
                     xlabel="workload (store operation, with the other swept parameters)",
                     ylabel=f"latency ({unit} per operation)", title=title,
                     missing_label=missing_label)
    return _finish(fig, results)


def plot_siv(results: Results) -> Figure:
    """SIV on/off: entry names AES-SIV encrypted (ESP) vs stored in plain text."""
    return _toggle(results, "key_encryption",
                   {"siv": "names AES-SIV encrypted (ESP)", "none": "names in plain text"},
                   "SIV on/off: the cost of encrypted entry names")


def plot_cache(results: Results) -> Figure:
    """Decrypted-value cache on/off."""
    return _toggle(results, "cache", {False: "cache off", True: "cache on"},
                   "Cache on/off: repeated gets with and without decrypted values kept")


def plot_faithful(results: Results) -> Figure:
    """Lean vs faithful: ESP's per-call work (fresh key schedules, S2V, CSPRNG) repeated or not."""
    return _toggle(results, "faithful", {False: "lean", True: "faithful (ESP's per-call work)"},
                   "Lean vs faithful: where the overhead lives")


def plot_commit_apply(results: Results) -> Figure:
    """commit (blocks until durable) vs apply: time the caller is blocked and time until durable."""
    _store_only(results, "plot_commit_apply")
    sel = [(p, m) for p, m in results.items() if p.get("workload") in ("commit", "apply")]
    if not sel:
        raise ValueError("plot_commit_apply needs points with workload 'commit' or 'apply'")
    sub = Results(results.target, [p for p, _ in sel], [m for _, m in sel], machine=results.machine)
    others = [n for n in sub.swept if n != "workload"]
    scale, unit = _time_unit([m.median for _, m in sel])
    categories: list[str] = []
    series: dict[str, dict[str, tuple[float, float, float]]] = {}
    for p, m in sel:
        cat = _point_label(p, others)
        if cat not in categories:
            categories.append(cat)
        if p["workload"] == "commit":
            series.setdefault("commit (blocked until durable)", {})[cat] = _quartiles(m.samples / scale)
        else:
            series.setdefault("apply: caller blocked", {})[cat] = _quartiles(m.samples / scale)
            durable = _durable_samples(m)
            series.setdefault("apply: until durable", {})[cat] = _quartiles(durable / scale)
    fig, ax = _figure(_width(len(categories) * len(series)))
    _bars(ax, categories, series)
    ax.set_xlabel("store configuration (swept parameters)")
    ax.set_ylabel(f"time per edit ({unit}; batch puts + commit or apply)")
    ax.set_title("Commit vs apply: blocked vs durable")
    return _finish(fig, results)


def plot_stages(results: Results) -> Figure:
    """Where a put/get spends its time: SIV, nonce, AEAD, Base64, lookup, I/O, as stacked bars."""
    _store_only(results, "plot_stages")
    sel = [(p, m) for p, m in _store_items(results) if m.stages]
    if not sel:
        raise ValueError("plot_stages needs store results with a stage breakdown (put/get "
                         "workloads with stages=True)")
    names = results.swept
    fig, ax = _figure(_width(len(sel)))
    labels = [_point_label(p, names) for p, _ in sel]
    stages = [m.stages for _, m in sel if m.stages]
    bottom = np.zeros(len(sel))
    for key, label in (*_STAGES, ("other", "other")):
        if key == "other":
            vals = np.array([max(0.0, s["total"] - sum(s[k] for k, _ in _STAGES)) for s in stages])
        else:
            vals = np.array([float(s[key]) for s in stages])
        ax.bar(range(len(sel)), vals, 0.6, bottom=bottom, label=label)
        bottom += vals
    ax.set_xticks(range(len(sel)), labels, rotation=30 if len(sel) > 3 else 0,
                  ha="right" if len(sel) > 3 else "center", fontsize=8)
    ax.set_xlabel("point (swept parameters)")
    ax.set_ylabel("time (ns per operation)")
    ax.set_title("Stage breakdown of store operations")
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    return _finish(fig, results, "Stages are timed in a separate instrumented run.")


def plot_footprint(results: Results) -> Figure:
    """Footprint per entry: heap bytes the store holds and bytes of its file on disk."""
    _store_only(results, "plot_footprint")
    sel = _store_items(results)
    if not sel:
        raise ValueError("plot_footprint needs store results")
    names = [n for n in results.swept if n != "workload"]
    categories: list[str] = []
    series: dict[str, dict[str, tuple[float, float, float]]] = {"heap (memory)": {}, "disk (file)": {}}
    for p, m in sel:
        cat = _point_label(p, names)
        if cat in categories:
            continue  # the same store measured by several workloads
        categories.append(cat)
        heap, disk = m.heap_bytes_per_entry, m.disk_bytes_per_entry
        series["heap (memory)"][cat] = (heap, heap, heap)
        series["disk (file)"][cat] = (disk, disk, disk)
    fig, ax = _figure(_width(2 * len(categories)))
    _bars(ax, categories, series)
    ax.set_xlabel("store configuration (swept parameters)")
    ax.set_ylabel("footprint (bytes per entry)")
    ax.set_title("Footprint per entry: heap vs disk")
    return _finish(fig, results)


PLOTS: dict[str, Callable[[Results], Figure]] = {
    "throughput": plot_throughput,
    "seed_table": plot_seed_table,
    "rounds": plot_rounds,
    "latency": plot_latency,
    "store_latency": plot_store_latency,
    "siv": plot_siv,
    "cache": plot_cache,
    "faithful": plot_faithful,
    "commit_apply": plot_commit_apply,
    "stages": plot_stages,
    "footprint": plot_footprint,
}


def choose_plot(results: Results) -> str:
    """The name (a key of PLOTS) of the plot that fits what was swept."""
    swept = set(results.swept)
    if results.target == "store":
        workloads = {p.get("workload") for p in results.params}
        if "n_keys" in swept and len({p.get("n_keys") for p in results.params} - {None}) >= 3:
            return "store_latency"
        for param, name in (("key_encryption", "siv"), ("cache", "cache"), ("faithful", "faithful")):
            if param in swept:
                return name
        if {"commit", "apply"} <= workloads:
            return "commit_apply"
        if "n_keys" in swept:
            return "store_latency"
        if any(m.stages for _, m in _store_items(results)):
            return "stages"
        return "latency"
    if "payload" in swept:
        return "throughput"
    if "rounds" in swept:
        return "rounds"
    if swept & {"hw_aes", "transformation", "op"}:
        return "seed_table"
    return "latency"


def plot_auto(results: Results) -> Figure:
    """The plot that fits the swept parameters: payload -> throughput, rounds -> cost vs
    rounds, transformations/hw_aes -> the seed table; for the store: key count, SIV, cache,
    lean/faithful, commit/apply, then the stage breakdown."""
    return PLOTS[choose_plot(results)](results)

"""Plots of sweep results (matplotlib, an optional dependency).

Every function takes a :class:`~pycipherbench.Results` and returns a new
``matplotlib.figure.Figure`` (not registered with pyplot: show it in Jupyter
by returning it, or ``fig.savefig("x.png")``). Axes carry units; medians are
drawn with error bars from each record's 95% interval of the median across
rounds (its ``ci``); a caption at the bottom names the machine that produced the data and states
what the error bars and the hardware-AES setting were. Lines and bars are
grouped by the parameters that tell the points apart (run settings such as
``min_time`` never appear in labels); :func:`plot_auto` picks a plot from what
was swept.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ._format import format_size
from ._params import RUN_SETTINGS, param_names
from ._record import Record
from .results import Results
from .stats import median_ci
from .store_bench import StoreMeasurement

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
# How a text parameter's values read, where the raw value is not what a user calls it.
_TEXT_LABELS: dict[str, dict[str, str]] = {
    "op": {"enc": "ENC", "dec": "DEC"},
    "key_encryption": {"siv": "SIV names", "none": "plain-text names"},
    "value_encryption": {"gcm": "GCM values", "chacha20-poly1305": "ChaCha20-Poly1305 values",
                         "none": "plain values"},
    "layout": {"entries": "per-entry layout", "file": "whole-file layout"},
}
# How a number parameter reads: a format with {v} (and {s}: "s" unless v is 1).
_NUMBER_LABELS = {
    "n_keys": "{v:,} entries", "batch": "{v:,} put{s} per edit", "value_len": "{v:,}-char values",
    "key_len": "{v:,}-char names", "rounds": "{v} cycles", "iv_len": "{v}-byte IV",
    "key_bits": "{v}-bit key",
}
# Settings that shape how a point was timed, not what it measures: never in a label.
_STAGES = (("siv", "SIV (names)"), ("nonce", "nonce"), ("aead", "AEAD (values)"),
           ("base64", "Base64"), ("lookup", "lookup"), ("io", "I/O"))
# Line styles: colours and markers tell lines apart; the dash pattern says hardware AES off
# and/or a reference kernel, so that those never rest on the legend alone.
_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#b8860b")
_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">", "h", "p")
_DASHES = {(False, False): "-", (True, False): "--", (False, True): "-.", (True, True): ":"}

#: ns per operation -> the plotted unit, given the record (its payload, say).
Convert = Callable[[Record, float], float]
#: (median, low, high) in the plotted unit.
Interval = tuple[float, float, float]


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


# -- what the footer says
def _machine_text(fp: dict[str, Any]) -> str:
    flags = " ".join(fp.get("cpu_flags") or []) or "none"
    return (f"{fp.get('cpu_model')} ({fp.get('arch')}, {fp.get('cores')} cores; crypto flags: "
            f"{flags}); {fp.get('openssl_version')}; {fp.get('compiler')}; TEA kernel "
            f"{fp.get('tea_impl')}; pycipherbench {fp.get('package_version')}")


def _machines(results: Results) -> str:
    """Whose machine produced these results: the records' own fingerprints (CPU model, crypto
    flags, OpenSSL), all of them where they differ."""
    seen: dict[tuple[Any, ...], dict[str, Any]] = {}
    for fp in [results.machine, *(m.machine for m in results)]:
        key = (fp.get("cpu_model"), tuple(sorted(fp.get("cpu_flags") or ())), fp.get("openssl_version"))
        seen.setdefault(key, fp)
    if len(seen) == 1:
        return f"Measured on {_machine_text(results.machine)}."
    return (f"Measured on {len(seen)} different machines (compare with care): "
            + " | ".join(_machine_text(fp) for fp in seen.values()) + ".")


def _hw_text(records: Sequence[Record]) -> str:
    """What the data holds about hardware AES: on, off (and how it was masked), or both."""
    states = {m.hw_aes for m in records}
    masks = sorted({m.hw_mask for m in records if not m.hw_aes and m.hw_mask})
    how = f" (OpenSSL started with {', '.join(masks)})" if masks else ""
    if states == {True}:
        return "Hardware AES: on (the CPU's AES instructions available to OpenSSL)."
    if states == {False}:
        return f"Hardware AES: off for every point: AES-NI/PCLMULQDQ hidden from OpenSSL{how}."
    return f"Hardware AES: on, and off where marked: AES-NI/PCLMULQDQ hidden from OpenSSL{how}."


def _spread_text(records: Sequence[Record]) -> str:
    """What the error bars are, from the rounds the records have: the coverage they
    attain when short of 95% (the fewest rounds decide), none for single samples."""
    from .stats import interval_words

    rounds = sorted({m.n_rounds for m in records})
    shown = f"{rounds[0]}" if len(rounds) == 1 else f"{rounds[0]}-{rounds[-1]}"
    if rounds[-1] < 2:
        return f"Single samples ({shown} round): no error bars, no interval."
    words = interval_words(rounds[0])
    if rounds[0] < 2:
        return (f"Medians of {shown} rounds; error bars: {interval_words(rounds[1]).partition(': ')[0]} of the "
                "median, none for the single-sample points.")
    head, _, why = words.partition(": ")
    return (f"Medians of {shown} rounds; error bars: {head} of the median"
            + (f" ({why})." if why else "."))


def _finish(fig: Figure, results: Results, note: str = "", *, error_bars: bool = True) -> Figure:
    """The footer (whose machine, hardware AES, what the error bars are, ``note``), and a tight
    layout that leaves it room."""
    records = list(results)
    parts = [_machines(results), _hw_text(records) if records else ""]
    if error_bars and records:
        parts.append(_spread_text(records))
    caption = " ".join(p for p in (*parts, note) if p)
    width, height = fig.get_size_inches()
    # ~0.042 in per character at 6 pt; each line ~0.1 in high.
    lines = math.ceil(len(caption) * 0.042 / max(1.0, width - 0.3))
    bottom = min(0.4, (0.12 + 0.1 * lines) / height)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    fig.text(0.01, 0.01, caption, fontsize=6, ha="left", va="bottom", wrap=True)
    return fig


# -- labels
#: How a parameter's name reads in a title or message.
_WORDS = {"n_keys": "the number of keys", "payload": "payload", "rounds": "rounds",
          "value_len": "value length", "key_len": "name length", "batch": "batch size"}


def _value_label(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return _BOOL_LABELS.get(name, (f"no {name}", name))[int(value)]
    if isinstance(value, str):
        return _TEXT_LABELS.get(name, {}).get(value, value)
    if name == "payload":
        return format_size(int(value))
    if name in _NUMBER_LABELS and isinstance(value, int):
        return _NUMBER_LABELS[name].format(v=value, s="" if value == 1 else "s")
    return f"{name}={value}"


def _point_label(params: dict[str, Any], names: Sequence[str]) -> str:
    return ", ".join(_value_label(n, params[n]) for n in names if n in params) or "all points"


def _titled(title: str, points: Sequence[dict[str, Any]], skip: Sequence[str] = ()) -> str:
    """``title`` and what every point has alike (the one transformation of the plot, its
    op...): no label names those, so the title does."""
    from .sweep import _signature

    defaults = {**_signature("store"), **_signature("cipher")}
    names = [n for n in param_names(points) if n not in RUN_SETTINGS and n not in skip
             and all(n in p for p in points)
             and len({(type(p[n]).__name__, p[n]) for p in points}) == 1
             and _value_label(n, points[0][n]) not in title  # said already
             and not (n in defaults and points[0][n] == defaults[n])]  # the default: unsaid
    common = _point_label(points[0], names) if points and names else ""
    return f"{title}\n({common})" if common else title


def _label_names(points: Sequence[dict[str, Any]], skip: Sequence[str] = (),
                 key: Callable[[dict[str, Any]], Any] = lambda p: None) -> list[str]:
    """The parameters a label needs to tell ``points`` apart: those that take more than one
    value where they apply, without run settings (min_time, ...) and ``skip``; a parameter
    that applies to some points only, with one value, is added only if labels would collide
    without it. ``key`` is what already tells points apart besides the label (a bar's series)."""
    names = [n for n in param_names(points) if n not in RUN_SETTINGS and n not in skip]
    varying = [n for n in names
               if len({(type(p[n]).__name__, p[n]) for p in points if n in p}) > 1]

    def collisions(chosen: list[str]) -> int:
        labels = [(key(p), _point_label(p, chosen)) for p in points]
        return len(labels) - len(set(labels))

    chosen = varying
    if collisions(chosen):
        partial = [n for n in names if n not in varying and any(n not in p for p in points)]
        better = [n for n in names if n in varying or n in partial]
        if collisions(better) < collisions(chosen):
            chosen = better
    return chosen


# -- values
def _interval(m: Record, convert: Convert, samples: np.ndarray | None = None) -> Interval:
    """One point's (median, low, high) in the plotted unit: the record's 95% interval of
    the median (``ci``, ns per operation), or that of ``samples`` when given (ns per
    operation, e.g. an apply's time until durable). ``convert`` maps ns per operation to
    the plotted unit; it may be decreasing (throughput), so the bounds are sorted after."""
    if samples is None:
        med, (lo, hi) = m.median, m.ci
    else:
        med, (lo, hi) = float(np.median(samples)), median_ci(samples)
    a, b = convert(m, lo), convert(m, hi)
    return convert(m, med), min(a, b), max(a, b)


def _mb_per_s(m: Record, ns: float) -> float:
    return m.payload * 1e3 / ns


def _kb_per_ms(m: Record, ns: float) -> float:
    return m.payload / 1024.0 / (ns / 1e6)


def _scaled(scale: float) -> Convert:
    return lambda m, ns: ns / scale


def _time_unit(ns: Sequence[float]) -> tuple[float, str]:
    """A scale and unit that keep typical times readable."""
    typical = float(np.median(ns)) if len(ns) else 1.0
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if typical >= scale:
            return scale, unit
    return 1.0, "ns"


def _errors(rows: Sequence[Interval]) -> np.ndarray:
    """matplotlib's yerr/xerr (2 x n: below, above) from (median, low, high) rows."""
    return np.array([[max(0.0, med - lo), max(0.0, hi - med)] for med, lo, hi in rows]).T.reshape(2, -1)


def _legend_columns(labels: Sequence[str], width: float) -> int:
    """Legend columns (at most 3) that fit a figure ``width`` inches wide, at 7 pt."""
    longest = max((len(t) for t in labels), default=1)
    per_column = 0.6 + 0.055 * longest  # handle and spacing, ~0.055 in per character
    return max(1, min(3, len(labels), int((width - 0.2) // per_column)))


def _legend_below(ax: Axes, n: int, ncol: int) -> None:
    """The legend under the x axis label, outside the axes: it hides no data."""
    if n <= 1:
        return
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, 0.0), borderaxespad=5.0,
              ncol=ncol, frameon=False)


def _lines(
    results: Results, x: str, convert: Convert, *,
    xlabel: str, ylabel: str, title: str, logx: bool = True, logy: bool = True,
    base: float = 10, xfmt: Callable[[float], str] | None = None,
) -> Figure:
    """Median lines with error bars vs parameter x, one line per other combination of the
    parameters; points without x (rounds for AES) become horizontal reference lines.

    Each kind of line has its own colour and marker; hardware AES off is dashed (with open
    markers), a reference kernel dash-dotted, both dotted."""
    points = list(results.items())
    if not any(x in p for p, _ in points):
        raise ValueError(f"no point has the parameter {x!r} to plot along")
    values = sorted({p[x] for p, _ in points if x in p})
    if len(values) < 2:
        raise ValueError(f"this plot draws lines along {_WORDS.get(x, x)}, but every point has "
                         f"the same one ({_value_label(x, values[0])}): nothing to draw a line "
                         "through. Sweep more values, or plot it as bars (--kind "
                         f"{'seed_table' if results.target == 'cipher' else 'latency'})")
    names = _label_names([p for p, _ in points], skip=[x], key=lambda p: p.get(x))
    ident = [n for n in names if n != "hw_aes"]
    groups: dict[tuple[str, bool], list[tuple[float, Interval]]] = {}
    labels: dict[tuple[str, bool], str] = {}
    flat: dict[str, float] = {}
    for p, m in points:
        label = _point_label(p, names)
        if x in p:
            k = (_point_label(p, ident), p.get("hw_aes") is False)
            groups.setdefault(k, []).append((float(p[x]), _interval(m, convert)))
            labels[k] = label
        else:
            flat[label] = _interval(m, convert)[0]
    kinds = list(dict.fromkeys(k for k, _ in groups))
    ncol = _legend_columns(list(labels.values()), 8.0)
    n_rows = math.ceil(len(groups) / ncol) if len(groups) > 1 else 0
    fig, ax = _figure(8.0, 5.0 + 0.17 * n_rows)
    for (kind, off), rows in groups.items():
        i = kinds.index(kind)
        color = _COLORS[i % len(_COLORS)]
        marker = _MARKERS[(i + i // len(_COLORS)) % len(_MARKERS)]
        dash = _DASHES[(off, "-ref/" in kind.lower())]
        rows.sort(key=lambda r: r[0])
        xs = np.array([r[0] for r in rows])
        iv = [r[1] for r in rows]
        ax.errorbar(xs, [v[0] for v in iv], yerr=_errors(iv), color=color, linestyle=dash,
                    marker=marker, markersize=4, markerfacecolor="white" if off else color,
                    linewidth=1.3, elinewidth=0.8, capsize=2, label=labels[(kind, off)])
    side, previous = 0, None
    for label, level in sorted(flat.items(), key=lambda kv: kv[1]):
        ax.axhline(level, linestyle=":", linewidth=1, color="gray")
        # a level within 25% of the previous one: its label at the other end of the line,
        # so that two references (TEA at 16 and 32 rounds) do not print over each other
        close = (previous is not None and previous > 0 and level > 0
                 and abs(math.log(level / previous)) < math.log(1.25))
        side = 1 - side if close else 0
        ax.annotate(label, (0.01, level) if side else (0.99, level),
                    xycoords=("axes fraction", "data"), ha="left" if side else "right",
                    va="bottom", fontsize=7, color="gray")
        previous = level
    if logx:
        ax.set_xscale("log", base=base)
    if logy:
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis)
    if xfmt is None and logx:
        _plain_log_ticks(ax.xaxis)
    if xfmt is not None:
        from matplotlib.ticker import FuncFormatter, NullFormatter

        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: xfmt(v)))
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(_titled(title, [p for p, _ in points], skip=[x]))
    ax.grid(True, which="major", alpha=0.3)
    _legend_below(ax, len(groups), ncol)
    return fig


Series = dict[str, dict[str, Interval]]


def _bars(ax: Axes, categories: list[str], series: Series, *, horizontal: bool = False,
          errors: bool = True, value_labels: bool = False,
          styles: dict[str, dict[str, Any]] | None = None) -> None:
    """Grouped bars with error bars: series -> category -> (median, low, high).

    The bars of a category are centred on its label, however many series it has."""
    names = list(series)
    present = {c: [s for s in names if c in series[s]] for c in categories}
    width = 0.8 / max(1, max((len(v) for v in present.values()), default=1))
    draw = ax.barh if horizontal else ax.bar
    for i, name in enumerate(names):
        idx = [j for j, c in enumerate(categories) if c in series[name]]
        if not idx:
            continue
        pos = np.array([j + (present[categories[j]].index(name)
                             - (len(present[categories[j]]) - 1) / 2) * width for j in idx])
        rows = [series[name][categories[j]] for j in idx]
        med = np.array([r[0] for r in rows])
        style = {"color": _COLORS[i % len(_COLORS)], **(styles or {}).get(name, {})}
        err: dict[str, Any] = {("xerr" if horizontal else "yerr"): _errors(rows)} if errors else {}
        draw(pos, med, width, label=name, capsize=2, error_kw={"elinewidth": 0.8}, **err, **style)
        if value_labels:
            for p, (m, _, hi) in zip(pos, rows):
                if math.isfinite(m):
                    xy = (hi, p) if horizontal else (p, hi)
                    ax.annotate(_number(m), xy, xytext=(3, 0) if horizontal else (0, 2),
                                textcoords="offset points", fontsize=6,
                                ha="left" if horizontal else "center",
                                va="center" if horizontal else "bottom")
    tops = [v[0] for s in series.values() for v in s.values() if v[0] > 0]
    log = bool(tops) and max(tops) / min(tops) > 30  # DES vs AES, get vs commit: orders of magnitude
    if horizontal:
        ax.set_yticks(range(len(categories)), categories, fontsize=8)
        ax.invert_yaxis()  # first category on top
        if log:
            ax.set_xscale("log")
        ax.grid(True, axis="x", alpha=0.3)
    else:
        many = len(categories) > 3
        ax.set_xticks(range(len(categories)), categories, rotation=30 if many else 0,
                      ha="right" if many else "center", rotation_mode="anchor", fontsize=8)
        if log:
            ax.set_yscale("log")
            _plain_log_ticks(ax.yaxis)
        ax.grid(True, axis="y", alpha=0.3)


def _plain_log_ticks(axis: Any) -> None:
    """Tick labels of a log axis as plain numbers (600, 2,000; not 6x10^2); minor ticks
    labelled where the axis spans about two decades or less (all of them within a third of
    a decade, else 2, 3 and 5 of each decade, or 2 and 5 beyond one decade)."""
    from matplotlib.ticker import FuncFormatter

    def minor(v: float, _: Any) -> str:
        low, high = sorted(axis.get_view_interval())
        if not (v > 0 and low > 0) or high / low > 150:
            return ""
        coeff = round(v / 10 ** math.floor(math.log10(v) + 1e-9))
        shown = (2, 3, 5) if high / low <= 15 else (2, 5)
        return _number(v) if high / low < 2.2 or coeff in shown else ""

    axis.set_major_formatter(FuncFormatter(lambda v, _: _number(v) if v > 0 else ""))
    axis.set_minor_formatter(FuncFormatter(minor))


def _number(v: float) -> str:
    """A bar's value label: three significant digits, thousands separated."""
    if v >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def _implied(points: Sequence[dict[str, Any]], names: Sequence[str],
             series_of: Callable[[dict[str, Any]], str]) -> list[str]:
    """The parameters among ``names`` whose value the series already tells (``encrypted``
    when the series are plain store / lean / faithful): not needed in the category labels."""
    out = []
    for n in names:
        values: dict[str, set[Any]] = {}
        for p in points:
            values.setdefault(series_of(p), set()).add((type(p.get(n)).__name__, p.get(n)))
        if all(len(v) == 1 for v in values.values()):
            out.append(n)
    return out


def _bar_chart(
    results: Results, series_param: str | None, value_names: dict[Any, str],
    convert: Convert, *, xlabel: str, ylabel: str, title: str,
    missing_label: str = "does not apply",
) -> Figure:
    """Bars per point of the other parameters, one series per value of series_param."""
    points = list(results.items())
    if not points:
        raise ValueError("no points to plot")

    def series_of(p: dict[str, Any]) -> str:
        if series_param is None:
            return ylabel.split(" (")[0]
        if series_param in p:
            return value_names.get(p[series_param], _value_label(series_param, p[series_param]))
        return missing_label

    params = [p for p, _ in points]
    names = _label_names(params, skip=[series_param] if series_param else [], key=series_of)
    if series_param is not None:  # what the series say need not be repeated under each group
        names = [n for n in names if n not in _implied(params, names, series_of)] or names
    categories: list[str] = []
    series: Series = {}
    for p, m in points:
        cat = _point_label(p, names)
        if cat not in categories:
            categories.append(cat)
        series.setdefault(series_of(p), {})[cat] = _interval(m, convert)
    fig, ax = _figure(_width(len(categories) * len(series)))
    # Series in a stable order: the baseline without the parameter (plain store), then the
    # named values as given, then any others.
    named = [v for v in value_names.values() if v in series]
    order = ([missing_label] if missing_label in series else []) + named
    order += [s for s in series if s not in order]
    _bars(ax, categories, {s: series[s] for s in order})
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(_titled(title, [p for p, _ in points],
                         skip=[series_param] if series_param else []))
    _legend_right(ax, len(series))
    return fig


def _legend_right(ax: Axes, n: int) -> None:
    """The legend right of the axes, outside them: it hides no bar."""
    if n > 1:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)


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
    """Throughput vs payload, log-log, one line per kernel (or other combination of parameters)."""
    _need(results, "payload", "plot_throughput")
    return _finish(_lines(
        results, "payload", _mb_per_s,
        xlabel="payload (bytes per operation)", ylabel="throughput (MB/s = 10⁶ bytes/s)",
        title=_throughput_title(results), base=2, xfmt=lambda v: format_size(int(v)) if v >= 1 else ""),
        results, _dash_note(results, "payload") + " Where a line flattens, per-message overhead has stopped "
        "dominating.")


def _throughput_title(results: Results) -> str:
    """'Throughput vs payload' with what the lines are: the one transformation (or how many),
    by backend / thread count where those vary, hardware AES off when every point has it off."""
    def values(name: str) -> list[Any]:
        return list(dict.fromkeys(p[name] for p in results.params if name in p))

    ts = values("transformation") or list(dict.fromkeys(
        getattr(m, "transformation", None) for m in results if getattr(m, "transformation", None)))
    what = ts[0] if len(ts) == 1 else f"{len(ts)} transformations" if ts else ""
    by = [w for n, w in (("backend", "backend"), ("threads", "threads"), ("op", "ENC/DEC"))
          if len(values(n)) > 1]
    backends = values("backend")
    if len(backends) == 1 and backends[0] != "openssl":
        what += f" ({backends[0]})"
    if {m.hw_aes for m in results} == {False}:
        what += ", hardware AES off"
    title = "Throughput vs payload" + (f": {what}" if what else "")
    return title + (f", by {' and '.join(by)}" if by else "")


def _dash_note(results: Results, x: str | None = None) -> str:
    """What the dash patterns of :func:`_lines` mean, for those the plot has."""
    lines = [p for p in results.params if x is None or x in p]
    notes = []
    if any(p.get("hw_aes") is False for p in lines):
        notes.append("dashed, open markers: hardware AES off")
    if any("-ref/" in str(p.get("transformation", "")).lower() for p in lines):
        notes.append("dash-dotted: the one-block-at-a-time reference kernel")
    if any(p.get("hw_aes") is False and "-ref/" in str(p.get("transformation", "")).lower()
           for p in lines):
        notes.append("dotted: both")
    text = "; ".join(notes)
    return text[:1].upper() + text[1:] + "." if text else ""


def plot_seed_table(results: Results) -> Figure:
    """The seed's speed table as horizontal bars in KB/ms, one group per transformation, a bar
    per operation (and hardware AES setting, where the results hold both), each labelled with
    its value so that DES and 3DES read as well as AES on the log axis."""
    _need(results, "transformation", "plot_seed_table")
    points = list(results.items())
    series_params = [n for n in ("op", "hw_aes") if n in results.swept]
    names = _label_names([p for p, _ in points], skip=series_params,
                         key=lambda p: tuple(p.get(n) for n in series_params))
    categories: list[str] = []
    series: Series = {}
    styles: dict[str, dict[str, Any]] = {}
    for p, m in points:
        cat = _point_label(p, names)
        if cat not in categories:
            categories.append(cat)
        op = p.get("op", getattr(m, "op", "enc"))
        name = ", ".join(_value_label(n, p[n]) for n in series_params if n in p) or "throughput"
        series.setdefault(name, {})[cat] = _interval(m, _kb_per_ms)
        off = p.get("hw_aes", m.hw_aes) is False
        styles[name] = {"color": _COLORS[0 if op == "enc" else 1],
                        "alpha": 0.55 if off else 1.0, "hatch": "///" if off else None}
    n_bars = sum(len(v) for v in series.values())
    fig, ax = _figure(9.0, min(30.0, 2.2 + 0.17 * n_bars + 0.1 * len(categories)))
    _bars(ax, categories, series, horizontal=True, value_labels=True, styles=styles)
    highs = [v[2] for s in series.values() for v in s.values() if math.isfinite(v[2])]
    if highs and ax.get_xscale() == "log":
        from matplotlib.ticker import FuncFormatter

        lows = [v[1] for s in series.values() for v in s.values() if v[1] > 0]
        # From the decade below the slowest bar (so that it has a visible length) to room for
        # the value labels right of the fastest.
        ax.set_xlim(10 ** math.floor(math.log10(min(lows))) if lows else None, max(highs) * 3)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    ax.set_ylabel("transformation (ALG/MODE/PADDING)")
    ax.set_xlabel("throughput (KB/ms = KiB per ms, the seed's unit"
                  + (", log scale)" if ax.get_xscale() == "log" else ")"))
    hw = {m.hw_aes for m in results}
    payloads = {m.payload for m in results}
    what = f"{format_size(payloads.pop())} messages" if len(payloads) == 1 else "cipher speed"
    state = ("hardware AES on vs off" if hw == {True, False}
             else "hardware AES on" if hw == {True} else "hardware AES off")
    ax.set_title(f"Cipher speed ({what}): {state}" if what != "cipher speed" else f"Cipher speed: {state}")
    _legend_right(ax, len(series))
    return _finish(fig, results, "Hatched, pale bars: hardware AES off." if False in hw else "")


def plot_rounds(results: Results) -> Figure:
    """TEA/XTEA cost per byte vs rounds, optimized (solid) vs reference (dash-dotted); others flat."""
    _need(results, "rounds", "plot_rounds")
    return _finish(_lines(
        results, "rounds", lambda m, ns: ns / max(1, m.payload),
        xlabel="rounds (TEA/XTEA cycles, two Feistel rounds each)", ylabel="cost (ns per byte)",
        title="TEA/XTEA cost vs rounds", base=2, xfmt=lambda v: f"{v:g}"), results,
        " ".join(n for n in (_dash_note(results, "rounds"), "Dotted grey: kernels without rounds."
                             if any("rounds" not in p for p in results.params) else "") if n))


def plot_latency(results: Results) -> Figure:
    """Time per operation for every point, as bars (the fallback of :func:`plot_auto`)."""
    scale, unit = _time_unit([m.median for m in results])
    fig = _bar_chart(results, None, {}, _scaled(scale),
                     xlabel="point (parameters that tell the points apart)",
                     ylabel=f"time ({unit} per operation)", title="Time per operation")
    return _finish(fig, results)


# -- store plots
def plot_store_latency(results: Results, x: str = "n_keys") -> Figure:
    """Store latency per operation vs key count (or another numeric parameter ``x``)."""
    _store_only(results, "plot_store_latency")
    _need(results, x, "plot_store_latency")
    scale, unit = _time_unit([m.median for m in results])
    xlabel = ("store size (keys)" if x == "n_keys"
              else f"{_WORDS.get(x, x)} ({'characters' if x.endswith('_len') else 'count'})")
    return _finish(_lines(
        results, x, _scaled(scale), xlabel=xlabel,
        ylabel=f"latency ({unit} per operation)", title=f"Store latency vs {_WORDS.get(x, x)}"),
        results, _dash_note(results, x))


#: Store workloads whose times are of one order: bars of different groups are not drawn
#: together (a put takes microseconds, a 100-put commit or an open milliseconds).
_SCALE_GROUPS = (("per-operation", ("put", "get", "contains", "get_missing", "all")),
                 ("commit/apply", ("commit", "apply")), ("open", ("open_cold", "open_warm")),
                 ("rotation", ("rotate", "rotate_lazy")), ("migration", ("migrate", "migrate_keys")))


def _scale_group(p: dict[str, Any]) -> str:
    w = p.get("workload")
    if w in ("commit", "apply") and p.get("batch", 1) > 1:
        return f"{p['batch']}-put edits"
    return next((g for g, ws in _SCALE_GROUPS if w in ws), str(w))


def _one_scale(results: Results, param: str) -> tuple[Results, str]:
    """The points of one scale group (see _SCALE_GROUPS): the group where ``param`` varies
    on most points; and a note naming the groups left out (the store command's file holds
    them all)."""
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(results.params):
        groups.setdefault(_scale_group(p), []).append(i)
    if len(groups) < 2:
        return results, ""

    def varied(idx: list[int]) -> int:
        vals = {(type(v).__name__, v) for v in (results.params[i].get(param) for i in idx)}
        return len(idx) if len(vals) > 1 else 0

    keep = max(groups, key=lambda g: (varied(groups[g]), len(groups[g])))
    left = [g for g in groups if g != keep]
    note = (f"Only the {keep} workloads; this file's {', '.join(left)} workloads take times "
            "of another order and are left out (plot them with their own kind, e.g. "
            "commit_apply, or select them).")
    return results._subset(groups[keep]), note


def _toggle(results: Results, param: str, names: dict[Any, str], title: str,
            missing_label: str = "plain store") -> Figure:
    _store_only(results, title)
    _need(results, param, title)
    results, note = _one_scale(results, param)
    scale, unit = _time_unit([m.median for m in results])
    fig = _bar_chart(results, param, names, _scaled(scale),
                     xlabel="workload (store operation, with what else tells the bars apart)",
                     ylabel=f"latency ({unit} per operation)", title=title,
                     missing_label=missing_label)
    return _finish(fig, results, note)


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
    names = _label_names([p for p, _ in sel], skip=["workload"], key=lambda p: p["workload"])
    scale, unit = _time_unit([m.median for _, m in sel])
    to_unit = _scaled(scale)
    categories: list[str] = []
    series: Series = {}
    for p, m in sel:
        cat = _point_label(p, names)
        if cat not in categories:
            categories.append(cat)
        if p["workload"] == "commit":
            series.setdefault("commit (blocked until durable)", {})[cat] = _interval(m, to_unit)
        else:
            series.setdefault("apply: caller blocked", {})[cat] = _interval(m, to_unit)
            series.setdefault("apply: until durable", {})[cat] = _interval(
                m, to_unit, samples=_durable_samples(m))
    fig, ax = _figure(_width(len(categories) * len(series)))
    _bars(ax, categories, series)
    ax.set_xlabel("store configuration (what tells the groups apart)")
    ax.set_ylabel(f"time per edit ({unit})\nbatch puts + commit or apply", fontsize=9)
    ax.set_title("Commit vs apply: blocked vs durable")
    _legend_right(ax, len(series))
    return _finish(fig, Results(results.target, [p for p, _ in sel], [m for _, m in sel],
                                machine=results.machine),
                   "Until durable: 95% interval of the median of the background writes' times.")


def plot_stages(results: Results) -> Figure:
    """Where a put/get spends its time: SIV, nonce, AEAD, Base64, lookup, I/O, as stacked bars."""
    _store_only(results, "plot_stages")
    sel = [(p, m) for p, m in _store_items(results) if m.stages]
    if not sel:
        raise ValueError("plot_stages needs store results with a stage breakdown (put/get "
                         "workloads with stages=True)")
    names = _label_names([p for p, _ in sel])
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
    many = len(sel) > 3
    ax.set_xticks(range(len(sel)), labels, rotation=30 if many else 0,
                  ha="right" if many else "center", rotation_mode="anchor", fontsize=8)
    ax.set_xlabel("point (parameters that tell the points apart)")
    ax.set_ylabel("time (ns per operation)")
    ax.set_title("Stage breakdown of store operations")
    _legend_right(ax, len(_STAGES) + 1)
    ax.grid(True, axis="y", alpha=0.3)
    return _finish(fig, results, "Stages are timed in a separate instrumented run.", error_bars=False)


def plot_footprint(results: Results) -> Figure:
    """Footprint per entry: heap bytes the store holds and bytes of its file on disk."""
    _store_only(results, "plot_footprint")
    sel = _store_items(results)
    if not sel:
        raise ValueError("plot_footprint needs store results")
    names = _label_names([p for p, _ in sel], skip=["workload"])
    categories: list[str] = []
    series: Series = {"heap (memory)": {}, "disk (file)": {}}
    for p, m in sel:
        cat = _point_label(p, names)
        if cat in categories:
            continue  # the same store measured by several workloads
        categories.append(cat)
        heap, disk = m.heap_bytes_per_entry, m.disk_bytes_per_entry
        series["heap (memory)"][cat] = (heap, heap, heap)
        series["disk (file)"][cat] = (disk, disk, disk)
    fig, ax = _figure(_width(2 * len(categories)))
    _bars(ax, categories, series, errors=False)
    ax.set_xlabel("store configuration (what tells the stores apart)")
    ax.set_ylabel("footprint (bytes per entry)")
    ax.set_title("Footprint per entry: heap vs disk")
    _legend_right(ax, len(series))
    return _finish(fig, results, error_bars=False)


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

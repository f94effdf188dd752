"""pycipherbench.plot: every plot returns a Figure with labelled axes (units) and a machine caption.

Synthetic results (no timing) drive every plot function; one tiny real sweep goes
through plot_auto. Agg backend throughout.
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
import sys
from typing import Any

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from matplotlib.container import BarContainer, ErrorbarContainer  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import pycipherbench as pcb  # noqa: E402
import synthetic  # noqa: E402
from pycipherbench import Measurement, Results  # noqa: E402
from pycipherbench import plot  # noqa: E402
from pycipherbench._record import Record  # noqa: E402
from pycipherbench.store import StoreMeasurement  # noqa: E402

UNIT = re.compile(r"\(.+\)")
RNG = np.random.default_rng(0)


def spread(median: float) -> np.ndarray:
    """Five samples around ``median``."""
    return median * (1 + RNG.normal(0, 0.02, 5))


def meas(median: float, **kw: Any) -> Measurement:
    return synthetic.cipher(spread(median), iterations=10, **kw)


def results(target: str, rows: list[tuple[dict[str, Any], Record]]) -> Results:
    return Results(target, [p for p, _ in rows], [m for _, m in rows])


def throughput_results() -> Results:
    return results("cipher", [({"transformation": t, "payload": n}, meas(50 + n * k, transformation=t, payload=n))
                              for t, k in (("AES/GCM/NoPadding", 0.3), ("TEA-ref/ECB/NoPadding", 10.0))
                              for n in (16, 256, 4096)])


def seed_results() -> Results:
    rows = []
    for t, fast in (("AES/ECB/PKCS5Padding", 1.0), ("DES/ECB/NoPadding", 100.0), ("TEA/ECB/NoPadding", 5.0)):
        for op in ("enc", "dec"):
            for hw in (True, False):
                slow = 30.0 if t.startswith("AES") and not hw else 1.0
                rows.append(({"transformation": t, "op": op, "hw_aes": hw},
                             meas(1000 * fast * slow, transformation=t, op=op, hw_aes=hw)))
    return results("cipher", rows)


def rounds_results() -> Results:
    rows = [({"transformation": t, "rounds": r}, meas(k * r, transformation=t, rounds=r))
            for t, k in (("TEA/ECB/NoPadding", 20.0), ("TEA-ref/ECB/NoPadding", 400.0))
            for r in (8, 16, 32)]
    rows.append(({"transformation": "AES/CTR/NoPadding"}, meas(300.0, transformation="AES/CTR/NoPadding")))
    return results("cipher", rows)


def store_meas(median: float, workload: str, encrypted: bool, n_keys: int) -> StoreMeasurement:
    stages = None
    if workload in ("put", "get"):
        stages = {"siv": 290.0 * encrypted, "nonce": 30.0 * encrypted, "aead": 270.0 * encrypted,
                  "base64": 45.0, "lookup": 40.0, "io": 0.0, "total": 700.0 if encrypted else 100.0}
    return synthetic.store(
        spread(median), workload=workload, encrypted=encrypted, iterations=10, stages=stages,
        durable=[9e6, 1e7, 1.1e7] if workload == "apply" else None, entries=n_keys,
        heap_bytes=(400 if encrypted else 190) * n_keys, disk_bytes=(210 if encrypted else 95) * n_keys,
        params={"n_keys": n_keys})


def store_results(**extra_axes: list[Any]) -> Results:
    """workload x encrypted (x extra axes, which apply to encrypted stores only)."""
    rows = []
    base = {"put": 800.0, "get": 600.0, "commit": 1e7, "apply": 5e4}
    for wl, t in base.items():
        for enc in (True, False):
            combos: list[dict[str, Any]] = [{}]
            if enc:
                for name, values in extra_axes.items():
                    combos = [{**c, name: v} for c in combos for v in values]
            for c in combos:
                for n in (10, 100, 1000):
                    p = {"workload": wl, "encrypted": enc, **c, "n_keys": n}
                    factor = (1 + 0.1 * len(c)) * (1 + n / 1e4) * (1.0 if enc else 0.2)
                    rows.append((p, store_meas(t * factor, wl, enc, n)))
    return results("store", rows)


def check(fig: Figure, machine: dict[str, Any]) -> None:
    assert isinstance(fig, Figure)
    axes = [ax for ax in fig.axes if ax.has_data()]
    assert axes
    for ax in axes:
        for label in (ax.get_xlabel(), ax.get_ylabel()):
            assert label and UNIT.search(label), f"axis label without a unit: {label!r}"
    caption = " ".join(t.get_text() for t in fig.texts)
    assert machine["cpu_model"] in caption and machine["openssl_version"] in caption
    fig.savefig(io.BytesIO(), format="png", dpi=50)


CASES = [
    (plot.plot_throughput, throughput_results),
    (plot.plot_seed_table, seed_results),
    (plot.plot_rounds, rounds_results),
    (plot.plot_latency, seed_results),
    (plot.plot_store_latency, store_results),
    (plot.plot_siv, lambda: store_results(key_encryption=["siv", "none"]).select(n_keys=10)),
    (plot.plot_cache, lambda: store_results(cache=[False, True]).select(n_keys=10)),
    (plot.plot_faithful, lambda: store_results(faithful=[False, True]).select(n_keys=10)),
    (plot.plot_commit_apply, lambda: store_results().select(n_keys=10)),
    (plot.plot_stages, lambda: store_results().select(n_keys=10)),
    (plot.plot_footprint, store_results),
]


@pytest.mark.parametrize("fn, make", CASES, ids=[fn.__name__ for fn, _ in CASES])
def test_plot_returns_labelled_figure(fn: Any, make: Any) -> None:
    r = make()
    check(fn(r), r.machine)


def test_every_plot_is_covered() -> None:
    assert {fn.__name__ for fn, _ in CASES} == {fn.__name__ for fn in plot.PLOTS.values()}


def test_throughput_is_log_log() -> None:
    ax = plot.plot_throughput(throughput_results()).axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert len(errorbar_lines(ax)) == 2  # one line with error bars per kernel


def test_plot_auto_picks_from_swept_parameters() -> None:
    assert plot.choose_plot(throughput_results()) == "throughput"
    assert plot.choose_plot(seed_results()) == "seed_table"
    assert plot.choose_plot(rounds_results()) == "rounds"
    assert plot.choose_plot(store_results()) == "store_latency"
    assert plot.choose_plot(store_results(key_encryption=["siv", "none"]).select(n_keys=10)) == "siv"
    assert plot.choose_plot(store_results(cache=[False, True]).select(n_keys=10)) == "cache"
    assert plot.choose_plot(store_results().select(n_keys=10)) == "commit_apply"
    only_get = store_results().select(n_keys=10, workload="get")
    assert plot.choose_plot(only_get) == "stages"
    r = throughput_results()
    check(plot.plot_auto(r), r.machine)


def test_plot_auto_on_a_real_sweep() -> None:
    r = pcb.sweep("store", workload=["put", "get"], encrypted=[True, False], n_keys=[10, 20, 40],
                  min_time=0.001, repeats=2, warmup=0, progress=False)
    check(plot.plot_auto(r), r.machine)
    check(plot.plot_stages(r), r.machine)


def test_wrong_results_give_clear_errors() -> None:
    with pytest.raises(ValueError, match="parameter 'rounds'"):
        plot.plot_rounds(throughput_results())
    with pytest.raises(ValueError, match="store results"):
        plot.plot_siv(throughput_results())


def test_without_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        plot.plot_throughput(throughput_results())


# -- what the fixes of the first-user review guarantee

def caption(fig: Figure) -> str:
    return " ".join(t.get_text() for t in fig.texts)


def errorbar_lines(ax: Any) -> list[ErrorbarContainer]:
    return [c for c in ax.containers if isinstance(c, ErrorbarContainer)]


def drawn(fig: Figure) -> Any:
    """The figure's renderer after a draw (for text extents)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def speed_json(tmp_path: Any, hw: bool) -> Any:
    """A file as `pycipherbench speed --json` writes it (every record AES on, or every one off)."""
    ms = [meas(1e6 * k, transformation=t, op=op, payload=1 << 20, hw_aes=hw,
               hw_mask=None if hw else "OPENSSL_ia32cap=~0x200000200000000")
          for t, k in (("AES/ECB/PKCS5Padding", 1.0), ("DES/ECB/NoPadding", 120.0),
                       ("DESede/ECB/NoPadding", 350.0), ("TEA-ref/ECB/NoPadding", 125.0))
          for op in ("enc", "dec")]
    path = tmp_path / ("speed.json" if hw else "nohw.json")
    path.write_text(json.dumps({"machine": ms[0].machine, "payload": 1 << 20, "hw_aes": hw,
                                "results": [m.to_dict() for m in ms]}))
    return path


def test_seed_table_title_and_footer_describe_the_data(tmp_path) -> None:
    r = pcb.load_results(speed_json(tmp_path, hw=True))
    assert plot.choose_plot(r) == "seed_table"
    fig = plot.plot_auto(r)
    title = fig.axes[0].get_title()
    assert "hardware AES on" in title and "off" not in title and "1 MiB" in title
    assert "Hardware AES: on" in caption(fig)
    assert "hidden" not in caption(fig) and "masked" not in caption(fig).lower()

    fig = plot.plot_auto(pcb.load_results(speed_json(tmp_path, hw=False)))
    assert fig.axes[0].get_title().endswith("hardware AES off")
    assert "off for every point" in caption(fig) and "OPENSSL_ia32cap" in caption(fig)

    fig = plot.plot_seed_table(seed_results())
    assert fig.axes[0].get_title().endswith("hardware AES on vs off")
    assert "off where marked" in caption(fig) and "Hatched" in caption(fig)


def test_seed_table_labels_are_legible(tmp_path) -> None:
    """Horizontal bars: transformation labels on the y axis that do not overlap, and every bar
    (DES and 3DES included) labelled with its value."""
    fig = plot.plot_auto(pcb.load_results(speed_json(tmp_path, hw=True)))
    ax = fig.axes[0]
    renderer = drawn(fig)
    labels = [t for t in ax.get_yticklabels() if t.get_text()]
    assert [t.get_text() for t in labels] == ["AES/ECB/PKCS5Padding", "DES/ECB/NoPadding",
                                              "DESede/ECB/NoPadding", "TEA-ref/ECB/NoPadding"]
    boxes = [t.get_window_extent(renderer) for t in labels]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    bars = [b for c in ax.containers if isinstance(c, BarContainer) for b in c]
    assert len(bars) == 8
    values = [t.get_text() for t in ax.texts]
    assert len(values) == 8 and all(re.fullmatch(r"[\d,.]+", v) for v in values)
    slowest = min(b.get_width() for b in bars)  # 3DES: ~350x slower than AES
    assert ax.get_xlim()[0] < slowest / 2, "the slowest bar should have a visible length"


def test_store_labels_show_only_distinguishing_parameters(tmp_path) -> None:
    """`pycipherbench store --json`: min_time (a run setting) only on the apply points, n_keys
    the same wherever it applies; labels in user terms, bars centred on their labels; only
    the per-operation workloads (commits and opens take times of another order: not mixed
    into one chart, and the footer says they were left out)."""
    rows = []
    for wl, batch, t in (("put", None, 600.0), ("get", None, 500.0), ("commit", 100, 5e5),
                         ("commit", 1, 4e5), ("apply", 1, 3e3), ("open_cold", None, 9e3)):
        for enc in (False, True):
            p: dict[str, Any] = {"workload": wl, "encrypted": enc}
            if enc:
                p["faithful"] = False
            if wl != "open_cold":
                p["n_keys"] = 100
            if batch is not None:
                p["batch"] = batch
            if wl == "apply":
                p["min_time"] = 5e-05
            rows.append((p, store_meas(t * (2 if enc else 1), wl, enc, 100)))
    rows.append(({"workload": "get", "encrypted": True, "faithful": True, "n_keys": 100},
                 store_meas(1100.0, "get", True, 100)))
    path = tmp_path / "store.json"
    results("store", rows).save(path)
    fig = plot.plot_auto(pcb.load_results(path))
    ax = fig.axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks == ["put", "get"]
    footer = " ".join(t.get_text() for t in fig.texts)
    assert "Only the per-operation workloads" in footer
    assert "100-put edits" in footer and "commit/apply" in footer and "open" in footer
    assert not any("=" in t or "min_time" in t or "encrypted" in t for t in ticks)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "plain store", "lean", "faithful (ESP's per-call work)"]
    centres: dict[int, list[float]] = {}
    for c in ax.containers:
        if isinstance(c, BarContainer):
            for b in c:
                x = b.get_x() + b.get_width() / 2
                centres.setdefault(round(x), []).append(x)
    assert sorted(centres) == list(range(len(ticks)))
    for tick, xs in centres.items():
        assert np.mean(xs) == pytest.approx(tick), f"bars of {ticks[tick]!r} off-centre"


def twelve_kernels(hw_off: bool = False) -> Results:
    kernels = ["AES/ECB/NoPadding", "AES/CBC/NoPadding", "AES/CTR/NoPadding", "AES/GCM/NoPadding",
               "AES/SIV/NoPadding", "ChaCha20-Poly1305", "DES/CBC/NoPadding", "DESede/CBC/NoPadding",
               "TEA/CTR/NoPadding", "TEA-ref/CTR/NoPadding", "XTEA/CTR/NoPadding", "XTEA-ref/CTR/NoPadding"]
    rows = []
    for i, t in enumerate(kernels):
        for hw in ((True, False) if hw_off else (True,)):
            for n in (16, 256, 4096, 65536):
                p: dict[str, Any] = {"transformation": t, "payload": n}
                if hw_off:
                    p["hw_aes"] = hw
                rows.append((p, meas(60 + n * (i + 1) / (1 if hw else 5), transformation=t,
                                     payload=n, hw_aes=hw)))
    return results("cipher", rows)


@pytest.mark.parametrize("hw_off", [False, True], ids=["12 lines", "24 lines, hw AES on and off"])
def test_throughput_lines_are_distinct_and_legend_is_outside(hw_off: bool) -> None:
    fig = plot.plot_throughput(twelve_kernels(hw_off))
    ax = fig.axes[0]
    lines = {c.get_label(): c.lines[0] for c in errorbar_lines(ax)}
    assert len(lines) == (24 if hw_off else 12)
    styles = [(line.get_color(), line.get_marker(), line.get_linestyle()) for line in lines.values()]
    assert len(set(styles)) == len(styles), "two lines look the same"
    for label, line in lines.items():
        off, ref = "hardware AES off" in label, "-ref/" in label
        assert line.get_linestyle() == {(False, False): "-", (True, False): "--",
                                        (False, True): "-.", (True, True): ":"}[(off, ref)], label
    if hw_off:  # the on/off pair of a kernel differs by more than its legend entry
        on = lines["AES/GCM/NoPadding, hardware AES on"]
        off_line = lines["AES/GCM/NoPadding, hardware AES off"]
        assert on.get_linestyle() != off_line.get_linestyle()
        assert on.get_markerfacecolor() != off_line.get_markerfacecolor()
    renderer = drawn(fig)
    legend = ax.get_legend()
    assert legend is not None
    box, axes_box = legend.get_window_extent(renderer), ax.get_window_extent(renderer)
    assert box.y1 < axes_box.y0, "the legend must sit below the axes, covering no data"
    assert not box.overlaps(ax.xaxis.label.get_window_extent(renderer))
    assert box.y0 > 0 and box.x0 >= 0 and box.x1 <= fig.bbox.x1, "the legend must stay in the figure"
    text = caption(fig).lower()
    assert "dash-dotted: the one-block-at-a-time reference kernel" in text
    assert ("dashed, open markers: hardware aes off" in text) == hw_off


def test_long_legend_labels_stay_in_the_figure() -> None:
    rows = [({"transformation": t, "iv_len": iv, "payload": n, "hw_aes": hw},
             meas(100 + n / (5 if hw else 1), transformation=t, payload=n, hw_aes=hw))
            for t in ("AES/GCM/NoPadding", "AES/CTR/NoPadding") for iv in (12, 16)
            for hw in (True, False) for n in (16, 4096)]
    fig = plot.plot_throughput(results("cipher", rows))
    renderer = drawn(fig)
    box = fig.axes[0].get_legend().get_window_extent(renderer)
    assert box.x0 >= 0 and box.x1 <= fig.bbox.x1 and box.y0 > 0
    assert "AES/GCM/NoPadding, 12-byte IV, hardware AES off" in [
        t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def fig_rounds(results) -> int:
    return min(m.n_rounds for m in results)


def bars_words(n: int) -> str:
    """What the footer must call error bars from n rounds: their coverage (95% from 6
    rounds; below, the coverage the range of n rounds attains)."""
    from pycipherbench.stats import interval_words

    return interval_words(n).partition(": ")[0]


def test_every_median_plot_has_error_bars() -> None:
    for fn, make in ((plot.plot_throughput, throughput_results), (plot.plot_rounds, rounds_results),
                     (plot.plot_store_latency, store_results)):
        ax = fn(make()).axes[0]
        assert errorbar_lines(ax) and all(c.has_yerr for c in errorbar_lines(ax)), fn.__name__
    for fn, make in ((plot.plot_seed_table, seed_results), (plot.plot_latency, seed_results),
                     (plot.plot_commit_apply, lambda: store_results().select(n_keys=10)),
                     (plot.plot_siv, lambda: store_results(key_encryption=["siv", "none"]).select(n_keys=10))):
        fig = fn(make())
        bars = [c for c in fig.axes[0].containers if isinstance(c, BarContainer)]
        assert bars and all(c.errorbar is not None for c in bars), fn.__name__
        assert f"error bars: {bars_words(fig_rounds(make()))} of the median" in caption(fig)


def test_interval_uses_ci_and_converts_units() -> None:
    m = synthetic.cipher([900.0, 960.0, 980.0, 990.0, 1000.0, 1010.0, 1020.0, 1040.0, 1100.0,
                          1200.0], payload=1000)
    assert m.ci == (960.0, 1100.0)  # 10 rounds: the 2nd and 9th order statistics
    med, lo, hi = plot._interval(m, plot._mb_per_s)  # inverted into MB/s: the bounds swap
    assert med == pytest.approx(1e6 / m.median)
    assert (lo, hi) == (pytest.approx(1e6 / 1100), pytest.approx(1e6 / 960))
    med, lo, hi = plot._interval(m, plot._scaled(1e3))  # ns -> us
    assert (med, lo, hi) == (pytest.approx(1.005), pytest.approx(0.96), pytest.approx(1.1))
    # Given samples (an apply's time until durable): their interval, not the record's.
    med, lo, hi = plot._interval(m, plot._scaled(1.0), samples=np.arange(1.0, 11.0))
    assert (med, lo, hi) == (5.5, 2.0, 9.0)


def test_error_bars_follow_ci_and_the_caption_says_so() -> None:
    r = throughput_results()
    fig = plot.plot_throughput(r)
    words = bars_words(fig_rounds(r))
    assert f"{words} of the median" in caption(fig)
    container = errorbar_lines(fig.axes[0])[0]
    x, y = container.lines[0].get_data()
    segments = container.lines[2][0].get_segments()
    m0 = r.select(transformation=r.params[0]["transformation"], payload=int(x[0])).measurements[0]
    low, high = segments[0][:, 1].min(), segments[0][:, 1].max()
    assert (low, high) == (pytest.approx(m0.payload * 1e3 / m0.ci[1]),
                           pytest.approx(m0.payload * 1e3 / m0.ci[0]))


def test_footer_names_the_machine_of_the_records() -> None:
    r = seed_results()
    text = caption(plot.plot_seed_table(r))
    assert text.startswith(f"Measured on {r.machine['cpu_model']}") and r.machine["openssl_version"] in text
    other = dict(r.machine, cpu_model="Some Phone SoC", openssl_version="OpenSSL 3.2.0")
    ms = [dataclasses.replace(m, machine=other) if i % 2 else m for i, m in enumerate(r)]
    text = caption(plot.plot_seed_table(Results("cipher", r.params, ms, machine=r.machine)))
    assert "2 different machines" in text and "Some Phone SoC" in text and "OpenSSL 3.2.0" in text


def test_footer_says_the_coverage_of_few_rounds() -> None:
    """3 rounds: the error bars are the range, which covers the median 75% of the time;
    1 round: no interval. The footer says so, computed from the records."""
    three = synthetic.cipher([900.0, 1000.0, 1100.0], payload=1000)
    text = plot._spread_text([three])
    assert "75% interval of the median (the range of 3 rounds; 95% needs 6)" in text
    one = synthetic.cipher([900.0], payload=1000)
    assert "no interval" in plot._spread_text([one]) and "95%" not in plot._spread_text([one])

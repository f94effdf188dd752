"""pycipherbench.plot: every plot returns a Figure with labelled axes (units) and a machine caption.

Synthetic results (no timing) drive every plot function; one tiny real sweep goes
through plot_auto. Agg backend throughout.
"""

from __future__ import annotations

import io
import re
import sys
from typing import Any

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

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
    assert len(ax.collections) == 2  # one IQR band per kernel


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

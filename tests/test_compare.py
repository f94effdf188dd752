"""pycipherbench.compare (Results.compare): matching, speedups, verdicts, the machine check.

Synthetic samples throughout (no timing).
"""

from __future__ import annotations

import pytest
from synthetic import GCM, cipher, cipher_results

from pycipherbench import Results
from pycipherbench.compare import DifferentMachinesError


def test_compare_verdicts_on_synthetic_samples() -> None:
    base = cipher_results()
    faster = cipher_results(shift=0.5, seed=1)  # half the time: twice as fast
    cmp = faster.compare(base)
    assert len(cmp) == 4 and {c.verdict for c in cmp} == {"faster"}
    assert all(c.speedup == pytest.approx(2.0, rel=0.05) and c.p_value < 0.001 for c in cmp)
    assert {c.verdict for c in base.compare(faster)} == {"slower"}
    # The same distribution: each sample a hair above one of the baseline's (interleaved).
    interleaved = Results("cipher", base.params, [cipher(m.samples + 1e-6) for m in base])
    cmp_same = interleaved.compare(base)
    assert {c.verdict for c in cmp_same} == {"no significant difference"}
    assert all(c.p_value > 0.5 for c in cmp_same)
    assert {c.p_value for c in base.compare(base)} == {1.0}
    arr = cmp.to_numpy()
    assert arr["verdict"][0] == "faster" and arr["speedup"][0] == pytest.approx(2.0, rel=0.05)
    assert "faster" in cmp.table() and "Mann-Whitney" in str(cmp)


def test_compare_refuses_different_machines() -> None:
    base = cipher_results()
    other = cipher_results(shift=0.5)
    other.machine = {**other.machine, "cpu_model": "Another CPU", "openssl_version": "OpenSSL 3.9"}
    with pytest.raises(DifferentMachinesError, match="different machines.*allow_different_machines"):
        other.compare(base)
    cmp = other.compare(base, allow_different_machines=True)
    assert len(cmp) == 4 and any("cpu_model" in d for d in cmp.machine_differences)
    assert "WARNING: different machines" in cmp.table()


def test_compare_matching_ignore_and_unmatched() -> None:
    base = cipher_results()
    off = Results("cipher", [{**p, "hw_aes": False} for p in base.params], base.measurements)
    assert len(off.compare(base)) == 1  # only the point that was hw_aes=False in both
    cmp = off.compare(base, ignore=["hw_aes"])
    assert len(cmp) == 4 and "hw_aes" not in cmp.param_names
    partial = base.select(transformation=GCM).compare(base)
    assert len(partial) == 2 and len(partial.unmatched_baseline) == 2 and partial.unmatched == []

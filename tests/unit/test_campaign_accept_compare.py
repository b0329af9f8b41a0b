"""The campaign comparison of acceptance cells (pure): groups ranked by throughput, each
factor's effect on throughput and on loss ratio with the same test rules as PDR, checked
against scipy."""

from __future__ import annotations

import pytest
from scipy import stats

from netassay import methods as registry
from netassay.analysis import compare


def _row(buf, block, bps, loss, verdict="PASS"):
    return {
        "factors": {"socket_buffer": buf},
        "block": block,
        "verdict": verdict,
        "throughput_bps": bps,
        "loss_ratio": loss,
        "failed_seconds": 0 if verdict == "PASS" else 3,
        "cpu_busy": {"cpu0": 0.5, "cpu1": 0.25},
    }


ROWS = [
    _row("default", 1, 90e6, 0.02, "FAIL"),
    _row("default", 2, 92e6, 0.015, "FAIL"),
    _row("default", 3, 91e6, 0.018, "FAIL"),
    _row("4M", 1, 99e6, 0.0, "PASS"),
    _row("4M", 2, 99.5e6, 0.0001, "PASS"),
    _row("4M", 3, 98e6, 0.0, "PASS"),
]


def test_groups_of_accept_cells_are_ranked_by_throughput():
    gs = compare.groups(
        ROWS, ["socket_buffer"], lambda f, v: v, registry.method("accept").comparison.figures
    )
    best = min(gs, key=lambda g: g["rank"])
    assert best["levels"] == {"socket_buffer": "4M"} and best["verdicts"] == {"PASS": 3}
    assert best["throughput_bps"]["median"] == 99e6
    assert best["loss_ratio"]["max"] == 0.0001 and best["failed_seconds"]["median"] == 0
    assert "pdr_pps" not in best and "worst_delta_ucl95_below_pdr" not in best
    assert best["cpu_busy"] == {"cpu0": 0.5, "cpu1": 0.25}


def test_effect_on_throughput_paired_by_block_is_wilcoxon_as_for_pdr():
    e = compare.effect(ROWS, "socket_buffer", ["default", "4M"], True, float, "throughput_bps")
    (c,) = e["comparisons"]
    assert e["metric"] == "throughput_bps" and c["test"] == "Wilcoxon signed-rank"
    diffs = [99e6 - 90e6, 99.5e6 - 92e6, 98e6 - 91e6]
    assert c["p"] == pytest.approx(stats.wilcoxon(diffs).pvalue)
    # Walsh averages of 9, 7.5, 7 Mbit/s: 7, 7.25, 7.5, 8, 8.25, 9; their median 7.75
    assert c["hodges_lehmann_bps"] == pytest.approx(7.75e6)
    assert c["cliffs_delta"] == 1.0 and c["effect"] == "large"


def test_effect_on_loss_without_pairs_is_mann_whitney():
    rows = [r for r in ROWS if r["block"] != 3]
    rows.append(_row("4M", 4, 99e6, 0.0))  # an unpaired block: independent groups
    e = compare.effect(rows, "socket_buffer", ["default", "4M"], False, float, "loss_ratio")
    (c,) = e["comparisons"]
    assert c["test"] == "Mann-Whitney U" and (c["n_a"], c["n_b"]) == (2, 3)
    want = stats.mannwhitneyu([0.0, 0.0001, 0.0], [0.02, 0.015], alternative="two-sided")
    assert c["statistic"] == pytest.approx(want.statistic)
    assert c["p"] == pytest.approx(want.pvalue)
    assert c["cliffs_delta"] == -1.0 and c["hodges_lehmann_ratio"] < 0

"""Saturation detection and the verdict on synthetic curves with known answers."""

import numpy as np
import pytest

from netassay.analysis.saturation import BAD, GOOD, INCONCLUSIVE, detect_saturation
from netassay.analysis.stats import load_table, tir
from netassay.analysis.synthetic import ideal_plr, realistic_throughput


def _verdict(rates, plr, mode="described", **kw):
    rates = np.asarray(rates, dtype=float)
    t = load_table(np.arange(rates.size), rates, np.asarray(plr, dtype=float))
    return detect_saturation(t.rate_pps, t.plr, t.tir, mode=mode, **kw)


LOADS = np.arange(1, 21) * 1e5  # 0.1 .. 2.0 Mpps


@pytest.mark.parametrize("mode", ["described", "published"])
def test_ideal_curve_of_eq3_is_good(mode):
    s = _verdict(LOADS, ideal_plr(LOADS, 1e6), mode)
    assert s.verdict == GOOD
    # PLR(1.1M) = 1 - 1/1.1 = 0.0909 > 0.5%: past-PDR index 10, potential 11
    assert (s.past_pdr_index, s.potential_saturation_index, s.saturation_index) == (10, 11, 11)


@pytest.mark.parametrize("mode", ["described", "published"])
def test_realistic_curve_of_fig4_is_good(mode):
    plr = 1 - realistic_throughput(LOADS) / LOADS
    assert 0 < plr[5] < 1e-6  # small losses well before saturation
    assert plr[9] == pytest.approx(0.01)  # PLR at O_sat = 1%
    s = _verdict(LOADS, plr, mode)
    assert s.verdict == GOOD
    assert s.potential_saturation_index == 10


def test_slow_rise_beyond_pdr_is_bad():
    # loss grows slowly past PDR (TIR ~ 0.6), saturation only much later
    plr = [0, 0, 0, 0.001, 0.006, 0.03, 0.06, 0.09, 0.3, 0.45]
    s = _verdict(np.arange(1, 11) * 1e5, plr)
    assert s.verdict == BAD
    assert s.potential_saturation_index == 5
    assert s.saturation_index == 8
    assert "later than" in s.reason


def test_loss_that_comes_and_goes_is_bad():
    # saturated at the potential point, then throughput jumps again (TIR > eta)
    rates = np.arange(1, 8) * 1e5
    thr = np.array([1, 2, 3, 3.0, 3.0, 5.5, 5.5]) * 1e5
    s = _verdict(rates, 1 - thr / rates)
    assert s.verdict == BAD
    assert s.exits == (5,)
    assert "left again" in s.reason


def test_no_loss_beyond_pdr_is_inconclusive_or_bad_when_published():
    plr = [0, 0, 1e-5, 1e-4, 0.004]
    assert _verdict(np.arange(1, 6) * 1e5, plr).verdict == INCONCLUSIVE
    assert _verdict(np.arange(1, 6) * 1e5, plr, "published").verdict == BAD


def test_loss_beyond_pdr_only_at_last_load_is_inconclusive():
    s = _verdict(np.arange(1, 6) * 1e5, [0, 0, 0, 0, 0.2])
    assert s.verdict == INCONCLUSIVE
    assert s.past_pdr_index == 4 and s.potential_saturation_index is None
    assert "last load" in s.reason


def test_published_mode_takes_the_first_load_as_saturated():
    # TIR at the potential point is 0.5: above 3*eta, so 'described' does not enter;
    # the notebook's condition is always true there, so 'published' says GOOD
    rates = np.arange(1, 7) * 1e5
    thr = np.array([1, 2, 2.95, 3.45, 3.46, 3.47]) * 1e5
    plr = 1 - thr / rates
    assert _verdict(rates, plr, "published").verdict == GOOD
    d = _verdict(rates, plr)
    assert d.verdict == BAD and d.saturation_index == 4


def test_entry_threshold_is_entry_factor_times_eta():
    rates = np.arange(1, 6) * 1e5
    thr = np.array([1, 2, 2.95, 3.2, 3.21]) * 1e5  # TIR at potential (3) = 0.25
    plr = 1 - thr / rates
    assert _verdict(rates, plr).verdict == GOOD
    assert _verdict(rates, plr, entry_factor=2.0).verdict == BAD


def test_single_confirming_load_warns():
    s = _verdict(np.arange(1, 5) * 1e5, [0, 0, 0.1, 0.4])
    assert s.verdict == GOOD
    assert any("single load" in w for w in s.warnings)


def test_pdr_below_the_range_is_inconclusive_when_described():
    # per-load PLR 0.01, 0.5, 0.66, 0.75 at 100..400 kpps: T = 99k, 100k, 102k, 100k,
    # TIR = 0.01, 0.02, -0.02: saturated from the potential point (index 1) to the end,
    # but the lowest load already loses 1% > 0.5%, so PDR lies below the tested range
    rates = np.arange(1, 5) * 1e5
    plr = [0.01, 0.5, 0.66, 0.75]
    d = _verdict(rates, plr)
    assert d.verdict == INCONCLUSIVE
    assert (d.past_pdr_index, d.potential_saturation_index, d.saturation_index) == (0, 1, 1)
    assert "below the tested range" in d.reason and "start the range lower" in d.reason
    assert _verdict(rates, plr, "published").verdict == GOOD  # the notebook, as it is


def test_pdr_below_the_range_stays_bad_on_measured_evidence():
    # lowest load loses 1%, then TIR 0.5 at the potential point: not saturated there,
    # whatever lies below the range -> BAD (like the real ebpf file)
    rates = np.arange(1, 5) * 1e5
    thr = np.array([0.99, 1.49, 1.5, 1.5]) * 1e5  # TIR 0.5, 0.01, 0
    s = _verdict(rates, 1 - thr / rates)
    assert s.verdict == BAD and s.past_pdr_index == 0


def _sat(tir, plr, mode="described", **kw):
    rates = np.arange(1, len(tir) + 1) * 1e5
    return detect_saturation(rates, np.array(plr), np.array(tir), mode=mode, **kw)


def test_described_stays_saturated_while_tir_equals_eta():
    # paper, section V-A: stay while TIR "remains below or equal to" eta
    tir = [np.nan, 1.0, 1.0, 0.2, 0.1, 0.1]
    plr = [0, 0, 0, 0.01, 0.2, 0.3]  # past-PDR 3, potential 4
    d = _sat(tir, plr)
    assert d.verdict == GOOD and d.saturation_index == 4 and d.exits == ()
    p = _sat(tir, plr, "published")  # the notebook: TIR < eta to stay
    assert p.verdict == BAD and p.exits == (5,)


def test_described_entry_stays_strict():
    # entering needs TIR < entry_factor * eta; exactly at the threshold does not enter
    tir = [np.nan, 1.0, 1.0, 0.2, 3.0 * 0.1, 0.0]
    s = _sat(tir, [0, 0, 0, 0.01, 0.2, 0.3])
    assert s.verdict == BAD and s.saturation_index == 5


def _gap_verdict(thr_kpps, mode="described"):
    """Loads 100, 200, ... kpps with the given throughput; nan = load not measured."""
    rates = np.arange(1, len(thr_kpps) + 1) * 1e5
    plr = 1 - np.array(thr_kpps, dtype=float) * 1e3 / rates
    t = tir(rates, rates * (1 - plr))
    reasons = ["all 3 trials excluded: generator limit" if np.isnan(p) else "" for p in plr]
    return detect_saturation(rates, plr, t, mode=mode, reasons=reasons)


def test_a_gap_after_the_potential_point_cannot_confirm_saturation():
    # T = 100..300k, then flat at 300k; 600 kpps not measured. Without the gap row the
    # TIR from 500k to 700k would be 0 and the verdict GOOD
    s = _gap_verdict([100, 200, 300, 300, 300, np.nan, 300])
    assert s.potential_saturation_index == 4 and s.gaps == (5,)
    assert s.verdict == INCONCLUSIVE and s.saturation_index is None and s.exits == ()
    assert "600 kpps (all 3 trials excluded: generator limit)" in s.reason
    assert "not measured" in s.reason
    assert any("not measured: 600 kpps" in w for w in s.warnings)


def test_a_gap_at_the_potential_point_is_inconclusive():
    s = _gap_verdict([100, 200, 300, 300, np.nan, 300])
    assert s.potential_saturation_index == 4 and s.verdict == INCONCLUSIVE


def test_a_gap_below_the_pdr_point_makes_the_potential_point_uncertain():
    # saturated from the potential point on, but 200 kpps (below it) was not measured:
    # its loss may exceed 0.5%, so the potential point could be lower
    s = _gap_verdict([100, np.nan, 300, 300, 300, 300])
    assert s.saturation_index == s.potential_saturation_index == 4
    assert s.verdict == INCONCLUSIVE and "uncertain" in s.reason


def test_measured_evidence_beyond_a_gap_is_still_bad():
    # 500 kpps not measured, then T rises by 100k from 600k to 700k: TIR 1 > eta
    s = _gap_verdict([100, 200, 300, 300, np.nan, 300, 400])
    assert s.verdict == BAD and "700 kpps" in s.reason and "not saturated" in s.reason


def test_no_load_measured():
    s = _gap_verdict([np.nan, np.nan])
    assert s.verdict == INCONCLUSIVE and s.reason.startswith("no load was measured")
    assert _gap_verdict([np.nan, np.nan], "published").verdict == BAD


def test_a_range_whose_top_the_generator_could_not_pace_is_generator_bound():
    """Issue: a busy host. The SUT forwards everything it was given up to 400 kpps; the
    loads above were generator limits. INCONCLUSIVE, and the reason says why: PDR is at
    least the highest load measured, the generator's reach, not the SUT's."""
    s = _gap_verdict([100, 200, 300, 400, np.nan, np.nan])
    assert s.verdict == INCONCLUSIVE and s.gaps == (4, 5)
    assert s.reason.startswith("generator-bound: the loss never exceeds 0.5% up to 400 kpps")
    assert "PDR@0.5% is at least 400 kpps" in s.reason
    # a gap of another kind in the middle, or a counter fault on top, is no such claim
    assert not _gap_verdict([100, np.nan, 300, 400, np.nan]).reason.startswith("generator")
    rates = np.arange(1, 5) * 1e5
    plr = np.array([0, 0, 0, np.nan])
    other = detect_saturation(
        rates, plr, tir(rates, rates * (1 - plr)), reasons=["", "", "", "all 3 trials "
        "excluded: counter fault"],
    )  # fmt: skip
    assert not other.reason.startswith("generator-bound")


def test_a_generator_gap_after_the_pdr_point_says_so():
    s = _gap_verdict([100, 200, 300, 300, 300, np.nan, 300])
    assert s.verdict == INCONCLUSIVE and s.reason.startswith("generator-bound: load 600 kpps")

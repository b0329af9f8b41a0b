"""Per-load statistics against values computed by hand."""

import math

import numpy as np
import pytest

from netassay.analysis.stats import load_table, t_critical, tir, trial_plr


def test_trial_plr_is_one_minus_rx_over_tx_and_keeps_negative_loss():
    plr = trial_plr(np.array([1000, 1000, 1000]), np.array([990, 1000, 1002]))
    assert plr.tolist() == pytest.approx([0.01, 0.0, -0.002])


def test_t_critical_matches_the_tabulated_student_t_values():
    # t(K-1, 0.975) from any printed table: df 1 -> 12.706, df 2 -> 4.303, df 29 -> 2.045,
    # df 49 -> 2.010
    got = t_critical(np.array([2, 3, 30, 50]))
    assert got == pytest.approx([12.7062, 4.3027, 2.0452, 2.0096], abs=1e-4)
    assert math.isnan(t_critical(np.array([1]))[0])


def test_ucl95_and_delta_by_hand():
    # one load, K = 3, loss ratios 0.01, 0.02, 0.03: mean 0.02, sample std 0.01
    # UCL95 = 0.02 + 4.302653 * 0.01 / sqrt(3) = 0.02 + 0.0248414 = 0.0448414
    t = load_table(np.array([0, 0, 0]), np.full(3, 1e5), np.array([0.01, 0.02, 0.03]))
    assert t.k.tolist() == [3]
    assert t.plr[0] == pytest.approx(0.02)
    assert t.plr_std[0] == pytest.approx(0.01)
    assert t.ucl95[0] == pytest.approx(0.0448414, rel=1e-5)
    assert t.delta_ucl95[0] == pytest.approx(1.242070, rel=1e-5)


def test_throughput_and_tir_by_hand():
    # loads 100k, 200k, 300k with loss 0, 0.1, 0.5: T = 100k, 180k, 150k
    # TIR = (180k-100k)/100k = 0.8, (150k-180k)/100k = -0.3
    li = np.array([0, 1, 2])
    t = load_table(li, np.array([1e5, 2e5, 3e5]), np.array([0.0, 0.1, 0.5]))
    assert t.throughput_pps.tolist() == pytest.approx([1e5, 1.8e5, 1.5e5])
    assert math.isnan(t.tir[0])
    assert t.tir[1:].tolist() == pytest.approx([0.8, -0.3])
    assert t.dr.tolist() == pytest.approx([1.0, 0.9, 0.5])


def test_delta_is_undefined_at_zero_or_negative_loss_and_with_one_trial():
    t = load_table(
        np.array([0, 0, 1, 2, 2]),
        np.array([1, 1, 2, 3, 3.0]),
        np.array([0.0, 0.0, 0.1, -1e-6, -2e-6]),
    )
    assert math.isnan(t.delta_ucl95[0])  # PLR 0
    assert math.isnan(t.ucl95[1]) and math.isnan(t.plr_std[1])  # K = 1
    assert math.isnan(t.delta_ucl95[2])  # PLR < 0


def test_tir_single_load_is_nan():
    assert math.isnan(tir(np.array([1.0]), np.array([1.0]))[0])


def test_empty_table():
    t = load_table(np.array([], dtype=int), np.array([]), np.array([]))
    assert len(t) == 0


def test_a_mean_that_is_zero_up_to_rounding_has_no_delta():
    # +5 and -5 packets of 2,000,000: PLR 2.5e-6 and -2.5e-6, mean 0 up to rounding
    # (5.6e-17 in float64, which made Delta_UCL95 = 5.7e11)
    sent = np.array([2_000_000, 2_000_000])
    plr = trial_plr(sent, np.array([1_999_995, 2_000_005]))
    t = load_table(np.array([0, 0]), np.full(2, 1e5), plr, sent=sent)
    assert abs(t.plr[0]) < 1e-15
    assert math.isnan(t.delta_ucl95[0])
    # without the counts, a few ulps of 1 still count as zero
    assert math.isnan(load_table(np.array([0, 0]), np.full(2, 1e5), plr).delta_ucl95[0])


def test_one_lost_packet_keeps_its_delta():
    # lost 1 and 0 of 2,000,000 (K = 2): mean 2.5e-7 > 0.5/(2 * 2e6) = 1.25e-7;
    # std = 2.5e-7 * sqrt(2); UCL95 - PLR = 12.7062 * std / sqrt(2) -> Delta = 12.7062
    sent = np.array([2_000_000, 2_000_000])
    plr = trial_plr(sent, np.array([1_999_999, 2_000_000]))
    t = load_table(np.array([0, 0]), np.full(2, 1e5), plr, sent=sent)
    assert t.plr[0] == pytest.approx(2.5e-7)
    assert t.delta_ucl95[0] == pytest.approx(12.7062, rel=1e-5)


def test_largest_trial_loss_per_load():
    t = load_table(
        np.array([0, 0, 1, 1]), np.array([1, 1, 2, 2.0]), np.array([2.5e-6, -5e-6, 0, -1e-6])
    )
    assert t.plr_max.tolist() == [2.5e-6, 0.0]


@pytest.mark.parametrize(
    ("rates", "words"),
    [
        ([1e5, 1e5, 2e5], "load 1 (100 kpps) repeats load 0 (100 kpps)"),
        ([2e5, 1e5, 3e5], "load 1 (100 kpps) is below load 0 (200 kpps)"),
    ],
)
def test_duplicate_or_unsorted_loads_are_rejected(rates, words):
    from netassay.errors import InputError

    with pytest.raises(InputError) as e:
        load_table(np.arange(3), np.array(rates), np.zeros(3))
    line = e.value.line()
    assert words in line and "TIR" in line and "increasing order" in line and "\n" not in line


def test_loads_without_trials_keep_their_row_and_break_tir():
    from netassay.store.loads import Loads

    # plan 100..400 kpps; load 2 has no usable trial (all 3 excluded)
    loads = Loads(
        np.array([1e5, 2e5, 3e5, 4e5]),
        np.array([0, 0, 3, 0]),
        ("", "", "all 3 trials excluded: generator limit", ""),
    )
    li = np.array([0, 0, 1, 1, 3, 3])
    t = load_table(
        li, np.repeat([1e5, 2e5, 4e5], 2), np.array([0, 0, 0.1, 0.1, 0.5, 0.5]), loads=loads
    )
    assert t.k.tolist() == [2, 2, 0, 2] and t.excluded.tolist() == [0, 0, 3, 0]
    assert math.isnan(t.plr[2]) and t.reason[2].startswith("all 3 trials excluded")
    # TIR(1) = (180k - 100k)/100k = 0.8; undefined on both sides of the gap
    assert t.tir[1] == pytest.approx(0.8)
    assert math.isnan(t.tir[2]) and math.isnan(t.tir[3])

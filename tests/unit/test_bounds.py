import numpy as np
import pytest

from netassay.analysis.assess import assess_trials
from netassay.analysis.bounds import measured_bound
from netassay.analysis.stats import load_table
from netassay.config import AnalysisConfig

R = np.array([1e5, 2e5, 3e5, 4e5, 5e5])


def test_pdr_is_highest_load_with_every_lower_load_meeting_the_goal():
    b = measured_bound(R, np.array([0, 0.001, 0.004, 0.02, 0.3]), 0.005)
    assert (b.index, b.rate_pps, b.met_again) == (2, 3e5, ())


def test_met_again_after_a_failure_is_reported_not_taken():
    b = measured_bound(R, np.array([0, 0.01, 0.004, 0.003, 0.3]), 0.005)
    assert b.index == 0 and b.met_again == (3e5, 4e5)
    assert "met again at 300 kpps, 400 kpps" in b.describe("PDR")


def test_ndr_needs_every_trial_lossless_and_negative_loss_is_no_credit():
    # NDR is fed each load's largest per-trial loss ratio: a trial with rx > tx counts as
    # zero, never as credit against loss in another trial of the same load
    t = load_table(
        np.repeat(np.arange(5), 2),
        np.repeat(R, 2),
        np.array([-1e-6, 0, 0, 0, 1e-7, -5e-7, 0, 0, 0, 0]),  # load 2: mean < 0, one lost
    )
    assert t.plr[2] < 0 and t.plr_max[2] == 1e-7
    b = measured_bound(R, t.plr_max, 0.0)
    assert b.index == 1 and b.met_again == (4e5, 5e5)
    b = measured_bound(R, np.array([1e-3, 0, 0, 0, 0]), 0.0)
    assert b.index is None and b.below_range and "below the tested range" in b.describe("NDR")


def test_ndr_of_an_assessment_is_not_the_mean():
    # 2,000,000 sent per trial; load 1 lost 5 in one trial and gained 10 in the other:
    # mean PLR (2.5e-6 - 5e-6)/2 = -1.25e-6 <= 0, yet a trial lost packets -> NDR 100 kpps
    sent = np.full(6, 2_000_000)
    received = np.array([2_000_000, 2_000_000, 1_999_995, 2_000_010, 2_000_000, 2_000_000])
    li = np.repeat(np.arange(3), 2)
    a = assess_trials(li, np.repeat(R[:3], 2), sent, received, AnalysisConfig())
    assert a.table.plr[1] == pytest.approx(-1.25e-6)
    assert a.ndr.index == 0 and a.ndr.rate_pps == 1e5 and a.ndr.met_again == (3e5,)
    assert a.to_json()["ndr_pps"] == 1e5


def test_a_bound_stops_below_a_load_not_measured():
    # load 2 has no usable trial (nan): loads 3 and 4 meet, but the bound cannot pass it
    b = measured_bound(R, np.array([0, 0.001, np.nan, 0.003, 0.3]), 0.005)
    assert (b.index, b.rate_pps, b.gap_rate_pps, b.met_again) == (1, 2e5, 3e5, (4e5,))
    assert "stops below 300 kpps, not measured" in b.describe("PDR")
    b = measured_bound(R, np.array([np.nan, 0, 0, 0, 0]), 0.005)
    assert b.index is None and not b.below_range and "unknown" in b.describe("PDR")


def test_all_meet():
    assert measured_bound(R, np.zeros(5), 0.005).index == 4


def test_a_bound_at_the_top_of_the_tested_range_is_only_at_least_that():
    # no load lost more than the goal: the bound is the highest load tested, not where
    # the SUT's ends; said '>=' wherever it is shown
    b = measured_bound(R, np.zeros(5), 0.005)
    assert b.at_least and b.top
    assert b.short() == ">= 500 kpps"
    assert b.describe("NDR").startswith("NDR >= 500 kpps (the highest load tested")
    # a load above it lost more than the goal: a bound found, said as it is
    found = measured_bound(R, np.array([0, 0, 0, 0.3, 0.3]), 0.005)
    assert not found.at_least and found.short() == "300 kpps"
    assert found.describe("NDR") == "NDR = 300 kpps"
    # the load above it was not measured: at least that, not more is known
    gap = measured_bound(R, np.array([0, 0.001, np.nan, 0.003, 0.3]), 0.005)
    assert gap.at_least and gap.describe("PDR").startswith("PDR >= 200 kpps (stops below")
    # none meets the goal: no bound at all, nothing to call 'at least'
    assert not measured_bound(R, np.full(5, 0.3), 0.005).at_least

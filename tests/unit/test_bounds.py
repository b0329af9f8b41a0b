import numpy as np

from netassay.analysis.bounds import measured_bound

R = np.array([1e5, 2e5, 3e5, 4e5, 5e5])


def test_pdr_is_highest_load_with_every_lower_load_meeting_the_goal():
    b = measured_bound(R, np.array([0, 0.001, 0.004, 0.02, 0.3]), 0.005)
    assert (b.index, b.rate_pps, b.met_again) == (2, 3e5, ())


def test_met_again_after_a_failure_is_reported_not_taken():
    b = measured_bound(R, np.array([0, 0.01, 0.004, 0.003, 0.3]), 0.005)
    assert b.index == 0 and b.met_again == (3e5, 4e5)
    assert "met again at 300 kpps, 400 kpps" in b.describe("PDR")


def test_ndr_counts_negative_loss_as_zero_and_lowest_failure_is_below_range():
    assert measured_bound(R, np.array([-1e-6, 0, 1e-7, 0, 0]), 0.0).index == 1
    b = measured_bound(R, np.array([1e-3, 0, 0, 0, 0]), 0.0)
    assert b.index is None and b.below_range and "below the tested range" in b.describe("NDR")


def test_all_meet():
    assert measured_bound(R, np.zeros(5), 0.005).index == 4

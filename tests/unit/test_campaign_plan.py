"""The sweep plan, ETA, rate check, demo loads and the loss-location shares."""

from __future__ import annotations

import math

import pytest

from netassay.cli.demo import demo_rates
from netassay.errors import UsageError
from netassay.methods.sweep.loss_figure import plot_loss_location
from netassay.quality import rate_warning, stall_warning
from netassay.shared.loss_located import loss_shares
from netassay.shared.sweep_plan import TRIAL_OVERHEAD_S, Plan, describe, estimate_s, eta_s
from netassay.units import fmt_duration


def test_trials_load_by_load_with_k_repetitions():
    p = Plan((100.0, 200.0), 3, 2.0)
    assert p.trials() == [
        (0, 0, 100.0),
        (0, 1, 100.0),
        (0, 2, 100.0),
        (1, 0, 200.0),
        (1, 1, 200.0),
        (1, 2, 200.0),
    ]
    assert p.packets() == (200 + 400) * 3


def test_remaining_skips_done_and_keeps_order():
    p = Plan((100.0, 200.0, 300.0), 2, 1.0)
    done = {(0, 0), (0, 1), (1, 0)}
    assert p.remaining(done) == [(1, 1, 200.0), (2, 0, 300.0), (2, 1, 300.0)]
    assert p.remaining({(i, k) for i, k, _ in p.trials()}) == []


@pytest.mark.parametrize(
    "kw",
    [
        {"rates_pps": (-1.0,), "runs": 1, "duration_s": 1.0},
        {"rates_pps": (math.nan,), "runs": 1, "duration_s": 1.0},
        {"rates_pps": (1.0,), "runs": 0, "duration_s": 1.0},
        {"rates_pps": (1.0,), "runs": 1, "duration_s": 0.0},
        {"rates_pps": (1.0,), "runs": 1, "duration_s": -2.0},
        {"rates_pps": (1.0,), "runs": 1, "duration_s": 1.0, "settle_s": -1.0},
    ],
)
def test_bad_plans(kw):
    with pytest.raises(UsageError):
        Plan(**kw)


def test_estimate_and_eta():
    p = Plan(tuple(float(r) for r in range(1, 11)), 10, 2.0, 0.5)
    per = 2.0 + 0.5 + TRIAL_OVERHEAD_S
    assert estimate_s(p) == pytest.approx(100 * per)
    assert eta_s(0.0, 0, 100, p) == pytest.approx(100 * per)
    # once trials are done the measured pace wins: 10 trials in 40 s -> 90 left, 360 s
    assert eta_s(40.0, 10, 100, p) == pytest.approx(360.0)
    assert eta_s(40.0, 100, 100, p) == 0


def test_fmt_duration():
    assert fmt_duration(5) == "5 s"
    assert fmt_duration(61) == "1 min 01 s"
    assert fmt_duration(7322) == "2 h 02 min"


def test_describe_counts_what_is_left():
    p = Plan((50_000.0, 100_000.0), 2, 1.0, 0.0)
    text = describe(p, {(0, 0)})
    assert "trials: 4 planned, 3 to run" in text
    assert "packets to send: 300,000" in text
    assert "50 kpps, 100 kpps" in text


def test_rate_warning_threshold_is_one_per_mille():
    assert rate_warning(100_000, 99_950) is None
    assert rate_warning(100_000, 100_100) is None
    w = rate_warning(100_000, 99_800)
    assert w.startswith("generator limit") and "not SUT loss" in w
    assert rate_warning(100_000, 100_200).startswith("rate overshoot")
    assert "unknown" in rate_warning(100_000, None)


def test_stall_is_judged_by_its_burst_against_the_smallest_queue():
    from netassay.quality import exclusion

    assert stall_warning(None, 300_000, 1000) is None
    # 9.9 ms at 300 kpps: a catch-up burst of ~2,970 frames, three backlogs of 1,000
    w = stall_warning(9_900_000, 300_000, 1000)
    assert w.startswith("generator stall") and "2,970 frames" in w and "1,000 packets" in w
    assert exclusion([w]) == w  # left out of the statistics
    # the same stall at 50 kpps is a burst of 495: the queue absorbs it
    assert stall_warning(9_900_000, 50_000, 1000) is None
    # a deep queue absorbs a long stall; a queue of 100 does not absorb a short one
    assert stall_warning(20_000_000, 300_000, 10_000) is None
    assert stall_warning(400_000, 300_000, 100) is not None
    # without a known queue: the old fixed 10 ms
    assert stall_warning(9_999_999, 300_000, None) is None
    assert "612.4 ms" in stall_warning(612_368_384, 300_000, None)


def test_one_exclusion_rule_for_every_fault():
    from netassay.quality import exclusion, faults, generator_trouble

    stall = "generator stall: a send was 12.0 ms late"
    fault = "counter fault: the sink's count could not be read after the trial"
    cut = "truncated trial: the generator was stopped by a signal"
    plain = "sink drops: 12 test frame(s) the SUT forwarded were dropped by the sink itself"
    assert faults([stall, fault, cut, plain]) == [stall, fault, cut]
    assert generator_trouble([stall, fault, cut, plain]) == [stall]
    assert exclusion([plain]) is None
    assert exclusion([plain, cut]) == cut


def test_demo_rates_are_shares_of_the_mrr():
    rates = demo_rates(400_000)
    assert len(rates) == 10
    assert rates == sorted(rates)
    assert max(rates) <= 0.95 * 400_000
    assert min(rates) == 40_000
    assert demo_rates(100_000, 11, 0.2, 0.7) == [float(r) for r in range(20_000, 75_000, 5_000)]


def _trial(i, sent, loc):
    return {"load_index": i, "rate_pps": 0.0, "sent": sent, "loss_location": loc}


def test_loss_shares_mean_over_trials():
    trials = [
        _trial(0, 1000, {"sut_ingress": 10}),
        _trial(0, 1000, {"sut_ingress": 30, "sink_ingress": 2}),
        _trial(1, 2000, {"sut_forward": 20, "unaccounted": -1}),
    ]
    rates, shares = loss_shares(trials, [100.0, 200.0, 300.0])
    assert list(rates) == [100.0, 200.0, 300.0]
    assert shares["sut_ingress"].tolist() == [0.02, 0.0, 0.0]
    assert shares["sink_ingress"].tolist() == [0.001, 0.0, 0.0]
    assert shares["sut_forward"].tolist() == [0.0, 0.01, 0.0]
    assert shares["unaccounted"].tolist() == [0.0, 0.0, 0.0]  # negatives are not drawn


def test_plot_writes_files(tmp_path):
    trials = [_trial(0, 1000, {"sut_ingress": 10, "unsent": 5}), _trial(1, 1000, {})]
    for ext in ("png", "svg"):
        path = tmp_path / f"loss.{ext}"
        plot_loss_location(trials, [1e5, 2e5], path)
        assert path.stat().st_size > 1000
    plot_loss_location([], [1e5], tmp_path / "none.png")  # no loss at all still draws
    assert (tmp_path / "none.png").exists()

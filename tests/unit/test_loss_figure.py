"""Where the packets were lost: only the trials the statistics keep are drawn (a trial
left out as a measurement fault is not SUT loss), the figure says which were left out
and why, and its axis and labels are in percent as people write it."""

from __future__ import annotations

import re

import matplotlib

from netassay.methods.sweep.located import left_out
from netassay.methods.sweep.loss_figure import plot_loss_location
from netassay.shared.loss_located import loss_shares, pct

STALL = "generator stall: a send was 25.8 ms late; its catch-up burst of ~4,701 frames"
RATES = [100e3, 900e3, 1.1e6]


def _trial(i, rep, sent, lost, excluded=None):
    return {"load_index": i, "repetition": rep, "rate_pps": RATES[i], "sent": sent,
            "loss_location": {"sut_ingress": lost}, "excluded": excluded}  # fmt: skip


# the kernel router to 1.1 Mpps: both trials there stalled (each lost ~10% at the SUT's
# ingress from the catch-up burst) and were left out of the statistics
TRIALS = [
    _trial(0, 0, 100_000, 0), _trial(0, 1, 100_000, 0),
    _trial(1, 0, 900_000, 9), _trial(1, 1, 900_000, 3),
    _trial(2, 0, 1_100_000, 110_000, STALL), _trial(2, 1, 1_100_000, 108_000, STALL),
]  # fmt: skip


def test_trials_left_out_are_not_drawn_as_sut_loss():
    _, shares = loss_shares(TRIALS, RATES)
    assert shares["sut_ingress"][1] == 6 / 900_000  # the kept trials' mean share
    assert shares["sut_ingress"][2] == 0.0  # the stalls are not the SUT's loss
    assert left_out(TRIALS, RATES) == [(2, "1.1 Mpps: all 2 trials excluded: generator stall")]
    one = [*TRIALS[:5], _trial(2, 1, 1_100_000, 0)]
    _, shares = loss_shares(one, RATES)
    assert shares["sut_ingress"][2] == 0.0
    assert left_out(one, RATES) == [(2, "1.1 Mpps: 1 of 2 trials excluded: generator stall")]


def test_percent_as_people_write_it():
    assert [pct(v) for v in (0.0, 10.0, 2.5, 0.1, 0.0012, 0.000667, 100.0)] == [
        "0%", "10%", "2.5%", "0.1%", "0.0012%", "0.000667%", "100%",
    ]  # fmt: skip
    assert pct(0.000667, 2) == "0.00067%"


def test_the_figure_is_in_percent_and_says_what_was_left_out(tmp_path):
    path = tmp_path / "loss.svg"
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # its words kept as text
        plot_loss_location(TRIALS, RATES, path)
    words = re.findall(r">([^<>]+)</(?:text|tspan)>", path.read_text())
    text = "\n".join(words)
    assert "0.00067%" in words  # the 900 kpps bar's total, in percent
    assert "e-0" not in text  # no ratio in scientific notation on a percent axis
    assert "left out" in text
    assert "2 trial(s) left out, not drawn (measurement faults, not SUT loss): " in text
    assert "1.1 Mpps: all 2 trials excluded: generator stall" in text
    assert "10%" not in text  # the stalls' ~10% is nowhere

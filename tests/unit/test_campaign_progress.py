"""The campaign's progress line: cells and trials done, and the ETA from the pace so far."""

from __future__ import annotations

from netassay.campaign.progress import Progress


def test_progress_counts_cells_and_trials_and_scales_the_estimate():
    lines: list[str] = []
    p = Progress({"a": 10.0, "b": 10.0}, {"a": 4, "b": 4}, {"a": 2.0, "b": 2.0}, 1, lines.append)
    assert p.eta_s() == 20.0  # nothing done: the estimate
    p.trial("a", 2)
    assert "[cells 0/2] [trials 2/8] cell a" in lines[-1]
    p.t0 -= 8.0  # 8 s for 4 s of estimated work: twice as slow as estimated
    assert abs(p.eta_s() - 32.0) < 0.5  # (20 - 4) s left x 2
    p.cell("a", 4)
    assert "[cells 1/2] [trials 4/8] done a" in lines[-1]
    p.cell("b", 0, ok=False)
    assert "[cells 1/2, 1 failed] [trials 4/8]" in lines[-1] and p.eta_s() == 0.0


def test_a_search_has_no_planned_total():
    lines: list[str] = []
    p = Progress({"s": 30.0}, {"s": None}, {"s": 1.8}, 2, lines.append)
    assert p.eta_s() == 15.0  # two testbeds share the work
    p.trial("s", 5)
    assert "[trials 5]" in lines[-1]


def test_a_cell_past_its_plan_shows_no_total_and_no_zero_eta():
    """A recovery cell that measures its throughput first stores the search's trials
    too: 20 of 6 planned is no total, and an ETA of 0 s while it runs would be false."""
    lines: list[str] = []
    p = Progress({"r": 12.0, "q": 12.0}, {"r": 3, "q": 3}, {"r": 4.0, "q": 4.0}, 1, lines.append)
    p.t0 -= 12.0  # as long as r was estimated to take
    p.trial("r", 20)
    assert "[trials 20] cell r" in lines[-1]
    assert abs(p.eta_s() - 12.0) < 0.5  # r counts as its estimate done, q is left
    p.cell("q", 3)
    p.trial("r", 25)
    assert lines[-1].endswith("ETA past the estimate (a cell runs longer than planned)")

"""A campaign's comparison: the test chosen for the data, effect sizes by hand and scipy."""

from __future__ import annotations

import math

import pytest
from scipy import stats as sps

from netassay.analysis import compare


def _row(factors, pdr, block=1, cpu=None, verdict="GOOD"):
    return {
        "factors": factors,
        "pdr_pps": pdr,
        "ndr_pps": pdr and pdr * 0.9,
        "block": block,
        "verdict": verdict,
        "worst_delta_ucl95_below_pdr": 0.1,
        "cpu_busy": cpu or {},
    }


def test_hodges_lehmann_of_pairs_is_the_median_of_walsh_averages():
    # d = 1, 2, 10: Walsh averages 1, 1.5, 5.5, 2, 6, 10 -> median (2 + 5.5) / 2
    assert compare.hodges_lehmann_paired([1, 2, 10]) == pytest.approx(3.75)
    assert compare.hodges_lehmann_paired([]) is None


def test_two_independent_levels_mann_whitney_with_effect_sizes():
    a = [100.0, 102.0, 101.0]
    b = [180.0, 179.0, 150.0]
    rows = [_row({"sut_cap": "100k"}, x) for x in a] + [_row({"sut_cap": "180k"}, x) for x in b]
    e = compare.effect(rows, "sut_cap", ["100k", "180k"], ordinal=True, number=float)
    c = e["comparisons"][0]
    assert e["test"] == "Mann-Whitney U" and c["paired"] is False
    ref = sps.mannwhitneyu(b, a, alternative="two-sided")
    assert c["statistic"] == ref.statistic == 9.0 and c["p"] == pytest.approx(ref.pvalue)
    assert c["cliffs_delta"] == 1.0 and c["effect"] == "large"
    # pairwise differences b - a: 80,78,79, 79,77,78, 50,48,49 -> median 78
    assert c["hodges_lehmann_pps"] == 78.0
    assert (c["n_a"], c["n_b"]) == (3, 3)


def test_cliffs_delta_by_hand():
    rows = [_row({"f": "x"}, v) for v in (1.0, 2.0, 3.0)] + [
        _row({"f": "y"}, v) for v in (2.0, 4.0)
    ]
    c = compare.effect(rows, "f", ["x", "y"], ordinal=False, number=float)["comparisons"][0]
    # y over x: (2>1 +, 2=2 0, 2<3 -, 4>1 +, 4>2 +, 4>3 +) -> (4 - 1) / 6
    assert c["cliffs_delta"] == pytest.approx(0.5)


def test_repetitions_paired_by_block_use_wilcoxon():
    pdr_a = [100.0, 110.0, 95.0, 105.0, 98.0, 101.0]
    shift = [5.0, 7.0, 4.0, 9.0, 6.0, -1.0]
    rows = []
    for b, (x, d) in enumerate(zip(pdr_a, shift, strict=True), 1):
        rows += [
            _row({"pinning": "p1", "backlog": 1000}, x, b),
            _row({"pinning": "p2", "backlog": 1000}, x + d, b),
        ]
    c = compare.effect(rows, "pinning", ["p1", "p2"], ordinal=False, number=float)["comparisons"][0]
    ref = sps.wilcoxon([x + d for x, d in zip(pdr_a, shift, strict=True)], pdr_a)
    assert c["test"] == "Wilcoxon signed-rank" and c["paired"] and c["n_pairs"] == 6
    assert c["statistic"] == ref.statistic and c["p"] == pytest.approx(ref.pvalue)
    assert c["hodges_lehmann_pps"] == pytest.approx(compare.hodges_lehmann_paired(shift))


def test_a_single_block_is_not_paired():
    rows = [
        _row({"f": "a", "g": 1}, 10.0),
        _row({"f": "b", "g": 1}, 12.0),
        _row({"f": "a", "g": 2}, 11.0),
        _row({"f": "b", "g": 2}, 13.0),
    ]
    c = compare.effect(rows, "f", ["a", "b"], ordinal=False, number=float)["comparisons"][0]
    assert c["test"] == "Mann-Whitney U" and c["p"] is not None


def test_ordered_factor_with_three_levels_kendall_tau_b():
    levels = [1000, 5000, 10000]
    pdr = {1000: [200.0, 210.0], 5000: [300.0, 290.0], 10000: [400.0, 305.0]}
    rows = [_row({"backlog": lv}, v) for lv in levels for v in pdr[lv]]
    e = compare.effect(rows, "backlog", levels, ordinal=True, number=float)
    x = [lv for lv in levels for _ in pdr[lv]]
    y = [v for lv in levels for v in pdr[lv]]
    ref = sps.kendalltau(x, y, variant="b")
    assert e["test"] == "Kendall tau-b"
    assert e["trend"]["tau_b"] == pytest.approx(ref.statistic)
    assert e["trend"]["p"] == pytest.approx(ref.pvalue) and e["trend"]["n"] == 6
    assert len(e["comparisons"]) == 2  # each level against the first, with effect sizes


def test_too_few_for_a_p_value_is_said_not_hidden():
    rows = [_row({"f": "a"}, 1.0), _row({"f": "b"}, 2.0)]
    c = compare.effect(rows, "f", ["a", "b"], ordinal=False, number=float)["comparisons"][0]
    assert c["p"] is None and "too few" in c["note"] and c["cliffs_delta"] == 1.0


def test_groups_ranked_by_median_pdr_with_spread_and_cpu():
    rows = [_row({"cap": "100k"}, v, cpu={"cpu0": 0.5, "cpu1": 0.2}) for v in (99.0, 101.0)]
    rows += [_row({"cap": "180k"}, v, cpu={"cpu0": 0.7, "cpu1": 0.4}) for v in (181.0, 177.0)]
    g = compare.groups(rows, ["cap"], lambda f, v: float(v[:-1]))
    assert [x["levels"]["cap"] for x in g] == ["100k", "180k"]
    assert [x["rank"] for x in g] == [2, 1]
    assert g[0]["pdr_pps"]["median"] == 100.0 and g[1]["pdr_pps"]["min"] == 177.0
    assert g[1]["cpu_busy"] == {"cpu0": 0.7, "cpu1": 0.4}
    s = compare.summarize([1.0, None, 3.0, float("nan")])
    assert s["n"] == 2 and s["median"] == 2.0 and not math.isnan(s["iqr"][0])


@pytest.mark.parametrize(
    ("lower_a", "lower_b", "bound"),
    [(False, False, None), (False, True, "at_least"), (True, False, "at_most"),
     (True, True, "unknown")],
)  # fmt: skip
def test_a_comparison_with_lower_bounds_says_which_way_its_figures_can_move(
    lower_a, lower_b, bound
):
    """A PDR whose search's highest load met the goal is a lower bound: b - a can only be
    larger than computed where b holds one, smaller where a does, either where both do."""
    rows = [{**_row({"sut": "a"}, x), "pdr_at_least": lower_a and x == 101.0}
            for x in (100.0, 101.0)]  # fmt: skip
    rows += [{**_row({"sut": "b"}, x), "pdr_at_least": lower_b and x == 150.0}
             for x in (150.0, 152.0)]  # fmt: skip
    c = compare.effect(rows, "sut", ["a", "b"], ordinal=False, number=float)["comparisons"][0]
    assert c["bound"] == bound
    from netassay.campaign import results

    shift = results.shift_text("pdr_pps", c)
    clause = results.bound_clause(c)
    mark = {None: "+", "at_least": ">= +", "at_most": "<= +", "unknown": "? +"}[bound]
    assert shift.startswith(mark), shift
    assert (clause == "") is (bound is None)
    if bound == "at_least":
        assert "at least these: b's values include lower bounds" in clause
    if bound == "unknown":
        assert "not known: both levels'" in clause
    # the NDR's comparison reads the NDR's own flag, which these rows do not set
    e = compare.effect(rows, "sut", ["a", "b"], ordinal=False, number=float, metric="ndr_pps")
    assert e["comparisons"][0]["bound"] is None  # ndr_at_least is not set in these rows


def test_a_latency_at_a_pdr_that_is_a_lower_bound_is_said_to_be_at_that_bound():
    from netassay.campaign import results
    from netassay.report.campaign_figures import bound_flag

    g = {compare.P99_AT_PDR: {"median": 1_076_000.0}, "pdr_pps": {"median": 5e5, "at_least": True}}
    assert results._p99(g) == "; p99 latency at its lower bound 1.076 ms"
    g["pdr_pps"] = {"median": 5e5}
    assert results._p99(g) == "; p99 latency at PDR 1.076 ms"
    assert bound_flag(compare.P99_AT_PDR) == "pdr_at_least"
    assert bound_flag("ndr_pps") == "ndr_at_least"
    assert bound_flag("mean_frames") == "mean_frames_at_least"


def test_a_burst_cell_whose_test_reached_the_longest_burst_tried_is_a_floor():
    """A burst test that forwarded the longest burst tried found no loss: the cell's
    mean is then a floor, said in the group's line and in the comparison."""
    from netassay.methods.burst.method import METHOD

    def cell(sut, mean, at_limit):
        return {"factors": {"sut": sut}, "block": 1, "verdict": None, "cpu_busy": {},
                "mean_frames": mean, "implied_buffer_s": mean / 1e5,
                "mean_frames_at_least": at_limit > 0}  # fmt: skip

    rows = [cell("router", 850.0, 0), cell("router", 860.0, 0),
            cell("xdp", 6000.0, 2), cell("xdp", 5990.0, 0)]  # fmt: skip
    figures = METHOD.comparison.figures
    found = compare.groups(rows, ["sut"], lambda f, v: v, figures=figures)
    groups = {g["levels"]["sut"]: g for g in found}
    text = METHOD.comparison.group_text
    assert text is not None
    assert text(groups["xdp"]).startswith("longest lossless burst >= 5,995")
    assert text(groups["router"]).startswith("longest lossless burst 855")
    c = compare.effect(rows, "sut", ["router", "xdp"], False, float, "mean_frames")["comparisons"][
        0
    ]
    assert c["bound"] == "at_least"

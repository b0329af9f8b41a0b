"""The frame-size series (RFC 2544 section 9.1): its sizes, its rates at each layer, and
how a store's experiments form a series."""

from __future__ import annotations

import pytest

from netassay.errors import UsageError
from netassay.shared import sizes as shared_sizes
from netassay.store.db import Experiment


def test_rfc2544_sizes_are_the_rfcs_frames_without_their_fcs():
    assert shared_sizes.parse_sizes("rfc2544", 4) == [64, 124, 252, 508, 1020, 1276, 1514]
    # RFC 2544's 64-byte frame (60 without the FCS) cannot carry netassay's stamp: the
    # smallest frame of each IP version stands in, once
    assert shared_sizes.parse_sizes("RFC2544", 6) == [84, 124, 252, 508, 1020, 1276, 1514]


def test_explicit_sizes_count_as_size_does():
    assert shared_sizes.parse_sizes("64, 512,1514", 4) == [64, 512, 1514]


@pytest.mark.parametrize(
    ("text", "ip", "said"),
    [
        ("60", 4, "60 bytes cannot be sent over IPv4"),
        ("64", 6, "64 bytes cannot be sent over IPv6"),
        ("1519", 4, "1519 bytes cannot be sent"),
        ("64,x", 4, "'x' is not a frame size"),
        ("64,64", 4, "64 is given twice"),
        ("", 4, "'' is not a frame size"),
    ],
)
def test_a_size_that_cannot_be_sent_is_refused_in_one_line(text, ip, said):
    with pytest.raises(UsageError) as e:
        shared_sizes.parse_sizes(text, ip)
    assert said in e.value.line() and "\n" not in e.value.line()


def test_layer_rates_of_the_rfcs_smallest_frame_at_10g_line_rate():
    # 14,880,952 frames/s of 64 bytes (with FCS: --size 60) fill 10 Gb/s at layer 1
    r = shared_sizes.layer_rates(14_880_952.38, 60)
    assert r["mpps"] == pytest.approx(14.880952, rel=1e-6)
    assert r["gbps_l1"] == pytest.approx(10.0, rel=1e-6)
    assert r["gbps_l2"] == pytest.approx(10.0 * 64 / 84, rel=1e-6)
    assert shared_sizes.layer_rates(None, 64) == {"mpps": None, "gbps_l2": None, "gbps_l1": None}


def _exp(i: int, size: int, runs: int = 1, kind: str = "mrr", label: str = "") -> Experiment:
    tb = {"size_bytes": size, "ip_version": 4, "sut": "router", "sut_cap_pps": 1e5}
    cfg = {"runs": runs, "duration_s": 1.0, "testbed": tb, "testbed_name": f"t{i}"}
    return Experiment(i, f"k{i}", kind, "netassay", label or f"router {size}B", "", "", cfg,
                      {}, {})  # fmt: skip


def test_a_series_is_consecutive_experiments_that_differ_only_in_size():
    exps = [_exp(1, 64), _exp(2, 512), _exp(3, 1514), _exp(4, 64), _exp(5, 512, runs=3)]
    runs = [[e.id for e in r] for r in shared_sizes._runs(exps)]
    # a size repeats at 4 (a new series); 5 differs in more than its size
    assert runs == [[1, 2, 3], [4], [5]]


def test_the_table_has_a_row_per_size_in_each_unit():
    s = shared_sizes.SizeSeries("mrr", "", 4)
    for i, size in enumerate((64, 1514), 1):
        s.points.append(
            shared_sizes.point(_exp(i, size), size, {"mrr_pps": 100_000.0, "verdict": None})
        )
    text = shared_sizes.table_text(s)
    lines = text.splitlines()
    assert "MRR Mpps" in lines[1] and "Gb/s L2" in lines[1] and "Gb/s L1" in lines[1]
    assert lines[2].split() == ["68", "64", "0.1000", "0.054", "0.070"]
    assert lines[3].split() == ["1518", "1514", "0.1000", "1.214", "1.230"]
    assert "68 B: RFC 2544's 64-byte frame is too small" in text
    obj = s.as_json()
    assert [p["frame_bytes"] for p in obj["sizes"]] == [68, 1518]
    assert obj["sizes"][1]["mrr_gbps_l2"] == pytest.approx(0.1e6 * 1518 * 8 / 1e9)


def test_an_inconclusive_size_is_marked_and_a_bound_at_the_top_says_at_least():
    """Every size of the series carried its highest load: its sweep is INCONCLUSIVE and
    its bounds only at least that load; the table (text and JSON) never states them as
    found. A size whose sweep found its bound shows it plainly."""
    s = shared_sizes.SizeSeries("sweep", "", 4)
    top = {"verdict": "INCONCLUSIVE", "ndr_pps": 2e5, "pdr_pps": 2e5,
           "ndr_at_least": True, "pdr_at_least": True}  # fmt: skip
    found = {"verdict": "GOOD", "ndr_pps": 5e4, "pdr_pps": 1e5,
             "ndr_at_least": False, "pdr_at_least": False}  # fmt: skip
    s.points.append(shared_sizes.point(_exp(1, 64, kind="sweep"), 64, top))
    s.points.append(shared_sizes.point(_exp(2, 1514, kind="sweep"), 1514, found))
    lines = shared_sizes.table_text(s).splitlines()
    assert lines[1].split()[-1] == "verdict"
    at_least = [">=0.2000", ">=0.109", ">=0.141"]  # NDR, then PDR: Mpps, L2, L1
    assert lines[2].split() == ["68", "64", *at_least, *at_least, "INCONCLUSIVE"]
    assert lines[3].split() == ["1518", "1514", "0.0500", "0.607", "0.615",
                                "0.1000", "1.214", "1.230", "GOOD"]  # fmt: skip
    notes = "\n".join(lines[4:])
    assert ">= : at least this rate: the highest load tested met the goal" in notes
    assert "INCONCLUSIVE: 1 of 2 sizes (68 B)" in notes and "not established" in notes
    sizes = s.as_json()["sizes"]
    assert [p["verdict"] for p in sizes] == ["INCONCLUSIVE", "GOOD"]
    assert [(p["ndr_at_least"], p["pdr_at_least"]) for p in sizes] == [(True, True), (False, False)]


def test_the_series_figure_says_at_least_and_inconclusive(tmp_path):
    import matplotlib

    from netassay.shared.size_figures import plot_series

    s = shared_sizes.SizeSeries("sweep", "", 4)
    figures = {"verdict": "INCONCLUSIVE", "pdr_pps": 2e5, "pdr_at_least": True}
    for i, size in enumerate((64, 1514), 1):
        s.points.append(shared_sizes.point(_exp(i, size, kind="sweep"), size, figures))
    with matplotlib.rc_context({"svg.fonttype": "none"}):  # its words kept as text
        png, svg = plot_series(s, tmp_path / "series")
    text = svg.read_text()
    assert "at least (top load met it)" in text
    assert "2 of 2 sizes INCONCLUSIVE: bounds not established" in text
    assert png.stat().st_size > 1000

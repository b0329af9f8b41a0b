"""export --format hdr: each trial's latency histogram in HdrHistogram's log format,
read back by HdrHistogram's own Python package (hdrh): the counts, the percentiles
netassay gives, the max, and the log's intervals."""

from __future__ import annotations

import io

import pytest
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from netassay.hist import SinkHist
from netassay.store import hdr


def sink_doc(buckets: list[tuple[int, int | None, int]]) -> dict:
    n = sum(c for _, _, c in buckets)
    lo = buckets[0][0]
    hi = buckets[-1][1] or buckets[-1][0] + 5_000
    mids = sum(((a + (b or a)) // 2) * c for a, b, c in buckets)
    return {"n": n, "sum_ns": mids, "min_ns": lo, "max_ns": hi - 1, "ahead": 0,
            "buckets": [list(b) for b in buckets]}  # fmt: skip


# 1 us buckets below 256 us, then wider ones, as the XDP sink keeps them
DOC = sink_doc([(3_000, 4_000, 700), (4_000, 5_000, 250), (17_000, 18_000, 40),
                (300_032, 302_080, 9), (20_971_520, 21_135_360, 1)])  # fmt: skip


def test_the_encoding_decodes_to_the_same_counts_and_percentiles():
    h = SinkHist(DOC)
    back = HdrHistogram.decode(hdr.encode(hdr.values(h)))
    assert back.get_total_count() == h.n == 1000
    for p in (50, 90, 95, 99):  # (the top frame is at the exact max: see hdr.values)
        ours = h.percentile(p)
        theirs = back.get_value_at_percentile(p)
        assert theirs == pytest.approx(ours, rel=2e-3), p  # HdrHistogram's 3 digits
    assert back.get_max_value() == pytest.approx(h.max_ns, rel=2e-3)
    assert back.get_min_value() == pytest.approx(h.min_ns, rel=2e-3)


def test_the_counts_index_is_hdrhistograms():
    ref = HdrHistogram(hdr.LOWEST, hdr.HIGHEST, hdr.DIGITS)
    for v in (1, 2, 2047, 2048, 2049, 4095, 4096, 123_456, 10**9, 3 * 10**12):
        assert hdr.counts_index(v) == ref._counts_index_for(v), v


def test_an_empty_histogram_encodes_as_empty():
    back = HdrHistogram.decode(hdr.encode({}))
    assert back.get_total_count() == 0


def test_the_log_is_read_by_hdrhs_reader(tmp_path):
    out = io.StringIO()
    trials = [{"utc": "2026-01-01T00:00:00+00:00", "duration_s": 2.0, "load_index": 0,
               "repetition": 0, "rate_pps": 10_000.0, "excluded": None},
              {"utc": "2026-01-01T00:00:03.500000+00:00", "duration_s": 2.0, "load_index": 1,
               "repetition": 0, "rate_pps": 20_000.0, "excluded": None}]  # fmt: skip

    class Exp:
        id, kind, label = 1, "sweep", "a sweep"

    found = [(Exp(), t, SinkHist(DOC)) for t in trials]
    n = hdr.write_log(found, out)
    assert n == 2
    path = tmp_path / "lat.hlog"
    path.write_text(out.getvalue())
    reader = HistogramLogReader(str(path), HdrHistogram(1, hdr.HIGHEST, 3))
    got = []
    while (h := reader.get_next_interval_histogram()) is not None:
        got.append(h)
    assert [h.get_total_count() for h in got] == [1000, 1000]
    starts = [h.get_start_time_stamp() / 1000 for h in got]
    assert starts[1] - starts[0] == pytest.approx(3.5)
    assert got[1].get_value_at_percentile(99) == pytest.approx(SinkHist(DOC).percentile(99),
                                                                rel=2e-3)  # fmt: skip

"""The delay line's kept limit (``testbed.linelimit``): a measurement that carried none of
the rates is no limit (not kept, measured again), a file kept before that holds one as
``pps`` null is read as not measured at that delay, and keeping a new limit leaves the
others as they were, saying when each was measured."""

from __future__ import annotations

import json
import threading

import pytest

from netassay.methods.tcp.run import limit_text
from netassay.testbed import linelimit, tcppath

LINE = tcppath.LINE
OLD = "2026-11-26T05:00:00Z"
NEW = "2026-11-29T10:00:00Z"


@pytest.fixture
def kept(tmp_path, monkeypatch):
    monkeypatch.setenv("NETASSAY_STATE_DIR", str(tmp_path))
    return tmp_path / "delayline.json"


def _legacy(where, limits, **host):
    """A file as netassay kept it before a measurement that carried no rate was dropped:
    that one's ``pps`` and ``l1_bps`` null (state.write_json_atomic's layout)."""
    body = {"utc": OLD, **linelimit.host(), **host, "frame_bytes": 1514,
            "setup": linelimit.SETUP, "limits": [
                {"delay_s": d, "pps": p, "l1_bps": None if p is None else linelimit.l1_bps(p)}
                for d, p in sorted(limits.items())]}  # fmt: skip
    where.write_text(json.dumps(body, indent=2, sort_keys=True))
    return body


def test_a_legacy_entry_that_carried_nothing_is_measured_again_beside_the_good_ones(kept):
    _legacy(kept, {0.001: None, 0.02: 50_000.0})
    at1 = linelimit.for_path(0.001, LINE)
    assert at1["pps"] is None and at1["l1_bps"] is None and linelimit.to_measure(at1)
    assert at1["from"] == (
        f"no limit kept on this host at 1 ms: the measurement {kept} holds there ({OLD}) "
        "carried none of the rates tried, which is no limit")  # fmt: skip
    at20 = linelimit.for_path(0.02, LINE)  # the good entry: a limit as it was
    assert at20["pps"] == 50_000 and at20["l1_bps"] == 50_000 * 1538 * 8
    assert at20["from"].endswith(f"measured {OLD} on kernel {linelimit.host()['kernel']}, "
                                 f"{linelimit.host()['cpus']} CPUs, at 20 ms")  # fmt: skip
    assert not linelimit.to_measure(at20)
    at5 = linelimit.for_path(0.005, LINE)  # not the 1 ms entry's nothing, not 20 ms's limit
    assert at5["pps"] is None and linelimit.to_measure(at5)
    assert at5["from"] == f"never measured on this host at 5 ms ({kept} holds limits at 20 ms only)"
    only = kept.parent / "only.json"
    _legacy(only, {0.001: None})
    alone = linelimit.for_path(0.02, LINE, where=only)
    assert linelimit.to_measure(alone) and f"({only} holds no limit)" in alone["from"]


def test_keeping_a_limit_drops_the_legacy_nothing_and_keeps_the_others_as_measured(kept):
    _legacy(kept, {0.001: None, 0.005: None, 0.02: 50_000.0})
    now = linelimit.keep(0.001, 30_000.0, utc=NEW)
    assert now == {"pps": 30_000.0, "l1_bps": 30_000.0 * 1538 * 8,
                   "from": f"{kept}, measured {NEW} on kernel {linelimit.host()['kernel']}, "
                           f"{linelimit.host()['cpus']} CPUs, at 1 ms"}  # fmt: skip
    body = json.loads(kept.read_text())
    assert body["utc"] == NEW and body["setup"] == linelimit.SETUP
    assert body["limits"] == [  # 5 ms's nothing dropped; 20 ms's limit says when it was measured
        {"delay_s": 0.001, "pps": 30_000.0, "l1_bps": 369_120_000.0},
        {"delay_s": 0.02, "pps": 50_000.0, "l1_bps": 615_200_000.0, "utc": OLD},
    ]
    assert f"measured {OLD} on" in linelimit.for_path(0.02, LINE)["from"]  # not NEW: it was not
    assert linelimit.to_measure(linelimit.for_path(0.005, LINE))
    linelimit.keep(0.001, 20_000.0, utc=NEW)  # measured again: the one at that delay replaced
    assert [(x["delay_s"], x["pps"]) for x in json.loads(kept.read_text())["limits"]] == [
        (0.001, 20_000.0), (0.02, 50_000.0)]  # fmt: skip


def test_a_limit_kept_by_the_bench_says_its_setup_beside_one_a_cell_measured(kept):
    linelimit.record({0.02: 50_000.0}, OLD, f"{linelimit.SETUP}; 3 x 2 s per rate")
    linelimit.keep(0.001, 30_000.0, utc=NEW)
    body = json.loads(kept.read_text())
    assert body["setup"] == linelimit.SETUP
    bench = f"{linelimit.SETUP}; 3 x 2 s per rate"
    assert body["limits"][1] == {"delay_s": 0.02, "pps": 50_000.0, "l1_bps": 615_200_000.0,
                                 "utc": OLD, "setup": bench}  # fmt: skip


def test_keeping_as_one_measurement_writes_what_record_writes_byte_for_byte(kept, tmp_path):
    linelimit.keep(0.02, 50_000.0, utc=OLD)
    linelimit.keep(0.001, 30_000.0, utc=OLD)  # the same second and setup: nothing per entry
    kept_bytes = kept.read_bytes()
    linelimit.record({0.001: 30_000.0, 0.02: 50_000.0}, OLD, linelimit.SETUP)
    assert kept.read_bytes() == kept_bytes
    assert kept_bytes.decode() == json.dumps(json.loads(kept_bytes), indent=2, sort_keys=True)


def test_a_file_of_another_host_is_replaced_when_this_host_keeps_its_limit(kept):
    _legacy(kept, {0.02: 90_000.0}, kernel="5.10.0-other", cpus=64)
    assert linelimit.to_measure(linelimit.for_path(0.02, LINE))
    linelimit.keep(0.02, 50_000.0, utc=NEW)
    body = json.loads(kept.read_text())
    assert (body["kernel"], body["cpus"]) == (linelimit.host()["kernel"], linelimit.host()["cpus"])
    assert [(x["delay_s"], x["pps"]) for x in body["limits"]] == [(0.02, 50_000.0)]


def test_the_record_of_a_measurement_that_carried_nothing_keeps_none_of_it(kept):
    linelimit.record({0.001: None, 0.02: 50_000.0}, OLD, "bench")
    assert [x["delay_s"] for x in json.loads(kept.read_text())["limits"]] == [0.02]
    assert linelimit.to_measure(linelimit.for_path(0.001, LINE))


def _trial(rate, sent, lost, late):
    return {"rate_pps": rate, "mbps_l1": round(rate * 1538 * 8 / 1e6, 1), "sent": sent,
            "counted": sent - lost, "lost": lost, "line_frames": sent - lost, "line_dropped": 0,
            "line_late_over_1ms": 0, "line_late_share": late, "carried": False}  # fmt: skip


def test_a_cell_whose_measurement_carried_nothing_says_so_and_that_it_is_measured_again():
    rows = [_trial(1e4, 5000, 2790, 0.0), _trial(1e4, 4931, 2761, 0.0312)]
    limit = linelimit.none_carried(0.001, rows)
    assert limit["pps"] is None and limit["l1_bps"] is None
    assert not linelimit.to_measure(limit)  # measured now: the cell runs on, not again now
    assert limit_text(limit) == (
        "limit not known: the delay line carried none of the rates tried at 1 ms, measured just "
        "now: 10 kpps failed 2 times (the last: sent 4931 of 5000, lost 2761, 3.12% late), on a "
        "host too busy to keep it on time or a line slower than that. Not kept as this host's "
        "limit: the next run over the line at this delay measures it again")  # fmt: skip
    bridge = {k: v for k, v in _trial(1e4, 5000, 1, 0.0).items() if not k.startswith("line_")}
    assert "(the last: sent 5000 of 5000, lost 1)" in linelimit.none_carried(0.0, [bridge])["from"]
    assert "no rate tried" in linelimit.none_carried(0.02, [])["from"]


def test_a_kept_file_not_shaped_as_netassay_writes_it_is_read_as_far_as_it_is(kept):
    linelimit.record({0.02: 50_000.0}, OLD, linelimit.SETUP)
    body = json.loads(kept.read_text())
    body["limits"] += [{"delay_s": "1ms", "pps": 1.0}, {"delay_s": 0.005, "pps": "many"},
                       "x", {"pps": 1.0}, {"delay_s": 0.01, "pps": True}]  # fmt: skip
    kept.write_text(json.dumps(body))
    read = linelimit.read()
    assert read is not None and [x["delay_s"] for x in read["limits"]] == [0.02]
    kept.write_text(json.dumps({k: v for k, v in body.items() if k != "kernel"}))
    assert linelimit.read() is None
    gone = linelimit.for_path(0.02, LINE)
    assert linelimit.to_measure(gone)
    assert gone["from"] == f"never measured on this host ({kept} unreadable)"
    kept.unlink()
    assert linelimit.for_path(0.02, LINE)["from"] == f"never measured on this host (no {kept})"


def test_a_limit_kept_while_another_keeper_holds_the_file_waits_and_keeps_both(kept):
    """Two cells keeping a limit at once (a campaign's workers on one host): the second
    waits for the first to write, then keeps its limit beside the first's. Without the
    hold it read the file before the first wrote and wrote over the first's limit."""
    linelimit.keep(0.005, 30_000.0, utc=OLD)
    done = threading.Event()
    with linelimit.held():  # another keeper, between its read and its write
        body = linelimit.read()
        assert body is not None
        second = threading.Thread(target=lambda: (linelimit.keep(0.001, 5_000.0), done.set()))
        second.start()
        assert not done.wait(0.5), "keep wrote while another keeper held the file"
        limits = [*body["limits"], linelimit.row(0.02, 50_000.0)]
        linelimit.write(limits, NEW, linelimit.SETUP)
    second.join(10)
    assert done.is_set()
    got = {x["delay_s"]: x["pps"] for x in json.loads(kept.read_text())["limits"]}
    assert got == {0.001: 5_000.0, 0.005: 30_000.0, 0.02: 50_000.0}

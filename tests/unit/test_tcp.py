"""The tcp method's pure parts: the bounds of seed 003, a cell's summary, iperf3's TCP
JSON (a real run over the embedded path), ss's line, the request's refusals and the
path's rules."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from netassay.analysis.tcp import bounds, mathis_bps, path_bps, summary, window_bps
from netassay.errors import UsageError
from netassay.methods.tcp.request import TcpRequest, available_cc, socket_max
from netassay.methods.tcp.run import line_delta, parse_client, parse_ss
from netassay.testbed import tcppath

DATA = Path(__file__).resolve().parents[1] / "data" / "iperf3"


def test_mathis_bound_matches_the_formula():
    # MSS 1448 B, RTT 40 ms, p = 1e-3: 1448*8/0.04 * sqrt(1.5)/sqrt(1e-3)
    v = mathis_bps(1448, 0.040, 1e-3)
    assert v == pytest.approx(1448 * 8 / 0.04 * math.sqrt(1.5) / math.sqrt(1e-3))
    assert v == pytest.approx(11.21e6, rel=1e-3)
    assert mathis_bps(1448, 0.04, 0) == math.inf
    # four times the loss halves the bound; twice the RTT halves it too
    assert mathis_bps(1448, 0.04, 4e-3) == pytest.approx(v / 2)
    assert mathis_bps(1448, 0.08, 1e-3) == pytest.approx(v / 2)


def test_window_and_path_bounds():
    assert window_bps(262144, 0.04) == pytest.approx(262144 * 8 / 0.04)
    # a 500 Mbit/s L1 path carries 1448 of every 1538 bytes as payload
    assert path_bps(500e6, 1448, 1500) == pytest.approx(500e6 * 1448 / 1538)
    assert path_bps(None, 1448, 1500) == math.inf


def test_the_smallest_bound_binds():
    b = bounds(mss=1448, rtt_s=0.04, loss=1e-3, window=None, bottleneck=500e6, mtu=1500)
    assert b.binds == "loss" and b.bound_bps == pytest.approx(b.mathis_bps)
    assert b.window_bps is None
    b = bounds(mss=1448, rtt_s=0.04, loss=0, window=262144, bottleneck=500e6, mtu=1500)
    assert b.binds == "window" and b.mathis_bps is None
    b = bounds(mss=1448, rtt_s=0.002, loss=0, window=None, bottleneck=100e6, mtu=1500)
    assert b.binds == "path"
    b = bounds(mss=1448, rtt_s=0.002, loss=0, window=None, bottleneck=None, mtu=1500)
    assert b.binds is None and b.bound_bps is None


def test_summary_leaves_faulty_runs_out_and_clips_the_interval():
    runs = [
        {"index": 0, "ok": True, "throughput_bps": 10e6, "retransmits": 3, "bound_bps": 11e6,
         "binds": "loss"},
        {"index": 1, "ok": True, "throughput_bps": 30e6, "retransmits": 5, "bound_bps": 11e6,
         "binds": "loss"},
        {"index": 2, "ok": False, "fault": "the delay line dropped 4 frames",
         "throughput_bps": 99e6, "retransmits": 50},
    ]  # fmt: skip
    s = summary(runs)
    assert s.runs == 3 and s.used == 2
    assert s.throughput_bps == pytest.approx(20e6)
    assert s.retransmits == 8
    assert s.faults == ["run 2: the delay line dropped 4 frames"]
    assert (
        s.throughput_ci95_bps is not None and s.throughput_ci95_bps[0] == 0.0
    )  # two runs: the t interval reaches below 0
    assert s.binds == "loss" and s.of_bound == pytest.approx(20 / 11)


def test_iperf3_tcp_client_json_as_a_run():
    text = (DATA / "tcp-reno-20ms-loss1e-3-client.json").read_text()
    out = parse_client(text, 0, "")
    assert out["error"] is None
    assert out["mss_bytes"] == 1448
    assert out["throughput_bps"] == pytest.approx(22.6e6, rel=0.05)
    assert out["retransmits"] == 3
    assert out["snd_wnd_max_bytes"] > 1_000_000  # autotuned: the receiver's window grew
    assert 0.040 < out["rtt_min_s"] < 0.045
    assert out["raw"]["end"]["sender_tcp_congestion"] == "reno"


def test_an_iperf3_failure_is_a_fault_not_a_crash():
    out = parse_client((DATA / "error-refused.json").read_text(), 1, "")
    assert out["error"].startswith("iperf3: ")
    assert out["throughput_bps"] is None
    assert parse_client("", 1, "iperf3: error - unable to connect")["error"].endswith("connect")


def test_ss_line_parsed_and_the_busiest_connection_kept():
    text = (
        "ESTAB 0 0 198.18.22.2:40000 198.18.22.3:5201\n"
        "\t cubic wscale:7,7 rto:204 rtt:0.1/0.05 mss:1448 cwnd:10 bytes_sent:120 snd_wnd:64000\n"
        "ESTAB 0 0 198.18.22.2:40002 198.18.22.3:5201\n"
        "\t reno wscale:10,10 rto:244 rtt:40.206/0.144 mss:1448 cwnd:40 bytes_sent:11623069 "
        "snd_wnd:14685184 retrans:0/5\n"
    )
    d = parse_ss(text)
    assert d["cwnd"] == 40 and d["snd_wnd"] == 14685184 and d["rtt"] == "40.206/0.144"


def test_line_delta_per_direction():
    before = {"ab": {"rx_frames": 10, "drop_socket": 1, "late_max_ns": 5}, "ba": {}}
    after = {"ab": {"rx_frames": 30, "drop_socket": 3, "late_max_ns": 9}, "ba": {"rx_frames": 4}}
    d = line_delta(before, after)
    assert d["ab"] == {"rx_frames": 20, "drop_socket": 2, "late_max_ns": 9}
    assert d["ba"] == {"rx_frames": 4}
    assert line_delta(None, None) == {}
    assert (
        tcppath.line_drops({"ab": {"drop_socket": 2, "drop_queue": 1}, "ba": {"drop_send": 4}}) == 7
    )


def test_requests_this_kernel_cannot_run_are_refused():
    assert "reno" in available_cc()
    with pytest.raises(UsageError, match="not available here"):
        TcpRequest(cc="no-such-cc").validate()
    with pytest.raises(UsageError, match="over the kernel's maximum"):
        TcpRequest(window=socket_max() + 1).validate()
    with pytest.raises(UsageError, match="bad --delay"):
        TcpRequest(delay_s=2.0).validate()
    with pytest.raises(UsageError, match="bad --loss"):
        TcpRequest(loss=1.0).validate()
    TcpRequest(cc="reno", window=262144, delay_s=0.02, loss=1e-3).validate()


def test_path_rules_drop_only_the_clients_data_segments():
    v4 = tcppath.drop_rules(1e-3, "198.18.22.2", v6=False)
    assert "ip saddr 198.18.22.2 ip protocol tcp ip length > 100" in v4
    assert "numgen random mod 1000000 < 1000" in v4 and 'device "s0"' in v4
    v6 = tcppath.drop_rules(1e-4, "2001:2:0:22::2", v6=True)
    assert "ip6 saddr 2001:2:0:22::2" in v6 and "< 100 " in v6
    assert tcppath.netem_argv("p1", 0.02)[-4:] == ["delay", "20000us", "limit", "1000000"]


def test_a_cells_transport_note_keeps_its_methods_own_tables():
    """A campaign cell's experiment moved with its transport noted keeps the CREATE of
    its method's tables (a tcp cell's runs were lost on the way before)."""
    from netassay.campaign.execute import _with_transport
    from netassay.store.rows import ExperimentRows

    e = ExperimentRows({"environment_json": "{}"}, {"tcp_runs": [{"id": 1}]},
                       {"tcp_runs": "CREATE TABLE tcp_runs (id INTEGER PRIMARY KEY)"})  # fmt: skip
    moved = _with_transport(e, "in-process")
    assert moved.tables == e.tables and moved.rows == e.rows
    assert '"cluster_transport": "in-process"' in moved.experiment["environment_json"]


def test_a_run_over_a_line_that_dropped_or_fell_behind_is_a_fault():
    from netassay.methods.tcp.run import line_fault

    on_time = {"ab": {"tx_frames": 90_000, "late_over_1ms": 100},
               "ba": {"tx_frames": 10_000, "late_over_1ms": 0}}  # fmt: skip
    assert line_fault(on_time, 0) is None  # 0.1% late: a hiccup, not the line's limit
    assert "dropped 3 frames" in line_fault(on_time, 3)
    behind = {"ab": {"tx_frames": 90_000, "late_over_1ms": 5_000}, "ba": {"tx_frames": 10_000}}
    assert "fell behind: 5.0% of the frames" in line_fault(behind, 0)
    assert line_fault({}, 0) is None  # netem or a bridge: no line to judge


LIMIT = {"pps": 50_000.0, "l1_bps": 615.2e6, "from": "/x/delayline.json, measured 2026"}


def test_a_run_at_or_over_the_delay_lines_limit_measured_the_line():
    from netassay.analysis.tcp import offered_pps, over_line_limit

    assert offered_pps(579.2e6, 1448) == pytest.approx(50_000)  # 1448-byte segments
    assert offered_pps(None, 1448) is None and offered_pps(1e6, None) is None
    assert over_line_limit(49_999.0, LIMIT) is None  # under
    at = over_line_limit(50_000.0, LIMIT)
    assert at is not None and "at or over its limit of 50.0 kpps (615 Mbit/s at L1" in at
    assert "/x/delayline.json, measured 2026" in at and "lower --bottleneck" in at
    over = over_line_limit(80_000.0, LIMIT)
    assert over is not None and "offered the delay line 80.0 kpps" in over
    unknown = {"pps": None, "l1_bps": None, "from": "never measured on this host"}
    assert over_line_limit(1e9, unknown) is None  # no limit known: nothing to judge by
    assert over_line_limit(None, LIMIT) is None  # nothing offered known (iperf3 failed)


def test_the_hosts_line_limit_is_read_for_the_runs_path(tmp_path, monkeypatch):
    from netassay.testbed import linelimit

    monkeypatch.setenv("NETASSAY_STATE_DIR", str(tmp_path))
    line = tcppath.LINE
    never = linelimit.for_path(0.02, line)
    assert never["pps"] is None and "never measured on this host" in never["from"]
    assert "bench/" not in never["from"] and str(tmp_path) in never["from"]
    assert linelimit.to_measure(never)  # the cell measures it
    assert "no delay line on this path (netem)" in linelimit.for_path(0.02, "netem")["from"]
    assert linelimit.for_path(0.0, tcppath.NO_DELAY)["pps"] is None

    kept = linelimit.record({0.001: 30_000.0, 0.02: 50_000.0}, "2026-11-26T05:00:00Z", "bench")
    assert kept == tmp_path / "delayline.json"
    at20 = linelimit.for_path(0.02, line)
    assert at20["pps"] == 50_000 and at20["l1_bps"] == 50_000 * 1538 * 8
    assert "measured 2026-11-26T05:00:00Z on kernel" in at20["from"] and "at 20 ms" in at20["from"]
    other = linelimit.for_path(0.005, line)  # not measured at 5 ms: measured there first
    assert other["pps"] is None and linelimit.to_measure(other)
    assert "never measured on this host at 5 ms" in other["from"]
    assert "holds limits at 1 ms, 20 ms only" in other["from"]

    body = linelimit.read()
    assert body is not None and body["frame_bytes"] == 1514
    moved = {**body, "kernel": "5.10.0-other", "cpus": 64}
    elsewhere = linelimit.for_path(0.02, line, body=moved)
    assert elsewhere["pps"] is None and "kernel 5.10.0-other with 64 CPUs" in \
        elsewhere["from"] and linelimit.to_measure(elsewhere)  # fmt: skip
    linelimit.record({0.001: None}, "2026-11-26T05:00:00Z", "bench")  # carried none: not kept
    none = linelimit.for_path(0.001, line)
    assert none["pps"] is None and "holds no limit" in none["from"]
    assert linelimit.to_measure(none)  # a measurement that carried nothing is measured again
    assert not linelimit.to_measure(at20) and not linelimit.to_measure(
        linelimit.for_path(0.02, "netem")
    )
    (tmp_path / "delayline.json").write_text("{not json")
    assert "never measured" in linelimit.for_path(0.001, line)["from"]


def _trial(rate, sent, lost=0, late=0.0, dropped=0):
    return {"rate_pps": rate, "sent": sent, "lost": lost, "line_frames": sent - lost,
            "line_dropped": dropped, "line_late_share": late}  # fmt: skip


def test_a_rate_is_carried_when_offered_whole_and_on_time():
    from netassay.testbed import linelimit

    assert linelimit.carried(_trial(10_000, 5_000), 0.5)
    assert not linelimit.carried(_trial(10_000, 4_900), 0.5)  # 98% sent: the rate was not offered
    assert linelimit.carried(_trial(10_000, 4_950), 0.5)  # 99% sent
    assert not linelimit.carried(_trial(10_000, 5_000, lost=1), 0.5)
    assert not linelimit.carried(_trial(10_000, 5_000, dropped=1), 0.5)
    assert linelimit.carried(_trial(10_000, 5_000, late=0.01), 0.5)  # 1% late: carried
    assert not linelimit.carried(_trial(10_000, 5_000, late=0.0101), 0.5)
    bridge = {"rate_pps": 1e4, "sent": 5_000, "lost": 0, "added_latency_us": {"p99_us": 200.0}}
    assert linelimit.carried(bridge, 0.5)  # no line: the sink's p99 judges
    assert not linelimit.carried({**bridge, "added_latency_us": {"p99_us": 1000.0}}, 0.5)


def test_the_limit_is_the_highest_rate_carried_with_every_lower_one():
    from netassay.testbed import linelimit

    rates = (1e4, 2e4, 3e4, 5e4)
    ok, bad = {"carried": True}, {"carried": False}
    rows = [{**ok, "rate_pps": 1e4}, {**ok, "rate_pps": 2e4}, {**bad, "rate_pps": 3e4},
            {**bad, "rate_pps": 3e4}]  # fmt: skip
    assert linelimit.highest(rows, rates, tries=2) == (2e4, False)
    # one bad half second, then carried: the rate is carried with two tries
    again = [*rows[:3], {**ok, "rate_pps": 3e4}, {**bad, "rate_pps": 5e4}, {**bad, "rate_pps": 5e4}]
    assert linelimit.highest(again, rates, tries=2) == (3e4, False)
    assert linelimit.highest(again, rates, tries=1) == (2e4, False)  # the bench's: every trial
    assert linelimit.highest([{**bad, "rate_pps": 1e4}] * 2, rates, tries=2) == (None, False)
    every = [{**ok, "rate_pps": r} for r in rates]
    assert linelimit.highest(every, rates, tries=2) == (5e4, True)  # the highest tried: at least
    # a rate above one that failed is never taken, even if a trial there passed
    assert linelimit.highest([*rows, {**ok, "rate_pps": 5e4}], rates, tries=2) == (2e4, False)


def test_a_transfer_has_the_keys_its_types_declare(tmp_path):
    """parse_client gives what ClientRun declares, figures() what TransferFigures does,
    and a transfer read back from a store (the golden store's tcp cell) has every key
    TcpRun requires and none it does not declare (a column added to tcp_runs and not to
    the type fails here)."""
    import shutil

    from tests.typeddicts import declared

    from netassay.methods.tcp import store as tcp_store
    from netassay.methods.tcp.run import ClientRun, figures
    from netassay.methods.tcp.store import TcpRun, TransferFigures
    from netassay.store.db import Store

    out = parse_client((DATA / "tcp-reno-20ms-loss1e-3-client.json").read_text(), 0, "")
    assert set(out) == declared(ClientRun)[0]
    assert set(figures(out)) == declared(TransferFigures)[0]
    req, opt = declared(TcpRun)
    golden = Path(__file__).resolve().parents[1] / "data" / "golden" / "store.db"
    shutil.copy(golden, tmp_path / "store.db")
    with Store(tmp_path / "store.db") as store:
        cells = list(tcp_store.stored_cells(store))
    assert cells and all(c.runs for c in cells)
    for run in (r for c in cells for r in c.runs):
        keys = set(run) - {"id", "experiment_id", "utc"}  # the row's own columns
        assert req <= keys <= req | opt
        assert "iperf3" not in keys  # (stored, read without it)

"""netassay tcp on the embedded path, whose delay, loss and rate are known.

- The delay line: ping across the path shows a round trip of 2 x the one-way delay
  within 50 us, at 1 ms and at 20 ms, beyond the same path's own round trip with no
  delay (a kernel bridge: ~60 us here, ping's and the veths' own); the line carries
  every frame and says so (no drop).
- The window bound: reno with no loss and 256 kB socket buffers at 20 ms carries the
  window the receiver advertised (read back) per round trip TCP measured, within 10%,
  and never more than that window per 2 x the delay.
- The loss bound: reno under random loss 1e-3 at 20 ms is within a factor 2 of the
  Mathis bound MSS/RTT x C/sqrt(p) (about 11 Mbit/s here: a few loss events per second,
  so three runs of 6 s hold ~50 of them).
- The line's limit kept for this host: a run that offers it more is a fault naming it.
- The line's limit measured: behind a known cap (a 300 Mbit/s shaper at L1: 24.4 kpps of
  1514-byte frames) the measurement finds the rung below it, 20 kpps; a cell on a host
  that has never measured it measures it first and keeps it.
- A campaign of cubic and bbr with and without loss 1e-2 at 20 ms: bbr keeps most of its
  throughput under loss where cubic collapses, and compare says so; the report draws
  the paper's figure.
"""

from __future__ import annotations

import json
import statistics
import time
from datetime import UTC, datetime

import pytest
from tests.conftest import run_cli

from netassay.analysis.tcp import mathis_bps, over_line_limit
from netassay.hist import SinkHist
from netassay.testbed import Testbed, linelimit, tcppath
from netassay.traffic import peers
from netassay.traffic.generator import run_generator, start_xdp_sink

pytestmark = pytest.mark.system


def _across(name: str, delay_s: float) -> tuple[float, float, dict | None, str]:
    """Across a path of that delay: ping's average round trip, the median one-way
    latency of netassay-gen's 1000 frames at the server's XDP sink (its histogram's
    buckets are 1 us wide to 100 us, then 1% of their latency), the line's counters,
    what delayed it."""
    with Testbed(name, tcppath.TcpPathConfig(delay_s=delay_s)) as tb:
        t = tb.state["target"]
        pr = peers.ping(t["netns"], t["dst"], 50.0, 100, 64, timeout_s=2.0)
        assert pr.received == pr.sent == 100
        rtt = pr.hist.summary()["p50_ns"] / 1e9  # the median: one late reply moves no median
        with start_xdp_sink(t["server_netns"], t["server_dev"], 64, ["--latency"]) as sink:
            gen = run_generator(t["netns"], t["dev"], tb.state["macs"]["s0"], t["src"],
                                t["dst"], 1000, 1.0, best_effort=True)  # fmt: skip
            time.sleep(delay_s + 0.2)
            lat = SinkHist(sink.read()["latency"]).summary()
        tcppath.wait_line_counters(tb.state, time.time())  # written after the last frame left
        stats, kind = tcppath.line_stats(tb.state), tb.state["path"]["delay_kind"]
    assert lat["n"] == gen.sent >= 900, (delay_s, gen.sent, lat)  # every frame sent came
    return rtt, lat["p50_ns"] / 1e9, stats, kind


@pytest.mark.parametrize("delay_s", [0.001, 0.020])
def test_the_delay_lines_round_trip_is_twice_its_delay(tb_name, delay_s):
    """Beyond the same path with no delay (a kernel bridge: ping's and the veths' own
    ~60 us), ping's round trip grows by 2 x the delay within 50 us; each frame's one-way
    latency grows by the delay within 25 us and half the sink's bucket there (1%). ping
    prints a reply of 10 ms or more to 0.1 ms: its median is known to half that; its own
    average moved 80 us with one late reply once, so the median is taken."""
    rtt0, one0, _, kind0 = _across(tb_name, 0.0)
    rtt, one, stats, kind = _across(tb_name, delay_s)
    assert kind0 == tcppath.NO_DELAY and kind == tcppath.LINE
    step = 100e-6 if rtt >= 0.010 else 10e-6  # ping prints a reply to 0.1 ms above 10 ms
    assert abs(rtt - rtt0 - 2 * delay_s) <= 50e-6 + step / 2, f"RTT {rtt * 1e3:.3f} ms"
    bucket = 0.01 * delay_s
    assert abs(one - one0 - delay_s) <= 25e-6 + bucket / 2, f"one way {one * 1e6:.1f} us"
    assert rtt0 < 200e-6  # the path's own round trip is short beside the delays asked
    assert tcppath.line_drops(stats) == 0
    assert stats["ab"]["rx_frames"] == stats["ab"]["tx_frames"] >= 1000


def _tcp(name: str, *flags: str) -> dict:
    res = run_cli("tcp", "--name", name, *flags, "--json", timeout=240)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.mark.slow
def test_with_no_loss_a_small_window_carries_w_per_rtt(tb_name):
    """The window W the receiver advertised (read back) is sent once per round trip: W
    over the round trip the transfer itself had (TCP's own mean RTT), -20% to +10%. That
    round trip is the known delay's 2 x 20 ms and what the path and a busy host add (the
    line's wake-ups, the ACKs' scheduling: 0.3-2 ms here), so ping's round trip before
    the runs is not it (against ping's, runs came out 6-8% under W/RTT, and 16% once).
    Nothing beats the window at the known delay: under W / (2 x 20 ms), and TCP's
    shortest round trip is no shorter than 2 x the delay."""
    r = _tcp(tb_name, "--cc", "reno", "--delay", "20ms", "--window", "256k", "--runs", "2",
             "--duration", "3s")  # fmt: skip
    assert r["used"] == 2 and not r["faults"]
    # the line's limit on this host, or why there is none, beside what each run offered
    assert all(x["line_limit_from"] and x["offered_pps"] > 0 for x in r["run_details"])
    for run in r["run_details"]:
        w = run["snd_wnd_max_bytes"]  # the advertised window, read back
        assert 200_000 < w < 600_000, w
        assert run["binds"] == "window"
        got, rtt = run["throughput_bps"], run["rtt_mean_s"]
        seen = {k: run[k] for k in ("throughput_bps", "rtt_mean_s", "rtt_min_s",
                                    "line_late_max_ns", "rtt_path_s")}  # fmt: skip
        # at most W per round trip (10% for the round trip's spread); at least 80% of
        # it: slow start takes 4-5 round trips of a 3 s run to open W (about 6%), and a
        # busy host's first cell, just after measuring the line's limit, kept the window
        # full for 85.5% once (86% the other time)
        assert 0.80 <= got / (w * 8 / rtt) <= 1.10, seen
        assert got <= w * 8 / (2 * 0.020), seen
        assert run["rtt_min_s"] >= 2 * 0.020, seen


@pytest.mark.slow
def test_reno_under_random_loss_is_near_the_mathis_bound(tb_name):
    r = _tcp(tb_name, "--cc", "reno", "--delay", "20ms", "--loss", "1e-3", "--runs", "3",
             "--duration", "6s")  # fmt: skip
    # a run the line could not carry faithfully on a busy machine is a named fault, left
    # out of the answer (CI saw one of three once); the bound is judged on the rest
    print(r["faults"])
    assert r["used"] >= 2 and len(r["faults"]) == 3 - r["used"], r["faults"]
    mss = statistics.median(x["mss_bytes"] for x in r["run_details"])
    bound = mathis_bps(mss, r["config"]["rtt_path_s"], 1e-3)
    assert r["binds"] == "loss"
    assert bound / 2 <= r["throughput_bps"] <= bound * 2, (r["throughput_bps"], bound)
    assert sum(x["random_dropped"] for x in r["run_details"]) > 0  # the ground truth dropped


def _fell_behind(line: dict) -> bool:
    """The delay line's own counters over a run (``run["line"]``, per direction) say it
    fell behind: more than LATE_SHARE of its frames left over 1 ms after their time."""
    frames = sum(int(d.get("tx_frames", 0)) for d in line.values())
    late = sum(int(d.get("late_over_1ms", 0)) for d in line.values())
    return frames > 0 and late / frames > linelimit.LATE_SHARE


def test_a_run_over_the_lines_limit_is_a_fault_not_tcps(tb_name, tmp_path, monkeypatch):
    """The line's limit kept for this host (here 5 kpps at 20 ms, below what a 200 Mbit/s
    bottleneck lets TCP offer: ~16 kpps) makes the run a fault that names it.

    A line that fell behind is the fault said first (the run measured the line's
    lateness, whatever its limit): on a loaded host the line, though below the limit
    measured for it (20 kpps or more here), left 5.1% of a run's frames over 1 ms late
    once (a CI run). The run says so from the line's own counters; the test accepts it
    only then, and only when the kept limit would have named the run too."""
    monkeypatch.setenv("NETASSAY_STATE_DIR", str(tmp_path))
    linelimit.record({0.02: 5000.0}, "2026-11-26T00:00:00Z", "planted by the test")
    res = run_cli("tcp", "--name", tb_name, "--delay", "20ms", "--runs", "1", "--omit", "0",
                  "--duration", "1s", "--json", timeout=120,
                  env_extra={"NETASSAY_STATE_DIR": str(tmp_path)})  # fmt: skip
    assert res.returncode == 0, res.stderr
    r = json.loads(res.stdout)
    (run,) = r["run_details"]
    assert r["config"]["line_limit"]["pps"] == 5000 == run["line_limit_pps"]
    assert str(tmp_path / "delayline.json") in run["line_limit_from"]
    assert run["offered_pps"] > 5000 and not run["ok"] and r["used"] == 0
    print(run["fault"])
    over = over_line_limit(run["offered_pps"], r["config"]["line_limit"])
    assert over is not None and "at or over its limit of 5.0 kpps" in over
    if run["fault"].startswith("the delay line fell behind"):  # the host's lateness
        assert _fell_behind(run["line"]) and run["line_dropped"] == 0, run["line"]
    else:
        assert run["fault"] == over


CAP_PPS = 300e6 / (8 * linelimit.L1_FRAME_BYTES)  # 24.4 kpps of 1514-byte frames through tbf


def _the_hosts(r: dict) -> bool:
    """A trial the path carried but the host spoiled, as the trial's own figures say:
    nothing was lost and the line dropped nothing, but the line's counters say it fell
    behind (more than LATE_SHARE of its frames over 1 ms late) or the generator did not
    offer the rate (under SENT_SHARE of its frames sent)."""
    short = r["sent"] < linelimit.SENT_SHARE * r["rate_pps"] * linelimit.TRIAL_S
    late = (r["line_late_share"] or 0) > linelimit.LATE_SHARE
    return r["lost"] == 0 and r["line_dropped"] == 0 and (late or short)


def test_the_lines_limit_measured_behind_a_known_cap_is_the_rung_below_it(tmp_path):
    """A 300 Mbit/s shaper (tbf at L1) before the line at 1 ms carries 24.4 kpps of
    1514-byte frames (1538 at L1): 20 kpps passes (246 Mbit/s), 30 kpps does not (369
    Mbit/s: its 50 ms queue overflows within the half second). The ladder stops there
    and the limit is 20 kpps; every trial the measurement made is returned.

    Under the cap the path loses nothing, so a trial not carried there must be the
    host's by its own figures (``_the_hosts``): on a loaded host the line once left over
    1% of its frames over 1 ms late at 10 kpps, twice in a row (a CI run), and the
    ladder stopped before the cap. Such a measurement did not reach the cap: it is made
    once more, and the test is skipped, saying why, when the host spoiled that one too."""
    cfg = tcppath.TcpPathConfig(delay_s=0.001, bottleneck_bps=300e6)
    for attempt in (1, 2):
        t0 = time.monotonic()
        pps, rows = linelimit.measure(0.001, cfg=cfg, rates=(1e4, 2e4, 3e4, 5e4))
        took = time.monotonic() - t0
        assert took < 30, took  # seconds: a cell can afford it once per host
        assert all(r["line_dropped"] == 0 for r in rows), rows  # the cap dropped, not the line
        under = [r for r in rows if r["rate_pps"] < CAP_PPS]
        assert all(r["carried"] or _the_hosts(r) for r in under), under
        if pps is None or pps < 2e4:  # a rung under the cap spoiled twice: the host's
            print(f"attempt {attempt}: the host stopped the ladder under the cap: {rows}")
            continue
        assert pps == 2e4, rows
        assert sorted({r["rate_pps"] for r in rows if r["carried"]}) == [1e4, 2e4]
        over = [r for r in rows if r["rate_pps"] > CAP_PPS]
        assert [r["rate_pps"] for r in over] == [3e4, 3e4], rows  # tried twice, never carried
        short = linelimit.SENT_SHARE * 3e4 * linelimit.TRIAL_S
        assert all(not r["carried"] and (r["lost"] > 0 or r["sent"] < short) for r in over), over
        return
    pytest.skip(f"the host spoiled a rung under the cap in both measurements: {rows}")


@pytest.mark.slow  # over 10 s on a quiet host (test-results/system.xml)
def test_a_cell_on_a_host_that_never_measured_the_line_measures_it_first(tb_name, tmp_path):
    """No limit kept (an empty state folder): the cell measures the line at its own
    delay on a path of its own, keeps it, and runs under it. With --json the command
    prints its result alone (no progress lines: those are the text mode's); the result
    names the file the limit was kept in and when it was measured, during this run."""
    t0 = time.time()
    res = run_cli("tcp", "--name", tb_name, "--delay", "20ms", "--runs", "1", "--omit", "0",
                  "--duration", "1s", "--json", timeout=240,
                  env_extra={"NETASSAY_STATE_DIR": str(tmp_path)})  # fmt: skip
    assert res.returncode == 0, res.stderr
    kept = json.loads((tmp_path / "delayline.json").read_text())  # the folder was empty
    assert [x["delay_s"] for x in kept["limits"]] == [0.02] and kept["cpus"] == linelimit.host()[
        "cpus"
    ]
    when = datetime.strptime(kept["utc"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert t0 - 1 <= when.timestamp() <= time.time()  # measured by this cell (to the second)
    r = json.loads(res.stdout)
    limit = r["config"]["line_limit"]
    assert f"{tmp_path / 'delayline.json'}, measured {kept['utc']}" in limit["from"]
    assert limit["pps"] == kept["limits"][0]["pps"] == r["run_details"][0]["line_limit_pps"]
    assert limit["pps"] is not None and limit["pps"] >= 2e4  # it carries the 200 Mbit/s cells


CAMPAIGN = """
[campaign]
name = "bbr-vs-cubic"
method = "tcp"
repetitions = 1

[fixed]
runs = 2
duration = "3s"
delay = "20ms"

[factors]
cc = ["cubic", "bbr"]
loss = [0, 1e-2]
"""


@pytest.mark.slow
def test_bbr_keeps_its_rate_under_random_loss_where_cubic_collapses(tb_name, tmp_path):
    spec, db = tmp_path / "tcp.toml", tmp_path / "t.db"
    spec.write_text(CAMPAIGN)
    res = run_cli("campaign", "run", spec, "--db", db, "--name", tb_name, timeout=400)
    assert res.returncode == 0, res.stderr
    cmp = run_cli("compare", "--db", db, "--by", "cc", "--by", "loss", "--json")
    assert cmp.returncode == 0, cmp.stderr
    rows = json.loads(cmp.stdout)["experiments"]
    tput = {(r["factors"]["cc"], float(r["factors"]["loss"])): r["throughput_bps"] for r in rows}
    kept = {cc: tput[(cc, 1e-2)] / tput[(cc, 0.0)] for cc in ("cubic", "bbr")}
    assert kept["bbr"] > 0.5, kept  # bbr: insensitive to random loss
    assert kept["cubic"] < 0.2, kept  # cubic: bound by loss (Mathis: ~3.5 Mbit/s at 1e-2)
    assert tput[("bbr", 1e-2)] > 5 * tput[("cubic", 1e-2)]
    text = run_cli("compare", "--db", db, "--by", "cc").stdout
    assert "cc" in text and "throughput" in text
    out = tmp_path / "r"
    rep = run_cli("report", db, "--out", out)
    assert rep.returncode == 0, rep.stderr
    assert "TCP over a lossy long path" in (out / "index.html").read_text()
    assert list((out / "figures").glob("tcp_*.png"))

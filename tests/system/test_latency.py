"""One-way latency from the XDP sink's histogram, against two ground truths on the
router testbed:

- at low load, the sink's latency agrees with netassay-gen's receiver on the same
  frames within 5 us: the receiver takes its arrival time from the kernel's packet
  socket timestamp (taken right after the XDP hook, the sink passing the frames on),
  in user space, by its own code; both subtract the same transmit stamp;
- a tbf shaper of rate R with a queue of L bytes on the SUT's egress, driven above R,
  holds each frame about L / R in its full queue: the median within 10% of it; below
  R nothing waits (the median far below L / R). The report of that sweep shows its
  latency figure (checked in Chromium).

Needs root and netassay-gen (skipped with the reason otherwise).
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from netassay.config import TestbedConfig
from netassay.hist import SinkHist
from netassay.names import SINK_DEV, SUT_OUT
from netassay.testbed import Testbed
from netassay.traffic.generator import start_receiver, start_xdp_sink

pytestmark = pytest.mark.system


def test_low_load_latency_agrees_with_the_receiver_within_5_us(tb_name):
    with Testbed(tb_name, TestbedConfig(sut="router")) as tb:
        sink = start_xdp_sink(tb.ns("sink"), SINK_DEV, 64, extra=["--pass", "--latency"])
        with sink, start_receiver(tb.ns("sink"), SINK_DEV) as rx:
            sink.read()  # from here on: the histogram starts empty
            sent = tb.send(10_000, 3.0)
            time.sleep(0.3)
            line = sink.read()
            got = rx.stop()
    h = SinkHist(line["latency"])
    print({"sent": sent.sent, "sink": h.summary(), "receiver": got["latency_ns"]})
    assert h.n == sent.sent == line["packets"] and h.ahead == 0
    assert got["received"] == sent.sent
    ours, theirs = h.percentile(50), got["latency_ns"]["p50"]
    assert ours is not None and abs(ours - theirs) <= 5_000, (ours, theirs)
    assert 0 < h.min_ns <= got["latency_ns"]["min"]  # the sink sees each frame first


RATE_PPS = 10_000  # R: 64-byte frames at 5.12 Mbit/s
LIMIT_BYTES = 200 * 64  # L: 200 frames queued
EXPECTED_NS = LIMIT_BYTES / (RATE_PPS * 64) * 1e9  # L / R = 20 ms


def _cli_json(cli, *args):
    res = cli(*args)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout) if "--json" in args else res


@pytest.mark.slow
def test_a_full_tbf_queue_holds_each_frame_l_over_r(tb_name, tmp_path, cli, browser):
    db = tmp_path / "l.db"
    _cli_json(cli, "testbed", "up", "--name", tb_name, "--sut", "router")
    # the bucket holds 10 ms of tokens so that a late timer on a busy host does not
    # waste the rate; in a full queue the tokens are spent as they come
    tc = ["ip", "netns", "exec", f"na-{tb_name}-sut", "tc", "qdisc", "replace", "dev",
          SUT_OUT, "root", "tbf", "rate", f"{RATE_PPS * 64 * 8}bit", "burst",
          str(RATE_PPS * 64 // 100), "limit", str(LIMIT_BYTES)]  # fmt: skip
    subprocess.run(tc, check=True)
    try:
        out = _cli_json(
            cli, "sweep", "--name", tb_name, "--latency", "--rates", "5k,15k", "--runs",
            "2", "--duration", "2s", "--no-peak-check", "--db", db, "--json",
        )  # fmt: skip
    finally:
        _cli_json(cli, "testbed", "down", "--name", tb_name)
    below, above = out["latency"]
    print(json.dumps(out["latency"]), [(x["rate_pps"], x["plr"]) for x in out["loads"]])
    assert below["rate_pps"] == 5_000 and above["rate_pps"] == 15_000
    assert below["p50_ns"] < 0.1 * EXPECTED_NS, below
    assert abs(above["p50_ns"] - EXPECTED_NS) <= 0.1 * EXPECTED_NS, above
    assert out["loads"][1]["plr"] == pytest.approx(1 / 3, abs=0.05)  # 1 - R / 15k

    _cli_json(cli, "report", db, "--out", tmp_path / "r")
    page = browser.new_page()
    page.goto((tmp_path / "r" / "index.html").as_uri())
    figure = 'img[alt^="one-way latency of"]'
    page.locator(figure).scroll_into_view_if_needed()  # figures load lazily, when in view
    page.wait_for_function(f"() => document.querySelector('{figure}').naturalWidth > 800")
    page.close()


def test_the_latency_command_is_a_sweep_that_keeps_its_histograms(tb_name, tmp_path, cli):
    db = tmp_path / "c.db"
    out = _cli_json(cli, "latency", "--name", tb_name, "--rates", "10k,20k", "--runs", "1",
                    "--duration", "0.5s", "--no-peak-check", "--db", db, "--json")  # fmt: skip
    assert [x["rate_pps"] for x in out["latency"]] == [10_000, 20_000]
    for row in out["latency"]:  # every frame the sink counted has its latency
        assert 0 < row["p50_ns"] < 1e6, row
    assert out["loads"][0]["plr"] == 0

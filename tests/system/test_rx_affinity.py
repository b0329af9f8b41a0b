"""--rx-affinity on real namespaces (seed 003, section 3.2): bound puts the SUT's receive
work on one CPU, balanced spreads it over the CPUs by flow; what the testbed wrote is
recorded and goes with its namespaces.

The ground truth is the kernel's own count of the frames each CPU's receive softirq
processed (``/proc/net/softnet_stat``, column 0) over a trial: with the XDP sink, whose
program drops the frames in veth's NAPI before the stack, the only frames that reach
``__netif_receive_skb`` on the path are the SUT's, received on ``sut0``.

Needs root, two CPUs and netassay-gen (skipped with the reason otherwise).
"""

from __future__ import annotations

import os

import pytest

from netassay.config import TestbedConfig
from netassay.counters.host import read_softnet
from netassay.proc import run
from netassay.testbed import Testbed
from netassay.trial.engine import measure, trials_on

pytestmark = pytest.mark.system

RATE = 100_000
FLOWS = 16  # RPS hashes each flow to one CPU: 16 flows all on one of 2 CPUs: p = 2^-15


def _processed_per_cpu(tb_name: str, rx: str) -> tuple[dict[str, int], int, dict]:
    cfg = TestbedConfig(pinning="pin-2cpu", rx_affinity=rx, flows=FLOWS)
    with Testbed(tb_name, cfg) as tb, trials_on(tb) as ctx:
        mask = run(["cat", "/sys/class/net/sut0/queues/rx-0/rps_cpus"], netns=tb.ns("sut"))
        before = read_softnet()
        rec = measure(ctx, 0, 0, RATE, 1.0)
        after = read_softnet()
        state = dict(tb.state)
    state["mask_read"] = mask.stdout.strip()
    got = {c: after[c]["processed"] - before[c]["processed"] for c in ("cpu0", "cpu1")}
    return got, rec.sent, state


@pytest.fixture
def two_cpus():
    if (os.cpu_count() or 1) < 2:
        pytest.skip("bound and balanced differ only with two CPUs or more")


def test_bound_keeps_the_receive_work_on_one_cpu(tb_name, two_cpus, netns_of):
    got, sent, state = _processed_per_cpu(tb_name, "bound")
    assert state["config"]["rx_affinity"] == "bound" and state["sut_cpus"] == [1]
    assert int(state["mask_read"], 16) == 0b10  # RPS on sut0: CPU 1 only
    assert sent >= 0.99 * RATE
    assert got["cpu1"] >= 0.95 * sent, got  # every frame of the SUT's ingress on CPU 1
    assert got["cpu0"] <= 0.05 * sent, got  # the generator's CPU: none of them (noise)
    assert netns_of(tb_name) == []  # the mask went with the SUT's namespace


def test_balanced_spreads_the_receive_work_over_both_cpus(tb_name, two_cpus, netns_of):
    got, sent, state = _processed_per_cpu(tb_name, "balanced")
    assert state["config"]["rx_affinity"] == "balanced" and state["sut_cpus"] == [0, 1]
    assert int(state["mask_read"], 16) & 0b11 == 0b11  # RPS on sut0: CPUs 0 and 1
    assert sent >= 0.99 * RATE
    assert got["cpu0"] + got["cpu1"] >= 0.95 * sent, got
    assert got["cpu0"] >= 0.1 * sent and got["cpu1"] >= 0.1 * sent, got  # both share it
    assert netns_of(tb_name) == []

"""The external testbed's counters: ethtool text, the SUT's counters, the loss split."""

from __future__ import annotations

import pytest

from netassay.counters import ethtool, sutcmd
from netassay.counters.loss import EXTERNAL_LOCATIONS, SUT_LOCATIONS, sut_loss
from netassay.testbed import external

STATS = """NIC statistics:
     rx_packets: 1200
     tx_packets: 5
     rx_queue_0_drops: 0
     port.rx_dropped: 7
"""
INFO = """driver: ixgbe
version: 6.1.0
firmware-version: 0x800008a4, 1.2877.0
bus-info: 0000:3b:00.0
supports-statistics: yes
"""
RINGS = """Ring parameters for enp1s0f0:
Pre-set maximums:
RX:		4096
RX Mini:	n/a
TX:		4096
Current hardware settings:
RX:		512
RX Mini:	n/a
TX:		512
"""


def test_ethtool_text():
    s = ethtool.parse_stats(STATS)
    assert s == {"rx_packets": 1200, "tx_packets": 5, "rx_queue_0_drops": 0, "port.rx_dropped": 7}
    info = ethtool.parse_info(INFO)
    assert info["driver"] == "ixgbe" and info["firmware-version"] == "0x800008a4, 1.2877.0"
    assert ethtool.parse_rings(RINGS) == {
        "max": {"RX": 4096, "TX": 4096},
        "current": {"RX": 512, "TX": 512},
    }
    assert ethtool.parse_rings("") == {}
    assert ethtool.deltas({"a": 1, "b": 5, "c": 2}, {"a": 4, "b": 5, "c": 1}) == {"a": 3, "c": -1}


NSTAT = """#kernel
IpInReceives                    1000               0.0
IpForwDatagrams                 990                0.0
"""


def test_sut_counters_parse_lines_and_json():
    assert sutcmd.parse_values(NSTAT) == {"IpInReceives": 1000, "IpForwDatagrams": 990}
    assert sutcmd.parse_values("rx_drops: 3\nname not-a-number\n") == {"rx_drops": 3}
    doc = '{"if": {"eth1": {"rx": 10, "up": true}}, "q": [1, 2.5], "s": "x"}'
    assert sutcmd.parse_values(doc) == {"if/eth1/rx": 10, "q/0": 1, "q/1": 2.5}
    assert sutcmd.parse_values("") == {}


def test_sut_counters_record_keeps_the_output_and_the_deltas():
    before = {"returncode": 0, "stdout": NSTAT, "values": sutcmd.parse_values(NSTAT)}
    after_text = NSTAT.replace("990 ", "1990")
    after = {"returncode": 0, "stdout": after_text, "values": sutcmd.parse_values(after_text)}
    rec, warnings = sutcmd.trial_record(["nstat"], before, after)
    assert rec["deltas"] == {"IpForwDatagrams": 1000} and not warnings
    assert rec["before"]["stdout"] == NSTAT  # verbatim
    rec, warnings = sutcmd.trial_record(["ssh"], before, {"error": "cannot run ssh"})
    assert "deltas" not in rec and "failed after the trial (cannot run ssh)" in warnings[0]


def test_a_real_command_is_read_without_a_shell():
    got = sutcmd.read(sutcmd.parse_command("printf 'a 1\\nb 2\\n'"))
    assert got["values"] == {"a": 1, "b": 2} and got["returncode"] == 0
    missing = sutcmd.read(["/nonexistent/netassay-counters"])
    assert "error" in missing


def split(sent, received, **deltas):
    path = external.PortCounters(
        external.make_config(tx="p0", rx="p1", src="198.18.0.2", dst="198.19.0.2")
    )
    d = {f"{'tx' if k.startswith('tx') else 'rx'}/link/{'p0' if k.startswith('tx') else 'p1'}/{k}":
         v for k, v in deltas.items()}  # fmt: skip
    return path.locate_loss(sent + 5, sent, received, d, 4, 0)


def test_loss_split_between_the_ports():
    loc = split(1000, 900)
    assert loc == {"unsent": 5, "gen_egress": 0, "between_ports": 100, "sink_ingress": 0,
                   "unaccounted": 0}  # fmt: skip
    assert sut_loss(loc) == 100 and "between_ports" in SUT_LOCATIONS
    assert tuple(loc) == EXTERNAL_LOCATIONS


def test_local_ports_take_their_own_drops():
    loc = split(1000, 900, tx_dropped=30, rx_dropped=20, rx_missed_errors=10)
    assert (loc["gen_egress"], loc["sink_ingress"], loc["between_ports"]) == (30, 30, 40)
    assert sum(v for k, v in loc.items() if k != "unsent") == 100


def test_counters_that_explain_too_much_are_unaccounted():
    loc = split(1000, 990, rx_dropped=25)  # foreign frames dropped at the rx port too
    assert loc["between_ports"] == 0 and loc["unaccounted"] == -15


@pytest.mark.parametrize("retries", [0, 7])
def test_refused_sends_that_were_retried_are_not_lost(retries):
    path = external.PortCounters(
        external.make_config(tx="p0", rx="p1", src="198.18.0.2", dst="198.19.0.2")
    )
    loc = path.locate_loss(1000, 1000, 1000, {"tx/link/p0/tx_dropped": 7}, 4, retries)
    assert loc["gen_egress"] == 7 - retries


def test_bidirectional_each_direction_reads_its_own_ports_side():
    """--bidirectional: the reverse direction's generator sends on the rx port and its
    sink counts on the tx port, so the rx port's transmit drops and the tx port's
    receive drops are its own, and the forward direction's split is as one way's."""
    path = external.PortCounters(
        external.make_config(tx="p0", rx="p1", src="198.18.0.2", dst="198.19.0.2")
    )
    d = {"tx/link/p0/tx_dropped": 3, "rx/link/p1/rx_dropped": 4,  # the forward's
         "rx/link/p1/tx_dropped": 9, "tx/link/p0/rx_dropped": 6}  # the reverse's  # fmt: skip
    fwd, rev = path.locate_both((1000, 1000, 900, 0), (1002, 1000, 800, 2), d, 4)
    assert fwd == {"unsent": 0, "gen_egress": 3, "between_ports": 93, "sink_ingress": 4,
                   "unaccounted": 0}  # fmt: skip
    assert rev == {"unsent": 2, "gen_egress": 7, "between_ports": 187, "sink_ingress": 6,
                   "unaccounted": 0}  # fmt: skip

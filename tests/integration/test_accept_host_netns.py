"""The test host's namespace readers: this host's own counters by netlink, and a
namespace that is gone refused in one line, never created."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

from netassay.counters import host
from netassay.errors import TestbedError


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_this_hosts_links_and_udp_counters_then_nothing_left_open():
    before = _open_fds()
    r = host.NsReader(None)
    try:
        links = r.links()
        assert links["lo"]["mtu"] == 65536
        assert {"rx_dropped", "tx_dropped", "rx_missed_errors", "rx_packets"} <= set(links["lo"])
        assert "udp_in_datagrams" in r.udp()
    finally:
        r.close()
    assert _open_fds() <= before


def test_a_vanished_namespace_is_one_line_and_not_created():
    gone = f"na-gn{secrets.token_hex(3)}-cli"  # a testbed name `testbed cleanup` knows
    before = _open_fds()
    with pytest.raises(TestbedError) as err:
        host.HostProbe({"sender": (None, "lo"), "receiver": (gone, "s0")})
    line = err.value.line()
    assert "\n" not in line and gone in line and "is the testbed up?" in line
    assert not Path("/run/netns", gone).exists()
    assert _open_fds() <= before  # the host's reader, opened first, was closed

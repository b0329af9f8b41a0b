"""netassay-probe refuses a send that names its link by halves, or the wrong probe for it.

Netassay builds these options itself (``traffic.probe.Link``); the binary checks them
again, before it opens any socket, so a wrong call never sends a malformed frame.
"""

from __future__ import annotations

import subprocess

import pytest

from netassay.proc import artifact

BASE = ["send", "--dst", "198.18.101.2", "--rate", "1000", "--count", "1"]
LINK = ["--dev", "eth0", "--src", "198.18.100.2"]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--probe", "icmp", "--dev", "eth0"], "--dev, --src and --dst-mac go together"),
        (["--probe", "icmp", *LINK, "--dst-mac", "aa:bb"], "--dst-mac is six hex bytes"),
        (["--probe", "icmp", *LINK, "--dst-mac", "aa:bb:cc:dd:ee:ff:00"], "six hex bytes"),
        (["--probe", "udp", *LINK, "--dst-mac", "aa:bb:cc:dd:ee:ff"], "--dev needs --probe icmp"),
        (["--probe", "icmp", "--dev", "x" * 16], "--dev is an interface name"),
        (["--probe", "icmp", "--alternate", "on"], "--alternate needs --dev"),
        (["--probe", "icmp", "--alternate", "yes"], "--alternate is on or off"),
    ],
)
def test_a_half_named_link_is_refused_before_anything_is_sent(extra, says):
    res = subprocess.run(
        [str(artifact("netassay-probe")), *BASE, *extra], capture_output=True, text=True
    )
    assert res.returncode == 2, res.stderr
    assert says in res.stderr and res.stdout == ""

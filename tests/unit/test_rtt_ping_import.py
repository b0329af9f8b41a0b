"""Parsing iputils ping output for 'netassay import ping'."""

from __future__ import annotations

import pytest

from netassay.errors import InputError
from netassay.methods.rtt.ping_import import parse

PING_D = """PING 198.18.101.2 (198.18.101.2) 56(84) bytes of data.
[1795380332.000147] 64 bytes from 198.18.101.2: icmp_seq=1 ttl=62 time=0.446 ms
[1795380332.010790] 64 bytes from 198.18.101.2: icmp_seq=2 ttl=62 time=0.119 ms
[1795380332.010800] 64 bytes from 198.18.101.2: icmp_seq=2 ttl=62 time=0.129 ms (DUP!)
[1795380332.030147] From 198.18.100.1 icmp_seq=3 Destination Host Unreachable
[1795380332.040331] 64 bytes from 198.18.101.2: icmp_seq=5 ttl=62 time=1.25 ms

--- 198.18.101.2 ping statistics ---
5 packets transmitted, 3 received, +1 duplicates, +1 errors, 40% packet loss, time 40ms
rtt min/avg/max/mdev = 0.119/0.605/1.250/0.474 ms
"""


def test_parse_ping_with_timestamps():
    r = parse(PING_D, "f")
    assert r.dst == "198.18.101.2" and r.frame_bytes == 98
    assert r.rtts_ns == [446_000, 119_000, 1_250_000] and r.seqs == [1, 2, 5]
    assert r.duplicates == 1 and r.errors == 1 and (r.transmitted, r.received) == (5, 3)
    assert r.rate_pps() == pytest.approx(4 / 0.040184, rel=1e-3)


def test_parse_plain_ping_without_d():
    text = "\n".join(line.split("] ", 1)[-1] for line in PING_D.splitlines())
    r = parse(text, "f")
    assert len(r.rtts_ns) == 3 and r.stamps == [] and r.rate_pps() is None


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("hello world\n", "not iputils ping output"),
        ("", "no ping reply"),
        (PING_D.replace("3 received", "4 received"), "lists 3 replies"),
    ],
)
def test_bad_ping_output(text, words):
    with pytest.raises(InputError, match=words) as exc:
        parse(text, "f.txt")
    assert exc.value.exit_code == 3

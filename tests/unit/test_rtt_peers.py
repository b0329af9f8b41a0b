"""Parsing what the peer tools print: iputils ping (-D) and irtt's JSON."""

from __future__ import annotations

from netassay.traffic.peers import parse_irtt, parse_ping

PING = """PING 198.18.101.2 (198.18.101.2) 22(50) bytes of data.
[1795380332.760147] 30 bytes from 198.18.101.2: icmp_seq=1 ttl=62 time=0.446 ms
[1795380332.760790] 30 bytes from 198.18.101.2: icmp_seq=2 ttl=62 time=0.119 ms
[1795380332.767331] 30 bytes from 198.18.101.2: icmp_seq=4 ttl=62 time=12.2 ms

--- 198.18.101.2 ping statistics ---
4 packets transmitted, 3 received, 25% packet loss, time 8ms
rtt min/avg/max/mdev = 0.107/0.217/0.446/0.121 ms
"""


def test_parse_ping():
    sent, got, rtts = parse_ping(PING)
    assert (sent, got) == (4, 3) and rtts.tolist() == [446_000, 119_000, 12_200_000]


def test_parse_irtt():
    data = {
        "stats": {"packets_sent": 3, "packets_received": 2},
        "round_trips": [
            {"seqno": 0, "lost": "false", "delay": {"rtt": 250822}},
            {"seqno": 1, "lost": "true", "delay": {}},
            {"seqno": 2, "lost": "false", "delay": {"rtt": 180000}},
        ],
    }
    sent, got, rtts = parse_irtt(data)
    assert (sent, got) == (3, 2) and rtts.tolist() == [250822, 180000]

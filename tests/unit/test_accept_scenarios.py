"""The acceptance scenario matrix (TOML, run in order) and the request's arithmetic."""

from __future__ import annotations

from pathlib import Path

import pytest

from netassay.errors import InputError, UsageError
from netassay.methods.accept import scenarios
from netassay.methods.accept.request import AcceptRequest, Scenario
from netassay.methods.accept.run import check_server, validate
from netassay.testbed import link

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "accept-affinity.toml"


def test_the_shipped_example_is_seed_004s_matrix_in_order():
    got = scenarios.load(str(EXAMPLE))
    assert [s.label() for s in got] == [
        "rx0/tx0", "rx0/tx1", "rx1/tx0", "rx1/tx1", "rx1/tx1 4M buffers",
    ]  # fmt: skip
    assert all(s.client_cpu == 0 and s.server_cpu == 1 for s in got)  # [defaults]
    assert (got[1].rx_cpu, got[1].tx_cpu) == (0, 1)
    assert got[4].socket_buffer == 4_000_000 and got[0].socket_buffer is None


def test_defaults_none_and_units():
    text = """
[defaults]
mtu = 9000
[[scenario]]
rx_cpu = 1
tx_cpu = "none"
client_cpu = "none"
socket_buffer = "212992"
busy_receiver = 2
"""
    (s,) = scenarios.parse(text)
    assert s.mtu == 9000 and s.client_cpu is None and s.tx_cpu is None
    assert s.label() == "rx1/tx-" and s.socket_buffer == 212992 and s.busy_receiver == 2


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ("[[scenario]]\nrx_cpus = 1\n", "unknown key(s) rx_cpus"),
        ("[defaults]\nmtu = 1500\n", "no [[scenario]]"),
        ("[[scenario]]\nrx_cpu = -1\n", "rx_cpu = -1"),
        ("[[scenario]]\nrx_cpu = true\n", "rx_cpu = True"),
        ('[[scenario]]\nname = "a"\n[[scenario]]\nname = "a"\n', "names repeat: a"),
        ("[matrix]\n", "unknown table(s) matrix"),
        ("[[scenario]\n", "not valid TOML"),
    ],
)
def test_bad_files_are_one_line(text, what):
    with pytest.raises(InputError) as e:
        scenarios.parse(text, "f.toml")
    assert what in e.value.line() and e.value.line().startswith("f.toml")


def test_requests_follow_the_file():
    base = AcceptRequest(contract_bps=400e6, label="lab")
    reqs = scenarios.requests(
        base, scenarios.parse('[[scenario]]\nname="a"\n[[scenario]]\nname="b"\n')
    )
    assert [r.scenario.name for r in reqs] == ["a", "b"]
    assert [r.label for r in reqs] == ["lab a", "lab b"] and reqs[0].contract_bps == 400e6


def test_offered_payload_rate_makes_the_contract_at_the_layer():
    # 1472-byte datagrams in 1500-byte packets: 1518-byte frames with FCS, 1538 on the wire
    req = AcceptRequest(contract_bps=400e6, layer="ethernet")
    assert req.datagram() == 1472
    assert req.payload_bps() == pytest.approx(400e6 * 1472 / 1518)
    assert AcceptRequest(contract_bps=1e9, layer="l1").payload_bps() == pytest.approx(
        1e9 * 1472 / 1538
    )
    assert AcceptRequest(contract_bps=1e9, layer="payload").payload_bps(0.25) == 250e6
    v6 = AcceptRequest(contract_bps=1e9, layer="ip", ip_version=6)
    assert v6.datagram() == 1452 and v6.payload_bps() == pytest.approx(1e9 * 1452 / 1500)


def test_server_must_be_in_the_benchmarking_ranges():
    check_server("198.18.5.2", False)
    check_server("2001:2::5", False)
    for addr in ("10.0.0.1", "192.168.1.1", "8.8.8.8", "2001:db8::1"):
        with pytest.raises(UsageError, match="outside the benchmarking ranges"):
            check_server(addr, False)
    check_server("10.0.0.1", True)  # said explicitly
    with pytest.raises(UsageError, match="not an IP address"):
        check_server("far.example", False)


@pytest.mark.parametrize(
    ("kw", "what"),
    [
        ({"embedded": False}, "say where the link is"),
        ({"server": "198.18.5.2"}, "say where the link is"),  # both embedded and a server
        ({"embedded": False, "server": "198.18.5.2", "sender": "netassay-gen"}, "iperf3"),
        ({"sender": "trafgen"}, "unknown sender"),
        ({"layer": "l2"}, "unknown layer"),
        ({"sender": "netassay-gen", "datagram_bytes": 8000}, "cannot send"),
        ({"scenario": Scenario(rx_cpu=64)}, "bad rx CPU 64"),
        ({"link_drop": 1.0}, "--link-drop"),
        ({"runs": 0}, "--runs"),
        ({"sender": "netassay-gen", "scenario": Scenario(socket_buffer=1 << 22)}, "iperf3 setting"),
    ],
)
def test_requests_that_cannot_be_right_are_refused(kw, what):
    with pytest.raises(UsageError) as e:
        validate(AcceptRequest(**{"contract_bps": 400e6, **kw}))
    assert what in e.value.line()


def test_the_link_shaper_counts_l1_and_the_drop_spares_iperf3s_connect():
    argv = link.shaper_argv("na-x-link", 440e6, 1500)
    i = argv.index("stab")
    assert argv[i : i + 5] == ["stab", "overhead", "24", "linklayer", "ethernet"]
    assert argv[argv.index("rate") + 1] == "440000000bit"
    assert int(argv[argv.index("burst") + 1]) == 55_000  # 1 ms at 440 Mbit/s
    assert int(argv[argv.index("limit") + 1]) == 2_750_000  # 50 ms
    rules = link.drop_rules(0.003)
    assert "numgen random mod 1000000 < 3000" in rules and "udp length > 64" in rules
    assert 'oifname "l1"' in rules
    for addr in link.addresses(4).values():
        assert addr.startswith("198.18.2")
    assert all(a.startswith("2001:2:0:2") for a in link.addresses(6).values())

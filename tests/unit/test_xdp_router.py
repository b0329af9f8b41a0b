"""The XDP router SUT without a kernel: its counters, config, program id, loss location
and the program's source."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from netassay import names as netassay_names
from netassay.config import SUTS, TestbedConfig
from netassay.counters import xdp_router as counters_xdp_router
from netassay.counters.loss import LOCATIONS, flatten, locate_loss
from netassay.errors import TestbedError
from netassay.shared.lab import testbed_metadata as metadata_of
from netassay.testbed import topology
from netassay.testbed import xdp_router as testbed_xdp_router

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "bpf" / "xdp_router.c"


def _dump(per_cpu: dict[int, list[int]]) -> list[dict]:
    """What ``bpftool -j map dump`` prints for a per-CPU array (formatted part)."""
    return [
        {
            "key": ["0x00"] * 4,
            "values": [],
            "formatted": {
                "key": key,
                "values": [{"cpu": c, "value": v} for c, v in enumerate(vals)],
            },
        }
        for key, vals in per_cpu.items()
    ]


def test_reasons_follow_the_program_enum():
    text = SOURCE.read_text()
    body = text[text.index("enum reason {") : text.index("R_MAX")]
    names = re.findall(r"\bR_([A-Z_0-9]+)\b", body)
    assert [n.lower() for n in names] == list(counters_xdp_router.REASONS)
    assert set(counters_xdp_router.DROP_LOCATIONS) <= set(counters_xdp_router.REASONS)
    assert set(counters_xdp_router.DROP_LOCATIONS.values()) <= set(LOCATIONS)


def test_parse_stats_sums_cpus_and_keeps_unknown_reasons():
    stats = counters_xdp_router.parse_stats(_dump({0: [5, 7], 3: [0, 2], 40: [1, 1]}))
    assert stats["forwarded"] == 12
    assert stats["pass_ttl"] == 2
    assert stats["drop_malformed"] == 0
    assert stats["reason40"] == 2


def test_config_bytes_little_endian_u64s():
    raw = bytes(int(b, 16) for b in testbed_xdp_router.config_bytes(0.005, 50_000, 1000))
    assert len(raw) == 24
    assert int.from_bytes(raw[0:8], "little") == 5000  # parts per million
    assert int.from_bytes(raw[8:16], "little") == 50_000
    assert int.from_bytes(raw[16:24], "little") == 1000
    off = bytes(int(b, 16) for b in testbed_xdp_router.config_bytes(0.0, None, None))
    assert off == bytes(24)


def test_prog_id_only_for_the_router_program():
    links = [
        {
            "ifname": "sut0",
            "xdp": {"mode": 1, "prog": {"id": 42, "name": counters_xdp_router.PROG_NAME}},
        },
        {"ifname": "sut1"},
        {"ifname": "sink0", "xdp": {"mode": 1, "prog": {"id": 7, "name": "netassay_sink"}}},
    ]
    assert counters_xdp_router.prog_id(links) == 42
    assert counters_xdp_router.prog_id(links, "sink0") is None
    assert counters_xdp_router.prog_id([{"ifname": "sut0"}]) is None


def test_object_path_says_how_to_build(tmp_path):
    with pytest.raises(TestbedError, match="make setup"):
        testbed_xdp_router.object_path([tmp_path / "missing.o"])
    obj = tmp_path / "xdp_router.o"
    obj.write_bytes(b"\x7fELF")
    assert testbed_xdp_router.object_path([tmp_path / "missing.o", obj]) == obj
    with pytest.raises(TestbedError, match=r"xdp_pass.o is not built.*bpf/xdp_pass.c"):
        testbed_xdp_router.object_path([tmp_path / "missing.o"], obj=testbed_xdp_router.PASS_OBJECT)
    assert (
        testbed_xdp_router.object_candidates(testbed_xdp_router.PASS_OBJECT)[-1].name
        == "xdp_pass.o"
    )


def test_the_pass_program_is_built_and_found():
    """make setup builds bpf/xdp_pass.c (batching --xdp on attaches it)."""
    assert testbed_xdp_router.object_path(obj=testbed_xdp_router.PASS_OBJECT).stat().st_size > 0


def test_config_knows_the_xdp_router(tmp_path, monkeypatch):
    assert "xdp-router" in SUTS
    obj = tmp_path / "xdp_router.o"
    obj.write_bytes(b"\x7fELF")
    monkeypatch.setenv(testbed_xdp_router.ENV_OBJECT, str(obj))
    for ip, size in ((4, 64), (6, 84)):
        cfg = TestbedConfig(sut="xdp-router", ip_version=ip, size_bytes=size, pinning="unpinned")
        topology.validate(cfg)
        a = netassay_names.addressing(cfg.sut, ip)
        assert a.sut_in and a.sut_out  # routed: the kernel router's addresses
    meta = metadata_of(TestbedConfig(sut="xdp-router"), {"kernel": "k"})
    assert meta["class"] == "ebpf" and meta["sut"] == "xdp-router"


def _snap(xdp: dict[str, int], sut0_rx: int = 0, sut1_tx: int = 0, ttl: int = 0) -> dict:
    return {
        "ns": {
            "sut": {
                "snmp": {"Ip": {"InHdrErrors": ttl}},
                "links": {
                    "sut0": {"rx_dropped": sut0_rx},
                    "sut1": {"tx_dropped": sut1_tx},
                },
                "xdp_router": {r: xdp.get(r, 0) for r in counters_xdp_router.REASONS},
            },
            "tg": {"links": {"tg0": {"tx_dropped": sut0_rx}}},
        }
    }


def test_loss_joins_the_programs_drops_to_their_locations():
    before = flatten(_snap({"forwarded": 100}))
    after = flatten(
        _snap(
            {
                "forwarded": 100 + 901,
                "drop_ground_cap": 40,
                "drop_ground_drop": 5,
                "drop_malformed": 1,
                "pass_ttl": 3,
            },
            sut0_rx=50,  # veth's XDP ring full: dropped before the program ran
            sut1_tx=4,  # the sink's veth refused 4 forwarded frames
            ttl=3,  # the 3 passed with TTL 1: the kernel drops them (time exceeded)
        )
    )
    assert after["sut/xdp/forwarded/packets"] == 1001
    d = {k: after[k] - before.get(k, 0) for k in after}
    sent, received = 1000, 901 - 4  # 50 + 901 + 40 + 5 + 1 + 3 frames = sent
    loc = locate_loss(sent, sent, received, d)
    assert loc["sut_ingress"] == 50
    assert loc["sut_forward"] == 5 + 1 + 3
    assert loc["sut_egress"] == 40
    assert loc["sink_ingress"] == 4
    assert loc["gen_egress"] == 0
    assert loc["unaccounted"] == 0
    assert sum(v for k, v in loc.items() if k != "unsent") == sent - received


def test_loss_without_an_xdp_router_is_unchanged():
    d = {"sut/link/sut0/rx_dropped": 3, "tg/link/tg0/tx_dropped": 3}
    loc = locate_loss(10, 10, 7, d)
    assert loc["sut_ingress"] == 3 and loc["sut_forward"] == 0 and loc["unaccounted"] == 0


def test_the_wire_queue_is_the_xdp_routers_receive_ring():
    """Its wire's head-drop queue overflows when the router cannot take more: SUT ingress
    loss, where the same drops on another SUT's wire would be the generator's."""
    d = {"tg/qdisc/tg0/drops": 30, "sut/xdp/forwarded/packets": 70}
    assert locate_loss(100, 100, 70, d)["sut_ingress"] == 30
    assert locate_loss(100, 100, 70, d)["gen_egress"] == 0
    plain = {"tg/qdisc/tg0/drops": 30}
    assert locate_loss(100, 100, 70, plain)["gen_egress"] == 30

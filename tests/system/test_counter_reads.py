"""The trial engine's in-process counter reads (``counters.netlink.Snapshots``: netlink
dumps, /proc/thread-self/net, libnftables) read what ``ip``, ``tc``, ``nft`` and
``cat`` read (``counters.snapshot.snapshot``), on a real testbed that traffic and its
ground-truth cap and drop have moved every counter of; and a read after more traffic
sees it (nothing is cached between reads)."""

from __future__ import annotations

import pytest

from netassay.config import TestbedConfig
from netassay.counters.loss import flatten
from netassay.counters.netlink import Snapshots
from netassay.counters.snapshot import snapshot
from netassay.testbed import Testbed
from netassay.trial.engine import trials_on

pytestmark = pytest.mark.system


def _same(tb, ctx, reader) -> dict[str, int]:
    old = flatten(snapshot(tb.state["namespaces"], ctx.sink))
    s = reader.snapshot(ctx.sink)
    new = flatten(s)
    old2 = flatten(snapshot(tb.state["namespaces"], ctx.sink))
    assert set(new) == set(old)
    # the testbed is quiet: only counters that move by themselves (softnet, IPv6 ND,
    # the host's other traffic) may differ, and only within what moved around the read
    moved = {k for k in old if old[k] != old2[k]}
    assert {k: new[k] for k in new if k not in moved} == {k: old[k] for k in old if k not in moved}
    assert s["sink_flows"] == snapshot(tb.state["namespaces"], None)["sink_flows"]
    # each link's state: up, and its XDP program (the sink's; the XDP router's); only the
    # in-process read has its carrier changes
    progs = {}
    for role, ns in s["ns"].items():
        theirs = snapshot(tb.state["namespaces"], None)["ns"][role]["link_state"]
        for dev, st in ns["link_state"].items():
            assert {k: st[k] for k in ("up", "admin_up", "xdp_prog")} == {
                k: theirs[dev][k] for k in ("up", "admin_up", "xdp_prog")
            }, (role, dev)
            assert isinstance(st["carrier_changes"], int) and theirs[dev]["carrier_changes"] is None
            if dev != "lo":
                assert st["up"], (role, dev)
            progs[(role, dev)] = st["xdp_prog"]
    assert progs[("sink", "sink0")] is not None  # the XDP sink's
    return new


@pytest.mark.parametrize("sut", ["router", "xdp-router"])
def test_in_process_reads_equal_the_programs_reads(tb_name, sut):
    cfg = TestbedConfig(sut=sut, sut_cap_pps=20_000, sut_drop=0.01, pinning="unpinned")
    with (
        Testbed(tb_name, cfg) as tb,
        trials_on(tb) as ctx,
        Snapshots(tb.state["namespaces"]) as reader,
    ):
        first = _same(tb, ctx, reader)
        res = tb.send(40_000, 0.5)
        assert res.sent > 0
        ctx.sink.read()
        then = _same(tb, ctx, reader)
        moved = {k for k in then if then[k] != first.get(k)}
        # the cap and the drop rule counted, the links carried the frames, the sink
        assert any(k.endswith("/packets") and k.startswith("sut/") for k in moved), moved
        assert "tg/link/tg0/tx_packets" in moved
        assert "sut/link/sut1/tx_packets" in moved
        if sut == "xdp-router":
            assert "sut/xdp/forwarded/packets" in moved
        else:
            assert "sut/nft/na_cap/packets" in moved

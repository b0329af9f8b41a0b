"""The XDP router SUT (--sut xdp-router) on a real kernel: it forwards IPv4 and IPv6
exactly, its counters agree with the sink, what it cannot forward goes to the kernel,
its ground truths are found, a sweep crosses its saturation point, a flood saturates it
with every frame accounted for, and nothing of it outlives its testbed.

Needs root, netassay-gen and the built program (make setup); skipped with the reason
otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from netassay.config import TestbedConfig
from netassay.counters import xdp_router as counters_xdp_router
from netassay.errors import TestbedError
from netassay.testbed import Testbed
from netassay.testbed import xdp_router as testbed_xdp_router
from netassay.trial.engine import measure, trials_on
from netassay.trial.flood import flood, flood_path, gro_on

pytestmark = pytest.mark.system
FWD = "sut/xdp/forwarded/packets"


@pytest.fixture(autouse=True)
def _built(lab_env):
    try:
        testbed_xdp_router.object_path()
    except TestbedError as exc:
        pytest.skip(str(exc))


def _xdp(rec) -> dict[str, int]:
    return {
        k.split("/")[2]: v for k, v in rec.counters["deltas"].items() if k.startswith("sut/xdp/")
    }


def _prog_alive(pid: int, wait_s: float = 10.0) -> bool:
    """The program is still loaded after ``wait_s`` (a namespace is deleted
    asynchronously: its devices, and the program with them, go a moment later)."""
    deadline = time.monotonic() + wait_s
    while True:
        res = subprocess.run(["bpftool", "prog", "show", "id", str(pid)], capture_output=True)
        if res.returncode != 0 or time.monotonic() > deadline:
            return res.returncode == 0
        time.sleep(0.1)


@pytest.mark.parametrize(
    ("ip", "size", "trials"),
    [pytest.param(4, 64, 3, marks=pytest.mark.slow), (6, 84, 1)],  # 3 x 10 s, 1 x 10 s
    ids=["ipv4", "ipv6"],
)
def test_forwards_exactly_a_million_packets_per_trial(tb_name, ip, size, trials):
    """1,000,000 packets per trial at a low load, unpinned (the program runs inside the
    generator's send call, so a VM taking a CPU away cannot overflow its ring): no
    loss anywhere, the program's forwarded counter equal to the sink's count (XDP and
    nft), nothing dropped by the program. Three trials in a row over IPv4, one over
    IPv6 (the same program's other parser)."""
    cfg = TestbedConfig(
        sut="xdp-router", ip_version=ip, size_bytes=size, pinning="unpinned", sink="xdp+nft"
    )
    with Testbed(tb_name, cfg) as tb, trials_on(tb) as ctx:
        x = tb.state["xdp_router"]
        prog = x["prog_id"]
        assert x["napi_thread"] is None  # the generator's CPU
        assert x["wire_qdisc"] == "pfifo_head_drop" and x["ring_pkts"] > 256
        for k in range(trials):
            rec = measure(ctx, 0, k, 100_000, 10.0)
            assert rec.sent == 1_000_000, rec.warnings
            assert rec.received == rec.sent, rec.loss_location
            deltas = rec.counters["deltas"]
            assert deltas[FWD] == rec.received == deltas["sink/nft/na_rx/packets"]
            # every test frame forwarded, none dropped by the program (IPv6 MLD reports,
            # hop limit 1, are passed to the kernel: foreign frames, never counted)
            assert {r: n for r, n in _xdp(rec).items() if r.startswith("drop")} == {}
            assert {loc: n for loc, n in rec.loss_location.items() if n} == {}
            assert not [w for w in rec.warnings if w.startswith("counter fault")]
    assert not _prog_alive(prog)  # gone with the SUT's namespace


def test_what_it_cannot_forward_goes_to_the_kernel(tb_name):
    """TTL 1: the program passes it, the kernel answers time exceeded; a normal ping
    goes through the program and back through the kernel router; pin-2cpu: its NAPI
    thread is pinned to CPU 1."""
    cfg = TestbedConfig(sut="xdp-router", pinning="pin-2cpu", sink="nft")
    with Testbed(tb_name, cfg) as tb, trials_on(tb) as ctx:
        x = tb.state["xdp_router"]
        assert x["cpu"] == 1 and x["napi_thread"].startswith("napi/sut0-")
        assert os.sched_getaffinity(x["napi_pid"]) == {1}
        assert os.sched_getscheduler(x["napi_pid"]) == os.SCHED_FIFO
        ping = ["ip", "netns", "exec", tb.ns("tg"), "ping", "-n", "-q", "-c", "3", "-i", "0.2"]
        before = counters_xdp_router.read_counters(x["prog_id"])
        expired = subprocess.run([*ping, "-t", "1", tb.target["dst"]], capture_output=True)
        ok = subprocess.run([*ping, "-W", "2", tb.target["dst"]], capture_output=True, text=True)
        after = counters_xdp_router.read_counters(x["prog_id"])
        assert expired.returncode != 0  # time exceeded, from the kernel
        assert ok.returncode == 0, ok.stdout + ok.stderr
        assert after["pass_ttl"] - before["pass_ttl"] == 3
        assert after["forwarded"] - before["forwarded"] == 3
        rec = measure(ctx, 0, 0, 50_000, 0.5)  # the nft sink: GRO lets veth deliver
    assert rec.received == rec.counters["deltas"][FWD] > 0, rec.loss_location
    # a CPU taken away for long enough can overflow its ring: SUT ingress loss
    assert rec.sent - rec.received == rec.loss_location["sut_ingress"], rec.loss_location


def test_random_drop_ground_truth_is_in_the_program(tb_name):
    cfg = TestbedConfig(sut="xdp-router", pinning="unpinned", sut_drop=0.01)
    with Testbed(tb_name, cfg) as tb, trials_on(tb) as ctx:
        rec = measure(ctx, 0, 0, 100_000, 1.0)
    lost = rec.sent - rec.received
    assert 0.006 < lost / rec.sent < 0.014, lost
    assert _xdp(rec)["drop_ground_drop"] == lost == rec.loss_location["sut_forward"]


@pytest.mark.slow
def test_capacity_cap_in_front_of_it(tb_name, tmp_path, cap_sweep):
    """--sut-cap C on the XDP router (the program's token bucket: redirected frames
    bypass sut1's nft egress hook): PDR@0.5% within 5% of C, GOOD, the loss at the
    SUT's egress and counted by the program."""
    exp, trials = cap_sweep(tb_name, tmp_path / "cap.db", "--sut", "xdp-router")
    assert exp.metadata["class"] == "ebpf"
    for t in (t for t in trials if t["rate_pps"] >= 55_000):
        lost = t["sent"] - t["received"]
        assert t["loss_location"]["sut_egress"] >= 0.95 * lost > 0
        deltas = t["counters"]["deltas"]
        assert deltas["sut/xdp/drop_ground_cap/packets"] == t["loss_location"]["sut_egress"]


@pytest.mark.slow
def test_sweep_across_its_saturation_point(tb_name, tmp_path, cli, assess, stored):
    """pin-2cpu: the program on CPU 1 (its NAPI thread), the generator on CPU 0. The
    loads span 10%..95% of the generator's peak through this testbed (probed first).
    Where the router saturates inside that range, the loss past saturation is its full
    receive ring (SUT ingress); where it forwards all the generator can send (measured
    on the 2-vCPU VM: ~1.1 Mpps of 64- and 84-byte frames, IPv4 and IPv6, without loss),
    the verdict must say so (INCONCLUSIVE: widen the range), never invent a saturation
    (on a busy host, loss at a lower load that the router then outgrows is BAD: the
    environment, not the router, lost those frames).
    The assessment is printed, whatever its verdict on this machine."""
    up = cli("testbed", "up", "--name", tb_name, "--sut", "xdp-router", "--pinning", "pin-2cpu")
    assert up.returncode == 0, up.stderr
    with Testbed.attach(tb_name) as tb:
        peak = tb.send("max", 0.5).achieved_rate_pps
    loads = (0.1, 0.25, 0.4, 0.55, 0.7, 0.85, 0.95)  # the sweep's probe refuses > 98%
    rates = ",".join(f"{round(f * peak / 1000)}k" for f in loads)
    db = tmp_path / "sat.db"
    res = cli(
        "sweep", "--name", tb_name, "--rates", rates, "--runs", "3", "--duration", "0.5s",
        "--settle", "0.1s", "--db", str(db), "--no-peak-check",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    print(f"generator peak {peak / 1e6:.2f} Mpps; loads {rates}")
    print(cli("assess", str(db)).stdout)
    a = assess(db)
    exp, trials = stored(db)
    trials = [t for t in trials if not t["excluded"]]
    assert exp.metadata["class"] == "ebpf" and exp.metadata["pinning"] == "pin-2cpu"
    assert trials, "every trial was a measurement fault: the machine is too busy"
    top = [t for t in trials if t["rate_pps"] == max(t["rate_pps"] for t in trials)]
    lost = sum(t["sent"] - t["received"] for t in top)
    sent = sum(t["sent"] for t in top)
    if lost <= 0.005 * sent:  # it forwarded what the generator could send: no saturation
        if a["verdict"] == "BAD":  # a busy host: loss at a lower load that is no saturation
            assert "never falls below" in a["reason"], (a["reason"], a["loads"])
            return
        assert a["verdict"] == "INCONCLUSIVE", (a["reason"], a["loads"])
        assert "never exceeds" in a["reason"] or "widen" in a["reason"], a["reason"]
        return
    assert a["verdict"] in ("GOOD", "BAD", "INCONCLUSIVE"), a
    at_ring = sum(t["loss_location"]["sut_ingress"] for t in top)
    assert at_ring >= 0.95 * lost, [t["loss_location"] for t in top]


@pytest.mark.parametrize("sut", ["router", "xdp-router"])
def test_a_flood_is_accounted_for_frame_by_frame(tb_name, sut):
    """pin-2cpu, XDP live frames at the generator's unpaced peak (several Mpps on CPU
    0): the XDP router is saturated, and every frame sent was forwarded or lost at a
    counted place (nothing unaccounted, nothing at the
    generator); the XDP router's forwarded counter equals the sink's count. Without
    the live frames' headers written back on every frame, the kernel router dropped
    1-3% of a flood as addressed to another host (its MAC rewrite came back on a
    recycled page), loss that showed here as unaccounted."""
    cfg = TestbedConfig(sut=sut, pinning="pin-2cpu", sink="xdp")
    with Testbed(tb_name, cfg) as tb, trials_on(tb) as ctx:
        with flood_path(tb) as changed:
            assert bool(changed) == (sut == "router")
            f = flood(ctx, 1.0)
        assert not (changed and gro_on(tb))  # put back after the flood
    print(f"{sut}: offered {f['offered_pps']:,} pps, forwarded {f['forwarded_pps']:,} pps, "
          f"lost at {f['loss_location']}")  # fmt: skip
    loss = f["loss_location"]
    assert "unaccounted" not in loss and "gen_egress" not in loss and "unsent" not in loss, f
    assert f["sent"] == f["forwarded"] + sum(loss.values()), f
    assert f["saturated"] == (f["forwarded"] < f["sent"]), f
    if sut == "xdp-router":  # ~6 Mpps against ~2.5 here
        assert f["saturated"] and f["forwarded"] < 0.9 * f["sent"], f
        assert loss["sut_ingress"] > 0.5 * (f["sent"] - f["forwarded"]), f
        assert f["program_forwarded"] == f["forwarded"], f
    # the kernel router's frames are received on the generator's CPU, which bounds the
    # offered rate (1.1-1.5 Mpps here): some floods saturate it (0.2-1.0 Mpps forwarded),
    # one in a CI rehearsal did not (1.33 Mpps, all forwarded), and says so


def test_flood_command_reports_the_maximum_forwarding_rate(tb_name, cli):
    """netassay flood builds the testbed, floods it, prints one JSON object and removes
    the testbed: the median forwarded rate is the one reported, every flood balanced."""
    res = cli("flood", "--name", tb_name, "--sut", "xdp-router", "--pinning", "pin-2cpu",
              "--duration", "0.5s", "--runs", "2", "--json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["sut"] == "xdp-router" and out["pinning"] == "pin-2cpu" and len(out["floods"]) == 2
    fwd = sorted(f["forwarded_pps"] for f in out["floods"])
    assert out["max_forwarding_rate_pps"] == sum(fwd) / 2
    assert out["lower_bound"] is False  # the XDP router is saturated
    for f in out["floods"]:
        assert f["sent"] == f["forwarded"] + sum(f["loss_location"].values()), f
        assert "unaccounted" not in f["loss_location"], f
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"na-{tb_name}-" not in ns

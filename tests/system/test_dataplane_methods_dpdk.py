"""burst, recovery and reconfig through DPDK's testpmd and l3fwd and through a data plane
of the user's own (``--sut exec``), root, real namespaces, real traffic, each against a
ground truth after the data plane (the shape of tests/system/test_dataplane_methods.py):

- burst through testpmd and through l3fwd: the nft policer of C packets/s with a bucket
  of B frames at the sink's ingress (``--sut-cap``, ``--sink nft``: neither has a meter
  of its own) and bursts at R_b: the longest burst without loss is B / (1 - C / R_b),
  the frames held (RFC 9004's corrected buffer time times R_b) are B. The policer sits
  behind the application's ring and batches: a burst reaches it in less time than it
  was sent when the application lost its CPU for a moment, and gains C x that time less
  of refill (testpmd at C = 30 kpps and R_b = 100 kpps: the longest burst came out 5.5%
  short, 2,765 of 2,925.7, and a burst of 2,812 lost 9 frames). So C is 10 kpps here
  and R_b 40 kpps: the refill is a quarter of the burst (B / (1 - C / R_b) = 2,730.7, B
  alone 2,048), and a stall of 3 ms costs 30 frames of it, 1.1%.
- recovery through ``--sut exec`` (examples/sut-setup/kernel-router.sh): a tbf of rate
  R with a queue of Q frames on the data plane's egress (``sut1``), 110% of R for 2 s
  (the queue full), then 55%: the queue drains in Q / (R - 0.55 R).
- reconfig through ``--sut exec``: a change that inserts a counting drop rule in the
  forwarding path and flushes it 200 ms later: the frames lost are those the rule
  counted, the effective blocked time that count at the offered rate.

Why not recovery through testpmd: ``recovery`` reads the XDP sink's count every
interval, and the policer that caps testpmd sits at the sink's ingress behind the nft
sink only (XDP counts a frame before any hook after it); a tbf has no place after
testpmd either (its AF_XDP socket sends past ``sut1``'s qdisc; docs/dataplanes.md).

Needs root, netassay-gen, DPDK's testpmd and the l3fwd make setup builds; skipped with the
reason otherwise.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.system.droprule import drop_rule
from tests.system.stored import json_of, trials_of

from netassay.analysis import recovery
from netassay.config import TestbedConfig
from netassay.errors import NetassayError
from netassay.names import SUT_OUT
from netassay.testbed import dataplane

pytestmark = pytest.mark.system
ROUTER = Path(__file__).resolve().parents[2] / "examples" / "sut-setup" / "kernel-router.sh"
CAP = 10_000  # the policer (--sut-cap)
BUCKET = dataplane.XSK_RING  # its bucket (dataplane.cap_bucket)


def _dpdk(sut: str) -> None:
    try:
        dataplane.validate(TestbedConfig(sut=sut))
    except NetassayError as exc:
        pytest.skip(exc.line())


R_B = 40_000  # the bursts' rate: the longest lossless one about 68 ms
LONGEST = BUCKET / (1 - CAP / R_B)  # 2,730.7 frames


@pytest.mark.slow
@pytest.mark.parametrize("sut", ["testpmd", "l3fwd"])
def test_burst_through_dpdk_is_its_caps_bucket(sut, tb_name, tmp_path, cli):
    """burst --sut testpmd|l3fwd --sut-cap C --sink nft at R_b: none of the bursts 3%
    shorter than B / (1 - C / R_b) loses a frame at the policer (the SUT's egress), each
    3% longer does (a burst at most B never does). The bursts 0.5 s apart: the bucket
    refills in B / C = 205 ms. When no burst lost a frame anywhere else (a stall of this
    busy host's data plane CPU overflows the application's ring at the SUT's ingress now
    and then) and both tests completed, the longest burst and the frames held are the
    policer's, each within 5% (a search ends at 2% of the burst)."""
    _dpdk(sut)
    db = tmp_path / "burst.db"
    out = json_of(
        cli, "burst", "--name", tb_name, "--sut", sut, "--sut-cap", f"{CAP}", "--sink",
        "nft", "--burst-rate", f"{R_B}", "--max-burst", "6000", "--resolution", "0.02",
        "--tests", "2", "--wait", "0.5s", "--throughput", f"{CAP}", "--retries", "4",
        "--no-peak-check", "--db", str(db), "--json",
    )  # fmt: skip
    shown = ("per_test", "mean_frames", "buffered_frames", "bursts")
    print({"sut": sut, **{k: out[k] for k in shown}})
    bursts = [t for t in trials_of(db) if not t["excluded"]]
    short = [t for t in bursts if t["sent"] <= 0.97 * LONGEST]
    long = [t for t in bursts if t["sent"] >= 1.03 * LONGEST]
    assert short and long, [t["sent"] for t in bursts]
    assert all(t["loss_location"].get("sut_egress", 0) == 0 for t in short), [
        (t["sent"], t["loss_location"]) for t in short
    ]
    assert all(t["loss_location"].get("sut_egress", 0) > 0 for t in long), [
        (t["sent"], t["loss_location"]) for t in long
    ]
    elsewhere = [t["loss_location"] for t in bursts
                 if {k for k, v in t["loss_location"].items() if v} - {"sut_egress"}]  # fmt: skip
    print({"bursts": [(t["sent"], t["received"]) for t in bursts], "elsewhere": elsewhere})
    assert out["at_limit"] == 0, out
    if not elsewhere and out["tests"] == 2:  # (a test the host's faults left incomplete: none)
        assert abs(out["mean_frames"] - LONGEST) <= 0.05 * LONGEST, out["per_test"]
        assert abs(out["buffered_frames"] - BUCKET) <= 0.05 * BUCKET, out


def _exec_up(cli, name: str) -> None:
    res = cli("testbed", "up", "--name", name, "--sut", "exec", "--sut-setup", str(ROUTER),
              timeout=120)  # fmt: skip
    assert res.returncode == 0, res.stderr


def _tbf(name: str, rate_pps: int, queue: int, bucket: int) -> None:
    """A tbf on the data plane's egress (sut1): 64-byte frames at ``rate_pps``, a queue
    of ``queue`` frames and a bucket of ``bucket`` frames (bytes as tc counts them)."""
    subprocess.run(
        ["ip", "netns", "exec", f"na-{name}-sut", "tc", "qdisc", "replace", "dev", SUT_OUT,
         "root", "tbf", "rate", f"{rate_pps * 64 * 8}bit", "burst", str(bucket * 64),
         "limit", str(queue * 64)], check=True,
    )  # fmt: skip


R, Q = 10_000, 1_000  # the recovery's ground truth
DRAIN_S = Q / (R - 0.55 * R)  # 222 ms


@pytest.mark.slow
def test_recovery_through_a_users_data_plane_is_the_time_its_queue_takes_to_drain(
    tb_name, tmp_path, cli
):
    """recovery --throughput R through ``--sut exec`` with a tbf of R and Q frames on
    its egress: in each trial that lost frames only there (a busy host's SUT may drop at
    its ingress too), the recovery time is Q / (R - 0.55 R) within 5% or the samples'
    gap either side of it, and the backlog the deficit shows is the queue less what
    drained before the first sample after the load dropped, within 5% of Q; two of
    three trials at least (a stall of the generator right at the drop leaves less
    queued)."""
    db = tmp_path / "r.db"
    _exec_up(cli, tb_name)
    try:
        _tbf(tb_name, R, Q, 100)
        out = json_of(
            cli, "recovery", "--name", tb_name, "--throughput", f"{R}", "--overload-time",
            "2s", "--recover-time", "1s", "--interval", "10ms", "--trials", "3", "--wait",
            "0.5s", "--no-peak-check", "--db", str(db), "--json",
        )  # fmt: skip
    finally:
        cli("testbed", "down", "--name", tb_name)
    print({k: out[k] for k in ("mean_s", "ci95_s", "per_trial")})
    assert out["overload_pps"] == pytest.approx(1.1 * R)
    assert out["low_pps"] == pytest.approx(0.55 * R)
    held = []
    for t in trials_of(db):
        where = {k for k, v in t["loss_location"].items() if v and k != "unsent"}
        if where != {"sut_egress"} or t["excluded"]:
            continue  # lost at the SUT's ingress too: the busy host's, not the queue's
        r = t["counters"]["recovery"]
        after_a = [s[0] - r["t_drop_s"] for s in r["samples"]]
        gap = min(x for x in after_a if x > DRAIN_S) - max(x for x in after_a if x <= DRAIN_S)
        backlog = Q - (R - 0.55 * R) * min(x for x in after_a if x >= 0)
        found = recovery.recovery([tuple(s) for s in r["samples"]], r["t_drop_s"], 0.55 * R)
        ok_time = found.recovery_s is not None and (
            abs(found.recovery_s - DRAIN_S) <= max(0.05 * DRAIN_S, gap)
        )
        ok_backlog = abs(-found.settled_frames - backlog) <= 0.05 * Q
        held.append(ok_time and ok_backlog)
        print({"trial": t["repetition"], "gap_s": gap, "backlog": backlog,
               **{k: v for k, v in found.to_json().items() if k != "after"}})  # fmt: skip
    assert sum(held) >= 2, held


RATE = 20_000


def test_reconfig_through_a_users_data_plane_blocks_for_what_its_drop_rule_dropped(
    tb_name, tmp_path, cli
):
    """reconfig --sut exec --sut-setup kernel-router.sh --change SCRIPT: a counting drop
    rule in the kernel's forwarding path for 200 ms. Every frame lost is one the rule
    counted (a rule of the user's, which netassay does not read: loss no counter
    explains), the effective blocked time is the rule's count at the offered rate within
    1 ms (20 frames), at least the rule's 200 ms and at most the change's own run and
    5 ms (the rule is in place before ``nft add rule`` returns, gone once ``flush``
    does)."""
    rule = drop_rule(tmp_path, held_ms=200)
    db = tmp_path / "c.db"
    out = json_of(
        cli, "reconfig", "--name", tb_name, "--sut", "exec", "--sut-setup", str(ROUTER),
        "--rate", f"{RATE}", "--duration", "3s", "--at", "0.5s", "--trials", "1",
        "--change", rule.change, "--no-peak-check", "--db", str(db), "--json",
    )  # fmt: skip
    dropped = rule.dropped()
    (t,) = trials_of(db)
    rc = t["counters"]["reconfig"]
    per = out["per_trial"][0]
    print({"dropped": dropped, "truth_s": dropped / RATE, "trial": per, "change_s": rc["seconds"]})
    assert t["excluded"] is None, t["excluded"]
    assert rc["exit"] == 0, rc
    assert per["lost"] == dropped > 0  # every frame lost is one the rule dropped
    where = {k: v for k, v in t["loss_location"].items() if v and k != "unsent"}
    assert where == {"unaccounted": dropped}, where  # ("unsent": a busy host's truncation)
    assert abs(per["blocked_s"] - dropped / RATE) <= 0.001
    assert 0.2 <= per["blocked_s"] <= rc["seconds"] + 0.005, (per, rc)

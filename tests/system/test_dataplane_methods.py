"""The methods beyond throughput through a data plane of its own (root, real namespaces,
real traffic), each against a ground truth that lives in the data plane:

- hooks: ``--hook-before`` and ``--hook-after`` read Open vSwitch's own port counters
  with its own tool and no option (``ovs-ofctl dump-ports br0``: the hook's environment
  names the testbed's Open vSwitch, ``OVS_RUNDIR``); what they stored shows every frame
  the trial sent crossing it.
- burst: an OpenFlow meter of C packets/s with a bucket of B frames (``--sut-cap``, its
  bucket the AF_XDP ring's 2,048 frames) and bursts at R_b: the longest burst without
  loss is B / (1 - C / R_b) (the bucket, and what the rate adds while the burst comes
  in), and the frames it held (RFC 9004's corrected buffer time times R_b) are B.
- recovery: the same meter at 110% of C for 2 s, then 55%: a meter queues nothing, so
  the SUT forwards what it is offered from the overload's end (a recovery time of 0),
  and what the overload lost is its excess less the bucket, at the SUT's egress.
- reconfig: a change that puts a drop rule above Open vSwitch's forwarding for 200 ms
  (``ovs-ofctl`` in the change's environment, as in a hook): the frames lost are those
  Open vSwitch took in and did not send on (its own port counters) and those its
  datapath counted as its pipeline's drops, located at the SUT's forwarding; the blocked
  time lies between the rule's 200 ms and the change's own run.
- the loss location: a drop rule for one flow in four, for a whole trial: a quarter of
  the frames sent, dropped in the data plane by Open vSwitch's own count, located at
  the SUT's forwarding, none left unaccounted.

Needs root, netassay-gen and Open vSwitch (make setup); skipped with the reason otherwise.
"""

from __future__ import annotations

import re

import pytest
from tests.system.stored import json_of, trials_of

from netassay.config import TestbedConfig
from netassay.counters.loss import dataplane_counters
from netassay.errors import NetassayError
from netassay.testbed import dataplane

pytestmark = pytest.mark.system
RATE = 20_000  # a low load (tests/system/test_dataplanes.py)
CAP = 30_000  # the meter (--sut-cap)
BUCKET = dataplane.XSK_RING  # its bucket (dataplane.cap_bucket)


def _ovs() -> None:
    try:
        dataplane.validate(TestbedConfig(sut="ovs"))
    except NetassayError as exc:
        pytest.skip(exc.line())


def ports(text: str) -> dict[str, tuple[int, int]]:
    """``ovs-ofctl dump-ports``: each port's (rx pkts, tx pkts)."""
    found = re.finditer(r'port\s+"?([\w-]+)"?:\s+rx pkts=(\d+).*?tx pkts=(\d+)', text, re.S)
    return {m[1]: (int(m[2]), int(m[3])) for m in found}


DUMP = "sh -c 'echo \"$OVS_RUNDIR\"; ovs-ofctl -O OpenFlow13 --names dump-ports br0'"


def test_a_hook_reads_the_data_planes_own_counters_with_its_own_tool(tb_name, tmp_path, cli):
    """sweep --sut ovs with a hook before and after each trial that runs ``ovs-ofctl
    dump-ports br0`` as a user would, no socket named: Open vSwitch's own counts over
    the trial (after less before) are what netassay read of it to the frame: every frame
    the trial sent reached sut0, and what sut1 sent on is what the sink counted."""
    _ovs()
    db = tmp_path / "hooks.db"
    res = cli(
        "sweep", "--name", tb_name, "--sut", "ovs", "--rates", f"{RATE}", "--runs", "1",
        "--duration", "1s", "--no-peak-check", "--db", str(db), "--hook-before", DUMP,
        "--hook-after", DUMP, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    (t,) = trials_of(db)
    h = t["counters"]["hooks"]
    assert h["before"]["exit"] == 0 and h["after"]["exit"] == 0, h
    rundir = str(dataplane.run_dir(tb_name) / "ovs")
    assert h["before"]["stdout"].splitlines()[0] == rundir, h["before"]
    before, after = ports(h["before"]["stdout"]), ports(h["after"]["stdout"])
    rx = after["sut0"][0] - before["sut0"][0]
    tx = after["sut1"][1] - before["sut1"][1]
    own = dataplane_counters(t["counters"]["deltas"])
    print({"sent": t["sent"], "received": t["received"], "rx": rx, "tx": tx, "own": own,
           "loss": {k: v for k, v in t["loss_location"].items() if v}})  # fmt: skip
    assert t["sent"] == RATE  # 1 s at the rate
    assert (rx, tx) == (own.get("sut0/rx_pkts", 0), own.get("sut1/tx_pkts", 0)), own
    assert rx == t["sent"]  # (its port counts the frames its full ring refused too)
    assert tx == t["received"] >= 0.99 * t["sent"]  # (a stall of this busy host may lose some)


R_B = 100_000  # the bursts' rate: the longest lossless one about 29 ms
LONGEST = BUCKET / (1 - CAP / R_B)  # 2,925.7 frames


def test_burst_through_open_vswitch_is_its_meters_bucket(tb_name, tmp_path, cli):
    """burst --sut ovs --sut-cap C at R_b: the longest burst without loss is the
    bucket and what the meter's rate adds while the burst comes in, B / (1 - C / R_b).
    Each burst is judged by the meter's own loss (the SUT's egress): none in a burst 3%
    shorter than that (the meter refills each millisecond, 30 frames), some in one 3%
    longer. When no burst lost a frame anywhere else (this busy host's stalls of the
    data plane's CPU overflow its ring at the SUT's ingress now and then, which cuts a
    search short) and both tests completed (a burst that stays a measurement fault, a
    generator stall, leaves its test incomplete), the method's result is the meter's:
    the longest burst and the frames it held, B, each within 5% (a search ends at 2% of
    the burst)."""
    _ovs()
    db = tmp_path / "burst.db"
    out = json_of(
        cli, "burst", "--name", tb_name, "--sut", "ovs", "--sut-cap", f"{CAP}",
        "--burst-rate", f"{R_B}", "--max-burst", "6000", "--resolution", "0.02", "--tests",
        "2", "--wait", "0.2s", "--throughput", f"{CAP}", "--retries", "4", "--no-peak-check",
        "--db", str(db), "--json",
    )  # fmt: skip
    print({k: out[k] for k in ("per_test", "mean_frames", "buffered_frames", "bursts")})
    bursts = [t for t in trials_of(db) if not t["excluded"]]
    short = [t for t in bursts if t["sent"] <= 0.97 * LONGEST]
    long = [t for t in bursts if t["sent"] >= 1.03 * LONGEST]
    assert short and long, [t["sent"] for t in bursts]
    assert all(t["loss_location"].get("sut_egress", 0) == 0 for t in short), short
    assert all(t["loss_location"].get("sut_egress", 0) > 0 for t in long), long
    elsewhere = [t["loss_location"] for t in bursts
                 if {k for k, v in t["loss_location"].items() if v} - {"sut_egress"}]  # fmt: skip
    faults = [t["excluded"] for t in trials_of(db) if t["excluded"]]
    print({"bursts": [(t["sent"], t["received"]) for t in bursts], "elsewhere": elsewhere,
           "faults": faults})  # fmt: skip
    assert out["at_limit"] == 0, out
    if not elsewhere and out["tests"] == 2:  # (a test the host's faults left incomplete: none)
        assert abs(out["mean_frames"] - LONGEST) <= 0.05 * LONGEST, out["per_test"]
        assert abs(out["buffered_frames"] - BUCKET) <= 0.05 * BUCKET, out


INTERVAL_S = 0.01


@pytest.mark.slow
def test_recovery_through_open_vswitch_is_immediate_behind_a_meter(tb_name, tmp_path, cli):
    """recovery --sut ovs --sut-cap C --throughput C: 2 s at 1.1 C, then 0.55 C. A
    meter holds no queue: where every frame lost was the meter's (the SUT's egress), the
    deficit after the overload's end does not change (a recovery time of 0, within two
    sampling intervals and what two intervals of the low load hold), and the overload
    lost its excess less the bucket, 0.1 C x 2 s - B, within 1% of the overload either
    way: a stall at the overload's start wastes some of the full bucket's tokens (more
    lost), a generator late into the overload stretches it over more of the meter's
    time (less lost: 3,665 of 3,952 in one CI run, what 10 ms of the meter lets through)."""
    _ovs()
    db = tmp_path / "rec.db"
    out = json_of(
        cli, "recovery", "--name", tb_name, "--sut", "ovs", "--sut-cap", f"{CAP}",
        "--throughput", f"{CAP}", "--overload-time", "2s", "--recover-time", "1s",
        "--interval", "10ms", "--trials", "3", "--wait", "0.5s", "--no-peak-check",
        "--db", str(db), "--json",
    )  # fmt: skip
    print({k: out[k] for k in ("mean_s", "ci95_s", "per_trial")})
    from netassay.analysis import recovery

    low = 0.55 * CAP
    lost_truth = 0.1 * CAP * 2 - BUCKET  # 3,952
    found = []
    for t in trials_of(db):
        where = {k for k, v in t["loss_location"].items() if v and k != "unsent"}
        if where != {"sut_egress"} or t["excluded"]:
            continue  # a busy host's ingress loss: not the meter's
        r = t["counters"]["recovery"]
        got = recovery.recovery([tuple(s) for s in r["samples"]], r["t_drop_s"], low)
        lost = t["sent"] - t["received"]
        print({"trial": t["repetition"], "lost": lost, "recovery_s": got.recovery_s,
               "settled_frames": got.settled_frames})  # fmt: skip
        found.append(
            got.recovery_s is not None and got.recovery_s <= 2 * INTERVAL_S
            and abs(got.settled_frames) <= low * 2 * INTERVAL_S
            and abs(lost - lost_truth) <= 0.01 * 1.1 * CAP * 2
        )  # fmt: skip
    assert sum(found) >= 2, found


CHANGE = """set -e
ovs-ofctl -O OpenFlow13 add-flow br0 'priority=100,in_port=sut0,actions=drop'
sleep 0.2
ovs-ofctl -O OpenFlow13 del-flows --strict br0 'priority=100,in_port=sut0'
"""


def test_reconfig_through_open_vswitch_loses_what_its_drop_rule_held(tb_name, tmp_path, cli):
    """reconfig --sut ovs --change SCRIPT: a drop rule above the forwarding ones for
    200 ms, made and removed by ``ovs-ofctl`` with no socket named (the change's
    environment names the testbed's Open vSwitch). The frames lost are those Open
    vSwitch took in on sut0 and did not send on sut1 (its port counters), and those its
    datapath counted as its pipeline's drops (``datapath/pipeline_drops``): all located
    at the SUT's forwarding, dropped in the data plane, none elsewhere; the blocked time
    at least the rule's 200 ms and at most the change's own run and 50 ms (Open
    vSwitch's datapath takes a rule up within milliseconds)."""
    _ovs()
    script = tmp_path / "block.sh"
    script.write_text(CHANGE)
    db = tmp_path / "re.db"
    out = json_of(
        cli, "reconfig", "--name", tb_name, "--sut", "ovs", "--rate", f"{RATE}",
        "--duration", "3s", "--at", "0.5s", "--trials", "1", "--change", f"sh {script}",
        "--no-peak-check", "--db", str(db), "--json",
    )  # fmt: skip
    (t,) = trials_of(db)
    rc = t["counters"]["reconfig"]
    own = dataplane_counters(t["counters"]["deltas"])
    switched = own["sut0/rx_pkts"] - own["sut1/tx_pkts"]
    print({"per_trial": out["per_trial"], "own": own, "change_s": rc.get("seconds")})
    assert t["excluded"] is None, t["excluded"]
    assert rc["exit"] == 0, rc
    assert rc["lost"] == switched == own["datapath/pipeline_drops"] > 0, (rc, own)
    # Open vSwitch's own count of its pipeline's drops: the SUT's forwarding, no other
    where = {k: v for k, v in t["loss_location"].items() if v and k != "unsent"}
    assert where == {"sut_forward": rc["lost"]}, where  # ("unsent": a busy host's truncation)
    assert 0.2 <= rc["blocked_s"] <= rc["seconds"] + 0.05, rc
    text = cli("assess", str(db), check=True).stdout
    assert f"datapath/pipeline_drops {rc['lost']:,}" in text and "dropped in the data plane" in text


QUARTER = "ovs-ofctl -O OpenFlow13 add-flow br0 'priority=100,udp,tp_src=0x0/0x3,actions=drop'"


def test_what_open_vswitch_drops_by_its_own_count_is_located_in_the_data_plane(
    tb_name, tmp_path, cli
):
    """sweep --sut ovs --flows 4 with a drop rule for the flow whose UDP source port is
    0 mod 4 (one of the four consecutive ports: a quarter of the frames, sent in turn),
    added by a hook before the trial: what Open vSwitch's datapath counted as its
    pipeline's drops is a quarter of the frames sent, less those of that flow lost
    before it (at the SUT's ingress on a busy host); netassay's loss location puts them
    at the SUT's forwarding, dropped in the data plane, and leaves nothing unaccounted,
    though the drops last to the trial's end (its coverage counters lag by up to a
    second: the trial reads them again that long after); the sweep's text says so."""
    _ovs()
    db = tmp_path / "q.db"
    res = cli(
        "sweep", "--name", tb_name, "--sut", "ovs", "--flows", "4", "--rates", f"{RATE}",
        "--runs", "1", "--duration", "1s", "--no-peak-check", "--db", str(db),
        "--hook-before", QUARTER, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    (t,) = trials_of(db)
    own = dataplane_counters(t["counters"]["deltas"])
    loss = {k: v for k, v in t["loss_location"].items() if v}
    print({"sent": t["sent"], "received": t["received"], "own": own, "loss": loss,
           "settle_wait_s": t["counters"]["settle_wait_s"]})  # fmt: skip
    assert t["counters"]["hooks"]["before"]["exit"] == 0, t["counters"]["hooks"]
    dropped = own.get("datapath/pipeline_drops", 0)
    ingress = loss.get("sut_ingress", 0)
    assert t["sent"] // 4 - ingress <= dropped <= t["sent"] // 4, (dropped, loss)
    assert loss.get("sut_forward") == dropped and loss.get("unaccounted", 0) == 0, loss
    assert set(loss) <= {"sut_forward", "sut_ingress", "unsent"}, loss
    assert "dropped in the data plane" in res.stdout, res.stdout

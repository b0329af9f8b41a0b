"""burst, recovery and reconfig against ground truths on the kernel router (root, real
namespaces, real traffic). Each ground truth is on the SUT's egress (a tbf) or in its
forwarding path (an nft drop rule), downstream of how frames reach the SUT, so it holds
whichever receive mode the testbed uses.

- burst: a tbf of rate R_s with a queue of Q frames and a bucket of K frames; bursts at
  R_b: the longest burst without loss is B = (Q + K) / (1 - R_s / R_b) (the queue, the
  bucket, and what the rate drains while the burst comes in); RFC 9004's corrected
  buffer time times R_b is the frames held, Q + K.
- recovery: a tbf of rate R with a queue of Q frames, 110% of R for 2 s (the queue
  full), then 55%: the queue drains in Q / (R - 0.55 R).
- reconfig: a script that inserts a counting drop rule in the SUT's forward hook and
  flushes it 200 ms later: the frames lost are those the rule counted, and the effective
  blocked time that count at the offered rate (the sleep's 200 ms and nft's own time).

Needs root and netassay-gen (skipped with the reason otherwise).
"""

from __future__ import annotations

import json

import pytest
from tests.system.droprule import drop_rule, sut_tbf

from netassay.analysis import recovery

pytestmark = pytest.mark.system


def _json(cli, *args):
    res = cli(*args)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


# the burst's ground truth: short bursts (about 1 ms), so that a stall of a busy host's
# generator rarely falls in one
R_S, Q, K, R_B = 5_000, 200, 20, 200_000
B = (Q + K) / (1 - R_S / R_B)  # 225.6 frames


@pytest.mark.slow
def test_the_longest_burst_is_the_queue_the_bucket_and_what_the_rate_drains(tb_name, tmp_path, cli):
    db = tmp_path / "b.db"
    assert cli("testbed", "up", "--name", tb_name, "--sut", "router").returncode == 0
    try:
        sut_tbf(tb_name, R_S, Q, K)
        out = _json(
            cli, "burst", "--name", tb_name, "--burst-rate", "200k", "--max-burst", "400",
            "--resolution", "0.02", "--tests", "2", "--wait", "0.2s", "--throughput", "5k",
            "--retries", "4", "--no-peak-check", "--db", db, "--json",
        )  # fmt: skip
    finally:
        cli("testbed", "down", "--name", tb_name)
    print({k: out[k] for k in ("per_test", "mean_frames", "buffered_frames", "bursts")})
    assert out["tests"] >= 2 and out["at_limit"] == 0  # (a busy host may spoil a test)
    assert abs(out["mean_frames"] - B) <= 0.05 * B, out["per_test"]
    assert abs(out["buffered_frames"] - (Q + K)) <= 0.05 * (Q + K)
    assert out["implied_buffer_s"] == pytest.approx(out["mean_frames"] / R_B)
    text = cli("assess", db, check=True).stdout
    assert "corrected buffer time" in text and "longest burst without loss" in text
    trials = [json.loads(x) for x in cli("export", "--db", db, "--format", "jsonl",
                                         check=True).stdout.splitlines()]  # fmt: skip
    lossy = [t for t in trials if t["loss_location"].get("sut_egress")]
    assert lossy, "a burst too long is lost at the tbf, on the SUT's egress"


R, QR = 10_000, 1_000  # the recovery's ground truth
DRAIN_S = QR / (R - 0.55 * R)  # 222 ms


@pytest.mark.slow
def test_recovery_is_the_time_the_full_queue_takes_to_drain(tb_name, tmp_path, cli):
    db = tmp_path / "r.db"
    assert cli("testbed", "up", "--name", tb_name, "--sut", "router").returncode == 0
    try:
        sut_tbf(tb_name, R, QR, 100)
        out = _json(
            cli, "recovery", "--name", tb_name, "--throughput", "10k", "--overload-time", "2s",
            "--recover-time", "1s", "--interval", "10ms", "--trials", "4", "--wait", "0.5s",
            "--no-peak-check", "--db", db, "--json",
        )  # fmt: skip
    finally:
        cli("testbed", "down", "--name", tb_name)
    print({k: out[k] for k in ("mean_s", "ci95_s", "per_trial")})
    assert out["overload_pps"] == pytest.approx(11_000) and out["low_pps"] == pytest.approx(5_500)
    assert out["trials"] == 4
    from netassay.store.db import Store

    with Store(db, readonly=True) as st:
        trials = st.trials(next(iter(st.experiments())).id)
    # the trials the ground truth speaks of: every frame lost at the tbf (a busy host's
    # SUT can drop at its ingress too, starved of CPU: that trial is the host's)
    where = [{k for k, v in t["loss_location"].items() if v and k != "unsent"} for t in trials]
    truthful = {t["repetition"] for t, w in zip(trials, where, strict=True) if w == {"sut_egress"}}
    assert len(truthful) >= 2, [t["loss_location"] for t in trials]
    # Each truthful trial against the ground truth, to within what its samples resolve:
    # the full queue drains in Q / (R - 0.55 R) from A (never sooner: the tbf's rate is
    # a ceiling), known to within the gap between the samples either side of that time
    # (a busy host's sampler may wait); and the backlog the deficit shows is the queue
    # less what drained between A and the first sample after it, Q - 0.45 R x that.
    held = []
    for t in trials:
        if t["repetition"] not in truthful:
            continue
        r = t["counters"]["recovery"]
        after_a = [s[0] - r["t_drop_s"] for s in r["samples"]]
        gap = min(x for x in after_a if x > DRAIN_S) - max(x for x in after_a if x <= DRAIN_S)
        backlog = QR - (R - 0.55 * R) * min(x for x in after_a if x >= 0)
        found = recovery.recovery([tuple(s) for s in r["samples"]], r["t_drop_s"], 0.55 * R)
        ok_time = found.recovery_s is not None and (
            abs(found.recovery_s - DRAIN_S) <= max(0.05 * DRAIN_S, gap)
        )
        ok_backlog = abs(-found.settled_frames - backlog) <= 0.05 * QR
        held.append(ok_time and ok_backlog)
        print({"trial": t["repetition"], "gap_s": gap, "backlog": backlog,
               **{k: v for k, v in found.to_json().items() if k != "after"}})  # fmt: skip
    # (a stall of a busy host's generator right at A leaves less queued: one trial may miss)
    assert sum(held) >= 2, held
    assert "recovery time: mean" in cli("assess", db, check=True).stdout


def test_the_blocked_time_is_what_the_drop_rule_dropped(tb_name, tmp_path, cli):
    rule = drop_rule(tmp_path, held_ms=200)
    db = tmp_path / "c.db"
    out = _json(
        cli, "reconfig", "--name", tb_name, "--sut", "router", "--rate", "20k",
        "--duration", "4s", "--at", "0.2s", "--trials", "1", "--change", rule.change,
        "--no-peak-check", "--db", db, "--json",
    )  # fmt: skip
    dropped = rule.dropped()
    truth = dropped / 20_000  # the rule's own count, at the offered rate
    t = out["per_trial"][0]
    print({"dropped": dropped, "truth_s": truth, "trial": t})
    # (nft took 2 s to insert, count and flush the rule on a busy host: --duration 4s)
    assert t["excluded"] is None, t
    assert t["lost"] == dropped  # every frame lost is one the rule dropped
    # the sleep's 200 ms and nft's own time (more on a busy host)
    assert abs(t["blocked_s"] - truth) <= 0.001 and t["blocked_s"] >= 0.2
    assert "effective blocked time: mean" in cli("assess", db, check=True).stdout


def test_a_change_that_fails_or_outlasts_the_traffic_is_a_fault(tb_name, tmp_path, cli):
    """A --change that exits non-zero, or is still running when the traffic ends (its
    loss would not all be counted), leaves its trial out of the mean, named by its line."""
    assert cli("testbed", "up", "--name", tb_name, "--sut", "router").returncode == 0
    try:
        runs = []
        for change in ("sh -c 'echo no such ruleset >&2; exit 1'", "sleep 1.5"):
            runs.append(_json(
                cli, "reconfig", "--name", tb_name, "--rate", "10k", "--duration", "1s",
                "--at", "0.2s", "--trials", "1", "--retries", "0", "--change", change,
                "--no-peak-check", "--db", tmp_path / "f.db", "--json",
            ))  # fmt: skip
    finally:
        cli("testbed", "down", "--name", tb_name)
    failed, slow = runs
    for out in runs:
        assert out["trials_excluded"] == 1 and out["mean_blocked_s"] is None, out
    # (on a busy host another fault, a truncated trial, may come first)
    assert (
        "command fault: --change 'sh -c 'echo no such ruleset >&2; exit 1'' exited 1: "
        "no such ruleset"
    ) in failed["per_trial"][0]["excluded"]
    assert ("command fault: --change 'sleep 1.5' was still running when the traffic ended") in slow[
        "per_trial"
    ][0]["excluded"]

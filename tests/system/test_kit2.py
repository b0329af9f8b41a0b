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
- reconfig: a script that inserts a drop rule in the SUT's forward hook and deletes it
  200 ms later, its own clock stamping both: the effective blocked time is that span.

Needs root and netassay-gen (skipped with the reason otherwise).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from netassay.names import SUT_OUT

pytestmark = pytest.mark.system


def _json(cli, *args):
    res = cli(*args)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _tbf(name: str, rate_pps: int, queue: int, bucket: int) -> None:
    """A tbf on the SUT's egress: 64-byte frames at ``rate_pps``, a queue of ``queue``
    frames and a bucket of ``bucket`` frames (bytes as tc counts them)."""
    subprocess.run(
        ["ip", "netns", "exec", f"na-{name}-sut", "tc", "qdisc", "replace", "dev", SUT_OUT,
         "root", "tbf", "rate", f"{rate_pps * 64 * 8}bit", "burst", str(bucket * 64),
         "limit", str(queue * 64)], check=True,
    )  # fmt: skip


R_S, Q, K, R_B = 5_000, 500, 50, 100_000  # the burst's ground truth
B = (Q + K) / (1 - R_S / R_B)  # 578.9 frames


def test_the_longest_burst_is_the_queue_the_bucket_and_what_the_rate_drains(tb_name, tmp_path, cli):
    db = tmp_path / "b.db"
    _json(cli, "testbed", "up", "--name", tb_name, "--sut", "router", "--json")
    try:
        _tbf(tb_name, R_S, Q, K)
        out = _json(
            cli, "burst", "--name", tb_name, "--burst-rate", "100k", "--max-burst", "2000",
            "--resolution", "0.005", "--tests", "3", "--wait", "0.3s", "--throughput", "5k",
            "--no-peak-check", "--db", db, "--json",
        )  # fmt: skip
    finally:
        cli("testbed", "down", "--name", tb_name)
    print({k: out[k] for k in ("per_test", "mean_frames", "buffered_frames", "bursts")})
    assert out["tests"] == 3 and out["at_limit"] == 0
    assert abs(out["mean_frames"] - B) <= 0.03 * B, out["per_test"]
    assert abs(out["buffered_frames"] - (Q + K)) <= 0.03 * (Q + K)
    assert out["implied_buffer_s"] == pytest.approx(out["mean_frames"] / R_B)
    text = cli("assess", db, check=True).stdout
    assert "corrected buffer time" in text and "longest burst without loss" in text
    trials = [json.loads(x) for x in cli("export", db, "--format", "jsonl",
                                         check=True).stdout.splitlines()]  # fmt: skip
    lossy = [t for t in trials if t["loss_location"].get("sut_egress")]
    assert lossy, "a burst too long is lost at the tbf, on the SUT's egress"


R, QR = 10_000, 1_000  # the recovery's ground truth
DRAIN_S = QR / (R - 0.55 * R)  # 222 ms


def test_recovery_is_the_time_the_full_queue_takes_to_drain(tb_name, tmp_path, cli):
    db = tmp_path / "r.db"
    _json(cli, "testbed", "up", "--name", tb_name, "--sut", "router", "--json")
    try:
        _tbf(tb_name, R, QR, 100)
        out = _json(
            cli, "recovery", "--name", tb_name, "--throughput", "10k", "--overload-time", "2s",
            "--recover-time", "1s", "--interval", "10ms", "--trials", "3", "--wait", "0.5s",
            "--no-peak-check", "--db", db, "--json",
        )  # fmt: skip
    finally:
        cli("testbed", "down", "--name", tb_name)
    print({k: out[k] for k in ("mean_s", "ci95_s", "per_trial")})
    assert out["overload_pps"] == pytest.approx(11_000) and out["low_pps"] == pytest.approx(5_500)
    assert out["recovered"] == 3
    for t in out["per_trial"]:  # within one interval (10 ms) after the drain, and 5% of it
        assert DRAIN_S - 0.05 * DRAIN_S <= t["recovery_s"] <= DRAIN_S + 0.01 + 0.05 * DRAIN_S, t
        assert t["lost"] > 0  # the overload did overflow the queue
    assert "recovery time: mean" in cli("assess", db, check=True).stdout


BLOCK = """set -e
nft add table ip kblk
nft 'add chain ip kblk fwd { type filter hook forward priority -10; policy accept; }'
nft add rule ip kblk fwd drop
date +%s.%N > "$1.on"
sleep 0.2
nft delete table ip kblk
date +%s.%N > "$1.off"
"""


def test_the_blocked_time_is_the_span_the_drop_rule_was_in(tb_name, tmp_path, cli):
    script, stamps = tmp_path / "block.sh", tmp_path / "stamp"
    script.write_text(BLOCK)
    db = tmp_path / "c.db"
    out = _json(
        cli, "reconfig", "--name", tb_name, "--sut", "router", "--rate", "20k",
        "--duration", "1.5s", "--at", "0.4s", "--trials", "2", "--wait", "0.2s",
        "--change", f"sh {script} {stamps}", "--no-peak-check", "--db", db, "--json",
    )  # fmt: skip
    on = float((tmp_path / "stamp.on").read_text())
    off = float((tmp_path / "stamp.off").read_text())
    truth = off - on  # the last trial's span, on the script's own clock
    last = out["per_trial"][-1]
    print({"truth_s": truth, "per_trial": out["per_trial"], "mean": out["mean_blocked_s"]})
    assert 0.2 <= truth < 0.3
    assert abs(last["blocked_s"] - truth) <= 0.005, (last, truth)
    assert out["trials"] == 2 and all(0.195 <= t["blocked_s"] < 0.3 for t in out["per_trial"])
    assert "effective blocked time: mean" in cli("assess", db, check=True).stdout

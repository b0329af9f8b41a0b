"""netassay rtt on real namespaces: capture points that agree, the responder-delay ground
truth, the store, and bad input refused in one line with nothing left behind (root)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import netassay_argv

from netassay.analysis.effects import hold_growth
from netassay.methods.rtt import store
from netassay.store.db import Store

pytestmark = pytest.mark.system

# The ground truth's tolerance: the response time's median with a hold of D must grow by
# D within this over the no-hold median (bench/rtt.py --truth-only measures it against
# the 5 us target). The holds interleave run by run (--responder-delay 0,200us,1ms) and
# run i of a hold is compared with run i of no hold, its neighbour in time (the median
# of the per-pair differences, rtt.stats.hold_growth): on this 2-CPU VM the no-hold
# median moves by 5 to 10 us from one run to the next (the echo's wake-up after its CPU
# slept), and 15 short runs of 100 probes per hold follow that drift where 5 of 300 left
# errors of up to 13 us. Measured so, the error has a spread (sd) of about 2.5 us, and a
# 1 ms hold's leans negative by about 1.5 us (the hold shortens the time the responder
# sleeps before the next request, and its wake-up with it): 5 us held in each of 18
# bench repetitions (worst 4.9 us), but its tail is longer than that spread says: at
# 10 us this test failed 2 times in 26 (once at -10.1 us, a 1 ms hold), so it allows
# 15 us. The echo itself sends a held reply within 0.1 us of its time. The probes are
# 2.5 ms apart, longer than D: a hold that reached the next request would read it
# without a wake-up.
TOLERANCE_NS = 15_000
RUNS, COUNT = 15, 100


def _rtt(cli, name, *args, db=None):
    argv = ["rtt", "--name", name, "--json", *args]
    if db:
        argv += ["--db", str(db)]
    res = cli(*argv, timeout=240)
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines()]


def test_segments_agree_and_are_stored(cli, tb_name, netns_of, tmp_path):
    db = tmp_path / "rtt.db"
    runs = _rtt(cli, tb_name, "--path", "bridge", "--count", "300", "--runs", "2", db=db)
    assert len(runs) == 2 and netns_of(tb_name) == []
    for r in runs:
        assert r["path"] == "bridge" and r["probe"] == "icmp" and r["sent"] == 300
        assert r["received"] + r["lost"] == r["sent"] and r["captured"] == r["received"]
        assert r["out_of_order"] == 0 and r["warnings"] == []
        # ICMP requests leave as frames on the endpoint's interface, still seen at its
        # egress hook (captured == received above); the prober runs at nice -10
        assert r["send_path"] == "packet" and r["nice"] == -10
        for seg in ("rtt", "overhead", "wire", "response"):
            s = r["segments"][seg]
            assert s["negative"] == 0 and s["min_ns"] > 0, (seg, s)
            assert s["min_ns"] <= s["p50_ns"] <= s["p90_ns"] <= s["p99_ns"] <= s["max_ns"]
        assert set(r["cpu"]) >= {"cpu0"} and "steal" in r["cpu"]["cpu0"]
    with Store(db, readonly=True) as st:
        (exp,) = list(store.rtt_experiments(st))
        assert exp.config["path"] == "bridge" and exp.config["responder"] == "kernel"
        stored = store.runs(st, exp.id)
        assert [s.repetition for s in stored] == [0, 1] and st.integrity_problems() == []
        for s in stored:
            hists = s.hists()
            assert hists["rtt"].n == s.summary["captured"]
            cols, probes = s.probes()
            t = {c: probes[:, i].astype(np.int64) for i, c in enumerate(cols)}
            ok = t["snd_ep_in"] > 0
            rtt = t["snd_ep_in"] - t["snd_ep_out"]
            overhead = (t["snd_up_out"] - t["snd_ep_out"]) + (t["snd_ep_in"] - t["snd_up_in"])
            wire = (t["rsp_up_in"] - t["snd_up_out"]) + (t["snd_up_in"] - t["rsp_up_out"])
            response = t["rsp_up_out"] - t["rsp_up_in"]
            assert ok.sum() == len(probes) == 300
            assert ((overhead + wire + response)[ok] == rtt[ok]).all()  # every probe
            chain = np.stack([t[c] for c in cols[2:]])  # tx, P1..P8, rx
            assert (np.diff(chain, axis=0) >= 0).all()  # every point in order
    with sqlite3.connect(db) as conn, pytest.raises(sqlite3.DatabaseError, match="append-only"):
        conn.execute("DELETE FROM rtt_runs")


def test_the_wire_of_a_plain_veth_is_a_few_microseconds(cli, tb_name):
    # --cpus none: both servers' work on the sending CPU, so that the wire is the veth
    # alone (with each server on its own CPU it also holds the hand-over between CPUs)
    runs = _rtt(cli, tb_name, "--path", "veth", "--cpus", "none", "--count", "300", "--runs", "2")
    for r in runs:
        wire = r["segments"]["wire"]
        assert wire["negative"] == 0 and wire["min_ns"] > 0
        assert wire["p50_ns"] < 10_000, wire  # two veth hops, out and back


@pytest.mark.slow
def test_responder_delay_ground_truth(cli, tb_name, tmp_path):
    """Replies held D = 200 us and 1 ms: response grows by D, and so does the RTT."""
    db = tmp_path / "truth.db"
    runs = _rtt(cli, tb_name, "--path", "veth", "--probe", "udp", "--probe-rate", "400",
                "--count", str(COUNT), "--runs", str(RUNS), "--responder-delay", "0,200us,1ms",
                db=db)  # fmt: skip
    holds = (0, 200_000, 1_000_000)
    assert [r["responder_delay_ns"] for r in runs] == list(holds) * RUNS  # interleaved

    def p50(seg, delay_ns):  # each run's median, in run order
        return [r["segments"][seg]["p50_ns"] for r in runs if r["responder_delay_ns"] == delay_ns]

    for delay_ns in holds[1:]:
        grew = hold_growth(p50("response", 0), p50("response", delay_ns), delay_ns)
        assert abs(grew["paired_error_ns"]) <= TOLERANCE_NS, grew
        # the RTT also holds the wire and the sender's side, which vary more from run to
        # run here (the hand-over between the servers' CPUs; its error's spread is about
        # 7 us, up to 18 us seen): a looser bound
        rtt_grew = hold_growth(p50("rtt", 0), p50("rtt", delay_ns), delay_ns)
        assert abs(rtt_grew["paired_error_ns"]) <= 2 * TOLERANCE_NS, rtt_grew
        # the hold is in the responder: the sender side and the wire do not grow by it
        for seg in ("overhead", "wire"):
            moved = hold_growth(p50(seg, 0), p50(seg, delay_ns), 0)["paired_ns"]
            assert abs(moved) < delay_ns / 10, (seg, delay_ns, moved)
    with Store(db, readonly=True) as st:  # one experiment per hold
        assert sorted(e.config["responder_delay_ns"] for e in store.rtt_experiments(st)) == [
            0, 200_000, 1_000_000
        ]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["--path", "sriov"], 2, "unknown data path"),
        (["--load", "cpu:129@sender"], 2, "above the limit"),
        (["--load", "cpu:8@nowhere"], 2, "bad --load"),
        (["--probe", "udp", "--responder", "kernel"], 2, "does not echo UDP"),
        (["--responder-delay", "2s", "--timeout", "1s"], 2, "responder-delay"),
        (["--size", "2000"], 2, "probe size"),
    ],
)
def test_bad_input_is_one_line_and_builds_nothing(
    cli, tb_name, netns_of, tmp_path, args, code, words
):
    db = tmp_path / "bad.db"
    res = cli("rtt", "--name", tb_name, "--count", "10", "--db", str(db), *args)
    assert res.returncode == code, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and words in res.stderr, res.stderr
    assert netns_of(tb_name) == [] and not db.exists()


def test_a_rate_above_what_the_path_carries_is_refused(cli, tb_name, netns_of, tmp_path):
    db = tmp_path / "fast.db"
    res = cli("rtt", "--name", tb_name, "--probe-rate", "3M", "--count", "100000", "--db", str(db),
              timeout=240)  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert "above what path 'bridge' carries" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and netns_of(tb_name) == []
    assert not db.exists()  # nothing stored: the store is opened after the check


def test_a_responder_that_never_answers(tb_name, netns_of, tmp_path, monkeypatch):
    from netassay.errors import TestbedError
    from netassay.methods.rtt import run as rtt_run
    from netassay.proc import run
    from netassay.traffic.probe import ProbeSpec

    def silent(tb, req):  # the kernel's echo switched off, and no app in its place
        run(["sysctl", "-q", "-w", "net.ipv4.icmp_echo_ignore_all=1"], netns=tb.ns("rspep"))

    monkeypatch.setattr(rtt_run, "_responder_setup", silent)
    db = tmp_path / "silent.db"
    req = rtt_run.RttSetup(name=tb_name, spec=ProbeSpec(count=100, timeout_s=0.2), db=str(db))
    with pytest.raises(TestbedError, match="never answered") as exc:
        rtt_run.measure_all(req, lambda m, r: None)
    assert exc.value.exit_code == 5 and netns_of(tb_name) == [] and not db.exists()


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_signal_mid_run_keeps_the_runs_that_ended_and_removes_everything(
    tb_name, netns_of, tmp_path, sig
):
    import os
    import signal
    import subprocess
    import time

    db = tmp_path / "stop.db"
    argv = [*netassay_argv(), "rtt", "--name", tb_name, "--count", "1000",
            "--runs", "50", "--load", "cpu:2@sender", "--db", str(db)]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line, proc.communicate()[1]  # it ended before its second run
            if line.startswith("run 2/50"):
                break
        inside = _processes_in(netns_of(tb_name))
        assert inside  # netassay-probe and stress-ng run there
        proc.send_signal(getattr(signal, sig))
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == (143 if sig == "SIGTERM" else 130), err
    assert netns_of(tb_name) == []
    left = [pid for pid in inside if _running(pid)]
    for _ in range(150):  # an orphan's last moments (its exit is in flight): at most 3 s
        if not left:
            break
        time.sleep(0.02)
        left = [pid for pid in left if _running(pid)]
    assert not left  # all ended (a zombie has ended)
    with Store(db, readonly=True) as st:
        (exp,) = list(store.rtt_experiments(st))
        assert 2 <= len(store.runs(st, exp.id, blobs=False)) < 50
    assert os.path.exists(db)


def _processes_in(namespaces):
    import os

    inodes = {os.stat(f"/run/netns/{ns}").st_ino for ns in namespaces}
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}/ns/net").st_ino in inodes:
                out.append(int(pid))
        except OSError:
            continue
    return out


def _running(pid: int) -> bool:
    """The process exists and is not a zombie waiting for a parent that does not reap
    (in a container, PID 1 may never reap orphans)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_interrupted_before_any_run_ended_leaves_no_empty_store(tb_name, netns_of, tmp_path):
    """SIGTERM once the store is open but before the first (10 s) run ends: one line says
    nothing was stored, and the store this run created is gone with the testbed."""
    import signal
    import subprocess
    import time

    db = tmp_path / "none.db"
    argv = [*netassay_argv(), "rtt", "--name", tb_name, "--count", "10000", "--runs", "2",
            "--db", str(db)]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not db.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert out == ""  # no run had ended
    assert "no run had ended: nothing was stored" in err
    assert not db.exists() and not list(tmp_path.glob("none.db*"))
    assert netns_of(tb_name) == []

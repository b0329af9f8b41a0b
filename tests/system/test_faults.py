"""Faults in the middle of a measurement, injected into a real sweep on the embedded
testbed: the generator killed (SIGKILL) or stopped for two seconds (SIGSTOP, SIGCONT),
the sink's XDP program detached, a veth taken down, the SUT's namespace deleted, and a
run directory netassay cannot write.

Each test checks what a user is told (the trial's words, the one line and the exit
code), the store (what was stored until then intact, ``netassay db check`` ok, the
faulty trial stored as a measurement fault and kept out of the statistics, never as
SUT loss) and the host afterwards (no namespace of the testbed, the backlog sysctl
the testbed set restored). The ground truth is the fault itself: when it was
injected, how long it lasted, and a testbed that loses nothing without it (no cap, no
drop rule, a load far below what the kernel router forwards).

Short trials (2-3 s), one load, --retries 0 (the trial the fault spoiled is the one
stored) and --no-peak-check (the first generator run is the first trial's). Needs root
and netassay-gen (skipped with the reason otherwise).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import netassay_argv, run_cli

from netassay.store.db import Store

pytestmark = pytest.mark.system

LOAD = "20k"  # far below what the kernel router forwards here: no loss without a fault
PPS = 20_000
BACKLOG = "2345"  # a host-wide sysctl the testbed sets, and must put back


def _sweep_argv(name: str, db: Path, runs: int, duration: str, *extra: str) -> list[str]:
    return netassay_argv(
        "sweep", "--name", name, "--rates", LOAD, "--runs", runs, "--duration", duration,
        "--settle", "0.2s", "--retries", "0", "--no-peak-check", "--backlog", BACKLOG,
        "--pinning", "unpinned", "--db", db, *extra,
    )  # fmt: skip


class Sweep:
    """A sweep running in the background, and its trials' generators as they start."""

    def __init__(self, name: str, db: Path, runs: int, duration: str, *extra: str) -> None:
        self.name, self.db = name, db
        self.proc = subprocess.Popen(
            _sweep_argv(name, db, runs, duration, *extra),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.seen: list[int] = []

    def ns(self, role: str) -> str:
        return f"na-{self.name}-{role}"

    def _generators(self) -> list[int]:
        """The trial generators running in the testbed's generator namespace now."""
        try:
            tg = os.stat(f"/run/netns/{self.ns('tg')}").st_ino
        except OSError:
            return []
        out = []
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                if Path(f"/proc/{p}/comm").read_text().strip() != "netassay-gen":
                    continue
                if os.stat(f"/proc/{p}/ns/net").st_ino != tg:
                    continue
                if b"--rate" in Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0"):
                    out.append(int(p))
            except OSError:
                continue
        return out

    def trial(self, n: int, timeout_s: float = 120.0) -> int:
        """Wait for the n-th trial's generator (from 1) to start; its pid."""
        deadline = time.monotonic() + timeout_s
        while len(self.seen) < n:
            assert self.proc.poll() is None, self.finish()
            assert time.monotonic() < deadline, f"trial {n} did not start"
            for pid in self._generators():
                if pid not in self.seen:
                    self.seen.append(pid)
            time.sleep(0.005)
        return self.seen[n - 1]

    def finish(self, timeout_s: float = 180.0) -> subprocess.CompletedProcess[str]:
        out, err = self.proc.communicate(timeout=timeout_s)
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode, out, err)

    def sending(self, pid: int, timeout_s: float = 30.0) -> float:
        """Wait for generator ``pid`` to send its first frames (its tg0's transmit count,
        read in its own namespace, moves); the time it did (time.monotonic)."""

        def tx() -> int:
            for line in Path(f"/proc/{pid}/net/dev").read_text().splitlines():
                name, _, cols = line.partition(":")
                if name.strip() == "tg0":
                    return int(cols.split()[9])
            raise AssertionError(f"no tg0 in /proc/{pid}/net/dev")

        first, deadline = tx(), time.monotonic() + timeout_s
        while tx() == first:
            assert time.monotonic() < deadline, "the generator sent nothing"
            time.sleep(0.002)
        return time.monotonic()

    def at(self, n: int, after_s: float) -> int:
        """Wait until ``after_s`` after the n-th trial's first frame; its generator's pid
        (``alive`` then says whether a fault injected now landed in the trial)."""
        pid = self.trial(n)
        t0 = self.sending(pid)
        time.sleep(max(0.0, t0 + after_s - time.monotonic()))
        return pid

    @staticmethod
    def alive(pid: int) -> bool:
        """Is the generator still sending (not ended, not a zombie)?"""
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        return state != "Z"

    def signal(self, pid: int, sig: int) -> None:
        """Send ``sig`` to a trial's generator (it must still run)."""
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pytest.fail(f"generator {pid} already ended; the sweep said: {self.finish().stderr}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def priority():
    """The test runs at the generator's own priority, so that a busy host does not wake
    it late to inject its fault (restored after)."""
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    os.setpriority(os.PRIO_PROCESS, 0, -20)
    try:
        yield
    finally:
        os.setpriority(os.PRIO_PROCESS, 0, nice)


@pytest.fixture
def sweep(lab_env, tb_name, priority):
    """Start a Sweep on the test's testbed (stopped if the test fails)."""
    started: list[Sweep] = []

    def start(db: Path, runs: int, duration: str, *extra: str) -> Sweep:
        started.append(Sweep(tb_name, db, runs, duration, *extra))
        return started[-1]

    yield start
    for s in started:
        s.kill()


def _trials(db: Path) -> list[dict[str, Any]]:
    with Store(db, readonly=True) as st:
        exp = next(iter(st.experiments()))
        return sorted(st.trials(exp.id), key=lambda t: (t["load_index"], t["repetition"]))


def _warnings(t: dict[str, Any]) -> list[str]:
    w = t["warnings"]
    return json.loads(w) if isinstance(w, str) else list(w)


def _host_clean(name: str, netns_of, backlog, original: str) -> None:
    assert netns_of(name) == []
    assert backlog() == original


def _store_ok(db: Path) -> None:
    res = run_cli("db", "check", "--db", str(db))
    assert res.returncode == 0 and ": ok (" in res.stdout, res.stdout + res.stderr


def _progress(res: subprocess.CompletedProcess[str], n: int) -> str:
    """The sweep's progress line of its n-th trial."""
    lines = [ln for ln in res.stderr.splitlines() if re.search(rf"\[{n}/\d+\] load", ln)]
    assert lines, res.stderr
    return lines[-1]


INJECTED = ("testbed fault", "sink fault", "the generator was killed")


def _clean(t: dict[str, Any]) -> None:
    """A trial no injected fault touched: none of their words, and every frame it sent
    arrived, unless this busy host spoiled its pacing (a generator fault of its own,
    which keeps it out of the statistics)."""
    assert not [w for w in _warnings(t) if any(x in w for x in INJECTED)], _warnings(t)
    assert t["sent"] > 0
    assert t["received"] == t["sent"] or t["excluded"], _warnings(t)


def _assessed(db: Path) -> dict[str, Any]:
    res = run_cli("assess", str(db), "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.splitlines()[0])


def _fault_excluded(db: Path, kind: str) -> None:
    """``assess`` keeps the faulty trial out of the statistics and says why; the load's
    loss is the clean trials' (none)."""
    a = _assessed(db)
    load = a["loads"][0]
    assert load["excluded"] >= 1 and kind in load["reason"], load
    assert load["plr"] in (0.0, None), load  # the used trials lost nothing
    text = run_cli("assess", str(db))
    assert text.returncode == 0 and kind in text.stdout, text.stdout


@pytest.mark.slow
def test_generator_killed_mid_trial(sweep, tb_name, tmp_path, netns_of, backlog):
    """SIGKILL to the generator 0.8 s into the second trial: that trial is a truncated
    trial whose sent count is its port's; the sweep goes on."""
    original, db = backlog(), tmp_path / "kill.db"
    sw = sweep(db, 3, "2s")
    pid = sw.at(2, 0.8)
    t_kill = time.monotonic_ns()
    sw.signal(pid, signal.SIGKILL)
    res = sw.finish()
    assert res.returncode == 0, res.stderr
    assert "excluded" in _progress(res, 2)
    t = _trials(db)
    assert [(x["load_index"], x["repetition"]) for x in t] == [(0, 0), (0, 1), (0, 2)]
    killed = t[1]
    w = _warnings(killed)
    assert killed["excluded"] and "truncated trial" in killed["excluded"], w
    said = next(x for x in w if "the generator was killed by SIGKILL" in x)
    assert said.startswith("truncated trial") and "not SUT loss" in said, w
    # what its port sent before it died: 0.8 s at the load (a busy host may have
    # delayed a few sends); all of it arrived (nothing is SUT loss)
    assert 0.7 * PPS < killed["sent"] <= 1.0 * PPS, killed["sent"]
    assert killed["received"] == killed["sent"], w
    # from the generator's start (before its first frame) to its end (at the kill)
    start = killed["counters"]["generator"]["first_tx_ns"]
    assert abs(start + killed["duration_s"] * 1e9 - t_kill) < 0.1e9, (start, t_kill)
    _clean(t[2])  # the next trial ran with a new generator
    _fault_excluded(db, "truncated trial")
    _store_ok(db)
    _host_clean(tb_name, netns_of, backlog, original)


def _xdp_link(ns: str) -> int:
    """The id of the BPF link that holds the sink's XDP program on sink0."""
    net = json.loads(
        subprocess.run(
            ["ip", "netns", "exec", ns, "bpftool", "-j", "net", "show", "dev", "sink0"],
            capture_output=True, text=True, check=True,
        ).stdout
    )  # fmt: skip
    prog = net[0]["xdp"][0]["id"]
    links = json.loads(
        subprocess.run(
            ["bpftool", "-j", "link", "show"], capture_output=True, text=True, check=True
        ).stdout
    )
    return next(int(lk["id"]) for lk in links if lk.get("prog_id") == prog)


@pytest.mark.slow
def test_sink_xdp_detached_mid_trial(sweep, tb_name, tmp_path, netns_of, backlog):
    """'ip link set dev sink0 xdp off' in the sink's namespace is refused by the kernel
    (the program is held by a BPF link) and the trial goes on unharmed; the link
    detached ('bpftool link detach') mid-trial makes that trial a sink fault; the next
    trial has the program attached again and counts every frame."""
    original, db = backlog(), tmp_path / "xdp.db"
    sw = sweep(db, 3, "2s")
    pid = sw.at(1, 0.5)
    off = subprocess.run(
        ["ip", "-n", sw.ns("sink"), "link", "set", "dev", "sink0", "xdp", "off"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert off.returncode != 0 and "BPF XDP link" in off.stderr, off.stderr
    assert sw.alive(pid), "'xdp off' came after the first trial"
    link = _xdp_link(sw.ns("sink"))
    pid = sw.at(2, 0.5)
    subprocess.run(["bpftool", "link", "detach", "id", str(link)], check=True)
    assert sw.alive(pid), "the detach came after the second trial"
    res = sw.finish()
    assert res.returncode == 0, res.stderr
    t = _trials(db)
    assert len(t) == 3
    _clean(t[0])  # 'xdp off' was refused: nothing changed
    w = _warnings(t[1])
    assert t[1]["excluded"] and "sink fault" in t[1]["excluded"], w
    assert any("the sink's XDP program was detached from sink0" in x for x in w), w
    assert any("went past the sink's XDP program uncounted" in x for x in w), w
    assert not any("not explained by any kernel counter" in x for x in w), w  # they are
    assert t[1]["received"] < t[1]["sent"]  # what the detached program did not count
    _clean(t[2])  # attached again
    _fault_excluded(db, "sink fault")
    _store_ok(db)
    _host_clean(tb_name, netns_of, backlog, original)


@pytest.mark.slow
@pytest.mark.parametrize("ip", ["4", "6"])
def test_veth_down_and_up_mid_trial(sweep, tb_name, tmp_path, netns_of, backlog, ip):
    """The SUT's egress veth down 0.5 s into the second trial and up 0.3 s later: that
    trial is a testbed fault (its frames were lost in the SUT's namespace, to a link
    down, not to the SUT); the routes and neighbours the flap removed are set again and
    the next trial loses nothing (IPv6: the link's addresses, which a link down removes,
    too)."""
    original, db = backlog(), tmp_path / "down.db"
    sw = sweep(db, 3, "2s", "--ip", ip)
    sut = sw.ns("sut")
    pid = sw.at(2, 0.5)
    subprocess.run(["ip", "-n", sut, "link", "set", "dev", "sut1", "down"], check=True)
    time.sleep(0.3)
    subprocess.run(["ip", "-n", sut, "link", "set", "dev", "sut1", "up"], check=True)
    assert sw.alive(pid), "the link came back after the second trial"
    sw.trial(3)  # the static neighbour the flap removed is back before it
    neigh = subprocess.run(
        ["ip", "-n", sut, "neigh", "show", "dev", "sut1"], capture_output=True, text=True
    ).stdout
    res = sw.finish()
    assert res.returncode == 0, res.stderr
    assert "PERMANENT" in neigh, neigh
    t = _trials(db)
    assert len(t) == 3
    w = _warnings(t[1])
    assert t[1]["excluded"] and "testbed fault" in t[1]["excluded"], w
    assert any(f"link sut1 in {sut} went down and up again during the trial" in x for x in w)
    assert t[1]["received"] < t[1]["sent"]  # the frames the link down lost
    _clean(t[0])
    _clean(t[2])
    _fault_excluded(db, "testbed fault")
    _store_ok(db)
    _host_clean(tb_name, netns_of, backlog, original)


@pytest.mark.slow
def test_generator_veth_left_down(sweep, tb_name, tmp_path, netns_of, backlog):
    """The generator's veth taken down mid-trial and left down: the generator fails
    (network is down), the trial is stored as a testbed fault, and the sweep stops
    with one line once the link has not come back; the testbed is removed."""
    original, db = backlog(), tmp_path / "left.db"
    sw = sweep(db, 3, "2s")
    pid = sw.at(2, 0.5)
    subprocess.run(["ip", "-n", sw.ns("tg"), "link", "set", "dev", "tg0", "down"], check=True)
    time.sleep(0.5)  # its next send fails at once (network is down)
    assert not sw.alive(pid), "the generator still sends on a link that is down"
    res = sw.finish()
    assert res.returncode == 5, res.stderr  # a testbed error
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("netassay:")]
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    line = lines[0]
    assert f"testbed '{tb_name}' broke under the run" in line, line
    assert f"link tg0 in {sw.ns('tg')} is down" in line, line
    assert f"2 trial(s) of this run are stored in {db}" in line, line
    assert f"'netassay sweep --db {db} --resume'" in line, line
    t = _trials(db)
    assert len(t) == 2
    _clean(t[0])
    w = _warnings(t[1])
    assert t[1]["excluded"], w
    assert any(f"link tg0 in {sw.ns('tg')} went down during the trial" in x for x in w), w
    said = next(x for x in w if "the generator was stopped by the testbed's fault" in x)
    assert "Network is down" in said, said
    _store_ok(db)
    _host_clean(tb_name, netns_of, backlog, original)


@pytest.mark.slow
def test_sut_namespace_deleted_under_a_sweep(sweep, tb_name, tmp_path, netns_of, backlog, cli):
    """The SUT's namespace deleted mid-trial: that trial is a testbed fault and the
    sweep stops with one line (the testbed is gone); what was stored is intact, and
    --resume on a new testbed finishes the sweep exactly once."""
    original, db = backlog(), tmp_path / "ns.db"
    sw = sweep(db, 3, "2s")
    pid = sw.at(2, 0.5)
    subprocess.run(["ip", "netns", "del", sw.ns("sut")], check=True)
    assert sw.alive(pid), "the namespace went after the second trial"
    res = sw.finish()
    assert res.returncode == 5, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("netassay:")]
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert f"namespace(s) {sw.ns('sut')} were deleted (by another process)" in lines[0]
    assert f"2 trial(s) of this run are stored in {db}" in lines[0]
    t = _trials(db)
    assert len(t) == 2
    _clean(t[0])
    w = _warnings(t[1])
    assert any(f"namespace {sw.ns('sut')} was deleted during the trial" in x for x in w), w
    assert "testbed fault" in t[1]["excluded"]
    _store_ok(db)
    _host_clean(tb_name, netns_of, backlog, original)

    done = cli("sweep", "--db", str(db), "--resume")  # a new testbed, the last trial
    assert done.returncode == 0, done.stderr
    t = _trials(db)
    assert [(x["load_index"], x["repetition"]) for x in t] == [(0, 0), (0, 1), (0, 2)]
    _clean(t[2])
    _store_ok(db)
    _host_clean(tb_name, netns_of, backlog, original)


def _stall_of(words: str) -> tuple[float, float]:
    m = re.search(r"sent nothing for ([0-9.]+) s from ([0-9.]+) s into the trial", words)
    assert m, words
    return float(m.group(1)), float(m.group(2))


def _as_injected(t: dict[str, Any], stop: tuple[int, int], length: float, began: float) -> None:
    """The stall a trial names is the one injected: from SIGSTOP to SIGCONT, measured
    from the trial's first frame, within the time a stopped process takes to stop and a
    continued one to send again."""
    first = t["counters"]["generator"]["first_tx_ns"]
    assert abs(began - (stop[0] - first) / 1e9) < 0.05, (began, stop, first)
    assert abs(length - (stop[1] - stop[0]) / 1e9) < 0.05, (length, stop)


@pytest.mark.slow
def test_generator_stopped_for_two_seconds(sweep, tb_name, tmp_path, netns_of, backlog):
    """SIGSTOP, two seconds, SIGCONT: 0.3 s into a 3 s trial the generator, continued,
    sends the frames due as fast as it can (a stall of 2 s, then a catch-up); 1.5 s into
    the next one the trial's end comes while it is stopped (a stall, and the frames it
    left unsent: a fault). Both are said as stalls, never as SUT loss nor as the
    generator's reach, with the duration and the rate each trial really had. The
    machine's clock is never touched: the generator's own monotonic clock measures the
    stall, and the test checks it against the signals it sent."""
    original, db = backlog(), tmp_path / "stop.db"
    sw = sweep(db, 3, "3s")
    stops = []  # when each stall began and ended (time.monotonic_ns: the generator's clock)
    for n, at in ((1, 0.3), (2, 1.5)):  # seconds after its first frame
        pid = sw.at(n, at)
        t_stop = time.monotonic_ns()
        sw.signal(pid, signal.SIGSTOP)
        time.sleep(2.0)
        sw.signal(pid, signal.SIGCONT)
        stops.append((t_stop, time.monotonic_ns()))
    res = sw.finish()
    assert res.returncode == 0, res.stderr
    t = _trials(db)
    assert len(t) == 3

    caught = t[0]
    w = _warnings(caught)
    # said as a stall; a fault when its catch-up overflowed a queue or fell short of the
    # trial's end (this busy host: the path took ~30 kpps), else a note and the trial
    # used (the SUT carried every frame: a burst only adds loss)
    stall = next(x for x in w if "the generator sent nothing for" in x)
    length, began = _stall_of(stall)
    _as_injected(caught, stops[0], length, began)
    assert "frames due as fast as it could" in stall, stall
    if caught["excluded"]:
        assert caught["excluded"].startswith("generator stall"), w
    else:
        assert stall.startswith("stall without harm (nothing lost)"), w
        assert caught["received"] == caught["sent"] == 3 * PPS
    # it sent what was due as fast as the path took it, to its end (3 s in): that
    # duration, and the rate over it (all it sent, or as many as it caught up on)
    assert abs(caught["duration_s"] - 3.0) < 0.1, caught["duration_s"]
    rate = caught["sent"] / caught["duration_s"]
    assert abs(caught["achieved_rate_pps"] - rate) < 0.01 * rate, (caught, rate)
    assert not any(x.startswith("generator limit") for x in w), w  # not its reach

    cut = t[1]
    w = _warnings(cut)
    assert cut["excluded"] and "generator stall" in cut["excluded"], w
    stall = next(x for x in w if x.startswith("generator stall"))
    length, began = _stall_of(stall)
    assert "its run ended during it" in stall, w
    _as_injected(cut, stops[1], length, began)
    short = next(x for x in w if x.startswith("truncated trial"))
    assert "the stall left the rest unsent; not SUT loss" in short, short
    # it sent ~1.5 s of frames, over the ~3.5 s from its first send to its end
    assert 0.9 * began * PPS < cut["sent"] < 1.1 * (began + 0.05) * PPS, (cut["sent"], began)
    assert abs(cut["duration_s"] - (began + length)) < 0.1, (cut["duration_s"], w)
    assert abs(cut["achieved_rate_pps"] - cut["sent"] / cut["duration_s"]) < 1.0
    assert not any(x.startswith("generator limit") for x in w), w  # not the generator's reach

    a = _assessed(db)  # whatever they lost, neither counts as the SUT's loss
    assert a["loads"][0]["excluded"] >= 1 + bool(caught["excluded"]), a["loads"][0]
    assert a["loads"][0]["plr"] in (0.0, None), a["loads"][0]
    _store_ok(db)
    _host_clean(tb_name, netns_of, backlog, original)


@pytest.fixture
def read_only_dir(tmp_path):
    """A directory on a read-only tmpfs (root writes to any mode bits; not to this)."""
    d = tmp_path / "ro"
    d.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(d)], check=True)
    try:
        yield d
    finally:
        subprocess.run(["umount", str(d)], check=False)


@pytest.mark.parametrize("where", ["read-only", "a file"])
def test_run_directory_not_writable(lab_env, tb_name, tmp_path, netns_of, read_only_dir, where):
    """A run directory netassay cannot write (its testbeds' state and locks): one line,
    exit 5, before anything is built or stored."""
    run_dir = read_only_dir
    if where == "a file":
        run_dir = tmp_path / "afile"
        run_dir.write_text("not a directory\n")
    db = tmp_path / "never.db"
    env = {"NETASSAY_RUN_DIR": str(run_dir / "netassay")}
    for args in (
        ["sweep", "--name", tb_name, "--rates", LOAD, "--runs", "1", "--duration", "1s",
         "--db", str(db)],
        ["testbed", "up", "--name", tb_name],
    ):  # fmt: skip
        res = run_cli(*args, env_extra=env)
        assert res.returncode == 5, res.stderr
        lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1, res.stderr  # not even 'building testbed ...'
        line = lines[0]
        assert f"the run directory {run_dir / 'netassay'} cannot hold testbed state" in line
        why = "Read-only file system" if where == "read-only" else f"{run_dir} is not a directory"
        assert why in line, line
        assert "NETASSAY_RUN_DIR" in line, line
        assert netns_of(tb_name) == []
        assert not db.exists()


def test_search_goes_on_past_a_killed_generator(
    lab_env, tb_name, tmp_path, netns_of, backlog, priority
):
    """A search's trial whose generator is killed is repeated, never given to MLRsearch:
    on a testbed that loses nothing, the search ends complete with its max load as the
    PDR's lower bound, and the trial it stored names the attempt it discarded and why."""
    original, db = backlog(), tmp_path / "search.db"
    sw = Sweep.__new__(Sweep)  # the search's trials, watched as a sweep's
    sw.name, sw.db, sw.seen = tb_name, db, []
    sw.proc = subprocess.Popen(
        netassay_argv(
            "search", "--name", tb_name, "--max-load", LOAD, "--no-peak-check",
            "--goal", "pdr:0.005", "--final-duration", "1s", "--duration-sum", "2s",
            "--pinning", "unpinned", "--backlog", BACKLOG, "--db", db, "--json",
        ),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        pid = sw.at(1, 0.3)
        sw.signal(pid, signal.SIGKILL)
        res = sw.finish()
    finally:
        sw.kill()
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    pdr = out["goals"][0]
    assert out["complete"] and pdr["relevant_lower_bound_pps"] == PPS, (pdr, res.stderr)
    t = _trials(db)
    said = [w for x in t for w in _warnings(x) if "the generator was killed by SIGKILL" in w]
    assert len(said) == 1 and said[0].startswith("attempt 1 discarded"), said
    assert t[0]["excluded"] is None or "killed" not in t[0]["excluded"]
    _store_ok(db)
    _host_clean(tb_name, netns_of, backlog, original)

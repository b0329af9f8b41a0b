"""A TCP cell measured: the embedded path built (client, path, server: its delay, loss
and rate as asked), the path's round trip measured by ping, then ``runs`` iperf3 TCP
transfers, each stored the moment it ends with what bounds it (``analysis.tcp``), the
window read back, the client's ``ss -tin`` near its end, the CPU per core and what the
path's ground truths and its delay line counted, and the line's forwarding limit on
this host (``testbed.linelimit``: measured by the first cell over the line at its delay
on this host, kept for the later ones) beside what each transfer offered it."""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from netassay.analysis.tcp import bounds, offered_pps, over_line_limit, summary
from netassay.counters import cpu
from netassay.errors import ToolError
from netassay.methods.base import RunOptions
from netassay.methods.tcp import store as tcp_store
from netassay.methods.tcp.request import NAME, TcpRequest
from netassay.methods.tcp.store import LineCounters, SsSample, TcpRun, TransferFigures
from netassay.proc import run
from netassay.store.db import Store
from netassay.testbed import Testbed, linelimit, require_root, tcppath
from netassay.traffic import iperf3, peers

PING_COUNT = 40
PING_RATE = 100.0  # per second: 0.4 s of pings, a few in flight on a 20 ms path
SS_AT = 0.8  # the client's ss -tin is read at this share of the transfer
LATE_SHARE = linelimit.LATE_SHARE  # frames over 1 ms late beyond this share: the line fell behind
_SS_PAIR = re.compile(r"([a-z_]+):(\S+)")
TCP_SYSCTLS = ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.core.rmem_max",
               "net.core.wmem_max", "net.ipv4.tcp_sack", "net.ipv4.tcp_timestamps")  # fmt: skip


def measure(
    req: TcpRequest, options: RunOptions, progress: Callable[[str], None]
) -> tcp_store.StoredTcp:
    """Build the path, measure the cell, store each transfer as it ends."""
    req.validate()
    require_root("the TCP path")
    store = Store(options.db) if options.db else None
    try:
        with Testbed(options.name or NAME, req.testbed()) as tb:
            return _cell(req, options, tb, store, progress)
    finally:
        if store is not None:
            store.close()


def _cell(req: TcpRequest, options: RunOptions, tb: Testbed, store: Store | None,
          progress: Callable[[str], None]) -> tcp_store.StoredTcp:  # fmt: skip
    st = tb.state
    rtt_s = path_rtt(st)
    limit = linelimit.for_path(req.delay_s, st["path"]["delay_kind"])
    if linelimit.to_measure(limit):  # the first cell over the line at its delay measures it
        progress(f"delay line: {limit['from']}: measuring its limit at {req.delay_s * 1e3:g} "
                 "ms on a path of its own (once per host and delay, about 10 s)")  # fmt: skip
        limit = linelimit.measure_and_keep(req.delay_s, progress)
    config = {**asdict(req), "path": st["path"], "rtt_path_s": rtt_s,
              "iperf3": iperf3.version(), "line_limit": limit}  # fmt: skip
    progress(f"path: round trip {rtt_s * 1e3:.3f} ms by ping ({st['path']['delay_kind']})")
    if st["path"]["delay_kind"] == tcppath.LINE:
        progress(f"delay line: {limit_text(limit)}")
    exp_id = None
    if store is not None:
        label = options.label or f"{req.cc} loss {req.loss:g} delay {req.delay_s * 1e3:g}ms"
        env = {"sysctls": {k: _sysctl(k) for k in TCP_SYSCTLS}}
        exp_id = tcp_store.start(store, f"tcp-{uuid.uuid4().hex}", label, config, env)
    runs: list[tcp_store.TcpRun] = []
    for i in range(req.runs):
        r = transfer(req, st, rtt_s, i, limit)
        runs.append(r)
        if store is not None and exp_id is not None:
            tcp_store.record(store, exp_id, r)
        mbps = (r["throughput_bps"] or 0) / 1e6
        bound = f", bound {r['bound_bps'] / 1e6:.1f} ({r['binds']})" if r["bound_bps"] else ""
        fault = "" if r["ok"] else f"  FAULT: {r['fault']}"
        progress(f"run {i + 1}/{req.runs}: {mbps:.1f} Mbit/s, {r['retransmits']} retransmits"
                 f"{bound}{fault}")  # fmt: skip
    exp = store.experiment(exp_id) if store is not None and exp_id is not None else None
    db = Path(options.db) if options.db else None
    return tcp_store.StoredTcp(db, exp, config, runs, summary(runs))


def _sysctl(key: str) -> str:
    return Path("/proc/sys/" + key.replace(".", "/")).read_text().strip()


def path_rtt(state: dict[str, Any]) -> float:
    """The path's round trip without a queue: the median of ping's, in seconds."""
    t = state["target"]
    pr = peers.ping(t["netns"], t["dst"], PING_RATE, PING_COUNT, 64, timeout_s=2.0)
    p50 = pr.hist.summary().get("p50_ns")
    if not pr.received or p50 is None:
        raise ToolError("ping across the TCP path got no reply",
                        f"{pr.sent} sent, {pr.received} received", "see --debug")  # fmt: skip
    return float(p50) / 1e9


def limit_text(limit: linelimit.LineLimit) -> str:
    """The line's limit in a few words (or why there is none)."""
    pps, l1 = limit["pps"], limit["l1_bps"]
    if pps is None or l1 is None:
        return f"limit not known: {limit['from']}"
    return (f"limit {pps / 1e3:.1f} kpps ({l1 / 1e6:.0f} Mbit/s at L1 in "
            f"1514-byte frames; {limit['from']})")  # fmt: skip


def transfer(req: TcpRequest, st: dict[str, Any], rtt_s: float, index: int,
             limit: linelimit.LineLimit | None = None) -> TcpRun:  # fmt: skip
    """One iperf3 TCP transfer over the path, with what bounds it, what it cost and
    what it offered the delay line against the line's limit."""
    limit = limit or linelimit.none("not looked up")
    t = st["target"]
    cfg = st["config"]
    client = iperf3.Side(t["netns"], cfg.get("client_cpu"))
    server = iperf3.Side(t["server_netns"], cfg.get("server_cpu"))
    secs = req.omit_s + iperf3.whole_seconds(req.duration_s)
    argv = iperf3.tcp_argv(t["dst"], req.duration_s, req.cc, int(req.window) or None, req.omit_s)
    ss: SsSample = {}
    sampler = threading.Timer(secs * SS_AT, lambda: ss.update(ss_sample(t["netns"], t["dst"])))
    truth0, line0, cpu0 = tcppath.truth_counters(st), tcppath.line_stats(st), cpu.read()
    sampler.start()
    try:
        cp, _ = iperf3.test(client, server, t["dst"], argv, secs)
    finally:
        sampler.cancel()
    cpu1 = cpu.read()
    tcppath.wait_line_counters(st, time.time())
    truth1, line1 = tcppath.truth_counters(st), tcppath.line_stats(st)
    out = parse_client(cp.stdout, cp.returncode, cp.stderr)
    raw, fault = out["raw"], out["error"]
    dropped = {k: truth1.get(k, 0) - truth0.get(k, 0) for k in truth1}
    line = line_delta(line0, line1)
    b = bounds(mss=out["mss_bytes"] or 0, rtt_s=rtt_s, loss=req.loss,
               window=out["snd_wnd_max_bytes"] if req.window else None,
               bottleneck=req.bottleneck_bps or None, mtu=req.mtu)  # fmt: skip
    offered = offered_pps(out["throughput_bps"], out["mss_bytes"])
    fault = (fault or line_fault(line, dropped.get("path.line_dropped", 0))
             or over_line_limit(offered, limit))  # fmt: skip
    return {
        "index": index, "ok": fault is None, "fault": fault, "cc": req.cc,
        "duration_s": float(iperf3.whole_seconds(req.duration_s)), **figures(out),
        "rtt_path_s": rtt_s, "window_bytes": int(req.window) or None,
        "mathis_bps": b.mathis_bps, "window_bps": b.window_bps, "path_bps": b.path_bps,
        "binds": b.binds, "bound_bps": b.bound_bps,
        "random_dropped": dropped.get("path.random_dropped"),
        "line_dropped": dropped.get("path.line_dropped"),
        "line_late_max_ns": max((int(d.get("late_max_ns", 0)) for d in line.values()),
                                default=None),
        "offered_pps": offered, "line_limit_pps": limit.get("pps"),
        "line_limit_l1_bps": limit.get("l1_bps"), "line_limit_from": limit.get("from"),
        "cpu": {c: round(v["busy"], 4) for c, v in cpu.use(cpu0, cpu1).items()},
        "ss": ss, "line": line, "iperf3": raw,
    }  # fmt: skip


def line_fault(line: LineCounters, dropped: int) -> str | None:
    """Why a run measured the delay line rather than TCP (None: it did not): the line
    lost frames, or it fell behind (more than LATE_SHARE of the frames left over 1 ms
    after their time: the path's delay was not the one asked)."""
    if dropped > 0:
        return (f"the delay line dropped {dropped} frames: the path carried less than TCP "
                "offered (lower --bottleneck)")  # fmt: skip
    frames = sum(int(d.get("tx_frames", 0)) for d in line.values())
    late = sum(int(d.get("late_over_1ms", 0)) for d in line.values())
    if frames and late / frames > LATE_SHARE:
        return (f"the delay line fell behind: {late / frames:.1%} of the frames left over 1 ms "
                "late, so the path's delay was not the one asked (lower --bottleneck)")  # fmt: skip
    return None


class ClientRun(TransferFigures):
    """A transfer as iperf3's client JSON says it (``parse_client``): why it failed
    (None: it did not), its figures and the JSON whole (``raw``; {}: not JSON)."""

    error: str | None
    raw: dict[str, Any]


def parse_client(stdout: str, returncode: int, stderr: str) -> ClientRun:
    """What a transfer is in iperf3's client JSON (``error`` set when it failed)."""
    try:
        d = json.loads(stdout) if stdout.strip() else {}
    except (ValueError, RecursionError):  # not JSON, or nested thousands deep
        d = {}
    err = d.get("error") or (None if returncode == 0 else (stderr.strip()[-200:] or "failed"))
    end, start = d.get("end") or {}, d.get("start") or {}  # null: as missing
    sender = next((s.get("sender") or {} for s in end.get("streams") or []), {})
    recv = end.get("sum_received") or {}
    sent = end.get("sum_sent") or {}
    us = 1e-6
    return {
        "error": f"iperf3: {err}" if err else None,
        "throughput_bps": recv.get("bits_per_second"),
        "sent_bytes": sent.get("bytes"),
        "retransmits": sent.get("retransmits"),
        "mss_bytes": start.get("tcp_mss_default"),
        "rtt_mean_s": sender["mean_rtt"] * us if sender.get("mean_rtt") is not None else None,
        "rtt_min_s": sender["min_rtt"] * us if sender.get("min_rtt") is not None else None,
        "snd_wnd_max_bytes": sender.get("max_snd_wnd"),
        "cwnd_max_bytes": sender.get("max_snd_cwnd"),
        "sndbuf_bytes": start.get("sndbuf_actual"),
        "rcvbuf_bytes": start.get("rcvbuf_actual"),
        "raw": d,
    }


def figures(c: ClientRun) -> TransferFigures:
    """A transfer's figures alone, without why it failed and the JSON whole."""
    return {
        "throughput_bps": c["throughput_bps"], "sent_bytes": c["sent_bytes"],
        "retransmits": c["retransmits"], "mss_bytes": c["mss_bytes"],
        "rtt_mean_s": c["rtt_mean_s"], "rtt_min_s": c["rtt_min_s"],
        "snd_wnd_max_bytes": c["snd_wnd_max_bytes"], "cwnd_max_bytes": c["cwnd_max_bytes"],
        "sndbuf_bytes": c["sndbuf_bytes"], "rcvbuf_bytes": c["rcvbuf_bytes"],
    }  # fmt: skip


def ss_sample(netns: str, dst: str) -> SsSample:
    """The client's busiest TCP connection to ``dst`` as ``ss -tin`` shows it."""
    return parse_ss(run(["ss", "-tinH", "dst", dst], netns=netns, check=False, timeout=5).stdout)


def parse_ss(text: str) -> SsSample:
    """The connection with the most bytes sent in ``ss -tinH``'s output, as key: value."""
    best: SsSample = {}
    for info in text.split("\n"):
        if not info.startswith((" ", "\t")):
            continue
        d: SsSample = {}
        for k, v in _SS_PAIR.findall(info):
            d[k] = _number(v)
        if int(d.get("bytes_sent", 0) or 0) >= int(best.get("bytes_sent", 0) or 0):
            best = d
    return best


def _number(v: str) -> int | float | str:
    try:
        return int(v)
    except ValueError:
        try:
            return float(v)
        except ValueError:
            return v


def line_delta(before: dict[str, Any] | None, after: dict[str, Any] | None) -> LineCounters:
    """The delay line's counters over a transfer, per direction (late_max_ns and
    queue_max are the line's so far, not the transfer's), from the line's counters
    before and after it (``testbed.tcppath.line_stats``: its JSON, None: no line)."""
    if not after:
        return {}
    out: LineCounters = {}
    for d in ("ab", "ba"):
        a, b = after.get(d, {}), (before or {}).get(d, {})
        out[d] = {k: (v - b.get(k, 0) if k not in ("late_max_ns", "queue_max") else v)
                  for k, v in a.items() if isinstance(v, int | float)}  # fmt: skip
    return out

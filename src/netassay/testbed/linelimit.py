"""The delay line's forwarding limit on this host: measured by the first ``netassay
tcp`` cell that runs over the line on this host (``measure``, about ten seconds; ``bench/
delayline.py`` measures it longer and at more delays), kept in
``/var/lib/netassay/delayline.json`` (``NETASSAY_STATE_DIR`` overrides), read by every
later cell.

The measurement: a TCP path of its own (the line at the cell's delay, nothing else on
it) takes netassay-gen's 1514-byte frames from the client at a ladder of rates (10 kpps
up to 300 kpps), half a second each, into the XDP sink at the server. The frames pass
the client's qdisc as a TCP run's segments do (netassay-gen's ``--qdisc``: by default
its AF_PACKET socket bypasses it, and a shaper there would not apply). A rate is carried
when the generator sent it (99% of its frames), every frame arrived and the line's own
counters say at most 1% of them left over 1 ms late; a rate that fails is tried once
more (one bad half second on a busy machine does not lower the limit), and the ladder
stops at the first rate that fails twice. The limit is the highest rate carried below
it.

The file holds, per one-way delay measured, the highest rate of 1514-byte frames
(1538 at L1) the line carried with nothing dropped and at most 1% of the frames over
1 ms late (the rule a TCP run's own line counters are judged by), with when it was
measured and on what kernel and CPU count. It outlives a reboot (a limit is the
host's, not the boot's), but a limit measured on another kernel or CPU count is not
this host's: a run then has none, and says why.

A run at a delay that was not measured takes the smallest limit measured (the line's
work is per frame; how long it holds them matters little): its ``from`` says so.
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from netassay.hist import SinkHist
from netassay.testbed import state, tcppath
from netassay.testbed.bed import Testbed
from netassay.testbed.receive import THROUGH_QDISC
from netassay.testbed.tcppath import LINE
from netassay.traffic.generator import XdpSink, run_generator, start_xdp_sink

FRAME_BYTES = 1514  # the frames the limit is measured with (a 1500-byte MTU's)
L1_FRAME_BYTES = FRAME_BYTES + 24  # preamble, SFD, FCS, gap
FILE = "delayline.json"
LATE_S = 0.001  # a frame that left the line over 1 ms after its time is late
LATE_SHARE = 0.01  # frames late beyond this share: the line fell behind
SENT_SHARE = 0.99  # a rate the generator did not reach is not offered, not carried
RATES = (1e4, 2e4, 3e4, 5e4, 7.5e4, 1e5, 1.5e5, 2e5, 3e5)  # frames/s, the ladder
TRIAL_S = 0.5
TRIES = 2  # a rate is failed when it fails this many times in a row
SETUP = (f"TCP path (client, path, server), netassay-gen {FRAME_BYTES}-byte frames into the "
         f"XDP sink; carried: nothing lost, at most {LATE_SHARE:.0%} of the frames over "
         f"{LATE_S * 1e3:g} ms late")  # fmt: skip


NEVER = "never measured on this host"
ANOTHER = "measured on another host"


def to_measure(limit: dict[str, Any]) -> bool:
    """Whether a cell's limit (``for_path``) is one this host has not measured yet."""
    return limit.get("pps") is None and str(limit.get("from", "")).startswith((NEVER, ANOTHER))


def path() -> Path:
    """Where this host's limit is kept."""
    return Path(os.environ.get("NETASSAY_STATE_DIR", "/var/lib/netassay")) / FILE


def host() -> dict[str, Any]:
    """What a limit holds for: this host's kernel and CPU count."""
    return {"kernel": platform.release(), "cpus": os.cpu_count()}


def l1_bps(pps: float) -> float:
    """A rate of 1514-byte frames in bit/s at L1."""
    return pps * L1_FRAME_BYTES * 8


def record(limits: dict[float, float | None], utc: str, setup: str) -> Path:
    """Keep the limits measured now (one-way delay in s -> frames/s; None: the line
    carried none of the rates tried) as this host's; where they were written."""
    body = {
        "utc": utc,
        **host(),
        "frame_bytes": FRAME_BYTES,
        "setup": setup,
        "limits": [
            {"delay_s": d, "pps": p, "l1_bps": None if p is None else l1_bps(p)}
            for d, p in sorted(limits.items())
        ],
    }
    state.write_json_atomic(path(), body)
    return path()


def read(where: Path | None = None) -> dict[str, Any] | None:
    """The kept limits (None: never measured on this host, or unreadable)."""
    try:
        body = json.loads((where or path()).read_text())
    except (OSError, ValueError):
        return None
    return body if isinstance(body, dict) and isinstance(body.get("limits"), list) else None


def none(reason: str) -> dict[str, Any]:
    return {"pps": None, "l1_bps": None, "from": reason}


def for_path(delay_s: float, delay_kind: str, body: dict[str, Any] | None = None,
             where: Path | None = None) -> dict[str, Any]:  # fmt: skip
    """The limit a cell runs under: ``pps`` and ``l1_bps`` (1514-byte frames) and
    ``from`` (where it came from), or None for both with the reason in ``from``."""
    if delay_kind != LINE:
        return none(f"no delay line on this path ({delay_kind})")
    where = where or path()
    body = body if body is not None else read(where)
    if body is None:
        return none(f"{NEVER} (no {where})")
    now = host()
    if (body.get("kernel"), body.get("cpus")) != (now["kernel"], now["cpus"]):
        return none(
            f"{ANOTHER}: kernel {body.get('kernel')} with {body.get('cpus')} CPUs, this host "
            f"runs {now['kernel']} with {now['cpus']}"
        )
    known = [x for x in body["limits"] if isinstance(x, dict) and "delay_s" in x]
    same = [x for x in known if abs(float(x["delay_s"]) - delay_s) < 1e-9]
    pick = same or known
    if not pick:
        return none(f"{NEVER} ({where} holds no limit)")
    unknown = [x for x in pick if x.get("pps") is None]
    at = "" if same else " (not measured at this delay: the smallest of those measured)"
    src = f"{where}, measured {body.get('utc')} on kernel {body['kernel']}, {body['cpus']} CPUs"
    if unknown:
        d = float(unknown[0]["delay_s"])
        return none(f"the line carried none of the rates tried at {d * 1e3:g} ms ({src}){at}")
    best = min(pick, key=lambda x: float(x["pps"]))
    pps = float(best["pps"])
    return {"pps": pps, "l1_bps": l1_bps(pps),
            "from": f"{src}, at {float(best['delay_s']) * 1e3:g} ms{at}"}  # fmt: skip


# -- measuring it ------------------------------------------------------------------------
def carried(r: dict[str, Any], duration_s: float) -> bool:
    """A trial (``trial``) carried its rate: offered (the generator sent SENT_SHARE of
    its frames: on a busy machine it can fall behind, and a rate not offered is not
    carried), nothing lost, and by the line's own counters at most LATE_SHARE of the
    frames over 1 ms late; on a path without a line (a bridge), the sink's p99 of the
    latency added under 1 ms."""
    if r["sent"] < SENT_SHARE * r["rate_pps"] * duration_s or r["lost"] > 0:
        return False
    if "line_frames" in r:
        return r["line_dropped"] == 0 and (r["line_late_share"] or 0) <= LATE_SHARE
    p99 = r.get("added_latency_us", {}).get("p99_us")
    return p99 is not None and p99 < LATE_S * 1e6


def trial(tb: Testbed, sink: XdpSink, rate: float, duration_s: float,
          delay_s: float) -> dict[str, Any]:  # fmt: skip
    """One rate through a TCP path into ``sink`` (attached at its server): what was
    sent, counted, lost, the line's frames, drops and late frames, the latency added."""
    st, t = tb.state, tb.state["target"]
    before, counted0 = tcppath.line_stats(st), int(sink.read()["packets"])
    gen = run_generator(t["netns"], t["dev"], st["macs"]["s0"], t["src"], t["dst"], rate,
                        duration_s, size_bytes=FRAME_BYTES, best_effort=True,
                        extra=list(THROUGH_QDISC))  # fmt: skip
    time.sleep(delay_s + 0.3)  # the frames still held arrive
    c = sink.read()
    tcppath.wait_line_counters(st, time.time())
    after = tcppath.line_stats(st)
    counted = int(c["packets"]) - counted0
    r: dict[str, Any] = {
        "rate_pps": rate,
        "mbps_l1": round(l1_bps(rate) / 1e6, 1),
        "sent": gen.sent,
        "counted": counted,
        "lost": gen.sent - counted,
    }
    if c.get("latency"):  # the sink's latency, added beyond the delay asked (bench's)
        lat = SinkHist(c["latency"]).summary()
        r["added_latency_us"] = {
            k.replace("_ns", "_us"): (round(lat[k] / 1e3 - delay_s * 1e6, 1)
                                      if lat.get(k) is not None else None)
            for k in ("p50_ns", "p99_ns", "max_ns")
        }  # fmt: skip
    if after is not None:
        frames = _sum(after, "tx_frames") - _sum(before, "tx_frames")
        late = _sum(after, "late_over_1ms") - _sum(before, "late_over_1ms")
        r.update(line_frames=frames,
                 line_dropped=tcppath.line_drops(after) - tcppath.line_drops(before),
                 line_late_over_1ms=late,
                 line_late_share=round(late / frames, 5) if frames else None)  # fmt: skip
    r["carried"] = carried(r, duration_s)
    return r


def _sum(stats: dict[str, Any] | None, key: str) -> int:
    return int((stats or {}).get("ab", {}).get(key, 0))


def highest(rows: list[dict[str, Any]], rates: tuple[float, ...] | list[float],
            tries: int = 1) -> tuple[float | None, bool]:  # fmt: skip
    """The highest rate carried with every lower rate, and whether it is the highest
    tried (the path may carry more). A rate is carried when it was carried in a trial
    and failed fewer than ``tries`` times (each rate's trials in the order made)."""
    best = None
    for rate in rates:
        at = [r["carried"] for r in rows if r["rate_pps"] == rate]
        if not any(at) or at.count(False) >= tries:
            return best, False
        best = rate
    return best, True


def measure(delay_s: float, progress: Callable[[str], None] = lambda _: None,
            cfg: tcppath.TcpPathConfig | None = None, rates: tuple[float, ...] = RATES,
            duration_s: float = TRIAL_S) -> tuple[float | None, list[dict[str, Any]]]:  # fmt: skip
    """The line's limit at ``delay_s`` on this host, measured now on a TCP path of its
    own (``cfg``: another path, for a test's known cap) up the ladder ``rates``; and
    every trial made. None: the line carried none of the rates."""
    cfg = cfg or tcppath.TcpPathConfig(delay_s=delay_s)
    rows: list[dict[str, Any]] = []
    with Testbed("l" + secrets.token_hex(3), cfg) as tb:
        t = tb.state["target"]
        with start_xdp_sink(t["server_netns"], t["server_dev"], FRAME_BYTES) as sink:
            for rate in rates:
                for _ in range(TRIES):
                    r = trial(tb, sink, rate, duration_s, delay_s)
                    rows.append(r)
                    late = r.get("line_late_share")
                    progress(f"delay line at {rate / 1e3:g} kpps: sent {r['sent']}, lost "
                             f"{r['lost']}" + (f", {late:.2%} late" if late is not None else "")
                             + ("" if r["carried"] else "  (not carried)"))  # fmt: skip
                    if r["carried"]:
                        break
                if not r["carried"]:
                    break
    return highest(rows, rates, TRIES)[0], rows


def measure_and_keep(delay_s: float, progress: Callable[[str], None] = lambda _: None,
                     **kw: Any) -> Path:  # fmt: skip
    """Measure the limit at ``delay_s`` and keep it as this host's, beside the limits at
    other delays already kept for this host; where it was written."""
    pps, _ = measure(delay_s, progress, **kw)
    kept = read()
    limits: dict[float, float | None] = {}
    if kept is not None and (kept.get("kernel"), kept.get("cpus")) == tuple(host().values()):
        for x in kept["limits"]:
            if isinstance(x, dict) and "delay_s" in x:
                limits[float(x["delay_s"])] = None if x.get("pps") is None else float(x["pps"])
    limits[delay_s] = pps
    return record(limits, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), SETUP)

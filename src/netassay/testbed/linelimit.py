"""The delay line's forwarding limit on this host: measured by the first ``netassay
tcp`` cell that runs over the line at a delay on this host (``measure``, about ten
seconds; ``bench/delayline.py`` measures it longer and at more delays), kept in
``/var/lib/netassay/delayline.json`` (``NETASSAY_STATE_DIR`` overrides), read by every
later cell at that delay.

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

A measurement that found no rate carried (the first rung failed twice: a host too busy
to keep even 10 kpps on time, or a line slower than that) is no limit: it is not kept,
the limits kept at other delays stay as they are, the run that made it has none and
says so, and the next run at that delay measures again. A file kept before holds such a
measurement as ``pps`` null; it is read as not measured at that delay.

A run at a delay with no limit kept measures it first (``to_measure``): a limit is the
one measured at the run's own delay, never one measured at another.
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict

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
UNKEPT = "no limit kept on this host"  # a kept measurement that carried no rate

# The limit a cell runs under (``for_path``, ``none``): frames/s of 1514-byte frames and
# bit/s at L1, or None for both with why in ``from``. Stored with the cell's config and
# each of its runs as it is (``from`` is a keyword: the functional form).
LineLimit = TypedDict("LineLimit", {"pps": float | None, "l1_bps": float | None, "from": str})


class Host(TypedDict):
    """What a limit holds for: the kernel release and the CPU count."""

    kernel: str
    cpus: int | None


class KeptLimit(TypedDict):
    """One delay's limit in the kept file (``Kept.limits``). ``utc`` and ``setup`` are
    there only when this delay was measured at another time or in another way than the
    file's own ``utc`` and ``setup`` say (a limit kept beside one measured later)."""

    delay_s: float
    pps: float | None  # None: only in a file kept before such a measurement was dropped
    l1_bps: float | None
    utc: NotRequired[str]
    setup: NotRequired[str]


class Kept(Host):
    """The kept file's body (``record``, ``read``): when and how it was measured, on what
    host, and a limit per delay."""

    utc: str
    frame_bytes: int
    setup: str
    limits: list[KeptLimit]


def to_measure(limit: LineLimit) -> bool:
    """Whether a cell's limit (``for_path``) is one this host has not measured yet at
    the cell's delay."""
    return limit["pps"] is None and limit["from"].startswith((NEVER, ANOTHER, UNKEPT))


def path() -> Path:
    """Where this host's limit is kept."""
    return Path(os.environ.get("NETASSAY_STATE_DIR", "/var/lib/netassay")) / FILE


def held() -> AbstractContextManager[None]:
    """This host's file held for one change (read, then written): two cells that keep a
    limit at once (a campaign's workers on one host) each keep theirs beside the other's,
    never one written over the other (``keep``)."""
    return state.held_lock(path().with_name(FILE + ".lock"))


def host() -> Host:
    """What a limit holds for: this host's kernel and CPU count."""
    return {"kernel": platform.release(), "cpus": os.cpu_count()}


def l1_bps(pps: float) -> float:
    """A rate of 1514-byte frames in bit/s at L1."""
    return pps * L1_FRAME_BYTES * 8


def row(delay_s: float, pps: float) -> KeptLimit:
    """A delay's limit as the file keeps it."""
    return {"delay_s": delay_s, "pps": pps, "l1_bps": l1_bps(pps)}


def record(limits: Mapping[float, float | None], utc: str, setup: str) -> Path:
    """Keep the limits measured now (one-way delay in s -> frames/s) as this host's, in
    place of any kept before; where they were written. A delay whose measurement carried
    none of the rates tried (None) is not kept: it is measured again."""
    return write([row(d, p) for d, p in sorted(limits.items()) if p is not None], utc, setup)


def write(limits: list[KeptLimit], utc: str, setup: str) -> Path:
    """Keep ``limits`` (sorted by delay) as this host's, measured at ``utc`` by
    ``setup`` where a limit does not say otherwise; where they were written."""
    body: Kept = {"utc": utc, **host(), "frame_bytes": FRAME_BYTES, "setup": setup,
                  "limits": sorted(limits, key=lambda x: x["delay_s"])}  # fmt: skip
    state.write_json_atomic(path(), body)
    return path()


def _num(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _limit(x: object) -> KeptLimit | None:
    """A ``limits`` entry as kept (None: not one netassay wrote)."""
    if not isinstance(x, dict) or not _num(x.get("delay_s")):
        return None
    if not all(x.get(k) is None or _num(x[k]) for k in ("pps", "l1_bps")):
        return None
    if not all(isinstance(x.get(k, ""), str) for k in ("utc", "setup")):
        return None
    out: KeptLimit = {"delay_s": x["delay_s"], "pps": x.get("pps"), "l1_bps": x.get("l1_bps")}
    if "utc" in x:
        out["utc"] = x["utc"]
    if "setup" in x:
        out["setup"] = x["setup"]
    return out


def read(where: Path | None = None) -> Kept | None:
    """The kept limits (None: never measured on this host, or unreadable). An entry not
    shaped as netassay writes one is left out."""
    try:
        body = json.loads((where or path()).read_text())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(body, dict) or not isinstance(body.get("limits"), list):
        return None
    if not all(isinstance(body.get(k), str) for k in ("utc", "kernel", "setup")):
        return None
    if not (body.get("cpus") is None or _num(body["cpus"])) or not _num(body.get("frame_bytes")):
        return None
    limits = [y for y in map(_limit, body["limits"]) if y is not None]
    return {"utc": body["utc"], "kernel": body["kernel"], "cpus": body.get("cpus"),
            "frame_bytes": body["frame_bytes"], "setup": body["setup"],
            "limits": limits}  # fmt: skip


def none(reason: str) -> LineLimit:
    return {"pps": None, "l1_bps": None, "from": reason}


def _ms(delay_s: float) -> str:
    return f"{delay_s * 1e3:g} ms"


def for_path(delay_s: float, delay_kind: str, body: Kept | None = None,
             where: Path | None = None) -> LineLimit:  # fmt: skip
    """The limit a cell runs under: ``pps`` and ``l1_bps`` (1514-byte frames) and
    ``from`` (where it came from), or None for both with the reason in ``from``
    (``to_measure``: because this host has not measured it at ``delay_s``)."""
    if delay_kind != LINE:
        return none(f"no delay line on this path ({delay_kind})")
    where = where or path()
    body = body if body is not None else read(where)
    if body is None:
        return none(f"{NEVER} ({where} unreadable)" if where.exists() else f"{NEVER} (no {where})")
    now = host()
    if (body["kernel"], body["cpus"]) != (now["kernel"], now["cpus"]):
        return none(
            f"{ANOTHER}: kernel {body['kernel']} with {body['cpus']} CPUs, this host "
            f"runs {now['kernel']} with {now['cpus']}"
        )
    same = [x for x in body["limits"] if abs(float(x["delay_s"]) - delay_s) < 1e-9]
    kept = next((x for x in same if x["pps"] is not None), None)
    if kept is not None and kept["pps"] is not None:
        pps, ms = float(kept["pps"]), _ms(float(kept["delay_s"]))
        return {"pps": pps, "l1_bps": l1_bps(pps),
                "from": f"{where}, measured {kept.get('utc', body['utc'])} on kernel "
                        f"{body['kernel']}, {body['cpus']} CPUs, at {ms}"}  # fmt: skip
    if same:  # kept before such a measurement was dropped: no limit
        return none(f"{UNKEPT} at {_ms(delay_s)}: the measurement {where} holds there "
                    f"({same[0].get('utc', body['utc'])}) carried none of the rates tried, "
                    "which is no limit")  # fmt: skip
    at = sorted({float(x["delay_s"]) for x in body["limits"] if x["pps"] is not None})
    held = ", ".join(_ms(d) for d in at)
    return none(f"{NEVER} at {_ms(delay_s)} ({where} holds "
                + (f"limits at {held} only)" if at else "no limit)"))  # fmt: skip


# -- measuring it ------------------------------------------------------------------------
class AddedLatency(TypedDict):
    """The sink's latency beyond the delay asked, in us (None: the sink had none)."""

    p50_us: float | None
    p99_us: float | None
    max_us: float | None


class Offered(TypedDict):
    """What one trial (``trial``) sent and saw: the rate, what the generator sent and
    the sink counted, the latency the sink added (when it measured latency) and the
    line's frames, drops and late frames (when the path has a line)."""

    rate_pps: float
    mbps_l1: float
    sent: int
    counted: int
    lost: int
    added_latency_us: NotRequired[AddedLatency]
    line_frames: NotRequired[int]
    line_dropped: NotRequired[int]
    line_late_over_1ms: NotRequired[int]
    line_late_share: NotRequired[float | None]


class Trial(Offered):
    """A trial and whether it carried its rate (``carried``): a row ``measure`` returns."""

    carried: bool


def carried(r: Offered, duration_s: float) -> bool:
    """A trial (``trial``) carried its rate: offered (the generator sent SENT_SHARE of
    its frames: on a busy machine it can fall behind, and a rate not offered is not
    carried), nothing lost, and by the line's own counters at most LATE_SHARE of the
    frames over 1 ms late; on a path without a line (a bridge), the sink's p99 of the
    latency added under 1 ms."""
    if r["sent"] < SENT_SHARE * r["rate_pps"] * duration_s or r["lost"] > 0:
        return False
    if "line_frames" in r:
        return r["line_dropped"] == 0 and (r["line_late_share"] or 0) <= LATE_SHARE
    p99 = r["added_latency_us"]["p99_us"] if "added_latency_us" in r else None
    return p99 is not None and p99 < LATE_S * 1e6


def trial(tb: Testbed, sink: XdpSink, rate: float, duration_s: float,
          delay_s: float) -> Trial:  # fmt: skip
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
    r: Offered = {
        "rate_pps": rate,
        "mbps_l1": round(l1_bps(rate) / 1e6, 1),
        "sent": gen.sent,
        "counted": counted,
        "lost": gen.sent - counted,
    }
    if c.get("latency"):  # the sink's latency, added beyond the delay asked (bench's)
        lat = SinkHist(c["latency"]).summary()

        def added(k: Literal["p50_ns", "p99_ns", "max_ns"]) -> float | None:
            v = lat.get(k)
            return round(v / 1e3 - delay_s * 1e6, 1) if v is not None else None

        r["added_latency_us"] = {"p50_us": added("p50_ns"), "p99_us": added("p99_ns"),
                                 "max_us": added("max_ns")}  # fmt: skip
    if after is not None:
        frames = _sum(after, "tx_frames") - _sum(before, "tx_frames")
        late = _sum(after, "late_over_1ms") - _sum(before, "late_over_1ms")
        r["line_frames"] = frames
        r["line_dropped"] = tcppath.line_drops(after) - tcppath.line_drops(before)
        r["line_late_over_1ms"] = late
        r["line_late_share"] = round(late / frames, 5) if frames else None
    return {**r, "carried": carried(r, duration_s)}


def _sum(stats: dict[str, Any] | None, key: str) -> int:
    """A counter of the line's (``tcppath.line_stats``) in its client-to-server way."""
    return int((stats or {}).get("ab", {}).get(key, 0))


def highest(rows: Sequence[Trial], rates: Sequence[float],
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
            duration_s: float = TRIAL_S) -> tuple[float | None, list[Trial]]:  # fmt: skip
    """The line's limit at ``delay_s`` on this host, measured now on a TCP path of its
    own (``cfg``: another path, for a test's known cap) up the ladder ``rates``; and
    every trial made. None: the line carried none of the rates."""
    cfg = cfg or tcppath.TcpPathConfig(delay_s=delay_s)
    rows: list[Trial] = []
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


def none_carried(delay_s: float, rows: Sequence[Trial]) -> LineLimit:
    """The limit of a cell whose measurement (``rows``) carried none of the rates tried:
    none, and what happened."""
    if not rows:
        return none(f"the delay line's limit at {_ms(delay_s)} was not measured: no rate "
                    "tried; the next run over the line at this delay measures it")  # fmt: skip
    first = rows[0]["rate_pps"]
    tries = [r for r in rows if r["rate_pps"] == first]
    last = tries[-1]
    late = last.get("line_late_share")
    seen = (f"sent {last['sent']} of {first * TRIAL_S:.0f}, lost {last['lost']}"
            + (f", {late:.2%} late" if late is not None else ""))  # fmt: skip
    return none(f"the delay line carried none of the rates tried at {_ms(delay_s)}, measured "
                f"just now: {first / 1e3:g} kpps failed {len(tries)} times (the last: {seen}), "
                f"on a host too busy to keep it on time or a line slower than that. Not kept "
                "as this host's limit: the next run over the line at this delay measures it "
                "again")  # fmt: skip


def measure_and_keep(delay_s: float, progress: Callable[[str], None] = lambda _: None,
                     cfg: tcppath.TcpPathConfig | None = None,
                     rates: tuple[float, ...] = RATES,
                     duration_s: float = TRIAL_S) -> LineLimit:  # fmt: skip
    """Measure the limit at ``delay_s`` (``measure``) and keep it (``keep``); the limit
    a cell over the line at ``delay_s`` runs under now. A measurement that carried none
    of the rates is not kept (the file is left as it was): the limit is none, saying
    what happened (``none_carried``)."""
    pps, rows = measure(delay_s, progress, cfg=cfg, rates=rates, duration_s=duration_s)
    return none_carried(delay_s, rows) if pps is None else keep(delay_s, pps)


def keep(delay_s: float, pps: float, utc: str | None = None) -> LineLimit:
    """Keep ``pps``, measured at ``delay_s`` at ``utc`` (now), as this host's limit
    there, beside the limits at other delays already kept for this host, each as it was
    (saying when and how it was measured where that differs from this one); the limit a
    cell over the line at ``delay_s`` runs under now. A kept entry that is no limit
    (``pps`` null, in a file kept before) is dropped."""
    utc = utc or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with held():  # another keeper's limit, written while this one read, is not lost
        kept, now = read(), host()
        limits = [row(delay_s, pps)]
        if kept is not None and (kept["kernel"], kept["cpus"]) == (now["kernel"], now["cpus"]):
            limits += [
                _beside(x, kept, utc)
                for x in kept["limits"]
                if x["pps"] is not None and abs(float(x["delay_s"]) - delay_s) >= 1e-9
            ]
        write(limits, utc, SETUP)
    return for_path(delay_s, LINE)


def _beside(x: KeptLimit, kept: Kept, utc: str) -> KeptLimit:
    """A limit kept before at another delay, as it stays beside one kept at ``utc``:
    when and how it was measured said where that differs from the new one (a kept entry
    with no limit, or at the delay measured again, is left out by the caller)."""
    out: KeptLimit = {**x, "utc": x.get("utc", kept["utc"]), "setup": x.get("setup", kept["setup"])}
    if out["utc"] == utc:
        del out["utc"]
    if out["setup"] == SETUP:
        del out["setup"]
    return out

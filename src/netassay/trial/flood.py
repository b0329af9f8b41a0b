"""A flood: what a SUT forwards when offered far more than it can (its maximum
forwarding rate, RFC 2285 3.6.1), with every frame it could not take located. The one
unpaced trial of the engine: ``netassay flood`` stores floods, ``doctor`` measures the
router's MRR with one, a sweep with no loads measures the MRR its range is cut to.

netassay-gen sends XDP live frames at its unpaced peak (several Mpps on one vCPU here,
far above what either router forwards on another) for a while; the sink counts what
comes out, and the counters of every namespace before and after split the rest by
place (``counters.loss``).

veth takes XDP frames only from a peer that runs NAPI. In napi receive mode (the
default, ``testbed.receive``) the SUT's ingress is polled by NAPI already, on the
SUT's CPU, as in its paced trials. In backlog mode the kernel router's ingress gets
GRO for as long as the flood runs (``flood_path``), so its frames are received by a
NAPI poll on the generator's CPU and handed to the SUT's by RPS: that CPU then bounds
the offered rate, and when the router loses nothing the flood says it was not
saturated (what it forwarded is a lower bound). A live frame veth refuses at the
SUT's full receive ring shows as tg0's tx_dropped, which is the SUT's ingress (its NIC
ring overrunning), and it is located there.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, NotRequired, TypedDict

from netassay.config import TestbedConfig
from netassay.counters import cpu
from netassay.counters.loss import (
    REVERSE_KEY,
    SUT_LOCATIONS,
    flat_deltas,
    flatten,
    locate_both,
    locate_loss,
    summed,
)
from netassay.counters.sink import XDP_KEY
from netassay.counters.snapshot import Snapshot, snapshot, wait_quiet
from netassay.errors import GeneratorError
from netassay.proc import run
from netassay.testbed import scale
from netassay.testbed.bed import Testbed
from netassay.testbed.reverse import reverse_target
from netassay.traffic.generator import FlowCounts, GenResult, run_generator
from netassay.trial import bidirectional
from netassay.trial.engine import TrialContext, conntrack_role, sut_summary

FORWARDED_BY_PROGRAM = "sut/xdp/forwarded/packets"


def _ethtool(tb: Testbed, *args: str) -> str:
    return run(["ip", "netns", "exec", tb.ns("sut"), "ethtool", *args]).stdout


def gro_on(tb: Testbed, dev: str = "sut0") -> bool:
    """Whether the SUT's veth ``dev`` (its ingress) has GRO on."""
    return "generic-receive-offload: on" in _ethtool(tb, "-k", dev)


@contextmanager
def flood_path(tb: Testbed, both: bool = False) -> Iterator[dict[str, Any]]:
    """Let the SUT's ingress veth (``both``: both its veths, each one's direction's
    ingress) take XDP frames while the block runs; yields what was changed (put back
    after)."""
    devs = ("sut0", "sut1") if both else ("sut0",)
    backlog = tb.cfg.sut == "router" and tb.cfg.rx_mode == "backlog"  # napi: polled already
    off = [d for d in devs if backlog and not gro_on(tb, d)]
    changed = {}
    try:
        for dev in off:
            _ethtool(tb, "-K", dev, "gro", "on")
            changed[f"{dev}_gro"] = "on while flooding (veth takes XDP frames from a NAPI peer)"
        yield changed
    finally:
        for dev in off:
            _ethtool(tb, "-K", dev, "gro", "off")


def _send(tb: Testbed, t: dict[str, str], duration_s: float) -> GenResult:
    """One generator's flood from ``t`` (the testbed's target, or its reverse one)."""
    pin = [] if tb.gen_cpu is None else ["--cpu", str(tb.gen_cpu)]
    if t is tb.target and isinstance(tb.cfg, TestbedConfig):  # the flows' tuples
        pin += scale.flow_flags(tb.cfg, tb.state)
    res = run_generator(t["netns"], t["dev"], t["dst_mac"], t["src"], t["dst"], "max",
                        duration_s, size_bytes=tb.cfg.size_bytes, flows=tb.cfg.flows,
                        best_effort=True, extra=["--technique", "xdp", *pin],
                        timeout_s=duration_s + 30)  # fmt: skip
    if res.technique != "xdp_live_frames":
        raise GeneratorError(
            "the flood was not sent as XDP live frames",
            f"netassay-gen fell back to {res.technique}: {res.fallback_reason}",
            "flood a testbed whose SUT takes XDP frames (router or xdp-router)",
        )
    return res


def _snapshot(ctx: TrialContext) -> Snapshot:
    snap = snapshot(ctx.tb.state["namespaces"], ctx.sink, conntrack_role(ctx.tb))
    if ctx.reverse is not None:  # --bidirectional: the reverse direction's count
        snap["reverse_xdp"] = ctx.reverse.read()
    return snap


def _ring(loss: dict[str, int], res: GenResult) -> dict[str, int]:
    """A live frame veth refused at the SUT's full receive ring is the SUT's ingress
    loss, not the generator's egress (see the module)."""
    ring = min(loss.get("gen_egress", 0), res.egress_drops)
    loss["gen_egress"] -= ring
    loss["sut_ingress"] += ring
    return loss


class FloodDirection(TypedDict):
    """One direction of a --bidirectional flood: whether the SUT lost frames of it, the
    rates offered and forwarded (frames/s), the counts, where the rest was lost."""

    saturated: bool
    offered_pps: int
    forwarded_pps: int
    sent: int
    forwarded: int
    loss_location: dict[str, int]


class FloodDirections(TypedDict):
    """A --bidirectional flood's directions: the convention its own counts follow
    (both directions' sum), and each direction's own."""

    record: str
    forward: FloodDirection
    reverse: FloodDirection


class Flood(TypedDict):
    """One flood (``flood``): whether the SUT lost frames (what it forwarded is then its
    maximum; else a lower bound), the rates offered and forwarded (frames/s), the
    counts, the frames a data plane's program forwarded (None: none counts them), where
    the rest was lost, its seconds, each core's use over it (``counters.cpu.use``),
    every counter that moved; with --bidirectional each direction's own, at scale the
    SUT's own counts (``counters.sutstate``), with --count-flows the flows' counts."""

    saturated: bool
    offered_pps: int
    forwarded_pps: int
    sent: int
    forwarded: int
    program_forwarded: int | None
    loss_location: dict[str, int]
    duration_s: float
    cpu: dict[str, Any]
    deltas: dict[str, int]
    bidirectional: NotRequired[FloodDirections]
    sut: NotRequired[dict[str, Any]]
    flows: NotRequired[FlowCounts]


def _direction(res: GenResult, received: int, loss: dict[str, int]) -> FloodDirection:
    """One direction of a --bidirectional flood: its rates, counts and loss split."""
    secs = res.duration_s or 1.0
    return {
        "saturated": sum(loss.get(k, 0) for k in SUT_LOCATIONS) > 0,
        "offered_pps": round(res.sent / secs),
        "forwarded_pps": round(received / secs),
        "sent": res.sent,
        "forwarded": received,
        "loss_location": {k: v for k, v in loss.items() if v},
    }


def flood(ctx: TrialContext, duration_s: float) -> Flood:
    """One flood of ``duration_s`` on the testbed of ``ctx`` (inside ``flood_path``);
    the sink must count with XDP. Returns the offered and forwarded rates, the counts
    and where the rest was lost (``unaccounted`` closes the split); with a reverse sink
    (--bidirectional) both directions flood at once, both generators on the generator's
    CPU, and the rates and counts are their sums, each direction's own under
    ``bidirectional``."""
    tb = ctx.tb
    if not ctx.sink.uses_xdp:
        raise GeneratorError(
            "a flood needs the XDP sink",
            f"this testbed's sink counts with {ctx.sink.kind}, too slow for a flood",
            "build the testbed with --sink xdp",
        )
    ctx.sink.ensure()
    if ctx.reverse is not None:
        ctx.reverse.ensure()
    ctx.sink.mark_flows()  # --count-flows: each flow's count from here
    before = _snapshot(ctx)
    cpu_before = cpu.read()  # one kernel: every namespace's host view of /proc/stat
    if ctx.reverse is None:
        pair = None
        res = _send(tb, tb.target, duration_s)
    else:
        with ThreadPoolExecutor(2, thread_name_prefix="flood") as pool:
            fwd = pool.submit(_send, tb, tb.target, duration_s)
            rev = pool.submit(_send, tb, reverse_target(tb.state), duration_s)
            pair = fwd.result(), rev.result()
        res = bidirectional.combined(*pair)
    cpu_use = cpu.use(cpu_before, cpu.read())
    rev_sink = ctx.reverse
    wait_quiet(lambda: (ctx.sink.read().get("packets"),
                        rev_sink.read().get("packets") if rev_sink else None))  # fmt: skip
    after = _snapshot(ctx)
    d, _ = flat_deltas(flatten(before), flatten(after))
    ipv = tb.cfg.ip_version
    both: FloodDirections | None = None
    if pair is None:
        forwarded = int(d.get(XDP_KEY, 0))
        loss = _ring(locate_loss(res.planned, res.sent, forwarded, d, ipv, res.retries), res)
    else:
        rx = int(d.get(XDP_KEY, 0)), int(d.get(REVERSE_KEY, 0))
        (f, r) = pair
        lf, lr = locate_both((f.planned, f.sent, rx[0], f.retries),
                             (r.planned, r.sent, rx[1], r.retries), d, ipv)  # fmt: skip
        locs = _ring(lf, f), _ring(lr, r)
        forwarded, loss = sum(rx), summed(*locs)
        both = {
            "record": bidirectional.CONVENTION,
            "forward": _direction(f, rx[0], locs[0]),
            "reverse": _direction(r, rx[1], locs[1]),
        }
    secs = res.duration_s or duration_s
    sut_lost = sum(loss.get(k, 0) for k in SUT_LOCATIONS)
    own = sut_summary(tb, before, after, d)  # the SUT's own counts at scale
    flows = after.get("sink_xdp", {}).get("flows")  # --count-flows: each flow's
    out: Flood = {
        # the SUT lost frames: what it forwarded is its maximum; else (the generator's
        # CPU, which also receives the kernel router's frames, came first) a lower bound
        "saturated": sut_lost > 0,
        "offered_pps": round(res.sent / secs),
        "forwarded_pps": round(forwarded / secs),
        "sent": res.sent,
        "forwarded": forwarded,
        "program_forwarded": d.get(FORWARDED_BY_PROGRAM),
        "loss_location": {k: v for k, v in loss.items() if v},
        "duration_s": secs,
        "cpu": cpu_use,  # per core over the flood (counters.cpu.use)
        "deltas": {k: v for k, v in d.items() if v},  # every counter that moved
    }
    if both is not None:
        out["bidirectional"] = both
    if own:
        out["sut"] = own
    if flows is not None:
        out["flows"] = flows
    return out

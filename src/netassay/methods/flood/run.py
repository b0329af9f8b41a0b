"""A flood: what a SUT forwards when offered far more than it can (its maximum
forwarding rate, RFC 2285 3.6.1), with every frame it could not take located.

netassay-gen sends XDP live frames at its unpaced peak (several Mpps on one vCPU here,
far above what either router forwards on another) for a while; the sink counts what
comes out, and the counters of every namespace before and after split the rest by
place (``counters.loss``). A paced sweep cannot show this where the SUT's capacity lies
beyond what the generator can pace through the wire (the XDP router on this machine):
a flood needs no pacing, only a generator faster than the SUT.

veth takes XDP frames only from a peer that runs NAPI: the XDP router's program gives
its ingress one; the kernel router's ingress gets GRO for as long as the flood runs
(``flood_path``), so its frames are still received on the generator's CPU and handed
to the SUT's by RPS, as in its paced trials. That CPU, the generator's, bounds the
kernel router's offered rate (1.1-1.5 Mpps here): when the router loses nothing at it,
the flood says it was not saturated, and what it forwarded is a lower bound. A live
frame veth refuses at the SUT's
full receive ring shows as tg0's tx_dropped, which a paced trial reads as the
generator's own egress: in a flood it is the SUT's ingress (its NIC ring overrunning),
and it is located there.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import asdict, dataclass
from typing import Any

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
from netassay.counters.snapshot import snapshot, wait_quiet
from netassay.errors import GeneratorError, UsageError
from netassay.methods import lab
from netassay.methods.flood import store as FS
from netassay.methods.flood.request import MAX_RUNS, FloodRequest
from netassay.names import validate_name
from netassay.proc import run
from netassay.store.db import Store
from netassay.testbed import dataplane as D
from netassay.testbed import state as S
from netassay.testbed import topology as T
from netassay.testbed.bed import Testbed, config_from_state, require_root
from netassay.testbed.reverse import reverse_target
from netassay.traffic.generator import GenResult, run_generator
from netassay.trial import bidirectional as B
from netassay.trial.engine import TrialContext, trials_on

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
    off = [d for d in devs if tb.cfg.sut == "router" and not gro_on(tb, d)]
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
    res = run_generator(t["netns"], t["dev"], t["dst_mac"], t["src"], t["dst"], "max",
                        duration_s, size_bytes=tb.cfg.size_bytes, flows=tb.cfg.flows,
                        best_effort=True, extra=["--technique", "xdp", *pin],
                        timeout_s=duration_s + 30)  # fmt: skip
    if res.technique != "xdp_live_frames":
        raise GeneratorError(
            "the flood was not sent as XDP live frames",
            f"netassay-gen fell back to {res.technique}: {res.raw.get('fallback_reason')}",
            "flood a testbed whose SUT takes XDP frames (router or xdp-router)",
        )
    return res


def _snapshot(ctx: TrialContext) -> dict[str, Any]:
    snap = snapshot(ctx.tb.state["namespaces"], ctx.sink)
    if ctx.reverse is not None:  # --bidirectional: the reverse direction's count
        snap["reverse_xdp"] = ctx.reverse.read()
    if ctx.dataplane is not None:  # a data plane's own counters (testbed.dataplane)
        snap["dataplane"] = ctx.dataplane()
    return snap


def _ring(loss: dict[str, int], res: GenResult) -> dict[str, int]:
    """A live frame veth refused at the SUT's full receive ring is the SUT's ingress
    loss, not the generator's egress (see the module)."""
    ring = min(loss.get("gen_egress", 0), int(res.raw.get("egress_drops") or 0))
    loss["gen_egress"] -= ring
    loss["sut_ingress"] += ring
    return loss


def _direction(res: GenResult, received: int, loss: dict[str, int]) -> dict[str, Any]:
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


def flood(ctx: TrialContext, duration_s: float) -> dict[str, Any]:
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
        res = B.combined(*pair)
    cpu_use = cpu.use(cpu_before, cpu.read())
    rev_sink = ctx.reverse
    wait_quiet(lambda: (ctx.sink.read().get("packets"),
                        rev_sink.read().get("packets") if rev_sink else None))  # fmt: skip
    after = _snapshot(ctx)
    d, _ = flat_deltas(flatten(before), flatten(after))
    ipv = tb.cfg.ip_version
    both: dict[str, Any] | None = None
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
        both = {"record": B.CONVENTION}
        for name, g, n, lc in zip(B.DIRECTIONS, pair, rx, locs, strict=True):
            both[name] = _direction(g, n, lc)
    secs = res.duration_s or duration_s
    sut_lost = sum(loss.get(k, 0) for k in SUT_LOCATIONS)
    return {
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
        **({"bidirectional": both} if both is not None else {}),
    }


# the SUTs whose ingress takes the generator's XDP frames: the routers (the kernel's with
# GRO on while it floods), and the data planes whose ports are AF_XDP sockets (an XDP
# program on sut0 hands the frames over)
FLOOD_SUTS = ("router", "xdp-router", "ovs", "testpmd", "l3fwd")


@dataclass(frozen=True)
class FloodResult:
    """What the floods measured on one testbed, and where they were stored (``db`` and
    ``experiment_id`` None: nothing was)."""

    testbed: str
    cfg: Any  # the testbed's knobs
    changed: dict[str, Any]  # what the flood changed on the path while it ran
    floods: list[dict[str, Any]]
    db: str | None = None
    experiment_id: int | None = None

    @property
    def max_forwarding_rate_pps(self) -> float:
        return statistics.median(f["forwarded_pps"] for f in self.floods)

    @property
    def unsaturated(self) -> int:
        return sum(not f["saturated"] for f in self.floods)


def testbed_for(name: str, flags: dict[str, Any], cfg: TestbedConfig) -> TestbedConfig:
    """The knobs a flood runs with on testbed ``name``: a router testbed netassay built
    (the one up under that name when no testbed flag is given), XDP-counted."""
    validate_name(name)
    st = S.read_state(name)
    if st is not None and T.kind_of(st) != T.FORWARDING:
        raise UsageError(
            f"testbed '{name}' is a {T.kind_of(st)} testbed",
            "a flood runs on a router testbed netassay built",
            "give another --name, or bring that one down",
        )
    cfg = config_from_state(st) if st is not None and not flags else cfg
    T.validate(cfg)
    if cfg.imix is not None:
        raise UsageError(
            "a flood cannot send --imix",
            "a flood is sent as XDP live frames, all of one size",
            "drop --imix (a sweep or a search sends a mix)",
        )
    if cfg.sut not in FLOOD_SUTS or (D.is_dataplane(cfg) and not D.af_xdp(cfg)):
        raise UsageError(
            f"a flood needs a SUT whose ingress takes XDP frames, not '{cfg.sut}'"
            + (" over packet sockets" if cfg.sut in FLOOD_SUTS else ""),
            "only the routers' and the AF_XDP data planes' ingress take the generator's XDP "
            "frames here",
            "use --sut router or xdp-router, or ovs, testpmd or l3fwd with their AF_XDP ports",
        )
    if cfg.sink == "nft":
        raise UsageError(
            "a flood needs the XDP sink", "nft counts too slowly for a flood", "use --sink xdp"
        )
    return cfg


def refuse_bidirectional(cfg: TestbedConfig) -> None:
    """A --bidirectional flood where it can be honoured (the kernel router, each end
    counted by the XDP sink alone), or one line saying why not."""
    why = None
    if cfg.sut != "router":
        why = f"--sut {cfg.sut}", "the XDP router forwards one direction only"
    elif cfg.sink != "xdp":
        why = f"--sink {cfg.sink}", "each end counts with the XDP sink"
    if why is not None:
        raise UsageError(
            f"flood --bidirectional with {why[0]}", f"{why[1]} (not available yet)",
            "drop one of them (flood --bidirectional runs on the kernel router, --sink xdp)",
        )  # fmt: skip


def flood_config(req: FloodRequest, cfg: TestbedConfig, name: str) -> dict[str, Any]:
    """What a stored flood experiment was asked for: its floods and the testbed's knobs."""
    return {
        "duration_s": req.duration_s, "runs": req.runs, "testbed": asdict(cfg),
        "testbed_name": name,
        **({"bidirectional": True} if req.bidirectional else {}),  # absent: one way
    }  # fmt: skip


def _store(db: str | None) -> AbstractContextManager[Store | None]:
    return Store(db) if db else nullcontext(None)


def measure(
    req: FloodRequest,
    name: str,
    cfg: TestbedConfig,
    on_flood: Callable[[int, dict], None],
    db: str | None = None,
    label: str = "",
) -> FloodResult:
    """``req.runs`` floods on testbed ``name`` (built, or used as it is when up);
    ``on_flood`` sees each as it ends. With ``db``: an experiment of kind ``mrr`` in that
    store, each flood stored the moment it ends (``flood.store``)."""
    if not 1 <= req.runs <= MAX_RUNS:
        raise UsageError(f"--runs {req.runs} is out of range", "", f"give 1 to {MAX_RUNS}")
    if req.bidirectional:
        refuse_bidirectional(cfg)
    require_root("a flood")
    floods: list[dict[str, Any]] = []
    exp_id, both = None, req.bidirectional
    with (
        lab.open_testbed(name, cfg, "a flood") as tb,
        trials_on(tb, bidirectional=req.bidirectional) as ctx,
        flood_path(tb, req.bidirectional) as changed,
        _store(db) as store,
    ):
        if store is not None:  # the environment as the floods find it (GRO on, if so)
            exp_id, ctx = lab.start_experiment(
                store, ctx, kind=FS.KIND, name=name,
                label=label or lab.default_label(cfg, name) + (" bidirectional" if both else ""),
                config=flood_config(req, cfg, name), metadata={"changed_while_flooding": changed},
                peak=None,
            )  # fmt: skip
        for i in range(req.runs):
            floods.append(flood(ctx, req.duration_s))
            if store is not None and exp_id is not None:
                FS.record(store, exp_id, i, floods[-1], ctx.run_id)
            on_flood(i, floods[-1])
    return FloodResult(name, cfg, changed, floods, db, exp_id)

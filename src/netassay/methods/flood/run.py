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
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import asdict, dataclass
from typing import Any

from netassay.config import TestbedConfig
from netassay.counters import cpu
from netassay.counters.loss import SUT_LOCATIONS, flat_deltas, flatten, locate_loss
from netassay.counters.sink import XDP_KEY
from netassay.counters.snapshot import snapshot, wait_quiet
from netassay.errors import GeneratorError, UsageError
from netassay.methods import lab
from netassay.methods.flood import store as FS
from netassay.methods.flood.request import MAX_RUNS, FloodRequest
from netassay.names import validate_name
from netassay.proc import run
from netassay.store.db import Store
from netassay.testbed import state as S
from netassay.testbed import topology as T
from netassay.testbed.bed import Testbed, config_from_state, require_root
from netassay.traffic.generator import run_generator
from netassay.trial.engine import TrialContext, trials_on

FORWARDED_BY_PROGRAM = "sut/xdp/forwarded/packets"


def _ethtool(tb: Testbed, *args: str) -> str:
    return run(["ip", "netns", "exec", tb.ns("sut"), "ethtool", *args]).stdout


def gro_on(tb: Testbed) -> bool:
    """Whether the SUT's ingress veth has GRO on."""
    return "generic-receive-offload: on" in _ethtool(tb, "-k", "sut0")


@contextmanager
def flood_path(tb: Testbed) -> Iterator[dict[str, Any]]:
    """Let the SUT's ingress veth take XDP frames while the block runs; yields what
    was changed (put back after)."""
    if tb.cfg.sut != "router" or gro_on(tb):
        yield {}
        return
    _ethtool(tb, "-K", "sut0", "gro", "on")
    try:
        yield {"sut0_gro": "on while flooding (veth takes XDP frames from a NAPI peer)"}
    finally:
        _ethtool(tb, "-K", "sut0", "gro", "off")


def flood(ctx: TrialContext, duration_s: float) -> dict[str, Any]:
    """One flood of ``duration_s`` on the testbed of ``ctx`` (inside ``flood_path``);
    the sink must count with XDP. Returns the offered and forwarded rates, the counts
    and where the rest was lost (``unaccounted`` closes the split)."""
    tb, t = ctx.tb, ctx.tb.target
    if not ctx.sink.uses_xdp:
        raise GeneratorError(
            "a flood needs the XDP sink",
            f"this testbed's sink counts with {ctx.sink.kind}, too slow for a flood",
            "build the testbed with --sink xdp",
        )
    ctx.sink.ensure()
    before = snapshot(tb.state["namespaces"], ctx.sink)
    pin = [] if tb.gen_cpu is None else ["--cpu", str(tb.gen_cpu)]
    cpu_before = cpu.read()  # one kernel: every namespace's host view of /proc/stat
    res = run_generator(t["netns"], t["dev"], t["dst_mac"], t["src"], t["dst"], "max",
                        duration_s, size_bytes=tb.cfg.size_bytes, flows=tb.cfg.flows,
                        best_effort=True, extra=["--technique", "xdp", *pin],
                        timeout_s=duration_s + 30)  # fmt: skip
    cpu_use = cpu.use(cpu_before, cpu.read())
    if res.technique != "xdp_live_frames":
        raise GeneratorError(
            "the flood was not sent as XDP live frames",
            f"netassay-gen fell back to {res.technique}: {res.raw.get('fallback_reason')}",
            "flood a testbed whose SUT takes XDP frames (router or xdp-router)",
        )
    wait_quiet(lambda: ctx.sink.read().get("packets"))
    after = snapshot(tb.state["namespaces"], ctx.sink)
    d, _ = flat_deltas(flatten(before), flatten(after))
    forwarded = int(d.get(XDP_KEY, 0))
    loss = locate_loss(res.planned, res.sent, forwarded, d, tb.cfg.ip_version, res.retries)
    ring = min(loss.get("gen_egress", 0), int(res.raw.get("egress_drops") or 0))
    loss["gen_egress"] -= ring
    loss["sut_ingress"] += ring
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
    }


FLOOD_SUTS = ("router", "xdp-router")


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
    if cfg.sut not in FLOOD_SUTS:
        raise UsageError(
            f"a flood needs a router SUT, not '{cfg.sut}'",
            "only a router's ingress takes the generator's XDP frames here",
            "use --sut router or --sut xdp-router",
        )
    if cfg.sink == "nft":
        raise UsageError(
            "a flood needs the XDP sink", "nft counts too slowly for a flood", "use --sink xdp"
        )
    return cfg


def flood_config(req: FloodRequest, cfg: TestbedConfig, name: str) -> dict[str, Any]:
    """What a stored flood experiment was asked for: its floods and the testbed's knobs."""
    return {
        "duration_s": req.duration_s, "runs": req.runs, "testbed": asdict(cfg),
        "testbed_name": name,
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
    require_root("a flood")
    floods: list[dict[str, Any]] = []
    exp_id = None
    with (
        lab.open_testbed(name, cfg, "a flood") as tb,
        trials_on(tb) as ctx,
        flood_path(tb) as changed,
        _store(db) as store,
    ):
        if store is not None:  # the environment as the floods find it (GRO on, if so)
            exp_id, ctx = lab.start_experiment(
                store, ctx, kind=FS.KIND, name=name, label=label or lab.default_label(cfg, name),
                config=flood_config(req, cfg, name), metadata={"changed_while_flooding": changed},
                peak=None,
            )  # fmt: skip
        for i in range(req.runs):
            floods.append(flood(ctx, req.duration_s))
            if store is not None and exp_id is not None:
                FS.record(store, exp_id, i, floods[-1], ctx.run_id)
            on_flood(i, floods[-1])
    return FloodResult(name, cfg, changed, floods, db, exp_id)

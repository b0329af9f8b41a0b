"""``netassay flood``: floods on a router testbed (``trial.flood``, the engine's one
unpaced trial), each stored as it ends, and their maximum forwarding rate."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass
from typing import Any

from netassay.config import TestbedConfig
from netassay.errors import UsageError
from netassay.methods.flood import store as flood_store
from netassay.methods.flood.request import MAX_RUNS, FloodRequest
from netassay.names import validate_name
from netassay.shared import lab
from netassay.store.db import Store
from netassay.testbed import dataplane, receive, state, topology
from netassay.testbed.bed import config_from_state, require_root
from netassay.trial.engine import trials_on
from netassay.trial.flood import Flood, flood, flood_path

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
    floods: list[Flood]
    db: str | None = None
    experiment_id: int | None = None

    @property
    def max_forwarding_rate_pps(self) -> float:
        median: float = statistics.median(f["forwarded_pps"] for f in self.floods)
        return median

    @property
    def unsaturated(self) -> int:
        return sum(not f["saturated"] for f in self.floods)


def testbed_for(
    name: str, flags: dict[str, Any], cfg: TestbedConfig, seen: state.Seen
) -> TestbedConfig:
    """The knobs a flood runs with on testbed ``name``: a router testbed netassay built
    (the one up under that name when no testbed flag is given, its state as the run has
    ``seen`` it), XDP-counted."""
    validate_name(name)
    st = seen.read(name)
    if st is not None and topology.kind_of(st) != topology.FORWARDING:
        raise UsageError(
            f"testbed '{name}' is a {topology.kind_of(st)} testbed",
            "a flood runs on a router testbed netassay built",
            "give another --name, or bring that one down",
        )
    cfg = config_from_state(st) if st is not None and not flags else cfg
    topology.validate(cfg)
    for knob, flag, what in (("imix", "--imix", "a mix"), ("pcap", "--pcap", "a capture")):
        if getattr(cfg, knob) is not None:
            raise UsageError(
                f"a flood cannot send {flag}",
                "a flood is sent as XDP live frames, all of one size",
                f"drop {flag} (a sweep or a search sends {what})",
            )
    if dataplane.is_dataplane(cfg) and not dataplane.af_xdp(cfg):
        raise UsageError(
            f"a flood of --sut {cfg.sut}" + ("" if cfg.sut == "exec" else " over packet sockets"),
            "of the data planes only those whose ports are AF_XDP sockets take the "
            "generator's XDP frames here",
            "use ovs, testpmd or l3fwd with their AF_XDP ports (their default)",
        )
    if not dataplane.is_dataplane(cfg) and cfg.sut not in FLOOD_SUTS and not receive.napi(cfg):
        raise UsageError(
            f"a flood of a {cfg.sut} needs --rx-mode napi",
            "in backlog mode only a router's ingress takes the generator's XDP frames here",
            "add --rx-mode napi, or use --sut router",
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
    on_flood: Callable[[int, Flood], None],
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
    floods: list[Flood] = []
    exp_id, both = None, req.bidirectional
    with (
        lab.open_testbed(name, cfg, "a flood") as tb,
        trials_on(tb, bidirectional=req.bidirectional) as ctx,
        flood_path(tb, req.bidirectional) as changed,
        _store(db) as store,
    ):
        if store is not None:  # the environment as the floods find it (GRO on, if so)
            exp_id, ctx = lab.start_experiment(
                store, ctx, kind=flood_store.KIND, name=name,
                label=label or lab.default_label(cfg, name) + (" bidirectional" if both else ""),
                config=flood_config(req, cfg, name), metadata={"changed_while_flooding": changed},
                peak=None,
            )  # fmt: skip
        for i in range(req.runs):
            floods.append(flood(ctx, req.duration_s))
            if store is not None and exp_id is not None:
                flood_store.record(store, exp_id, i, floods[-1], ctx.run_id)
            on_flood(i, floods[-1])
    return FloodResult(name, cfg, changed, floods, db, exp_id)

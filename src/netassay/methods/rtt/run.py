"""The rtt method: build the RTT testbed, check the path, start the load, run K runs.

``measure(req)`` does everything a ``netassay rtt`` call asks: it validates the request
(before anything is built), builds the testbed through the one testbed lifecycle,
attaches the capture points, starts the responder, checks with a short burst that the
responder answers and that the path carries the probe rate (bad input otherwise: one
line, nothing stored), starts the background load, and runs the runs. Each run is
stored as it ends (the experiment is created with the first one), so an interrupted
measurement keeps what it finished and a refused one stores nothing.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict

from netassay import names
from netassay.counters.capture import Capture
from netassay.errors import StoreError, TestbedError, UsageError
from netassay.methods.base import run_store
from netassay.methods.rtt import store as rtt_store
from netassay.methods.rtt.request import RttRequest
from netassay.methods.rtt.trial import SAMPLE_COLUMNS, RunResult, measure
from netassay.proc import run as run_cmd
from netassay.shared.probe_run import achieved_rate, environment
from netassay.store.db import Store
from netassay.testbed import Testbed, require_root, validate_name
from netassay.testbed.rtt import EP_DEV, PATHS, UPLINK, RttTestbedConfig
from netassay.testbed.rtt import validate as validate_testbed
from netassay.traffic import peers as traffic_peers
from netassay.traffic.load import Background, Load, NetLoad
from netassay.traffic.probe import Echo, Link, ProbeSpec
from netassay.trial.record import TrialRecord

log = logging.getLogger("netassay.methods.rtt")

RESPONDERS = ("kernel", "app")
MAX_RUNS = 10_000
CHECK_S = 0.3  # the path check: this long at the probe rate (at least CHECK_MIN probes)
CHECK_MIN = 50
CHECK_LOSS = 0.02  # more probes lost than this in the check: the rate is above the path's
CHECK_BEHIND = 10  # or the median probe left later than this many intervals (or 1 ms)


class PathCheck(TypedDict):
    """The path check's burst (``check_path``), as the experiment's metadata keeps it
    (``check``): probes sent and received, the share lost, the rate they left at and the
    median probe's delay behind its schedule."""

    probes: int
    received: int
    lost_share: float
    sent_pps: float
    median_send_delay_ns: float


class TestbedSeen(TypedDict):
    """The testbed a measurement ran on, as the experiment's metadata keeps it
    (``testbed``): its name, each server's CPU (None: not pinned) and each endpoint's
    peer (``testbed.rtt``: its own address, the peer's, the next hop's MAC)."""

    name: str
    cpus: dict[str, int | None]
    peers: dict[str, dict[str, str]]


class WireRates(TypedDict):
    """What crossed the wire during a run, each way (``wire_rates``), as its summary's
    load keeps it (``wire``)."""

    snd_to_rsp_pps: float
    rsp_to_snd_pps: float


@dataclass(frozen=True)
class RttSetup:
    """One ``netassay rtt`` call resolved (``RttRequest.setup``): the testbed, the probes,
    the responder, the load, where runs are stored."""

    path: str = "bridge"
    spec: ProbeSpec = field(default_factory=lambda: ProbeSpec(count=1000))
    runs: int = 10
    responder: str | None = None  # kernel | app (default: kernel for icmp, app for udp)
    responder_delay_ns: int | None = None  # the ground truth: replies held this long
    load: Load = field(default_factory=Load)
    net: NetLoad = field(default_factory=NetLoad)
    capture: bool = True
    db: str | None = None
    label: str = ""
    name: str = names.RTT_NAME
    settle_s: float = 1.0  # after the load starts, before the first run
    check_rate: bool = True
    cpus: str = "auto"  # where the servers' work runs (RttTestbedConfig.cpus)
    ping_too: bool = False  # then the same path by iputils ping and irtt (peers.PEERS)
    # several holds, runs interleaved over them (one experiment each): the ground truth
    # measured so that the machine's drift falls on every hold alike
    delays: tuple[int, ...] = ()

    @property
    def responder_kind(self) -> str:
        if self.responder:
            return self.responder
        if self.spec.probe == "udp" or self.responder_delay_ns is not None or self.delays:
            return "app"
        return "kernel"

    def plans(self) -> list[RttSetup]:
        """What each run measures in turn: this request, or one per hold of ``delays``."""
        if not self.delays:
            return [self]
        return [replace(self, responder_delay_ns=d, delays=()) for d in self.delays]

    def testbed(self) -> RttTestbedConfig:
        return RttTestbedConfig(
            path=self.path, background=self.load.endpoints_needed(), cpus=self.cpus
        )

    def factors(self) -> dict[str, Any]:
        """The configuration, as stored with the experiment (compare groups by these): an
        open document, as every method's config (a peer tool's experiment overrides some
        of its keys)."""
        s = self.spec
        return {
            "method": "rtt", "path": self.path, "probe": s.probe, "rate_pps": s.rate_pps,
            "count": s.count, "duration_s": s.duration_s, "size_bytes": s.size_bytes,
            "timeout_s": s.timeout_s, "runs": self.runs, "responder": self.responder_kind,
            "responder_delay_ns": self.responder_delay_ns or 0, "load": self.load.label,
            "load_type": self.load.type, "load_count": self.load.count,
            "load_location": self.load.location if self.load.count else None,
            "net_load": asdict(self.net) if self.load.type == "net" else None,
            "capture": self.capture, "testbed": asdict(self.testbed()),
        }  # fmt: skip


def validate(req: RttSetup) -> None:
    """Refuse a request that makes no sense, before anything is touched."""
    validate_name(req.name)
    req.spec.validate()
    validate_testbed(req.testbed())
    if not 1 <= req.runs <= MAX_RUNS:
        raise UsageError(f"bad --runs {req.runs}", f"1..{MAX_RUNS}", "e.g. 10")
    kind = req.responder_kind
    if kind not in RESPONDERS:
        raise UsageError(f"unknown responder '{kind}'", "kernel or app", "pick one")
    if kind == "kernel" and req.spec.probe == "udp":
        raise UsageError(
            "the kernel does not echo UDP probes", "it answers ICMP echo only",
            "use --responder app (the default for udp)",
        )  # fmt: skip
    if kind == "kernel" and (req.responder_delay_ns is not None or req.delays):
        raise UsageError(
            "--responder-delay needs the app responder", "the kernel's echo cannot hold a reply",
            "drop --responder kernel (the delay selects the app responder)",
        )  # fmt: skip
    for delay in req.delays or (req.responder_delay_ns or 0,):
        if not 0 <= delay < req.spec.timeout_s * 1e9 / 2:
            raise UsageError(
                f"bad --responder-delay {delay / 1e6:g} ms",
                f"it must be below half the reply timeout ({req.spec.timeout_s:g} s)",
                "give a shorter delay or a longer --timeout",
            )
    if len(set(req.delays)) != len(req.delays):
        raise UsageError("a --responder-delay is given twice", "", "list each hold once")
    if req.load.type == "net" and req.net.rate_pps <= 0:
        raise UsageError("bad --load-rate", "a rate above 0", "e.g. 10k")
    if req.db:
        parent = Path(req.db).resolve().parent
        if not parent.is_dir():
            raise StoreError(f"{req.db}: no such directory {parent}", "", "create it first")


def _responder_setup(tb: Testbed, req: RttSetup) -> Echo | None:
    """The app responder (netassay-probe echo), or the kernel's own ICMP echo."""
    rspep = tb.ns("rspep")
    icmp_off = "1" if req.responder_kind == "app" and req.spec.probe == "icmp" else "0"
    run_cmd(["sysctl", "-q", "-w", f"net.ipv4.icmp_echo_ignore_all={icmp_off}"], netns=rspep)
    if req.responder_kind == "kernel" or req.delays:  # interleaved holds: an echo per run
        return None
    return _echo(tb, req)


def _echo(tb: Testbed, req: RttSetup) -> Echo:
    return Echo(
        tb.ns("rspep"), req.spec.probe, req.responder_delay_ns or 0, tb.state["cpus"]["rsp"]
    )


@contextmanager
def _held(tb: Testbed, req: RttSetup, interleaved: bool) -> Iterator[None]:
    """With interleaved holds, the echo of this run's hold; else nothing to do."""
    if not interleaved:
        yield
        return
    echo = _echo(tb, req)
    try:
        yield
    finally:
        echo.stop()


def check_path(tb: Testbed, req: RttSetup, capture: Capture | None) -> PathCheck:
    """A short burst at the probe rate: the responder must answer, the path must carry it."""
    n = max(CHECK_MIN, round(req.spec.rate_pps * CHECK_S))
    spec = replace(req.spec, count=min(n, req.spec.planned()), duration_s=None)
    peer = tb.state["peers"]["sndep"]
    res = _one(tb, spec, capture, -1)
    sent, got = res.sent, res.received
    if sent and got == 0:
        raise TestbedError(
            "the responder never answered",
            f"0 of {sent} {req.spec.probe} probes to {peer['dst']} came back"
            f" ({req.responder_kind} responder, path {req.path})",
            "check the responder; nothing was stored",
        )
    lost = (sent - got) / sent if sent else 1.0
    rate = achieved_rate(res.prober) or 0.0
    # A sender that cannot keep the rate falls further behind with every probe, so most
    # probes leave late; a stall of the machine delays only the probes around it.
    behind = res.hists["send_delay"].percentile(50) or 0.0
    late = behind > max(CHECK_BEHIND / req.spec.rate_pps, 0.001) * 1e9
    if req.check_rate and (lost > CHECK_LOSS or late):
        raise UsageError(
            f"probe rate {req.spec.rate_pps:g}/s is above what path '{req.path}' carries here",
            f"a {spec.count}-probe check lost {lost:.1%}, sent at {rate:.0f}/s and the"
            f" median probe left {behind / 1e6:.1f} ms late",
            "lower --probe-rate (or skip the check with --no-rate-check); nothing was stored",
        )
    return {"probes": sent, "received": got, "lost_share": round(lost, 6), "sent_pps": rate,
            "median_send_delay_ns": behind}  # fmt: skip


@dataclass
class Measurement:
    """What a measurement did: its runs (as they ended), the path check, the load."""

    req: RttSetup
    results: list[RunResult] = field(default_factory=list)
    check: PathCheck | None = None  # None: not checked yet
    load: dict[str, Any] = field(default_factory=dict)  # Background.stop(): what ran
    # its kind and hold, and what the app responder's echo said when it stopped (open)
    responder: dict[str, Any] = field(default_factory=dict)
    experiments: dict[int | None, int] = field(default_factory=dict)  # by hold (delay)
    testbed: TestbedSeen | None = None  # None: not built yet
    peers: list[Any] = field(default_factory=list)  # peers.PeerRun, with --ping-too

    @property
    def experiment_id(self) -> int | None:
        return next(iter(self.experiments.values()), None)


def measure_all(
    req: RttSetup,
    on_run: Callable[[Measurement, RunResult], None],
    on_peer: Callable[[Measurement, Any], None] | None = None,
) -> Measurement:
    """Run the whole measurement; ``on_run`` sees each run as it is stored, ``on_peer``
    each peer tool's runs pooled (--ping-too: a run of each after each of netassay's
    runs, on the same path and load, so that all see the same machine)."""
    validate(req)
    require_root("netassay rtt")
    m = Measurement(req)
    with (
        Testbed(req.name, req.testbed()) as tb,
        Capture(tb.state["namespaces"]) if req.capture else nullcontext() as capture,
        _responder(tb, req, m),
    ):
        m.testbed = {"name": tb.name, "cpus": tb.state["cpus"], "peers": tb.state["peers"]}
        plans, interleaved = req.plans(), bool(req.delays)
        with _held(tb, plans[0], interleaved):
            m.check = check_path(tb, plans[0], capture)
        per_run = req.spec.send_time_s() + req.spec.timeout_s + 5
        blocks = len(plans) + (
            len(traffic_peers.PEERS) if req.ping_too else 0
        )  # runs after each run
        bg_max_s = 60 + (req.runs * blocks + 2) * per_run + 70
        with Background(req.load, tb.state, req.net, bg_max_s) as bg, _store(req, m) as store:
            if req.load.count:
                time.sleep(req.settle_s)
            env = environment(tb) if store else {}
            peers = _Peers(tb, m, store, env)
            for i in range(req.runs):
                for plan in plans:
                    with _held(tb, plan, interleaved):
                        before = wire_packets(tb)
                        res = _one(tb, plan.spec, capture, i)
                    res.load = {**bg.status(), "wire": wire_rates(before, wire_packets(tb), res)}
                    res.config = plan
                    m.results.append(res)
                    if store is not None:
                        _save(store, m, plan, res, env, capture)
                    on_run(m, res)
                if req.ping_too:
                    peers.run(i)
            if req.ping_too:
                m.peers = peers.pooled()
                for peer in m.peers:
                    if on_peer is not None:
                        on_peer(m, peer)
            m.load = bg.stop()
    return m


@contextmanager
def _responder(tb: Testbed, req: RttSetup, m: Measurement) -> Iterator[None]:
    echo = _responder_setup(tb, req)
    try:
        yield
    finally:
        m.responder = {"kind": req.responder_kind, "delay_ns": req.responder_delay_ns or 0}
        if echo is not None:
            m.responder.update(echo.stop())


@contextmanager
def _store(req: RttSetup, m: Measurement) -> Iterator[Store | None]:
    """The store runs are written to as they end; one this measurement created is
    removed again when it ends (a signal, an error) before any run was stored."""
    if not req.db:
        yield None
        return
    with run_store(req.db, lambda: bool(m.results)) as st:
        yield st


def wire_packets(tb: Testbed) -> dict[str, int]:
    """Packets each server has sent on its uplink so far (probes and background)."""
    out = {}
    for side in ("snd", "rsp"):
        link = json.loads(run_cmd(["ip", "-n", tb.ns(f"{side}srv"), "-j", "-s", "link", "show",
                                   "dev", UPLINK]).stdout)[0]  # fmt: skip
        out[side] = int(link["stats64"]["tx"]["packets"])
    return out


def wire_rates(before: dict[str, int], after: dict[str, int], res: RunResult) -> WireRates:
    """What crossed the wire during a run, each way, in packets per second."""
    dt = max(res.elapsed_s, 1e-9)

    def pps(side: str) -> float:
        return round((after[side] - before[side]) / dt, 1)

    return {"snd_to_rsp_pps": pps("snd"), "rsp_to_snd_pps": pps("rsp")}


def sender_link(tb: Testbed) -> Link:
    """The sender endpoint's interface, address and next hop's MAC (a static neighbour)."""
    peer = tb.state["peers"]["sndep"]
    return Link(EP_DEV, peer["src"], peer["dst_mac"])


def _one(tb: Testbed, spec: ProbeSpec, capture: Capture | None, index: int) -> RunResult:
    """One run of probes from the sender endpoint to the responder (index -1: the check)."""
    dst = tb.state["peers"]["sndep"]["dst"]
    return measure(tb.ns("sndep"), dst, spec, capture, index, tb.state["cpus"]["snd"],
                   link=sender_link(tb))  # fmt: skip


class _Peers:
    """iputils ping and irtt on the same path, a run of each after each of netassay's
    runs (their order swapped every other run), each of the same size, rate and count as
    netassay's run; stored as experiments of their own (probe ping, probe irtt), a run
    per block. Between blocks the machine's state drifts (a run's median here moves by
    10-20 us from one second to the next): in turn, all three tools see the same."""

    def __init__(self, tb: Testbed, m: Measurement, store: Store | None, env: dict[str, Any]):
        self.tb, self.m, self.store, self.env = tb, m, store, env
        self.runs: dict[str, list[traffic_peers.PeerRun]] = {
            name: [] for name in traffic_peers.PEERS
        }
        self.experiment: dict[str, int] = {}

    def run(self, index: int) -> None:
        tb, req, s = self.tb, self.m.req, self.m.req.spec
        snd, rsp, dst = tb.ns("sndep"), tb.ns("rspep"), tb.state["peers"]["sndep"]["dst"]
        count = s.planned()
        # ping needs the kernel's echo (the app responder answers netassay's probes only);
        # netassay's next run gets the echo it had
        ignore = "1" if req.responder_kind == "app" and s.probe == "icmp" else "0"
        run_cmd(["sysctl", "-q", "-w", "net.ipv4.icmp_echo_ignore_all=0"], netns=rsp)
        try:
            for name in (
                traffic_peers.PEERS if index % 2 == 0 else tuple(reversed(traffic_peers.PEERS))
            ):
                if name == "ping":
                    peer = traffic_peers.ping(
                        snd, dst, s.rate_pps, count, s.size_bytes, s.timeout_s
                    )
                else:
                    peer = traffic_peers.irtt(snd, rsp, dst, s.rate_pps, count, s.size_bytes)
                self.runs[name].append(peer)
                self._store(peer, index)
        finally:
            run_cmd(["sysctl", "-q", "-w", f"net.ipv4.icmp_echo_ignore_all={ignore}"], netns=rsp)

    def _store(self, peer: traffic_peers.PeerRun, index: int) -> None:
        if self.store is None:
            return
        req, m = self.m.req, self.m
        if peer.peer not in self.experiment:
            factors = {**req.factors(), "probe": peer.peer, "capture": False,
                       "responder": "kernel" if peer.peer == "ping" else "irtt server",
                       "responder_delay_ns": 0, "runs": req.runs}  # fmt: skip
            self.experiment[peer.peer], _ = self.store.add_experiment(
                key=f"rtt-{req.name}-{peer.peer}-{secrets.token_hex(4)}", kind=rtt_store.KIND,
                source=peer.peer, label=f"{peer.peer} beside experiment {m.experiment_id}",
                config=factors, metadata={"beside": m.experiment_id, "argv": peer.argv},
                environment=self.env,
            )  # fmt: skip
        trial = TrialRecord(
            load_index=0, repetition=index, rate_pps=req.spec.rate_pps,
            duration_s=max(peer.elapsed_s, 1e-9), sent=peer.sent, received=peer.received,
            source=peer.peer, utc=datetime.now(UTC).isoformat(timespec="microseconds"),
        )  # fmt: skip
        rtt_store.add_run(self.store, self.experiment[peer.peer], trial, peer.summary(),
                          {"latency_sent": peer.hist}, None)  # fmt: skip

    def pooled(self) -> list[traffic_peers.PeerRun]:
        """Each tool's runs as one: counts summed, round trips in one histogram."""
        out = []
        for name, runs in self.runs.items():
            if not runs:
                continue
            pool = traffic_peers.PeerRun(name, argv=runs[0].argv, version=runs[0].version,
                                         elapsed_s=sum(r.elapsed_s for r in runs))  # fmt: skip
            for r in runs:
                pool.sent += r.sent
                pool.received += r.received
                pool.hist.merge(r.hist)
            pool.extra = {"runs": len(runs)}
            if any("planned" in r.extra for r in runs):
                pool.extra["planned"] = sum(int(r.extra.get("planned", 0)) for r in runs)
            misses = [miss for r in runs
                      if (miss := r.extra.get("timer_miss_percent")) is not None]  # fmt: skip
            if misses:  # irtt's own timer: the worst of its runs
                pool.extra["timer_miss_percent"] = max(misses)
            out.append(pool)
        return out


def _save(
    store: Store,
    m: Measurement,
    req: RttSetup,
    res: RunResult,
    env: dict[str, Any],
    cap: Capture | None,
) -> None:
    if req.responder_delay_ns not in m.experiments:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        label = req.label or (
            f"{req.path} {req.spec.probe} {req.spec.rate_pps:g}/s {req.load.label}"
            + (f" delay {req.responder_delay_ns / 1e3:g}us" if req.responder_delay_ns else "")
        )
        m.experiments[req.responder_delay_ns], _ = store.add_experiment(
            key=f"rtt-{req.name}-{stamp}-{secrets.token_hex(3)}", kind=rtt_store.KIND,
            source=rtt_store.SOURCE, label=label, config=req.factors(),
            metadata={"check": m.check, "points": cap.describe() if cap else [],
                      "testbed": m.testbed}, environment=env,
        )  # fmt: skip
    trial = TrialRecord(
        load_index=0, repetition=res.index, rate_pps=req.spec.rate_pps,
        duration_s=max(res.elapsed_s, 1e-9), sent=res.sent, received=res.received,
        source=rtt_store.SOURCE, achieved_rate_pps=achieved_rate(res.prober),
        counters={"prober": res.prober}, warnings=res.warnings, utc=res.started_utc,
    )  # fmt: skip
    summary = res.summary()
    rtt_store.add_run(store, m.experiments[req.responder_delay_ns], trial, summary, res.hists,
                      rtt_store.pack_probes(res.sample, SAMPLE_COLUMNS))  # fmt: skip


__all__ = [
    "PATHS",
    "Measurement",
    "PathCheck",
    "RttSetup",
    "TestbedSeen",
    "measure_all",
    "validate",
]


def setup_of(req: RttRequest, name: str, db: str | None, label: str) -> RttSetup:
    """What a request measures on testbed ``name``, stored in ``db``."""
    return RttSetup(
        path=req.path, spec=req.spec(), runs=req.runs, responder=req.responder,
        responder_delay_ns=req.delay_ns(), delays=req.delays(), load=Load.parse(req.load),
        net=req.net(), capture=req.capture, db=db, label=label, name=name,
        check_rate=req.rate_check, cpus=req.cpus, ping_too=req.ping_too,
    )  # fmt: skip

"""``netassay accept``: a link's acceptance test, measured.

A Y.1564-style configuration test first (a ramp: 25, 50, 75 and 100% of the contract,
short steps), then the performance test: K sustained runs at the contract. The contract
is a rate at a stated layer (payload, ip, ethernet, l1); the sender is offered the
payload rate that makes the contract at that layer with its datagram size. The test
host is checked during every run (``host.HostProbe``, ``host.CpuSampler``); the verdict
(``analysis.acceptance.judge``) says PASS, FAIL or INCONCLUSIVE: host-limited. The test is stored
with ``methods.accept.store.save_accept_test`` as one experiment.

The link is the embedded one (``link``: ground-truth cap and loss) or a remote iperf3
server at ``server`` (an address in the benchmarking ranges unless the user allows
another).
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, replace
from typing import Any

from netassay import names
from netassay.analysis.acceptance import check_layer, judge
from netassay.counters import host as counters_host
from netassay.errors import Interrupted, ToolError, UsageError, stored_what
from netassay.methods.accept import gen, scenarios
from netassay.methods.accept import iperf3 as accept_iperf3
from netassay.methods.accept.request import SENDERS, AcceptRequest, Scenario
from netassay.methods.accept.result import Accepted, AcceptResult
from netassay.methods.accept.store import save_accept_test
from netassay.proc import run
from netassay.store.db import Store
from netassay.testbed import Testbed, require_root
from netassay.testbed import link as testbed_link
from netassay.traffic import iperf3 as traffic_iperf3
from netassay.trial.accept import AcceptRun, AcceptTest, CpuSample

RAMP_PCTS = (25, 50, 75, 100)
SOURCE = "netassay accept"
PAUSE_S = 0.5  # between runs: the link's queue drains
REMOTE_WARNING = (
    "the far host is not checked from here: datagrams its socket or its CPU lost count "
    "as the link's; check its UdpRcvbufErrors (netstat -su) there"
)


def validate(req: AcceptRequest) -> None:
    """Refuse a request that cannot be right, before anything is built or sent."""
    check_layer(req.layer)
    if req.sender not in SENDERS:
        raise UsageError(f"unknown sender '{req.sender}'", f"known: {', '.join(SENDERS)}", "")
    if not 1e3 <= req.contract_bps <= 1e12:
        raise UsageError(f"bad --contract {req.contract_bps:g}", "1k..1T bit/s", "e.g. 400M")
    if not 1 <= req.runs <= 1000:
        raise UsageError(f"bad --runs {req.runs}", "1..1000", "e.g. 3 or 5")
    if not 1 <= req.duration_s <= 86400 or not 1 <= req.ramp_step_s <= 3600:
        raise UsageError("bad duration", "runs and ramp steps last 1 s .. 24 h", "e.g. 10s")
    if req.embedded == (req.server is not None):
        raise UsageError(
            "say where the link is",
            "give --embedded (a known link here) or --server ADDR",
            "e.g. --embedded --link-cap 440M",
        )
    if req.server is not None:
        check_server(req.server, req.allow_any_server)
        if req.sender != "iperf3":
            raise UsageError(
                "--server takes iperf3 as the sender",
                "netassay-gen's receiver must run on the far host, which netassay cannot "
                "start from here",
                "use --sender iperf3, or --embedded",
            )
    if req.sender == "netassay-gen":
        gen.frame_size(req.datagram(), req.ip_version)
        if req.scenario.socket_buffer:
            raise UsageError(
                f"scenario '{req.scenario.label()}': socket_buffer is an iperf3 setting",
                "netassay-gen's receiver reads a packet ring, not a socket",
                "drop socket_buffer from the scenario, or use --sender iperf3",
            )
    testbed_link.validate(req.testbed())


def check_server(addr: str, allow_any: bool) -> None:
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError as exc:
        raise UsageError(f"bad --server '{addr}'", "not an IP address", "e.g. 198.18.5.2") from exc
    if not allow_any and ip not in (names.BENCH_V4 if ip.version == 4 else names.BENCH_V6):
        raise UsageError(
            f"--server {addr} is outside the benchmarking ranges",
            "a test floods its target at the contracted rate",
            "give a server in 198.18.0.0/15 or 2001:2::/48, or say --allow-any-server "
            "for a link you own",
        )


def measure_each(req: AcceptRequest, show: Callable[[str], None]) -> Accepted:
    """The test of each scenario ``req`` carries (``req.scenarios``, in order; else the
    test ``req`` is), every one checked before the first runs, each measured, judged and
    stored as it ends; an interrupt (Ctrl-C, SIGTERM) raises ``Interrupted`` saying how
    many tests are stored."""
    base = replace(req, scenarios=())
    each = scenarios.requests(base, list(req.scenarios)) if req.scenarios else [base]
    for one in each:
        validate(one)
    done: list[AcceptResult] = []
    for one in each:
        try:
            done.append(measure(one, show))
        except KeyboardInterrupt as exc:  # a test is stored whole when it ends
            raise Interrupted("accept interrupted", stored_what(len(done), "test", req.db)) from exc
    return Accepted(tuple(done), req.db)


def measure(req: AcceptRequest, show: Callable[[str], None] = lambda s: None) -> AcceptResult:
    """Run the whole test (ramp, K runs), judge it, store it when ``req.db``."""
    validate(req)
    if req.embedded:
        require_root("netassay accept --embedded")
    with _place(req) as place:
        ramp = []
        if req.ramp:
            for i, pct in enumerate(RAMP_PCTS, 1):
                show(f"ramp {pct}% of the contract ({req.ramp_step_s:g} s)")
                ramp.append(place.one(i, "ramp", req.payload_bps(pct / 100), req.ramp_step_s))
        runs = []
        for k in range(1, req.runs + 1):
            show(f"run {k}/{req.runs} at the contract ({req.duration_s:g} s)")
            runs.append(place.one(k, "sustained", req.payload_bps(), req.duration_s))
        link = place.link_summary()
    test = AcceptTest(
        source=SOURCE,
        name=_name(req),
        contract_bps=req.contract_bps,
        layer=req.layer,
        runs=runs,
        ramp=ramp,
        scenario={
            **asdict(req.scenario),
            "label": req.scenario.label(),
            "sender": req.sender,
            "datagram_bytes": req.datagram(),
            "ip_version": req.ip_version,
        },
        link=link,
        label=req.label or _name(req),
    )
    verdict, experiment_id = judge(test), None
    if req.db:
        with Store(req.db) as st:
            experiment_id = save_accept_test(st, test)
    return AcceptResult(test, verdict, experiment_id)


def _name(req: AcceptRequest) -> str:
    where = f"server {req.server}" if req.server else "embedded link"
    truth = []
    if req.link_cap_bps:
        truth.append(f"cap {req.link_cap_bps / 1e6:g}M L1")
    if req.link_drop:
        truth.append(f"drop {req.link_drop:.3%}")
    t = f" ({', '.join(truth)})" if truth else ""
    return (
        f"{req.sender} {req.contract_bps / 1e6:g}M {req.layer}, {where}{t}, {req.scenario.label()}"
    )


class _Place:
    """Where the runs happen: the sides' namespaces and CPUs, the probes, the truths."""

    def __init__(self, req: AcceptRequest, state: dict[str, Any] | None) -> None:
        self.req = req
        self.state = state
        s = req.scenario
        if state is not None:
            ns = state["namespaces"]
            self.client = traffic_iperf3.Side(ns["cli"], s.client_cpu)
            self.server: traffic_iperf3.Side | None = traffic_iperf3.Side(ns["srv"], s.server_cpu)
            self.addr = state["addresses"]["srv"]
            # on veth a backlog that refuses a frame is counted by the veth that sent it
            # (tx_dropped): the client's c0 for the link's ingress, the link's l1 for
            # the server's; both are this host's (the embedded link runs on its CPUs)
            self.probe = counters_host.HostProbe(
                {"sender": (ns["cli"], None), "receiver": (ns["srv"], testbed_link.SRV_DEV)},
                {
                    "veth.c0": (ns["cli"], testbed_link.CLI_DEV),
                    "veth.l1": (ns["link"], testbed_link.LINK_OUT),
                },
            )
            self.roles = _roles(s.client_cpu, s.server_cpu)
        else:
            self.client, self.server, self.addr = (
                traffic_iperf3.Side(None, s.client_cpu),
                None,
                req.server,
            )
            self.probe = counters_host.HostProbe({"sender": (None, _route_dev(str(req.server)))})
            self.roles = _roles(s.client_cpu, None)
        self.truth_total: dict[str, int] = {}
        try:
            self.facts = self._facts()
        except BaseException:
            self.probe.close()  # its namespace sockets, before the error goes up
            raise

    def _facts(self) -> dict[str, Any]:
        req, s = self.req, self.req.scenario
        tool = {
            "sender": req.sender,
            "version": traffic_iperf3.version() if req.sender == "iperf3" else gen.version(),
            "socket_buffer_bytes": s.socket_buffer or "kernel default",
            "datagram_bytes": req.datagram(),
        }
        extra: dict[str, Any] = {
            "tool": tool,
            "pinning": {"client_cpu": s.client_cpu, "server_cpu": s.server_cpu},
        }
        if self.state is not None:
            extra.update(
                mtu=s.mtu,
                steering=self.state.get("steering", {}),
                masks=testbed_link.masks(self.state),
                rx_cpu=s.rx_cpu,
                tx_cpu=s.tx_cpu,
                busy_receiver=s.busy_receiver,
                path="embedded: veth client -> link namespace -> veth server",
            )
        else:
            dev = self.probe.sides["sender"][1]
            mtu = self.probe.readers[None].links().get(dev or "", {}).get("mtu")
            extra.update(
                mtu=mtu,
                device=dev,
                server=req.server,
                note="the server's host is not checked from here",
            )
        return counters_host.host_config(extra)

    def one(self, index: int, phase: str, payload_bps: float, duration_s: float) -> AcceptRun:
        req = self.req
        time.sleep(PAUSE_S)
        truth0 = self.truths()
        sampler = counters_host.CpuSampler().start()
        self.probe.start()
        try:
            if req.sender == "iperf3":
                r = accept_iperf3.run_once(
                    self.client,
                    self.server,
                    str(self.addr),
                    payload_bps,
                    req.datagram(),
                    duration_s,
                    index=index,
                    phase=phase,
                    socket_buffer=req.scenario.socket_buffer,
                )
            else:
                assert self.state is not None
                r = gen.run_once(
                    self.state["target"],
                    {"client": req.scenario.client_cpu, "server": req.scenario.server_cpu},
                    payload_bps,
                    req.datagram(),
                    req.ip_version,
                    duration_s,
                    index=index,
                    phase=phase,
                )
        finally:
            samples = sampler.stop()
        host = self.probe.deltas()
        if req.sender == "netassay-gen":
            host["receiver.packet_ring_dropped"] = gen.ring_drops(r)
            host["sender.lateness_max_us"] = gen.lateness_max_us(r)
        truth = {k: v - truth0.get(k, 0) for k, v in self.truths().items()}
        for k, v in truth.items():
            self.truth_total[k] = self.truth_total.get(k, 0) + v
        r.host = {**{k: v for k, v in host.items() if v}, **truth}
        r.cpu = [CpuSample(t, cores) for t, cores in samples]
        r.cpu_roles = self.roles
        r.host_config = {**self.facts, **r.host_config}
        if self.state is None:
            r.warnings.append(REMOTE_WARNING)
        return r

    def truths(self) -> dict[str, int]:
        return testbed_link.truth_counters(self.state) if self.state is not None else {}

    def link_summary(self) -> dict[str, Any]:
        if self.state is None:
            return {"server": self.req.server, "ground_truth": None}
        return {**self.state.get("link", {}), "dropped_totals": self.truth_total}

    def close(self) -> None:
        self.probe.close()


def _roles(client_cpu: int | None, server_cpu: int | None) -> dict[str, str]:
    roles: dict[str, str] = {}
    if client_cpu is not None:
        roles[f"cpu{client_cpu}"] = "sender"
    if server_cpu is not None:
        roles[f"cpu{server_cpu}"] = "both" if server_cpu == client_cpu else "receiver"
    return roles


def _route_dev(addr: str) -> str | None:
    out = json.loads(run(["ip", "-j", "route", "get", addr], check=False).stdout or "[]")
    return out[0].get("dev") if out else None


@contextmanager
def _place(req: AcceptRequest) -> Iterator[_Place]:
    if not req.embedded:
        p = _Place(req, None)
        try:
            yield p
        finally:
            p.close()
        return
    with Testbed(req.name, req.testbed()) as tb:
        p = _Place(req, tb.state)
        try:
            with _busy(tb.state, req.scenario):
                yield p
        finally:
            p.close()


@contextmanager
def _busy(state: dict[str, Any], s: Scenario) -> Iterator[None]:
    """stress-ng CPU workers pinned to the receiver's CPU, in the server's namespace (so
    that the testbed's teardown ends them whatever happens)."""
    if not s.busy_receiver:
        yield
        return
    cpu = s.server_cpu if s.server_cpu is not None else 0
    argv = [
        "ip",
        "netns",
        "exec",
        state["namespaces"]["srv"],
        "taskset",
        "-c",
        str(cpu),
        "stress-ng",
        "--cpu",
        str(s.busy_receiver),
        "--timeout",
        "3600",
        "--quiet",
    ]
    with tempfile.TemporaryFile("w+") as err:  # what stress-ng says if it ends at once
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
        time.sleep(0.5)
        if proc.poll() is not None:  # a receiver that is not busy is not this scenario
            err.seek(0)
            said = err.read().strip().splitlines()
            raise ToolError(
                f"the busy receiver (stress-ng on CPU {cpu}) ended at once "
                f"(exit {proc.returncode})",
                said[-1] if said else "the scenario's busy receiver is not there",
                "check that stress-ng runs ('stress-ng --cpu 1 --timeout 1s'), or drop "
                "busy_receiver",
            )
        try:
            yield
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

"""The SUTs a program of their own forwards: ``--sut ovs | testpmd | l3fwd | exec``.

Each is the forwarding testbed (generator -> SUT namespace -> sink, ``testbed.topology``)
with a data plane started in the SUT's namespace on ``sut0`` and ``sut1`` in place of the
kernel's router or bridge: Open vSwitch's userspace datapath (``testbed.ovs``), DPDK's
testpmd and l3fwd (``testbed.dpdk``), or whatever the user's ``--sut-setup`` program
starts (``testbed.sutexec``). One lifecycle builds and removes them all (``bed.Testbed``,
``topology.build``, ``teardown`` and ``cleanup``): ``start`` runs once the namespaces,
veths, addresses and the sink are made; ``stop`` ends the data plane's processes and
removes its run directory (``<run dir>/<testbed>.dp/``) before the namespaces go, and
``topology.end_processes`` ends whatever still runs in them after it.

What they share is set here:

- the checksum offload of the generator's and the sink's veths (``tg0``, ``sink0``) is
  turned off: a frame a socket sends through a veth leaves with a partial checksum that
  nothing completes once a userspace data plane took it off the veth (Open vSwitch drops
  such frames from iperf3; ping is unaffected; netassay-gen's frames carry whole
  checksums). What ``ethtool -k`` then says is recorded (``offloads``).
- the wire: a data plane whose ports are AF_XDP sockets (``ovs --ovs-port afxdp*``,
  DPDK over ``af_xdp``) has an XDP program on ``sut0``, whose veth ring stops the sender's
  queue when full; the wire in front of it is then the XDP router's head-drop queue
  (``testbed.xdp_router.set_wire``): its overflow is the SUT's ingress loss, never a
  send refused and retried. Over packet sockets (``system``, ``af_packet``) the wire is
  the kernel router's. ``sut0``'s NAPI, where the XDP program hands frames to the
  socket, runs where veth runs it: in the generator's send call, on its CPU (threaded
  on the SUT's CPU, as the XDP router's at pin-2cpu, it lost more: 9.7-12.4% of 100
  kpps against 2.4-7.4% on this busy host, testpmd and Open vSwitch alike).
- the CPU: the data plane's busy-polling thread (OVS's PMD thread, DPDK's forwarding
  lcore) and its other threads are pinned to the SUT's CPU (CPU 1 at pin-2cpu), so that
  a trial's CPU record for that core is the data plane's, at the generator's priority
  (nice -20: the rest of the machine's load does not take that CPU from it). A
  busy-polling data plane takes its CPU whole: it needs a SUT CPU apart from the
  generator's (pin-2cpu).
- the ground-truth cap (``--sut-cap``): an OpenFlow meter in Open vSwitch; for the
  others an nft policer of that rate (the kernel router's, ``topology._cap_rule``, with
  its bucket) at the sink's ingress veth, ahead of the nft sink: a data plane that
  forwards no more than that. It needs ``--sink nft``: the XDP sink counts a frame
  before any hook after it. Its drops are the SUT's egress loss (``sink/nft/na_cap``).
  Two other places were tried and measured: a tbf on the sink's ingress (through an
  ifb device) cannot be, frames an ifb re-injects pass neither sink (XDP runs before tc
  ingress, nft's netdev ingress hook is skipped for them); a tbf on the generator's
  wire holds frames in its queue that count against the generator's socket buffer,
  which then blocks it (39.5 kpps at --rate max through a 30 kpps tbf, 48 of 60 kpps
  paced): the generator, not the cap, would set the load.
- its own counters (``counters``), read before and after every trial: flattened under
  ``sut/dp/`` and the drops only it sees, by loss location, under ``sut/dpdrop/``
  (``counters.loss``).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netassay import names
from netassay.config import (
    DATAPLANE_KNOBS,
    DATAPLANES,
    DPDK_VDEVS,
    OVS_FLOWS,
    OVS_PORTS,
    PIN_CPUS,
    TESTPMD_FWD,
    TestbedConfig,
)
from netassay.errors import NetassayError, TestbedError, ToolError, UsageError
from netassay.proc import run
from netassay.testbed import pathcheck, xdp_router
from netassay.testbed import state as testbed_state
from netassay.traffic.generator import run_generator
from netassay.units import utc_now

log = logging.getLogger("netassay.testbed")

MODULES = {
    "ovs": "netassay.testbed.ovs",
    "testpmd": "netassay.testbed.dpdk",
    "l3fwd": "netassay.testbed.dpdk",
    "exec": "netassay.testbed.sutexec",
}
# the data planes that lower the TTL (the others may switch frames); l3fwd lowers IPv4's
# only (its IPv6 path leaves the hop limit as it is, measured)
ROUTED = ("l3fwd",)
START_S = {"exec": 30.0}  # how long the path may take to forward once it is started
START_DEFAULT_S = 15.0
# the generator's and the sink's veths: where sockets send (their checksums completed)
SOCKET_ENDS = (("tg", names.TG_DEV), ("sink", names.SINK_DEV))
OFFLOAD = "tx-checksumming"
# an AF_XDP socket's receive ring (Open vSwitch's and DPDK's af_xdp default): the SUT's
# receive ring; the head-drop wire in front of veth's ring (--backlog long) only holds
# frames while the NAPI that moves them to the socket (on the generator's CPU) lags
XSK_RING = 2048
CAP_TABLE = "na_cap"  # the cap of the data planes other than Open vSwitch, at the sink
# a data plane runs at the generator's priority (traffic.generator.PRIORITY): the load
# of the rest of the machine must not take the SUT's CPU from it (measured: at nice 0 a
# busy host starved the busy-polling thread of CPU 1 for tens of ms, its ring overflowed)
NICE = -20
PRIORITY = ["nice", "-n", str(NICE)]


def is_dataplane(cfg_or_state: Any) -> bool:
    """A SUT a program of its own forwards (a config or a state)."""
    if isinstance(cfg_or_state, dict):
        return (cfg_or_state.get("config") or {}).get("sut") in DATAPLANES
    return getattr(cfg_or_state, "sut", None) in DATAPLANES


def own_links(state: dict[str, Any]) -> dict[str, tuple[str, ...]] | None:
    """The SUT namespace's links that are the testbed's under a data plane: its two
    veths (the trial engine watches only these there; the data plane's own devices,
    Open vSwitch's bridge port, are up or down as it keeps them). None: every link."""
    return {"sut": (names.SUT_IN, names.SUT_OUT)} if is_dataplane(state) else None


def af_xdp(cfg: TestbedConfig) -> bool:
    """A data plane whose ports are AF_XDP sockets (an XDP program on sut0)."""
    return cfg.sut in MODULES and bool(module(cfg.sut).uses_af_xdp(cfg.resolved()))


def module(sut: str) -> Any:
    """The module that starts, stops and reads the data plane ``sut``."""
    return importlib.import_module(MODULES[sut])


@dataclass(frozen=True)
class Site:
    """Where a data plane runs: what ``start`` needs of the testbed built so far."""

    name: str  # the testbed's
    cfg: TestbedConfig  # resolved
    ns: dict[str, str]  # role -> network namespace
    macs: dict[str, str]  # device -> MAC
    addressing: names.Addressing
    sut_cpu: int | None  # the CPU the data plane runs on (None: not pinned)
    run_dir: Path  # its own: its sockets, logs, pid files, route files
    cap_burst: int | None = None  # the cap's bucket in frames (``cap_bucket``)

    @property
    def ring(self) -> int:
        """The SUT's receive ring in front of an AF_XDP port: the head-drop wire's length
        (the testbed's --backlog, else the host's netdev_max_backlog)."""
        return self.cfg.backlog or int(testbed_state.read_sysctl("net.core.netdev_max_backlog"))


def cap_bucket(pps: float | None, bucket_pkts: int | None) -> int | None:
    """A data plane's cap bucket: the kernel router's (``bucket_pkts``, 20 ms of the
    cap) or the AF_XDP socket's ring if that is more: a data plane that lost its CPU
    for a moment drains its ring in one burst, which a smaller bucket would cut
    (measured: a meter of 30 kpps with a 600-frame bucket passed 17 kpps on a busy
    host). A trial of T s at an overload passes pps * T + bucket frames."""
    return max(int(bucket_pkts or 0), XSK_RING) if pps else None


def run_dir(name: str) -> Path:
    """A data plane's own run directory (its daemons' sockets, logs and pid files)."""
    return testbed_state.run_dir() / f"{names.validate_name(name)}.dp"


# -- validation (pure but for the programs looked up) -------------------------------------
CHOICES = {"ovs_port": OVS_PORTS, "ovs_flows": OVS_FLOWS, "testpmd_fwd": TESTPMD_FWD,
           "dpdk_vdev": DPDK_VDEVS}  # fmt: skip


def validate(cfg: TestbedConfig) -> None:
    """What every data plane refuses, then what its own module refuses; knobs of one
    data plane given to another SUT are refused here too."""
    for knob, known in CHOICES.items():
        value = getattr(cfg, knob)
        if value is not None and value not in known:
            flag = "--" + knob.replace("_", "-")
            raise UsageError(f"unknown {flag} '{value}'", f"known: {', '.join(known)}", "pick one")
    for sut, knobs in DATAPLANE_KNOBS.items():
        for knob in knobs:
            if getattr(cfg, knob) is not None and cfg.sut != sut and knob not in _shared(cfg.sut):
                flag = "--" + knob.replace("_", "-")
                owner = " or ".join(s for s, k in DATAPLANE_KNOBS.items() if knob in k)
                raise UsageError(
                    f"{flag} with --sut {cfg.sut}", f"it is a knob of --sut {owner}",
                    f"drop {flag}, or use --sut {owner}",
                )  # fmt: skip
    if cfg.sut not in DATAPLANES:
        return
    if cfg.sut_drop:
        raise UsageError(
            f"--sut-drop with --sut {cfg.sut}",
            "the random drop is an nft rule in the kernel's forwarding path, which this "
            "data plane does not take",
            "drop --sut-drop (--sut-cap is its ground truth)",
        )
    if cfg.rx_mode == "napi":
        raise UsageError(
            f"--rx-mode napi with --sut {cfg.sut}",
            "its ingress is the data plane's own port (an AF_XDP socket's program on sut0, "
            "or a packet socket), not veth's NAPI ring behind a pass program",
            "drop --rx-mode (backlog: the generator sends through a head-drop wire)",
        )
    if cfg.sut_cap_reverse_pps:
        raise UsageError(
            f"--sut-cap-reverse with --sut {cfg.sut}",
            "its data plane is measured one direction at a time here",
            "drop --sut-cap-reverse",
        )
    if cfg.sut_cap_pps and cfg.sut != "ovs" and cfg.sink != "nft":
        raise UsageError(
            f"--sut-cap with --sut {cfg.sut} and --sink {cfg.sink}",
            "its cap is an nft policer at the sink's ingress, ahead of the nft sink (the XDP "
            "sink counts a frame before it)",
            "add --sink nft",
        )
    if cfg.sut != "exec":
        _refuse_shared_cpu(cfg)
    module(cfg.sut).validate(cfg)


def _shared(sut: str) -> tuple[str, ...]:
    """The knobs ``sut`` shares with another data plane (DPDK's vdev)."""
    return tuple(DATAPLANE_KNOBS.get(sut, {}))


def _refuse_shared_cpu(cfg: TestbedConfig) -> None:
    """A busy-polling data plane takes its CPU whole: it needs one apart from the
    generator's."""
    pinning = cfg.resolved().pinning
    gen, sut = PIN_CPUS[pinning]
    if sut is None or sut == gen:
        raise UsageError(
            f"--sut {cfg.sut} with --pinning {pinning}",
            "its forwarding thread busy-polls a CPU of its own, which this pinning does not "
            "give it apart from the generator's",
            "use --pinning pin-2cpu (the default on 2 CPUs or more)",
        )
    if cfg.resolved().rx_affinity == "balanced":
        raise UsageError(
            f"--rx-affinity balanced with --sut {cfg.sut}",
            "its ports are polled by one thread on the SUT's CPU",
            "drop --rx-affinity (bound is the default)",
        )


def need_program(path: str | None, what: str, todo: str) -> str:
    """The full path of a program a data plane runs, or one line saying how to get it."""
    found = shutil.which(path) if path else None
    if found is None:
        raise ToolError(f"{what} is not installed", f"no {path} on PATH", todo)
    return found


# -- the lifecycle ------------------------------------------------------------------------
def start(site: Site) -> dict[str, Any]:
    """Set what every data plane needs (offloads, wire, CPU), start it, set its cap;
    return what the testbed's state records of it (``dataplane``)."""
    cfg = site.cfg
    mod = module(cfg.sut)
    site.run_dir.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"sut": cfg.sut, "run_dir": str(site.run_dir)}
    out["offloads"] = checksum_offload_off(site.ns)
    xsk = af_xdp(cfg)
    out["af_xdp"] = xsk
    if xsk:
        xdp_router.set_wire(site.ns["tg"], names.TG_DEV, site.ring)
        out["wire_qdisc"] = xdp_router.WIRE_QDISC
        out["ring_pkts"] = XSK_RING  # the socket's ring: what a stalled data plane holds
    out["cpu"] = site.sut_cpu
    out["nice"] = NICE
    out.update(mod.start(site))
    if cfg.sut_cap_pps and cfg.sut != "ovs":  # Open vSwitch's is a meter of its own
        out["cap"] = sink_cap(site, float(cfg.sut_cap_pps))
    if cfg.sut_cap_pps:
        out["cap_burst_pkts"] = site.cap_burst
    return out


def check_path(state: dict[str, Any], gen_flags: list[str], wait_s: float | None = None) -> None:
    """Probe bursts from the generator must reach the sink through the data plane,
    addressed to the sink (and routed, by l3fwd over IPv4), within ``wait_s`` (a data plane may
    take a moment to forward once started); the last check is kept in the state's
    ``dataplane`` record. One line when it does not forward, with what the data plane
    said."""
    dp, cfg, t = state["dataplane"], state["config"], state["target"]
    sut = str(cfg["sut"])
    mod = module(sut)
    size = int(cfg.get("size_bytes") or names.min_frame_bytes(int(cfg["ip_version"])))

    def send(rate: float, dur: float) -> int:
        res = run_generator(t["netns"], t["dev"], t["dst_mac"], t["src"], t["dst"], rate, dur,
                            size_bytes=size, best_effort=True, extra=gen_flags,
                            timeout_s=dur + 30)  # fmt: skip
        return int(res.sent)

    wait = START_S.get(sut, START_DEFAULT_S) if wait_s is None else wait_s
    deadline = time.monotonic() + wait
    while True:
        rec = pathcheck.probe(send, names.SINK_DEV, state["namespaces"]["sink"],
                              state["macs"][names.SINK_DEV], t["dst"], int(cfg["ip_version"]) == 6,
                              routed=sut in ROUTED and int(cfg["ip_version"]) == 4)  # fmt: skip
        rec["utc"] = utc_now()
        dp["path_check"] = rec
        failure = mod.startup_failure(dp, state["name"])
        if rec["ok"] or failure or time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    if rec["ok"] and not failure:
        return
    raise TestbedError(
        f"the path through --sut {sut} does not forward: {failure or rec['problem']}",
        f"netassay-gen sent {rec['sent']} probe frames {t['src']} -> {t['dst']} to "
        f"{t['dst_mac']} for {wait:g} s",
        ("make your --sut-setup program forward them to the sink's MAC (NETASSAY_SINK_MAC)"
         if sut == "exec" else "check the data plane") + f"; its log says: {mod.log_tail(dp)}",
    )  # fmt: skip


def command_env(state: dict[str, Any]) -> dict[str, str]:
    """What a user's command run in the SUT's namespace (``--hook-before``,
    ``--hook-after``, ``reconfig --change`` and ``--undo``) is told of the testbed's data
    plane, so that the data plane's own tools reach it unchanged: ``NETASSAY_DP_DIR`` its
    run directory, and its module's own (Open vSwitch's ``OVS_RUNDIR`` and the others,
    DPDK's file prefix, the ``exec`` program's ``NETASSAY_DIR``). {} without one."""
    dp = state.get("dataplane")
    sut = (state.get("config") or {}).get("sut")
    if not dp or sut not in MODULES or not dp.get("run_dir"):
        return {}
    return {"NETASSAY_DP_DIR": str(dp["run_dir"]), **module(sut).command_env(dp, state["name"])}


def alive(state: dict[str, Any]) -> None:
    """Before a run on a testbed left up: its data plane still runs and forwards."""
    dp = state.get("dataplane")
    sut = (state.get("config") or {}).get("sut")
    if not dp or sut not in MODULES:
        return
    gone = module(sut).alive(dp, state["name"])
    if gone:
        raise TestbedError(
            f"testbed '{state['name']}' is broken: its {', '.join(gone)} ended",
            f"its data plane ({sut}) does not run any more",
            f"bring it down ('netassay testbed down --name {state['name']}') and up again",
        )


def stop(state: dict[str, Any]) -> None:
    """End the data plane of a testbed's state and remove its run directory; what it
    cannot end is said, never raised (a teardown goes on)."""
    dp = state.get("dataplane")
    sut = (state.get("config") or {}).get("sut")
    if sut in MODULES:
        try:
            module(sut).stop(dp or {}, state)
        except (NetassayError, OSError) as exc:
            msg = exc.line() if isinstance(exc, NetassayError) else str(exc)
            log.warning("testbed %s: stopping %s: %s", state.get("name"), sut, msg)
    name = state.get("name")
    if isinstance(name, str):
        shutil.rmtree(run_dir(name), ignore_errors=True)


def stop_leftovers(name: str) -> None:
    """Cleanup of a testbed whose state is gone: its run directory and DPDK's runtime
    files (the processes in its namespaces are ended by ``topology.end_processes``)."""
    shutil.rmtree(run_dir(name), ignore_errors=True)
    module("testpmd").clear_runtime(name)


# -- what they share -----------------------------------------------------------------------
def checksum_offload_off(ns: dict[str, str]) -> dict[str, str]:
    """Turn off the transmit checksum offload of the generator's and the sink's veths;
    return what ``ethtool -k`` says of it afterwards (``netns:dev`` -> on/off)."""
    out = {}
    for role, dev in SOCKET_ENDS:
        run(["ethtool", "-K", dev, "tx", "off"], netns=ns[role])
        out[f"{ns[role]}:{dev}"] = offload_state(ns[role], dev)
    return out


def offload_state(netns: str, dev: str) -> str:
    """``tx-checksumming`` of ``dev`` as ``ethtool -k`` says it (on, off, or unknown)."""
    text = run(["ethtool", "-k", dev], netns=netns).stdout
    return parse_offload(text, OFFLOAD)


def parse_offload(text: str, feature: str) -> str:
    """A feature's state in ``ethtool -k`` output ("off", "on", "off [fixed]" -> "off")."""
    for line in text.splitlines():
        key, _, value = line.strip().partition(":")
        if key == feature:
            return value.split()[0] if value.split() else "unknown"
    return "unknown"


def cap_rules(pps: float, burst: int) -> str:
    """The cap at the sink's ingress: an nft policer of ``pps`` with a bucket of
    ``burst`` frames, ahead of the nft sink's chain (priority -10), its drops counted."""
    limit = f"limit rate over {round(pps)}/second burst {burst} packets"
    return f"""table netdev {CAP_TABLE} {{
  counter {CAP_TABLE} {{ }}
  chain na_in {{ type filter hook ingress device "{names.SINK_DEV}" priority -20; policy accept;
    meta l4proto udp {limit} counter name "{CAP_TABLE}" drop
  }}
}}
"""


def sink_cap(site: Site, pps: float) -> dict[str, Any]:
    """``--sut-cap`` for a data plane other than Open vSwitch (see the module)."""
    burst = int(site.cap_burst or XSK_RING)
    rules = cap_rules(pps, burst)
    run(["nft", "-f", "-"], netns=site.ns["sink"], input_text=rules)
    return {"pps": pps, "burst_pkts": burst, "where": f"{site.ns['sink']}:{names.SINK_DEV} ingress",
            "rule": f"limit rate over {round(pps)}/second burst {burst} packets"}  # fmt: skip


# -- its counters, read before and after every trial ---------------------------------------
@contextlib.contextmanager
def counters(state: dict[str, Any]) -> Iterator[Callable[[], dict[str, Any]] | None]:
    """A reader of the data plane's own counters for as long as trials run (None: the
    testbed has no data plane of its own, or it keeps none). Each read gives
    ``{"counters": {name: n}, "drops": {location: n}}``."""
    dp = state.get("dataplane")
    sut = (state.get("config") or {}).get("sut")
    if not dp or sut not in MODULES:
        yield None
        return
    reader = module(sut).reader(dp, state["name"])
    if reader is None:
        yield None
        return
    try:
        yield reader.read
    finally:
        reader.close()


def describe(state: dict[str, Any]) -> list[str]:
    """``testbed show``'s lines of the data plane."""
    dp = state.get("dataplane")
    sut = (state.get("config") or {}).get("sut")
    if not dp or sut not in MODULES:
        return []
    lines = list(module(sut).describe(dp))
    if dp.get("af_xdp"):
        where = ", sut0's NAPI in the generator's send call"
        lines.append(
            f"  wire: {dp.get('wire_qdisc')} in front of sut0's XDP ring, then the AF_XDP "
            f"socket's ring ({dp.get('ring_pkts')} frames): their overflow is SUT ingress "
            f"loss{where}"
        )
    if dp.get("cap"):
        c = dp["cap"]
        lines.append(f"  cap: nft {c['rule']} at {c['where']}, ahead of the nft sink")
    offloads = ", ".join(f"{k} {v}" for k, v in (dp.get("offloads") or {}).items())
    lines.append(f"  {OFFLOAD}: {offloads or 'not set'}")
    return lines


def environment(state: dict[str, Any]) -> dict[str, Any]:
    """What a run records of the data plane: its state and its programs' versions."""
    dp = state.get("dataplane")
    sut = (state.get("config") or {}).get("sut")
    if not dp or sut not in MODULES:
        return {}
    return {"dataplane": {**json.loads(json.dumps(dp)), "version": module(sut).version()}}

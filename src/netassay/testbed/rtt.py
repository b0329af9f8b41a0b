"""The RTT testbed: a kind of testbed that ``testbed.Testbed`` builds and removes.

Two "servers" (namespaces ``sndsrv`` and ``rspsrv``), each with an uplink ``up0``,
joined by a veth "wire". On each server a main endpoint (``sndep``, ``rspep``: the
place of seed 002's main VM) and N background endpoints (``sndbg<i>``, ``rspbg<i>``),
each a namespace with one interface ``eth0`` attached to its server by the data path:

- ``bridge``: a veth pair, the server's end in a Linux bridge with the uplink;
- ``macvlan``: a macvlan device (bridge mode) over the server's uplink;
- ``ipvlan``: an ipvlan device (L2 mode) over the uplink (needs CONFIG_IPVLAN);
- ``veth``: a veth pair routed by the server (no bridge): the server forwards.

A data path is a small class (``PATHS``): VM drivers (tap, macvtap, virtio) are a later
backend of the same shape. The capture points (``capture.POINTS``) hang on the main
endpoints' ``eth0`` and the servers' ``up0``; every name and address is fixed here.
"""

from __future__ import annotations

import gzip
import ipaddress
import logging
import os
import platform
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from netassay import names
from netassay.errors import UsageError
from netassay.proc import run
from netassay.testbed import state as testbed_state
from netassay.testbed.topology import link_mac

log = logging.getLogger("netassay.methods.rtt")

KIND = "rtt"
SIDES = ("snd", "rsp")
MAX_BACKGROUND = names.RTT_MAX_BACKGROUND
UPLINK, EP_DEV, BRIDGE = names.RTT_UPLINK, names.RTT_EP_DEV, "br0"
# Addresses (RFC 2544 range, away from the router testbed's 198.18.0.0/24 and
# 198.19.0.0/24): sender side 198.18.100.0/24, responder side 198.18.101.0/24, one
# /23 subnet on the L2 paths; the routed path's wire is 198.18.102.0/30.
SIDE_NET = {"snd": "198.18.100", "rsp": "198.18.101"}
L2_PREFIX = 23
WIRE_NET = "198.18.102"
MAIN_HOST, GATEWAY_HOST, BG_FIRST_HOST = 2, 1, 10


@dataclass(frozen=True)
class RttTestbedConfig:
    """What an RTT testbed is built from (the run's own knobs are in ``methods.rtt.request``)."""

    __test__ = False
    kind: str = KIND  # the testbed kind (testbed.topology.KINDS)
    path: str = "bridge"  # bridge | macvlan | ipvlan | veth (routed)
    background: int = 0  # background endpoints per server (0..128)
    cpus: str = "auto"  # auto: sender server on CPU 0, responder on CPU 1 (if there)

    def global_sysctls(self) -> dict[str, str]:
        return {}  # everything this testbed sets lives in its own namespaces

    def server_cpus(self) -> dict[str, int | None]:
        """The CPU each server's work runs on (None: not pinned)."""
        n = os.cpu_count() or 1
        if self.cpus == "none":
            return {"snd": None, "rsp": None}
        return {"snd": 0, "rsp": 1 if n >= 2 else 0}


def config_from_state(state: dict[str, Any]) -> RttTestbedConfig:
    known = {f.name for f in fields(RttTestbedConfig)}
    return RttTestbedConfig(**{k: v for k, v in state["config"].items() if k in known})


# -- names and addresses -------------------------------------------------------------
def endpoints(cfg: RttTestbedConfig) -> list[tuple[str, str, int]]:
    """(side, role, host number) of every endpoint: the main one first on each side."""
    out = []
    for side in SIDES:
        out.append((side, f"{side}ep", MAIN_HOST))
        out += [(side, f"{side}bg{i}", BG_FIRST_HOST + i) for i in range(cfg.background)]
    return out


def roles(cfg: RttTestbedConfig) -> list[str]:
    return [f"{s}srv" for s in SIDES] + [role for _, role, _ in endpoints(cfg)]


def address(side: str, host: int) -> str:
    addr = f"{SIDE_NET[side]}.{host}"
    if ipaddress.ip_address(addr) not in names.BENCH_V4:  # a guard against edits
        raise UsageError(f"address {addr} is outside {names.BENCH_V4}", "", "fix SIDE_NET")
    return addr


def server_dev(role: str) -> str:
    """The server-side name of an endpoint's link (veth peer, or macvlan before moving)."""
    return "vmm" if role.endswith("ep") else "vb" + role[len("sndbg") :]


# -- the data paths ------------------------------------------------------------------
class DataPath:
    """How an endpoint is attached to its server. ``l2``: the endpoints of both servers
    share one subnet across the wire; else each server routes its own subnet."""

    name = ""
    l2 = True
    kernel_option: str | None = None  # a kernel config option the path needs

    def server(self, ns: str) -> None:
        """Set up the server before its endpoints are attached."""

    def attach(self, srv: str, ep: str, role: str) -> None:
        """Create ``eth0`` in endpoint namespace ``ep``, attached to server ``srv``."""
        raise NotImplementedError

    def gateway_mac(self, srv: str, role: str) -> str | None:
        """The MAC an endpoint sends to (routed paths), else None."""
        return None


def _veth_to_server(srv: str, ep: str, role: str) -> None:
    dev = server_dev(role)
    run(["ip", "link", "add", dev, "netns", srv, "type", "veth", "peer", "name", EP_DEV,
         "netns", ep])  # fmt: skip
    run(["ip", "-n", srv, "link", "set", dev, "up"])


def _move_in(srv: str, ep: str, dev: str) -> None:
    run(["ip", "-n", srv, "link", "set", dev, "netns", ep])
    run(["ip", "-n", ep, "link", "set", dev, "name", EP_DEV])


class Bridge(DataPath):
    name = "bridge"

    def server(self, ns: str) -> None:
        run(["ip", "-n", ns, "link", "add", BRIDGE, "type", "bridge", "stp_state", "0",
             "mcast_snooping", "0"])  # fmt: skip
        run(["ip", "-n", ns, "link", "set", UPLINK, "master", BRIDGE])
        run(["ip", "-n", ns, "link", "set", BRIDGE, "up"])

    def attach(self, srv: str, ep: str, role: str) -> None:
        _veth_to_server(srv, ep, role)
        run(["ip", "-n", srv, "link", "set", server_dev(role), "master", BRIDGE])


class _OnUplink(DataPath):
    """A device of type ``name`` in ``mode`` over the server's uplink, moved into the
    endpoint."""

    mode = ""

    def attach(self, srv: str, ep: str, role: str) -> None:
        dev = server_dev(role)
        run(["ip", "-n", srv, "link", "add", dev, "link", UPLINK, "type", self.name,
             "mode", self.mode])  # fmt: skip
        _move_in(srv, ep, dev)


class Macvlan(_OnUplink):
    name = "macvlan"
    kernel_option = "CONFIG_MACVLAN"
    mode = "bridge"


class Ipvlan(_OnUplink):
    name = "ipvlan"
    kernel_option = "CONFIG_IPVLAN"
    mode = "l2"


class VethRouted(DataPath):
    name = "veth"
    l2 = False

    def server(self, ns: str) -> None:
        _sysctl(ns, "net.ipv4.ip_forward", "1")

    def attach(self, srv: str, ep: str, role: str) -> None:
        _veth_to_server(srv, ep, role)

    def gateway_mac(self, srv: str, role: str) -> str | None:
        return link_mac(srv, server_dev(role))


PATHS: dict[str, DataPath] = {p.name: p for p in (Bridge(), Macvlan(), Ipvlan(), VethRouted())}


def kernel_lacks(option: str) -> bool:
    """True when the running kernel's config says ``option`` is not built (unknown: False)."""
    for path in (Path("/proc/config.gz"), Path(f"/boot/config-{platform.release()}")):
        try:
            raw = path.read_bytes()
        except OSError:
            continue
        text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode(errors="replace")
        return f"\n{option}=y" not in text and f"\n{option}=m" not in text
    return False


# -- validation, build ---------------------------------------------------------------
def validate(cfg: RttTestbedConfig) -> None:
    """Refuse a testbed that cannot be built here, before anything is touched."""
    if cfg.path not in PATHS:
        raise UsageError(
            f"unknown data path '{cfg.path}'",
            f"known: {', '.join(PATHS)}",
            "pick one (VM drivers such as virtio or macvtap are not available here: no KVM)",
        )
    option = PATHS[cfg.path].kernel_option
    if option and kernel_lacks(option):
        raise UsageError(
            f"data path '{cfg.path}' is not available on this kernel",
            f"{platform.release()} is built without {option}",
            f"use another path ({', '.join(p for p in PATHS if p != cfg.path)})",
        )
    if not 0 <= cfg.background <= MAX_BACKGROUND:
        raise UsageError(
            f"bad number of background endpoints {cfg.background}",
            f"0..{MAX_BACKGROUND} per server",
            "e.g. 8 or 32",
        )
    if cfg.cpus not in ("auto", "none"):
        raise UsageError(f"bad cpus '{cfg.cpus}'", "auto or none", "leave it at auto")


def _sysctl(ns: str, key: str, value: str) -> None:
    run(["sysctl", "-q", "-w", f"{key}={value}"], netns=ns)


_NS_SYSCTLS = (
    "net.ipv6.conf.default.disable_ipv6=1",  # no IPv6 ND/MLD chatter
    "net.ipv6.conf.all.disable_ipv6=1",
    "net.ipv4.conf.all.rp_filter=0",
    "net.ipv4.conf.default.rp_filter=0",
)


def _namespace(ns: str) -> None:
    run(["ip", "netns", "add", ns])
    run(["sysctl", "-q", "-w", *_NS_SYSCTLS], netns=ns)
    run(["ip", "-n", ns, "link", "set", "lo", "up"])


def _neigh(ns: str, addr: str, lladdr: str) -> None:
    run(["ip", "-n", ns, "neigh", "replace", addr, "lladdr", lladdr, "dev", EP_DEV, "nud",
         "permanent"])  # fmt: skip


def _rps(ns: str, dev: str, cpu: int | None) -> dict[str, str]:
    """Steer the receive work of ``dev`` to ``cpu`` (RPS), as a server owns its CPUs."""
    if cpu is None:
        return {}
    mask = format(1 << cpu, "x")
    run(["tee", f"/sys/class/net/{dev}/queues/rx-0/rps_cpus"], netns=ns, input_text=mask + "\n")
    return {f"{ns}:{dev}": mask}


def build(name: str, cfg: RttTestbedConfig) -> dict[str, Any]:
    """Create the RTT testbed; return its state (also written to the run directory)."""
    validate(cfg)
    ns = {role: names.netns(name, role) for role in roles(cfg)}
    state = testbed_state.begin_state(name, KIND, asdict(cfg), ns)
    for n in ns.values():
        _namespace(n)
    path = PATHS[cfg.path]
    snd, rsp = ns["sndsrv"], ns["rspsrv"]
    run(["ip", "link", "add", UPLINK, "netns", snd, "type", "veth", "peer", "name", UPLINK,
         "netns", rsp])  # fmt: skip
    for srv in (snd, rsp):
        run(["ip", "-n", srv, "link", "set", UPLINK, "up"])
        path.server(srv)
    for side, role, _ in endpoints(cfg):
        path.attach(ns[f"{side}srv"], ns[role], role)
        run(["ip", "-n", ns[role], "link", "set", EP_DEV, "up"])
    macs = {role: link_mac(ns[role], EP_DEV) for _, role, _ in endpoints(cfg)}
    macs.update({f"{s}srv": link_mac(ns[f"{s}srv"], UPLINK) for s in SIDES})
    peers = _addresses(cfg, ns, macs)
    if cfg.background:
        _background_sinks(cfg, ns)
    cpus = cfg.server_cpus()
    rps: dict[str, str] = {}
    for side in SIDES:
        rps.update(_rps(ns[f"{side}srv"], UPLINK, cpus[side]))
    for side, role, _ in endpoints(cfg):
        rps.update(_rps(ns[role], EP_DEV, cpus[side]))
        if isinstance(path, Bridge | VethRouted):  # the server's end of the endpoint's veth
            rps.update(_rps(ns[f"{side}srv"], server_dev(role), cpus[side]))
    for side in SIDES:  # the capture points' hooks (rtt.capture attaches the programs)
        run(["tc", "-n", ns[f"{side}ep"], "qdisc", "add", "dev", EP_DEV, "clsact"])
        run(["tc", "-n", ns[f"{side}srv"], "qdisc", "add", "dev", UPLINK, "clsact"])
    state.update(
        macs=macs,
        cpus=cpus,
        rps=rps,
        peers=peers,
    )
    testbed_state.write_state(name, state)
    return state


def _addresses(
    cfg: RttTestbedConfig, ns: dict[str, str], macs: dict[str, str]
) -> dict[str, dict[str, str]]:
    """Addresses, routes and static neighbours (no address resolution during a run);
    returns each endpoint's peer: its own address, the peer's, the next hop's MAC."""
    path = PATHS[cfg.path]
    eps = endpoints(cfg)
    peer_of = {(side, host): role for side, role, host in eps}
    peers = {}
    for side, role, host in eps:
        other = "rsp" if side == "snd" else "snd"
        peer = peer_of[(other, host)]
        plen = L2_PREFIX if path.l2 else 24
        run(["ip", "-n", ns[role], "addr", "add", f"{address(side, host)}/{plen}", "dev", EP_DEV])
        if path.l2:
            # ipvlan endpoints answer with their uplink's MAC (they share it)
            lladdr = macs[f"{other}srv"] if path.name == "ipvlan" else macs[peer]
            _neigh(ns[role], address(other, host), lladdr)
        else:
            gw = address(side, GATEWAY_HOST)
            srv, dev = ns[f"{side}srv"], server_dev(role)
            run(["ip", "-n", srv, "addr", "add", f"{gw}/32", "dev", dev])
            run(["ip", "-n", srv, "route", "add", f"{address(side, host)}/32", "dev", dev])
            run(["ip", "-n", srv, "neigh", "replace", address(side, host), "lladdr",
                 macs[role], "dev", dev, "nud", "permanent"])  # fmt: skip
            run(["ip", "-n", ns[role], "route", "add", str(names.BENCH_V4), "via", gw, "dev",
                 EP_DEV])  # fmt: skip
            lladdr = str(path.gateway_mac(srv, role))
            _neigh(ns[role], gw, lladdr)
        peers[role] = {"src": address(side, host), "dst": address(other, host),
                       "dst_mac": lladdr}  # fmt: skip
    if path.l2:
        if path.name == "bridge":
            _fdb(cfg, ns, macs)
        return peers
    for side, host in (("snd", 1), ("rsp", 2)):
        other, other_host = ("rsp", 2) if side == "snd" else ("snd", 1)
        srv = ns[f"{side}srv"]
        run(["ip", "-n", srv, "addr", "add", f"{WIRE_NET}.{host}/30", "dev", UPLINK])
        run(["ip", "-n", srv, "route", "add", f"{SIDE_NET[other]}.0/24", "via",
             f"{WIRE_NET}.{other_host}"])  # fmt: skip
        run(["ip", "-n", srv, "neigh", "replace", f"{WIRE_NET}.{other_host}", "lladdr",
             macs[f"{other}srv"], "dev", UPLINK, "nud", "permanent"])  # fmt: skip
    return peers


def _fdb(cfg: RttTestbedConfig, ns: dict[str, str], macs: dict[str, str]) -> None:
    """Static bridge entries, so that no frame of a run is flooded to every port."""
    for srv_side in SIDES:
        lines = []
        for side, role, _ in endpoints(cfg):
            port = server_dev(role) if side == srv_side else UPLINK
            lines.append(f"fdb replace {macs[role]} dev {port} master static")
        run(["bridge", "-n", ns[f"{srv_side}srv"], "-batch", "-"], input_text="\n".join(lines))


def _background_sinks(cfg: RttTestbedConfig, ns: dict[str, str]) -> None:
    """Background endpoints drop the background traffic they receive (UDP to the discard
    port) after the IP layer, without answering it with ICMP."""
    rules = (
        "table inet na_bg {\n chain na_in {\n"
        "  type filter hook input priority 0; policy accept;\n"
        "  udp dport 9 counter drop\n }\n}\n"
    )
    for _, role, _ in endpoints(cfg):
        if "bg" in role:
            run(["nft", "-f", "-"], netns=ns[role], input_text=rules)

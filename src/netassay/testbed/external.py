"""The external testbed: a SUT netassay does not manage, between two local ports.

    netassay-gen --> tx port ==> [ the SUT: a router anywhere ] ==> rx port --> XDP sink

``netassay testbed external --tx IF --rx IF --dst-mac MAC --src A --dst B --name N``
registers one (a state file in the run directory, like every testbed): it never builds,
changes or deletes an interface. It reads the ports (they must exist and be up), checks
the path with a probe burst (``testbed.pathcheck``) and measures the generator's peak
through it. ``down`` and ``cleanup`` forget it and detach what netassay attached: the
XDP sink on the rx port, and only while a run holds it.

A trial on it (``trials_on``) counts test frames only at the sink (netassay-gen's XDP
program: its payload magic and the frame size, never the interface totals), reads the
two ports' kernel counters and ``ethtool -S`` before and after, and the SUT's own
counters through ``--sut-counters-cmd``. The lost frames are split by location:
``unsent``, ``gen_egress`` (the local tx port dropped them), ``between_ports`` (the SUT,
its cabling or its far-side NIC: netassay cannot see further) and ``sink_ingress`` (the
local rx port dropped them: the SUT forwarded them). Before every run the path is
checked again; the local NICs (driver, firmware, rings, offloads, IRQ affinity) go into
the run's environment record, with the line rate (``testbed.linerate``).

``sweep --bidirectional`` adds the reverse direction (``reverse_path``): a generator on
the rx port sending back to ``--src`` through the SUT, its path checked the same way,
and a second XDP sink on the tx port; each direction's loss is split by its own ports'
sides (``PortCounters.locate_both``).
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

from netassay import names
from netassay.counters import ethtool, sutcmd
from netassay.counters.sink import SinkCounter, stop_stale_sinks
from netassay.counters.snapshot import Snapshot
from netassay.errors import TestbedError, UsageError
from netassay.proc import run
from netassay.testbed import linerate, pathcheck
from netassay.testbed import state as testbed_state
from netassay.testbed.bed import Testbed
from netassay.testbed.topology import validate_frames
from netassay.units import utc_now

if TYPE_CHECKING:
    from netassay.testbed.bed import Testbed

KIND = "external"
SINKS = ("xdp",)
# what the kernel takes as an interface name (dev_valid_name): 1-15 bytes, not . or ..,
# no '/', ':' or white space; netassay takes the usual characters only
_IFNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@-]{0,14}")
_NETNS = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_MAC = re.compile(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}")


@dataclass(frozen=True)
class ExternalConfig:
    """What an external testbed is: its two local ports, the traffic through the SUT."""

    __test__ = False
    kind: str = KIND
    tx: str = ""  # the local port netassay-gen sends on
    rx: str = ""  # the local port the sink counts on
    dst_mac: str = ""  # the SUT's MAC on the tx side (where the frames are sent to)
    src: str = ""
    dst: str = ""
    netns: str | None = None  # the ports' network namespace (None: the host's own)
    expect_mac: str | None = None  # what the probes must come back to (None: rx's MAC)
    allow_any_destination: bool = False
    ip_version: int = 4
    size_bytes: int = names.MIN_FRAME
    flows: int = 1
    sink: str = "xdp"
    sut_counters_cmd: str | None = None
    gen_cpu: int | None = None  # the CPU netassay-gen is pinned to (None: not pinned)

    @property
    def sut(self) -> str:
        return KIND

    @property
    def pinning(self) -> str:
        return "none"  # netassay pins nothing on a host it does not own

    def global_sysctls(self) -> dict[str, str]:
        return {}  # it changes nothing on the host


def make_config(**flags: Any) -> ExternalConfig:
    """An external config from command-line values (``ip_version`` from ``--src``)."""
    kv = {k: v for k, v in flags.items() if v is not None}
    for key in ("dst_mac", "expect_mac"):
        if key in kv:
            kv[key] = str(kv[key]).lower()
    try:
        kv["ip_version"] = ipaddress.ip_address(kv.get("src", "")).version
    except ValueError:
        kv["ip_version"] = 4  # validate says what is wrong with --src
    kv.setdefault("size_bytes", names.min_frame_bytes(kv["ip_version"]))  # the smallest
    return ExternalConfig(**kv)


def config_from_state(state: dict[str, Any]) -> ExternalConfig:
    known = {f.name for f in fields(ExternalConfig)}
    return ExternalConfig(**{k: v for k, v in state["config"].items() if k in known})


# -- validation (pure: nothing on the host is read) -----------------------------------
def _bad(what: str, why: str, todo: str) -> UsageError:
    return UsageError(what, why, todo)


def _check_ifname(value: str, flag: str) -> None:
    if not _IFNAME.fullmatch(value or ""):
        raise _bad(
            f"bad {flag} {value!r}",
            "an interface name is 1-15 letters, digits or _ . @ - (no / : or spaces)",
            f"give the port's name as 'ip link' shows it (e.g. {flag} enp1s0f0)",
        )


def _check_mac(value: str, flag: str, unicast: bool = True) -> None:
    if not _MAC.fullmatch(value or ""):
        raise _bad(f"bad {flag} {value!r}", "a MAC is six hex pairs", "e.g. 3c:fd:fe:aa:bb:cc")
    if unicast and (int(value[:2], 16) & 1 or value == "00:00:00:00:00:00"):
        raise _bad(
            f"bad {flag} {value}",
            "it is a multicast, broadcast or zero MAC: test traffic would flood",
            "give the SUT port's own (unicast) MAC",
        )


def _check_addresses(cfg: ExternalConfig) -> None:
    try:
        src, dst = ipaddress.ip_address(cfg.src), ipaddress.ip_address(cfg.dst)
    except ValueError as exc:
        raise _bad("bad --src or --dst", str(exc), "give two IPv4 or two IPv6 addresses") from exc
    if src.version != dst.version or cfg.ip_version != dst.version:
        raise _bad(
            f"--src {cfg.src} and --dst {cfg.dst} are of different IP versions",
            "a flow is IPv4 or IPv6",
            "give two of the same version",
        )
    net = names.BENCH_V4 if dst.version == 4 else names.BENCH_V6
    if dst not in net and not cfg.allow_any_destination:
        raise _bad(
            f"refusing --dst {cfg.dst}: it is outside the benchmarking range {net}",
            "test traffic to another address could flood a real network",
            "use an address in 198.18.0.0/15 or 2001:2::/48, or add --allow-any-destination",
        )


def validate(cfg: ExternalConfig) -> None:
    """Refuse a config that makes no sense, with one line, before anything is touched."""
    _check_ifname(cfg.tx, "--tx")
    _check_ifname(cfg.rx, "--rx")
    if cfg.tx == cfg.rx:
        raise _bad(
            f"--tx and --rx are both {cfg.tx}",
            "the generator and the sink need a port each",
            "give two ports",
        )
    if cfg.netns is not None and not _NETNS.fullmatch(cfg.netns):
        raise _bad(f"bad --netns {cfg.netns!r}", "not a network namespace name", "see 'ip netns'")
    _check_mac(cfg.dst_mac, "--dst-mac")
    if cfg.expect_mac is not None:
        _check_mac(cfg.expect_mac, "--expect-mac")
    _check_addresses(cfg)
    validate_frames(cfg.ip_version, cfg.size_bytes, cfg.flows)
    if cfg.sink not in SINKS:
        raise _bad(
            f"sink '{cfg.sink}' is not available on an external testbed",
            "it counts with netassay-gen's XDP program on the rx port",
            "use --sink xdp",
        )
    if cfg.sut_counters_cmd is not None:
        sutcmd.parse_command(cfg.sut_counters_cmd)
    cpus = os.cpu_count() or 1
    if cfg.gen_cpu is not None and not 0 <= cfg.gen_cpu < cpus:
        raise _bad(f"bad --cpu {cfg.gen_cpu}", f"this machine has CPUs 0..{cpus - 1}", "e.g. 0")


# -- the ports, read (never changed) -----------------------------------------------
def _where(cfg: ExternalConfig) -> str:
    return f"network namespace '{cfg.netns}'" if cfg.netns else "the host's network namespace"


def _ip_link(dev: str, netns: str | None, *extra: str) -> dict[str, Any] | None:
    argv = ["ip", *(["-n", netns] if netns else []), "-j", *extra, "link", "show", "dev", dev]
    res = run(argv, check=False, timeout=10)
    if res.returncode != 0 or not res.stdout.strip():
        return None
    return dict(json.loads(res.stdout)[0])


def read_port(dev: str, cfg: ExternalConfig) -> dict[str, Any]:
    """One port as it is now: it must exist and be up; it must carry no XDP program of
    someone else's (the sink needs the rx port's hook)."""
    link = _ip_link(dev, cfg.netns, "-d")
    if link is None:
        raise TestbedError(
            f"no interface '{dev}' in {_where(cfg)}",
            "an external testbed uses ports that exist (netassay never creates them)",
            "check the name with 'ip link'" + (f" in {cfg.netns}" if cfg.netns else ""),
        )
    if "UP" not in link.get("flags", []):
        raise TestbedError(
            f"port {dev} is down",
            "netassay does not change the interfaces it is given",
            f"bring it up first ('ip link set {dev} up')",
        )
    reported = linerate.parse_speed(ethtool.read_sys(f"/sys/class/net/{dev}/speed", cfg.netns))
    virtual = ethtool.is_virtual(dev, cfg.netns)
    return {
        "dev": dev,
        "ifindex": link.get("ifindex"),
        "mac": str(link.get("address", "")).lower(),
        "mtu": link.get("mtu"),
        "operstate": link.get("operstate"),
        "kind": (link.get("linkinfo") or {}).get("info_kind"),
        "speed_mbps": None if virtual else reported,  # a virtual port's speed bounds nothing
        "reported_speed_mbps": reported,
        "virtual": virtual,
        "xdp_prog": (link.get("xdp") or {}).get("prog", {}).get("id"),
    }


def _refuse_forwarding(cfg: ExternalConfig) -> None:
    """Test frames that reach the rx port while no sink is attached (the path check, the
    peak probe) go up the host's stack: a host that forwards would route them on."""
    fam = "ipv6" if cfg.ip_version == 6 else "ipv4"
    key = f"net.{fam}.conf.{cfg.rx}.forwarding"
    value = ethtool.read_sys(f"/proc/sys/net/{fam}/conf/{cfg.rx}/forwarding", cfg.netns)
    if value == "1":
        raise TestbedError(
            f"the rx port {cfg.rx} forwards ({key}=1)",
            "test frames reaching it could be routed on by this host",
            f"turn it off ('sysctl -w {key}=0') on a port dedicated to the test",
        )


def read_ports(cfg: ExternalConfig, busy_rx_ok: bool = False) -> dict[str, dict[str, Any]]:
    ports = {"tx": read_port(cfg.tx, cfg), "rx": read_port(cfg.rx, cfg)}
    if ports["rx"]["xdp_prog"] and not busy_rx_ok:
        raise TestbedError(
            f"the rx port {cfg.rx} already runs an XDP program (id {ports['rx']['xdp_prog']})",
            "netassay's sink counts test frames with its own XDP program there",
            "detach the other program, or use another port",
        )
    _refuse_forwarding(cfg)
    return ports


def line_rate(cfg: ExternalConfig, ports: dict[str, dict[str, Any]]) -> linerate.LineRate:
    return linerate.of_ports({p["dev"]: p["speed_mbps"] for p in ports.values()}, cfg.size_bytes)


def gen_flags(cfg: ExternalConfig) -> list[str]:
    """netassay-gen's flags here: the host's namespace and a destination outside the
    benchmarking ranges only when the user said so. No --qdisc: a send the NIC refuses
    is retried, so what the tx port drops is the port's own loss."""
    return [
        *([] if cfg.netns else ["--allow-host-netns"]),
        *(["--allow-any-dst"] if cfg.allow_any_destination else []),
    ]


# -- the lifecycle hooks (testbed.topology.KINDS) -----------------------------------
def build(name: str, cfg: ExternalConfig) -> dict[str, Any]:
    """Register the testbed: read its ports and write its state. Nothing is created."""
    validate(cfg)
    ports = read_ports(cfg)
    state: dict[str, Any] = {
        "name": name,
        "kind": KIND,
        "config": asdict(cfg),
        "namespaces": {},  # none of its own: cleanup never deletes anything of it
        "pid": os.getpid(),
        "sysctls": {},
        "persistent": False,
        "registered_utc": utc_now(),
        "ports": ports,
        "line_rate": line_rate(cfg, ports).as_json(),
        "gen_flags": gen_flags(cfg),
        "gen_cpu": cfg.gen_cpu,
        "target": {
            "netns": cfg.netns,
            "dev": cfg.tx,
            "dst_mac": cfg.dst_mac,
            "src": cfg.src,
            "dst": cfg.dst,
        },
    }
    testbed_state.write_state(name, state)
    return state


def check_path(tb: Testbed) -> dict[str, Any]:
    """Send the probe burst and judge what came back; raise when the path is wrong.
    The result is kept in the testbed's state (``path_check``)."""
    cfg: ExternalConfig = tb.cfg
    expect = cfg.expect_mac or tb.state["ports"]["rx"]["mac"]
    rec = pathcheck.probe(
        lambda rate, dur: tb.send(rate, dur).sent,
        cfg.rx,
        cfg.netns,
        expect,
        cfg.dst,
        cfg.ip_version == 6,
    )
    rec["utc"] = utc_now()
    tb.state["path_check"] = rec
    testbed_state.write_state(tb.name, tb.state)
    if not rec["ok"]:
        raise pathcheck.failure(rec, cfg.src, cfg.dst)
    return rec


def check_open(tb: Testbed) -> None:
    """Before a run: the ports are still the ones registered, and the path still routes.
    A sink a killed run left on the rx port is detached first (the lock is held)."""
    cfg: ExternalConfig = tb.cfg
    forget(tb.state)
    for key in ("reverse", "reverse_path_check"):  # a --bidirectional run's: set again by one
        tb.state.pop(key, None)
    ports = read_ports(cfg)
    for role, port in ports.items():
        was = tb.state["ports"][role]
        if (port["ifindex"], port["mac"]) != (was["ifindex"], was["mac"]):
            raise TestbedError(
                f"port {port['dev']} of testbed '{tb.name}' changed since it was registered",
                f"ifindex/MAC {was['ifindex']}/{was['mac']} -> {port['ifindex']}/{port['mac']}",
                f"register it again ('netassay testbed down {tb.name}', then "
                "'netassay testbed external ...')",
            )
    tb.state["ports"] = ports
    tb.state["line_rate"] = line_rate(cfg, ports).as_json()
    check_path(tb)


def forget(state: dict[str, Any]) -> None:
    """On down and cleanup: detach the sinks a killed run may have left on the rx port
    (and on the tx port: ``--bidirectional``'s). Nothing else was ever changed."""
    cfg = config_from_state(state)
    stop_stale_sinks(cfg.netns, cfg.rx)
    stop_stale_sinks(cfg.netns, cfg.tx)


# -- --bidirectional: the reverse direction, rx port -> SUT -> tx port -------------------
def sut_mac_on_rx(state: dict[str, Any]) -> str | None:
    """The MAC the forward probes came back from: the SUT's port on the rx side, where
    the reverse direction is sent to (None: no path check has seen one)."""
    macs = (state.get("path_check") or {}).get("src_macs") or {}
    return max(macs, key=lambda m: macs[m]) if macs else None


def _refuse_reverse(cfg: ExternalConfig, ports: dict[str, dict[str, Any]]) -> None:
    """What the reverse direction needs of the ports and addresses, or one line."""
    src = ipaddress.ip_address(cfg.src)
    net = names.BENCH_V4 if src.version == 4 else names.BENCH_V6
    if src not in net and not cfg.allow_any_destination:
        raise _bad(
            f"refusing --bidirectional to --src {cfg.src}: it is outside the benchmarking "
            f"range {net}",
            "the reverse direction is sent back to --src",
            "register the testbed with --src in 198.18.0.0/15 or 2001:2::/48, or with "
            "--allow-any-destination",
        )  # fmt: skip
    if ports["tx"]["xdp_prog"]:
        raise TestbedError(
            f"the tx port {cfg.tx} already runs an XDP program (id {ports['tx']['xdp_prog']})",
            "--bidirectional counts the reverse direction with netassay's sink there",
            "detach the other program, or drop --bidirectional",
        )  # fmt: skip
    fam = "ipv6" if cfg.ip_version == 6 else "ipv4"
    if ethtool.read_sys(f"/proc/sys/net/{fam}/conf/{cfg.tx}/forwarding", cfg.netns) == "1":
        raise TestbedError(
            f"the tx port {cfg.tx} forwards (net.{fam}.conf.{cfg.tx}.forwarding=1)",
            "with --bidirectional test frames reach it and could be routed on by this host",
            f"turn it off ('sysctl -w net.{fam}.conf.{cfg.tx}.forwarding=0')",
        )  # fmt: skip


def reverse_path(tb: Testbed) -> None:
    """``--bidirectional``: the reverse direction's generator on the rx port, sending
    back to ``--src`` through the SUT's MAC the forward probes came back from, and its
    sink on the tx port; checked as the forward path is (a probe burst that must come
    back at the tx port, routed), before any sink is attached. Its target, its sink's
    port and the check are kept in the state (``reverse``, ``reverse_path_check``)."""
    cfg: ExternalConfig = tb.cfg
    ports = read_ports(cfg)
    _refuse_reverse(cfg, ports)
    mac = sut_mac_on_rx(tb.state)
    if mac is None:
        raise TestbedError(
            "--bidirectional: the SUT's MAC on the rx side is unknown",
            "it is learnt from the path check's probes, and none came back",
            f"check the path ('netassay testbed down {tb.name}', then register it again)",
        )  # fmt: skip
    tb.state["reverse"] = {
        "target": {"netns": cfg.netns, "dev": cfg.rx, "dst_mac": mac, "src": cfg.dst,
                   "dst": cfg.src},
        "sink": {"netns": cfg.netns, "dev": cfg.tx},
    }  # fmt: skip
    rec = pathcheck.probe(
        lambda rate, dur: tb.send(rate, dur, reverse=True).sent,
        cfg.tx, cfg.netns, ports["tx"]["mac"], cfg.src, cfg.ip_version == 6,
    )  # fmt: skip
    rec["utc"] = utc_now()
    tb.state["reverse_path_check"] = rec
    testbed_state.write_state(tb.name, tb.state)
    if not rec["ok"]:
        raise TestbedError(
            f"reverse path check failed: {rec['problem']}",
            f"netassay-gen sent {rec['sent']} probe frames {cfg.dst} -> {cfg.src} on "
            f"{cfg.rx} to the SUT's MAC {mac}",
            f"check that the SUT routes {cfg.src} back to the tx port (its route, its "
            "neighbour entry), or drop --bidirectional",
        )  # fmt: skip


@contextmanager
def data_path(tb: Testbed, latency: bool = False) -> Iterator[tuple[SinkCounter, PortCounters]]:
    """What trials on an external testbed need (``trial.engine.trials_on``): the XDP
    sink on the rx port (attached for as long as they run; with ``latency`` it keeps
    each frame's one-way latency too: the generator and the sink share this host's
    clock) and the ports' counters."""
    cfg: ExternalConfig = tb.cfg
    with SinkCounter(cfg.netns, cfg.sink, cfg.size_bytes, dev=cfg.rx, latency=latency) as sink:
        yield sink, PortCounters(cfg)


def environment(tb: Testbed) -> dict[str, Any]:
    """The run's record of the local NICs, the line rate, the last path check and the
    peak measured at registration."""
    cfg: ExternalConfig = tb.cfg
    return {
        "external": {
            "ports": {role: ethtool.nic_info(dev, cfg.netns) for role, dev in _devs(cfg)},
            "line_rate": tb.state.get("line_rate"),
            "path_check": tb.state.get("path_check"),
            **(
                {"reverse_path_check": tb.state["reverse_path_check"]}
                if "reverse_path_check" in tb.state
                else {}
            ),
            "registered_peak_pps": tb.state.get("generator_peak_pps"),
            "sut_counters_cmd": cfg.sut_counters_cmd,
        }
    }


def _devs(cfg: ExternalConfig) -> tuple[tuple[str, str], tuple[str, str]]:
    return (("tx", cfg.tx), ("rx", cfg.rx))


# -- the data path: counters and the loss split ----------------------------------------
def link_stats(dev: str, netns: str | None) -> dict[str, int]:
    """A port's kernel counters (``ip -s -s``: drops, errors, missed) as flat fields."""
    link = _ip_link(dev, netns, "-s", "-s") or {}
    st = link.get("stats64") or link.get("stats") or {}
    return {
        f"{side}_{k}": int(v)
        for side in ("rx", "tx")
        for k, v in (st.get(side) or {}).items()
        if isinstance(v, int)
    }


class PortCounters:
    """The external testbed's counters (a ``trial.engine.PathCounters``)."""

    def __init__(self, cfg: ExternalConfig) -> None:
        self.cfg = cfg
        self.argv = sutcmd.parse_command(cfg.sut_counters_cmd) if cfg.sut_counters_cmd else None

    def snapshot(self, sink: SinkCounter | None) -> Snapshot:
        """The ports' kernel counters and ``ethtool -S``, the SUT's counters, the sink's
        count: in the shape ``counters.loss.flatten`` reads (roles ``tx``, ``rx``)."""
        cfg = self.cfg
        snap: Snapshot = {
            "utc": utc_now(),
            "ns": {role: {"links": {dev: link_stats(dev, cfg.netns)}} for role, dev in _devs(cfg)},
            "ethtool": {dev: ethtool.stats(dev, cfg.netns) for _, dev in _devs(cfg)},
        }
        if self.argv:
            snap["sut_counters"] = sutcmd.read(self.argv)
        if sink is not None:
            xdp = sink.read()
            if xdp:
                snap["sink_xdp"] = xdp
        return snap

    def locate_loss(
        self,
        planned: int,
        sent: int,
        received: int,
        d: dict[str, int],
        ip_version: int = 4,
        retries: int = 0,
    ) -> dict[str, int]:
        """Lost test frames by location (see the module's docstring). The local ports'
        counters count every frame, not only test frames: when they explain more than
        was lost, the excess is ``unaccounted`` (negative: a counter fault)."""
        return _split(("tx", self.cfg.tx), ("rx", self.cfg.rx), planned, sent, received, d, retries)

    def locate_both(
        self, fwd: tuple[int, int, int, int], rev: tuple[int, int, int, int],
        d: dict[str, int], ip_version: int = 4,
    ) -> tuple[dict[str, int], dict[str, int]]:  # fmt: skip
        """``--bidirectional``: each direction's split, ``fwd`` and ``rev`` each (planned,
        sent, received, retries). The forward direction's as ``locate_loss``; the reverse
        one's the other way round: its generator's port is the rx port (its transmit
        drops), its sink's the tx port (its receive drops)."""
        tx, rx = ("tx", self.cfg.tx), ("rx", self.cfg.rx)
        return _split(tx, rx, *fwd[:3], d, fwd[3]), _split(rx, tx, *rev[:3], d, rev[3])

    def trial_counters(self, before: Snapshot, after: Snapshot) -> tuple[dict[str, Any], list[str]]:
        """What a trial stores beyond the flat deltas: ``ethtool -S`` deltas per port and
        the SUT's counters (verbatim and as deltas), with a warning if those failed."""
        out: dict[str, Any] = {
            "ethtool": {
                dev: ethtool.deltas(before["ethtool"].get(dev, {}), after["ethtool"].get(dev, {}))
                for dev in after.get("ethtool", {})
            }
        }
        warnings: list[str] = []
        if self.argv:
            out["sut_counters"], warnings = sutcmd.trial_record(
                self.argv, before.get("sut_counters", {}), after.get("sut_counters", {})
            )
        return out, warnings


def _split(
    gen: tuple[str, str], sink: tuple[str, str], planned: int, sent: int, received: int,
    d: dict[str, int], retries: int,
) -> dict[str, int]:  # fmt: skip
    """One direction's lost frames by location: ``gen`` and ``sink`` are the (role,
    port) its generator sends on and its sink counts on."""

    def g(key: str) -> int:
        return int(d.get(key, 0))

    (gr, gd), (sr, sd) = gen, sink
    # a send the port refused was retried by the generator, not lost
    local_tx = max(0, g(f"{gr}/link/{gd}/tx_dropped") + g(f"{gr}/link/{gd}/tx_errors") - retries)
    local_rx = g(f"{sr}/link/{sd}/rx_dropped") + g(f"{sr}/link/{sd}/rx_missed_errors")
    between = (sent - received) - local_tx - local_rx
    return {
        "unsent": max(0, planned - sent),
        "gen_egress": local_tx,
        "between_ports": max(0, between),
        "sink_ingress": local_rx,
        "unaccounted": min(0, between),
    }


# -- registration and 'testbed show' ------------------------------------------------
def register(name: str, cfg: ExternalConfig) -> dict[str, Any]:
    """``netassay testbed external``: register, check the path, measure the generator's
    peak through it (with the sink attached, so the frames end at the rx port); the
    state it leaves says all three. Any failure leaves nothing registered."""
    with Testbed(name, cfg, keep=True) as tb:
        check_path(tb)
        with data_path(tb):
            peak = tb.probe_peak()
        tb.state["generator_peak_pps"] = peak
        tb.state["generator_peak_utc"] = utc_now()
        testbed_state.write_state(name, tb.state)
        return dict(tb.state)

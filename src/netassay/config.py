"""Typed, frozen configuration: defaults, then a TOML file, then flags.

The file's keys are the command line's and a campaign file's (``size = 128``, ``ip =
6``, ``duration = "2s"``), in sections [analysis], [testbed], [cluster] (``tls_dir``:
the certificates of a campaign's scheduler, workers and coordinator) and one per method
([sweep], [search], [rtt], [accept]). Unknown sections or keys are rejected with one
clear line naming the file's line. ``netassay config show`` prints what is in force.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import re
import warnings
from dataclasses import dataclass, field, fields, replace
from typing import Any

from netassay import tomlfile
from netassay.errors import InputError, UsageError
from netassay.imix import Mix, parse_imix, spec
from netassay.names import MAX_FRAME, MIN_FRAME, min_frame_bytes
from netassay.params import (
    RATE,
    Param,
    as_text,
    choice,
    declared,
    fraction,
    param,
    spelling_hint,
    whole,
)
from netassay.units import parse_rate, parse_whole

MODES = ("described", "published")
AUTO = "auto"
PINNINGS = (AUTO, "unpinned", "pin-1cpu", "pin-2cpu")
SUTS = ("router", "bridge", "xdp-router", "ovs", "testpmd", "l3fwd", "exec")
# the SUTs a program of their own forwards (testbed.dataplane): Open vSwitch's userspace
# datapath, DPDK's testpmd and l3fwd, and whatever the user's --sut-setup script starts
DATAPLANES = ("ovs", "testpmd", "l3fwd", "exec")
OVS_PORTS = ("afxdp", "afxdp-nonpmd", "system")
OVS_FLOWS = ("normal", "ports")
TESTPMD_FWD = ("io", "mac")
DPDK_VDEVS = ("af_xdp", "af_packet")
# each data plane's knobs and their defaults (what ``TestbedConfig.resolved`` fills in);
# afxdp: the fastest port type of the three on this testbed (docs/dataplanes.md)
DATAPLANE_KNOBS: dict[str, dict[str, Any]] = {
    "ovs": {"ovs_port": "afxdp", "ovs_flows": "normal", "ovs_rules": 0},
    "testpmd": {"testpmd_fwd": "io", "dpdk_vdev": "af_xdp"},
    "l3fwd": {"dpdk_vdev": "af_xdp"},
    "exec": {"sut_setup": None},
}
# the scale knobs' ranges (testbed.scale: where the routes and rules go)
MAX_FLOWS = 1_000_000
MAX_ROUTES = 1_000_000  # IPv6's; IPv4 has room for 65,280
MAX_RULES = 1_000_000
MAX_OVS_RULES = 1_000_000
SINKS = ("xdp", "nft", "xdp+nft")
# How the SUT's ingress veth receives (testbed.receive): napi, as a NIC's driver (polled
# in batches on the SUT's CPU, the generator hands it XDP live frames), or backlog
# (each frame handed to the stack by netif_rx on the sender's CPU, netassay's only way
# until 0.2; stored experiments without the knob were measured so)
RX_MODES = ("napi", "backlog")
RX_MODE_BEFORE = "backlog"
# where the SUT's receive work runs (seed 003, section 3.2: interrupt affinity)
RX_AFFINITIES = (AUTO, "bound", "balanced", "none")
# the CPU each pinning gives the generator and the SUT's receive work (None: not pinned)
PIN_CPUS: dict[str, tuple[int | None, int | None]] = {
    "unpinned": (None, None),
    "pin-1cpu": (0, 0),
    "pin-2cpu": (0, 1),
}


def resolve_pinning(pinning: str, cpus: int | None = None) -> tuple[str, str]:
    """The pinning a testbed uses on this machine (``cpus``: its CPU count), and why.

    ``auto`` lets the SUT, not the generator, be the bottleneck: ``pin-2cpu`` (the
    generator on CPU 0, the SUT's receive work on CPU 1) when there are two CPUs or more,
    else ``unpinned`` (with one CPU there is nothing to pin apart). Any other value is
    kept as it is.
    """
    n = cpus if cpus is not None else (os.cpu_count() or 1)
    machine = f"this {n}-CPU machine"
    if n >= 2:
        auto = "pin-2cpu"
        because = (
            "the generator on CPU 0, the SUT's receive work on CPU 1,"
            " so the SUT, not the generator, is the bottleneck"
        )
    else:
        auto = "unpinned"
        because = "pin-2cpu needs a second CPU; the generator and the SUT share the only one"
    if pinning == AUTO:
        return auto, f"{auto}, chosen by 'auto' on {machine}: {because}"
    if pinning == auto:
        return pinning, f"{pinning}, what 'auto' picks on {machine}: {because}"
    return pinning, f"{pinning}, as configured ('auto' would pick {auto} on {machine})"


def cpu_mask(cpus: tuple[int, ...] | list[int]) -> str:
    """A CPU set as an RPS mask is written: hex, in comma-separated 32-bit groups."""
    digits = format(sum(1 << c for c in set(cpus)), "x")
    groups: list[str] = []
    while digits:
        groups.insert(0, digits[-8:])
        digits = digits[:-8]
    return ",".join(groups) or "0"


def resolve_rx_affinity(rx_affinity: str, pinning: str) -> str:
    """``auto`` as the pinning says (bound where it gives the SUT a CPU, else none);
    any other value is kept as it is."""
    if rx_affinity != AUTO:
        return rx_affinity
    return "none" if PIN_CPUS.get(pinning, (None, None))[1] is None else "bound"


def refuse_rx_affinity(pinning: str, rx_affinity: str, cpus: int, sut: str = "router") -> None:
    """Refuse, in one line, an affinity that contradicts the pinning (both resolved) or
    that this machine or SUT cannot have."""
    if rx_affinity not in RX_AFFINITIES:
        raise UsageError(
            f"unknown --rx-affinity '{rx_affinity}'",
            f"known: {', '.join(RX_AFFINITIES)}",
            "pick one",
        )
    sut_cpu = PIN_CPUS.get(pinning, (None, None))[1]
    pair = f"--rx-affinity {rx_affinity} with --pinning {pinning}"
    if rx_affinity == "bound" and sut_cpu is None:
        raise UsageError(
            pair, "unpinned gives the SUT's receive work no CPU to be bound to",
            "use --pinning pin-2cpu (bound to CPU 1) or pin-1cpu (CPU 0)",
        )  # fmt: skip
    if rx_affinity == "none" and sut_cpu is not None:
        raise UsageError(
            pair, f"{pinning} steers the SUT's receive work to CPU {sut_cpu}",
            "use --rx-affinity bound (or auto), or --pinning unpinned",
        )  # fmt: skip
    if rx_affinity != "balanced":
        return
    if pinning == "pin-1cpu":
        raise UsageError(
            pair, "pin-1cpu puts the generator and the SUT's receive work on CPU 0",
            "use --pinning pin-2cpu or unpinned with balanced",
        )  # fmt: skip
    if cpus < 2:
        raise UsageError(
            "--rx-affinity balanced needs 2 CPUs", f"this machine has {cpus}", "use bound"
        )
    if sut == "xdp-router":
        raise UsageError(
            "--rx-affinity balanced with --sut xdp-router",
            "the XDP router runs in sut0's one NAPI poll, which RPS does not spread",
            "use --sut router or bridge, or --rx-affinity bound",
        )


@dataclass(frozen=True)
class AnalysisConfig:
    pdr: float = 0.005  # PDR goal loss ratio (0.5%)
    eta: float = 0.1  # TIR threshold to stay in saturation
    entry_factor: float = 3.0  # enter saturation below entry_factor * eta
    mode: str = "described"  # 'described' (default) or 'published' (the authors' notebook)
    plr_floor: float = 1e-6  # floor of the PLR log axis; the notebook clamps the mean there
    small_loss: float = 1e-4  # flag loads below PDR whose loss is at least this
    wide_ci: float = 1.0  # flag loads below PDR whose Delta_UCL95 exceeds this

    def validate(self) -> None:
        if not 0 < self.pdr < 1:
            raise UsageError(f"bad pdr {self.pdr}", "it is a loss ratio in (0, 1)", "e.g. 0.005")
        if not 0 < self.eta < 1:
            raise UsageError(f"bad eta {self.eta}", "the TIR threshold is in (0, 1)", "e.g. 0.1")
        if self.entry_factor < 1:
            raise UsageError(f"bad entry factor {self.entry_factor}", "it must be >= 1", "e.g. 3")
        if self.mode not in MODES:
            raise UsageError(
                f"unknown mode '{self.mode}'", f"known modes: {', '.join(MODES)}", "pick one"
            )


def count_in(lo: int, hi: int, what: str) -> Any:
    """A whole number written plainly or as 1k, 100k, 1M (k = 1000), in lo..hi: the
    parser of a scale knob (a campaign file's number or text alike)."""

    def parse(v: Any) -> int:
        n = parse_whole(v, what)
        if not lo <= n <= hi:
            raise UsageError(f"bad {what} {n:,}", f"expected {lo:,}..{hi:,}", f"e.g. {lo} or 1k")
        return n

    return parse


def _count_check(lo: int, hi: int, what: str) -> Any:
    parse = count_in(lo, hi, what)

    def check(v: Any) -> int:
        try:
            return int(parse(v))
        except UsageError as exc:
            raise ValueError(exc.why or exc.what) from exc

    return check


def counted(lo: int, hi: int, what: str) -> dict[str, Any]:
    """A scale knob's parse (flag text) and check (a file's value), from one bound."""
    return {"parse": count_in(lo, hi, what), "check": _count_check(lo, hi, what)}


def _flag(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError("expected true or false")
    return v


def _imix_text(v: Any) -> str:
    """A campaign's ``imix``: a mix that parses (its sizes are checked against the cell's
    IP version when the cell runs)."""
    try:
        parse_imix(str(v), 4)
    except UsageError as exc:
        raise ValueError(exc.what) from exc
    return str(v)


@dataclass(frozen=True)
class TestbedConfig:
    """The knobs of the embedded router testbed, each declared once (its flag, help,
    parser and range): 'testbed up', sweep, search and flood take them as flags and a
    campaign file as keys (``params``)."""

    __test__ = False  # not a pytest test class
    sut: str = param(
        "--sut", "router (kernel IP forwarding) | bridge | xdp-router (XDP forwarding) | ovs "
        "(Open vSwitch's userspace datapath) | testpmd | l3fwd (DPDK) | exec (the data plane "
        "--sut-setup starts)",
        default="router", check=choice(*SUTS), testbed=True,
    )  # fmt: skip
    pinning: str = param(
        "--pinning",
        "auto (default: pin-2cpu with 2+ CPUs, else unpinned) | unpinned | pin-1cpu | pin-2cpu",
        default=AUTO, check=choice(*PINNINGS), testbed=True,
    )  # fmt: skip
    ip_version: int = param(
        "--ip", "IP version: 4 or 6.", default=4, cli=int, check=choice(4, 6), testbed=True
    )
    size_bytes: int | None = param(  # frame without FCS; None: the smallest for the IP
        "--size",
        "Frame size in bytes (no FCS); by default the smallest: 64 (IPv4), 84 (IPv6).",
        default=None, cli=int, check=whole(MIN_FRAME, MAX_FRAME), ordinal=True, testbed=True,
    )  # fmt: skip
    imix: str | None = param(  # a frame mix instead of one size (netassay.imix); no --size
        "--imix",
        "A frame mix instead of --size, sent in one fixed repeating order and counted per "
        "size: 'simple' (TRex's imix: 7:4:1 of 64/594/1518 bytes with the FCS, sent as "
        "64/590/1514 without it) or SIZE:WEIGHT,... without the FCS as --size counts, e.g. "
        "64:7,590:4,1514:1.",
        default=None, check=_imix_text, testbed=True, metavar="MIX",
    )  # fmt: skip
    pcap: str | None = param(  # a capture replayed instead of built frames; no --size
        "--pcap",
        "A capture to replay instead of built frames (libpcap as tcpdump writes it, or "
        "pcapng): its Ethernet frames of this IP version, rewritten to the testbed's "
        "addresses, in its order, looped; rates count its frames, loss the UDP frames "
        "netassay marks and counts (docs/pcap.md).",
        default=None, testbed=True, metavar="FILE",
    )  # fmt: skip
    flows: int = param(
        "--flows",
        "Number of UDP flows, distinct 5-tuples (1..1M; 1k, 1M: k = 1000): over the "
        "--routes' destinations first, then source ports, then source addresses, all in "
        "the benchmarking ranges. A list (1,1k,100k,1M) runs a sweep, search or flood "
        "once per count (a scale series).",
        default=1, **counted(1, MAX_FLOWS, "flow count"), ordinal=True, testbed=True,
    )  # fmt: skip
    flow_order: str = param(
        "--flow-order",
        "The order the flows are sent in: incremental (default) | random (a permutation "
        "drawn from --flow-seed, the same for every technique).",
        default="incremental", check=choice("incremental", "random"), testbed=True,
    )  # fmt: skip
    flow_seed: int = param(
        "--flow-seed", "The seed of --flow-order random's permutation (recorded).",
        default=1, cli=int, check=whole(0, 2**63 - 1), testbed=True,
    )  # fmt: skip
    count_flows: bool = param(
        "--count-flows",
        "The XDP sink counts every flow's frames, each checked against the destination "
        "its flow aims at (a frame that came another way is misdirected).",
        default=False, cli=bool, check=_flag, testbed=True,
    )  # fmt: skip
    routes: int | None = param(
        "--routes",
        "Router and XDP router: a FIB of N routes in the SUT (ip -batch), each a prefix "
        "of its own in the benchmarking range, the flows' destinations spread over them "
        "(IPv4: up to 65,280; IPv6: up to 1M). A list (1,1k,100k,1M) runs a scale series.",
        default=None, **counted(1, MAX_ROUTES, "route count"), ordinal=True, testbed=True,
    )  # fmt: skip
    nft_rules: int | None = param(
        "--nft-rules",
        "Router: N nft rules in the SUT's forward hook that the test frames pass without "
        "matching, ahead of an accept (linear, about 30 ns a rule per frame; --nft-set: "
        "one set lookup). A list (10,1k,10k) runs a scale series.",
        default=None, **counted(1, MAX_RULES, "rule count"), ordinal=True, testbed=True,
    )  # fmt: skip
    nft_set: bool = param(
        "--nft-set", "With --nft-rules: the N keys as one set a single rule looks up.",
        default=False, cli=bool, check=_flag, testbed=True,
    )  # fmt: skip
    conntrack: str = param(
        "--conntrack",
        "Router: connection tracking in the SUT: off (default) | on (its table's entries "
        "and drops read before and after every trial).",
        default="off", check=choice("off", "on"), testbed=True,
    )  # fmt: skip
    conntrack_max: int | None = param(  # net.netfilter.nf_conntrack_max while it is up
        "--conntrack-max",
        "With --conntrack on: the conntrack table's limit, host-wide, while the testbed is "
        "up (net.netfilter.nf_conntrack_max, restored after; a new connection past it "
        "evicts an unreplied one, or is dropped).",
        default=None, **counted(1, 16_000_000, "conntrack table limit"), ordinal=True,
        testbed=True,
    )  # fmt: skip
    nat: str = param(
        "--nat", "Router: off (default) | snat (source NAT to the SUT's address towards "
        "the sink; needs --conntrack on).",
        default="off", check=choice("off", "snat"), testbed=True,
    )  # fmt: skip
    backlog: int | None = param(  # net.core.netdev_max_backlog while the testbed is up
        "--backlog", "net.core.netdev_max_backlog (restored after).", default=None, cli=int,
        check=whole(1, 10_000_000), ordinal=True, testbed=True,
    )  # fmt: skip
    txqueuelen: int | None = param(  # txqueuelen of the testbed's veth devices
        "--txqueuelen", "txqueuelen of the veths.", default=None, cli=int,
        check=whole(0, 1_000_000), ordinal=True, testbed=True,
    )  # fmt: skip
    sut_drop: float = param(  # ground truth: random drop probability in the SUT
        "--sut-drop", "Ground truth: random drop probability.", default=0.0, cli=float,
        check=fraction(0.0, 1.0), ordinal=True, testbed=True,
    )  # fmt: skip
    sut_cap_pps: float | None = param(  # ground truth: capacity cap on the SUT egress
        "--sut-cap", "Ground truth: SUT egress cap in pps (e.g. 100k).", default=None,
        parse=as_text(parse_rate), check=RATE, key="sut_cap", ordinal=True, testbed=True,
    )  # fmt: skip
    sut_cap_reverse_pps: float | None = param(  # ground truth: a cap on the reverse egress
        "--sut-cap-reverse", "Ground truth: a cap in pps on the SUT's egress towards the "
        "generator (e.g. 50k): the reverse direction of --bidirectional alone.", default=None,
        parse=as_text(parse_rate), check=RATE, key="sut_cap_reverse", ordinal=True,
        testbed=True,
    )  # fmt: skip
    rx_affinity: str = param(  # where the SUT's receive work runs (RPS on its ingress veth)
        "--rx-affinity",
        "Where the SUT's receive work runs (RPS on its ingress veth; the XDP router's "
        "threaded NAPI): auto (default: as --pinning says: bound at pin-1cpu and pin-2cpu, "
        "none at unpinned) | bound (on the one CPU --pinning gives the SUT: CPU 1 at "
        "pin-2cpu, CPU 0 at pin-1cpu; not with unpinned) | balanced (spread by RPS over "
        "every CPU, each flow hashed to one; the generator stays where --pinning puts it; "
        "not with pin-1cpu nor the XDP router) | none (not steered: veth's sender's CPU; "
        "only with unpinned).",
        default=AUTO, check=choice(*RX_AFFINITIES), testbed=True,
    )  # fmt: skip
    rx_mode: str = param(  # how the SUT's ingress veth receives (testbed.receive)
        "--rx-mode",
        "How the SUT's ingress veth receives: backlog (default: each frame handed to the "
        "stack by netif_rx on the generator's CPU and steered by RPS; sent with AF_PACKET "
        "sendmmsg, whose reach on a small host is below the kernel router's MRR) | napi "
        "(polled in batches by NAPI on the SUT's CPU, as a NIC's driver is, from a "
        "256-frame ring; the generator sends XDP live frames paced in the kernel; see "
        "the manual's page on the generator for what it does on a shared host).",
        default="backlog", check=choice(*RX_MODES), testbed=True,
    )  # fmt: skip
    sink: str = param(  # how the sink counts test frames: xdp | nft | xdp+nft (cross-check)
        "--sink",
        "How the sink counts test frames: xdp (default, cheapest) | nft | xdp+nft (both, "
        "cross-checked).",
        default="xdp", check=choice(*SINKS), testbed=True,
    )  # fmt: skip

    ovs_port: str | None = param(  # --sut ovs: the type of its two ports (None: afxdp)
        "--ovs-port",
        "--sut ovs: its ports' type: afxdp (default: a PMD thread busy-polls both on the "
        "SUT's CPU) | afxdp-nonpmd (polled by ovs-vswitchd's main thread) | system (packet "
        "sockets).",
        default=None, check=choice(*OVS_PORTS), testbed=True,
    )  # fmt: skip
    ovs_flows: str | None = param(  # --sut ovs: its OpenFlow rules (None: normal)
        "--ovs-flows",
        "--sut ovs: normal (default: one rule, action NORMAL: MAC learning) | ports (one "
        "in_port -> output rule per direction).",
        default=None, check=choice(*OVS_FLOWS), testbed=True,
    )  # fmt: skip
    ovs_rules: int | None = param(  # --sut ovs: rules added that test frames never match
        "--ovs-rules",
        "--sut ovs: grow the flow table by N rules that test frames never match (UDP to "
        "other addresses and ports), above the forwarding rules (1k, 1M: k = 1000). A list "
        "(0,1k,10k) runs a sweep, search or flood once per count (a scale series).",
        default=None, **counted(0, MAX_OVS_RULES, "OpenFlow rule count"), ordinal=True,
        testbed=True,
    )  # fmt: skip
    testpmd_fwd: str | None = param(  # --sut testpmd: its forwarding mode (None: io)
        "--testpmd-fwd",
        "--sut testpmd: io (default: frames sent on as they came) | mac (their MACs "
        "rewritten to the next hop's).",
        default=None, check=choice(*TESTPMD_FWD), testbed=True,
    )  # fmt: skip
    dpdk_vdev: str | None = param(  # --sut testpmd/l3fwd: the ports' PMD (None: af_xdp)
        "--dpdk-vdev",
        "--sut testpmd or l3fwd: how DPDK reaches the SUT's veths: af_xdp (default) | "
        "af_packet.",
        default=None, check=choice(*DPDK_VDEVS), testbed=True,
    )  # fmt: skip
    sut_setup: str | None = param(  # --sut exec: the user's script, run in the SUT's netns
        "--sut-setup",
        "--sut exec: a program run in the SUT's namespace with the two interfaces' names "
        "and addresses in its environment (NETASSAY_*); it starts the data plane (and may "
        "keep running: its process group is ended when the testbed goes down).",
        default=None, testbed=True, metavar="FILE",
    )  # fmt: skip

    def mix(self) -> Mix | None:
        """The frame mix of ``--imix`` for this IP version (None: one size)."""
        return None if self.imix is None else parse_imix(self.imix, self.ip_version)

    def imix_spec(self) -> str | None:
        """The mix as netassay-gen's ``--imix`` takes it (None: one size)."""
        mix = self.mix()
        return None if mix is None else spec(mix)

    def global_sysctls(self) -> dict[str, str]:
        """The host-wide sysctls this testbed sets while it is up (key -> value)."""
        out = {}
        if self.backlog is not None:
            out["net.core.netdev_max_backlog"] = str(self.backlog)
        if self.conntrack_max is not None:
            out["net.netfilter.nf_conntrack_max"] = str(self.conntrack_max)
        return out

    def pinning_choice(self, cpus: int | None = None) -> tuple[str, str]:
        """The pinning used on this machine and why (see resolve_pinning)."""
        return resolve_pinning(self.pinning, cpus)

    def resolved(self, cpus: int | None = None) -> TestbedConfig:
        """This config with ``auto`` resolved for this machine (see resolve_pinning), and
        the frame size, when none was given, the smallest of its IP version."""
        out = with_frame_size(self)
        if out.pinning == AUTO:
            out = replace(out, pinning=out.pinning_choice(cpus)[0])
        if out.rx_affinity == AUTO and out.pinning != AUTO:
            out = replace(out, rx_affinity=resolve_rx_affinity(AUTO, out.pinning))
        defaults = DATAPLANE_KNOBS.get(out.sut, {})  # a data plane's knobs left unset
        unset = {k: v for k, v in defaults.items() if getattr(out, k) is None}
        if out.sut_setup and not os.path.isabs(out.sut_setup):  # --sut-setup: where it is
            unset["sut_setup"] = os.path.abspath(out.sut_setup)
        if out.pcap and not os.path.isabs(out.pcap):  # --pcap: where it is
            unset["pcap"] = os.path.abspath(out.pcap)
        resolved: TestbedConfig = replace(out, **unset) if unset else out
        return resolved

    def rx_cpus(self, cpus: int | None = None) -> tuple[int, ...]:
        """The CPUs the SUT's receive work is steered to (an empty tuple: not steered),
        after refusing a pinning and an affinity that contradict each other."""
        n = cpus if cpus is not None else (os.cpu_count() or 1)
        cfg = self.resolved(n)
        refuse_rx_affinity(cfg.pinning, cfg.rx_affinity, n, cfg.sut)
        if cfg.rx_affinity == "balanced":
            return tuple(range(n))
        sut_cpu = PIN_CPUS[cfg.pinning][1]
        return () if sut_cpu is None else (sut_cpu,)


def with_frame_size(cfg: Any) -> Any:
    """A testbed config with its frame size, when none was given, the smallest of its IP
    version (a config of another kind is returned as it is); with a mix (``--imix``)
    or a capture (``--pcap``) it has none."""
    mixed = getattr(cfg, "imix", None) is not None or getattr(cfg, "pcap", None) is not None
    if getattr(cfg, "size_bytes", 0) is None and not mixed:
        return replace(cfg, size_bytes=min_frame_bytes(cfg.ip_version))
    return cfg


@dataclass(frozen=True)
class ClusterConfig:
    """How this host reaches a campaign's Dask cluster (``--tls-dir`` of 'worker',
    'campaign run' and 'cluster scheduler'); a relative path in a file is taken from
    the file's folder."""

    tls_dir: str | None = None  # the folder 'netassay cluster certs' made


# the sections of a method's parameters: the CLI checks their keys with the method's
# declared parameters (``cli.common.config``); this module keeps them as written
METHOD_SECTIONS = ("sweep", "search", "soak", "rtt", "accept")
# names an older config file used, and the key each is now (the CLI's and a campaign's)
RENAMED = {
    "testbed": {"ip_version": "ip", "size_bytes": "size", "sut_cap_pps": "sut_cap"},
    "sweep": {"duration_s": "duration", "settle_s": "settle"},
}


class ConfigWarning(UserWarning):
    """A config file that works but says something the old way (a renamed key)."""


@dataclass(frozen=True)
class Config:
    """What is in force: the analysis, the testbed's knobs, and what the file says of
    each method's parameters (``methods``: section -> key -> value as written), with
    where each key is (``origin``, ``lines``) so that a bad one names its line."""

    analysis: AnalysisConfig = field(default_factory=AnalysisConfig)
    testbed: TestbedConfig = field(default_factory=TestbedConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    methods: dict[str, dict[str, Any]] = field(default_factory=dict)
    origin: str = ""
    lines: Any = None  # tomlfile.Lines of the file (None: no file)

    def section(self, name: str) -> dict[str, Any]:
        """A method's section as written (empty when the file has none)."""
        return dict(self.methods.get(name, {}))

    def where(self, section: str, key: str | None = None) -> str:
        """'file:line' of a key (the file alone without one)."""
        if self.lines is None:
            return self.origin or "flags"
        return f"{self.origin}:{self.lines.line(section, key)}"

    def resolved(self) -> Config:
        """This config with every ``auto`` knob resolved for this machine."""
        return replace(self, testbed=self.testbed.resolved())


def _analysis_value(cfg: Config, key: str, f: dataclasses.Field[Any], value: Any) -> Any:
    default = f.default
    kind = type(default)
    ok = not isinstance(value, bool) and isinstance(value, int | float if kind is float else kind)
    if not ok:
        raise InputError(
            f"{cfg.where('analysis', key)}: [analysis] {key} = {value!r}",
            f"expected a {kind.__name__}",
            "fix the value or remove the key to use the default",
        )
    return float(value) if kind is float else value


def _testbed_value(cfg: Config, key: str, p: Param, value: Any) -> Any:
    try:
        return p.canonical(value)
    except ValueError as exc:
        raise InputError(
            f"{cfg.where('testbed', key)}: [testbed] {key} = {value!r}",
            str(exc),
            "fix the value or remove the key to use the default",
        ) from exc


def _unknown(cfg: Config, section: str, key: str, known: list[str]) -> InputError:
    return InputError(
        f"{cfg.where(section, key)}: unknown key '{key}' in [{section}]",
        spelling_hint(key, known) + f"known keys: {', '.join(known)}",
        "fix the spelling or remove the key",
    )


def _renamed(cfg: Config, section: str, values: dict[str, Any]) -> dict[str, Any]:
    """The section with an older file's key names turned into today's, each said once."""
    out = {}
    for key, value in values.items():
        new = RENAMED.get(section, {}).get(key)
        if new is not None:
            warnings.warn(
                f"{cfg.where(section, key)}: '{key}' is now '{new}' (the flag's and a "
                "campaign file's name); read as such",
                ConfigWarning,
                stacklevel=2,
            )
            key = new
        out[key] = value
    return out


def _apply_file(cfg: Config, data: dict[str, Any]) -> Config:
    """The file's sections over ``cfg``: [analysis] and [testbed] checked here, the
    methods' kept as written (the CLI checks them against their parameters)."""
    known_sections = ("analysis", "testbed", "cluster", *METHOD_SECTIONS)
    for name, values in data.items():
        if name not in known_sections:
            raise InputError(
                f"{cfg.where(name)}: unknown section [{name}]",
                f"known sections: {', '.join(known_sections)}",
                "fix the name or remove the section",
            )
        if not isinstance(values, dict):
            raise InputError(f"{cfg.where(name)}: [{name}] is not a table", "", "write [name]")
        values = _renamed(cfg, name, values)
        if name == "analysis":
            cfg = replace(cfg, analysis=_analysis_section(cfg, values))
        elif name == "testbed":
            cfg = replace(cfg, testbed=_testbed_section(cfg, values))
        elif name == "cluster":
            cfg = replace(cfg, cluster=_cluster_section(cfg, values))
        else:
            cfg = replace(cfg, methods={**cfg.methods, name: values})
    return cfg


def _analysis_section(cfg: Config, values: dict[str, Any]) -> AnalysisConfig:
    known = {f.name: f for f in fields(AnalysisConfig)}
    changes = {}
    for key, value in values.items():
        if key not in known:
            raise _unknown(cfg, "analysis", key, list(known))
        changes[key] = _analysis_value(cfg, key, known[key], value)
        try:  # the value in its range, said of the file's line
            replace(AnalysisConfig(), **{key: changes[key]}).validate()
        except UsageError as exc:
            raise InputError(
                f"{cfg.where('analysis', key)}: [analysis] {key} = {value!r}",
                exc.why,
                "fix the value or remove the key to use the default",
            ) from exc
    return replace(cfg.analysis, **changes)


def _testbed_section(cfg: Config, values: dict[str, Any]) -> TestbedConfig:
    knobs = {p.name: (f, p) for f, p in declared(TestbedConfig)}
    changes = {}
    for key, value in values.items():
        if key not in knobs:
            raise _unknown(cfg, "testbed", key, list(knobs))
        f, p = knobs[key]
        changes[f.name] = _testbed_value(cfg, key, p, value)
    return replace(cfg.testbed, **changes)


def _cluster_section(cfg: Config, values: dict[str, Any]) -> ClusterConfig:
    known = [f.name for f in fields(ClusterConfig)]
    changes = {}
    for key, value in values.items():
        if key not in known:
            raise _unknown(cfg, "cluster", key, known)
        if not isinstance(value, str) or not value:
            raise InputError(
                f"{cfg.where('cluster', key)}: [cluster] {key} = {value!r}",
                "expected a folder's path",
                "fix the value or remove the key",
            )
        base = os.path.dirname(os.path.abspath(cfg.origin)) if cfg.origin else ""
        changes[key] = os.path.join(base, os.path.expanduser(value))
    return replace(cfg.cluster, **changes)


def load_config(
    path: str | os.PathLike[str] | None = None,
    overrides: dict[str, dict[str, Any]] | None = None,
    *,
    resolve: bool = True,
    environ: bool = True,
) -> Config:
    """Defaults, then the TOML file (if given or, with ``environ``, NETASSAY_CONFIG is
    set), then flags.

    The file's keys are the flags' and a campaign file's (``size``, ``ip``, ``duration =
    "2s"``); ``overrides`` are the flags given, by field (parsed already). With
    ``resolve`` (the default), ``auto`` knobs come back resolved for this machine, so
    that what a command runs and stores is the value used; ``config show`` passes False
    to print ``auto`` as it is in force.
    """
    cfg = Config()
    path = path or (os.environ.get("NETASSAY_CONFIG") if environ else None)
    if path:
        data, lines = tomlfile.read(path, "config file")
        cfg = _apply_file(replace(cfg, origin=str(path), lines=lines), data)
    for section, kv in (overrides or {}).items():
        given = {k: v for k, v in kv.items() if v is not None}
        if given:
            current = getattr(cfg, section)
            known = {f.name for f in fields(current)}
            unknown = sorted(set(given) - known)
            if unknown:
                raise UsageError(f"unknown {section} setting {unknown[0]}", "", "")
            cfg = replace(cfg, **{section: replace(current, **given)})
    cfg.analysis.validate()
    return cfg.resolved() if resolve else cfg


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string: quotes, backslashes and control characters
    escaped, the rest as it is."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def toml_key(key: str) -> str:
    """A key as TOML writes it: bare when it can be, else quoted."""
    return key if _BARE_KEY.fullmatch(key) else toml_string(key)


def toml_value(value: Any) -> str:
    """A value as a TOML file writes it (what ``tomllib`` reads back as the same)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{toml_key(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, datetime.date | datetime.time):  # a TOML date, time or both
        return value.isoformat()
    return repr(value)


def to_toml(cfg: Config, methods: dict[str, dict[str, Any]] | None = None) -> str:
    """The config in force as a file would write it, keyed as the flags are: [analysis],
    [testbed], [cluster], then each method's section (``methods``: its defaults by key, which
    the file's own values override). An unset value is shown commented out."""
    sections: dict[str, dict[str, Any]] = {
        "analysis": dataclasses.asdict(cfg.analysis),
        "testbed": {p.name: getattr(cfg.testbed, f.name) for f, p in declared(TestbedConfig)},
        "cluster": dataclasses.asdict(cfg.cluster),
    }
    for name in METHOD_SECTIONS:
        shown = {**(methods or {}).get(name, {}), **cfg.section(name)}
        if shown:
            sections[name] = shown
    lines: list[str] = []
    for section, values in sections.items():
        lines.append(f"[{section}]")
        written = cfg.section(section) if section in METHOD_SECTIONS else {}
        for key, value in values.items():
            unset = value is None or (isinstance(value, list | tuple) and not value)
            if unset and key not in written:  # a default of nothing; the file's [] is shown
                lines.append(f"# {toml_key(key)} = (unset)")
            else:
                lines.append(f"{toml_key(key)} = {toml_value(value)}")
        lines.append("")
    return "\n".join(lines)

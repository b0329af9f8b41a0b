"""Build and remove the namespace topology: generator -> SUT (router or bridge) -> sink.

Every command is an argument list run through ``netassay.proc.run``; nothing goes
through a shell. Only namespaces named ``na-<name>-<role>`` are ever created or deleted.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import signal
import time
from dataclasses import asdict
from typing import Any

from netassay import names
from netassay.config import PIN_CPUS, PINNINGS, SUTS, TestbedConfig, cpu_mask
from netassay.counters.sink import validate_sink
from netassay.errors import NetassayError, TestbedError, UsageError
from netassay.proc import run
from netassay.testbed import dataplane, xdp_router
from netassay.testbed import receive as testbed_receive
from netassay.testbed import scale as testbed_scale
from netassay.testbed import state as testbed_state
from netassay.traffic import pcap as traffic_pcap

log = logging.getLogger("netassay.testbed")

MAGIC = 0x6E614731  # netassay-gen payload magic ("naG1"), right after the UDP header
WIRE_QDISC = ("pfifo",)  # its limit is the device's txqueuelen (backlog mode's wire)
# The cap's bucket holds this much traffic. It is a queue on the path like the SUT's
# backlog: a generator stall's catch-up burst larger than it is flagged and the trial
# left out of the statistics (path_queue_pkts, quality.stall_warning), so that a
# burst is never taken for SUT loss below the cap (with a 5 ms bucket and a fixed 10 ms
# stall rule, 2-10 ms stalls of this machine lost up to 1% below the cap, measured).
CAP_BUCKET_S = 0.02
XDP_ROUTER = "xdp-router"
FLOW_SET = 65536  # the nft sink's per-flow set: more flows are counted by the XDP sink


# -- topology kinds ---------------------------------------------------------------------
# One lifecycle (bed.Testbed: name, lock, state file, global sysctls, teardown on errors
# and signals, cleanup of na-*) builds every kind of testbed. The forwarding testbed
# (router, bridge: built in this module) is the default kind. Another kind is a module
# with validate(cfg), build(name, cfg) -> state and config_from_state(state); its config
# and its state carry ``kind``. Teardown and cleanup need no kind: they end what still
# runs in the testbed's namespaces and remove every one of them (names.is_testbed_netns).
# A kind may also have hooks (kind_hook): check_open(tb) before a run on it,
# trials_on(tb, run_id) for a data path of its own, environment(tb) for the run's record,
# forget(state) on down and cleanup (the external testbed has all four).
FORWARDING = "forwarding"
EXTERNAL = "external"
KINDS = {
    "rtt": "netassay.testbed.rtt",
    "accept": "netassay.testbed.link",
    "tcp": "netassay.testbed.tcppath",
    "external": "netassay.testbed.external",  # a SUT between two local ports
}


def kind_of(cfg_or_state: Any) -> str:
    """The kind of testbed a config or a state describes (``forwarding`` by default)."""
    if isinstance(cfg_or_state, dict):
        return str(cfg_or_state.get("kind", FORWARDING))
    return str(getattr(cfg_or_state, "kind", FORWARDING))


def is_external(cfg_or_state: Any) -> bool:
    """A SUT netassay does not manage, between two local ports (testbed.external)."""
    return kind_of(cfg_or_state) == EXTERNAL


def kind_module(kind: str) -> Any:
    """The module that validates and builds a testbed kind other than forwarding."""
    if kind not in KINDS:
        raise TestbedError(
            f"unknown testbed kind '{kind}'",
            f"known kinds: {', '.join([FORWARDING, *KINDS])}",
            "run 'netassay testbed cleanup' if its state came from another release",
        )
    return importlib.import_module(KINDS[kind])


def check(cfg: Any) -> None:
    """Refuse a config of any kind that makes no sense, before anything is touched."""
    kind = kind_of(cfg)
    if kind == FORWARDING:
        validate(cfg)
    else:
        kind_module(kind).validate(cfg)


def validate_frames(ip_version: int, size_bytes: int | None, flows: int) -> None:
    """The frames netassay-gen can send on any testbed: their size (None: the smallest,
    which is valid) and flow count."""
    min_size = names.min_frame_bytes(ip_version)
    if size_bytes is not None and not min_size <= size_bytes <= 1518:
        raise UsageError(
            f"bad frame size {size_bytes}",
            f"IPv{ip_version} UDP frames are {min_size}..1518 bytes here",
            f"give --size {min_size} or more, or leave it out (the smallest is the default)",
        )
    if not 1 <= flows <= testbed_scale.MAX_FLOWS:
        raise UsageError(
            f"bad flow count {flows:,}", f"1..{testbed_scale.MAX_FLOWS:,} flows", "e.g. 1 or 16"
        )


def validate_mix(cfg: TestbedConfig) -> None:
    """``--imix``: a mix that parses, of sizes this IP version sends, and no ``--size``
    beside it; the XDP sink, which counts each size of it. ``--pcap``: the same, and a
    capture netassay-gen replays (``validate_pcap``)."""
    if cfg.pcap is not None:
        return validate_pcap(cfg)
    if cfg.imix is None:
        return
    if cfg.size_bytes is not None:
        raise UsageError("--imix with --size", "a mix gives the frame sizes", "drop one of them")
    cfg.mix()
    if cfg.sink == "nft":
        raise UsageError(
            "--imix with --sink nft", "the nft sink counts frames of one size",
            "use --sink xdp (the default) or xdp+nft",
        )  # fmt: skip


def validate_pcap(cfg: TestbedConfig) -> None:
    """``--pcap``: no ``--size`` or ``--imix`` beside it, one flow pair (a capture keeps
    its own ports), the XDP sink (which counts each size of it), and a capture that
    netassay-gen replays with something the sink counts (one line otherwise)."""
    for given, flag, why in (
        (cfg.size_bytes is not None, "--size", "a capture gives the frame sizes"),
        (cfg.imix is not None, "--imix", "a capture gives the frame sizes"),
        (cfg.flows != 1, "--flows", "a capture's frames keep their own ports"),
        (bool(cfg.routes), "--routes", "a capture's frames go to one destination"),
        (cfg.count_flows, "--count-flows", "a capture's frames keep their own ports"),
        (cfg.sink == "nft", "--sink nft", "the nft sink counts frames of one size"),
    ):
        if given:
            raise UsageError(
                f"--pcap with {flag}", why,
                f"drop {flag}" + (" (use --sink xdp)" if flag == "--sink nft" else ""),
            )  # fmt: skip
    traffic_pcap.describe(cfg.pcap or "", cfg.ip_version)


def validate(cfg: TestbedConfig) -> None:
    """Refuse knob values that make no sense, before anything is touched."""
    if kind_of(cfg) != FORWARDING:  # a sweep or a search on another kind (external)
        return check(cfg)
    if cfg.sut not in SUTS:
        raise UsageError(f"unknown SUT '{cfg.sut}'", f"known: {', '.join(SUTS)}", "pick one")
    if cfg.pinning not in PINNINGS:
        raise UsageError(
            f"unknown pinning '{cfg.pinning}'", f"known: {', '.join(PINNINGS)}", "pick one"
        )
    pinning, _ = cfg.pinning_choice()  # 'auto' resolved for this machine
    _, sut_cpu = PIN_CPUS[pinning]
    if sut_cpu is not None and sut_cpu >= (os.cpu_count() or 1):
        raise UsageError(
            f"pinning '{pinning}' needs {sut_cpu + 1} CPUs",
            f"this machine has {os.cpu_count()}",
            "use pin-1cpu or unpinned",
        )
    cfg.rx_cpus()  # --rx-affinity against the pinning, this machine and the SUT
    names.addressing(cfg.sut, cfg.ip_version)
    dataplane.validate(cfg)  # a data plane's knobs, and what it cannot do (testbed.dataplane)
    if cfg.sut == XDP_ROUTER:
        xdp_router.object_path()  # built by 'make setup', else one line saying so
    elif testbed_receive.napi(cfg):
        xdp_router.object_path(obj=xdp_router.PASS_OBJECT)
    validate_frames(cfg.ip_version, cfg.size_bytes, cfg.flows)
    validate_mix(cfg)
    validate_sink(cfg.sink)
    testbed_scale.validate(cfg)
    if cfg.sut == XDP_ROUTER and cfg.sut_cap_reverse_pps:
        raise UsageError(
            "--sut-cap-reverse with --sut xdp-router",
            "the XDP router forwards one direction only (its program is on sut0)",
            "use --sut router or bridge",
        )
    if not 0 <= cfg.sut_drop < 1:
        raise UsageError(f"bad --sut-drop {cfg.sut_drop}", "a probability in [0, 1)", "e.g. 0.005")
    if cfg.sut_cap_pps is not None and not 1 <= cfg.sut_cap_pps <= 1e9:
        raise UsageError(f"bad --sut-cap {cfg.sut_cap_pps}", "a rate in pps", "e.g. 100k")
    for what, v in (("backlog", cfg.backlog), ("txqueuelen", cfg.txqueuelen)):
        if v is not None and not 1 <= v <= 1_000_000:
            raise UsageError(f"bad {what} {v}", "a queue length in 1..1000000", "e.g. 1000")


def list_netns() -> list[str]:
    out = run(["ip", "-j", "netns", "list"]).stdout.strip()
    return [e["name"] for e in json.loads(out)] if out else []


def _ns_sysctl(ns: str, key: str, value: str) -> None:
    run(["sysctl", "-q", "-w", f"{key}={value}"], netns=ns)


def _write_sys(ns: str, path: str, value: str) -> None:
    run(["tee", path], netns=ns, input_text=f"{value}\n")


def link_mac(ns: str, dev: str) -> str:
    """The MAC address of ``dev`` in namespace ``ns``."""
    links = json.loads(run(["ip", "-n", ns, "-j", "link", "show", "dev", dev]).stdout)
    mac: str = links[0]["address"]
    return mac


def _links(name: str, cfg: TestbedConfig) -> dict[str, str]:
    tg, sut, sink = (names.netns(name, r) for r in names.ROLES)
    for ns in (tg, sut, sink):
        run(["ip", "netns", "add", ns])
        if cfg.ip_version == 4:  # no IPv6 ND/MLD chatter on a v4 testbed
            _ns_sysctl(ns, "net.ipv6.conf.default.disable_ipv6", "1")
            _ns_sysctl(ns, "net.ipv6.conf.all.disable_ipv6", "1")
        else:
            _ns_sysctl(ns, "net.ipv6.conf.default.accept_dad", "0")
            _ns_sysctl(ns, "net.ipv6.conf.default.accept_ra", "0")
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
    for a, ns_a, b, ns_b in (
        (names.TG_DEV, tg, names.SUT_IN, sut),
        (names.SUT_OUT, sut, names.SINK_DEV, sink),
    ):
        run(
            [
                "ip",
                "link",
                "add",
                a,
                "netns",
                ns_a,
                "type",
                "veth",
                "peer",
                "name",
                b,
                "netns",
                ns_b,
            ]
        )
    devs = [
        (tg, names.TG_DEV),
        (sut, names.SUT_IN),
        (sut, names.SUT_OUT),
        (sink, names.SINK_DEV),
    ]
    for ns, dev in devs:
        if cfg.txqueuelen is not None:
            run(["ip", "-n", ns, "link", "set", dev, "txqueuelen", str(cfg.txqueuelen)])
        run(["ip", "-n", ns, "link", "set", dev, "up"])
    # The wire: the generator sends through a queueing qdisc (netassay-gen --qdisc), so
    # a frame the SUT's full backlog refuses is lost on the link, as at a NIC's full
    # receive ring, instead of refused to the sender's socket and retried. The qdisc
    # never fills (veth drains it at once, dropping what the peer cannot take).
    run(["tc", "-n", tg, "qdisc", "replace", "dev", names.TG_DEV, "root", *WIRE_QDISC])
    return {dev: link_mac(ns, dev) for ns, dev in devs}


def _addr(ns: str, dev: str, addr: str, plen: int, v6: bool) -> None:
    extra = ["nodad"] if v6 else []  # replace: set again as it is (restore_paths)
    run(["ip", "-n", ns, "addr", "replace", f"{addr}/{plen}", "dev", dev, *extra])


def _static_neighbours(*entries: tuple[str, str, str, str]) -> None:
    """Permanent neighbour entries (namespace, device, address, MAC): no address
    resolution in flight when a trial starts."""
    for ns, dev, addr, mac in entries:
        run(["ip", "-n", ns, "neigh", "replace", addr, "lladdr", mac, "dev", dev, "nud",
             "permanent"])  # fmt: skip


def _router(name: str, cfg: TestbedConfig, macs: dict[str, str]) -> dict[str, Any] | None:
    sut = names.netns(name, "sut")
    if cfg.sut in dataplane.MODULES:
        pass  # the data plane forwards (the kernel's forwarding stays off): l3fwd, exec
    elif cfg.ip_version == 6:
        _ns_sysctl(sut, "net.ipv6.conf.all.forwarding", "1")
    else:
        _ns_sysctl(sut, "net.ipv4.ip_forward", "1")
    _router_paths(name, cfg, macs)
    if cfg.sut == XDP_ROUTER:
        return _xdp(name, cfg)
    return None


def _router_paths(name: str, cfg: TestbedConfig, macs: dict[str, str]) -> None:
    """The router's addresses, static routes and neighbours (set again by
    ``restore_paths``: a link down loses its IPv6 addresses, and its routes and
    neighbours in both versions)."""
    tg, sut, sink = (names.netns(name, r) for r in names.ROLES)
    a = names.addressing("router", cfg.ip_version)
    v6 = cfg.ip_version == 6
    _addr(tg, names.TG_DEV, a.tg, a.prefix_len, v6)
    _addr(sut, names.SUT_IN, str(a.sut_in), a.prefix_len, v6)
    _addr(sut, names.SUT_OUT, str(a.sut_out), a.prefix_len, v6)
    _addr(sink, names.SINK_DEV, a.sink, a.prefix_len, v6)
    fam = ["-6"] if v6 else ["-4"]
    bench = str(names.BENCH_V6 if cfg.ip_version == 6 else names.BENCH_V4)
    run(["ip", "-n", tg, *fam, "route", "replace", bench, "via", str(a.sut_in)])
    run(["ip", "-n", sink, *fam, "route", "replace", bench, "via", str(a.sut_out)])
    _static_neighbours(
        (sut, names.SUT_OUT, a.sink, macs[names.SINK_DEV]),
        (sut, names.SUT_IN, a.tg, macs[names.TG_DEV]),
        (tg, names.TG_DEV, str(a.sut_in), macs[names.SUT_IN]),
        (sink, names.SINK_DEV, str(a.sut_out), macs[names.SUT_OUT]),
    )


def restore_paths(name: str, cfg: Any, state: dict[str, Any]) -> bool:
    """Set the embedded testbed's static routes, neighbours and bridge entries again,
    as ``build`` set them: a link taken down (and up again) by another process lost
    those on it. False for a kind that has none (every other kind)."""
    if kind_of(state) != FORWARDING or "macs" not in state:
        return False
    if cfg.sut == "bridge":
        _bridge_paths(name, cfg, state["macs"])
    elif cfg.sut in names.SWITCHED_SUTS:  # a data plane that switches: only its ends
        _switched_ends(name, cfg, state["macs"])
    else:
        _router_paths(name, cfg, state["macs"])
    return True


def _xdp(name: str, cfg: TestbedConfig) -> dict[str, Any]:
    """The XDP router on top of the kernel router's addresses, routes and neighbours
    (see testbed.xdp_router): its program on sut0, its wire (a head-drop queue of the
    backlog's length), its CPU, its ground truths (redirected frames bypass the nft
    rules of the other SUTs)."""
    gen_cpu, sut_cpu = PIN_CPUS[cfg.pinning]
    return xdp_router.setup(
        {r: names.netns(name, r) for r in names.ROLES},
        {"tg": names.TG_DEV, "sut_in": names.SUT_IN, "sink": names.SINK_DEV},
        ring=cfg.backlog or int(testbed_state.read_sysctl("net.core.netdev_max_backlog")),
        sut_cpu=sut_cpu if sut_cpu != gen_cpu else None,
        drop=cfg.sut_drop,
        cap_pps=cfg.sut_cap_pps,
        cap_burst=cap_bucket_pkts(cfg),
    )


def _switched_ends(name: str, cfg: TestbedConfig, macs: dict[str, str]) -> None:
    """A switched SUT's ends: the generator's and the sink's addresses and each other's
    MAC (static neighbours); the SUT between them has no address."""
    tg, _, sink = (names.netns(name, r) for r in names.ROLES)
    a = names.addressing("bridge", cfg.ip_version)
    v6 = cfg.ip_version == 6
    _addr(tg, names.TG_DEV, a.tg, a.prefix_len, v6)
    _addr(sink, names.SINK_DEV, a.sink, a.prefix_len, v6)
    _static_neighbours(
        (tg, names.TG_DEV, a.sink, macs[names.SINK_DEV]),
        (sink, names.SINK_DEV, a.tg, macs[names.TG_DEV]),
    )


def _sut(name: str, cfg: TestbedConfig, macs: dict[str, str]) -> dict[str, Any] | None:
    """The SUT's kernel side: a bridge, a router (and the XDP router on it), or the
    ends of a data plane of its own (started later, ``testbed.dataplane``)."""
    if cfg.sut == "bridge":
        _bridge(name, cfg, macs)
        return None
    if cfg.sut in names.SWITCHED_SUTS:
        _switched_ends(name, cfg, macs)
        return None
    return _router(name, cfg, macs)


def _napi(name: str, cfg: TestbedConfig) -> dict[str, Any]:
    """The SUT's ingress veth polled by NAPI (``--rx-mode napi``, see testbed.receive):
    its poll on the SUT's CPU where the pinning gives it one of its own."""
    gen_cpu, sut_cpu = PIN_CPUS[cfg.pinning]
    return testbed_receive.setup_napi(
        {r: names.netns(name, r) for r in names.ROLES},
        {"tg": names.TG_DEV, "sut_in": names.SUT_IN, "sink": names.SINK_DEV},
        ring=cfg.backlog or int(testbed_state.read_sysctl("net.core.netdev_max_backlog")),
        sut_cpu=sut_cpu if sut_cpu != gen_cpu else None,
    )


def _bridge(name: str, cfg: TestbedConfig, macs: dict[str, str]) -> None:
    sut = names.netns(name, "sut")
    run(
        [
            "ip",
            "-n",
            sut,
            "link",
            "add",
            names.BRIDGE,
            "type",
            "bridge",
            "stp_state",
            "0",
            "mcast_snooping",
            "0",
        ]
    )
    for dev in (names.SUT_IN, names.SUT_OUT):
        run(["ip", "-n", sut, "link", "set", dev, "master", names.BRIDGE])
    run(["ip", "-n", sut, "link", "set", names.BRIDGE, "up"])
    _bridge_paths(name, cfg, macs)


def _bridge_paths(name: str, cfg: TestbedConfig, macs: dict[str, str]) -> None:
    """The bridge's static entries and the ends' addresses and neighbours
    (``restore_paths``)."""
    sut = names.netns(name, "sut")
    for mac, dev in ((macs[names.SINK_DEV], names.SUT_OUT), (macs[names.TG_DEV], names.SUT_IN)):
        run(["bridge", "-n", sut, "fdb", "replace", mac, "dev", dev, "master", "static"])
    _switched_ends(name, cfg, macs)


def _sink_rules(cfg: TestbedConfig) -> str:
    """Count test packets (only) at the sink's ingress, per flow too (up to the flow
    set's 65536: the XDP sink's --count-flows counts more), then drop them."""
    a = names.addressing(cfg.sut, cfg.ip_version)
    daddr = testbed_scale.sink_daddr(cfg, a.sink)  # with --routes, the routes' destinations too
    if cfg.ip_version == 4:
        match = f"ip saddr {names.BENCH_V4} ip daddr {daddr} meta l4proto udp"
        key, elem = "ipv4_addr . inet_service . inet_service", "ip saddr . udp sport . udp dport"
    else:
        match = f"ip6 saddr {names.BENCH_V6} ip6 daddr {daddr} meta l4proto udp"
        key, elem = "ipv6_addr . inet_service . inet_service", "ip6 saddr . udp sport . udp dport"
    match += f" @th,64,32 {MAGIC:#x}"  # netassay-gen's payload magic
    per_flow = f" add @na_flows {{ {elem} }}" if cfg.flows <= FLOW_SET else ""
    return f"""table netdev na_sink {{
  counter na_rx {{ }}
  set na_flows {{ type {key}; flags dynamic; counter; size {FLOW_SET}; }}
  chain na_in {{ type filter hook ingress device "{names.SINK_DEV}" priority -10; policy accept;
    {match} counter name "na_rx"{per_flow} drop
  }}
}}
"""


def _sut_rules(cfg: TestbedConfig) -> str | None:
    """Ground truth in the SUT: random drop (forward hook) and a pps cap (egress hook)."""
    parts = []
    if cfg.sut_drop > 0:
        family = "inet" if cfg.sut == "router" else "bridge"
        threshold = round(cfg.sut_drop * 1_000_000)
        # one counter per direction (``na_drop_rev``: frames coming back from the sink's
        # side, under --bidirectional), so that each direction's drops are its own
        drop = f"meta l4proto udp numgen random mod 1000000 < {threshold} counter name"
        parts.append(f"""table {family} na_sut {{
  counter na_drop {{ }}
  counter na_drop_rev {{ }}
  chain na_forward {{ type filter hook forward priority 0; policy accept;
    iifname "{names.SUT_IN}" {drop} "na_drop" drop
    iifname "{names.SUT_OUT}" {drop} "na_drop_rev" drop
  }}
}}
""")
    for pps, table, dev, counter in (
        (cfg.sut_cap_pps, "na_cap", names.SUT_OUT, "na_cap"),
        (cfg.sut_cap_reverse_pps, "na_cap_rev", names.SUT_IN, "na_cap_rev"),
    ):
        if pps:
            parts.append(_cap_rule(table, dev, counter, pps, _bucket(pps)))
    return "".join(parts) or None


def _cap_rule(table: str, dev: str, counter: str, pps: float, burst: int) -> str:
    """A policer of ``pps`` with a bucket of ``burst`` frames on ``dev``'s egress."""
    limit = f"limit rate over {round(pps)}/second burst {burst} packets"
    return f"""table netdev {table} {{
  counter {counter} {{ }}
  chain na_out {{ type filter hook egress device "{dev}" priority 0; policy accept;
    meta l4proto udp {limit} counter name "{counter}" drop
  }}
}}
"""


def _pinning(name: str, cfg: TestbedConfig) -> dict[str, str]:
    """Steer the SUT's receive processing (RPS on its ingress veth) to the CPUs its
    --rx-affinity gives it: one (bound) or all (balanced), in the SUT's namespace, so
    that the mask goes with the veth when the testbed is removed."""
    cpus = cfg.rx_cpus()
    if not cpus:
        return {}
    sut = names.netns(name, "sut")
    mask = cpu_mask(cpus)
    path = f"/sys/class/net/{names.SUT_IN}/queues/rx-0/rps_cpus"
    _write_sys(sut, path, mask)
    return {f"{sut}:{names.SUT_IN}": mask}


def namespaces_of(name: str, present: list[str]) -> list[str]:
    """The namespaces of testbed ``name`` (of any kind) among ``present``."""
    return [ns for ns in present if names.name_of(ns) == name]


def refuse_existing(name: str) -> None:
    """A testbed of that name (namespaces or state) must not exist yet."""
    if namespaces_of(name, list_netns()) or testbed_state.read_state(name) is not None:
        raise TestbedError(
            f"testbed '{name}' already exists",
            "its namespaces or its state are present",
            f"use it, or remove it with 'netassay testbed down --name {name}'",
        )


def build(name: str, cfg: TestbedConfig) -> dict[str, Any]:
    """Create the testbed; return its state (also written to the run directory)."""
    kind = kind_of(cfg)
    if kind != FORWARDING:
        built: dict[str, Any] = kind_module(kind).build(name, cfg)
        return built
    validate(cfg)
    refuse_existing(name)
    _, pinning_reason = cfg.pinning_choice()
    cfg = cfg.resolved()  # the state records the pinning used, never 'auto'
    mine = [names.netns(name, r) for r in names.ROLES]
    state: dict[str, Any] = {
        "name": name,
        "config": asdict(cfg),
        "namespaces": dict(zip(names.ROLES, mine, strict=True)),
        "pid": os.getpid(),
        "sysctls": {},
        "persistent": False,  # bed.Testbed marks it persistent once it is fully up
        "pinning_reason": pinning_reason,
    }
    testbed_state.write_state(name, state)  # first, so that a crash mid-build can be cleaned up
    macs = _links(name, cfg)
    xdp = _sut(name, cfg, macs)
    run(["nft", "-f", "-"], netns=mine[2], input_text=_sink_rules(cfg))
    # the XDP router and the data planes hold their ground truths themselves
    rules = None if xdp or cfg.sut in dataplane.MODULES else _sut_rules(cfg)
    if rules:
        run(["nft", "-f", "-"], netns=mine[1], input_text=rules)
    wanted = cfg.global_sysctls()
    if wanted:  # checked, set and recorded under one lock: two builds cannot both pass
        with testbed_state.sysctl_lock():
            testbed_state.refuse_sysctl_conflicts(name, wanted, list_netns())
            for key, value in wanted.items():
                testbed_state.set_global_sysctl(key, value)
                state["sysctls"][key] = value
            testbed_state.write_state(name, state)
    receive = _napi(name, cfg) if testbed_receive.napi(cfg) and not xdp else None
    a = names.addressing(cfg.sut, cfg.ip_version)
    # routes, rules, conntrack, NAT as the knobs say (after the host-wide sysctls: the
    # conntrack table's limit it records is the one set)
    scale = testbed_scale.setup(cfg, mine[1], a)
    state.update(
        macs=macs,
        addressing=asdict(a),
        rps=_pinning(name, cfg),
        gen_cpu=PIN_CPUS[cfg.pinning][0],
        sut_cpu=PIN_CPUS[cfg.pinning][1] if cfg.rx_affinity == "bound" else None,
        sut_cpus=list(cfg.rx_cpus()),
        **({"xdp_router": xdp} if xdp else {}),
        **({"receive": receive} if receive else {}),
        **({"scale": scale} if scale else {}),
        target={
            "netns": mine[0],
            "dev": names.TG_DEV,
            "dst_mac": macs[names.SINK_DEV]
            if cfg.sut in names.SWITCHED_SUTS
            else macs[names.SUT_IN],
            "src": a.tg,
            "dst": testbed_scale.first_dst(cfg, a.sink),  # with --routes, the first route's
        },
    )
    testbed_state.write_state(name, state)
    if cfg.sut in dataplane.MODULES:
        _dataplane(name, cfg, state)
    return state


def _dataplane(name: str, cfg: TestbedConfig, state: dict[str, Any]) -> None:
    """Start the SUT's data plane (``testbed.dataplane``) and check that it forwards;
    its record is written to the state as soon as it exists, so that a failed check
    leaves it to the teardown."""
    site = dataplane.Site(
        name=name, cfg=cfg, ns=dict(state["namespaces"]), macs=state["macs"],
        addressing=names.addressing(cfg.sut, cfg.ip_version), sut_cpu=PIN_CPUS[cfg.pinning][1],
        run_dir=dataplane.run_dir(name),
        cap_burst=dataplane.cap_bucket(cfg.sut_cap_pps, cap_bucket_pkts(cfg)),
    )  # fmt: skip
    state["dataplane"] = dataplane.start(site)
    testbed_state.write_state(name, state)
    try:
        dataplane.check_path(state, dataplane_gen_flags(state))
    finally:
        testbed_state.write_state(name, state)


def dataplane_gen_flags(state: dict[str, Any]) -> list[str]:
    """netassay-gen's flags for a path check: the wire and the generator's CPU."""
    cpu = state.get("gen_cpu")
    return [*testbed_receive.THROUGH_QDISC, *([] if cpu is None else ["--cpu", str(cpu)])]


def teardown(name: str) -> list[str]:
    """Remove one testbed's namespaces and state; restore sysctls if it was the last."""
    names.validate_name(name)
    forget_kind(name)
    stop_dataplane(name)
    removed = namespaces_of(name, list_netns())
    end_processes(removed)
    for ns in removed:
        run(["ip", "netns", "del", ns], check=False)
    testbed_state.remove_state(name)
    testbed_state.restore_if_last()
    return removed


def cleanup(only: set[str] | None = None) -> list[str]:
    """Remove every ``na-*`` namespace (or only those of the named testbeds) and the
    state left behind; testbeds whose lock is held by a running sweep are skipped."""
    removed = []
    busy: set[str] = set()
    for ns in list_netns():
        if not ns.startswith(names.PREFIX):
            continue
        tb = names.name_of(ns)
        if only is not None and tb not in only:
            continue
        if tb is not None and tb not in busy and _busy(tb):
            busy.add(tb)
        if tb in busy:
            log.warning("testbed %s is in use; left alone", tb)
            continue
        removed.append(ns)
    for tb in sorted({name for ns in removed if (name := names.name_of(ns)) is not None}):
        stop_dataplane(str(tb))
    end_processes(removed)
    for ns in removed:
        run(["ip", "netns", "del", ns], check=False)
    for tb in testbed_state.known_testbeds():
        if (only is None or tb in only) and tb not in busy:
            forget_kind(tb)
            stop_dataplane(tb)
            testbed_state.remove_state(tb)
    testbed_state.restore_if_last()
    return removed


def kind_hook(state: dict[str, Any] | None, hook: str) -> Any:
    """A testbed kind's optional hook (``forget``, ``environment``, ``check_open``, ...),
    or None for the forwarding kind and for kinds without it."""
    if not isinstance(state, dict) or kind_of(state) == FORWARDING:
        return None
    return getattr(kind_module(kind_of(state)), hook, None)


def forget_kind(name: str) -> None:
    """Undo what a testbed kind attached outside its own namespaces (the external
    testbed's sink on a port it was given); a state that cannot be read is skipped."""
    try:
        state = testbed_state.read_state(name)
        hook = kind_hook(state, "forget")
    except (TestbedError, UsageError, OSError) as exc:
        log.warning("testbed %s: %s", name, exc)
        return
    if hook is not None:
        try:
            hook(state)
        except NetassayError as exc:  # a cleanup goes on: its state is removed all the same
            log.warning("testbed %s: %s", name, exc.line())


def stop_dataplane(name: str) -> None:
    """End a testbed's data plane (``testbed.dataplane``) before its namespaces go, and
    remove its run files; a testbed without one, or whose state is gone, loses only
    the files (its processes are ended with its namespaces)."""
    try:
        state = testbed_state.read_state(name)
    except (TestbedError, UsageError, OSError) as exc:
        log.warning("testbed %s: %s", name, exc)
        state = None
    if isinstance(state, dict) and kind_of(state) == FORWARDING and dataplane.is_dataplane(state):
        dataplane.stop(state)
    dataplane.stop_leftovers(name)


def kind_environment(tb: Any) -> dict[str, Any]:
    """What a testbed kind adds to a run's environment record ({} for most)."""
    hook = kind_hook(tb.state, "environment")
    return hook(tb) if hook is not None else {}


def end_processes(namespaces: list[str], grace_s: float = 2.0) -> list[int]:
    """End every process still running in these namespaces (SIGTERM, then SIGKILL after
    ``grace_s``): a namespace is only freed when nothing runs in it any more."""
    inodes = {}
    for ns in namespaces:
        try:
            inodes[os.stat(f"/run/netns/{ns}").st_ino] = ns
        except OSError:
            continue
    pids = [pid for pid in _pids() if _netns_inode(pid) in inodes] if inodes else []
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace_s
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if _alive(p)]
            time.sleep(0.02)
        if not pids:
            break
        log.warning("processes %s did not end on SIGTERM; killing them", pids)
    return pids


def _pids() -> list[int]:
    own = os.getpid()
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != own]


def _netns_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _busy(name: str) -> bool:
    try:
        testbed_state.Lock(name).acquire().release()
    except TestbedError:
        return True
    return False


def _bucket(pps: float) -> int:
    return max(64, round(pps * CAP_BUCKET_S))


def cap_bucket_pkts(cfg: TestbedConfig) -> int | None:
    """The ground-truth cap's policer bucket in packets (None without a cap); a data
    plane's is at least its AF_XDP ring (``dataplane.cap_bucket``)."""
    if not cfg.sut_cap_pps:
        return None
    if dataplane.is_dataplane(cfg):
        return dataplane.cap_bucket(cfg.sut_cap_pps, _bucket(cfg.sut_cap_pps))
    return _bucket(cfg.sut_cap_pps)


def cap_bucket_of(pps: float) -> int:
    """The policer bucket in packets of a ground-truth cap of ``pps`` (either direction)."""
    return _bucket(pps)


def path_queues(tb: Any) -> dict[str, int]:
    """The queues on the path that can lose a burst from the generator, by the loss
    location they drop at (``counters.loss``): the SUT's receive backlog
    (net.core.netdev_max_backlog, as it is now), or in napi mode the veth's NAPI ring
    that XDP live frames meet first (``testbed.receive``), or a data plane's AF_XDP
    socket's ring behind its head-drop wire, and the ground-truth cap's bucket. The
    wire's pfifo in backlog mode is not one: a send it refuses is retried by the
    generator, never lost."""
    dp = tb.state.get("dataplane") or {}
    ring = dp.get("ring_pkts")  # a data plane's AF_XDP ring behind the head-drop wire
    if ring:
        out = {"sut_ingress": int(ring)}
    else:
        backlog = int(testbed_state.read_sysctl("net.core.netdev_max_backlog"))
        live = isinstance(tb.cfg, TestbedConfig) and testbed_receive.gen_flags(tb.cfg) == list(
            testbed_receive.LIVE_FRAMES
        )
        out = {"sut_ingress": min(backlog, testbed_receive.RING_PKTS) if live else backlog}
    if dp.get("cap_burst_pkts"):  # a data plane's cap: its own bucket (dataplane.cap_bucket)
        out["sut_egress"] = int(dp["cap_burst_pkts"])
        return out
    caps = (tb.cfg.sut_cap_pps, getattr(tb.cfg, "sut_cap_reverse_pps", None))  # external: none
    buckets = [_bucket(p) for p in caps if p]
    if buckets:
        out["sut_egress"] = min(buckets)
    return out


def path_queue_pkts(tb: Any) -> int:
    """The smallest queue on the path that can lose a burst (``path_queues``)."""
    return min(path_queues(tb).values())

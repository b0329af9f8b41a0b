"""The kernel router at scale: a FIB of many routes, a long nft rule set (or one set
lookup), conntrack and source NAT, and flows with addresses of their own.

Each is a testbed knob (``config.TestbedConfig``):

- ``--routes N``: N routes in the SUT, loaded in one ``ip -batch`` into its namespace,
  each a prefix of its own inside the benchmarking ranges and all through the sink
  (``fib``): IPv4 routes are /24 to /32 prefixes from 198.19.1.0 on (198.19.0.0/24 is
  the sink's link), up to 65,280 of them; IPv6 routes are /112 to /128 prefixes in
  2001:2:0:8000::/96, up to 1,000,000. No route covers them all, so a frame reaches
  the sink only through the one route that holds its destination. The test flows'
  destinations are spread over the routes (netassay-gen ``--dsts N --dst-step S``):
  with as many flows as routes every route carries one flow.
- ``--nft-rules N``: N rules in the SUT's forward hook that the test frames pass
  without matching (a source address and port no flow has), ahead of an accept
  whose counter (``na_passed``) counts the frames that went through them all; with
  ``--nft-set`` the same N keys are one set that a single rule looks up (a hash).
  A rule that matches counts at ``na_blocked`` (none should).
- ``--conntrack on``: connection tracking in the SUT's namespace (a ``ct state`` rule
  registers its hooks; ``na_ct_invalid`` counts the frames it found invalid); the SUT's
  own counts are read before and after every trial: the table's entries
  (``nf_conntrack_count``, against the host's ``nf_conntrack_max``) and its per-CPU
  statistics (``/proc/net/stat/nf_conntrack``: drop, insert_failed, early_drop).
- ``--nat snat``: source NAT to the SUT's address on its way to the sink
  (``na_snat`` counts the mappings made); it rides on conntrack.

Every command is an argument list run through ``netassay.proc.run``; the rules and
routes go in on standard input. Nothing here outlives the SUT's namespace.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

from netassay import names
from netassay.errors import UsageError
from netassay.proc import run

log = logging.getLogger("netassay.testbed")

MAX_FLOWS = 1_000_000  # netassay-gen's flows (flow ids are 32-bit, addresses 32 bits)
MAX_RULES = 1_000_000
# IPv4 routes: 198.19.1.0 to 198.19.255.255 (198.19.0.0/24 is the sink's link)
V4_FIRST = ipaddress.IPv4Address("198.19.1.0")
V4_ROOM = 65_280
V4_WIDEST = 256  # a /24: the widest IPv4 route
# IPv6 routes: inside 2001:2:0:8000::/96 (only an address's last 32 bits vary)
V6_BLOCK = ipaddress.IPv6Network("2001:2:0:8000::/96")
V6_WIDEST = 1 << 16  # a /112
MAX_ROUTES = {4: V4_ROOM, 6: 1_000_000}
# the nft rules' keys: sources no flow has (flows' sources are 198.18.0.x and
# 2001:2:0:1::x) and UDP destination ports from 1
V4_RULES_FROM = 1  # 198.18.1.0 on: 255 * 256 addresses per port
V6_RULES = ipaddress.IPv6Network("2001:2:0:ff00::/64")
CONNTRACK = ("off", "on")
NAT = ("off", "snat")
FLOW_ORDERS = ("incremental", "random")
RULES_TABLE, CT_TABLE, NAT_TABLE = "na_rules", "na_ct", "na_nat"
# the SUT's own counters these tables keep (nft named counters, read with every trial)
COUNTERS = ("na_passed", "na_blocked", "na_ct_invalid", "na_snat")


@dataclass(frozen=True)
class Fib:
    """The SUT's routes: ``routes`` prefixes of ``step`` addresses each, back to back
    from ``first``; the flows aim at ``first_dst`` + r * ``step``."""

    routes: int
    step: int
    prefix_len: int
    first: str
    first_dst: str

    def prefix(self, r: int) -> str:
        return f"{ipaddress.ip_address(self.first) + r * self.step}/{self.prefix_len}"


def fib(ip_version: int, routes: int) -> Fib:
    """Where ``routes`` routes go (see the module); UsageError past the room there is."""
    most = MAX_ROUTES[ip_version]
    if not 1 <= routes <= most:
        more = " (use --ip 6 for more)" if ip_version == 4 and routes > most else ""
        raise UsageError(
            f"--routes {routes:,} with IPv{ip_version}",
            f"IPv{ip_version} has room for 1..{most:,} routes inside the benchmarking range"
            + (" (198.19.1.0-198.19.255.255)" if ip_version == 4 else " (2001:2:0:8000::/96)"),
            f"give at most {most:,}{more}",
        )
    first: ipaddress.IPv4Address | ipaddress.IPv6Address
    if ip_version == 4:
        step, room, first, bits = V4_WIDEST, V4_ROOM, V4_FIRST, 32
    else:
        step, room, first, bits = V6_WIDEST, 1 << 32, V6_BLOCK.network_address, 128
    while step > 1 and routes * step > room:
        step //= 2
    dst = first + (1 if step > 1 else 0)
    return Fib(routes, step, bits - (step.bit_length() - 1), str(first), str(dst))


def route_lines(f: Fib, via: str, dev: str) -> Iterator[str]:
    """``ip -batch`` lines adding every route, through ``via`` on ``dev``."""
    first = ipaddress.ip_address(f.first)
    cls = ipaddress.IPv4Address if first.version == 4 else ipaddress.IPv6Address
    base = int(first)
    for r in range(f.routes):
        yield f"route add {cls(base + r * f.step)}/{f.prefix_len} via {via} dev {dev}"


def rule_keys(ip_version: int, n: int) -> Iterator[tuple[str, int]]:
    """The N rules' (source address, UDP destination port): all distinct, none a
    flow's (flows' sources are the generator's link's)."""
    if ip_version == 4:
        per_port = 255 * 256
        base = int(ipaddress.IPv4Address("198.18.0.0")) + V4_RULES_FROM * 256
        for i in range(n):
            yield str(ipaddress.IPv4Address(base + i % per_port)), 1 + i // per_port
    else:
        base = int(V6_RULES.network_address)
        for i in range(n):
            yield str(ipaddress.IPv6Address(base + i)), 1


def rules_text(ip_version: int, n: int, as_set: bool) -> str:
    """The nft table of ``--nft-rules N`` (``--nft-set``: one set lookup of N keys)."""
    ip = "ip" if ip_version == 4 else "ip6"
    head = f"table inet {RULES_TABLE} {{\n  counter na_passed {{ }}\n  counter na_blocked {{ }}\n"
    chain = "  chain na_fwd { type filter hook forward priority -10; policy accept;\n"
    keys = rule_keys(ip_version, n)
    if as_set:
        kind = "ipv4_addr" if ip_version == 4 else "ipv6_addr"
        elems = ", ".join(f"{a} . {p}" for a, p in keys)
        body = (
            f"  set na_block {{ type {kind} . inet_service; size {max(n, 16)};"
            f" elements = {{ {elems} }} }}\n"
            + chain
            + f'    {ip} saddr . udp dport @na_block counter name "na_blocked" drop\n'
        )
    else:
        rules = "".join(
            f'    {ip} saddr {a} udp dport {p} counter name "na_blocked" drop\n' for a, p in keys
        )
        body = chain + rules
    return head + body + '    counter name "na_passed" accept\n  }\n}\n'


def conntrack_text() -> str:
    """Connection tracking on in the SUT (a ct rule registers its hooks there); the
    frames conntrack finds invalid are counted (``na_ct_invalid``), not dropped."""
    return (
        f"table inet {CT_TABLE} {{\n  counter na_ct_invalid {{ }}\n"
        "  chain na_ct { type filter hook forward priority -5; policy accept;\n"
        '    ct state invalid counter name "na_ct_invalid"\n  }\n}\n'
    )


def nat_text(ip_version: int, to: str) -> str:
    """Source NAT to ``to`` on the SUT's way to the sink."""
    family = "ip" if ip_version == 4 else "ip6"
    return (
        f"table {family} {NAT_TABLE} {{\n  counter na_snat {{ }}\n"
        "  chain na_post { type nat hook postrouting priority 100; policy accept;\n"
        f'    oifname "{names.SUT_OUT}" counter name "na_snat" snat to {to}\n  }}\n}}\n'
    )


def validate(cfg: Any) -> None:
    """Refuse, in one line each, scale knobs this SUT or IP version cannot have."""
    flows = int(cfg.flows)
    if not 1 <= flows <= MAX_FLOWS:
        raise UsageError(f"bad flow count {flows:,}", f"1..{MAX_FLOWS:,} flows", "e.g. 1 or 100k")
    if cfg.flow_order not in FLOW_ORDERS:
        raise UsageError(
            f"unknown --flow-order '{cfg.flow_order}'", f"known: {', '.join(FLOW_ORDERS)}",
            "pick one",
        )  # fmt: skip
    routes, rules = cfg.routes or 0, cfg.nft_rules or 0
    if routes:
        if cfg.sut not in ("router", "xdp-router"):
            raise UsageError(
                f"--routes with --sut {cfg.sut}",
                "a bridge forwards by MAC, not by route" if cfg.sut == "bridge"
                else "its data plane keeps routes of its own, not the kernel's FIB",
                "use --sut router or xdp-router",
            )  # fmt: skip
        fib(cfg.ip_version, routes)
    nft = [f for f, on in (("--nft-rules", rules), ("--conntrack on", cfg.conntrack == "on"),
                           ("--nat snat", cfg.nat == "snat")) if on]  # fmt: skip
    if nft and cfg.sut != "router":
        raise UsageError(
            f"{nft[0]} with --sut {cfg.sut}",
            "the kernel router's netfilter hooks hold them"
            + ("; XDP-redirected frames never reach them" if cfg.sut == "xdp-router" else ""),
            "use --sut router",
        )
    if not 0 <= rules <= MAX_RULES:
        raise UsageError(f"bad --nft-rules {rules:,}", f"0..{MAX_RULES:,} rules", "e.g. 10k")
    if cfg.nft_set and not rules:
        raise UsageError("--nft-set without --nft-rules", "it says how the rules are kept",
                         "add --nft-rules N")  # fmt: skip
    if cfg.conntrack not in CONNTRACK or cfg.nat not in NAT:
        raise UsageError(
            f"--conntrack {cfg.conntrack} --nat {cfg.nat}",
            f"--conntrack is {' or '.join(CONNTRACK)}, --nat {' or '.join(NAT)}", "pick one",
        )  # fmt: skip
    if cfg.conntrack_max is not None and cfg.conntrack != "on":
        raise UsageError(
            "--conntrack-max with --conntrack off", "it is the conntrack table's limit",
            "add --conntrack on",
        )  # fmt: skip
    if cfg.nat == "snat" and cfg.conntrack != "on":
        raise UsageError(
            "--nat snat with --conntrack off", "NAT keeps its mappings in conntrack's table",
            "add --conntrack on",
        )  # fmt: skip
    if cfg.count_flows and cfg.sink == "nft":
        raise UsageError(
            "--count-flows with --sink nft", "the XDP sink counts each flow",
            "use --sink xdp (the default) or xdp+nft",
        )  # fmt: skip


def setup(cfg: Any, sut_ns: str, addressing: Any) -> dict[str, Any]:
    """Load what the scale knobs ask into the SUT's namespace; returns what the
    testbed's state records (the FIB's layout, what took how long)."""
    out: dict[str, Any] = {}
    if cfg.routes:
        f = fib(cfg.ip_version, cfg.routes)
        t0 = time.monotonic()
        lines = "\n".join(route_lines(f, addressing.sink, names.SUT_OUT)) + "\n"
        run(["ip", "-n", sut_ns, "-batch", "-"], input_text=lines, timeout=600)
        out["fib"] = {**asdict(f), "load_s": round(time.monotonic() - t0, 3)}
        log.info("%d routes loaded in %.2f s", cfg.routes, out["fib"]["load_s"])
    tables = []
    if cfg.nft_rules:
        t0 = time.monotonic()
        run(["nft", "-f", "-"], netns=sut_ns, timeout=600,
            input_text=rules_text(cfg.ip_version, cfg.nft_rules, cfg.nft_set))  # fmt: skip
        out["nft_rules"] = {
            "rules": cfg.nft_rules, "set": bool(cfg.nft_set),
            "load_s": round(time.monotonic() - t0, 3),
        }  # fmt: skip
        tables.append(RULES_TABLE)
    if cfg.conntrack == "on":
        run(["nft", "-f", "-"], netns=sut_ns, input_text=conntrack_text())
        out["conntrack"] = {
            "max": conntrack_max(),
            "buckets": _ns_int(sut_ns, "net.netfilter.nf_conntrack_buckets"),
            "udp_timeout_s": _ns_int(sut_ns, "net.netfilter.nf_conntrack_udp_timeout"),
        }
    if cfg.nat == "snat":
        nat = nat_text(cfg.ip_version, addressing.sut_out)
        run(["nft", "-f", "-"], netns=sut_ns, input_text=nat)
        out["nat"] = {"kind": "snat", "to": addressing.sut_out}
    return out


def conntrack_max() -> int | None:
    """The host's conntrack table limit (one for every namespace), None if unknown."""
    try:
        with open("/proc/sys/net/netfilter/nf_conntrack_max") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def _ns_int(ns: str, key: str) -> int | None:
    out = run(["sysctl", "-n", key], netns=ns, check=False)
    try:
        return int(out.stdout.strip())
    except ValueError:
        return None


def flow_flags(cfg: Any, state: dict[str, Any]) -> list[str]:
    """netassay-gen's flags for the flows' tuples beyond ``--flows``: the FIB's
    destinations, the order and its seed."""
    out: list[str] = []
    f = state.get("scale", {}).get("fib")
    if f:
        out += ["--dsts", str(f["routes"]), "--dst-step", str(f["step"])]
    if cfg.flow_order == "random":
        out += ["--flow-order", "random", "--flow-seed", str(cfg.flow_seed)]
    return out


def sink_flow_flags(cfg: Any, state: dict[str, Any]) -> list[str] | None:
    """The XDP sink's flags to count every flow (``--count-flows``), each frame checked
    against the destination its flow aims at; None when not asked."""
    if not cfg.count_flows:
        return None
    f = state.get("scale", {}).get("fib")
    dst = state["target"]["dst"]
    flags = ["--count-flows", str(cfg.flows), "--dst", dst]
    if f:
        flags += ["--dsts", str(f["routes"]), "--dst-step", str(f["step"])]
    return flags


def first_dst(cfg: Any, sink: str) -> str:
    """Where the flows go: the first route's destination, or the sink's own address."""
    return fib(cfg.ip_version, cfg.routes).first_dst if cfg.routes else sink


def sink_daddr(cfg: Any, sink: str) -> str:
    """What the nft sink's rule matches as the destination: the sink's address, or
    with routes the sink's and the routes' block."""
    if not cfg.routes:
        return sink
    block = "198.19.0.0/16" if cfg.ip_version == 4 else str(V6_BLOCK)
    return f"{{ {sink}, {block} }}"


def describe(state: dict[str, Any]) -> list[str]:
    """The scale knobs of a built testbed, a line each (``testbed show``)."""
    cfg, sc = state.get("config", {}), state.get("scale", {})
    lines = []
    flows = int(cfg.get("flows", 1))
    if flows > 1 or cfg.get("flow_order", "incremental") != "incremental":
        order = cfg.get("flow_order", "incremental")
        seed = f" (seed {cfg.get('flow_seed')})" if order == "random" else ""
        counted = "; the sink counts each one" if cfg.get("count_flows") else ""
        lines.append(f"  flows: {flows:,}, {order} order{seed}{counted}")
    if "fib" in sc:
        f = sc["fib"]
        lines.append(
            f"  FIB: {f['routes']:,} routes of /{f['prefix_len']} from {f['first']} through"
            f" the sink (loaded in {f['load_s']:.2f} s); the flows aim at {f['first_dst']}"
            f" + r * {f['step']}"
        )
    if "nft_rules" in sc:
        r = sc["nft_rules"]
        how = "one set lookup of" if r["set"] else "linear rules:"
        lines.append(
            f"  nft: {how} {r['rules']:,} keys no flow matches, ahead of an accept"
            f" (loaded in {r['load_s']:.2f} s; counters na_passed, na_blocked)"
        )
    if "conntrack" in sc:
        c = sc["conntrack"]
        lines.append(
            f"  conntrack: on (table limit nf_conntrack_max {c.get('max')}, host-wide, in"
            f" {c.get('buckets')} buckets; UDP timeout {c.get('udp_timeout_s')} s; counter"
            " na_ct_invalid)"
        )
    if "nat" in sc:
        lines.append(f"  NAT: source NAT to {sc['nat']['to']} on {names.SUT_OUT} (counter na_snat)")
    return lines

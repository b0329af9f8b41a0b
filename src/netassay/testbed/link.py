"""The acceptance testbed (``--embedded``): a kind of testbed that ``testbed.Testbed``
builds and removes, like the router and rtt testbeds.

    na-<id>-cli (client: the sender)  c0 --veth-- l0  na-<id>-link  l1 --veth-- s0  na-<id>-srv

The link namespace routes between the client's and the server's subnets and carries
the ground truths of a known link, both on the client -> server direction only:

- ``link_cap_bps``: a *shaper* (tbf) on ``l1``, the link's egress toward the server. It
  counts at **L1**, as an Ethernet circuit's rate is sold: the size table adds 24 bytes
  to every frame (preamble and start delimiter 8, inter-frame gap 12, FCS 4) to the
  frame tbf sees (Ethernet header and IP packet). Its bucket holds 1 ms of traffic
  (at least two frames) and its queue 50 ms: a paced sender's bursts below the cap
  pass, a sender above it loses the excess in that queue (counted: ``tc -s``).
- ``link_drop``: random loss of probability P of the test datagrams (UDP, longer than
  iperf3's 4-byte connect message, so that the test always starts), nft ``numgen
  random`` in the link's forward hook, counted.

Where the work runs (seed 004's rxN/txN on veth, where there is no NIC interrupt): a
veth transmit hands the frame to the receiving side's backlog on the sending CPU, so
the packet work of the path runs on the client's CPU unless RPS steers it. ``tx_cpu``
steers the link's ingress (``l0``: the forwarding of the transmitted frames) by RPS and
sets the XPS mask of the client's ``c0``; ``rx_cpu`` steers the server's ingress
(``s0``: the receive softirq up to the socket). ``client_cpu`` and ``server_cpu`` are
where the sender and the receiver run (taskset). None leaves the kernel's choice.
Addresses: 198.18.20.0/24 (client side), 198.18.21.0/24 (server side), or
2001:2:0:20::/64 and 2001:2:0:21::/64: away from the router and rtt testbeds.
"""

from __future__ import annotations

import ipaddress
import json
import os
from dataclasses import asdict, dataclass, fields
from typing import Any

from netassay import names
from netassay.errors import UsageError
from netassay.proc import run
from netassay.testbed import state as testbed_state
from netassay.testbed.topology import link_mac

KIND = "accept"
ROLES = ("cli", "link", "srv")
CLI_DEV, LINK_IN, LINK_OUT, SRV_DEV = "c0", "l0", "l1", "s0"
# preamble + start delimiter (8), inter-frame gap (12), FCS (4): L1 bytes beyond the
# frame a qdisc sees (Ethernet header + IP packet)
L1_EXTRA_BYTES = 24
CAP_BUCKET_S = 0.001
CAP_QUEUE_S = 0.05
# test datagrams only: iperf3's UDP connect message (4 bytes of payload) is never dropped
DROP_MIN_UDP_LEN = 64
_V4 = {"cli": "198.18.20.2", "l0": "198.18.20.1", "l1": "198.18.21.1", "srv": "198.18.21.2"}
_V6 = {
    "cli": "2001:2:0:20::2",
    "l0": "2001:2:0:20::1",
    "l1": "2001:2:0:21::1",
    "srv": "2001:2:0:21::2",
}


@dataclass(frozen=True)
class AcceptTestbedConfig:
    """What an acceptance testbed is built from (the test's own knobs are in ``run``)."""

    __test__ = False
    kind: str = KIND  # the testbed kind (testbed.topology.KINDS)
    ip_version: int = 4
    mtu: int = 1500
    link_cap_bps: float | None = None  # ground truth: shaper at L1, bits/s
    link_drop: float = 0.0  # ground truth: random loss probability
    client_cpu: int | None = 0  # where the sender runs
    server_cpu: int | None = 1  # where the receiver runs
    rx_cpu: int | None = None  # RPS of the server's ingress s0
    tx_cpu: int | None = None  # RPS of the link's ingress l0, XPS of the client's c0

    def global_sysctls(self) -> dict[str, str]:
        return {}  # everything this testbed sets lives in its own namespaces

    def cpus(self) -> dict[str, int | None]:
        return {
            "client": self.client_cpu,
            "server": self.server_cpu,
            "rx": self.rx_cpu,
            "tx": self.tx_cpu,
        }


def config_from_state(state: dict[str, Any]) -> AcceptTestbedConfig:
    known = {f.name for f in fields(AcceptTestbedConfig)}
    return AcceptTestbedConfig(**{k: v for k, v in state["config"].items() if k in known})


def addresses(ip_version: int) -> dict[str, str]:
    a = _V4 if ip_version == 4 else _V6
    net = names.BENCH_V4 if ip_version == 4 else names.BENCH_V6
    for addr in a.values():  # a guard against edits
        if ipaddress.ip_address(addr) not in net:
            raise UsageError(f"address {addr} is outside {net}", "", "fix link.py")
    return dict(a)


def validate(cfg: AcceptTestbedConfig) -> None:
    """Refuse a testbed that cannot be built here, before anything is touched."""
    if cfg.ip_version not in (4, 6):
        raise UsageError(f"bad IP version {cfg.ip_version}", "4 or 6", "e.g. --ip 4")
    if not 1280 <= cfg.mtu <= 9000:
        raise UsageError(f"bad MTU {cfg.mtu}", "1280..9000 bytes", "e.g. 1500 or 9000")
    if cfg.link_cap_bps is not None and not 1e5 <= cfg.link_cap_bps <= 1e11:
        raise UsageError(f"bad --link-cap {cfg.link_cap_bps:g}", "100k..100G bit/s", "e.g. 440M")
    if not 0 <= cfg.link_drop < 1:
        raise UsageError(
            f"bad --link-drop {cfg.link_drop}", "a probability in [0, 1)", "e.g. 0.001"
        )
    n = os.cpu_count() or 1
    for what, cpu in cfg.cpus().items():
        if cpu is not None and not 0 <= cpu < n:
            raise UsageError(
                f"bad {what} CPU {cpu}", f"this machine has CPUs 0..{n - 1}", "pick one"
            )


def _sysctl(ns: str, *kv: str) -> None:
    run(["sysctl", "-q", "-w", *kv], netns=ns)


def _mask(cpu: int) -> str:
    return format(1 << cpu, "x")


def _steer(ns: str, dev: str, queue: str, cpu: int | None) -> dict[str, str]:
    """Write an RPS (``rx-0/rps_cpus``) or XPS (``tx-0/xps_cpus``) mask."""
    if cpu is None:
        return {}
    path = f"/sys/class/net/{dev}/queues/{queue}"
    run(["tee", path], netns=ns, input_text=_mask(cpu) + "\n")
    return {f"{ns}:{dev}:{queue.split('/')[0]}": _mask(cpu)}


def shaper_argv(ns: str, cap_bps: float, mtu: int, dev: str = LINK_OUT) -> list[str]:
    """tbf on the link's egress toward the server (or on ``dev``), counting L1 bytes
    (size table)."""
    rate_bytes = cap_bps / 8
    burst = max(2 * (mtu + 14 + L1_EXTRA_BYTES), round(rate_bytes * CAP_BUCKET_S))
    limit = max(64 * 1024, round(rate_bytes * CAP_QUEUE_S))
    return [
        "tc",
        "-n",
        ns,
        "qdisc",
        "replace",
        "dev",
        dev,
        "root",
        "stab",
        "overhead",
        str(L1_EXTRA_BYTES),
        "linklayer",
        "ethernet",
        "tbf",
        "rate",
        f"{round(cap_bps)}bit",
        "burst",
        str(burst),
        "limit",
        str(limit),
    ]


def drop_rules(p: float) -> str:
    threshold = round(p * 1_000_000)
    return f"""table inet na_link {{
  counter na_drop {{ }}
  chain na_forward {{ type filter hook forward priority 0; policy accept;
    oifname "{LINK_OUT}" meta l4proto udp udp length > {DROP_MIN_UDP_LEN} numgen random mod 1000000 < {threshold} counter name "na_drop" drop
  }}
}}
"""  # noqa: E501


# netassay-gen's frames (UDP to the discard port) end at the server's ingress hook: the
# receiver counts them from its AF_PACKET ring before, and the server's stack never
# answers them with ICMP port unreachable across the link.
SERVER_RULES = """table inet na_srv {
  chain na_pre { type filter hook prerouting priority -300; policy accept;
    udp dport 9 counter drop
  }
}
"""


def build(name: str, cfg: AcceptTestbedConfig) -> dict[str, Any]:
    """Create the acceptance testbed; return its state (also written to the run dir)."""
    validate(cfg)
    ns = {role: names.netns(name, role) for role in ROLES}
    state = testbed_state.begin_state(name, KIND, asdict(cfg), ns)
    v6 = cfg.ip_version == 6
    devs = _wire(ns, cfg.mtu, v6)
    macs = {dev: link_mac(n, dev) for n, dev in devs}
    addr = addresses(cfg.ip_version)
    _route(ns, addr, macs, v6)
    link = _impair(ns["link"], cfg)
    run(["nft", "-f", "-"], netns=ns["srv"], input_text=SERVER_RULES)
    steer: dict[str, str] = {}
    steer.update(_steer(ns["srv"], SRV_DEV, "rx-0/rps_cpus", cfg.rx_cpu))
    steer.update(_steer(ns["link"], LINK_IN, "rx-0/rps_cpus", cfg.tx_cpu))
    steer.update(_steer(ns["cli"], CLI_DEV, "tx-0/xps_cpus", cfg.tx_cpu))
    state.update(
        macs=macs,
        addresses=addr,
        link=link,
        steering=steer,
        cpus=cfg.cpus(),
        target={
            "netns": ns["cli"],
            "dev": CLI_DEV,
            "dst_mac": macs[LINK_IN],
            "src": addr["cli"],
            "dst": addr["srv"],
            "server_netns": ns["srv"],
            "server_dev": SRV_DEV,
        },
    )
    testbed_state.write_state(name, state)
    return state


def _wire(ns: dict[str, str], mtu: int, v6: bool) -> tuple[tuple[str, str], ...]:
    """The three namespaces and the two veth pairs cli - link - srv, up at ``mtu``."""
    for n in ns.values():
        run(["ip", "netns", "add", n])
        if v6:
            _sysctl(n, "net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.default.accept_ra=0")
        else:
            _sysctl(n, "net.ipv6.conf.default.disable_ipv6=1", "net.ipv6.conf.all.disable_ipv6=1")
        run(["ip", "-n", n, "link", "set", "lo", "up"])
    for a, ns_a, b, ns_b in (
        (CLI_DEV, ns["cli"], LINK_IN, ns["link"]),
        (LINK_OUT, ns["link"], SRV_DEV, ns["srv"]),
    ):
        veth = ["type", "veth", "peer", "name", b, "netns", ns_b]
        run(["ip", "link", "add", a, "netns", ns_a, *veth])
    devs = (
        (ns["cli"], CLI_DEV),
        (ns["link"], LINK_IN),
        (ns["link"], LINK_OUT),
        (ns["srv"], SRV_DEV),
    )
    for n, dev in devs:
        run(["ip", "-n", n, "link", "set", dev, "mtu", str(mtu), "up"])
    return devs


def _impair(link_ns: str, cfg: AcceptTestbedConfig) -> dict[str, Any]:
    """The link's known cap (tbf) and drop (nft); what they are, for the state."""
    link: dict[str, Any] = {"cap_bps": cfg.link_cap_bps, "drop": cfg.link_drop}
    if cfg.link_cap_bps:
        run(shaper_argv(link_ns, cfg.link_cap_bps, cfg.mtu))
        link.update(
            cap_kind="shaper (tbf)",
            cap_layer="l1",
            cap_device=LINK_OUT,
            cap_bucket_s=CAP_BUCKET_S,
            cap_queue_s=CAP_QUEUE_S,
        )
    if cfg.link_drop > 0:
        run(["nft", "-f", "-"], netns=link_ns, input_text=drop_rules(cfg.link_drop))
        link.update(drop_kind="nft numgen random", drop_device=LINK_OUT)
    return link


def _route(ns: dict[str, str], addr: dict[str, str], macs: dict[str, str], v6: bool) -> None:
    """Addresses, routes through the link, forwarding, static neighbours."""
    plen = 64 if v6 else 24
    fam = "-6" if v6 else "-4"
    nodad = ["nodad"] if v6 else []
    for n, dev, a in (
        (ns["cli"], CLI_DEV, addr["cli"]),
        (ns["link"], LINK_IN, addr["l0"]),
        (ns["link"], LINK_OUT, addr["l1"]),
        (ns["srv"], SRV_DEV, addr["srv"]),
    ):
        run(["ip", "-n", n, "addr", "add", f"{a}/{plen}", "dev", dev, *nodad])
    bench = str(names.BENCH_V6 if v6 else names.BENCH_V4)
    run(["ip", "-n", ns["cli"], fam, "route", "add", bench, "via", addr["l0"]])
    run(["ip", "-n", ns["srv"], fam, "route", "add", bench, "via", addr["l1"]])
    _sysctl(ns["link"], "net.ipv6.conf.all.forwarding=1" if v6 else "net.ipv4.ip_forward=1")
    for n, dev, a, lladdr in (
        (ns["cli"], CLI_DEV, addr["l0"], macs[LINK_IN]),
        (ns["link"], LINK_IN, addr["cli"], macs[CLI_DEV]),
        (ns["link"], LINK_OUT, addr["srv"], macs[SRV_DEV]),
        (ns["srv"], SRV_DEV, addr["l1"], macs[LINK_OUT]),
    ):
        run(
            ["ip", "-n", n, "neigh", "replace", a, "lladdr", lladdr, "dev", dev, "nud", "permanent"]
        )


def masks(state: dict[str, Any]) -> dict[str, str]:
    """The RPS and XPS masks of every device of the link as they are now (read back, not
    as asked): ``<netns>:<dev>:rps`` and ``:xps``; 0 means the kernel's default."""
    ns = state["namespaces"]
    out = {}
    for role, dev in (("cli", CLI_DEV), ("link", LINK_IN), ("link", LINK_OUT), ("srv", SRV_DEV)):
        for kind, queue in (("rps", "rx-0/rps_cpus"), ("xps", "tx-0/xps_cpus")):
            path = f"/sys/class/net/{dev}/queues/{queue}"
            res = run(["cat", path], netns=ns[role], check=False)
            out[f"{ns[role]}:{dev}:{kind}"] = res.stdout.strip() if res.returncode == 0 else "?"
    return out


def truth_counters(state: dict[str, Any]) -> dict[str, int]:
    """What the ground truths dropped so far: the shaper's queue and the random drop."""
    ns = state["namespaces"]["link"]
    out: dict[str, int] = {}
    if state.get("link", {}).get("cap_bps"):
        q = json.loads(run(["tc", "-n", ns, "-s", "-j", "qdisc", "show", "dev", LINK_OUT]).stdout)
        tbf: dict[str, Any] = next((x for x in q if x.get("kind") == "tbf"), {})
        out["link.cap_dropped"] = int(tbf.get("drops", 0))
        out["link.cap_sent_packets"] = int(tbf.get("packets", 0))
    if state.get("link", {}).get("drop"):
        c = json.loads(
            run(["nft", "-j", "list", "counter", "inet", "na_link", "na_drop"], netns=ns).stdout
        )
        for item in c.get("nftables", []):
            if "counter" in item:
                out["link.random_dropped"] = int(item["counter"]["packets"])
    return out

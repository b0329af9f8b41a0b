"""The TCP path (``netassay tcp``): a kind of testbed that ``testbed.Testbed`` builds and
removes, like the acceptance link.

    na-<id>-cli  c0 --veth-- p0  na-<id>-path  p1 --veth-- s0  na-<id>-srv
    (client: iperf3 -c)        (the delay)              (server: iperf3 -s)

The client and the server share one subnet; the path namespace holds no address and
carries every frame from one side to the other after a known delay, so the path is a
long wire. Its ground truths:

- ``delay_s``: one-way delay, each direction. By **netem** where the kernel has it (a
  bridge of p0 and p1, netem on both egresses); where it has none (no netem, fq or ETF
  on this kernel: detected when the path is built) by **netassay-gen's delay line**,
  an AF_PACKET forwarder at a real-time priority that holds each frame until its kernel
  receive time plus the delay, in order. The line counts what it could not carry (its
  socket's drops, its queue, late departures): a run over a line that dropped frames
  measured the line, not TCP, and is a fault. With no delay the path is a kernel bridge.
  Which one it is is in the state (``path.delay_kind``).
- ``loss``: random loss of probability P of the client's data segments (TCP, IP
  length over 100 bytes: pure ACKs and handshakes pass), nft ``numgen random`` at the
  server's ingress, after the path (a frame lost on the wire), counted.
- ``bottleneck_bps``: a shaper (tbf) on the client's egress, counting at L1 like the
  acceptance link's: the path's rate, below what the delay line carries, so that TCP
  fills a known queue and never the line. Its queue is the client's own: TCP meets it
  as back-pressure (TCP small queues), never as loss.

Offloads are off on the four devices (TSO, GSO, GRO, and transmit checksums: a frame
the line forwards must be whole on the wire, with its checksum computed). Addresses:
198.18.22.0/24 or 2001:2:0:22::/64, away from the other testbeds.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from netassay import names
from netassay.errors import TestbedError, UsageError
from netassay.proc import in_netns, run
from netassay.testbed import state as testbed_state
from netassay.testbed.link import shaper_argv
from netassay.testbed.topology import link_mac
from netassay.traffic.generator import find_generator

KIND = "tcp"
CLI_DEV, PATH_IN, PATH_OUT, SRV_DEV = "c0", "p0", "p1", "s0"
MAX_DELAY_S = 1.0  # one way; the line holds up to its queue of frames for this long
DROP_MIN_IP_LEN = 100  # data segments only: ACKs, SYN and FIN pass
OFFLOADS = ("tso", "gso", "gro", "tx")
LINE_READY_S = 10.0
LINE_PRIORITY = 10  # SCHED_FIFO; the kernel's real-time throttling keeps 5% for the rest
NO_DELAY = "none (a kernel bridge)"
LINE = "delay line (netassay-gen)"
_V4 = {"cli": "198.18.22.2", "srv": "198.18.22.3"}
_V6 = {"cli": "2001:2:0:22::2", "srv": "2001:2:0:22::3"}


@dataclass(frozen=True)
class TcpPathConfig:
    """What a TCP path is built from (the transfer's own knobs are the method's)."""

    __test__ = False
    kind: str = KIND
    ip_version: int = 4
    mtu: int = 1500
    delay_s: float = 0.0  # ground truth: one-way delay, each direction
    loss: float = 0.0  # ground truth: random loss of the client's data segments
    bottleneck_bps: float | None = None  # ground truth: the path's rate at L1
    client_cpu: int | None = 0
    server_cpu: int | None = 1
    line_cpu: int | None = None  # the delay line's threads (None: the kernel's choice)

    def global_sysctls(self) -> dict[str, str]:
        return {}  # everything this testbed sets lives in its own namespaces


def config_from_state(state: dict[str, Any]) -> TcpPathConfig:
    known = {f.name for f in fields(TcpPathConfig)}
    return TcpPathConfig(**{k: v for k, v in state["config"].items() if k in known})


def addresses(ip_version: int) -> dict[str, str]:
    return dict(_V4 if ip_version == 4 else _V6)


def validate(cfg: TcpPathConfig) -> None:
    """Refuse a path that cannot be built here, before anything is touched."""
    if cfg.ip_version not in (4, 6):
        raise UsageError(f"bad IP version {cfg.ip_version}", "4 or 6", "e.g. --ip 4")
    if not 1280 <= cfg.mtu <= 9000:
        raise UsageError(f"bad MTU {cfg.mtu}", "1280..9000 bytes", "e.g. 1500 or 9000")
    if not 0 <= cfg.delay_s <= MAX_DELAY_S:
        raise UsageError(
            f"bad --delay {cfg.delay_s * 1e3:g}ms",
            f"the path delays each direction by 0..{MAX_DELAY_S * 1e3:g} ms",
            "e.g. --delay 20ms",
        )
    if not 0 <= cfg.loss < 1:
        raise UsageError(f"bad --loss {cfg.loss}", "a probability in [0, 1)", "e.g. 1e-4")
    if cfg.bottleneck_bps is not None and not 1e5 <= cfg.bottleneck_bps <= 1e11:
        raise UsageError(
            f"bad --bottleneck {cfg.bottleneck_bps:g}", "100k..100G bit/s", "e.g. 500M"
        )
    n = os.cpu_count() or 1
    for what, c in (("client", cfg.client_cpu), ("server", cfg.server_cpu), ("line", cfg.line_cpu)):
        if c is not None and not 0 <= c < n:
            raise UsageError(f"bad {what} CPU {c}", f"this machine has CPUs 0..{n - 1}", "pick one")


def line_stats_path(name: str) -> Path:
    """Where the delay line of testbed ``name`` writes its counters (every second)."""
    return testbed_state.run_dir() / "lines" / f"{names.validate_name(name)}.json"


def build(name: str, cfg: TcpPathConfig) -> dict[str, Any]:
    """Create the TCP path; return its state (also written to the run dir)."""
    validate(cfg)
    ns = {role: names.netns(name, role) for role in names.TCP_ROLES}
    state = testbed_state.begin_state(name, KIND, asdict(cfg), ns)
    v6 = cfg.ip_version == 6
    _wire(ns, cfg.mtu, v6)
    macs = {CLI_DEV: link_mac(ns["cli"], CLI_DEV), SRV_DEV: link_mac(ns["srv"], SRV_DEV)}
    addr = addresses(cfg.ip_version)
    _address(ns, addr, macs, v6)
    path: dict[str, Any] = {"delay_s": cfg.delay_s, "loss": cfg.loss,
                            "bottleneck_bps": cfg.bottleneck_bps}  # fmt: skip
    if cfg.loss > 0:
        run(["nft", "-f", "-"], netns=ns["srv"], input_text=drop_rules(cfg.loss, addr["cli"], v6))
        path.update(loss_kind="nft numgen random", loss_device=SRV_DEV)
    if cfg.bottleneck_bps:
        run(shaper_argv(ns["cli"], cfg.bottleneck_bps, cfg.mtu, dev=CLI_DEV))
        path.update(bottleneck_kind="shaper (tbf)", bottleneck_layer="l1",
                    bottleneck_device=CLI_DEV)  # fmt: skip
    if cfg.delay_s == 0:
        _bridge(ns["path"])
        path.update(delay_kind=NO_DELAY)
    elif netem_available(ns["path"]):
        _bridge(ns["path"])
        for dev in (PATH_IN, PATH_OUT):
            run(netem_argv(dev, cfg.delay_s), netns=ns["path"])
        path.update(delay_kind="netem")
    else:
        path.update(delay_kind=LINE, line=_start_line(name, ns["path"], cfg))
    state.update(
        macs=macs,
        addresses=addr,
        path=path,
        target={"netns": ns["cli"], "dev": CLI_DEV, "src": addr["cli"], "dst": addr["srv"],
                "server_netns": ns["srv"], "server_dev": SRV_DEV},
    )  # fmt: skip
    testbed_state.write_state(name, state)
    return state


def _wire(ns: dict[str, str], mtu: int, v6: bool) -> None:
    """The three namespaces, the two veth pairs cli - path - srv up at ``mtu``, offloads
    off, the path's two ends promiscuous and without IPv6 (no address of their own)."""
    for n in ns.values():
        run(["ip", "netns", "add", n])
        if v6:
            run(["sysctl", "-q", "-w", "net.ipv6.conf.default.accept_dad=0",
                 "net.ipv6.conf.default.accept_ra=0"], netns=n)  # fmt: skip
        else:
            run(["sysctl", "-q", "-w", "net.ipv6.conf.default.disable_ipv6=1",
                 "net.ipv6.conf.all.disable_ipv6=1"], netns=n)  # fmt: skip
        run(["ip", "-n", n, "link", "set", "lo", "up"])
    for a, ns_a, b, ns_b in ((CLI_DEV, ns["cli"], PATH_IN, ns["path"]),
                             (PATH_OUT, ns["path"], SRV_DEV, ns["srv"])):  # fmt: skip
        run(["ip", "link", "add", a, "netns", ns_a, "type", "veth", "peer", "name", b,
             "netns", ns_b])  # fmt: skip
    for n, dev in ((ns["cli"], CLI_DEV), (ns["path"], PATH_IN), (ns["path"], PATH_OUT),
                   (ns["srv"], SRV_DEV)):  # fmt: skip
        if n == ns["path"]:
            run(["sysctl", "-q", "-w", f"net.ipv6.conf.{dev}.disable_ipv6=1"], netns=n)
            run(["ip", "-n", n, "link", "set", dev, "promisc", "on"])
        run(["ip", "-n", n, "link", "set", dev, "mtu", str(mtu), "up"])
        run(["ethtool", "-K", dev, *(x for o in OFFLOADS for x in (o, "off"))], netns=n)


def _address(ns: dict[str, str], addr: dict[str, str], macs: dict[str, str], v6: bool) -> None:
    plen = 64 if v6 else 24
    nodad = ["nodad"] if v6 else []
    for n, dev, a in ((ns["cli"], CLI_DEV, addr["cli"]), (ns["srv"], SRV_DEV, addr["srv"])):
        run(["ip", "-n", n, "addr", "add", f"{a}/{plen}", "dev", dev, *nodad])
    for n, dev, a, mac in ((ns["cli"], CLI_DEV, addr["srv"], macs[SRV_DEV]),
                           (ns["srv"], SRV_DEV, addr["cli"], macs[CLI_DEV])):  # fmt: skip
        run(["ip", "-n", n, "neigh", "replace", a, "lladdr", mac, "dev", dev, "nud",
             "permanent"])  # fmt: skip


def drop_rules(p: float, client: str, v6: bool) -> str:
    """Random loss of the client's data segments at the server's ingress (counted)."""
    threshold = round(p * 1_000_000)
    if v6:  # ip6 length is the payload's: the 40-byte header is not in it
        match = f"ip6 saddr {client} meta l4proto tcp ip6 length > {DROP_MIN_IP_LEN - 40}"
    else:
        match = f"ip saddr {client} ip protocol tcp ip length > {DROP_MIN_IP_LEN}"
    return f"""table netdev na_path {{
  counter na_drop {{ }}
  chain na_in {{ type filter hook ingress device "{SRV_DEV}" priority 0; policy accept;
    {match} numgen random mod 1000000 < {threshold} counter name "na_drop" drop
  }}
}}
"""


def netem_available(ns: str) -> bool:
    """Whether this kernel has netem (tried on the namespace's loopback, then removed)."""
    add = ["tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"]
    if run(add, netns=ns, check=False).returncode != 0:
        return False
    run(["tc", "qdisc", "del", "dev", "lo", "root"], netns=ns, check=False)
    return True


def netem_argv(dev: str, delay_s: float) -> list[str]:
    """netem's delay on one egress of the path (a limit that holds 1 s at 10 Gbit/s)."""
    us = round(delay_s * 1e6)
    return ["tc", "qdisc", "replace", "dev", dev, "root", "netem", "delay", f"{us}us",
            "limit", "1000000"]  # fmt: skip


def _bridge(ns: str) -> None:
    """The path as a kernel bridge of p0 and p1 (no delay of its own; netem's on top)."""
    run(["ip", "-n", ns, "link", "add", "br0", "type", "bridge", "stp_state", "0"])
    for dev in (PATH_IN, PATH_OUT):
        run(["ip", "-n", ns, "link", "set", dev, "master", "br0"])
    run(["ip", "-n", ns, "link", "set", "br0", "up"])


def line_argv(cfg: TcpPathConfig, stats: Path) -> list[str]:
    """netassay-gen's delay line between the path's two ends, at a real-time priority:
    on a shared machine a line at the normal priority woke up to milliseconds late
    (measured), and each frame's delay is its wake-up's."""
    argv = [
        "chrt", "-f", str(LINE_PRIORITY), find_generator(), "delay", "--a", PATH_IN, "--b",
        PATH_OUT, "--delay", f"{round(cfg.delay_s * 1e9)}ns", "--stats", str(stats),
    ]  # fmt: skip
    if cfg.line_cpu is not None:
        argv += ["--cpu", str(cfg.line_cpu)]
    return argv


def _start_line(name: str, ns: str, cfg: TcpPathConfig) -> dict[str, Any]:
    """Start the delay line in the path's namespace and wait for its ready line. It runs
    until the testbed's teardown ends what runs in its namespaces (SIGTERM: its last
    counters written)."""
    stats = line_stats_path(name)
    stats.parent.mkdir(parents=True, exist_ok=True)
    stats.unlink(missing_ok=True)
    proc = subprocess.Popen(in_netns(ns, line_argv(cfg, stats)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], LINE_READY_S)
    line = proc.stdout.readline() if ready else ""
    try:
        info = json.loads(line) if line else {}
    except ValueError:
        info = {}
    if not info.get("ready"):
        proc.kill()
        err = (proc.communicate(timeout=5)[1] or "").strip().splitlines()
        raise TestbedError(
            "the delay line did not start",
            err[-1] if err else f"no ready line in {LINE_READY_S:g} s",
            "run 'make setup' (it builds netassay-gen) and check 'netassay-gen --help'",
        )
    proc.stdout.close()
    return {"pid": int(info["pid"]), "stats": str(stats), "argv": proc.args}


def line_stats(state: dict[str, Any]) -> dict[str, Any] | None:
    """The delay line's counters now (None: no line, or no counters written yet)."""
    line = state.get("path", {}).get("line")
    if not line:
        return None
    try:
        stats: dict[str, Any] = json.loads(Path(line["stats"]).read_text())
        return stats
    except (OSError, ValueError):
        return None


def line_drops(stats: dict[str, Any] | None) -> int:
    """Frames the line lost so far, both directions, every reason."""
    if not stats:
        return 0
    keys = ("drop_socket", "drop_queue", "drop_send", "drop_oversize")
    return sum(int(stats.get(d, {}).get(k, 0)) for d in ("ab", "ba") for k in keys)


def truth_counters(state: dict[str, Any]) -> dict[str, int]:
    """What the ground truths and the line dropped so far."""
    out: dict[str, int] = {}
    if state.get("path", {}).get("loss"):
        ns = state["namespaces"]["srv"]
        c = json.loads(
            run(["nft", "-j", "list", "counter", "netdev", "na_path", "na_drop"], netns=ns).stdout
        )
        for item in c.get("nftables", []):
            if "counter" in item:
                out["path.random_dropped"] = int(item["counter"]["packets"])
    stats = line_stats(state)
    if stats is not None:
        out["path.line_dropped"] = line_drops(stats)
    return out


def wait_line_counters(state: dict[str, Any], after: float, timeout_s: float = 3.0) -> None:
    """Wait until the line's counters were written after ``after`` (time.time())."""
    line = state.get("path", {}).get("line")
    if not line:
        return
    deadline = time.monotonic() + timeout_s
    p = Path(line["stats"])
    while time.monotonic() < deadline:
        try:
            if p.stat().st_mtime >= after:
                return
        except OSError:
            pass
        time.sleep(0.05)


def forget(state: dict[str, Any]) -> None:
    """On teardown and cleanup: end the delay line (its last counters written) and
    remove its counters file."""
    line = state.get("path", {}).get("line")
    if not line:
        return
    pid = int(line["pid"])
    try:
        if b"delay" in Path(f"/proc/{pid}/cmdline").read_bytes():
            os.kill(pid, 15)
            deadline = time.monotonic() + 2.0
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.02)
    except (OSError, ValueError):
        pass  # already gone
    Path(line["stats"]).unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    """Running (a zombie child of this process is reaped and counts as ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rpartition(")")[2].split()[0] != "Z":
        return True
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    return False

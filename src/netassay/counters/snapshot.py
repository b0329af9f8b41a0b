"""Read kernel counters in every testbed namespace (JSON output where the tools have it).

A snapshot is a dict (``Snapshot``; stored raw with each trial):
``{"utc", "softnet": [[processed, dropped, squeezed] per CPU], "ns": {role: {"links",
"snmp", "qdisc_drops", "nft"[, "xdp_router"]}}, "sink_flows": {"src|sport|dport": packets},
"sink_xdp": {"packets": n}}`` (a namespace whose conntrack table is read also has
"conntrack": {"count", "stats"}, ``counters.sutstate``; ``sink_xdp`` when the sink
counts with XDP and the count could be read: its absence after a trial is a counter
fault). ``xdp_router`` (reason -> packets, see ``counters.xdp_router.REASONS``) is there
for a namespace running the XDP router. Each namespace's ``link_state``
(``LINK_STATE``) is not a counter: per link, whether it is set up (``admin_up``) and up
(set up, with a carrier: ``up``), its carrier changes since it was made (None where they
cannot be read) and the id of the XDP program on it (None: none); the trial engine reads
it to tell a testbed that changed under a trial (``trial.integrity``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from netassay.counters import sutstate, xdp_router
from netassay.proc import run
from netassay.units import utc_now

if TYPE_CHECKING:
    from netassay.counters.sink import SinkCount, SinkCounter

T = TypeVar("T")  # what a counter read gives (a count, or a pair of counts)
LINK_FIELDS = ("packets", "dropped", "errors")
LINK_STATE = "link_state"  # per link: up, carrier_changes, xdp_prog (not flattened)


class Snapshot(TypedDict, total=False):
    """The counters a trial reads before and after it (see the module): when, the
    host's softnet_stat, each namespace's (by role), the sink's flows and its XDP count,
    with --bidirectional the reverse sink's, a data plane's own (``testbed.dataplane``);
    an external testbed's ports' (``ns``: role -> its port's ``links``), their ethtool
    statistics and its SUT's own (``testbed.external``)."""

    utc: str
    softnet: list[list[int]]
    ns: dict[str, dict[str, Any]]
    sink_flows: dict[str, int]
    sink_xdp: SinkCount
    reverse_xdp: SinkCount
    dataplane: dict[str, Any]
    ethtool: dict[str, Any]
    sut_counters: dict[str, Any]


def parse_softnet(text: str) -> list[list[int]]:
    """``/proc/net/softnet_stat``: one hex row per CPU; processed, dropped, squeezed."""
    rows = []
    for line in text.splitlines():
        cols = line.split()
        if len(cols) >= 3:
            rows.append([int(cols[0], 16), int(cols[1], 16), int(cols[2], 16)])
    return rows


def parse_snmp(text: str) -> dict[str, dict[str, int]]:
    """``/proc/net/snmp`` (header/value line pairs) and ``snmp6`` (name value lines)."""
    out: dict[str, dict[str, int]] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        cols = lines[i].split()
        if len(cols) == 2 and not cols[0].endswith(":"):  # snmp6 style
            out.setdefault("Ip6", {})[cols[0]] = int(cols[1])
            i += 1
            continue
        if cols and cols[0].endswith(":") and i + 1 < len(lines):
            vals = lines[i + 1].split()
            if vals and vals[0] == cols[0]:
                table = cols[0][:-1]
                out[table] = {k: int(v) for k, v in zip(cols[1:], vals[1:], strict=False)}
                i += 2
                continue
        i += 1
    return out


def parse_links(data: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    out = {}
    for link in data:
        st = link.get("stats64") or link.get("stats") or {}
        row = {}
        for side in ("rx", "tx"):
            for f in LINK_FIELDS:
                row[f"{side}_{f}"] = int(st.get(side, {}).get(f, 0))
        out[link["ifname"]] = row
    return out


class LinkState(TypedDict):
    """A link's state beside its counters (``LINK_STATE``): set up, up (set up and with
    a carrier), its carrier's changes since it was made (None: not known), the id of the
    XDP program on it (None: none)."""

    admin_up: bool
    up: bool
    carrier_changes: int | None
    xdp_prog: int | None


def parse_link_state(data: list[dict[str, Any]]) -> dict[str, LinkState]:
    """``ip -j link``'s links as ``LINK_STATE`` holds them (it shows no carrier changes)."""
    out: dict[str, LinkState] = {}
    for link in data:
        flags = link.get("flags", [])
        prog = (link.get("xdp") or {}).get("prog") or {}
        out[link["ifname"]] = {
            "admin_up": "UP" in flags,
            "up": "UP" in flags and "LOWER_UP" in flags,
            "carrier_changes": None,
            "xdp_prog": int(prog["id"]) if "id" in prog else None,
        }
    return out


def parse_qdisc_drops(data: list[dict[str, Any]]) -> dict[str, int]:
    """Drops per device summed over its top qdiscs (a child's drops are its parent's
    too: ``netlink.qdisc_drops``)."""
    out: dict[str, int] = {}
    for q in data:
        if q.get("parent") not in (None, "ffff:fff1"):
            continue
        out[q["dev"]] = out.get(q["dev"], 0) + int(q.get("drops", 0))
    return out


def parse_nft_counters(doc: dict[str, Any]) -> dict[str, int]:
    return {
        e["counter"]["name"]: int(e["counter"]["packets"])
        for e in doc.get("nftables", [])
        if "counter" in e
    }


def parse_nft_set(doc: dict[str, Any]) -> dict[str, int]:
    """Elements of a dynamic nft set with counters: ``'a|b|c' -> packets``."""
    flows = {}
    for e in doc.get("nftables", []):
        for el in e.get("set", {}).get("elem", []):
            el = el.get("elem", el)
            val = el.get("val")
            key = "|".join(map(str, val["concat"])) if isinstance(val, dict) else str(val)
            flows[key] = int(el.get("counter", {}).get("packets", 0))
    return flows


def _ns_snapshot(ns: str, conntrack: bool = False) -> dict[str, Any]:
    links = json.loads(run(["ip", "-n", ns, "-j", "-s", "link", "show"]).stdout or "[]")
    qdiscs = json.loads(run(["tc", "-n", ns, "-j", "-s", "qdisc", "show"]).stdout or "[]")
    nft = json.loads(run(["nft", "-j", "list", "counters"], netns=ns).stdout or "{}")
    snmp = run(["cat", "/proc/net/snmp", "/proc/net/snmp6"], netns=ns).stdout
    snap = {
        "links": parse_links(links),
        "snmp": parse_snmp(snmp),
        "qdisc_drops": parse_qdisc_drops(qdiscs),
        "nft": parse_nft_counters(nft),
        LINK_STATE: parse_link_state(links),
    }
    xdp = xdp_router_counters(links)
    if xdp is not None:
        snap["xdp_router"] = xdp
    if conntrack:
        text = run(["cat", sutstate.CT_COUNT, f"/proc/{sutstate.CT_STAT}"], netns=ns).stdout
        count, _, stats = text.partition("\n")
        snap["conntrack"] = sutstate.parse_conntrack(count, stats)
    return snap


def xdp_router_counters(links: list[dict[str, Any]]) -> dict[str, int] | None:
    """The XDP router's counters (reason -> packets) when one of these links runs it."""

    for link in links:
        pid = xdp_router.prog_id([link], link.get("ifname", ""))
        if pid is not None:
            return xdp_router.read_counters(pid)
    return None


def sink_flows(sink_ns: str) -> dict[str, int]:
    doc = json.loads(
        run(["nft", "-j", "list", "set", "netdev", "na_sink", "na_flows"], netns=sink_ns).stdout
    )
    return parse_nft_set(doc)


def sink_received(sink_ns: str) -> int:
    """Test packets counted so far at the sink's ingress by the nft counter."""
    doc = json.loads(
        run(["nft", "-j", "list", "counter", "netdev", "na_sink", "na_rx"], netns=sink_ns).stdout
    )
    return parse_nft_counters(doc)["na_rx"]


def snapshot(
    namespaces: dict[str, str], sink: SinkCounter | None = None, conntrack: str | None = None
) -> Snapshot:
    """Counters of every namespace (``role -> netns``), the host's softnet_stat and,
    when given, the sink's XDP count; ``conntrack``: the role whose conntrack table is
    read too."""
    # the namespaces are read side by side: each read is a few processes that mostly wait
    with ThreadPoolExecutor(max_workers=len(namespaces) + 1) as pool:
        reads = {
            role: pool.submit(_ns_snapshot, ns, role == conntrack)
            for role, ns in namespaces.items()
        }
        flows = pool.submit(sink_flows, namespaces["sink"]) if "sink" in namespaces else None
        snap: Snapshot = {
            "utc": utc_now(),
            "softnet": parse_softnet(Path("/proc/net/softnet_stat").read_text()),
            "ns": {role: f.result() for role, f in reads.items()},
        }
        if flows is not None:
            snap["sink_flows"] = flows.result()
    if sink is not None and sink.uses_xdp:
        xdp = sink.read()
        if xdp:
            snap["sink_xdp"] = xdp
    return snap


def wait_quiet(
    read: Callable[[], T | None],
    *,
    interval_s: float = 0.02,
    stable_reads: int = 2,
    timeout_s: float = 5.0,
) -> tuple[T | None, bool]:
    """Poll the sink's test-packet count ``read()`` until it stops moving (packets in
    flight are not lost). Return (last value, settled); (None, False) as soon as the
    count cannot be read (``read()`` returned None).

    Settled means no new frame for ``stable_reads`` x ``interval_s`` (40 ms): while a
    queue on the path drains, the count moves at every read, so the wait lasts as long
    as the counters say and no longer. A frame later than that still counts if it
    arrives before the closing snapshot; a count still moving at ``timeout_s`` is
    reported (the trial is excluded as a counter fault)."""
    last = read()
    same = 0
    deadline = time.monotonic() + timeout_s
    while last is not None and time.monotonic() < deadline:
        time.sleep(interval_s)
        now = read()
        same = same + 1 if now == last else 0
        last = now
        if same >= stable_reads:
            return last, True
    return last, False

"""Pure counter arithmetic: deltas with wrap handling, and where the packets were lost.

Locations, in path order (Marian et al., DSN 2010, read the same way from kernel
counters before and after every run):

- ``unsent``: planned - sent (the generator did not send them; not part of the PLR);
- ``gen_egress``: dropped on the generator's veth transmit, not explained by the SUT;
- ``sut_ingress``: the SUT's receive side (veth rx_dropped: per-CPU backlog overflow;
  for the XDP router, its receive ring: the head-drop queue on the wire in front of it);
- ``sut_forward``: the SUT's IP layer (IP MIB discards, no route), nft drop counters (the
  ground truth's, a scale rule that matched), conntrack's drops (its table, a clash) and
  the XDP router's own drops (malformed, redirect refused, ground-truth drop);
- ``sut_egress``: the SUT's egress (qdisc drops, nft egress cap, the XDP router's cap,
  veth tx drops);
- ``sink_ingress``: the sink's receive side (its veth refused the frame: the SUT
  forwarded it, so it is not SUT loss, and the trial says so in a warning);
- ``sink_socket``: a receiving socket's buffer (Udp RcvbufErrors; not SUT loss either);
- ``between_ports``: an external testbed's SUT (testbed.external): lost after the local
  tx port took them and before the local rx port, in the SUT, its cabling or its NICs;
  there ``gen_egress`` is the local tx port's loss and ``sink_ingress`` the local rx's;
- ``unaccounted``: lost test packets no counter explains (negative: counters saw more
  drops than test packets were lost, e.g. foreign frames).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from netassay.counters.sutstate import CT_DROPS
from netassay.counters.xdp_router import DROP_LOCATIONS

LOCATIONS = (
    "unsent",
    "gen_egress",
    "sut_ingress",
    "sut_forward",
    "sut_egress",
    "sink_ingress",
    "sink_socket",
    "unaccounted",
)
# the external testbed's split (testbed.external.PortCounters.locate_loss), and every
# location either testbed names, in path order (what a report draws)
EXTERNAL_LOCATIONS = ("unsent", "gen_egress", "between_ports", "sink_ingress", "unaccounted")
ALL_LOCATIONS = (*LOCATIONS[:5], "between_ports", *LOCATIONS[5:])
SUT_LOCATIONS = ("sut_ingress", "sut_forward", "sut_egress", "between_ports")
SINK_LOCATIONS = ("sink_ingress", "sink_socket")

# a data plane's own counters (``sut/dp/<port>/<field>``: Open vSwitch's, DPDK's) and
# the drops only it sees, by location (``sut/dpdrop/<location>``, in ``locate_loss``)
DATAPLANE = "sut/dp"
DATAPLANE_DROPS = "sut/dpdrop"
# --bidirectional: the XDP sink on the generator's veth counts the reverse direction
REVERSE_KEY = "tg/xdp_sink/packets"
# The reverse direction's counters, each as the forward counter in the same place on its
# own path: sink0 sends, sut1 receives, sut0 transmits, tg0 receives.
MIRROR = {
    "tg/qdisc/tg0/drops": "sink/qdisc/sink0/drops",
    "tg/link/tg0/tx_dropped": "sink/link/sink0/tx_dropped",
    "sut/link/sut0/rx_dropped": "sut/link/sut1/rx_dropped",
    "sut/qdisc/sut1/drops": "sut/qdisc/sut0/drops",
    "sut/nft/na_drop/packets": "sut/nft/na_drop_rev/packets",
    "sut/nft/na_cap/packets": "sut/nft/na_cap_rev/packets",
    "sut/link/sut1/tx_dropped": "sut/link/sut0/tx_dropped",
    "sink/link/sink0/rx_dropped": "tg/link/tg0/rx_dropped",
    "sink/snmp/Udp/RcvbufErrors": "tg/snmp/Udp/RcvbufErrors",
}

IP4_DROPS = ("InHdrErrors", "InAddrErrors", "InDiscards", "OutDiscards", "OutNoRoutes")
IP6_DROPS = (
    "Ip6InHdrErrors",
    "Ip6InAddrErrors",
    "Ip6InNoRoutes",
    "Ip6InDiscards",
    "Ip6OutDiscards",
    "Ip6OutNoRoutes",
)


def counter_delta(before: int, after: int, bits: int = 64) -> tuple[int, str | None]:
    """``after - before`` for a free-running unsigned counter of ``bits`` bits.

    A counter that went down wrapped once (the delta is taken modulo 2**bits) unless the
    wrapped delta is implausibly large (more than half the range), which means the
    counter was reset: then the delta is unknown and reported as 0 with a warning.
    """
    if after >= before:
        return after - before, None
    wrapped = after + (1 << bits) - before
    if wrapped < (1 << (bits - 1)):
        return wrapped, f"counter wrapped ({bits}-bit): {before} -> {after}"
    return 0, f"counter reset: {before} -> {after}; its delta is unknown"


def flat_deltas(
    before: dict[str, int], after: dict[str, int], bits: dict[str, int] | None = None
) -> tuple[dict[str, int], list[str]]:
    """Deltas of every key present in both flat snapshots, with wrap/reset warnings."""
    bits = bits or {}
    out: dict[str, int] = {}
    warnings: list[str] = []
    for key, b in before.items():
        if key not in after:
            continue
        d, warn = counter_delta(int(b), int(after[key]), bits.get(key, 64))
        out[key] = d
        if warn:
            warnings.append(f"{key}: {warn}")
    return out, warnings


def flatten(snap: Mapping[str, Any]) -> dict[str, int]:
    """A snapshot (see ``counters.snapshot``) as ``role/kind/name/field -> int``."""
    flat: dict[str, int] = {}
    for i, row in enumerate(snap.get("softnet", [])):
        flat[f"host/softnet/cpu{i}/processed"] = row[0]
        flat[f"host/softnet/cpu{i}/dropped"] = row[1]
        flat[f"host/softnet/cpu{i}/squeezed"] = row[2]
    for role, ns in snap.get("ns", {}).items():
        for dev, st in ns.get("links", {}).items():
            for k, v in st.items():
                flat[f"{role}/link/{dev}/{k}"] = v
        for table, values in ns.get("snmp", {}).items():
            for k, v in values.items():
                flat[f"{role}/snmp/{table}/{k}"] = v
        for dev, drops in ns.get("qdisc_drops", {}).items():
            flat[f"{role}/qdisc/{dev}/drops"] = drops
        for name, packets in ns.get("nft", {}).items():
            flat[f"{role}/nft/{name}/packets"] = packets
        for reason, packets in ns.get("xdp_router", {}).items():
            flat[f"{role}/xdp/{reason}/packets"] = packets
        for name, n in (ns.get("conntrack") or {}).get("stats", {}).items():
            flat[f"{role}/conntrack/{name}"] = n  # its entries, a gauge, are not here
    if "packets" in snap.get("sink_xdp", {}):
        flat["sink/xdp/packets"] = snap["sink_xdp"]["packets"]
    for size, packets in snap.get("sink_xdp", {}).get("per_size", {}).items():
        flat[f"sink/xdp/size{size}/packets"] = packets  # a frame mix's (--imix)
    if "packets" in snap.get("reverse_xdp", {}):  # --bidirectional: the generator's end
        flat[REVERSE_KEY] = snap["reverse_xdp"]["packets"]
    dp = snap.get("dataplane") or {}  # a data plane's own counters (testbed.dataplane)
    for name, value in (dp.get("counters") or {}).items():
        flat[f"{DATAPLANE}/{name}"] = value
    for location, value in (dp.get("drops") or {}).items():
        flat[f"{DATAPLANE_DROPS}/{location}"] = value
    return flat


def wrap_bits(flat: dict[str, int]) -> dict[str, int]:
    """softnet_stat fields are 32-bit; everything else netassay reads is 64-bit."""
    return {k: 32 for k in flat if k.startswith("host/softnet/")}


def locate_loss(
    planned: int,
    sent: int,
    received: int,
    d: dict[str, int],
    ip_version: int = 4,
    retries: int = 0,
    ring_wire: bool = False,
) -> dict[str, int]:
    """Split the lost test packets by location from counter deltas ``d`` (flat keys).

    The split always sums to ``sent - received`` (``unaccounted`` closes it); it is
    balanced when ``unaccounted`` is 0. A send the generator retried after the wire's
    qdisc refused it is not lost: ``retries`` of the qdisc's drops are not counted.
    ``ring_wire``: the wire is a head-drop queue in front of the SUT's NAPI ring (napi
    mode, ``testbed.receive``; the XDP router's is known by its counters): its drops
    are the SUT's receive ring overflowing.
    A frame the SUT handed to the sink's veth and the sink refused shows both as the
    SUT egress veth's tx_dropped and (sink backlog full) as the sink's rx_dropped, or
    (an XDP sink's ring full) only as the former: it is located at the sink either way.
    """

    def g(key: str) -> int:
        return int(d.get(key, 0))

    sut_in_rx = g("sut/link/sut0/rx_dropped")
    if ip_version == 6:
        mib = sum(g(f"sut/snmp/Ip6/{k}") for k in IP6_DROPS)
    else:
        mib = sum(g(f"sut/snmp/Ip/{k}") for k in IP4_DROPS)
    wire = max(0, g("tg/qdisc/tg0/drops") - retries)
    xdp = xdp_router_drops(d)
    dp = dataplane_drops(d)
    # the SUT's receive ring overflowed: the XDP router's, a data plane's (its head-drop
    # wire) or a NAPI veth's
    ring = wire if xdp is not None or dp is not None or ring_wire else 0
    xdp = xdp or {}
    for where, n in (dp or {}).items():  # what only the data plane saw, where it saw it
        xdp[where] = xdp.get(where, 0) + n
    loc = {
        "unsent": max(0, planned - sent),
        "gen_egress": max(0, g("tg/link/tg0/tx_dropped") - sut_in_rx) + wire - ring,
        "sut_ingress": sut_in_rx + ring + xdp.get("sut_ingress", 0),
        "sut_forward": mib
        + g("sut/nft/na_drop/packets")
        + g("sut/nft/na_blocked/packets")  # --nft-rules: a rule the test frames matched
        + sum(g(f"sut/conntrack/{k}") for k in CT_DROPS)  # --conntrack: its drops
        + xdp.get("sut_forward", 0),
        "sut_egress": g("sut/qdisc/sut1/drops")
        + g("sut/nft/na_cap/packets")
        + g("sink/nft/na_cap/packets")  # a data plane's cap, at the sink's ingress
        + xdp.get("sut_egress", 0),
        "sink_ingress": sink_ingress_drops(d),
        "sink_socket": g("sink/snmp/Udp/RcvbufErrors"),
    }
    explained = sum(v for k, v in loc.items() if k != "unsent")
    loc["unaccounted"] = (sent - received) - explained
    return loc


def accounted_for(loc: dict[str, int]) -> bool:
    """Every test frame sent is accounted for: received, or counted where it was
    dropped (``unaccounted`` is 0). Then none can still be on its way and a trial may
    close without waiting for the sink to settle. A frame no counter explains, or a
    counter that explains more drops than frames were lost (a foreign frame's drop can
    hide one in flight), is not: then the trial waits (``snapshot.wait_quiet``)."""
    return loc.get("unaccounted", 0) == 0


def xdp_router_drops(d: dict[str, int]) -> dict[str, int] | None:
    """Frames the XDP router's program dropped, by location (None: no XDP router).

    An XDP router's wire is a head-drop queue in front of veth's XDP ring (see
    ``testbed.xdp_router``): its drops are the SUT's receive ring overflowing, located
    at ``sut_ingress`` by ``locate_loss``, never at the generator's egress."""

    if not any(k.startswith("sut/xdp/") for k in d):
        return None
    out: dict[str, int] = {}
    for reason, location in DROP_LOCATIONS.items():
        out[location] = out.get(location, 0) + int(d.get(f"sut/xdp/{reason}/packets", 0))
    return out


def dataplane_drops(d: dict[str, int]) -> dict[str, int] | None:
    """The drops a data plane of its own counted that no kernel counter sees, by loss
    location (None: the SUT has none; ``testbed.dataplane``)."""
    prefix = f"{DATAPLANE_DROPS}/"
    found = {k.removeprefix(prefix): int(v) for k, v in d.items() if k.startswith(prefix)}
    return found if found else None


def dataplane_counters(d: dict[str, int]) -> dict[str, int]:
    """A data plane's own counter deltas (``<port>/<field>`` -> n), beside the loss."""
    prefix = f"{DATAPLANE}/"
    return {k.removeprefix(prefix): int(v) for k, v in d.items() if k.startswith(prefix)}


def sink_ingress_drops(d: dict[str, int]) -> int:
    """Test frames the sink's ingress refused after the SUT sent them (see locate_loss)."""
    return max(
        int(d.get("sut/link/sut1/tx_dropped", 0)), int(d.get("sink/link/sink0/rx_dropped", 0))
    )


def sink_counts_disagree(d: dict[str, int]) -> bool:
    """Both sides of the SUT-to-sink veth saw drops, but not the same number: the sink's
    drops are then not known exactly."""
    tx, rx = int(d.get("sut/link/sut1/tx_dropped", 0)), int(d.get("sink/link/sink0/rx_dropped", 0))
    return tx > 0 and rx > 0 and tx != rx


def sut_loss(loc: dict[str, int]) -> int:
    """Lost test packets charged to the SUT (and the unexplained rest)."""
    return sum(loc.get(k, 0) for k in (*SUT_LOCATIONS, "unaccounted"))


def main_location(loc: dict[str, int]) -> str | None:
    """The location that lost the most test packets (``unsent`` excluded), or None."""
    lost = {k: v for k, v in loc.items() if k != "unsent" and v > 0}
    return max(lost, key=lambda k: lost[k]) if lost else None


def _mib_keys() -> tuple[str, ...]:
    return (*(f"sut/snmp/Ip/{k}" for k in IP4_DROPS), *(f"sut/snmp/Ip6/{k}" for k in IP6_DROPS))


def direction_deltas(d: dict[str, int]) -> tuple[dict[str, int], dict[str, int], int]:
    """One trial's deltas seen from each direction of ``--bidirectional``: (the forward
    direction's, the reverse's, as ``locate_loss`` reads them, and the SUT's IP MIB
    drops). Each direction's own counters sit under the forward names (``MIRROR``); the
    IP MIB counts both directions' drops in one and is left out of both (``locate_both``
    gives it out)."""
    mib = set(_mib_keys())
    own = set(MIRROR.values())
    fwd = {k: v for k, v in d.items() if k not in mib and k not in own}
    rev = {k: int(d.get(v, 0)) for k, v in MIRROR.items()}
    return fwd, rev, sum(int(d.get(k, 0)) for k in mib)


def locate_both(
    fwd: tuple[int, int, int, int], rev: tuple[int, int, int, int], d: dict[str, int],
    ip_version: int = 4, ring_wire: bool = False,
) -> tuple[dict[str, int], dict[str, int]]:  # fmt: skip
    """``locate_loss`` for each direction of a ``--bidirectional`` trial; ``fwd`` and
    ``rev`` are each (planned, sent, received, retries). The SUT's IP MIB drops are one
    count for both directions: they are given to the forward direction up to the loss
    it has left unexplained, then to the reverse's, and what remains to the forward's
    ``sut_forward`` (its ``unaccounted`` then goes negative: more drops counted than
    frames lost). The two splits sum to the trial's in aggregate."""
    df, dr, mib = direction_deltas(d)
    loc_f = locate_loss(fwd[0], fwd[1], fwd[2], df, ip_version, fwd[3], ring_wire)
    loc_r = locate_loss(rev[0], rev[1], rev[2], dr, ip_version, rev[3], ring_wire)
    for loc in (loc_f, loc_r):
        share = min(mib, max(0, loc["unaccounted"]))
        loc["sut_forward"] += share
        loc["unaccounted"] -= share
        mib -= share
    loc_f["sut_forward"] += mib
    loc_f["unaccounted"] -= mib
    return loc_f, loc_r


def summed(*locs: dict[str, int]) -> dict[str, int]:
    """Loss splits added location by location (both directions' aggregate)."""
    out: dict[str, int] = {}
    for loc in locs:
        for k, v in loc.items():
            out[k] = out.get(k, 0) + v
    return out

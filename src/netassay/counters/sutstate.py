"""The SUT's own counts at scale (``testbed.scale``), read with every trial's counters
and said beside its loss location: conntrack's table (its entries, a gauge, before and
after) and statistics (per-CPU counters summed: drop, insert_failed, early_drop, ...),
and the scale tables' nft counters (``na_passed``, ``na_blocked``, ``na_ct_invalid``,
``na_snat``). Pure, but for the two reads of a namespace's conntrack files.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from netassay.traffic.generator import FlowCounts

CT_COUNT = "/proc/sys/net/netfilter/nf_conntrack_count"
CT_STAT = "net/stat/nf_conntrack"  # under /proc/ (or /proc/thread-self/ in a thread)
# conntrack's statistics that are not counters of events
_NOT_COUNTERS = ("entries",)
# of them, the one that counts the frames conntrack dropped (located at sut_forward,
# counters.loss): a clash it could not resolve (a NAT mapping without a free port, say)
# counts at both drop and insert_failed, so insert_failed is said, not added
CT_DROPS = ("drop",)
NFT = {"na_passed": "passed", "na_blocked": "blocked", "na_ct_invalid": "invalid",
       "na_snat": "snat"}  # fmt: skip


def parse_conntrack(count_text: str, stat_text: str) -> dict[str, Any]:
    """``nf_conntrack_count`` and ``/proc/net/stat/nf_conntrack`` (a header, then one
    row of hex counters per CPU) as ``{"count": n, "stats": {name: sum over CPUs}}``."""
    lines = [ln.split() for ln in stat_text.splitlines() if ln.strip()]
    stats: dict[str, int] = {}
    if lines:
        head = lines[0]
        for row in lines[1:]:
            for name, value in zip(head, row, strict=False):
                if name not in _NOT_COUNTERS:
                    stats[name] = stats.get(name, 0) + int(value, 16)
    return {"count": int(count_text.strip() or 0), "stats": stats}


def read_conntrack(proc: str = "/proc") -> dict[str, Any]:
    """This thread's (or process's) namespace's conntrack table and statistics;
    ``proc`` is ``/proc/thread-self`` in a thread that joined another namespace."""
    with open(CT_COUNT) as f:
        count = f.read()
    with open(f"{proc}/{CT_STAT}") as f:
        return parse_conntrack(count, f.read())


def summary(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    d: dict[str, int],
    limit: int | None = None,
) -> dict[str, Any]:
    """What one trial's counters say of the SUT's own state (``{}`` when it keeps none
    of these): conntrack's entries before and after (with the table's ``limit``) and
    its counters' deltas, and the scale tables' nft counters."""
    out: dict[str, Any] = {}
    ct_b = (before.get("ns", {}).get("sut") or {}).get("conntrack")
    ct_a = (after.get("ns", {}).get("sut") or {}).get("conntrack")
    if ct_b is not None and ct_a is not None:
        stats = {k: int(d.get(f"sut/conntrack/{k}", 0)) for k in ct_a.get("stats", {})}
        out["conntrack"] = {
            "entries_before": ct_b["count"],
            "entries_after": ct_a["count"],
            "limit": limit,
            **{k: v for k, v in stats.items() if v},
        }
    nft = {name: int(d.get(f"sut/nft/{key}/packets", 0)) for key, name in NFT.items()
           if f"sut/nft/{key}/packets" in d or _has(after, key)}  # fmt: skip
    if nft:
        out["nft"] = nft
    return out


def _has(snap: Mapping[str, Any], counter: str) -> bool:
    return counter in ((snap.get("ns", {}).get("sut") or {}).get("nft") or {})


def text(s: dict[str, Any]) -> str:
    """The summary in words ("" when there is none): 'conntrack 0 -> 1,000 entries
    (0 dropped); nft passed 1,000, blocked 0'."""
    parts = []
    ct = s.get("conntrack")
    nft = s.get("nft", {})
    if ct is not None:
        full = ct.get("limit") is not None and ct["entries_after"] >= ct["limit"]
        extra = [f"{sum(ct.get(k, 0) for k in CT_DROPS):,} dropped"]
        if ct.get("insert_failed"):
            extra.append(f"{ct['insert_failed']:,} failed to insert")
        if nft.get("invalid"):
            extra.append(f"{nft['invalid']:,} invalid")
        if ct.get("early_drop"):
            extra.append(f"{ct['early_drop']:,} evicted early")
        parts.append(
            f"conntrack {ct['entries_before']:,} -> {ct['entries_after']:,} entries"
            + (f" (its limit {ct['limit']:,})" if full else "")
            + f" ({', '.join(extra)})"
        )
    rules = [f"{k} {nft[k]:,}" for k in ("passed", "blocked") if k in nft]
    if rules:
        parts.append("nft " + ", ".join(rules))
    if "snat" in nft:
        parts.append(f"{nft['snat']:,} SNAT mappings")
    return "; ".join(parts)


def flows_text(f: FlowCounts) -> str:
    """The sink's per-flow counts over a trial (netassay-gen ``--count-flows``) in words."""
    spread = f"{f['min']:,}" if f["min"] == f["max"] else f"{f['min']:,}..{f['max']:,}"
    return (
        f"flows {f['seen']:,} of {f['flows']:,} seen ({spread} frames each), "
        f"{f['misdirected']:,} misdirected"
    )


def beside(counters: dict[str, Any], loss: dict[str, int]) -> str:
    """What a trial's progress line adds at scale ("" when the trial keeps none of it):
    where its frames were lost, the SUT's own counts, the flows' counts."""
    own, flows = counters.get("sut"), counters.get("flows")
    if not own and flows is None:
        return ""
    where = ", ".join(f"{k} {v:,}" for k, v in loss.items() if v and k != "unsent")
    parts = [f"lost at {where}" if where else "nothing lost"]
    if own:
        parts.append(f"SUT: {text(own)}")
    if flows is not None:
        parts.append(flows_text(flows))
    return " | " + "; ".join(parts)

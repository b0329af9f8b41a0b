"""The XDP router's counters: the program's id on its device, its per-CPU counters
(one per reason, ``REASONS``) read from its stats map with ``bpftool -j``, and where
each drop reason is located (``DROP_LOCATIONS``, for ``counters.loss``). The program
itself is loaded and configured by ``testbed.xdp_router``."""

from __future__ import annotations

import json
from typing import Any

from netassay.proc import run

PROG_NAME = "na_xdp_router"
STATS_MAP = "na_xdp_stats"
# The counters, in the program's order (enum reason in bpf/xdp_router.c).
REASONS = (
    "forwarded",
    "pass_not_ip",
    "pass_local",
    "pass_ttl",
    "pass_ip_options",
    "pass_no_route",
    "pass_no_neigh",
    "pass_frag_needed",
    "pass_other",
    "drop_malformed",
    "drop_redirect",
    "drop_ground_drop",
    "drop_ground_cap",
)
# Frames the program itself dropped, by loss location (counters.loss.LOCATIONS). Passed
# frames are the kernel's from then on (its MIB counts what it drops); a redirected
# frame the sink's veth refuses is counted there (sut1 tx_dropped).
DROP_LOCATIONS = {
    "drop_malformed": "sut_forward",
    "drop_redirect": "sut_forward",
    "drop_ground_drop": "sut_forward",
    "drop_ground_cap": "sut_egress",
}


def prog_id(links: list[dict[str, Any]], dev: str = "sut0") -> int | None:
    """The XDP router's program id on ``dev`` from ``ip -j link show`` output, or None."""
    for link in links:
        prog = (link.get("xdp") or {}).get("prog") or {}
        if link.get("ifname") == dev and prog.get("name") == PROG_NAME:
            return int(prog["id"])
    return None


def bpftool_json(*args: str) -> Any:
    return json.loads(run(["bpftool", "-j", *args]).stdout or "null")


def map_ids(pid: int) -> dict[str, int]:
    """The program's maps by name."""
    prog = bpftool_json("prog", "show", "id", str(pid))
    out = {}
    for mid in prog.get("map_ids", []):
        info = bpftool_json("map", "show", "id", str(mid))
        out[info["name"]] = int(mid)
    return out


def parse_stats(dump: list[dict[str, Any]]) -> dict[str, int]:
    """``bpftool -j map dump`` of the per-CPU stats map -> ``reason -> packets`` (summed
    over CPUs); reasons the program has and this module does not know keep their index."""
    out = {r: 0 for r in REASONS}
    for entry in dump:
        f = entry["formatted"]
        key = int(f["key"])
        name = REASONS[key] if key < len(REASONS) else f"reason{key}"
        out[name] = sum(int(v["value"]) for v in f["values"])
    return out


def read_counters(pid: int) -> dict[str, int]:
    """The program's counters now (``reason -> packets``, since it was attached)."""
    mid = map_ids(pid)[STATS_MAP]
    return parse_stats(bpftool_json("map", "dump", "id", str(mid)))

"""The host's side of an experiment's environment: kernel, CPU, cmdline, irqbalance,
tools' versions, a namespace's qdiscs, offloads and RPS masks; and what differs between
two captures. ``testbed.environment`` puts them together with the testbed's own record."""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

from netassay.proc import run
from netassay.traffic.generator import find_generator


def read_text(path: str) -> str:
    """A /proc or /sys file's text, stripped; "" when it cannot be read."""
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def cpu_model() -> str:
    for line in read_text("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def irqbalance_running() -> bool:
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and read_text(f"/proc/{d.name}/comm") == "irqbalance":
            return True
    return False


def tool_version(argv: list[str]) -> str:
    """The first line a tool prints for ``argv`` (e.g. ``ip -V``); a missing tool is
    recorded as unavailable, not fatal."""
    try:
        res = run(argv, check=False, timeout=5)
    except Exception as exc:
        return f"unavailable ({exc})"
    return ((res.stdout or res.stderr).strip().splitlines() or [""])[0]


def generator_version() -> str:
    try:
        return tool_version([find_generator(), "--version"])
    except Exception as exc:
        return f"unavailable ({exc})"


def ns_details(ns: str) -> dict[str, Any]:
    qdisc = json.loads(run(["tc", "-n", ns, "-j", "qdisc", "show"]).stdout or "[]")
    links = json.loads(run(["ip", "-n", ns, "-j", "-d", "link", "show"]).stdout or "[]")
    offloads = {}
    rps = {}
    for link in links:
        dev = link["ifname"]
        if dev == "lo":
            continue
        res = run(["ethtool", "--json", "-k", dev], netns=ns, check=False)
        if res.returncode == 0 and res.stdout.strip():
            feats = json.loads(res.stdout)[0]
            offloads[dev] = {
                k: v.get("active")
                for k, v in feats.items()
                if isinstance(v, dict) and k.endswith(("offload", "segmentation", "checksumming"))
            }
        path = f"/sys/class/net/{dev}/queues/rx-0/rps_cpus"
        got = run(["cat", path], netns=ns, check=False)
        if got.returncode == 0:
            rps[dev] = got.stdout.strip()
    return {
        "qdiscs": {q["dev"]: q.get("kind") for q in qdisc},
        "txqueuelen": {x["ifname"]: x.get("txqlen") for x in links},
        "offloads": offloads,
        "rps_cpus": rps,
    }


# What, when it differs between a sweep's start and its resume, is worth a line.
COMPARED = (
    "boot_id",
    "kernel",
    "kernel_version",
    "cpu_model",
    "cpu_count",
    "cmdline",
    "isolcpus",
    "irqbalance",
    "netdev_max_backlog",
    "netdev_budget",
)


def changes(first: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What differs between two captured environments, one phrase each (a different
    boot_id means the machine rebooted in between)."""
    out = []
    for key in COMPARED:
        a, b = first.get(key), now.get(key)
        if a is None or a == b:
            continue
        out.append("the machine rebooted" if key == "boot_id" else f"{key}: {a} -> {b}")
    if first.get("versions", {}).get("netassay-gen") != now.get("versions", {}).get(
        "netassay-gen"
    ) and first.get("versions"):
        out.append("netassay-gen version changed")
    return out

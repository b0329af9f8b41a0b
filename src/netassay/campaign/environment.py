"""The environment of an experiment, captured once: what could change the numbers."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

from netassay import __version__
from netassay.proc import run
from netassay.testbed import names as N
from netassay.testbed import state as S
from netassay.testbed import topology as T
from netassay.testbed.bed import Testbed


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


def _generator_version() -> str:
    try:
        from netassay.traffic.generator import find_generator

        return tool_version([find_generator(), "--version"])
    except Exception as exc:
        return f"unavailable ({exc})"


def _ns_details(ns: str) -> dict[str, Any]:
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


def capture(tb: Testbed) -> dict[str, Any]:
    """Kernel, CPUs, cmdline, irqbalance, RPS masks, qdiscs, offloads, sysctls, versions."""
    env: dict[str, Any] = {
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "boot_id": read_text("/proc/sys/kernel/random/boot_id"),
        "machine": platform.machine(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cmdline": read_text("/proc/cmdline"),
        "isolcpus": read_text("/sys/devices/system/cpu/isolated"),
        "irqbalance": irqbalance_running(),
        "irq_default_affinity": read_text("/proc/irq/default_smp_affinity"),
        "netdev_max_backlog": int(S.read_sysctl("net.core.netdev_max_backlog")),
        "netdev_budget": int(S.read_sysctl("net.core.netdev_budget")),
        "sysctls_touched": dict(tb.state.get("sysctls", {})),
        "sysctls_original": S.saved_sysctls(),
        "testbed": {
            "name": tb.name,
            "config": tb.state.get("config"),
            "namespaces": tb.state.get("namespaces"),
            "target": tb.state.get("target"),
            "gen_cpu": tb.state.get("gen_cpu"),
            "sut_cpu": tb.state.get("sut_cpu"),
            "wire": f"{N.TG_DEV} (qdisc {' '.join(T.WIRE_QDISC)}) -> {N.SUT_IN} (veth)",
        },
        "namespaces": {role: _ns_details(ns) for role, ns in tb.state["namespaces"].items()},
        "versions": {
            "netassay": __version__,
            "python": platform.python_version(),
            "iproute2": tool_version(["ip", "-V"]),
            "nftables": tool_version(["nft", "--version"]),
            "ethtool": tool_version(["ethtool", "--version"]),
            "netassay-gen": _generator_version(),
        },
    }
    env.update(T.kind_environment(tb))  # a testbed kind's own record (external: its NICs)
    return env


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

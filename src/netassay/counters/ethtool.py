"""A local NIC as ethtool and sysfs describe it: its statistics (``ethtool -S``, read
before and after every trial) and what it is (driver, firmware, rings, offloads, IRQs
and their affinity, speed: read once per run).

ethtool 6.1 has no JSON for ``-S``, ``-i`` and ``-g``: their text is parsed here, and a
device or driver that does not support one of them gives an empty answer, never an error
(veth has no rings and no IRQs). Every read runs in the interface's namespace (``netns``
None: the host's own).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from netassay.proc import run

_STAT = re.compile(r"^\s*([^:]+?):\s+(-?\d+)\s*$")


def parse_stats(text: str) -> dict[str, int]:
    """``ethtool -S`` text: ``name: value`` lines under ``NIC statistics:``."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        m = _STAT.match(line)
        if m:
            out[m.group(1).strip()] = int(m.group(2))
    return out


def parse_info(text: str) -> dict[str, str]:
    """``ethtool -i`` text: ``key: value`` lines (driver, version, firmware-version, ...)."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def parse_rings(text: str) -> dict[str, dict[str, int]]:
    """``ethtool -g`` text: ``{"max": {"RX": n, ...}, "current": {...}}``."""
    out: dict[str, dict[str, int]] = {}
    section = None
    for line in text.splitlines():
        low = line.strip().lower()
        if low.startswith("pre-set maximums"):
            section = "max"
        elif low.startswith("current hardware settings"):
            section = "current"
        elif section:
            key, sep, value = line.partition(":")
            if sep and value.strip().isdigit():
                out.setdefault(section, {})[key.strip()] = int(value.strip())
    return out


def deltas(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """``after - before`` of every statistic present in both that moved (a gauge may go
    down: the difference is kept as it is, signed)."""
    return {k: after[k] - v for k, v in before.items() if k in after and after[k] != v}


def _ethtool(args: list[str], netns: str | None) -> str:
    res = run(["ethtool", *args], netns=netns, check=False, timeout=10)
    return res.stdout if res.returncode == 0 else ""


def stats(dev: str, netns: str | None = None) -> dict[str, int]:
    """The NIC's own statistics now ({} when the driver has none)."""
    return parse_stats(_ethtool(["-S", dev], netns))


def read_sys(path: str, netns: str | None = None) -> str | None:
    """A sysfs file as the interface's namespace sees it (None when unreadable: a
    virtual interface's speed, for instance)."""
    if netns is None:
        try:
            return Path(path).read_text().strip()
        except OSError:
            return None
    res = run(["cat", path], netns=netns, check=False, timeout=10)
    return res.stdout.strip() if res.returncode == 0 else None


def is_virtual(dev: str, netns: str | None = None) -> bool:
    """A software interface (veth, bridge, tun...): sysfs places it under
    ``/sys/devices/virtual``. veth reports a nominal 10000 Mb/s that bounds nothing."""
    path = f"/sys/class/net/{dev}"
    if netns is None:
        return "/virtual/" in os.path.realpath(path)
    res = run(["readlink", "-f", path], netns=netns, check=False, timeout=10)
    return "/virtual/" in res.stdout


def irqs(dev: str, netns: str | None = None) -> dict[str, dict[str, str | None]]:
    """The NIC's interrupts (its MSI vectors, else /proc/interrupts lines that name it)
    and the CPUs each may run on."""
    numbers: list[str] = []
    msi = Path(f"/sys/class/net/{dev}/device/msi_irqs")
    if netns is None and msi.is_dir():
        numbers = sorted((p.name for p in msi.iterdir()), key=int)
    if not numbers:
        text = read_sys("/proc/interrupts", netns) or ""
        for line in text.splitlines():
            head, _, rest = line.partition(":")
            if head.strip().isdigit() and re.search(rf"\b{re.escape(dev)}\b", rest):
                numbers.append(head.strip())
    return {
        n: {
            "affinity": read_sys(f"/proc/irq/{n}/smp_affinity_list", netns),
            "effective": read_sys(f"/proc/irq/{n}/effective_affinity_list", netns),
        }
        for n in numbers
    }


def offloads(dev: str, netns: str | None = None) -> dict[str, Any]:
    """Offload features and whether each is active (``ethtool --json -k``)."""
    text = _ethtool(["--json", "-k", dev], netns)
    if not text.strip():
        return {}
    feats = json.loads(text)[0]
    return {
        k: v.get("active")
        for k, v in feats.items()
        if isinstance(v, dict) and k.endswith(("offload", "segmentation", "checksumming"))
    }


def nic_info(dev: str, netns: str | None = None) -> dict[str, Any]:
    """What a local NIC is, once per run: driver and firmware, rings, offloads, IRQ
    affinity, queues, speed, MTU, NUMA node, RPS masks."""
    base = f"/sys/class/net/{dev}"
    rx_queues = _queue_names(dev, netns)
    return {
        "driver": parse_info(_ethtool(["-i", dev], netns)),
        "rings": parse_rings(_ethtool(["-g", dev], netns)),
        "offloads": offloads(dev, netns),
        "irqs": irqs(dev, netns),
        "speed_mbps": read_sys(f"{base}/speed", netns),
        "mtu": read_sys(f"{base}/mtu", netns),
        "address": read_sys(f"{base}/address", netns),
        "numa_node": read_sys(f"{base}/device/numa_node", netns),
        "queues": rx_queues,
        "rps_cpus": {
            q: read_sys(f"{base}/queues/{q}/rps_cpus", netns) for q in rx_queues if q[:2] == "rx"
        },
    }


def _queue_names(dev: str, netns: str | None) -> list[str]:
    if netns is None:
        d = Path(f"/sys/class/net/{dev}/queues")
        return sorted(p.name for p in d.iterdir()) if d.is_dir() else []
    res = run(["ls", f"/sys/class/net/{dev}/queues"], netns=netns, check=False, timeout=10)
    return sorted(res.stdout.split()) if res.returncode == 0 else []

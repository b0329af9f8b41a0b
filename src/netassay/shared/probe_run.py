"""What the methods that send the rtt probe share (rtt, batching): a duration in
nanoseconds, the rate the probe achieved, and the host and testbed a run was on."""

from __future__ import annotations

import os
import platform
from typing import Any

from netassay import __version__
from netassay.counters.environment import cpu_model, irqbalance_running
from netassay.counters.environment import read_text as read
from netassay.counters.environment import tool_version as version
from netassay.errors import UsageError
from netassay.testbed import Testbed


def to_ns(text: Any) -> int | None:
    """A duration ('200us', '1ms', '0') in integer nanoseconds (None stays None)."""
    if text is None:
        return None
    t = str(text).strip().lower()
    for unit, mult in (("ns", 1), ("us", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000)):
        if t.endswith(unit):
            t, scale = t[: -len(unit)], mult
            break
    else:
        scale = 1_000_000_000 if t not in ("0",) else 1
    try:
        value = float(t) * scale
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise UsageError(f"bad duration '{text}'", "a number with ns, us, ms or s", "e.g. 200us")
    return round(value)


def achieved_rate(prober: dict[str, Any]) -> float | None:
    sent, dur = int(prober.get("sent", 0)), float(prober.get("duration_s", 0.0))
    return round((sent - 1) / dur, 3) if sent > 1 and dur > 0 else None


def environment(tb: Testbed) -> dict[str, Any]:
    return {
        "kernel": platform.release(), "kernel_version": platform.version(),
        "boot_id": read("/proc/sys/kernel/random/boot_id"), "machine": platform.machine(),
        "cpu_model": cpu_model(), "cpu_count": os.cpu_count(), "cmdline": read("/proc/cmdline"),
        "isolcpus": read("/sys/devices/system/cpu/isolated"), "irqbalance": irqbalance_running(),
        "testbed": {k: tb.state.get(k) for k in ("name", "kind", "config", "cpus", "rps", "peers")
                    if k != "peers" or len(tb.state.get("peers", {})) <= 4},
        "versions": {"netassay": __version__, "python": platform.python_version(),
                     "iproute2": version(["ip", "-V"]), "stress-ng": version(["stress-ng", "-V"])},
    }  # fmt: skip

"""What this host is set to, as far as it decides whether it can measure: the CPU
frequency governor, SMT, isolated CPUs, irqbalance, the clock source, the timer slack,
the NAPI and GRO settings (host sysctls; per veth of a testbed: GRO, threaded NAPI, the
GRO flush timeout). Each reading is a pure parser of its /proc or /sys text (tested on
sample text) and ``read_host`` / ``read_napi`` the readers of this host. The mitigations
and the IRQ affinity are ``counters.host``'s; CPU steal is ``counters.cpu``'s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from netassay.counters.environment import irqbalance_running, read_text
from netassay.proc import run

CPU_DIR = "/sys/devices/system/cpu"
CLOCK_DIR = "/sys/devices/system/clocksource/clocksource0"
NAPI_SYSCTLS = (
    "net.core.netdev_budget",
    "net.core.netdev_budget_usecs",
    "net.core.dev_weight",
    "net.core.busy_poll",
    "net.core.busy_read",
    "net.core.netdev_max_backlog",
)


def parse_cpu_list(text: str) -> list[int]:
    """A kernel CPU list ('0-2,5', '' for none) as CPU numbers."""
    out: list[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def parse_governors(texts: dict[str, str]) -> dict[str, str]:
    """CPU -> its scaling governor, from each CPU's ``cpufreq/scaling_governor`` text
    (a CPU without cpufreq, as in most VMs, is left out)."""
    return {cpu: t.strip() for cpu, t in sorted(texts.items()) if t.strip()}


def parse_smt(control: str, active: str) -> str:
    """SMT as the kernel says it (``smt/control``: on, off, forceoff, notsupported,
    notimplemented; ``smt/active`` 1 or 0); 'unknown' without them."""
    c = control.strip()
    if not c:
        return "unknown"
    if c == "on" and active.strip() == "0":
        return "on, no sibling active"
    return c


def parse_clocksource(current: str, available: str) -> dict[str, Any]:
    return {"current": current.strip(), "available": available.split()}


def parse_timer_slack(text: str) -> int | None:
    """``/proc/<pid>/timerslack_ns`` as ns (None when it cannot be read)."""
    t = text.strip()
    return int(t) if t.isdigit() else None


def parse_sysctls(texts: dict[str, str]) -> dict[str, int | str]:
    """Sysctl -> its value (a number when it is one; left out when unreadable)."""
    out: dict[str, int | str] = {}
    for key, t in texts.items():
        v = " ".join(t.split())
        if v:
            out[key] = int(v) if v.lstrip("-").isdigit() else v
    return out


def parse_gro(ethtool_json: str) -> str | None:
    """'on' / 'off': GRO of a device from ``ethtool --json -k``; None when not said."""
    try:
        feats = json.loads(ethtool_json)[0]
    except (ValueError, IndexError, KeyError, TypeError):
        return None
    gro = feats.get("generic-receive-offload")
    if not isinstance(gro, dict) or "active" not in gro:
        return None
    return "on" if gro["active"] else "off"


def _cpus() -> list[str]:
    return sorted((p.name for p in Path(CPU_DIR).glob("cpu[0-9]*")), key=lambda n: int(n[3:]))


def _sysctl_text(key: str) -> str:
    return read_text("/proc/sys/" + key.replace(".", "/"))


def read_host() -> dict[str, Any]:
    """This host's readings (each parsed as above)."""
    governors = {c: read_text(f"{CPU_DIR}/{c}/cpufreq/scaling_governor") for c in _cpus()}
    return {
        "cpus": [int(c[3:]) for c in _cpus()],
        "governors": parse_governors(governors),
        "smt": parse_smt(read_text(f"{CPU_DIR}/smt/control"), read_text(f"{CPU_DIR}/smt/active")),
        "isolated": parse_cpu_list(read_text(f"{CPU_DIR}/isolated")),
        "nohz_full": parse_cpu_list(read_text(f"{CPU_DIR}/nohz_full")),
        "irqbalance": irqbalance_running(),
        "clocksource": parse_clocksource(
            read_text(f"{CLOCK_DIR}/current_clocksource"),
            read_text(f"{CLOCK_DIR}/available_clocksource"),
        ),
        "timer_slack_ns": parse_timer_slack(read_text("/proc/self/timerslack_ns")),
        "sysctls": parse_sysctls({k: _sysctl_text(k) for k in NAPI_SYSCTLS}),
    }


def read_napi(devices: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Per device (``name -> its namespace``): GRO, threaded NAPI, the GRO flush timeout
    and the hard-IRQ deferral, as the namespace sees them."""
    out: dict[str, dict[str, Any]] = {}
    for dev, ns in devices.items():
        k = run(["ethtool", "--json", "-k", dev], netns=ns, check=False)
        row: dict[str, Any] = {"gro": parse_gro(k.stdout) if k.returncode == 0 else None}
        for f in ("threaded", "gro_flush_timeout", "napi_defer_hard_irqs"):
            got = run(["cat", f"/sys/class/net/{dev}/{f}"], netns=ns, check=False)
            v = got.stdout.strip() if got.returncode == 0 else ""
            row[f] = int(v) if v.isdigit() else None
        out[dev] = row
    return out

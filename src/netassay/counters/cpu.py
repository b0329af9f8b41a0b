"""CPU use per core over an interval, from two readings of /proc/stat (steal included).

Used by rtt runs and meant for every method that reports CPU per core (trials, acceptance runs).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# /proc/stat columns after the name (guest time is already inside user and nice)
_COLUMNS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
# what is reported, as shares of the interval: user (user + nice), system, irq, softirq,
# steal, idle (idle + iowait)
SHARES = ("user", "system", "irq", "softirq", "steal", "idle")


def parse(text: str) -> dict[str, dict[str, int]]:
    """Per-core jiffies by column, from the text of /proc/stat (the 'cpuN' lines)."""
    out: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu":
            continue
        values = [int(x) for x in rest.split()]
        out[name] = dict(zip(_COLUMNS, values + [0] * (len(_COLUMNS) - len(values)), strict=False))
    return out


def read() -> dict[str, dict[str, int]]:
    return parse(Path("/proc/stat").read_text())


def time_ns(cpu: int, parts: tuple[str, ...]) -> int:
    """Time one CPU has spent so far in the given /proc/stat columns (e.g. ``("softirq",)``
    or ``("system", "irq", "softirq")``), in ns (USER_HZ ticks)."""
    row = read().get(f"cpu{cpu}")
    if row is None:
        raise RuntimeError(f"no cpu{cpu} in /proc/stat")
    return sum(row[p] for p in parts) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def use(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict[str, Any]:
    """Per core: each share of the interval (0..1) and ``busy`` (1 - idle)."""
    out: dict[str, Any] = {}
    for core, a in after.items():
        b = before.get(core)
        if b is None:
            continue
        d = {k: max(0, a[k] - b[k]) for k in _COLUMNS}
        total = sum(d.values())
        if total <= 0:
            continue
        shares = {
            "user": d["user"] + d["nice"],
            "system": d["system"],
            "irq": d["irq"],
            "softirq": d["softirq"],
            "steal": d["steal"],
            "idle": d["idle"] + d["iowait"],
        }
        row = {k: round(v / total, 4) for k, v in shares.items()}
        row["busy"] = round(1 - row["idle"], 4)
        out[core] = row
    return out

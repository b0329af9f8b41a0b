"""The scenario matrix of seed 004, as a TOML file run in order (``--scenarios``).

Each ``[[scenario]]`` says where the test host's work runs and how it is set up; a
``[defaults]`` table gives values every scenario starts from. Keys (all optional):

    name = "rx1/tx1"      # the paper's rxN/txN naming; default: made from rx_cpu/tx_cpu
    client_cpu = 0        # CPU of the sender (taskset); "none": the scheduler's choice
    server_cpu = 1        # CPU of the receiver
    rx_cpu = 1            # rxN: the server's receive softirq (RPS of its veth)
    tx_cpu = 1            # txN: the transmitted frames' softirq (RPS of the link's
                          # ingress veth, XPS of the client's)
    socket_buffer = "4M"  # iperf3 -w on both ends (bounded by net.core.rmem_max/wmem_max)
    mtu = 9000            # every device of the embedded link
    busy_receiver = 1     # stress-ng CPU workers on the receiver's CPU

On a real NIC the same seed-004 experiment moves its queues' IRQs (smp_affinity): that is
the host's setting, recorded with every run (``host_config.irq_affinity``), not one this
file changes. Unknown keys are refused, so that a typo never runs the wrong matrix.
"""

from __future__ import annotations

import tomllib
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from netassay.errors import InputError
from netassay.methods.accept.request import AcceptRequest, Scenario
from netassay.units import parse_count

_CPU_KEYS = ("client_cpu", "server_cpu", "rx_cpu", "tx_cpu")
_KEYS = {f.name for f in fields(Scenario)}


def parse(text: str, origin: str = "scenarios") -> list[Scenario]:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{origin}: not valid TOML", str(exc), "fix the file") from exc
    extra = set(doc) - {"defaults", "scenario"}
    if extra:
        raise InputError(
            f"{origin}: unknown table(s) {', '.join(sorted(extra))}",
            "a scenario file has [defaults] and [[scenario]] entries",
            "remove or rename them",
        )
    defaults = doc.get("defaults", {})
    items = doc.get("scenario", [])
    if not isinstance(items, list) or not items:
        raise InputError(f"{origin}: no [[scenario]]", "", "add at least one [[scenario]]")
    out = []
    for i, item in enumerate(items, 1):
        out.append(_one({**defaults, **item}, f"{origin}: scenario {i}"))
    names = [s.label() for s in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"{origin}: scenario names repeat: {', '.join(dup)}", "", "rename them")
    return out


def _one(item: dict[str, Any], where: str) -> Scenario:
    unknown = set(item) - _KEYS
    if unknown:
        raise InputError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}",
            f"known: {', '.join(sorted(_KEYS))}",
            "fix the spelling",
        )
    kv: dict[str, Any] = {}
    for k, v in item.items():
        if k in _CPU_KEYS:
            kv[k] = None if v in ("none", None) else _int(v, k, where)
        elif k == "socket_buffer":
            kv[k] = None if v in ("default", None) else int(parse_count(str(v), k))
        elif k in ("mtu", "busy_receiver"):
            kv[k] = _int(v, k, where)
        elif k == "name":
            kv[k] = str(v)
    return replace(Scenario(), **kv)


def of_keys(values: dict[str, Any]) -> Scenario:
    """A campaign cell's scenario knobs (keys as a scenario file writes them) as the
    scenario that file would give."""
    return _one(values, "campaign cell's scenario")


def _int(v: Any, key: str, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise InputError(f"{where}: {key} = {v!r}", "a whole number >= 0", "e.g. 1")
    return v


def load(path: str) -> list[Scenario]:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise InputError(f"{p}: cannot read it", str(exc), "check the path") from exc
    return parse(text, str(p))


def requests(base: AcceptRequest, scenarios: list[Scenario]) -> list[AcceptRequest]:
    """One request per scenario, in the file's order; labels say which scenario."""
    return [
        replace(base, scenario=s, label=f"{base.label} {s.label()}".strip() if base.label else "")
        for s in scenarios
    ]

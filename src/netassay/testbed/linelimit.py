"""The delay line's forwarding limit on this host: measured by ``bench/delayline.py``,
kept in ``/var/lib/netassay/delayline.json`` (``NETASSAY_STATE_DIR`` overrides), read
by every ``netassay tcp`` cell that runs over the line.

The file holds, per one-way delay measured, the highest rate of 1514-byte frames
(1538 at L1) the line carried with nothing dropped and at most 1% of the frames over
1 ms late (the rule a TCP run's own line counters are judged by), with when it was
measured and on what kernel and CPU count. It outlives a reboot (a limit is the
host's, not the boot's), but a limit measured on another kernel or CPU count is not
this host's: a run then has none, and says why.

A run at a delay that was not measured takes the smallest limit measured (the line's
work is per frame; how long it holds them matters little): its ``from`` says so.
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path
from typing import Any

from netassay.testbed import state as S
from netassay.testbed.tcppath import LINE

FRAME_BYTES = 1514  # the frames the limit is measured with (a 1500-byte MTU's)
L1_FRAME_BYTES = FRAME_BYTES + 24  # preamble, SFD, FCS, gap
FILE = "delayline.json"
MEASURE = "sudo .venv/bin/python bench/delayline.py"


def path() -> Path:
    """Where this host's limit is kept."""
    return Path(os.environ.get("NETASSAY_STATE_DIR", "/var/lib/netassay")) / FILE


def host() -> dict[str, Any]:
    """What a limit holds for: this host's kernel and CPU count."""
    return {"kernel": platform.release(), "cpus": os.cpu_count()}


def l1_bps(pps: float) -> float:
    """A rate of 1514-byte frames in bit/s at L1."""
    return pps * L1_FRAME_BYTES * 8


def record(limits: dict[float, float | None], utc: str, setup: str) -> Path:
    """Keep the limits measured now (one-way delay in s -> frames/s; None: the line
    carried none of the rates tried) as this host's; where they were written."""
    body = {
        "utc": utc,
        **host(),
        "frame_bytes": FRAME_BYTES,
        "setup": setup,
        "limits": [
            {"delay_s": d, "pps": p, "l1_bps": None if p is None else l1_bps(p)}
            for d, p in sorted(limits.items())
        ],
    }
    S.write_json_atomic(path(), body)
    return path()


def read(where: Path | None = None) -> dict[str, Any] | None:
    """The kept limits (None: never measured on this host, or unreadable)."""
    try:
        body = json.loads((where or path()).read_text())
    except (OSError, ValueError):
        return None
    return body if isinstance(body, dict) and isinstance(body.get("limits"), list) else None


def none(reason: str) -> dict[str, Any]:
    return {"pps": None, "l1_bps": None, "from": reason}


def for_path(delay_s: float, delay_kind: str, body: dict[str, Any] | None = None,
             where: Path | None = None) -> dict[str, Any]:  # fmt: skip
    """The limit a cell runs under: ``pps`` and ``l1_bps`` (1514-byte frames) and
    ``from`` (where it came from), or None for both with the reason in ``from``."""
    if delay_kind != LINE:
        return none(f"no delay line on this path ({delay_kind})")
    where = where or path()
    body = body if body is not None else read(where)
    if body is None:
        return none(f"never measured on this host (no {where}: run '{MEASURE}')")
    now = host()
    if (body.get("kernel"), body.get("cpus")) != (now["kernel"], now["cpus"]):
        return none(
            f"measured on kernel {body.get('kernel')} with {body.get('cpus')} CPUs, this host "
            f"runs {now['kernel']} with {now['cpus']}: run '{MEASURE}' again"
        )
    known = [x for x in body["limits"] if isinstance(x, dict) and "delay_s" in x]
    same = [x for x in known if abs(float(x["delay_s"]) - delay_s) < 1e-9]
    pick = same or known
    if not pick:
        return none(f"{where} holds no limit: run '{MEASURE}' again")
    unknown = [x for x in pick if x.get("pps") is None]
    at = "" if same else " (not measured at this delay: the smallest of those measured)"
    src = f"{where}, measured {body.get('utc')} on kernel {body['kernel']}, {body['cpus']} CPUs"
    if unknown:
        d = float(unknown[0]["delay_s"])
        return none(f"the line carried none of the rates tried at {d * 1e3:g} ms ({src}){at}")
    best = min(pick, key=lambda x: float(x["pps"]))
    pps = float(best["pps"])
    return {"pps": pps, "l1_bps": l1_bps(pps),
            "from": f"{src}, at {float(best['delay_s']) * 1e3:g} ms{at}"}  # fmt: skip

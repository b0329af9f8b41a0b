"""The newest finished doctor run on this host, for the experiments that follow it: a
doctor run leaves its verdict in the run directory (beside the testbeds' state: gone at
the next boot, as the host it checked may be), and every experiment started later on
the same boot with the same testbed settings (its knobs but the SUT, the ground truths
and the sink) carries it by reference in its metadata (``shared.lab``), so that its
report says on what host it was measured and whether that host passed."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, is_dataclass
from typing import Any

from netassay.counters.environment import read_text
from netassay.testbed import state

# in a folder of its own: a file beside the testbeds' states would be taken for one, and
# the host's sysctls would never be restored while it is there
RECORD = "host/doctor.json"
# what the doctor sets itself
NOT_SETTINGS = ("sut", "sut_drop", "sut_cap_pps", "sut_cap_reverse_pps", "sink")


def settings(cfg: Any) -> dict[str, Any] | None:
    """The testbed settings a doctor result holds for (None: a testbed kind it does not
    check, such as an external one)."""
    if not is_dataclass(cfg) or isinstance(cfg, type) or not hasattr(cfg, "sut_cap_pps"):
        return None
    return {k: v for k, v in asdict(cfg).items() if k not in NOT_SETTINGS}


def _boot() -> str:
    return read_text("/proc/sys/kernel/random/boot_id")


def remember(reference: dict[str, Any], cfg: Any) -> None:
    """Keep ``reference`` (utc, verdict, trusted range, store, experiment) as this host's
    newest doctor result for the testbed settings of ``cfg``."""
    path = state.run_dir() / RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    body = {"boot_id": _boot(), "settings": settings(cfg), "reference": reference}
    tmp.write_text(json.dumps(body, sort_keys=True))
    os.replace(tmp, path)


def newest(cfg: Any) -> dict[str, Any] | None:
    """This host's newest doctor result when it was taken on this boot with the testbed
    settings of ``cfg`` (None otherwise)."""
    try:
        body = json.loads((state.run_dir() / RECORD).read_text())
    except (OSError, ValueError):
        return None
    own = settings(cfg)
    if own is None or body.get("boot_id") != _boot() or body.get("settings") != own:
        return None
    ref = body.get("reference")
    return ref if isinstance(ref, dict) else None


def line(reference: dict[str, Any] | None) -> str:
    """'host checked by doctor on <utc>: <verdict>' ('' without a reference)."""
    if not reference:
        return ""
    return f"host checked by doctor on {reference.get('utc', '?')}: {reference.get('verdict')}"

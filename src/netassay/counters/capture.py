"""Capture points: tc BPF programs that stamp each probe, read after the run by sequence.

Eight points, on one clock (CLOCK_MONOTONIC, the same in every namespace), in the order
a probe passes them: the sender endpoint's interface (out), the sender server's uplink
(out), the responder server's uplink (in), the responder endpoint's interface (in), and
back the same way. Each is a copy of ``capture.bpf.c`` (requests or replies) attached
to one tc hook with its own mmap-able array of (sequence, time) slots indexed by the
sequence number modulo ``SLOTS``; ``Capture.lookup`` reads the slots of a batch of
probes straight from the mapped memory and returns 0 where a point did not see one.
"""

from __future__ import annotations

import ctypes
import json
import logging
import mmap
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from netassay.errors import ToolError
from netassay.names import RTT_EP_DEV as EP_DEV
from netassay.names import RTT_UPLINK as UPLINK
from netassay.proc import artifact, run

log = logging.getLogger("netassay.methods.rtt")

SLOTS = 1 << 18  # keep in step with NA_SLOTS in bpf/rtt/capture.bpf.c
SLOT_BYTES = 16
PRIO = 49152  # the tc filter priority of the capture programs (an unusual one: ours)


@dataclass(frozen=True)
class Point:
    name: str
    role: str  # the namespace role (rtt.topology)
    dev: str
    hook: str  # ingress | egress
    reply: bool  # stamps replies (else requests)


# In the order a probe passes them.
POINTS = (
    Point("snd_ep_out", "sndep", EP_DEV, "egress", False),
    Point("snd_up_out", "sndsrv", UPLINK, "egress", False),
    Point("rsp_up_in", "rspsrv", UPLINK, "ingress", False),
    Point("rsp_ep_in", "rspep", EP_DEV, "ingress", False),
    Point("rsp_ep_out", "rspep", EP_DEV, "egress", True),
    Point("rsp_up_out", "rspsrv", UPLINK, "egress", True),
    Point("snd_up_in", "sndsrv", UPLINK, "ingress", True),
    Point("snd_ep_in", "sndep", EP_DEV, "ingress", True),
)
POINT_NAMES = tuple(p.name for p in POINTS)


# -- the bpf() system call, for the two things tc and bpftool do not do ----------------
_SYS_BPF = 321 if os.uname().machine == "x86_64" else 280  # aarch64: 280
_BPF_MAP_GET_FD_BY_ID = 14
_libc = ctypes.CDLL(None, use_errno=True)


def _map_fd(map_id: int) -> int:
    attr = (ctypes.c_uint8 * 128)()
    ctypes.memmove(attr, ctypes.byref(ctypes.c_uint32(map_id)), 4)
    fd = _libc.syscall(_SYS_BPF, _BPF_MAP_GET_FD_BY_ID, attr, ctypes.sizeof(attr))
    if fd < 0:
        err = ctypes.get_errno()
        raise ToolError(
            f"cannot open the capture map {map_id}", os.strerror(err), "run netassay as root"
        )
    return int(fd)


class PointMap:
    """One capture point's array, mapped into this process: (sequence, time) slots."""

    def __init__(self, map_id: int) -> None:
        fd = _map_fd(map_id)
        try:
            self._mm = mmap.mmap(fd, SLOTS * SLOT_BYTES, mmap.MAP_SHARED)
        finally:
            os.close(fd)
        self.slots = np.frombuffer(self._mm, dtype=np.uint64).reshape(SLOTS, 2)

    def clear(self) -> None:
        self.slots[:] = 0

    def lookup(self, seq: np.ndarray) -> np.ndarray:
        """The time of each probe in ``seq`` at this point (0: not seen, or overwritten)."""
        s = self.slots[seq & (SLOTS - 1)]
        return np.where(s[:, 0] == seq, s[:, 1], 0).astype(np.uint64)

    def close(self) -> None:
        del self.slots
        self._mm.close()


def _prog_id(ns: str, dev: str, hook: str) -> int:
    out = run(["tc", "-n", ns, "-j", "filter", "show", "dev", dev, hook]).stdout
    for f in json.loads(out or "[]"):
        prog = f.get("options", {}).get("prog", {})
        if f.get("pref") == PRIO and "id" in prog:
            return int(prog["id"])
    raise ToolError(f"the capture program on {ns}:{dev} {hook} is missing", "", "retry the run")


def _map_id(prog_id: int) -> int:
    info = json.loads(run(["bpftool", "-j", "prog", "show", "id", str(prog_id)]).stdout)
    ids = info.get("map_ids") or []
    if len(ids) != 1:
        raise ToolError(f"capture program {prog_id} has maps {ids}", "expected one", "rebuild")
    return int(ids[0])


class Capture:
    """The eight capture points of one RTT testbed, attached while in use."""

    def __init__(self, namespaces: dict[str, str]) -> None:
        self.namespaces = namespaces
        self.maps: dict[str, PointMap] = {}
        self.attached: list[Point] = []

    def attach(self) -> Capture:
        objs = {False: artifact("capture_request.o"), True: artifact("capture_reply.o")}
        try:
            for p in POINTS:
                ns = self.namespaces[p.role]
                run(["tc", "-n", ns, "filter", "replace", "dev", p.dev, p.hook, "pref",
                     str(PRIO), "handle", "1", "bpf", "direct-action", "obj",
                     str(objs[p.reply]), "sec", "tc"])  # fmt: skip
                self.attached.append(p)
                self.maps[p.name] = PointMap(_map_id(_prog_id(ns, p.dev, p.hook)))
        except BaseException:
            self.detach()
            raise
        return self

    def clear(self) -> None:
        for m in self.maps.values():
            m.clear()

    def lookup(self, seq: np.ndarray) -> dict[str, np.ndarray]:
        """Every point's time of each probe in ``seq`` (0 where a point did not see it)."""
        return {name: m.lookup(seq) for name, m in self.maps.items()}

    def detach(self) -> None:
        for m in self.maps.values():
            m.close()
        self.maps.clear()
        for p in self.attached:
            ns = self.namespaces[p.role]
            run(["tc", "-n", ns, "filter", "del", "dev", p.dev, p.hook, "pref", str(PRIO)],
                check=False)  # fmt: skip
        self.attached.clear()

    def describe(self) -> list[dict[str, Any]]:
        return [
            {"point": p.name, "netns": self.namespaces[p.role], "dev": p.dev, "hook": p.hook,
             "stamps": "replies" if p.reply else "requests"}
            for p in POINTS
        ]  # fmt: skip

    def __enter__(self) -> Capture:
        return self.attach()

    def __exit__(self, *exc: object) -> None:
        self.detach()

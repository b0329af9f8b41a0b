"""The XDP router SUT (``--sut xdp-router``, PASTRAMI's eBPF class): load, attach, read.

The program (``bpf/xdp_router.c``, built from source by ``make setup``) runs in native
mode on the SUT's ingress veth ``sut0``: a FIB lookup (``bpf_fib_lookup``, the SUT
namespace's own routes and static neighbours), the MACs rewritten, TTL / hop limit
decremented, and ``bpf_redirect`` to ``sut1``. What it cannot forward goes to the kernel
stack (``XDP_PASS``). Its per-CPU counters, one per reason (``REASONS``), are read from
its map before and after every trial (``counters.snapshot``) and joined to the loss
location (``counters.loss``).

Everything goes through the ordinary tools, as argument lists: ``ip link set ... xdpdrv
obj`` (iproute2 loads the object with libbpf) attaches it; ``bpftool -j`` finds its maps
from the program id the interface reports and reads or writes them. Nothing is pinned:
the program and its maps live as long as ``sut0``, so deleting the SUT namespace removes
them, on any teardown path.

Where the work runs. A native XDP program on a veth runs in that veth's NAPI poll, not
where RPS sends packets: without more it runs on the CPU that transmits into the veth
(the generator's, inside its send call). At ``pin-2cpu`` ``sut0``'s NAPI is made
threaded and its kthread (``napi/sut0-<id>``) pinned to the SUT's CPU (1), at the
real-time priority of the kernel's interrupt threads (``NAPI_PRIORITY``); the
redirect hands each frame to the sink's veth, whose NAPI then runs on that CPU too (as
the kernel router's transmit does). At ``unpinned`` and ``pin-1cpu`` the program runs
on the generator's CPU, inside its send call.

The wire in front of it. veth's XDP receive ring holds 256 frames. By default the
generator sends socket buffers through a head-drop wire in front of it (as described
below); with ``--rx-mode napi`` it sends XDP live frames (``netassay-gen --technique
xdp``, paced inside the kernel, as into every SUT in napi receive mode,
``testbed.receive``): veth drops a live frame its full ring
cannot take, counted as the SUT's ingress loss (a NIC's ring overrunning). After a stall
of the generator's CPU (this VM takes a vCPU away for 0.3-1.7 ms a few times a second)
the frames that fell due catch up at most twice the rate (``--catch-up``), not in one
burst that would overflow the ring. Socket buffers (a frame mix, or two generators on
one CPU under --bidirectional) cannot be dropped that way: when the ring is full veth
stops the sender's queue (backpressure), and through a plain pfifo every frame the
router cannot take would be refused to the generator and retried, never lost. Their
wire is therefore a ``pfifo_head_drop`` queue on ``tg0`` (its limit the testbed's
backlog: ``--backlog`` is its size) in front of veth's ring: it never refuses a send,
and when both are full it drops the oldest frame, counted as the SUT's ingress loss.

Ground truths live in the program, since redirected frames bypass nft's forward hook
and sut1's egress hook and qdisc (checked: the netdev egress hook sees none of them):
a random drop (``--sut-drop``) and a token-bucket cap (``--sut-cap``, the same bucket
as the nft policer of the other SUTs, ``topology.cap_bucket_pkts``).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from netassay.counters.xdp_router import map_ids, prog_id
from netassay.errors import TestbedError
from netassay.proc import run

log = logging.getLogger("netassay.testbed")

CONFIG_MAP = "na_xdp_config"
OBJECT = "xdp_router.o"
PASS_OBJECT = "xdp_pass.o"  # XDP_PASS: makes a veth take its frames into NAPI
ENV_OBJECT = "NETASSAY_XDP_ROUTER_OBJ"
# The NAPI thread's real-time priority: that of the kernel's threaded interrupt handlers.
# Softirq work (the kernel router's RPS) preempts ordinary tasks; a NAPI thread at the
# default policy would share its CPU with whatever else runs there and overflow veth's
# 256-frame ring while it waits (measured: 5% loss at 50 kpps with a busy CPU 1).
NAPI_PRIORITY = 50
VETH_RING = 256  # veth's XDP receive ring (VETH_RING_SIZE)
WIRE_QDISC = "pfifo_head_drop"  # the generator's wire in front of it (see above)


def object_candidates(obj: str = OBJECT) -> list[Path]:
    """Where a built program is looked for, in order: $NETASSAY_XDP_ROUTER_OBJ (the
    router's only), the venv's share/netassay (``make setup`` installs it there), the
    repository's bpf/build (where ``make bpf`` builds it)."""
    env = os.environ.get(ENV_OBJECT) if obj == OBJECT else None
    return [
        *([Path(env)] if env else []),
        Path(sys.prefix) / "share" / "netassay" / obj,
        Path(__file__).resolve().parents[3] / "bpf" / "build" / obj,
    ]


def object_path(candidates: list[Path] | None = None, obj: str = OBJECT) -> Path:
    """The built program (see object_candidates), or one line saying how to build it."""
    candidates = object_candidates(obj) if candidates is None else candidates
    for p in candidates:
        if p.is_file():
            return p
    what = "the XDP router's program" if obj == OBJECT else f"the XDP program {obj}"
    raise TestbedError(
        f"{what} is not built",
        f"no {obj} in {', '.join(str(p.parent) for p in candidates)}",
        f"run 'make setup' (it builds bpf/{obj.removesuffix('.o')}.c with clang)",
    )


def config_bytes(drop: float, cap_pps: float | None, cap_burst: int | None) -> list[str]:
    """The program's config (struct config: drop_ppm, cap_pps, cap_burst; u64 little
    endian) as the hex bytes ``bpftool map update ... value hex`` takes."""
    fields = (round(drop * 1_000_000), round(cap_pps or 0), int(cap_burst or 0))
    raw = b"".join(v.to_bytes(8, "little") for v in fields)
    return [f"{b:02x}" for b in raw]


def configure(pid: int, drop: float, cap_pps: float | None, cap_burst: int | None) -> None:
    """Set the ground truths (random drop probability, pps cap and its bucket)."""
    mid = map_ids(pid)[CONFIG_MAP]
    value = config_bytes(drop, cap_pps, cap_burst)
    run(["bpftool", "map", "update", "id", str(mid), "key", "hex", "00", "00", "00", "00",
         "value", "hex", *value])  # fmt: skip


def attach(ns: str, dev: str, obj: Path) -> int:
    """Load the program and attach it in native (driver) mode; return its id."""
    run(["ip", "-n", ns, "link", "set", "dev", dev, "xdpdrv", "obj", str(obj), "sec", "xdp"])
    links = json.loads(run(["ip", "-n", ns, "-j", "link", "show", "dev", dev]).stdout)
    pid = prog_id(links, dev)
    if pid is None:
        raise TestbedError(
            f"the XDP router did not attach to {dev} in {ns}",
            "the interface reports no na_xdp_router program in native mode",
            "check 'ip -n NS link show' and the kernel log",
        )
    return pid


def _napi_threads(dev: str) -> dict[int, str]:
    """Kernel threads polling ``dev``'s NAPI (``napi/<dev>-<napi id>``), pid -> name."""
    out = {}
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            comm = (p / "comm").read_text().strip()
        except OSError:
            continue
        if comm.startswith(f"napi/{dev}-"):
            out[int(p.name)] = comm
    return out


def thread_napi(ns: str, dev: str, cpu: int) -> dict[str, Any]:
    """Make ``dev``'s NAPI threaded and pin its kthread to ``cpu``. Kernel threads are
    named by device, not namespace: the one this call creates is the new one."""
    before = _napi_threads(dev)
    run(["tee", f"/sys/class/net/{dev}/threaded"], netns=ns, input_text="1\n")
    new: dict[int, str] = {}
    for _ in range(100):
        new = {p: c for p, c in _napi_threads(dev).items() if p not in before}
        if new:
            break
        time.sleep(0.01)
    if len(new) != 1:
        raise TestbedError(
            f"cannot pin the NAPI thread of {dev} in {ns}",
            f"expected one new napi/{dev}-* kernel thread, found {len(new)}",
            "build one testbed at a time, or use --pinning unpinned",
        )
    pid, comm = next(iter(new.items()))
    os.sched_setaffinity(pid, {cpu})
    os.sched_setscheduler(pid, os.SCHED_FIFO, os.sched_param(NAPI_PRIORITY))
    return {"napi_thread": comm, "napi_pid": pid, "cpu": cpu, "priority": NAPI_PRIORITY}


def set_wire(tg_ns: str, tg_dev: str, limit: int) -> None:
    """The generator's wire for the XDP router: a head-drop queue of ``limit`` frames in
    front of veth's XDP ring (see the module doc)."""
    run(["tc", "-n", tg_ns, "qdisc", "replace", "dev", tg_dev, "root", WIRE_QDISC,
         "limit", str(limit)])  # fmt: skip


def enable_peer_napi(sink_ns: str, sink_dev: str) -> None:
    """veth delivers a redirected frame only when the receiving end runs NAPI (an XDP
    program or GRO): GRO on, so that it works whatever the sink counts with. Test
    frames are UDP to an address with no socket: GRO does not merge them."""
    run(["ip", "netns", "exec", sink_ns, "ethtool", "-K", sink_dev, "gro", "on"])


def setup(
    names: dict[str, str],
    devs: dict[str, str],
    *,
    ring: int,
    sut_cpu: int | None,
    drop: float,
    cap_pps: float | None,
    cap_burst: int | None,
) -> dict[str, Any]:
    """Attach the XDP router in the SUT namespace and arrange its wire, peer and CPU.

    ``names``: role -> netns; ``devs``: ``tg``, ``sut_in`` and ``sink`` device names;
    ``ring``: the head-drop queue's limit; ``sut_cpu``: the CPU that polls ``sut_in``
    (None: the generator's, inside its send call). Returns what the testbed's state
    records."""
    obj = object_path()
    set_wire(names["tg"], devs["tg"], ring)
    enable_peer_napi(names["sink"], devs["sink"])
    pid = attach(names["sut"], devs["sut_in"], obj)
    configure(pid, drop, cap_pps, cap_burst)
    where: dict[str, Any] = {"cpu": None, "napi_thread": None}
    if sut_cpu is not None:
        where = thread_napi(names["sut"], devs["sut_in"], sut_cpu)
    log.info("XDP router %s attached to %s (prog id %d)", obj, devs["sut_in"], pid)
    return {
        "object": str(obj),
        "prog_id": pid,
        "wire_qdisc": WIRE_QDISC,
        "ring_pkts": ring + VETH_RING,
        "drop": drop,
        "cap_pps": cap_pps,
        "cap_burst": cap_burst,
        **where,
    }

"""How the SUT's ingress veth receives (``--rx-mode``), and how the generator sends to it.

A veth has two receive paths, and which one a testbed uses decides both what the SUT
does per frame and how fast a generator on a small host can offer frames:

- ``backlog`` (the default, and netassay's only mode before ``--rx-mode``): the veth
  has no NAPI. Each
  frame the generator transmits is handed to the stack by ``netif_rx`` inside the
  generator's own send call, on the generator's CPU, and RPS queues it to the SUT's
  CPU (an IPI, the per-CPU backlog). The generator sends socket buffers (AF_PACKET
  sendmmsg through the wire's pfifo): per frame, on its CPU, a socket buffer is
  allocated and copied, passes the qdisc, the veth's transmit, the flow hash and the
  enqueue to another CPU's backlog; measured here, that path tops out below the kernel
  router's maximum receive rate, so a paced sweep of an uncapped router cannot reach
  its saturation.
- ``napi``: an XDP program that passes every frame (``bpf/xdp_pass.c``)
  sits on the SUT's ingress veth, which makes veth take frames into a 256-frame ring
  and poll it with NAPI, in batches, as a NIC's driver polls its receive ring. The
  poll runs in a kernel thread pinned to the SUT's CPU at the priority of threaded
  interrupt handlers (``xdp_router.thread_napi``, where the pinning gives the SUT a CPU
  of its own); the socket buffer is built there, from the frame, and RPS steers it as
  ``--rx-affinity`` says, exactly as in backlog mode. The generator sends XDP live
  frames (``netassay-gen --technique xdp``, paced inside the kernel): no socket buffer on
  its side at all, so its CPU only builds, stamps and hands over frames. A frame the
  ring cannot take is dropped by the veth (counted as the SUT's ingress loss, the ring
  of a NIC overrunning). A frame mix (``--imix``) cannot be sent as live frames: it goes
  as socket buffers through a head-drop queue in front of the ring (the XDP router's
  wire, ``xdp_router.set_wire``), whose overflow is the SUT's ingress loss too.

The XDP router's own program gives its ingress the same NAPI ring whatever the mode;
the mode says only how the generator sends to it (live frames in ``napi`` mode, socket
buffers through its head-drop wire in ``backlog`` mode, as before the knob). What
changes between the modes for the same SUT is shown by
``netassay doctor`` and ``bench/generator.py`` (reach and MRR in each).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from netassay import names
from netassay.config import TestbedConfig
from netassay.proc import run
from netassay.testbed import xdp_router

log = logging.getLogger("netassay.testbed")

NAPI, BACKLOG = "napi", "backlog"
RING_PKTS = xdp_router.VETH_RING  # veth's NAPI ring, what a burst of live frames meets first
# netassay-gen's flags for each way of sending: live frames, or socket buffers through
# the wire's qdisc (a frame mix in napi mode; every frame in backlog mode)
LIVE_FRAMES = ("--technique", "xdp")
THROUGH_QDISC = ("--qdisc",)


def napi(cfg: TestbedConfig) -> bool:
    """Whether the SUT's ingress is polled by NAPI (every XDP router's is)."""
    return cfg.rx_mode == NAPI or cfg.sut == "xdp-router"


def gen_flags(cfg: TestbedConfig, shared: bool = False) -> list[str]:
    """How the generator sends into a testbed with this receive mode. ``shared``: two
    generators share one CPU (--bidirectional), each waiting for its sends' times by
    yielding it; live frames wait inside the kernel, where they cannot yield, so both
    send socket buffers through the wires' head-drop queues then."""
    if cfg.rx_mode == NAPI and cfg.imix is None and cfg.pcap is None and not shared:
        return list(LIVE_FRAMES)
    return list(THROUGH_QDISC)


def technique(cfg: TestbedConfig) -> str:
    """The generator's technique in words (``testbed show``, the environment, an
    experiment's metadata that ``assess`` prints)."""
    if cfg.rx_mode == NAPI and cfg.imix is None and cfg.pcap is None:
        return (
            "XDP live frames paced inside the kernel, flushed every 8 us of schedule, a "
            "catch-up after a stall at most 2x the rate"
        )
    return "AF_PACKET sendmmsg through the wire's qdisc, 8 us of schedule per call"


def setup_napi(
    names: dict[str, str], devs: dict[str, str], *, ring: int, sut_cpu: int | None
) -> dict[str, Any]:
    """Give the SUT's ingress veth a NAPI ring (a pass program on it), its wire a
    head-drop queue of ``ring`` frames for socket buffers, and its poll a kernel thread
    on ``sut_cpu`` (None: the poll runs where frames are sent, inside the send call).
    ``names``: role -> netns; ``devs``: ``tg``, ``sut_in`` and ``sink``. Returns what
    the testbed's state records."""
    obj = xdp_router.object_path(obj=xdp_router.PASS_OBJECT)
    xdp_router.set_wire(names["tg"], devs["tg"], ring)
    run(["ip", "-n", names["sut"], "link", "set", "dev", devs["sut_in"], "xdpdrv", "obj",
         str(obj), "sec", "xdp"])  # fmt: skip
    where: dict[str, Any] = {"cpu": None, "napi_thread": None}
    if sut_cpu is not None:
        where = xdp_router.thread_napi(names["sut"], devs["sut_in"], sut_cpu)
    log.info("%s polled by NAPI (%s), thread %s", devs["sut_in"], obj, where["napi_thread"])
    return {
        "mode": NAPI,
        "program": str(obj),
        "ring_pkts": RING_PKTS,
        "wire_qdisc": xdp_router.WIRE_QDISC,
        "wire_pkts": ring,
        **where,
    }


def reverse_napi(sink_ns: str, sut_ns: str, rx: dict[str, Any]) -> None:
    """--bidirectional in napi mode: the SUT's other veth (the reverse direction's
    ingress) polled as its first is (``rx``: what ``setup_napi`` recorded), and the
    sink's veth, where the reverse generator sends, given the same head-drop wire.
    Idempotent: a veth that has its program already is left as it is."""
    xdp_router.set_wire(sink_ns, names.SINK_DEV, int(rx["wire_pkts"]))
    links = json.loads(run(["ip", "-n", sut_ns, "-j", "link", "show", "dev", names.SUT_OUT]).stdout)
    if any((link.get("xdp") or {}).get("prog") for link in links):
        return
    run(["ip", "-n", sut_ns, "link", "set", "dev", names.SUT_OUT, "xdpdrv", "obj", rx["program"],
         "sec", "xdp"])  # fmt: skip
    if rx.get("cpu") is not None:
        xdp_router.thread_napi(sut_ns, names.SUT_OUT, int(rx["cpu"]))


def describe(state: dict[str, Any]) -> str:
    """The receive mode of a built testbed, in a line (``testbed show``)."""
    cfg = state.get("config", {})
    rx = state.get("receive")
    if rx is None and cfg.get("sut") != "xdp-router":
        return (
            "backlog: netif_rx on the sender's CPU, steered by RPS; the generator sends "
            "socket buffers (AF_PACKET sendmmsg through the wire's pfifo)"
        )
    rx = rx or state.get("xdp_router", {})
    poll = (
        f"its poll a kernel thread ({rx['napi_thread']}) on CPU {rx['cpu']}"
        if rx.get("napi_thread")
        else "its poll on the sender's CPU, inside the send call"
    )
    sender = (
        "AF_PACKET sendmmsg through a head-drop queue"
        if cfg.get("imix") or cfg.get("pcap")
        else "XDP live frames, paced inside the kernel"
    )
    return f"napi: a {RING_PKTS}-frame ring, {poll}; the generator sends {sender}"

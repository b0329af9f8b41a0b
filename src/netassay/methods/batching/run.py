"""The batching measurement: build the RTT testbed, set the receiver's knobs, send paced
trains, and read each probe's time at the sender's egress and the receiver's ingress.

The sender endpoint sends ICMP echo probes (netassay-probe) at a fixed spacing; the
kernel of the receiver endpoint answers them. The rtt capture points stamp each probe as
it leaves the sender endpoint (``snd_ep_out``) and as it enters the receiver endpoint
(``rsp_ep_in``): the tc hook runs when the receiver's stack takes the packet in, so a
packet held for a batch is stamped when its batch is delivered.

With ``--probe udp`` the sender endpoint sends UDP probes to port 7 instead and the rtt
method's app responder answers them (``netassay-probe echo --probe udp``, a UDP socket in
the receiver endpoint): it notes the time its recv call returned each datagram
(CLOCK_MONOTONIC, the capture points' clock) in the reply, and the sender keeps it per
probe, a third point (``socket``): what the receiving application sees of the train.
The echo is started with ``--busy-poll`` (0: off): it sets SO_BUSY_POLL on its socket
and reads it back (with SO_PREFER_BUSY_POLL, left off), waits for a datagram in a
blocking read (where SO_BUSY_POLL acts: see probe.c; nothing machine-wide is changed),
and counts each run's datagrams per NAPI id (SO_INCOMING_NAPI_ID), stored with the run.

The knobs act on the receiver endpoint's veth (``eth0`` in its namespace) and its peer
in the receiver's server: GRO on gives the veth a NAPI instance (veth_xmit queues to its
ring and NAPI polls it); the peer's TSO is turned off because veth takes a forwarded
packet into NAPI only when the sending side has no TSO (``veth_skb_is_eligible_for_gro``);
an XDP program (``bpf/xdp_pass.c``: every frame passed, untouched) attached native does
the same without GRO; ``gro_flush_timeout`` and ``napi_defer_hard_irqs`` make NAPI wait
for a timer instead of being woken by each packet; ``threaded`` moves the polling to a
kernel thread. Each is read before it is set and read back after; both devices live in
the testbed's namespaces, so removing the testbed removes every setting with them (nothing on the
host is changed).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, NotRequired, TypedDict

import numpy as np

from netassay import quality
from netassay.counters.capture import Capture
from netassay.errors import TestbedError
from netassay.methods.base import Progress, run_store
from netassay.methods.batching import gaps
from netassay.methods.batching import store as batching_store
from netassay.methods.batching.gaps import RunFigures
from netassay.methods.batching.request import BatchingRequest
from netassay.proc import run as run_cmd
from netassay.shared.probe_run import achieved_rate, environment
from netassay.store.db import Store
from netassay.testbed import Testbed, require_root, xdp_router
from netassay.testbed.rtt import EP_DEV, RttTestbedConfig, server_dev
from netassay.traffic.probe import Echo, ProbeSpec, Sender
from netassay.trial.record import TrialRecord

EGRESS, INGRESS = "snd_ep_out", "rsp_ep_in"  # the capture points read
SOCKET = "socket"  # --probe udp: the echo's recv call returned it (stamped by the echo)
WARMUP = 50  # probes sent before the first run (caches, the first NAPI poll), not stored
MISSED = 0.01  # probes missing at a capture point, above this share: a fault
XDP_DRV = 1  # XDP_ATTACHED_DRV: 'ip -j link' shows a native program as mode 1


class Knobs(TypedDict):
    """The receiver veth's settings (``read_knobs``), as the kernel reads them or as they
    are asked (``set_knobs``): GRO and its peer's TSO (ethtool's on/off; None: ethtool
    does not list it), the native XDP program (on/off) and the NAPI settings in sysfs
    (gro_flush_timeout, napi_defer_hard_irqs, threaded) as they read."""

    gro: str | None
    xdp: str
    peer_tso: str | None
    gro_flush_timeout: str
    napi_defer_hard_irqs: str
    threaded: str


class BusyPoll(TypedDict):
    """The busy polling asked of the echo's socket (--busy-poll)."""

    busy_poll_us: int


class SocketKnobs(TypedDict):
    """What the echo's socket was asked and what it read back (``socket_knobs``): the
    read is the echo's own report as it gave it (``traffic.probe.Echo.busy_poll``:
    busy_poll_us, prefer_busy_poll, ...)."""

    set: BusyPoll
    read: dict[str, Any]


class KnobsSet(TypedDict):
    """The knobs of a measurement as its experiment's metadata keeps them (``knobs``,
    JSON as it is): the receiver's veth and its peer, what they had before, what was
    asked and what the kernel read back after; with the echo (--probe udp) its socket's."""

    device: str
    peer: str
    before: Knobs
    set: Knobs
    read: Knobs
    socket: NotRequired[SocketKnobs]


@dataclass(frozen=True)
class Train:
    """One paced train sent (``send``): the prober's summary (its JSON), each probe's
    stamps at the two capture points (0: not seen), at the echo's socket with --probe udp
    (None otherwise), and how long it took."""

    prober: dict[str, Any]
    egress: np.ndarray
    ingress: np.ndarray
    socket: np.ndarray | None
    elapsed_s: float


@dataclass
class Batching:
    """One ``netassay batching`` call: the request, where it is stored, what it did."""

    req: BatchingRequest
    db: str
    name: str
    label: str = ""
    progress: Progress = lambda line: None
    knobs: KnobsSet | None = None  # (set before the first run is stored)
    experiment_id: int | None = None
    stored: int = 0

    def testbed(self) -> RttTestbedConfig:
        return RttTestbedConfig(path=self.req.path, background=0, cpus=self.req.cpus)

    def factors(self) -> dict[str, Any]:
        """The experiment's config (an open JSON document, as every method's is)."""
        r = self.req
        return {
            "method": "batching", "path": r.path, "rate_pps": r.rate_pps, "count": r.count,
            "runs": r.runs, "size_bytes": r.size_bytes, "gro": r.gro, "flush_ns": r.flush_ns,
            "defer": r.defer, "threaded": r.threaded, "xdp": r.xdp, "gap_ns": r.threshold_ns,
            "cpus": r.cpus, "probe": r.probe, "busy_poll_us": r.busy_poll_us,
            "testbed": asdict(self.testbed()),
        }  # fmt: skip


# -- the knobs ---------------------------------------------------------------------------
def _sysfs(ns: str, key: str) -> str:
    return run_cmd(["cat", f"/sys/class/net/{EP_DEV}/{key}"], netns=ns).stdout.strip()


def _features(ns: str, dev: str) -> dict[str, str]:
    out = run_cmd(["ethtool", "-k", dev], netns=ns).stdout
    want = {"generic-receive-offload": "gro", "tcp-segmentation-offload": "tso"}
    found = {}
    for line in out.splitlines():
        k, _, v = line.partition(":")
        if k.strip() in want:
            found[want[k.strip()]] = v.split()[0] if v.split() else ""
    return found


def _xdp(ns: str) -> str:
    """'on' when an XDP program is attached in native (driver) mode to the receiver veth."""
    (link,) = json.loads(run_cmd(["ip", "-j", "link", "show", "dev", EP_DEV], netns=ns).stdout)
    return "on" if link.get("xdp", {}).get("mode") == XDP_DRV else "off"


def read_knobs(tb: Testbed) -> Knobs:
    """The receiver veth's GRO, XDP and NAPI settings and its peer's TSO, as the kernel
    has them."""
    rsp, srv = tb.ns("rspep"), tb.ns("rspsrv")
    return {
        "gro": _features(rsp, EP_DEV).get("gro"),
        "xdp": _xdp(rsp),
        "peer_tso": _features(srv, server_dev("rspep")).get("tso"),
        "gro_flush_timeout": _sysfs(rsp, "gro_flush_timeout"),
        "napi_defer_hard_irqs": _sysfs(rsp, "napi_defer_hard_irqs"),
        "threaded": _sysfs(rsp, "threaded"),
    }


def set_knobs(tb: Testbed, req: BatchingRequest) -> KnobsSet:
    """Set the knobs (see the module); what was there before, what was asked, what the
    kernel reads back. A setting it does not take is a testbed error."""
    rsp, srv = tb.ns("rspep"), tb.ns("rspsrv")
    before = read_knobs(tb)
    want: Knobs = {"gro": req.gro, "xdp": req.xdp, "peer_tso": "off",
                   "gro_flush_timeout": str(req.flush_ns),
                   "napi_defer_hard_irqs": str(req.defer),
                   "threaded": "1" if req.threaded == "on" else "0"}  # fmt: skip
    sysfs = {"gro_flush_timeout": want["gro_flush_timeout"],
             "napi_defer_hard_irqs": want["napi_defer_hard_irqs"],
             "threaded": want["threaded"]}  # fmt: skip
    run_cmd(["ethtool", "-K", server_dev("rspep"), "tso", "off"], netns=srv)
    run_cmd(["ethtool", "-K", EP_DEV, "gro", req.gro], netns=rsp)
    if req.xdp == "on":  # (the testbed's veth has none before)
        prog = xdp_router.object_path(obj=xdp_router.PASS_OBJECT)
        run_cmd(["ip", "link", "set", "dev", EP_DEV, "xdpdrv", "obj", str(prog), "sec", "xdp"],
                netns=rsp)  # fmt: skip
    for key, value in sysfs.items():
        if _sysfs(rsp, key) != value:
            path = f"/sys/class/net/{EP_DEV}/{key}"
            run_cmd(["tee", path], netns=rsp, input_text=value + "\n")
    after = read_knobs(tb)
    _taken(want, after, "the receiver's veth did not take its batching knobs",
           "check that this kernel's veth has these settings")  # fmt: skip
    return {"device": f"{rsp}:{EP_DEV}", "peer": f"{srv}:{server_dev('rspep')}",
            "before": before, "set": want, "read": after}  # fmt: skip


def socket_knobs(echo: Echo, req: BatchingRequest) -> SocketKnobs:
    """What the echo's socket was asked (--busy-poll) and what the kernel read back; a
    setting it does not take is a testbed error."""
    read = echo.busy_poll
    want: BusyPoll = {"busy_poll_us": req.busy_poll_us}
    _taken(want, read, "the echo's socket did not take its busy polling",
           "check that this kernel has CONFIG_NET_RX_BUSY_POLL")  # fmt: skip
    return {"set": want, "read": read}


def _taken(want: Mapping[str, object], read: Mapping[str, object], what: str, todo: str) -> None:
    """Every setting asked reads back as asked, or a testbed error saying which did not."""
    wrong = {k: read.get(k) for k, v in want.items() if read.get(k) != v}
    if wrong:
        raise TestbedError(what, f"asked {want}, read back {wrong}", todo)


def napi_ids(echo: Echo, found: RunFigures) -> None:
    """Add a run's datagrams per NAPI id at the echo's socket to its figures (since the
    last call: the warm-up's are read and dropped before the first run)."""
    got = echo.napi_ids()
    found["socket_napi_ids"] = got.get("napi_ids", {})
    found["socket_napi_other"] = int(got.get("napi_other", 0))


# -- one run -----------------------------------------------------------------------------
def send(tb: Testbed, cap: Capture, req: BatchingRequest, count: int) -> Train:
    """One paced train; each probe's stamps at the two points (and, with --probe udp, at
    the echo's socket: None otherwise) and the prober's summary."""
    spec = ProbeSpec(probe=req.probe, rate_pps=req.rate_pps, count=count,
                     size_bytes=req.size_bytes, timeout_s=1.0)  # fmt: skip
    cap.clear()
    peer = tb.state["peers"]["sndep"]
    stamped = req.probe == "udp"
    sender = Sender(tb.ns("sndep"), peer["dst"], spec, tb.state["cpus"]["snd"], stamped)
    t0, rows = time.monotonic(), []
    try:
        rows = list(sender.batches())
        prober = sender.finish()
    finally:
        sender.kill()
    elapsed = time.monotonic() - t0
    recs = np.concatenate(rows) if rows else np.zeros((0, 5 if stamped else 4), dtype=np.uint64)
    seq = np.ascontiguousarray(recs[:, 0])
    points = cap.lookup(seq)
    return Train(prober=prober, egress=points[EGRESS], ingress=points[INGRESS],
                 socket=recs[:, 4] if stamped else None, elapsed_s=elapsed)  # fmt: skip


def warnings(run: RunFigures, prober: dict[str, Any]) -> list[str]:
    """Measurement-quality warnings; those naming a fault (quality.FAULTS) exclude the run."""
    out = []
    sent, seen = int(prober.get("sent", 0)), int(run["seen"])
    if sent and sent - seen > MISSED * sent:
        out.append(
            f"{quality.COUNTER_FAULT}: {sent - seen} of {sent} probes missed a capture point"
        )
    stamped = run.get("socket_seen")
    if stamped is not None and seen and seen - stamped > MISSED * seen:
        out.append(
            f"{quality.COUNTER_FAULT}: {seen - stamped} of {seen} probes came back without"
            " the time the echo's socket gave them"
        )
    if prober.get("stopped_by_signal"):
        out.append(f"{quality.TRUNCATED}: stopped by a signal after {sent} probes")
    ids = run.get("socket_napi_ids")
    if run.get("busy_poll_us") and ids is not None and not any(int(k) for k in ids):
        out.append(
            "no NAPI id: the echo's socket saw no NAPI instance, so its busy polling polled nothing"
        )
    return out


# -- the measurement ---------------------------------------------------------------------
@contextmanager
def _echo(tb: Testbed, req: BatchingRequest) -> Iterator[Echo | None]:
    """With --probe udp, the rtt method's app responder in the receiver endpoint (its
    UDP socket on port 7, busy polling as --busy-poll asks) for the testbed's life; with
    icmp, the kernel answers (None)."""
    if req.probe != "udp":
        yield None
        return
    echo = Echo(tb.ns("rspep"), "udp", 0, tb.state["cpus"]["rsp"], req.busy_poll_us)
    try:
        yield echo
    finally:
        echo.stop()


@contextmanager
def _store(b: Batching) -> Iterator[Store]:
    """The store runs are written to as they end; one this call created is removed again
    when it ends (a signal, an error) before any run was stored."""
    with run_store(b.db, lambda: bool(b.stored)) as st:
        yield st


def _experiment(store: Store, b: Batching, tb: Testbed) -> int:
    r = b.req
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    label = b.label or (
        f"{r.path} {r.rate_pps:g}/s"
        + (" udp" if r.probe == "udp" else "")
        + f" gro {r.gro}"
        + (f" flush {r.flush_ns / 1e3:g}us defer {r.defer}" if r.flush_ns or r.defer else "")
        + (" threaded" if r.threaded == "on" else "")
        + (" xdp" if r.xdp == "on" else "")
        + (f" busy-poll {r.busy_poll_us}us" if r.busy_poll_us else "")
    )
    batching_store.ensure(store)
    exp_id, _ = store.add_experiment(
        key=f"batching-{b.name}-{stamp}-{secrets.token_hex(3)}", kind=batching_store.KIND,
        source=batching_store.SOURCE, label=label, config=b.factors(),
        metadata={"knobs": b.knobs, "points": {"egress": EGRESS, "ingress": INGRESS,
                                               **({"socket": SOCKET} if r.probe == "udp" else {})},
                  "testbed": {"name": tb.name, "cpus": tb.state["cpus"]}},
        environment=environment(tb),
    )  # fmt: skip
    return exp_id


def _socket_progress(found: RunFigures) -> str:
    if "socket_seen" not in found:
        return ""
    return (
        f"; at the socket {found['socket_share_in_bursts']:.0%} in bursts, ingress to socket"
        f" p50 {(found['socket_wait_p50_ns'] or 0) / 1e3:.1f} us"
    )


def measure(b: Batching) -> batching_store.StoredBatching:
    """Run the whole measurement (see the module); each run is stored as it ends."""
    r = b.req
    r.validate(b.db, b.name)
    require_root("netassay batching")
    with (
        Testbed(b.name, b.testbed()) as tb,
        Capture(tb.state["namespaces"]) as cap,
        _echo(tb, r) as echo,
        _store(b) as store,
    ):
        knobs = set_knobs(tb, r)
        if echo is not None:
            knobs["socket"] = socket_knobs(echo, r)
        b.knobs = knobs
        send(tb, cap, r, WARMUP)
        if echo is not None:
            echo.napi_ids()  # (the warm-up's)
        for i in range(r.runs):
            got = send(tb, cap, r, r.count)
            found = gaps.analyse(got.egress, got.ingress, r.spacing_ns, r.threshold_ns,
                                 got.socket)  # fmt: skip
            if echo is not None:
                found["busy_poll_us"] = r.busy_poll_us
                napi_ids(echo, found)
            p = got.prober
            if b.experiment_id is None:
                b.experiment_id = _experiment(store, b, tb)
            trial = TrialRecord(
                load_index=0, repetition=i, rate_pps=r.rate_pps,
                duration_s=max(float(p.get("duration_s", 0.0)), 1e-9),
                sent=int(p.get("sent", 0)), received=int(p.get("received", 0)),
                source=batching_store.SOURCE, achieved_rate_pps=achieved_rate(p),
                counters={"prober": p}, warnings=warnings(found, p),
                utc=datetime.now(UTC).isoformat(timespec="microseconds"),
            )  # fmt: skip
            batching_store.add_run(store, b.experiment_id, trial, found)
            b.stored += 1
            b.progress(
                f"run {i + 1}/{r.runs}: {found['share_in_bursts']:.0%} in bursts, mean burst"
                f" {found['burst_len_mean']:.1f}, wait p50 {(found['wait_p50_ns'] or 0) / 1e3:.1f}"
                " us" + _socket_progress(found)
            )
        assert b.experiment_id is not None  # stored by the first run (runs >= 1)
        return batching_store.stored(store, store.experiment(b.experiment_id))

"""Every counter a trial reads, read in-process: no program is started per read.

``counters.snapshot.snapshot`` reads a namespace with four programs (``ip -j -s link``,
``tc -j -s qdisc``, ``nft -j list counters``, ``cat /proc/net/snmp{,6}``) and the sink's
flows with a fifth: about 35 ms a snapshot on the embedded testbed (bench/search.py), two
per trial. ``Snapshots`` reads the same counters into the same snapshot (the shape
``counters.loss.flatten`` reads) through one long-lived thread per namespace, joined to
it once: a netlink dump of its links and one of its qdiscs (pyroute2's ``IPRoute`` on a
socket opened there), its ``/proc/thread-self/net/snmp`` and ``snmp6`` (opened there,
read again from the start), and its nft counters (and the sink's flow set) through
libnftables, the library ``nft`` itself runs (a context made there; its JSON is ``nft
-j``'s). Where libnftables cannot be loaded, ``nft`` is run as before. The XDP router's
counters (a namespace whose link runs it) are read with ``bpftool`` as ``snapshot``
reads them, the program's name and stats map looked up once per program.

``tests/system/test_counter_reads.py`` reads a quiet testbed both ways and compares.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import socket
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from netassay.counters import sutstate, xdp_router
from netassay.counters.snapshot import (
    LINK_FIELDS,
    LINK_STATE,
    LinkState,
    Snapshot,
    parse_nft_counters,
    parse_nft_set,
    parse_snmp,
    parse_softnet,
)
from netassay.errors import ToolError
from netassay.proc import netns_error, run
from netassay.units import utc_now

if TYPE_CHECKING:
    from netassay.counters.sink import SinkCounter

log = logging.getLogger("netassay.counters")

NFT_CTX_OUTPUT_JSON = 1 << 4  # enum nft_output_flags (nftables/libnftables.h)
SINK_FLOWS = "list set netdev na_sink na_flows"
_NFT_LOCK = threading.Lock()  # libnftables keeps some state of its own: one call at a time


def link_row(msg: Any) -> dict[str, int]:
    """One ``RTM_NEWLINK`` message's counters, as ``snapshot.parse_links`` keeps them
    from ``ip -j -s link`` (its ``stats64``: rx/tx packets, dropped, errors)."""
    st = msg.get("stats64") or msg.get("stats") or {}
    return {
        f"{side}_{f}": int(st.get(f"{side}_{f}", 0)) for side in ("rx", "tx") for f in LINK_FIELDS
    }


TC_H_ROOT, TC_H_INGRESS = 0xFFFFFFFF, 0xFFFFFFF1


def qdisc_drops(msgs: list[Any], names: dict[int, str]) -> dict[str, int]:
    """Drops per device summed over its top qdiscs (root, ingress), as
    ``snapshot.parse_qdisc_drops`` sums ``tc -j -s qdisc``'s: ``TCA_STATS2``'s queue
    drops, else the old ``TCA_STATS``'s. A child qdisc's drops are its parent's too (a
    tbf counts what its queue drops): children are left out."""
    out: dict[str, int] = {}
    for q in msgs:
        if int(q.get("parent") or 0) not in (0, TC_H_ROOT, TC_H_INGRESS):
            continue
        dev = names.get(int(q["index"]), str(q["index"]))
        stats2 = q.get_attr("TCA_STATS2")
        queue = stats2.get_attr("TCA_STATS_QUEUE") if stats2 is not None else None
        if queue is not None:
            drops = int(queue["drops"])
        else:
            old = q.get_attr("TCA_STATS")
            drops = int(old["drop"]) if old is not None else 0
        out[dev] = out.get(dev, 0) + drops
    return out


IFF_UP = 0x1


def link_state(msg: Any) -> LinkState:
    """A link's state beside its counters (``snapshot.LINK_STATE``): set up, up (set up
    and with a carrier), how often its carrier went on or off since it was made, and
    the XDP program on it."""
    admin = bool(int(msg["flags"]) & IFF_UP)
    return {
        "admin_up": admin,
        "up": admin and msg.get_attr("IFLA_CARRIER") == 1,
        "carrier_changes": msg.get_attr("IFLA_CARRIER_CHANGES"),
        "xdp_prog": xdp_prog_id(msg),
    }


def xdp_prog_id(msg: Any) -> int | None:
    """The id of the XDP program on a link (``IFLA_XDP_PROG_ID``), or None."""
    xdp = msg.get_attr("IFLA_XDP")
    pid = xdp.get_attr("IFLA_XDP_PROG_ID") if xdp is not None else None
    return int(pid) if pid else None


def _read_all(fd: int) -> str:
    chunks: list[bytes] = []
    off = 0
    while True:
        b = os.pread(fd, 65536, off)
        if not b:
            return b"".join(chunks).decode()
        chunks.append(b)
        off += len(b)


class _Nft:
    """A libnftables context in the calling thread's namespace, JSON out."""

    def __init__(self) -> None:
        lib = ctypes.CDLL("libnftables.so.1")
        lib.nft_ctx_new.restype = ctypes.c_void_p
        lib.nft_ctx_new.argtypes = [ctypes.c_uint32]
        lib.nft_ctx_free.argtypes = [ctypes.c_void_p]
        lib.nft_ctx_output_set_flags.argtypes = [ctypes.c_void_p, ctypes.c_uint]
        lib.nft_ctx_buffer_output.argtypes = [ctypes.c_void_p]
        lib.nft_ctx_buffer_error.argtypes = [ctypes.c_void_p]
        lib.nft_run_cmd_from_buffer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.nft_ctx_get_output_buffer.restype = ctypes.c_char_p
        lib.nft_ctx_get_output_buffer.argtypes = [ctypes.c_void_p]
        lib.nft_ctx_get_error_buffer.restype = ctypes.c_char_p
        lib.nft_ctx_get_error_buffer.argtypes = [ctypes.c_void_p]
        self.lib = lib
        with _NFT_LOCK:
            self.ctx = lib.nft_ctx_new(0)
            if not self.ctx:
                raise OSError("nft_ctx_new failed")
            lib.nft_ctx_output_set_flags(self.ctx, NFT_CTX_OUTPUT_JSON)
            lib.nft_ctx_buffer_output(self.ctx)
            lib.nft_ctx_buffer_error(self.ctx)

    def json(self, cmd: str) -> dict[str, Any]:
        with _NFT_LOCK:
            rc = self.lib.nft_run_cmd_from_buffer(self.ctx, cmd.encode())
            out = self.lib.nft_ctx_get_output_buffer(self.ctx) or b""
            err = self.lib.nft_ctx_get_error_buffer(self.ctx) or b""
        if rc != 0:
            lines = err.decode(errors="replace").strip().splitlines()
            raise ToolError(
                f"'nft {cmd}' failed (libnftables)",
                lines[-1] if lines else "no output",
                "see the message above; rerun with --debug for the full log",
            )
        return dict(json.loads(out or b"{}"))

    def close(self) -> None:
        with _NFT_LOCK:
            self.lib.nft_ctx_free(self.ctx)


class NsCounters:
    """One namespace's counters, read by a thread that joined it once and lives as long
    as this reader (everything it opens is bound to that namespace)."""

    def __init__(self, netns: str, conntrack: bool = False) -> None:
        """``conntrack``: also read the namespace's conntrack table and statistics."""
        self.netns = netns
        self.conntrack = conntrack
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=f"counters-{netns}")
        self._prog_names: dict[int, str] = {}  # XDP program id -> its name
        self._stats_maps: dict[int, int] = {}  # the XDP router's id -> its stats map's
        self._nft: _Nft | None = None
        try:
            self._pool.submit(self._open).result()
        except BaseException as exc:
            self._pool.shutdown()
            raise netns_error(netns, exc) from exc

    def _open(self) -> None:
        from pyroute2 import IPRoute  # deferred: 80 ms that most commands never need
        from pyroute2 import netns as pr2_netns

        pr2_netns.setns(self.netns, flags=0)  # this thread only; flags=0: never create it
        self._snmp = os.open("/proc/thread-self/net/snmp", os.O_RDONLY)
        p6 = "/proc/thread-self/net/snmp6"
        self._snmp6 = os.open(p6, os.O_RDONLY) if os.path.exists(p6) else None
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, socket.NETLINK_ROUTE)
        self._ipr = IPRoute(fileno=sock.detach(), groups=0)
        try:
            self._nft = _Nft()
        except OSError as exc:  # no libnftables: nft is run as a program
            log.debug("libnftables not loaded (%s): nft runs as a program", exc)

    def submit(self, fn: Any, *args: Any) -> Future[Any]:
        return self._pool.submit(fn, *args)

    def nft(self, cmd: str) -> dict[str, Any]:
        """``nft -j <cmd>`` in this namespace (call it on this reader's thread)."""
        if self._nft is not None:
            return self._nft.json(cmd)
        return dict(json.loads(run(["nft", "-j", *cmd.split()], netns=self.netns).stdout or "{}"))

    def read(self) -> dict[str, Any]:
        """This namespace's part of a snapshot (``snapshot._ns_snapshot``'s shape);
        call it on this reader's thread (``submit``)."""
        links = self._ipr.link("dump")
        names = {int(m["index"]): m.get_attr("IFLA_IFNAME") for m in links}
        qdiscs = self._ipr.get_qdiscs()
        snmp = _read_all(self._snmp) + (_read_all(self._snmp6) if self._snmp6 is not None else "")
        snap: dict[str, Any] = {
            "links": {m.get_attr("IFLA_IFNAME"): link_row(m) for m in links},
            "snmp": parse_snmp(snmp),
            "qdisc_drops": qdisc_drops(qdiscs, names),
            "nft": parse_nft_counters(self.nft("list counters")),
            LINK_STATE: {m.get_attr("IFLA_IFNAME"): link_state(m) for m in links},
        }
        if self.conntrack:  # opened here, in the namespace this thread joined
            snap["conntrack"] = sutstate.read_conntrack("/proc/thread-self")
        for m in links:
            pid = xdp_prog_id(m)
            if pid is not None and self._prog_name(pid) == xdp_router.PROG_NAME:
                snap["xdp_router"] = self._xdp_router(pid)
                break
        return snap

    def _prog_name(self, pid: int) -> str:
        # a program's id is never given to another while the kernel runs: asked once
        if pid not in self._prog_names:
            self._prog_names[pid] = str(
                xdp_router.bpftool_json("prog", "show", "id", str(pid))["name"]
            )
        return self._prog_names[pid]

    def _xdp_router(self, pid: int) -> dict[str, int]:
        """``xdp_router.read_counters``, the program's stats map looked up once."""
        if pid not in self._stats_maps:
            self._stats_maps[pid] = xdp_router.map_ids(pid)[xdp_router.STATS_MAP]
        dump = xdp_router.bpftool_json("map", "dump", "id", str(self._stats_maps[pid]))
        return xdp_router.parse_stats(dump)

    def close(self) -> None:
        def shut() -> None:
            self._ipr.close()
            os.close(self._snmp)
            if self._snmp6 is not None:
                os.close(self._snmp6)
            if self._nft is not None:
                self._nft.close()

        try:
            self._pool.submit(shut).result()
        finally:
            self._pool.shutdown()


class Snapshots:
    """Snapshots of a testbed's namespaces (``role -> netns``), as
    ``counters.snapshot.snapshot`` takes them, read by one ``NsCounters`` per namespace
    held open across trials. A context manager; ``close`` ends the threads."""

    def __init__(self, namespaces: dict[str, str], conntrack: str | None = None) -> None:
        """``conntrack``: the role whose conntrack table is read too (the SUT's, when
        it tracks connections)."""
        self.readers: dict[str, NsCounters] = {}
        try:
            for role, ns in namespaces.items():
                self.readers[role] = NsCounters(ns, conntrack=role == conntrack)
        except BaseException:
            self.close()
            raise

    def snapshot(self, sink: SinkCounter | None = None) -> Snapshot:
        """Counters of every namespace, the host's softnet_stat, the sink's flows and,
        when given, the sink's XDP count (``counters.snapshot`` describes the dict)."""
        reads = {role: r.submit(r.read) for role, r in self.readers.items()}
        s = self.readers.get("sink")
        flows = s.submit(s.nft, SINK_FLOWS) if s is not None else None
        snap: Snapshot = {
            "utc": utc_now(),
            "softnet": parse_softnet(Path("/proc/net/softnet_stat").read_text()),
            "ns": {role: self._result(role, f) for role, f in reads.items()},
        }
        if flows is not None:
            snap["sink_flows"] = parse_nft_set(self._result("sink", flows))
        if sink is not None and sink.uses_xdp:
            xdp = sink.read()
            if xdp:
                snap["sink_xdp"] = xdp
        return snap

    def _result(self, role: str, f: Future[Any]) -> Any:
        try:
            return f.result()
        except ToolError:
            raise
        except Exception as exc:  # a namespace gone, a socket closed under us
            raise netns_error(self.readers[role].netns, exc) from exc

    def close(self) -> None:
        for r in self.readers.values():
            r.close()
        self.readers = {}

    def __enter__(self) -> Snapshots:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

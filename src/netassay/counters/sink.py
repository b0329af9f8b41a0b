"""Where the test frames are counted at the sink.

- ``xdp`` (default): netassay-gen's XDP program on the sink's veth counts the test
  frames (netassay-gen payload magic, the testbed's frame size) and drops them, before
  any socket buffer is built. It is the cheapest receiver there is: at pin-2cpu the
  sink's receive work shares the SUT's CPU, and with the full stack plus an nft counter
  the sink's own backlog overflowed where the SUT still forwarded everything.
- ``nft``: an nft counter on the test flows at the sink's ingress (per flow too), then
  drop: the full receive path, as before.
- ``xdp+nft``: the XDP program counts and passes, the nft counter counts again behind
  it; a trial whose two counts differ is a counter fault. The cross-check, for loads
  where the full stack is cheap enough.

The XDP program lives as long as the process that attached it (one per sweep); if it
dies, the trial in progress has no count after it (a counter fault) and the next
trial attaches it again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from pathlib import Path
from typing import Any, TypedDict, cast

from netassay.errors import GeneratorError, UsageError
from netassay.hist import SinkHist
from netassay.names import MIN_FRAME, SINK_DEV
from netassay.proc import run
from netassay.traffic.generator import FlowCounts, start_xdp_sink

log = logging.getLogger("netassay.counters")

SINKS = ("xdp", "nft", "xdp+nft")
XDP_KEY = "sink/xdp/packets"
NFT_KEY = "sink/nft/na_rx/packets"


def validate_sink(kind: str) -> str:
    if kind not in SINKS:
        raise UsageError(f"unknown sink '{kind}'", f"known: {', '.join(SINKS)}", "pick one")
    return kind


def received_key(kind: str) -> str:
    """The flat counter key (see ``counters.loss.flatten``) that counts received frames."""
    return NFT_KEY if kind == "nft" else XDP_KEY


def _sink_of(pid: int, dev: str | None) -> bool:
    """Is ``pid`` a netassay-gen (the XDP sink on ``dev``, when ``dev`` is given)?"""
    try:
        if Path(f"/proc/{pid}/comm").read_text().strip() != "netassay-gen":
            return False
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return False
    return dev is None or ("--xdp-sink" in argv and f"--dev\0{dev}\0" in "\0".join(argv) + "\0")


def _pids_in(sink_ns: str | None) -> list[int]:
    """The processes in a named network namespace, or in the host's own (None)."""
    if sink_ns is not None:
        if not Path(f"/run/netns/{sink_ns}").exists():
            return []  # gone (a user's namespace deleted before its testbed was forgotten)
        return [int(p) for p in run(["ip", "netns", "pids", sink_ns]).stdout.split()]
    host = os.stat("/proc/self/ns/net").st_ino  # netassay's own: the host's
    pids = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{p}/ns/net").st_ino == host:
                    pids.append(int(p))
    return pids


def stop_stale_sinks(sink_ns: str | None, dev: str | None = None) -> list[int]:
    """End any netassay-gen left running in the sink's namespace (the XDP program of a
    run that was killed holds the interface until its process ends). The caller holds
    the testbed's lock, so no live run of this testbed owns one. With ``dev`` (a
    namespace not netassay's own, or the host's: None), only the XDP sink on ``dev``."""
    stale = []
    for pid in _pids_in(sink_ns):
        if pid != os.getpid() and _sink_of(pid, dev):
            where = sink_ns or "the host's namespace"
            log.warning("ending a netassay-gen left running in %s (pid %d)", where, pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            stale.append(pid)
    for pid in stale:  # the program detaches when the process is gone
        for _ in range(100):
            if not Path(f"/proc/{pid}").exists():
                break
            time.sleep(0.01)
    return stale


class SinkCount(TypedDict, total=False):
    """What the sink's XDP program counted since it attached (``SinkCounter.read``;
    {}: no XDP count): the test frames, with a mix or a capture per frame size, with
    ``flows`` each flow's counts since ``mark_flows``."""

    packets: int
    per_size: dict[str, int]
    flows: FlowCounts


class SinkCounter:
    """The sink's test-frame counter of one testbed, held open across trials."""

    def __init__(
        self, sink_ns: str | None, kind: str, size_bytes: int | None, dev: str | None = None,
        latency: bool = False, imix: str | None = None, flows: list[str] | None = None,
        pcap: str | None = None,
    ) -> None:  # fmt: skip
        """``dev``: the interface it counts on (default: the embedded testbed's sink0);
        ``sink_ns`` None: the host's namespace (an external testbed's rx port);
        ``latency``: the XDP program also keeps each frame's one-way latency; ``imix``
        (``netassay.imix.spec``): it counts each size of that mix instead of one size;
        ``pcap``: each size of that capture's marked frames (``traffic.pcap``);
        ``flows``: netassay-gen's ``--count-flows`` flags (``testbed.scale``), and each
        read also sums up every flow's count since ``mark_flows``."""
        self.ns = sink_ns
        self.kind = validate_sink(kind)
        if latency and not self.uses_xdp:
            raise UsageError(
                "--latency needs the XDP sink", f"--sink {kind} has no latency histogram",
                "use --sink xdp or xdp+nft",
            )  # fmt: skip
        self.size_bytes = size_bytes
        self.imix = imix
        self.pcap = pcap
        self.flows = flows
        if flows and not self.uses_xdp:
            raise UsageError(
                "--count-flows needs the XDP sink", f"--sink {kind} counts no flow",
                "use --sink xdp or xdp+nft",
            )  # fmt: skip
        self.dev = dev
        self.latency = latency
        self._xdp: Any = None
        self._hist = SinkHist()

    @property
    def uses_xdp(self) -> bool:
        return self.kind != "nft"

    def ensure(self) -> None:
        """Attach the XDP program unless it is attached and alive."""
        if not self.uses_xdp or (self._xdp is not None and self._xdp.proc.poll() is None):
            return
        self.close()
        stop_stale_sinks(self.ns, self.dev)
        extra = ["--pass"] if self.kind == "xdp+nft" else []
        extra += ["--latency"] if self.latency else []
        extra += self.flows or []
        self._xdp = start_xdp_sink(
            self.ns, self.dev or SINK_DEV, self.size_bytes or MIN_FRAME, extra=extra,
            imix=self.imix, pcap=self.pcap,
        )  # fmt: skip

    def restart(self) -> None:
        """Attach the XDP program again: another process detached it from the link while
        its own process lives on (``ensure`` sees that process alive and keeps it)."""
        dev = self.dev or SINK_DEV
        log.warning("the sink's XDP program is not on %s any more: attaching it again", dev)
        self.close()
        self.ensure()

    def read(self) -> SinkCount:
        """``{"packets": n}`` counted by the XDP program since it attached (with a mix,
        also ``"per_size": {"64": n, ...}``); ``{}`` when there is no XDP count (nft
        sink, or the program is gone: a counter fault)."""
        if not self.uses_xdp or self._xdp is None:
            return {}
        try:
            line = self._xdp.read()
            if self.latency:  # each line holds the latencies since the one before
                self._hist.merge(SinkHist(line["latency"]))
            out: SinkCount = {"packets": int(line["packets"])}
            if self.imix or self.pcap:
                out["per_size"] = {k: int(v) for k, v in line["per_size"].items()}
            if self.flows:  # each flow's count since the mark, summed up
                out["flows"] = cast(FlowCounts, dict(line["flows"]))
            return out
        except (GeneratorError, OSError, ValueError, KeyError) as exc:
            log.warning("the sink's XDP count cannot be read: %s", exc)
            self.close()
            return {}

    def mark_flows(self) -> None:
        """With ``flows``: count each flow from here on (the next reads' ``flows``)."""
        if not self.flows or self._xdp is None:
            return
        try:
            self._xdp.mark()
        except (GeneratorError, OSError, ValueError) as exc:
            log.warning("the sink's flows cannot be marked: %s", exc)
            self.close()

    def take_latency(self) -> SinkHist | None:
        """The latencies the reads since the last take saw (None without ``latency``);
        the next take starts empty."""
        if not self.latency:
            return None
        out, self._hist = self._hist, SinkHist()
        return out

    def close(self) -> None:
        if self._xdp is not None:
            self._xdp.close()
            self._xdp = None

    def __enter__(self) -> SinkCounter:
        self.ensure()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

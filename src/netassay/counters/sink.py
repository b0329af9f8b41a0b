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
from typing import Any

from netassay.errors import GeneratorError, UsageError

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


def stop_stale_sinks(sink_ns: str) -> list[int]:
    """End any netassay-gen left running in the sink's namespace (the XDP program of a
    run that was killed holds the interface until its process ends). The caller holds
    the testbed's lock, so no live run of this testbed owns one."""
    from netassay.proc import run

    pids = [int(p) for p in run(["ip", "netns", "pids", sink_ns]).stdout.split()]
    stale = []
    for pid in pids:
        try:
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        if comm == "netassay-gen":
            log.warning("ending a netassay-gen left running in %s (pid %d)", sink_ns, pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            stale.append(pid)
    for pid in stale:  # the program detaches when the process is gone
        for _ in range(100):
            if not Path(f"/proc/{pid}").exists():
                break
            time.sleep(0.01)
    return stale


class SinkCounter:
    """The sink's test-frame counter of one testbed, held open across trials."""

    def __init__(self, sink_ns: str, kind: str, size_bytes: int) -> None:
        self.ns = sink_ns
        self.kind = validate_sink(kind)
        self.size_bytes = size_bytes
        self._xdp: Any = None

    @property
    def uses_xdp(self) -> bool:
        return self.kind != "nft"

    def ensure(self) -> None:
        """Attach the XDP program unless it is attached and alive."""
        if not self.uses_xdp or (self._xdp is not None and self._xdp.proc.poll() is None):
            return
        from netassay.testbed.names import SINK_DEV
        from netassay.traffic.generator import start_xdp_sink

        self.close()
        stop_stale_sinks(self.ns)
        extra = ["--pass"] if self.kind == "xdp+nft" else []
        self._xdp = start_xdp_sink(self.ns, SINK_DEV, self.size_bytes, extra=extra)

    def read(self) -> dict[str, int]:
        """``{"packets": n}`` counted by the XDP program since it attached; ``{}`` when
        there is no XDP count (nft sink, or the program is gone: a counter fault)."""
        if not self.uses_xdp or self._xdp is None:
            return {}
        try:
            return {"packets": int(self._xdp.read()["packets"])}
        except (GeneratorError, OSError, ValueError, KeyError) as exc:
            log.warning("the sink's XDP count cannot be read: %s", exc)
            self.close()
            return {}

    def close(self) -> None:
        if self._xdp is not None:
            self._xdp.close()
            self._xdp = None

    def __enter__(self) -> SinkCounter:
        self.ensure()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

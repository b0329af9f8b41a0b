"""Who else ran on the testbed's CPUs during a trial (``counters.threads``), and when
that can explain the SUT's loss. A thread that is neither the SUT's nor the
generator's (a kernel memory monitor, RCU, a VM agent) and holds the SUT's CPU for a
run of T at a load R leaves R x T frames to its ingress queue; when that reaches the
queue and the trial lost frames there, the loss may be this host's, not the SUT's:
the trial says so (a warning, not a fault: the SUT's host is part of what is measured,
but the reader must know). The generator's CPU is read too, and its takers kept, for
the stalls the generator's own warnings already judge. The tracer (``counters.threads``) runs
only while the generator does, on pinned testbeds.

On a host where these runs are long and regular (a 2-vCPU VM: ``kdamond`` bound to one
CPU, about 1 ms every 0.5 s), a SUT whose ingress ring is small (a veth's NAPI ring:
256 frames) loses frames at loads far below its MRR for this reason alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from netassay.counters import threads
from netassay.errors import ToolError
from netassay.quality import HOST_NOISE

# kernel threads that do the SUT's own receive and forwarding work
SUT_KTHREADS = ("napi/", "ksoftirqd/", "irq/")


def _netns_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def _namespace_inodes(names: dict[str, str]) -> set[int]:
    out = set()
    for ns in names.values():
        try:
            out.add(os.stat(f"/run/netns/{ns}").st_ino)
        except OSError:
            continue
    return out


@dataclass
class Noise:
    """A trial's tracer of who holds the testbed's CPUs while its generator runs, and
    the CPUs it judges (``sut_cpu`` None: not pinned, nothing traced)."""

    sut_cpu: int | None
    gen_cpu: int | None
    own_netns: set[int]
    tracer: threads.Tracer | None = None
    error: str = ""  # why the tracer could not run (the trial goes on without it)

    @classmethod
    def of(cls, state: dict[str, Any]) -> Noise:
        return cls(state.get("sut_cpu"), state.get("gen_cpu"),
                   _namespace_inodes(state.get("namespaces") or {}))  # fmt: skip

    def start(self) -> None:
        if self.sut_cpu is None:
            return
        tracer = threads.Tracer()
        try:
            tracer.start()
        except ToolError as exc:  # no BPF here, or not built: the trial needs it not
            self.error = str(exc)
            return
        self.tracer = tracer

    def own(self, r: threads.Runs) -> bool:
        """A thread that is the testbed's own or the measurement's: the SUT's receive
        work, a process in one of the testbed's namespaces (the generator, a SUT
        daemon), netassay itself and the tracer."""
        if r.comm.startswith(SUT_KTHREADS) or r.comm == threads.BINARY or r.tgid == os.getpid():
            return True
        return _netns_inode(r.tgid) in self.own_netns

    def stop(self) -> dict[str, list[threads.Taker]]:
        """The threads, not the testbed's own, that held the SUT's and the generator's
        CPUs since ``start``, by role ({} when not pinned)."""
        if self.tracer is None or self.sut_cpu is None:
            return {}
        tracer, self.tracer = self.tracer, None
        trace = tracer.stop()
        out = {"sut": threads.takers(trace, self.sut_cpu, skip=self.own)}
        if self.gen_cpu is not None and self.gen_cpu != self.sut_cpu:
            out["generator"] = threads.takers(trace, self.gen_cpu, skip=self.own)
        return out

    def close(self) -> None:
        """End a tracer a trial left running (it failed between start and stop)."""
        if self.tracer is not None:
            self.tracer.__exit__()
            self.tracer = None


def _holds(taker: threads.Taker) -> bool:
    """A taker whose run the SUT's receive work waits out: a kernel thread (a kernel
    without full preemption, as the hosts this was measured on run in PREEMPT_NONE
    mode, lets its own code run until it yields) or a real-time thread (netassay runs
    the SUT's NAPI thread at SCHED_FIFO 50: a thread of normal priority in user space
    gives the CPU up the moment it wakes)."""
    return bool(taker.get("kernel") or taker.get("real_time"))


def noise_warning(
    takers: dict[str, list[threads.Taker]], rate_pps: float, ingress_pkts: int | None,
    lost_at_ingress: int, sut_cpu: int | None,
) -> str | None:  # fmt: skip
    """The words when another thread's longest run on the SUT's CPU, one the SUT had to
    wait out (``_holds``), can explain the loss at its ingress: at this load it leaves
    the ingress queue more than it holds."""
    if lost_at_ingress <= 0 or not ingress_pkts or sut_cpu is None:
        return None
    long = [t for t in takers.get("sut", []) if _holds(t) and
            rate_pps * t["max_ms"] / 1e3 >= ingress_pkts]  # fmt: skip
    if not long:
        return None
    worst = max(t["max_ms"] for t in long)
    return (
        f"{HOST_NOISE}: CPU {sut_cpu} (the SUT's) was held by {threads.said(long)}; a run of "
        f"{worst:.2g} ms at this load leaves ~{rate_pps * worst / 1e3:,.0f} frames to its "
        f"{ingress_pkts:,}-packet ingress queue: its {lost_at_ingress:,} lost there may be "
        "this host's, not the SUT's (see 'netassay doctor')"
    )

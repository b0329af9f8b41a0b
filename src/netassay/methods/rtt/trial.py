"""One run of probes: sent, read back as they resolve, folded into histograms.

A run is the statistical unit of ``netassay rtt``. While netassay-probe sends, its
records are read in batches, joined to the capture points' times by sequence number,
turned into segments (``segments.compute``) and added to one histogram per segment;
a bounded reservoir sample of whole probes is kept. Memory does not grow with the
number of probes. CPU use per core is read from /proc/stat before and after.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from netassay import quality
from netassay.counters import cpu
from netassay.counters.capture import POINT_NAMES, Capture
from netassay.hist import Hist
from netassay.methods.rtt.segments import ALL, compute, lost_after
from netassay.methods.rtt.store import RunSummary
from netassay.shared.probe_run import achieved_rate
from netassay.traffic.probe import Link, ProbeSpec, Sender
from netassay.units import utc_now

RAW_LIMIT = 2000  # probes kept whole per run (a uniform sample of the run)
SAMPLE_COLUMNS = ("seq", "sched", "tx", *POINT_NAMES, "rx")
LOSS_BY_US = 0.001  # probes the sender itself could not send, above this share: a fault


class ProbeRunSummary(RunSummary):
    """A run of netassay's probes as stored and printed (``RunResult.summary``): its
    counts, where lost probes were last seen, how the probes left, every segment's
    statistics (ns), the CPU per core, the background load while it ran (with what
    crossed the wire) and its warnings."""

    run: int
    unsent: int
    late: int
    duplicates: int
    reordered: int
    captured: int
    out_of_order: int
    lost_after: dict[str, int]
    achieved_rate_pps: float | None
    send_path: str | None
    nice: int | None
    cpu: dict[str, Any]  # counters.cpu's figures per core
    load: dict[str, Any]  # Background.status() and ``wire`` (run.WireRates)
    warnings: list[str]


@dataclass
class RunResult:
    """What one run measured: counts, a histogram per segment, a sample, CPU use."""

    index: int
    spec: ProbeSpec
    started_utc: str = ""
    elapsed_s: float = 0.0
    prober: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    hists: dict[str, Hist] = field(default_factory=dict)
    sample: np.ndarray = field(default_factory=lambda: np.zeros((0, len(SAMPLE_COLUMNS))))
    cpu: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    load: dict[str, Any] = field(default_factory=dict)  # the background load while it ran
    lost_after: dict[str, int] = field(default_factory=dict)  # where lost probes were last seen
    config: Any = None  # the request (methods.rtt.run.RttSetup) this run measured

    @property
    def sent(self) -> int:
        return int(self.prober.get("sent", 0))

    @property
    def received(self) -> int:
        return int(self.prober.get("received", 0))

    def summary(self) -> ProbeRunSummary:
        """Counts and every segment's statistics (ns), as stored and printed."""
        p = self.prober
        return {
            "run": self.index,
            "sent": self.sent,
            "received": self.received,
            "lost": int(p.get("lost", 0)),
            "unsent": int(p.get("send_errors", 0)),
            "late": int(p.get("late", 0)),
            "duplicates": int(p.get("duplicates", 0)),
            "reordered": int(p.get("reordered", 0)),
            "captured": self.counts.get("captured", 0),
            "out_of_order": self.counts.get("out_of_order", 0),
            "lost_after": dict(self.lost_after),
            "achieved_rate_pps": achieved_rate(p),
            # how the probes left (packet: frames on the endpoint's interface; raw: the
            # IP stack's raw socket; udp) and the prober's nice value (probe.c)
            "send_path": p.get("send_path"),
            "nice": p.get("nice"),
            "segments": {k: h.summary() for k, h in self.hists.items() if h.n},
            "cpu": self.cpu,
            "load": self.load,
            "warnings": list(self.warnings),
        }


class _Reservoir:
    """A uniform sample of at most ``size`` rows of a stream (Algorithm R)."""

    def __init__(self, size: int, width: int, seed: int) -> None:
        self.rows = np.zeros((size, width), dtype=np.uint64)
        self.size, self.seen = size, 0
        self.rng = np.random.default_rng(seed)

    def add(self, rows: np.ndarray) -> None:
        n = len(rows)
        free = max(0, min(n, self.size - self.seen))
        self.rows[self.seen : self.seen + free] = rows[:free]
        if free < n:
            idx = np.arange(self.seen + free, self.seen + n)
            j = (self.rng.random(len(idx)) * (idx + 1)).astype(np.int64)
            keep = j < self.size
            self.rows[j[keep]] = rows[free:][keep]  # later rows win, as in sequence
        self.seen += n

    def sample(self) -> np.ndarray:
        return self.rows[: min(self.seen, self.size)].copy()


def measure(
    netns: str,
    dst: str,
    spec: ProbeSpec,
    capture: Capture | None,
    index: int,
    cpu_pin: int | None,
    raw_limit: int = RAW_LIMIT,
    link: Link | None = None,
) -> RunResult:
    """Send one run of probes from ``netns`` to ``dst`` and fold it into a RunResult
    (``link``: the sender endpoint's own link, for ICMP requests sent as frames)."""
    res = RunResult(index=index, spec=spec, started_utc=utc_now())
    res.hists = {name: Hist() for name in ALL}
    res.counts = {"answered": 0, "captured": 0, "out_of_order": 0}
    reservoir = _Reservoir(raw_limit, len(SAMPLE_COLUMNS), seed=index + 1)
    if capture is not None:
        capture.clear()
    before, t0 = cpu.read(), time.monotonic()
    sender = Sender(netns, dst, spec, cpu_pin, link=link)
    try:
        for batch in sender.batches():
            _fold(res, reservoir, batch, capture)
        res.prober = sender.finish()
    finally:
        sender.kill()
    res.elapsed_s = round(time.monotonic() - t0, 6)
    res.cpu = cpu.use(before, cpu.read())
    res.sample = reservoir.sample()
    res.warnings = warnings(res, capture is not None)
    return res


def _fold(res: RunResult, reservoir: _Reservoir, batch: np.ndarray, cap: Capture | None) -> None:
    seq, sched, tx, rx = (np.ascontiguousarray(batch[:, i]) for i in range(4))
    points = cap.lookup(seq) if cap is not None else None
    segs, counts = compute(sched, tx, rx, points)
    for name, values in segs.items():
        res.hists[name].add(values)
    for k, v in counts.items():
        res.counts[k] += v
    if points is not None:
        for where, n in lost_after(tx, rx, points).items():
            res.lost_after[where] = res.lost_after.get(where, 0) + n
    zeros = np.zeros(len(seq), dtype=np.uint64)
    cols = [seq, sched, tx, *((points or {}).get(n, zeros) for n in POINT_NAMES), rx]
    reservoir.add(np.stack(cols, axis=1))


def warnings(res: RunResult, captured: bool) -> list[str]:
    """Measurement-quality warnings; those naming a fault (quality.FAULTS) exclude the run."""
    out = []
    p = res.prober
    sent, planned = res.sent, int(p.get("planned", 0))
    if p.get("stopped_by_signal"):
        out.append(f"{quality.TRUNCATED}: stopped by a signal after {sent} of {planned} probes")
    unsent = int(p.get("send_errors", 0))
    if planned and unsent > LOSS_BY_US * planned:
        out.append(
            f"{quality.GENERATOR_LIMIT}: the kernel refused {unsent} of {planned} probes at"
            " the sender's socket (netassay's own loss, not the path's)"
        )
    answered = res.counts.get("answered", 0)
    if captured and answered:
        missed = answered - res.counts.get("captured", 0)
        if missed:
            out.append(
                f"{quality.COUNTER_FAULT}: {missed} of {answered} answered probes missed a"
                " capture point"
            )
        if res.counts.get("out_of_order"):
            out.append(
                f"{quality.COUNTER_FAULT}: {res.counts['out_of_order']} probes passed the"
                " capture points out of order"
            )
    own = res.lost_after.get("snd_ep_in", 0)
    if own:
        out.append(
            f"sender's own loss: {own} replies reached the sender endpoint's interface and"
            " were lost before netassay-probe read them"
        )
    if int(p.get("late", 0)):
        out.append(f"late replies: {p['late']} arrived after the {p.get('timeout_s')} s timeout")
    return out

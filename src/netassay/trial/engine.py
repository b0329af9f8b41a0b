"""One trial: counters before, paced traffic, counters after, loss split.

The counters are read in-process (``counters.netlink.Snapshots``, held open across the
trials of a testbed). A trial closes as soon as every frame it sent is accounted for
(received, or counted where it was dropped: ``counters.loss.accounted_for``); until
then a frame may still be on its way, so the engine waits until the sink's count stops
moving (``counters.snapshot.wait_quiet``) and reads the counters again (no sooner than
a data plane's own counters may lag behind its frames: ``dataplane_lag_s``). A testbed kind
with counters of its own (external) always waits: its SUT's loss is a difference, not
a counter.

What the trial says about the SUT is only what the SUT did: a frame the sink's own
ingress refused was forwarded (it counts as delivered and the trial says how many in a
``sink drops`` warning), and a trial the measurement itself spoiled (the generator could
not pace it or stalled long enough to overflow a queue, it was cut short, a counter was
lost or reset, the sink's counts are not exact) is a measurement fault: stored, named,
left out of the statistics (``quality.exclusion``).

A run is not alone on its host (``trial.integrity``). Before each trial the engine
checks that the testbed is still the one built: every namespace there and every link
up (it waits ``LINK_WAIT_S`` for a link to come back, then stops with one line), the
routes and neighbours a link lost when it went down and up again set again, the sink's
XDP program attached again when another process detached it. A testbed that changed
during a trial (a namespace deleted, a link down, the sink's program detached) or a
generator killed by a signal it cannot catch makes that trial a measurement fault,
said as such. A generator stopped (SIGSTOP) or without a CPU is a stall said with how
long it sent nothing and from when, judged by the stall rule; a trial its end came in
during a stall has the duration and rate it really had.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Protocol, TypedDict

from netassay import quality
from netassay.config import TestbedConfig
from netassay.counters import cpu, sutstate
from netassay.counters.loss import (
    REVERSE_KEY,
    SINK_LOCATIONS,
    accounted_for,
    flat_deltas,
    flatten,
    locate_both,
    locate_loss,
    sink_counts_disagree,
    summed,
    wrap_bits,
)
from netassay.counters.netlink import Snapshots
from netassay.counters.sink import NFT_KEY, XDP_KEY, SinkCounter, received_key
from netassay.counters.snapshot import Snapshot, sink_received, snapshot, wait_quiet
from netassay.errors import GeneratorError, TestbedError, UsageError
from netassay.hist import SinkHist
from netassay.names import SINK_DEV
from netassay.quality import rate_warning, stall_warning
from netassay.testbed import dataplane as testbed_dataplane
from netassay.testbed import scale, topology
from netassay.testbed.bed import Testbed
from netassay.testbed.reverse import reverse_path, reverse_sink
from netassay.traffic.generator import GeneratorLost, GenResult
from netassay.trial import bidirectional as trial_bidirectional
from netassay.trial import integrity
from netassay.trial.hooks import Hooks, KeptRun, TrialEnv, trial_env
from netassay.trial.noise import Noise, noise_warning
from netassay.trial.record import TrialRecord
from netassay.units import fmt_rate, utc_now

SOURCE = "netassay-testbed"
LINK_WAIT_S = 5.0  # before a trial: how long a link that is down may take to come back


class PathCounters(Protocol):
    """A testbed kind's own counters, for a data path the namespaces do not hold (the
    external testbed's ports and SUT: ``testbed.external.PortCounters``)."""

    def snapshot(self, sink: SinkCounter | None) -> Snapshot:
        """Every counter a trial reads, in the shape ``counters.loss.flatten`` reads."""
        ...

    def locate_loss(
        self, planned: int, sent: int, received: int, deltas: dict[str, int],
        ip_version: int, retries: int,
    ) -> dict[str, int]:  # fmt: skip
        """Where the trial's lost frames were lost, by location."""
        ...

    def trial_counters(self, before: Snapshot, after: Snapshot) -> tuple[dict[str, Any], list[str]]:
        """What a trial stores beyond the flat deltas, and its warnings."""
        ...

    def locate_both(
        self, fwd: tuple[int, int, int, int], rev: tuple[int, int, int, int],
        deltas: dict[str, int], ip_version: int,
    ) -> tuple[dict[str, int], dict[str, int]]:  # fmt: skip
        """--bidirectional: each direction's loss by location (each (planned, sent,
        received, retries))."""
        ...


@dataclass(frozen=True)
class TrialContext:
    """What every trial of a run on one testbed shares."""

    tb: Testbed
    sink: SinkCounter
    queue_pkts: int | None  # the smallest queue on the path (a stall's burst against it)
    run_id: int | None = None  # the stored run (environment) this trial belongs to
    # a testbed kind's own counters; None: the namespaces' counters read below
    path: PathCounters | None = None
    # the depth of each queue a burst can overflow, by the loss location it drops at
    queues: dict[str, int] | None = None
    # the namespaces' counters, read in-process (None: by ``counters.snapshot.snapshot``)
    counters: Snapshots | None = None
    # --bidirectional: the XDP sink at the generator's end, counting the reverse direction
    reverse: SinkCounter | None = None
    # a data plane's own counters (testbed.dataplane), read with the namespaces'
    dataplane: Callable[[], dict[str, Any]] | None = None
    # commands run in the SUT's namespace before and after each trial (trial.hooks)
    hooks: Hooks | None = None
    # the testbed's links as the last trial left them (trial.integrity)
    watch: integrity.Watch = field(default_factory=integrity.Watch)
    # the wire is a head-drop queue in front of the SUT's NAPI ring (napi mode): its
    # drops are the SUT's ingress loss (``counters.loss.locate_loss``)
    ring_wire: bool = False

    def locate_loss(self) -> Callable[..., dict[str, int]]:
        """How this testbed splits a trial's loss by location."""
        if self.path is not None:
            return self.path.locate_loss
        return partial(locate_loss, ring_wire=self.ring_wire)

    def locate_both(self) -> trial_bidirectional.Locate:
        """The same for each direction of a --bidirectional trial."""
        if self.path is not None:
            return self.path.locate_both
        return partial(locate_both, ring_wire=self.ring_wire)


@contextmanager
def trials_on(
    tb: Testbed, run_id: int | None = None, latency: bool = False, bidirectional: bool = False
) -> Iterator[TrialContext]:
    """Everything trials on ``tb`` need, held for as long as they run: the sink's
    counter (its XDP program attached, with ``latency`` its latency histogram too) and
    the path's smallest queue; a testbed kind with a data path of its own (external)
    gives its sink and its counters. ``bidirectional``: a second XDP sink at the
    generator's end (the generator's veth, an external testbed's tx port), and the
    reverse path set up (``testbed.reverse``; an external testbed's checked by its
    ``reverse_path`` hook) before either sink is attached."""
    own = topology.kind_hook(tb.state, "data_path")
    if bidirectional and testbed_dataplane.is_dataplane(tb.state):
        raise UsageError(
            f"--bidirectional with --sut {tb.state['config']['sut']}",
            "a data plane of its own is measured one direction at a time here",
            "drop --bidirectional, or use --sut router, bridge or an external testbed",
        )  # fmt: skip
    if bidirectional:  # before any sink is attached (an external testbed probes its path)
        setup = topology.kind_hook(tb.state, "reverse_path")
        if own is not None and setup is None:
            raise UsageError(
                "--bidirectional is not available on this testbed kind",
                "it has no generator and sink at each end",
                "drop --bidirectional, or run on the embedded or an external testbed",
            )  # fmt: skip
        if setup is not None:
            setup(tb)
        else:
            reverse_path(tb.state)
    if own is not None:
        with (
            own(tb, latency=latency) as (sink, path),
            _reverse_sink(tb, bidirectional, latency) as reverse,
        ):
            # no queue on such a path is known: a stall is judged by its length alone
            yield TrialContext(tb, sink, None, run_id, path=path, reverse=reverse)
        return
    imix = tb.cfg.imix_spec() if isinstance(tb.cfg, TestbedConfig) else None
    pcap = tb.cfg.pcap if isinstance(tb.cfg, TestbedConfig) else None
    flows = scale.sink_flow_flags(tb.cfg, tb.state) if isinstance(tb.cfg, TestbedConfig) else None
    with (
        SinkCounter(
            tb.ns("sink"),
            tb.cfg.sink,
            tb.cfg.size_bytes,
            latency=latency,
            imix=imix,
            flows=flows,
            pcap=pcap,
        ) as sink,
        Snapshots(tb.state["namespaces"], conntrack=conntrack_role(tb)) as counters,
        _reverse_sink(tb, bidirectional, latency) as reverse,
        testbed_dataplane.counters(tb.state) as dataplane,
    ):
        queues = topology.path_queues(tb)
        yield TrialContext(
            tb, sink, min(queues.values()), run_id, queues=queues, counters=counters,
            reverse=reverse, dataplane=dataplane, ring_wire="receive" in tb.state,
            watch=integrity.Watch(only=testbed_dataplane.own_links(tb.state)),
        )  # fmt: skip


@contextmanager
def _reverse_sink(
    tb: Testbed, bidirectional: bool, latency: bool = False
) -> Iterator[SinkCounter | None]:
    """The reverse direction's XDP sink (None: one direction): on the generator's veth,
    or an external testbed's tx port (``testbed.reverse.reverse_sink``); with
    ``latency`` it keeps the reverse direction's latency histogram."""
    if not bidirectional:
        yield None
        return
    netns, dev = reverse_sink(tb.state)
    with SinkCounter(netns, "xdp", tb.cfg.size_bytes, dev=dev, latency=latency) as reverse:
        yield reverse


def conntrack_role(tb: Testbed) -> str | None:
    """The namespace whose conntrack table a trial reads: the SUT's when it tracks
    connections (``testbed.scale``)."""
    return "sut" if "conntrack" in tb.state.get("scale", {}) else None


def sut_summary(tb: Testbed, before: Snapshot, after: Snapshot,
                d: dict[str, int]) -> dict[str, Any]:  # fmt: skip
    """The SUT's own counts over one trial (``counters.sutstate``; {} when none)."""
    limit = tb.state.get("scale", {}).get("conntrack", {}).get("max")
    return sutstate.summary(before, after, d, limit)


def flow_deltas(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}


def _reader(ctx: TrialContext) -> Callable[[], int | None]:
    # an external testbed's sink is XDP on the user's port: it has no sink namespace
    return frames_counted(ctx.sink, ctx.reverse, ctx.tb.state["namespaces"].get("sink"))


def frames_counted(sink: Any, reverse: Any, ns: str | None) -> Callable[[], int | None]:
    """The test frames the sinks have counted so far: ``sink``'s (its nft counter in
    namespace ``ns``, or its XDP program's), with a ``reverse`` sink (--bidirectional)
    both directions' sum; None when a count cannot be read."""
    forward = sink_counter(sink, ns)
    if reverse is None:
        return forward

    def both() -> int | None:  # both directions' sinks: the trial settles when both do
        a, b = forward(), reverse.read().get("packets")
        return None if a is None or b is None else a + b

    return both


def sink_counter(sink: Any, ns: str | None) -> Callable[[], int | None]:
    """The sink's running test-frame count, read while traffic runs (None when it cannot
    be read): the XDP program's, or the nft counter in namespace ``ns``."""
    if sink.uses_xdp or ns is None:
        return lambda: sink.read().get("packets")

    def nft() -> int | None:
        try:
            return sink_received(ns)
        except (KeyError, ValueError):
            return None

    return nft


class Phases:
    """Where one trial's wall time goes: ``lap(name)`` adds the time since the last lap
    to ``spans[name]`` (s). The bench's breakdown; a trial without one keeps nothing."""

    def __init__(self, spans: dict[str, float] | None) -> None:
        self.spans = spans
        self.last = time.perf_counter()

    def lap(self, name: str) -> None:
        if self.spans is not None:
            now = time.perf_counter()
            self.spans[name] = self.spans.get(name, 0.0) + now - self.last
            self.last = now


def measure(
    ctx: TrialContext, load_index: int, repetition: int, rate_pps: float, duration_s: float,
    phases: dict[str, float] | None = None, count: int | None = None,
) -> TrialRecord:  # fmt: skip
    """Run one trial on the testbed and return the record to store; ``phases``, when
    given, receives each phase's wall time in seconds (see ``Phases``); ``count``: the
    trial is a burst of exactly that many frames at ``rate_pps`` (``duration_s`` its
    length). The context's hooks run before the counters are read and after the trial
    closed, their output and faults kept with it."""
    tb = ctx.tb
    lap = Phases(phases).lap
    ctx.sink.ensure()
    if ctx.reverse is not None:
        ctx.reverse.ensure()
    utc = utc_now()
    hooked = _Hooked(ctx.hooks, trial_env(load_index, repetition, rate_pps, duration_s, ctx.run_id))
    hooked.run("before")
    lap("sink_ensure")
    ctx.sink.mark_flows()  # --count-flows: each flow's count from here
    before = _ready(ctx)
    ctx.sink.take_latency()  # what arrived before this trial is not its own
    if ctx.reverse is not None:
        ctx.reverse.take_latency()
    cpu_before = cpu.read()  # one kernel: every namespace's host view of /proc/stat
    noise = Noise.of(tb.state)
    noise.start()
    lap("counters_before")
    lost: list[str] = []  # the generator ended without a report: why (its fault)
    try:
        if ctx.reverse is not None:
            fwd, rev = trial_bidirectional.send_both(tb, rate_pps, duration_s)
            pair = (real_span(fwd), real_span(rev))
            res = trial_bidirectional.combined(*pair)
        else:
            pair, (res, lost) = None, _send(ctx, rate_pps, duration_s, before, count)
        lap("generator")
        cpu_use = cpu.use(cpu_before, cpu.read())
        t_stop = time.monotonic()
        takers = noise.stop()
    finally:
        noise.close()
    fb = flatten(before)
    key = received_key(ctx.sink.kind)
    closing = _closing_read(ctx, res, fb, key, lap, t_stop, pair)
    after, split = closing.after, closing.split
    fa, d, received, loss = split.flat, split.deltas, split.received, split.loss
    sink_hist = ctx.sink.take_latency()
    latency: SinkHist | trial_bidirectional.Latencies | None = sink_hist
    if ctx.reverse is not None:  # --bidirectional: each direction's own histogram
        latency = trial_bidirectional.Latencies(sink_hist, ctx.reverse.take_latency())
    sink_dropped = sum(loss.get(k, 0) for k in SINK_LOCATIONS)
    testbed = _testbed_faults(ctx, before, after, d)
    warnings = _trial_warnings(
        ctx, pair or (res,), rate_pps, (fb, fa, d), key, split.warnings, received, loss,
        closing.settled, (lost, testbed),
    )  # fmt: skip
    noisy = noise_warning(takers, rate_pps, (ctx.queues or {}).get("sut_ingress"),
                          loss.get("sut_ingress", 0), noise.sut_cpu)  # fmt: skip
    if noisy:
        warnings.append(noisy)
    extra = _extra(ctx, (before, after), res, pair, d, rate_pps, latency, warnings)
    hooked.trial["sent"], hooked.trial["received"] = res.sent, received
    hooked.run("after")
    extra |= hooked.kept(warnings)
    if pair is not None:
        rate_pps *= 2  # the trial's load: both directions' (CSIT's aggregate)
    counters = {
        "before": before,
        "after": after,
        "deltas": {k: v for k, v in d.items() if v},
        "sink_flows": flow_deltas(before.get("sink_flows", {}), after.get("sink_flows", {})),
        "sink": ctx.sink.kind,
        "queue_pkts": ctx.queue_pkts,
        "run_id": ctx.run_id,
        "generator": res.recorded(),
        "settle_wait_s": round(closing.settle_wait_s, 3),
        **({"cpu_takers": takers} if takers else {}),
        **({"cpu_takers_error": noise.error} if noise.error else {}),
        **extra,
    }
    rec = TrialRecord(
        load_index=load_index, repetition=repetition, rate_pps=float(rate_pps),
        duration_s=float(res.duration_s or duration_s), sent=res.sent, received=received,
        source=SOURCE, achieved_rate_pps=float(res.achieved_rate_pps), loss_location=loss,
        counters=counters, warnings=warnings, utc=utc, sink_dropped=sink_dropped, cpu=cpu_use,
    )  # fmt: skip
    lap("loss_split")
    return rec


class _Hooked:
    """One trial's hooks (none: nothing runs): what each did, and their faults."""

    def __init__(self, hooks: Hooks | None, trial: TrialEnv) -> None:
        self.hooks, self.trial = hooks, trial
        self.done: dict[str, KeptRun] = {}
        self.faults: list[str] = []

    def run(self, phase: str) -> None:
        if not self.hooks:
            return
        out, fault = self.hooks.run(phase, self.trial)
        if out is not None:
            self.done[phase] = out
        if fault:
            self.faults.append(fault)

    def kept(self, warnings: list[str]) -> dict[str, dict[str, KeptRun]]:
        """What the trial stores of its hooks (``counters["hooks"]``); their faults are
        added to ``warnings``."""
        warnings.extend(self.faults)
        return {"hooks": self.done} if self.done else {}


def _extra(
    ctx: TrialContext, snaps: tuple[Snapshot, Snapshot], res: GenResult,
    pair: tuple[GenResult, GenResult] | None, d: dict[str, int], rate_pps: float,
    latency: SinkHist | trial_bidirectional.Latencies | None, warnings: list[str],
) -> dict[str, Any]:  # fmt: skip
    """What a trial stores in its counters beyond the deltas: the data path's own, a
    mix's counts per size, each direction's (``trial.bidirectional``), the latency
    histogram (with --bidirectional each direction's, and both merged as the trial's);
    their warnings are added to ``warnings``."""
    extra, extra_warnings = ctx.path.trial_counters(*snaps) if ctx.path else ({}, [])
    warnings.extend(extra_warnings)
    own = sut_summary(ctx.tb, *snaps, d) if ctx.path is None else {}
    if own:  # the SUT's own counts at scale (conntrack, the scale rules' counters)
        extra["sut"] = own
    flows = snaps[1].get("sink_xdp", {}).get("flows")
    if flows is not None:  # --count-flows: the flows' counts over the trial
        extra["flows"] = flows
    if ctx.sink.imix:
        extra["imix"] = per_size(ctx.sink.imix, res, d)
    if ctx.sink.pcap:
        extra["pcap"] = pcap_per_size(res, d)
    directions = None
    if pair is not None:
        key = received_key(ctx.sink.kind)
        both = ctx.locate_both()
        extra["bidirectional"] = directions = trial_bidirectional.record(
            rate_pps, pair, d, key, ctx.tb.cfg.ip_version, both
        )
    if isinstance(
        latency, trial_bidirectional.Latencies
    ):  # each direction's, checked against its sink
        warnings.extend(trial_bidirectional.latency_warnings(latency, d, _latency_warnings))
        assert directions is not None  # a reverse sink: both directions sent
        trial_bidirectional.keep_latencies(directions, latency)
        merged = latency.merged()
        if merged is not None:
            extra["latency"] = merged.to_json()
    elif latency is not None:
        extra["latency"] = latency.to_json()
        warnings.extend(_latency_warnings(latency, int(d.get(XDP_KEY, 0))))
    return extra


@dataclass(frozen=True)
class Split:
    """A trial's counters split on one closing read: the flat counters after it, the
    deltas since the read before, their warnings, the test frames received, and where
    the lost frames were lost (by location)."""

    flat: dict[str, int]
    deltas: dict[str, int]
    warnings: list[str]
    received: int
    loss: dict[str, int]


@dataclass(frozen=True)
class Closing:
    """A trial's closing read: the counters after it, their split, whether the sink's
    count settled, and the seconds from the generator's end to that read."""

    after: Snapshot
    split: Split
    settled: bool
    settle_wait_s: float


def _closing_read(
    ctx: TrialContext, res: GenResult, fb: dict[str, int], key: str,
    lap: Callable[[str], None], t_stop: float, pair: tuple[GenResult, GenResult] | None = None,
) -> Closing:  # fmt: skip
    """The counters after a trial: read at once where every frame the testbed drops is
    counted where it drops, and the trial closed when every frame it sent is accounted
    for; else (or on an external testbed) after the sink's count stops moving."""
    settled, split, t_read = True, None, t_stop
    after: Snapshot = {}
    if ctx.path is None:
        after = _snapshot(ctx)
        lap("counters_after")
        split = _split(ctx, res, fb, after, key, pair)
    reverse = ctx.reverse.kind if ctx.reverse is not None else None
    if split is None or not _closed(fb, split, key, ctx.sink.kind, reverse):
        # a frame neither received nor counted as dropped may still be on its way (or
        # the sink's counts are not whole yet): wait until the sink's count stops
        # moving, and read the counters again
        _, settled = wait_quiet(_reader(ctx))
        # a data plane's own counters may lag behind its frames (Open vSwitch's coverage
        # counters, up to a second): read them again no sooner than that after the end
        time.sleep(max(0.0, t_stop + dataplane_lag_s(after) - time.monotonic()))
        lap("settle")
        t_read = time.monotonic()
        after = _snapshot(ctx)
        lap("counters_after")
        split = _split(ctx, res, fb, after, key, pair)
    return Closing(after, split, settled, t_read - t_stop)


def _trial_warnings(
    ctx: TrialContext, gens: tuple[GenResult, ...], rate_pps: float,
    flat: tuple[dict[str, int], dict[str, int], dict[str, int]], key: str,
    counter_warnings: list[str], received: int,
    loss: dict[str, int], settled: bool,
    faults: tuple[list[str], list[str]] = ([], []),
) -> list[str]:  # fmt: skip
    """What a trial is warned of: its counters, the generator (each direction's, with
    --bidirectional: ``gens``; ``faults[0]``, when it ended without a report), the
    testbed changed under it (``faults[1]``), the loss, the sinks' disagreement; a
    stall judged against the queues its burst could overflow."""
    fb, fa, d = flat
    lost, testbed = faults
    sink_dropped = sum(loss.get(k, 0) for k in SINK_LOCATIONS)
    res = trial_bidirectional.combined(*gens) if len(gens) == 2 else gens[0]
    warnings = [
        *testbed,  # first: the cause of what follows, and the fault the trial is known by
        *counter_warnings,
        *_sink_faults(fb, fa, d, key, ctx.sink.kind, ctx.reverse.kind if ctx.reverse else None),
        *(lost or _each_generator(gens, rate_pps, ctx.queue_pkts)),
        *_loss_warnings(res.sent, received, sink_dropped, loss, settled, _passed(ctx, d)),
    ]
    disagree = sink_disagreement(d)
    if disagree:
        warnings.append(disagree)
    burst = quality.stall_burst(res.lateness_max_ns, rate_pps)
    return _judged_stall(warnings, loss, res.sent - received - sink_dropped, burst, ctx.queues)


def _each_generator(
    gens: tuple[GenResult, ...], rate_pps: float, queue_pkts: int | None
) -> list[str]:
    """The generator's warnings; with --bidirectional each direction's, the reverse's
    said so (after the warning's kind, which the trial's judgement reads)."""
    if len(gens) == 1:
        return _generator_warnings(gens[0], rate_pps, queue_pkts)
    return [
        f"{w} ({name} direction)"
        for name, res in zip(trial_bidirectional.DIRECTIONS, gens, strict=True)
        for w in _generator_warnings(res, rate_pps, queue_pkts)
    ]


def _sink_faults(
    fb: dict[str, int], fa: dict[str, int], d: dict[str, int], key: str, kind: str,
    reverse: str | None = None,
) -> list[str]:  # fmt: skip
    """The sink's counter faults; with --bidirectional (``reverse``: the kind of the
    reverse direction's sink) that sink's too."""
    out = _counter_faults(fb, fa, d, key, kind)
    if reverse is not None:
        out += _counter_faults(fb, fa, d, REVERSE_KEY, reverse)
    return out


def _split(
    ctx: TrialContext, res: GenResult, fb: dict[str, int], after: Snapshot, key: str,
    pair: tuple[GenResult, GenResult] | None = None,
) -> Split:  # fmt: skip
    """The trial closed by ``after``; with --bidirectional (``pair``) both directions'
    sums (``trial.bidirectional.split``)."""
    fa = flatten(after)
    d, warnings = flat_deltas(fb, fa, wrap_bits(fb))
    if pair is not None:
        both = ctx.locate_both()
        (rx_f, rx_r), (loc_f, loc_r) = trial_bidirectional.split(
            pair, d, key, ctx.tb.cfg.ip_version, both
        )
        return Split(fa, d, warnings, rx_f + rx_r, summed(loc_f, loc_r))
    received = int(d.get(key, 0))
    locate = ctx.locate_loss()
    loss = locate(res.planned, res.sent, received, d, ctx.tb.cfg.ip_version, res.retries)
    return Split(fa, d, warnings, received, loss)


def dataplane_lag_s(snap: Snapshot) -> float:
    """How long a data plane's own counters may lag behind the frames they count (its
    reader's ``lag_s``; 0: none, or no data plane)."""
    return float((snap.get("dataplane") or {}).get("lag_s") or 0.0)


def _closed(
    fb: dict[str, int], split: Split, key: str, kind: str, reverse: str | None = None
) -> bool:
    """Can the trial close on this read without waiting? Every frame sent is accounted
    for and the sink's counts are whole (read, and with the cross-check sink both
    counts agree: the nft counter behind the XDP program may not have seen its last
    frames yet)."""
    return accounted_for(split.loss) and not _sink_faults(
        fb, split.flat, split.deltas, key, kind, reverse
    )


class SizeCount(TypedDict):
    """One frame size of a mix's trial: what the generator sent, the sink received."""

    sent: int
    received: int


class MixCounts(TypedDict):
    """A mix's trial per frame size (``counters["imix"]``)."""

    mix: str
    sizes: dict[str, SizeCount]  # by frame size ("64")


class MarkedSizeCount(TypedDict):
    """One frame size of a capture's trial: sent, the marked among them, received."""

    sent: int
    marked: int
    received: int


class PcapCounts(TypedDict):
    """A capture's trial per frame size (``counters["pcap"]``)."""

    sizes: dict[str, MarkedSizeCount]  # by frame size, in order of size


def per_size(mix: str, res: GenResult, d: dict[str, int]) -> MixCounts:
    """A mix's trial per frame size: what the generator sent of it and the sink received
    (``{"mix": "64:7,...", "sizes": {"64": {"sent": n, "received": n}, ...}}``)."""
    sent = res.sent_per_size
    sizes = [p.partition(":")[0] for p in mix.split(",")]
    return {
        "mix": mix,
        "sizes": {
            s: {"sent": sent.get(s, 0), "received": int(d.get(f"sink/xdp/size{s}/packets", 0))}
            for s in sizes
        },
    }


def pcap_per_size(res: GenResult, d: dict[str, int]) -> PcapCounts:
    """A capture's trial per frame size: the frames the generator sent of it, the marked
    ones among them and what the sink received (``{"sizes": {"64": {"sent": n,
    "marked": n, "received": n}, ...}}``; a size with no marked frame receives 0)."""
    sent, marked = res.sent_per_size, res.marked_per_size
    sizes = sorted({*sent, *marked}, key=int)
    return {
        "sizes": {
            s: {
                "sent": sent.get(s, 0),
                "marked": marked.get(s, 0),
                "received": int(d.get(f"sink/xdp/size{s}/packets", 0)),
            }
            for s in sizes
        },
    }


def _snapshot(ctx: TrialContext) -> Snapshot:
    """The counters a trial reads before and after: the data path's own, or the kernel's."""
    if ctx.path:
        snap = ctx.path.snapshot(ctx.sink)
    elif ctx.counters:
        snap = ctx.counters.snapshot(ctx.sink)
    else:
        snap = snapshot(ctx.tb.state["namespaces"], ctx.sink, conntrack_role(ctx.tb))
    if ctx.reverse is not None:  # --bidirectional: the reverse direction's count
        xdp = ctx.reverse.read()
        if xdp:
            snap["reverse_xdp"] = xdp
    if ctx.dataplane is not None:  # the data plane's own counters (testbed.dataplane)
        snap["dataplane"] = ctx.dataplane()
    return snap


def _counter_faults(
    fb: dict[str, int], fa: dict[str, int], d: dict[str, int], key: str, kind: str
) -> list[str]:
    """The sink's count must be there before and after and must not go back; with the
    cross-check sink, both counts must agree."""
    out = []
    if key not in fb or key not in fa:
        when = "before" if key not in fb else "after"
        out.append(
            f"{quality.COUNTER_FAULT}: the sink's count ({key}) could not be read {when} "
            "the trial; what it received is unknown"
        )
    elif fa[key] < fb[key]:
        out.append(
            f"{quality.COUNTER_FAULT}: the sink's count ({key}) went back from {fb[key]} "
            f"to {fa[key]} (reset); what it received is unknown"
        )
    if kind == "xdp+nft" and key in d and NFT_KEY in d and d[key] != d[NFT_KEY]:
        out.append(
            f"{quality.COUNTER_FAULT}: the sink's XDP count ({d[key]}) and nft count "
            f"({d[NFT_KEY]}) disagree"
        )
    return out


def _latency_warnings(h: SinkHist, counted: int) -> list[str]:
    """Every frame the XDP program counted has its latency in the histogram, or is
    counted ahead (stamped later than it arrived: not this host's clock)."""
    out = []
    if h.n + h.ahead != counted:
        out.append(
            f"the sink's latency histogram holds {h.n + h.ahead} frame(s) of the "
            f"{counted} it counted (a read was lost); its percentiles cover those"
        )
    if h.ahead:
        out.append(
            f"{h.ahead} frame(s) arrived stamped later than their arrival: not stamped "
            "on this host's clock, left out of the latency histogram"
        )
    return out


def _generator_warnings(res: GenResult, rate_pps: float, queue_pkts: int | None) -> list[str]:
    stall = _stall(res)
    cut = stall is not None and _ended_in_stall(res)
    if stall is not None and cut:
        out = _stall_cut_short(res, rate_pps, *stall)
    elif stall is not None and _long_stall(res):  # its rate is the stall's doing
        out = [_long_stall_words(res, rate_pps, stall, queue_pkts)]
    else:
        out = [
            w
            for w in (
                rate_warning(rate_pps, res.achieved_rate_pps),
                _said_stall(stall_warning(res.lateness_max_ns, rate_pps, queue_pkts), stall),
            )
            if w
        ]
    short = res.planned - res.sent
    if res.stopped_by_signal:
        out.append(f"{quality.TRUNCATED}: the generator was stopped by a signal")
    elif cut:
        pass  # the frames its stall left unsent are said with it
    elif short > quality.RATE_TOLERANCE * res.planned:
        out.append(
            f"{quality.TRUNCATED}: the generator sent {short} packet(s) fewer than the "
            f"{res.planned} planned (its deadline came first)"
        )
    elif short > 0:  # within the rate tolerance: the trial is as good as its rate
        out.append(f"the generator sent {short} packet(s) fewer than the {res.planned} planned")
    if res.retries:
        out.append(f"the kernel refused {res.retries} send(s); the generator retried them")
    return out


def _judged_stall(
    warnings: list[str], loss: dict[str, int], lost: int, burst: int = 0,
    queues: dict[str, int] | None = None,
) -> list[str]:  # fmt: skip
    """A stall is a fault only when its catch-up burst can have caused the trial's
    loss: a trial that lost nothing at this load shows the SUT carried it, and loss
    located where no burst reaches (a drop rule, the forwarding path) or at a queue
    deeper than the burst (the cap's bucket, by the stall rule itself) is the SUT's
    anyway. Such a stall stays as a note and the trial is used."""
    if not quality.only_stalled(warnings) or not quality.stall_is_harmless(loss, burst, queues):
        return warnings
    why = "nothing lost" if lost <= 0 else "its loss is where no burst overflows a queue"
    return quality.disarm_stall(warnings, why)


def _loss_warnings(
    sent: int, received: int, sink_dropped: int, loss: dict[str, int], settled: bool,
    passed: int = 0,
) -> list[str]:  # fmt: skip
    """The loss's warnings; ``passed``: test frames that went past the XDP sink
    uncounted (its sink fault says so): not among those no counter explains."""
    out = []
    if not settled:
        out.append(
            f"{quality.COUNTER_FAULT}: the sink's count still moved 5 s after the generator stopped"
        )
    if received > sent:
        out.append(
            f"{quality.COUNTER_FAULT}: received {received} > sent {sent}: foreign packets "
            "matched the counter"
        )
    if sink_dropped:
        out.append(
            f"{quality.SINK_DROPS}: {sink_dropped} test frame(s) the SUT forwarded were "
            "dropped by the sink itself (counted as forwarded, not as SUT loss)"
        )
    if loss.get("gen_egress", 0):
        out.append(
            f"{quality.GENERATOR_LIMIT}: {loss['gen_egress']} test frame(s) dropped at the "
            "generator's own egress, before the SUT"
        )
    if loss.get("unaccounted", 0) - passed > 0:
        n = loss["unaccounted"] - passed
        out.append(f"{n} lost packet(s) not explained by any kernel counter")
    elif loss.get("unaccounted", 0) < 0:
        out.append(
            f"{quality.COUNTER_FAULT}: the kernel counters explain {-loss['unaccounted']} "
            "drop(s) more than test frames were lost"
        )
    return out


def sink_disagreement(d: dict[str, int]) -> str | None:
    """A sink fault when both sides of the sink's veth saw drops, but not the same number."""
    if sink_counts_disagree(d):
        return (
            f"{quality.SINK_FAULT}: the SUT's egress veth and the sink's ingress report "
            "different drop counts; the sink's drops are not known exactly"
        )
    return None


# -- the testbed under a trial, the generator's stalls and its end (trial.integrity) ----


def _roles(ctx: TrialContext) -> dict[str, str]:
    return dict(ctx.tb.state.get("namespaces", {}))


def _sink_link(ctx: TrialContext) -> integrity.Link:
    return ("sink", ctx.sink.dev or SINK_DEV)


def _ready(ctx: TrialContext) -> Snapshot:
    """The counters before a trial, on the testbed as it was built: one line
    (``TestbedError``) when a namespace was deleted or a link stays down
    ``LINK_WAIT_S``; the static routes and neighbours set again after a link went down
    and up; the sink's XDP program attached again when another process detached it."""
    before = _snapshot(ctx)
    if ctx.path is not None or ctx.counters is None:  # a kind with a data path of its own
        return before
    roles, watch = _roles(ctx), ctx.watch
    deadline = time.monotonic() + LINK_WAIT_S
    while (problem := watch.problem(before, roles)) is not None:
        # a namespace deleted does not come back; a link set up again may
        if integrity.missing_namespaces(roles.values()) or time.monotonic() > deadline:
            raise broken(ctx, problem)
        time.sleep(0.1)
        before = _snapshot(ctx)
    again = False
    if watch.flapped(before):  # a link went down and up: it lost its routes, neighbours
        again = topology.restore_paths(ctx.tb.name, ctx.tb.cfg, ctx.tb.state)
    if ctx.sink.uses_xdp and watch.known and not integrity.sink_attached(before, _sink_link(ctx)):
        ctx.sink.restart()
        ctx.sink.mark_flows()  # --count-flows: the new program's flows from here too
        again = True
    if again:
        before = _snapshot(ctx)
    watch.settle(before)
    return before


def broken(ctx: TrialContext, problem: str) -> TestbedError:
    """The one line of a testbed another process took apart under a run."""
    tb = ctx.tb
    todo = ""  # one this run built: removed on the way out
    if tb.attached and not tb.owned:  # left up by 'testbed up': not removed on exit
        todo = (
            f"bring it down and up again ('netassay testbed down --name {tb.name}', then "
            "'netassay testbed up')"
        )
    return TestbedError(f"testbed '{tb.name}' broke under the run", problem, todo)


def testbed_problem(ctx: TrialContext) -> str | None:
    """Why the testbed cannot take another trial now (a namespace deleted, a link gone
    or down), or None; a caller asks before it repeats a faulty trial."""
    if ctx.path is not None or ctx.counters is None:
        return None
    return ctx.watch.problem(_snapshot(ctx), _roles(ctx))


def _testbed_faults(
    ctx: TrialContext, before: Snapshot, after: Snapshot, d: dict[str, int]
) -> list[str]:
    """What changed in the testbed during the trial (``trial.integrity``)."""
    if ctx.path is not None or ctx.counters is None:
        return []
    roles = _roles(ctx)
    out = [
        f"{quality.TESTBED_FAULT}: namespace {ns} was deleted during the trial (by another "
        "process); the testbed is gone"
        for ns in integrity.missing_namespaces(roles.values())
    ]
    out += integrity.link_faults(before, after, roles, ctx.watch.only)
    passed = _passed(ctx, d)
    out += integrity.sink_faults(before, after, _sink_link(ctx), ctx.sink.kind, passed, roles)
    return out


def _passed(ctx: TrialContext, d: dict[str, int]) -> int:
    """Test frames that went past the XDP sink uncounted: the nft counter behind it
    counted them (with the ``xdp`` sink it never sees one while the program is on)."""
    if ctx.sink.kind != "xdp" or ctx.path is not None or ctx.counters is None:
        return 0
    return int(d.get(NFT_KEY, 0))


def _send(
    ctx: TrialContext, rate_pps: float, duration_s: float, before: Snapshot,
    count: int | None = None,
) -> tuple[GenResult, list[str]]:  # fmt: skip
    """The generator's run (``count``: a burst of exactly that many frames), and
    nothing or why its report is missing: killed by a signal it cannot catch, ended
    after its timeout, or failing because the testbed changed under it (a link down);
    its stand-in then counts what its port sent. Any other failure of the generator is
    raised."""
    t0 = time.monotonic_ns()
    try:
        if count is not None:
            return real_span(ctx.tb.send(rate_pps, duration_s, count=count)), []
        return real_span(ctx.tb.send(rate_pps, duration_s)), []
    except GeneratorError as exc:
        t1 = time.monotonic_ns()
        mid = _snapshot(ctx)
        testbed = _testbed_faults(ctx, before, mid, flat_deltas(flatten(before), flatten(mid))[0])
        if not isinstance(exc, GeneratorLost) and not testbed:
            raise
        port = ("tx" if ctx.path is not None else "tg", ctx.tb.target["dev"])
        res = stand_in(rate_pps, duration_s, before, mid, t0, t1, port)
        if isinstance(exc, GeneratorLost):
            how, why = exc.how, "it reported nothing"
        else:  # e.g. 'sending on 'tg0' failed after 10880 packets: Network is down'
            how, why = "stopped by the testbed's fault", exc.why or exc.what
        return res, [
            f"{quality.TRUNCATED}: the generator was {how} {(t1 - t0) / 1e9:.2f} s into the "
            f"{duration_s:g} s trial ({why}): it sent {res.sent:,} of the {res.planned:,} "
            "planned frames (its port's count); not SUT loss"
        ]


def stand_in(
    rate_pps: float, duration_s: float, before: Snapshot, mid: Snapshot,
    t0_ns: int, t1_ns: int, port: tuple[str, str] = ("tg", "tg0"),
) -> GenResult:  # fmt: skip
    """The run of a generator that reported nothing: what its ``port`` (role, device:
    the embedded testbed's tg0, an external testbed's tx port) took from it between two
    snapshots, over the time it ran."""
    d, _ = flat_deltas(flatten(before), flatten(mid))
    role, dev = port
    keys = (f"{role}/link/{dev}/tx_packets", f"{role}/link/{dev}/tx_dropped",
            f"{role}/qdisc/{dev}/drops")  # fmt: skip
    sent = sum(int(d.get(k, 0)) for k in keys)
    span = max(t1_ns - t0_ns, 1)
    achieved = sent / (span / 1e9)
    res = GenResult(
        technique="unknown", planned=round(rate_pps * duration_s), sent=sent,
        first_tx_ns=t0_ns, last_tx_ns=t1_ns, duration_s=span / 1e9, rate_pps=float(rate_pps),
        achieved_rate_pps=achieved, rate_error=achieved / rate_pps - 1.0, lateness_max_ns=None,
        lateness_p99_ns=None, retries=0, stopped_by_signal=False, ok=False,
    )  # fmt: skip
    return res.with_report(reported=False, stop_reason="lost")


def _stall(res: GenResult) -> tuple[float, float] | None:
    """The generator's longest stall, when it reported one of STALL_NS or more: (its
    length, when it began after the first send), in seconds."""
    n, t = res.stall_max_ns, res.stall_start_ns
    if n is None or t is None or n < quality.STALL_NS:
        return None
    return n / 1e9, max(0, t - res.first_tx_ns) / 1e9


# A stall that ends this close to the run's end ran into it: the loop's last look at the
# clock and its end are microseconds apart (paced live frames measure a stall between
# two test runs, the last one at the loop's top).
END_SLACK_NS = 1_000_000


def _ended_in_stall(res: GenResult) -> bool:
    """The run ended (its deadline came, or a signal) while the generator was stalled
    and frames were still to send: it did not last as long as it says, it lasted to its
    end (``end_ns``)."""
    n, t, end = res.stall_max_ns, res.stall_start_ns, res.end_ns
    return (
        n is not None
        and t is not None
        and end is not None
        and n >= quality.STALL_NS
        and abs(t + n - end) <= END_SLACK_NS
        and res.sent < res.planned
    )


def real_span(res: GenResult) -> GenResult:
    """A run a stall ended (``_ended_in_stall``): its duration from its first send to
    its end, stall included, and its rate over that time; any other run as reported."""
    if not _ended_in_stall(res):
        return res
    span = ((res.end_ns or 0) - res.first_tx_ns) / 1e9
    sent = res.frames_sent  # every frame (a capture's marked ones: .sent)
    achieved = sent / span if span > 0 else 0.0
    rate_error = achieved / res.rate_pps - 1.0 if res.rate_pps else None
    return replace(res, duration_s=span, achieved_rate_pps=achieved, rate_error=rate_error)


def _long_stall(res: GenResult) -> bool:
    """A stall of LONG_STALL_SHARE of the trial's duration or more."""
    stall = _stall(res)
    return stall is not None and stall[0] >= quality.LONG_STALL_SHARE * max(res.duration_s, 1e-9)


def _stalled(stall: tuple[float, float]) -> str:
    return (
        f"the generator sent nothing for {stall[0]:.3f} s from {stall[1]:.3f} s into the "
        "trial while frames were due: it was stopped, or had no CPU"
    )


def _said_stall(warning: str | None, stall: tuple[float, float] | None) -> str | None:
    """A stall warning with how long the generator sent nothing, when it said."""
    if warning is None or stall is None:
        return warning
    return f"{warning}; {_stalled(stall)}"


def _long_stall_words(
    res: GenResult, rate_pps: float, stall: tuple[float, float], queue_pkts: int | None
) -> str:
    """A stall of LONG_STALL_SHARE of the trial or more, said with the rate the trial
    had, never as a generator limit: the generator's reach is not in question. A fault
    (to be judged by the loss, as every stall) when its catch-up could overflow a queue
    (``quality.stall_warning``); a note when it fits every queue."""
    due = round(rate_pps * stall[0])
    words = (
        f"{_stalled(stall)}; then it sent the ~{due:,} frames due as fast as it could: "
        f"{res.sent:,} frames in {res.duration_s:.2f} s ({fmt_rate(res.achieved_rate_pps)} "
        f"of the {fmt_rate(rate_pps)} offered), not offered evenly as planned"
    )
    over = stall_warning(res.lateness_max_ns, rate_pps, queue_pkts)
    if over is None:
        return f"{words}; its catch-up fits every queue on the path"
    return f"{quality.GENERATOR_STALL}: {words}; {over.split('; ', 1)[-1]}"


def _stall_cut_short(res: GenResult, rate_pps: float, length_s: float, from_s: float) -> list[str]:
    """A run that ended while the generator was stalled: the stall, and the frames
    it left unsent, with the duration and rate the trial really had (``real_span``)."""
    return [
        f"{quality.GENERATOR_STALL}: {_stalled((length_s, from_s))}; its run ended during it",
        f"{quality.TRUNCATED}: {res.sent:,} of the {res.planned:,} planned frames sent, in "
        f"{res.duration_s:.2f} s ({fmt_rate(res.achieved_rate_pps)} of the "
        f"{fmt_rate(rate_pps)} offered): the stall left the rest unsent; not SUT loss",
    ]

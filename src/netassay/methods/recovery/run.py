"""System recovery on the router testbed. A trial is one trial of the trial engine
(every quality rule applied, the loss located) whose traffic is two generators pinned
to the generator's CPU, taking turns (``--share-cpu``), each at half the overload: one
for the overload and the recovery (``overload_s + recover_s``), the other for the
overload only. Together they offer the overload (110% of the throughput); when the
second ends (timestamp A, its last frame's send time) the first goes on alone, without
a gap, at half of it (RFC 2544's 50% of the overload). The sink's count is read every
``--interval`` and once right when the second generator returns; ``analysis.recovery``
finds when the deficit after A (offered less counted) stops changing.
"""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from netassay import names
from netassay.analysis import recovery
from netassay.config import Config, TestbedConfig
from netassay.errors import UsageError
from netassay.methods.base import Progress, RunOptions, search_first
from netassay.methods.recovery import store as recovery_store
from netassay.methods.recovery.request import RETRIES, RecoveryRequest
from netassay.shared import lab, throughput
from netassay.store.db import Store
from netassay.testbed.bed import require_root
from netassay.traffic.generator import GenResult
from netassay.trial.engine import TrialContext, frames_counted, measure, trials_on
from netassay.trial.record import TrialRecord
from netassay.units import fmt_rate


def _quiet(line: str) -> None:
    return None


@dataclass
class RecoveryJob:
    req: RecoveryRequest
    testbed: TestbedConfig
    db: str
    throughput_pps: float | None  # None: measured first (--throughput search)
    throughput_from: dict[str, Any] | None
    name: str = names.DEFAULT_NAME
    label: str = ""
    check_peak: bool = True
    retries: int = RETRIES
    progress: Progress = _quiet
    note: Progress = _quiet
    experiment_id: int | None = None


def prepare(req: RecoveryRequest, options: RunOptions, cfg: Config) -> RecoveryJob:
    name, db, testbed, retries = lab.new_run(
        options, cfg.testbed, RETRIES, "recovery test", req.validate
    )
    if testbed.sink == "nft":
        raise UsageError("recovery needs the XDP sink", "it reads the sink's count every "
                         "interval", "use --sink xdp (the default) or xdp+nft")  # fmt: skip
    pps, src = throughput.resolve(req.throughput, db, "--throughput")
    return RecoveryJob(req, testbed, db, pps, src, name, options.label, options.check_peak,
                       retries)  # fmt: skip


class Sampler:
    """The sink's count read every ``interval_s`` from ``start`` until ``stop``, and
    once more whenever ``take`` is called (the overload's end): (monotonic s, count)."""

    def __init__(self, count: Any, interval_s: float) -> None:
        self.count, self.interval_s = count, interval_s
        self.samples: list[recovery.Sample] = []
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._thread: threading.Thread | None = None

    def take(self) -> None:
        with self._lock:
            c = self.count()
            t = time.monotonic()
            if c is not None:
                self.samples.append((t, int(c)))

    def _loop(self) -> None:
        t0 = time.monotonic()
        k = 1
        while not self._stop.wait(max(0.0, t0 + k * self.interval_s - time.monotonic())):
            self.take()
            # the next tick still ahead: a thread the busy host kept waiting reads once,
            # not once per tick it missed (a clump of samples at one instant would weigh
            # on the fit as many)
            k = max(k + 1, math.floor((time.monotonic() - t0) / self.interval_s) + 1)

    def start(self) -> None:
        self.samples = []
        self._stop.clear()
        self.take()
        self._thread = threading.Thread(target=self._loop, name="recovery-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.take()


class PhasedBed:
    """A testbed whose ``send`` is the trial's two generators (see the module), read by
    ``sampler``; all else the testbed's own. ``phases`` keeps both runs."""

    def __init__(self, tb: Any, low_pps: float, overload_s: float, recover_s: float,
                 sampler: Sampler) -> None:  # fmt: skip
        self._tb, self.low, self.sampler = tb, low_pps, sampler
        self.overload_s, self.recover_s = overload_s, recover_s
        self.phases: dict[str, GenResult] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tb, name)

    def _extra(self) -> GenResult:
        res: GenResult = self._tb.send(self.low, self.overload_s, False, True)
        self.sampler.take()  # right at the overload's end (A)
        return res

    def send(self, rate_pps: float | str, duration_s: float, *args: Any) -> GenResult:
        self.sampler.start()
        try:
            with ThreadPoolExecutor(2, thread_name_prefix="generator") as pool:
                whole = pool.submit(self._tb.send, self.low, self.overload_s + self.recover_s,
                                    False, True)  # fmt: skip
                extra = pool.submit(self._extra)
                self.phases = {"whole": whole.result(), "overload": extra.result()}
        finally:
            self.sampler.stop()
        return phased(self.phases["whole"], self.phases["overload"])


def phased(whole: GenResult, extra: GenResult) -> GenResult:
    """Both generators' runs as the trial's one: counts added, the whole run's length,
    the offered and achieved rates averaged over it (each run's rate weighted by its
    share of the time), the later lateness, a signal or a missed rate of either."""
    span = max(whole.duration_s, 1e-9)
    share = min(1.0, extra.duration_s / span)
    rate = (whole.rate_pps or 0.0) + (extra.rate_pps or 0.0) * share
    achieved = whole.achieved_rate_pps + extra.achieved_rate_pps * share
    res = GenResult(
        technique=whole.technique, planned=whole.planned + extra.planned,
        sent=whole.sent + extra.sent, first_tx_ns=min(whole.first_tx_ns, extra.first_tx_ns),
        last_tx_ns=max(whole.last_tx_ns, extra.last_tx_ns), duration_s=whole.duration_s,
        rate_pps=rate or None, achieved_rate_pps=achieved,
        rate_error=achieved / rate - 1.0 if rate else None,
        lateness_max_ns=max(whole.lateness_max_ns or 0, extra.lateness_max_ns or 0),
        lateness_p99_ns=max(whole.lateness_p99_ns or 0, extra.lateness_p99_ns or 0),
        retries=whole.retries + extra.retries,
        stopped_by_signal=whole.stopped_by_signal or extra.stopped_by_signal,
        ok=whole.ok and extra.ok,
    )  # fmt: skip
    return res.with_report(phases={"whole": whole.raw, "overload": extra.raw})


def run(job: RecoveryJob) -> recovery_store.StoredRecovery:
    require_root("a recovery test")
    req = job.req
    with lab.open_testbed(job.name, job.testbed, "a recovery test", job.note) as tb:
        peak = lab.probe_peak(tb, job.note) if job.check_peak else None
        with Store(job.db) as store, trials_on(tb) as ctx:
            ctx = _start(job, ctx, store, peak)
            if job.throughput_pps is None:  # --throughput search: measured now
                job.throughput_pps, job.throughput_from = search_first(
                    ctx, job.name, job.db, job.testbed,
                    f"search for the throughput of {job.name}", job.note,
                )  # fmt: skip
            over, capped = _overload(job, peak)
            lab.check_line_rate(tb.state, [over])
            _configured(job, store, over, capped)
            for k in range(req.trials):
                if k:
                    time.sleep(req.wait_s)
                _trial(job, ctx, store, k, over / 2)
    with Store(job.db, readonly=True) as store:
        assert job.experiment_id is not None
        exp = store.experiment(job.experiment_id)
        return recovery_store.StoredRecovery(Path(job.db), exp, recovery_store.summary(store, exp))


def _overload(job: RecoveryJob, peak: float | None) -> tuple[float, bool]:
    """The overload (``--overload`` x the throughput), capped at 98% of the peak."""
    assert job.throughput_pps is not None
    over = job.req.overload * job.throughput_pps
    if peak is not None and over > lab.PEAK_MARGIN * peak:
        job.note(f"the overload is capped at {fmt_rate(lab.PEAK_MARGIN * peak)}, 98% of "
                 "the generator's peak")  # fmt: skip
        return lab.PEAK_MARGIN * peak, True
    return over, False


def _start(job: RecoveryJob, ctx: TrialContext, store: Store, peak: float | None) -> TrialContext:
    """The experiment, created first (a throughput measured now is stored after it)."""
    req = job.req
    config = {
        "throughput": req.throughput, "overload": req.overload, "overload_s": req.overload_s,
        "recover_s": req.recover_s, "interval_s": req.interval_s, "trials": req.trials,
        "wait_s": req.wait_s, "testbed": asdict(job.testbed), "testbed_name": job.name,
    }  # fmt: skip
    label = job.label or f"recovery {lab.default_label(job.testbed, job.name)}"
    job.experiment_id, ctx = lab.start_experiment(
        store, ctx, kind=recovery_store.KIND, name=job.name, label=label, config=config,
        metadata={}, peak=peak,
    )  # fmt: skip
    return ctx


def _configured(job: RecoveryJob, store: Store, over: float, capped: bool) -> None:
    """The loads, once the throughput is known, added to the experiment's config."""
    assert job.experiment_id is not None
    exp = store.experiment(job.experiment_id)
    known = {"throughput_pps": job.throughput_pps, "throughput_from": job.throughput_from,
             "overload_pps": over, "low_pps": over / 2, "capped": capped}  # fmt: skip
    store.update_config(job.experiment_id, {**exp.config, **known})


def measure_trial(job: RecoveryJob, ctx: TrialContext, k: int, low: float) -> TrialRecord:
    """One overload and its recovery: the trial, its samples and the recovery found in
    ``counters["recovery"]``; repeated when it is a measurement fault."""
    req = job.req
    length = req.overload_s + req.recover_s
    discarded: list[str] = []
    for attempt in range(job.retries + 1):
        sampler = Sampler(frames_counted(ctx.sink, None, ctx.tb.state["namespaces"].get("sink")),
                          req.interval_s)  # fmt: skip
        bed = PhasedBed(ctx.tb, low, req.overload_s, req.recover_s, sampler)
        # PhasedBed stands in for the Testbed (it delegates all but send through
        # __getattr__): no subclass of it
        rec = measure(replace(ctx, tb=bed), 0, k, low * (1 + req.overload_s / length), length)  # type: ignore[arg-type]
        if not rec.excluded or attempt == job.retries or lab.signalled(rec):
            break
        discarded.append(f"attempt {attempt + 1} discarded: {rec.excluded}")
        time.sleep(req.wait_s)
    a = bed.phases["overload"].last_tx_ns / 1e9
    t0 = bed.phases["whole"].first_tx_ns / 1e9
    found = recovery.recovery(sampler.samples, a, low)
    own = {
        "trial": k, "low_pps": low, "overload_pps": 2 * low, "t_drop_s": round(a - t0, 6),
        **found.to_json(), "samples": [[round(t - t0, 6), c] for t, c in sampler.samples],
        "phases": {p: {"sent": g.sent, "achieved_rate_pps": g.achieved_rate_pps}
                   for p, g in bed.phases.items()},
    }  # fmt: skip
    counters = {**rec.counters, "recovery": own}
    return replace(rec, counters=counters, warnings=[*rec.warnings, *discarded],
                   run_id=ctx.run_id)  # fmt: skip


def _trial(job: RecoveryJob, ctx: TrialContext, store: Store, k: int, low: float) -> None:
    assert job.experiment_id is not None
    rec = measure_trial(job, ctx, k, low)
    store.add_trial(job.experiment_id, rec)
    r = rec.counters["recovery"]["recovery_s"]
    lost = rec.sent - rec.forwarded
    what = "not recovered" if r is None else f"recovered in {r * 1e3:.1f} ms"
    flag = f" excluded: {rec.excluded}" if rec.excluded else ""
    job.progress(f"[{k + 1}/{job.req.trials}] lost {lost:,} of {rec.sent:,}; {what}{flag}")

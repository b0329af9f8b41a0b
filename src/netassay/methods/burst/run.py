"""Back-to-back bursts on the router testbed: each burst a trial of the trial engine
(exactly N frames at the bursts' rate: ``measure(..., count=N)``, every quality rule
applied, the loss located), stored the moment it is received, then ``--wait`` idle for
the SUT's buffers to empty (RFC 9004's third component of a trial). A test is one
binary search on N (``analysis.burst.LengthSearch``); a burst that is a measurement
fault is repeated (``--retries``), and a test whose burst stays one ends incomplete
(left out of the mean, its trials stored and named).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from netassay import names, quality
from netassay.analysis.burst import LengthSearch
from netassay.config import Config, TestbedConfig
from netassay.methods.base import Progress, RunOptions, search_first
from netassay.methods.burst import store as burst_store
from netassay.methods.burst.request import MAX_BURST_S, RETRIES, BurstRequest
from netassay.shared import lab, throughput
from netassay.store.db import Store
from netassay.testbed.bed import require_root
from netassay.trial.engine import TrialContext, measure, trials_on
from netassay.trial.record import TrialRecord
from netassay.units import fmt_rate

MIN_FRAMES = 128  # the shortest burst tried: two send calls of 64 at least, a rate to keep
# A burst's rate is known to this much of its span: the first and the last send call are
# each a few us off their deadlines on a busy host, which is 0.1% of a 5 ms burst but 1%
# of a 0.5 ms one (the trial engine's rate tolerance is for trials of seconds)
SPAN_JITTER_S = 20e-6


def _quiet(line: str) -> None:
    return None


@dataclass
class BurstJob:
    """What a back-to-back test runs: the request, the testbed, the store."""

    req: BurstRequest
    testbed: TestbedConfig
    db: str
    name: str = names.DEFAULT_NAME
    label: str = ""
    check_peak: bool = True
    retries: int = RETRIES
    throughput_pps: float | None = None
    throughput_from: dict[str, Any] | None = None  # the stored search it came from
    progress: Progress = _quiet
    note: Progress = _quiet
    experiment_id: int | None = None
    stored: int = 0


def prepare(req: BurstRequest, options: RunOptions, cfg: Config) -> BurstJob:
    """The test to run, checked before anything is built (a stored PDR looked up now)."""
    name, db, testbed, retries = lab.new_run(
        options, cfg.testbed, RETRIES, "burst test", req.validate
    )
    job = BurstJob(req, testbed, db, name, options.label, options.check_peak, retries)
    if req.throughput is not None:
        job.throughput_pps, job.throughput_from = throughput.resolve(
            req.throughput, db, "--throughput"
        )
    return job


def run(job: BurstJob) -> burst_store.StoredBurst:
    """Run every test, each burst stored as it ends; the stored result."""
    require_root("a burst test")
    with lab.open_testbed(job.name, job.testbed, "a burst test", job.note) as tb:
        rate, peak = job.req.rate_pps, None
        if rate is None:  # the highest rate the generator paces here now
            peak = lab.probe_peak(tb, job.note)
            rate = lab.paced_reach(tb, lab.PEAK_MARGIN * peak, job.note)
        elif job.check_peak:
            peak = lab.check_peak(tb, [rate], job.note)
        lab.check_line_rate(tb.state, [rate])
        most = job.req.max_frames or max(MIN_FRAMES, round(rate * MAX_BURST_S))
        with Store(job.db) as store, trials_on(tb) as ctx:
            ctx = _start(job, ctx, store, rate, most, peak)
            if job.req.throughput == throughput.MEASURE:  # a short search now, stored after
                job.throughput_pps, job.throughput_from = search_first(
                    ctx, job.name, job.db, job.testbed,
                    f"search for the throughput of {job.name}", job.note,
                )  # fmt: skip
                _throughput_known(job, store)
            job.note(f"bursts at {fmt_rate(rate)}, up to {most:,} frames; {job.req.tests} tests")
            for test in range(job.req.tests):
                _test(job, ctx, store, test, rate, most)
    with Store(job.db, readonly=True) as store:
        assert job.experiment_id is not None
        exp = store.experiment(job.experiment_id)
        return burst_store.StoredBurst(Path(job.db), exp, burst_store.summary(store, exp))


def _start(
    job: BurstJob, ctx: TrialContext, store: Store, rate: float, most: int, peak: float | None
) -> TrialContext:
    req = job.req
    config = {
        "rate_pps": rate, "rate_given": req.rate_pps is not None, "max_frames": most,
        "tests": req.tests, "resolution": req.resolution, "wait_s": req.wait_s,
        "throughput": req.throughput, "throughput_pps": job.throughput_pps,
        "throughput_from": job.throughput_from, "min_frames": MIN_FRAMES,
        "testbed": asdict(job.testbed), "testbed_name": job.name,
    }  # fmt: skip
    label = job.label or f"burst {fmt_rate(rate)} {lab.default_label(job.testbed, job.name)}"
    job.experiment_id, ctx = lab.start_experiment(
        store, ctx, kind=burst_store.KIND, name=job.name, label=label, config=config,
        metadata={"rate_pps": rate, "throughput_pps": job.throughput_pps}, peak=peak,
    )  # fmt: skip
    return ctx


def _throughput_known(job: BurstJob, store: Store) -> None:
    assert job.experiment_id is not None
    exp = store.experiment(job.experiment_id)
    known = {"throughput_pps": job.throughput_pps, "throughput_from": job.throughput_from}
    store.update_config(job.experiment_id, {**exp.config, **known})


def _test(
    job: BurstJob, ctx: TrialContext, store: Store, test: int, rate: float, most: int
) -> None:
    """One test: the binary search on the burst length, each burst stored as it ends."""
    assert job.experiment_id is not None
    search = LengthSearch(most, job.req.resolution, MIN_FRAMES)
    step = 0
    while (n := search.next_length()) is not None:
        rec = _burst(job, ctx, test, step, rate, n)
        own: dict[str, Any] = {"test": test, "step": step, "frames": n}
        if rec.excluded:  # stayed a measurement fault: this test ends without a result
            own["incomplete"] = True
        else:
            own["lossless"] = rec.sent == n and rec.forwarded >= rec.sent
            search.record(n, own["lossless"])
            if search.done:
                own |= {"result": search.result, "at_limit": search.at_limit}
        store.add_trial(job.experiment_id, replace(rec, counters={**rec.counters, "burst": own}))
        job.stored += 1
        job.progress(_line(job, own, rec))
        step += 1
        if rec.excluded:
            return
        time.sleep(job.req.wait_s)


def _burst(
    job: BurstJob, ctx: TrialContext, test: int, step: int, rate: float, n: int
) -> TrialRecord:
    """A burst of ``n`` frames; repeated (at most ``job.retries`` times) when it is a
    measurement fault, the discarded attempts named."""
    discarded: list[str] = []
    for attempt in range(job.retries + 1):
        rec = rate_judged(measure(ctx, test, step, rate, n / rate, count=n), n, rate)
        if not rec.excluded or attempt == job.retries or lab.signalled(rec):
            break
        lost = rec.sent - rec.forwarded
        discarded.append(f"attempt {attempt + 1} discarded ({lost} lost): {rec.excluded}")
        time.sleep(job.req.wait_s)
    return replace(rec, warnings=[*rec.warnings, *discarded], run_id=ctx.run_id)


def rate_judged(rec: TrialRecord, n: int, rate: float) -> TrialRecord:
    """A burst whose only faults are its achieved rate off the offered one, by no more
    than ``SPAN_JITTER_S`` of its span (or the engine's tolerance), is used: the fault
    becomes a note saying so."""
    found = quality.faults(rec.warnings)
    kinds = (quality.GENERATOR_LIMIT, quality.RATE_OVERSHOOT)
    if not found or not all(f.startswith(kinds) for f in found) or not rec.achieved_rate_pps:
        return rec
    tolerance = max(quality.RATE_TOLERANCE, SPAN_JITTER_S * rate / n)
    err = rec.achieved_rate_pps / rate - 1
    if abs(err) > tolerance:
        return rec
    note = (f"burst rate {err:+.2%} off, within {tolerance:.2%} ({SPAN_JITTER_S * 1e6:g} us of "
            f"its {n / rate * 1e3:.2f} ms span)")  # fmt: skip
    kept = [w for w in rec.warnings if not w.startswith(kinds)]
    return replace(rec, warnings=[*kept, note])


def _line(job: BurstJob, own: dict[str, Any], rec: TrialRecord) -> str:
    lost = rec.sent - rec.forwarded
    head = f"[test {own['test'] + 1}/{job.req.tests}] burst of {own['frames']:,}: "
    if own.get("incomplete"):
        return head + f"measurement fault, the test ends without a result: {rec.excluded}"
    head += "no loss" if own["lossless"] else f"lost {lost:,}"
    if "result" in own:
        head += f" | longest without loss: {own['result']:,}" + (
            " (every burst tried: a floor)" if own["at_limit"] else ""
        )
    return head

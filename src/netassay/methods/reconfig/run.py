"""Reconfiguration tests on the router testbed: each trial a trial of the trial engine
(every quality rule applied, the loss located) whose testbed's ``send`` also starts
the change ``--at`` seconds into the traffic, in the SUT's namespace
(``trial.hooks.run_command``). A change that fails, or is still running when the
traffic ends (its loss would not all be counted), makes the trial a measurement fault
with its line. ``--undo`` runs after each trial, untimed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from netassay import names, quality
from netassay.analysis.reconfig import blocked_s
from netassay.config import Config, TestbedConfig
from netassay.errors import UsageError
from netassay.methods.base import Progress, RunOptions
from netassay.methods.reconfig import store as reconfig_store
from netassay.methods.reconfig.request import RETRIES, ReconfigRequest
from netassay.shared import lab, throughput
from netassay.store.db import Store
from netassay.testbed import dataplane as testbed_dataplane
from netassay.testbed.bed import require_root
from netassay.traffic.generator import GenResult
from netassay.trial.engine import TrialContext, frames_counted, measure, trials_on
from netassay.trial.hooks import CommandRun, fault, kept, run_command
from netassay.trial.record import TrialRecord
from netassay.units import fmt_rate


def _quiet(line: str) -> None:
    return None


@dataclass
class ReconfigJob:
    req: ReconfigRequest
    testbed: TestbedConfig
    db: str
    rate_pps: float
    rate_from: dict[str, Any] | None
    name: str = names.DEFAULT_NAME
    label: str = ""
    check_peak: bool = True
    retries: int = RETRIES
    progress: Progress = _quiet
    note: Progress = _quiet
    experiment_id: int | None = None


def prepare(req: ReconfigRequest, options: RunOptions, cfg: Config) -> ReconfigJob:
    name, db, testbed, retries = lab.new_run(
        options, cfg.testbed, RETRIES, "reconfiguration test", req.validate
    )
    rate, src = throughput.resolve(req.rate, db, "--rate")
    if rate is None:  # --rate search: burst and recovery run one first; a reconfig does not
        raise UsageError(
            f"bad --rate '{req.rate}'",
            "a reconfiguration test takes no search of its own",
            "give a rate like 200k, or N%pdr of a search stored in --db",
        )
    return ReconfigJob(req, testbed, db, rate, src, name, options.label, options.check_peak,
                       retries)  # fmt: skip


FIRST_FRAME_POLL_S = 0.002  # how often the sink is read for the traffic's first frame
FIRST_FRAME_WAIT_S = 10.0


class ChangeBed:
    """A testbed whose ``send`` runs the change in ``netns`` ``at_s`` after the traffic
    starts: after the sink (``count``) counts its first frame (the generator's process
    takes from a few to hundreds of ms to send it on a busy host); ``done`` holds what
    the change did (monotonic start and end included)."""

    def __init__(self, tb: Any, line: str, at_s: float, netns: str | None, timeout_s: float,
                 count: Callable[[], int | None], env: dict[str, str]):  # fmt: skip
        self._tb, self.line, self.at_s = tb, line, at_s
        self.netns, self.timeout_s, self.count = netns, timeout_s, count
        self.env = env
        self.done: CommandRun | None = None  # the change's run (``send`` runs it)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tb, name)

    def _change(self, before: int | None) -> None:
        t0 = time.monotonic()
        while time.monotonic() - t0 < FIRST_FRAME_WAIT_S:
            now = self.count()
            if now is not None and before is not None and now > before:
                break
            time.sleep(FIRST_FRAME_POLL_S)
        time.sleep(max(0.0, self.at_s))
        self.done = run_command(self.line, self.netns, {**self.env, "NETASSAY_HOOK": "change"},
                                self.timeout_s)  # fmt: skip

    def send(self, rate_pps: float | str, duration_s: float, *args: Any) -> GenResult:
        worker = threading.Thread(target=self._change, args=(self.count(),), daemon=True)
        worker.start()
        try:
            res: GenResult = self._tb.send(rate_pps, duration_s, *args)
            return res
        finally:
            worker.join()


def run(job: ReconfigJob) -> reconfig_store.StoredReconfig:
    require_root("a reconfiguration test")
    req = job.req
    with lab.open_testbed(job.name, job.testbed, "a reconfiguration test", job.note) as tb:
        peak = lab.check_peak(tb, [job.rate_pps], job.note) if job.check_peak else None
        lab.check_line_rate(tb.state, [job.rate_pps])
        with Store(job.db) as store, trials_on(tb) as ctx:
            ctx = _start(job, ctx, store, peak)
            for k in range(req.trials):
                if k:
                    time.sleep(req.wait_s)
                rec = measure_trial(job, ctx, k)
                assert job.experiment_id is not None
                store.add_trial(job.experiment_id, rec)
                job.progress(_line(job, k, rec))
    with Store(job.db, readonly=True) as store:
        assert job.experiment_id is not None
        exp = store.experiment(job.experiment_id)
        return reconfig_store.StoredReconfig(Path(job.db), exp, reconfig_store.summary(store, exp))


def _start(job: ReconfigJob, ctx: TrialContext, store: Store, peak: float | None) -> TrialContext:
    req = job.req
    config = {
        "change": req.change, "undo": req.undo, "rate": req.rate, "rate_pps": job.rate_pps,
        "rate_from": job.rate_from, "duration_s": req.duration_s, "at_s": req.at_s,
        "trials": req.trials, "wait_s": req.wait_s, "testbed": asdict(job.testbed),
        "testbed_name": job.name,
    }  # fmt: skip
    label = job.label or (
        f"reconfig {fmt_rate(job.rate_pps)} {lab.default_label(job.testbed, job.name)}"
    )
    job.experiment_id, ctx = lab.start_experiment(
        store, ctx, kind=reconfig_store.KIND, name=job.name, label=label, config=config,
        metadata={"rate_pps": job.rate_pps, "change": req.change}, peak=peak,
    )  # fmt: skip
    return ctx


def _one(job: ReconfigJob, ctx: TrialContext, k: int) -> tuple[TrialRecord, dict[str, Any]]:
    """One trial with the change, and what the change (and the undo) did."""
    req = job.req
    assert req.change is not None
    netns = ctx.tb.state.get("namespaces", {}).get("sut")
    count = frames_counted(ctx.sink, None, ctx.tb.state["namespaces"].get("sink"))
    env = testbed_dataplane.command_env(ctx.tb.state)  # a data plane's tools reach it
    bed = ChangeBed(ctx.tb, req.change, req.at_s, netns, req.duration_s + 30, count, env)
    # ChangeBed stands in for the Testbed (it delegates all but send through
    # __getattr__): no subclass of it
    rec = measure(replace(ctx, tb=bed), 0, k, job.rate_pps, req.duration_s)  # type: ignore[arg-type]
    gen = rec.counters.get("generator") or {}
    done = bed.done
    assert done is not None  # the change ran: ``send`` joins the thread that runs it
    first, last = gen.get("first_tx_ns"), gen.get("last_tx_ns")
    own: dict[str, Any] = {**kept(done)}
    problems = [f] if (f := fault("--change", done)) else []
    if first and last and "start_s" in done:
        own["start_from_traffic_s"] = round(done["start_s"] - first / 1e9, 6)
        own["end_before_traffic_end_s"] = round(last / 1e9 - done["end_s"], 6)
        if done["end_s"] > last / 1e9:
            problems.append(
                f"{quality.COMMAND_FAULT}: --change '{req.change}' was still running when the "
                "traffic ended: its loss is not all counted (give a longer --duration)"
            )
    if req.undo:
        undo = run_command(req.undo, netns, {**env, "NETASSAY_HOOK": "undo"}, 60.0)
        own["undo"] = kept(undo)
        if f := fault("--undo", undo):
            problems.append(f)
    return replace(rec, warnings=[*rec.warnings, *problems]), own


def measure_trial(job: ReconfigJob, ctx: TrialContext, k: int) -> TrialRecord:
    """Trial ``k``: repeated (``--retries``) when it is a measurement fault, the lost
    frames and the effective blocked time in ``counters["reconfig"]``."""
    discarded: list[str] = []
    for attempt in range(job.retries + 1):
        rec, own = _one(job, ctx, k)
        if not rec.excluded or attempt == job.retries or lab.signalled(rec):
            break
        discarded.append(f"attempt {attempt + 1} discarded: {rec.excluded}")
        time.sleep(job.req.wait_s)
    lost = rec.sent - rec.forwarded
    own |= {"lost": lost, "blocked_s": blocked_s(lost, job.rate_pps)}
    return replace(rec, counters={**rec.counters, "reconfig": own},
                   warnings=[*rec.warnings, *discarded], run_id=ctx.run_id)  # fmt: skip


def _line(job: ReconfigJob, k: int, rec: TrialRecord) -> str:
    r = rec.counters["reconfig"]
    flag = f" excluded: {rec.excluded}" if rec.excluded else ""
    return (
        f"[{k + 1}/{job.req.trials}] change took {r.get('seconds', 0) * 1e3:.0f} ms; lost "
        f"{r['lost']:,} of {rec.sent:,}: blocked {r['blocked_s'] * 1e3:.1f} ms{flag}"
    )

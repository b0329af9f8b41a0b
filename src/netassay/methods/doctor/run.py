"""A doctor run: can this host measure, and up to what? On the embedded router testbed
(built through the one lifecycle, under the doctor's own name) it reads the host's
settings, probes how often each CPU is taken away from a paced sender, the generator's
pacing, peak and paced reach, holds a low load where nothing may be lost, floods the
kernel router for its MRR; then, on a router capped at a known rate and one that drops
a known share, it measures both ground truths. Each check is judged (``checks``) and
stored the moment it is (``store``), each trial as it ends: a run cut short keeps what
it judged. A finished run is this host's newest doctor result (``reference``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from netassay import names, quality
from netassay.config import Config, TestbedConfig
from netassay.counters import cpu, hostcheck, threads
from netassay.methods.base import RunOptions
from netassay.methods.doctor import checks as doctor_checks
from netassay.methods.doctor import store as doctor_store
from netassay.methods.doctor.request import NAME, DoctorRequest, refuse_own_knobs
from netassay.names import validate_name
from netassay.params import declared
from netassay.shared import doctor_reference as reference
from netassay.shared import lab
from netassay.shared.flood_record import trial_of
from netassay.store.db import Store
from netassay.testbed import topology
from netassay.testbed.bed import Testbed, require_root
from netassay.testbed.environment import capture as capture_environment
from netassay.traffic.generator import BINARY as GEN_BINARY
from netassay.traffic.generator import GenResult, run_generator
from netassay.trial.engine import TrialContext, measure, trials_on
from netassay.trial.flood import flood, flood_path
from netassay.trial.record import TrialRecord
from netassay.units import fmt_rate

Line = Callable[[str], None]
PROBE_S = 0.25  # one pacing probe
CAP_OVER = 1.5  # the cap trial offers this much of the cap
MAX_PROBED_CPUS = 4  # unpinned: the CPUs probed for stalls
RETRIES = 2  # a trial that is a measurement fault is repeated as a sweep's is


def _quiet(line: str) -> None:
    return None


@dataclass(frozen=True)
class Effort:
    """How much a run measures: probes per CPU, peak probes, floods and their length,
    the cap and drop trials' lengths."""

    probes: int
    peak_probes: int
    floods: int
    flood_s: float
    cap_s: float
    drop_s: float


FULL = Effort(probes=10, peak_probes=3, floods=2, flood_s=1.0, cap_s=1.0, drop_s=2.0)
QUICK = Effort(probes=5, peak_probes=1, floods=1, flood_s=0.5, cap_s=0.5, drop_s=1.0)


@dataclass
class Doctor:
    """What a doctor run holds while it runs: what it asks, where it stores, what it
    judged so far, and every paced send on the generator's CPU (for the stall rule)."""

    req: DoctorRequest
    cfg: TestbedConfig  # the router testbed's knobs (the user's: backlog, pinning, ...)
    db: str
    name: str = "doc"
    label: str = ""
    progress: Line = _quiet
    experiment_id: int | None = None
    checks: list[doctor_checks.Judged] = field(default_factory=list)
    sends: list[doctor_checks.Send] = field(default_factory=list)
    sut_lates: list[int] = field(default_factory=list)  # probes on the SUT's CPU

    @property
    def effort(self) -> Effort:
        return QUICK if self.req.quick else FULL


C = TypeVar("C", bound=doctor_checks.Judged)
MrrCheck = doctor_checks.Check[doctor_checks.MrrFigures]
ReachCheck = doctor_checks.Check[doctor_checks.ReachFigures]


def judged(doc: Doctor, store: Store, check: C) -> C:
    """Store a judged check now and say it."""
    assert doc.experiment_id is not None
    doctor_store.record(store, doc.experiment_id, len(doc.checks), check)
    doc.checks.append(check)
    fix = f"  ({check.fix})" if check.fix and check.status != doctor_checks.PASS else ""
    doc.progress(f"  {check.status:4}  {check.name}: {check.figure}{fix}")
    return check


def _send_of(res: GenResult) -> doctor_checks.Send:
    return doctor_checks.Send(res.rate_error, res.lateness_max_ns)


def _probe_of(cpu_no: int, res: GenResult) -> doctor_checks.Probe:
    return doctor_checks.Probe(res.rate_error, res.lateness_max_ns, cpu_no)


def _trial_of(rec: TrialRecord) -> doctor_checks.TrialFigures:
    return doctor_checks.TrialFigures(
        sent=rec.sent, lost=rec.sent - rec.forwarded, forwarded=rec.forwarded,
        duration_s=rec.duration_s, excluded=rec.excluded, loss_location=rec.loss_location,
    )  # fmt: skip


def doctor_config(doc: Doctor) -> dict[str, Any]:
    return {**asdict(doc.req), "frames_per_trial": doc.req.frames_per_trial,
            "effort": asdict(doc.effort), "testbed": asdict(doc.cfg),
            "testbed_name": doc.name}  # fmt: skip


def testbed_cpus(tb: Testbed) -> list[int]:
    """The CPUs the generator and the SUT's receive work are pinned to ([]: unpinned)."""
    return sorted({c for c in (tb.gen_cpu, tb.state.get("sut_cpu")) if c is not None})


def host_checks(doc: Doctor, store: Store, tb: Testbed) -> None:
    """The host's settings, read and judged."""
    from netassay.counters.host import mitigations  # deferred: pyroute2

    doc.progress("reading the host's settings ...")
    h = hostcheck.read_host()
    used = testbed_cpus(tb)
    sut = tb.ns("sut")
    napi = hostcheck.read_napi({names.SUT_IN: sut, names.SUT_OUT: sut})
    for check in (
        doctor_checks.governor(h["governors"]), doctor_checks.smt(h["smt"]),
        doctor_checks.mitigations(mitigations()),
        doctor_checks.isolcpus(h["isolated"], used or h["cpus"]),
        doctor_checks.irqbalance(h["irqbalance"]),
        doctor_checks.clocksource(h["clocksource"]), doctor_checks.timer_slack(h["timer_slack_ns"]),
        doctor_checks.napi(h["sysctls"], napi),
    ):  # fmt: skip
        judged(doc, store, check)


def pacing_only(tb: Testbed, cpu_no: int, rate_pps: float) -> GenResult:
    """The generator pacing alone on ``cpu_no`` (it sends nothing): what that CPU alone
    costs the schedule."""
    t = tb.target
    return run_generator(t["netns"], t["dev"], t["dst_mac"], t["src"], t["dst"], rate_pps,
                         PROBE_S, size_bytes=tb.cfg.size_bytes, best_effort=True,
                         extra=["--technique", "none", "--cpu", str(cpu_no)],
                         timeout_s=PROBE_S + 30)  # fmt: skip


def _measuring(r: threads.Runs) -> bool:
    """The doctor itself, its probe and the tracer: not what takes a CPU away."""
    return r.tgid == os.getpid() or r.comm in (GEN_BINARY, threads.BINARY)


def probe_cpus(doc: Doctor, store: Store, tb: Testbed) -> None:
    """How often each CPU the testbed runs on is taken away (pacing alone; unpinned:
    the first MAX_PROBED_CPUS) and by which threads, then the generator's own sends on
    its CPU through the router (kept for the pacing check)."""
    rate, n = doc.req.low_load_pps, doc.effort.probes
    cpus = testbed_cpus(tb) or hostcheck.read_host()["cpus"][:MAX_PROBED_CPUS]
    doc.progress(
        f"probing how often CPU {','.join(map(str, cpus))} is taken away "
        f"({n} x {PROBE_S:g} s each) ..."
    )
    probes: list[doctor_checks.Probe] = []
    took: dict[int, list[threads.Taker]] = {}
    for c in cpus:
        with threads.Tracer() as tracer:
            probes += [_probe_of(c, pacing_only(tb, c, rate)) for _ in range(n)]
            took[c] = threads.takers(tracer.stop(), c, skip=_measuring)
    judged(doc, store, doctor_checks.stalls(probes, PROBE_S, took))
    sut = tb.state.get("sut_cpu")
    doc.sut_lates = [p.lateness_max_ns or 0 for p in probes if p.cpu == sut]
    doc.progress(f"pacing {fmt_rate(rate)} through the router ({n} x {PROBE_S:g} s) ...")
    doc.sends.extend(_send_of(tb.send(rate, PROBE_S)) for _ in range(n))


def false_loss(doc: Doctor, store: Store, ctx: TrialContext) -> None:
    """``runs`` trials of ``frames`` each at the low load, each stored as it ends."""
    rate, runs = doc.req.low_load_pps, doc.req.runs
    secs = doc.req.frames_per_trial / rate
    assert doc.experiment_id is not None
    trials = []
    for i in range(runs):
        doc.progress(f"false loss: trial {i + 1}/{runs}, {secs:.3g} s at {fmt_rate(rate)} ...")
        rec = measured(doc, ctx, "false loss", i, rate, secs)
        store.add_trial(doc.experiment_id, rec)
        trials.append(_trial_of(rec))
    judged(doc, store, doctor_checks.false_loss(rate, trials, runs * doc.req.frames_per_trial))


def measured(
    doc: Doctor, ctx: TrialContext, check: str, rep: int, rate_pps: float, secs: float
) -> TrialRecord:
    """One trial of ``check``, repeated (at most RETRIES times) while it is a measurement
    fault, as a sweep's is; the attempts discarded are named in its warnings, and every
    attempt's pacing is kept (its stalls happened)."""
    discarded: list[str] = []
    for attempt in range(RETRIES + 1):
        rec = measure(ctx, doctor_store.TRIAL_OF[check], rep, rate_pps, secs)
        doc.sends.append(_send_of_trial(rec))
        found = quality.faults(rec.warnings)
        if not found or attempt == RETRIES or lab.signalled(rec):
            break
        doc.progress(f"  {check}: attempt {attempt + 1} was a measurement fault; again ...")
        discarded.append(f"attempt {attempt + 1} discarded: {'; '.join(found)}")
    return replace(rec, warnings=[*rec.warnings, *discarded], run_id=ctx.run_id)


def _send_of_trial(rec: TrialRecord) -> doctor_checks.Send:
    g = rec.counters.get("generator", {})
    return doctor_checks.Send(g.get("rate_error"), g.get("lateness_max_ns"))


def reach_and_mrr(
    doc: Doctor, store: Store, tb: Testbed, ctx: TrialContext
) -> tuple[MrrCheck, ReachCheck]:
    """The generator's peak and paced reach; the kernel router's MRR (floods, each
    stored as it ends). The MRR check and the reach check."""
    e = doc.effort
    doc.progress(f"probing the generator's peak ({e.peak_probes} x 0.5 s at max) ...")
    peak = tb.probe_peak(e.peak_probes)
    doc.progress(f"probing the highest load it paces, from {fmt_rate(peak)} ...")
    reach, probe = lab.reach_probe(tb, peak, doc.progress)
    late = probe.lateness_p99_ns if probe is not None else None
    floods = []
    assert doc.experiment_id is not None
    with flood_path(tb):
        for i in range(e.floods):
            doc.progress(f"flooding the router ({i + 1}/{e.floods}, {e.flood_s:g} s) ...")
            floods.append(flood(ctx, e.flood_s))
            rec = trial_of(i, floods[-1], ctx.run_id)
            store.add_trial(
                doc.experiment_id, replace(rec, load_index=doctor_store.TRIAL_OF["router mrr"])
            )
    mrr = judged(doc, store, doctor_checks.mrr(floods))
    return mrr, judged(doc, store, doctor_checks.reach(peak, reach, mrr.value["mrr_pps"], late))


def truth_trial(
    doc: Doctor, store: Store, cfg: TestbedConfig, check: str, rate_pps: float, secs: float
) -> tuple[TrialRecord, Testbed]:
    """One trial on a router with a ground truth (``cfg``), built for it and removed
    after; stored with a run of its own (its environment)."""
    assert doc.experiment_id is not None
    with lab.open_testbed(doc.name, cfg, "doctor", doc.progress) as tb, trials_on(tb) as ctx:
        run_id = store.add_run(doc.experiment_id, capture_environment(tb), resumed=False)
        doc.progress(f"{check}: {secs:g} s at {fmt_rate(rate_pps)} ...")
        rec = measured(doc, replace(ctx, run_id=run_id), check, 0, rate_pps, secs)
        store.add_trial(doc.experiment_id, rec)
    return rec, tb


def ground_truths(doc: Doctor, store: Store) -> None:
    r, e = doc.req, doc.effort
    cap_cfg = replace(doc.cfg, sut_cap_pps=r.cap_pps)
    rec, tb = truth_trial(doc, store, cap_cfg, "ground truth: cap", CAP_OVER * r.cap_pps, e.cap_s)
    bucket = topology.cap_bucket_pkts(tb.cfg) or 0
    judged(doc, store, doctor_checks.cap_truth(r.cap_pps, bucket, _trial_of(rec)))
    drop_cfg = replace(doc.cfg, sut_drop=r.drop)
    rec, _ = truth_trial(doc, store, drop_cfg, "ground truth: drop", r.low_load_pps, e.drop_s)
    judged(doc, store, doctor_checks.drop_truth(r.drop, _trial_of(rec)))


def steal_of(before: dict[str, dict[str, int]]) -> dict[str, float]:
    return {core: row["steal"] for core, row in cpu.use(before, cpu.read()).items()}


def prepare(request: DoctorRequest, options: RunOptions, config: Config) -> Doctor:
    """The run, its request and knobs checked before anything is built; the doctor's
    own SUT: the kernel router, XDP-counted, no ground truth."""
    request.validate()
    flags = {f.name: p.flag for f, p in declared(TestbedConfig)}
    refuse_own_knobs(options.testbed_flags, flags)
    name = validate_name(options.name or NAME)
    cfg = replace(config.testbed, sut="router", sink="xdp", sut_cap_pps=None,
                  sut_cap_reverse_pps=None, sut_drop=0.0)  # fmt: skip
    return Doctor(request, cfg, lab.store_path(options.db), name, options.label)


def run(doc: Doctor) -> doctor_store.StoredDoctor:
    """Run every check, each stored as it is judged; the stored run."""
    topology.validate(doc.cfg)
    require_root("doctor")
    cpu_before = cpu.read()
    with Store(doc.db) as store:
        doctor_store.ensure(store)
        with (
            lab.open_testbed(doc.name, doc.cfg, "doctor", doc.progress) as tb,
            trials_on(tb) as ctx,
        ):
            doc.experiment_id, ctx = lab.start_experiment(
                store, ctx, kind=doctor_store.KIND, name=doc.name,
                label=doc.label or f"doctor {lab.default_label(tb.cfg, doc.name)}",
                config=doctor_config(doc), metadata={"quick": doc.req.quick}, peak=None,
            )  # fmt: skip
            queue, built = ctx.queue_pkts, tb.cfg  # its knobs as built ('auto' resolved)
            host_checks(doc, store, tb)
            probe_cpus(doc, store, tb)
            false_loss(doc, store, ctx)
            mrr, reach = reach_and_mrr(doc, store, tb, ctx)
        ground_truths(doc, store)
        judged(doc, store, doctor_checks.steal(steal_of(cpu_before)))
        pacing = judged(doc, store, doctor_checks.pacing(doc.sends, queue, doc.sut_lates))
        judged(doc, store, doctor_checks.trusted(pacing.value["stall_bound_pps"],
                                                 reach.value["reach_pps"], mrr.value["mrr_pps"],
                                                 doc.req.low_load_pps))  # fmt: skip
    result = stored(doc.db, doc.experiment_id)
    reference.remember(reference_of(result), built)
    return result


def reference_of(r: doctor_store.StoredDoctor) -> dict[str, Any]:
    """What later experiments on this host keep of a finished run (``reference``)."""
    return {"utc": r.experiment.created_utc, "verdict": r.summary.verdict,
            "trusted_pps": r.summary.trusted_pps, "experiment_id": r.experiment.id,
            "db": str(Path(r.db).resolve())}  # fmt: skip


def stored(db: str, experiment_id: int | None) -> doctor_store.StoredDoctor:
    with Store(db, readonly=True) as store:
        assert experiment_id is not None
        exp = store.experiment(experiment_id)
        found = doctor_store.stored_checks(store, exp.id)
    return doctor_store.StoredDoctor(Path(db), exp, found, doctor_store.summary(found))

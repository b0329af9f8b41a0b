"""The doctor's judgments: each figure it read or measured judged PASS, WARN or FAIL,
with the number behind it and, when it is not a pass, what to change. Pure: every
function takes figures and returns a ``Check``; ``trusted`` is the largest load a
sweep can trust on this host now, ``verdict`` the whole answer.

A check's figures as numbers (``Check.value``) are stored as JSON as they are (a row of
``doctor_checks``): each check's is a TypedDict of its own (``StealFigures`` ...
``TrustedFigures``); what the checks are given (a paced send, a probe, a trial's
totals) are frozen dataclasses.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, NotRequired, TypedDict, TypeVar

from netassay.counters.threads import Taker
from netassay.counters.threads import said as threads_said
from netassay.loads import AUTO_TOP
from netassay.quality import RATE_TOLERANCE
from netassay.trial.flood import Flood
from netassay.units import fmt_rate

PASS, WARN, FAIL = "PASS", "WARN", "FAIL"
ORDER = {PASS: 0, WARN: 1, FAIL: 2}

STALL_NS = 1_000_000  # a send 1 ms late: the CPU was taken away (a stall)
STALL_QUANTILE = 0.9  # the trusted range spares all but the worst tenth of the runs
STEAL_WARN, STEAL_FAIL = 0.01, 0.05  # share of a CPU's time the hypervisor took
CAP_PASS, CAP_WARN = 0.05, 0.10  # the cap found within 5% (10%) of the truth
DROP_Z = 3.29  # the drop's binomial 99.9% interval
DROP_WARN_Z = 2 * DROP_Z
TIMER_SLACK_NS = 50_000  # the kernel's default
FRAMES_KEPT = 0.99  # a false-loss check holds at least this share of the frames asked
SWEEP_BEYOND_MRR = 1.25  # a sweep worth running reaches a quarter past the router's MRR


V = TypeVar("V", bound=Mapping[str, object], covariant=True)


@dataclass(frozen=True)
class Check(Generic[V]):
    """One check: its name, PASS/WARN/FAIL, the figure behind it in words, what to
    change (empty on a pass) and its figures as numbers (``V``: the check's own
    TypedDict; a stored check's is its JSON as read back, ``Stored``)."""

    name: str
    status: str
    figure: str
    fix: str = ""
    value: V = field(default_factory=dict)  # type: ignore[assignment]  # {}: no figures


Judged = Check[Mapping[str, object]]  # any check as judged
Stored = Check[Mapping[str, Any]]  # a check read back from the store (its value's JSON)


@dataclass(frozen=True)
class Send:
    """One paced send (the generator's report): its achieved-rate error and its largest
    lateness (None: it did not say)."""

    rate_error: float | None
    lateness_max_ns: int | None


@dataclass(frozen=True)
class Probe(Send):
    """A pacing probe on one CPU (the generator pacing alone there)."""

    cpu: int


@dataclass(frozen=True)
class TrialFigures:
    """What a check reads of a stored trial: frames sent, lost and forwarded, how long
    it ran, why it was left out (None: used) and where frames were lost."""

    sent: int
    lost: int
    forwarded: int
    duration_s: float
    excluded: str | None
    loss_location: dict[str, int]


class NoFigures(TypedDict):
    """A check with no figure to keep (nothing read)."""


class StealFigures(TypedDict):
    steal_max: float
    per_core: dict[str, float]


class GovernorFigures(TypedDict):
    governors: dict[str, str]


class SmtFigures(TypedDict):
    smt: str


class MitigationFigures(TypedDict):
    cmdline: str | None  # the mitigations= argument as read (None: not said)


class IsolcpusFigures(TypedDict):
    isolated: list[int]


class IrqbalanceFigures(TypedDict):
    running: bool


class ClocksourceFigures(TypedDict):
    current: str


class TimerSlackFigures(TypedDict):
    ns: int


class NapiFigures(TypedDict):
    sysctls: dict[str, Any]  # as read (hostcheck.read_host)
    devices: dict[str, dict[str, Any]]  # per device: gro, threaded (hostcheck.read_napi)


class FalseLossFigures(TypedDict):
    rate_pps: float
    sent: int
    lost: int
    where: dict[str, int]
    trials: int
    excluded: int


class CpuStalls(TypedDict):
    """One CPU's probes: how many, how many stalled, the largest lateness and rate
    error, stalls per second probed and the threads that took it."""

    probes: int
    stalled: int
    lateness_max_ns: int
    rate_error_max: float
    stalls_per_s: float
    takers: list[Taker]


class StallFigures(TypedDict):
    per_cpu: dict[str, CpuStalls]
    probe_s: float


class PacingFigures(TypedDict):
    rate_error_max: float
    lateness_max_ns: int
    stall_q90_ns: int
    gen_stall_q90_ns: int
    sut_stall_q90_ns: int
    stall_bound_pps: float | None
    queue_pkts: int | None
    sends: int


class ReachFigures(TypedDict):
    peak_pps: float
    reach_pps: float
    lateness_p99_ns: float | None
    reach_over_mrr: NotRequired[float]


class MrrFigures(TypedDict):
    mrr_pps: int | None  # the floods' median
    per_run_pps: list[int]
    saturated: bool


class CapFigures(TypedDict):
    cap_pps: float
    bucket_pkts: int
    forwarded: int
    truth: float
    error: float
    excluded: str | None


class DropFigures(TypedDict):
    p: float
    sent: int
    dropped: int
    lost_elsewhere: int
    z: float
    excluded: str | None


class TrustedFigures(TypedDict):
    trusted_pps: float
    sweep_to_pps: float
    stall_bound_pps: float | None
    reach_pps: float
    mrr_pps: float | None


def verdict(checks: Sequence[Judged]) -> str:
    """FAIL if any check fails, WARN if any warns, else PASS."""
    return max((c.status for c in checks), key=ORDER.__getitem__, default=PASS)


# -- the host's settings -------------------------------------------------------------------
def steal(per_core: dict[str, float]) -> Check[StealFigures]:
    """CPU steal: the largest share of a CPU's time the hypervisor gave to others."""
    worst = max(per_core.values(), default=0.0)
    core = max(per_core, key=per_core.__getitem__, default="-")
    fig = f"{worst:.1%} of {core}'s time taken by the hypervisor"
    value = StealFigures(steal_max=worst, per_core=per_core)
    if worst <= STEAL_WARN:
        return Check("cpu steal", PASS, fig, value=value)
    status = WARN if worst <= STEAL_FAIL else FAIL
    fix = "run on dedicated vCPUs (no overcommit) or bare metal"
    return Check("cpu steal", status, fig, fix, value)


def governor(governors: dict[str, str]) -> Check[GovernorFigures] | Check[NoFigures]:
    found = sorted(set(governors.values()))
    if not found:
        return Check("cpu governor", PASS, "no cpufreq (the hypervisor sets the clock)", "",
                     NoFigures())  # fmt: skip
    fig = ", ".join(found)
    if found == ["performance"]:
        return Check("cpu governor", PASS, fig, value=GovernorFigures(governors=governors))
    fix = "cpupower frequency-set -g performance"
    return Check("cpu governor", WARN, fig, fix, GovernorFigures(governors=governors))


def smt(state: str) -> Check[SmtFigures]:
    if state == "on":
        fix = "put the generator and the SUT on different cores, or echo off > smt/control"
        return Check("smt", WARN, "on: siblings share a core", fix, SmtFigures(smt=state))
    return Check("smt", PASS, state, value=SmtFigures(smt=state))


def mitigations(m: dict[str, Any]) -> Check[MitigationFigures]:
    """Recorded, not held against the host: they cost speed, not trust (compare
    results of hosts with the same setting)."""
    vulns = m.get("vulnerabilities", {})
    mitigated = sum(v.startswith("Mitigation") for v in vulns.values())
    fig = f"{m.get('cmdline', '?')}; {mitigated} of {len(vulns)} issues mitigated"
    return Check("mitigations", PASS, fig, value=MitigationFigures(cmdline=m.get("cmdline")))


def isolcpus(isolated: list[int], used: list[int]) -> Check[IsolcpusFigures]:
    """The CPUs the generator and the SUT run on, kept from other tasks or not."""
    missing = [c for c in used if c not in isolated]
    fig = f"isolated: {','.join(map(str, isolated)) or 'none'}; used: {','.join(map(str, used))}"
    if not missing:
        return Check("isolcpus", PASS, fig, value=IsolcpusFigures(isolated=isolated))
    fix = f"boot with isolcpus={','.join(map(str, used))} (other tasks stay off them)"
    return Check("isolcpus", WARN, fig, fix, IsolcpusFigures(isolated=isolated))


def irqbalance(running: bool) -> Check[IrqbalanceFigures]:
    if running:
        fix = "systemctl stop irqbalance (it moves interrupts during a run)"
        return Check("irqbalance", WARN, "running", fix, IrqbalanceFigures(running=True))
    return Check("irqbalance", PASS, "not running", value=IrqbalanceFigures(running=False))


def clocksource(c: dict[str, Any]) -> Check[ClocksourceFigures]:
    cur = c.get("current", "")
    fig = f"{cur or '?'} (available: {' '.join(c.get('available', [])) or '?'})"
    if cur in ("tsc", "kvm-clock", "arch_sys_counter"):
        return Check("clocksource", PASS, fig, value=ClocksourceFigures(current=cur))
    fix = "echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource"
    return Check(
        "clocksource", WARN, fig + ": slow clock reads", fix, ClocksourceFigures(current=cur)
    )


def timer_slack(ns: int | None) -> Check[TimerSlackFigures] | Check[NoFigures]:
    if ns is None:
        return Check("timer slack", PASS, "unknown", "", NoFigures())
    fig = f"{ns / 1e3:g} us"
    if ns <= TIMER_SLACK_NS:
        return Check("timer slack", PASS, fig, value=TimerSlackFigures(ns=ns))
    fix = "run netassay from a shell whose timer slack is the default 50 us"
    return Check("timer slack", WARN, fig + ": late wake-ups", fix, TimerSlackFigures(ns=ns))


def napi(sysctls: dict[str, Any], devices: dict[str, dict[str, Any]]) -> Check[NapiFigures]:
    """NAPI budgets below the kernel's defaults starve receive processing; GRO and
    threaded NAPI on the testbed's veths are recorded (the testbed sets them)."""
    budget, weight = sysctls.get("net.core.netdev_budget"), sysctls.get("net.core.dev_weight")
    gro = ",".join(f"{d} {r.get('gro')}" for d, r in sorted(devices.items()))
    threaded = [d for d, r in sorted(devices.items()) if r.get("threaded")]
    fig = (
        f"budget {budget}, dev_weight {weight}, busy_poll {sysctls.get('net.core.busy_poll')}; "
        f"gro {gro or '-'}; threaded NAPI {','.join(threaded) or 'none'}"
    )
    value = NapiFigures(sysctls=sysctls, devices=devices)
    low = [
        k for k, v, d in (("netdev_budget", budget, 300), ("dev_weight", weight, 64))
        if isinstance(v, int) and v < d
    ]  # fmt: skip
    if low:
        fix = f"sysctl net.core.{low[0]}= back to the kernel's default"
        return Check("napi/gro", WARN, fig + f" ({', '.join(low)} below default)", fix, value)
    return Check("napi/gro", PASS, fig, value=value)


# -- what was measured ---------------------------------------------------------------------
def false_loss(
    rate_pps: float, trials: Sequence[TrialFigures], wanted: float
) -> Check[FalseLossFigures]:
    """Loss at a low load, where none is expected: any frame lost in a used trial fails;
    trials left out as measurement faults, or fewer frames than ``wanted``, warn."""
    used = [t for t in trials if not t.excluded]
    sent = sum(t.sent for t in used)
    lost = sum(t.lost for t in used)
    where: dict[str, int] = {}
    for t in used:
        for k, v in t.loss_location.items():
            if v:
                where[k] = where.get(k, 0) + v
    fig = f"{lost:,} of {sent:,} lost at {fmt_rate(rate_pps)}"
    value = FalseLossFigures(rate_pps=rate_pps, sent=sent, lost=lost, where=where,
                             trials=len(trials), excluded=len(trials) - len(used))  # fmt: skip
    if lost > 0:
        at = ", ".join(f"{k} {v:,}" for k, v in sorted(where.items()))
        fix = "loss with no cause on the path: keep other work off the SUT's CPU, raise --backlog"
        return Check("false loss", FAIL, f"{fig} (at {at})", fix, value)
    if len(used) < len(trials) or sent < FRAMES_KEPT * wanted:
        fix = "a trial was a measurement fault: run again on a quieter host"
        left = f"{fig}; {len(trials) - len(used)} of {len(trials)} trial(s) left out"
        return Check("false loss", WARN, left, fix, value)
    return Check("false loss", PASS, fig, value=value)


def stalls(
    probes: Sequence[Probe],
    probe_s: float,
    takers: dict[int, list[Taker]] | None = None,
) -> Check[StallFigures]:
    """How often each CPU is taken away from a paced sender (pacing alone, one series of
    probes per CPU): probes with a send ``STALL_NS`` late or more, the largest lateness,
    the achieved-rate error; and who took each CPU meanwhile (``takers``: per CPU, the
    threads that ran on it, most time first, as ``counters.threads`` tells them)."""
    on: dict[int, list[Probe]] = {}
    for p in probes:
        on.setdefault(p.cpu, []).append(p)
    per = {c: _cpu_stalls(ps, probe_s, (takers or {}).get(c, [])) for c, ps in on.items()}
    fig = "; ".join(
        f"cpu{c} {r['stalled']}/{r['probes']} probes stalled, max "
        f"{r['lateness_max_ns'] / 1e6:.2f} ms" + _taken_by(r["takers"])
        for c, r in sorted(per.items())
    )  # fmt: skip
    value = StallFigures(per_cpu={str(c): r for c, r in per.items()}, probe_s=probe_s)
    if not any(r["stalled"] for r in per.values()):
        return Check("cpu stalls", PASS, fig, value=value)
    kernel = sorted({t["comm"] for r in per.values() if r["stalled"] for t in r["takers"]
                     if t["kernel"] and t["max_ms"] * 1e6 >= STALL_NS})  # fmt: skip
    fix = "keep other work off these CPUs (isolcpus), or use a host with dedicated vCPUs"
    if kernel:
        fix = (
            f"kernel threads run here for up to milliseconds at a time ({', '.join(kernel)}): "
            "on a host with CPUs to spare, bind them away from the testbed's (their "
            "affinity, rcu_nocbs=, isolcpus=); here a load is trusted only where the "
            "'pacing' check says"
        )
    return Check("cpu stalls", WARN, fig, fix, value)


def _cpu_stalls(probes: Sequence[Probe], probe_s: float, takers: list[Taker]) -> CpuStalls:
    """One CPU's probes summed up."""
    lates = [p.lateness_max_ns or 0 for p in probes]
    stalled = sum(late >= STALL_NS for late in lates)
    return CpuStalls(
        probes=len(probes),
        stalled=stalled,
        lateness_max_ns=max([0, *lates]),
        rate_error_max=max([0.0, *(abs(p.rate_error or 0.0) for p in probes)]),
        stalls_per_s=stalled / (len(probes) * probe_s),
        takers=takers,
    )


def _taken_by(rows: Sequence[Taker]) -> str:
    if not rows:
        return ""
    return " (held by " + threads_said(rows) + ")"


def quantile_max(lates: Sequence[int]) -> int:
    """The largest of ``lates`` but the worst tenth (``STALL_QUANTILE``); 0 for none."""
    ordered = sorted(lates)
    return ordered[max(math.ceil(STALL_QUANTILE * len(ordered)) - 1, 0)] if ordered else 0


def pacing(
    sends: Sequence[Send], queue_pkts: int | None, sut_lates: Sequence[int] = ()
) -> Check[PacingFigures]:
    """The generator's pacing on its CPU over every paced send of the run (the largest
    achieved-rate error and lateness), and the rate the stalls allow. The trials' stall
    rule (``quality.stall_warning``) spoils a trial at rate R when R x its largest
    lateness reaches the smallest queue; the SUT's CPU taken away for as long fills its
    backlog as much, with loss the trial would count as the SUT's. Below queue / L,
    where L is the longer of both stalls in all but the worst tenth of the runs
    (``STALL_QUANTILE``; ``sut_lates``: the largest lateness of each probe on the SUT's
    CPU), at most about one trial in ten meets such a stall here now."""
    err = max((abs(s.rate_error or 0.0) for s in sends), default=0.0)
    gen = [int(s.lateness_max_ns or 0) for s in sends]
    late = max(gen, default=0)
    typical = max(quantile_max(gen), quantile_max(sut_lates))
    bound = stall_bound(typical, queue_pkts)
    fig = (
        f"rate error max {err:.3%}; lateness max {late / 1e6:.2f} ms; stalls of "
        f"{quantile_max(gen) / 1e6:.2f} ms (generator's CPU) and "
        f"{quantile_max(sut_lates) / 1e6:.2f} ms (SUT's) in 9 of 10 runs: trusted below "
        f"{fmt_rate(bound)} (queue {queue_pkts or '?'} packets)"
    )
    value = PacingFigures(rate_error_max=err, lateness_max_ns=late, stall_q90_ns=typical,
                          gen_stall_q90_ns=quantile_max(gen),
                          sut_stall_q90_ns=quantile_max(sut_lates), stall_bound_pps=bound,
                          queue_pkts=queue_pkts, sends=len(sends))  # fmt: skip
    if err > RATE_TOLERANCE:
        fix = "the generator missed a paced load (its trial is left out): free its CPU"
        return Check("pacing", WARN, fig, fix, value)
    return Check("pacing", PASS, fig, value=value)


def stall_bound(lateness_max_ns: float, queue_pkts: int | None) -> float | None:
    """The largest rate whose catch-up burst after a stall of ``lateness_max_ns`` stays
    below the queue (None: no stall seen, or no queue known)."""
    if not lateness_max_ns or not queue_pkts:
        return None
    return queue_pkts / (lateness_max_ns / 1e9)


def reach(
    peak_pps: float, reach_pps: float, mrr_pps: float | None, p99_ns: float | None = None
) -> Check[ReachFigures]:
    """The generator's peak and the highest load it paces now (``p99_ns``: how late its
    frames were at that load, p99); it must reach past the router's MRR, by AUTO_TOP
    (the top of a sweep given no loads), for a sweep to see saturation and what follows."""
    late = f" (p99 lateness {p99_ns / 1e3:.3g} us)" if p99_ns is not None else ""
    fig = f"peak {fmt_rate(peak_pps)}, paces up to {fmt_rate(reach_pps)}{late}"
    value = ReachFigures(peak_pps=peak_pps, reach_pps=reach_pps, lateness_p99_ns=p99_ns)
    if not mrr_pps:
        return Check("generator reach", PASS, fig, value=value)
    ratio = reach_pps / mrr_pps
    value["reach_over_mrr"] = ratio
    if reach_pps < mrr_pps:
        fix = "a paced sweep cannot pass the router's MRR here: use flood, or a faster host"
        return Check("generator reach", WARN, fig + f" < MRR {fmt_rate(mrr_pps)}", fix, value)
    fig += f" = {ratio:.2f}x the MRR"
    if ratio < AUTO_TOP:
        fix = (
            f"a sweep passes the MRR but not {AUTO_TOP:g}x it: its loads above "
            f"{fmt_rate(reach_pps)} are not measured here"
        )
        return Check("generator reach", WARN, fig, fix, value)
    return Check("generator reach", PASS, fig, value=value)


def mrr(floods: Sequence[Flood]) -> Check[MrrFigures]:
    rates = sorted(f["forwarded_pps"] for f in floods)
    med = rates[len(rates) // 2] if rates else None
    fig = f"kernel router forwards {fmt_rate(med)} at most (flood, {len(rates)} run(s))"
    value = MrrFigures(mrr_pps=med, per_run_pps=rates,
                       saturated=all(f["saturated"] for f in floods))  # fmt: skip
    if not floods:
        return Check("router mrr", FAIL, "no flood ran", "see the error above", value)
    if not value["saturated"]:
        fix = "the router lost nothing: its MRR is higher (a lower bound only)"
        return Check("router mrr", WARN, fig + " (a lower bound)", fix, value)
    return Check("router mrr", PASS, fig, value=value)


def cap_truth(cap_pps: float, bucket_pkts: int, t: TrialFigures) -> Check[CapFigures]:
    """The ground-truth cap: what the router capped at ``cap_pps`` (a policer whose
    bucket lets ``bucket_pkts`` more through at the start) forwarded while the trial
    sent, within CAP_PASS of the truth, ``cap x duration + bucket``."""
    truth = cap_pps * t.duration_s + bucket_pkts
    err = t.forwarded / truth - 1 if truth else 0.0
    fig = (
        f"{t.forwarded:,} forwarded, truth {truth:,.0f} ({fmt_rate(cap_pps)} x "
        f"{t.duration_s:.3g} s + a {bucket_pkts:,}-packet bucket): {err:+.1%}"
    )
    value = CapFigures(cap_pps=cap_pps, bucket_pkts=bucket_pkts, forwarded=t.forwarded,
                       truth=truth, error=err, excluded=t.excluded)  # fmt: skip
    if t.excluded:
        fix = "the trial was a measurement fault; run again on a quieter host"
        return Check("ground truth: cap", WARN, fig + " (left out)", fix, value)
    status = PASS if abs(err) <= CAP_PASS else WARN if abs(err) <= CAP_WARN else FAIL
    fix = "" if status == PASS else "the cap is not where it is set: check the SUT's policer"
    return Check("ground truth: cap", status, fig, fix, value)


def drop_truth(p: float, t: TrialFigures) -> Check[DropFigures]:
    """The ground-truth drop: what the router's drop rule (loss at ``sut_forward``)
    dropped of the frames sent, within the binomial 99.9% interval of ``p``. Loss
    anywhere else is not the rule's: it warns."""
    n = t.sent
    dropped = int(t.loss_location.get("sut_forward", 0))
    other = t.lost - dropped
    sd = math.sqrt(max(n * p * (1 - p), 1e-12))
    z = (dropped - n * p) / sd
    fig = f"{dropped / n if n else 0:.3%} dropped of {n:,} against a {p:.2%} drop (z {z:+.1f})"
    value = DropFigures(p=p, sent=n, dropped=dropped, lost_elsewhere=other, z=z,
                        excluded=t.excluded)  # fmt: skip
    if t.excluded:
        fix = "the trial was a measurement fault; run again on a quieter host"
        return Check("ground truth: drop", WARN, fig + " (left out)", fix, value)
    status = PASS if abs(z) <= DROP_Z else WARN if abs(z) <= DROP_WARN_Z else FAIL
    fix = "" if status == PASS else "the drop rule does not drop its share: check the SUT's nft"
    if status == PASS and other:
        status, fix = WARN, "frames lost beside the drop rule: see false loss"
        fig += f"; {other:,} lost elsewhere"
    return Check("ground truth: drop", status, fig, fix, value)


def trusted(
    bound_pps: float | None, reach_pps: float, mrr_pps: float | None, low_pps: float
) -> Check[TrustedFigures]:
    """The largest load a sweep can trust on this host now: below the stall rule's bound
    and the generator's paced reach. PASS when it covers the router's MRR (a sweep sees
    saturation in it), WARN when not, FAIL when not even the low load is in it."""
    top = min(x for x in (bound_pps, reach_pps) if x is not None)
    sweep_to = min(top, SWEEP_BEYOND_MRR * mrr_pps) if mrr_pps else top
    fig = f"trusted up to {fmt_rate(top)}; sweep up to {fmt_rate(sweep_to)}"
    value = TrustedFigures(trusted_pps=top, sweep_to_pps=sweep_to, stall_bound_pps=bound_pps,
                           reach_pps=reach_pps, mrr_pps=mrr_pps)  # fmt: skip
    by_reach = bound_pps is None or reach_pps <= bound_pps
    fix = (
        "the generator paces no higher here: free its CPU (isolcpus), or a faster host"
        if by_reach
        else "stalls limit it: a deeper --backlog takes their bursts; keep other work off the CPUs"
    )
    if top <= low_pps:
        return Check("trusted range", FAIL, fig + " (not even the low load)", fix, value)
    if mrr_pps and top < mrr_pps:
        return Check("trusted range", WARN, fig + f" < MRR {fmt_rate(mrr_pps)}", fix, value)
    return Check("trusted range", PASS, fig, value=value)

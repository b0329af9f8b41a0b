"""The sweep: trials load by load, K repetitions, each stored the moment it ends.

A crash loses at most the trial in progress; ``resume`` continues the newest unfinished
sweep in the store with its own stored plan and testbed knobs, never repeating a trial.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from netassay import quality
from netassay.config import TestbedConfig, load_config
from netassay.counters import environment
from netassay.errors import GeneratorError, UsageError
from netassay.methods.sweep.plan import Plan, eta_s
from netassay.names import validate_name
from netassay.store.db import Experiment, Store
from netassay.testbed import state as S
from netassay.testbed import topology as T
from netassay.testbed.bed import Testbed, config_from_state, require_root
from netassay.testbed.environment import capture as capture_environment
from netassay.testbed.linerate import LineRate, refuse_above
from netassay.trial.engine import SOURCE, TrialContext, measure, trials_on
from netassay.trial.record import TrialRecord
from netassay.units import fmt_duration, fmt_rate, parse_duration, parse_pause, parse_rates

log = logging.getLogger("netassay.campaign")
PEAK_MARGIN = 0.98  # loads above 98% of the measured peak are refused


@dataclass
class Sweep:
    """What a sweep runs: the plan, the testbed knobs and where results go."""

    plan: Plan
    testbed: TestbedConfig
    db: str
    name: str = "lab"
    label: str = ""
    check_peak: bool = True
    retries: int = 2  # repeat a trial the generator could not pace, at most this often
    progress: Callable[[str], None] | None = None
    experiment_id: int | None = None
    stored: int = 0
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SweepRequest:
    """What a user asked for on the command line, as given (None: not given)."""

    rates: str | None = None
    runs: int | None = None
    duration: str | None = None
    settle: str | None = None
    db: str | None = None
    resume: bool = False
    experiment: int | None = None
    label: str = ""
    check_peak: bool = True
    retries: int = 2
    name: str | None = None
    testbed_flags: dict[str, Any] = field(default_factory=dict)


def check_request(
    name: str | None, retries: int, experiment: int | None, resume: bool, what: str
) -> None:
    """What every method's request must get right before anything is touched (a sweep's
    and a search's alike): the testbed name, the repeats of a faulty trial, and
    --experiment only with --resume."""
    if name is not None:
        validate_name(name)
    if not 0 <= retries <= 10:
        raise UsageError(f"bad --retries {retries}", "0..10 repeats", "e.g. 2")
    if experiment is not None and not resume:
        raise UsageError(
            "--experiment needs --resume", f"it names the {what} to continue", "add --resume"
        )


def named_testbed(
    testbed: str | None, name: str | None, flags: dict[str, Any], loads: tuple[str, str | None]
) -> str | None:
    """The testbed a sweep or a search runs on: ``--testbed`` names one that exists (an
    external testbed's knobs were set when it was registered). ``loads``: the flag and
    its value (--rates, --max-load), refused now when above the ports' line rate."""
    if testbed is None:
        return name
    validate_name(testbed)
    if name is not None and name != testbed:
        raise UsageError(f"--name {name} and --testbed {testbed} differ", "", "give one of them")
    st = S.require_state(testbed)
    if flags and T.kind_of(st) == "external":
        raise UsageError(
            f"testbed '{testbed}' is external: {', '.join(sorted(flags))} cannot be given here",
            "its frame size, flows and sink were set when it was registered",
            "drop those flags, or register it again with them",
        )
    flag, value = loads
    if value is not None:
        check_line_rate(st, parse_rates(value), "--max-load" if flag == "--max-load" else "load")
    return testbed


def prepare(req: SweepRequest, config_file: Path | None = None) -> Sweep:
    """Turn a request into the Sweep to run: a resume takes the stored plan, knobs and
    testbed; a new sweep takes defaults < TOML < flags, and the knobs of a testbed of
    that name that is already up when no testbed flag is given."""
    check_request(req.name, req.retries, req.experiment, req.resume, "sweep")
    if req.resume:
        if req.db is None:
            raise UsageError("--resume needs --db", "it names the store to resume", "add --db")
        if req.testbed_flags:
            raise UsageError(
                f"--resume takes no testbed flags ({', '.join(sorted(req.testbed_flags))})",
                "a resumed sweep runs with the knobs it started with",
                "drop those flags",
            )
        sw = resume_sweep(req.db, req.name, req.experiment)
    else:
        sw = _new_sweep(req, config_file)
    sw.retries = req.retries
    T.validate(sw.testbed)
    return sw


def _new_sweep(req: SweepRequest, config_file: Path | None) -> Sweep:
    over: dict[str, Any] = {"rates": req.rates, "runs": req.runs, "db": req.db}
    if req.duration is not None:
        over["duration_s"] = parse_duration(req.duration)
    if req.settle is not None:
        over["settle_s"] = parse_pause(req.settle)
    over = {k: v for k, v in over.items() if v is not None}
    cfg = load_config(config_file, overrides={"testbed": req.testbed_flags, "sweep": over})
    plan = Plan(
        tuple(parse_rates(cfg.sweep.rates)), cfg.sweep.runs, cfg.sweep.duration_s,
        cfg.sweep.settle_s,
    )  # fmt: skip
    name = req.name or "lab"
    testbed = cfg.testbed
    st = S.read_state(name)
    if st is not None and not req.testbed_flags:  # sweep a running testbed with its knobs
        testbed = config_from_state(st)
    return Sweep(plan, testbed, cfg.sweep.db, name, req.label, req.check_peak)


def sweep_config(sw: Sweep) -> dict[str, Any]:
    return {
        "rates_pps": list(sw.plan.rates_pps),
        "runs": sw.plan.runs,
        "duration_s": sw.plan.duration_s,
        "settle_s": sw.plan.settle_s,
        "testbed": asdict(sw.testbed),
        "testbed_name": sw.name,
    }


def sweep_metadata(cfg: TestbedConfig, env: dict[str, Any]) -> dict[str, Any]:
    if T.kind_of(cfg) == "external":
        return external_metadata(cfg, env)
    return {
        "class": {"router": "routing", "xdp-router": "ebpf"}.get(cfg.sut, "bridging"),
        "sut": cfg.sut,
        "pinning": cfg.pinning,
        "environment": "netns",
        "kernel": env.get("kernel", ""),
        "ring": cfg.backlog if cfg.backlog is not None else env.get("netdev_max_backlog"),
        "frame_size_bytes": cfg.size_bytes,
        "ip_version": cfg.ip_version,
        "flows": cfg.flows,
        "sut_drop": cfg.sut_drop,
        "sut_cap_pps": cfg.sut_cap_pps,
        "testbed": "embedded",
    }


def external_metadata(cfg: Any, env: dict[str, Any]) -> dict[str, Any]:
    """An external testbed's experiment: the SUT is whatever sits between its ports."""
    ext = env.get("external", {})
    rx_rings = ext.get("ports", {}).get("rx", {}).get("rings", {}).get("current", {})
    return {
        "class": "external",
        "sut": "external",
        "pinning": "none",
        "environment": "external",
        "kernel": env.get("kernel", ""),
        "ring": rx_rings.get("RX", ""),  # the rx NIC's receive ring, when it has one
        "frame_size_bytes": cfg.size_bytes,
        "ip_version": cfg.ip_version,
        "flows": cfg.flows,
        "sut_drop": 0.0,
        "sut_cap_pps": None,
        "testbed": "external",
        "ports": f"{cfg.tx} -> {cfg.rx}",
        "line_rate_pps": (ext.get("line_rate") or {}).get("pps"),
    }


def check_line_rate(state: dict[str, Any], rates_pps: Any, what: str = "load") -> None:
    """Refuse loads above the line rate of a testbed (its ``state``) whose ports report
    a link speed (an external testbed's NICs; virtual ports report none: nothing is
    refused there)."""
    line = state.get("line_rate")
    if line:
        lr = LineRate(line.get("speed_mbps"), int(line["size_bytes"]), line.get("limited_by"))
        refuse_above(list(rates_pps), lr, what)


def _plan_of(exp: Experiment) -> Plan:
    c = exp.config
    return Plan(tuple(c["rates_pps"]), int(c["runs"]), float(c["duration_s"]), c["settle_s"])


def _is_ours(exp: Experiment) -> bool:
    return exp.kind == "sweep" and exp.source == SOURCE


def unfinished(
    store: Store, experiment_id: int | None = None
) -> tuple[Experiment, Plan, TestbedConfig] | None:
    """The sweep to resume: ``experiment_id`` when given (it must be an unfinished
    netassay sweep), else the newest netassay sweep that still has trials to run."""
    if experiment_id is not None:
        exp = store.experiment(experiment_id)
        if not _is_ours(exp):
            raise UsageError(
                f"experiment {experiment_id} in {store.path} is not a netassay sweep",
                f"it is a '{exp.kind}' from '{exp.source}'",
                "give the id of a sweep (see 'netassay assess --json')",
            )
        if not _plan_of(exp).remaining(store.done_trials(exp.id)):
            raise UsageError(
                f"experiment {experiment_id} is complete",
                "every planned trial is stored",
                "start a new sweep without --resume",
            )
        return exp, _plan_of(exp), config_from_state({"config": exp.config["testbed"]})
    for exp in reversed(list(store.experiments())):
        if _is_ours(exp) and _plan_of(exp).remaining(store.done_trials(exp.id)):
            return exp, _plan_of(exp), config_from_state({"config": exp.config["testbed"]})
    return None


def resume_sweep(db: str, name: str | None = None, experiment_id: int | None = None) -> Sweep:
    """Rebuild the Sweep to resume from ``db``, on the testbed it ran on. A ``name``
    other than the stored testbed's is refused (it would leave that testbed orphaned)."""
    with Store(db, create=False) as store:
        found = unfinished(store, experiment_id)
    if found is None:
        raise UsageError(
            f"nothing to resume in {db}",
            "every sweep in it is complete (or it has none)",
            "start a new sweep without --resume",
        )
    exp, plan, cfg = found
    stored = exp.config.get("testbed_name", "lab")
    if name is not None and name != stored:
        raise UsageError(
            f"--name {name} conflicts with the sweep to resume",
            f"experiment {exp.id} ran on testbed '{stored}'",
            "drop --name (resume uses the sweep's own testbed)",
        )
    sw = Sweep(plan, cfg, db, stored, exp.label)
    sw.experiment_id = exp.id
    return sw


def open_testbed(sw: Sweep) -> Testbed:
    """Attach to a testbed left up by ``testbed up`` (same knobs), else build one."""
    return open_named(sw.name, sw.testbed, "a sweep")


def open_named(name: str, cfg: TestbedConfig, what: str) -> Testbed:
    """Attach to the testbed ``name`` left up by ``testbed up`` when its knobs are
    ``cfg``, else build one (removed at the end); ``what`` runs on it (for the error)."""
    st = S.read_state(name)
    if st is None:
        return Testbed(name, cfg)
    have = config_from_state(st)
    if have != cfg:
        diff = [k for k, v in asdict(cfg).items() if asdict(have).get(k) != v]
        raise UsageError(
            f"testbed '{name}' is up with other knobs ({', '.join(diff)})",
            f"{what} runs on the testbed as it is",
            f"bring it down ('netassay testbed down --name {name}') or drop those flags",
        )
    return Testbed.attach(name)


def check_peak(tb: Testbed, plan: Plan) -> float:
    check_line_rate(tb.state, plan.rates_pps)
    peak = tb.probe_peak()
    top = max(plan.rates_pps)
    if top > PEAK_MARGIN * peak:
        raise GeneratorError(
            f"load {fmt_rate(top)} is above what the generator can send here",
            f"its peak through this testbed is {fmt_rate(peak)}",
            f"keep loads at or below {fmt_rate(PEAK_MARGIN * peak)} (or use --no-peak-check)",
        )
    return peak


def default_label(cfg: Any, name: str) -> str:
    """An experiment's label when the user gave none: what was measured, on what."""
    if T.kind_of(cfg) == "external":
        return f"external {name} IPv{cfg.ip_version} {cfg.size_bytes}B"
    return f"{cfg.sut} {cfg.pinning} IPv{cfg.ip_version} {cfg.size_bytes}B netns"


def _new_experiment(store: Store, sw: Sweep, env: dict[str, Any]) -> int:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    key = f"sweep-{sw.name}-{stamp}-{secrets.token_hex(3)}"
    label = sw.label or default_label(sw.testbed, sw.name)
    exp_id, _ = store.add_experiment(
        key=key,
        kind="sweep",
        source=SOURCE,
        label=label,
        config=sweep_config(sw),
        metadata=sweep_metadata(sw.testbed, env),
        environment=env,
    )
    return exp_id


def run(sw: Sweep) -> None:
    """Run (or resume) the sweep; every trial is stored as soon as it ends."""
    T.validate(sw.testbed)
    require_root("a sweep")
    with open_testbed(sw) as tb:
        check_line_rate(tb.state, sw.plan.rates_pps)
        peak = check_peak(tb, sw.plan) if sw.check_peak and sw.experiment_id is None else None
        with Store(sw.db) as store, trials_on(tb) as ctx:
            _loop(sw, _start(sw, ctx, store, peak), store)


def _start(sw: Sweep, ctx: TrialContext, store: Store, peak: float | None) -> TrialContext:
    """Create the experiment (or take the one resumed) and record this run with the
    environment as it is now: a resume after a reboot or a change shows in the store."""
    env = capture_environment(ctx.tb)
    if peak is not None:
        env["generator_peak_pps"] = peak
    resumed = sw.experiment_id is not None
    if sw.experiment_id is None:
        sw.experiment_id = _new_experiment(store, sw, env)
    else:
        changed = environment.changes(store.experiment(sw.experiment_id).environment, env)
        if changed:
            env["changed_since_start"] = changed
            msg = f"the environment changed since this sweep started: {'; '.join(changed)}"
            sw.warnings.append(msg)
            log.warning(msg)
            if sw.progress:
                sw.progress(f"note: {msg}")
    return replace(ctx, run_id=store.add_run(sw.experiment_id, env, resumed=resumed))


def _measure_with_retries(sw: Sweep, ctx: TrialContext, i: int, k: int, rate: float) -> TrialRecord:
    """One trial; repeated (at most ``sw.retries`` times) when it is a measurement fault
    (never when a signal cut it short). The stored record names every discarded attempt
    and why."""
    discarded: list[str] = []
    for attempt in range(sw.retries + 1):
        if attempt:
            time.sleep(sw.plan.settle_s)
        rec = measure(ctx, i, k, rate, sw.plan.duration_s)
        faults = quality.faults(rec.warnings)
        if not faults or attempt == sw.retries or _signalled(rec):
            break
        lost = rec.sent - rec.forwarded
        discarded.append(f"attempt {attempt + 1} discarded ({lost} lost): {'; '.join(faults)}")
    return replace(rec, warnings=[*rec.warnings, *discarded], run_id=ctx.run_id)


def _signalled(rec: TrialRecord) -> bool:
    return bool(rec.counters.get("generator", {}).get("stopped_by_signal"))


def _loop(sw: Sweep, ctx: TrialContext, store: Store) -> None:
    assert sw.experiment_id is not None
    done = store.done_trials(sw.experiment_id)
    todo = sw.plan.remaining(done)
    total = len(sw.plan.trials())
    t0 = time.monotonic()
    for n, (i, k, rate) in enumerate(todo):
        if n and sw.plan.settle_s:
            time.sleep(sw.plan.settle_s)
        rec = _measure_with_retries(sw, ctx, i, k, rate)
        store.add_trial(sw.experiment_id, rec)  # committed now: a crash loses only the next
        sw.stored += 1
        if sw.progress:
            elapsed = time.monotonic() - t0
            left = eta_s(elapsed, n + 1, len(todo), sw.plan)
            lost = rec.sent - rec.forwarded
            flag = " excluded" if rec.excluded else (" !" if rec.warnings else "")
            sw.progress(
                f"[{len(done) + n + 1}/{total}] load {i + 1}/{len(sw.plan.rates_pps)} "
                f"{fmt_rate(rate)} run {k + 1}/{sw.plan.runs}: sent {rec.sent} "
                f"lost {lost} (PLR {lost / max(rec.sent, 1):.2e}){flag}; "
                f"ETA {fmt_duration(left)}"
            )

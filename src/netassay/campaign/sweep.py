"""The sweep: trials load by load, K repetitions, each stored the moment it ends.

A crash loses at most the trial in progress; ``resume`` continues the newest unfinished
sweep in the store with its own stored plan and testbed knobs, never repeating a trial.
"""

from __future__ import annotations

import logging
import secrets
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from netassay.campaign import environment
from netassay.campaign.plan import Plan, eta_s, fmt_duration
from netassay.campaign.trial import SOURCE, generator_trouble, measure
from netassay.config import TestbedConfig
from netassay.errors import GeneratorError, UsageError
from netassay.proc import run as run_proc
from netassay.store.db import Experiment, Store, TrialRecord
from netassay.testbed import state as S
from netassay.testbed import topology as T
from netassay.testbed.bed import Testbed, config_from_state, require_root
from netassay.units import fmt_rate

log = logging.getLogger("netassay.campaign")
PEAK_PROBE_S = 0.5
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
    return {
        "class": "routing" if cfg.sut == "router" else "bridging",
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


def unfinished(store: Store) -> tuple[Experiment, Plan, TestbedConfig] | None:
    """The newest netassay sweep in the store that still has planned trials to run."""
    for exp in reversed(list(store.experiments())):
        if exp.kind != "sweep" or exp.source != SOURCE:
            continue
        c = exp.config
        plan = Plan(tuple(c["rates_pps"]), int(c["runs"]), float(c["duration_s"]), c["settle_s"])
        if plan.remaining(store.done_trials(exp.id)):
            return exp, plan, config_from_state({"config": c["testbed"]})
    return None


def resume_sweep(db: str, name: str | None = None) -> Sweep:
    """Rebuild the Sweep of the newest unfinished experiment in ``db``."""
    with Store(db, create=False) as store:
        found = unfinished(store)
    if found is None:
        raise UsageError(
            f"nothing to resume in {db}",
            "every sweep in it is complete (or it has none)",
            "start a new sweep without --resume",
        )
    exp, plan, cfg = found
    sw = Sweep(plan, cfg, db, name or exp.config.get("testbed_name", "lab"), exp.label)
    sw.experiment_id = exp.id
    return sw


def open_testbed(sw: Sweep) -> Testbed:
    """Attach to a testbed left up by ``testbed up`` (same knobs), else build one."""
    st = S.read_state(sw.name)
    if st is None:
        return Testbed(sw.name, sw.testbed)
    have = config_from_state(st)
    if have != sw.testbed:
        diff = [k for k, v in asdict(sw.testbed).items() if asdict(have).get(k) != v]
        raise UsageError(
            f"testbed '{sw.name}' is up with other knobs ({', '.join(diff)})",
            "a sweep runs on the testbed as it is",
            f"bring it down ('netassay testbed down --name {sw.name}') or drop those flags",
        )
    return Testbed.attach(sw.name)


def probe_peak(tb: Testbed, probes: int = 3) -> float:
    """The generator's highest achieved rate through this testbed: the median of
    ``probes`` runs of ``PEAK_PROBE_S`` at ``--rate max`` (one run is at the mercy of a
    stall of the machine)."""
    from netassay.traffic import generator as G

    t = tb.target
    argv = G.build_args(
        t["dev"], t["dst_mac"], t["src"], t["dst"], 1.0, PEAK_PROBE_S,
        tb.cfg.size_bytes, tb.cfg.flows, True, tb.gen_flags(),
    )  # fmt: skip
    argv[argv.index("--rate") + 1] = "max"
    full = ["ip", "netns", "exec", t["netns"], G.find_generator(), *argv]
    rates = []
    for _ in range(probes):
        res = run_proc(full, check=False)
        out = G.parse_output(res.stdout, res.stderr, res.returncode)
        rates.append(float(out.achieved_rate_pps or 0.0))
    return statistics.median(rates)


def check_peak(tb: Testbed, plan: Plan) -> float:
    peak = probe_peak(tb)
    top = max(plan.rates_pps)
    if top > PEAK_MARGIN * peak:
        raise GeneratorError(
            f"load {fmt_rate(top)} is above what the generator can send here",
            f"its peak through this testbed is {fmt_rate(peak)}",
            f"keep loads at or below {fmt_rate(PEAK_MARGIN * peak)} (or use --no-peak-check)",
        )
    return peak


def _new_experiment(store: Store, sw: Sweep, env: dict[str, Any]) -> int:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    key = f"sweep-{sw.name}-{stamp}-{secrets.token_hex(3)}"
    label = sw.label or (
        f"{sw.testbed.sut} {sw.testbed.pinning} IPv{sw.testbed.ip_version} "
        f"{sw.testbed.size_bytes}B netns"
    )
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
        peak = check_peak(tb, sw.plan) if sw.check_peak and sw.experiment_id is None else None
        with Store(sw.db) as store:
            _start(sw, tb, store, peak)


def _start(sw: Sweep, tb: Testbed, store: Store, peak: float | None) -> None:
    if sw.experiment_id is None:
        env = environment.capture(tb)
        if peak is not None:
            env["generator_peak_pps"] = peak
        sw.experiment_id = _new_experiment(store, sw, env)
    _loop(sw, tb, store)


def _measure_with_retries(sw: Sweep, tb: Testbed, i: int, k: int, rate: float) -> TrialRecord:
    """One trial; repeated (at most ``sw.retries`` times) when the generator could not
    pace it. The stored record names every discarded attempt and why."""
    discarded: list[str] = []
    for attempt in range(sw.retries + 1):
        if attempt:
            time.sleep(sw.plan.settle_s)
        rec = measure(tb, i, k, rate, sw.plan.duration_s)
        trouble = generator_trouble(rec)
        if not trouble or attempt == sw.retries:
            break
        lost = rec.sent - rec.received
        discarded.append(f"attempt {attempt + 1} discarded ({lost} lost): {'; '.join(trouble)}")
    if discarded:
        rec = replace(rec, warnings=[*rec.warnings, *discarded])
    return rec


def _loop(sw: Sweep, tb: Testbed, store: Store) -> None:
    assert sw.experiment_id is not None
    done = store.done_trials(sw.experiment_id)
    todo = sw.plan.remaining(done)
    total = len(sw.plan.trials())
    t0 = time.monotonic()
    for n, (i, k, rate) in enumerate(todo):
        if n and sw.plan.settle_s:
            time.sleep(sw.plan.settle_s)
        rec = _measure_with_retries(sw, tb, i, k, rate)
        store.add_trial(sw.experiment_id, rec)  # committed now: a crash loses only the next
        sw.stored += 1
        if sw.progress:
            elapsed = time.monotonic() - t0
            left = eta_s(elapsed, n + 1, len(todo), sw.plan)
            lost = rec.sent - rec.received
            flag = " !" if rec.warnings else ""
            sw.progress(
                f"[{len(done) + n + 1}/{total}] load {i + 1}/{len(sw.plan.rates_pps)} "
                f"{fmt_rate(rate)} run {k + 1}/{sw.plan.runs}: sent {rec.sent} "
                f"lost {lost} (PLR {lost / max(rec.sent, 1):.2e}){flag}; "
                f"ETA {fmt_duration(left)}"
            )

"""The sweep's request turned into the sweep of loads it runs (``shared.sweep_run``): its
plan, ``--at``'s loads from a stored search's PDR, a new sweep's testbed or a resumed
one's."""

from __future__ import annotations

from typing import Any

from netassay import names
from netassay.config import Config
from netassay.errors import UsageError
from netassay.methods.base import RunOptions
from netassay.methods.sweep.request import NO_LOAD_PPS, SweepRequest
from netassay.shared import lab, stored_search
from netassay.shared.sweep_plan import Plan
from netassay.shared.sweep_run import RETRIES, Sweep, refuse_bidirectional, resume_sweep
from netassay.testbed import topology


def plan_of(req: SweepRequest) -> Plan:
    return Plan(tuple(req.rates_pps), req.runs, req.duration_s, req.settle_s)


def at_pdr(req: SweepRequest, db: str) -> tuple[Plan, dict[str, Any]]:
    """The plan of ``--at``: its shares of the PDR of the newest search in ``--of-pdr``
    (else ``db``); 0 is NO_LOAD_PPS. With where the PDR came from."""
    assert req.at is not None
    if not req.latency:
        raise UsageError("--at needs --latency", "it picks loads to measure latency at",
                         "add --latency, or give the loads with --rates")  # fmt: skip
    try:  # read from the store (shared.stored_search): no method imports another
        pdr, source = stored_search.pdr_rate(1.0, req.of_pdr or db)
    except UsageError as exc:
        raise UsageError(
            "--at needs a stored search's PDR", exc.why,
            "run 'netassay search --db FILE' first, or give the loads with --rates",
        ) from exc  # fmt: skip
    rates = sorted({share * pdr if share > 0 else NO_LOAD_PPS for share in req.at})
    plan = Plan(tuple(rates), req.runs, req.duration_s, req.settle_s)
    return plan, {"shares": list(req.at), **source}


def prepare(req: SweepRequest, options: RunOptions, cfg: Config) -> Sweep:
    """The Sweep to run: a resume takes the stored plan, knobs and testbed; a new sweep
    the request (defaults < TOML < flags) and the knobs of a testbed of that name that
    is already up when no testbed flag is given."""
    retries = RETRIES if options.retries is None else options.retries
    lab.check_request(options.name, retries, options.experiment, options.resume, "sweep")
    if options.resume:
        db = lab.resume_store(options.db, options.testbed_flags, "sweep")
        sw = resume_sweep(db, options.name, options.experiment)
    else:
        name = options.name or names.DEFAULT_NAME
        db = lab.store_path(options.db)
        if req.bidirectional and req.at is not None:
            raise UsageError(
                "--bidirectional with --at (the latency command's loads unless --rates)",
                "--at takes shares of a stored search's PDR, a one-direction load",
                "give the loads per direction with --rates",
            )  # fmt: skip
        plan, sw_at = at_pdr(req, db) if req.at is not None else (plan_of(req), None)
        testbed = lab.running_config(name, cfg.testbed, options.testbed_flags)
        sw = Sweep(plan, testbed, db, name, options.label, options.check_peak)
        sw.latency, sw.at, sw.rates = req.latency, sw_at, options.rates
        sw.bidirectional = req.bidirectional
    sw.retries = retries
    sw.hooks = lab.hooks_of(options)
    topology.validate(sw.testbed)
    if sw.bidirectional:
        refuse_bidirectional(sw.testbed)
    if sw.latency and sw.testbed.sink == "nft":
        raise UsageError(
            "--latency needs the XDP sink", "--sink nft keeps no latency histogram",
            "use --sink xdp (the default) or xdp+nft",
        )  # fmt: skip
    if sw.plan.auto:
        lab.refuse_auto_loads(sw.testbed, sw.bidirectional)
    return sw

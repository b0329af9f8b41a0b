"""The sweep's request turned into the sweep of loads it runs (``shared.sweep_run``): its
plan, ``--at``'s loads from a stored search's PDR, a new sweep's testbed or a resumed
one's; what a dry run says of it, and what a run returns (``Swept``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from netassay import names
from netassay.config import AnalysisConfig, Config
from netassay.errors import UsageError
from netassay.methods.base import RunOptions
from netassay.methods.sweep.request import NO_LOAD_PPS, SweepRequest
from netassay.shared import lab, stored_search
from netassay.shared.sweep_plan import Plan, describe
from netassay.shared.sweep_run import RETRIES, Sweep, refuse_bidirectional, resume_sweep
from netassay.store.db import Store
from netassay.testbed import topology

if TYPE_CHECKING:  # the analysis loads scipy: only a run's end asks for it
    from netassay.analysis.assess import Assessment


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
        testbed = lab.running_config(name, cfg.testbed, options)
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


def dry_run(req: SweepRequest, options: RunOptions) -> str:
    """What a sweep would run, nothing touched (``--dry-run``): its testbed and knobs,
    its store (a resume's experiment), its loads and runs (those a resume has stored
    left out) and its time."""
    sw = prepare(req, options, options.config or Config())
    knobs = ", ".join(f"{k}={v}" for k, v in asdict(sw.testbed).items() if v is not None)
    done: set[tuple[int, int]] = set()
    if options.resume:
        assert sw.experiment_id is not None  # a resumed sweep has its experiment
        with Store(sw.db, create=False) as st:
            done = st.done_trials(sw.experiment_id)
    where = f" (resuming experiment {sw.experiment_id})" if options.resume else ""
    both = (
        [f"--bidirectional: each load per direction, both at once ({2 * sw.plan.packets():,} "
         "packets in all); stored and assessed as their aggregate, twice each load"]
        if sw.bidirectional else []
    )  # fmt: skip
    return "\n".join(
        [f"testbed '{sw.name}': {knobs}", f"store: {sw.db}{where}", describe(sw.plan, done), *both]
    )


@dataclass(frozen=True)
class Planned:
    """What a sweep's run returns with ``options.dry_run``: what it would run
    (``dry_run``), nothing measured."""

    text: str


@dataclass
class Swept:
    """What a sweep's run returns: the sweep it ran (its store, its experiment, the
    trials this run stored) and the analysis that judges it, made when first asked
    for (a campaign's cell asks nothing of it)."""

    sweep: Sweep
    cfg: AnalysisConfig

    @cached_property
    def assessment(self) -> Assessment | None:
        """PASTRAMI's assessment of the experiment it stored (None: no load)."""
        # deferred: scipy (the analysis), which the command line does not pay for at start
        from netassay.shared import sweep_analyse

        assert self.sweep.experiment_id is not None  # a sweep that ran has its experiment
        with Store(self.sweep.db, readonly=True) as store:
            exp = store.experiment(self.sweep.experiment_id)
            return sweep_analyse.assess_experiment(store, exp, self.cfg)

    def stored_line(self) -> str:
        """Where it stored what: the line a sweep ends with."""
        sw = self.sweep
        return f"stored {sw.stored} trial(s) in {sw.db} (experiment {sw.experiment_id})"

"""Run a campaign on Dask distributed; the coordinator (this process) alone writes the store.

Each cell is one experiment, tagged with its campaign and factor levels. Cells are
submitted in the campaign's blocked, seeded order (Dask priorities) to workers that own
a testbed each (the worker resource ``testbed``: one cell at a time per testbed): an
in-process ``LocalCluster`` with one worker by default, or a running scheduler
('netassay cluster scheduler') with ``netassay worker`` processes, reached with mutual
TLS (``campaign.cluster``); the transport is recorded in each experiment's environment.
A cell's experiment is written in one transaction when the cell ends, so a crash loses
at most the cells in progress; ``--resume`` runs the cells whose experiment is not
stored and nothing else: every planned trial is stored once.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from netassay import methods as registry
from netassay.campaign import order
from netassay.campaign.cluster import IN_PROCESS, Access
from netassay.campaign.progress import Progress
from netassay.campaign.spec import Campaign, describe_cell
from netassay.campaign.worker import RESOURCE, TOPIC, CellJob, CellResult, run_cell
from netassay.errors import Interrupted, NetassayError, UsageError
from netassay.names import validate_name
from netassay.shared.sweep_plan import TRIAL_OVERHEAD_S
from netassay.store.db import Store
from netassay.store.rows import ExperimentRows
from netassay.testbed.bed import require_root
from netassay.units import fmt_duration

log = logging.getLogger("netassay.campaign")


class CampaignIncomplete(NetassayError):
    """Some cells failed; the others are stored, and a resume runs the failed ones."""

    exit_code = 10


@dataclass
class CampaignResult:
    campaign: Campaign
    seed: int
    planned: int  # experiments (cells x repetitions)
    already: int  # stored before this run (a resume)
    stored: list[str] = field(default_factory=list)  # keys written by this run
    trials: int = 0  # trials written by this run
    failed: dict[str, str] = field(default_factory=dict)  # key -> why
    # key -> the error as it came back (CellFailed: the method's own error, typed)
    errors: dict[str, Exception] = field(default_factory=dict)
    wall_s: float = 0.0
    dashboard: str | None = None
    transport: str = IN_PROCESS  # how the coordinator reached the cluster


def seed_for(c: Campaign, db: str | None) -> tuple[int, str]:
    """The seed of the run order: the file's, else the one recorded in ``db`` for this
    campaign, else a new one (which 'campaign run' records)."""
    if c.seed is not None:
        return c.seed, "set in the file"
    if db is not None and Path(db).is_file():
        with Store(db, readonly=True) as store:
            have = store.campaign(c.name) if _has_campaigns(store) else None
        if have is not None:
            return int(have["seed"]), f"recorded in {db}"
    return (
        order.new_seed(),
        "drawn now; 'campaign run' draws and records its own unless the file sets seed",
    )


def _has_campaigns(store: Store) -> bool:
    return bool(
        store.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'campaigns'").fetchone()
    )


def _start(store: Store, c: Campaign, resume: bool, db: str) -> tuple[int, int]:
    """(campaign id, seed): a new campaign is recorded; a resume must find it unchanged."""
    have = store.campaign(c.name)
    if have is None:
        if resume:
            raise UsageError(
                f"no campaign '{c.name}' in {db} to resume",
                "it was never started",
                "run it without --resume",
            )
        seed = c.seed if c.seed is not None else order.new_seed()
        return store.add_campaign(c.name, seed, c.to_json()), seed
    if not resume:
        raise UsageError(
            f"campaign '{c.name}' is already in {db}",
            "a campaign runs once",
            "add --resume to run what is missing, or rename it",
        )
    if have["spec"] != c.to_json():
        diff = [k for k, v in c.to_json().items() if have["spec"].get(k) != v]
        raise UsageError(
            f"{c.path} changed since campaign '{c.name}' started",
            f"different: {', '.join(diff)}",
            "resume with the file it started with, or rename it",
        )
    return int(have["id"]), int(have["seed"])


def _jobs(c: Campaign, slots: list[order.Slot], testbed: str) -> list[CellJob]:
    return [
        CellJob(
            s.key(c.name),
            c.method,
            c.settings(s.cell),
            f"{c.name} {describe_cell(c.cells[s.cell])} rep {s.block + 1}",
            testbed,
        )
        for s in slots
    ]


def _client(scheduler: Access | None) -> tuple[Any, Any, int]:
    """(client, cluster or None, testbeds): the scheduler given (mutual TLS, or plaintext
    on loopback with --insecure), else a LocalCluster with one worker that owns this
    host's testbed, in this process."""
    from distributed import Client, LocalCluster  # deferred: Dask (1 s), only where cells run

    if not log.isEnabledFor(logging.DEBUG):  # Dask's own chatter only with --debug
        logging.getLogger("distributed").setLevel(logging.WARNING)
    if scheduler is not None:
        client = Client(scheduler.address, timeout="20s", security=scheduler.security("client"))
        beds = sum(
            int(w.get("resources", {}).get(RESOURCE, 0))
            for w in client.scheduler_info()["workers"].values()
        )
        return client, None, beds
    dash = "127.0.0.1:0"  # served only with bokeh installed; never beyond this host
    cluster = LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=False,
        resources={RESOURCE: 1},
        dashboard_address=dash,
    )
    return Client(cluster), cluster, 1


def _has_bokeh() -> bool:
    return importlib.util.find_spec("bokeh") is not None


def run_campaign(
    c: Campaign,
    db: str,
    *,
    resume: bool = False,
    scheduler: Access | None = None,
    testbed: str = "camp",
    progress: Progress | None = None,
) -> CampaignResult:
    """Run every cell not yet stored; write each cell's experiment as it comes back."""
    validate_name(testbed)
    if scheduler is None:  # this host's worker builds the testbeds
        require_root("a campaign on this host's testbed")
    with Store(db) as store, _sole_writer(db):
        campaign_id, seed = _start(store, c, resume, db)
        slots = order.run_order(len(c.cells), c.repetitions, seed)
        have = {e.key for e in store.experiments()}
        todo = [s for s in slots if s.key(c.name) not in have]
        result = CampaignResult(c, seed, len(slots), len(slots) - len(todo))
        result.transport = scheduler.transport if scheduler else IN_PROCESS
        if not todo:
            return result
        t0 = time.monotonic()
        client, cluster, beds = _client(scheduler)
        try:
            if scheduler is not None:
                result.dashboard = client.dashboard_link
            elif _has_bokeh():  # served on loopback: Dask's link would name another address
                port = cluster.scheduler.http_server.port
                result.dashboard = f"http://127.0.0.1:{port}/status"
            prog = progress or _progress(c, todo, max(1, beds))
            if scheduler is not None and beds == 0:
                prog.note(
                    f"no netassay worker is connected to {scheduler.address} yet: the cells "
                    f"wait for one ('netassay worker --scheduler {scheduler.address} "
                    "--tls-dir DIR --name NAME')"
                )
            prog.note(
                f"campaign {c.name}: {len(todo)} of {len(slots)} cells to run on "
                f"{beds} testbed(s), seed {seed}"
                + (f"; dashboard {result.dashboard}" if result.dashboard else "")
            )
            _run(client, c, store, campaign_id, seed, todo, _jobs(c, todo, testbed), prog, result)
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
        result.wall_s = time.monotonic() - t0
    return result


@contextmanager
def _sole_writer(db: str) -> Iterator[None]:
    """One coordinator per store: an flock on the file (SQLite's own locks are fcntl
    locks, independent of it), released when this process ends, even by SIGKILL."""
    fd = os.open(db, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise UsageError(
                f"another 'netassay campaign run' is writing {db}",
                "one coordinator writes a store",
                "wait for it to finish, or stop it first",
            ) from exc
        yield
    finally:
        os.close(fd)


def _progress(c: Campaign, todo: list[order.Slot], beds: int) -> Progress:
    keys = [s.key(c.name) for s in todo]
    est = {k: order.cell_estimate_s(c, s.cell) for k, s in zip(keys, todo, strict=True)}
    trials = {k: order.cell_trials(c, s.cell) for k, s in zip(keys, todo, strict=True)}
    per = {
        k: (est[k] - registry.method(c.method).cell_setup_s) / max(1, trials[k] or 1)
        if trials[k]
        else TRIAL_OVERHEAD_S + 1.0
        for k in keys
    }
    return Progress(est, trials, per, beds)


def _run(
    client: Any,
    c: Campaign,
    store: Store,
    campaign_id: int,
    seed: int,
    todo: list[order.Slot],
    jobs: list[CellJob],
    prog: Progress,
    result: CampaignResult,
) -> None:
    from distributed import as_completed  # deferred: Dask (1 s), only where cells run

    def on_event(event: Any) -> None:
        _, msg = event
        prog.trial(msg["key"], int(msg["trials"]))

    client.subscribe_topic(TOPIC, on_event)
    slot_of = {j.key: s for j, s in zip(jobs, todo, strict=True)}
    futures = [
        client.submit(
            run_cell,
            j,
            key=f"cell-{j.key}-{seed}",
            resources={RESOURCE: 1},
            priority=len(todo) - i,
            pure=False,
        )
        for i, j in enumerate(jobs)
    ]
    key_of = {f.key: j.key for f, j in zip(futures, jobs, strict=True)}
    try:
        for fut in as_completed(futures):
            key = key_of[fut.key]
            try:
                cell: CellResult = fut.result()
            except Exception as exc:  # a failed cell: the others go on
                why = (
                    exc.line() if isinstance(exc, NetassayError) else f"{type(exc).__name__}: {exc}"
                )
                result.failed[key] = why
                result.errors[key] = exc
                prog.cell(key, 0, ok=False)
                prog.note(f"cell {key} failed: {why}")
                continue
            n = write_cell(store, c, campaign_id, seed, slot_of[key], cell, result.transport)
            result.stored.append(key)
            result.trials += n
            prog.cell(key, n)
    except KeyboardInterrupt as exc:
        for f in futures:
            f.cancel()
        raise Interrupted(
            "campaign interrupted",
            f"{len(result.stored)} cell(s) of this run are stored in {store.path}",
            f"continue with 'netassay campaign run {c.path} --db {store.path} --resume'",
        ) from exc
    finally:
        client.unsubscribe_topic(TOPIC)


def write_cell(
    store: Store,
    c: Campaign,
    campaign_id: int,
    seed: int,
    slot: order.Slot,
    cell: CellResult,
    transport: str | None = None,
) -> int:
    """Write a cell's experiments, each in one transaction, tagged with the campaign and
    the cell's factor levels; the cell's own experiment (its key marks the cell done) last.
    ``transport`` (tls, tcp-insecure-loopback, in-process) goes in each one's environment
    as ``cluster_transport``."""
    tag = {
        "campaign": c.name,
        "campaign_id": campaign_id,
        "seed": seed,
        "cell": slot.cell + 1,
        "block": slot.block + 1,
        "position": slot.position + 1,
        "factors": dict(c.cells[slot.cell]),
        "settings": c.settings(slot.cell),
        "method": c.method,
        "testbed_name": cell.testbed,
        "worker": cell.worker,
        "cell_wall_s": round(cell.wall_s, 3),
    }
    written = 0
    rows = registry.method(c.method).comparison.progress_rows
    exps = list(enumerate(cell.experiments))
    ids: dict[int, int] = {}  # the scratch store's experiment id -> this store's
    for j, e in exps[1:] + exps[:1]:  # the cell's own experiment last: it may name the others
        key = cell.key if j == 0 else f"{cell.key}-{j + 1}"
        label = e.experiment["label"] if j else _label(c, slot)
        meta = renumbered(json.loads(e.experiment["metadata_json"]), ids)
        role = "cell" if j == 0 else e.experiment["kind"]
        if transport is not None:
            e = _with_transport(e, transport)
        e = replace(
            e,
            experiment={
                **e.experiment,
                "config_json": json.dumps(
                    renumbered(json.loads(e.experiment["config_json"] or "{}"), ids)
                ),
            },
        )
        new_id, counts = store.import_rows(e, key, label, {**meta, "campaign": tag, "role": role})
        ids[int(e.experiment["id"])] = new_id
        written += counts.get(rows, 0)
    return written


# the keys by which an experiment names another of its store (a recovery's, a burst's,
# a soak's or a reconfig's throughput search: ``throughput_from``)
NAMES_EXPERIMENT = ("search_experiment",)


def renumbered(doc: Any, ids: dict[int, int]) -> Any:
    """``doc`` with every experiment it names by id (``NAMES_EXPERIMENT``) named by its
    id in this store: a cell's ids are its scratch store's."""
    if isinstance(doc, dict):
        return {k: ids.get(v, v) if k in NAMES_EXPERIMENT and isinstance(v, int)
                else renumbered(v, ids) for k, v in doc.items()}  # fmt: skip
    if isinstance(doc, list):
        return [renumbered(v, ids) for v in doc]
    return doc


def _with_transport(e: ExperimentRows, transport: str) -> ExperimentRows:
    env = {**json.loads(e.experiment["environment_json"] or "{}"), "cluster_transport": transport}
    return replace(e, experiment={**e.experiment, "environment_json": json.dumps(env)})


def _label(c: Campaign, slot: order.Slot) -> str:
    return f"{c.name} {describe_cell(c.cells[slot.cell])} rep {slot.block + 1}"


def summary(r: CampaignResult) -> str:
    c = r.campaign
    lines = [
        f"campaign {c.name}: {r.already + len(r.stored)} of {r.planned} cells stored"
        + (f" ({r.already} before this run)" if r.already else "")
        + f"; {len(r.stored)} cells and {r.trials} trials written by this run"
        + (f" in {fmt_duration(r.wall_s)}" if r.wall_s else "")
        + f"; seed {r.seed}"
    ]
    lines += [f"  failed: {k}: {why}" for k, why in r.failed.items()]
    return "\n".join(lines)


def check(r: CampaignResult, db: str) -> None:
    if r.failed:
        raise CampaignIncomplete(
            f"{len(r.failed)} cell(s) of campaign {r.campaign.name} failed",
            "the other cells are stored",
            f"rerun 'netassay campaign run {r.campaign.path} --db {db} --resume'",
        )

"""Commands of link acceptance (seed 004): accept, import iperf3, import monipe."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from netassay import methods as registry
from netassay import names
from netassay.analysis.acceptance import check_layer, judge
from netassay.cli.common import (
    NOT_STORED,
    FailOn,
    Given,
    Json,
    check_fail_on,
    gate,
    runs_with,
    with_params,
)  # fmt: skip
from netassay.methods.accept import import_iperf3, import_monipe, scenarios
from netassay.methods.accept.request import RUN_OPTIONS, AcceptRequest
from netassay.methods.accept.store import store_accept_test
from netassay.methods.base import RunOptions
from netassay.store.db import Store
from netassay.trial.accept import AcceptTest
from netassay.units import parse_rate

Scenarios = Annotated[
    str | None,
    typer.Option(
        "--scenarios",
        metavar="FILE",
        help="A TOML scenario matrix (CPU, rxN/txN, buffers, MTU), run in order.",
    ),
]
Contract = Annotated[
    str | None,
    typer.Option(
        "--contract",
        help="Contracted rate (e.g. 400M, 10G; k = 1000) at --layer; without it the "
        "figures are stored and the throughput is not judged.",
    ),
]
Layer = Annotated[
    str,
    typer.Option("--layer", help="Layer the contract is counted at: payload | ip | ethernet | l1."),
]
Db = Annotated[Path, typer.Option("--db", help="SQLite store to write (created if new).")]
Label = Annotated[
    str,
    typer.Option("--label", metavar="TEXT", help="Experiment label (default: the test's name)."),
]


@with_params(
    AcceptRequest, RunOptions, only=RUN_OPTIONS, shown={"name": names.ACCEPT_NAME}, helps=NOT_STORED
)
def accept(
    ctx: typer.Context, given: Given, scenario_file: Scenarios = None, as_json: Json = False,
    fail_on: FailOn = None,
) -> None:  # fmt: skip
    """Accept a link by single-flow UDP at the contracted rate: a ramp, then K runs;
    PASS, FAIL or INCONCLUSIVE (host-limited) with the test host checked first."""
    method = registry.method("accept")  # deferred by the registry: pyroute2 (80 ms)
    req, options = runs_with(ctx, given, "accept")
    if scenario_file:  # the matrix: a test per scenario, each checked before the first runs
        req = replace(req, scenarios=tuple(scenarios.load(scenario_file)))
    check_fail_on(fail_on)
    # each test stored as it ends, all shown at the end; Interrupted: how many are stored
    result = method.run(req, options, lambda line: typer.echo(f"accept: {line}", err=True))
    typer.echo(method.view(result, as_json))
    gate(fail_on, [method.judged(test) for test in result.tests])


def _read(read_tests: Callable[..., list[AcceptTest]], source: Any, contract: str | None,
          layer: str, label: str) -> list[AcceptTest]:  # fmt: skip
    """Check the layer and the contract, read every test from ``source`` (nothing
    written)."""
    check_layer(layer)
    rate = None if contract is None else parse_rate(contract)
    return read_tests(source, rate, layer, label)


def _import(read_tests: Callable[..., list[AcceptTest]], source: Any, db: Path,
            contract: str | None, layer: str, label: str) -> None:  # fmt: skip
    """Read every test from ``source``, then store them."""
    _store_tests(_read(read_tests, source, contract, layer, label), db)


def _store_tests(tests: list[AcceptTest], db: Path) -> None:
    with Store(db) as st:
        done = [(t, *store_accept_test(st, t)) for t in tests]
    new = [d for d in done if d[2]]
    runs = sum(len(t.runs) for t, _, _ in new)
    typer.echo(
        f"{db}: imported {len(new)} acceptance test(s), {runs} run(s); "
        f"{len(done) - len(new)} already stored, skipped"
    )
    for t, exp_id, _ in done:
        v = judge(t)
        typer.echo(f"  experiment {exp_id} {t.name}: {v.verdict} ({v.reason})")


def import_iperf3_cmd(
    files: Annotated[
        list[Path], typer.Argument(help="iperf3 -J outputs (UDP or TCP), or folders of them.")
    ],
    db: Db,
    contract: Contract = None,
    layer: Layer = "ethernet",
    label: Label = "",
) -> None:
    """Import iperf3 -J results: UDP ones as acceptance tests (--contract, --layer), TCP
    clients' as TCP cells (kind tcp: throughput, window, RTT, retransmits); importing
    twice adds nothing."""
    from netassay.methods.tcp import import_iperf3 as tcp_import  # deferred: its method

    every = import_iperf3.json_files(files)
    tcp = [f for f in every if import_iperf3.protocol(f) == "TCP"]
    udp = [f for f in every if f not in tcp]
    # every file read and checked before anything is written
    cells = [tcp_import.read_cell(f, label) for f in tcp]
    tests = _read(import_iperf3.read_tests, udp, contract, layer, label) if udp or not tcp else None
    if tcp:
        done = tcp_import.store_cells(cells, db)
        new = [d for d in done if d[2]]
        typer.echo(f"{db}: imported {len(new)} TCP cell(s), "
                   f"{sum(len(c['runs']) for c, _, _ in new)} run(s); "
                   f"{len(done) - len(new)} already stored, skipped")  # fmt: skip
        for c, exp_id, _ in done:
            typer.echo(f"  experiment {exp_id} {c['label']}")
    if tests is not None:
        _store_tests(tests, db)


def import_monipe_cmd(
    folder: Annotated[Path, typer.Argument(help="MonIPE results folder (<test>/rodada_N/).")],
    db: Db,
    contract: Contract = None,
    layer: Layer = "ethernet",
    label: Label = "",
) -> None:
    """Import MonIPE acceptance results: each test one experiment, each round one run."""
    _import(import_monipe.read_tests, folder, db, contract, layer, label)


def register(app: typer.Typer, import_app: typer.Typer) -> None:
    """Add the accept command, 'import iperf3' and 'import monipe' to the CLI."""
    app.command("accept")(accept)
    import_app.command("iperf3")(import_iperf3_cmd)
    import_app.command("monipe")(import_monipe_cmd)

"""CLI of the acceptance imports: 'netassay import iperf3' and 'netassay import monipe'."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

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
Label = Annotated[str, typer.Option("--label", help="Experiment label (default: the test's name).")]


def _store_tests(tests: list, db: Path) -> None:
    from netassay.analysis.acceptance import judge
    from netassay.methods.accept.store import store_accept_test
    from netassay.store.db import Store

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


def _import(
    read_tests: Callable[..., list],
    source: Any,
    db: Path,
    contract: str | None,
    layer: str,
    label: str,
) -> None:
    """Check the layer and the contract, read every test from ``source``, then store them."""
    from netassay.analysis.acceptance import check_layer
    from netassay.units import parse_rate

    check_layer(layer)
    rate = None if contract is None else parse_rate(contract)
    _store_tests(read_tests(source, rate, layer, label), db)


def import_iperf3(
    files: Annotated[
        list[Path], typer.Argument(help="iperf3 -J outputs (UDP), or folders of them.")
    ],
    db: Db,
    contract: Contract = None,
    layer: Layer = "payload",
    label: Label = "",
) -> None:
    """Import iperf3 -J UDP results as acceptance tests (importing twice adds nothing)."""
    from netassay.methods.accept.import_iperf3 import read_tests

    _import(read_tests, files, db, contract, layer, label)


def import_monipe(
    folder: Annotated[Path, typer.Argument(help="MonIPE results folder (<test>/rodada_N/).")],
    db: Db,
    contract: Contract = None,
    layer: Layer = "payload",
    label: Label = "",
) -> None:
    """Import MonIPE acceptance results: each test one experiment, each round one run."""
    from netassay.methods.accept.import_monipe import read_tests

    _import(read_tests, folder, db, contract, layer, label)


def register(app: typer.Typer) -> None:
    """Add 'import iperf3' and 'import monipe' to the import group."""
    for group in app.registered_groups:  # the 'import' group cli_analysis registered
        if group.name == "import" and group.typer_instance is not None:
            group.typer_instance.command("iperf3")(import_iperf3)
            group.typer_instance.command("monipe")(import_monipe)

"""CLI of the acceptance test (seed 004): parses flags and delegates to netassay.methods.accept."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from netassay.errors import Interrupted


def accept(
    contract: Annotated[
        str, typer.Option("--contract", help="Contracted rate in bit/s at --layer, e.g. 400M.")
    ],
    layer: Annotated[
        str,
        typer.Option(
            "--layer",
            help="Layer the contract and the throughput are counted at: payload (UDP "
            "payload, as iperf3 counts) | ip | ethernet (frames with FCS, as Y.1564 and "
            "MEF count) | l1 (with preamble and gap).",
        ),
    ] = "ethernet",
    embedded: Annotated[
        bool,
        typer.Option("--embedded", help="Test a known link built here (client, link, server)."),
    ] = False,
    link_cap: Annotated[
        str | None,
        typer.Option(
            "--link-cap",
            help="Embedded link: ground-truth capacity, a shaper (tbf) counting L1, e.g. 440M.",
        ),
    ] = None,
    link_drop: Annotated[
        float,
        typer.Option("--link-drop", help="Embedded link: ground-truth random loss, e.g. 0.003."),
    ] = 0.0,
    server: Annotated[
        str | None,
        typer.Option("--server", help="A remote iperf3 server (iperf3 -s there) to test toward."),
    ] = None,
    allow_any_server: Annotated[
        bool,
        typer.Option(
            "--allow-any-server",
            help="Allow a --server outside 198.18.0.0/15 and 2001:2::/48 (a link you own).",
        ),
    ] = False,
    sender: Annotated[
        str, typer.Option("--sender", help="iperf3 | netassay-gen (with its receiver).")
    ] = "iperf3",
    runs: Annotated[int, typer.Option("--runs", help="Sustained runs (K).")] = 3,
    duration: Annotated[
        str, typer.Option("--duration", help="Length of each sustained run, e.g. 60s.")
    ] = "10s",
    ramp_step: Annotated[
        str, typer.Option("--ramp-step", help="Length of each ramp step (25/50/75/100%).")
    ] = "2s",
    no_ramp: Annotated[bool, typer.Option("--no-ramp", help="Skip the ramp.")] = False,
    datagram: Annotated[
        int | None,
        typer.Option("--datagram", help="UDP payload per datagram (default: fills the MTU)."),
    ] = None,
    ip: Annotated[int, typer.Option("--ip", help="IP version of the test traffic: 4 | 6.")] = 4,
    scenarios: Annotated[
        str | None,
        typer.Option(
            "--scenarios", help="A TOML scenario matrix (CPU, rxN/txN, buffers, MTU), run in order."
        ),
    ] = None,
    db: Annotated[str | None, typer.Option("--db", help="Results store (SQLite).")] = None,
    label: Annotated[str, typer.Option("--label", help="Experiment label.")] = "",
    name: Annotated[str, typer.Option("--name", help="Testbed name (1-8 a-z0-9).")] = "acc",
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per test.")] = False,
) -> None:
    """Accept a link by single-flow UDP at the contracted rate: a ramp, then K runs;
    PASS, FAIL or INCONCLUSIVE (host-limited) with the test host checked first."""
    from netassay.methods.accept import run as R
    from netassay.methods.accept import scenarios as SC
    from netassay.methods.accept import view
    from netassay.units import parse_duration, parse_rate

    base = R.AcceptRequest(
        contract_bps=parse_rate(contract),
        layer=layer,
        sender=sender,
        runs=runs,
        duration_s=parse_duration(duration),
        ramp_step_s=parse_duration(ramp_step),
        ramp=not no_ramp,
        embedded=embedded,
        link_cap_bps=parse_rate(link_cap) if link_cap else None,
        link_drop=link_drop,
        server=server,
        allow_any_server=allow_any_server,
        ip_version=ip,
        datagram_bytes=datagram,
        db=db,
        name=name,
        label=label,
    )
    requests = SC.requests(base, SC.load(scenarios)) if scenarios else [base]
    for req in requests:
        R.validate(req)  # every scenario checked before the first one runs
    for req in requests:
        try:
            res = R.measure(req, _progress)
        except KeyboardInterrupt as exc:
            raise Interrupted("accept interrupted", "the tests that ended are stored", "") from exc
        res.test.metadata["experiment_id"] = res.experiment_id
        s = view.summary(res.test, res.verdict)
        runs = [*res.test.ramp, *res.test.runs]
        s["warnings"] = list(dict.fromkeys(w for r in runs for w in r.warnings))
        if as_json:
            typer.echo(json.dumps(s, sort_keys=True, default=str))
        else:
            for line in view.text_lines(s):
                typer.echo(line)
            for w in s["warnings"]:
                typer.echo(f"  warning: {w}")
            if req.db:
                typer.echo(f"  stored in {req.db} (experiment {res.experiment_id})")
        sys.stdout.flush()


def _progress(line: str) -> None:
    typer.echo(f"accept: {line}", err=True)


def register(app: typer.Typer) -> None:
    """Add the accept command to the CLI."""
    app.command("accept")(accept)

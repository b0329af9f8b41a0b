"""Commands of a campaign's cluster: its certificates and its scheduler."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from netassay.campaign import certs as campaign_certs
from netassay.campaign import cluster
from netassay.cli.common import Insecure, TlsDir, tls_dir

Opt = typer.Option
cluster_app = typer.Typer(
    help="A campaign's cluster over mutual TLS: its certificates, its scheduler.",
    no_args_is_help=True,
)


@cluster_app.command("certs")
def certs(
    folder: Annotated[Path, typer.Argument(help="Where to write them (made 0700).", metavar="DIR")],
    host: Annotated[
        list[str] | None,
        Opt(
            "--host",
            metavar="HOST",
            help="A host name or IP address the certificates name (repeat it).",
            show_default="localhost, 127.0.0.1",
        ),
    ] = None,
    days: Annotated[
        int, Opt("--days", metavar="N", help="Days the certificates are valid.")
    ] = campaign_certs.DEFAULT_DAYS,
    force: Annotated[
        bool, Opt("--force", help="Replace the certificates already in DIR.", metavar="")
    ] = False,
) -> None:
    """Make a CA and the scheduler's, workers' and clients' certificates and keys in DIR:
    keys 0600, the CA's key apart in DIR/ca/ (0700; nothing that runs needs it, copy DIR
    without ca/ to each testbed host); an existing DIR with certificates is refused
    without --force."""
    typer.echo(
        campaign_certs.describe(
            campaign_certs.make(folder, tuple(host or campaign_certs.DEFAULT_HOSTS), days, force)
        )
    )


@cluster_app.command("scheduler")
def scheduler(
    ctx: typer.Context,
    listen: Annotated[
        str,
        Opt(
            "--listen",
            metavar="ADDRESS",
            help="Where it listens: loopback by default; give an address of another "
            "interface (tls://10.0.0.1:8786, tls://0.0.0.0:8786) to serve other hosts.",
        ),
    ] = cluster.DEFAULT_LISTEN,
    tls: TlsDir = None,
    insecure: Insecure = False,
    dashboard: Annotated[
        str,
        Opt(
            "--dashboard",
            metavar="HOST:PORT",
            help="HOST:PORT of Dask's dashboard (no authentication: loopback).",
        ),
    ] = cluster.DEFAULT_DASHBOARD,
) -> None:
    """A Dask scheduler for 'netassay worker' and 'campaign run' with mutual TLS, until
    stopped (Ctrl-C): on loopback unless --listen names another address; a tcp://
    address is refused (--insecure: loopback only)."""
    a = cluster.access(listen, tls_dir(ctx, tls), insecure, "scheduler", "--listen")
    cluster.serve_scheduler(a, dashboard)


def register(app: typer.Typer) -> None:
    """Add the cluster commands to the CLI."""
    app.add_typer(cluster_app, name="cluster")

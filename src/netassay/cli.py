"""netassay command line: parses flags and delegates; no measurement logic lives here."""

from __future__ import annotations

import logging
import sqlite3
import sys
from pathlib import Path
from typing import Annotated

import typer

from netassay import __version__
from netassay.errors import NetassayError, StoreError

app = typer.Typer(
    name="netassay",
    help="Measure how fast a software data plane forwards packets, and judge the number.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
db_app = typer.Typer(help="Inspect and check a results store.", no_args_is_help=True)
config_app = typer.Typer(help="Show the configuration in force.", no_args_is_help=True)
app.add_typer(db_app, name="db")
app.add_typer(config_app, name="config")

_STATE = {"debug": False, "config": None}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"netassay {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Log every step; tracebacks.")] = False,
    config: Annotated[
        Path | None, typer.Option("--config", help="TOML file (after defaults, before flags).")
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print version.")
    ] = False,
) -> None:
    _STATE["debug"] = debug
    _STATE["config"] = config
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )


def config_path() -> Path | None:
    return _STATE["config"]  # type: ignore[return-value]


@config_app.command("show")
def config_show() -> None:
    """Print the configuration in force (defaults, then the TOML file)."""
    from netassay.config import load_config, to_toml

    typer.echo(to_toml(load_config(config_path(), resolve=False)), nl=False)


# -- command registration: each stage adds its commands in its own module -------------
from netassay import cli_analysis  # noqa: E402

cli_analysis.register(app, db_app)
from netassay import cli_lab  # noqa: E402

cli_lab.register(app)
from netassay import cli_search  # noqa: E402

cli_search.register(app)
from netassay import cli_rtt  # noqa: E402

cli_rtt.register(app)
from netassay import cli_campaign  # noqa: E402

cli_campaign.register(app)
from netassay import cli_accept_import  # noqa: E402

cli_accept_import.register(app)
from netassay import cli_accept  # noqa: E402

cli_accept.register(app)
from netassay import cli_flood  # noqa: E402

cli_flood.register(app)


def _click_error_types() -> tuple[type[BaseException], ...]:
    """The exception bases of typer's own (vendored) click and of click proper.

    typer >= 0.29 parses with a copy of click whose exceptions derive from the public
    ``typer.TyperException``, not from ``click.ClickException``; older typer uses click
    itself. Both are caught, through public names only.
    """
    types: list[type[BaseException]] = [typer.TyperException]
    try:
        import click
    except ImportError:  # typer no longer needs click proper
        pass
    else:
        types.append(click.ClickException)
    return tuple(types)


def is_click_error(exc: BaseException) -> bool:
    """A usage error (or other error) raised by the command-line parser, whichever click
    raised it: it can show itself and carries its exit code (2 for usage)."""
    return (
        isinstance(exc, _click_error_types())
        and callable(getattr(exc, "show", None))
        and callable(getattr(exc, "format_message", None))
        and isinstance(getattr(exc, "exit_code", None), int)
    )


def _show_store_warnings() -> None:
    """A damaged store read anyway: one line on stderr, once per store and command."""
    import warnings

    from netassay.errors import StoreWarning

    shown: set[str] = set()
    default = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):  # type: ignore[no-untyped-def]
        if not issubclass(category, StoreWarning):
            return default(message, category, filename, lineno, file, line)
        if str(message) not in shown:
            shown.add(str(message))
            typer.echo(f"netassay: warning: {message}", err=True)
        return None

    warnings.showwarning = show
    warnings.simplefilter("always", StoreWarning)


def main(argv: list[str] | None = None) -> None:
    """Entry point: one line per user-facing error, a distinct exit code, no traceback."""
    _show_store_warnings()
    try:
        rc = app(args=argv, standalone_mode=False)
    except NetassayError as exc:
        if _STATE["debug"]:
            raise
        typer.echo(f"netassay: {exc.line()}", err=True)
        sys.exit(exc.exit_code)
    except sqlite3.DatabaseError as exc:
        if _STATE["debug"]:
            raise
        err = StoreError(
            "the store cannot be read", str(exc), "run 'netassay db check FILE'; restore a copy"
        )
        typer.echo(f"netassay: {err.line()}", err=True)
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        typer.echo("netassay: interrupted; what was stored is kept", err=True)
        sys.exit(130)

    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("netassay: aborted", err=True)
        sys.exit(130)
    except Exception as exc:  # usage errors and the unexpected
        if is_click_error(exc):
            if exc.format_message():  # type: ignore[attr-defined]
                exc.show()  # type: ignore[attr-defined]  # click's own usage and message
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]  # 2 for every usage error
        if _STATE["debug"]:
            raise
        if isinstance(exc, OSError) and exc.filename is not None:  # a path, said as such
            typer.echo(
                f"netassay: {exc.filename}: {exc.strerror or exc}; "
                "check the path and its permissions",
                err=True,
            )
            sys.exit(3)
        typer.echo(
            f"netassay: internal error: {type(exc).__name__}: {exc}; "
            "rerun with --debug and report it",
            err=True,
        )
        sys.exit(70)
    # Without standalone mode, an interrupted command (Ctrl-C) and typer.Exit(n) come
    # back as a return value: never let them exit 0.
    if isinstance(rc, int) and rc != 0:
        if rc == 130:
            typer.echo("netassay: interrupted; what was stored is kept", err=True)
        sys.exit(rc)

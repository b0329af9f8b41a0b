"""netassay's command line: each command parses its flags, calls a method or a stage and
prints what it returns; no measurement logic lives here. This module holds the app, the
root options (the config path travels in typer's context) and ``main``: one line per
user-facing error, a distinct exit code. The commands live in one module per stage."""

from __future__ import annotations

import contextlib
import difflib
import errno
import importlib
import inspect
import logging
import signal
import sqlite3
import sys
import warnings
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer

from netassay import __version__
from netassay import methods as registry
from netassay.cli import analysis, campaign, cluster, compare, testbed, trend
from netassay.cli.common import command_named, config_path
from netassay.config import METHOD_SECTIONS, ConfigWarning, load_config, to_toml
from netassay.errors import (
    Deprecated,
    Interrupted,
    NetassayError,
    StoreError,
    StoreWaiting,
    StoreWarning,
    Terminated,
)
from netassay.methods import REGISTRY
from netassay.methods.base import defaults as base_defaults
from netassay.store import faults

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

# --debug, and whether SIGTERM stopped the command: read by main, outside typer's context
_STATE = {"debug": False, "terminated": False}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"netassay {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    debug: Annotated[
        bool, typer.Option("--debug", help="Log every step; tracebacks.", metavar="")
    ] = False,
    config: Annotated[
        Path | None,
        typer.Option("--config", metavar="FILE", help="TOML file (after defaults, before flags)."),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print version.", metavar=""
        ),
    ] = False,
) -> None:
    _STATE["debug"] = debug
    ctx.obj = {"config": config}
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )


@config_app.command("show")
def config_show(ctx: typer.Context) -> None:
    """Print the configuration in force (defaults, then the TOML file), keyed as the
    flags and campaign files are; a file in this form is one --config takes."""
    cfg = load_config(config_path(ctx), resolve=False)
    defaults = {m.name: base_defaults(m.request) for m in registry.methods()}
    typer.echo(to_toml(cfg, {k: v for k, v in defaults.items() if k in METHOD_SECTIONS}), nl=False)


def _config_first(argv: list[str]) -> list[str]:
    """``--config FILE`` is a root option; given after the command it is moved before
    it, so that ``netassay sweep --config FILE`` works as ``netassay --config FILE
    sweep`` does."""
    out, moved = [], []
    it = iter(argv)
    for arg in it:
        if arg == "--config":
            moved += [arg, next(it, "")]
        elif arg.startswith("--config="):
            moved.append(arg)
        else:
            out.append(arg)
    return moved + out


# each stage adds its commands in its own module
import_app = typer.Typer(help="Import results measured elsewhere.", no_args_is_help=True)
app.add_typer(import_app, name="import")
analysis.register(app, db_app, import_app)
testbed.register(app)
for name in REGISTRY:  # each method's commands: cli/<name>.py, in the registry's order
    importlib.import_module(f"netassay.cli.{name}").register(app, import_app)
compare.register(app)
trend.register(app)
campaign.register(app)
cluster.register(app)


def _summaries(group: typer.Typer) -> None:
    """Each command's first paragraph as one line in the command list (its help keeps
    the whole text): a docstring's line breaks never cut a sentence there."""
    for info in group.registered_commands:
        doc = info.callback.__doc__ if info.callback else None
        if info.short_help is None and doc:
            info.short_help = " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            _summaries(sub.typer_instance)


_summaries(app)


def _click_error_types() -> tuple[type[BaseException], ...]:
    """The exception bases of typer's own (vendored) click and of click proper.

    typer >= 0.29 parses with a copy of click whose exceptions derive from the public
    ``typer.TyperException``, not from ``click.ClickException``; older typer uses click
    itself. Both are caught, through public names only.
    """
    types: list[type[BaseException]] = [typer.TyperException]
    try:
        import click  # deferred: optional (typer >= 0.29 parses without click)
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
    """A damaged store read anyway, a config file's renamed key: one line on stderr, once
    per store (key) and command."""
    shown: set[str] = set()
    default = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if issubclass(category, StoreWaiting | Deprecated):  # said as it is, once
            if issubclass(category, Deprecated) and str(message) in shown:
                return None
            shown.add(str(message))
            typer.echo(f"netassay: {message}", err=True)
            return None
        if not issubclass(category, StoreWarning | ConfigWarning):
            return default(message, category, filename, lineno, file, line)
        if str(message) not in shown:
            shown.add(str(message))
            typer.echo(f"netassay: warning: {message}", err=True)
        return None

    warnings.showwarning = show
    warnings.simplefilter("always", StoreWarning)
    warnings.simplefilter("always", StoreWaiting)
    warnings.simplefilter("always", Deprecated)
    warnings.simplefilter("always", ConfigWarning)


def _terminate(signum: int, frame: Any) -> None:
    """SIGTERM: end the command as Ctrl-C would (its run stops, what ended is stored,
    the testbed is removed), then exit 143."""
    _STATE["terminated"] = True
    raise Terminated()


def _stopped() -> int:
    """The exit code of a command a signal stopped: 143 for SIGTERM, 130 for Ctrl-C."""
    return 143 if _STATE["terminated"] else 130


def _flag_help(command: Any, parent: Any = None) -> None:
    """Show --help as the flag it is (typer lists it as taking a <bool>), in every command."""
    ctx = command.context_class(command, parent=parent, info_name=command.name)
    option = command.get_help_option(ctx)
    if option is not None:
        option.metavar = ""
    for param in getattr(command, "params", []):  # an old spelling: not in the usage line
        if param.param_type_name == "argument" and getattr(param, "hidden", False):
            param.get_usage_pieces = lambda ctx: []
        if param.metavar is None and not getattr(param, "is_flag", False):
            param.metavar = _metavar(param) + ("..." if param.nargs != 1 else "")
        if param.param_type_name == "argument":  # its name column says it: no <path> type
            param.display_type_rich = lambda ctx: None
    for sub in getattr(command, "commands", {}).values():
        _flag_help(sub, ctx)


def _metavar(param: Any) -> str:
    """What a value of an option or argument not declared through ``params`` is written
    as, from its type and name (a path is a FILE, a folder's a DIR; never <str>)."""
    name = (param.name or "").lower()
    typed = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    kind = str(typed if typed is not None else getattr(param, "type", ""))
    if "Path" in kind or "path" in kind or name in ("folder", "file", "files", "paths"):
        return "DIR" if "dir" in name or "folder" in name else "FILE"
    if "int" in kind:
        return "N"
    return "NUMBER" if "float" in kind else name.upper() or "TEXT"


def main(argv: list[str] | None = None) -> None:
    """Entry point: one line per user-facing error, a distinct exit code, no traceback."""
    _show_store_warnings()
    with contextlib.suppress(ValueError):  # not the main thread: no handler of ours
        signal.signal(signal.SIGTERM, _terminate)
    try:
        command = typer.main.get_command(app)
        _flag_help(command)
        rc = command(
            args=_config_first(sys.argv[1:] if argv is None else argv), standalone_mode=False
        )
    except KeyboardInterrupt:
        typer.echo("netassay: interrupted; what was stored is kept", err=True)
        sys.exit(_stopped())
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("netassay: aborted", err=True)
        sys.exit(_stopped())
    except Exception as exc:  # netassay's errors, usage errors and the unexpected
        if _STATE["debug"] and not is_click_error(exc):
            raise
        line, code = _said(exc)
        if line:
            typer.echo(f"netassay: {line}", err=True)
        sys.exit(_stopped() if isinstance(exc, Interrupted) else code)
    # Without standalone mode, an interrupted command (Ctrl-C) and typer.Exit(n) come
    # back as a return value: never let them exit 0.
    if isinstance(rc, int) and rc != 0:
        if rc == 130:
            typer.echo("netassay: interrupted; what was stored is kept", err=True)
            rc = _stopped()
        sys.exit(rc)


def _resumed(err: StoreError) -> StoreError:
    """A store error met while a run stored an experiment its method can resume: what
    to do names that method's --resume for it."""
    m = registry.of_kind(err.kind) if err.kind and err.experiment is not None else None
    if m is None or "resume" not in m.run_options or not err.path:
        return err
    resume = f"--db {err.path} --resume --experiment {err.experiment}"
    cmd = f"continue with 'netassay {m.name} {resume}'"
    again = "run the same command again"
    todo = err.todo.replace(again, cmd) if again in err.todo else f"{err.todo}; {cmd}"
    return StoreError(err.what, err.why, todo)


def _parser_line(exc: Any) -> str:
    """A usage error of the command-line parser as netassay's one line: what, why, what
    to do; a mistyped flag names the closest flag the command takes."""
    ctx = getattr(exc, "ctx", None)
    where = command_named(ctx) if ctx is not None else "netassay"
    help_ = f"see '{where} --help'"
    name = getattr(exc, "option_name", None)
    if type(exc).__name__ == "NoSuchOption" and name and ctx is not None:
        flags = [o for p in ctx.command.params if not getattr(p, "hidden", False)
                 for o in p.opts if o.startswith("--")]  # fmt: skip
        near = difflib.get_close_matches(name, flags, n=1, cutoff=0.5)
        hint = f"did you mean {near[0]}?" if near else "no flag of it is near that"
        return f"unknown flag {name} for '{where}': {hint}; {help_}"
    said = " ".join(str(exc.format_message()).split()).rstrip(".")
    return f"{said} ('{where}'); {help_}" if said else ""


def _said(exc: Exception) -> tuple[str, int]:
    """The one line an error is shown as (none: click showed its own) and its exit code."""
    if isinstance(exc, StoreError):
        return _resumed(exc).line(), exc.exit_code
    if isinstance(exc, NetassayError):
        return exc.line(), exc.exit_code
    if isinstance(exc, sqlite3.DatabaseError):  # raised where no store was named
        err = faults.cause(exc, faults.store_named())
        return err.line(), err.exit_code
    if is_click_error(exc):  # 2 for every usage error
        # is_click_error saw an int exit_code: typer's and click's errors share no base
        return _parser_line(exc), exc.exit_code  # type: ignore[attr-defined]
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        where = f" holding {exc.filename}" if exc.filename is not None else ""
        return f"no space left on the device{where}; free space and run the same command again", 3
    if isinstance(exc, OSError) and exc.filename is not None:  # a path, said as such
        return f"{exc.filename}: {exc.strerror or exc}; check the path and its permissions", 3
    return f"internal error: {type(exc).__name__}: {exc}; rerun with --debug and report it", 70

"""What every command shares: the options declared once (``params``) turned into typer
options, the config file from typer's context, run options, and the lines a command
prints on stderr.

A command takes its method's parameters with ``with_params(Request, ...)``: it receives
them as ``given`` (key -> what was typed, None when not given; a bool flag: the field's
value), builds its Request and RunOptions from them, calls the method and prints its
view.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, overload

import typer

from netassay.config import Config, load_config
from netassay.errors import UsageError, VerdictRefused
from netassay.invoke import Resolved, checked_config, resolve
from netassay.methods.base import RunOptions
from netassay.params import (
    Param,
    declared,
    default_of,
    metavar_of,
)
from netassay.shared.lab import DEFAULT_DB
from netassay.shared.series_plan import Series

Given = dict[str, Any]  # what the declared options received, by key (None: not given)


Json = Annotated[bool, typer.Option("--json", help="Print JSON.", metavar="")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Print the plan; run nothing.", metavar="")]
# the store a command reads: --db FILE (the positional of older releases still taken)
DbOpt = Annotated[
    Path | None,
    typer.Option(
        "--db", help="The store (SQLite). \\[required]", metavar="FILE", show_default=False
    ),
]
OldDbArg = Annotated[Path | None, typer.Argument(hidden=True, show_default=False, metavar="")]
FailOn = Annotated[
    str | None,
    typer.Option(
        "--fail-on",
        metavar="fail|bad|inconclusive",
        help="Exit 11 when a verdict is FAIL or BAD ('fail' or 'bad'), or is not a pass "
        "('inconclusive': INCONCLUSIVE and doctor's WARN too). Without it a run that "
        "measured exits 0, whatever its verdict.",
        show_default=False,
    ),
]
TlsDir = Annotated[
    Path | None,
    typer.Option(
        "--tls-dir",
        metavar="DIR",
        help="The certificates 'netassay cluster certs DIR' made (mutual TLS with the "
        "scheduler); default: tls_dir in the config file's \\[cluster].",
        show_default=False,
    ),
]
Insecure = Annotated[
    bool,
    typer.Option(
        "--insecure",
        help="Allow a plaintext tcp:// scheduler, on loopback only (127.0.0.0/8, ::1, "
        "localhost); recorded in each experiment's environment.",
        metavar="",
    ),
]
# --db where a run without it stores in the working folder (shared.lab.store_path)
STORE = DEFAULT_DB
# --db where a run without it stores nothing
NOT_STORED = {"db": "Results store (SQLite), created if new; without it nothing is stored."}
# what each --fail-on refuses
FAIL_ON = {
    "fail": ("FAIL", "BAD"),
    "bad": ("FAIL", "BAD"),
    "inconclusive": ("FAIL", "BAD", "INCONCLUSIVE", "WARN"),  # anything not a pass
}


def _shown(f: Any, p: Param, shown: dict[str, str]) -> str:
    """The default a command's help shows: the field's as a campaign file writes it, or
    the command's own (``shown``); none for a flag (off unless given) nor where there is
    none (None: the help says what happens without it)."""
    if p.name in shown:
        return shown[p.name]
    d = default_of(f)
    if p.cli is bool or d is dataclasses.MISSING or d in (None, "", ()):
        return ""
    return p.show or str(d)


def _annotation(
    p: Param, default_text: str, required: bool, help: str, metavar: str, hidden: bool
) -> tuple[Any, Any]:
    """(annotation, default) of a declared parameter's typer option. Its default is None
    (not given): the config file's value, then the field's, applies; the help shows the
    field's (``default_text``)."""
    text = help + (f" \\[default: {default_text}]" if default_text else "")
    text += " \\[required]" if required else ""
    option = typer.Option(p.flag, help=text, show_default=False, metavar=metavar, hidden=hidden)
    return _typed(p, option), None


def _typed(p: Param, option: Any) -> Any:
    """The annotation of an option of ``p`` (None: not given; a config file's value,
    else the field's default, holds)."""
    if p.cli is bool:
        return Annotated[bool | None, option]
    if p.cli is list:
        return Annotated[list[str] | None, option]
    return Annotated[p.cli | None, option]


def _old_options(p: Param) -> list[inspect.Parameter]:
    """Hidden options of a parameter's older spellings (``Param.old``), each named
    ``old<i>_<key>``: taken for one release, each use said on stderr."""
    out = []
    for i, old in enumerate(p.old):
        option = typer.Option(old, hidden=True, show_default=False)
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        out.append(inspect.Parameter(f"old{i}_{p.name}", kind, default=None,
                                     annotation=_typed(p, option)))  # fmt: skip
    return out


def command_named(ctx: Any) -> str:
    """'netassay rtt' for a command's context (whatever the program was called)."""
    names = []
    while ctx is not None and ctx.parent is not None:
        names.append(ctx.info_name)
        ctx = ctx.parent
    return " ".join(["netassay", *reversed(names)])


def deprecated(line: str) -> None:
    """An old spelling used: its one line on stderr (the command goes on as the new one)."""
    typer.echo(f"netassay: {line}", err=True)


def _renewed(p: Param, kv: dict[str, Any], where: str) -> Any:
    """The value given to ``p`` by its new flag or, said as deprecated, an old one."""
    value = kv.pop(f"opt_{p.name}")
    for i, old in enumerate(p.old):
        was = kv.pop(f"old{i}_{p.name}")
        if was is None:
            continue
        if value is not None:
            raise UsageError(
                f"both {old} and {p.flag} given",
                f"{old} is the old spelling of {p.flag}",
                f"give {p.flag} alone",
            )
        deprecated(p.deprecated(old, where))
        value = was
    return value


def _taken(
    classes: Sequence[type], only: Sequence[str] | None, shown: dict[str, str],
    helps: dict[str, str],
) -> list[tuple[Any, Param, str, str]]:  # fmt: skip
    """The parameters a command takes (``with_params``): each field, its declaration,
    its default as the help shows it and its help as this command says it."""
    return [
        (f, p, _shown(f, p, shown), helps.get(p.name, p.help))
        for cls in classes
        for f, p in declared(cls)
        if p.flag and (cls is not RunOptions or only is None or f.name in only)
    ]


def with_params(
    *classes: type,
    only: Sequence[str] | None = None,
    shown: dict[str, str] | None = None,
    helps: dict[str, str] | None = None,
    hide: Iterable[str] = (),
    metavars: dict[str, str] | None = None,
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a command the options declared on ``classes`` in place of its ``given``
    parameter (``only``: the RunOptions fields it takes). The help shows each default,
    as ``shown`` overrides (a default the method decides, e.g. its testbed's name);
    ``helps`` says a parameter as this command takes it (a flood takes routers only);
    ``hide``: keys taken but left out of the help (what the command does not use);
    ``metavars``: what this command's value of a parameter is (a flood: routers only).
    A parameter's older spellings (``Param.old``) are taken too, each said deprecated."""
    declared_ = _taken(classes, only, shown or {}, helps or {})
    hidden = set(hide)
    own = metavars or {}

    def wrap(command: Callable[..., None]) -> Callable[..., None]:
        sig = inspect.signature(command, eval_str=True)
        params: list[inspect.Parameter] = []
        for prm in sig.parameters.values():
            params.extend(_options(declared_, hidden, own) if prm.name == "given" else [prm])

        @functools.wraps(command)
        def run(**kv: Any) -> None:
            given: Given = {}
            where = f"for '{command_named(kv.get('ctx'))}'"
            for _, p, _, _ in declared_:
                v = _renewed(p, kv, where)
                given[p.name] = (not v if p.negate else v) if p.cli is bool and v is not None else v
            command(given=given, **kv)

        # what inspect.signature (so typer) reads; no declared attribute of a function
        run.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        return run

    return wrap


def _options(
    declared_: list[tuple[Any, Param, str, str]], hidden: set[str], own: dict[str, str]
) -> list[inspect.Parameter]:
    """The typer options of declared parameters, each named ``opt_<key>``, and their
    older spellings' hidden ones."""
    out = []
    for f, p, text, help in declared_:
        required = default_of(f) is dataclasses.MISSING
        hide = p.hidden or p.name in hidden
        metavar = own.get(p.name) or metavar_of(f, p)
        annotation, default = _annotation(p, text, required, help, metavar, hide)
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        out.append(inspect.Parameter(f"opt_{p.name}", kind, default=default, annotation=annotation))
        out.extend(_old_options(p))
    return out


def store_given(ctx: typer.Context, db: Path | None, old: Path | None) -> Path:
    """The store a command reads: its --db, or (said deprecated) the positional older
    releases took; one of them is required."""
    if old is not None:
        if db is not None:
            raise UsageError(
                f"both --db {db} and a store ({old}) given",
                "the positional store is the old spelling of --db",
                "give --db FILE alone",
            )
        deprecated(
            f"the store as a positional argument ({old}) is deprecated for "
            f"'{command_named(ctx)}': use --db FILE (the store); the old spelling goes in "
            "the next release"
        )
        return old
    if db is None:
        raise UsageError(
            f"'{command_named(ctx)}' needs a store", "none was given", "give --db FILE"
        )
    return db


def config_path(ctx: typer.Context) -> Path | None:
    """The config file the root options named (typer's context carries it)."""
    root = ctx.find_root()
    return (root.obj or {}).get("config")


def tls_dir(ctx: typer.Context, given: Path | None) -> Path | None:
    """The folder of the cluster's certificates: the flag's, else the config file's."""
    if given is not None:
        return given
    in_file = load_config(config_path(ctx), resolve=False).cluster.tls_dir
    return Path(in_file) if in_file else None


def config(ctx: typer.Context, given: Given | None = None) -> Config:
    """Defaults < the config file in force < the testbed flags given, every method's
    section checked (``invoke.checked_config``)."""
    return checked_config(config_path(ctx), given or {})


@overload
def runs_with(
    ctx: typer.Context, given: Given, method: str, *, series: Literal[False] = ...
) -> Resolved: ...
@overload
def runs_with(
    ctx: typer.Context, given: Given, method: str, *, series: Literal[True]
) -> Resolved | Series: ...
def runs_with(
    ctx: typer.Context, given: Given, method: str, *, series: bool = False
) -> Resolved | Series:
    """What a method's command runs with (``invoke.resolve``): its Request and
    RunOptions from the flags given over the config file in force (read and checked
    first), the testbed --testbed names. A store (--db) that cannot be opened or written
    is refused here, before anything is built. ``series``: a list given (--sizes, a
    scale knob's) comes back as the Series to run value by value (``cli.series``)."""
    if series:
        return resolve(method, given, config_path(ctx), series=True)
    return resolve(method, given, config_path(ctx))


def check_fail_on(fail_on: str | None) -> None:
    """Refuse an unknown --fail-on before anything runs."""
    if fail_on is not None and fail_on not in FAIL_ON:
        raise UsageError(
            f"unknown --fail-on '{fail_on}'", f"known: {', '.join(FAIL_ON)}", "pick one"
        )


def gate(fail_on: str | None, verdicts: Iterable[tuple[str, str | None]]) -> None:
    """Exit 11 (VerdictRefused) when a verdict is one ``--fail-on`` refuses; ``verdicts``
    are (what was judged, its verdict). Every verdict was already shown."""
    if fail_on is None:
        return
    refused = [(what, v) for what, v in verdicts if v in FAIL_ON[fail_on]]
    if refused:
        said = "; ".join(f"{what}: {v}" for what, v in refused[:3])
        more = f" (and {len(refused) - 3} more)" if len(refused) > 3 else ""
        raise VerdictRefused(
            f"--fail-on {fail_on}: {len(refused)} verdict(s) refused",
            said + more,
            "the results are stored and shown above",
        )


def err(line: str) -> None:
    typer.echo(line, err=True)


def progress_line(line: str) -> None:
    """A progress line on stderr, flushed at once."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def bar() -> Callable[[str], None]:
    """A progress bar on stderr over the trials its lines count ('[n/total] ...'):
    rewritten in place on a terminal, a line each otherwise. A line that counts none (a
    note beside them) is said as it is (``progress_line``)."""
    tty = sys.stderr.isatty()

    def show(line: str) -> None:
        counted = COUNTED.match(line)
        if counted is None:
            progress_line(line)
            return
        done, total = int(counted[1]), int(counted[2])
        width = 20
        fill = int(width * done / max(total, 1))
        marks = "#" * fill + "-" * (width - fill)
        sys.stderr.write(f"\r\x1b[2K[{marks}] {line}" if tty else f"[{marks}] {line}\n")
        sys.stderr.flush()

    return show


COUNTED = re.compile(r"\[(\d+)/(\d+)\]")  # a progress line's count: [done/total]

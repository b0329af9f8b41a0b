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
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from netassay import methods as registry
from netassay.config import Config, TestbedConfig, load_config
from netassay.errors import InputError, UsageError, VerdictRefused
from netassay.methods.base import RunOptions, request_from
from netassay.params import Param, declared, default_of, spelling_hint
from netassay.store.preflight import check_store

Given = dict[str, Any]  # what the declared options received, by key (None: not given)
# the run options a config file's method section may set (not a run's own: label, resume)
FILE_RUN_OPTIONS = ("name", "db", "retries", "check_peak")

Json = Annotated[bool, typer.Option("--json", help="Print JSON.", metavar="")]
DryRun = Annotated[bool, typer.Option("--dry-run", help="Print the plan; run nothing.", metavar="")]
DbArg = Annotated[Path, typer.Argument(help="The store (SQLite).")]
FailOn = Annotated[
    str | None,
    typer.Option(
        "--fail-on",
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
# what each --fail-on refuses
FAIL_ON = {
    "fail": ("FAIL", "BAD"),
    "bad": ("FAIL", "BAD"),
    "inconclusive": ("FAIL", "BAD", "INCONCLUSIVE", "WARN"),  # anything not a pass
}


def _shown(f: Any, p: Param, shown: dict[str, str], hidden: bool) -> str:
    """The default a command's help shows: the field's as a campaign file writes it, or
    the command's own (``shown``); none for a flag, where the method decides, or where a
    config file can set it (``hidden``)."""
    if p.name in shown:
        return shown[p.name]
    d = default_of(f)
    if hidden or p.cli is bool or d is dataclasses.MISSING or d in (None, "", ()):
        return ""
    return p.show or str(d)


def _annotation(p: Param, default_text: str, required: bool, help: str) -> tuple[Any, Any]:
    """(annotation, default) of a declared parameter's typer option. Its default is None
    (not given): the config file's value, then the field's, applies; the help says it."""
    text = help + (f" \\[default: {default_text}]" if default_text else "")
    text += " \\[required]" if required else ""
    flag_only = {"metavar": ""} if p.cli is bool else {}  # a flag takes no value: no <bool>
    option = typer.Option(p.flag, help=text, show_default=False, **flag_only)
    if p.cli is bool:  # None: not given (a config file's value, else the default, holds)
        return Annotated[bool | None, option], None
    if p.cli is list:
        return Annotated[list[str] | None, option], None
    return Annotated[p.cli | None, option], None  # type: ignore[operator]


def with_params(
    *classes: type,
    only: Sequence[str] | None = None,
    shown: dict[str, str] | None = None,
    config_set: tuple[type, ...] = (TestbedConfig,),
    helps: dict[str, str] | None = None,
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a command the options declared on ``classes`` in place of its ``given``
    parameter (``only``: the RunOptions fields it takes). The help shows each default
    but those of ``config_set`` (a config file sets them) and as ``shown`` overrides
    (a default the method decides, e.g. its testbed's name); ``helps`` says a parameter
    as this command takes it (a flood takes routers only)."""
    declared_ = [
        (f, p, _shown(f, p, shown or {}, cls in config_set), (helps or {}).get(p.name, p.help))
        for cls in classes
        for f, p in declared(cls)
        if p.flag and (cls is not RunOptions or only is None or f.name in only)
    ]

    def wrap(command: Callable[..., None]) -> Callable[..., None]:
        sig = inspect.signature(command, eval_str=True)
        params: list[inspect.Parameter] = []
        for prm in sig.parameters.values():
            params.extend(_options(declared_) if prm.name == "given" else [prm])

        @functools.wraps(command)
        def run(**kv: Any) -> None:
            given: Given = {}
            for _, p, _, _ in declared_:
                v = kv.pop(f"opt_{p.name}")
                given[p.name] = (not v if p.negate else v) if p.cli is bool and v is not None else v
            command(given=given, **kv)

        run.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in params}
        return run

    return wrap


def _options(declared_: list[tuple[Any, Param, str, str]]) -> list[inspect.Parameter]:
    """The typer options of declared parameters, each named ``opt_<key>``."""
    out = []
    for f, p, text, help in declared_:
        required = default_of(f) is dataclasses.MISSING
        annotation, default = _annotation(p, text, required, help)
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        out.append(inspect.Parameter(f"opt_{p.name}", kind, default=default, annotation=annotation))
    return out


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


def knobs(given: Given) -> dict[str, Any]:
    """The testbed knobs given, as TestbedConfig's fields (parsed)."""
    out = {}
    for f, p in declared(TestbedConfig):
        if given.get(p.name) is not None:
            out[f.name] = p.value(given[p.name])
    return out


def config(ctx: typer.Context, given: Given | None = None) -> Config:
    """Defaults < the config file < the testbed flags given; every method's section of
    the file checked against its parameters (a bad key or value names its line)."""
    cfg = load_config(config_path(ctx), overrides={"testbed": knobs(given or {})})
    for name, values in cfg.methods.items():
        ps = file_params(name)
        for key, value in values.items():
            if key not in ps:
                raise InputError(
                    f"{cfg.where(name, key)}: unknown key '{key}' in [{name}]",
                    spelling_hint(key, list(ps)) + f"known keys: {', '.join(ps)}",
                    "fix the spelling or remove the key",
                )
            try:
                ps[key].canonical(value)
            except ValueError as exc:
                raise InputError(
                    f"{cfg.where(name, key)}: [{name}] {key} = {value!r}", str(exc),
                    "fix the value or remove the key to use the default",
                ) from exc  # fmt: skip
    return cfg


def file_params(method: str) -> dict[str, Param]:
    """The keys a config file's [method] section takes: the method's parameters, and the
    run options a file may set for it (its testbed name, store, retries, peak check)."""
    m = registry.method(method)
    own = {p.name: p for _, p in declared(m.request)}
    runs = {
        p.name: p for f, p in declared(RunOptions)
        if f.name in m.run_options and f.name in FILE_RUN_OPTIONS
    }  # fmt: skip
    return {**own, **runs}


def prepared(ctx: typer.Context, given: Given, method: str) -> tuple[Given, RunOptions]:
    """What a method's command runs with: the flags given over the config file's
    [method] section (``given`` with the file's values where no flag was given), and
    its RunOptions (the testbed knobs given, the config in force). A store (--db) that
    cannot be opened or written is refused here, before anything is built."""
    cfg = config(ctx, given)
    ps = file_params(method)
    from_file = {k: _as_given(ps[k], v) for k, v in cfg.section(method).items()}
    merged = {**from_file, **{k: v for k, v in given.items() if v is not None}}
    for key, p in ps.items():  # a flag neither given nor in the file is off (--embedded)
        if p.cli is bool and not p.negate and merged.get(key) is None:
            merged[key] = False
    base = {
        f.name: merged[p.name] for f, p in declared(RunOptions) if merged.get(p.name) is not None
    }
    options = RunOptions(**{**base, "testbed_flags": knobs(given), "config": cfg})
    if options.db is not None:  # refused now, before anything is built (--dry-run too)
        check_store(options.db)
    return merged, options


def _as_given(p: Param, value: Any) -> Any:
    """A config file's value as a flag would give it (a list joined, as a campaign
    cell's is)."""
    if isinstance(value, list) and p.cli is not list:
        return ",".join(str(v) for v in value)
    if p.cli is list and not isinstance(value, list):
        return [value]
    return value


def request(cls: type, given: Given) -> Any:
    return request_from(cls, given)


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


def stored_what(n: int, unit: str, db: Any) -> str:
    """What an interrupted run kept: the ``unit``s that ended, in ``db``, or nothing."""
    if not db:
        return f"{n} {unit}(s) had ended; nothing is stored without --db"
    if n == 0:
        return f"no {unit} had ended: nothing was stored (and no empty {db} is left)"
    return f"the {n} {unit}(s) that ended are stored in {db}"


def err(line: str) -> None:
    typer.echo(line, err=True)


def progress_line(line: str) -> None:
    """A progress line on stderr, flushed at once."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def bar(total: int) -> Callable[[str], None]:
    """A progress bar over ``total`` trials on stderr: rewritten in place on a terminal,
    a line each otherwise. Its lines start '[n/total]'."""
    tty = sys.stderr.isatty()

    def show(line: str) -> None:
        done = int(line[1:].split("/", 1)[0]) if line.startswith("[") else 0
        width = 20
        fill = int(width * done / max(total, 1))
        marks = "#" * fill + "-" * (width - fill)
        sys.stderr.write(f"\r\x1b[2K[{marks}] {line}" if tty else f"[{marks}] {line}\n")
        sys.stderr.flush()

    return show

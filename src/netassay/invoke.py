"""One entry to a method: what it runs with, from the flags a command was given or from
a campaign cell's settings, and the run itself through the protocol.

Both ways go through the same steps. ``options_of``: the values given over the config
file's section of the method (a flag given wins; a flag neither given nor in the file is
off), the run options (testbed, store, label, retries, peak check) with the testbed knobs
given and the config in force, the store checked before anything is built.
``request_of``: the loads written in bit/s or as shares converted to frames/s with the
frame size and line rate of the testbed the run takes (``shared.rates.resolved``, its
record kept in the run options), the method's Request built from the values (each parsed
by its parameter). ``resolve`` takes both steps and names the testbed a ``--testbed``
gives: a command calls it (``cli.common.resolved``, the config file in force read and
checked) and runs; a campaign cell calls it too (``cell``: an acceptance cell's scenario
applied, the Request validated where it has a ``validate()``), on its worker, where its
testbed is, and runs by ``run``: ``METHOD.run(request, options, progress)``.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol, overload, runtime_checkable

from netassay import methods as registry
from netassay.config import Config, TestbedConfig, load_config
from netassay.errors import InputError, UsageError
from netassay.methods.base import Progress, RunOptions
from netassay.params import Param, declared, renamed_keys, request_from, spelling_hint
from netassay.shared import lab, series_plan
from netassay.shared.rates import load_params, resolved
from netassay.shared.series_plan import Series
from netassay.store.preflight import check_store

Given = dict[str, Any]  # values by key, as a command's flags give them (None: not given)
# the run options a config file's method section may set (not a run's own: label, resume)
FILE_RUN_OPTIONS = ("name", "db", "retries", "check_peak")


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


def as_given(p: Param, value: Any) -> Any:
    """A value of a file (a config file's, a campaign cell's) as a flag would give it: a
    list joined with commas where the flag takes one value, one value as a list where
    the flag is repeated."""
    if isinstance(value, list) and p.cli is not list:
        return ",".join(str(v) for v in value)
    if p.cli is list and not isinstance(value, list):
        return [value]
    return value


def checked_config(path: Path | None, given: Given, *, environ: bool = True) -> Config:
    """Defaults < the config file at ``path`` (None: none; ``environ``: NETASSAY_CONFIG
    read where no path is given) < the testbed knobs given; every method's section of
    the file checked against its parameters (a bad key or value names its line)."""
    testbed = knobs(given)
    cfg = load_config(path, overrides={"testbed": testbed}, environ=environ)
    for name, values in list(cfg.methods.items()):
        ps = file_params(name)
        values = cfg.methods[name] = _renamed_keys(cfg, name, values, ps)
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


def _renamed_keys(cfg: Config, name: str, values: dict[str, Any], ps: dict[str, Param]) -> Any:
    """A config file's [method] section with a key of a flag's older spelling (rtt's
    'rate') as today's ('probe_rate'), each said deprecated once."""
    return renamed_keys(values, ps, lambda key: (cfg.where(name, key), f"[{name}]"))


def knobs(given: Given) -> dict[str, Any]:
    """The testbed knobs given, as TestbedConfig's fields (parsed)."""
    out = {}
    for f, p in declared(TestbedConfig):
        if given.get(p.name) is not None:
            out[f.name] = p.value(given[p.name])
    return out


def options_of(method: str, given: Given, cfg: Config) -> tuple[Given, RunOptions]:
    """What ``method`` runs with: ``given`` over the config's [method] section (its
    values where nothing was given; a flag neither given nor in the file is off), and its
    RunOptions (the testbed knobs given, ``cfg``). A store that cannot be opened or
    written is refused here, before anything is built."""
    ps = file_params(method)
    from_file = {k: as_given(ps[k], v) for k, v in cfg.section(method).items()}
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


def request_of(
    method: str, given: Given, options: RunOptions, flags: Collection[str] = ()
) -> tuple[Any, RunOptions]:
    """The method's Request from ``given`` (``options_of``'s values) and the run options
    it runs with: its loads in frames/s (``flags``: the keys given rather than taken from
    the config file, whose own lines its errors name)."""
    m = registry.method(method)
    if load_params(m.request):
        given, written = resolved(given, options, m.request, method, flags)
        options = replace(options, rates=written)
    return request_from(m.request, given), options


class Resolved(NamedTuple):
    """What a method runs with, resolved once from a command's flags or a campaign
    cell's settings: its Request, and its RunOptions (the testbed it takes, the config
    in force with the testbed knobs given, the loads' written form)."""

    request: Any
    options: RunOptions


@runtime_checkable
class LineLoads(Protocol):
    """A Request whose loads are held to a testbed's line rate (sweep, search): its loads
    in frames/s (None: none fixed yet) and the flag they were given by."""

    def line_loads(self) -> tuple[tuple[float, ...] | None, str]: ...


@runtime_checkable
class Validated(Protocol):
    """A Request that checks itself as a whole (a campaign cell's, before its child)."""

    def validate(self) -> None: ...


@overload
def resolve(
    method: str, given: Given, config_file: Path | None, *, environ: bool = ...,
    series: Literal[False] = ...,
) -> Resolved: ...  # fmt: skip
@overload
def resolve(
    method: str, given: Given, config_file: Path | None, *, environ: bool = ...,
    series: Literal[True],
) -> Resolved | Series: ...  # fmt: skip
def resolve(
    method: str, given: Given, config_file: Path | None, *, environ: bool = True,
    series: bool = False,
) -> Resolved | Series:  # fmt: skip
    """``method``'s Request and RunOptions from ``given`` (the values by key, None where
    not given: a command's flags, a campaign cell's settings) over the [method] section of
    ``config_file`` (``checked_config``; a cell has none and reads no environment, so it
    runs as its campaign file says on whichever host): the run options and the store checked
    (``options_of``), the loads in frames/s on the testbed the run takes and the Request
    (``request_of``; an error about a value from the file names its line), and the
    testbed a ``--testbed`` names, the Request's loads refused there above its ports'
    line rate (``LineLoads``). ``series``: a list given (--sizes, a scale knob's) is a
    Series to run value by value (``shared.series_plan``), planned with the run options
    of its first value; None given, the one run's."""
    # a series: its first value stands for the list while the options are read
    listed, given = series_plan.listed(given) if series else (None, given)
    if listed is None:
        _refused_on_resume(method, given)
    cfg = checked_config(config_file, given, environ=environ)
    merged, options = options_of(method, given, cfg)
    if listed is not None:
        return listed.planned(options)
    flags = {k for k, v in given.items() if v is not None}  # given, not from the file
    req, options = request_of(method, merged, options, flags)
    loads, what = req.line_loads() if isinstance(req, LineLoads) else (None, "load")
    options = replace(options, name=lab.named_testbed(options, loads, what))
    return Resolved(req, options)


def _refused_on_resume(method: str, given: Given) -> None:
    """A resume of a method whose Request keeps its plan (``RESUME_KEEPS_PLAN``: the
    sweep's, the soak's) continues the stored plan and label: a flag of the plan given,
    or --label, is refused, never silently ignored."""
    request = registry.method(method).request
    what = getattr(request, "RESUME_KEEPS_PLAN", None)
    if what is None or not given.get("resume"):
        return
    keys = [p.flag for _, p in declared(request) if given.get(p.name) is not None]
    lab.refuse_with_resume(keys + (["--label"] if given.get("label") else []), what)


def _in_scenario(req: Any, options: RunOptions, values: dict[str, Any]) -> tuple[Any, RunOptions]:
    """An acceptance test in the scenario ``values`` give (its label saying which)."""
    from netassay.methods.accept import scenarios  # deferred: the one method that has them

    one = scenarios.requests(replace(req, label=options.label), [scenarios.of_keys(values)])[0]
    return one, replace(options, label=one.label)


def cell_given(method: str, settings: dict[str, Any]) -> Given:
    """A campaign cell's settings as its command's flags would give them, with the flags
    its cells always give (``Method.cell_flags``: an acceptance cell's --embedded)."""
    m = registry.method(method)
    ps = {
        p.name: p
        for cls in (m.request, RunOptions, *((m.knobs,) if m.knobs is not None else ()))
        for _, p in declared(cls)
    }
    given = {k: _typed(ps[k], v) for k, v in settings.items()}
    for flag in m.cell_flags:
        (on,) = [p for p in ps.values() if p.flag == flag and p.cli is bool]
        given[on.name] = not on.negate
    return given


def _typed(p: Param, value: Any) -> Any:
    """A file's value as its flag gives it: text as typed (a list joined with commas, or
    each item of a repeated flag), read as the flag's type (int, float, str); a bool as
    the field's value."""
    if p.cli is bool or value is None:
        return value
    flag = as_given(p, value)
    if p.cli is list:
        return [str(v) for v in flag]
    text = str(flag)
    try:
        return p.cli(text) if p.cli in (str, int, float) else text
    except ValueError as exc:
        raise UsageError(
            f"bad {p.flag} '{text}'", f"not a {p.cli.__name__}", "fix the value"
        ) from exc


def cell(
    method: str, settings: dict[str, Any], *, db: str, name: str, label: str
) -> tuple[Any, RunOptions]:
    """A campaign cell's (Request, RunOptions): its settings on testbed ``name``, stored
    in ``db`` with ``label``; the config of a cell is the defaults and its own knobs (no
    config file: a cell runs what its campaign file says, on whichever host)."""
    m = registry.method(method)
    scenario = {p.name for _, p in declared(m.request) if p.scenario}
    own = {k: v for k, v in settings.items() if k in scenario}
    rest = {k: v for k, v in settings.items() if k not in scenario}
    given = {**cell_given(method, rest), "db": db, "name": name, "label": label}
    req, options = resolve(method, given, None, environ=False)
    if own:  # an acceptance cell's scenario knobs: as 'accept --scenarios' runs one
        req, options = _in_scenario(req, options, own)
    if isinstance(req, Validated):  # refused before its child starts, as the file's check does
        req.validate()
    return req, options


def run(method: str, request: Any, options: RunOptions, progress: Progress) -> Any:
    """Run ``method`` on ``request``: its protocol's ``run``."""
    return registry.method(method).run(request, options, progress)

"""The campaign file: a TOML matrix of configurations, typed and checked before anything runs.

    [campaign]                 name, method (sweep|search|accept|rtt|flood|batching), ...
    [fixed]                    settings every cell shares
    [factors]                  each factor's levels: the cells are their full factorial
    [[cells]]                  or an explicit list of cells (each sets its factor values)

Every key of ``[fixed]``, ``[factors]`` and ``[[cells]]`` is a parameter of the cell's
method, as the method declares it (``params``: its request's fields, the run options its
command takes, the testbed knobs). Every bad key or value is reported, one line each,
with the file and line; nothing runs until the file is clean.

An ``accept`` cell is an acceptance test on the embedded link of the worker's host
(``--embedded``): its keys are the test's flags (contract, layer, sender, runs,
duration, the embedded link's ground truths) and the scenario knobs of seed 004's matrix
(client/server CPU, rx/tx steering CPUs, socket buffers, MTU), its scenario. An ``rtt``
cell is an rtt measurement (seed 002's factors: path, probe, rate, size, background
load, responder and its hold). A ``batching`` cell is a batching measurement (seed 003,
3.4: path, rate, GRO, flush timeout, deferred interrupts, threaded NAPI, XDP, busy
polling). A cell runs as its method's command would (``invoke.cell``, on its worker).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import MISSING, dataclass
from pathlib import Path
from typing import Any

from netassay import methods as registry
from netassay import tomlfile
from netassay.errors import InputError, UsageError
from netassay.loads import units_of
from netassay.methods.base import Method, RunOptions, an
from netassay.methods.base import defaults as base_defaults
from netassay.params import (
    Param,
    choice,
    declared,
    default_of,
    renamed_keys,
    request_from,
    spelling_hint,
    whole,
)
from netassay.shared.rates import LoadError, in_frames, load_params

_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
CAMPAIGN_KEYS = ("name", "method", "repetitions", "seed", "description")
SECTIONS = ("campaign", "fixed", "factors", "cells")


class CampaignFileError(InputError):
    """A campaign file with problems: one line per bad key or value, file and line named."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(problems[0] if problems else "bad campaign file")

    def line(self) -> str:
        return "\n".join(self.problems)


def _ours(m: Method) -> list[Param]:
    """A method's campaign keys: its request's, the run options its command takes, and
    the router testbed's knobs when it runs on that testbed."""
    out = [p for _, p in declared(m.request)]
    out += [p for f, p in declared(RunOptions) if f.name in m.run_options]
    if m.knobs is not None:
        out += [p for _, p in declared(m.knobs)]
    return [p for p in out if p.campaign]


def params(method: str) -> dict[str, Param]:
    """The keys a campaign cell of ``method`` takes, each with its parameter."""
    return {p.name: p for p in _ours(registry.method(method))}


def owners(key: str) -> list[str]:
    """The methods that take ``key``."""
    return [m.name for m in registry.campaign_methods() if key in params(m.name)]


def defaults(method: str) -> dict[str, Any]:
    """What a cell of ``method`` runs with when the file does not say: the method's own
    defaults of the keys it names (a search has its own, decided as it goes)."""
    m = registry.method(method)
    return {k: v for k, v in base_defaults(m.request).items() if k in m.cell_defaults}


@dataclass(frozen=True)
class Campaign:
    """A campaign file, checked: every cell is ``fixed`` plus its own factor values."""

    path: str
    name: str
    method: str
    repetitions: int
    seed: int | None
    fixed: dict[str, Any]
    factors: dict[str, tuple[Any, ...]]  # each factor's levels, in the file's order
    cells: tuple[dict[str, Any], ...]  # each cell's factor values
    explicit: bool = False  # cells listed in [[cells]], not the full factorial
    description: str = ""

    def settings(self, cell: int) -> dict[str, Any]:
        """What cell ``cell`` runs: the method's defaults < [fixed] < its factor values."""
        return {**defaults(self.method), **self.fixed, **self.cells[cell]}

    def ordinal(self, factor: str) -> bool:
        """A factor whose levels are ordered numbers (three or more: Kendall's tau-b)."""
        return params(self.method)[factor].ordinal

    def level_key(self, factor: str, value: Any) -> Any:
        """The value as a number (ordinal factors) or as given: levels sort by it."""
        return params(self.method)[factor].canonical(value)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "method": self.method,
            "repetitions": self.repetitions,
            "seed": self.seed,
            "fixed": self.fixed,
            "factors": {k: list(v) for k, v in self.factors.items()},
            "factor_order": list(self.factors),  # the store sorts a table's keys
            "cells": [dict(c) for c in self.cells],
            "explicit": self.explicit,
            "description": self.description,
        }


def load(path: str | Path) -> Campaign:
    """Read and check a campaign file; every problem at once (CampaignFileError)."""
    data, lines = tomlfile.read(path, "campaign file")
    return _Checker(data, lines, str(path)).campaign()


def parse(text: str, origin: str = "<campaign>") -> Campaign:
    data, lines = tomlfile.parse(text, origin)
    return _Checker(data, lines, origin).campaign()


def _one_line(text: str) -> str:
    """``text`` with every control character as its escape ('\\r' for a carriage
    return): a problem's line never breaks."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


class _Checker:
    def __init__(self, data: dict[str, Any], lines: tomlfile.Lines, origin: str) -> None:
        self.data, self.lines, self.origin = data, lines, origin
        self.problems: list[tuple[int, str]] = []

    def bad(self, table: str, key: str | None, what: str, todo: str, idx: int = 0) -> None:
        """One problem of the file, one line: a value's control characters (a carriage
        return in a string, as a parser's refusal may quote it) written as escapes."""
        n = self.lines.line(table, key, idx)
        self.problems.append((n, _one_line(f"{self.origin}:{n}: {what}; {todo}")))

    def campaign(self) -> Campaign:
        for name in self.data:
            if name not in SECTIONS:
                self.bad(
                    name,
                    None,
                    f"unknown section [{name}]",
                    f"known sections: {', '.join(SECTIONS)}",
                )
        head = self._head()
        method = head.get("method", "sweep")
        fixed = self._settings("fixed", self.data.get("fixed", {}), method)
        factors = self._factors(method)
        cells, explicit = self._cells(method, factors, fixed)
        self._required(method, fixed, factors, cells)
        if not self.problems:
            self._loads(method, fixed, factors, cells)
        if self.problems:
            raise CampaignFileError([p for _, p in sorted(self.problems, key=lambda x: x[0])])
        if explicit and not factors:
            factors = _levels_of(cells)
        c = Campaign(
            self.origin,
            head["name"],
            method,
            head.get("repetitions", 1),
            head.get("seed"),
            fixed,
            factors,
            tuple(cells),
            explicit,
            head.get("description", ""),
        )
        self._coherent(c)
        if self.problems:
            raise CampaignFileError([p for _, p in sorted(self.problems, key=lambda x: x[0])])
        return c

    def _coherent(self, c: Campaign) -> None:
        """Each cell's settings make sense together (a flag that needs another, a range
        upside down): refused here, before any cell runs, as the method's command would
        refuse them."""
        if c.method not in registry.REGISTRY:
            return
        m = registry.method(c.method)
        for i, cell in enumerate(c.cells):
            try:
                req = request_from(m.request, in_frames(m.request, c.settings(i)))
                if callable(getattr(req, "validate", None)):
                    req.validate()
                m.plan(req)
            except UsageError as exc:
                table = "cells" if c.explicit else "factors" if c.factors else "fixed"
                self.bad(table, None, f"cell {i + 1} ({describe_cell(cell) or 'fixed'}): "
                         f"{exc.what}", exc.why + (f"; {exc.todo}" if exc.todo else ""),
                         idx=i if c.explicit else 0)  # fmt: skip

    def _required(
        self, method: str, fixed: dict[str, Any], factors: dict[str, Any], cells: list[Any]
    ) -> None:
        """A key the method cannot do without (an accept's contract) is set somewhere."""
        if method not in registry.REGISTRY:
            return
        for f, p in declared(registry.method(method).request):
            if default_of(f) is MISSING and not any(p.name in c for c in (fixed, factors, *cells)):
                self.bad(
                    "fixed",
                    None,
                    f"{an(method)} campaign has no {p.name}",
                    f'add {p.name} = "{p.example}" to [fixed] (or make it a factor)',
                )

    def _loads(
        self, method: str, fixed: dict[str, Any], factors: dict[str, Any], cells: list[Any]
    ) -> None:
        """Loads written in bit/s or as shares convert in every cell (with its frame
        size or mix, layer and line rate) as its command will convert them; a factor's
        levels of an ordered load (a search's bounds) are written in one unit."""
        ps = load_params(registry.method(method).request)
        for key, levels in factors.items():
            if key in ps and ps[key].ordinal and len(units_of(levels)) > 1:
                self.bad("factors", key, f"[factors] {key} mixes loads in frames/s, bit/s "
                         "and shares", "write its levels in one unit")  # fmt: skip
        for i, cell in enumerate(cells):
            settings = {**defaults(method), **fixed, **cell}
            try:
                in_frames(registry.method(method).request, settings)
            except LoadError as exc:
                key = exc.key
                table, idx = ("cells", i) if key in cell and "cells" in self.data else (
                    ("factors", 0) if key in factors else ("fixed", 0))  # fmt: skip
                named = f"cell {i + 1} ({describe_cell(cell)})" if cell else "every cell"
                self.bad(table, key, f"{named}: {exc.what}: {exc.why}", exc.todo, idx)
                if not cell or not factors:
                    return  # one problem, the same in every cell

    def _head(self) -> dict[str, Any]:
        head = self.data.get("campaign")
        if not isinstance(head, dict):
            self.bad(
                "campaign",
                None,
                "no [campaign] table",
                'start the file with [campaign] and name = "..."',
            )
            return {"name": "?"}
        out: dict[str, Any] = {}
        checks: dict[str, Callable[[Any], Any]] = {
            "name": lambda v: (
                v
                if isinstance(v, str) and _NAME.fullmatch(v)
                else _raise("expected 1-40 lower-case letters, digits, '-' or '_'")
            ),
            "method": choice(*(m.name for m in registry.campaign_methods())),
            "repetitions": whole(1, 1000),
            "seed": whole(0, 2**63 - 1),
            "description": lambda v: v if isinstance(v, str) else _raise("expected a string"),
        }
        for key, value in head.items():
            if key not in checks:
                self.bad(
                    "campaign",
                    key,
                    f"unknown key '{key}' in [campaign]",
                    self._misplaced(key, head.get("method"))
                    or spelling_hint(key, CAMPAIGN_KEYS)
                    + f"known keys: {', '.join(CAMPAIGN_KEYS)}",
                )
                continue
            try:
                out[key] = checks[key](value)
            except ValueError as exc:
                self.bad("campaign", key, f"[campaign] {key} = {value!r}: {exc}", "fix the value")
        if "name" not in head:
            self.bad("campaign", None, "[campaign] has no name", 'add name = "..."')
        out.setdefault("name", "?")
        return out

    @staticmethod
    def _misplaced(key: str, method: Any) -> str:
        """A method's setting written in [campaign]: where it goes instead ("" if not)."""
        name = method if isinstance(method, str) and method in registry.REGISTRY else "sweep"
        if key.replace("-", "_") not in params(name):
            return ""
        return f"'{key}' is a setting of {an(name)}: put it in [fixed] (or vary it in [factors])"

    def _value(self, table: str, key: str, value: Any, method: str, idx: int = 0) -> bool:
        where = f"[{table}]" if table != "cells" else f"[[cells]] #{idx + 1}"
        if method not in registry.REGISTRY:
            return False  # named once, in [campaign]
        param = params(method).get(key)
        if param is None:
            others = owners(key)
            if not others:
                self.bad(
                    table,
                    key,
                    f"unknown key '{key}' in {where}",
                    spelling_hint(key, list(params(method)))
                    + f"known keys of {an(method)}: "
                    + ", ".join(params(method)),
                    idx,
                )
                return False
            self.bad(
                table,
                key,
                f"'{key}' in {where} is not a setting of {an(method)}",
                f"it belongs to {' or '.join(map(an, others))}; remove it",
                idx,
            )
            return False
        try:
            param.canonical(value)
        except ValueError as exc:
            self.bad(table, key, f"{where} {key} = {value!r}: {exc}", "fix the value", idx)
            return False
        return True

    def _settings(self, table: str, values: Any, method: str, idx: int = 0) -> dict[str, Any]:
        if not isinstance(values, dict):
            self.bad(table, None, f"[{table}] is not a table", f"write it as [{table}]", idx)
            return {}
        values = self._renamed(table, values, method, idx)
        return {k: v for k, v in values.items() if self._value(table, k, v, method, idx)}

    def _renamed(self, table: str, values: dict[str, Any], method: str, idx: int = 0) -> Any:
        """``values`` with a key of a flag's older spelling (``Param.old``: 'rate' of
        rtt's --rate) as today's ('probe_rate'), each said deprecated once."""
        if method not in registry.REGISTRY:
            return values
        return renamed_keys(
            values, params(method),
            lambda key: (f"{self.origin}:{self.lines.line(table, key, idx)}", f"{an(method)} cell"),
        )  # fmt: skip

    def _factors(self, method: str) -> dict[str, tuple[Any, ...]]:
        raw = self.data.get("factors", {})
        if not isinstance(raw, dict):
            self.bad("factors", None, "[factors] is not a table", "write it as [factors]")
            return {}
        out: dict[str, tuple[Any, ...]] = {}
        for key, levels in self._renamed("factors", raw, method).items():
            if not isinstance(levels, list) or not levels:
                self.bad(
                    "factors",
                    key,
                    f"[factors] {key} = {levels!r}: expected a list of levels",
                    f"write it like {key} = [a, b]",
                )
                continue
            if all(self._value("factors", key, v, method) for v in levels):
                keys = [params(method)[key].canonical(v) for v in levels]
                if len(set(map(repr, keys))) != len(keys):
                    self.bad(
                        "factors",
                        key,
                        f"[factors] {key}: a level is repeated",
                        "give each level once",
                    )
                    continue
                out[key] = tuple(levels)
        fixed = self.data.get("fixed")  # not a table: said once, by _settings
        for key in set(out) & (set(fixed) if isinstance(fixed, dict) else set()):
            self.bad(
                "factors",
                key,
                f"'{key}' is both fixed and a factor",
                "remove it from [fixed] or from [factors]",
            )
        return out

    def _cells(
        self, method: str, factors: dict[str, tuple[Any, ...]], fixed: dict[str, Any]
    ) -> tuple[list[dict[str, Any]], bool]:
        raw = self.data.get("cells")
        if raw is None:
            return expand(factors), False
        if not isinstance(raw, list) or not raw:
            self.bad("cells", None, "cells must be a list of tables", "write [[cells]] tables")
            return [], True
        cells = []
        for i, cell in enumerate(raw):
            values = self._settings("cells", cell, method, i)
            for key, value in values.items():
                if key in fixed:
                    self.bad(
                        "cells",
                        key,
                        f"'{key}' is fixed and set in [[cells]] #{i + 1}",
                        "remove it from one of them",
                        i,
                    )
                elif factors and key not in factors:
                    self.bad(
                        "cells",
                        key,
                        f"'{key}' in [[cells]] #{i + 1} is not a factor",
                        f"factors: {', '.join(factors)}",
                        i,
                    )
                elif factors and value not in factors[key]:
                    self.bad(
                        "cells",
                        key,
                        f"[[cells]] #{i + 1} {key} = {value!r} is not a level of {key}",
                        f"levels: {factors[key]}",
                        i,
                    )
            cells.append(values)
        keys = sorted({k for c in cells for k in c})
        for i, c in enumerate(cells):
            if sorted(c) != keys:
                missing = ", ".join(k for k in keys if k not in c)
                self.bad(
                    "cells",
                    None,
                    f"[[cells]] #{i + 1} does not set {missing}",
                    "every cell sets the same factors",
                    i,
                )
        seen: set[str] = set()
        for i, c in enumerate(cells):
            k = repr(sorted(c.items()))
            if k in seen:
                self.bad("cells", None, f"[[cells]] #{i + 1} repeats a cell", "remove it", i)
            seen.add(k)
        return cells, True


def _raise(why: str) -> Any:
    raise ValueError(why)


def expand(factors: dict[str, tuple[Any, ...]]) -> list[dict[str, Any]]:
    """The full factorial: every combination of levels, the first factor varying slowest."""
    names = list(factors)
    return [
        dict(zip(names, combo, strict=True))
        for combo in itertools.product(*(factors[n] for n in names))
    ]


def _levels_of(cells: list[dict[str, Any]]) -> dict[str, tuple[Any, ...]]:
    out: dict[str, list[Any]] = {}
    for c in cells:
        for k, v in c.items():
            if v not in out.setdefault(k, []):
                out[k].append(v)
    return {k: tuple(v) for k, v in out.items()}


def describe_cell(values: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items()) or "(no factor)"

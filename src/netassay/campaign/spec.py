"""The campaign file: a TOML matrix of configurations, typed and checked before anything runs.

    [campaign]                 name, method (sweep | search | accept | rtt), repetitions, seed
    [fixed]                    settings every cell shares
    [factors]                  each factor's levels: the cells are their full factorial
    [[cells]]                  or an explicit list of cells (each sets its factor values)

Every key of ``[fixed]``, ``[factors]`` and ``[[cells]]`` is a testbed knob or a
parameter of the cell's method (``PARAMS``). Every bad key or value is reported, one line
each, with the file and line; nothing runs until the file is clean.

An ``accept`` cell is ``netassay accept --embedded`` on the worker's host: its keys are
the test's flags (contract, layer, sender, runs, duration, the embedded link's ground
truths) and the scenario knobs of seed 004's matrix (client/server CPU, rx/tx steering
CPUs, socket buffers, MTU), which the cell passes as a one-scenario file. An ``rtt``
cell is ``netassay rtt`` (seed 002's factors: path, probe, rate, size, background load,
responder and its hold).
"""

from __future__ import annotations

import itertools
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netassay.config import PINNINGS, SUTS
from netassay.errors import InputError, NetassayError
from netassay.units import parse_count, parse_duration, parse_pause, parse_rate, parse_rates

METHODS = ("sweep", "search", "accept", "rtt")
LAB = ("sweep", "search")  # the methods that run on the router testbed
SENDERS = ("iperf3", "netassay-gen")
LAYERS = ("payload", "ip", "ethernet", "l1")
SINKS = ("xdp", "nft", "xdp+nft")
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


def _choice(options: tuple[Any, ...]) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        if v not in options:
            raise ValueError(f"expected one of {', '.join(map(str, options))}")
        return v

    return check


def _int(lo: int, hi: int | None = None) -> Callable[[Any], int]:
    def check(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError("expected a whole number")
        if v < lo or (hi is not None and v > hi):
            raise ValueError(f"expected {lo}..{hi}" if hi is not None else f"expected >= {lo}")
        return v

    return check


def _float(lo: float, hi: float, closed_hi: bool = False) -> Callable[[Any], float]:
    def check(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float | str):
            raise ValueError("expected a number")
        x = (
            float(v)
            if not isinstance(v, str)
            else float(v.rstrip("%")) / (100 if v.endswith("%") else 1)
        )
        if not (lo <= x < hi or (closed_hi and x == hi)):
            raise ValueError(f"expected a value in [{lo:g}, {hi:g}{']' if closed_hi else ')'}")
        return x

    return check


def _units(parse: Callable[[str], float]) -> Callable[[Any], float]:
    """A rate or a duration: '100k', '1s', or a bare number (pps, seconds)."""

    def check(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float | str):
            raise ValueError("expected a number or a string like 100k or 1s")
        try:
            return float(parse(str(v)))
        except NetassayError as exc:
            raise ValueError(exc.why or exc.what) from exc

    return check


def _rates(v: Any) -> tuple[float, ...]:
    if isinstance(v, list):
        v = ",".join(str(x) for x in v)
    if not isinstance(v, str):
        raise ValueError("expected START:STOP:STEP, 'a,b,c' or a list of rates")
    try:
        return tuple(parse_rates(v))
    except NetassayError as exc:
        raise ValueError(exc.why or exc.what) from exc


def _goals(v: Any) -> tuple[str, ...]:
    items = [v] if isinstance(v, str) else v
    if not isinstance(items, list) or not items or not all(isinstance(g, str) for g in items):
        raise ValueError("expected a goal or a list of goals: ndr, pdr, pdr:RATIO")
    for g in items:
        if not re.fullmatch(r"ndr|pdr(:[0-9.]+%?)?", g):
            raise ValueError(f"unknown goal '{g}' (ndr, pdr, pdr:RATIO)")
    return tuple(items)


def _cpu(v: Any) -> Any:
    """A CPU number, or "none" (the scheduler's choice)."""
    if v == "none":
        return -1
    return _int(0, 4095)(v)


def _buffer(v: Any) -> float:
    """Socket buffer bytes ('4M', 262144), or "default" (the kernel's)."""
    if v == "default":
        return 0.0
    if isinstance(v, bool) or not isinstance(v, int | str):
        raise ValueError('expected a size like 4M, a number of bytes, or "default"')
    try:
        n = parse_count(str(v), "socket buffer")
    except NetassayError as exc:
        raise ValueError(exc.why or exc.what) from exc
    if not 1024 <= n <= 2**31:
        raise ValueError("expected 1k..2G bytes")
    return n


def _load(v: Any) -> Any:
    """An rtt background load, TYPE:N@WHERE or "none" (its canonical label)."""
    from netassay.traffic.load import Load

    if not isinstance(v, str):
        raise ValueError('expected TYPE:N@WHERE (cpu:32@sender) or "none"')
    try:
        load = Load.parse(v)
    except NetassayError as exc:
        raise ValueError(exc.why or exc.what) from exc
    return load.label


def _hold(v: Any) -> float:
    """A responder hold: '200us', '1ms', 0 (nanoseconds, as a number)."""
    m = (
        re.fullmatch(r"([0-9.]+)\s*(ns|us|ms|s)?", str(v).strip())
        if not isinstance(v, bool)
        else None
    )
    if m is None:
        raise ValueError("expected a duration like 200us, 1ms or 0")
    try:
        x = float(m.group(1))
    except ValueError as exc:
        raise ValueError("expected a duration like 200us, 1ms or 0") from exc
    return x * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9, None: 1e9}[m.group(2)]


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError("expected true or false")
    return v


@dataclass(frozen=True)
class Param:
    """A key of a campaign cell: how its value is checked (it returns the value's number
    or canonical form, which also orders the levels), the flag of the cell's command, and
    whether the levels are ordered (numbers: Kendall's tau-b applies)."""

    check: Callable[[Any], Any]
    flag: str
    methods: tuple[str, ...] = LAB
    ordinal: bool = False
    testbed: bool = False
    scenario: bool = False  # an accept scenario knob: passed in the cell's scenario file


_DUR = _units(parse_duration)
_ACC = ("accept",)
_RTT = ("rtt",)
PARAMS: dict[str, Param] = {
    # testbed knobs
    "sut": Param(_choice(SUTS), "--sut", testbed=True),
    "pinning": Param(_choice(PINNINGS), "--pinning", testbed=True),
    "ip": Param(_choice((4, 6)), "--ip", METHODS, testbed=True),
    "size": Param(_int(64, 1518), "--size", (*LAB, "rtt"), ordinal=True, testbed=True),
    "flows": Param(_int(1, 65535), "--flows", ordinal=True, testbed=True),
    "backlog": Param(_int(1, 10_000_000), "--backlog", ordinal=True, testbed=True),
    "txqueuelen": Param(_int(0, 1_000_000), "--txqueuelen", ordinal=True, testbed=True),
    "sut_drop": Param(_float(0.0, 1.0), "--sut-drop", ordinal=True, testbed=True),
    "sut_cap": Param(_units(parse_rate), "--sut-cap", ordinal=True, testbed=True),
    "sink": Param(_choice(SINKS), "--sink", testbed=True),
    # both methods
    "settle": Param(_units(parse_pause), "--settle", ordinal=True),
    "retries": Param(_int(0, 10), "--retries", ordinal=True),
    "peak_check": Param(_bool, "--no-peak-check"),
    # sweep
    "rates": Param(_rates, "--rates", ("sweep",)),
    "runs": Param(_int(1, 1000), "--runs", ("sweep", "accept", "rtt"), ordinal=True),
    "duration": Param(_DUR, "--duration", ("sweep", "accept", "rtt"), ordinal=True),
    # search
    "goals": Param(_goals, "--goal", ("search",)),
    "min_load": Param(_units(parse_rate), "--min-load", ("search",), ordinal=True),
    "max_load": Param(_units(parse_rate), "--max-load", ("search",), ordinal=True),
    "exceed_ratio": Param(_float(0.0, 1.0), "--exceed-ratio", ("search",), ordinal=True),
    "width": Param(_float(0.0, 1.0), "--width", ("search",), ordinal=True),
    "initial_duration": Param(_DUR, "--initial-duration", ("search",), ordinal=True),
    "final_duration": Param(_DUR, "--final-duration", ("search",), ordinal=True),
    "duration_sum": Param(_DUR, "--duration-sum", ("search",), ordinal=True),
    "time_cap": Param(_DUR, "--time-cap", ("search",), ordinal=True),
    "then_verify": Param(_bool, "--then-verify", ("search",)),
    "verify_runs": Param(_int(2, 100), "--verify-runs", ("search",), ordinal=True),
    "verify_duration": Param(_DUR, "--verify-duration", ("search",), ordinal=True),
    "verify_span": Param(_float(0.0, 1.0), "--verify-span", ("search",), ordinal=True),
    "verify_loads": Param(_int(4, 50), "--verify-loads", ("search",), ordinal=True),
    # accept (netassay accept --embedded)
    "contract": Param(_units(parse_rate), "--contract", _ACC, ordinal=True),
    "layer": Param(_choice(LAYERS), "--layer", _ACC),
    "sender": Param(_choice(SENDERS), "--sender", _ACC),
    "ramp": Param(_bool, "--no-ramp", _ACC),
    "ramp_step": Param(_DUR, "--ramp-step", _ACC, ordinal=True),
    "link_cap": Param(_units(parse_rate), "--link-cap", _ACC, ordinal=True, testbed=True),
    "link_drop": Param(_float(0.0, 1.0), "--link-drop", _ACC, ordinal=True, testbed=True),
    "datagram": Param(_int(16, 65507), "--datagram", _ACC, ordinal=True),
    # accept scenario knobs (seed 004: client/server CPU, rxN/txN, buffers, MTU)
    "client_cpu": Param(_cpu, "", _ACC, scenario=True),
    "server_cpu": Param(_cpu, "", _ACC, scenario=True),
    "rx_cpu": Param(_cpu, "", _ACC, scenario=True),
    "tx_cpu": Param(_cpu, "", _ACC, scenario=True),
    "socket_buffer": Param(_buffer, "", _ACC, ordinal=True, scenario=True),
    "mtu": Param(_int(576, 65535), "", _ACC, ordinal=True, scenario=True),
    "busy_receiver": Param(_int(0, 64), "", _ACC, ordinal=True, scenario=True),
    # rtt (seed 002)
    "path": Param(_choice(("bridge", "macvlan", "ipvlan", "veth")), "--path", _RTT),
    "probe": Param(_choice(("icmp", "udp")), "--probe", _RTT),
    "rate": Param(_units(parse_rate), "--rate", _RTT, ordinal=True),
    "count": Param(_int(1, 10_000_000), "--count", _RTT, ordinal=True),
    "timeout": Param(_DUR, "--timeout", _RTT, ordinal=True),
    "load": Param(_load, "--load", _RTT),
    "load_rate": Param(_units(parse_rate), "--load-rate", _RTT, ordinal=True),
    "load_burst": Param(_int(1, 1024), "--load-burst", _RTT, ordinal=True),
    "responder": Param(_choice(("kernel", "app")), "--responder", _RTT),
    "responder_delay": Param(_hold, "--responder-delay", _RTT, ordinal=True),
    "capture": Param(_bool, "--no-capture", _RTT),
    "rate_check": Param(_bool, "--no-rate-check", _RTT),
    "cpus": Param(_choice(("auto", "none")), "--cpus", _RTT),
}
# what a sweep cell runs when the file does not say (a search has its own defaults)
SWEEP_DEFAULTS = {"rates": "50k:600k:50k", "runs": 10, "duration": "2s", "settle": "0.5s"}
# an accept cell: netassay accept's own defaults (the contract has none: the file gives it)
ACCEPT_DEFAULTS = {"layer": "ethernet", "runs": 3, "duration": "10s"}
# an rtt cell: netassay rtt's own defaults
RTT_DEFAULTS = {"runs": 10, "rate": "1k"}
DEFAULTS = {"sweep": SWEEP_DEFAULTS, "accept": ACCEPT_DEFAULTS, "rtt": RTT_DEFAULTS}


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
        base = dict(DEFAULTS.get(self.method, {}))
        return {**base, **self.fixed, **self.cells[cell]}

    def ordinal(self, factor: str) -> bool:
        """A factor whose levels are ordered numbers (three or more: Kendall's tau-b)."""
        return PARAMS[factor].ordinal

    def level_key(self, factor: str, value: Any) -> Any:
        """The value as a number (ordinal factors) or as given: levels sort by it."""
        return PARAMS[factor].check(value)

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


class _Lines:
    """Where each table and key of a TOML file is (tomllib keeps no positions)."""

    _HEAD = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\"]+)\s*\]\]?")
    _KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+|\"[^\"]*\")\s*=")

    def __init__(self, text: str) -> None:
        self.at: dict[tuple[str, int, str | None], int] = {}
        table, idx, counts = "", 0, dict[str, int]()
        depth = 0  # inside a multi-line array: its lines hold values, not keys
        for n, line in enumerate(text.splitlines(), 1):
            code = line.split("#", 1)[0]
            if depth == 0 and (m := self._HEAD.match(code)):
                table = m.group(2).strip('"')
                idx = counts.get(table, -1) + 1 if m.group(1) == "[[" else 0
                counts[table] = idx
                self.at.setdefault((table, idx, None), n)
                continue
            if depth == 0 and (m := self._KEY.match(code)):
                self.at.setdefault((table, idx, m.group(1).strip('"')), n)
                code = code[m.end() :]
            depth = max(0, depth + code.count("[") - code.count("]"))

    def line(self, table: str, key: str | None = None, idx: int = 0) -> int:
        return self.at.get((table, idx, key)) or self.at.get((table, idx, None)) or 1


def load(path: str | Path) -> Campaign:
    """Read and check a campaign file; every problem at once (CampaignFileError)."""
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError as exc:
        raise InputError(f"{p}: no such campaign file", "", "check the path") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: cannot read the campaign file", str(exc), "check it") from exc
    return parse(text, str(p))


def parse(text: str, origin: str = "<campaign>") -> Campaign:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{origin}: not valid TOML", str(exc), "fix the syntax") from exc
    return _Checker(data, _Lines(text), origin).campaign()


class _Checker:
    def __init__(self, data: dict[str, Any], lines: _Lines, origin: str) -> None:
        self.data, self.lines, self.origin = data, lines, origin
        self.problems: list[tuple[int, str]] = []

    def bad(self, table: str, key: str | None, what: str, todo: str, idx: int = 0) -> None:
        n = self.lines.line(table, key, idx)
        self.problems.append((n, f"{self.origin}:{n}: {what}; {todo}"))

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
        if method == "accept" and not any("contract" in c for c in (fixed, factors, *cells)):
            self.bad(
                "fixed",
                None,
                "an accept campaign has no contract",
                'add contract = "100M" to [fixed] (or make it a factor)',
            )
        if self.problems:
            raise CampaignFileError([p for _, p in sorted(self.problems, key=lambda x: x[0])])
        if explicit and not factors:
            factors = _levels_of(cells)
        return Campaign(
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
            "method": _choice(METHODS),
            "repetitions": _int(1, 1000),
            "seed": _int(0, 2**63 - 1),
            "description": lambda v: v if isinstance(v, str) else _raise("expected a string"),
        }
        for key, value in head.items():
            if key not in checks:
                self.bad(
                    "campaign",
                    key,
                    f"unknown key '{key}' in [campaign]",
                    f"known keys: {', '.join(CAMPAIGN_KEYS)}",
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

    def _value(self, table: str, key: str, value: Any, method: str, idx: int = 0) -> bool:
        where = f"[{table}]" if table != "cells" else f"[[cells]] #{idx + 1}"
        param = PARAMS.get(key)
        if param is None:
            self.bad(
                table,
                key,
                f"unknown key '{key}' in {where}",
                f"known keys of {_a(method)}: "
                + ", ".join(k for k, p in PARAMS.items() if method in p.methods),
                idx,
            )
            return False
        if method not in param.methods:
            self.bad(
                table,
                key,
                f"'{key}' in {where} is not a setting of {_a(method)}",
                f"it belongs to {' or '.join(map(_a, param.methods))}; remove it",
                idx,
            )
            return False
        try:
            param.check(value)
        except ValueError as exc:
            self.bad(table, key, f"{where} {key} = {value!r}: {exc}", "fix the value", idx)
            return False
        return True

    def _settings(self, table: str, values: Any, method: str, idx: int = 0) -> dict[str, Any]:
        if not isinstance(values, dict):
            self.bad(table, None, f"[{table}] is not a table", f"write it as [{table}]", idx)
            return {}
        return {k: v for k, v in values.items() if self._value(table, k, v, method, idx)}

    def _factors(self, method: str) -> dict[str, tuple[Any, ...]]:
        raw = self.data.get("factors", {})
        if not isinstance(raw, dict):
            self.bad("factors", None, "[factors] is not a table", "write it as [factors]")
            return {}
        out: dict[str, tuple[Any, ...]] = {}
        for key, levels in raw.items():
            if not isinstance(levels, list) or not levels:
                self.bad(
                    "factors",
                    key,
                    f"[factors] {key} = {levels!r}: expected a list of levels",
                    f"write it like {key} = [a, b]",
                )
                continue
            if all(self._value("factors", key, v, method) for v in levels):
                keys = [PARAMS[key].check(v) for v in levels]
                if len(set(map(repr, keys))) != len(keys):
                    self.bad(
                        "factors",
                        key,
                        f"[factors] {key}: a level is repeated",
                        "give each level once",
                    )
                    continue
                out[key] = tuple(levels)
        for key in set(out) & set(self.data.get("fixed", {}) or {}):
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


def _a(method: str) -> str:
    return f"an {method}" if method in ("accept", "rtt") else f"a {method}"


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


def cell_args(method: str, settings: dict[str, Any]) -> list[str]:
    """The flags of the ``netassay sweep``, ``search`` or ``accept`` a cell runs (an accept
    cell's scenario knobs go to its scenario file: ``cell_scenario``)."""
    out: list[str] = ["--embedded"] if method == "accept" else []
    for key, value in settings.items():
        p = PARAMS[key]
        if p.scenario:
            continue
        if key in ("peak_check", "ramp", "capture", "rate_check"):
            out += [] if value else [p.flag]
        elif isinstance(value, bool):
            out += [p.flag] if value else []
        elif key == "goals":
            for g in [value] if isinstance(value, str) else value:
                out += [p.flag, g]
        elif key == "rates" and isinstance(value, list):
            out += [p.flag, ",".join(str(x) for x in value)]
        else:
            out += [p.flag, str(value)]
    return out


def cell_scenario(settings: dict[str, Any]) -> dict[str, Any]:
    """An accept cell's scenario (the keys of ``netassay accept --scenarios``)."""
    return {k: v for k, v in settings.items() if PARAMS[k].scenario}


def describe_cell(values: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in values.items()) or "(no factor)"

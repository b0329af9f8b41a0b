"""The SUT's throughput as burst, recovery and reconfig take it: a rate given, a share
of the PDR of the newest search stored in --db (read from the store:
``shared/stored_search.py``), or (burst, recovery: ``search``) a short search run first
on the same testbed: the search method run through the registry on the caller's open
testbed (``methods.base.search_first``) with the request ``SEARCH`` says, and its PDR
taken here (``found``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Protocol

from netassay.errors import NetassayError, TestbedError, UsageError
from netassay.params import as_text, tagged
from netassay.shared import stored_search
from netassay.units import fmt_rate, parse_rate

if TYPE_CHECKING:  # MLRsearch is imported only when a search is read or run
    from netassay.shared.search_engine import SearchOutcome

MEASURE = "search"  # a short search run first, on the same testbed
PDR_SHARE = re.compile(r"([0-9]+(?:\.[0-9]+)?)%pdr")


def parse(flag: str, text: Any, words: tuple[str, ...] = ("pdr", MEASURE)) -> str:
    """A rate ('200k'), a share of the stored PDR ('90%pdr') or one of ``words`` ('pdr'
    for 100%; 'search': measured first), checked and kept as written (the PDR is looked
    up when the run starts)."""
    t = str(text).strip().lower()
    if t in words:
        return t
    m = PDR_SHARE.fullmatch(t)
    if m is not None:
        if not 0 < float(m.group(1)) <= 200:
            raise UsageError(f"bad {flag} '{text}'", "a share of the PDR in (0, 200]%",
                             "give e.g. 90%pdr")  # fmt: skip
        return t
    if "%" in t or "pdr" in t:
        shown = ["90%pdr", *(["pdr"] if "pdr" in words else [])]
        raise UsageError(f"bad {flag} '{text}'", "a share of the PDR is written N%pdr",
                         f"give e.g. {', '.join(shown)}{',' if len(shown) > 1 else ''} or a "
                         "rate like 200k")  # fmt: skip
    parse_rate(t)
    return t


def parser(flag: str) -> Any:
    return as_text(lambda v: parse(flag, v))


def checker(flag: str) -> Any:
    """A config or campaign file's value: a rate in frames/s or a share of the PDR."""

    def check(v: Any) -> Any:
        try:
            return parse(flag, v)
        except NetassayError as exc:
            raise ValueError(exc.why or exc.what) from exc

    return tagged(check, "RATE")


def share(text: str) -> float | None:
    """The share of the PDR ``text`` asks for (1.0 for 'pdr'), None for a rate."""
    if text == "pdr":
        return 1.0
    m = PDR_SHARE.fullmatch(text)
    return float(m.group(1)) / 100 if m else None


def resolve(text: str, db: str | None, flag: str) -> tuple[float | None, dict[str, Any] | None]:
    """(frames/s, the stored search it came from or None): a rate as it is, a share of
    the newest stored search's PDR looked up in ``db``; (None, None) for ``search``
    (measured when the testbed is open: ``measure``)."""
    if text == MEASURE:
        return None, None
    s = share(text)
    if s is None:
        return parse_rate(text), None
    try:
        return stored_search.pdr_rate(s, db)
    except UsageError as exc:
        raise UsageError(
            f"{flag} {text} needs a stored search's PDR", exc.why,
            f"run 'netassay search --db FILE' first, or give {flag} as a rate like 200k",
        ) from exc  # fmt: skip


# the short search of ``--throughput search`` (a search's parameters by key): the PDR@0.5%
# alone, trials of 0.5 to 1 s, 2 s of them to classify a load, bounds 2% apart, 3 min
SEARCH = {
    "goals": ["pdr:0.005"], "initial_duration": "0.5s", "final_duration": "1s",
    "duration_sum": "2s", "width": "0.02", "time_cap": "180s",
}  # fmt: skip


class Searched(Protocol):
    """What a search run gives back that ``found`` reads: its experiment, its outcome."""

    @property
    def experiment_id(self) -> int | None: ...

    @property
    def outcome(self) -> SearchOutcome: ...


def found(report: Searched, note: Any) -> tuple[float, dict[str, Any]]:
    """The PDR of the short search of ``--throughput search`` (its conditional
    throughput, else its lower bound) and where it came from; refused when the search
    stopped (a fault, the generator's reach) or found none."""
    outcome, exp = report.outcome, report.experiment_id
    if outcome.stop is not None:
        raise TestbedError(
            f"the search for the throughput stopped: {outcome.stop.message}",
            f"search experiment {exp}; a fault is never counted as SUT loss",
            "give --throughput as a rate, or measure on a quieter host",
        )  # fmt: skip
    goal = outcome.goals[0]
    pdr = goal.conditional_pps or goal.lower_pps
    if pdr is None:
        raise TestbedError(
            "the search for the throughput found no PDR",
            f"search experiment {exp}: loss above 0.5% at its lowest load",
            "give --throughput as a rate",
        )  # fmt: skip
    note(f"throughput: PDR@0.5% {fmt_rate(pdr)} (search experiment {exp})")
    return pdr, {"search_experiment": exp, "goal": goal.goal.key, "pdr_pps": pdr,
                 "measured": True}  # fmt: skip

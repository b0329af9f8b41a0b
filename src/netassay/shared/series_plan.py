"""A series asked for on the command line: ``--sizes 64,512,1518`` (a frame-size series,
``shared.sizes``) or one scale knob given a list, ``--routes 1,1k,100k,1M`` (a scale
series, ``shared.scale``), on a sweep, a search or a flood.

``listed`` finds the one list given and refuses what a series cannot run with (two
lists, --sizes with --size, a list with --resume or --testbed); it reads a scale list,
whose first value stands for the list while the run options are read.
``Listed.planned`` takes the run options the first value runs with: it reads a size
list with the IP version in force, refuses a testbed that is up before the first value,
and names the store. The command then runs itself once per value (``Series.given_at``:
the values it was given, that one value in place of the list, the store named) and
prints the series' tables (``Series.tables``), found in the store among the
experiments its values made.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from netassay import names
from netassay.config import AnalysisConfig, Config
from netassay.errors import NetassayError, UsageError
from netassay.shared import lab, scale, sizes
from netassay.shared.series import Finder
from netassay.store.db import Store
from netassay.testbed.state import Seen

Given = dict[str, Any]  # values by key, as a command's flags give them (None: not given)


class Options(lab.Taken, Protocol):
    """What a series reads of the run options its first value runs with: the testbed
    (``lab.Taken``) and the store."""

    @property
    def db(self) -> str | None: ...


SIZES = "sizes"
# what a frame-size series cannot be given beside --sizes: each size has its own testbed
NOT_WITH_SIZES = (
    ("size", "--size"),
    ("imix", "--imix"),
    ("pcap", "--pcap"),
    ("resume", "--resume"),
    ("testbed", "--testbed"),
)


@dataclass(frozen=True)
class Series:
    """A series to run: the key it varies (``sizes`` or a scale knob), its flag, its
    values in the order given, the store each value's result goes to, and the analysis
    settings its tables are made with."""

    key: str
    flag: str
    values: list[int]
    given: Given
    db: str
    analysis: AnalysisConfig

    def named(self, value: int) -> str:
        """One value as the series says it: 'frame size 64 B', '--routes 100,000'."""
        return f"frame size {value} B" if self.key == SIZES else f"{self.flag} {value:,}"

    def heading(self, value: int, i: int) -> str:
        """The line said before the ``i``-th value runs."""
        return f"{self.named(value)} ({i}/{len(self.values)} of the series)"

    def given_at(self, value: int) -> Given:
        """The values the command runs with for ``value``: as given, that one value in
        place of the list, the series' store named."""
        if self.key == SIZES:
            return {**self.given, SIZES: None, "size": value, "db": self.db}
        return {**self.given, self.key: str(value), "db": self.db}

    def since(self) -> int:
        """The newest experiment's id in the store before the series (0: none yet, or no
        store): the series' experiments are the ones after it."""
        try:
            with Store(self.db, readonly=True) as st:
                return max((e.id for e in st.experiments()), default=0)
        except NetassayError:
            return 0

    def tables(self, since: int, of_kind: Finder) -> list[tuple[dict[str, Any], str]]:
        """Each series found among the experiments after ``since``: its JSON object and
        its table's text (``of_kind``: a kind's method, which gives its figures)."""
        with Store(self.db, readonly=True) as st:
            if self.key == SIZES:
                found_sizes = sizes.series_in(st, self.analysis, of_kind, since)
                return [(s.as_json(), sizes.table_text(s)) for s in found_sizes]
            found = scale.series_in(st, self.analysis, of_kind, since)
            return [(s.as_json(), scale.table_text(s)) for s in found if s.knob == self.key]


@dataclass(frozen=True)
class Listed:
    """The list a command was given (a scale knob's already read), before the run
    options are known: ``given``, the command's values with the list."""

    key: str
    flag: str
    text: str
    values: list[int]
    given: Given

    def planned(self, options: Options) -> Series:
        """The series, with the run options its first value runs with: a size list read
        with the IP version in force, a testbed that is up refused, the store named."""
        cfg = options.config or Config()
        values = self.values
        if self.key == SIZES:
            ip = options.testbed_flags.get("ip_version") or cfg.testbed.ip_version
            values = sizes.parse_sizes(self.text, int(ip))
            named = self.given.get("name") is not None  # from --name, not the file or default
            refuse_up(options.seen, options.name or names.DEFAULT_NAME, values, named)
        db = lab.store_path(options.db)
        return Series(self.key, self.flag, values, self.given, db, cfg.analysis)


def listed(given: Given) -> tuple[Listed | None, Given]:
    """The one list ``given`` holds (--sizes, or a scale knob's; None when none does),
    and the values the run options are read with (one value in place of the list); a
    UsageError for two lists or for what a series cannot run with."""
    lists = [k for k in scale.KNOBS if scale.is_list(given.get(k))]
    if given.get(SIZES):
        for knob in lists:
            flag = scale.KNOBS[knob][0]
            raise UsageError(
                f"--sizes with a {flag} list", "a series varies one thing",
                f"drop --sizes or give {flag} one value",
            )  # fmt: skip
        _refuse_beside("--sizes", given, NOT_WITH_SIZES, "sizes", "or --sizes")
        return Listed(SIZES, "--sizes", str(given[SIZES]), [], given), {**given, SIZES: None}
    if not lists:
        return None, given
    key, flags = lists[0], [scale.KNOBS[k][0] for k in lists]
    if len(lists) > 1:
        raise UsageError(
            f"{' and '.join(flags)} are both lists", "a scale series varies one knob",
            "give a list to one of them",
        )  # fmt: skip
    beside = (("resume", "--resume"), ("testbed", "--testbed"))
    _refuse_beside(f"{flags[0]} list", given, beside, "values", f"or give {flags[0]} one value")
    values = scale.parse_list(str(given[key]), flags[0])
    return Listed(key, flags[0], str(given[key]), values, given), {**given, key: str(values[0])}


def _refuse_beside(
    what: str, given: Given, beside: tuple[tuple[str, str], ...],
    each: Literal["sizes", "values"], other: str,
) -> None:  # fmt: skip
    for key, flag in beside:
        if given.get(key):
            one = "size" if each == "sizes" else "value"
            raise UsageError(
                f"{what} with {flag}",
                f"a series runs each of its {each} on a testbed it builds for that {one}",
                f"drop {flag} ({other})",
            )


def refuse_up(seen: Seen, name: str, values: list[int], named: bool) -> None:
    """A frame-size series on a testbed that is up (``testbed up``) is refused before
    its first size: the testbed's frame size is its own, and a series needs a testbed
    per size, which a run builds and removes itself; it never takes down one it did not
    build. ``named``: the name came from --name (else the config file or the default);
    ``seen``: the states the run has read."""
    st = seen.read(name)
    if st is None:
        return
    have = (st.get("config") or {}).get("size_bytes")
    if set(values) <= {have}:
        return  # a series of the testbed's own size alone runs on it as it is
    if st.get("persistent") is not True:  # a run's own testbed, being built or used
        raise UsageError(
            f"--sizes on testbed '{name}', which another netassay run is using",
            "a series builds a testbed of its name for each size",
            "wait for that run to end, or give --name of another testbed",
        )
    todo = (
        "leave --name off (the series builds a testbed for each size and removes it)"
        if named else
        "give --name of a testbed that is not up (the series builds it for each size and "
        "removes it)"
    )  # fmt: skip
    raise UsageError(
        f"--sizes on testbed '{name}', which is up with {have}-byte frames",
        "a series needs a testbed for each of its sizes, and netassay does not take down "
        "a testbed that 'testbed up' left for you",
        f"{todo}, or bring it down first ('netassay testbed down --name {name}')",
    )

"""The shape every method has: the ``Method`` protocol, and what methods share.

A method is a package under ``methods/`` whose ``METHOD`` satisfies ``Method``; the
registry (``methods/__init__.py``) lists them. Nothing outside a method's package asks
what kind of experiment it holds: ``assess``, ``report``, ``compare``, ``export`` and the
campaign runner look the method up in the registry and call these.

- ``request``: a frozen dataclass, one field per parameter, each declared once with its
  flag, help, parser and range (``params.param``); the command line's options and the
  campaign file's keys are derived from it. ``validate()`` refuses what makes no sense.
- ``plan(request)``: what will run and how long it takes, before anything is touched.
- ``run(request, options, progress)``: measure on a testbed, store every result as it
  ends, return what the view shows (when a signal stops it: ``Interrupted``, saying
  what it stored and how to resume).
- ``analyse(inputs, cfg)``: what the inputs (stores; a sweep also reads PASTRAMI files)
  hold of this method, as results; ``view(result, as_json)``: a result in words or as
  one JSON line.
- ``judged(result)``: what a result is called and its verdict (None for a method that
  judges nothing): what ``--fail-on`` gates on.
- ``sections(store, out, cfg, used, suffix)``: the method's part of a report (figure
  jobs the report draws, pages written once they are drawn;
  ``used`` holds the figure names taken, ``suffix`` marks the store's pages).
- ``cell(store, experiment, cfg)``: a campaign cell's figures, which ``comparison``
  says how to rank, test and show.
- ``compare(store, how)``: a store's results set side by side outside a campaign, as
  ``compare`` shows them (None for a method that compares nothing: ``NothingCompared``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from netassay.config import AnalysisConfig, Config, TestbedConfig
from netassay.errors import Interrupted, UsageError
from netassay.params import declared, default_of, flag, param, request_from, whole
from netassay.shared import throughput
from netassay.shared.plots import slugify
from netassay.shared.render import FigureJob, Section, data_of
from netassay.store.db import Experiment, Store
from netassay.store.paths import open_store, store_paths
from netassay.testbed.state import Seen

if TYPE_CHECKING:
    from netassay.trial.engine import TrialContext

Progress = Callable[[str], None]  # one line of progress (to stderr)
Column = tuple[str, Callable[[dict[str, Any]], str]]  # a page column: header, row -> text


@dataclass(frozen=True)
class Plan:
    """What a request will run: its trials (None: decided as it goes, a search), the
    time it takes (the worst case where it is not known), and the plan in words."""

    trials: int | None
    estimate_s: float
    lines: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunOptions:
    """What every measuring run shares, whichever the method: the testbed it runs on,
    the store it writes, the experiment's label, how often a faulty trial is repeated,
    whether the generator's peak is probed first, and a resume of an unfinished run.
    Each is declared once (``params``); a method names those its command takes
    (``Method.run_options``)."""

    name: str | None = param(  # the testbed (None: the method's default)
        "--name",
        "Testbed name (1-8 a-z0-9).",
        default=None,
        campaign=False,
        metavar="NAME",
    )
    db: str | None = param(
        "--db",
        "Results store (SQLite), created if new.",
        default=None,
        campaign=False,
        metavar="FILE",
    )
    label: str = param("--label", "Experiment label.", default="", campaign=False, metavar="TEXT")
    retries: int | None = param(  # None: the method's default
        "--retries", "Repeat a trial that is a measurement fault.", default=None, cli=int,
        check=whole(0, 10), ordinal=True,
    )  # fmt: skip
    check_peak: bool = param(
        "--no-peak-check", "Skip the generator peak probe.", default=True, cli=bool,
        negate=True, check=flag, key="peak_check",
    )  # fmt: skip
    resume: bool = param(
        "--resume", "Continue an unfinished run in --db (the newest).", default=False,
        cli=bool, campaign=False,
    )  # fmt: skip
    experiment: int | None = param(  # with resume: the experiment to continue
        "--experiment", "With --resume: the experiment id to continue.", default=None,
        cli=int, campaign=False, metavar="ID",
    )  # fmt: skip
    testbed: str | None = param(  # --testbed: a testbed that exists, used as it is
        "--testbed",
        "Run on this testbed as it is registered or up (e.g. one from 'testbed external'); "
        "it must exist.",
        default=None, campaign=False, metavar="NAME",
    )  # fmt: skip
    hook_before: str | None = param(
        "--hook-before",
        "A command run in the SUT's namespace before each trial (split into words, no "
        "shell; the load, run and trial id in its NETASSAY_* variables); its output is "
        "stored with the trial and a failure makes the trial a measurement fault.",
        default=None, campaign=False, metavar="COMMAND",
    )  # fmt: skip
    hook_after: str | None = param(
        "--hook-after",
        "A command run in the SUT's namespace after each trial closed (as --hook-before, "
        "with NETASSAY_SENT and NETASSAY_RECEIVED).",
        default=None, campaign=False, metavar="COMMAND",
    )  # fmt: skip
    testbed_flags: dict[str, Any] = field(default_factory=dict)  # testbed knobs given
    config: Config | None = None  # defaults < the config file (None: the defaults)
    rates: dict[str, Any] | None = None  # loads written in bit/s or as shares (shared.rates)
    # a testbed another run holds open, its trial context, to run on instead of opening
    # one (the search, for burst's and recovery's --throughput search: search_first)
    on: TrialContext | None = None
    # nothing measured: run gives what it would run, which view shows (--dry-run)
    dry_run: bool = False
    # the testbeds' states this run has read, each once (its flags, knobs and checks)
    seen: Seen = field(default_factory=Seen, compare=False, repr=False)


@dataclass(frozen=True)
class Comparison:
    """How a campaign's cells of a method are compared and shown: the figures each
    factor's effect is tested on, those a group summarizes (the first ranks the groups),
    the columns of its campaign page (none: the PASTRAMI page of sweeps and searches)
    and a group in words."""

    metrics: tuple[str, ...]
    figures: tuple[str, ...]
    lowest_first: bool = False
    columns: tuple[Column, ...] = ()
    group_columns: tuple[Column, ...] = ()
    group_text: Callable[[dict[str, Any]], str] | None = None
    progress_rows: str = "trials"  # the store's rows that count a cell's progress
    # each metric's name in words and its axis (metric -> (name, scale, axis label))
    names: dict[str, tuple[str, float, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class CompareHow:
    """How ``compare`` is asked to compare a store's results (its flags): the factors to
    group by, the segments, the per-run statistic, paired runs, a folder for a page."""

    by: tuple[str, ...] = ()
    segments: tuple[str, ...] | None = None
    stat: str = "p50"
    paired: bool = False
    out: str | None = None


@dataclass(frozen=True)
class Compared:
    """A method's comparison of a store's results: as one JSON object, in words, and
    the page written with its figures (None: none)."""

    result: dict[str, Any]
    lines: list[str]
    page: Path | None = None


class NothingCompared:
    """The ``compare`` of a method whose results ``compare`` does not set side by side
    (outside a campaign, where its cells are compared by ``comparison``)."""

    def compare(self, store: Store, how: CompareHow) -> Compared | None:
        return None


class Method(Protocol):
    """One measurement method (see the module). Its data members are read-only
    properties here, so that a method's class attribute of a narrower type (``kinds =
    ("rtt",)``, ``knobs = None``) satisfies them."""

    @property
    def name(self) -> str: ...  # its command, and a campaign's ``method``

    @property
    def kinds(self) -> tuple[str, ...]: ...  # the experiment kinds it stores

    @property
    def request(self) -> type: ...  # its Request

    @property
    def comparison(self) -> Comparison: ...

    @property
    def campaign(self) -> bool: ...  # it runs as a campaign's cells

    # the RunOptions its command takes (db, name, ...)
    @property
    def run_options(self) -> tuple[str, ...]: ...

    @property
    def knobs(self) -> type | None: ...  # the testbed knobs it takes (TestbedConfig), or None

    @property
    def cell_defaults(self) -> tuple[str, ...]: ...  # keys a campaign cell runs with by default

    # flags its campaign cells always give (accept: --embedded)
    @property
    def cell_flags(self) -> tuple[str, ...]: ...

    @property
    def cell_setup_s(self) -> float: ...  # a campaign cell's time beside its runs (testbed, probes)

    # what its text view's marks mean, said once after them ("" : none)
    @property
    def legend(self) -> str: ...

    def plan(self, request: Any) -> Plan: ...

    def run(self, request: Any, options: RunOptions, progress: Progress) -> Any: ...

    def analyse(self, inputs: Sequence[Path], cfg: AnalysisConfig) -> Iterator[Any]: ...

    def view(self, result: Any, as_json: bool) -> str: ...

    def judged(self, result: Any) -> tuple[str, str | None]:
        """What a result is called and its verdict (GOOD, BAD, PASS, FAIL, INCONCLUSIVE;
        None for a method that judges nothing)."""
        ...

    def sections(
        self, store: Store, out: Path, cfg: AnalysisConfig, used: set[str], suffix: str
    ) -> list[Section]: ...

    def cell(self, store: Store, experiment: Experiment, cfg: AnalysisConfig) -> dict[str, Any]: ...

    def cell_brief(self, settings: dict[str, Any]) -> str:
        """A campaign cell's runs in a few words, for its plan ("" : nothing to add)."""
        ...

    def compare(self, store: Store, how: CompareHow) -> Compared | None:
        """What ``compare`` shows of the store's results of this method outside a
        campaign, side by side (None: nothing, e.g. a method that compares nothing)."""
        ...


# -- requests from what a user gave ------------------------------------------------------
def check_ranges(req: Any) -> None:
    """Every parameter of a request given on the command line held to the range its
    declaration checks a file's value against (``Param.check``): one line naming the
    flag when one is out of it."""
    for f, p in declared(type(req)):
        value = getattr(req, f.name, None)
        if value is None or p.check is None:
            continue
        try:
            p.check(value)
        except ValueError as exc:
            raise UsageError(f"bad {p.flag} {value}", str(exc), f"give {p.flag} within it") from exc


def defaults(cls: Any) -> dict[str, Any]:
    """Each parameter's default by key, as a campaign file would write it (none for a
    parameter without one)."""
    out = {}
    for f, p in declared(cls):
        d = default_of(f)
        if d is not dataclasses.MISSING and p.campaign:
            out[p.name] = p.show or d
    return out


def keys(cls: Any) -> list[str]:
    return [p.name for _, p in declared(cls)]


def first(items: Iterable[Any]) -> Any:
    return next(iter(items), None)


def an(name: str) -> str:
    """'a sweep', 'an accept', 'an rtt' (read letter by letter)."""
    return f"an {name}" if name[:1] in "aeiou" or name == "rtt" else f"a {name}"


def texts(lines: Sequence[str]) -> str:
    return "\n".join(lines)


def span(fmt: Callable[[Any], str], s: dict[str, Any]) -> str:
    """A group's figure over its cells: 'median (min .. max)'."""
    return f"{fmt(s['median'])} ({fmt(s['min'])} .. {fmt(s['max'])})"


def from_stores(
    inputs: Sequence[Path], read: Callable[[Path, Store], Iterable[Any]]
) -> Iterator[Any]:
    """What ``read(path, store)`` finds in each store among ``inputs`` (files and
    folders that are not stores passed over), read whole while its store is open: a
    method's ``analyse`` of stored results."""
    for p in store_paths(inputs):
        with open_store(p) as store:
            found = list(read(p, store))
        yield from found


class Runner(Protocol):
    """A one-figure method's ``runner`` module: its job made, then run."""

    def prepare(self, request: Any, options: RunOptions, config: Config, /) -> Any: ...

    def run(self, job: Any, /) -> Any: ...


class Views(Protocol):
    """A one-figure method's ``views`` module: a result in words, as JSON, as lines."""

    def text(self, result: Any, /) -> str: ...

    def as_json(self, result: Any, /) -> str: ...

    def lines(self, result: Any, /) -> list[str]: ...


class OneFigureMethod(NothingCompared):
    """What a method shares whose every run is one stored experiment, shown in the
    report as one section with one figure (burst, recovery, reconfig, soak, doctor):
    its job is made and run by its ``_runner`` module (``prepare(request, options,
    config)``, ``run(job)``), shown by its ``_views`` module (``text``, ``as_json``,
    ``lines``), drawn by ``_figure`` ('module:function') from ``_figure_args``;
    ``_stored`` lists its results in a store. One that ``_judges`` keeps its verdict in
    its result's summary (its ``verdict`` field): ``--fail-on`` gates on it and its figure's title
    says it. These are each method's settings and hooks, private to it: a method shows
    nothing beyond the protocol. The rest of the protocol (plan, comparison, cells) is
    each method's own."""

    name: str
    _runner: Runner
    _views: Views
    _figure: str
    _judges = False

    def _stored(self, store: Store) -> Iterable[Any]:
        raise NotImplementedError

    def _figure_args(self, store: Store, result: Any) -> tuple[Any, ...]:
        """What ``_figure`` is drawn from (and its key made of): its trials and summary."""
        return (store.trials(result.experiment.id), result.summary)

    def _figure_title(self, result: Any) -> str:
        label = str(result.experiment.label)
        return f"{label}: {result.summary.verdict}" if self._judges else label

    def _section_lines(self, result: Any) -> list[str]:
        """A stored run in words, as its report section says it."""
        return self._views.lines(result)

    def _interrupted(self, job: Any) -> Interrupted | None:
        """What an interrupted job stored, said as the typed error its run raises (None:
        the interrupt goes on as it came, and the command line says it)."""
        return None

    def run(self, request: Any, options: RunOptions, progress: Progress) -> Any:
        """The job made by the ``_runner`` (its request and knobs checked before anything
        is built) and run; the stored result. An interrupt (Ctrl-C, SIGTERM) ends it
        as ``_interrupted`` says."""
        job = self._runner.prepare(request, options, options.config or Config())
        job.progress = progress
        if hasattr(job, "note"):  # the lines said beside its progress (a fault, a stall)
            job.note = progress
        try:
            return self._runner.run(job)
        except KeyboardInterrupt as exc:  # the testbed is already down when we get here
            said = self._interrupted(job)
            if said is None:
                raise
            raise said from exc

    def analyse(self, inputs: Sequence[Path], cfg: AnalysisConfig) -> Iterator[Any]:
        return from_stores(inputs, lambda _, store: self._stored(store))

    def judged(self, result: Any) -> tuple[str, str | None]:
        return result.experiment.label, (result.summary.verdict if self._judges else None)

    def view(self, result: Any, as_json: bool) -> str:
        return self._views.as_json(result) if as_json else self._views.text(result)

    def sections(
        self, store: Store, out: Path, cfg: AnalysisConfig, used: set[str], suffix: str = ""
    ) -> list[Section]:
        """One section per stored run: the run in words, its figure."""
        sections = []
        for r in self._stored(store):
            label = r.experiment.label
            stem = out / "figures" / f"{self.name}_{slugify(label, used)}"
            args = self._figure_args(store, r)
            title = self._figure_title(r)
            job = FigureJob(self._figure, args, stem, data_of(*args), kwargs={"title": title})
            text = "\n".join(self._section_lines(r))
            sections.append(Section.drawn(f"{self.name}: {label}", text, job, out))
        return sections


def search_first(
    ctx: TrialContext, name: str, db: str, testbed: TestbedConfig, label: str, note: Progress
) -> tuple[float, dict[str, Any]]:
    """``--throughput search`` (burst, recovery): a short search for the PDR@0.5% run
    through the registry's search on the caller's open testbed (``ctx``), stored in
    ``db`` as a search experiment of its own (after the caller's); (its PDR, where it
    came from), refused when it found none (``shared.throughput.found``)."""
    from netassay import methods as registry  # the registry imports this module

    search = registry.method("search")
    note(f"measuring the throughput first: {label}")
    options = RunOptions(name=name, db=db, label=label, config=Config(testbed=testbed), on=ctx)
    report = search.run(request_from(search.request, throughput.SEARCH), options, note)
    return throughput.found(report, note)


@contextmanager
def run_store(db: str, stored: Callable[[], bool]) -> Iterator[Store]:
    """The store a run writes its results to as they end; one this call created is
    removed again when the run ends (a signal, an error) before ``stored()`` says
    anything was stored: no empty store is left behind."""
    fresh = not Path(db).exists()
    try:
        with Store(db) as st:
            yield st
    except BaseException:
        if fresh and not stored():
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
        raise

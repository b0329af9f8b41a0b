"""What the frame-size series (``shared.sizes``) and the scale series (``shared.scale``)
share: the runs of consecutive experiments, the method of a kind that gives each
experiment's figures (``methods.of_kind``, handed down by the caller: nothing here
imports a method), and the runner that makes a series of each run, one point per value
(``series_of``), then a report section per series, its table and its curve
(``sections``). What differs is the value the series varies, passed in (``Axis``), and
how its section is drawn (``Drawing``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from netassay.config import AnalysisConfig
from netassay.shared.plots import slugify
from netassay.shared.render import FigureJob, Section, data_of
from netassay.store.db import Experiment, Store


class Cells(Protocol):
    """What a series asks of a method: an experiment's figures (``Method.cell``)."""

    def cell(self, store: Store, experiment: Experiment, cfg: AnalysisConfig) -> dict[str, Any]: ...


Finder = Callable[[str], Cells | None]  # a kind's method, None: no method's (methods.of_kind)


def consecutive_runs(
    experiments: list[Any], key: Callable[[Any], Any], value: Callable[[Any], Any]
) -> Iterator[list[Any]]:
    """The runs of a series (frame sizes, a scale knob): consecutive experiments with
    one ``key`` and distinct ``value``s; a new run where the key changes or a value
    repeats."""
    run: list[Any] = []
    for exp in experiments:
        if run and (key(exp) != key(run[0]) or value(exp) in {value(e) for e in run}):
            yield run
            run = []
        run.append(exp)
    if run:
        yield run


class Points(Protocol):
    """A series as the runner fills it: the kind of its experiments, their label, and a
    point per value, in order of the value."""

    kind: str
    label: str
    points: list[dict[str, Any]]


S = TypeVar("S", bound=Points)


@dataclass(frozen=True)
class Axis(Generic[S]):
    """The value one kind of series varies (the frame size, a scale knob's count)."""

    value: Callable[[Experiment], int | None]  # an experiment's (None: it has none)
    new: Callable[[list[Experiment]], S]  # the series of a run, without its points
    point: Callable[[Experiment, int, dict[str, Any]], dict[str, Any]]  # (its figures)


@dataclass(frozen=True)
class Drawing(Generic[S]):
    """How a series of one kind is shown in the report: the job that draws its figure,
    the words its figure's file name and its section's title start with, its table."""

    plot: str  # the figure job's function ("module:function")
    prefix: str  # the figure's file: <prefix>_<words><kind> <label>, made a file name
    heading: Callable[[S], str]  # the section's title: <heading><kind>, <label>
    table: Callable[[S], str]
    words: Callable[[S], str] = lambda s: ""


def series_of(
    axis: Axis[S], runs: Iterable[list[Experiment]], store: Store, cfg: AnalysisConfig,
    of_kind: Finder,
) -> list[S]:  # fmt: skip
    """A series of each run of two experiments or more whose kind a method measures: a
    point per experiment, in order of its value, from its method's figures."""
    found = []
    for run in runs:
        if len(run) < 2:
            continue
        m = of_kind(run[0].kind)
        if m is None:
            continue
        s = axis.new(run)
        for exp in sorted(run, key=lambda e: axis.value(e) or 0):
            s.points.append(axis.point(exp, axis.value(exp) or 0, m.cell(store, exp, cfg)))
        found.append(s)
    return found


def sections(drawing: Drawing[S], found: list[S], out: Path, used: set[str]) -> list[Section]:
    """One section per series: its table and its figure (a job of ``drawing.plot``)."""
    drawn = []
    for s in found:
        name = slugify(f"{drawing.words(s)}{s.kind} {s.label}", used)
        stem = out / "figures" / f"{drawing.prefix}_{name}"
        job = FigureJob(drawing.plot, (s,), stem, data_of(s))
        title = f"{drawing.heading(s)}{s.kind}{', ' + s.label if s.label else ''}"
        drawn.append(Section.drawn(title, drawing.table(s), job, out))
    return drawn

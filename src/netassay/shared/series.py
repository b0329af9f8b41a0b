"""What the frame-size series (``shared.sizes``) and the scale series (``shared.scale``)
share: the runs of consecutive experiments, and the method of a kind that gives each
experiment's figures (``methods.of_kind``, handed down by the caller: nothing here
imports a method)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

from netassay.config import AnalysisConfig
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

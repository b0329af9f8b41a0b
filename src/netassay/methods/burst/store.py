"""Back-to-back tests in the store: an experiment of kind ``burst``, one trial per burst
(load index = the test, repetition = the burst's step in its search), each a trial of
the trial engine with ``counters["burst"]``: its test, step, length in frames, whether
it lost nothing, and on a test's last burst the test's result."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from netassay.analysis.burst import BurstBenchmark
from netassay.analysis.burst import summary as benchmark
from netassay.store.db import Experiment, Store

KIND = "burst"


@dataclass(frozen=True)
class BurstSummary(BurstBenchmark):
    """A stored back-to-back test summed up: the benchmark (``analysis.burst``), the
    tests planned and left incomplete, the bursts stored and excluded, what the test
    asked for (the throughput's source, the resolution, the wait) and each test's
    result in order (None: it ended on a fault)."""

    tests_planned: int
    tests_incomplete: int
    bursts: int
    bursts_excluded: int
    throughput: str | None
    throughput_from: dict[str, Any] | None  # the stored search (``methods.throughput``)
    resolution: float | None
    wait_s: float | None
    per_test: list[int | None]


@dataclass(frozen=True)
class StoredBurst:
    """A back-to-back experiment as its store holds it: where, itself, its figures."""

    db: Path
    experiment: Experiment
    summary: BurstSummary


@dataclass
class BurstTest:
    """One test of a stored back-to-back test: its bursts, the excluded ones among them,
    and its result (None: it ended on a fault, or was cut short)."""

    test: int
    bursts: int = 0
    excluded: int = 0
    result: int | None = None
    at_limit: bool = False


def tests(trials: list[dict[str, Any]]) -> list[BurstTest]:
    """Each test of the stored bursts, by test."""
    out: dict[int, BurstTest] = {}
    for t in trials:
        b = t["counters"].get("burst", {})
        row = out.setdefault(t["load_index"], BurstTest(t["load_index"]))
        row.bursts += 1
        row.excluded += 1 if t["excluded"] else 0
        if "result" in b:
            row.result, row.at_limit = int(b["result"]), bool(b["at_limit"])
    return [out[k] for k in sorted(out)]


def summary(store: Store, exp: Experiment) -> BurstSummary:
    """The benchmark of a stored test (``analysis.burst.summary``) and its tests."""
    c = exp.config
    trials = store.trials(exp.id)
    per = tests(trials)
    lengths = [r.result for r in per if r.result is not None]
    s = benchmark(lengths, float(c["rate_pps"]), c.get("throughput_pps"), int(c["max_frames"]))
    return BurstSummary(
        **asdict(s),
        tests_planned=int(c["tests"]),
        tests_incomplete=len(per) - len(lengths),
        bursts=len(trials),
        bursts_excluded=sum(1 for t in trials if t["excluded"]),
        throughput=c.get("throughput"),
        throughput_from=c.get("throughput_from"),
        resolution=c.get("resolution"),
        wait_s=c.get("wait_s"),
        per_test=[r.result for r in per],
    )


def stored_bursts(store: Store) -> Iterator[StoredBurst]:
    """Every back-to-back experiment of a store with its summary, oldest first."""
    for exp in list(store.experiments(kinds=(KIND,))):
        yield StoredBurst(Path(store.path), exp, summary(store, exp))

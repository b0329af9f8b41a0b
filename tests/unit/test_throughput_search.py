"""burst's and recovery's ``--throughput search``: the short search it asks the search
method for (``shared/throughput.SEARCH``, a search's parameters by key) and the PDR taken
from what that search found (``throughput.found``): a search over a synthetic SUT whose
capacity is known, and the refusals when it stopped early or found no PDR."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest
from tests.builders import SyntheticSut, cliff

from netassay.errors import TestbedError
from netassay.methods.search.request import SearchRequest
from netassay.params import request_from
from netassay.shared import search_engine, throughput
from netassay.shared.search_spec import Goal, SearchSpec
from netassay.units import fmt_rate

CAP = 60_000.0  # the synthetic SUT's capacity: no loss at or below it


@dataclass(frozen=True)
class Searched:
    """What a search run gives back that ``found`` reads (its report's two fields)."""

    experiment_id: int | None
    outcome: search_engine.SearchOutcome


def _short_search(cap: float) -> search_engine.SearchOutcome:
    req = request_from(SearchRequest, throughput.SEARCH)
    assert req.time_cap_s is not None
    spec = SearchSpec(req.make_goals(), 6_000, 600_000, req.time_cap_s)
    return search_engine.run_search(spec, SyntheticSut(cliff(cap)))


def test_the_short_search_is_the_pdr_alone_in_short_trials():
    req = request_from(SearchRequest, throughput.SEARCH)
    short = Goal(0.005, initial_trial_duration_s=0.5, final_trial_duration_s=1.0,
                 duration_sum_s=2.0, relative_width=0.02)  # fmt: skip
    assert req.make_goals() == (short,)
    assert req.time_cap_s == 180.0
    assert not req.then_verify and req.max_load_pps is None and not req.bidirectional


def test_found_is_the_pdr_of_the_sut_within_the_goals_width():
    said: list[str] = []
    pdr, where = throughput.found(Searched(7, _short_search(CAP)), said.append)
    assert CAP * (1 - 0.02) <= pdr <= CAP * (1 + 0.02), pdr
    assert where == {"search_experiment": 7, "goal": "pdr:0.005", "pdr_pps": pdr, "measured": True}
    assert said == [f"throughput: PDR@0.5% {fmt_rate(pdr)} (search experiment 7)"]


def test_a_search_that_stopped_early_gives_no_throughput():
    out = replace(
        _short_search(CAP), stop=search_engine.Stop(search_engine.FAULT, "a trial stayed a fault")
    )
    with pytest.raises(TestbedError, match="the search for the throughput stopped"):
        throughput.found(Searched(3, out), lambda line: None)


def test_a_sut_that_loses_at_every_load_gives_no_throughput():
    out = _short_search(1_000.0)  # below the search's min load: loss everywhere
    assert out.stop is None and out.goals[0].lower_pps is None
    with pytest.raises(TestbedError, match="found no PDR") as err:
        throughput.found(Searched(3, out), lambda line: None)
    assert "search experiment 3" in err.value.why

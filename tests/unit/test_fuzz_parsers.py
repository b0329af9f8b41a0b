"""A short fuzz run of every parser (tests/fuzzing.py): a few seconds each, every input
read or refused in one line of its class, what is read in range and read back the same.
bench/fuzz.py runs the same targets for 100,000 inputs each."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.fuzzing import TARGETS, check

# inputs per target: the file targets cost 5-40 ms an input, the unit parsers far less
SLOW = {"config_toml": 40, "campaign_toml": 40, "monipe": 40, "iperf3": 80, "pastrami": 100}


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzz(name: str):
    target = TARGETS[name]

    @settings(
        max_examples=SLOW.get(name, 150), deadline=None, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.filter_too_much],
    )  # fmt: skip
    @given(st.data())
    def run(data: st.DataObject) -> None:
        check(target, data.draw(target.strategy(), label=name))

    run()

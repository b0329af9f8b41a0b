"""A series given on the command line (``--sizes``, a scale knob's list) is read and
checked below the command line, in ``invoke.resolve(..., series=True)`` and
``shared.series_plan``: the list found and its refusals, the run options read with its
first value, and each value's flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from netassay import invoke
from netassay.errors import UsageError
from netassay.shared import series_plan
from netassay.shared.series_plan import Series


def test_no_list_is_no_series_and_the_flags_are_as_given() -> None:
    given = {"routes": "1000", "sizes": None, "rates": "10k"}
    listed, one = series_plan.listed(given)
    assert listed is None and one is given


def test_a_scale_list_is_read_and_its_first_value_stands_for_it() -> None:
    listed, one = series_plan.listed({"routes": "1,1k,100k", "flows": "4"})
    assert listed is not None and (listed.key, listed.flag) == ("routes", "--routes")
    assert listed.values == [1, 1000, 100000]
    assert one == {"routes": "1", "flows": "4"}


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"sizes": "64,512", "routes": "1,1k"}, "--sizes with a --routes list"),
        ({"routes": "1,1k", "flows": "1,2"}, "--routes and --flows are both lists"),
        ({"routes": "1,1k", "resume": True}, "--routes list with --resume"),
        ({"nft_rules": "1,10", "testbed": "mine"}, "--nft-rules list with --testbed"),
        ({"sizes": "64,512", "imix": "simple"}, "--sizes with --imix"),
        ({"sizes": "64,512", "resume": True}, "--sizes with --resume"),
        ({"routes": "1,1k,1k"}, "--routes 1,1k,1k: 1,000 is given twice"),
        ({"flows": "1,many"}, "--flows 1,many: 'many' is not a count"),
    ],
)
def test_what_a_series_cannot_run_with_is_refused_in_one_line(given: dict, said: str) -> None:
    with pytest.raises(UsageError) as exc:
        series_plan.listed(given)
    assert exc.value.what == said


def _series(given: dict, tmp_path: Path) -> Series:
    run = invoke.resolve(
        "sweep", {**given, "db": str(tmp_path / "s.db"), "name": "useries"}, None,
        environ=False, series=True,
    )  # fmt: skip
    assert isinstance(run, Series)
    return run


def test_a_size_list_is_read_with_the_ip_version_in_force(tmp_path: Path) -> None:
    four = _series({"sizes": "64,512", "rates": "10k"}, tmp_path)
    assert four.values == [64, 512] and four.db == str(tmp_path / "s.db")
    with pytest.raises(UsageError, match="64 bytes cannot be sent over IPv6"):
        _series({"sizes": "64,512", "ip": "6"}, tmp_path)


def test_each_value_runs_with_the_flags_given_and_that_value(tmp_path: Path) -> None:
    sizes = _series({"sizes": "64,128", "rates": "10k"}, tmp_path)
    at = sizes.given_at(128)
    assert (at["sizes"], at["size"], at["rates"], at["db"]) == (None, 128, "10k", sizes.db)
    assert sizes.heading(128, 2) == "frame size 128 B (2/2 of the series)"
    scale = _series({"routes": "1,100k", "rates": "10k"}, tmp_path)
    assert scale.given_at(100000)["routes"] == "100000"
    assert scale.heading(100000, 2) == "--routes 100,000 (2/2 of the series)"


def test_with_no_list_a_series_command_gets_its_one_run(tmp_path: Path) -> None:
    given = {"rates": "10k,20k", "db": str(tmp_path / "s.db")}
    run = invoke.resolve("sweep", given, None, environ=False, series=True)
    assert isinstance(run, invoke.Resolved) and run.request.rates_pps == (10000.0, 20000.0)


def test_a_resumed_sweep_refuses_a_flag_of_its_plan() -> None:
    with pytest.raises(UsageError) as exc:
        invoke.resolve("sweep", {"resume": True, "runs": "3", "label": "x"}, None, environ=False)
    assert exc.value.what == "--resume takes no --runs, --label"

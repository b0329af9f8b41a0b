"""burst, recovery, reconfig, search --max-latency and the hooks refuse bad input in one
line, exit 2, before they build or store anything; a PDR share needs a stored search."""

from __future__ import annotations

import pytest
from tests.builders import store_with
from tests.conftest import refused_cleanly


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("burst", "--tests", "0"), "--tests"),
        (("burst", "--burst-rate", "fast"), "bad rate 'fast'"),
        (("burst", "--max-burst", "1"), "bad --max-burst 1"),
        (("burst", "--throughput", "90%"), "a share of the PDR is written N%pdr"),
        (("burst", "--throughput", "pdr"), "--throughput pdr needs a stored search's PDR"),
        (("recovery",), "--throughput pdr needs a stored search's PDR"),
        (("recovery", "--throughput", "10k", "--interval", "1ms"), "--interval 0.001s is too"),
        (("recovery", "--throughput", "10k", "--recover-time", "20ms"), "--recover-time 0.02s is"),
        (("recovery", "--throughput", "10k", "--overload", "5"), "--overload"),
        (("recovery", "--throughput", "10k", "--sink", "nft"), "recovery needs the XDP sink"),
        (("reconfig", "--rate", "10k"), "--change is required"),
        (("reconfig", "--rate", "10k", "--change", "nft -f 'x"), "bad --change"),
        (("reconfig", "--rate", "10k", "--change", "true", "--at", "5s", "--duration", "2s"),
         "--at 5s is not within --duration 2s"),
        (("reconfig", "--change", "true"), "--rate 90%pdr needs a stored search's PDR"),
        (("search", "--max-latency", "p99", "--max-load", "1M"), "bad --max-latency 'p99'"),
        (("search", "--max-latency", "p101:1ms", "--max-load", "1M"), "a percentile in (0, 100]"),
        (("search", "--max-latency", "p99:1ms", "--max-load", "1M", "--sink", "nft"),
         "--max-latency needs the XDP sink"),
        (("sweep", "--rates", "10k", "--hook-before", "sh -c 'x"), "bad --hook-before"),
        (("soak", "--rate", "10k", "--hook-after", " "), "--hook-after is empty"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_builds_nothing(cli, args, needle, tmp_path, monkeypatch):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.chdir(tmp_path)
    refused_cleanly(cli(*args), needle, tmp_path)


def test_a_pdr_share_needs_a_search_that_found_a_pdr(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path / "run"))
    no_search = store_with(tmp_path / "flood.db", "mrr")
    for args in (("recovery",), ("burst", "--throughput", "pdr"), ("reconfig", "--change", "x")):
        res = cli(*args, "--db", no_search)
        assert res.returncode == 2 and "holds no search that found a PDR" in res.stderr, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_the_plans_say_how_long(cli):
    from netassay.methods import method
    from netassay.params import request_from

    burst = method("burst").plan(request_from(method("burst").request, {"tests": 3}))
    assert burst.trials is None and burst.estimate_s > 3 * 2
    rec = method("recovery").plan(request_from(method("recovery").request, {"trials": 2}))
    assert rec.trials == 2 and rec.estimate_s >= 2 * 70

"""netassay soak refuses bad input in one line, exit 2, before it builds or stores
anything; a %pdr load needs a stored search in --db; a resume takes no plan flags."""

from __future__ import annotations

import dataclasses
import json

import pytest
from tests.builders import store_with
from tests.conftest import refused_cleanly

from netassay.errors import UsageError


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ((), "--rate is required"),
        (("--rate", "0"), "bad rate '0'"),
        (("--rate", "90%"), "a share of the PDR is written N%pdr"),
        (("--rate", "500%pdr"), "bad --rate '500%pdr'"),
        (("--rate", "90%pdr"), "--rate 90%pdr needs a stored search"),
        (("--rate", "100k", "--duration", "soon"), "bad duration 'soon'"),
        (
            ("--rate", "100k", "--duration", "5s", "--segment-length", "10s"),
            "longer than --duration",
        ),
        (("--rate", "100k", "--segment-length", "500ms"), "--segment-length 0.5s is too short"),
        (("--rate", "100k", "--goal", "2"), "bad --goal '2'"),
        (("--rate", "100k", "--fail-on", "never"), "unknown --fail-on 'never'"),
        (("--rate", "100k", "--name", "BAD!"), "bad testbed name 'BAD!'"),
        (("--resume",), "--resume needs --db"),
        (("--resume", "--rate", "100k"), "--resume takes no --rate"),
        (("--rate", "100k", "--testbed", "a1", "--name", "b1"), "--name b1 and --testbed a1"),
    ],
)
def test_bad_input_is_one_line_and_builds_nothing(cli, args, needle, tmp_path, monkeypatch):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.chdir(tmp_path)
    refused_cleanly(cli("soak", *args), needle, tmp_path)


def test_a_testbed_that_does_not_exist_is_refused_as_sweeps_is(cli, tmp_path, monkeypatch):
    """--testbed names one that exists: none of that name is a testbed error (exit 5)."""
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.chdir(tmp_path)
    for command in ("soak", "sweep"):
        res = cli(
            command, "--rate" if command == "soak" else "--rates", "100k", "--testbed", "nosuch"
        )
        assert res.returncode == 5 and "no testbed named 'nosuch'" in res.stderr, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1 and res.stdout == ""
    assert not (tmp_path / "netassay.db").exists()


def test_a_pdr_share_needs_a_search_that_found_a_pdr(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path / "run"))
    no_search = store_with(tmp_path / "flood.db", "mrr")
    res = cli("soak", "--rate", "90%pdr", "--db", no_search)
    assert res.returncode == 2 and "no PDR in" in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_nothing_to_resume_in_a_store_without_a_soak(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path / "run"))
    db = store_with(tmp_path / "flood.db", "mrr")
    res = cli("soak", "--resume", "--db", db)
    assert res.returncode == 2 and f"nothing to resume in {db}" in res.stderr, res.stderr


def test_a_pdr_share_is_of_the_newest_searchs_pdr(tmp_path):
    from netassay.shared.stored_search import pdr_rate, stored_searches
    from netassay.store.db import Store

    db = store_with(tmp_path / "search.db", "search")
    with Store(db, readonly=True) as st:
        ((exp, out),) = list(stored_searches(st))
    pdr = next(g for g in out.goals if g.goal.loss_ratio == 0.005).conditional_pps
    rate, source = pdr_rate(0.9, str(db))
    assert rate == pytest.approx(0.9 * pdr) and 80_000 < pdr < 110_000  # the 100k cap's
    assert source == {"search_experiment": exp.id, "goal": "pdr:0.005", "pdr_pps": pdr}


def test_a_pdr_share_of_a_bidirectional_search_is_refused(cli, tmp_path, monkeypatch):
    """Its PDR is both directions' aggregate, not a load of one direction."""
    from netassay.store.db import Store

    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path / "run"))
    db = store_with(tmp_path / "search.db", "search")
    with Store(db) as st:
        (exp,) = st.experiments()
        st.update_config(exp.id, {**exp.config, "bidirectional": True})
    res = cli("soak", "--rate", "90%pdr", "--db", db)
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert f"the newest search in {db} is --bidirectional" in line and "add --bidirectional" in line


def test_a_bidirectional_soaks_pdr_share_is_of_a_bidirectional_search_halved(
    cli, tmp_path, monkeypatch
):
    """soak --bidirectional --rate N%pdr: N% of a --bidirectional search's PDR (both
    directions' sum) is the load of each direction halved; a one-way search's PDR is
    refused (it is one direction's), as is --bidirectional where it cannot run."""
    from netassay.shared.stored_search import pdr_rate
    from netassay.store.db import Store

    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path / "run"))
    db = store_with(tmp_path / "search.db", "search")
    one_way, _ = pdr_rate(0.9, str(db))
    res = cli("soak", "--bidirectional", "--rate", "90%pdr", "--db", db)
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert f"--rate 90%pdr with --bidirectional: the newest search in {db} is one-way" in line
    with Store(db) as st:
        (exp,) = st.experiments()
        st.update_config(exp.id, {**exp.config, "bidirectional": True})
    rate, source = pdr_rate(0.9, str(db), bidirectional=True)
    assert rate == pytest.approx(one_way / 2) and source["pdr_pps"] == pytest.approx(one_way / 0.9)
    xdp = cli("soak", "--bidirectional", "--sut", "xdp-router", "--rate", "10k")
    assert xdp.returncode == 2 and "--bidirectional with --sut xdp-router" in xdp.stderr
    assert len(xdp.stderr.strip().splitlines()) == 1, xdp.stderr


def _soak_store(path, done):
    """A store holding one soak of 4 segments of 1 s, ``done`` of them stored."""
    from netassay.config import TestbedConfig
    from netassay.methods.soak.store import KIND
    from netassay.store.db import Store
    from netassay.trial.record import TrialRecord

    config = {"load": "50k", "rate_pps": 50_000.0, "duration_s": 4.0, "segment_s": 1.0,
              "goal": 0.005, "rate_from": None, "testbed": dataclasses.asdict(TestbedConfig()),
              "testbed_name": "soakt"}  # fmt: skip
    second = {"t": 0.0, "dt": 1.0, "offered": 50_000.0, "received": 50_000, "loss_est": 0.0}
    with Store(path) as st:
        exp_id, _ = st.add_experiment(key="soak-1", kind=KIND, source="netassay-testbed",
                                      label="a soak", config=config)  # fmt: skip
        for k in range(done):
            st.add_trial(exp_id, TrialRecord(
                load_index=0, repetition=k, rate_pps=50_000.0, duration_s=1.0, sent=50_000,
                received=50_000, source="netassay-testbed",
                counters={"soak": {"per_second": [{**second, "t": float(k)}]}},
            ))  # fmt: skip
    return exp_id


def test_resume_takes_the_unfinished_soak_with_its_own_plan(tmp_path, cli):
    from netassay.methods.soak.run import resume_soak

    db = tmp_path / "s.db"
    exp_id = _soak_store(db, 2)
    soak = resume_soak(str(db))
    assert (soak.experiment_id, soak.rate_pps, soak.lengths, soak.name) == (
        exp_id, 50_000.0, [1.0, 1.0, 1.0, 1.0], "soakt"
    )  # fmt: skip
    assert [s["t"] for s in soak.seconds] == [0.0, 1.0]
    with pytest.raises(UsageError, match="conflicts with the soak to resume"):
        resume_soak(str(db), name="other")
    a = json.loads(cli("assess", db, "--json", check=True).stdout)
    assert (a["verdict"], a["finished"], a["segments_stored"], a["seconds"]) == (
        "PASS", False, 2, 2
    )  # fmt: skip
    # its keys, as the summary's dict had them (no bidirectional, imix or rates: none here)
    assert sorted(a) == sorted([
        "kind", "label", "experiment_id", "db", "per_second_estimate", "load", "rate_pps",
        "duration_s", "segment_s", "rate_from", "verdict", "reason", "goal",
        "segments_planned", "segments_stored", "segments_excluded", "finished", "sent",
        "forwarded", "loss_ratio", "loss_location", "events", "seconds",
    ])  # fmt: skip
    assert "unfinished: 2 of 4 segments stored" in cli("assess", db, check=True).stdout


def test_nothing_to_resume_when_every_segment_is_stored(tmp_path, cli, monkeypatch):
    monkeypatch.setenv("NETASSAY_RUN_DIR", str(tmp_path / "run"))
    db = tmp_path / "s.db"
    _soak_store(db, 4)
    res = cli("soak", "--resume", "--db", db)
    assert res.returncode == 2 and "nothing to resume" in res.stderr, res.stderr

"""netassay search at the CLI without a testbed: bad input is one line, a non-zero exit and
nothing written; --dry-run plans; a stored search is seen by assess, export and report."""

from __future__ import annotations

import json

import pytest
from tests.builders import SyntheticSut, cliff

from netassay.methods.search.figures import points
from netassay.shared import search_engine
from netassay.shared.search_spec import Goal, SearchSpec
from netassay.store.db import Store
from netassay.trial.record import TrialRecord


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--goal", "pdr:1"], "goal loss ratio"),
        (["--goal", "pdr:-0.1"], "goal loss ratio"),
        (["--goal", "xdr"], "bad --goal"),
        (["--width", "0"], "--width"),
        (["--width", "-1%"], "--width"),
        (["--exceed-ratio", "1"], "--exceed-ratio"),
        (["--min-load", "200k", "--max-load", "100k"], "load range"),
        (["--min-load", "100k", "--max-load", "100k"], "load range"),
        (["--time-cap", "1s"], "too short"),
        (["--goal", "ndr", "--then-verify"], "needs a PDR goal"),
        (["--no-peak-check"], "needs --max-load"),
        (["--final-duration", "5s", "--duration-sum", "2s"], "duration sum"),
        (["--max-load", "0"], "rate"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(cli, tmp_path, args, needle):
    db = tmp_path / "s.db"
    res = cli("search", "--name", "zz7", "--db", str(db), *args)
    assert res.returncode == 2, (res.returncode, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("netassay: ") and needle in lines[0], lines
    assert "Traceback" not in res.stderr and res.stdout == ""
    assert not db.exists()


def test_dry_run_shows_goals_range_and_worst_case(cli, tmp_path):
    db = tmp_path / "s.db"
    res = cli(
        "search", "--dry-run", "--name", "zz7", "--db", str(db), "--goal", "ndr",
        "--goal", "pdr:0.005", "--goal", "pdr:0.01", "--max-load", "600k", "--then-verify",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "NDR" in out and "PDR@0.5%" in out and "PDR@1%" in out
    assert "duration sum 21 s" in out and "width 0.50%" in out
    assert "loads: min 6 kpps, max 600 kpps" in out
    assert "estimate:" in out and "not a bound" in out and "time cap: 1200 s, the bound" in out
    assert "then verify: a PASTRAMI sweep of 9 loads" in out
    assert not db.exists()
    js = cli("search", "--dry-run", "--json", "--name", "zz7", "--db", str(db))
    assert js.returncode == 0, js.stderr
    plan = json.loads(js.stdout)
    assert plan["max_load_is_peak"] is True
    assert [g["loss_ratio"] for g in plan["spec"]["goals"]] == [0.0, 0.005]
    assert plan["worst_case"]["trials"] > 0


def _stored_search(db) -> search_engine.SearchOutcome:  # type: ignore[no-untyped-def]
    """A search on a synthetic SUT of 60 kpps, stored as netassay search stores one."""
    spec = SearchSpec((Goal(0.0), Goal(0.005)), 6_000, 600_000)

    sut = SyntheticSut(cliff(60_000), source="netassay-testbed")
    with Store(db) as st:
        exp_id, _ = st.add_experiment(
            key="search-test", kind="search", source="netassay-testbed", label="synthetic",
            config={"search": spec.to_json()}, metadata={"method": "search"},
        )  # fmt: skip
        return search_engine.run_search(
            spec, sut, on_trial=lambda ev: st.add_trial(exp_id, ev.record)
        )


@pytest.mark.slow
def test_assess_export_and_report_see_a_stored_search(cli, tmp_path):
    db = tmp_path / "s.db"
    out = _stored_search(db)
    res = cli("assess", str(db))
    assert res.returncode == 0, res.stderr
    assert "search (synthetic, experiment 1)" in res.stdout and "verdict" not in res.stdout
    assert "conditional throughput" in res.stdout
    js = cli("assess", str(db), "--json")
    assert js.returncode == 0, js.stderr
    (obj,) = [json.loads(line) for line in js.stdout.splitlines()]
    assert obj["kind"] == "search" and obj["verdict"] is None and obj["complete"]
    pdr = {g["goal"]: g for g in obj["goals"]}["pdr:0.005"]
    assert pdr["conditional_throughput_pps"] == out.goals[1].conditional_pps
    for key in ("relevant_lower_bound_pps", "relevant_upper_bound_pps", "trials",
                "trial_time_s", "wall_time_s", "loss_ratio", "exceed_ratio"):  # fmt: skip
        assert key in pdr
    exp = cli("export", "--db", str(db), "--format", "jsonl")
    assert exp.returncode == 0, exp.stderr
    rows = [json.loads(line) for line in exp.stdout.splitlines()]
    assert len(rows) == out.trials and {r["experiment_kind"] for r in rows} == {"search"}
    rep = cli("report", str(db), "--out", str(tmp_path / "rep"))
    assert rep.returncode == 0, rep.stderr  # the search has no PASTRAMI curve: skipped
    assert "internal error" not in rep.stderr and "Traceback" not in rep.stderr
    # its load-time figure: one point per trial, each classed as the search classed it
    html = (tmp_path / "rep" / "index.html").read_text()
    assert 'alt="figure of search: synthetic"' in html and "figures/search_synthetic.svg" in html
    svg = (tmp_path / "rep" / "figures" / "search_synthetic.svg").read_text()
    assert f"{out.trials} trials" in svg
    with Store(db) as st:
        pts = points(st.trials(1))
    assert [p["trial"] for p in pts] == list(range(1, out.trials + 1))
    for p in pts:  # the synthetic SUT forwards 60 kpps: NDR wants no loss, PDR <= 0.5%
        sent = round(p["load_pps"] * p["duration_s"])
        plr = (sent - min(sent, 60_000)) / sent
        want = "good" if plr == 0 else "some" if plr <= 0.005 else "bad"
        assert p["kind"] == want, p
    assert {p["kind"] for p in pts} >= {"good", "bad"}


def _partial_search(db, trials: int) -> None:  # type: ignore[no-untyped-def]
    """The first ``trials`` trials of a search, stored as a killed search leaves them."""
    from dataclasses import asdict

    from netassay.config import TestbedConfig

    spec = SearchSpec((Goal(0.0), Goal(0.005)), 6_000, 600_000)
    kept: list[TrialRecord] = []

    sut = SyntheticSut(cliff(60_000), source="netassay-testbed")
    search_engine.run_search(spec, sut, on_trial=lambda ev: kept.append(ev.record))
    with Store(db) as st:
        exp_id, _ = st.add_experiment(
            key="search-partial", kind="search", source="netassay-testbed", label="partial",
            config={"search": spec.to_json(), "testbed": asdict(TestbedConfig()),
                    "testbed_name": "zz7", "settle_s": 0.0},
        )  # fmt: skip
        for rec in kept[:trials]:
            st.add_trial(exp_id, rec)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--resume"], "--resume needs --db"),
        (["--experiment", "1"], "--experiment needs --resume"),
        (["--resume", "--db", "{db}", "--goal", "ndr"], "takes no goal, range or testbed"),
        (["--resume", "--db", "{db}", "--sut-cap", "60k"], "takes no goal, range or testbed"),
        (["--resume", "--db", "{db}", "--name", "other"], "conflicts with the search"),
        (["--resume", "--db", "{done}"], "nothing to resume"),
        (["--resume", "--db", "{done}", "--experiment", "1"], "is complete"),
    ],
)
def test_resume_refusals(cli, tmp_path, args, needle):
    db, done = tmp_path / "part.db", tmp_path / "done.db"
    _partial_search(db, 7)
    _stored_search(done)
    res = cli("search", *[a.format(db=db, done=done) for a in args])
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], lines


@pytest.mark.slow
def test_resume_dry_run_names_the_search_and_its_testbed(cli, tmp_path):
    db = tmp_path / "part.db"
    _partial_search(db, 7)
    res = cli("search", "--resume", "--db", str(db), "--dry-run")
    assert res.returncode == 0, res.stderr
    assert "would resume search 1" in res.stdout and "testbed 'zz7'" in res.stdout
    js = cli("assess", str(db), "--json")
    obj = json.loads(js.stdout)
    assert obj["complete"] is False and obj["stop"]["kind"] == search_engine.STORED_END


@pytest.mark.parametrize(
    ("fail_on", "verify_file", "refused"),
    [(None, "k5.15", False), ("bad", "k5.15", True), ("inconclusive", "k5.15", True),
     ("bad", "k6.8", False), ("inconclusive", "k6.8", False)],
)  # fmt: skip
def test_fail_on_gates_a_search_on_its_verify_sweeps_verdict(
    cli, tmp_path, pastrami_files, capsys, fail_on, verify_file, refused
):
    """What the search command does once its verify sweep is judged: the verdict comes
    from the search's own assessment of a PASTRAMI sweep (a BAD one, k5.15, and a GOOD
    one, k6.8, of tests/data/pastrami); --fail-on refuses the BAD after the result is
    printed (exit 11) and lets the GOOD pass; without --fail-on nothing is refused."""
    from netassay.cli.search import _ended
    from netassay.errors import VerdictRefused
    from netassay.methods.search.method import METHOD
    from netassay.methods.search.run import SearchReport, VerifyResult, _assess

    db = tmp_path / "s.db"
    out = search_engine.run_search(
        SearchSpec((Goal(0.0), Goal(0.005)), 6_000, 600_000), SyntheticSut(cliff(60_000))
    )
    src = (
        pastrami_files
        / "bare-metal"
        / f"synth_raw_5_exp_t_1_{verify_file}_intel_bare-metal_as-is.txt"
    )
    cli("import", "pastrami", src, "--db", db, check=True)
    with Store(db) as st:
        a = _assess(st, 1, Goal(0.005))
    verify = VerifyResult(1, Goal(0.005), 60_000.0, [], 50, 10.0, a.verdict,
                          a.saturation.reason, a.pdr.rate_pps)  # fmt: skip
    assert verify.verdict == ("BAD" if verify_file == "k5.15" else "GOOD")
    report = SearchReport(None, str(db), out, None, 0.0, verify=verify)
    if refused:
        with pytest.raises(VerdictRefused) as err:
            _ended(METHOD, report, True, fail_on)
        assert err.value.exit_code == 11 and f"--fail-on {fail_on}" in str(err.value)
        assert "the verify sweep (experiment 1): BAD" in str(err.value.args)
    else:
        _ended(METHOD, report, True, fail_on)
    said = json.loads(capsys.readouterr().out)  # the result is printed before the gate
    assert said["verify"]["verdict"] == verify.verdict


def _latency_of(load_pps: float) -> dict:
    """A histogram whose every frame waited load / 1000 us (one bucket): the latency
    at a bound names the load it came from."""
    v = round(load_pps)  # ns
    return {"n": 1000, "sum_ns": 1000 * v, "min_ns": v, "max_ns": v, "buckets": [[v, v + 1, 1000]]}


def test_search_latency_gives_the_latency_at_each_bound(cli, tmp_path):
    """search --latency: the trials at each goal's lower bound merged, their p50, p99 and
    max shown by assess (text and JSON) and in a campaign cell's row."""
    db = tmp_path / "s.db"
    spec = SearchSpec((Goal(0.0), Goal(0.005)), 6_000, 600_000, latency=True)
    sut = SyntheticSut(cliff(60_000), source="netassay-testbed")

    def keep(ev: search_engine.TrialEvent) -> None:
        ev.record.counters["latency"] = _latency_of(ev.record.rate_pps)
        st.add_trial(exp_id, ev.record)

    with Store(db) as st:
        exp_id, _ = st.add_experiment(
            key="search-test", kind="search", source="netassay-testbed", label="synthetic",
            config={"search": spec.to_json()}, metadata={"method": "search"},
        )  # fmt: skip
        out = search_engine.run_search(spec, sut, on_trial=keep)
    (obj,) = [
        json.loads(x) for x in cli("assess", str(db), "--json", check=True).stdout.splitlines()
    ]
    at = {x["goal"]: x for x in obj["latency_at_bounds"]}
    for g in out.goals:
        lo = g.lower_pps
        assert lo is not None
        row = at[g.goal.key]
        assert row["load_pps"] == lo and row["p99_ns"] == row["p50_ns"] == row["max_ns"] == round(
            lo
        )
        assert row["trials"] >= 1 and row["frames"] == 1000 * row["trials"]
    text = cli("assess", str(db), check=True).stdout
    assert "one-way latency at the PDR@0.5%" in text and "one-way latency at the NDR" in text
    from netassay.config import AnalysisConfig
    from netassay.methods.search.method import METHOD

    with Store(db, readonly=True) as st:
        cell = METHOD.cell(st, st.experiment(exp_id), AnalysisConfig())
    assert cell["p99_at_pdr_ns"] == round(out.goals[1].lower_pps)

"""--bidirectional: both directions at once, a generator and an XDP
sink at each end. Its ground truth: a cap on one direction's egress shows up in that
direction only. On the kernel router a cap on the reverse direction (``--sut-cap-reverse``,
a policer on the SUT's egress towards the generator), on the bridge a cap on the forward
one (``--sut-cap``); at a load under the cap neither direction loses a frame, at a load
over it the capped direction receives the cap's rate and its bucket, its loss all at the
SUT's egress and counted by that cap's own counter, and the other direction loses
nothing. The trial's rate and counts are both directions' sum (CSIT's aggregate).
A trial the host spoiled (a generator stall of a busy machine: both generators share
its CPU) is repeated, up to four times, as a sweep repeats any measurement fault.

Needs root and netassay-gen (skipped with the reason otherwise).
"""

from __future__ import annotations

import json

import pytest

from netassay.store.db import Store
from netassay.testbed.topology import CAP_BUCKET_S

pytestmark = pytest.mark.system

CAP = 40_000  # pps, on one direction's egress
LOW, HIGH = 20_000, 60_000  # pps per direction: under and over the cap
DIRECTIONS = ("forward", "reverse")
BUCKET = round(CAP * 0.02)  # topology.CAP_BUCKET_S: the policer passes it on top


@pytest.mark.parametrize(
    ("sut", "cap_flag", "capped", "counter"),
    [
        ("router", "--sut-cap-reverse", "reverse", "sut/nft/na_cap_rev/packets"),
        ("bridge", "--sut-cap", "forward", "sut/nft/na_cap/packets"),
    ],
)
def test_a_cap_on_one_direction_shows_in_that_direction_only(
    tb_name, tmp_path, cli, sut, cap_flag, capped, counter
):
    db = tmp_path / "bidir.db"
    res = cli(
        "sweep", "--bidirectional", "--name", tb_name, "--sut", sut, cap_flag, str(CAP),
        "--rates", f"{LOW},{HIGH}", "--runs", "1", "--duration", "1s", "--settle", "0.2s",
        "--retries", "4", "--no-peak-check", "--db", db, "--json",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "both directions' sum (FD.io CSIT's aggregate)" in res.stderr
    other = "forward" if capped == "reverse" else "reverse"
    with Store(db, readonly=True) as store:
        (exp,) = list(store.experiments())
        low, high = store.trial_records(exp.id)
    assert exp.config["bidirectional"] is True
    for t in (low, high):
        both = t.counters["bidirectional"]
        print(t.rate_pps, t.sent, t.received, t.loss_location, t.warnings)
        print({d: {k: v for k, v in both[d].items() if k != "generator"} for d in DIRECTIONS})
        assert not t.excluded
        per_dir = both["rate_pps_per_direction"]
        assert t.rate_pps == 2 * per_dir  # the trial's load: both directions'
        assert t.sent == both["forward"]["sent"] + both["reverse"]["sent"]
        assert t.received == both["forward"]["received"] + both["reverse"]["received"]
        assert both[other]["lost"] == 0  # the cap is not on its path
        for d in DIRECTIONS:
            assert both[d]["sent"] == pytest.approx(per_dir, rel=0.001)
            assert both[d]["loss_location"]["unaccounted"] == 0
    assert low.counters["bidirectional"][capped]["lost"] == 0
    hit = high.counters["bidirectional"][capped]
    # the cap's rate over the trial and its bucket, within 2%
    assert hit["received"] == pytest.approx(CAP * high.duration_s + BUCKET, rel=0.02)
    assert hit["loss_location"]["sut_egress"] == hit["lost"] > 0
    assert high.counters["deltas"][counter] == hit["lost"]  # that cap's own counter
    assert high.loss_location["sut_egress"] == hit["lost"]  # the aggregate's is the same
    view = json.loads(res.stdout)["bidirectional"]
    assert [x["rate_pps_per_direction"] for x in view["loads"]] == [LOW, HIGH]
    assert view["loads"][1][capped]["main_location"] == "sut_egress"
    assert view["loads"][1][other]["loss_ratio"] == 0
    out = tmp_path / "report"
    assert cli("report", db, "--out", out).returncode == 0
    html = (out / "index.html").read_text()
    table = html[html.index('<table class="loads both">') :].split("</table>")[0]
    rows = table.split("<tr>")[2:]  # a row per load and direction, after the header's
    assert len(rows) == 4
    assert all(f">{d}<" in r for r, d in zip(rows, DIRECTIONS * 2, strict=True))
    lost = rows[2 + DIRECTIONS.index(capped)]
    assert f">{HIGH:,}<" in lost and ">sut_egress<" in lost
    assert f">{hit['received']:,}<" in lost and f">{hit['sent']:,}<" in lost
    assert ">0.000%<" in rows[2 + DIRECTIONS.index(other)]


@pytest.mark.slow
def test_a_bidirectional_campaign_cell(tb_name, tmp_path, cli, netns_of):
    """A campaign whose factor is --bidirectional: both cells run on the kernel router
    with a cap on the reverse direction's egress; the one-direction cell loses nothing
    (the cap is not on its path), the bidirectional one stores each direction's counts
    and its loss in the reverse direction only; 'compare' reads both as sweeps, the
    bidirectional one's PDR the aggregate load under the cap."""
    spec = tmp_path / "both.toml"
    spec.write_text(
        '[campaign]\nname = "both"\n[fixed]\n'
        f'rates = "{LOW},{HIGH}"\nruns = 1\nduration = "1s"\nsettle = "0.1s"\n'
        f'peak_check = false\nsut_cap_reverse = "{CAP}"\n'
        "[factors]\nbidirectional = [false, true]\n"
    )
    plan = cli("campaign", "plan", spec)
    assert plan.returncode == 0, plan.stderr
    assert f"{LOW // 1000} kpps..{HIGH // 1000} kpps per direction, both at once" in plan.stdout
    db = tmp_path / "both.db"
    res = cli("campaign", "run", spec, "--db", db, "--name", tb_name, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "2 of 2 cells stored" in res.stdout
    assert netns_of(tb_name) == []
    with Store(db, readonly=True) as st:
        exps = {bool(e.config.get("bidirectional")): e for e in st.experiments()}
        one, both = (st.trial_records(exps[k].id) for k in (False, True))
    assert exps[True].metadata["campaign"]["campaign"] == "both"
    assert [t.sent - t.received for t in one] == [0, 0]  # the cap is on the other way
    assert all("bidirectional" not in t.counters for t in one)
    low, high = both
    assert [t.rate_pps for t in both] == [2 * LOW, 2 * HIGH]  # the aggregate loads
    assert low.counters["bidirectional"]["reverse"]["lost"] == 0
    hit = high.counters["bidirectional"]
    assert hit["forward"]["lost"] == 0
    assert hit["reverse"]["lost"] == hit["reverse"]["loss_location"]["sut_egress"] > 0
    out = cli("compare", "--db", db, "--by", "bidirectional", "--json")
    assert out.returncode == 0, out.stderr
    exps_out = json.loads(out.stdout)["experiments"]
    pdr = {e["factors"]["bidirectional"]: e["pdr_pps"] for e in exps_out}
    print(pdr)
    assert pdr == {False: HIGH, True: 2 * LOW}


@pytest.mark.slow
def test_a_bidirectional_search_finds_twice_a_cap_on_the_reverse_direction(
    tb_name, tmp_path, cli, netns_of
):
    """search --bidirectional on the kernel router with a cap C on the reverse direction's
    egress only: half of each aggregate load goes each way, so the reverse direction
    loses from an aggregate load of 2 (C + bucket / T) on, and the aggregate PDR is
    there (the one-way search's truth and tolerance, twice); the forward direction loses
    nothing in any trial, and the verify sweep is bidirectional too."""
    db = tmp_path / "bsearch.db"
    res = cli(
        "search", "--bidirectional", "--name", tb_name, "--sut-cap-reverse", str(CAP),
        "--max-load", f"{3 * CAP}", "--goal", "pdr", "--final-duration", "1s",
        "--duration-sum", "1s", "--width", "1%", "--no-peak-check", "--then-verify",
        "--verify-runs", "2", "--verify-loads", "4", "--db", db, "--json", timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "both directions' sum (FD.io CSIT's" in res.stderr
    out = json.loads(res.stdout)
    (pdr,) = out["goals"]
    truth = 2 * CAP * (1 + CAP_BUCKET_S / 1.0)  # 2 (C + bucket / T), 1 s trials
    print(pdr["conditional_throughput_pps"], truth, out["bidirectional"])
    assert abs(pdr["conditional_throughput_pps"] - truth) <= 0.02 * truth, (pdr, res.stderr)
    (at,) = out["bidirectional"]["at_lower_bounds"]
    assert at["rate_pps_aggregate"] == pdr["relevant_lower_bound_pps"]
    assert at["forward"]["lost"] == 0 and at["reverse"]["loss_ratio"] <= 0.01
    with Store(db, readonly=True) as store:
        exps = {e.kind: e for e in store.experiments()}
        trials = {k: store.trial_records(e.id) for k, e in exps.items()}
    assert exps["search"].config["bidirectional"] is exps["sweep"].config["bidirectional"]
    assert exps["sweep"].config["bidirectional"] is True  # the verify sweep: both ways
    for t in trials["search"] + trials["sweep"]:
        both = t.counters["bidirectional"]
        assert t.rate_pps == 2 * both["rate_pps_per_direction"]  # the aggregate load
        assert t.sent == both["forward"]["sent"] + both["reverse"]["sent"]
        assert both["forward"]["lost"] == 0  # the cap is not on its path
    assert {t.rate_pps for t in trials["sweep"]} == set(out["verify"]["rates_pps"])
    assert netns_of(tb_name) == []
    again = cli("assess", db, "--json")  # replayed from the store: the same result
    found = next(json.loads(x) for x in again.stdout.splitlines() if '"search"' in x)
    assert found["goals"] == out["goals"] and found["bidirectional"] == out["bidirectional"]


def test_a_bidirectional_flood_receives_the_cap_in_the_capped_direction_only(
    tb_name, tmp_path, cli
):
    """flood --bidirectional on the kernel router with a cap C on the reverse direction's
    egress: both directions flood at once; the reverse one receives the cap's rate (C
    and its bucket over the flood, what the SUT's backlog held at the end), all its SUT
    loss at the egress on that cap's counter, and the forward one loses nothing there."""
    db = tmp_path / "bflood.db"
    res = cli("flood", "--bidirectional", "--name", tb_name, "--sut-cap-reverse", str(CAP),
              "--runs", "2", "--duration", "1s", "--db", db)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "both directions' sum (FD.io CSIT's aggregate)" in res.stdout
    with Store(db, readonly=True) as store:
        (exp,) = list(store.experiments())
        floods = store.trial_records(exp.id)
    assert exp.config["bidirectional"] is True and len(floods) == 2
    for t in floods:
        both = t.counters["bidirectional"]
        print(t.duration_s, {d: {k: v for k, v in both[d].items()} for d in DIRECTIONS})
        fwd, rev = both["forward"], both["reverse"]
        assert t.received == fwd["forwarded"] + rev["forwarded"]
        assert t.sent == fwd["sent"] + rev["sent"]
        assert rev["forwarded"] / t.duration_s == pytest.approx(CAP + BUCKET / t.duration_s,
                                                                rel=0.05)  # fmt: skip
        assert (
            rev["loss_location"]["sut_egress"] == t.counters["deltas"]["sut/nft/na_cap_rev/packets"]
        )
        assert "sut_egress" not in fwd["loss_location"]  # the cap is not on its path
        assert fwd["forwarded_pps"] > 4 * CAP
    assessed = cli("assess", db, "--json")
    per = json.loads(assessed.stdout.splitlines()[0])["bidirectional"]
    assert per["reverse"]["mrr_pps"] == pytest.approx(CAP, rel=0.06)


@pytest.mark.slow
def test_a_bidirectional_soak_loses_on_the_capped_direction_only(tb_name, tmp_path, cli):
    """soak --bidirectional on the kernel router with the cap on the reverse direction:
    under it (20 kpps each way) nothing is lost, PASS; over it (60 kpps each way) the
    reverse direction receives the cap's rate and its bucket, its loss at the SUT's
    egress, the forward loses nothing, and the aggregate fails the goal. Each second is
    read at both sinks: the seconds' frames add up to the segments' (both directions)."""
    db = tmp_path / "bsoak.db"

    def soak(rate: int, code: int) -> dict:
        res = cli(
            "soak", "--bidirectional", "--name", tb_name, "--sut-cap-reverse", str(CAP),
            "--rate", str(rate), "--duration", "4s", "--segment-length", "2s", "--retries", "4",
            "--db", db, "--json", "--fail-on", "fail",
        )  # fmt: skip
        assert res.returncode == code, res.stderr
        out = json.loads(res.stdout)
        print({k: out[k] for k in ("verdict", "loss_ratio", "loss_location", "bidirectional")})
        return out

    below = soak(LOW, 0)
    assert below["verdict"] == "PASS" and below["loss_ratio"] == 0.0, below
    assert all(below["bidirectional"][d]["lost"] == 0 for d in DIRECTIONS), below
    above = soak(HIGH, 11)
    assert above["verdict"] == "FAIL", above
    fwd, rev = above["bidirectional"]["forward"], above["bidirectional"]["reverse"]
    assert fwd["lost"] == 0 and fwd["sent"] == pytest.approx(HIGH * 4, rel=0.01), fwd
    expect = CAP * 4 + 2 * BUCKET  # two segments, each the cap's rate and its bucket
    assert rev["received"] == pytest.approx(expect, rel=0.03), (rev, expect)
    assert rev["loss_location"].get("sut_egress") == rev["lost"] > 0, rev
    assert above["sent"] == fwd["sent"] + rev["sent"]  # the aggregate (CSIT's convention)
    with Store(db, readonly=True) as st:
        exps = list(st.experiments())
        assert [e.config.get("bidirectional") for e in exps] == [True, True]
        for e in exps:
            trials = st.trials(e.id)
            seconds = [s for t in trials for s in t["counters"]["soak"]["per_second"]]
            assert sum(s["received"] for s in seconds) == sum(t["received"] for t in trials)
            assert all(t["rate_pps"] == 2 * t["counters"]["bidirectional"]["rate_pps_per_direction"]
                       for t in trials)  # fmt: skip
    text = cli("assess", db).stdout
    assert "per direction, both at once" in text and "    reverse: loss ratio" in text, text
    rep = cli("report", db, "--out", tmp_path / "rep")
    assert rep.returncode == 0, rep.stderr
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "per direction, both at once" in page and "both directions&#39; sum" in page

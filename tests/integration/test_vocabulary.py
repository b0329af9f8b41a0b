"""One vocabulary: a concept has one flag everywhere. The old spellings (rtt's and
batching's --rate, soak's --segment, the store as a positional, their campaign and config
file keys) still work for one release, each said in one line on stderr naming the new
one, and give the same request as the new spelling; help lists what a command takes,
with its defaults and metavars that say what to write."""

from __future__ import annotations

import re
import warnings
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from netassay.campaign import spec
from netassay.cli.common import Given, with_params
from netassay.errors import Deprecated, UsageError
from netassay.methods.base import RunOptions
from netassay.methods.batching.request import BatchingRequest
from netassay.methods.rtt.request import RttRequest
from netassay.methods.soak.request import SoakRequest
from netassay.methods.soak.request import parse_goal as soak_goal
from netassay.params import goal_ratio, request_from
from netassay.shared.search_spec import parse_goal as search_goal
from netassay.store.db import Store

LINE = "the old spelling goes in the next release"


def _built(cls: type, args: list[str]) -> tuple[Any, str]:
    """The request a command taking ``cls``'s options builds from ``args`` (through
    ``with_params``, as every method's command does), and what it said on stderr."""
    app = typer.Typer()
    got: list[Any] = []

    @with_params(cls, RunOptions, only=("db",))
    def cmd(ctx: typer.Context, given: Given) -> None:
        got.append(request_from(cls, given))

    app.command("probe")(cmd)
    app.command("other")(lambda: None)  # two commands: 'probe' is a subcommand
    res = CliRunner().invoke(app, ["probe", *args])
    assert res.exit_code == 0, (res.output, res.exception)
    return got[0], res.stderr


@pytest.mark.parametrize(
    ("cls", "old", "new", "value", "said"),
    [
        (RttRequest, "--rate", "--probe-rate", "2k", "use --probe-rate (probes per second)"),
        (BatchingRequest, "--rate", "--probe-rate", "20k", "use --probe-rate (probes per second)"),
        (SoakRequest, "--segment", "--segment-length", "5s", "use --segment-length (the length"),
    ],
)
def test_an_old_spelling_builds_the_same_request_and_says_so_once(cls, old, new, value, said):
    by_new, quiet = _built(cls, [new, value])
    by_old, stderr = _built(cls, [old, value])
    assert by_old == by_new and quiet == ""
    assert by_new != _built(cls, [])[0]  # the value was taken, not the default
    (line,) = stderr.splitlines()
    assert line.startswith(f"netassay: {old} is deprecated for 'netassay probe': {said}")
    assert line.endswith(LINE)


def test_old_and_new_spelling_together_are_refused_in_one_line(cli):
    res = cli("rtt", "--rate", "1k", "--probe-rate", "2k")
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "both --rate and --probe-rate given" in res.stderr


@pytest.mark.parametrize(
    ("args", "line", "then"),
    [
        (("rtt", "--rate", "1k", "--runs", "0"),
         "netassay: --rate is deprecated for 'netassay rtt': use --probe-rate (probes per "
         f"second); {LINE}", "bad --runs"),
        (("batching", "--rate", "1M"),
         "netassay: --rate is deprecated for 'netassay batching': use --probe-rate (probes "
         f"per second); {LINE}", "bad --probe-rate 1e+06"),
        (("soak", "--rate", "100k", "--segment", "500ms"),
         "netassay: --segment is deprecated for 'netassay soak': use --segment-length (the "
         f"length of each stored segment); {LINE}", "--segment-length 0.5s is too short"),
    ],
)  # fmt: skip
def test_the_real_command_says_the_old_spelling_then_runs_as_the_new(cli, args, line, then):
    res = cli(*args)
    first, second = res.stderr.splitlines()
    assert first == line and then in second and res.returncode == 2


@pytest.mark.slow
def test_the_store_as_a_positional_still_works_said_once(cli, tmp_path):
    db = tmp_path / "s.db"
    Store(str(db)).close()
    new = cli("db", "check", "--db", db, check=True)
    old = cli("db", "check", db, check=True)
    assert old.stdout == new.stdout and new.stderr == ""
    assert "0 experiments" in new.stdout and "1 experiments" not in new.stdout
    assert old.stderr.strip() == (
        f"netassay: the store as a positional argument ({db}) is deprecated for "
        f"'netassay db check': use --db FILE (the store); {LINE}"
    )
    for command in (["export"], ["trend"], ["compare"], ["db", "migrate"]):
        same = cli(*command, db)
        assert f"is deprecated for 'netassay {' '.join(command)}'" in same.stderr
        neither = cli(*command)
        assert neither.returncode == 2 and "give --db FILE" in neither.stderr


def test_an_old_campaign_key_is_read_as_the_new_one_and_said():
    text = '[campaign]\nname = "k"\nmethod = "rtt"\n[fixed]\n{key} = "2k"\nruns = 2\n'
    new = spec.parse(text.format(key="probe_rate"), "n.toml")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        old = spec.parse(text.format(key="rate"), "o.toml")
    assert old.settings(0) == new.settings(0) and old.settings(0)["probe_rate"] == "2k"
    (w,) = [w for w in seen if issubclass(w.category, Deprecated)]
    assert str(w.message) == (
        "o.toml:5: rate is deprecated (an rtt cell): use probe_rate (probes per second); " + LINE
    )


def test_an_old_config_key_is_read_as_the_new_one_and_said(cli, tmp_path):
    conf = tmp_path / "c.toml"
    conf.write_text('[soak]\nsegment = "500ms"\n')
    res = cli("--config", conf, "soak", "--rate", "100k")
    first, second = res.stderr.splitlines()
    assert first == (
        f"netassay: {conf}:2: segment is deprecated ([soak]): use segment_length (the "
        f"length of each stored segment); {LINE}"
    )
    assert "--segment-length 0.5s is too short" in second


@pytest.mark.parametrize(
    ("text", "ratio"),
    [("ndr", 0.0), ("pdr", 0.005), ("pdr:0.01", 0.01), ("pdr:0.5%", 0.005), ("PDR:1%", 0.01)],
)
def test_soak_and_search_read_a_goal_alike(text, ratio):
    assert search_goal(text) == soak_goal(text) == pytest.approx(ratio)


def test_soak_also_takes_the_ratio_alone_and_search_does_not():
    assert soak_goal("0.5%") == soak_goal("0.005") == goal_ratio("pdr:0.005")
    with pytest.raises(UsageError, match="a goal is ndr, pdr"):
        search_goal("0.005")
    for bad in ("pdr:1", "pdr:x", "2", "ndr:0.1"):
        with pytest.raises(UsageError):
            soak_goal(bad)


def _help(cli: Any, *command: str) -> str:
    res = cli(*command, "--help", env_extra={"COLUMNS": "200", "NO_COLOR": "1"})
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_doctor_lists_only_what_it_takes_and_still_accepts_the_rest(cli):
    text = _help(cli, "doctor")
    assert "Not taken" not in text
    for hidden in ("--sut ", "--sut-drop", "--sut-cap", "--imix", "--sink"):
        assert hidden not in text, hidden
    res = cli("doctor", "--sut", "router", "--runs", "0")  # taken, then the bad --runs refused
    assert res.returncode == 2 and "bad --runs" in res.stderr and "No such" not in res.stderr


@pytest.mark.parametrize(
    "command", [("sweep",), ("search",), ("soak",), ("rtt",), ("batching",), ("tcp",),
                ("doctor",), ("export",), ("compare",), ("trend",), ("campaign", "run"),
                ("cluster", "scheduler"), ("assess",)],
)  # fmt: skip
def test_metavars_say_what_to_write(cli, command):
    text = _help(cli, *command)
    assert not re.search(r"<(str|int|float|path|list\[str\])>", text), text


def test_every_declared_default_is_shown(cli):
    text = _help(cli, "sweep")
    shown = (("--runs", "10"), ("--duration", "2s"), ("--settle", "0.5s"), ("--flows", "1"),
             ("--pinning", "auto"), ("--db", "netassay.db"))  # fmt: skip
    lines = text.splitlines()
    for flag, default in shown:
        # the option's row and the rows its help wraps onto, up to the next option
        i = next(i for i, line in enumerate(lines) if f" {flag} " in line)
        block = []
        for r in lines[i + 1 :]:
            if re.match(r"^│ +-", r) or not r.startswith("│"):
                break
            block.append(r)
        row = " ".join(x.strip("│ ") for x in [lines[i], *block])
        assert f"[default: {default}]" in row, row
    rtt = _help(cli, "rtt")
    assert re.search(r"--probe-rate +RATE .*\[default: 1k\]", rtt)
    assert re.search(r"--ip +4\|6", _help(cli, "accept"))


def test_latency_says_it_is_short_for_sweep_latency(cli):
    text = _help(cli, "latency")
    assert "Short for 'sweep --latency' with CSIT's defaults" in text


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("sweep", "--rats", "1"), "unknown flag --rats for 'netassay sweep': did you mean"),
        (("sweep", "--rates", "100MB"), "bit/s (500Mbps, 1Gbit/s"),
        (("tcp", "--delay", "20"), "bad --delay '20': a delay needs its unit"),
    ],
)  # fmt: skip
def test_wrong_words_are_refused_in_one_line(cli, args, words):
    res = cli(*args)
    assert res.returncode == 2 and words in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and res.stdout == "", res.stderr


def test_a_count_written_as_text_shows_n(cli):
    """--flows, --routes, --nft-rules, --conntrack-max take 1k or 1M: an N, not TEXT."""
    text = _help(cli, "sweep")
    for flag in ("--flows", "--routes", "--nft-rules", "--conntrack-max"):
        assert re.search(rf" {flag} +N ", text), flag

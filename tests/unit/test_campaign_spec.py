"""The campaign file: typed keys, one line per problem (file and line), the matrix."""

from __future__ import annotations

from pathlib import Path

import pytest

from netassay.campaign import spec
from netassay.errors import InputError
from netassay.invoke import cell_given

ROOT = Path(__file__).resolve().parents[2]
MINIMAL = """\
[campaign]
name = "caps"
method = "sweep"
repetitions = 1
[fixed]
pinning = "pin-2cpu"
rates = "50k:250k:25k"
runs = 2
duration = "1s"
[factors]
sut_cap = ["100k", "180k"]
"""


def test_the_minimal_file_of_the_issue_works_as_written():
    c = spec.parse(MINIMAL, "caps.toml")
    assert (c.name, c.method, c.repetitions, c.seed) == ("caps", "sweep", 1, None)
    assert c.cells == ({"sut_cap": "100k"}, {"sut_cap": "180k"})
    s = c.settings(1)
    assert s["sut_cap"] == "180k" and s["runs"] == 2 and s["pinning"] == "pin-2cpu"
    given = cell_given(c.method, s)
    assert given["sut_cap"] == "180k"
    assert given["rates"] == "50k:250k:25k"
    assert spec.load(ROOT / "examples" / "caps.toml") == spec.parse(
        (ROOT / "examples" / "caps.toml").read_text(), str(ROOT / "examples" / "caps.toml")
    )


def test_full_factorial_first_factor_slowest():
    cells = spec.expand({"pinning": ("pin-1cpu", "pin-2cpu"), "backlog": (1000, 5000, 10000)})
    assert len(cells) == 6
    assert cells[0] == {"pinning": "pin-1cpu", "backlog": 1000}
    assert cells[2] == {"pinning": "pin-1cpu", "backlog": 10000}
    assert cells[3] == {"pinning": "pin-2cpu", "backlog": 1000}
    assert len({tuple(sorted(c.items())) for c in cells}) == 6
    assert spec.expand({}) == [{}]


def test_explicit_cells_and_their_factors():
    text = """[campaign]
name = "pick"
[fixed]
runs = 1
[[cells]]
backlog = 1000
pinning = "pin-2cpu"
[[cells]]
backlog = 10000
pinning = "pin-1cpu"
"""
    c = spec.parse(text, "pick.toml")
    assert c.explicit and len(c.cells) == 2
    assert c.factors == {"backlog": (1000, 10000), "pinning": ("pin-2cpu", "pin-1cpu")}


def test_every_problem_one_line_with_file_and_line():
    text = """[campaign]
name = "x"
methd = "sweep"
[fixed]
runs = 0
goals = ["ndr"]
pinning = "pin-9cpu"
[factors]
sut_cap = ["1q", "2k"]
backlog = 1000
[bogus]
"""
    with pytest.raises(spec.CampaignFileError) as ei:
        spec.parse(text, "bad.toml")
    lines = ei.value.line().splitlines()
    assert ei.value.exit_code == InputError.exit_code == 3
    assert [ln.split(":")[1] for ln in lines] == ["3", "5", "6", "7", "9", "10", "11"]
    assert all(ln.startswith("bad.toml:") for ln in lines)
    assert "unknown key 'methd' in [campaign]; did you mean 'method'?" in lines[0]
    assert "runs = 0" in lines[1] and "not a setting of a sweep" in lines[2]
    assert "pin-9cpu" in lines[3] and "'1q'" in lines[4]
    assert "expected a list of levels" in lines[5] and "unknown section [bogus]" in lines[6]


def test_an_unknown_key_says_what_was_likely_meant():
    text = """[campaign]
name = "x"
runs = 3
[fixed]
sut-cap = "50k"
rates = "10k"
[factors]
sizes = [64, 128]
"""
    with pytest.raises(spec.CampaignFileError) as ei:
        spec.parse(text, "hint.toml")
    lines = ei.value.line().splitlines()
    assert lines[0].startswith("hint.toml:3: unknown key 'runs' in [campaign]; 'runs' is a "
                               "setting of a sweep: put it in [fixed]")  # fmt: skip
    assert "hint.toml:5: unknown key 'sut-cap' in [fixed]; did you mean 'sut_cap'? (a file " \
        "writes '_' where a flag has '-')" in lines[1]  # fmt: skip
    assert "hint.toml:8: unknown key 'sizes' in [factors]; did you mean 'size'?" in lines[2]
    assert len(lines) == 3


def test_multiline_arrays_and_repeated_tables_keep_their_lines():
    text = """[campaign]
name = "m"
[factors]
backlog = [
  1000,
  0,
]
[[cells]]
backlog = 1000
[[cells]]
backlg = 10000
"""
    with pytest.raises(spec.CampaignFileError) as ei:
        spec.parse(text, "m.toml")
    lines = ei.value.line().splitlines()
    assert lines[0].startswith("m.toml:4:") and "backlog = 0" in lines[0]
    assert any(ln.startswith("m.toml:11:") and "backlg" in ln for ln in lines)


@pytest.mark.parametrize(
    ("snippet", "needle"),
    [
        ('[campaign]\nname = "Bad Name"\n', "name = 'Bad Name'"),
        ('[campaign]\nname = "a"\nrepetitions = 0\n', "repetitions = 0"),
        ('[campaign]\nname = "a"\nmethod = "ping"\n', "method = 'ping'"),
        ("[fixed]\nruns = 1\n", "no [campaign] table"),
        (
            '[campaign]\nname = "a"\n[fixed]\nruns = 2\n[factors]\nruns = [1, 2]\n',
            "both fixed and a factor",
        ),
        ('[campaign]\nname = "a"\n[factors]\nruns = [2, 2]\n', "a level is repeated"),
        ('[campaign]\nname = "a"\n[fixed]\nrates = "300k:100k:50k"\n', "STOP is below START"),
        ('[campaign]\nname = "a"\n[fixed]\npeak_check = "no"\n', "expected true or false"),
        (
            '[campaign]\nname = "a"\nmethod = "search"\n[fixed]\nrates = "1k"\n',
            "not a setting of a search",
        ),
        ('[campaign]\nname = "a"\n[fixed]\nsut_drop = 1.5\n', "expected a value in [0, 1)"),
    ],
)
def test_bad_values_are_refused(snippet, needle):
    with pytest.raises(spec.CampaignFileError) as ei:
        spec.parse(snippet, "f.toml")
    assert needle in ei.value.line()


def test_not_toml_and_missing_file():
    with pytest.raises(InputError, match="not valid TOML"):
        spec.parse("[campaign\n", "x.toml")
    with pytest.raises(InputError, match="no such campaign file"):
        spec.load("/nonexistent/x.toml")


def test_search_cells_take_goals_and_flags():
    text = """[campaign]
name = "s"
method = "search"
[fixed]
goals = ["ndr", "pdr:0.005"]
max_load = "300k"
peak_check = false
then_verify = true
[factors]
sut_cap = [100000, "150k"]
"""
    c = spec.parse(text, "s.toml")
    given = cell_given("search", c.settings(0))
    assert given["goals"] == ["ndr", "pdr:0.005"]
    assert given["peak_check"] is False and given["then_verify"] is True
    assert given["sut_cap"] == "100000"  # as its flag takes it: text


@pytest.mark.parametrize(
    "name", ["caps.toml", "pastrami.toml", "search.toml", "bits.toml", "both-ways.toml"]
)
def test_the_examples_are_valid_campaigns(name):
    c = spec.load(ROOT / "examples" / name)
    assert c.cells and all(cell_given(c.method, c.settings(i)) for i in range(len(c.cells)))


def test_a_bidirectional_cell_gives_its_command_the_flag():
    c = spec.load(ROOT / "examples" / "both-ways.toml")
    one, both = (cell_given(c.method, c.settings(i)) for i in range(2))
    assert not one.get("bidirectional") and both["bidirectional"] is True
    assert both["sut_cap_reverse"] == "60k"


def test_a_value_its_parser_refuses_names_its_line_even_where_the_key_has_a_check():
    """burst_rate's check parses the text (a rate): a negative one was a UsageError that
    escaped the file's checker (a traceback) instead of the line naming it."""
    text = '[campaign]\nname = "b"\nmethod = "burst"\n\n[fixed]\nburst_rate = -1\n'
    with pytest.raises(spec.CampaignFileError) as ei:
        spec.parse(text, "x.toml")
    assert "x.toml:6: [fixed] burst_rate = -1: expected a number" in str(ei.value)

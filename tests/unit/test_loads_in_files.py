"""Loads in bit/s and as shares of the line rate in a config file's and a campaign
file's keys: the same words as the flags, checked before anything runs, and
a campaign cell converted with its own frame size, layer and line rate; what cannot be
converted names the file's line."""

from __future__ import annotations

import re

import pytest

from netassay.campaign import spec
from netassay.campaign.order import cell_plan, cell_settings
from netassay.errors import InputError, UsageError
from netassay.invoke import cell_given
from netassay.loads import check_load, check_loads, tokens, units_of
from netassay.methods.search.request import SearchRequest
from netassay.methods.soak.request import SoakRequest
from netassay.methods.sweep.request import SweepRequest
from netassay.params import declared
from netassay.shared.rates import LoadError, in_frames, load_params


def test_a_files_loads_are_checked_in_their_own_units():
    rates = check_loads("--rates")
    assert rates("50k:150k:50k") == (50_000.0, 100_000.0, 150_000.0)  # frames/s as before
    assert rates(["100Mbps", "200Mbps"]) == (("bit", 1e8), ("bit", 2e8))
    assert rates("10%:30%:10%") == (("share", 0.1), ("share", 0.2), ("share", 0.30000000000000004))
    assert check_load("--max-load")("400Mbps") == 4e8 and check_load("--max-load")(200_000) == 2e5
    for bad, why in (
        ("10%:1Gbps:10%", "a range's three parts mix units"), ("0%", "(0, 100]%"),
        ("1Gbps:2Gbps", "three parts"), ("0Mbps", "positive"), ("fast", "k/M/G"),
    ):  # fmt: skip
        with pytest.raises(ValueError, match=re.escape(why)):
            rates(bad)
    with pytest.raises(ValueError, match="it takes one load"):
        check_load("--max-load")("100Mbps,200Mbps")
    assert [k for k, _, _ in tokens("100k,1Gbps,50%", "--rates")] == ["pps", "bit", "share"]
    assert units_of(["100Mbps", "10%"]) == {"bit", "share"} and units_of([100_000]) == {"pps"}


def test_the_requests_declare_their_loads_and_how_they_are_read():
    assert {k: p.load for k, p in load_params(SweepRequest).items()} == {"rates": "list"}
    assert set(load_params(SearchRequest)) == {"min_load", "max_load"}
    assert set(load_params(SoakRequest)) == {"rate"}
    soak = load_params(SoakRequest)["rate"]
    assert soak.canonical("90%pdr") == "90%pdr" and soak.canonical("1Gbps") == 1e9
    with pytest.raises(ValueError, match="N%pdr"):
        soak.canonical("90%pd")
    for cls in (SweepRequest, SearchRequest, SoakRequest):
        keys = {p.name for _, p in declared(cls)}
        assert {"layer", "line_rate"} <= keys


def test_a_cell_converts_with_its_own_frame_layer_and_line_rate():
    # 64-byte frames take 68 bytes at L2 and 88 at L1; 1% of 1 Gbit/s at L1
    out = in_frames(SweepRequest, {"rates": "2Mbps,4Mbps", "layer": "l2", "size": 64})
    assert out["rates"] == "3676,7352"
    one = in_frames(SweepRequest, {"rates": ["2Mbps"], "size": 512})
    assert one["rates"] == "466"  # 536 bytes at L1
    out = in_frames(SearchRequest, {"max_load": "1%", "line_rate": "1G", "imix": "simple"})
    assert out["max_load"] == "3253"  # as the soak of the same share measured
    same = {"rates": "100k,200k", "size": 128}
    assert in_frames(SweepRequest, same) is same  # frames/s: untouched
    with pytest.raises(LoadError) as got:
        in_frames(SweepRequest, {"rates": "100k", "layer": "l2"})
    assert got.value.key == "layer" and "--layer with loads in frames/s" in got.value.what
    with pytest.raises(LoadError) as got:
        in_frames(SweepRequest, {"rates": "50%"})
    assert got.value.key == "rates" and "the line rate is unknown" in got.value.what
    assert isinstance(got.value, UsageError)


CAMPAIGN = """\
[campaign]
name = "bits"
[fixed]
rates = "2Mbps,4Mbps"
layer = "l2"
runs = 1
duration = "1s"
[factors]
size = [64, 512]
"""


def test_a_campaign_writes_loads_in_bit_per_second_and_each_cell_plans_its_own():
    c = spec.parse(CAMPAIGN, "bits.toml")
    given = cell_given(c.method, c.settings(0))
    assert given["rates"] == "2Mbps,4Mbps"  # converted where the cell runs
    assert given["layer"] == "l2"
    assert cell_settings(c, 0)["rates"] == "3676,7352"
    assert cell_settings(c, 1)["rates"] == "484,968"  # 516 bytes at L2
    assert cell_plan(c, 1).trials == 2


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (CAMPAIGN.replace('rates = "2Mbps,4Mbps"', 'rates = "20%"'),
         "bits.toml:4: cell 1 (size=64): --rates 20%: the line rate is unknown"),
        (CAMPAIGN.replace('rates = "2Mbps,4Mbps"', 'rates = "200k"'),
         "bits.toml:5: cell 1 (size=64): --layer with loads in frames/s"),
        (CAMPAIGN.replace('layer = "l2"', 'layer = "l7"'),
         "bits.toml:5: [fixed] layer = 'l7': a layer is l1 or l2"),
        (CAMPAIGN.replace('rates = "2Mbps,4Mbps"', 'rates = "2Mbps,1Mbps"'),
         "bits.toml:4: cell 1 (size=64): bad --rates '2Mbps,1Mbps': the loads in frames/s "
         "(3676, 1838) must increase strictly"),
        (CAMPAIGN.replace("size = [64, 512]", 'rates = ["10Mbit", "2Mbps:1Mbps:1Mbps"]')
         .replace('rates = "2Mbps,4Mbps"\n', ""),
         "bits.toml:8: [factors] rates = '2Mbps:1Mbps:1Mbps': STOP is below START"),
        ('[campaign]\nname = "s"\nmethod = "search"\n[factors]\n'
         'max_load = ["100k", "100Mbps"]\n',
         "s.toml:5: [factors] max_load mixes loads in frames/s, bit/s and shares"),
        ('[campaign]\nname = "s"\nmethod = "search"\n[fixed]\nline_rate = "1G"\n'
         '[factors]\nmax_load = ["50%", "150%"]\n',
         "s.toml:7: [factors] max_load = '150%': a share of the line rate is in (0, 100]%"),
    ],
)  # fmt: skip
def test_a_campaigns_load_that_cannot_be_names_its_line(text, said):
    origin = "s.toml" if "search" in text else "bits.toml"
    with pytest.raises(InputError) as got:
        spec.parse(text, origin)
    assert got.value.problems[0].startswith(said), got.value.problems

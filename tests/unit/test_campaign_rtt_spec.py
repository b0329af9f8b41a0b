"""An rtt campaign file: seed 002's factors as keys, checked (file and line named), each
cell's 'netassay rtt' flags, and its time."""

from __future__ import annotations

import pytest

from netassay.campaign import order, spec
from netassay.invoke import cell_given

RTT = """\
[campaign]
name = "seed002"
method = "rtt"
[fixed]
runs = 3
count = 500
probe_rate = "1k"
capture = false
[factors]
path = ["bridge", "veth"]
load = ["none", "cpu:8@sender"]
responder_delay = [0, "200us"]
"""


def test_an_rtt_campaign_expands_and_builds_its_cells():
    c = spec.parse(RTT, "r.toml")
    assert c.method == "rtt" and len(c.cells) == 8
    given = cell_given(c.method, c.settings(7))
    assert given["path"] == "veth" and given["load"] == "cpu:8@sender"
    assert given["responder_delay"] == "200us"
    assert given["count"] == 500 and given["capture"] is False
    assert "embedded" not in given and not any(spec.params("rtt")[k].scenario for k in given)
    assert c.level_key("responder_delay", "200us") == 200_000
    assert c.level_key("responder_delay", 0) == 0 and c.ordinal("responder_delay")
    assert order.cell_trials(c, 0) == 3
    # 3 runs of 500 probes at 1k/s, each with its overhead; a load settles first
    assert order.cell_estimate_s(c, 0) == pytest.approx(3 * (0.5 + 0.3) + 1.5)
    assert order.cell_estimate_s(c, 2) == pytest.approx(1.0 + 3 * (0.5 + 0.3) + 1.5)
    assert "trials: 24 planned" in order.describe(c, 1, "set")


def test_bad_rtt_keys_one_line_each():
    text = """\
[campaign]
name = "bad"
method = "rtt"
[fixed]
path = "tunnel"
load = "disk:3@sender"
responder_delay = "soon"
contract = "1G"
[factors]
probe = ["icmp", "tcp"]
"""
    with pytest.raises(spec.CampaignFileError) as exc:
        spec.parse(text, "bad.toml")
    at = {ln.split(":")[1]: ln for ln in exc.value.problems}
    assert sorted(at) == ["10", "5", "6", "7", "8"]
    assert "path = 'tunnel'" in at["5"] and "load = 'disk:3@sender'" in at["6"]
    assert "responder_delay = 'soon'" in at["7"]
    assert "'contract' in [fixed] is not a setting of an rtt" in at["8"]
    assert "probe = 'tcp'" in at["10"]

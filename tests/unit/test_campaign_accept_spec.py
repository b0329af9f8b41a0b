"""An accept campaign file: its keys, its checks (file and line named), its cells' flags
and scenario, and its time."""

from __future__ import annotations

from pathlib import Path

import pytest

from netassay.campaign import order, spec
from netassay.invoke import cell_given

ACCEPT = """\
[campaign]
name = "links"
method = "accept"
[fixed]
contract = "100M"
layer = "payload"
runs = 2
duration = "3s"
ramp_step = "1s"
client_cpu = 0
server_cpu = 1
[factors]
link_cap = ["110M", "90M"]
rx_cpu = [0, 1]
socket_buffer = ["default", "4M"]
"""


def test_an_accept_campaign_expands_and_builds_its_cells():
    c = spec.parse(ACCEPT, "links.toml")
    assert c.method == "accept" and len(c.cells) == 8
    s = c.settings(7)
    assert s["link_cap"] == "90M" and s["rx_cpu"] == 1 and s["socket_buffer"] == "4M"
    given = cell_given(c.method, s)
    assert given["embedded"] is True  # the flag its cells always give
    assert given["contract"] == "100M" and given["link_cap"] == "90M"
    assert given["runs"] == 2 and given["ramp_step"] == "1s"
    assert given.get("ramp") is not False
    assert {k: v for k, v in s.items() if spec.params(c.method)[k].scenario} == {
        "client_cpu": 0,
        "server_cpu": 1,
        "rx_cpu": 1,
        "socket_buffer": "4M",
    }
    # the levels order by number: "default" buffers first, "none" CPUs first
    assert c.level_key("socket_buffer", "default") < c.level_key("socket_buffer", "4M")
    assert c.level_key("rx_cpu", "none") < c.level_key("rx_cpu", 0)


def test_accept_defaults_and_no_ramp():
    c = spec.parse(
        '[campaign]\nname = "a"\nmethod = "accept"\n[fixed]\ncontract = "1G"\nramp = false\n',
        "a.toml",
    )
    s = c.settings(0)
    assert (s["runs"], s["duration"], s["layer"]) == (3, "10s", "ethernet")
    given = cell_given("accept", s)
    assert given["ramp"] is False and not any(spec.params("accept")[k].scenario for k in s)
    assert order.cell_trials(c, 0) == 3  # no ramp steps: the three runs
    assert order.cell_estimate_s(c, 0) == pytest.approx(3 * 10 + 3 * 0.6 + 1.5)


def test_an_accept_campaign_is_planned_with_its_time():
    c = spec.parse(ACCEPT, "links.toml")
    # a cell: 4 ramp steps of 1 s and 2 runs of 3 s, each run with its overhead, and the
    # link built and removed (measured here: a 1 s-step, one 2 s-run cell takes ~9.5 s)
    assert order.cell_trials(c, 0) == 6
    assert order.cell_estimate_s(c, 0) == pytest.approx(4 * 1 + 2 * 3 + 6 * 0.6 + 1.5)
    text = order.describe(c, 7, "set")
    assert "method accept" in text and "contract 100M, 2 runs x 3s" in text
    assert "trials: 48 planned" in text
    assert order.plan_json(c, 7, "set")["estimate_s"] == pytest.approx(
        8 * order.cell_estimate_s(c, 0)
    )


def test_bad_accept_keys_one_line_each_with_file_and_line():
    text = """\
[campaign]
name = "bad"
method = "accept"
[fixed]
layer = "frames"
sender = "ping"
rates = "1k:2k:1k"
pinning = "pin-2cpu"
mtu = 100
[factors]
rx_cpu = [0, "all"]
socket_buffer = ["4M", "lots"]
link_drop = [0.0, 1.5]
"""
    with pytest.raises(spec.CampaignFileError) as exc:
        spec.parse(text, "bad.toml")
    lines = exc.value.problems
    assert len(lines) == 9, lines
    at = {ln.split(":")[1]: ln for ln in lines}
    assert "layer = 'frames'" in at["5"] and "payload, ip, ethernet, l1" in at["5"]
    assert "sender = 'ping'" in at["6"]
    assert "'rates' in [fixed] is not a setting of an accept" in at["7"]
    assert "'pinning' in [fixed] is not a setting of an accept" in at["8"]
    assert "mtu = 100" in at["9"]
    assert "rx_cpu = 'all'" in at["11"]
    assert "socket_buffer = 'lots'" in at["12"]
    assert "link_drop = 1.5" in at["13"]
    assert "no contract" in at["4"]
    assert all(ln.startswith("bad.toml:") for ln in lines)


def test_an_accept_campaign_needs_a_contract_and_sweep_keys_stay_sweep_keys():
    with pytest.raises(spec.CampaignFileError) as exc:
        spec.parse('[campaign]\nname = "x"\nmethod = "accept"\n[fixed]\nruns = 1\n', "x.toml")
    assert exc.value.problems == [
        'x.toml:4: an accept campaign has no contract; add contract = "100M" to [fixed]'
        " (or make it a factor)"
    ]
    with pytest.raises(spec.CampaignFileError) as exc:
        spec.parse('[campaign]\nname = "x"\n[fixed]\ncontract = "1G"\nmtu = 9000\n', "x.toml")
    assert [ln.split(";")[0] for ln in exc.value.problems] == [
        "x.toml:4: 'contract' in [fixed] is not a setting of a sweep",
        "x.toml:5: 'mtu' in [fixed] is not a setting of a sweep",
    ]


def test_the_shipped_accept_campaign_is_seed_004s_matrix():
    path = Path(__file__).resolve().parents[2] / "examples" / "accept-campaign.toml"
    c = spec.load(path)
    assert c.method == "accept" and len(c.cells) == 8 and c.repetitions == 2
    assert set(c.factors) == {"rx_cpu", "tx_cpu", "socket_buffer"}
    s = c.settings(7)
    assert {k: v for k, v in s.items() if spec.params(c.method)[k].scenario} == {
        "client_cpu": 0, "server_cpu": 1, "rx_cpu": 1, "tx_cpu": 1, "socket_buffer": "4M"
    }  # fmt: skip
    assert order.cell_trials(c, 7) == 6

"""Line rate from a link speed and a frame size (pure arithmetic, no NIC needed)."""

from __future__ import annotations

import pytest

from netassay.errors import UsageError
from netassay.testbed import linerate


def test_rfc2544_smallest_frame_takes_84_bytes_on_the_wire():
    # 60 bytes handed to the NIC + 4 FCS = RFC 2544's 64-byte frame; + 8 preamble + 12 IFG
    assert linerate.wire_bytes(60) == 84
    assert linerate.line_rate_pps(10_000, 60) == pytest.approx(14_880_952.38, abs=0.01)
    assert linerate.line_rate_pps(1_000, 60) == pytest.approx(1_488_095.24, abs=0.01)


def test_netassay_sizes_count_without_fcs():
    assert linerate.wire_bytes(64) == 88
    assert linerate.line_rate_pps(10_000, 64) == pytest.approx(10e9 / (88 * 8))
    assert linerate.line_rate_pps(10_000, 1514) == pytest.approx(812_743.8, abs=0.1)


@pytest.mark.parametrize(
    ("text", "speed"),
    [("10000\n", 10000), ("-1", None), ("0", None), ("", None), (None, None), ("x", None)],
)
def test_parse_speed(text, speed):
    assert linerate.parse_speed(text) == speed


def test_slowest_port_bounds_the_path():
    lr = linerate.of_ports({"a": 25_000, "b": 10_000}, 64)
    assert (lr.speed_mbps, lr.limited_by) == (10_000, "b")
    assert lr.pps == pytest.approx(linerate.line_rate_pps(10_000, 64))
    assert "10000 Mb/s on b" in lr.describe()
    assert linerate.of_ports({"a": None, "b": 1000}, 64).limited_by == "b"


def test_unknown_speed_is_said_and_refuses_nothing():
    lr = linerate.of_ports({"veth0": None, "veth1": None}, 64)
    assert lr.pps is None
    assert lr.describe().startswith("line rate unknown")
    linerate.refuse_above([50e6], lr, "load")  # nothing to refuse against


def test_loads_above_line_rate_are_refused_in_one_line():
    lr = linerate.of_ports({"p0": 1000, "p1": 1000}, 64)  # 1,420,454.5 frames/s
    linerate.refuse_above([1_000_000, 1_420_454], lr, "load")
    with pytest.raises(UsageError) as err:
        linerate.refuse_above([1_000_000, 1_500_000], lr, "load")
    line = err.value.line()
    assert "\n" not in line and err.value.exit_code == 2
    assert "1.5 Mpps is above the line rate" in line and "1.42 Mpps" in line
    assert "88 bytes" in line


def test_json_record_carries_the_rate():
    rec = linerate.of_ports({"p0": 10_000}, 60).as_json()
    assert rec["wire_bytes"] == 84 and rec["pps"] == pytest.approx(14_880_952.38, abs=0.01)


def test_a_sweep_and_a_search_refuse_loads_above_a_ports_line_rate():
    """What sweep.run and check_peak (the search's --max-load) ask of a testbed whose
    ports report a speed: a fake 1 Gb/s port, so no NIC is needed."""
    from netassay.shared.lab import check_line_rate

    line = linerate.of_ports({"p0": 1000, "p1": 10_000}, 64).as_json()
    state = {"line_rate": line}
    check_line_rate(state, [1_000_000, 1_420_000])
    with pytest.raises(UsageError, match=r"load 1\.5 Mpps is above the line rate: 1000 Mb/s on p0"):
        check_line_rate(state, [1_000_000, 1_500_000])
    with pytest.raises(UsageError, match=r"--max-load 1\.5 Mpps is above the line rate"):
        check_line_rate(state, [1_500_000], "--max-load")
    check_line_rate({"line_rate": linerate.of_ports({"v": None}, 64).as_json()}, [1e9])
    check_line_rate({}, [1e9])  # the embedded testbed: no ports

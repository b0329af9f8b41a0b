"""The netassay-gen wrapper: argument building and output parsing (no binary runs)."""

from __future__ import annotations

import json

import pytest

from netassay.errors import GeneratorError, UsageError
from netassay.traffic import generator as gen

SAMPLE = {
    "mode": "send",
    "technique": "af_packet_sendmmsg",
    "planned": 1000,
    "sent": 1000,
    "first_tx_ns": 10,
    "last_tx_ns": 9_990_010,
    "duration_s": 0.00999,
    "rate_pps": 100000.0,
    "achieved_rate_pps": 100000.0,
    "rate_error": 0.0,
    "lateness_max_ns": 900,
    "lateness_p99_ns": 400,
    "retries": 0,
    "stopped_by_signal": False,
    "ok": True,
}


def test_build_args_formats_numbers_and_flags() -> None:
    argv = gen.build_args(
        "tg0", "02:00:00:00:00:01", "198.18.0.2", "198.19.0.2", 200_000, 10, flows=16
    )
    assert argv[argv.index("--rate") + 1] == "200000"
    assert argv[argv.index("--duration") + 1] == "10s"
    assert argv[argv.index("--flows") + 1] == "16"
    assert argv[argv.index("--size") + 1] == "64"
    assert "--json" in argv and "--best-effort" not in argv
    argv = gen.build_args(
        "tg0", "02:00:00:00:00:01", "2001:2::2", "2001:2:0:1::2", 1500.5, 0.25, 128, 1, True,
        ["--burst", "8"],
    )  # fmt: skip
    assert argv[argv.index("--rate") + 1] == "1500.5"
    assert argv[argv.index("--duration") + 1] == "0.25s"
    assert argv[-3:] == ["--best-effort", "--burst", "8"]


@pytest.mark.parametrize(("rate", "duration", "flows"), [(0, 1, 1), (1000, 0, 1), (1000, 1, 0)])
def test_build_args_rejects_impossible_values(rate: float, duration: float, flows: int) -> None:
    with pytest.raises(UsageError):
        gen.build_args("tg0", "02:00:00:00:00:01", "198.18.0.2", "198.19.0.2", rate, duration,
                       flows=flows)  # fmt: skip


def test_parse_output_ok_and_rate_missed() -> None:
    res = gen.parse_output(json.dumps(SAMPLE), "", 0)
    assert res.ok and res.sent == 1000 and res.technique == "af_packet_sendmmsg"
    assert res.raw["mode"] == "send"
    missed = dict(SAMPLE, ok=False, rate_error=-0.2, achieved_rate_pps=80000.0)
    res = gen.parse_output(json.dumps(missed), "netassay-gen: the rate was not kept", 3)
    assert res.ok is False and res.rate_error == -0.2


def test_parse_output_failures_raise_one_line_errors() -> None:
    with pytest.raises(GeneratorError, match="refused its arguments: netassay-gen: bad"):
        gen.parse_output("", "netassay-gen: bad\n", 2)
    with pytest.raises(GeneratorError, match=r"failed \(exit 1\)"):
        gen.parse_output("", "netassay-gen: socket\n", 1)
    with pytest.raises(GeneratorError, match="no JSON result"):
        gen.parse_output("not json", "", 0)
    with pytest.raises(GeneratorError, match="missing keys sent"):
        gen.parse_output(json.dumps({k: v for k, v in SAMPLE.items() if k != "sent"}), "", 0)
    err = GeneratorError("a", "b", "c")
    assert "\n" not in err.line()

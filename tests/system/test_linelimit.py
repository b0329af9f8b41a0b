"""The delay line's limit measured where the line cannot carry the ladder's first rate (a
known cap: a shaper before the line) is no limit: not kept, the file left as it was with
the limits at other delays, and the next run over the line at that delay measures again.

Run: ``sudo .venv/bin/pytest tests/system/test_linelimit.py``.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from tests.conftest import run_cli

from netassay.testbed import linelimit, tcppath

pytestmark = pytest.mark.system

CAP_BPS = 40e6  # at L1: 3.25 kpps of 1514-byte frames (1538 at L1), a third of the first rung
PLANTED = "2026-11-26T00:00:00Z"


def test_a_measurement_that_carried_no_rate_is_not_kept(lab_env, tmp_path, monkeypatch):
    """A 40 Mbit/s shaper (tbf at L1) before the line at 1 ms passes 3.25 kpps: 10 kpps,
    the first rung, fails both its tries (the shaper's queue overflows or holds the
    generator back), so the measurement carries no rate. The kept file, holding a good
    limit at 20 ms, is left byte for byte; the cell's limit is none and says what
    happened; the next look at 1 ms says to measure. The same with a file kept before,
    whose 1 ms entry is null (read as not measured, kept as it was)."""
    monkeypatch.setenv("NETASSAY_STATE_DIR", str(tmp_path))
    kept = linelimit.record({0.02: 50_000.0}, PLANTED, "planted by the test")
    legacy = json.loads(kept.read_text())
    legacy["limits"].insert(0, {"delay_s": 0.001, "pps": None, "l1_bps": None})
    cfg = tcppath.TcpPathConfig(delay_s=0.001, bottleneck_bps=CAP_BPS)
    for body in (None, legacy):
        if body is not None:
            kept.write_text(json.dumps(body, indent=2, sort_keys=True))
        before = kept.read_bytes()
        assert linelimit.to_measure(linelimit.for_path(0.001, tcppath.LINE))
        said: list[str] = []
        t0 = time.monotonic()
        limit = linelimit.measure_and_keep(0.001, said.append, cfg=cfg, rates=(1e4, 2e4))
        assert time.monotonic() - t0 < 30
        print(said, limit["from"])
        assert len(said) == 2, said  # 10 kpps twice; 20 kpps never tried
        assert all(s.startswith("delay line at 10 kpps: ") and s.endswith("  (not carried)")
                   for s in said), said  # fmt: skip
        for s in said:  # the cap's doing: it held the generator back or dropped
            m = re.search(r"sent (\d+), lost (\d+)", s)
            assert m is not None, s
            sent, lost = int(m[1]), int(m[2])
            assert sent < linelimit.SENT_SHARE * 1e4 * linelimit.TRIAL_S or lost > 0, s
        assert limit["pps"] is None and limit["l1_bps"] is None
        assert limit["from"].startswith("the delay line carried none of the rates tried at 1 ms, "
                                        "measured just now: 10 kpps failed 2 times")  # fmt: skip
        assert limit["from"].endswith("Not kept as this host's limit: the next run over the line "
                                      "at this delay measures it again")  # fmt: skip
        assert not linelimit.to_measure(limit)  # the cell runs on without one, once
        assert kept.read_bytes() == before  # the good limit at 20 ms untouched
        again = linelimit.for_path(0.001, tcppath.LINE)
        assert again["pps"] is None and linelimit.to_measure(again), again
        at20 = linelimit.for_path(0.02, tcppath.LINE)
        assert at20["pps"] == 50_000.0 and f"measured {PLANTED}" in at20["from"]
    body = linelimit.read()
    assert body is not None and [x["pps"] for x in body["limits"]] == [None, 50_000.0]


@pytest.mark.slow  # a measurement on a quiet host (about 10 s) and the cell
def test_a_cell_at_a_delay_not_measured_measures_it_there(tb_name, tmp_path):
    """A limit kept at 20 ms only: a cell at 1 ms measures the line at 1 ms first (a
    limit is the one measured at the run's own delay), keeps it beside the 20 ms one,
    whose entry still says when it was measured, and runs under the 1 ms one."""
    env = {"NETASSAY_STATE_DIR": str(tmp_path)}
    kept = tmp_path / "delayline.json"
    body = {"utc": PLANTED, **linelimit.host(), "frame_bytes": 1514, "setup": linelimit.SETUP,
            "limits": [{"delay_s": 0.02, "pps": 50_000.0, "l1_bps": 615_200_000.0}]}  # fmt: skip
    kept.write_text(json.dumps(body, indent=2, sort_keys=True))
    res = run_cli("tcp", "--name", tb_name, "--delay", "1ms", "--runs", "1", "--omit", "0",
                  "--duration", "1s", "--json", timeout=240, env_extra=env)  # fmt: skip
    assert res.returncode == 0, res.stderr
    now = json.loads(kept.read_text())
    assert now["utc"] != PLANTED and now["setup"] == linelimit.SETUP
    at1, at20 = now["limits"]
    assert at20 == {**body["limits"][0], "utc": PLANTED}  # as it was, saying when
    assert at1["delay_s"] == 0.001 and at1["pps"] is not None and set(at1) == {
        "delay_s", "pps", "l1_bps"}  # fmt: skip
    limit = json.loads(res.stdout)["config"]["line_limit"]
    assert limit["pps"] == at1["pps"] and f"measured {now['utc']}" in limit["from"]
    assert limit["from"].endswith("at 1 ms")

"""``make demo``: a fresh machine measures its kernel router end to end and judges it.

Builds the router testbed (generator on CPU 0, the SUT's receive work on CPU 1), probes
how fast the generator can send through it, sweeps loads up to just below that peak so
that the sweep crosses the router's saturation point, prints the assessment with the
verdict, writes the HTML report, tears everything down and says where the report is.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from netassay.campaign import sweep as SW
from netassay.campaign.plan import Plan, describe, fmt_duration
from netassay.config import TestbedConfig
from netassay.errors import NetassayError
from netassay.testbed import Testbed, require_root
from netassay.testbed import topology as T
from netassay.units import fmt_rate

NAME = "demo"
OUT = Path(os.environ.get("NETASSAY_DEMO_OUT", "demo-out"))
LOADS = 10
RUNS = 3
DURATION_S = 1.0


def demo_rates(peak_pps: float, n: int = LOADS) -> list[float]:
    """n loads from 10% to 95% of the generator's peak, rounded to 1 kpps."""
    top = 0.95 * peak_pps
    rates = sorted({max(1000.0, round(top * (i + 1) / n, -3)) for i in range(n)})
    return rates


def _cli(*args: str) -> int:
    cmd = [sys.executable, "-m", "netassay", *args]
    print(f"$ netassay {' '.join(args)}", flush=True)
    return subprocess.run(cmd, check=False).returncode


def main() -> int:
    t0 = time.monotonic()
    try:
        require_root("the demo")
        cfg = TestbedConfig(sut="router", pinning="pin-2cpu")
        T.cleanup({NAME})
        OUT.mkdir(parents=True, exist_ok=True)
        db = OUT / "demo.db"
        db.unlink(missing_ok=True)
        with Testbed(NAME, cfg) as tb:
            print(f"testbed '{NAME}' up: kernel IPv4 router, {cfg.pinning}", flush=True)
            peak = SW.probe_peak(tb)
            print(f"generator peak through the router: {fmt_rate(peak)}", flush=True)
        rates = demo_rates(peak)
        plan = Plan(tuple(rates), RUNS, DURATION_S, 0.2)
        print(describe(plan), flush=True)
        sw = SW.Sweep(plan, cfg, str(db), NAME, "demo: kernel router, pin-2cpu", False)
        sw.progress = lambda line: print(line, flush=True)
        SW.run(sw)
        rc = _cli("assess", str(db))
        rc |= _cli("report", str(db), "--out", str(OUT / "report"))
    except NetassayError as exc:
        print(f"netassay demo: {exc.line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("netassay demo: interrupted; the testbed was removed", file=sys.stderr)
        return 130
    finally:
        if os.geteuid() == 0:
            T.cleanup({NAME})
    wall = time.monotonic() - t0
    index = (OUT / "report" / "index.html").resolve()
    print(f"demo finished in {fmt_duration(wall)}; report: {index}", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())

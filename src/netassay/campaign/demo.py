"""``make demo``: a fresh machine measures its kernel router end to end and judges it.

Builds the router testbed with the SUT's receive work on a CPU of its own (pin-2cpu,
on a machine with two CPUs or more), probes how fast the generator can send through
it, and runs three short sweeps into one store, then assesses and reports them:

1. the kernel router as it comes (backlog 1000, the "ring size" analogue), loads from
   10% to 95% of the generator's peak: on a shared virtual machine the router's CPU
   is taken away for milliseconds at a time, a 1000-packet backlog overflows during
   those gaps, and loss starts well before the router's CPU saturates (four runs on
   a 2-CPU VM: BAD each time, PDR@0.5% 145-191 kpps, the loss rising slowly);
2. the same router with a 10000-packet backlog, loads from 30% to 95% of the peak:
   the gaps no longer overflow it, and the loss starts where the router's CPU
   saturates (three runs: no loss up to 328-331 kpps, then 3-17% near the
   generator's peak of 470-500 kpps; BAD each time, as the rise is no sharp knee);
3. ground truth: that router with a capacity cap (an nft policer on its egress) at
   30% of the generator's peak, loads from 15% to 45%: PDR@0.5% must land on the cap.

A load the generator could not keep is flagged as a generator limit and left out of
the statistics, never taken as router loss. Then it tears everything down and prints
the wall time and where the report is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import replace
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
RUNS = 4
DURATION_S = 1.0
DEEP_BACKLOG = 10_000
SETTLE_S = 0.2


def demo_rates(peak_pps: float, n: int = 10, lo: float = 0.1, hi: float = 0.95) -> list[float]:
    """n loads evenly from lo to hi times the generator's peak, rounded to 1 kpps."""
    step = (hi - lo) / (n - 1)
    return sorted({max(1000.0, round(peak_pps * (lo + i * step), -3)) for i in range(n)})


def _cli(*args: str) -> int:
    print(f"\n$ netassay {' '.join(args)}", flush=True)
    return subprocess.run([sys.executable, "-m", "netassay", *args], check=False).returncode


def _sweep(db: Path, cfg: TestbedConfig, rates: list[float], label: str) -> None:
    plan = Plan(tuple(rates), RUNS, DURATION_S, SETTLE_S)
    print(f"\n== {label}\n{describe(plan)}", flush=True)
    sw = SW.Sweep(plan, cfg, str(db), NAME, label, check_peak=False)
    sw.progress = lambda line: print("  " + line, flush=True)
    SW.run(sw)


def _run(db: Path) -> int:
    plain = TestbedConfig(sut="router").resolved()  # auto: pin-2cpu with 2+ CPUs
    with Testbed(NAME, plain) as tb:
        print(
            f"testbed '{NAME}' up: kernel IPv4 router in {tb.ns('sut')}, {plain.pinning}"
            f" (generator CPU {tb.gen_cpu}, router receive CPU {tb.state.get('sut_cpu')})",
            flush=True,
        )
        peak = SW.probe_peak(tb)
    print(f"generator peak through the router here (median of 3): {fmt_rate(peak)}", flush=True)
    _sweep(db, plain, demo_rates(peak), "demo 1: kernel router, backlog 1000")
    deep = replace(plain, backlog=DEEP_BACKLOG)
    _sweep(
        db, deep, demo_rates(peak, 10, 0.3, 0.95), f"demo 2: kernel router, backlog {DEEP_BACKLOG}"
    )
    cap = round(0.3 * peak, -3)
    _sweep(
        db,
        replace(deep, sut_cap_pps=cap),
        demo_rates(peak, 11, 0.15, 0.45),
        f"demo 3: kernel router capped at {fmt_rate(cap)} (ground truth)",
    )
    rc = _cli("assess", str(db))
    rc |= _cli("report", str(db), "--out", str(OUT / "report"))
    return rc


def main() -> int:
    t0 = time.monotonic()
    try:
        require_root("the demo")
        T.cleanup({NAME})
        OUT.mkdir(parents=True, exist_ok=True)
        db = OUT / "demo.db"
        db.unlink(missing_ok=True)
        shutil.rmtree(OUT / "report", ignore_errors=True)  # no figures of an earlier demo
        rc = _run(db)
    except NetassayError as exc:
        print(f"netassay demo: {exc.line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("netassay demo: interrupted; the testbed was removed", file=sys.stderr)
        return 130
    finally:
        if os.geteuid() == 0:
            T.cleanup({NAME})
    index = (OUT / "report" / "index.html").resolve()
    wall = fmt_duration(time.monotonic() - t0)
    print(f"\ndemo finished in {wall}; testbed removed; report: {index}", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())

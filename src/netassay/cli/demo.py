"""``make demo``: a fresh machine measures its kernel router end to end and judges it.

First ``netassay doctor --quick``: is this host fit to measure, and up to what load
(its verdict, each check's figure, the trusted range; every later experiment on the same
settings carries it by reference). Then it builds the router testbed with the SUT's
receive work on a CPU of its own (pin-2cpu, on a machine with two CPUs or more), probes
how fast the generator can send through it, and then, into one store:

1. a PASTRAMI sweep of the kernel router with a 1000-packet backlog (the "ring size"
   analogue), loads from 10% to 95% of the generator's peak;
2. the same router with a 10000-packet backlog, loads from 30% to 95% of the peak;
3. ground truth: that router with a capacity cap (an nft policer on its egress) at
   30% of the generator's peak, loads from 15% to 45%: PDR@0.5% must land on the cap;
4. ``netassay search`` (MLRsearch) for NDR and PDR@0.5% on that capped router, in a few
   seconds of traffic, then a PASTRAMI sweep around the PDR it found, with its verdict;
5. ``netassay rtt``: the round-trip time over a Linux bridge and over macvlan, split at
   in-kernel capture points, and ``netassay compare`` between the two;
6. ``netassay accept``: seed 004's acceptance test of a link with headroom (the embedded
   link shaped at 110% of a 100 Mbit/s contract): iperf3's ramp, then two runs, the
   test host checked around each, PASS expected;
7. ``netassay soak``: 20 s at 90% of the PDR the search found, on the capped router,
   read every second and judged against PDR's 0.5% (PASS expected);
8. ``netassay flood``: five data planes, the kernel router, the XDP router (PASTRAMI's
   eBPF class), Open vSwitch's userspace datapath, DPDK's testpmd and l3fwd, offered far
   more than they can forward, their maximum receive rates (MRR) stored (kind ``mrr``)
   and compared (a short version of ``examples/dataplanes-mrr.toml``);
9. ``netassay flood --sizes``: the kernel router's MRR at three of RFC 2544's frame
   sizes, and its table in Mpps and Gbit/s;
10. ``netassay tcp`` (seed 003): reno over a 20 ms path (netassay-gen's delay line where
   the kernel has no netem) with random loss 1e-3, beside the Mathis bound; on a host
   that has never measured the delay line's forwarding limit, the cell measures it
   first (about ten seconds) and keeps it;
11. ``netassay latency``: one-way latency histograms at 0, 10, 50 and 90% of the PDR the
   search of step 4 found, on that capped router;
12. ``netassay sweep --imix simple``: TRex's simple IMIX at two low loads, every frame
   size counted at the sink;

then assesses the store and writes one report that holds or links them all. A trial
the measurement itself spoiled (the generator could not keep the load or stalled long
enough to overflow a queue, a counter fault) is stored and left out of the statistics,
never taken as router loss; a load left with no usable trial is shown as a gap. What
this VM gave is in docs/benchmarks.md; on another machine the numbers are its own. Then it
tears everything down and prints the wall time and where the report is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from netassay.config import TestbedConfig
from netassay.errors import NetassayError, ToolError
from netassay.shared import sweep_run as run
from netassay.shared.lab import auto_line
from netassay.shared.sweep_plan import Plan, describe
from netassay.testbed import dataplane, require_root, topology
from netassay.units import fmt_duration, fmt_rate

NAME = "demo"
OUT = Path(os.environ.get("NETASSAY_DEMO_OUT", "demo-out"))
RUNS = 4
DURATION_S = 1.0
DEEP_BACKLOG = 10_000
SETTLE_S = 0.2


def demo_rates(mrr_pps: float, n: int = 10, lo: float = 0.1, hi: float = 0.95) -> list[float]:
    """n loads evenly from lo to hi times the router's MRR, rounded to 1 kpps."""
    step = (hi - lo) / (n - 1)
    return sorted({max(1000.0, round(mrr_pps * (lo + i * step), -3)) for i in range(n)})


def _cli(*args: str) -> int:
    print(f"\n$ netassay {' '.join(args)}", flush=True)
    return subprocess.run([sys.executable, "-m", "netassay", *args], check=False).returncode


def _sweep(db: Path, cfg: TestbedConfig, rates: Sequence[float], label: str) -> float | None:
    """A PASTRAMI sweep of ``cfg`` (no ``rates``: chosen past the router's MRR, which it
    measures first); the MRR it measured, if it did."""
    plan = Plan(tuple(rates), RUNS, DURATION_S, SETTLE_S)
    print(f"\n== {label}\n{describe(plan)}", flush=True)
    sw = run.Sweep(plan, cfg, str(db), NAME, label, check_peak=False)
    sw.progress = lambda line: print("  " + line, flush=True)
    sw.note = sw.progress
    run.run(sw)
    if sw.auto is not None:
        print(f"  {auto_line(sw.auto)}", flush=True)
    return float(sw.auto["mrr_pps"]) if sw.auto else None


def _run(db: Path) -> int:
    print("\n== demo 0: is this host fit to measure? (doctor --quick)", flush=True)
    rc = _cli(
        "doctor", "--quick", "--name", NAME, "--backlog", str(DEEP_BACKLOG), "--db", str(db),
        "--label", "demo 0: is this host fit to measure?",
    )  # fmt: skip
    plain = TestbedConfig(sut="router").resolved()  # auto: pin-2cpu with 2+ CPUs
    # backlog 1000 said explicitly: the kernel's default, whatever the host has now
    mrr = _sweep(db, replace(plain, backlog=1000), (), "demo 1: kernel router, backlog 1000")
    deep = replace(plain, backlog=DEEP_BACKLOG)
    mrr = _sweep(db, deep, (), f"demo 2: kernel router, backlog {DEEP_BACKLOG}") or mrr
    if not mrr:
        print("netassay demo: no MRR was measured (see above); the cap is set at 100 kpps")
    cap = round(0.3 * mrr, -3) if mrr else 100_000.0
    mrr = mrr or cap / 0.3
    _sweep(
        db,
        replace(deep, sut_cap_pps=cap),
        demo_rates(mrr, 11, 0.15, 0.45),
        f"demo 3: kernel router capped at {fmt_rate(cap)} (ground truth)",
    )
    rc |= _search(db, mrr, cap)
    rc |= _rtt(db)
    rc |= _accept(db)
    rc |= _soak(db, cap)
    rc |= _flood(db)
    rc |= _sizes(db)
    rc |= _tcp(db) | _latency(db, cap) | _imix(db)
    rc |= _cli("assess", str(db))
    rc |= _cli("report", str(db), "--out", str(OUT / "report"))
    return rc


def _search(db: Path, mrr: float, cap: float) -> int:
    """NDR and PDR@0.5% of the capped router (the ground truth) by MLRsearch in a few
    seconds of traffic, then a PASTRAMI sweep around the PDR it found, with its verdict."""
    print("\n== demo 4: search (MLRsearch) for NDR and PDR@0.5%, then its PASTRAMI verdict")
    return _cli(
        "search", "--name", NAME, "--backlog", str(DEEP_BACKLOG), "--sut-cap", str(cap),
        "--max-load", str(round(0.6 * mrr, -3)), "--no-peak-check",
        "--final-duration", "1s", "--duration-sum", "5s", "--time-cap", "3m",
        "--then-verify", "--verify-runs", "3", "--db", str(db),
        "--label", f"demo 4: kernel router capped at {fmt_rate(cap)}, search",
    )  # fmt: skip


def _soak(db: Path, cap: float) -> int:
    """The capped router held at 90% of the search's PDR for 20 s, read every second."""
    print("\n== demo 7: soak at 90% of the PDR found, read every second")
    return _cli(
        "soak", "--name", NAME, "--backlog", str(DEEP_BACKLOG), "--sut-cap", str(cap),
        "--rate", "90%pdr", "--duration", "20s", "--segment-length", "5s", "--no-peak-check",
        "--db", str(db), "--label", f"demo 7: soak of the router capped at {fmt_rate(cap)}",
    )  # fmt: skip


def _rtt(db: Path) -> int:
    """Round-trip time split at capture points: a Linux bridge against macvlan."""
    print("\n== demo 5: round-trip time, split at capture points: bridge vs macvlan")
    rc = 0
    for path in ("bridge", "macvlan"):
        rc |= _cli(
            "rtt", "--name", NAME, "--path", path, "--probe-rate", "1k", "--count", "1000",
            "--runs", "5", "--db", str(db), "--label", f"demo 5: rtt over {path}",
        )  # fmt: skip
    return rc | _cli("compare", "--db", str(db), "--by", "path")


def _accept(db: Path) -> int:
    """Seed 004's acceptance test on a known link with 10% headroom over the contract."""
    print("\n== demo 6: acceptance of a link (seed 004): 100 Mbit/s contract, link shaped at 110%")
    return _cli(
        "accept", "--contract", "100M", "--layer", "ethernet", "--embedded",
        "--link-cap", "110M", "--sender", "iperf3", "--runs", "2", "--duration", "3s",
        "--ramp-step", "1s", "--name", NAME, "--db", str(db),
        "--label", "demo 6: acceptance, 100 Mbit/s contract, link capped at 110 Mbit/s",
    )  # fmt: skip


DATAPLANES = ("router", "xdp-router", "ovs", "testpmd", "l3fwd")


def _flood(db: Path) -> int:
    """Each data plane flooded twice for 1 s: what it forwards when offered far more
    (MRR), stored; a data plane whose package this host lacks is said and skipped."""
    print("\n== demo 8: maximum receive rate of five data planes (kernel router, XDP "
          "router, Open vSwitch, DPDK testpmd and l3fwd)")  # fmt: skip
    rc = 0
    for sut in DATAPLANES:
        try:
            if dataplane.is_dataplane(TestbedConfig(sut=sut)):
                dataplane.module(sut).validate(TestbedConfig(sut=sut))
        except ToolError as exc:  # its package is missing: said, and the demo goes on
            print(f"  demo 8: {sut} skipped: {exc.line()}", flush=True)
            continue
        rc |= _cli(
            "flood", "--name", NAME, "--sut", sut, "--duration", "1s", "--runs", "2",
            "--db", str(db), "--label", f"demo 8: flood of the {sut}",
        )  # fmt: skip
    return rc


def _sizes(db: Path) -> int:
    """The kernel router flooded at three of RFC 2544's frame sizes (68, 512 and 1518
    bytes with the FCS), then the series' table."""
    print("\n== demo 9: RFC 2544 frame sizes: the kernel router's MRR at 68, 512, 1518 B")
    return _cli(
        "flood", "--name", NAME, "--sut", "router", "--duration", "1s", "--runs", "1",
        "--sizes", "64,508,1514", "--db", str(db), "--label", "demo 9: frame sizes",
    )  # fmt: skip


def _tcp(db: Path) -> int:
    """Seed 003's TCP cell: reno over a 20 ms path with random loss 1e-3, two 5 s runs,
    beside the Mathis bound MSS/RTT x C/sqrt(p)."""
    print("\n== demo 10: TCP over a lossy long path (seed 003): reno, 20 ms, loss 1e-3")
    return _cli(
        "tcp", "--name", NAME, "--cc", "reno", "--delay", "20ms", "--loss", "1e-3",
        "--runs", "2", "--duration", "5s", "--db", str(db),
        "--label", "demo 10: reno over 20 ms with random loss 1e-3",
    )  # fmt: skip


def _latency(db: Path, cap: float) -> int:
    """One-way latency under load as CSIT reports it, on the capped router of step 4."""
    print("\n== demo 11: one-way latency at 0, 10, 50 and 90% of the PDR found in step 4")
    return _cli(
        "latency", "--name", NAME, "--backlog", str(DEEP_BACKLOG), "--sut-cap", str(cap),
        "--runs", "2", "--duration", "1s", "--no-peak-check", "--db", str(db),
        "--label", f"demo 11: latency of the router capped at {fmt_rate(cap)}",
    )  # fmt: skip


def _imix(db: Path) -> int:
    """TRex's simple IMIX (7:4:1 of 64/590/1514 bytes) through the kernel router."""
    print("\n== demo 12: IMIX (7:4:1 of 64, 590 and 1514 bytes), every size counted")
    return _cli(
        "sweep", "--name", NAME, "--imix", "simple", "--rates", "20k,50k", "--runs", "2",
        "--duration", "1s", "--no-peak-check", "--db", str(db), "--label", "demo 12: IMIX",
    )  # fmt: skip


def main() -> int:
    t0 = time.monotonic()
    try:
        require_root("the demo")
        topology.cleanup({NAME})
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
            topology.cleanup({NAME})
    index = (OUT / "report" / "index.html").resolve()
    wall = fmt_duration(time.monotonic() - t0)
    print(f"\ndemo finished in {wall}; testbed removed; report: {index}", flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark netassay rtt against iputils ping and irtt, and measure its own costs.

1. Side by side on the same path (bridge and routed veth, ICMP at 1 kpps, 64-byte
   frames): netassay's round trip at the sender endpoint's interface (``rtt``), from
   the send call to the reply at that interface (``latency_kernel``, ping's method) and
   to the reply read (``latency_sent``, irtt's method), beside iputils ping and irtt, in
   turn on one testbed: 16 blocks (8 with --quick) of 500 probes each, netassay's run
   then ping's and irtt's (their order swapped every other block). Pooled percentiles,
   and the blocks' medians paired (Wilcoxon signed-rank). Target: netassay's p50 and
   p99 at or below each peer's, like for like (``latency_kernel`` against ping,
   ``latency_sent`` against irtt).
   Then the send path alone (``send_paths``): ICMP requests sent as frames through a
   packet socket (netassay's way) and through the raw ICMP socket (ping's way), probe
   by probe in turn in one run (8 runs of 2000 on each path, 4 with --quick): the time
   from the send call to the interface's egress hook, ``latency_kernel`` and ``rtt``.
2. The capture's own cost at 1 kpps, two ways: (a) in the kernel, from the capture
   programs' run time (kernel.bpf_stats_enabled, set for the benchmark and restored):
   the eight programs' time per probe; (b) the same runs with and without the hooks,
   interleaved, compared on ``latency_sent`` (the application's round trip, measured
   either way): Hodges-Lehmann shift and Mann-Whitney over runs. Target: under 5% of
   the median RTT.
3. High probe rates (bridge, ICMP, the path check skipped): what was sent, lost, where
   the lost probes were last seen (``lost_after``), and netassay's own loss (probes the
   kernel refused at the sender's socket, replies lost after the sender endpoint's
   interface, in netassay-probe's socket), up to 1 Mpps.

4. The responder-delay ground truth (routed veth, UDP probes at 400/s answered by the
   echo, holds 0, 200 us and 1 ms interleaved run by run): N repetitions, each one
   ``netassay rtt`` measurement; per repetition and hold how much the response time's
   median (and the RTT's) grew, as the median of the per-pair differences between run
   i of the hold and run i of no hold (``paired``) and as the difference of the
   medians over runs (``medians``), and each one's error against the hold. Target: the
   response time grows by D within 5 us.

Run: ``sudo .venv/bin/python bench/rtt.py [--quick]``; writes bench/results/rtt.json
(and a timestamped copy) and prints it. ``--truth-only`` runs part 4 alone and replaces
only its section of rtt.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import secrets
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from netassay import names  # noqa: E402
from netassay.analysis import effects  # noqa: E402
from netassay.counters.capture import Capture  # noqa: E402
from netassay.hist import Hist  # noqa: E402
from netassay.methods.rtt import run as rtt_run  # noqa: E402
from netassay.methods.rtt.run import sender_link  # noqa: E402
from netassay.proc import run  # noqa: E402
from netassay.testbed import Testbed  # noqa: E402
from netassay.testbed.rtt import RttTestbedConfig  # noqa: E402
from netassay.traffic import peers as traffic_peers  # noqa: E402
from netassay.traffic.probe import ProbeSpec, Sender  # noqa: E402

OUT = ROOT / "bench" / "results" / "rtt.json"
BPF_STATS = Path("/proc/sys/kernel/bpf_stats_enabled")


def _name() -> str:
    return "b" + secrets.token_hex(3)


def _merged(m: rtt_run.Measurement, segment: str) -> Hist:
    h = Hist()
    for r in m.results:
        h.merge(r.hists[segment])
    return h


def _pcts(h: Hist) -> dict[str, Any]:
    s = h.summary()
    return {k: s[k] for k in ("n", "min_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns")}


def side_by_side(path: str, blocks: int, count: int) -> dict[str, Any]:
    """netassay, ping and irtt in turn on one testbed, block after block (ping and irtt
    swap places every other block), so that the three see the same machine: a run's
    median on these machines drifts by 10-20 us from one second to the next."""
    sndep, rspep = names.netns(path[:1] + "sbs", "sndep"), names.netns(path[:1] + "sbs", "rspep")
    peers: dict[str, list[traffic_peers.PeerRun]] = {"ping": [], "irtt": []}

    def after_run(m: rtt_run.Measurement, res: Any) -> None:
        assert m.testbed is not None  # a run ends on a testbed built
        dst, s = m.testbed["peers"]["sndep"]["dst"], m.req.spec
        order = ("ping", "irtt") if len(m.results) % 2 else ("irtt", "ping")
        for peer in order:
            if peer == "ping":
                peers[peer].append(
                    traffic_peers.ping(sndep, dst, s.rate_pps, count, s.size_bytes, 1.0)
                )
            else:
                peers[peer].append(
                    traffic_peers.irtt(sndep, rspep, dst, s.rate_pps, count, s.size_bytes)
                )

    req = rtt_run.RttSetup(path=path, spec=ProbeSpec(count=count), runs=blocks,
                       name=path[:1] + "sbs")  # fmt: skip
    m = rtt_run.measure_all(req, after_run)
    ours = {seg: _pcts(_merged(m, seg)) for seg in ("rtt", "latency_kernel", "latency_sent")}
    pooled = {}
    for peer, runs in peers.items():
        h = Hist()
        for r in runs:
            h.merge(r.hist)
        pooled[peer] = {**_pcts(h), "sent": sum(r.sent for r in runs),
                        "received": sum(r.received for r in runs)}  # fmt: skip
    # like for like: ping stamps the reply in the kernel (SO_TIMESTAMP), irtt where its
    # application reads it
    same = {"ping": "latency_kernel", "irtt": "latency_sent"}
    targets, paired = {}, {}
    for peer, seg in same.items():
        for q in ("p50_ns", "p99_ns"):
            targets[f"{seg} {q} <= {peer}"] = ours[seg][q] <= pooled[peer][q]
        a = [r.hists[seg].percentile(50) for r in m.results]
        b = [r.hist.percentile(50) for r in peers[peer]]
        paired[f"{seg} - {peer}"] = {"block_p50_ns": {"netassay": a, peer: b},
                                     **effects.wilcoxon_paired(a, b)}  # fmt: skip
    send = [r.hists["latency_kernel"].percentile(50) - r.hists["rtt"].percentile(50)
            for r in m.results]  # fmt: skip
    return {"path": path, "rate_pps": 1000, "count_per_block": count, "blocks": blocks,
            "netassay": ours, "send_path": m.results[0].prober.get("send_path"),
            "send_call_to_interface_p50_ns": statistics.median(send),
            "peers": pooled, "paired_by_block": paired, "targets": targets}  # fmt: skip


def send_paths(path: str, runs: int, count: int) -> dict[str, Any]:
    """The two ways an ICMP request can leave, probe by probe in one run (netassay-probe
    --alternate on): even probes as frames through a packet socket on the endpoint's
    interface (netassay's way), odd ones through the raw ICMP socket (ping's way, the IP
    stack's output path), so that both see the same machine. Per run and way, the
    medians of each probe's send call to the interface's egress hook (P1 - tx), of its
    ``latency_kernel`` (P8 - tx) and of its ``rtt`` (P8 - P1); then the medians over runs
    and the runs' paired differences (packet - raw)."""
    name = "sp" + secrets.token_hex(2)
    parts = {"send_to_interface": ("tx", "snd_ep_out"), "latency_kernel": ("tx", "snd_ep_in"),
             "rtt": ("snd_ep_out", "snd_ep_in")}  # fmt: skip
    per_run: dict[str, dict[str, list[float]]] = {
        w: {k: [] for k in parts} for w in ("packet", "raw")
    }
    with Testbed(name, RttTestbedConfig(path=path)) as tb, Capture(tb.state["namespaces"]) as cap:
        run(["sysctl", "-q", "-w", "net.ipv4.icmp_echo_ignore_all=0"], netns=tb.ns("rspep"))
        dst, cpu_snd = tb.state["peers"]["sndep"]["dst"], tb.state["cpus"]["snd"]
        for _ in range(runs):
            cap.clear()
            sender = Sender(tb.ns("sndep"), dst, ProbeSpec(count=count), cpu_snd,
                            link=sender_link(tb), alternate=True)  # fmt: skip
            try:
                rows = [b for b in sender.batches()]
                assert sender.finish().get("send_path") == "alternate"
            finally:
                sender.kill()
            rec = np.concatenate(rows)
            seq, tx, rx = np.ascontiguousarray(rec[:, 0]), rec[:, 2].astype(np.int64), rec[:, 3]
            pts = {k: v.astype(np.int64) for k, v in cap.lookup(seq).items()}
            t = {"tx": tx, **pts}
            ok = (rx > 0) & (tx > 0) & (pts["snd_ep_out"] > 0) & (pts["snd_ep_in"] > 0)
            for way, parity in (("packet", 0), ("raw", 1)):
                sel = ok & (seq % 2 == parity)
                for k, (a, b) in parts.items():
                    per_run[way][k].append(float(np.median(t[b][sel] - t[a][sel])))
    medians = {w: {k: statistics.median(v) for k, v in d.items()} for w, d in per_run.items()}
    paired = {k: effects.wilcoxon_paired(per_run["packet"][k], per_run["raw"][k]) for k in parts}
    return {"path": path, "runs": runs, "count": count, "per_run_ns": per_run,
            "medians_ns": medians, "paired_packet_minus_raw": paired}  # fmt: skip


def _bpf_stats(on: bool) -> str:
    old = BPF_STATS.read_text().strip()
    BPF_STATS.write_text("1\n" if on else "0\n")
    return old


def _capture_prog_time() -> tuple[int, int]:
    """(run count, run time ns) summed over every loaded capture program."""
    progs = json.loads(run(["bpftool", "-j", "prog", "show"]).stdout)
    mine = [p for p in progs if p.get("name") == "na_rtt_capture"]
    return sum(p.get("run_cnt", 0) for p in mine), sum(p.get("run_time_ns", 0) for p in mine)


def capture_cost(blocks: int, runs: int, count: int) -> dict[str, Any]:
    """In-kernel time of the capture programs per probe, and with/without A/B runs."""
    old = _bpf_stats(True)
    try:
        with_hooks, without, rtts, per_probe = [], [], [], []
        for b in range(blocks):
            order = (True, False) if b % 2 == 0 else (False, True)
            for capture in order:
                req = rtt_run.RttSetup(path="bridge", spec=ProbeSpec(count=count), runs=runs,
                                   capture=capture, name=_name())  # fmt: skip
                seen: list[tuple[int, int]] = []

                def on_run(m: rtt_run.Measurement, res: Any, seen: list = seen) -> None:
                    if m.req.capture:  # the programs are loaded while the runs go on
                        seen.append(_capture_prog_time())

                m = rtt_run.measure_all(req, on_run)
                p50 = [r.hists["latency_sent"].percentile(50) for r in m.results]
                (with_hooks if capture else without).extend(p50)
                if capture:
                    rtts.extend(r.hists["rtt"].percentile(50) for r in m.results)
                    cnt, ns = seen[-1]
                    # every program ran once per probe (request or reply) plus the check
                    per_probe.append(ns / max(cnt, 1) * 8)
    finally:
        _bpf_stats(old == "1")
    shift = effects.hodges_lehmann(with_hooks, without)
    rtt_med = statistics.median(rtts)
    return {
        "in_kernel_ns_per_probe": round(statistics.median(per_probe), 1),
        "in_kernel_share_of_median_rtt": round(statistics.median(per_probe) / rtt_med, 5),
        "ab_runs_each": len(with_hooks),
        "ab_latency_sent_p50_with_ns": statistics.median(with_hooks),
        "ab_latency_sent_p50_without_ns": statistics.median(without),
        "ab_shift_ns": shift,
        "ab_test": effects.mann_whitney(with_hooks, without),
        "median_rtt_ns": rtt_med,
        "ab_share_of_median_rtt": round(shift / rtt_med, 4),
        "target_under_5_percent": statistics.median(per_probe) / rtt_med < 0.05,
    }


def high_rates(rates: list[float], seconds: float) -> list[dict[str, Any]]:
    out = []
    for rate in rates:
        spec = ProbeSpec(rate_pps=rate, count=int(rate * seconds), timeout_s=0.5)
        req = rtt_run.RttSetup(path="bridge", spec=spec, runs=2, check_rate=False, name=_name())
        m = rtt_run.measure_all(req, lambda *_: None)
        for r in m.results:
            s = r.summary()
            sent = max(s["sent"], 1)
            out.append({
                "rate_pps": rate, "run": s["run"], "planned": r.prober.get("planned"),
                "sent": s["sent"], "achieved_rate_pps": s["achieved_rate_pps"],
                "lost": s["lost"], "lost_share": round(s["lost"] / sent, 5),
                "unsent_by_netassay": s["unsent"], "late": s["late"],
                "lost_after": s["lost_after"],
                "lost_by_netassay_share": round(
                    (s["unsent"] + s["lost_after"].get("snd_ep_in", 0)) / sent, 6),
                "answered_not_captured": s["received"] - s["captured"],
                "rtt_p50_ns": s["segments"].get("rtt", {}).get("p50_ns"),
                "rtt_p99_ns": s["segments"].get("rtt", {}).get("p99_ns"),
                "cpu": s["cpu"],
            })  # fmt: skip
    return out


TRUTH_HOLDS = (0, 200_000, 1_000_000)
TRUTH_RUNS, TRUTH_COUNT = 15, 100  # per hold: runs, probes per run (as the system test)
TRUTH_TARGET_NS = 5_000


def ground_truth(repetitions: int, runs: int, count: int) -> dict[str, Any]:
    """The responder-delay ground truth, ``repetitions`` times over (part 4)."""
    reps = []
    for rep in range(repetitions):
        spec = ProbeSpec(probe="udp", rate_pps=400, count=count)
        req = rtt_run.RttSetup(path="veth", spec=spec, runs=runs, delays=TRUTH_HOLDS, name=_name())
        m = rtt_run.measure_all(req, lambda *_: None)
        out: dict[str, Any] = {"repetition": rep}
        for seg in ("response", "rtt"):
            p50 = {d: [r.hists[seg].percentile(50) for r in m.results
                       if r.config.responder_delay_ns == d] for d in TRUTH_HOLDS}  # fmt: skip
            out[seg] = {
                "no_hold_p50_ns": statistics.median(p50[0]),
                "holds": [effects.hold_growth(p50[0], p50[d], d) for d in TRUTH_HOLDS[1:]],
            }
        reps.append(out)
        errs = [f"{h['hold_ns'] / 1e3:g}us {h['paired_error_ns'] / 1e3:+.1f}"
                for h in out["response"]["holds"]]  # fmt: skip
        print(f"ground truth {rep + 1}/{repetitions}: response error (paired) "
              + ", ".join(errs) + " us", file=sys.stderr)  # fmt: skip

    def errors(seg: str, key: str) -> dict[str, list[float]]:
        return {f"{d / 1e3:g}us": [next(h[key] for h in r[seg]["holds"] if h["hold_ns"] == d)
                                   for r in reps] for d in TRUTH_HOLDS[1:]}  # fmt: skip

    summary = {}
    for key in ("paired_error_ns", "medians_error_ns"):
        by_hold = errors("response", key)
        worst = max(abs(e) for v in by_hold.values() for e in v)
        within = sum(abs(e) <= TRUTH_TARGET_NS for v in by_hold.values() for e in v)
        summary[key.removesuffix("_error_ns")] = {
            "response_error_ns": by_hold, "rtt_error_ns": errors("rtt", key),
            "worst_abs_response_error_ns": worst,
            "within_target": f"{within}/{sum(len(v) for v in by_hold.values())}",
        }  # fmt: skip
    return {
        "command": "netassay rtt --path veth --probe udp --probe-rate 400 --count"
        f" {count} --runs {runs} --responder-delay 0,200us,1ms",
        "repetitions": reps, "target_ns": TRUTH_TARGET_NS, **summary,
        "target_met": summary["paired"]["worst_abs_response_error_ns"] <= TRUTH_TARGET_NS,
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer runs and rates")
    ap.add_argument("--truth-only", action="store_true", help="the ground truth (part 4) alone")
    ap.add_argument("--truth-repetitions", type=int, default=6, help="ground-truth repetitions")
    args = ap.parse_args()
    q = args.quick
    t0 = time.monotonic()
    truth_reps = 2 if q else args.truth_repetitions
    rates = [10e3, 100e3] if q else [10e3, 50e3, 100e3, 200e3, 1e6]
    if args.truth_only:
        result = json.loads(OUT.read_text()) if OUT.exists() else {}
        result["ground_truth"] = ground_truth(truth_reps, TRUTH_RUNS, TRUTH_COUNT)
        result["ground_truth"]["elapsed_s"] = round(time.monotonic() - t0, 1)
    else:
        result = {
            "machine": {"kernel": platform.release(), "cpus": __import__("os").cpu_count()},
            "side_by_side": [side_by_side(p, 8 if q else 16, 500) for p in ("bridge", "veth")],
            "send_paths": [send_paths(p, 4 if q else 8, 2000) for p in ("bridge", "veth")],
            "capture_cost": capture_cost(2 if q else 6, 3, 1000),
            "high_rates": high_rates(rates, 1.0),
            "ground_truth": ground_truth(truth_reps, TRUTH_RUNS, TRUTH_COUNT),
        }
        result["elapsed_s"] = round(time.monotonic() - t0, 1)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=2, sort_keys=True, default=str)
    OUT.write_text(text)
    OUT.with_name(f"rtt-{time.strftime('%Y%m%dT%H%M%S')}.json").write_text(text)
    print(text)


if __name__ == "__main__":
    main()

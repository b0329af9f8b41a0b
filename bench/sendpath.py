"""Where the generator's CPU time goes, per frame sent, in each receive mode.

A paced trial's frames cost the generator's CPU some work each; how much, and where,
decides how far past a SUT's saturation it can pace. This bench samples the generator's
CPU with ``perf record -C`` (cpu-clock, every CPU sample with its kernel or user symbol)
while netassay-gen sends a paced run through a kernel-router testbed, in each receive
mode (``testbed.receive``), and splits the samples by what the symbol does:

- ``backlog`` (the path until --rx-mode): AF_PACKET sendmmsg through the wire's pfifo;
  veth hands every frame to the stack with netif_rx on this CPU, RPS queues it to the
  SUT's CPU (a flow hash, a remote enqueue, an inter-processor interrupt).
- ``napi``: XDP live frames paced inside the kernel into the SUT's NAPI ring.

Per mode and rate: the frames sent, the CPU time the run used, and per category the
nanoseconds per frame (the category's share of the CPU's samples taken in netassay-gen,
times the time sampled, over the frames; another process on the CPU is left out).
Waiting for the next frame's time is a category of its own (the pacing loop's spin, in
user space or inside the kernel), so what a frame costs is the sum of the others.

Writes bench/results/sendpath.json (and a timestamped copy), prints a table.

Run: ``sudo .venv/bin/python bench/sendpath.py [--rates 300k,600k] [--duration 3]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from netassay.config import TestbedConfig  # noqa: E402
from netassay.counters import cpu  # noqa: E402
from netassay.testbed import Testbed  # noqa: E402
from netassay.units import parse_rates  # noqa: E402

OUT = ROOT / "bench" / "results" / "sendpath.json"
MODES = ("backlog", "napi")
GEN_CPU = 0
# What a symbol does, first match wins (kernel symbols of 6.x; the generator's own).
CATEGORIES = (
    ("idle", r"^(pv_native_safe_halt|default_idle|cpuidle|do_idle|acpi_idle|native_safe_halt)"),
    (
        "waiting for the frame's time",
        r"(netassay_wait|read_tsc|ktime_get|bpf_loop|clock_gettime"
        r"|__vdso|vdso|pace::|wait_until|spin_loop|sched_yield|hrtimer|clock_nanosleep)",
    ),
    (
        "RPS: flow hash, remote enqueue, IPI",
        r"(enqueue_to_backlog|get_rps_cpu|rps_|flow_dissect"
        r"|skb_get_hash|siphash|netif_rx|_raw_spin_unlock_irqrestore|send_call_function"
        r"|native_send_call|smp_call|kick_|__smp_)",
    ),
    ("veth transmit", r"(veth_|__dev_forward_skb|eth_type_trans|skb_scrub|dev_forward)"),
    (
        "qdisc",
        r"(qdisc|sch_direct|pfifo|dev_hard_start_xmit|validate_xmit|netif_skb_features"
        r"|__dev_queue_xmit|dev_queue_xmit|skb_network_protocol|passthru_features)",
    ),
    (
        "socket and syscall",
        r"(sys_sendmmsg|sys_sendmsg|packet_|sock_|security_socket|copy_msghdr"
        r"|import_iovec|iovec|_copy_from|copy_from_user|__check_object_size|__virt_addr_valid"
        r"|entry_SYSCALL|syscall|do_syscall|skb_set_owner|__put_user|skb_copy_datagram"
        r"|skb_clone_tx_timestamp|sendmmsg|libc)",
    ),
    (
        "socket buffer alloc and free",
        r"(alloc_skb|kmalloc|kmem_cache|slab|kfree|__build_skb"
        r"|skb_release|consume_skb|allocate_slab|get_partial_node|pskb)",
    ),
    (
        "live frame: build and stamp (XDP program)",
        r"(bpf_prog_.*netassay_gen|bpf_prog_run"
        r"|xdp_test_run_batch|bpf_test_run|bpf_prog_test_run)",
    ),
    (
        "live frame: page pool",
        r"(page_pool|xdp_test_run_init_page|alloc_pages|free_frozen|rmqueue"
        r"|__free_pages|pfnblock|free_unref|__page_pool|netmem)",
    ),
    (
        "live frame: hand-over to the SUT's ring",
        r"(xdp_do_redirect|bq_|dev_xdp|xdp_return"
        r"|xdp_do_flush|__xdp|xdp_master|dev_map)",
    ),
    ("locks", r"(spin_lock|spin_unlock|queued_spin|_raw_spin)"),
    ("netassay-gen's own loop", r"(netassay_gen|tx::|stamp|Template)"),
)
# The generator's process as perf names it: netassay-gen, or the name of what exec'd it
# (ip netns exec, nice): perf keeps the first name it saw for a task started before it.
GEN_COMMS = "netassay-gen,nice,ip"
_LINE = re.compile(r"^\s*([\d.]+)%\s+(?:\S+\s+)?\[([k.])\]\s+(.+?)\s*$")


def classify(symbol: str) -> str:
    for name, pattern in CATEGORIES:
        if re.search(pattern, symbol):
            return name
    return "other kernel work" if not symbol.startswith("0x") else "other"


def perf_shares(data: Path) -> dict[str, float]:
    """The share (of all samples on the CPU) of each category, of netassay-gen's own
    samples only (perf's absolute percentages): another process on the CPU (a busy
    host) neither counts as the generator's work nor changes the shares' base."""
    out = subprocess.run(
        ["perf", "report", "-i", str(data), "--stdio", "--no-children", "--sort", "comm,sym",
         "--comms", GEN_COMMS, "-g", "none", "--percent-limit", "0"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    shares: dict[str, float] = {}
    for line in out.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        share, _, sym = float(m.group(1)), m.group(2), m.group(3)
        name = classify(sym.split()[-1] if sym else "")
        shares[name] = shares.get(name, 0.0) + share / 100
    return shares


def one(tb: Testbed, rate: float | str, duration: float, workdir: Path) -> dict[str, Any]:
    data = workdir / f"perf-{tb.name}-{rate}.data"
    perf = subprocess.Popen(
        ["perf", "record", "-q", "-C", str(GEN_CPU), "-o", str(data), "--", "sleep",
         str(duration + 1.5)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    time.sleep(0.5)
    before = cpu.read()
    holder: dict[str, Any] = {}
    t = threading.Thread(target=lambda: holder.update(res=tb.send(rate, duration)))
    t.start()
    t.join()
    use = cpu.use(before, cpu.read())
    perf.wait()
    res = holder["res"]
    shares = perf_shares(data)
    busy = sum(v for k, v in shares.items() if k != "idle")  # the generator's share
    wall = duration + 1.5  # what perf sampled
    frames = max(res.sent, 1)
    per_frame = {k: round(v * wall * 1e9 / frames, 1) for k, v in shares.items() if k != "idle"}
    work = sum(v for k, v in per_frame.items() if k != "waiting for the frame's time")
    return {
        "rate": rate,
        "technique": res.technique,
        "sent": res.sent,
        "achieved_rate_pps": res.achieved_rate_pps,
        "rate_error": res.rate_error,
        "lateness_p99_ns": res.lateness_p99_ns,
        "generator_cpu_share": round(busy, 3),
        "cpu_use": use.get(f"cpu{GEN_CPU}"),
        "ns_per_frame": dict(sorted(per_frame.items(), key=lambda kv: -kv[1])),
        "work_ns_per_frame": round(work, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="300k,600k,max")
    ap.add_argument("--duration", type=float, default=3.0)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/sendpath.py needs root (namespaces, perf)")
    rates: list[float | str] = [
        "max" if r == "max" else float(parse_rates(r)[0]) for r in args.rates.split(",")
    ]
    tag = secrets.token_hex(2)
    runs = []
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        beds = {}
        for mode in MODES:
            cfg = TestbedConfig(sut="router", pinning="pin-2cpu", rx_mode=mode).resolved()
            beds[mode] = stack.enter_context(Testbed(f"p{mode[0]}{tag}", cfg))
        for rate in rates:
            for mode in MODES:
                r = one(beds[mode], rate, args.duration, Path(tmp))
                r["mode"] = mode
                runs.append(r)
                print(
                    f"{mode:8} {rate!s:>9}: {r['technique']}, sent "
                    f"{r['achieved_rate_pps'] / 1e3:.0f} kpps, work "
                    f"{r['work_ns_per_frame']:.0f} ns/frame",
                    flush=True,
                )
                for k, v in r["ns_per_frame"].items():
                    print(f"    {v:8.1f} ns  {k}")
    doc = {
        "bench": "sendpath",
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": {"kernel": platform.release(), "cpus": os.cpu_count(), "load": os.getloadavg()},
        "command": " ".join(sys.argv),
        "runs": runs,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, indent=1)
    OUT.write_text(text)
    (OUT.parent / f"sendpath-{time.strftime('%Y%m%dT%H%M%S')}.json").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

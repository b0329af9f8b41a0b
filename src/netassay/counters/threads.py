"""Who held a CPU, and for how long, one run at a time: ``netassay-noise`` (bpf/noise, a
sched_switch tracer) counts, per CPU and thread, the runs, their total, the longest and
how many reached 20 us, 100 us and 1 ms, over a window. It names what a paced sender or
a SUT on that CPU waited for (a memory monitor such as ``kdamond``, RCU's grace-period
thread, compaction, an agent of the VM) where the kernel's own noise tracer
(``osnoise``) is not built in, as on this project's test hosts. Interrupts and softirqs
are not threads: their time counts in the run of the thread they interrupted.

``parse`` and ``takers`` are pure (tested on sample output); ``Tracer`` runs the tracer
around a block of work; ``is_kernel_thread`` reads one thread's flags from /proc.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from netassay.errors import ToolError
from netassay.proc import artifact

BINARY, OBJECT, PART = "netassay-noise", "noise.bpf.o", "noise"
PF_KTHREAD = 0x00200000  # the task flag of a kernel thread (include/linux/sched.h)
MIN_RUN_NS = 20_000  # a thread none of whose runs reached 20 us is not named
SHOWN = 3  # the takers named per CPU
START_S = 10.0  # the tracer loads and attaches within this


class Taker(TypedDict):
    """A thread (threads of one name together) that held a CPU in a trace (``takers``):
    its name, threads, kernel thread or not, real-time or not, runs, their total (ms),
    the longest (ms), those that reached 100 us and 1 ms (None: not traced), and its
    share of the window."""

    comm: str
    threads: int
    kernel: bool
    real_time: bool
    runs: int
    run_ms: float
    max_ms: float
    over_100us: int | None
    over_1ms: int | None
    share: float


@dataclass(frozen=True)
class Runs:
    """One thread's runs on one CPU over the window."""

    cpu: int
    tid: int
    tgid: int
    comm: str
    runs: int
    total_ns: int
    max_ns: int
    over: tuple[int, ...]  # runs that reached each of the trace's bounds


@dataclass(frozen=True)
class Trace:
    window_s: float
    bounds_ns: tuple[int, ...]
    rows: tuple[Runs, ...]


def parse(text: str) -> Trace:
    """The tracer's JSON (``netassay-noise``'s stdout)."""
    d = json.loads(text)
    rows = tuple(
        Runs(cpu=r["cpu"], tid=r["tid"], tgid=r["tgid"], comm=r["comm"], runs=r["runs"],
             total_ns=r["total_ns"], max_ns=r["max_ns"], over=tuple(r["over"]))
        for r in d["rows"]
    )  # fmt: skip
    return Trace(d["window_ns"] / 1e9, tuple(d["bounds_ns"]), rows)


def parse_stat_flags(text: str) -> int | None:
    """The task flags (field 9) of a ``/proc/<pid>/stat`` line; the name is between the
    first '(' and the last ')', as it may hold spaces and parentheses itself."""
    hi = text.rfind(")")
    rest = text[hi + 2 :].split() if hi > 0 else []
    return int(rest[6]) if len(rest) > 6 and rest[6].isdigit() else None


def is_kernel_thread(tgid: int) -> bool:
    try:
        flags = parse_stat_flags(Path(f"/proc/{tgid}/stat").read_text())
    except OSError:  # it ended: a process that came and went, not a kernel thread
        return False
    return bool(flags is not None and flags & PF_KTHREAD)


def is_real_time(tid: int) -> bool:
    """The thread runs at a real-time priority (SCHED_FIFO or SCHED_RR: nothing of
    normal priority takes its CPU from it); False when it is gone."""
    try:
        return os.sched_getscheduler(tid) in (os.SCHED_FIFO, os.SCHED_RR)
    except OSError:
        return False


def takers(
    trace: Trace,
    cpu: int,
    skip: Callable[[Runs], bool] | None = None,
    kernel: Callable[[int], bool] = is_kernel_thread,
    real_time: Callable[[int], bool] = is_real_time,
) -> list[Taker]:
    """The threads that held ``cpu`` in the trace for a run of ``MIN_RUN_NS`` or more,
    by name (threads of one name together: a pool of workers is one taker), longest
    run first (at most ``SHOWN``): name, threads, kernel thread or not, real-time or
    not (its longest-running thread, read now), runs, their total, the longest, those
    that reached 100 us and 1 ms, and the share of the window. ``skip``: true of a
    thread not to name (the measurement itself)."""
    bounds = dict(zip(trace.bounds_ns, range(len(trace.bounds_ns)), strict=True))
    by: dict[str, list[Runs]] = {}
    for r in trace.rows:
        if r.cpu == cpu and r.max_ns >= MIN_RUN_NS and (skip is None or not skip(r)):
            by.setdefault(r.comm, []).append(r)

    def over(rs: list[Runs], ns: int) -> int | None:
        return sum(r.over[bounds[ns]] for r in rs) if ns in bounds else None

    out: list[Taker] = []
    window_ns = trace.window_s * 1e9
    for comm, rs in by.items():
        total = sum(r.total_ns for r in rs)
        top = max(rs, key=lambda r: r.max_ns)
        out.append({"comm": comm, "threads": len(rs), "kernel": kernel(top.tgid),
                    "real_time": real_time(top.tid),
                    "runs": sum(r.runs for r in rs), "run_ms": total / 1e6,
                    "max_ms": max(r.max_ns for r in rs) / 1e6,
                    "over_100us": over(rs, 100_000), "over_1ms": over(rs, 1_000_000),
                    "share": total / window_ns if window_ns else 0.0})  # fmt: skip
    out.sort(key=lambda t: -t["max_ms"])
    return out[:SHOWN]


def said(rows: Sequence[Taker]) -> str:
    """The takers in words: 'kdamond.0 (7 runs of 1 ms or more, longest 3.08 ms)',
    'rcu_preempt (longest run 0.31 ms)', 'python3 (3 threads, ...)'."""
    out = []
    for r in rows:
        n, k = r.get("over_1ms") or 0, r.get("threads", 1)
        parts = [f"{k} threads"] if k > 1 else []
        if n:
            parts.append(f"{n} run{'s' if n > 1 else ''} of 1 ms or more, longest "
                         f"{r['max_ms']:.3g} ms")  # fmt: skip
        else:
            parts.append(f"longest run {r['max_ms']:.2g} ms")
        out.append(f"{r['comm']} ({', '.join(parts)})")
    return ", ".join(out) if out else "no other thread ran 20 us at a time"


class Tracer:
    """``netassay-noise`` running from ``start`` to ``stop`` (root; BPF)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        argv = [str(artifact(BINARY, PART)), str(artifact(OBJECT, PART))]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)  # fmt: skip
        stderr = self.proc.stderr
        assert stderr is not None
        with selectors.DefaultSelector() as sel:  # a tracer that hangs must not hang a trial
            sel.register(stderr, selectors.EVENT_READ)
            ready = sel.select(timeout=START_S)
        if not ready:
            self.proc.kill()
            self.proc.communicate()
            self.proc = None
            raise ToolError(
                "netassay-noise did not start",
                f"no word from it in {START_S:g} s (it says 'tracing' once attached)",
                "run the trial again; if it hangs again, report it with the kernel version",
            )
        line = stderr.readline()  # 'tracing' once attached, or why not
        if line.strip() != "tracing":
            self.proc.kill()
            _, err = self.proc.communicate()
            self.proc = None
            raise ToolError(
                "cannot trace who holds the CPUs",
                (line + err).strip() or "netassay-noise ended without a word",
                "run as root on a kernel with BPF, after 'make setup'",
            )

    def stop(self) -> Trace:
        assert self.proc is not None, "stop before start"
        proc, self.proc = self.proc, None
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=START_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise ToolError("netassay-noise did not stop", "no answer to SIGINT in 10 s",
                            "report it with the kernel version") from None  # fmt: skip
        if proc.returncode != 0:
            raise ToolError("netassay-noise failed", err.strip(), "run 'make setup' again")
        return parse(out)

    def __enter__(self) -> Tracer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.communicate()
            self.proc = None

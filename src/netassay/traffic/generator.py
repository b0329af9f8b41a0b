"""Run ``netassay-gen`` (the Rust packet generator) and its receive mode.

``run_generator`` sends one trial's traffic inside a network namespace and returns a
``GenResult``. Failure rules:

* the binary is missing, the arguments are refused (exit 2), the kernel fails
  (exit 1), it times out, or its output is not one JSON object -> ``GeneratorError``;
  when it ended without a word of its run (killed by a signal it cannot catch, or
  killed by netassay after its timeout) -> ``GeneratorLost``, a ``GeneratorError``
  that the trial engine turns into a measurement fault;
* the rate was not kept within 0.1% (exit 3) -> the result is *returned* with
  ``ok == False``, so that the caller can store the trial with a warning; it is
  never silently used as a good trial.

``start_receiver`` runs the receive mode in the background; ``Receiver.stop()``
sends SIGINT and returns its JSON result as a dict.
"""

from __future__ import annotations

import json
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypedDict, cast

from netassay.errors import GeneratorError, ToolError, UsageError
from netassay.names import MIN_FRAME
from netassay.proc import arg_num, die_with_parent, in_netns, run

log = logging.getLogger("netassay.traffic.generator")

BINARY = "netassay-gen"
# A trial's sender runs at the highest nice priority (as root): on a host whose CPUs
# other work shares, the scheduler then takes the generator's CPU away less often
# (measured: a sweep by a 200 kpps cap with stress-ng at 50% of CPU 0 excluded 6-10 of
# 12 trials for stalls at nice 0, none in 4 runs at -20; SCHED_FIFO did worse, starving
# the kernel's own softirq work on that CPU).
PRIORITY = ["nice", "-n", "-20"]
EXIT_OK = 0
EXIT_SYSTEM = 1
EXIT_USAGE = 2
EXIT_RATE = 3

_REQUIRED_KEYS = (
    "technique",
    "planned",
    "sent",
    "first_tx_ns",
    "last_tx_ns",
    "duration_s",
    "rate_pps",
    "achieved_rate_pps",
    "rate_error",
    "lateness_max_ns",
    "lateness_p99_ns",
    "retries",
    "stopped_by_signal",
    "ok",
)


class GeneratorRecord(TypedDict):
    """What a trial keeps of the generator's report (``counters["generator"]``): the
    required fields and these (newer generators report them; an older one leaves them
    null, as the report does where it has no value). The schedule it kept: frames per
    send call or per flush of live frames (``batch``), the gap between two frames' times
    (``spacing_ns``), the bound on a catch-up after a stall as a factor of the rate
    (``catch_up``; None: none), and the lateness's middle and tail; when its loop ended
    and its longest stall (``end_ns``, ``stall_max_ns``, ``stall_start_ns``)."""

    technique: str | None
    planned: int | None
    sent: int | None
    first_tx_ns: int | None
    last_tx_ns: int | None
    duration_s: float | None
    rate_pps: float | None
    achieved_rate_pps: float | None
    rate_error: float | None
    lateness_max_ns: int | None
    lateness_p99_ns: int | None
    retries: int | None
    stopped_by_signal: bool | None
    ok: bool | None
    rate_tolerance: float | None
    truncated: bool | None
    shortfall: int | None
    stop_reason: str | None
    batch: int | None
    spacing_ns: float | None
    catch_up: float | None
    lateness_p50_ns: int | None
    lateness_p999_ns: int | None
    egress_drops: int | None
    end_ns: int | None
    stall_max_ns: int | None
    stall_start_ns: int | None


RECORDED_KEYS = tuple(GeneratorRecord.__annotations__)


class GeneratorLost(GeneratorError):
    """The generator ended without reporting its run: killed by a signal it cannot
    catch (SIGKILL: the OOM killer, a user), or by netassay when it outlived its
    timeout (stopped, hung). What it sent is known only from the counters."""

    def __init__(self, what: str, why: str, todo: str, how: str) -> None:
        super().__init__(what, why, todo)
        self.how = how  # 'killed by SIGKILL', 'ended by netassay after 33 s'


def find_generator() -> str:
    """Path of ``netassay-gen``: beside the Python interpreter, on PATH, or the build."""
    beside = Path(sys.executable).parent / BINARY
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    on_path = shutil.which(BINARY)
    if on_path:
        return on_path
    repo = Path(__file__).resolve().parents[3]
    built = repo / "gen" / "target" / "release" / BINARY
    if built.is_file() and os.access(built, os.X_OK):
        return str(built)
    raise GeneratorError(
        f"cannot find {BINARY}",
        f"it is not beside {sys.executable}, on PATH, or in gen/target/release",
        "run 'make setup' (it builds and installs the generator)",
    )


@dataclass(frozen=True)
class GenResult:
    """One generator run, mirroring its JSON output (``raw`` holds all of it)."""

    technique: str
    planned: int  # a capture's (--pcap): its marked frames alone, what the sink counts
    sent: int  # (the same; every frame sent is raw["sent"])
    first_tx_ns: int
    last_tx_ns: int
    duration_s: float
    rate_pps: float | None
    achieved_rate_pps: float
    rate_error: float | None
    lateness_max_ns: int | None
    lateness_p99_ns: int | None
    retries: int
    stopped_by_signal: bool
    ok: bool
    raw: dict[str, Any] = field(default_factory=dict)  # the report as it printed it

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GenResult:
        missing = [k for k in _REQUIRED_KEYS if k not in data]
        if missing:
            raise GeneratorError(
                f"{BINARY} printed an incomplete result",
                f"missing keys {', '.join(missing)}",
                "rebuild it with 'make gen' so that the binary matches this netassay",
            )
        fields = {k: data[k] for k in _REQUIRED_KEYS}
        if "marked" in data:  # a capture (--pcap): the sink counts its marked frames alone
            fields.update(planned=data["marked_planned"], sent=data["marked"])
        return cls(**fields, raw=dict(data))

    def with_report(self, **extra: Any) -> GenResult:
        """A run netassay made of others or stood in for: its ``raw`` the required
        fields as its own, and ``extra``."""
        return replace(self, raw={**{k: getattr(self, k) for k in _REQUIRED_KEYS}, **extra})

    def recorded(self) -> GeneratorRecord:
        """What a trial keeps of this run (``GeneratorRecord``; None: not reported)."""
        return cast(GeneratorRecord, {k: self.raw.get(k) for k in RECORDED_KEYS})

    # The report's fields beyond the required ones that a trial reads (None, or {}: not
    # reported: an older generator's, a stand-in's, or both directions' or phases' sum)

    @property
    def frames_sent(self) -> int:
        """Every frame sent (a capture's marked ones alone: ``sent``)."""
        return int(self.raw.get("sent", self.sent))

    @property
    def end_ns(self) -> int | None:
        """When its send loop ended (CLOCK_MONOTONIC)."""
        return _int_or_none(self.raw.get("end_ns"))

    @property
    def stall_max_ns(self) -> int | None:
        """Its longest stall: how long it sent nothing while frames were due."""
        return _int_or_none(self.raw.get("stall_max_ns"))

    @property
    def stall_start_ns(self) -> int | None:
        """When its longest stall began (CLOCK_MONOTONIC)."""
        return _int_or_none(self.raw.get("stall_start_ns"))

    @property
    def egress_drops(self) -> int:
        """Frames its port's egress dropped (live frames: the ring was full)."""
        return int(self.raw.get("egress_drops") or 0)

    @property
    def fallback_reason(self) -> str | None:
        """Why it fell back from the technique asked for."""
        why = self.raw.get("fallback_reason")
        return None if why is None else str(why)

    @property
    def sent_per_size(self) -> dict[str, int]:
        """A mix's or a capture's frames sent, by frame size (``"64"``)."""
        return {str(k): int(v) for k, v in (self.raw.get("sent_per_size") or {}).items()}

    @property
    def marked_per_size(self) -> dict[str, int]:
        """A capture's marked frames sent, by frame size."""
        return {str(k): int(v) for k, v in (self.raw.get("marked_per_size") or {}).items()}


def _int_or_none(v: Any) -> int | None:
    return None if v is None else int(v)


def build_args(
    dev: str,
    dst_mac: str,
    src: str,
    dst: str,
    rate_pps: float | str,
    duration_s: float,
    size_bytes: int = MIN_FRAME,
    flows: int = 1,
    best_effort: bool = False,
    extra: list[str] | None = None,
    imix: str | None = None,
    count: int | None = None,
    pcap: str | None = None,
) -> list[str]:
    """The generator's arguments (without the binary), checked for obvious mistakes.
    ``rate_pps`` is packets/s or ``"max"`` (as fast as it can, for the duration);
    ``imix`` a frame mix (``netassay.imix.spec``) sent instead of ``size_bytes``;
    ``pcap`` a capture replayed instead (its frames keep their ports: no ``--flows``);
    ``count``: exactly that many frames at ``rate_pps`` (a burst), not a duration's."""
    if rate_pps != "max" and (isinstance(rate_pps, str) or rate_pps <= 0):
        raise UsageError(
            f"rate_pps {rate_pps} is not positive", todo="give a rate above 0 packets/s"
        )
    if duration_s <= 0:
        raise UsageError(
            f"duration_s {duration_s} is not positive", todo="give a duration above 0 s"
        )
    if flows < 1:
        raise UsageError(f"flows {flows} is below 1", todo="use at least one flow")
    if count is not None and (count < 1 or rate_pps == "max"):
        raise UsageError(
            f"count {count} at rate {rate_pps}", todo="give a count above 0 at a paced rate"
        )
    length = (
        ["--count", str(count)] if count is not None else ["--duration", f"{arg_num(duration_s)}s"]
    )
    argv = [
        "--dev",
        dev,
        "--dst-mac",
        dst_mac,
        "--src",
        src,
        "--dst",
        dst,
        "--rate",
        "max" if rate_pps == "max" else arg_num(float(rate_pps)),
        *length,
        *frames_flags(size_bytes, imix, pcap),
        *([] if pcap else ["--flows", str(flows)]),
        "--json",
    ]
    if best_effort:
        argv.append("--best-effort")
    argv.extend(extra or [])
    return argv


def frames_flags(size_bytes: int, imix: str | None, pcap: str | None) -> list[str]:
    """What the frames are: a capture's (``--pcap``), a mix's, or of one size."""
    if pcap:
        return ["--pcap", pcap]
    return ["--imix", imix] if imix else ["--size", str(size_bytes)]


def parse_output(stdout: str, stderr: str, returncode: int) -> GenResult:
    """Turn one run's output into a GenResult, or raise GeneratorError.

    Exit 0 and exit 3 (rate not kept) return the result; anything else raises.
    """
    last = (stderr or "").strip().splitlines()
    why = last[-1] if last else f"exit code {returncode}"
    if returncode < 0:  # a signal it does not catch (it reports SIGINT and SIGTERM)
        how = f"killed by {_signal_name(-returncode)}"
        raise GeneratorLost(
            f"{BINARY} was {how}", "it reported nothing of its run",
            "see who ended it (the OOM killer: dmesg); what was stored is kept", how,
        )  # fmt: skip
    if returncode not in (EXIT_OK, EXIT_RATE):
        what = f"{BINARY} refused its arguments" if returncode == EXIT_USAGE else None
        raise GeneratorError(
            what or f"{BINARY} failed (exit {returncode})",
            why,
            "check the interface, the namespace and the flags; see 'netassay-gen --help'",
        )
    try:
        data = json.loads(stdout)
    except json.JSONDecodeError as exc:
        raise GeneratorError(
            f"{BINARY} printed no JSON result",
            f"{exc.msg} in its output",
            "rebuild it with 'make gen'",
        ) from exc
    if not isinstance(data, dict):
        raise GeneratorError(
            f"{BINARY} printed no JSON object", "the output is not an object", "run 'make gen'"
        )
    res = GenResult.from_json(data)
    if returncode == EXIT_RATE:
        log.warning("%s: rate not kept: %s", BINARY, why)
    return res


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def run_generator(
    netns: str,
    dev: str,
    dst_mac: str,
    src: str,
    dst: str,
    rate_pps: float | str,
    duration_s: float,
    size_bytes: int = MIN_FRAME,
    flows: int = 1,
    best_effort: bool = False,
    extra: list[str] | None = None,
    timeout_s: float | None = None,
    imix: str | None = None,
    count: int | None = None,
    pcap: str | None = None,
) -> GenResult:
    """Send ``rate_pps * duration_s`` packets from ``dev`` in namespace ``netns``
    (``count``: exactly that many, at ``rate_pps``).

    Returns the result; ``result.ok`` is False when the rate was missed (exit 3) and
    ``best_effort`` was not set. Raises GeneratorError on any other failure, and
    UsageError for arguments that cannot be right.
    """
    argv = build_args(
        dev, dst_mac, src, dst, rate_pps, duration_s, size_bytes, flows, best_effort, extra, imix,
        count, pcap,
    )  # fmt: skip
    timeout = timeout_s if timeout_s is not None else duration_s * 1.5 + 10.0
    try:
        prio = PRIORITY if os.geteuid() == 0 else []
        res = run([*prio, find_generator(), *argv], netns=netns, timeout=timeout, check=False)
    except ToolError as exc:
        what = f"{BINARY} in {netns} did not finish"
        why = exc.why or f"timed out after {timeout:g} s"
        todo = "check the system load or raise timeout_s"
        if not why.startswith("timed out"):  # nothing ran (a tool is missing)
            raise GeneratorError(what, why, todo) from exc
        # it outlived its timeout (stopped, hung) and was killed: nothing reported
        how = f"ended by netassay after {timeout:g} s (it had not finished)"
        raise GeneratorLost(what, why, todo, how) from exc
    return parse_output(res.stdout, res.stderr, res.returncode)


def _start_background(full: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
        preexec_fn=die_with_parent,
    )


class Receiver:
    """A running ``netassay-gen --receive``; ``stop()`` ends it and returns its result."""

    def __init__(self, proc: subprocess.Popen[str], argv: list[str]) -> None:
        self.proc = proc
        self.argv = argv
        self._result: dict[str, Any] | None = None

    def stop(self, timeout_s: float = 10.0) -> dict[str, Any]:
        """Send SIGINT, wait, and return the receiver's JSON result."""
        if self._result is not None:
            return self._result
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            out, err = self.proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            self.proc.kill()
            self.proc.communicate()
            raise GeneratorError(
                f"{BINARY} --receive did not stop",
                f"no exit {timeout_s:g} s after SIGINT",
                "check the system load",
            ) from exc
        if self.proc.returncode != 0:
            lines = (err or "").strip().splitlines()
            raise GeneratorError(
                f"{BINARY} --receive failed (exit {self.proc.returncode})",
                lines[-1] if lines else "no message",
                "check the interface and the namespace",
            )
        try:
            self._result = json.loads(out)
        except json.JSONDecodeError as exc:
            raise GeneratorError(
                f"{BINARY} --receive printed no JSON result", exc.msg, "run 'make gen'"
            ) from exc
        return self._result

    def __enter__(self) -> Receiver:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def start_receiver(
    netns: str,
    dev: str,
    expect: int | None = None,
    flows: int | None = None,
    duration_s: float | None = None,
    idle_timeout_s: float | None = None,
    extra: list[str] | None = None,
    ready_timeout_s: float = 10.0,
) -> Receiver:
    """Start counting netassay-gen packets on ``dev`` in ``netns``; returns when ready."""
    argv = ["--receive", "--dev", dev, "--json"]
    if expect is not None:
        argv += ["--expect", str(int(expect))]
    if flows is not None:
        argv += ["--flows", str(int(flows))]
    if duration_s is not None:
        argv += ["--duration", f"{arg_num(duration_s)}s"]
    if idle_timeout_s is not None:
        argv += ["--idle-timeout", f"{arg_num(idle_timeout_s)}s"]
    argv += extra or []
    full = ["ip", "netns", "exec", netns, find_generator(), *argv]
    log.info("start: %s", " ".join(full))
    proc = _start_background(full)
    deadline = time.monotonic() + ready_timeout_s
    assert proc.stderr is not None
    seen = ""
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 0.1)
        if not ready:
            continue
        line = proc.stderr.readline()
        seen += line
        if "receiving on" in line:
            return Receiver(proc, full)
        if not line:
            break
    proc.kill()
    _, err = proc.communicate()
    lines = (seen + (err or "")).strip().splitlines()
    raise GeneratorError(
        f"{BINARY} --receive did not start in {netns}",
        lines[-1] if lines else f"no output in {ready_timeout_s:g} s",
        "check that the interface exists in that namespace and that you are root",
    )


class FlowCounts(TypedDict):
    """With ``--count-flows``: the flows' counts since the last mark (``XdpSink.mark``):
    the flows counted, those seen, the least and most frames of a flow, the frames
    counted, those of a flow sent to another destination, those of no known flow."""

    flows: int
    seen: int
    min: int
    max: int
    counted: int
    misdirected: int
    unknown_flow: int


class SinkLine(TypedDict, total=False):
    """One line of ``netassay-gen --xdp-sink``: the totals since it attached (the frames,
    when it printed the line, the first and last arrival times, CLOCK_MONOTONIC), a
    mix's or a capture's per frame size, the latencies since the line before
    (``hist.SinkHist``'s document), the flows' counts; its first line says where it
    attached, its last (``stop``) what it ran as and for how long."""

    packets: int
    t_ns: int
    first_ns: int
    last_ns: int
    per_size: dict[str, int]
    latency: dict[str, Any]
    flows: FlowCounts
    attached: str
    action: str
    mode: str
    dev: str
    size_bytes: int
    duration_s: float
    version: str


class XdpSink:
    """A running ``netassay-gen --xdp-sink``: an XDP program on ``dev`` that counts and
    drops UDP frames of one size. ``read()`` returns the totals since it attached
    (``packets``, ``first_ns``, ``last_ns``: CLOCK_MONOTONIC arrival times); ``stop()``
    detaches it and returns the final totals."""

    def __init__(self, proc: subprocess.Popen[str], argv: list[str], first: SinkLine):
        self.proc = proc
        self.argv = argv
        self.first = first
        self._result: SinkLine | None = None

    def _line(self, what: str) -> SinkLine:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 10.0)
        line = self.proc.stdout.readline() if ready else ""
        if not line:
            raise GeneratorError(
                f"{BINARY} --xdp-sink gave no {what}",
                "it ended or hung",
                "check the interface and the namespace",
            )
        return _sink_line(line)

    def read(self) -> SinkLine:
        """Totals since attach (asks the sink with SIGUSR1)."""
        self.proc.send_signal(signal.SIGUSR1)
        return self._line("count")

    def count(self) -> int:
        return int(self.read()["packets"])

    def mark(self) -> SinkLine:
        """Count each flow from here on (``--count-flows``; SIGUSR2), and the totals."""
        self.proc.send_signal(signal.SIGUSR2)
        return self._line("count")

    def stop(self) -> SinkLine:
        """Detach (SIGINT) and return the final totals."""
        if self._result is None:
            self.proc.send_signal(signal.SIGINT)
            self._result = self._line("final count")
            self.proc.communicate(timeout=10)
        return self._result

    def close(self) -> None:
        """End the sink now if it still runs (the program detaches with it)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()

    def __enter__(self) -> XdpSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_xdp_sink(
    netns: str | None, dev: str, size_bytes: int = MIN_FRAME, extra: list[str] | None = None,
    imix: str | None = None, pcap: str | None = None,
) -> XdpSink:  # fmt: skip
    """Attach the count-and-drop XDP sink to ``dev`` in ``netns``; returns when attached.
    ``extra`` adds flags (``--pass``: count, then let the frames through); with ``imix``
    it counts each size of that mix (``per_size`` in every line) instead of one size, with
    ``pcap`` each size of the capture's marked frames."""
    full = in_netns(netns, [find_generator(), "--xdp-sink", "--dev", dev])  # None: the host's
    full += [*frames_flags(size_bytes, imix, pcap), *(extra or [])]
    log.info("start: %s", " ".join(full))
    proc = _start_background(full)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 10.0)
    line = proc.stdout.readline() if ready else ""
    if line:
        return XdpSink(proc, full, _sink_line(line))
    proc.kill()
    _, err = proc.communicate()
    lines = (err or "").strip().splitlines()
    raise GeneratorError(
        f"{BINARY} --xdp-sink did not attach in {netns}",
        lines[-1] if lines else "no output in 10 s",
        "check that the interface exists there, has no XDP program yet, and that you are root",
    )


def _sink_line(line: str) -> SinkLine:
    """A line of the XDP sink, as it printed it (a JSON object)."""
    return cast(SinkLine, dict(json.loads(line)))

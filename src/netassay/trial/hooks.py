"""Commands the user names, run in the SUT's namespace: the hooks around each trial
(``--hook-before``, ``--hook-after``) and a reconfiguration (``reconfig --change``).

A command is a line split as a shell splits words (``shlex``) and run from that argument
list, never through a shell (give ``sh -c '...'`` for pipes and redirections), in the
SUT's network namespace (on a testbed without one, an external testbed, in netassay's
own), with a timeout; a testbed's data plane adds what its own tools need to reach it
(``testbed.dataplane.command_env``: ``OVS_RUNDIR``, DPDK's file prefix). What it
printed, its exit status and how long it took are kept with the trial
(``counters["hooks"]``); one that fails (exits non-zero, times out, or cannot be
started) makes the trial a measurement fault whose warning names the command and the
last line it printed (``quality.COMMAND_FAULT``).
"""

from __future__ import annotations

import shlex
import time
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict, cast

from netassay import quality
from netassay.errors import NetassayError, UsageError
from netassay.proc import run

HOOK_TIMEOUT_S = 60.0
KEPT_CHARS = 8_000  # of each stream, the end kept (what a failing command said last)
PHASES = ("before", "after")


def parse_command(text: Any, flag: str) -> str:
    """A command line as given (checked to split into words; kept as written)."""
    line = str(text).strip()
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"bad {flag} '{line}'", str(exc), "check its quotes") from exc
    if not words:
        raise UsageError(f"{flag} is empty", "it names a command to run", f"give {flag} 'CMD'")
    return line


class CommandRun(TypedDict):
    """What a command did: the command, its exit status (None: it did not finish or
    start), its start and end (CLOCK_MONOTONIC s), the end of its output, ``error`` when
    it could not run, and its seconds."""

    command: str
    start_s: float
    exit: int | None
    stdout: str
    stderr: str
    error: NotRequired[str]
    end_s: float
    seconds: float


class KeptRun(TypedDict):
    """What a trial keeps of a command's run (``counters["hooks"][phase]``; a
    reconfiguration's change and undo): all but its start and end."""

    command: str
    exit: int | None
    stdout: str
    stderr: str
    error: NotRequired[str]
    seconds: float


class TrialEnv(TypedDict):
    """What a hook is told of its trial (``trial_env``), after it its counts."""

    trial: str
    load_index: int
    repetition: int
    load_pps: str
    duration_s: str
    run_id: int | None
    sent: NotRequired[int]
    received: NotRequired[int]


def kept(out: CommandRun) -> KeptRun:
    """What is kept of a command's run: all but its start and end."""
    return cast(KeptRun, {k: v for k, v in out.items() if k not in ("start_s", "end_s")})


def _tail(text: str) -> str:
    return text if len(text) <= KEPT_CHARS else "..." + text[-KEPT_CHARS:]


def last_line(out: CommandRun | KeptRun) -> str:
    """The last line a command printed (its error, usually), or its exit."""
    for stream in ("stderr", "stdout"):
        lines = [ln for ln in str(out.get(stream, "")).splitlines() if ln.strip()]
        if lines:
            return lines[-1].strip()
    return f"exit {out.get('exit')}"


def run_command(
    line: str, netns: str | None, env: dict[str, str], timeout_s: float = HOOK_TIMEOUT_S
) -> CommandRun:
    """Run ``line`` in ``netns``; what it did (``CommandRun``)."""
    t0 = time.monotonic()
    try:
        res = run(shlex.split(line), netns=netns, timeout=timeout_s, check=False, env=env)
    except NetassayError as exc:  # missing program, timed out
        t1 = time.monotonic()
        return {
            "command": line, "start_s": t0, "exit": None, "stdout": "", "stderr": "",
            "error": f"{exc.what}: {exc.why}", "end_s": t1, "seconds": round(t1 - t0, 6),
        }  # fmt: skip
    t1 = time.monotonic()
    return {
        "command": line, "start_s": t0, "exit": res.returncode, "stdout": _tail(res.stdout),
        "stderr": _tail(res.stderr), "end_s": t1, "seconds": round(t1 - t0, 6),
    }  # fmt: skip


def fault(flag: str, out: CommandRun) -> str | None:
    """The measurement fault of a command that failed (None when it succeeded)."""
    if out.get("exit") == 0:
        return None
    why = out.get("error") or f"exited {out.get('exit')}: {last_line(out)}"
    return f"{quality.COMMAND_FAULT}: {flag} '{out['command']}' {why}"


@dataclass(frozen=True)
class Hooks:
    """The commands run around each trial in ``netns`` (None: netassay's own)."""

    before: str | None = None
    after: str | None = None
    netns: str | None = None
    testbed: str = ""
    timeout_s: float = HOOK_TIMEOUT_S
    # what the testbed tells a command beside the trial (a data plane's run directory,
    # its tools' variables: ``testbed.dataplane.command_env``)
    env: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.before or self.after)

    def run(self, phase: str, trial: TrialEnv) -> tuple[KeptRun | None, str | None]:
        """Run the ``phase`` hook (before, after) of one trial, whose load, load index,
        repetition, run and counts (``trial``) it is given in its environment:
        (what it did, its fault) or (None, None) without one."""
        line = self.before if phase == "before" else self.after
        if not line:
            return None, None
        env = dict(self.env)
        env |= {f"NETASSAY_{k.upper()}": str(v) for k, v in trial.items() if v is not None}
        env |= {"NETASSAY_HOOK": phase, "NETASSAY_TESTBED": self.testbed}
        out = run_command(line, self.netns, env, self.timeout_s)
        return kept(out), fault(f"--hook-{phase}", out)

    def to_json(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after, "netns": self.netns}


def trial_env(
    load_index: int, repetition: int, rate_pps: float, duration_s: float, run_id: int | None
) -> TrialEnv:
    """What a hook is told of its trial (``NETASSAY_<KEY>`` in its environment):
    ``TRIAL`` is the trial's id within its experiment, load index and repetition."""
    return {
        "trial": f"{load_index}.{repetition}",
        "load_index": load_index,
        "repetition": repetition,
        "load_pps": f"{rate_pps:g}",
        "duration_s": f"{duration_s:g}",
        "run_id": run_id,
    }

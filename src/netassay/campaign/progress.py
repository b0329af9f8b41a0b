"""One progress display for a whole campaign: cells done, trials done, ETA (on stderr)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

from netassay.units import fmt_duration


class Progress:
    """Cells and trials done over the campaign, and the time left: the estimate scaled by
    the pace measured so far (work done against the work it was estimated at)."""

    def __init__(
        self,
        estimates: dict[str, float],  # experiment key -> estimated seconds
        trials: dict[str, int | None],  # experiment key -> planned trials (None: a search)
        trial_s: dict[str, float],  # experiment key -> estimated seconds per trial
        workers: int = 1,
        write: Callable[[str], None] | None = None,
    ) -> None:
        self.estimates, self.trials, self.trial_s = estimates, trials, trial_s
        self.workers = max(1, workers)
        self.done: set[str] = set()
        self.failed: set[str] = set()
        self.running: dict[str, int] = {}  # key -> trials stored so far
        self.stored: dict[str, int] = {}  # key -> trials of a finished cell
        self.t0 = time.monotonic()
        self._lock = threading.Lock()
        self._write = write or _stderr

    def trial(self, key: str, n: int) -> None:
        with self._lock:
            if key not in self.done:
                self.running[key] = n
        self.show(f"cell {key}")

    def cell(self, key: str, trials: int, ok: bool = True) -> None:
        with self._lock:
            self.running.pop(key, None)
            (self.done if ok else self.failed).add(key)
            self.stored[key] = trials
        self.show(f"{'done' if ok else 'FAILED'} {key}")

    def line(self, what: str) -> str:
        with self._lock:
            cells = len(self.estimates)
            planned = sum(t for t in self.trials.values() if t is not None)
            searches = any(t is None for t in self.trials.values())
            done_trials = sum(self.stored.values()) + sum(self.running.values())
            eta = self.eta_s()
            running = bool(self.running)
        # a cell that measures first (a throughput search) stores more trials than planned:
        # the plan is then no total
        total = f"/{planned}" if not searches and done_trials <= planned else ""
        left = (
            "ETA past the estimate (a cell runs longer than planned)" if eta <= 0 and running
            else f"ETA {fmt_duration(eta)}"
        )  # fmt: skip
        return (
            f"[cells {len(self.done)}/{cells}"
            + (f", {len(self.failed)} failed" if self.failed else "")
            + f"] [trials {done_trials}{total}] {what}; {left}"
        )

    def eta_s(self) -> float:
        finished = self.done | self.failed
        est_done = sum(self.estimates[k] for k in finished)
        # a running cell has done at most its estimate, however many trials it stored
        ran = {k: min(n * self.trial_s.get(k, 0.0), self.estimates.get(k, 0.0))
               for k, n in self.running.items()}  # fmt: skip
        est_done += sum(ran.values())
        left = sum(v for k, v in self.estimates.items() if k not in finished)
        left -= sum(ran.values())
        left = max(0.0, left)
        elapsed = time.monotonic() - self.t0
        if est_done <= 0 or elapsed <= 0:
            return left / self.workers
        return left * elapsed / est_done

    def show(self, what: str) -> None:
        self._write(self.line(what))

    def note(self, text: str) -> None:
        self._write(text)


def _stderr(line: str) -> None:
    """One line per update; on a terminal, progress lines rewrite one line in place."""
    if sys.stderr.isatty():
        end = "" if line.startswith("[cells") else "\n"
        sys.stderr.write(f"\r\x1b[2K{line}{end}")
    else:
        sys.stderr.write(line + "\n")
    sys.stderr.flush()

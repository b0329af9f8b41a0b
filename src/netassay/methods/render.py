"""Figures drawn on the host's cores and kept between reports.

A figure job is a top-level drawing function, its inputs and the stem of the files it
writes. Its key hashes the function's name, the data it draws, ``STYLE`` and netassay's
version; a ``<stem>.key`` file beside the figure holds the key it was drawn under, so
that a report run again over unchanged data draws nothing, and a campaign that grew
draws only its new figures. The missing ones are drawn by a pool of processes (forked:
matplotlib is not thread-safe), one per CPU.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from netassay import __version__

STYLE = 1  # raise when a figure's look changes: every kept figure is drawn again


@dataclass(frozen=True)
class FigureJob:
    """One figure to draw: ``draw(*args, stem)`` writes ``stem`` + each suffix."""

    draw: Callable[..., Any]
    args: tuple[Any, ...]
    stem: Path
    data: str  # what the figure shows, as text (its key's input)
    suffixes: tuple[str, ...] = (".png", ".svg")

    def key(self) -> str:
        name = f"{self.draw.__module__}.{self.draw.__qualname__}"
        h = hashlib.sha256(f"{name}\n{STYLE}\n{__version__}\n".encode())
        h.update(self.data.encode())
        return h.hexdigest()

    def files(self) -> list[Path]:
        return [self.stem.with_name(self.stem.name + s) for s in self.suffixes]

    def key_file(self) -> Path:
        return self.stem.with_name(self.stem.name + ".key")

    def fresh(self) -> bool:
        """Its files exist and were drawn from the same data, style and version."""
        try:
            kept = self.key_file().read_text()
        except OSError:
            return False
        return kept == self.key() and all(f.exists() for f in self.files())


_JOBS: list[FigureJob] = []  # the jobs a forked worker draws, by index (nothing pickled)


def _draw(i: int) -> int:
    job = _JOBS[i]
    job.key_file().unlink(missing_ok=True)  # no key beside a figure half written
    job.draw(*job.args, job.stem)
    job.key_file().write_text(job.key())
    return i


def _quiet_worker() -> None:
    """A worker leaves Ctrl-C to the report (which ends the pool) and ends at once, with
    nothing printed, when the pool is ended: its inherited handlers would raise and
    print a traceback in every worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def workers() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def render(
    jobs: Sequence[FigureJob], *, processes: int | None = None, progress: TextIO | None = None
) -> int:
    """Draw the jobs whose figures are missing or stale; return how many were drawn.
    ``progress``: a stream told ``figures n/total`` as they end."""
    todo = [j for j in jobs if not j.fresh()]
    if todo and "matplotlib" in sys.modules:  # figures: their text measured once
        from netassay.methods.textcache import share

        share()
    shown = _Progress(progress, len(jobs), len(jobs) - len(todo))
    n = min(processes or workers(), len(todo))
    _JOBS[:] = todo
    try:
        if n <= 1:
            for i in range(len(todo)):
                _draw(i)
                shown.step()
        else:
            with multiprocessing.get_context("fork").Pool(n, _quiet_worker) as pool:
                for _ in pool.imap_unordered(_draw, range(len(todo))):
                    shown.step()
    finally:
        _JOBS.clear()
        shown.close()
    return len(todo)


class _Progress:
    """``figures n/total (k kept)`` on a stream: in place on a terminal, else a line at
    every tenth of the way."""

    def __init__(self, stream: TextIO | None, total: int, kept: int) -> None:
        self.stream, self.total, self.kept, self.done = stream, total, kept, kept
        self.tty = bool(stream and stream.isatty())
        self.said = -1

    def step(self) -> None:
        self.done += 1
        if not self.stream:
            return
        tenth = 10 * self.done // max(self.total, 1)
        if self.tty:
            self.stream.write(f"\r{self._line()}")
        elif tenth != self.said and self.done < self.total:
            self.said = tenth
            self.stream.write(self._line() + "\n")
        self.stream.flush()

    def _line(self) -> str:
        return f"figures {self.done}/{self.total} ({self.kept} kept)"

    def close(self) -> None:
        if self.stream and self.total:
            if self.tty:
                self.stream.write("\r")
            self.stream.write(self._line() + "\n")
            self.stream.flush()

"""Figures drawn on the host's cores and kept between reports.

A figure job is a top-level drawing function, its inputs and the stem of the files it
writes. Its key hashes the function's name, the data it draws, ``STYLE`` and netassay's
version; a ``<stem>.key`` file beside the figure holds the key it was drawn under, so
that a report run again over unchanged data draws nothing, and a campaign that grew
draws only its new figures. The missing ones are drawn by a pool of processes (forked:
matplotlib is not thread-safe), one per CPU.

The function may be named as ``"module:function"``: its module (and matplotlib with it)
is then imported only when one of its figures is drawn, so that a report whose figures
are all kept imports no plotting code. ``data_of`` writes a figure's inputs as the text
its key hashes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from netassay import __version__

if TYPE_CHECKING:  # a curve's assessment: named for type checkers, never imported to draw
    from netassay.analysis.assess import Assessment

STYLE = 2  # raise when a figure's look changes: every kept figure is drawn again
# 2: the loss charts in percent over the kept trials, the frame-size marks (at least, INCONCLUSIVE)


@dataclass(frozen=True)
class FigureJob:
    """One figure to draw: ``draw(*args, stem, **kwargs)`` writes ``stem`` + each suffix."""

    draw: Callable[..., Any] | str  # the function, or "module:function" (imported to draw)
    args: tuple[Any, ...]
    stem: Path
    data: str  # what the figure shows, as text (its key's input): ``data_of(...)``
    suffixes: tuple[str, ...] = (".png", ".svg")
    kwargs: dict[str, Any] = field(default_factory=dict)  # draw(*args, stem, **kwargs)

    def name(self) -> str:
        """The drawing function's dotted name."""
        if isinstance(self.draw, str):
            return self.draw.replace(":", ".")
        return f"{self.draw.__module__}.{self.draw.__qualname__}"

    def function(self) -> Callable[..., Any]:
        """The drawing function (its module imported when named as text)."""
        if not isinstance(self.draw, str):
            return self.draw
        module, _, name = self.draw.partition(":")
        draw: Callable[..., Any] = getattr(importlib.import_module(module), name)
        return draw

    def key(self) -> str:
        h = hashlib.sha256(f"{self.name()}\n{STYLE}\n{__version__}\n".encode())
        h.update(self.data.encode())
        if self.kwargs:
            h.update(data_of(self.kwargs).encode())
        return h.hexdigest()

    def png(self) -> str:
        """Its PNG's file name."""
        return f"{self.stem.name}.png"

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


# the metadata a curve's row of the report's main table shows, a column each
CURVE_COLUMNS = ("class", "environment", "kernel", "pinning", "ring")


@dataclass(frozen=True)
class Curve:
    """A section that is a curve of the report's main table (a sweep, a PASTRAMI file
    imported): its assessment (``a``: its label, verdict and experiment, by which a
    campaign's page links its figure), its row and its block below the table as the
    index's template reads them (``fields``), the PNGs they show (``images``: a name to
    a file in the report folder, or None; sized once drawn), its main figure's PNG and
    its figure environment in the LaTeX include."""

    a: Assessment
    fields: dict[str, Any]
    images: dict[str, str | None]
    figure_png: str
    latex: str


@dataclass(frozen=True)
class Section:
    """A method's part of a report's index: a title, its text, a figure (with its SVG
    beside it) or a link to a page of its own. Its figures are jobs (``FigureJob``)
    that the report draws, all sections' in one pool, only those whose data changed;
    a page of its own (which may hold its figures inline) is written by ``page`` once
    they are drawn."""

    title: str
    text: str = ""
    figure: str | None = None  # a PNG's path in the report folder (figures/...)
    figure_svg: str | None = None
    link: str | None = None
    jobs: tuple[FigureJob, ...] = ()  # every figure it shows, its page's too
    page: Callable[[], object] | None = None  # writes its page (after its figures)
    curve: Curve | None = None  # a curve of the index's main table, not a section below it

    @staticmethod
    def drawn(title: str, text: str, job: FigureJob, out: Path) -> Section:
        """A section showing one figure job's PNG, its SVG linked (``out``: the report)."""
        rel = job.stem.relative_to(out).as_posix()
        return Section(title, text, f"{rel}.png", f"{rel}.svg", jobs=(job,))

    def as_dict(self) -> dict[str, str]:
        return {
            k: v for k, v in self.__dict__.items()
            if v is not None and k not in ("jobs", "page", "curve")
        }  # fmt: skip


def data_of(*parts: Any) -> str:
    """What a figure is drawn from, as text for its key: JSON with sorted keys, a
    dataclass as its fields, an array as its values, a set sorted; a type it cannot
    write is a TypeError (a key must never miss what the figure shows)."""
    return json.dumps(parts, sort_keys=True, default=_plain, allow_nan=True)


def _plain(o: Any) -> Any:
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        fields = {f.name: getattr(o, f.name) for f in dataclasses.fields(o)}
        return {"": type(o).__qualname__, **fields}
    if hasattr(o, "tolist"):  # numpy's arrays and scalars
        return o.tolist()
    if isinstance(o, set | frozenset):
        return sorted(o, key=repr)
    if isinstance(o, bytes):  # a stored blob: its digest
        return {"sha256": hashlib.sha256(o).hexdigest()}
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, datetime | date):
        return o.isoformat()
    raise TypeError(f"a figure's data: cannot write {type(o).__qualname__} for its key")


_JOBS: list[FigureJob] = []  # the jobs a forked worker draws, by index (nothing pickled)
_DRAW: list[Callable[..., Any]] = []  # their functions, imported before the fork


def _draw(i: int) -> int:
    job = _JOBS[i]
    job.key_file().unlink(missing_ok=True)  # no key beside a figure half written
    job.stem.parent.mkdir(parents=True, exist_ok=True)
    _DRAW[i](*job.args, job.stem, **job.kwargs)
    job.key_file().write_text(job.key())
    return i


def _quiet_worker() -> None:
    """A worker leaves Ctrl-C to the report (which ends the pool) and ends at once, with
    nothing printed, when the pool is ended: its inherited handlers would raise and
    print a traceback in every worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def forked_pool(n: int, initializer: Callable[[], None] | None = None) -> Any:
    """A pool of ``n`` forked workers, forked with SIGTERM's default action. A worker
    forked while another thread of this process held a lock can hang on that lock
    before it runs a line of Python (seen once in a test run: the report's pool waited
    on it for 16 minutes); the SIGTERM that ends the pool would then wait for Python's
    handler, inherited from this process, which never runs: with the default action
    the kernel ends it. Only the main thread can change a handler; elsewhere the
    workers are forked as before. ``initializer``: what each runs first (the report's
    ``_quiet_worker``)."""
    fork, start = multiprocessing.get_context("fork"), initializer or _quiet_worker
    if threading.current_thread() is not threading.main_thread():
        return fork.Pool(n, start)
    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        return fork.Pool(n, start)
    finally:
        signal.signal(signal.SIGTERM, before)


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
    _DRAW[:] = [j.function() for j in todo]  # imported once, in this process
    if todo and "matplotlib" in sys.modules:  # figures: their text measured once
        from netassay.shared.textcache import share

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
            with forked_pool(n) as pool:
                for _ in pool.imap_unordered(_draw, range(len(todo))):
                    shown.step()
    finally:
        _JOBS.clear()
        _DRAW.clear()
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

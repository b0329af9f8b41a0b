"""Reading a segment every second while its generator runs.

``trial.engine.measure`` blocks in ``tb.send`` for the segment's length; the soak hands
it a testbed whose ``send`` starts a ``Sampler`` thread first and stops it when the
generator returns, and a sink whose reads are serialized (the XDP sink answers one
signal at a time). Nothing in the trial engine changes: every quality rule applies.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from netassay.counters import cpu

MERGE_S = 0.5  # a last read this close to the one before replaces it (no sliver of a second)


class LockedSink:
    """A sink counter whose reads never overlap (the sampler's and the trial's)."""

    def __init__(self, sink: Any) -> None:
        self._sink, self._lock = sink, threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sink, name)

    def read(self) -> dict[str, int]:
        with self._lock:
            counts: dict[str, int] = self._sink.read()
            return counts


Sample = tuple[float, int | None, dict[str, float]]  # s since start, count, busy per core


class Sampler:
    """Reads ``count()`` and /proc/stat at its start, every second after, and at stop."""

    def __init__(self, count: Callable[[], int | None]) -> None:
        self.count = count
        self.samples: list[Sample] = []
        self._cpu: list[Any] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.t0 = self.t_end = 0.0  # monotonic: the start, the generator's end

    def start(self) -> None:
        self.t0 = time.monotonic()
        self.samples, self._cpu = [(0.0, self.count(), {})], [cpu.read()]
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="soak-sampler", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        k = 1
        while not self._stop.wait(max(0.0, self.t0 + k - time.monotonic())):
            self._take()
            k += 1

    def _take(self) -> None:
        t, c, now = time.monotonic() - self.t0, self.count(), cpu.read()
        busy = {core: round(u["busy"], 3) for core, u in cpu.use(self._cpu[-1], now).items()}
        self.samples.append((round(t, 4), c, busy))
        self._cpu.append(now)

    def stop(self) -> list[Sample]:
        """Stop and take the last read (it replaces one taken under ``MERGE_S`` before)."""
        self.t_end = time.monotonic()
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if len(self.samples) > 1 and time.monotonic() - self.t0 - self.samples[-1][0] < MERGE_S:
            self.samples.pop()
            self._cpu.pop()
        self._take()
        return self.samples


class SampledBed:
    """A testbed whose ``send`` is read every second by ``sampler`` (all else its own).
    With --bidirectional two generators send at once, each from its own thread: the
    sampler starts with the first and stops when the last has returned."""

    def __init__(self, tb: Any, sampler: Sampler) -> None:
        self._tb, self.sampler = tb, sampler
        self._lock, self._sending = threading.Lock(), 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tb, name)

    def send(self, rate_pps: float | str, duration_s: float, *args: Any) -> Any:
        with self._lock:
            self._sending += 1
            if self._sending == 1:
                self.sampler.start()
        try:
            return self._tb.send(rate_pps, duration_s, *args)
        finally:
            with self._lock:
                self._sending -= 1
                if self._sending == 0:
                    self.sampler.stop()

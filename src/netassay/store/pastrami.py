"""Importer for PASTRAMI raw result files (TRex measurements, one JSON array per load).

Format (docs/store.md, "PASTRAMI's raw files")::

    [[rate_pps, rx_discards_before], [tx_1, rx_1, rx_discards_after_1], ..., [tx_K, ...]]

Each run lasts T seconds (``exp_t_T`` in the file name, else 10 s). The per-run delta
of the SUT NIC's cumulative ``rx_discards`` is stored as loss at the SUT's NIC
receive ring. Received > sent: within 10 ppm of sent, the other frames a port counts on a
link (the trial is used with no loss, and says so); beyond, a counter fault (stored,
named, left out of the statistics). The name's metadata that a file lacks is assumed
(10 s runs, ring 512, plain routing, unpinned) and the import says what it assumed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from netassay.errors import InputError, StoreFull
from netassay.quality import (
    FOREIGN_FRAMES_SHARE,
    RATE_TOLERANCE,
    foreign_frames,
    rate_kind,
    received_over_sent,
)
from netassay.store.db import Store
from netassay.store.faults import full
from netassay.trial.record import TrialRecord

KIND = "pastrami-import"
DEFAULT_DURATION_S = 10.0
DEFAULT_RING = 512
MAX_COUNTER = 2**53  # counters are exact in float64 below this

# (metadata key, pattern over the file stem, converter). Matched parts are removed;
# whatever is left is kept verbatim under "extra".
_NAME_PARTS: list[tuple[str, str, Any]] = [
    ("date", r"_date_(\d{4}-\d{2}-\d{2}[T0-9_:+-]*?)(?=_ver_|$)", str),
    ("version", r"_ver_(\d+)", str),
    ("class", r"_class_([a-z0-9]+)", str),
    ("runs", r"_raw_(\d+)", int),
    ("duration_s", r"_exp_t_(\d+(?:\.\d+)?)", float),
    ("kernel", r"_k(\d+\.\d+(?:\.\d+)?)(?=_|$)", str),
    ("irq", r"_irq_(pf0-\d+_pf1-\d+)", str),
    ("ring", r"_nic_buf_(\d+)", int),
    ("testbed", r"_(tb\d+)(?=_|$)", str),
    ("cpu", r"_(intel|amd|arm)(?=_|$)", str),
    ("environment", r"_(bare-metal|vm|ns)(?=_|$)", str),
    ("as_is", r"_(as-is)(?=_|$)", str),
]

_NAME_PATTERNS = [(key, re.compile(pattern), conv) for key, pattern, conv in _NAME_PARTS]


@dataclass
class ParsedExperiment:
    """One result file, parsed and validated, ready to be stored or assessed."""

    key: str
    source: str
    label: str
    metadata: dict[str, Any]
    config: dict[str, Any]
    trials: list[TrialRecord] = field(default_factory=list)


@dataclass(frozen=True)
class ParsedColumns:
    """One result file, validated, as numpy columns (no object per trial).

    Per load: ``rate_pps``, ``discards_before``, ``k``; per trial, grouped by load in
    file order: ``sent``, ``received``, ``discards_after``.
    """

    source: str
    label: str
    metadata: dict[str, Any]
    config: dict[str, Any]
    rate_pps: np.ndarray
    discards_before: np.ndarray
    k: np.ndarray
    sent: np.ndarray
    received: np.ndarray
    discards_after: np.ndarray

    @property
    def load_index(self) -> np.ndarray:
        return np.repeat(np.arange(self.k.size), self.k)

    @property
    def duration_s(self) -> float:
        return float(self.config["duration_s"])

    def discard_deltas(self) -> np.ndarray:
        """Per trial: the SUT NIC's rx_discards delta over the run (may be < 0: reset)."""
        prev = np.empty_like(self.discards_after)
        if prev.size:
            prev[1:] = self.discards_after[:-1]
            first = np.cumsum(self.k) - self.k  # each load's first run
            prev[first] = self.discards_before
        deltas: np.ndarray = self.discards_after - prev
        return deltas

    def rate_faults(self) -> tuple[np.ndarray, np.ndarray]:
        """Per trial: (generator limit, rate overshoot), as ``quality.rate_kind`` says for
        sent against rate_pps * duration_s (the same float operations, vectorized)."""
        planned = np.repeat(self.rate_pps * self.duration_s, self.k)
        err = self.sent / planned - 1
        off = np.abs(err) > RATE_TOLERANCE
        return off & (err < 0), off & (err >= 0)

    def count_faults(self) -> np.ndarray:
        """Per trial: received more than sent by more than foreign frames explain."""
        over: np.ndarray = (self.received - self.sent) > self.sent * FOREIGN_FRAMES_SHARE
        return over

    def delivered(self) -> np.ndarray:
        """Per trial: what the SUT delivered, foreign frames taken out (received is at
        most sent: no negative loss)."""
        delivered: np.ndarray = np.minimum(self.received, self.sent)
        return delivered

    def warned(self, faults: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """Per trial: does the importer attach any warning to it."""
        limit, over = self.rate_faults() if faults is None else faults
        warned: np.ndarray = (
            (self.received > self.sent) | limit | over | (self.discard_deltas() < 0)
        )
        return warned


def parse_name(name: str) -> dict[str, Any]:
    """Metadata from a PASTRAMI file name; unknown parts are kept verbatim."""
    stem = "_" + Path(name).name.removesuffix(".txt")
    meta: dict[str, Any] = {}
    for key, pattern, conv in _NAME_PATTERNS:
        m = pattern.search(stem)
        if m:
            meta[key] = conv(m.group(1))
            stem = stem[: m.start()] + stem[m.end() :]
    site, _, rest = stem.lstrip("_").partition("_")
    meta["site"] = site
    meta.setdefault("class", "routing")
    meta.setdefault("duration_s", DEFAULT_DURATION_S)
    meta.setdefault("ring", DEFAULT_RING)
    irq = meta.pop("irq", None)
    if irq is None:
        meta["pinning"] = "unpinned"
    else:
        rx, tx = re.findall(r"pf\d-(\d+)", irq)
        meta["pinning"] = "pin-1cpu" if rx == tx else "pin-2cpu"
        meta["irq"] = irq
    meta.pop("as_is", None)
    if rest.strip("_"):
        meta["extra"] = rest.strip("_")
    return meta


def name_assumptions(name: str, meta: dict[str, Any], ks: set[int]) -> list[str]:
    """What an import takes on trust because the file's name does not say it (or says
    something the file contradicts), in words; [] when the name says it all."""
    out = []
    if "runs" in meta and meta["runs"] not in ks:
        held = ", ".join(map(str, sorted(ks)))
        out.append(
            f"the name says {meta['runs']} runs per load (raw_{meta['runs']}) but the file "
            f"holds {held}: the file's runs are used"
        )
    stem = "_" + Path(name).name.removesuffix(".txt")
    if not any(pattern.search(stem) for key, pattern, _ in _NAME_PATTERNS if key != "as_is"):
        out.append(
            "the name carries no metadata (no raw_K, exp_t_T, kernel, environment, ...): "
            f"assumed {DEFAULT_DURATION_S:g} s runs, NIC ring {DEFAULT_RING}, plain "
            "routing, unpinned"
        )
    return out


def _bad(path: Path, lineno: int | None, what: str, todo: str) -> InputError:
    where = f"{path}:{lineno}" if lineno else str(path)
    return InputError(f"{where}: {what}", "", todo)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _parse_line(path: Path, lineno: int, text: str) -> tuple[float, int, list[list[int]]]:
    fix = "fix or remove this line (format: [[rate, discards], [tx, rx, discards], ...])"
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _bad(path, lineno, f"not a JSON array ({exc.msg}; truncated?)", fix) from exc
    except RecursionError as exc:  # '[' thousands deep
        raise _bad(path, lineno, "not a PASTRAMI line (nested too deep)", fix) from exc
    if not isinstance(row, list) or len(row) < 2:
        raise _bad(path, lineno, "expected a list of [rate, discards] and >= 1 run", fix)
    head, runs = row[0], row[1:]
    if not (
        isinstance(head, list)
        and len(head) == 2
        and isinstance(head[0], int | float)
        and not isinstance(head[0], bool)
        and _int(head[1])
    ):
        raise _bad(path, lineno, f"first element {str(head)[:40]} is not [rate_pps, discards]", fix)
    rate = float(head[0])
    if not rate > 0 or rate != rate or rate == float("inf"):
        raise _bad(path, lineno, f"offered load {head[0]} is not a positive number", fix)
    if not 0 <= head[1] < MAX_COUNTER:
        raise _bad(path, lineno, f"rx_discards {head[1]} is out of range", fix)
    for j, run in enumerate(runs, 1):
        if not (isinstance(run, list) and len(run) == 3 and all(_int(v) for v in run)):
            raise _bad(
                path, lineno, f"run {j} is {str(run)[:40]}, expected [tx, rx, discards]", fix
            )
        if run[0] <= 0:
            raise _bad(path, lineno, f"run {j} sent {run[0]} packets: nothing to measure", fix)
        if run[1] < 0 or run[2] < 0:
            raise _bad(path, lineno, f"run {j} has a negative counter {run}", fix)
        if max(run) >= MAX_COUNTER:
            raise _bad(path, lineno, f"run {j} has a counter beyond 2^53 {run}", fix)
    return rate, int(head[1]), runs


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise _bad(path, None, f"cannot be read ({exc.strerror})", "check the path") from exc


def parse_columns(path: str | Path, data: bytes | None = None) -> ParsedColumns:
    """Parse and validate one PASTRAMI raw file into columns; raise InputError naming
    file and line. The common shape (integers only) is parsed in bulk by numpy; any
    other file goes line by line through ``json``, which finds and names a bad line."""
    path = Path(path)
    data = _read(path) if data is None else data
    cols = _fast_columns(data.rstrip(_SPACE))
    if cols is None or not _increasing(cols[0]):
        cols = _json_columns(path, data)
    return _parsed(path, *cols)


def parse_many(paths: Iterable[str | Path], chunk: int = 64) -> Iterator[ParsedColumns]:
    """``parse_columns`` of each file, in order, reading ``chunk`` files at a time and
    parsing each chunk in one bulk pass (the per-call cost of numpy is paid once per
    chunk, not per file); a chunk with anything unusual is parsed file by file."""
    files = [Path(p) for p in paths]
    for start in range(0, len(files), chunk):
        part = files[start : start + chunk]
        datas = [_read(p) for p in part]
        bodies = [d.rstrip(_SPACE) for d in datas]
        cols = _fast_columns(b"\n".join(bodies)) if all(bodies) else None
        if cols is None:
            yield from (parse_columns(p, d) for p, d in zip(part, datas, strict=True))
            continue
        rates, before, k, runs = cols
        lines = np.cumsum([0] + [b.count(b"\n") + 1 for b in bodies])
        trials = np.concatenate(([0], np.cumsum(k)))[lines]
        for n, (p, d) in enumerate(zip(part, datas, strict=True)):
            a, b = lines[n], lines[n + 1]
            if not _increasing(rates[a:b]):
                yield parse_columns(p, d)  # names the line that does not increase
                continue
            yield _parsed(p, rates[a:b], before[a:b], k[a:b], runs[trials[n] : trials[n + 1]])


def _increasing(rates: np.ndarray) -> bool:
    return bool(np.all(rates[1:] > rates[:-1]))


def _parsed(
    path: Path, rates: np.ndarray, before: np.ndarray, k: np.ndarray, runs: np.ndarray
) -> ParsedColumns:
    meta = parse_name(path.name)
    if not 0 < meta["duration_s"] < 1e9:  # the name's exp_t_0, or 400 nines
        raise _bad(
            path, None, f"the name says runs of {meta['duration_s']:g} s (exp_t_T)",
            "give the file the name its runs' length: exp_t_10 for 10 s runs",
        )  # fmt: skip
    ks = set(k.tolist())
    if "runs" in meta and meta["runs"] not in ks:
        meta["runs_mismatch"] = f"name says {meta['runs']} runs, file has {sorted(ks)}"
    assumed = name_assumptions(path.name, meta, ks)
    if assumed:
        meta["assumed"] = assumed
    config = {"rates_pps": rates.tolist(), "runs": max(ks), "duration_s": meta["duration_s"]}
    return ParsedColumns(
        source=str(path),
        label=path.name.removesuffix(".txt"),
        metadata=meta,
        config=config,
        rate_pps=rates,
        discards_before=before,
        k=k,
        sent=runs[:, 0],
        received=runs[:, 1],
        discards_after=runs[:, 2],
    )


Columns = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]

_SPACE = b" \t\r\n"
_ALLOWED = b"0123456789[], \t\r\n"
_SKELETON_DROP = b"0123456789 \t\r"
_TO_COMMAS = bytes.maketrans(b"[]\n\t\r", b"  ,  ")
_MISPLACED = re.compile(rb"\][0-9]|[0-9]\[")


def _fast_columns(body: bytes) -> Columns | None:
    """Bulk parse of non-blank lines of non-negative integers (``body`` stripped at its
    end); None when anything is off: the caller then parses line by line with json,
    which accepts or names the problem exactly. Loads are not checked for order here."""
    if not body or body.translate(None, _ALLOWED):
        return None
    if body.count(b"\r") != body.count(b"\r\n"):
        return None  # a lone CR ends a line for the line-by-line parse: it decides
    if _MISPLACED.search(body.translate(None, b" \t\r")):
        return None  # a number against a bracket ('[1,2,]3]'): the skeleton cannot tell
    skeleton = body.translate(None, _SKELETON_DROP)
    ks = [line.count(b",[") for line in skeleton.split(b"\n")]
    if min(ks) < 1 or skeleton != b"\n".join(map(_skeleton, ks)):
        return None  # the skeleton of a line is [[,],[,,],[,,]...] (one [,,] per run)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        try:  # numbers in order: rate, discards, then tx, rx, discards per run
            vals = np.fromstring(body.translate(_TO_COMMAS), dtype=np.int64, sep=",")
        except (DeprecationWarning, ValueError):
            return None
    b = np.frombuffer(body, dtype=np.uint8)
    digit = (b - 48) < 10
    first = digit.copy()  # the first digit of each number (body ends in ']')
    first[1:] &= ~digit[:-1]
    if np.count_nonzero(first) != vals.size or vals.size != 2 * len(ks) + 3 * sum(ks):
        return None  # an empty field: numpy reads it as 0
    if np.any(first[:-1] & (b[:-1] == 48) & digit[1:]):
        return None  # a number with a leading zero: not JSON
    if vals.max() >= MAX_COUNTER:  # also what numpy clamps an overflow to
        return None
    k = np.array(ks, dtype=np.int64)
    if ks.count(ks[0]) == len(ks):  # the usual file: the same K at every load
        rows = vals.reshape(len(ks), -1)
        rates, before, runs = rows[:, 0], rows[:, 1], rows[:, 2:].reshape(-1, 3)
    else:
        head = np.concatenate(([0], np.cumsum(2 + 3 * k)[:-1]))
        keep = np.ones(vals.size, dtype=bool)
        keep[head] = keep[head + 1] = False
        rates, before, runs = vals[head], vals[head + 1], vals[keep].reshape(-1, 3)
    if rates.min() <= 0 or runs[:, 0].min() <= 0:
        return None
    return rates.astype(np.float64), before.copy(), k, runs


@functools.lru_cache(maxsize=256)
def _skeleton(k: int) -> bytes:
    return b"[[,]" + b",[,,]" * k + b"]"


def _json_columns(path: Path, data: bytes) -> Columns:
    """Line-by-line parse with json: accepts what the format allows, names what it does not."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _bad(path, None, "is not UTF-8 text", "give a PASTRAMI .txt result file") from exc
    rates: list[float] = []
    before: list[int] = []
    ks: list[int] = []
    runs: list[list[int]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        rate, disc, line_runs = _parse_line(path, lineno, line)
        if rates and rate <= rates[-1]:
            raise _bad(
                path,
                lineno,
                f"load {rate:g} does not increase over {rates[-1]:g}",
                "lines must be in increasing load order",
            )
        rates.append(rate)
        before.append(disc)
        ks.append(len(line_runs))
        runs.extend(line_runs)
    if not rates:
        raise _bad(path, None, "is empty", "give a file with one JSON line per offered load")
    return (
        np.array(rates, dtype=np.float64),
        np.array(before, dtype=np.int64),
        np.array(ks, dtype=np.int64),
        np.array(runs, dtype=np.int64).reshape(-1, 3),
    )


def parse_file(path: str | Path) -> ParsedExperiment:
    """Parse and validate one PASTRAMI raw file into trial records (for the importer)."""
    path = Path(path)
    return parse_data(path, _read(path))


def parse_data(path: Path, data: bytes) -> ParsedExperiment:
    """``parse_file`` of the bytes ``data`` read from ``path``."""
    cols = parse_columns(path, data)
    return ParsedExperiment(
        key="sha256:" + hashlib.sha256(data).hexdigest(),
        source=cols.source,
        label=cols.label,
        metadata=cols.metadata,
        config=cols.config,
        trials=list(_trials(cols)),
    )


def _trials(cols: ParsedColumns) -> Iterable[TrialRecord]:
    duration, src = cols.duration_s, cols.source
    deltas = cols.discard_deltas().tolist()
    after = cols.discards_after.tolist()
    n = 0
    for load_index, (rate, k) in enumerate(
        zip(cols.rate_pps.tolist(), cols.k.tolist(), strict=True)
    ):
        planned = rate * duration
        for rep in range(k):
            tx, rx = int(cols.sent[n]), int(cols.received[n])
            notes = []
            if rx > tx:
                fault = (rx - tx) > tx * FOREIGN_FRAMES_SHARE
                notes.append(received_over_sent(tx, rx) if fault else foreign_frames(tx, rx))
            kind = rate_kind(planned, tx)
            if kind:
                notes.append(
                    f"{kind}: sent {tx} of {planned:.0f} planned ({tx / planned - 1:+.3%}); "
                    "loss at this load is not SUT loss"
                )
            if deltas[n] < 0:
                notes.append("rx_discards went backwards (counter reset?): delta kept as read")
            yield TrialRecord(
                load_index=load_index,
                repetition=rep,
                rate_pps=rate,
                duration_s=duration,
                sent=tx,
                received=rx,
                source=src,
                achieved_rate_pps=tx / duration,
                loss_location={"sut_nic_rx_ring": deltas[n]},
                counters={
                    "rx_discards_before": after[n] - deltas[n],
                    "rx_discards_after": after[n],
                },
                warnings=notes,
            )
            n += 1


def find_result_files(paths: Iterable[str | Path]) -> list[Path]:
    """Expand files and folders (recursively) into PASTRAMI result files (*.txt)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for f in p.rglob("*.txt") if f.is_file())
            if not found:
                raise InputError(
                    f"{p}: no result files",
                    "the folder holds no *.txt PASTRAMI result file",
                    "point at the folder that holds them, or at the files",
                )
            out.extend(found)
        elif p.is_file():
            out.append(p)
        else:
            raise InputError(f"{p}: no such file or folder", "", "check the path")
    return out


def import_files(
    store: Store, paths: Iterable[str | Path], warn: Callable[[str], None] | None = None
) -> tuple[int, int, int]:
    """Validate every file first, then store each in its own transaction; ``warn`` is
    told, per file, what its name left to assume.

    Returns (experiments added, already stored and skipped, trials written).
    """
    return store_parsed(store, read_files(paths), warn)


def read_files(paths: Iterable[str | Path]) -> list[ParsedExperiment]:
    """Every result file of ``paths``, read and checked (InputError for the first bad
    one), before anything is written."""
    return [parse_file(f) for f in find_result_files(paths)]


def store_parsed(
    store: Store, parsed: list[ParsedExperiment], warn: Callable[[str], None] | None = None
) -> tuple[int, int, int]:
    """Store each file read by ``read_files`` in its own transaction (see
    ``import_files``)."""
    added = skipped = trials = 0
    for exp in parsed:
        if warn is not None:
            for note in exp.metadata.get("assumed", []):
                warn(f"{exp.source}: {note}")
        try:
            _, n = store.import_experiment(
                key=exp.key,
                kind=KIND,
                source=exp.source,
                label=exp.label,
                config=exp.config,
                metadata=exp.metadata,
                trials=exp.trials,
            )
        except StoreFull as err:  # each file is one transaction: the stored ones are whole
            raise full(
                str(store.path),
                f"{added + skipped} of {len(parsed)} experiments stored, nothing lost",
                "free space and run the same command again (it resumes)",
            ) from err
        added, skipped, trials = added + (n > 0), skipped + (n == 0), trials + n
    return added, skipped, trials

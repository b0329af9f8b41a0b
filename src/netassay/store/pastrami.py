"""Importer for PASTRAMI raw result files (TRex measurements, one JSON array per load).

Format (``../shared/data/pastrami/README.md``)::

    [[rate_pps, rx_discards_before], [tx_1, rx_1, rx_discards_after_1], ..., [tx_K, ...]]

Each run lasts T seconds (``exp_t_T`` in the file name, else 10 s). The per-run delta
of the SUT NIC's cumulative ``rx_discards`` is stored as loss at the SUT's NIC
receive ring. Received > sent (foreign frames) is kept as measured, with a warning.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netassay.errors import InputError
from netassay.quality import rate_kind
from netassay.store.db import Store, TrialRecord

KIND = "pastrami-import"
DEFAULT_DURATION_S = 10.0
DEFAULT_RING = 512

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


@dataclass
class ParsedExperiment:
    """One result file, parsed and validated, ready to be stored or assessed."""

    key: str
    source: str
    label: str
    metadata: dict[str, Any]
    config: dict[str, Any]
    trials: list[TrialRecord] = field(default_factory=list)


def parse_name(name: str) -> dict[str, Any]:
    """Metadata from a PASTRAMI file name; unknown parts are kept verbatim."""
    stem = "_" + Path(name).name.removesuffix(".txt")
    meta: dict[str, Any] = {}
    for key, pattern, conv in _NAME_PARTS:
        m = re.search(pattern, stem)
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
    for j, run in enumerate(runs, 1):
        if not (isinstance(run, list) and len(run) == 3 and all(_int(v) for v in run)):
            raise _bad(
                path, lineno, f"run {j} is {str(run)[:40]}, expected [tx, rx, discards]", fix
            )
        if run[0] <= 0:
            raise _bad(path, lineno, f"run {j} sent {run[0]} packets: nothing to measure", fix)
        if run[1] < 0 or run[2] < 0:
            raise _bad(path, lineno, f"run {j} has a negative counter {run}", fix)
    return rate, int(head[1]), runs


def parse_file(path: str | Path) -> ParsedExperiment:
    """Parse and validate one PASTRAMI raw file; raise InputError naming file and line."""
    path = Path(path)
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _bad(path, None, "is not UTF-8 text", "give a PASTRAMI .txt result file") from exc
    except OSError as exc:
        raise _bad(path, None, f"cannot be read ({exc.strerror})", "check the path") from exc
    meta = parse_name(path.name)
    duration = float(meta["duration_s"])
    trials: list[TrialRecord] = []
    rates: list[float] = []
    src = str(path)
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        rate, before, runs = _parse_line(path, lineno, line)
        if rates and rate <= rates[-1]:
            raise _bad(
                path,
                lineno,
                f"load {rate:g} does not increase over {rates[-1]:g}",
                "lines must be in increasing load order",
            )
        trials.extend(_trials(len(rates), rate, duration, before, runs, src))
        rates.append(rate)
    if not rates:
        raise _bad(path, None, "is empty", "give a file with one JSON line per offered load")
    ks = sorted({sum(1 for t in trials if t.load_index == i) for i in range(len(rates))})
    config = {"rates_pps": rates, "runs": ks[-1], "duration_s": duration}
    if "runs" in meta and meta["runs"] not in ks:
        meta["runs_mismatch"] = f"name says {meta['runs']} runs, file has {ks}"
    return ParsedExperiment(
        key="sha256:" + hashlib.sha256(data).hexdigest(),
        source=src,
        label=path.name.removesuffix(".txt"),
        metadata=meta,
        config=config,
        trials=trials,
    )


def _trials(
    load_index: int, rate: float, duration: float, before: int, runs: list[list[int]], src: str
) -> Iterable[TrialRecord]:
    prev = before
    planned = rate * duration
    for rep, (tx, rx, after) in enumerate(runs):
        warnings = []
        if rx > tx:
            warnings.append(
                f"received exceeds sent by {rx - tx} (foreign frames on the link?): "
                "negative loss kept as measured"
            )
        kind = rate_kind(planned, tx)
        if kind:
            warnings.append(
                f"{kind}: sent {tx} of {planned:.0f} planned ({tx / planned - 1:+.3%}); "
                "loss at this load is not SUT loss"
            )
        delta = after - prev
        if delta < 0:
            warnings.append("rx_discards went backwards (counter reset?): delta kept as read")
        yield TrialRecord(
            load_index=load_index,
            repetition=rep,
            rate_pps=rate,
            duration_s=duration,
            sent=tx,
            received=rx,
            source=src,
            achieved_rate_pps=tx / duration,
            loss_location={"sut_nic_rx_ring": delta},
            counters={"rx_discards_before": prev, "rx_discards_after": after},
            warnings=warnings,
        )
        prev = after


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


def import_files(store: Store, paths: Iterable[str | Path]) -> tuple[int, int, int]:
    """Validate every file first, then store each in its own transaction.

    Returns (experiments added, already stored and skipped, trials written).
    """
    parsed = [parse_file(f) for f in find_result_files(paths)]
    added = skipped = trials = 0
    for exp in parsed:
        _, n = store.import_experiment(
            key=exp.key,
            kind=KIND,
            source=exp.source,
            label=exp.label,
            config=exp.config,
            metadata=exp.metadata,
            trials=exp.trials,
        )
        added, skipped, trials = added + (n > 0), skipped + (n == 0), trials + n
    return added, skipped, trials

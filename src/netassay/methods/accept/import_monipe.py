"""Import MonIPE acceptance results (seed 004's scripts): ``<test>/rodada_<N>/`` with
``rodada_<N>-<test>-iperf3_server.csv`` (the receiver, one row per interval),
``...-iperf3_client.csv`` (the sender, the last row its summary), ``...-mpstat.csv``
(busy % per CPU per second) and, when the runner kept it, iperf3's JSON beside them
(read instead of the CSVs it matches, as the richer record).

Each test is one acceptance experiment, each round (``rodada``) one run, in round
order. An interval's length is its bytes over its rate (the CSV has no time column);
a run's throughput is its bytes over its time (the per-second rates weighted by their
length, so iperf3's last few milliseconds weigh what they last). The datagram size is
not in the CSVs: it is read from the rows with loss (bytes / (lost / lost share -
lost)); without any, the loss ratio is still exact (no loss) and only ``--layer
payload`` applies. Everything is read and checked before anything is written.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from netassay.errors import InputError
from netassay.methods.accept import import_iperf3
from netassay.trial.accept import AcceptRun, AcceptTest, CpuSample, Interval

SOURCE = "monipe import"
_ROUND = re.compile(r"^rodada_(\d+)$")
SERVER_COLUMNS = (
    "total_bytes_transferidos",
    "taxa_de_bits_por_segundo",
    "total_pacotes_perdidos",
    "porcentagem_pacotes_perdidos",
)
CLIENT_COLUMNS = ("pacotes_perdidos", "%_pacotes_perdidos", "bytes_transferidos")


def _rows(path: Path, needed: tuple[str, ...]) -> tuple[str, list[dict[str, str]]]:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise InputError(f"{path}: cannot read it", str(exc), "check the folder") from exc
    reader = csv.DictReader(io.StringIO(text))
    have = [c.strip() for c in reader.fieldnames or []]
    missing = [c for c in needed if c not in have]
    if missing:
        raise InputError(
            f"{path}: missing column(s) {', '.join(missing)}",
            f"it has {', '.join(have) or 'no header'}",
            "give the CSVs as MonIPE's scripts wrote them",
        )
    rows = [{k.strip(): (v or "").strip() for k, v in r.items() if k} for r in reader]
    if not rows:
        raise InputError(f"{path}: no data row", "", "the round did not run or was cut")
    return text, rows


def _num(path: Path, n: int, row: Mapping[str, str | None], col: str) -> float:
    """Row ``n``'s value of ``col``: every column netassay reads (bytes, bit/s, packets,
    shares, a CPU's busy %) is a finite number, 0 or more."""
    text = (row.get(col) or "").strip()
    try:
        value = float(text)
    except ValueError as exc:
        raise InputError(
            f"{path}:{n + 2}: column {col} is {text[:40]!r}", "not a number",
            "give the CSVs as MonIPE's scripts wrote them",
        ) from exc  # fmt: skip
    if not 0 <= value < 1e300:
        raise InputError(
            f"{path}:{n + 2}: column {col} is {text[:40]!r}", "not a finite number, 0 or more",
            "give the CSVs as MonIPE's scripts wrote them",
        )  # fmt: skip
    return value


def _one(folder: Path, pattern: str) -> Path | None:
    found = sorted(folder.glob(pattern))
    return found[0] if found else None


def server_intervals(path: Path) -> tuple[str, list[Interval], float | None]:
    """The receiver's intervals, and the datagram size the loss rows imply (or None)."""
    text, rows = _rows(path, SERVER_COLUMNS)
    out, t, sizes = [], 0.0, []
    for n, r in enumerate(rows):
        nbytes = _num(path, n, r, "total_bytes_transferidos")
        rate = _num(path, n, r, "taxa_de_bits_por_segundo")
        lost = _num(path, n, r, "total_pacotes_perdidos")
        pct = _num(path, n, r, "porcentagem_pacotes_perdidos")
        secs = nbytes * 8 / rate if rate > 0 else 1.0
        if not secs < 1e9:  # 31 years: a rate far too small for its bytes
            raise InputError(
                f"{path}:{n + 2}: {nbytes:g} bytes at {rate:g} bit/s", "no interval lasts that",
                "give the CSVs as MonIPE's scripts wrote them",
            )  # fmt: skip
        out.append(Interval(t, t + secs, int(nbytes), None, int(lost)))
        t += secs
        if lost > 0 and pct > 0:
            received = lost * 100 / pct - lost
            if received >= 1:
                sizes.append(nbytes / received)
    return text, out, statistics.median(sizes) if sizes else None


def client_summary(path: Path) -> tuple[str, dict[str, Any]]:
    """The sender's totals: its last row when that row is the sum of the others."""
    text, rows = _rows(path, CLIENT_COLUMNS)
    values = [_num(path, n, r, "bytes_transferidos") for n, r in enumerate(rows)]
    out: dict[str, Any] = {"destination": rows[0].get("host_destino")}
    if len(values) > 1 and abs(values[-1] - sum(values[:-1])) <= 0.01 * values[-1]:
        last = rows[-1]
        out["sent_bytes"] = int(values[-1])
        lost = _num(path, len(rows) - 1, last, "pacotes_perdidos")
        pct = _num(path, len(rows) - 1, last, "%_pacotes_perdidos")
        out["lost"] = int(lost)
        if lost > 0 and pct > 0:
            out["packets"] = round(lost * 100 / pct)
    return text, out


def mpstat(path: Path) -> tuple[str, list[CpuSample]]:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise InputError(f"{path}: cannot read it", str(exc), "check the folder") from exc
    reader = csv.DictReader(io.StringIO(text))
    cols = [c for c in (reader.fieldnames or []) if c]
    cpus = [c for c in cols if re.fullmatch(r"CPU_\d+", c.strip())]
    if not cpus:
        raise InputError(
            f"{path}: missing columns CPU_0, CPU_1, ...",
            f"it has {', '.join(cols) or 'no header'}",
            "give the mpstat CSV as MonIPE's scripts wrote it",
        )
    out = []
    for n, r in enumerate(reader):
        cores = {
            f"cpu{c.strip()[4:]}": {
                "busy": _num(path, n, r, c) / 100,
                "idle": 1 - _num(path, n, r, c) / 100,
            }
            for c in cpus
        }
        out.append(CpuSample(float(n + 1), cores))
    return text, out


def read_round(folder: Path, number: int, test_name: str) -> tuple[AcceptRun, list[str]]:
    """One round as a run, and the digests of the files it was read from."""
    server_json = _one(folder, "*iperf3_server.json")
    client_json = _one(folder, "*iperf3_client.json")
    server_csv = _one(folder, "*iperf3_server.csv")
    client_csv = _one(folder, "*iperf3_client.csv")
    mp = _one(folder, "*mpstat.csv")
    if server_json is None and server_csv is None:
        raise InputError(
            f"{folder}: no iperf3 server CSV or JSON", "a round needs the receiver's record",
            f"expected rodada_{number}-{test_name}-iperf3_server.csv",
        )  # fmt: skip
    used = [p for p in (server_json, client_json, server_csv, client_csv, mp) if p]
    digests = [hashlib.sha256(p.read_bytes()).hexdigest() for p in used]
    cpu: list[CpuSample] = []
    texts: dict[str, str] = {}
    if mp is not None:
        texts[mp.name], cpu = mpstat(mp)
    if server_json is not None:
        ends = [r for p in (server_json, client_json) if p for r in import_iperf3.read(p)]
        pairs = import_iperf3.pair(ends)
        run = import_iperf3.to_run(number, *pairs[0])
        run.cpu = cpu
        run.tool = "iperf3 (MonIPE)"
        return run, digests
    assert server_csv is not None
    texts[server_csv.name], intervals, size = server_intervals(server_csv)
    sender: dict[str, Any] = {}
    if client_csv is not None:
        texts[client_csv.name], sender = client_summary(client_csv)
    datagram = round(size) if size else None
    lost = sum(max(0, iv.lost or 0) for iv in intervals)
    if datagram:
        for iv in intervals:
            iv.packets = round(iv.bytes / datagram)
    received_bytes = sum(iv.bytes for iv in intervals)
    seconds = intervals[-1].end_s if intervals else 0.0
    received = round(received_bytes / datagram) if datagram else None
    dest = str(sender.get("destination") or "")
    run = AcceptRun(
        index=number, tool="iperf3 (MonIPE)", tool_version=None, phase="sustained",
        offered_bps=None, datagram_bytes=datagram, ip_version=6 if ":" in dest else 4,
        duration_s=seconds, sent_packets=sender.get("packets"), received_packets=received,
        lost_packets=lost, intervals=intervals, cpu=cpu, received_bytes=received_bytes,
        received_s=seconds or None, sent_bytes=sender.get("sent_bytes"),
        host_config={"monipe_files": sorted(p.name for p in used)},
        raw=json.dumps(texts, sort_keys=True),
    )  # fmt: skip
    if "lost" in sender and sender["lost"] != lost:
        run.warnings.append(
            f"the sender's summary says {sender['lost']} lost, the receiver's rows {lost}"
        )
    return run, digests


def find_tests(folder: Path) -> list[Path]:
    """The test folders: the folder itself when it holds rounds, else its subfolders that
    do; InputError when there is none (an empty folder)."""
    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder", "", "give a MonIPE results folder")

    def rounds(p: Path) -> bool:
        return any(_ROUND.match(c.name) and c.is_dir() for c in p.iterdir())

    if rounds(folder):
        return [folder]
    found = sorted(p for p in folder.iterdir() if p.is_dir() and rounds(p))
    if not found:
        raise InputError(
            f"{folder}: no MonIPE test in it",
            "no <test>/rodada_<N>/ folder was found",
            "give the results folder (or one test's folder) the scripts wrote",
        )
    return found


def read_tests(
    folder: Path, contract_bps: float | None, layer: str, label: str = ""
) -> list[AcceptTest]:
    """Every test of a MonIPE results folder, read and checked whole."""
    tests = []
    for tf in find_tests(folder):
        rounds = sorted(
            (int(m.group(1)), p) for p in tf.iterdir() if p.is_dir() and (m := _ROUND.match(p.name))
        )
        runs, digests = [], []
        for number, p in rounds:
            run, d = read_round(p, number, tf.name)
            runs.append(run)
            digests += d
        log = _one(tf, "*-experimento.log")
        meta: dict[str, Any] = {"folder": str(tf)}
        if log is not None:
            meta["log"] = log.read_text(errors="replace").strip()
        key = hashlib.sha256(json.dumps([digests, contract_bps, layer]).encode()).hexdigest()
        tests.append(AcceptTest(
            source=SOURCE, name=tf.name, contract_bps=contract_bps, layer=layer, runs=runs,
            scenario={"test": tf.name}, key=f"monipe-import-{key}",
            label=label or tf.name, metadata=meta,
        ))  # fmt: skip
    return tests

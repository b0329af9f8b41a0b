"""iperf3 TCP results imported as TCP cells (``netassay import iperf3`` hands the TCP
files here, the UDP ones to the acceptance test): each file one cell, each test in it
one run, stored under a key of the files' text (importing twice adds nothing).

Only a client's output of a sending client is read (``iperf3 -c ... -J`` without -R):
it carries the sender's view, the window the receiver advertised (``max_snd_wnd``),
the RTT samples and the retransmits. The path it ran over is not known: its delay,
loss and rate are left empty, the round trip is iperf3's smallest RTT sample, and the
only bound drawn beside it is the window's, when -w set one."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from netassay.analysis.tcp import bounds
from netassay.errors import AlreadyStored, InputError
from netassay.methods.tcp import store as tcp_store
from netassay.methods.tcp.run import parse_client
from netassay.shared.iperf3_json import (
    COUNT,
    FLAG,
    NUMBER,
    TEXT,
    Needed,
    check_shape,
    find_json,
)  # fmt: skip
from netassay.store.db import Store

SOURCE = "iperf3 import"
US = 1e-6
# The parts of a TCP client's JSON this importer reads.
TCP_SHAPE = {
    "start": Needed({
        "connecting_to": {"host": TEXT}, "version": TEXT, "sock_bufsize": COUNT,
        "tcp_mss_default": COUNT, "sndbuf_actual": COUNT, "rcvbuf_actual": COUNT,
        "test_start": {"duration": NUMBER, "omit": NUMBER, "reverse": FLAG, "bidir": FLAG,
                       "num_streams": COUNT},
    }),
    "intervals": Needed([{"streams": [{"pmtu": COUNT}]}]),
    "end": Needed({
        "streams": [{"sender": {"mean_rtt": NUMBER, "min_rtt": NUMBER, "max_snd_wnd": COUNT,
                                "max_snd_cwnd": COUNT}}],
        "sum_received": {"bits_per_second": NUMBER},
        "sum_sent": {"bytes": COUNT, "retransmits": COUNT},
        "sender_tcp_congestion": TEXT,
    }),
}  # fmt: skip


def _check(doc: dict[str, Any], origin: str) -> None:
    if doc.get("error"):
        raise InputError(f"{origin}: iperf3 reported an error", str(doc["error"]),
                         "the test did not run; fix what iperf3 says and run it again")  # fmt: skip
    for part in ("start", "intervals", "end"):
        if part not in doc:
            raise InputError(f"{origin}: no '{part}' in the iperf3 JSON", "", "is it iperf3 -J?")
    check_shape(doc, TCP_SHAPE, origin)
    start = doc["start"]
    ts = start.get("test_start") or {}
    if "connecting_to" not in start:
        raise InputError(f"{origin}: a TCP server's output", "the sender's view is the client's",
                         "import the client's output (iperf3 -c ... -J)")  # fmt: skip
    if ts.get("reverse") or ts.get("bidir"):
        raise InputError(f"{origin}: a -R or --bidir test", "the client did not send",
                         "import a test whose client sends (no -R)")  # fmt: skip
    if int(ts.get("num_streams") or 1) != 1:
        raise InputError(f"{origin}: {ts.get('num_streams')} streams", "one flow only", "-P 1")


def read_cell(path: Path, label: str = "") -> dict[str, Any]:
    """One file's tests as a cell: its key, label, config and runs."""
    text = path.read_bytes().decode(errors="replace")
    found = find_json(text, str(path))
    runs: list[tcp_store.TcpRun] = []
    docs: list[dict[str, Any]] = []
    for i, (body, doc) in enumerate(found):
        where = str(path) if len(found) == 1 else f"{path} (test {i + 1})"
        _check(doc, where)
        out = parse_client(body, 0, "")
        raw = out["raw"]
        docs.append(raw)
        ts = raw["start"].get("test_start") or {}
        window = raw["start"].get("sock_bufsize") or None
        rtt = out["rtt_min_s"] or 0.0
        pmtu = next((s.get("pmtu") for iv in raw["intervals"] for s in iv.get("streams") or []
                     if s.get("pmtu")), 1500)  # fmt: skip
        b = bounds(mss=out["mss_bytes"] or 0, rtt_s=rtt, loss=0.0,
                   window=out["snd_wnd_max_bytes"] if window else None, bottleneck=None,
                   mtu=int(pmtu))  # fmt: skip
        runs.append({
            "index": i, "ok": True, "fault": None,
            "cc": raw["end"].get("sender_tcp_congestion") or "unknown",
            "duration_s": float(ts.get("duration") or 0),
            # iperf3's figures (run.figures; spelled out: a run of an import has no
            # line limit, which a ** here would leave in doubt)
            "throughput_bps": out["throughput_bps"], "sent_bytes": out["sent_bytes"],
            "retransmits": out["retransmits"], "mss_bytes": out["mss_bytes"],
            "rtt_mean_s": out["rtt_mean_s"], "rtt_min_s": out["rtt_min_s"],
            "snd_wnd_max_bytes": out["snd_wnd_max_bytes"],
            "cwnd_max_bytes": out["cwnd_max_bytes"], "sndbuf_bytes": out["sndbuf_bytes"],
            "rcvbuf_bytes": out["rcvbuf_bytes"], "rtt_path_s": rtt or None,
            "window_bytes": window, "mathis_bps": None, "window_bps": b.window_bps,
            "path_bps": None, "binds": b.binds, "bound_bps": b.bound_bps,
            "random_dropped": None, "line_dropped": None, "line_late_max_ns": None,
            "cpu": {}, "ss": {}, "line": {}, "iperf3": raw,
        })  # fmt: skip
    first = docs[0]
    host = (first["start"].get("connecting_to") or {}).get("host") or ""  # null: unknown
    rtts = [r["rtt_path_s"] for r in runs if r["rtt_path_s"]]
    config = {
        "cc": runs[0]["cc"], "window": float(runs[0]["window_bytes"] or 0), "delay_s": None,
        "loss": None, "bottleneck_bps": None, "runs": len(runs),
        "duration_s": runs[0]["duration_s"],
        "omit_s": int((first["start"].get("test_start") or {}).get("omit") or 0),
        "ip_version": 6 if ":" in host else 4, "mtu": int(pmtu),
        "rtt_path_s": min(rtts) if rtts else None,
        "path": {"delay_kind": "unknown (imported from iperf3)"},
        "iperf3": (first["start"].get("version") or "").removeprefix("iperf "),
        "files": [str(path)],
    }  # fmt: skip
    key = "iperf3-tcp-" + hashlib.sha256(text.encode()).hexdigest()
    name = f"iperf3 TCP {config['cc']} to {host}" if host else f"iperf3 TCP {config['cc']}"
    return {"key": key, "label": label or name, "config": config, "runs": runs}


def store_cell(store: Store, cell: dict[str, Any]) -> tuple[int, bool]:
    """Store an imported cell and its runs; (experiment id, newly stored)."""
    found = store.find_experiment(cell["key"])
    if found is not None:
        return found.id, False
    try:
        exp_id = tcp_store.imported(store, cell["key"], cell["label"], cell["config"],
                                    cell["runs"], SOURCE)  # fmt: skip
    except AlreadyStored as stored:  # by another netassay, after this one looked
        return stored.experiment_id, False
    return exp_id, True


def import_files(
    files: list[Path], db: Path, label: str = ""
) -> list[tuple[dict[str, Any], int, bool]]:
    """Read every TCP file (all checked first), then store each as a cell."""
    return store_cells([read_cell(f, label) for f in files], db)


def store_cells(cells: list[dict[str, Any]], db: Path) -> list[tuple[dict[str, Any], int, bool]]:
    """Store cells ``read_cell`` read: (cell, experiment id, newly stored) each."""
    with Store(db) as st:
        return [(c, *store_cell(st, c)) for c in cells]

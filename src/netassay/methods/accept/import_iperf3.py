"""Import iperf3 ``-J`` output (3.x, UDP) as acceptance tests.

The verdict uses the receiver's totals (``end.sum_received``). The per-interval rates
come from the receiver: the server's JSON holds the receiver's intervals; a client's
JSON holds only the sender's (``intervals_side`` says so, and those seconds are not
graded). A client's and a server's JSON of the same test (the same cookie) become one
run: the receiver's intervals, the sender's counts. Text before the JSON (warnings,
a shell prompt) is skipped; an ``error`` in the JSON is reported as iperf3's error.

Files with the same offered rate, datagram size and IP version form one test, its runs
ordered by start time; the test's key is the SHA-256 of its files, so importing the
same files again adds nothing. Every file is read and checked before anything is
written.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netassay.analysis.acceptance import fmt_bps
from netassay.errors import InputError
from netassay.shared.iperf3_json import COUNT, FLAG, NUMBER, TEXT, Needed, check_shape, find_json
from netassay.trial.accept import AcceptRun, AcceptTest, Interval

SOURCE = "iperf3 import"


# The parts of a UDP test's JSON this importer reads.
UDP_SHAPE = {
    "start": Needed({
        "connected": [{"remote_host": TEXT, "local_host": TEXT}],
        "timestamp": {"timesecs": NUMBER, "time": TEXT},
        "cookie": TEXT, "version": TEXT,
        "test_start": {"protocol": TEXT, "num_streams": COUNT, "blksize": COUNT,
                       "target_bitrate": NUMBER, "duration": NUMBER, "reverse": FLAG,
                       "bidir": FLAG},
    }),
    "intervals": Needed([{"sum": Needed({
        "start": Needed(NUMBER), "end": Needed(NUMBER), "bytes": Needed(COUNT),
        "packets": COUNT, "lost_packets": COUNT, "omitted": FLAG,
    })}]),
    "end": Needed({
        "sum_received": {"bytes": COUNT, "packets": COUNT, "lost_packets": COUNT,
                         "seconds": NUMBER, "jitter_ms": NUMBER},
        "sum_sent": {"bytes": COUNT, "packets": COUNT},
    }),
}  # fmt: skip


@dataclass
class Iperf3Result:
    """One iperf3 -J output, as read."""

    origin: str
    digest: str
    text: str  # the JSON part, verbatim
    doc: dict[str, Any]
    role: str  # "receiver" | "sender": which end of the UDP flow wrote it
    end: str  # "server" | "client" (with -R the server sends)

    @property
    def start(self) -> dict[str, Any]:
        return self.doc.get("start") or {}

    @property
    def cookie(self) -> str | None:
        return self.start.get("cookie")

    @property
    def test_start(self) -> dict[str, Any]:
        return self.start.get("test_start") or {}

    @property
    def time(self) -> int:
        return int((self.start.get("timestamp") or {}).get("timesecs") or 0)


def read(path: Path) -> list[Iperf3Result]:
    """Every iperf3 -J output in one file, read and checked."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read it", str(exc), "check the path") from exc
    return parse_all(raw.decode(errors="replace"), str(path))


def parse_all(text: str, origin: str) -> list[Iperf3Result]:
    found = find_json(text, origin)
    if len(found) > 1:  # a server stopped by a signal ends with an error about no test
        found = [(b, d) for b, d in found if not _no_test(d)] or found

    def where(i: int) -> str:
        return origin if len(found) == 1 else f"{origin} (test {i + 1})"

    return [_check(body, doc, where(i)) for i, (body, doc) in enumerate(found)]


def _no_test(doc: dict[str, Any]) -> bool:
    start = doc.get("start")
    started = isinstance(start, dict) and "test_start" in start
    return bool(doc.get("error")) and not doc.get("intervals") and not started


def parse(text: str, origin: str) -> Iperf3Result:
    """Read and check one iperf3 -J output (the first in ``text``)."""
    body, doc = find_json(text, origin)[0]
    return _check(body, doc, origin)


def _check(body: str, doc: dict[str, Any], origin: str) -> Iperf3Result:
    """InputError says what is wrong with one iperf3 -J object."""
    if doc.get("error"):
        raise InputError(
            f"{origin}: iperf3 reported an error", str(doc["error"]),
            "the test did not run; fix what iperf3 says and run it again",
        )  # fmt: skip
    for part in ("start", "intervals", "end"):
        if part not in doc:
            raise InputError(f"{origin}: no '{part}' in the iperf3 JSON", "", "is it iperf3 -J?")
    check_shape(doc, {"start": Needed({"test_start": {}})}, origin)
    ts = doc["start"].get("test_start") or {}
    if str(ts.get("protocol", "")).upper() != "UDP":
        raise InputError(
            f"{origin}: not a UDP test", f"protocol {ts.get('protocol')!r}",
            "an acceptance test is iperf3 -u",
        )  # fmt: skip
    check_shape(doc, UDP_SHAPE, origin)
    if int(ts.get("num_streams") or 1) != 1:
        raise InputError(f"{origin}: {ts.get('num_streams')} streams", "one flow only", "-P 1")
    if ts.get("bidir"):
        raise InputError(f"{origin}: a --bidir test", "two flows, one each way", "one direction")
    received = (doc["end"] or {}).get("sum_received")
    if not isinstance(received, dict) or received.get("bytes") is None:
        raise InputError(
            f"{origin}: no end.sum_received in the iperf3 JSON",
            "the test ended before the receiver's totals were exchanged",
            "use iperf3 3.x output of a finished test",
        )
    end = "client" if "connecting_to" in doc["start"] else "server"
    role = "receiver" if (end == "server") != bool(ts.get("reverse")) else "sender"
    digest = hashlib.sha256(body.encode()).hexdigest()
    return Iperf3Result(origin, digest, body, doc, role, end)


def _version(res: Iperf3Result) -> str | None:
    words = str(res.start.get("version") or "").split()
    return words[-1] if words else None


def _ip_version(res: Iperf3Result) -> int:
    for c in res.start.get("connected") or []:
        host = str(c.get("remote_host") or c.get("local_host") or "")
        if ":" in host and not (host.startswith("::ffff:") and "." in host):
            return 6
    return 4


def _intervals(res: Iperf3Result) -> list[Interval]:
    out = []
    for item in res.doc["intervals"] or []:
        s = item.get("sum") or {}
        if s.get("omitted"):
            continue
        packets, lost = s.get("packets"), s.get("lost_packets")
        if res.role == "receiver" and packets is not None and lost is not None:
            packets = int(packets) - int(lost)  # iperf3's packets: received + lost
        out.append(Interval(float(s["start"]), float(s["end"]), int(s["bytes"]),
                            None if packets is None else int(packets),
                            None if lost is None else int(lost)))  # fmt: skip
    return out


def to_run(index: int, server: Iperf3Result | None, client: Iperf3Result | None) -> AcceptRun:
    """One run from the receiver's output (``server``: the iperf3 server unless -R), the
    sender's (``client``), or both (the same test)."""
    main = server or client
    assert main is not None
    end = main.doc["end"]
    rec = end["sum_received"]
    ts = main.test_start
    target = float(ts.get("target_bitrate") or 0)
    expected = int(rec.get("packets") or 0)  # received + lost, by sequence numbers
    lost = int(rec.get("lost_packets") or 0)
    sender = client.doc["end"].get("sum_sent") if client else None
    return AcceptRun(
        index=index,
        tool="iperf3",
        tool_version=_version(main),
        phase="sustained",
        offered_bps=target or None,
        datagram_bytes=int(ts["blksize"]) if ts.get("blksize") else None,
        ip_version=_ip_version(main),
        duration_s=float(rec.get("seconds") or ts.get("duration") or 0),
        sent_packets=int(sender["packets"])
        if sender and sender.get("packets") is not None
        else expected,
        received_packets=expected - lost,
        lost_packets=lost,
        intervals=_intervals(server) if server else _intervals(main),
        intervals_side="receiver" if server else "sender",
        received_bytes=int(rec["bytes"]),
        received_s=float(rec.get("seconds") or 0) or None,
        sent_bytes=int(sender["bytes"]) if sender and sender.get("bytes") is not None else None,
        jitter_ms=rec.get("jitter_ms"),
        host_config={
            "iperf3_cpu_utilization_percent": end.get("cpu_utilization_percent"),
            "iperf3_files": {r.role: r.origin for r in (server, client) if r},
        },
        started_utc=(main.start.get("timestamp") or {}).get("time"),
        # both outputs as iperf3 wrote them, one after the other: 'import iperf3' of this
        # text gives the same run again
        raw="\n".join(r.text for r in (server, client) if r) + "\n",
    )


def pair(results: list[Iperf3Result]) -> list[tuple[Iperf3Result | None, Iperf3Result | None]]:
    """(receiver, sender) per test: outputs with the same cookie are the two ends of one."""
    by_cookie: dict[str, dict[str, Iperf3Result]] = {}
    out: list[tuple[Iperf3Result | None, Iperf3Result | None]] = []
    for r in results:
        if r.cookie:
            ends = by_cookie.setdefault(r.cookie, {})
            if r.role in ends:  # the same end twice: import both, as separate runs
                out.append((r, None) if r.role == "receiver" else (None, r))
                continue
            ends[r.role] = r
        else:
            out.append((r, None) if r.role == "receiver" else (None, r))
    out += [(e.get("receiver"), e.get("sender")) for e in by_cookie.values()]
    return sorted(out, key=lambda sc: min(r.time for r in sc if r))


def build_tests(
    results: list[Iperf3Result], contract_bps: float | None, layer: str, label: str = ""
) -> list[AcceptTest]:
    groups: dict[tuple[Any, ...], list[AcceptRun]] = {}
    digests: dict[tuple[Any, ...], list[str]] = {}
    for server, client in pair(results):
        run = to_run(0, server, client)
        g = (run.offered_bps, run.datagram_bytes, run.ip_version)
        run.index = len(groups.setdefault(g, [])) + 1
        groups[g].append(run)
        digests.setdefault(g, []).extend(r.digest for r in (server, client) if r)
    tests = []
    for g, runs in groups.items():
        offered, datagram, ipv = g
        name = f"iperf3 UDP {fmt_bps(offered) if offered else 'unlimited'}, {datagram} B, IPv{ipv}"
        key = hashlib.sha256(
            json.dumps([sorted(digests[g]), contract_bps, layer]).encode()
        ).hexdigest()
        tests.append(AcceptTest(
            source=SOURCE, name=name, contract_bps=contract_bps, layer=layer, runs=runs,
            scenario={"tool": "iperf3", "offered_bps": offered, "datagram_bytes": datagram,
                      "ip_version": ipv},
            key=f"iperf3-import-{key}", label=label or name,
            metadata={"files": sorted({f for r in runs
                                       for f in r.host_config["iperf3_files"].values()})},
        ))  # fmt: skip
    return tests


def read_tests(
    paths: list[Path], contract_bps: float | None, layer: str, label: str = ""
) -> list[AcceptTest]:
    """Read every file (all checked first), then group them into tests."""
    files = json_files(paths)
    return build_tests([r for p in files for r in read(p)], contract_bps, layer, label)


def json_files(paths: list[Path]) -> list[Path]:
    """The files given, a folder's .json files in its place."""
    if not paths:
        raise InputError("no iperf3 file given", "", "name the iperf3 -J outputs")
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = sorted(p.glob("*.json"))
            if not found:
                raise InputError(f"{p}: no .json file in it", "", "name the iperf3 -J outputs")
            files += found
        else:
            files.append(p)
    return files


def protocol(path: Path) -> str:
    """The protocol of the first test in an iperf3 -J file ('UDP', 'TCP'; '' unknown)."""
    try:
        text = path.read_bytes().decode(errors="replace")
    except OSError as exc:
        raise InputError(f"{path}: cannot read it", str(exc), "check the path") from exc
    doc = find_json(text, str(path))[0][1]
    start = doc.get("start")
    ts = start.get("test_start") if isinstance(start, dict) else None
    return str(ts.get("protocol", "")).upper() if isinstance(ts, dict) else ""

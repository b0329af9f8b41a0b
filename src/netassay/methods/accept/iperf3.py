"""iperf3 as the acceptance sender (``traffic.iperf3`` runs it): its output read by the
iperf3 importer's own code (``import_iperf3.to_run``): the verdict from
``end.sum_received``, the intervals from the receiver's side, so that the JSON kept with
the run (``AcceptRun.raw``) imports to the same numbers.
"""

from __future__ import annotations

import json
from typing import Any

from netassay.errors import InputError, ToolError
from netassay.methods.accept import import_iperf3
from netassay.traffic.iperf3 import PORT, Side, exchange
from netassay.trial.accept import AcceptRun


def run_once(
    client: Side,
    server: Side | None,
    addr: str,
    payload_bps: float,
    datagram_bytes: int,
    duration_s: float,
    *,
    index: int,
    phase: str,
    socket_buffer: int | None = None,
    port: int = PORT,
) -> AcceptRun:
    """One iperf3 run; ``server`` None: an iperf3 server already listens at ``addr``."""
    cp, server_text = exchange(
        client, server, addr, payload_bps, datagram_bytes, duration_s,
        socket_buffer=socket_buffer, port=port,
    )  # fmt: skip
    try:
        cres = import_iperf3.parse(cp.stdout, f"iperf3 toward {addr}")
        sres = (
            import_iperf3.parse(server_text, "iperf3 server")
            if server_text
            else _remote_server(cres)
        )
    except InputError as exc:  # iperf3's own error, or no result at all: the tool failed
        raise ToolError(exc.what, exc.why or cp.stderr.strip()[-200:], exc.todo) from exc
    out = import_iperf3.to_run(index, sres, cres)
    out.phase = phase
    out.offered_bps = payload_bps
    if sres is None:
        out.warnings.append("the remote iperf3 server gave no output: sender-side intervals")
    return out


def _remote_server(cres: import_iperf3.Iperf3Result) -> import_iperf3.Iperf3Result | None:
    """The receiver's JSON a remote server sent back (--get-server-output), if any."""
    doc: Any = cres.doc.get("server_output_json")
    if not isinstance(doc, dict):
        return None
    try:
        return import_iperf3.parse(json.dumps(doc), "iperf3 server (remote)")
    except InputError:
        return None

"""CLI of the rtt method (seed 002): parses flags and delegates to netassay.methods.rtt."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from netassay.errors import Interrupted


def _ns(text: str | None) -> int | None:
    """A duration ('200us', '1ms', '0') in integer nanoseconds."""
    if text is None:
        return None
    from netassay.errors import UsageError

    t = text.strip().lower()
    for unit, mult in (("ns", 1), ("us", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000)):
        if t.endswith(unit):
            t, scale = t[: -len(unit)], mult
            break
    else:
        scale = 1_000_000_000 if t not in ("0",) else 1
    try:
        value = float(t) * scale
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise UsageError(f"bad duration '{text}'", "a number with ns, us, ms or s", "e.g. 200us")
    return round(value)


def rtt(
    path: Annotated[
        str, typer.Option("--path", help="Data path: bridge | macvlan | ipvlan | veth (routed).")
    ] = "bridge",
    probe: Annotated[
        str, typer.Option("--probe", help="icmp (the kernel answers) | udp (an echo answers).")
    ] = "icmp",
    rate: Annotated[str, typer.Option("--rate", help="Probes per second, e.g. 1k.")] = "1k",
    count: Annotated[
        int | None, typer.Option("--count", help="Probes per run (or --duration).")
    ] = None,
    duration: Annotated[
        str | None, typer.Option("--duration", help="Sending time per run, e.g. 2s.")
    ] = None,
    runs: Annotated[int, typer.Option("--runs", help="Runs (the statistical unit).")] = 10,
    size: Annotated[int, typer.Option("--size", help="Frame size in bytes (no FCS).")] = 64,
    timeout: Annotated[str, typer.Option("--timeout", help="Reply timeout.")] = "1s",
    load: Annotated[
        str | None,
        typer.Option("--load", help="Background load TYPE:N@WHERE, e.g. cpu:32@sender."),
    ] = None,
    load_rate: Annotated[
        str, typer.Option("--load-rate", help="net load: packets/s per background endpoint.")
    ] = "10k",
    load_burst: Annotated[
        int, typer.Option("--load-burst", help="net load: packets per burst.")
    ] = 32,
    responder: Annotated[
        str | None,
        typer.Option("--responder", help="kernel (icmp default) | app (udp default: an echo)."),
    ] = None,
    responder_delay: Annotated[
        str | None,
        typer.Option(
            "--responder-delay",
            help="Ground truth: hold each reply this long (200us); several (0,200us,1ms): "
            "runs interleaved over them, one experiment each.",
        ),
    ] = None,
    no_capture: Annotated[
        bool, typer.Option("--no-capture", help="No capture points (their cost is the difference).")
    ] = False,
    no_rate_check: Annotated[
        bool, typer.Option("--no-rate-check", help="Skip the check that the path carries the rate.")
    ] = False,
    db: Annotated[str | None, typer.Option("--db", help="Results store (SQLite).")] = None,
    label: Annotated[str, typer.Option("--label", help="Experiment label.")] = "",
    cpus: Annotated[
        str,
        typer.Option("--cpus", help="auto: sender server on CPU 0, responder on CPU 1 | none."),
    ] = "auto",
    name: Annotated[str, typer.Option("--name", help="Testbed name (1-8 a-z0-9).")] = "rtt",
    ping_too: Annotated[
        bool, typer.Option("--ping-too", help="Then the same path by iputils ping and irtt.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per run.")] = False,
) -> None:
    """Round-trip time between two endpoints, split at in-kernel capture points (seed 002)."""
    from netassay.methods.rtt import run as M
    from netassay.traffic.load import Load, NetLoad
    from netassay.traffic.probe import ProbeSpec
    from netassay.units import parse_duration, parse_rate

    delays: tuple[int, ...] = ()
    if responder_delay and "," in responder_delay:
        delays = tuple(_ns(d) or 0 for d in responder_delay.split(","))
    spec = ProbeSpec(
        probe=probe, rate_pps=parse_rate(rate), count=count,
        duration_s=parse_duration(duration) if duration else None,
        size_bytes=size, timeout_s=parse_duration(timeout),
    )  # fmt: skip
    if spec.count is None and spec.duration_s is None:
        spec = ProbeSpec(**{**spec.__dict__, "count": 1000})
    req = M.RttRequest(
        path=path, spec=spec, runs=runs, responder=responder,
        responder_delay_ns=None if delays else _ns(responder_delay), delays=delays,
        load=Load.parse(load),
        net=NetLoad(rate_pps=parse_rate(load_rate), burst=load_burst), capture=not no_capture,
        db=db, label=label, name=name, check_rate=not no_rate_check, cpus=cpus,
        ping_too=ping_too,
    )  # fmt: skip
    show = _json_line if as_json else _text_line
    try:
        m = M.measure_all(req, show, _json_peer if as_json else None)
    except KeyboardInterrupt as exc:
        raise Interrupted(
            "rtt interrupted", "the runs that ended are stored" if db else "", ""
        ) from exc
    if not as_json:
        _text_summary(m)


def _run_object(m: Any, res: Any) -> dict[str, Any]:
    req = res.config or m.req
    s = res.summary()
    return {
        "path": req.path, "probe": req.spec.probe, "rate_pps": req.spec.rate_pps,
        "size_bytes": req.spec.size_bytes, "responder": req.responder_kind,
        "responder_delay_ns": req.responder_delay_ns or 0, "load": req.load.label,
        "capture": req.capture,
        "experiment_id": m.experiments.get(req.responder_delay_ns), **s,
    }  # fmt: skip


def _json_line(m: Any, res: Any) -> None:
    typer.echo(json.dumps(_run_object(m, res), sort_keys=True))


def _json_peer(m: Any, peer: Any) -> None:
    req = m.req
    typer.echo(json.dumps({"path": req.path, "rate_pps": req.spec.rate_pps,
                           "size_bytes": req.spec.size_bytes, "load": req.load.label,
                           **peer.summary()}, sort_keys=True))  # fmt: skip


def _us(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1000:.1f}"


def _text_line(m: Any, res: Any) -> None:
    s = res.summary()
    seg = s["segments"]
    hold = ""
    if m.req.delays:
        hold = f" hold {(res.config.responder_delay_ns or 0) / 1e3:g}us"
    parts = [f"run {res.index + 1}/{m.req.runs}{hold}: sent {s['sent']} lost {s['lost']}"]
    for k in ("rtt", "overhead", "wire", "response", "latency"):
        if k in seg:
            parts.append(f"{k} p50 {_us(seg[k]['p50_ns'])} p99 {_us(seg[k]['p99_ns'])}")
    line = " | ".join(parts) + " (us)"
    if s["warnings"]:
        line += f"  [{'; '.join(s['warnings'])}]"
    typer.echo(line)


def _text_summary(m: Any) -> None:
    from netassay.analysis.effects import over_runs

    keys = ("rtt", "overhead", "wire", "response", "latency", "latency_sent", "app")
    for plan in m.req.plans():
        results = [r for r in m.results if r.config is None or r.config == plan]
        hold = f", hold {(plan.responder_delay_ns or 0) / 1e3:g}us" if m.req.delays else ""
        typer.echo(f"over {len(results)} runs{hold} (median of the runs' values, bootstrap"
                   " 95% CI), us:")  # fmt: skip
        for k in keys:
            p50 = [r.hists[k].percentile(50) for r in results if r.hists[k].n]
            p99 = [r.hists[k].percentile(99) for r in results if r.hists[k].n]
            if not p50:
                continue
            a, b = over_runs(p50), over_runs(p99)
            ci = "" if a["ci95"] is None else f" [{_us(a['ci95'][0])}, {_us(a['ci95'][1])}]"
            typer.echo(f"  {k:<13} p50 {_us(a['median'])}{ci}  p99 {_us(b['median'])}")
    if m.peers:
        _side_by_side(m)
    if m.experiments:
        ids = ", ".join(str(i) for i in m.experiments.values())
        typer.echo(f"stored {len(m.results)} run(s) in {m.req.db} (experiment {ids})")
    sys.stdout.flush()


def compare(
    db: Annotated[str, typer.Argument(help="A store with 'netassay rtt' runs or a campaign.")],
    by: Annotated[
        list[str] | None,
        typer.Option(
            "--by",
            help="Group by this factor (repeat): path, probe, rate, size, "
            "load, load-type, load-count, load-location, responder, delay, capture.",
        ),
    ] = None,
    segment: Annotated[
        list[str] | None, typer.Option("--segment", help="Segments (repeat) [rtt overhead ...].")
    ] = None,
    stat: Annotated[
        str, typer.Option("--stat", help="Per-run statistic: p50 p90 p99 p999 mean min max.")
    ] = "p50",
    paired: Annotated[
        bool, typer.Option("--paired", help="Runs paired by position: Wilcoxon signed-rank.")
    ] = False,
    out: Annotated[
        str | None, typer.Option("--out", help="Write figures and index.html to this folder.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Compare rtt configurations, or a campaign's cells (PDR by factor): tests, effects."""
    from pathlib import Path

    from netassay.cli_campaign import compare_campaign

    if compare_campaign(db, by or [], as_json):  # a store of campaign cells
        return

    from netassay.errors import UsageError
    from netassay.methods.rtt import compare as C
    from netassay.store.db import Store

    if stat not in C.STATS:
        raise UsageError(f"unknown --stat '{stat}'", f"known: {', '.join(C.STATS)}", "e.g. p50")
    with Store(db, readonly=True) as st:
        configs, segments, result = C.comparison(st, by or [], segment, stat, paired=paired)
        if out:
            from netassay.methods.rtt import figures

            page = figures.render(configs, segments, stat, result, Path(out))
    if as_json:
        typer.echo(json.dumps(result, indent=2, sort_keys=True, default=str))
    else:
        _compare_text(result, segments)
    if out:
        typer.echo(f"report written: {page}")


def show_stored(inputs: Any, as_json: bool) -> int:
    """``assess``: the rtt runs of each store, per configuration (no PASTRAMI verdict:
    a latency measurement has none); returns how many configurations were shown."""

    from netassay.methods.rtt import compare as C
    from netassay.methods.rtt.store import rtt_experiments
    from netassay.store.paths import open_store, store_paths

    n = 0
    for p in store_paths(inputs):
        with open_store(p) as st:
            if next(iter(rtt_experiments(st)), None) is None:
                continue
            _, segments, result = C.comparison(st, [], None)
        n += len(result["configurations"])
        if as_json:
            typer.echo(json.dumps({"kind": "rtt", "db": str(p), **result}, default=str))
        else:
            typer.echo(f"\nrtt runs in {p}:")
            _compare_text(result, segments)
    return n


def _compare_text(result: dict[str, Any], segments: list[str]) -> None:
    stat = result["statistic"]
    typer.echo(f"per configuration: median over runs of the runs' {stat} [bootstrap 95% CI], us")
    for i, row in enumerate(result["configurations"]):
        typer.echo(f"#{i + 1} {row['configuration']}  runs {row['runs']}"
                   + (f" (+{row['excluded']} excluded)" if row["excluded"] else ""))  # fmt: skip
        for seg in segments:
            s = row[seg]
            ci = "" if not s["ci95"] else f" [{_us(s['ci95'][0])}, {_us(s['ci95'][1])}]"
            typer.echo(f"   {seg:<12} {_us(s['median'])}{ci}")
    if result["pairwise"]:
        typer.echo("against #1:")
    for t in result["pairwise"]:
        if t.get("p") is None:
            typer.echo(f"   {t['segment']:<12} {t['a']}: too few runs for {t['test']}")
            continue
        if "cliffs_delta" in t:
            effect = (f"Cliff's delta {t['cliffs_delta']:+.2f} ({t['effect']}),"
                      f" shift {_us(t['hodges_lehmann'])} us")  # fmt: skip
        else:
            effect = f"median difference {_us(t['median_difference'])} us"
        typer.echo(f"   {t['segment']:<12} {t['a']}: {effect}; {t['test']} p={t['p']:.3g}")
    for t in result["trends"]:
        typer.echo(f"trend of {t['segment']} with the number of {t['load']} loads:"
                   f" Kendall tau-b {t['tau_b']:+.2f} (p={t['p']:.3g}, {t['n']} runs)")  # fmt: skip
    for t in result.get("sides", []):
        head = f"sender side - responder side (overhead - response), {t['configuration']}:"
        diff = t["median_difference"]
        if t["p"] is None:
            typer.echo(f"{head} median difference {_us(diff)} us ({t['n']} runs, no test)")
        else:
            typer.echo(f"{head} median difference {_us(diff)} us; {t['test']} paired by run"
                       f" p={t['p']:.3g} ({t['n']} runs)")  # fmt: skip


def _side_by_side(m: Any) -> None:
    """netassay's numbers beside ping's and irtt's (all runs' probes together), us."""
    from netassay.hist import Hist

    def merged(name: str) -> Hist:
        h = Hist()
        for r in m.results:
            h.merge(r.hists[name])
        return h

    rows = [("netassay rtt (endpoint NIC out and back)", merged("rtt")),
            ("netassay latency_kernel (as ping: send call", merged("latency_kernel")),
            ("  to the reply at the endpoint NIC)", Hist()),
            ("netassay latency_sent (as irtt: send call", merged("latency_sent")),
            ("  to the reply read)", Hist())]  # fmt: skip
    rows += [(f"{p.peer} ({p.received}/{p.sent})", p.hist) for p in m.peers]
    typer.echo("side by side, us:              min      p50      p90      p99      max")
    for label, h in rows:
        if h.n == 0:
            typer.echo(f"  {label}")
            continue
        s = h.summary()
        cells = "".join(
            f"{_us(s[k]):>9}" for k in ("min_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns")
        )
        typer.echo(f"  {label:<42}{cells}")


def import_ping(
    files: Annotated[list[str], typer.Argument(help="iputils ping output (ping -D ...).")],
    db: Annotated[str, typer.Option("--db", help="Results store (SQLite).")] = "netassay.db",
    label: Annotated[str, typer.Option("--label", help="Experiment label.")] = "",
) -> None:
    """Import iputils ping output as rtt runs (probe ping), beside netassay's own."""
    from pathlib import Path

    from netassay.methods.rtt.ping_import import import_files
    from netassay.store.db import Store

    paths = [Path(f) for f in files]
    with Store(db) as st:
        done = import_files(st, paths, label)
    new = sum(1 for _, _, fresh in done if fresh)
    typer.echo(f"imported {new} ping run(s) into {db}"
               + (f"; {len(done) - new} already stored" if len(done) > new else ""))  # fmt: skip


def register(app: typer.Typer) -> None:
    """Add the rtt and compare commands, and 'import ping', to the CLI."""
    app.command("rtt")(rtt)
    app.command("compare")(compare)
    for group in app.registered_groups:  # the 'import' group cli_analysis registered
        if group.name == "import" and group.typer_instance is not None:
            group.typer_instance.command("ping")(import_ping)

"""Commands of what is stored: import pastrami, assess, report, db check and migrate,
export."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from netassay import methods as registry
from netassay.cli.common import (
    DbOpt,
    FailOn,
    Json,
    OldDbArg,
    check_fail_on,
    config_path,
    gate,
    store_given,
)
from netassay.config import AnalysisConfig, load_config
from netassay.errors import InputError, StoreError, UsageError
from netassay.report.inputs import as_stores
from netassay.store import Store, faults
from netassay.store.pastrami import read_files, store_parsed
from netassay.store.paths import open_store
from netassay.store.schema import SCHEMA_VERSION

if TYPE_CHECKING:  # deferred at run time: the export's module, when used
    from netassay.store.export import Kind

Mode = Annotated[
    str | None,
    typer.Option(
        "--mode",
        metavar="described|published",
        help="described (default: enter < entry*eta, stay < eta) or "
        "published (the authors' notebook exactly; GOOD/BAD only).",
    ),
]
Pdr = Annotated[
    float | None, typer.Option("--pdr", metavar="RATIO", help="PDR loss fraction [0.005].")
]
Eta = Annotated[
    float | None,
    typer.Option("--eta", metavar="NUMBER", help="TIR threshold to stay saturated [0.1]."),
]
Entry = Annotated[
    float | None,
    typer.Option("--entry-factor", metavar="NUMBER", help="Enter saturation below this * eta [3]."),
]
Inputs = Annotated[list[Path], typer.Argument(help="PASTRAMI files, folders, or a .db.")]


def _analysis(ctx: typer.Context, mode: str | None, pdr: float | None, eta: float | None,
              entry: float | None) -> AnalysisConfig:  # fmt: skip
    over = {"mode": mode, "pdr": pdr, "eta": eta, "entry_factor": entry}
    return load_config(config_path(ctx), {"analysis": over}).analysis


def import_pastrami(
    paths: Annotated[list[Path], typer.Argument(help="PASTRAMI raw files or folders of them.")],
    db: Annotated[Path, typer.Option("--db", help="SQLite store to write (created if new).")],
) -> None:
    """Import PASTRAMI raw result files into a store (importing twice adds nothing)."""
    parsed = read_files(paths)  # every file checked before the store is opened
    with Store(db) as store:
        added, skipped, trials = store_parsed(
            store, parsed, lambda note: typer.echo(f"netassay: warning: {note}", err=True)
        )
    typer.echo(
        f"{db}: imported {added} experiment(s), {trials} trial(s); "
        f"{skipped} already stored, skipped"
    )


def assess(ctx: typer.Context, inputs: Inputs, mode: Mode = None, pdr: Pdr = None,
           eta: Eta = None, entry_factor: Entry = None, as_json: Json = False,
           fail_on: FailOn = None) -> None:  # fmt: skip
    """Statistics, saturation and the GOOD/BAD/INCONCLUSIVE verdict per experiment (and
    what every other method stored: searches, rtt runs, acceptance tests)."""
    if not inputs:
        raise InputError("nothing to assess", "no file, folder or .db was given", "name one")
    check_fail_on(fail_on)
    cfg = _analysis(ctx, mode, pdr, eta, entry_factor)
    judged, legends = [], []
    for m in registry.analysing(inputs):
        for result in m.analyse(inputs, cfg):
            judged.append(m.judged(result))
            typer.echo(m.view(result, as_json))
            if m.legend and not as_json and m.legend not in legends:
                legends.append(m.legend)
    if not judged:
        raise UsageError("nothing to assess", "the inputs hold no trials", "run a sweep first")
    for legend in legends:  # once, under every table that uses it
        typer.echo(legend)
    gate(fail_on, judged)


def report(
    ctx: typer.Context,
    inputs: Annotated[
        list[Path], typer.Argument(help="Stores (.db), PASTRAMI files or folders, like assess.")
    ],
    out: Annotated[
        Path, typer.Option("--out", metavar="DIR", help="Folder for figures and index.html.")
    ] = Path("report"),
    mode: Mode = None,
    pdr: Pdr = None,
    eta: Eta = None,
    entry_factor: Entry = None,
) -> None:
    """Figures (PNG, SVG), a self-contained index.html and latex-include.tex.

    Takes what assess takes; files and folders are imported into a temporary store,
    removed afterwards (import them with 'netassay import pastrami' to keep one).
    """
    from netassay.report.build import build_report  # deferred: scipy, jinja2 (0.2 s)

    cfg = _analysis(ctx, mode, pdr, eta, entry_factor)
    with as_stores(inputs) as stores:
        index = build_report(stores, out, cfg, progress=True, inputs=", ".join(map(str, inputs)))
    typer.echo(f"report written: {index}")


def db_check(ctx: typer.Context, old_db: OldDbArg = None, db: DbOpt = None) -> None:
    """Integrity check of a store: SQLite's own, schema version, netassay invariants."""
    db = store_given(ctx, db, old_db)
    try:
        with Store(db, readonly=True, check=False) as store:
            problems = store.integrity_problems()
            counts = store.row_counts()
            version = store.schema_version()
    except (StoreError, sqlite3.DatabaseError) as exc:
        if not faults.is_damage(exc):  # no such file, a permission, another schema...
            if isinstance(exc, StoreError):
                raise  # its own advice
            raise faults.cause(exc, db, writing=False) from exc
        why = exc.why if isinstance(exc, StoreError) else str(exc)
        raise StoreError(
            f"{db}: integrity check failed", why, "restore from a copy; do not write to this file"
        ) from exc
    if problems:
        raise StoreError(
            f"{db}: integrity check failed",
            f"{len(problems)} problem(s): " + "; ".join(problems[:3]),
            "restore from a copy; do not write to this file",
        )
    said = ", ".join(
        f"{n} {what if n != 1 else what.removesuffix('s')}" for what, n in counts.items()
    )
    typer.echo(f"{db}: ok (schema {version}, {said})")


def db_migrate(ctx: typer.Context, old_db: OldDbArg = None, db: DbOpt = None) -> None:
    """Bring a store written by an older netassay to this release's schema (its data is
    kept; a damaged store is refused)."""
    db = store_given(ctx, db, old_db)
    try:
        with sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True) as conn:
            row = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
            before = int(row[0] or 0)
        conn.close()
    except sqlite3.DatabaseError:
        before = None  # Store says what is wrong
    with Store(db, create=False) as store:
        after = store.schema_version()
    if before == after:
        typer.echo(f"{db}: schema {after} already (this netassay's is {SCHEMA_VERSION})")
    else:
        typer.echo(f"{db}: migrated from schema {before} to {after}")


FormatOpt = Annotated[
    str,
    typer.Option(
        "--format",
        metavar="csv|jsonl|parquet|hdr",
        help="csv, jsonl, parquet, or hdr (each trial's one-way latency histogram in "
        "HdrHistogram's log format, one file).",
    ),
]
KindOpt = Annotated[
    str | None,
    typer.Option(
        "--kind",
        metavar="KIND",
        help="One kind of row (trials, latency, a table, soak_seconds, ...); "
        "default: every kind into a folder, trials to standard output or a "
        ".csv/.jsonl file.",
    ),
]
ExportOut = Annotated[
    Path | None,
    typer.Option(
        "--out",
        metavar="FILE|DIR",
        help="A folder (a file per kind), or a .csv/.jsonl file (one kind); hdr: a "
        "file; default: standard output.",
    ),
]


def export(
    ctx: typer.Context, old_db: OldDbArg = None, db: DbOpt = None, fmt: FormatOpt = "csv",
    kind: KindOpt = None, out: ExportOut = None,
) -> None:  # fmt: skip
    """Export what the store holds: every kind of row (trials with their latency
    percentiles, latency histograms, each table, each method's own rows) as CSV, JSON
    lines or Parquet, a file per kind in a folder, or one kind to a file or standard
    output; or each trial's latency histogram (sweep --latency, search --max-latency)
    as an HdrHistogram log."""
    db = store_given(ctx, db, old_db)
    from netassay.store import export as store_export

    if fmt not in (*store_export.FORMATS, "parquet", "hdr"):
        known = ", ".join((*store_export.FORMATS, "parquet", "hdr"))
        raise UsageError(f"unknown format '{fmt}'", f"known: {known}", "pick one")
    if fmt == "hdr":
        _export_hdr(db, kind, out)
        return
    one_file = _export_target(fmt, out)
    with open_store(db) as store:
        available = [*store_export.kinds(store), *registry.exports(store)]
        if one_file:
            (chosen,) = store_export.pick(available, kind or store_export.TRIALS)
            n = store_export.write_file(chosen, fmt, out, sys.stdout)
            if out is not None:
                typer.echo(f"{out}: {n} row(s) of {chosen.name}")
            return
        assert out is not None
        counts = _export_folder(store, fmt, out, store_export.pick(available, kind))
    rows = ", ".join(f"{name} {n}" for name, n in counts.items()) or "no rows"
    what = {"csv": "CSV", "jsonl": "JSON lines", "parquet": "Parquet"}[fmt]
    typer.echo(f"{out}: {len(counts)} {what} file(s): {rows}")


def _export_hdr(db: Path, kind: str | None, out: Path | None) -> None:
    """``export --format hdr``: every trial's latency histogram, one HdrHistogram log."""
    from netassay.store import export as store_export

    if kind not in (None, store_export.LATENCY):
        raise UsageError(
            f"--format hdr writes only the latency histograms, not --kind {kind}",
            "HdrHistogram's log holds histograms",
            "leave --kind out, or give --format csv, jsonl or parquet",
        )
    with open_store(db) as store:
        n = store_export.write_hdr(store, out, sys.stdout)
    if out is not None:
        typer.echo(f"{out}: {n} trial(s)")


def _export_target(fmt: str, out: Path | None) -> bool:
    """Whether the export is one kind into one file (or standard output) rather than a
    folder; a UsageError for an --out the format cannot write."""
    from netassay.store import export as store_export

    if fmt == "parquet" and out is None:
        raise UsageError(
            "--format parquet needs --out",
            "it writes a folder of binary files, one per kind of row",
            "give --out FOLDER (new or empty)",
        )
    one_file = fmt in store_export.FORMATS and (out is None or out.suffix in (".csv", ".jsonl"))
    if one_file and out is not None and out.suffix != f".{fmt}":
        raise UsageError(
            f"--out {out} names a {out.suffix} file", f"--format is {fmt}",
            f"name it {out.with_suffix('.' + fmt).name}, or give --format {out.suffix[1:]}",
        )  # fmt: skip
    return one_file


def _export_folder(store: Store, fmt: str, out: Path, chosen: list[Kind]) -> dict[str, int]:
    """The ``chosen`` kinds of row into the folder ``out``, a file each; rows per kind."""
    from netassay.store import export as store_export

    if fmt == "parquet":
        from netassay.store.parquet import export_parquet  # deferred: pyarrow

        return export_parquet(store, out, chosen)
    return store_export.export_folder(store, out, chosen, f".{fmt}", store_export.text_writer(fmt))


def register(app: typer.Typer, db_app: typer.Typer, import_app: typer.Typer) -> None:
    """Add the commands of what is stored to the CLI."""
    import_app.command("pastrami")(import_pastrami)
    app.command("assess")(assess)
    app.command("report")(report)
    db_app.command("check")(db_check)
    db_app.command("migrate")(db_migrate)
    app.command("export")(export)

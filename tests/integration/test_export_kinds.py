"""``netassay export`` of a store that holds every kind of row (the golden store: one
measured experiment of each method, a sweep with ``--latency`` among them, and imported
data), through the real command: a file per kind in each format, read back with pandas,
polars and pyarrow; the latency percentiles as columns and the histograms as a long
table that gives them again; every format holding the same rows; the kinds a method
derives checked against what the store holds; one ``--kind`` to a file or standard
output; what it refuses, in one line."""

from __future__ import annotations

import csv
import json
import math
import shutil
import sqlite3
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.builders import GOLDEN_STORE
from tests.conftest import netassay_argv

from netassay.hist import SinkHist

EVERY = {
    "experiments", "runs", "trials", "latency", "rtt_runs", "accept_runs",
    "accept_intervals", "accept_cpu", "doctor_checks", "tcp_runs", "batching_runs",
    "rtt_segments", "rtt_probes", "floods", "soak_seconds", "accept_cpu_cores",
}  # fmt: skip
SUFFIX = {"csv": ".csv", "jsonl": ".jsonl", "parquet": ".parquet"}
TRIALS_JSON = {"loss_location", "cpu", "warnings", "counters"}  # the trials' JSON columns
LATENCY = ["latency_frames", "latency_min_ns", "latency_p50_ns", "latency_p90_ns",
           "latency_p99_ns", "latency_p999_ns", "latency_max_ns", "latency_mean_ns"]  # fmt: skip


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[str, Path]:
    """The golden store exported once in each format, a folder each (the real CLI)."""
    d = tmp_path_factory.mktemp("export")
    db = d / "store.db"
    shutil.copy(GOLDEN_STORE, db)
    with sqlite3.connect(db) as conn:
        (experiments,) = conn.execute("SELECT count(*) FROM experiments").fetchone()
    conn.close()
    out = {}
    for fmt in SUFFIX:
        out[fmt] = d / fmt
        argv = netassay_argv("export", "--db", db, "--format", fmt, "--out", out[fmt])
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        assert cp.returncode == 0, cp.stderr
        name = {"csv": "CSV", "jsonl": "JSON lines", "parquet": "Parquet"}[fmt]
        head = f"{out[fmt]}: {len(EVERY)} {name} file(s): experiments {experiments},"
        assert cp.stdout.startswith(head)
    return out


def _is_json(kind: str, column: str) -> bool:
    """A JSON column: a table's ``*_json``, or one of the trials' (another kind's ``cpu``,
    accept_cpu_cores', is a core's name)."""
    return column.endswith("_json") or (kind == "trials" and column in TRIALS_JSON)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
def test_a_file_per_kind_in_every_format(exported):
    for fmt, folder in exported.items():
        assert {p.name for p in folder.iterdir()} == {k + SUFFIX[fmt] for k in EVERY}, fmt


def test_the_latency_percentiles_are_columns_read_back_by_pandas_polars_and_pyarrow(exported):
    """The sweep run with --latency: each trial's histogram count and percentiles, in
    order, on every trial of it (null on every other trial), the same in the three
    formats and as SinkHist gives them from the stored counters."""
    by_csv = pd.read_csv(exported["csv"] / "trials.csv")
    by_json = pd.read_json(exported["jsonl"] / "trials.jsonl", lines=True)
    by_parquet = pd.read_parquet(exported["parquet"] / "trials.parquet")
    by_polars = pl.read_parquet(exported["parquet"] / "trials.parquet")
    table = pq.read_table(exported["parquet"] / "trials.parquet")
    for df in (by_csv, by_json, by_parquet):
        assert set(LATENCY) <= set(df.columns)
    assert set(LATENCY) <= set(by_polars.columns) and set(LATENCY) <= set(table.column_names)
    lat = by_parquet[by_parquet["experiment_label"] == "golden latency"]
    assert len(lat) == 6  # three loads x two runs
    assert (lat["latency_frames"] > 0).all() and (lat["latency_frames"] <= lat["received"]).all()
    for _, r in lat.iterrows():
        got = [r[c] for c in LATENCY[1:-1]]  # min, p50 .. max: in order
        assert got == sorted(got), got
        counters = json.loads(r["counters"])
        s = SinkHist(counters["latency"]).summary()
        assert r["latency_p999_ns"] == s["p999_ns"] and r["latency_frames"] == s["n"]
    rest = by_parquet[by_parquet["experiment_label"] != "golden latency"]
    assert rest["latency_frames"].isna().all() and len(rest) == len(by_parquet) - 6
    for df in (by_csv, by_json):  # the same figures in the text formats
        mine = df[df["experiment_label"] == "golden latency"]
        assert mine["latency_p99_ns"].tolist() == lat["latency_p99_ns"].tolist()
    polars_p50 = by_polars.filter(pl.col("experiment_label") == "golden latency")
    assert polars_p50["latency_p50_ns"].to_list() == lat["latency_p50_ns"].tolist()
    assert str(table.schema.field("latency_p50_ns").type) == "double"


def test_the_histograms_long_table_gives_the_percentiles_again(exported):
    """A row per bucket of each trial's histogram: its counts sum to the trial's
    latency_frames, and the nearest-rank percentile of its buckets (the bucket's middle,
    clamped to the trial's min and max) is the trial's column."""
    hist = pd.read_parquet(exported["parquet"] / "latency.parquet")
    trials = pd.read_parquet(exported["parquet"] / "trials.parquet").set_index("trial_id")
    assert set(hist["direction"]) == {"forward"}
    assert (hist["upper_ns"].isna() | (hist["upper_ns"] > hist["lower_ns"])).all()
    for trial_id, h in hist.groupby("trial_id"):
        t = trials.loc[trial_id]
        assert h["count"].sum() == t["latency_frames"]
        h = h.sort_values("lower_ns")
        for p, col in ((50, "latency_p50_ns"), (99, "latency_p99_ns")):
            rank = math.ceil(p / 100 * t["latency_frames"])
            b = h[h["count"].cumsum() >= rank].iloc[0]
            mid = (b["lower_ns"] + b["upper_ns"]) / 2
            assert min(max(mid, t["latency_min_ns"]), t["latency_max_ns"]) == t[col]
    assert hist.groupby("trial_id").ngroups == 6


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


@pytest.mark.parametrize("kind", sorted(EVERY))
def test_every_format_holds_the_same_rows(exported, kind):
    """Parquet (typed, JSON as text, binary kept), JSON lines (JSON as objects, binary
    left out) and CSV (JSON and binary left out, booleans true/false, null empty): the
    same rows, value for value."""
    table = pq.read_table(exported["parquet"] / f"{kind}.parquet")
    types = {f.name: f.type for f in table.schema}
    typed = table.to_pylist()
    lines = _jsonl(exported["jsonl"] / f"{kind}.jsonl")
    text = _csv(exported["csv"] / f"{kind}.csv")
    assert len(typed) == len(lines) == len(text) > 0
    for t, j, c in zip(typed, lines, text, strict=True):
        assert list(j) == [k for k in t if types[k] != pa.binary()]
        for k, v in j.items():
            if types[k] == pa.timestamp("us", tz="UTC"):
                assert _utc(v) == t[k]
            elif isinstance(v, dict | list) or _is_json(kind, k):
                assert v == (None if t[k] is None else json.loads(t[k])), k
            else:
                assert v == t[k], k
        assert list(c) == [k for k in j if not (_is_json(kind, k) or isinstance(j[k], dict | list))]
        for k, v in c.items():
            want = j[k]
            if isinstance(want, bool):
                assert v == ("true" if want else "false"), k
            else:
                assert v == ("" if want is None else str(want)), k


def test_csv_rows_have_the_same_fields_and_excluded_is_true_or_false(exported):
    for f in exported["csv"].iterdir():
        with open(f, newline="") as fh:
            rows = list(csv.reader(fh))
        assert len({len(r) for r in rows}) == 1, f.name
        head = rows[0]
        assert not any(_is_json(f.stem, h) for h in head), f.name
        if "excluded" in head:
            i = head.index("excluded")
            assert {r[i] for r in rows[1:]} <= {"true", "false"}, f.name
    trials = _csv(exported["csv"] / "trials.csv")
    excluded = [r for r in trials if r["excluded"] == "true"]
    assert len(excluded) == 1 and excluded[0]["excluded_reason"].startswith("generator limit")
    assert all(r["excluded_reason"] == "" for r in trials if r["excluded"] == "false")


def test_a_soaks_seconds_sum_to_its_segments(exported):
    """Each segment's seconds received what its trial received, exactly (the last
    second takes what arrived after the last read), at the soak's rate."""
    seconds = pd.read_parquet(exported["parquet"] / "soak_seconds.parquet")
    trials = pd.read_parquet(exported["parquet"] / "trials.parquet").set_index("trial_id")
    assert seconds.groupby("trial_id").ngroups == 2  # 4 s in segments of 2 s
    for trial_id, s in seconds.groupby("trial_id"):
        assert s["received"].sum() == trials.loc[trial_id, "received"]
        assert s["offered"].sum() == pytest.approx(trials.loc[trial_id, "sent"], rel=0.01)
    assert seconds["t_s"].is_monotonic_increasing and not seconds["excluded"].any()


def test_the_floods_maximum_receive_rate_is_what_the_sink_received_per_second(exported):
    floods = _jsonl(exported["jsonl"] / "floods.jsonl")
    trials = {t["trial_id"]: t for t in _jsonl(exported["jsonl"] / "trials.jsonl")}
    assert len(floods) == 3
    for f in floods:
        t = trials[f["trial_id"]]
        assert f["mrr_pps"] == t["received"] / t["duration_s"]
        assert f["saturated"] is True  # a router capped at 100 kpps, flooded
        assert f["mrr_pps"] < 110_000 < f["offered_pps"]


def test_an_rtt_runs_probes_give_its_segments(exported):
    """The golden rtt runs (300 probes each, under the 2,000 a run keeps whole) keep
    every probe: per probe its segments add up (rtt = overhead + wire + response,
    latency_sent = rx - tx), and the median of a run's probes is its stored p50 to the
    histogram's precision (a bucket is at most 0.1% of its value wide)."""
    probes = pd.read_parquet(exported["parquet"] / "rtt_probes.parquet")
    segments = pd.read_parquet(exported["parquet"] / "rtt_segments.parquet")
    runs = probes.groupby("trial_id")
    assert runs.ngroups == 3 and (runs.size() == 300).all()
    seen = probes.dropna(subset=["rtt_ns"])
    assert len(seen) > 800
    assert (seen["rtt_ns"] == seen["overhead_ns"] + seen["wire_ns"] + seen["response_ns"]).all()
    assert (probes["latency_sent_ns"] == probes["rx_ns"] - probes["tx_ns"]).all()
    for trial_id, p in runs:
        for seg in ("rtt", "latency"):
            got = p[f"{seg}_ns"].dropna().sort_values().tolist()
            rank = math.ceil(0.5 * len(got))
            stored = segments[(segments["trial_id"] == trial_id) & (segments["segment"] == seg)]
            assert stored["n"].item() == len(got)
            assert abs(stored["p50_ns"].item() - got[rank - 1]) <= 0.001 * got[rank - 1] + 1


def test_one_kind_to_a_file_or_standard_output(tmp_path, cli):
    lines = cli("export", "--db", GOLDEN_STORE, "--format", "jsonl", "--kind", "floods",
                check=True).stdout.splitlines()  # fmt: skip
    assert len(lines) == 3 and json.loads(lines[0])["saturated"] is True
    out = tmp_path / "hist.csv"
    said = cli("export", "--db", GOLDEN_STORE, "--kind", "latency", "--out", out, check=True).stdout
    n = len(_csv(out))
    assert said.strip() == f"{out}: {n} row(s) of latency" and n > 6
    folder = tmp_path / "one"
    cli("export", "--db", GOLDEN_STORE, "--format", "parquet", "--kind", "tcp_runs",
        "--out", folder, check=True)  # fmt: skip
    assert [p.name for p in folder.iterdir()] == ["tcp_runs.parquet"]


@pytest.mark.slow
def test_what_export_refuses_in_one_line(tmp_path, cli):
    cases = [
        (("--kind", "nope"), 2, "no kind of row 'nope'"),
        (("--out", tmp_path / "x.jsonl"), 2, "names a .jsonl file"),
        (("--format", "jsonl", "--out", tmp_path / "x.csv"), 2, "give --format csv"),
    ]
    for args, code, why in cases:
        cp = cli("export", "--db", GOLDEN_STORE, *args)
        assert cp.returncode == code and why in cp.stderr, cp.stderr
        assert len(cp.stderr.strip().splitlines()) == 1 and "Traceback" not in cp.stderr
    cp = cli("export", "--db", GOLDEN_STORE, "--kind", "nope")
    assert "soak_seconds" in cp.stderr and "latency" in cp.stderr  # the kinds it has
    assert list(tmp_path.iterdir()) == []

"""Export a store as Parquet: a folder of typed files that pandas, polars or any Parquet
reader opens without netassay, one ``<kind>.parquet`` per kind of row the store holds
(``store/export.py``: its tables as stored, the trials flattened with their latency
percentiles and loss by place, the latency histograms as a long table, and each method's
own derived kinds).

Types: a column's type gives INT int64, FLOAT float64, TEXT string, BINARY binary, BOOL
bool, TIME a timestamp (microseconds, UTC), JSON string (JSON text as the store holds
it: its keys differ from row to row and method to method, which nested Parquet types
would turn into wide, mostly null structs). Each file's schema metadata (key
``netassay``, JSON) says the netassay version, the store's schema version and what each
JSON, binary and timestamp column holds; the same words are each field's
``description``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from netassay import __version__
from netassay.store.db import Store
from netassay.store.export import (
    BINARY,
    BOOL,
    FLOAT,
    INT,
    JSON,
    JSON_NOTE,
    TEXT,
    TIME,
    TIME_NOTE,
    Column,
    Kind,
    as_text,
    export_folder,
    when,
)

TIMESTAMP = pa.timestamp("us", tz="UTC")
KEY = b"netassay"
TYPES = {INT: pa.int64(), FLOAT: pa.float64(), BOOL: pa.bool_(), TEXT: pa.string(),
         TIME: TIMESTAMP, JSON: pa.string(), BINARY: pa.binary()}  # fmt: skip


def export_parquet(store: Store, out: Path, chosen: list[Kind]) -> dict[str, int]:
    """Write each kind of ``chosen`` that has rows as ``<kind>.parquet`` into ``out``, a
    new or empty folder (``export.export_folder``); rows written per kind."""
    version = store.schema_version()
    return export_folder(store, out, chosen, ".parquet", lambda k, p: write(k, p, version))


def write(kind: Kind, path: Path, version: int) -> int:
    """One kind's rows as one Parquet file; how many."""
    cols, batches = kind.open()
    schema = pa.schema([_field(c) for c in cols])
    schema = schema.with_metadata(_metadata(kind.name, cols, version))
    return _write(path, schema, batches)


def _write(path: Path, schema: pa.Schema, batches: Iterator[list[tuple[Any, ...]]]) -> int:
    n = 0
    with pq.ParquetWriter(path, schema) as w:
        for rows in batches:
            cols = zip(*rows, strict=True)
            arrays = [_array(list(c), f.type) for c, f in zip(cols, schema, strict=True)]
            w.write_batch(pa.record_batch(arrays, schema=schema))
            n += len(rows)
    return n


def _array(values: list[Any], t: pa.DataType) -> pa.Array:
    if t == TIMESTAMP:
        values = [None if v is None else when(v) for v in values]
    elif t == pa.bool_():
        values = [None if v is None else bool(v) for v in values]
    elif t == pa.float64():
        values = [None if v is None else float(v) for v in values]
    elif t == pa.string():
        values = [v if v is None or isinstance(v, str) else as_text(v) for v in values]
    return pa.array(values, type=t)


def _field(c: Column) -> pa.Field:
    return pa.field(c.name, TYPES[c.type], metadata={"description": c.note} if c.note else None)


def _metadata(name: str, cols: tuple[Column, ...], version: int) -> dict[bytes, bytes]:
    meta = {
        "netassay_version": __version__,
        "store_schema_version": version,
        "table": name,
        "json": JSON_NOTE,
        "timestamps": TIME_NOTE,
        "columns": {c.name: c.note for c in cols if c.note},
    }
    return {KEY: json.dumps(meta, sort_keys=True).encode()}

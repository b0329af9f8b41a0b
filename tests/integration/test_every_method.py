"""Every registered method has the shape (methods/base.py ``Method``), and on a store
holding only its own experiments (real ones: tests/data/golden) assess, report and
export go through the registry to it: nothing is shown for a kind no method claims."""

from __future__ import annotations

import json
import re

import pytest
from tests.builders import store_with

from netassay.methods import KINDS, REGISTRY, method, of_kind
from netassay.methods.base import Method

STORED = [name for name in REGISTRY if method(name).kinds]
SHAPE = [
    k for k, v in vars(Method).items()
    if (callable(v) or isinstance(v, property)) and not k.startswith("_")
]  # fmt: skip


@pytest.mark.parametrize("name", list(REGISTRY))
def test_each_method_has_the_shape(name):
    m = method(name)
    missing = [k for k in SHAPE if not hasattr(m, k)]
    assert not missing, f"{name} lacks {missing}"
    assert m.name == name
    assert KINDS[name] == m.kinds  # the registry knows them without importing the method
    for kind in m.kinds:
        assert of_kind(kind) is m


@pytest.mark.parametrize("name", list(REGISTRY))
def test_a_method_shows_nothing_beyond_the_protocol(name):
    """A command runs its method through the protocol alone: a method's own helpers are
    private (the one-figure methods' runner, views, figure and hooks too)."""
    public = {k for k in dir(method(name)) if not k.startswith("_")}
    assert public - set(SHAPE) == set(), public - set(SHAPE)


@pytest.mark.slow
@pytest.mark.parametrize("name", STORED)
def test_assess_report_export_reach_the_method(name, tmp_path, cli):
    m = method(name)
    db = store_with(tmp_path / f"{name}.db", *m.kinds)
    export = cli("export", "--db", db, "--format", "jsonl", check=True)
    rows = [json.loads(line) for line in export.stdout.splitlines()]
    assert {r["experiment_kind"] for r in rows} <= set(m.kinds)
    if m.comparison.progress_rows == "trials":  # export holds trials (not accept's runs)
        assert rows
    assess = cli("assess", db, "--json", check=True)
    objects = [json.loads(line) for line in assess.stdout.splitlines()]
    assert objects, assess.stderr
    out = tmp_path / "rep"
    cli("report", db, "--out", out, check=True)
    page = (out / "index.html").read_text()
    assert "data:image" not in page  # figures are files beside the index
    links = re.findall(r'(?:href|src)="([^"#:]+)"', page)
    assert links, "the index shows nothing of the method"
    for link in links:
        assert (out / link).is_file(), link

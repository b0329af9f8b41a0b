"""What a sweep's run returns (``Swept``) is what its command says when it ends, through
the protocol alone: where it stored what, then its verdict and bounds (or the assess
object with --json), and the verdict ``--fail-on`` gates on; read from a real sweep
(the golden store's)."""

from __future__ import annotations

import json

from tests.builders import store_with

from netassay.config import AnalysisConfig, TestbedConfig
from netassay.methods import method
from netassay.methods.sweep.run import Swept
from netassay.shared.sweep_plan import Plan
from netassay.shared.sweep_run import Sweep
from netassay.store.db import Store


def _swept(db, stored: int, label: str = "golden sweep") -> Swept:
    with Store(db, readonly=True) as st:
        (exp,) = [e for e in st.experiments(kinds=("sweep",)) if e.label == label]
    plan = Plan(tuple(exp.config["rates_pps"]), exp.config["runs"], exp.config["duration_s"])
    sw = Sweep(plan, TestbedConfig(), str(db), label=exp.label)
    sw.experiment_id, sw.stored = exp.id, stored
    sw.latency = bool(exp.config.get("latency"))
    return Swept(sw, AnalysisConfig())


def test_a_run_ends_with_what_it_stored_its_verdict_and_bounds(tmp_path):
    db = store_with(tmp_path / "s.db", "sweep")
    m = method("sweep")
    (a,) = [a for a in m.analyse([db], AnalysisConfig()) if a.label == "golden sweep"]
    result = _swept(db, 3)
    lines = m.view(result, False).splitlines()
    assert lines[0] == f"stored 3 trial(s) in {db} (experiment {a.metadata['experiment_id']})"
    assert lines[1] == f"verdict: {a.verdict} - {a.saturation.reason}"
    assert lines[2].startswith("PDR@") and "NDR" in lines[2]
    doc = json.loads(m.view(result, True))  # the assess object, what the store adds beside
    assert {k: doc[k] for k in a.to_json()} == json.loads(m.view(a, True))
    assert m.judged(result) == m.judged(a) == ("golden sweep", a.verdict)


def test_a_latency_run_ends_with_its_latency_per_load_too(tmp_path):
    db = store_with(tmp_path / "s.db", "sweep")
    m = method("sweep")
    result = _swept(db, 2, "golden latency")
    assert result.sweep.latency
    doc = json.loads(m.view(result, True))
    assert doc["latency"] and {"rate_pps", "p50_ns"} <= set(doc["latency"][0])
    text = m.view(result, False)
    assert text.startswith("stored 2 trial(s) in ") and "p50" in text

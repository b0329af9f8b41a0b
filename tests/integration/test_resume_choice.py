"""Which sweep a resume continues: the newest unfinished netassay sweep, or the one named
by --experiment; on the testbed it ran on (a conflicting --name is refused)."""

import pytest

from netassay.config import Config
from netassay.errors import UsageError
from netassay.methods.base import RunOptions
from netassay.methods.sweep.request import SweepRequest
from netassay.methods.sweep.run import prepare
from netassay.shared import sweep_run
from netassay.store import Store
from netassay.trial.record import TrialRecord


def _sweep(st, key, name, rates, runs, done):
    cfg = {
        "rates_pps": rates, "runs": runs, "duration_s": 1.0, "settle_s": 0.0,
        "testbed": {"sut": "router", "pinning": "pin-2cpu"}, "testbed_name": name,
    }  # fmt: skip
    source = sweep_run.SOURCE
    exp, _ = st.add_experiment(key=key, kind="sweep", source=source, label=key, config=cfg)
    st.add_trials(exp, [TrialRecord(i, k, rates[i], 1.0, 10, 10, "t") for i, k in done])
    return exp


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "r.db"
    with Store(path) as st:
        a = _sweep(st, "a", "t2", [1e4, 2e4], 2, [(0, 0)])  # unfinished
        b = _sweep(st, "b", "t3", [1e4], 1, [(0, 0)])  # complete
        c = _sweep(st, "c", "t4", [1e4, 2e4], 1, [])  # unfinished, newest
        imp, _ = st.add_experiment(key="i", kind="sweep", source="pastrami", label="i", config={})
    return str(path), a, b, c, imp


def test_newest_unfinished_by_default_on_its_own_testbed(db):
    path, _a, _b, c, _ = db
    sw = sweep_run.resume_sweep(path)
    assert sw.experiment_id == c and sw.name == "t4"
    assert sw.testbed.pinning == "pin-2cpu"


def test_experiment_picks_the_sweep(db):
    path, a, b, _c, imp = db
    sw = sweep_run.resume_sweep(path, experiment_id=a)
    assert sw.experiment_id == a and sw.name == "t2"
    with pytest.raises(UsageError, match="is complete"):
        sweep_run.resume_sweep(path, experiment_id=b)
    with pytest.raises(UsageError, match="not a netassay sweep"):
        sweep_run.resume_sweep(path, experiment_id=imp)


def test_a_conflicting_name_is_refused(db):
    path, a, *_ = db
    assert sweep_run.resume_sweep(path, "t2", a).name == "t2"
    with pytest.raises(UsageError, match="ran on testbed 't2'"):
        sweep_run.resume_sweep(path, "lab", a)


def test_resume_takes_no_testbed_flags(db):
    path, a, *_ = db
    cfg = Config()
    options = RunOptions(db=path, resume=True, testbed_flags={"backlog": 10})
    with pytest.raises(UsageError, match="no testbed flags"):
        prepare(SweepRequest(), options, cfg)
    with pytest.raises(UsageError, match="needs --resume"):
        prepare(SweepRequest(), RunOptions(db=path, experiment=a), cfg)

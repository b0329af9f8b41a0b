"""What ``accept`` says when its run ends, through the protocol: ``METHOD.view`` of the
run's ``Accepted`` (each test in a few lines, or a JSON line each) and ``METHOD.judged``
of each of its tests, on tests read from a real MonIPE round (tests/data/monipe)."""

from __future__ import annotations

import json

from tests.conftest import FIXTURES

from netassay.analysis.acceptance import judge
from netassay.methods import method
from netassay.methods.accept.import_monipe import read_tests
from netassay.methods.accept.method import StoredTest
from netassay.methods.accept.result import Accepted, AcceptResult
from netassay.methods.accept.view import summary, text_lines

M = method("accept")
WARNING = "the far host is not checked from here"


def _tests(n: int) -> list[AcceptResult]:
    out = []
    for i in range(n):
        (test,) = read_tests(FIXTURES / "monipe", 900e6, "payload", f"t{i}")
        test.runs[0].warnings.append(WARNING)  # as a run toward a remote server says
        out.append(AcceptResult(test, judge(test), 7 + i))
    return out


def test_the_text_is_the_assess_lines_with_warnings_and_where_it_is_stored():
    (res,) = _tests(1)
    shown = M.view(Accepted((res,), "acc.db"), False)
    want = text_lines({**summary(res.test), "experiment_id": 7})
    stored = "  stored in acc.db (experiment 7)"
    assert shown.splitlines() == [*want, f"  warning: {WARNING}", stored]
    assert "acceptance test 't0' (monipe import, experiment 7): FAIL" in shown
    assert res.test.metadata.get("experiment_id") is None  # the view changes nothing
    unstored = M.view(Accepted((AcceptResult(res.test, res.verdict),), None), False)
    assert "not stored" in unstored.splitlines()[0] and "stored in" not in unstored


def test_json_is_a_line_per_test_in_order_and_judged_is_each_tests():
    tests = _tests(2)
    lines = M.view(Accepted(tuple(tests), "acc.db"), True).splitlines()
    objs = [json.loads(line) for line in lines]
    assert [o["label"] for o in objs] == ["t0", "t1"]
    assert [o["experiment_id"] for o in objs] == [7, 8]
    assert all(o["warnings"] == [WARNING] and o["verdict"] == "FAIL" for o in objs)
    assert lines[0] == json.dumps(objs[0], sort_keys=True)  # keys sorted, as ever
    assert [M.judged(t) for t in tests] == [("t0", "FAIL"), ("t1", "FAIL")]
    stored = StoredTest(FIXTURES, summary(tests[0].test))  # as assess finds it
    assert M.judged(stored) == ("t0", "FAIL")
    assert M.view(stored, False).startswith("\nacceptance test 't0' (monipe import, not stored)")

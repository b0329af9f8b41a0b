"""tests/durations.py: each test's time from pytest's JUnit XML reports, one run or two
side by side."""

from __future__ import annotations

from tests.durations import durations, main, table

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="3">
<testcase classname="tests.system.test_soak" name="test_a_soak" time="{soak}"/>
<testcase classname="tests.system.test_trend" name="test_trend" time="{trend}"/>
{extra}
</testsuite></testsuites>
"""


def _write(path, soak, trend, extra=""):
    path.write_text(REPORT.format(soak=soak, trend=trend, extra=extra))
    return path


def test_one_report_slowest_first_with_its_total(tmp_path):
    r = _write(tmp_path / "a.xml", 53.7, 12.3)
    assert durations(r) == {
        "tests.system.test_soak::test_a_soak": 53.7,
        "tests.system.test_trend::test_trend": 12.3,
    }
    lines = table(durations(r), None, None)
    assert lines[0].split() == ["53.7", "tests.system.test_soak::test_a_soak"]
    assert lines[1].split() == ["12.3", "tests.system.test_trend::test_trend"]
    assert lines[-1].split()[:2] == ["66.0", "total"]


def test_two_reports_side_by_side_with_the_change(tmp_path):
    old = durations(_write(tmp_path / "a.xml", 53.7, 52.3))
    new_case = '<testcase classname="tests.system.test_new" name="test_new" time="2.0"/>'
    new = durations(_write(tmp_path / "b.xml", 30.2, 60.0, new_case))
    lines = table(old, new, None)
    assert lines[1].split() == ["52.3", "60.0", "+7.7", "tests.system.test_trend::test_trend"]
    assert lines[2].split() == ["53.7", "30.2", "-23.5", "tests.system.test_soak::test_a_soak"]
    assert lines[3].split() == ["-", "2.0", "tests.system.test_new::test_new"]
    assert table(old, new, 1)[1:-1] == lines[1:2]


def test_a_report_that_is_not_there_is_one_line(tmp_path, capsys):
    assert main([str(tmp_path / "none.xml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot read the report" in err

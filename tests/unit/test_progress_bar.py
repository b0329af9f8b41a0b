"""A run's progress through one callable: the trials' lines ('[n/total] ...') as a bar
filled by the count each line carries, the notes beside them as they are."""

from __future__ import annotations

from netassay.cli.common import bar


def test_the_bar_is_filled_by_each_lines_own_count_and_a_note_is_said_as_it_is(capsys):
    show = bar()
    show("testbed 'na' up")
    show("[1/4] load 1/2 100 kpps run 1/2: sent 10 lost 0")
    show("[3/4] load 2/2 200 kpps run 1/2: sent 10 lost 2 !")
    show("[12/12] load 6/6 1 Mpps run 2/2: sent 10 lost 0")  # chosen loads: a new total
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "testbed 'na' up"
    assert lines[1] == "[#####---------------] [1/4] load 1/2 100 kpps run 1/2: sent 10 lost 0"
    assert lines[2].startswith("[###############-----] [3/4] ")
    assert lines[3].startswith(f"[{'#' * 20}] [12/12] ")
    assert len(lines) == 4

"""The PASTRAMI importer's parsing, on files written here."""

import pytest

from netassay.errors import InputError
from netassay.store.pastrami import parse_file, parse_name


def test_name_metadata_and_unknown_parts_kept():
    m = parse_name("clab_tb1_class_ebpf_raw_30_exp_t_10_k6.5_intel_bare-metal_nic_buf_4096.txt")
    assert m == {
        "site": "clab",
        "testbed": "tb1",
        "class": "ebpf",
        "runs": 30,
        "duration_s": 10.0,
        "kernel": "6.5",
        "cpu": "intel",
        "environment": "bare-metal",
        "ring": 4096,
        "pinning": "unpinned",
    }
    m = parse_name(
        "clab_tb1_raw_50_k6.8_intel_bare-metal_nic_buf_4096_irq_pf0-4_pf1-6_2nd_exec.txt"
    )
    assert m["pinning"] == "pin-2cpu" and m["extra"] == "2nd_exec" and m["duration_s"] == 10.0
    assert parse_name("x_raw_5_k5.15_intel_vm_irq_pf0-4_pf1-4.txt")["pinning"] == "pin-1cpu"


def test_parse_rx_over_tx_and_discard_deltas(tmp_path):
    f = tmp_path / "lab_raw_2_exp_t_2_k6.1_intel_ns.txt"
    f.write_text(
        "[[1000, 7], [2000, 2003, 7], [2000, 1990, 12]]\n[[2000, 12], [4000, 3000, 900]]\n"
    )
    e = parse_file(f)
    assert e.config == {"rates_pps": [1000.0, 2000.0], "runs": 2, "duration_s": 2.0}
    t = e.trials
    assert [(x.load_index, x.repetition, x.sent, x.received) for x in t] == [
        (0, 0, 2000, 2003),
        (0, 1, 2000, 1990),
        (1, 0, 4000, 3000),
    ]
    assert [x.loss_location["sut_nic_rx_ring"] for x in t] == [0, 5, 888]
    # 3 more than 2000 sent is 1500 ppm: more than foreign frames explain
    assert t[0].warnings[0].startswith("counter fault: received 2003 > sent 2000 (by 3)")
    assert t[0].excluded
    assert not t[1].warnings
    assert e.key.startswith("sha256:")


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("[[1000, 0], [10000, 9990, 0]]\n[[2000, 0], [20000, 19", 2, "truncated"),
        ("hello\n", 1, "not a JSON array"),
        ("[[1000, 0], [10000, 9990]]\n", 1, "expected [tx, rx, discards]"),
        ("[[1000, 0], [0, 0, 0]]\n", 1, "nothing to measure"),
        ("[[1000], [10, 9, 0]]\n", 1, "is not [rate_pps, discards]"),
        ("[[2000, 0], [10, 9, 0]]\n[[1000, 0], [10, 9, 0]]\n", 2, "does not increase"),
        ("[[1000, 0]]\n", 1, ">= 1 run"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path, text, line, words):
    f = tmp_path / "bad_raw_1.txt"
    f.write_text(text)
    with pytest.raises(InputError) as e:
        parse_file(f)
    msg = e.value.line()
    assert f"{f}:{line}:" in msg and words in msg and "\n" not in msg


def test_empty_file(tmp_path):
    f = tmp_path / "empty.txt"
    f.write_text("")
    with pytest.raises(InputError, match="is empty"):
        parse_file(f)


def _both(tmp_path, text):
    """The bulk parse and the json parse of the same text (None when bulk declines)."""
    from netassay.store import pastrami

    f = tmp_path / "both_raw_2_exp_t_2.txt"
    f.write_text(text, newline="")
    return pastrami._fast_columns(text.encode().rstrip()), pastrami._json_columns(f, text.encode())


@pytest.mark.parametrize(
    "text",
    [
        "[[1000, 7], [2000, 2003, 7], [2000, 1990, 12]]\n[[2000, 12], [4000, 3000, 900]]\n",
        "[[1000,7],[2000,2003,7],[2000,1990,12]]\r\n[[2000,12],[4000,3000,900]]  \n\n",
        "[[1000, 0], [2000, 1990, 0]]",
    ],
)
def test_bulk_parse_equals_the_json_parse(tmp_path, text):
    fast, slow = _both(tmp_path, text)
    assert fast is not None
    for a, b in zip(fast, slow, strict=True):
        assert a.dtype == b.dtype and a.tolist() == b.tolist()


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[[1000, 0], [01000, 990, 0]]\n", "not a JSON array"),  # leading zero
        ("[[1000, 0], [1000, , 0]]\n", "not a JSON array"),  # empty field (numpy: 0)
        ("[[1000, 0], [1000, -, 0]]\n", "not a JSON array"),
        ("[[1000, 0], [1000, 5-3, 0]]\n", "not a JSON array"),
        ("[[1000, 0], [1000 990, 0]]\n", "not a JSON array"),
        ("[[1000, 0], [1000, 990, 9007199254740993]]\n", "beyond 2^53"),
        ("[[1000, 0], [1000, 99999999999999999999, 0]]\n", "beyond 2^53"),
        ("[[1000, 0], [1000, 990, 0], []]\n", "expected [tx, rx, discards]"),
        ("[[1000, 0], [true, 990, 0]]\n", "expected [tx, rx, discards]"),
        ("[[1000, 0], [1e3, 990, 0]]\n", "expected [tx, rx, discards]"),
        ("[[1000, 0], [1000, -1, 0]]\n", "negative counter"),
    ],
)
def test_bulk_parse_leaves_what_json_rejects_to_json(tmp_path, text, words):
    from netassay.store.pastrami import _fast_columns, parse_columns

    assert _fast_columns(text.encode().rstrip()) is None
    f = tmp_path / "bad_raw_1.txt"
    f.write_text(text)
    with pytest.raises(InputError, match=r"bad_raw_1\.txt:1: ") as e:
        parse_columns(f)
    assert words in e.value.line()


def test_assess_reads_files_without_an_object_per_trial(tmp_path, monkeypatch):
    from netassay.config import AnalysisConfig
    from netassay.shared.sweep_analyse import iter_assessments
    from netassay.store import pastrami

    def no_records(*args, **kwargs):
        raise AssertionError("a TrialRecord was built on the assess path")

    monkeypatch.setattr(pastrami, "TrialRecord", no_records)
    f = tmp_path / "lab_raw_2_exp_t_1_k6.1_intel_ns.txt"
    f.write_text("[[1000, 0], [1000, 1000, 0], [1000, 990, 0]]\n[[2000, 0], [2000, 1000, 0]]\n")
    [a] = list(iter_assessments([f], AnalysisConfig()))
    assert a.table.k.tolist() == [2, 1] and a.table.plr.tolist() == pytest.approx([0.005, 0.5])


def test_file_trials_the_generator_shaped_leave_a_gap(tmp_path):
    from netassay.config import AnalysisConfig
    from netassay.shared.sweep_analyse import iter_assessments

    # 1 s runs: load 1 sent 1900 and 1800 of 2000 planned: generator limit, both excluded
    f = tmp_path / "lab_raw_2_exp_t_1_k6.1_intel_ns.txt"
    f.write_text(
        "[[1000, 0], [1000, 1000, 0], [1000, 1000, 0]]\n"
        "[[2000, 0], [1900, 1900, 0], [1800, 1800, 0]]\n"
        "[[3000, 0], [3000, 1500, 0], [3000, 1500, 0]]\n"
    )
    [a] = list(iter_assessments([f], AnalysisConfig()))
    assert a.table.k.tolist() == [2, 0, 2] and a.excluded_trials == 2
    assert a.table.reason[1] == "all 2 trials excluded: generator limit"
    j = a.to_json()
    assert j["loads"][1]["excluded"] == 2 and j["pdr_pps"] == 1000


def test_parse_many_equals_parse_columns_file_by_file(tmp_path):
    from netassay.store.pastrami import parse_columns, parse_many

    texts = [
        "[[1000, 7], [1000, 1003, 7], [1000, 990, 12]]\n[[2000, 12], [2000, 1000, 900]]\n",
        "[[1000, 0], [1000, 1000, 0]]\r\n[[3000, 0], [3000, 2000, 5], [3000, 2000, 5]]",
        "[[1500, 0], [1500, 1500, 0], [1500, 1400, 0]]\n",
    ]
    files = []
    for i, text in enumerate(texts):
        files.append(tmp_path / f"f{i}_raw_2_exp_t_1.txt")
        files[-1].write_text(text, newline="")
    for chunk in (1, 2, 64):
        got = list(parse_many(files, chunk=chunk))
        want = [parse_columns(f) for f in files]
        assert [g.source for g in got] == [str(f) for f in files]
        for g, w in zip(got, want, strict=True):
            assert g.config == w.config and g.metadata == w.metadata
            for name in ("rate_pps", "discards_before", "k", "sent", "received"):
                assert getattr(g, name).tolist() == getattr(w, name).tolist(), name


def test_parse_many_names_the_bad_file_after_the_good_ones(tmp_path):
    from netassay.store.pastrami import parse_many

    good = tmp_path / "a_raw_1.txt"
    good.write_text("[[1000, 0], [1000, 1000, 0]]\n")
    bad = tmp_path / "b_raw_1.txt"
    bad.write_text("[[2000, 0], [2000, 2000, 0]]\n[[1000, 0], [1000, 1000, 0]]\n")
    it = parse_many([good, bad])
    assert next(it).source == str(good)
    with pytest.raises(InputError, match=r"b_raw_1\.txt:2: load 1000 does not increase"):
        next(it)

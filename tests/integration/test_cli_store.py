"""import / assess / db check through the real CLI and a real SQLite file."""

import sqlite3

import pytest
from tests.conftest import netassay_argv

from netassay.store.schema import SCHEMA_VERSION


def _counts(db):
    con = sqlite3.connect(db)
    try:
        return (
            con.execute("select count(*) from experiments").fetchone()[0],
            con.execute("select count(*) from trials").fetchone()[0],
        )
    finally:
        con.close()


def test_import_twice_adds_nothing_and_check_passes(pastrami_files, tmp_path, cli):
    db = tmp_path / "r.db"
    first = cli("import", "pastrami", pastrami_files, "--db", db, check=True)
    assert "imported 6 experiment(s), 252 trial(s)" in first.stdout
    second = cli("import", "pastrami", pastrami_files / "vm", "--db", db, check=True)
    assert "imported 0 experiment(s)" in second.stdout and "2 already stored" in second.stdout
    assert _counts(db) == (6, 252)
    want = (
        f"ok (schema {SCHEMA_VERSION}, 6 experiments, 252 trials, 0 rtt runs, "
        "0 acceptance runs, 0 campaigns)"
    )
    assert want in cli("db", "check", "--db", db).stdout


def test_trials_are_append_only(pastrami_files, tmp_path, cli):
    db = tmp_path / "r.db"
    cli("import", "pastrami", pastrami_files / "vm", "--db", db, check=True)
    con = sqlite3.connect(db)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        con.execute("update trials set received = 0")
    con.close()


BAD_FILES = {
    "truncated": "[[1000, 0], [10000, 9990, 0]]\n[[2000, 0], [20000, 199",
    "notjson": "this is not json\n",
    "arity": "[[1000, 0], [10000, 9990]]\n",
    "zerosent": "[[1000, 0], [0, 0, 0]]\n",
    "empty": "",
}


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_bad_input_is_one_line_and_the_store_keeps_everything(pastrami_files, tmp_path, cli, kind):
    db = tmp_path / "r.db"
    cli("import", "pastrami", pastrami_files / "ns", "--db", db, check=True)
    before = _counts(db)
    bad = tmp_path / "in" / f"{kind}_raw_1.txt"
    bad.parent.mkdir()
    bad.write_text(BAD_FILES[kind])
    # a good file beside the bad one is not half-imported either
    (bad.parent / "good_raw_1.txt").write_text("[[1000, 0], [10000, 9990, 0]]\n")
    for args in (("import", "pastrami", bad.parent, "--db", db), ("assess", bad)):
        cp = cli(*args)
        assert cp.returncode == 3, cp.stderr
        lines = cp.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("netassay: ") and str(bad) in lines[0]
        assert "Traceback" not in cp.stderr
    assert _counts(db) == before
    assert cli("db", "check", "--db", db).returncode == 0


def test_folder_without_results(tmp_path, cli):
    (tmp_path / "notes.md").write_text("nothing here")
    cp = cli("assess", tmp_path)
    assert cp.returncode == 3 and "no result files" in cp.stderr


@pytest.mark.slow
def test_corrupted_db_is_refused_and_left_as_is(pastrami_files, tmp_path, cli):
    db = tmp_path / "r.db"
    cli("import", "pastrami", pastrami_files / "vm", "--db", db, check=True)
    raw = bytearray(db.read_bytes())
    raw[0:16] = b"garbage garbage!"
    db.write_bytes(bytes(raw))
    for args in (
        ("assess", db),
        ("db", "check", "--db", db),
        ("report", db, "--out", tmp_path / "o"),
        ("import", "pastrami", pastrami_files / "ns", "--db", db),
    ):
        cp = cli(*args)
        assert cp.returncode in (2, 4), (args, cp.stderr)
        assert len(cp.stderr.strip().splitlines()) == 1 and "Traceback" not in cp.stderr
    assert db.read_bytes() == bytes(raw)


def test_damaged_pages_fail_the_integrity_check(pastrami_files, tmp_path, cli):
    db = tmp_path / "r.db"
    cli("import", "pastrami", pastrami_files, "--db", db, check=True)
    raw = bytearray(db.read_bytes())
    mid = len(raw) // 2
    raw[mid : mid + 4096] = b"\xff" * 4096  # smash pages in the middle, keep the header
    db.write_bytes(bytes(raw))
    cp = cli("db", "check", "--db", db)
    assert cp.returncode == 4, cp.stdout + cp.stderr
    assert len(cp.stderr.strip().splitlines()) == 1


def test_missing_db_and_bad_flags(tmp_path, cli):
    cp = cli("assess", tmp_path / "nope.db")
    assert cp.returncode == 3 and "no such file" in cp.stderr
    cp = cli("assess", tmp_path / "nope.db", "--mode", "guess")
    assert cp.returncode == 2 and "unknown mode" in cp.stderr


@pytest.mark.slow
def test_mode_from_the_config_file_and_flags_over_it(pastrami_files, cli, tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('[analysis]\nmode = "published"\n')
    vm = pastrami_files / "vm" / "synth_raw_5_exp_t_1_k5.15_intel_vm_as-is.txt"
    assert '"verdict": "GOOD"' in cli("--config", f, "assess", vm, "--json", check=True).stdout
    out = cli("--config", f, "assess", vm, "--json", "--mode", "described", check=True).stdout
    assert '"verdict": "BAD"' in out


def test_config_show(cli, tmp_path):
    f = tmp_path / "c.toml"
    f.write_text("[analysis]\neta = 0.2\n")
    out = cli("--config", f, "config", "show", check=True).stdout
    assert "eta = 0.2" in out and "[sweep]" in out


@pytest.mark.slow
def test_export_csv_and_jsonl(pastrami_files, tmp_path, cli):
    import csv
    import json

    db = tmp_path / "r.db"
    cli("import", "pastrami", pastrami_files / "ns", "--db", db, check=True)
    out = tmp_path / "t.csv"
    assert "45 row(s) of trials" in cli("export", "--db", db, "--out", out, check=True).stdout
    with open(out) as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 45 and rows[0]["rate_pps"] == "300000.0"
    assert rows[0]["lost_sut_nic_rx_ring"] == "0" and rows[0]["excluded"] == "false"
    lines = cli("export", "--db", db, "--format", "jsonl", check=True).stdout.splitlines()
    assert len(lines) == 45 and json.loads(lines[-1])["load_index"] == 8
    assert json.loads(lines[0])["loss_location"] == {"sut_nic_rx_ring": 0}
    assert cli("export", "--db", db, "--format", "xls").returncode == 2
    assert json.loads(lines[0])["cpu"] == {}  # PASTRAMI's files have no CPU use per trial
    assert not any(c.startswith("busy_") for c in rows[0])


def test_export_carries_the_cpu_use_of_each_trial(tmp_path, cli):
    import csv
    import json

    from netassay.store.db import Store
    from netassay.trial.record import TrialRecord

    cpu = {"cpu0": {"user": 0.1, "system": 0.05, "irq": 0.0, "softirq": 0.6, "steal": 0.02,
                    "idle": 0.23, "busy": 0.77}}  # fmt: skip
    db = tmp_path / "c.db"
    with Store(db) as st:
        exp, _ = st.add_experiment(
            key="cpu", kind="sweep", source="netassay-testbed", label="c", config={}
        )
        st.add_trial(exp, TrialRecord(0, 0, 1000.0, 1.0, 1000, 1000, "netassay-testbed", cpu=cpu))
    out = tmp_path / "t.csv"
    cli("export", "--db", db, "--out", out, check=True)
    with open(out) as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["busy_cpu0"] == "0.77" and "cpu" not in row  # CSV: the busy share per core
    (line,) = cli("export", "--db", db, "--format", "jsonl", check=True).stdout.splitlines()
    assert json.loads(line)["cpu"] == cpu and json.loads(line)["busy_cpu0"] == 0.77


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_during_a_report_exits_128_plus_it(pastrami_files, tmp_path, cli, sig, code):
    """Ctrl-C exits 130 and SIGTERM 143, each with one line, as shells and supervisors
    expect (128 + the signal's number)."""
    import signal
    import subprocess
    import time

    db = tmp_path / "r.db"
    cli("import", "pastrami", pastrami_files, "--db", db, check=True)
    out = tmp_path / "rep"
    p = subprocess.Popen(
        [*netassay_argv(), "report", db, "--out", out],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not list(out.glob("figures/*.png")) and time.monotonic() < deadline:
        time.sleep(0.05)
    p.send_signal(getattr(signal, sig))
    _, err = p.communicate(timeout=120)
    assert p.returncode == code, err
    assert "interrupted" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("fail_on", "good_file", "code"),
    [(None, False, 0), ("bad", False, 11), ("fail", False, 11), ("inconclusive", False, 11),
     ("bad", True, 0), ("inconclusive", True, 0)],
)  # fmt: skip
def test_fail_on_gates_assess(pastrami_files, cli, fail_on, good_file, code):
    """Without --fail-on, verdicts never change the exit code; with it, a BAD (or an
    INCONCLUSIVE, for 'inconclusive') exits 11 after every result was shown."""
    bad = pastrami_files / "bare-metal" / "synth_raw_5_exp_t_1_k5.15_intel_bare-metal_as-is.txt"
    good = pastrami_files / "bare-metal" / "synth_raw_5_exp_t_1_k6.8_intel_bare-metal_as-is.txt"
    res = cli("assess", good if good_file else bad, *(["--fail-on", fail_on] if fail_on else []))
    assert res.returncode == code, res.stderr
    assert "verdict: GOOD" in res.stdout if good_file else "verdict: BAD" in res.stdout
    if code:
        assert f"--fail-on {fail_on}: 1 verdict(s) refused" in res.stderr


def test_fail_on_unknown_is_a_usage_error(pastrami_files, cli):
    res = cli("assess", pastrami_files, "--fail-on", "maybe")
    assert res.returncode == 2 and "unknown --fail-on 'maybe'" in res.stderr
    assert res.stdout == ""


def test_piped_text_never_cuts_a_line_and_says_the_marks_once(pastrami_files, cli):
    """Piped (not a terminal), a verdict's reason is one line (grep finds it whole); the
    table's marks are explained once per command, not once per experiment."""
    out = cli("assess", pastrami_files, check=True).stdout
    lines = out.splitlines()
    reason = [ln for ln in lines if ln.startswith("  verdict: BAD - saturation is entered only")]
    assert reason and all(ln.rstrip().endswith("beyond PDR@0.5%") for ln in reason), reason
    assert sum(ln.startswith("marks: ") for ln in lines) == 1 and lines[-1].startswith("marks: ")

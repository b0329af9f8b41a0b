"""The PASTRAMI-format curves made by hand (tests/data/pastrami): the verdict each was
made to get, in both modes, as the files and as a store, so that the verdict rule is
held to known answers in every clone (the real files, where NETASSAY_DATA has them,
are test_real_files.py's)."""

import json

import pytest

from netassay.config import AnalysisConfig
from netassay.shared.sweep_analyse import iter_assessments

# file, K, described, published, potential saturation index, PDR@0.5% (frames/s)
EXPECTED = [
    ("bare-metal/synth_raw_5_exp_t_1_k6.8_intel_bare-metal_as-is.txt", 5, "GOOD", "GOOD", 4,
     600e3),
    ("bare-metal/synth_raw_5_exp_t_1_k5.15_intel_bare-metal_as-is.txt", 5, "BAD", "BAD", 3,
     450e3),
    ("bare-metal/synth_raw_5_exp_t_1_k5.6_intel_bare-metal_as-is.txt", 5, "INCONCLUSIVE", "BAD",
     None, 1500e3),
    ("vm/synth_raw_5_exp_t_1_k5.15_intel_vm_as-is.txt", 5, "BAD", "GOOD", 4, 600e3),
    ("vm/exp_t_2/synth_raw_3_exp_t_2_k5.15_intel_vm_as-is.txt", 3, "GOOD", "GOOD", 6, 900e3),
    ("ns/synth_raw_5_exp_t_1_k6.8_intel_ns_nic_buf_4096.txt", 5, "GOOD", "GOOD", 8, 1200e3),
]  # fmt: skip


@pytest.mark.parametrize(("name", "k", "described", "published", "pot", "pdr"), EXPECTED)
def test_each_curve_gets_the_verdict_it_was_made_for(
    pastrami_files, name, k, described, published, pot, pdr
):
    for mode, want in (("described", described), ("published", published)):
        [a] = list(iter_assessments([pastrami_files / name], AnalysisConfig(mode=mode)))
        assert a.verdict == want, (mode, a.saturation.reason)
        assert a.saturation.potential_saturation_index == pot
        assert a.k_values == [k] and len(a.table) == 9
        assert a.pdr.rate_pps == pdr


def test_the_files_are_what_make_py_writes(pastrami_files, tmp_path):
    """The shipped files are make.py's output, byte for byte (edit make.py, not them)."""
    import runpy

    made = runpy.run_path(str(pastrami_files / "make.py"))
    for name, k, throughput in made["CURVES"]:
        want = "\n".join(made["lines"](name, k, throughput)) + "\n"
        assert (pastrami_files / name).read_text() == want, name
    assert len(list(pastrami_files.rglob("*.txt"))) == len(made["CURVES"])


def test_a_store_of_them_gives_the_same_verdicts(pastrami_files, tmp_path, cli):
    db = tmp_path / "f.db"
    cp = cli("import", "pastrami", pastrami_files, "--db", db, check=True)
    assert "imported 6 experiment(s), 252 trial(s)" in cp.stdout
    out = cli("assess", db, "--json", check=True).stdout.splitlines()
    got = {json.loads(line)["label"]: json.loads(line)["verdict"] for line in out}
    assert got == {e[0].rsplit("/", 1)[1].removesuffix(".txt"): e[2] for e in EXPECTED}

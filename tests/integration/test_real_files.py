"""The eight real PASTRAMI files (NETASSAY_DATA): the authors' labels, both modes."""

import json

import pytest

from netassay.config import AnalysisConfig
from netassay.shared.sweep_analyse import iter_assessments

# file, K, loads, as published, as described, potential saturation index
EXPECTED = [
    ("bare-metal/clab_raw_50_k5.15_intel_bare-metal_as-is.txt", 50, 9, "BAD", "BAD", 5),
    ("bare-metal/clab_raw_50_k6.8_intel_bare-metal_as-is.txt", 50, 9, "GOOD", "GOOD", 3),
    (
        "bare-metal/confronto_clab/clab_tb3_raw_50_exp_t_10_k5.6_intel_bare-metal_as-is.txt",
        50,
        9,
        "BAD",
        "INCONCLUSIVE",
        None,
    ),
    (
        "bare-metal/ebpf_30/clab_tb1_class_ebpf_raw_30_exp_t_10_k6.5_intel_bare-metal_nic_buf_4096"
        ".txt",
        30,
        16,
        "BAD",
        "BAD",
        1,
    ),
    (
        "bare-metal/run_30/clab_tb3_raw_30_exp_t_6_k5.13_intel_bare-metal_as-is.txt",
        30,
        15,
        "GOOD",
        "BAD",
        10,
    ),
    ("mazinga/mazinga_raw_50_exp_t_10_k6.8_intel_ns_nic_buf_4096.txt", 50, 9, "GOOD", "GOOD", 8),
    ("vm/clab_raw_50_k5.15_intel_vm_as-is.txt", 50, 9, "GOOD", "BAD", 6),
    ("vm/exp_t_20/clab_raw_50_exp_t_20_k5.15_intel_vm_as-is.txt", 50, 9, "GOOD", "GOOD", 7),
]


@pytest.mark.parametrize(("name", "k", "n", "published", "described", "pot"), EXPECTED)
def test_labels_in_both_modes(pastrami_real, name, k, n, published, described, pot):
    for mode, want in (("published", published), ("described", described)):
        [a] = list(iter_assessments([pastrami_real / name], AnalysisConfig(mode=mode)))
        assert a.verdict == want, (mode, a.saturation.reason)
        assert a.saturation.potential_saturation_index == pot
        assert a.k_values == [k] and len(a.table) == n


def test_assess_json_from_a_store_matches_the_authors_labels(pastrami_real, tmp_path, cli):
    db = tmp_path / "results.db"
    cli("import", "pastrami", pastrami_real, "--db", db, check=True)
    for mode, col in (("published", 3), ("described", 4)):
        out = cli("assess", db, "--mode", mode, "--json", check=True).stdout.splitlines()
        rows = {json.loads(line)["label"]: json.loads(line) for line in out}
        assert len(rows) == 8
        for exp in EXPECTED:
            label = exp[0].rsplit("/", 1)[1].removesuffix(".txt")
            r = rows[label]
            assert r["verdict"] == exp[col]
            assert r["potential_saturation_index"] == exp[5]
            for key in ("source", "saturation_index", "pdr_pps", "ndr_pps", "loads"):
                assert key in r
            assert set(r["loads"][0]) >= {
                "rate_pps",
                "k",
                "plr",
                "plr_std",
                "ucl95",
                "delta_ucl95",
                "tir",
            }
            assert len(r["loads"]) == exp[2]


def test_k56_reason_says_widen_the_range(pastrami_real):
    name = "bare-metal/confronto_clab/clab_tb3_raw_50_exp_t_10_k5.6_intel_bare-metal_as-is.txt"
    [a] = list(iter_assessments([pastrami_real / name], AnalysisConfig()))
    assert "widen" in a.saturation.reason
    # PDR is the highest load tested; loss below it is flagged, never hidden
    assert a.pdr.rate_pps == a.table.rate_pps[-2]
    assert any("non-negligible" in f for f in a.flags)


def test_k68_hand_checked_values(pastrami_real):
    # first load of the k6.8 file: 50 runs of tx 2999998 / rx 3000004..3000005: the port
    # counted 6-7 foreign frames (2.3 ppm): every run is used, with no loss (never < 0)
    [a] = list(
        iter_assessments(
            [pastrami_real / "bare-metal/clab_raw_50_k6.8_intel_bare-metal_as-is.txt"],
            AnalysisConfig(),
        )
    )
    assert a.table.plr[0] == 0 and a.table.k[0] == 50 and a.ndr.rate_pps == 300000.0
    assert a.pdr.rate_pps == 450000.0  # PLR 0.23% at 450k, 4.3% at 600k
    assert a.table.plr[1] == pytest.approx(2.300e-3, rel=1e-3)

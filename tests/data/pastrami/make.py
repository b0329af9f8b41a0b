"""Write the small PASTRAMI-format files the tests use when the real ones are absent.

    .venv/bin/python tests/data/pastrami/make.py

Each file is a load-loss curve chosen by hand (its throughput per load below), K runs
of T seconds per load, written in the format of PASTRAMI's raw result files (one JSON
array per load: ``[[rate_pps, rx_discards_before], [tx, rx, rx_discards_after], ...]``).
The runs of a load differ by a fixed pattern around the load's loss, so that its
confidence interval is not zero; every lost frame is counted by the (made-up) NIC
receive ring, as the real files' ``rx_discards`` do. Nothing here was measured: the
verdict each curve is made to get is in README.md beside this file, and
``tests/integration/test_pastrami_fixture.py`` holds netassay to it.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOADS = [300_000 + 150_000 * i for i in range(9)]  # 300k .. 1.5M, as the real files
SPREAD = (-0.10, -0.05, 0.0, 0.05, 0.10)  # each run's loss around the load's

# file (under this folder), runs per load, throughput per load in frames/s
CURVES: list[tuple[str, int, list[float]]] = [
    # GOOD: no loss up to 600k, then a cliff: throughput flat at 600k
    ("bare-metal/synth_raw_5_exp_t_1_k6.8_intel_bare-metal_as-is.txt", 5,
     [300e3, 450e3, 600e3, 600e3, 600e3, 600e3, 600e3, 600e3, 600e3]),
    # BAD: past 0.5% at 600k, but the throughput keeps rising until 1.2M (a slow rise)
    ("bare-metal/synth_raw_5_exp_t_1_k5.15_intel_bare-metal_as-is.txt", 5,
     [300e3, 450e3, 594e3, 735e3, 864e3, 950e3, 960e3, 960e3, 960e3]),
    # INCONCLUSIVE: the loss never exceeds 0.5% in the range (0.1% from 1.05M on)
    ("bare-metal/synth_raw_5_exp_t_1_k5.6_intel_bare-metal_as-is.txt", 5,
     [300e3, 450e3, 600e3, 750e3, 900e3, 1048.95e3, 1198.8e3, 1348.65e3, 1498.5e3]),
    # GOOD as published, BAD as described: the first load past the potential saturation
    # point still gains half of its added load (TIR 0.5), the later ones nothing
    ("vm/synth_raw_5_exp_t_1_k5.15_intel_vm_as-is.txt", 5,
     [300e3, 450e3, 597.6e3, 742.5e3, 817.5e3, 820e3, 820e3, 819e3, 820e3]),
    # GOOD, 3 runs of 2 s: a cliff at 900k
    ("vm/exp_t_2/synth_raw_3_exp_t_2_k5.15_intel_vm_as-is.txt", 3,
     [300e3, 450e3, 600e3, 750e3, 900e3, 900e3, 900e3, 900e3, 900e3]),
    # GOOD, in network namespaces with a 4096-frame ring: a cliff at 1.2M
    ("ns/synth_raw_5_exp_t_1_k6.8_intel_ns_nic_buf_4096.txt", 5,
     [300e3, 450e3, 600e3, 750e3, 900e3, 1050e3, 1200e3, 1200e3, 1200e3]),
]  # fmt: skip


def duration_s(name: str) -> float:
    return float(name.split("_exp_t_")[1].split("_")[0])


def lines(name: str, k: int, throughput: list[float]) -> list[str]:
    """One line per load; ``discards`` is the NIC's cumulative count across the file."""
    t = duration_s(name)
    out, discards = [], 0
    for rate, thr in zip(LOADS, throughput, strict=True):
        sent = int(rate * t)
        plr = 1 - thr / rate
        row: list[list[int]] = [[rate, discards]]
        for j in range(k):
            lost = round(sent * plr * (1 + SPREAD[j % len(SPREAD)]))
            discards += lost
            row.append([sent, sent - lost, discards])
        out.append(json.dumps(row))
    return out


def main() -> None:
    for name, k, throughput in CURVES:
        path = HERE / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines(name, k, throughput)) + "\n")
        print(path.relative_to(HERE))


if __name__ == "__main__":
    main()

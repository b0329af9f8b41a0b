"""The campaign's blocked, seeded run order and its time."""

from __future__ import annotations

from collections import Counter

from netassay import methods as registry
from netassay.campaign import order, spec
from netassay.shared.sweep_plan import TRIAL_OVERHEAD_S


def test_each_block_holds_every_cell_once_shuffled():
    slots = order.run_order(6, 4, seed=123)
    assert len(slots) == 24
    assert [s.position for s in slots] == list(range(24))
    for b in range(4):
        block = [s for s in slots if s.block == b]
        assert sorted(s.cell for s in block) == list(range(6))
        assert all(s.position // 6 == b for s in block)  # blocks run one after another
    orders = {tuple(s.cell for s in slots if s.block == b) for b in range(4)}
    assert len(orders) > 1  # shuffled anew in each block


def test_the_seed_makes_the_order():
    a = order.run_order(8, 3, seed=42)
    assert a == order.run_order(8, 3, seed=42)
    assert a != order.run_order(8, 3, seed=43)
    # pinned: random.Random(seed).shuffle is stable, so a recorded seed replays the order
    assert [s.cell for s in order.run_order(4, 2, seed=7)] == [3, 1, 0, 2, 1, 2, 3, 0]


def test_the_shuffle_is_not_biased():
    firsts = Counter(order.run_order(4, 1, seed=s)[0].cell for s in range(4000))
    assert all(800 < n < 1200 for n in firsts.values())


def test_keys_name_block_and_cell():
    s = order.Slot(position=5, block=1, cell=2)
    assert s.key("caps") == "campaign-caps-b2-c3"


def test_plan_time_and_trials():
    c = spec.parse(
        '[campaign]\nname = "t"\nrepetitions = 2\nseed = 5\n[fixed]\nrates = "100k,200k"\n'
        'runs = 3\nduration = "1s"\nsettle = "0.5s"\n[factors]\nbacklog = [1000, 10000]\n'
    )
    assert order.cell_trials(c, 0) == 6
    per_cell = 6 * (1 + 0.5 + TRIAL_OVERHEAD_S) + registry.method("sweep").cell_setup_s
    assert abs(order.cell_estimate_s(c, 0) - per_cell) < 1e-9
    p = order.plan_json(c, 5, "set in the file")
    assert p["estimate_s"] == round(4 * per_cell, 1)
    assert [o["cell"] for o in p["order"]] == [s.cell + 1 for s in order.run_order(2, 2, 5)]
    text = order.describe(c, 5, "set in the file")
    assert "seed: 5 (set in the file)" in text and "2 (full factorial) x 2" in text
    assert "trials: 24 planned" in text


def test_search_cells_are_estimated_at_their_worst_case():
    c = spec.parse(
        '[campaign]\nname = "s"\nmethod = "search"\n[fixed]\nmax_load = "300k"\n'
        'final_duration = "1s"\nduration_sum = "3s"\n[factors]\nsut_cap = ["100k", "200k"]\n'
    )
    assert order.cell_trials(c, 0) is None
    assert order.cell_estimate_s(c, 0) > registry.method("sweep").cell_setup_s + 3
    assert "whose trials are decided as they go" in order.describe(c, 1, "x")

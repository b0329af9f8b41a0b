"""The trial engine's rules on what a trial may say about the SUT (no traffic: the rules
are pure functions of the counters and the generator's result)."""

from __future__ import annotations

from netassay.counters.sink import NFT_KEY, XDP_KEY
from netassay.quality import exclusion
from netassay.traffic.generator import GenResult
from netassay.trial import engine


def _gen(**kw):
    base = dict(
        technique="af_packet_sendmmsg", planned=100_000, sent=100_000, first_tx_ns=0,
        last_tx_ns=10**9, duration_s=1.0, rate_pps=1e5, achieved_rate_pps=1e5,
        rate_error=0.0, lateness_max_ns=50_000, lateness_p99_ns=10_000, retries=0,
        stopped_by_signal=False, ok=True,
    )  # fmt: skip
    base.update(kw)
    return GenResult(**base, raw=dict(base))


def test_a_sink_count_missing_after_the_trial_is_a_fault_not_full_loss():
    # before: the count was read; after: it could not be (the sink's program died)
    w = engine._counter_faults({XDP_KEY: 10}, {}, {}, XDP_KEY, "xdp")
    assert len(w) == 1 and "after the trial" in w[0] and exclusion(w)


def test_a_sink_counter_reset_is_a_fault():
    w = engine._counter_faults({NFT_KEY: 500}, {NFT_KEY: 3}, {NFT_KEY: 0}, NFT_KEY, "nft")
    assert len(w) == 1 and "reset" in w[0] and exclusion(w)


def test_the_cross_check_sink_must_agree():
    d = {XDP_KEY: 1000, NFT_KEY: 990}
    w = engine._counter_faults({XDP_KEY: 0, NFT_KEY: 0}, d, d, XDP_KEY, "xdp+nft")
    assert len(w) == 1 and "disagree" in w[0] and exclusion(w)
    d = {XDP_KEY: 1000, NFT_KEY: 1000}
    assert engine._counter_faults({XDP_KEY: 0, NFT_KEY: 0}, d, d, XDP_KEY, "xdp+nft") == []


def test_a_truncated_trial_is_excluded_even_with_best_effort():
    cut = engine._generator_warnings(_gen(sent=60_000, achieved_rate_pps=1e5), 1e5, 1000)
    assert any(w.startswith("truncated trial") for w in cut) and exclusion(cut)
    sig = engine._generator_warnings(_gen(stopped_by_signal=True), 1e5, 1000)
    assert "stopped by a signal" in exclusion(sig)
    assert exclusion(engine._generator_warnings(_gen(), 1e5, 1000)) is None
    # a shortfall within the rate tolerance (0.1%) is said, not excluded
    small = engine._generator_warnings(_gen(sent=99_950, achieved_rate_pps=1e5), 1e5, 1000)
    assert small and exclusion(small) is None


def test_a_stall_whose_burst_fits_the_queue_is_not_excluded():
    ok = engine._generator_warnings(_gen(lateness_max_ns=5_000_000), 1e5, 1000)  # 500 frames
    assert exclusion(ok) is None
    bad = engine._generator_warnings(_gen(lateness_max_ns=5_000_000), 1e5, 400)
    assert exclusion(bad).startswith("generator stall")


def test_sink_drops_are_said_but_do_not_exclude():
    loc = {"gen_egress": 0, "unaccounted": 0}
    w = engine._loss_warnings(1000, 900, 100, loc, True)
    assert w == [w[0]] and w[0].startswith("sink drops: 100") and exclusion(w) is None


def test_over_explained_loss_and_unsettled_counts_are_faults():
    assert exclusion(engine._loss_warnings(1000, 1000, 0, {"unaccounted": -5}, True))
    assert exclusion(engine._loss_warnings(1000, 1000, 0, {"unaccounted": 0}, False))
    assert exclusion(engine._loss_warnings(1000, 1001, 0, {"unaccounted": 0}, True))
    assert exclusion(engine._loss_warnings(1000, 990, 0, {"gen_egress": 10}, True))
    assert exclusion(engine._loss_warnings(1000, 990, 0, {"unaccounted": 10}, True)) is None


def _stalled() -> list[str]:
    w = engine._generator_warnings(_gen(lateness_max_ns=42_800_000), 1e5, 1000)  # 4,280 frames
    assert exclusion(w).startswith("generator stall")
    return w


def test_a_stall_that_lost_nothing_is_a_note_and_the_trial_is_used():
    """A stall's catch-up burst can only add loss: a trial that lost nothing at this load
    proves the SUT carried it (issue: 514 kpps, sent 514000 lost 0, excluded)."""
    w = engine._judged_stall(_stalled(), {"sut_ingress": 0, "unaccounted": 0}, 0)
    assert exclusion(w) is None
    assert len(w) == 1 and w[0].startswith("stall without harm (nothing lost)")
    assert "42.8 ms late" in w[0]


def test_a_stall_with_loss_only_where_no_burst_reaches_is_used():
    # a drop rule on the forwarding path (the ground-truth drop) is not a queue
    w = engine._judged_stall(_stalled(), {"sut_forward": 300, "unaccounted": 0}, 300)
    assert exclusion(w) is None and "no burst overflows" in w[0]


def test_a_stall_with_loss_at_a_queue_stays_a_fault():
    for where in ("sut_ingress", "sut_egress", "unaccounted", "gen_egress"):
        w = engine._judged_stall(_stalled(), {where: 5}, 5)
        assert exclusion(w).startswith("generator stall"), where


def test_a_stall_beside_another_fault_stays_a_fault():
    w = [*_stalled(), "counter fault: the sink's count went back"]
    assert engine._judged_stall(w, {}, 0) == w


def test_a_stall_is_judged_at_the_queue_its_loss_is_at():
    """Backlog 1,000, the cap's bucket 4,000 (20 ms of 200 kpps): a burst of 2,000 frames
    can overflow the backlog, not the bucket. Loss at the cap alone is the cap's (the
    policer passes rate x T + bucket, burst or not); loss at the backlog may be the burst's."""
    queues = {"sut_ingress": 1000, "sut_egress": 4000}
    at_cap = engine._judged_stall(_stalled(), {"sut_egress": 700}, 700, 2000, queues)
    assert exclusion(at_cap) is None and "no burst overflows" in at_cap[0]
    at_backlog = engine._judged_stall(
        _stalled(), {"sut_ingress": 5, "sut_egress": 700}, 705, 2000, queues
    )
    assert exclusion(at_backlog).startswith("generator stall")
    big = engine._judged_stall(_stalled(), {"sut_egress": 700}, 700, 4000, queues)
    assert exclusion(big).startswith("generator stall")
    # a queue of unknown depth (an external testbed's path) is never deep enough
    assert exclusion(engine._judged_stall(_stalled(), {"sut_egress": 700}, 700, 10, None))


def test_phases_add_up_each_span_and_keep_nothing_unasked():
    import time

    spans: dict[str, float] = {}
    lap = engine.Phases(spans).lap
    time.sleep(0.01)
    lap("counters_after")
    time.sleep(0.02)
    lap("settle")
    time.sleep(0.01)
    lap("counters_after")  # the second read after a wait adds to the first
    assert set(spans) == {"counters_after", "settle"}
    assert 0.02 <= spans["counters_after"] < 0.2 and 0.02 <= spans["settle"] < 0.2
    engine.Phases(None).lap("settle")  # no breakdown asked for: nothing kept, nothing raised


def test_a_trial_closes_without_waiting_only_when_its_counts_are_whole():
    from netassay.counters.loss import locate_loss

    def split(before: dict[str, int], after: dict[str, int], sent: int):
        d = {k: after[k] - before[k] for k in after if k in before}
        loss = locate_loss(sent, sent, d.get(XDP_KEY, 0), d)
        return engine.Split(after, d, [], int(d.get(XDP_KEY, 0)), loss)

    fb = {XDP_KEY: 0, NFT_KEY: 0}
    assert engine._closed(fb, split(fb, {XDP_KEY: 100, NFT_KEY: 100}, 100), XDP_KEY, "xdp+nft")
    # the nft counter behind the XDP program has not seen its last frames yet
    late = split(fb, {XDP_KEY: 100, NFT_KEY: 97}, 100)
    assert not engine._closed(fb, late, XDP_KEY, "xdp+nft")
    # 3 frames unaccounted: they may still be on their way
    assert not engine._closed(fb, split(fb, {XDP_KEY: 97}, 100), XDP_KEY, "xdp")
    # the sink's count could not be read after the trial
    assert not engine._closed(fb, split(fb, {}, 0), XDP_KEY, "xdp")

"""The pure parts of netassay batching (methods.batching.gaps) on synthetic stamps:
gaps, bursts, burst lengths, the share in bursts, the wait for the batch."""

from __future__ import annotations

import numpy as np
import pytest

from netassay.errors import UsageError
from netassay.methods.batching import gaps as batching_gaps
from netassay.methods.batching.request import BatchingRequest

US = 1_000


def paced(n: int, spacing_ns: int, start: int = 1_000_000) -> np.ndarray:
    return start + spacing_ns * np.arange(n, dtype=np.int64)


def batched(egress: np.ndarray, period_ns: int, delay_ns: int = 3 * US) -> np.ndarray:
    """What a receiver polled every ``period_ns`` stamps: each packet arrives (after
    ``delay_ns``) and waits for the next poll, where its batch is delivered 100 ns
    apart."""
    arrive = egress + delay_ns
    poll = (arrive // period_ns + 1) * period_ns
    out = poll.copy()
    for p in np.unique(poll):
        idx = np.flatnonzero(poll == p)
        out[idx] = p + 100 * np.arange(len(idx))
    return out


def test_burst_lengths_split_at_the_threshold():
    gaps = np.array([1, 1, 100, 1, 100, 100, 1, 1, 1])  # packets: 3, 2, 1, 4
    assert batching_gaps.burst_lengths(gaps, 50).tolist() == [3, 2, 1, 4]
    assert batching_gaps.burst_lengths(np.array([]), 50).tolist() == []
    assert batching_gaps.burst_lengths(np.array([50]), 50).tolist() == [1, 1]  # not under: apart


def test_share_in_bursts_counts_packets_in_bursts_of_two_or_more():
    assert batching_gaps.share_in_bursts(np.array([3, 2, 1, 4])) == pytest.approx(9 / 10)
    assert batching_gaps.share_in_bursts(np.array([1, 1, 1])) == 0.0


def test_an_unbatched_train_arrives_as_it_was_sent():
    e = paced(1000, 100 * US)
    i = e + 3 * US + (np.arange(1000) % 3) * 200  # a few hundred ns of jitter
    r = batching_gaps.analyse(e, i, 100 * US)
    assert r["seen"] == 1000 and r["gap_ns"] == 50 * US
    assert r["share_in_bursts"] == 0.0 and r["bursts"] == 0 and r["burst_len_max"] == 1
    assert r["gap_error_p50_ns"] <= 400
    assert r["receiver_gap_p50_ns"] == pytest.approx(100 * US, abs=400)
    assert r["wait_p50_ns"] <= 400 and r["one_way_min_ns"] == 3 * US
    assert r["burst_lengths"] == {"1": 1000}


def test_a_receiver_polled_every_500us_gets_bursts_of_five_at_100us_spacing():
    e = paced(2000, 100 * US)
    r = batching_gaps.analyse(e, batched(e, 500 * US), 100 * US)
    assert r["burst_len_p50"] == 5 and r["burst_len_max"] == 5
    assert r["share_in_bursts"] == 1.0 and r["sender_share_in_bursts"] == 0.0
    assert r["period_ns"] == pytest.approx(500 * US - 400, abs=1)  # poll to poll, less 4 x 100 ns
    # each packet waits for the next poll: uniformly 0..500 us, median 250 us (less the
    # smallest one-way time the run saw, which already includes some wait)
    assert 150 * US <= r["wait_p50_ns"] <= 300 * US
    assert r["wait_max_ns"] <= 500 * US


def test_a_burst_the_sender_made_is_counted_at_the_sender_too():
    e = paced(100, 100 * US)
    e[10:20] = e[10] + 1 * US * np.arange(10)  # ten probes sent back to back
    i = e + 3 * US
    r = batching_gaps.analyse(e, i, 100 * US)
    assert r["share_in_bursts"] == pytest.approx(0.10)
    assert r["sender_share_in_bursts"] == pytest.approx(0.10)
    assert r["gap_error_p99_ns"] == 0.0 and r["wait_max_ns"] == 0.0


def test_probes_a_point_missed_are_left_out():
    e, i = paced(10, 100 * US), paced(10, 100 * US) + 3 * US
    e[2], i[5] = 0, 0
    r = batching_gaps.analyse(e, i, 100 * US)
    assert r["probes"] == 10 and r["seen"] == 8


def test_the_gap_distribution_is_kept_as_quantiles():
    e = paced(500, 100 * US)
    r = batching_gaps.analyse(e, batched(e, 300 * US), 100 * US)
    q = r["gap_quantiles"]
    assert len(q["sender"]) == len(q["receiver"]) == batching_gaps.QUANTILES
    assert q["sender"][0] == q["sender"][-1] == 100 * US
    assert q["receiver"] == sorted(q["receiver"]) and q["receiver"][0] == 100


def test_without_socket_stamps_there_are_no_socket_figures():
    e = paced(100, 100 * US)
    r = batching_gaps.analyse(e, e + 3 * US, 100 * US)
    assert not [k for k in r if k.startswith("socket_")] and "socket" not in r["gap_quantiles"]


def test_a_socket_that_reads_each_probe_as_it_arrives_sees_the_senders_gaps():
    """Ingress 3 us after egress, the socket 8 us after ingress (the echo's wake-up):
    the socket's gaps are the sender's, no burst, and the wait from ingress to socket is
    the 8 us, as it is (not less the run's smallest)."""
    e = paced(1000, 100 * US)
    i = e + 3 * US
    k = i + 8 * US + (np.arange(1000) % 2) * 300
    r = batching_gaps.analyse(e, i, 100 * US, socket=k)
    assert r["socket_seen"] == 1000 and r["seen"] == 1000
    assert r["socket_gap_p50_ns"] == pytest.approx(100 * US, abs=300)
    assert r["socket_gap_error_p50_ns"] == 300
    assert r["socket_share_in_bursts"] == 0.0 and r["socket_bursts"] == 0
    assert r["socket_burst_lengths"] == {"1": 1000} and r["socket_period_ns"] == 100 * US + 300
    assert r["socket_wait_p1_ns"] == 8 * US and r["socket_wait_max_ns"] == 8 * US + 300
    assert len(r["gap_quantiles"]["socket"]) == batching_gaps.QUANTILES


def test_a_batch_delivered_at_once_reaches_the_socket_as_one_burst():
    """A receiver polled every 500 us: the socket reads each batch as the application
    goes through it, 10 us a datagram, 20 us after its poll: the same bursts of five as
    at ingress, and each probe waits 20 us plus 10 us per probe ahead of it in its batch."""
    e = paced(2000, 100 * US)
    i = batched(e, 500 * US)
    poll = (e + 3 * US) // (500 * US)  # as batched() groups them
    rank = np.concatenate([np.arange(n) for n in np.unique(poll, return_counts=True)[1]])
    k = i - rank * 100 + 20 * US + rank * 10 * US  # the poll, + 20 us, + 10 us per probe
    r = batching_gaps.analyse(e, i, 100 * US, socket=k)
    assert r["burst_len_p50"] == r["socket_burst_len_p50"] == 5
    assert r["socket_share_in_bursts"] == 1.0 and r["socket_burst_lengths"] == {"5": 400}
    assert r["socket_period_ns"] == pytest.approx(500 * US - 40 * US)
    assert r["socket_wait_p1_ns"] == 20 * US and r["socket_wait_max_ns"] == 60 * US - 400


def test_probes_without_a_socket_stamp_are_left_out_of_the_socket_figures():
    e = paced(10, 100 * US)
    k = e + 10 * US
    k[3] = 0  # its reply was lost: no stamp came back
    r = batching_gaps.analyse(e, e + 3 * US, 100 * US, socket=k)
    assert r["seen"] == 10 and r["socket_seen"] == 9


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"flush_ns": 200 * US}, "need --gro on or --xdp on"),
        ({"threaded": "on", "xdp": "off"}, "need --gro on or --xdp on"),
        ({"xdp": "maybe"}, "bad --xdp"),
        ({"gro": "on", "gap_ns": 200 * US}, "bad --burst-gap"),
        ({"rate_pps": 1e6}, "bad --probe-rate"),
        ({"path": "macvlan"}, "bad --path"),
        ({"probe": "tcp"}, "bad --probe"),
        ({"count": 10_000_000, "rate_pps": 1000.0}, "would send for over"),
        ({"gro": "on", "busy_poll_us": 50}, "--busy-poll needs --probe udp"),
        ({"probe": "udp", "busy_poll_us": 50}, "--busy-poll needs --gro on or --xdp on"),
        ({"probe": "udp", "gro": "on", "busy_poll_us": 1001}, "bad --busy-poll 1001 us"),
    ],
)
def test_a_request_that_makes_no_sense_is_refused(kw, needle):
    with pytest.raises(UsageError, match=needle):
        BatchingRequest(**kw).validate()
    BatchingRequest().validate()  # the defaults are fine
    BatchingRequest(xdp="on", flush_ns=200 * US, defer=10).validate()  # XDP gives NAPI too
    BatchingRequest(probe="udp", xdp="on", busy_poll_us=1000).validate()
    BatchingRequest(probe="udp", gro="on", busy_poll_us=50).validate()


def test_a_cells_own_tables_go_with_it_to_the_campaign_store():
    """A campaign writes each cell's rows with the transport in its environment; the
    CREATE statements of the method's own tables (batching_runs) must go with them, or a
    campaign store that has no such table yet drops the rows."""
    from netassay.campaign.execute import _with_transport
    from netassay.store.rows import ExperimentRows

    e = ExperimentRows(
        {"id": 1, "environment_json": "{}"},
        {"batching_runs": [{"id": 1}]},
        {"batching_runs": "CREATE TABLE batching_runs (id INTEGER PRIMARY KEY)"},
    )
    out = _with_transport(e, "in-process")
    assert out.tables == e.tables and out.rows == e.rows
    assert '"cluster_transport": "in-process"' in out.experiment["environment_json"]


def test_a_cell_brief_names_its_busy_polling():
    from netassay.methods.batching.method import METHOD

    s = {"runs": 3, "probe_rate": "10k", "count": 1000}
    assert METHOD.cell_brief(s) == "3 runs x 1000 probes at 10k/s"
    assert METHOD.cell_brief({**s, "busy_poll": 50}).endswith("at 10k/s, busy-poll 50 us")


def test_the_napi_ids_a_socket_saw_are_summed_over_runs_and_said():
    """Each run stores its datagrams per NAPI id at the echo's socket; the experiment's
    summary sums them, says the busy polling it was given (0 for an experiment stored
    before the knob) and the view says both."""
    from netassay.methods.batching import run as batching_run
    from netassay.methods.batching import store as batching_store
    from netassay.methods.batching import view as batching_view

    e = paced(100, 100 * US)
    runs = [{**batching_gaps.analyse(e, e + 3 * US, 100 * US, socket=e + 9 * US), "probes": 100,
             "busy_poll_us": 50, "socket_napi_ids": ids}
            for ids in ({"8193": 100}, {"8193": 99, "0": 1})]  # fmt: skip
    config = {"path": "bridge", "rate_pps": 10_000.0, "probe": "udp", "gro": "on",
              "busy_poll_us": 50}  # fmt: skip
    s = batching_store.summary(config, runs)
    assert s.socket is not None
    assert s.busy_poll_us == 50 and s.socket.socket_napi_ids == {"0": 1, "8193": 199}
    old = batching_store.summary({k: v for k, v in config.items() if k != "busy_poll_us"}, runs[:1])
    assert old.busy_poll_us == 0
    assert "busy-polls 50 us" in batching_view.knobs_text(s)
    line = batching_view.napi_text(s.socket.socket_napi_ids)
    assert line == "1 with no NAPI instance (id 0), 199 with NAPI id 8193"
    prober = {"sent": 100}
    assert batching_run.warnings(runs[0], prober) == []
    blind = {**runs[0], "socket_napi_ids": {"0": 100}}
    assert any(w.startswith("no NAPI id") for w in batching_run.warnings(blind, prober))
    assert batching_run.warnings({**blind, "busy_poll_us": 0}, prober) == []


def test_a_runs_figures_have_the_keys_run_figures_declares():
    """RunFigures is the type of what gaps.analyse gives and batching_runs stores: every
    key it gives is declared, every required one given, and the socket's keys only with
    its stamps (a key added to the figures and not to the type fails here)."""
    from tests.typeddicts import declared

    from netassay.methods.batching.gaps import GapQuantiles, RunFigures

    req, opt = declared(RunFigures)
    quantiles, _ = declared(GapQuantiles)
    measured = {"busy_poll_us", "socket_napi_ids", "socket_napi_other"}  # (measure adds them)
    socket = {k for k in opt if k.startswith("socket_")} - measured
    e = paced(100, 100 * US)
    r = batching_gaps.analyse(e, e + 3 * US, 100 * US)
    assert set(r) == req and set(r["gap_quantiles"]) == quantiles
    r = batching_gaps.analyse(e, e + 3 * US, 100 * US, socket=e + 9 * US)
    assert set(r) == req | socket
    assert set(r["gap_quantiles"]) == quantiles | {"socket"}
    assert opt - socket == measured

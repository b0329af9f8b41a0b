"""The acceptance verdict (seed 004's rule).

A run PASSes when its loss is below ``max_loss`` (0.1%) and its mean receiver rate,
counted at the stated layer, is at least ``min_share`` (95%) of the contract. When a
run misses either and the miss is located in the test host (its own drop counters
explain the loss, the sender could not offer the rate, or a core of the host was
saturated), the run is INCONCLUSIVE with the reason "host-limited (<where>)": never a
FAIL of the link. Otherwise it FAILs.

Overall: FAIL when any run (or ramp step) FAILs; else INCONCLUSIVE when any is
INCONCLUSIVE; else PASS. Without a contract (an import that names none) the figures are
computed and the throughput is not judged: the verdict is INCONCLUSIVE, reason "no
contract given ...", unless the loss alone already fails the test (FAIL, and the reason
says no contract was given).

Per-second grading: every interval of at least ``MIN_GRADED_S`` is graded by the same
two rules; the seconds that failed are listed (they do not change the verdict, which is
on the run's means, as RNP's rule is written).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, overload

from netassay.errors import UsageError
from netassay.trial.accept import AcceptRun, AcceptTest

LAYERS = ("payload", "ip", "ethernet", "l1")
UDP_HEADER = 8
IP_HEADER = {4: 20, 6: 40}
ETHERNET_HEADER_FCS = 14 + 4
ETHERNET_MIN_FRAME = 64  # with FCS: shorter frames are padded
PREAMBLE_IFG = 8 + 12  # preamble + start delimiter, inter-frame gap
MIN_GRADED_S = 0.5  # shorter intervals (iperf3's tail) are not graded per second
EXACT_RECEIVER = "netassay-gen"  # the tool whose receiver counts every drop on its side
CPU_SATURATED = 0.95  # a core busy this share of a run, on average, is saturated

PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"

# host counters that count datagrams lost (or never sent) inside the test host, on the
# test's own path (its sockets, its namespaces' counters, its interfaces), and where
# they are; keys of AcceptRun.host are "<sender|receiver>.<counter>" and, on the
# embedded link, "veth.<device>.<counter>". The machine-wide softnet drops
# (host.softnet_dropped) are not here: other traffic on the machine counts there too.
HOST_COUNTERS = {
    "receiver.udp_rcvbuf_errors": "receiver socket buffer",
    "receiver.udp_mem_errors": "receiver UDP memory",
    "veth.l1.tx_dropped": "receiver backlog",  # the server's backlog refused the frame
    "veth.c0.tx_dropped": "link ingress backlog on this host",
    "receiver.rx_dropped": "receiver interface",
    "receiver.rx_missed_errors": "receiver NIC ring",
    "receiver.rx_fifo_errors": "receiver NIC ring",
    "receiver.packet_ring_dropped": "receiver packet ring",
    "sender.udp_sndbuf_errors": "sender socket buffer",
    "sender.tx_dropped": "sender interface",
    "sender.qdisc_dropped": "sender queue",
}
# of those, the ones that count datagrams that were never sent (no sequence number was
# lost): they explain a shortfall of the rate, not loss
NOT_SENT_COUNTERS = ("sender.udp_sndbuf_errors",)
# the embedded link's own drops (its ground truths): loss the link made, never the host's
LINK_COUNTERS = ("link.cap_dropped", "link.random_dropped")


def check_layer(layer: str) -> str:
    if layer not in LAYERS:
        raise UsageError(
            f"unknown layer '{layer}'", f"known: {', '.join(LAYERS)}", "e.g. --layer payload"
        )
    return layer


def wire_bytes(datagram_bytes: int, ip_version: int, layer: str) -> int:
    """Bytes one datagram of ``datagram_bytes`` of UDP payload occupies at ``layer``."""
    check_layer(layer)
    if layer == "payload":
        return datagram_bytes
    if ip_version not in IP_HEADER:
        raise UsageError(f"unknown IP version {ip_version}", "4 or 6", "")
    n = datagram_bytes + UDP_HEADER + IP_HEADER[ip_version]
    if layer == "ip":
        return n
    n = max(ETHERNET_MIN_FRAME, n + ETHERNET_HEADER_FCS)
    return n if layer == "ethernet" else n + PREAMBLE_IFG


def to_layer_bps(
    payload_bps: float, datagram_bytes: int | None, ip_version: int, layer: str
) -> float:
    """A UDP payload rate counted at ``layer``: per datagram, UDP + IP headers (ip),
    then the Ethernet header and FCS, padded to 64 bytes (ethernet), then preamble and
    inter-frame gap (l1). 1472-byte datagrams (1500 MTU) carry 95.7% of L1 as payload."""
    if layer == "payload":
        check_layer(layer)
        return payload_bps
    if not datagram_bytes:
        raise UsageError(
            f"cannot count the rate at layer '{layer}'",
            "the datagram size is not known",
            "use --layer payload, or give the datagram size",
        )
    return payload_bps * wire_bytes(datagram_bytes, ip_version, layer) / datagram_bytes


def fmt_bps(bps: float | None) -> str:
    if bps is None or not math.isfinite(bps):
        return "-"
    for div, unit in ((1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")):
        if abs(bps) >= div:
            return f"{bps / div:.4g} {unit}"
    return f"{bps:.4g} bit/s"


def fmt_pct(ratio: float | None) -> str:
    if ratio is None:
        return "-"
    pct = ratio * 100
    return f"{pct:.3g}%" if pct >= 0.001 or pct == 0 else f"{pct:.2e}%"


@dataclass
class RunVerdict:
    index: int
    phase: str
    verdict: str
    reason: str
    target_bps: float | None  # what the run is held to at the layer (contract or ramp step)
    throughput_bps: float | None  # mean receiver rate at the layer
    payload_bps: float | None
    lost_packets: int | None
    packets: int | None  # received + lost
    loss_ratio: float | None
    host_limited_where: str | None = None
    host_drops: dict[str, int] = field(default_factory=dict)  # counters > 0 that explain loss
    host_detail: str = ""  # what the host's counters and CPU say, and what was missed
    cpu_busy: dict[str, float] = field(default_factory=dict)  # mean busy share per core
    failed_seconds: list[dict[str, Any]] = field(default_factory=list)
    graded_seconds: int = 0


@dataclass
class Verdict:
    verdict: str
    reason: str
    layer: str
    contract_bps: float | None
    runs: list[RunVerdict]
    ramp: list[RunVerdict] = field(default_factory=list)
    failed_seconds: list[dict[str, Any]] = field(default_factory=list)
    graded_seconds: int = 0
    throughput_bps: float | None = None  # mean over runs of each run's mean, at the layer
    throughput_ci95_bps: list[float] | None = None  # Student t interval of that mean
    lost_packets: int | None = None
    loss_ratio: float | None = None
    host_limited_where: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def judge(
    test: AcceptTest,
    *,
    max_loss: float = 0.001,
    min_share: float = 0.95,
    cpu_saturated: float = CPU_SATURATED,
) -> Verdict:
    """The verdict of a test: per run, per ramp step, per second, and overall."""
    check_layer(test.layer)
    notes: list[str] = []
    rules = _Rules(test.layer, max_loss, min_share, cpu_saturated)
    runs = [rules.run(r, test.contract_bps) for r in test.runs]
    ramp = [rules.run(r, _step_target(r, test)) for r in test.ramp]
    if any(r.intervals_side != "receiver" for r in [*test.runs, *test.ramp] if r.intervals):
        notes.append("some intervals are the sender's: those seconds are not graded")
    thr = [r.throughput_bps for r in runs if r.throughput_bps is not None]
    mean = sum(thr) / len(thr) if thr else None
    lost = [r.lost_packets for r in runs if r.lost_packets is not None]
    packets = [r.packets for r in runs if r.packets is not None]
    total_lost = sum(max(0, x) for x in lost) if lost else None
    total_packets = sum(packets) if packets else None
    loss_ratio = total_lost / total_packets if total_lost is not None and total_packets else None
    failed = [s for r in [*ramp, *runs] for s in r.failed_seconds]
    wheres = sorted({r.host_limited_where for r in [*ramp, *runs] if r.host_limited_where})
    verdict, reason = _overall(test, runs, ramp, mean, loss_ratio, rules)
    return Verdict(
        verdict=verdict,
        reason=reason,
        layer=test.layer,
        contract_bps=test.contract_bps,
        runs=runs,
        ramp=ramp,
        failed_seconds=failed,
        graded_seconds=sum(r.graded_seconds for r in [*ramp, *runs]),
        throughput_bps=mean,
        throughput_ci95_bps=ci95(thr),
        lost_packets=total_lost,
        loss_ratio=loss_ratio,
        host_limited_where="; ".join(wheres) if wheres else None,
        notes=notes,
    )


def ci95(values: list[float]) -> list[float] | None:
    """Student t 95% interval of the mean of ``values`` (None below two values)."""
    n = len(values)
    if n < 2:
        return None
    from scipy import stats  # deferred: scipy (0.2 s), only with 2+ runs

    m = sum(values) / n
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1))
    half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return [m - half, m + half]


def _step_target(run: AcceptRun, test: AcceptTest) -> float | None:
    """A ramp step is held to the rate it offered, counted at the test's layer."""
    if run.offered_bps is None:
        return None
    try:
        return to_layer_bps(run.offered_bps, run.datagram_bytes, run.ip_version, test.layer)
    except UsageError:
        return None


@dataclass
class _Rules:
    layer: str
    max_loss: float
    min_share: float
    cpu_saturated: float

    @overload
    def at_layer(self, run: AcceptRun, payload_bps: float) -> float: ...

    @overload
    def at_layer(self, run: AcceptRun, payload_bps: float | None) -> float | None: ...

    def at_layer(self, run: AcceptRun, payload_bps: float | None) -> float | None:
        if payload_bps is None:
            return None
        return to_layer_bps(payload_bps, run.datagram_bytes, run.ip_version, self.layer)

    def run(self, run: AcceptRun, target: float | None) -> RunVerdict:
        out = _record(run, target)
        payload, ratio = out.payload_bps, out.loss_ratio
        if payload is not None and run.datagram_bytes is None and self.layer != "payload":
            out.reason = f"the datagram size is not known: no rate at layer {self.layer}"
            return out
        out.throughput_bps = self.at_layer(run, payload)
        self.grade_seconds(run, target, out)
        if out.throughput_bps is None or ratio is None:
            missing = "the receiver's rate" if out.throughput_bps is None else "the loss"
            out.reason = f"{missing} is not known"
            return out
        loss_ok = ratio < self.max_loss
        rate_ok = target is not None and out.throughput_bps >= self.min_share * target
        if loss_ok and rate_ok:
            out.verdict = PASS
            out.reason = (
                f"loss {fmt_pct(ratio)} < {fmt_pct(self.max_loss)} and throughput "
                f"{fmt_bps(out.throughput_bps)} >= {self.min_share:.0%} of "
                f"{fmt_bps(target)} at {self.layer}"
            )
            return out
        self.judge_miss(run, out, target, loss_ok, rate_ok)
        return out

    def misses(
        self, out: RunVerdict, target: float | None, loss_ok: bool, rate_ok: bool
    ) -> list[str]:
        """The criteria a run missed, each said with its figures."""
        said = []
        if not loss_ok:
            said.append(f"loss {fmt_pct(out.loss_ratio)} >= {fmt_pct(self.max_loss)}")
        if target is not None and not rate_ok:
            said.append(
                f"throughput {fmt_bps(out.throughput_bps)} < {self.min_share:.0%} of "
                f"{fmt_bps(target)} at {self.layer}"
            )
        return said

    def judge_miss(
        self, run: AcceptRun, out: RunVerdict, target: float | None, loss_ok: bool, rate_ok: bool
    ) -> None:
        """A run that did not pass: host-limited, failed, or not judged."""
        host = self.host_location(run, out, target, loss_ok, rate_ok)
        misses = self.misses(out, target, loss_ok, rate_ok)
        no_contract = "no contract given: throughput not judged" if target is None else ""
        if host is not None:
            out.verdict = INCONCLUSIVE
            out.host_limited_where = host[0]
            out.host_detail = f"{host[1]}; " + "; ".join(misses)
            out.reason = f"host-limited ({host[0]}): {out.host_detail}"
            if no_contract:
                out.reason += f"; {no_contract}"
        elif misses:
            out.verdict = FAIL
            link = {k.split(".", 1)[1]: int(run.host.get(k) or 0) for k in LINK_COUNTERS}
            said = [f"{k} {v:,}" for k, v in link.items() if v > 0]
            if said:
                misses.append(f"the link's own counters: {', '.join(said)}")
            out.reason = "; ".join(misses) + (f"; {no_contract}" if no_contract else "")
        else:
            out.verdict = INCONCLUSIVE
            out.reason = f"{no_contract}; loss {fmt_pct(out.loss_ratio)} < {fmt_pct(self.max_loss)}"

    def host_location(
        self, run: AcceptRun, out: RunVerdict, target: float | None, loss_ok: bool, rate_ok: bool
    ) -> tuple[str, str] | None:
        """(where, how much it explains) when every missed criterion is the host's."""
        drops = {k: int(v) for k, v in run.host.items() if k in HOST_COUNTERS and v and v > 0}
        out.host_drops = drops
        lost = max(0, out.lost_packets or 0)
        # what the link itself is known to have dropped is the link's: the host's
        # counters can explain only the rest of the loss
        link_known = sum(max(0, int(run.host.get(k) or 0)) for k in LINK_COUNTERS)
        host_total = min(
            sum(v for k, v in drops.items() if k not in NOT_SENT_COUNTERS),
            max(0, lost - link_known),
        )
        saturated = {
            c: b
            for c, b in out.cpu_busy.items()
            if b >= self.cpu_saturated and run.cpu_roles.get(c, "host") != "other"
        }
        wheres, hows = _drop_story(drops, lost, host_total)
        if saturated:
            wheres.append(
                "saturated " + ", ".join(f"{_role(run, c)}{c}" for c in sorted(saturated))
            )
            hows.append(
                ", ".join(f"{c} busy {b:.0%}" for c, b in sorted(saturated.items())) + " on average"
            )
        # the loss criterion: located in the host when the host's drops leave the link
        # below the threshold, or a core that receives was saturated (a saturated
        # sender sends less; it does not lose what it sent)
        # netassay-gen's receiver counts its own ring's drops, and every other place the
        # host can drop a datagram has a counter here: with it, loss no counter saw is
        # not the host's, however busy a core was
        receiving = [c for c in saturated if run.cpu_roles.get(c, "host") != "sender"]
        uncounted_possible = run.tool != EXACT_RECEIVER
        packets = out.packets or 0
        link_lost = max(0, lost - host_total)
        loss_in_host = loss_ok or (
            packets > 0
            and (link_lost / packets < self.max_loss or (bool(receiving) and uncounted_possible))
        )
        rate_in_host = (
            rate_ok
            or target is None
            or self.rate_in_host(run, out, target, host_total, bool(saturated), wheres, hows)
        )
        if loss_ok and rate_in_host and not wheres:
            return None
        if loss_in_host and rate_in_host and wheres:
            if receiving and uncounted_possible and not loss_ok:
                hows.append("a saturated core loses datagrams the counters may not see")
            return ", ".join(dict.fromkeys(wheres)), "; ".join(hows)
        return None

    def rate_in_host(
        self, run: AcceptRun, out: RunVerdict, target: float, host_total: int,
        saturated: bool, wheres: list[str], hows: list[str],
    ) -> bool:  # fmt: skip
        """Whether the host explains a missed rate: the sender could not offer it, a
        core was saturated, or what the host dropped would have made up the shortfall."""
        sent = _sent_payload_bps(run)
        if sent is not None and self.at_layer(run, sent) < self.min_share * target:
            wheres.append("sender did not offer the rate")
            hows.append(f"the sender sent {fmt_bps(self.at_layer(run, sent))}")
            return True
        if saturated:
            return True
        if out.host_drops and run.datagram_bytes and run.duration_s:
            extra = host_total * run.datagram_bytes * 8 / run.duration_s
            return self.at_layer(run, (out.payload_bps or 0) + extra) >= self.min_share * target
        return False

    def grade_seconds(self, run: AcceptRun, target: float | None, out: RunVerdict) -> None:
        if run.intervals_side != "receiver":
            return
        for i, iv in enumerate(run.intervals):
            if iv.seconds < MIN_GRADED_S:
                continue
            out.graded_seconds += 1
            why = []
            rate = self.at_layer(run, iv.payload_bps)
            ratio = iv.loss_ratio
            if ratio is not None and ratio >= self.max_loss:
                why.append(f"loss {fmt_pct(ratio)}")
            if target is not None and rate is not None and rate < self.min_share * target:
                why.append(f"throughput {fmt_bps(rate)}")
            if why:
                out.failed_seconds.append({
                    "run": run.index, "phase": run.phase, "interval": i,
                    "start_s": iv.start_s, "end_s": iv.end_s, "throughput_bps": rate,
                    "loss_ratio": ratio, "why": ", ".join(why),
                })  # fmt: skip


def _record(run: AcceptRun, target: float | None) -> RunVerdict:
    """A run's verdict record before it is judged: its measured figures."""
    lost = run.lost_packets
    packets = None
    if lost is not None and run.received_packets is not None:
        packets = run.received_packets + max(0, lost)
    elif run.sent_packets is not None:
        packets = run.sent_packets
    return RunVerdict(
        index=run.index, phase=run.phase, verdict=INCONCLUSIVE, reason="",
        target_bps=target, throughput_bps=None, payload_bps=run.payload_bps(),
        lost_packets=lost, packets=packets, loss_ratio=run.loss_ratio(), cpu_busy=run.cpu_busy(),
    )  # fmt: skip


def _drop_story(drops: dict[str, int], lost: int, host_total: int) -> tuple[list[str], list[str]]:
    """Where the host's counters dropped datagrams, and how much of the loss they explain."""
    wheres: list[str] = []
    hows: list[str] = []
    if not drops:
        return wheres, hows
    by_where: dict[str, int] = {}
    for k, v in drops.items():
        by_where[HOST_COUNTERS[k]] = by_where.get(HOST_COUNTERS[k], 0) + v
    explained = min(lost, host_total)
    share = f" ({explained / lost:.1%})" if lost else ""
    counted = [k for k in drops if k not in NOT_SENT_COUNTERS]
    if counted:
        hows.append(
            ", ".join(f"{k.split('.', 1)[1]} {drops[k]:,}" for k in counted)
            + f" explain {explained:,} of {lost:,} lost datagrams{share}"
        )
    hows.extend(
        f"{k.split('.', 1)[1]} {drops[k]:,} datagrams not sent"
        for k in drops
        if k in NOT_SENT_COUNTERS
    )
    wheres.extend(w for w, _ in sorted(by_where.items(), key=lambda kv: -kv[1]))
    return wheres, hows


def _role(run: AcceptRun, core: str) -> str:
    role = run.cpu_roles.get(core)
    return f"{role} " if role else ""


def _sent_payload_bps(run: AcceptRun) -> float | None:
    """What the sender really sent (payload bits/s), when the run says."""
    if not run.duration_s:
        return None
    if run.sent_bytes is not None:
        return run.sent_bytes * 8 / run.duration_s
    if run.sent_packets is not None and run.datagram_bytes:
        return run.sent_packets * run.datagram_bytes * 8 / run.duration_s
    return None


def _overall(
    test: AcceptTest,
    runs: list[RunVerdict],
    ramp: list[RunVerdict],
    mean: float | None,
    loss_ratio: float | None,
    rules: _Rules,
) -> tuple[str, str]:
    if not runs:
        return INCONCLUSIVE, "no sustained run"
    n = len(runs)
    figures = (
        f"mean throughput {fmt_bps(mean)} at {test.layer}, loss {fmt_pct(loss_ratio)}"
        f" over {n} run{'s' if n != 1 else ''}"
    )
    failed = [r for r in runs if r.verdict == FAIL]
    failed_steps = [r for r in ramp if r.verdict == FAIL]
    if failed or failed_steps:
        parts = []
        if failed:
            parts.append(f"{len(failed)} of {n} runs failed ({failed[0].reason})")
        if failed_steps:
            parts.append(f"ramp step {failed_steps[0].index} failed ({failed_steps[0].reason})")
        return FAIL, "; ".join(parts) + f"; {figures}"
    unsure = [r for r in [*ramp, *runs] if r.verdict == INCONCLUSIVE]
    if unsure:
        hosts = [r for r in unsure if r.host_limited_where]
        if hosts:
            wheres = ", ".join(dict.fromkeys(r.host_limited_where or "" for r in hosts))
            return INCONCLUSIVE, (
                f"host-limited ({wheres}) in {len(hosts)} of {len(runs) + len(ramp)} runs;"
                f" {hosts[0].phase} {hosts[0].index}: {hosts[0].host_detail}; {figures}"
            )
        if test.contract_bps is None:
            return INCONCLUSIVE, f"no contract given: throughput not judged; {figures}"
        return INCONCLUSIVE, f"{unsure[0].reason}; {figures}"
    return PASS, (
        f"every run passed: loss < {fmt_pct(rules.max_loss)} and throughput >= "
        f"{rules.min_share:.0%} of {fmt_bps(test.contract_bps)} at {test.layer}; {figures}"
    )

"""What the methods that run on the router testbed share (sweep, search, flood): the
testbed a run takes (named, built or attached), its line rate and the generator's peak
checked against the loads, the experiment's metadata and label, and one record per run
of an experiment (its start or a resume) with the environment as it was then.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from netassay import names, quality
from netassay.analysis.caps import Cap
from netassay.config import DATAPLANE_KNOBS, Config, TestbedConfig
from netassay.counters import environment
from netassay.errors import GeneratorError, UsageError
from netassay.loads import AUTO_TOP, auto_rates
from netassay.names import validate_name
from netassay.shared import doctor_reference as doctor
from netassay.store.db import Store
from netassay.store.preflight import check_store
from netassay.testbed import dataplane as testbed_dataplane
from netassay.testbed import receive, topology
from netassay.testbed import state as testbed_state
from netassay.testbed.bed import Testbed, config_from_state
from netassay.testbed.environment import capture as capture_environment
from netassay.testbed.linerate import LineRate, refuse_above
from netassay.testbed.state import Seen
from netassay.traffic import pcap as traffic_pcap
from netassay.traffic.generator import GenResult
from netassay.trial.engine import SOURCE, TrialContext
from netassay.trial.flood import flood, flood_path
from netassay.trial.hooks import Hooks, parse_command
from netassay.trial.record import TrialRecord
from netassay.units import fmt_rate

log = logging.getLogger("netassay.methods")
PEAK_MARGIN = 0.98  # loads above 98% of the measured peak are refused


def check_request(
    name: str | None, retries: int, experiment: int | None, resume: bool, what: str
) -> None:
    """What every method's request must get right before anything is touched (a sweep's
    and a search's alike): the testbed name, the repeats of a faulty trial, and
    --experiment only with --resume."""
    if name is not None:
        validate_name(name)
    if not 0 <= retries <= 10:
        raise UsageError(f"bad --retries {retries}", "0..10 repeats", "e.g. 2")
    if experiment is not None and not resume:
        raise UsageError(
            "--experiment needs --resume", f"it names the {what} to continue", "add --resume"
        )


DEFAULT_DB = "netassay.db"  # a run's store when neither --db nor the config file names one


def store_path(db: str | None) -> str:
    """The store a run writes: ``db`` (the command checked it with its flags), else
    ``DEFAULT_DB`` in the working folder, checked now: a store that cannot be opened or
    written is refused before anything is built."""
    if db is not None:
        return db
    check_store(DEFAULT_DB)
    return DEFAULT_DB


def resume_store(db: str | None, testbed_flags: Any, what: str) -> str:
    """The store a --resume continues; refused without --db, and with testbed flags (a
    resumed run keeps the knobs it started with)."""
    if db is None:
        raise UsageError("--resume needs --db", "it names the store to resume", "add --db")
    if testbed_flags:
        raise UsageError(
            f"--resume takes no testbed flags ({', '.join(sorted(testbed_flags))})",
            f"a resumed {what} runs with the knobs it started with",
            "drop those flags",
        )
    return db


def refuse_with_resume(flags: Sequence[str], what: str) -> None:
    """A resume continues the stored experiment as it was planned: a flag that would
    change the plan (or the label) is refused, never silently ignored."""
    if flags:
        raise UsageError(
            f"--resume takes no {', '.join(flags)}",
            f"a resumed {what} continues the plan and label it started with",
            f"drop {'it' if len(flags) == 1 else 'them'}, or start a new {what} without --resume",
        )


class Taken(Protocol):
    """What a run's options (``methods.base.RunOptions``) say of the testbed it runs on
    and where its loads are read: the testbed it takes (by ``--testbed``, or by name with
    its flags), the states it has read, the config file, and whether it resumes (a
    resumed run keeps its own loads)."""

    @property
    def testbed(self) -> str | None: ...
    @property
    def name(self) -> str | None: ...
    @property
    def testbed_flags(self) -> dict[str, Any]: ...
    @property
    def config(self) -> Config | None: ...
    @property
    def seen(self) -> Seen: ...
    @property
    def resume(self) -> bool: ...


def named_testbed(
    options: Taken, loads_pps: Sequence[float] | None, what: str = "load"
) -> str | None:
    """The testbed a sweep or a search runs on (its ``options``):
    ``--testbed`` names one that exists (an external testbed's knobs were set when it was
    registered). ``loads_pps``: the loads the user gave (--rates, --max-load: ``what``),
    refused now when above the ports' line rate."""
    testbed, name, flags = options.testbed, options.name, options.testbed_flags
    if testbed is None:
        return name
    validate_name(testbed)
    if name is not None and name != testbed:
        raise UsageError(f"--name {name} and --testbed {testbed} differ", "", "give one of them")
    st = options.seen.require(testbed)
    if "rx_affinity" in flags and topology.is_external(st):
        raise UsageError(
            f"testbed '{testbed}' is external: --rx-affinity cannot be given here",
            "it steers the embedded testbed's veths; real NICs need their IRQs' affinity "
            "and irqbalance set, which netassay does not do",
            "set the ports' IRQ affinity yourself (the run records it), or drop --rx-affinity",
        )
    if flags and topology.is_external(st):
        raise UsageError(
            f"testbed '{testbed}' is external: {', '.join(sorted(flags))} cannot be given here",
            "its frame size, flows and sink were set when it was registered",
            "drop those flags, or register it again with them",
        )
    if loads_pps is not None:
        check_line_rate(st, loads_pps, what)
    return testbed


def check_line_rate(state: dict[str, Any], rates_pps: Any, what: str = "load") -> None:
    """Refuse loads above the line rate of a testbed (its ``state``) whose ports report
    a link speed (an external testbed's NICs; virtual ports report none: nothing is
    refused there)."""
    line = state.get("line_rate")
    if line:
        lr = LineRate(line.get("speed_mbps"), int(line["size_bytes"]), line.get("limited_by"))
        refuse_above(list(rates_pps), lr, what)


Note = Callable[[str], None]  # a line of what is being done (stderr), before it is done


def _quiet(line: str) -> None:
    return None


def open_testbed(name: str, cfg: TestbedConfig, what: str, note: Note = _quiet) -> Testbed:
    """Attach to the testbed ``name`` left up by ``testbed up`` when its knobs are
    ``cfg``, else build one (removed at the end); ``what`` runs on it (for the error)."""
    st = testbed_state.read_state(name)
    if st is None:
        testbed_state.check_run_dir()  # its state and lock: refused before a word of building it
        note(f"building testbed '{name}' ({getattr(cfg, 'sut', 'external')}) ...")
        return Testbed(name, cfg)
    have = config_from_state(st)
    if have != cfg:
        diff = [k for k, v in asdict(cfg).items() if asdict(have).get(k) != v]
        raise UsageError(
            f"testbed '{name}' is up with other knobs ({', '.join(diff)})",
            f"{what} runs on the testbed as it is",
            f"bring it down ('netassay testbed down --name {name}') or drop those flags",
        )
    note(f"using testbed '{name}' as it is up")
    return Testbed.attach(name)


def check_peak(tb: Testbed, rates_pps: Any, note: Note = _quiet) -> float:
    """The generator's peak through ``tb``; loads above its margin are refused (and any
    above the ports' line rate)."""
    check_line_rate(tb.state, rates_pps)
    peak = probe_peak(tb, note)
    top = max(rates_pps)
    if top > PEAK_MARGIN * peak:
        raise GeneratorError(
            f"load {fmt_rate(top)} is above what the generator can send here",
            f"its peak through this testbed is {fmt_rate(peak)}",
            f"keep loads at or below {fmt_rate(PEAK_MARGIN * peak)} (or use --no-peak-check)",
        )
    return peak


def probe_peak(tb: Testbed, note: Note = _quiet) -> float:
    """The generator's peak through ``tb``, said before and after it is probed."""
    note("probing the generator's peak through it ...")
    peak = tb.probe_peak()
    note(f"generator peak: {fmt_rate(peak)}")
    return peak


REACH_PROBE_S = 1.0  # one paced probe of the max load before a search
REACH_MARGIN = 0.98  # a load the generator missed: retried at this share of what it did
REACH_TRIES = 3


def paced_reach(
    tb: Testbed, rate_pps: float, note: Note = _quiet,
    send: Callable[[float, float], GenResult] | None = None,
) -> float:  # fmt: skip
    """The highest load up to ``rate_pps`` the generator paces on this host now: a
    paced probe of ``REACH_PROBE_S`` at it, and when that is a generator limit (the
    peak at ``--rate max`` is not what a paced trial keeps on a busy host), again at
    ``REACH_MARGIN`` of what it achieved, at most ``REACH_TRIES`` times. ``send``: how
    a load is sent (a search's --bidirectional: both generators, half each), else
    ``tb.send``."""
    return reach_probe(tb, rate_pps, note, send)[0]


def reach_probe(
    tb: Testbed, rate_pps: float, note: Note = _quiet,
    send: Callable[[float, float], GenResult] | None = None,
) -> tuple[float, GenResult | None]:  # fmt: skip
    """``paced_reach`` and the generator's run at the load it settled on (None: the last
    try was not kept either), whose lateness says how tightly it was paced."""
    rate = float(rate_pps)
    for i in range(REACH_TRIES):
        res = (send or tb.send)(rate, REACH_PROBE_S)
        achieved = float(res.achieved_rate_pps or 0.0)
        if quality.rate_kind(rate, achieved) != quality.GENERATOR_LIMIT:
            return rate, res
        again = REACH_MARGIN * achieved
        then = f"; trying {fmt_rate(again)}" if i + 1 < REACH_TRIES else ""
        note(f"the generator paced {fmt_rate(achieved)} of {fmt_rate(rate)} on this host now{then}")
        rate = again
    return rate, None


AUTO_FLOOD_S = 1.0  # the flood that measures the MRR a sweep with no loads goes past


def refuse_auto_loads(cfg: Any, bidirectional: bool) -> None:
    """A sweep with no --rates chooses its loads with a flood: refused, in one line,
    where no flood can run (an external testbed, a frame mix, the nft sink, a bridge
    in backlog mode) or where its load would be another (per direction)."""
    why = None
    if topology.is_external(cfg):
        why = "an external testbed", "netassay floods only the testbeds it builds"
    elif bidirectional:
        why = "--bidirectional", "the loads are per direction, a flood's MRR is both's"
    elif cfg.imix is not None:
        why = "--imix", "a flood sends frames of one size"
    elif cfg.pcap is not None:
        why = "--pcap", "a flood sends frames of one size"
    elif cfg.sink == "nft":
        why = "--sink nft", "a flood needs the XDP sink"
    elif cfg.sut == "bridge" and cfg.rx_mode == "backlog":
        why = "a bridge in backlog mode", "its ingress takes no XDP frames to flood it with"
    if why is not None:
        raise UsageError(
            f"a sweep with no --rates on {why[0]}",
            f"no loads given means loads chosen past the SUT's MRR, which a flood measures; "
            f"{why[1]}",
            "give the loads with --rates",
        )


def auto_loads(ctx: TrialContext, note: Note = _quiet) -> tuple[tuple[float, ...], dict[str, Any]]:
    """The loads of a sweep given none (``loads.auto_rates``): a flood of
    AUTO_FLOOD_S measures the SUT's maximum receive rate, the generator's paced reach is
    probed at ``AUTO_TOP`` x it, and the loads go evenly up to the lower of the two;
    said as they are chosen, and what was measured (kept in the sweep's config)."""
    note(f"choosing the loads: a {AUTO_FLOOD_S:g} s flood measures the SUT's MRR ...")
    with flood_path(ctx.tb):
        f = flood(ctx, AUTO_FLOOD_S)
    mrr = float(f["forwarded_pps"])
    if mrr <= 0:
        raise GeneratorError(
            "the flood that measures the SUT's MRR forwarded nothing",
            f"{f['sent']} frames sent, lost at {f['loss_location'] or 'no known place'}",
            "check the testbed ('netassay testbed show') or give the loads with --rates",
        )
    top = AUTO_TOP * mrr
    bound = (
        "" if f["saturated"] else " (a lower bound: the SUT lost nothing, the generator came first)"
    )
    note(f"MRR {fmt_rate(mrr)}{bound}; probing the generator's paced reach at {fmt_rate(top)} ...")
    reach = paced_reach(ctx.tb, top, note)
    info = {"mrr_pps": mrr, "saturated": bool(f["saturated"]), "offered_pps": f["offered_pps"],
            "top_factor": AUTO_TOP, "reach_pps": reach, "top_pps": min(top, reach)}  # fmt: skip
    rates = auto_rates(mrr, reach)
    if reach < top:
        info["generator_bound"] = True
        note(
            f"the generator paces up to {fmt_rate(reach)} here now, below {AUTO_TOP:g}x the "
            f"MRR ({fmt_rate(top)}): the loads stop there; what lies above is not measured"
        )
    note(f"loads: {len(rates)} from {fmt_rate(rates[0])} to {fmt_rate(rates[-1])}")
    return rates, info


def auto_line(info: dict[str, Any]) -> str:
    """Where a sweep given no loads took them from (``auto_loads``'s record), in words."""
    mrr = fmt_rate(info["mrr_pps"]) + ("" if info.get("saturated") else " (a lower bound)")
    line = f"loads chosen here: up to {fmt_rate(info['top_pps'])}, the SUT's MRR {mrr}"
    if info.get("generator_bound"):
        return (
            f"{line}; the generator paces only up to {fmt_rate(info['reach_pps'])} here, "
            f"below {info['top_factor']:g}x the MRR, so the loads stop there"
        )
    return f"{line} x {info['top_factor']:g} (the generator paces that far here)"


def default_label(cfg: Any, name: str) -> str:
    """An experiment's label when the user gave none: what was measured, on what."""
    if topology.is_external(cfg):
        return f"external {name} IPv{cfg.ip_version} {cfg.size_bytes}B"
    truths = ""  # the ground truths set: a label that says what the SUT was made to do
    if cfg.sut_cap_pps:
        truths += f" cap {fmt_rate(cfg.sut_cap_pps)}"
    if cfg.sut_cap_reverse_pps:
        truths += f" reverse cap {fmt_rate(cfg.sut_cap_reverse_pps)}"
    if cfg.sut_drop:
        truths += f" drop {cfg.sut_drop:g}"
    truths += scale_label(cfg)
    rx = cfg.resolved().rx_affinity
    rx = f" rx-{rx}" if rx == "balanced" else ""  # bound or none: as the pinning says
    if cfg.rx_mode == "napi":  # backlog, the default, unsaid
        rx += " rx-napi"
    frames = f"imix {cfg.imix}" if cfg.imix else f"{cfg.size_bytes}B"
    if cfg.pcap:
        frames = f"pcap {os.path.basename(cfg.pcap)}"
    own = [k for k in DATAPLANE_KNOBS.get(cfg.sut, {}) if k != "sut_setup"]
    knobs = [getattr(cfg.resolved(), k) for k in own]
    sut = f"{cfg.sut}({','.join(map(str, knobs))})" if knobs else cfg.sut
    return f"{sut} {cfg.pinning}{rx} IPv{cfg.ip_version} {frames} netns{truths}"


def _count(n: int) -> str:
    """1000 as 1k, 1000000 as 1M (what a scale label says)."""
    for unit, size in (("M", 1_000_000), ("k", 1000)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def scale_label(cfg: TestbedConfig) -> str:
    """The scale knobs set, as a label says them (" 100k flows random 1k routes")."""
    out = ""
    if cfg.flows > 1 or cfg.flow_order != "incremental":
        out += f" {_count(cfg.flows)} flows" + (" random" if cfg.flow_order == "random" else "")
    if cfg.routes:
        out += f" {_count(cfg.routes)} routes"
    if cfg.nft_rules:
        out += f" {_count(cfg.nft_rules)} rules" + (" as a set" if cfg.nft_set else "")
    if cfg.conntrack == "on":
        out += " conntrack"
    if cfg.nat != "off":
        out += f" {cfg.nat}"
    return out


def scale_metadata(cfg: TestbedConfig) -> dict[str, Any]:
    """The scale knobs an experiment's metadata records (those set: an experiment
    without them had none)."""
    out: dict[str, Any] = {}
    if cfg.flow_order != "incremental":
        out.update(flow_order=cfg.flow_order, flow_seed=cfg.flow_seed)
    if cfg.count_flows:
        out["count_flows"] = True
    if cfg.routes:
        out["routes"] = cfg.routes
    if cfg.nft_rules:
        out.update(nft_rules=cfg.nft_rules, nft_set=cfg.nft_set)
    if cfg.conntrack != "off":
        out["conntrack"] = cfg.conntrack
    if cfg.nat != "off":
        out["nat"] = cfg.nat
    return out


def testbed_metadata(cfg: TestbedConfig, env: dict[str, Any]) -> dict[str, Any]:
    if topology.is_external(cfg):
        return external_metadata(cfg, env)
    return {
        "class": SUT_CLASS.get(cfg.sut, "bridging"),
        "sut": cfg.sut,
        "pinning": cfg.pinning,
        "rx_affinity": cfg.resolved().rx_affinity,
        "rx_mode": "napi" if cfg.sut == "xdp-router" else cfg.rx_mode,
        "sender": receive.technique(cfg),
        "environment": "netns",
        "kernel": env.get("kernel", ""),
        "ring": cfg.backlog if cfg.backlog is not None else env.get("netdev_max_backlog"),
        "frame_size_bytes": cfg.size_bytes,
        "ip_version": cfg.ip_version,
        "flows": cfg.flows,
        "sut_drop": cfg.sut_drop,
        "sut_cap_pps": cfg.sut_cap_pps,
        **_bucket("sut_cap", cfg.sut_cap_pps, with_rate=False, pkts=topology.cap_bucket_pkts(cfg)),
        **_bucket("sut_cap_reverse", cfg.sut_cap_reverse_pps, with_rate=True),
        "testbed": "embedded",
        **({"imix": cfg.imix_spec()} if cfg.imix else {}),
        **(
            {"pcap": traffic_pcap.describe(cfg.pcap, cfg.ip_version).metadata()} if cfg.pcap else {}
        ),
        **dataplane_metadata(cfg, env),
        **scale_metadata(cfg),
    }


# PASTRAMI's SUT classes, and the data planes' (testbed.dataplane)
SUT_CLASS = {"router": "routing", "xdp-router": "ebpf", "l3fwd": "dpdk", "testpmd": "dpdk",
             "ovs": "ovs", "exec": "user"}  # fmt: skip


def dataplane_metadata(cfg: TestbedConfig, env: dict[str, Any]) -> dict[str, Any]:
    """A data plane's knobs, its version, the checksum offload it set and where its
    forwarding thread ran ({} for the kernel's SUTs)."""
    dp = env.get("dataplane")
    if not dp:
        return {}
    knobs = {k: getattr(cfg, k) for k in DATAPLANE_KNOBS.get(cfg.sut, {})}
    own = dp.get("exec") or {}
    return {
        "dataplane": {
            **knobs,
            **({"sut_setup_sha256": own["sha256"]} if own.get("sha256") else {}),
            "version": dp.get("version"),
            "cpu": dp.get("cpu"),
            "offloads": dp.get("offloads"),
            "wire": dp.get("wire_qdisc") or "pfifo",
            **({"cap": dp["cap"]} if dp.get("cap") else {}),
            # Open vSwitch: its flow table's size as it reported it once the rules loaded
            **(
                {"table_flows": ovs["table_flows"]}
                if (ovs := dp.get("ovs") or {}).get("table_flows") is not None
                else {}
            ),
        }
    }


def _bucket(
    key: str, pps: float | None, with_rate: bool, pkts: int | None = None
) -> dict[str, Any]:
    """A cap's policer bucket in frames as the experiment records it (``pkts``, else as
    netassay sizes the kernel's policer; and its rate, ``with_rate``); nothing without
    the cap."""
    if not pps:
        return {}
    rate = {f"{key}_pps": pps} if with_rate else {}
    return {**rate, f"{key}_bucket_pkts": pkts or topology.cap_bucket_of(pps)}


def external_metadata(cfg: Any, env: dict[str, Any]) -> dict[str, Any]:
    """An external testbed's experiment: the SUT is whatever sits between its ports."""
    ext = env.get("external", {})
    rx_rings = ext.get("ports", {}).get("rx", {}).get("rings", {}).get("current", {})
    return {
        "class": "external",
        "sut": "external",
        "pinning": "none",
        "environment": "external",
        "kernel": env.get("kernel", ""),
        "ring": rx_rings.get("RX", ""),  # the rx NIC's receive ring, when it has one
        "frame_size_bytes": cfg.size_bytes,
        "ip_version": cfg.ip_version,
        "flows": cfg.flows,
        "sut_drop": 0.0,
        "sut_cap_pps": None,
        "testbed": "external",
        "ports": f"{cfg.tx} -> {cfg.rx}",
        "line_rate_pps": (ext.get("line_rate") or {}).get("pps"),
    }


def installed_caps(metadata: dict[str, Any], bidirectional: bool) -> list[Cap]:
    """The caps netassay installed on an experiment's SUT (its metadata) as they bind its
    bounds: one direction, the forward cap; both at once (loads the aggregate), each
    direction's cap twice. Each with its policer's bucket (as recorded; a store from
    before it was recorded: as netassay sizes it)."""
    caps = []
    for key, flag, both_only in (
        ("sut_cap", "--sut-cap", False), ("sut_cap_reverse", "--sut-cap-reverse", True),
    ):  # fmt: skip
        pps = metadata.get(f"{key}_pps")
        if not pps or (both_only and not bidirectional):
            continue
        bucket = metadata.get(f"{key}_bucket_pkts") or topology.cap_bucket_of(float(pps))
        caps.append(Cap(flag, float(pps), int(bucket), 2 if bidirectional else 1))
    return caps


def signalled(rec: TrialRecord) -> bool:
    return bool(rec.counters.get("generator", {}).get("stopped_by_signal"))


def start_experiment(
    store: Store,
    ctx: TrialContext,
    *,
    kind: str,
    name: str,
    label: str,
    config: dict[str, Any],
    metadata: dict[str, Any],
    peak: float | None,
) -> tuple[int, TrialContext]:
    """A new experiment of ``kind`` run on testbed ``name``, with this run recorded and
    the environment as it is now, and the newest doctor run on this host and testbed
    settings by reference; (its id, the context whose trials belong to the run)."""
    env = capture_environment(ctx.tb)
    if peak is not None:
        env["generator_peak_pps"] = peak
    checked = doctor.newest(ctx.tb.cfg)  # this host's newest doctor run, by reference
    if checked is not None:
        metadata = {**metadata, "doctor": checked}
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    exp_id, _ = store.add_experiment(
        key=f"{kind}-{name}-{stamp}-{secrets.token_hex(3)}",
        kind=kind,
        source=SOURCE,
        label=label,
        config=config,
        metadata={**testbed_metadata(ctx.tb.cfg, env), **_built(ctx.tb.state), **metadata},
        environment=env,
    )
    return exp_id, replace(ctx, run_id=store.add_run(exp_id, env, resumed=False))


def _built(state: dict[str, Any]) -> dict[str, Any]:
    """What the scale knobs built (testbed.scale): the FIB's layout, the rules, the
    conntrack table's limit, each load's time; {} when none was set."""
    return {"scale": state["scale"]} if state.get("scale") else {}


def restart_experiment(
    store: Store,
    ctx: TrialContext,
    experiment_id: int,
    what: str,
    progress: Callable[[str], None] | None = None,
) -> tuple[TrialContext, list[str]]:
    """Record this run of a resumed experiment with the environment now; what changed
    since it started is recorded, logged and said (``what``: 'sweep', 'search')."""
    env = capture_environment(ctx.tb)
    changed = environment.changes(store.experiment(experiment_id).environment, env)
    notes = []
    if changed:
        env["changed_since_start"] = changed
        msg = f"the environment changed since this {what} started: {'; '.join(changed)}"
        notes.append(msg)
        log.warning(msg)
        if progress:
            progress(f"note: {msg}")
    return replace(ctx, run_id=store.add_run(experiment_id, env, resumed=True)), notes


def new_run(
    options: Any, cfg: TestbedConfig, retries: int, what: str, validate: Callable[[], None]
) -> tuple[str, str, Any, int]:
    """What a new run of a method that does not resume (burst, recovery, reconfig) takes
    from its options, checked before anything is touched: the request's checks
    (``validate``) after the options', then its testbed name, store, knobs (validated)
    and retries (``retries`` unless --retries)."""
    tries = retries if options.retries is None else options.retries
    check_request(options.name, tries, None, False, what)
    validate()
    name = options.name or names.DEFAULT_NAME
    testbed = running_config(name, cfg, options)
    topology.validate(testbed)
    return name, options.db or DEFAULT_DB, testbed, tries


def running_config(name: str, cfg: TestbedConfig, options: Taken) -> Any:
    """The knobs a run (its ``options``) takes on testbed ``name``: those
    of the testbed of that name that is up when no testbed flag is given, else ``cfg``
    (defaults < file < flags). The state is the one the run's flags were read against."""
    st = options.seen.read(name)
    if st is not None and not options.testbed_flags:
        return config_from_state(st)
    return cfg


HOOK_OPTIONS = ("hook_before", "hook_after")  # the run options of a method with hooks


def hooks_of(options: Any) -> Hooks | None:
    """The hooks a run was given (``--hook-before``, ``--hook-after``), checked; None
    without any. Their namespace is the testbed's, set when it is open (``with_hooks``)."""
    before, after = options.hook_before, options.hook_after
    if not before and not after:
        return None
    return Hooks(
        parse_command(before, "--hook-before") if before else None,
        parse_command(after, "--hook-after") if after else None,
    )


def with_hooks(ctx: TrialContext, hooks: Hooks | None) -> TrialContext:
    """``ctx`` whose trials run ``hooks`` in the testbed's SUT namespace (a testbed
    without one, an external testbed: netassay's own), told of its data plane
    (``testbed.dataplane.command_env``)."""
    if not hooks:
        return ctx
    netns = ctx.tb.state.get("namespaces", {}).get("sut")
    env = testbed_dataplane.command_env(ctx.tb.state)
    return replace(ctx, hooks=replace(hooks, netns=netns, testbed=ctx.tb.name, env=env))

"""``netassay testbed show``: topology, knobs and environment of a testbed that is up."""

from __future__ import annotations

import os
import platform
from typing import Any

from netassay import names
from netassay.testbed import dataplane, linerate, receive, scale, state, topology, xdp_router
from netassay.units import fmt_rate


def describe(name: str) -> dict[str, Any]:
    names.validate_name(name)
    st = state.require_state(name)
    present = set(topology.list_netns())
    st["alive"] = {role: ns in present for role, ns in st["namespaces"].items()}
    st["environment"] = {
        "kernel": platform.release(),
        "cpu_count": os.cpu_count(),
        "netdev_max_backlog": state.read_sysctl("net.core.netdev_max_backlog"),
        "sysctls_original": state.saved_sysctls(),
    }
    return st


def render(info: dict[str, Any]) -> str:
    if topology.kind_of(info) == "external":
        return render_external(info)
    ns = info["namespaces"]
    cfg = info["config"]
    t = info.get("target", {})
    sut = {
        "router": f"kernel IPv{cfg['ip_version']} router",
        "xdp-router": f"XDP IPv{cfg['ip_version']} router",
        "ovs": "Open vSwitch, userspace datapath",
        "testpmd": "DPDK testpmd",
        "l3fwd": f"DPDK l3fwd, IPv{cfg['ip_version']} LPM",
        "exec": "the data plane --sut-setup starts",
    }.get(cfg["sut"], "Linux bridge")
    lines = [
        f"testbed '{info['name']}' ({sut})",
        f"  {ns['tg']} [{names.TG_DEV}, qdisc {_wire(info)}]"
        f" --veth--> {ns['sut']} [{names.SUT_IN} -> {names.SUT_OUT}]"
        f" --veth--> {ns['sink']} [{names.SINK_DEV}]",
        f"  traffic: {t.get('src')} -> {t.get('dst')} via MAC {t.get('dst_mac')}"
        f" from {t.get('dev')} in {t.get('netns')}",
        "  namespaces alive: "
        + ", ".join(f"{r}={'yes' if a else 'NO'}" for r, a in info["alive"].items()),
        "  knobs: " + ", ".join(f"{k}={v}" for k, v in cfg.items() if v is not None),
        f"  pinning: generator CPU {info.get('gen_cpu')}, SUT receive {_rx(info)}"
        f" (RPS {info.get('rps') or 'unset'})",
        *([f"  pinning chosen: {info['pinning_reason']}"] if info.get("pinning_reason") else []),
        *_balanced(info),
        f"  sysctls set: {info.get('sysctls') or 'none'}",
        f"  receive: {receive.describe(info)}",
        *_xdp_lines(info.get("xdp_router")),
        *dataplane.describe(info),
        *scale.describe(info),
    ]
    env = info["environment"]
    lines.append(
        f"  environment: kernel {env['kernel']}, {env['cpu_count']} CPUs,"
        f" netdev_max_backlog {env['netdev_max_backlog']}"
        + (f" (original {env['sysctls_original']})" if env["sysctls_original"] else "")
    )
    return "\n".join(lines)


def _rx(info: dict[str, Any]) -> str:
    """Where the SUT's receive work runs (its --rx-affinity and CPUs)."""
    affinity = info["config"].get("rx_affinity", "auto")
    cpus = info.get("sut_cpus")
    if cpus is None:  # a testbed built before --rx-affinity: its one SUT CPU
        cpus = [] if info.get("sut_cpu") is None else [info["sut_cpu"]]
    if not cpus:
        return f"work not steered ({affinity}: on the CPU that sends into {names.SUT_IN})"
    where = f"CPU {cpus[0]}" if len(cpus) == 1 else "CPUs " + ",".join(map(str, cpus))
    return f"{where} ({affinity})"


def _balanced(info: dict[str, Any]) -> list[str]:
    """What --rx-affinity balanced changes of the pinning's placement."""
    if info["config"].get("rx_affinity") != "balanced":
        return []
    return [
        "  rx affinity: balanced: RPS spreads the SUT's receive work over every CPU (each"
        " flow hashed to one) in place of the pinning's SUT CPU; the generator stays put"
    ]


def _wire(info: dict[str, Any]) -> str:
    dp = info.get("dataplane") or {}
    if dp.get("wire_qdisc"):
        return f"{dp['wire_qdisc']} limit {dp['ring_pkts'] - xdp_router.VETH_RING}"
    x = info.get("xdp_router")
    if x:
        return f"{x['wire_qdisc']} limit {x['ring_pkts'] - xdp_router.VETH_RING}"
    rx = info.get("receive")
    return f"{rx['wire_qdisc']} limit {rx['wire_pkts']}" if rx else " ".join(topology.WIRE_QDISC)


def _xdp_lines(x: dict[str, Any] | None) -> list[str]:
    """Where the XDP router runs and what sits in front of it."""
    if not x:
        return []
    where = (
        f"its NAPI thread {x['napi_thread']} pinned to CPU {x['cpu']}"
        if x.get("napi_thread")
        else "on the generator's CPU, inside its send call"
    )
    return [
        f"  XDP router: program {x['prog_id']} ({x['object']}) on {names.SUT_IN}, runs {where}",
        f"  XDP router's receive ring: {x['ring_pkts']} frames ({x['wire_qdisc']} on {names.TG_DEV}"
        f" in front of veth's {xdp_router.VETH_RING}); its overflow is SUT ingress loss",
    ]


def render_external(info: dict[str, Any]) -> str:
    """``testbed show`` of an external testbed (``testbed.external``)."""
    cfg = info["config"]
    line = info.get("line_rate") or {}
    lr = linerate.LineRate(
        line.get("speed_mbps"), line.get("size_bytes", cfg["size_bytes"]), line.get("limited_by")
    )
    peak = info.get("generator_peak_pps")
    where = f"netns {cfg['netns']}" if cfg.get("netns") else "the host's namespace"
    return "\n".join(
        [
            f"testbed '{info['name']}' (external: a SUT netassay does not manage)",
            f"  netassay-gen -> {cfg['tx']} ==> SUT ({cfg['dst_mac']}) ==> {cfg['rx']}"
            f" -> XDP sink ({where})",
            f"  traffic: {cfg['src']} -> {cfg['dst']}, IPv{cfg['ip_version']}, "
            f"{cfg['size_bytes']}-byte frames, {cfg['flows']} flow(s), generator "
            + (f"on CPU {cfg['gen_cpu']}" if cfg.get("gen_cpu") is not None else "not pinned"),
            *(_port_line(r, info["ports"][r]) for r in ("tx", "rx") if r in info.get("ports", {})),
            f"  {lr.describe()}",
            "  generator peak through the path: "
            + (
                f"{fmt_rate(peak)} (at registration, {info.get('generator_peak_utc')})"
                if peak
                else "not measured"
            ),
            f"  path check: {_path_line(info.get('path_check'))}",
            *_reverse_line(info.get("reverse_path_check")),
            f"  SUT counters: {cfg.get('sut_counters_cmd') or 'none (--sut-counters-cmd)'}",
        ]
    )


def _port_line(role: str, p: dict[str, Any]) -> str:
    speed = f"{p['speed_mbps']} Mb/s" if p.get("speed_mbps") else "speed unknown"
    kind = f" ({p['kind']})" if p.get("kind") else ""
    return f"  port {role}: {p['dev']}{kind} mac {p['mac']} mtu {p['mtu']}, {speed}"


def _path_line(pc: dict[str, Any] | None) -> str:
    if not pc:
        return "not run"
    head = "ok" if pc.get("ok") else "FAILED"
    text = (
        f"{head}: {pc.get('came_back')} of {pc.get('sent')} probes came back, "
        f"{pc.get('hops')} hop(s) ({pc.get('utc')})"
    )
    return text + (f": {pc['problem']}" if pc.get("problem") else "")


def _reverse_line(pc: dict[str, Any] | None) -> list[str]:
    """The reverse path check of the last run, when it was --bidirectional."""
    return [f"  reverse path check (--bidirectional): {_path_line(pc)}"] if pc else []

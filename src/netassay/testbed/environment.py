"""The environment of an experiment, captured once: what could change the numbers
(the host's facts from ``counters.environment`` and the testbed's own record)."""

from __future__ import annotations

import os
import platform
from typing import Any

from netassay import __version__, names
from netassay.config import TestbedConfig
from netassay.counters import environment
from netassay.testbed import dataplane, receive, topology
from netassay.testbed import state as testbed_state
from netassay.testbed.bed import Testbed


def capture(tb: Testbed) -> dict[str, Any]:
    """Kernel, CPUs, cmdline, irqbalance, RPS masks, qdiscs, offloads, sysctls, versions."""
    env: dict[str, Any] = {
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "boot_id": environment.read_text("/proc/sys/kernel/random/boot_id"),
        "machine": platform.machine(),
        "cpu_model": environment.cpu_model(),
        "cpu_count": os.cpu_count(),
        "cmdline": environment.read_text("/proc/cmdline"),
        "isolcpus": environment.read_text("/sys/devices/system/cpu/isolated"),
        "irqbalance": environment.irqbalance_running(),
        "irq_default_affinity": environment.read_text("/proc/irq/default_smp_affinity"),
        "netdev_max_backlog": int(testbed_state.read_sysctl("net.core.netdev_max_backlog")),
        "netdev_budget": int(testbed_state.read_sysctl("net.core.netdev_budget")),
        "sysctls_touched": dict(tb.state.get("sysctls", {})),
        "sysctls_original": testbed_state.saved_sysctls(),
        "testbed": {
            "name": tb.name,
            "config": tb.state.get("config"),
            "namespaces": tb.state.get("namespaces"),
            "target": tb.state.get("target"),
            "gen_cpu": tb.state.get("gen_cpu"),
            "sut_cpu": tb.state.get("sut_cpu"),
            "sut_cpus": tb.state.get("sut_cpus"),  # where --rx-affinity steered its receive
            "rps": tb.state.get("rps"),
            "wire": _wire(tb.state),
            "receive": receive.describe(tb.state),  # the SUT's receive mode (--rx-mode)
            "sender": receive.technique(tb.cfg) if isinstance(tb.cfg, TestbedConfig) else None,
        },
        "namespaces": {
            role: environment.ns_details(ns) for role, ns in tb.state["namespaces"].items()
        },
        "versions": {
            "netassay": __version__,
            "python": platform.python_version(),
            "iproute2": environment.tool_version(["ip", "-V"]),
            "nftables": environment.tool_version(["nft", "--version"]),
            "ethtool": environment.tool_version(["ethtool", "--version"]),
            "netassay-gen": environment.generator_version(),
        },
    }
    env.update(topology.kind_environment(tb))  # a testbed kind's own record (external: its NICs)
    env.update(dataplane.environment(tb.state))  # a data plane's (Open vSwitch, DPDK, the user's)
    return env


def _wire(state: dict[str, Any]) -> str:
    """The generator's wire into the SUT: the qdisc on its veth, for socket buffers (XDP
    live frames go past it, into the SUT's NAPI ring)."""
    rx = state.get("receive") or state.get("xdp_router")
    qdisc = f"{rx['wire_qdisc']}" if rx else " ".join(topology.WIRE_QDISC)
    return f"{names.TG_DEV} (qdisc {qdisc}) -> {names.SUT_IN} (veth)"

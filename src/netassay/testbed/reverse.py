"""The embedded testbed's reverse direction (``sweep --bidirectional``): the sink's
namespace sends back to the generator's address, where an XDP sink counts it. (An
external testbed sets its own up, ``testbed.external.reverse_path``, and keeps it in
its state's ``reverse``, which ``reverse_target`` and ``reverse_sink`` return.)

Nothing is built for it: the router routes and the bridge forwards both ways already
(static neighbours and FDB entries on both sides). ``reverse_target`` is where the
reverse generator sends; ``reverse_path`` sets up its side as the forward one's when the
trials start (``trial.engine.trials_on``), on a testbed built now or left up before.
"""

from __future__ import annotations

from typing import Any

from netassay import names
from netassay.proc import run
from netassay.testbed import receive
from netassay.testbed.topology import WIRE_QDISC


def reverse_target(state: dict[str, Any]) -> dict[str, str]:
    """Where the reverse generator sends from and to: from the sink's namespace, on its
    veth, back to the generator's address (through the router, or across the bridge)."""
    if "reverse" in state:  # a kind that sets its own up (external: ``reverse_path``)
        return dict(state["reverse"]["target"])
    a, macs = state["addressing"], state["macs"]
    bridge = state["config"].get("sut") == "bridge"
    return {
        "netns": state["namespaces"]["sink"],
        "dev": names.SINK_DEV,
        "dst_mac": macs[names.TG_DEV] if bridge else macs[names.SUT_OUT],
        "src": a["sink"],
        "dst": a["tg"],
    }


def reverse_sink(state: dict[str, Any]) -> tuple[str | None, str]:
    """Where the reverse direction's XDP sink counts: (network namespace, port); the
    generator's veth here, the tx port on an external testbed."""
    if "reverse" in state:
        return state["reverse"]["sink"]["netns"], state["reverse"]["sink"]["dev"]
    return state["namespaces"]["tg"], names.TG_DEV


def reverse_path(state: dict[str, Any]) -> None:
    """The reverse direction set up as the forward one: the reverse generator's wire,
    the same queueing qdisc (``WIRE_QDISC``) on the sink's veth, so that a frame the SUT
    refuses is lost on the link (in napi mode the SUT's other veth polled by NAPI on
    the same CPU and the sink's wire a head-drop queue, ``receive.reverse_napi``); and
    the SUT's receive work on its other veth steered to the CPUs the forward
    direction's is (the RPS mask ``topology._pinning`` wrote), not left on the reverse
    generator's CPU. Idempotent; removed with the namespaces."""
    sink, sut = state["namespaces"]["sink"], state["namespaces"]["sut"]
    rx = state.get("receive")
    if rx is not None:  # napi mode: sut1 polled as sut0 is, the sink's wire as tg0's
        receive.reverse_napi(sink, sut, rx)
    else:
        run(["tc", "-n", sink, "qdisc", "replace", "dev", names.SINK_DEV, "root", *WIRE_QDISC])
    for mask in state.get("rps", {}).values():
        path = f"/sys/class/net/{names.SUT_OUT}/queues/rx-0/rps_cpus"
        run(["tee", path], netns=sut, input_text=f"{mask}\n")

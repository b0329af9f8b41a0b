"""What an acceptance test asks for: the contract at its layer, the sustained runs and the
ramp, the link (embedded, with its ground truths, or a remote server), the sender; and
the scenario that places the test host's work (seed 004's matrix: client and server
CPUs, rx/tx steering, socket buffers, MTU, a busy receiver). Each field is declared
once (``params``): its flag (a scenario's knobs have none: they come from a scenario
file), help, parser and range."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netassay import names
from netassay.analysis.acceptance import LAYERS, to_layer_bps
from netassay.params import (
    DURATION,
    RATE,
    as_text,
    buffer_bytes,
    choice,
    cpu,
    flag,
    fraction,
    param,
    whole,
)
from netassay.testbed import link
from netassay.units import parse_duration, parse_rate

SENDERS = ("iperf3", "netassay-gen")
_RATE = as_text(parse_rate)
_DUR = as_text(parse_duration)


def _knob(key: str, help: str, default: Any, check: Any, ordinal: bool = False) -> Any:
    """A scenario knob: a campaign key passed in the cell's scenario file, no flag."""
    return param("", help, default=default, check=check, key=key, ordinal=ordinal, scenario=True)


# the run options its command takes (methods.base.RunOptions)
RUN_OPTIONS = ("db", "name", "label")


@dataclass(frozen=True)
class Scenario:
    """Where the test host's work runs and how it is set up (seed 004's matrix)."""

    name: str = ""
    client_cpu: int | None = _knob("client_cpu", "The sender's CPU.", 0, cpu)
    server_cpu: int | None = _knob("server_cpu", "The receiver's CPU.", 1, cpu)
    # rxN: the server's receive softirq (RPS on veth)
    rx_cpu: int | None = _knob("rx_cpu", "rxN: the receive softirq's CPU.", None, cpu)
    # txN: the transmitted frames' softirq (RPS/XPS on veth)
    tx_cpu: int | None = _knob("tx_cpu", "txN: the transmit softirq's CPU.", None, cpu)
    # bytes, iperf3 -w (both ends); None: kernel default
    socket_buffer: int | None = _knob(
        "socket_buffer", "Socket buffers (iperf3 -w), e.g. 4M.", None, buffer_bytes, True
    )
    mtu: int = _knob("mtu", "The link's MTU.", 1500, whole(576, 65535), True)
    # stress-ng CPU workers pinned to the receiver's CPU
    busy_receiver: int = _knob(
        "busy_receiver", "stress-ng workers on the receiver's CPU.", 0, whole(0, 64), True
    )

    def label(self) -> str:
        if self.name:
            return self.name
        rx = "-" if self.rx_cpu is None else self.rx_cpu
        tx = "-" if self.tx_cpu is None else self.tx_cpu
        return f"rx{rx}/tx{tx}"


@dataclass(frozen=True)
class AcceptRequest:
    """One acceptance test: the contract, the runs, the link and the sender (units
    parsed); the scenario places the test host's work (seed 004's matrix)."""

    contract_bps: float = param(
        "--contract", "Contracted rate in bit/s at --layer, e.g. 400M.", parse=_RATE,
        check=RATE, ordinal=True, key="contract", example="100M",
    )  # fmt: skip
    layer: str = param(
        "--layer",
        "Layer the contract and the throughput are counted at: payload (UDP payload, as "
        "iperf3 counts) | ip | ethernet (frames with FCS, as Y.1564 and MEF count) | l1 "
        "(with preamble and gap).",
        default="ethernet", check=choice(*LAYERS),
    )  # fmt: skip
    sender: str = param(
        "--sender", "iperf3 | netassay-gen (with its receiver).", default="iperf3",
        check=choice(*SENDERS),
    )  # fmt: skip
    runs: int = param(
        "--runs", "Sustained runs (K).", default=3, cli=int, check=whole(1, 1000), ordinal=True
    )
    duration_s: float = param(
        "--duration", "Length of each sustained run, e.g. 60s.", default=10.0, parse=_DUR,
        check=DURATION, ordinal=True, show="10s",
    )  # fmt: skip
    ramp_step_s: float = param(
        "--ramp-step", "Length of each ramp step (25/50/75/100%).", default=2.0, parse=_DUR,
        check=DURATION, ordinal=True, show="2s",
    )  # fmt: skip
    ramp: bool = param(
        "--no-ramp", "Skip the ramp.", default=True, cli=bool, negate=True, check=flag
    )
    embedded: bool = param(
        "--embedded", "Test a known link built here (client, link, server).", default=True,
        cli=bool, campaign=False,
    )  # fmt: skip
    link_cap_bps: float | None = param(
        "--link-cap",
        "Embedded link: ground-truth capacity, a shaper (tbf) counting L1, e.g. 440M.",
        default=None, parse=_RATE, check=RATE, ordinal=True, testbed=True,
    )  # fmt: skip
    link_drop: float = param(
        "--link-drop", "Embedded link: ground-truth random loss, e.g. 0.003.", default=0.0,
        cli=float, check=fraction(0.0, 1.0), ordinal=True, testbed=True,
    )  # fmt: skip
    server: str | None = param(
        "--server", "A remote iperf3 server (iperf3 -s there) to test toward.", default=None,
        campaign=False, metavar="HOST",
    )  # fmt: skip
    allow_any_server: bool = param(
        "--allow-any-server",
        "Allow a --server outside 198.18.0.0/15 and 2001:2::/48 (a link you own).",
        default=False, cli=bool, campaign=False,
    )  # fmt: skip
    ip_version: int = param(
        "--ip", "IP version of the test traffic: 4 | 6.", default=4, cli=int,
        check=choice(4, 6),
    )  # fmt: skip
    datagram_bytes: int | None = param(  # None: the largest that fits the MTU
        "--datagram", "UDP payload per datagram (default: fills the MTU).", default=None,
        cli=int, check=whole(16, 65507), ordinal=True,
    )  # fmt: skip
    scenario: Scenario = field(default_factory=Scenario, metadata={"nested": Scenario})
    # a --scenarios matrix: one test per scenario, in order, each in place of ``scenario``
    scenarios: tuple[Scenario, ...] = ()
    db: str | None = None
    name: str = names.ACCEPT_NAME
    label: str = ""

    def datagram(self) -> int:
        if self.datagram_bytes:
            return self.datagram_bytes
        return self.scenario.mtu - (28 if self.ip_version == 4 else 48)

    def payload_bps(self, share: float = 1.0) -> float:
        """The payload rate that is ``share`` of the contract at the stated layer."""
        per_payload = to_layer_bps(1.0, self.datagram(), self.ip_version, self.layer)
        return self.contract_bps * share / per_payload

    def testbed(self) -> link.AcceptTestbedConfig:
        s = self.scenario
        return link.AcceptTestbedConfig(
            ip_version=self.ip_version,
            mtu=s.mtu,
            link_cap_bps=self.link_cap_bps,
            link_drop=self.link_drop,
            client_cpu=s.client_cpu,
            server_cpu=s.server_cpu,
            rx_cpu=s.rx_cpu,
            tx_cpu=s.tx_cpu,
        )

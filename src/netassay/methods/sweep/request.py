"""What a sweep measures: its loads, K trials of T seconds at each, the pause between
them. Each field is declared once (``params``): its flag, help, parser and range."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, ClassVar

from netassay.errors import UsageError
from netassay.loads import AUTO, RateFlags, check_loads
from netassay.params import DURATION, PAUSE, as_text, flag, param, whole
from netassay.units import parse_duration, parse_pause, parse_rates

# No --rates: the loads are chosen on the testbed (loads.AUTO_LOADS): a short
# flood measures the SUT's MRR and the sweep goes past it, to 1.3x
DEFAULT_RATES = AUTO


def _rates(text: Any) -> tuple[float, ...]:
    if isinstance(text, str) and text.strip() == AUTO:
        return ()  # chosen past the SUT's MRR when the sweep starts (loads.AUTO_LOADS)
    return tuple(as_text(parse_rates)(",".join(map(str, text)) if isinstance(text, list) else text))


NO_LOAD_PPS = 1_000.0  # --at 0: the latency at (almost) no load, as CSIT's 0% of PDR


def _share(t: str) -> float:
    """'0' -> 0, 'N%' -> N / 100; -1 for anything else."""
    if t == "0":
        return 0.0
    if t.endswith("%"):
        with contextlib.suppress(ValueError):
            return float(t[:-1]) / 100
    return -1.0


def parse_shares(text: str) -> tuple[float, ...]:
    """``--at``: shares of the PDR, '0,10%,50%,90%' -> (0.0, 0.1, 0.5, 0.9)."""
    out = []
    for part in str(text).split(","):
        share = _share(part.strip())
        if not 0 <= share <= 1:
            raise UsageError(
                f"bad --at '{text}'", f"'{part.strip()}' is not 0 or a share of the PDR up to 100%",
                "give e.g. --at 0,10%,50%,90%",
            )  # fmt: skip
        out.append(share)
    return tuple(sorted(set(out)))


# the run options its command takes (methods.base.RunOptions)
RUN_OPTIONS = (
    "db", "name", "label", "retries", "check_peak", "resume", "experiment", "testbed",
    "hook_before", "hook_after",
)  # fmt: skip


@dataclass(frozen=True)
class SweepRequest:
    """The sweep's plan, as the user asked for it (units parsed)."""

    # --resume continues the stored plan and label: a flag of the plan given is refused
    RESUME_KEEPS_PLAN: ClassVar[str] = "sweep"
    rates_pps: tuple[float, ...] = param(
        "--rates", "START:STOP:STEP or a,b,c: frames/s (200k), bit/s at --layer (500Mbps) "
        "or shares of the line rate (10%:100%:10%); by default (auto) 12 loads up to 1.3x "
        "the SUT's maximum receive rate, which a 1 s flood measures first (to the "
        "generator's paced reach where that is lower)", default=(),
        parse=_rates, check=check_loads("--rates"), key="rates", show=DEFAULT_RATES,
        load="list",
    )  # fmt: skip
    runs: int = param(
        "--runs", "Repetitions per load (K).", default=10, cli=int, check=whole(1, 1000),
        ordinal=True,
    )  # fmt: skip
    duration_s: float = param(
        "--duration", "Trial length, e.g. 2s.", default=2.0, parse=as_text(parse_duration),
        check=DURATION, ordinal=True, show="2s",
    )  # fmt: skip
    settle_s: float = param(
        "--settle", "Pause between trials.", default=0.5, parse=as_text(parse_pause),
        check=PAUSE, ordinal=True, show="0.5s",
    )  # fmt: skip
    latency: bool = param(
        "--latency",
        "Keep each trial's one-way latency histogram (the XDP sink's); percentiles per load.",
        default=False, cli=bool, check=flag,
    )  # fmt: skip
    bidirectional: bool = param(
        "--bidirectional",
        "Both directions at once: a generator and an XDP sink at each end (of the embedded "
        "router or bridge, or of an external testbed's two ports); --rates is the load per "
        "direction; each trial stores its directions' loss and location (with --latency "
        "their histograms), and its rate, sent and received are both directions' sum "
        "(FD.io CSIT's aggregate).",
        default=False, cli=bool, check=flag,
    )  # fmt: skip
    at: tuple[float, ...] | None = param(
        "--at", "With --latency: the loads as shares of a stored search's PDR, e.g. "
        "0,10%,50%,90% (0: 1 kpps); replaces --rates.", default=None,
        parse=as_text(parse_shares), campaign=False, metavar="SHARES",
    )  # fmt: skip
    of_pdr: str | None = param(
        "--of-pdr", "With --at: the store whose newest search's PDR it takes [--db].",
        default=None, campaign=False, metavar="FILE",
    )  # fmt: skip
    # --layer and --line-rate: how loads in bit/s or shares are read (shared.rates)
    read_as: RateFlags = field(default_factory=RateFlags, metadata={"nested": RateFlags})

    def line_loads(self) -> tuple[tuple[float, ...] | None, str]:
        """The loads a --testbed's ports must carry (``invoke.resolve``): --rates as given
        (per direction with --bidirectional); none when the loads are picked on the
        testbed (no --rates, or --at)."""
        return (self.rates_pps or None), "load"

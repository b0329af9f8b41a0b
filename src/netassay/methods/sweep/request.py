"""What a sweep measures: its loads, K trials of T seconds at each, the pause between
them. Each field is declared once (``params``): its flag, help, parser and range."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netassay.params import DURATION, PAUSE, as_text, flag, param, rate_list, whole
from netassay.units import parse_duration, parse_pause, parse_rates

DEFAULT_RATES = "50k:600k:50k"


def _rates(text: Any) -> tuple[float, ...]:
    return tuple(as_text(parse_rates)(",".join(map(str, text)) if isinstance(text, list) else text))


# the run options its command takes (methods.base.RunOptions)
RETRIES = 2  # repeat a trial the generator could not pace, at most this often
RUN_OPTIONS = ("db", "name", "label", "retries", "check_peak", "resume", "experiment", "testbed")


@dataclass(frozen=True)
class SweepRequest:
    """The sweep's plan, as the user asked for it (units parsed)."""

    rates_pps: tuple[float, ...] = param(
        "--rates", "START:STOP:STEP or a,b,c", default=tuple(parse_rates(DEFAULT_RATES)),
        parse=_rates, check=rate_list, key="rates", show=DEFAULT_RATES,
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

"""What a recovery test asks for: the SUT's throughput (the overload is a share of
it), how long the overload and the recovery last, how finely the recovery is read, the
trials and the pause between them. Each field is declared once (``params``)."""

from __future__ import annotations

from dataclasses import dataclass

from netassay.errors import UsageError
from netassay.methods.base import check_ranges
from netassay.params import DURATION, PAUSE, as_text, fraction, param, whole
from netassay.shared import throughput as methods_throughput
from netassay.units import parse_duration, parse_pause

RETRIES = 2
MIN_INTERVAL_S = 0.002  # the sink is read this often at most
RUN_OPTIONS = ("db", "name", "label", "retries", "check_peak")


@dataclass(frozen=True)
class RecoveryRequest:
    """``trials`` overloads of ``overload_s`` at ``overload`` x the throughput, each
    followed by ``recover_s`` at half of that, read every ``interval_s``."""

    throughput: str = param(
        "--throughput", "The SUT's throughput the overload is a share of: a rate (100k), "
        "pdr / N%pdr of the newest search in --db, or search: a short search first, "
        "stored beside.", default="pdr",
        parse=methods_throughput.parser("--throughput"),
        check=methods_throughput.checker("--throughput"),
    )  # fmt: skip
    overload: float = param(
        "--overload", "The overload as a multiple of the throughput (RFC 2544: 1.1; "
        "capped at 98% of the generator's peak); the recovery load is half of it.",
        default=1.1, cli=float, check=fraction(1.0, 3.0, closed_hi=True), ordinal=True,
    )  # fmt: skip
    overload_s: float = param(
        "--overload-time", "How long the overload lasts (RFC 2544: at least 60 s).",
        default=60.0, parse=as_text(parse_duration), check=DURATION, ordinal=True, show="60s",
    )  # fmt: skip
    recover_s: float = param(
        "--recover-time", "How long the half load lasts after it; a trial that has not "
        "recovered by then says so.", default=10.0, parse=as_text(parse_duration),
        check=DURATION, ordinal=True, show="10s",
    )  # fmt: skip
    interval_s: float = param(
        "--interval", "How often the sink is read: the recovery time's resolution.",
        default=0.01, parse=as_text(parse_duration), check=DURATION, ordinal=True,
        show="10ms",
    )  # fmt: skip
    trials: int = param(
        "--trials", "Overloads, one after the other (RFC 2544: repeated, the mean "
        "reported).", default=5, cli=int, check=whole(1, 1000), ordinal=True,
    )  # fmt: skip
    wait_s: float = param(
        "--wait", "Idle time between trials.", default=2.0, parse=as_text(parse_pause),
        check=PAUSE, ordinal=True, show="2s",
    )  # fmt: skip

    def validate(self) -> None:
        check_ranges(self)
        if self.interval_s < MIN_INTERVAL_S:
            raise UsageError(f"--interval {self.interval_s:g}s is too short",
                             f"the sink is read at most every {MIN_INTERVAL_S * 1e3:g} ms",
                             "give e.g. 10ms")  # fmt: skip
        if self.recover_s < 5 * self.interval_s:
            raise UsageError(f"--recover-time {self.recover_s:g}s is too short",
                             "it needs several intervals to see the recovery",
                             "give a longer --recover-time or a shorter --interval")  # fmt: skip

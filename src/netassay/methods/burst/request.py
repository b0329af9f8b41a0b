"""What a back-to-back test asks for: the bursts' rate, the longest burst tried, the
search's resolution, the tests (independent searches) and the pause after each burst,
and the SUT's throughput for RFC 9004's corrected buffer time. Each field is declared
once (``params``): its flag, help, parser and range."""

from __future__ import annotations

from dataclasses import dataclass

from netassay.errors import UsageError
from netassay.methods.base import check_ranges
from netassay.params import PAUSE, as_text, fraction, param, whole
from netassay.shared import throughput as methods_throughput
from netassay.units import parse_pause, parse_rate

RETRIES = 2  # a faulty burst is repeated as a sweep's trial is
MAX_BURST_S = 0.1  # the longest burst by default: this long at the bursts' rate
RUN_OPTIONS = ("db", "name", "label", "retries", "check_peak")


@dataclass(frozen=True)
class BurstRequest:
    """``tests`` searches for the longest lossless burst at ``rate_pps``."""

    tests: int = param(
        "--tests", "Independent searches, each for the longest burst without loss (RFC "
        "2544: at least 50; their mean is the benchmark).", default=50, cli=int,
        check=whole(1, 1000), ordinal=True,
    )  # fmt: skip
    rate_pps: float | None = param(
        "--burst-rate", "Rate of the bursts [98% of the generator's peak through the "
        "testbed, paced: the highest it sends].", default=None,
        parse=as_text(parse_rate), check=as_text(parse_rate), ordinal=True,
    )  # fmt: skip
    max_frames: int | None = param(
        "--max-burst", f"Longest burst tried, in frames [{MAX_BURST_S:g} s at the bursts' "
        "rate]; a result at it is a floor (raise it).", default=None, cli=int,
        check=whole(128, 100_000_000), ordinal=True,
    )  # fmt: skip
    resolution: float = param(
        "--resolution", "A search ends when its bounds are this close (a share of the "
        "shortest lossy burst).", default=0.01, cli=float, check=fraction(0.0, 0.5),
        ordinal=True,
    )  # fmt: skip
    wait_s: float = param(
        "--wait", "Idle time after each burst is received, for the SUT's buffers to "
        "empty (RFC 9004: at least 2 s).", default=2.0, parse=as_text(parse_pause),
        check=PAUSE, ordinal=True, show="2s",
    )  # fmt: skip
    throughput: str | None = param(
        "--throughput", "The SUT's throughput for the corrected buffer time: a rate "
        "(100k), pdr / N%pdr of the newest search in --db, or search: a short search "
        "first, stored beside (none: the implied time "
        "only).", default=None, parse=methods_throughput.parser("--throughput"),
        check=methods_throughput.checker("--throughput"), metavar="RATE",
    )  # fmt: skip

    def validate(self) -> None:
        """Refuse what makes no sense before anything is touched."""
        check_ranges(self)
        if self.rate_pps is not None and self.rate_pps <= 0:
            raise UsageError(f"bad --burst-rate {self.rate_pps:g}", "a rate above 0",
                             "e.g. 500k")  # fmt: skip

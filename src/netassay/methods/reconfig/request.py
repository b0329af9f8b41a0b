"""What a reconfiguration test asks for: the load, each trial's length, the change and
when it starts, an undo between trials, the trials. Each field is declared once
(``params``)."""

from __future__ import annotations

from dataclasses import dataclass

from netassay.errors import UsageError
from netassay.methods.base import check_ranges
from netassay.params import DURATION, PAUSE, as_text, param, whole
from netassay.shared import throughput
from netassay.trial.hooks import parse_command
from netassay.units import parse_duration, parse_pause

RETRIES = 2
RUN_OPTIONS = ("db", "name", "label", "retries", "check_peak")


@dataclass(frozen=True)
class ReconfigRequest:
    """``trials`` trials of ``duration_s`` at ``rate``, ``change`` run ``at_s`` into each."""

    change: str | None = param(
        "--change", "The reconfiguration, run in the SUT's namespace while the load runs "
        "(split into words, no shell: e.g. \"nft -f rules.nft\", \"ip -batch routes\", "
        "\"sh change.sh\").", default=None, parse=lambda v: parse_command(v, "--change"),
        campaign=False, metavar="COMMAND",
    )  # fmt: skip
    undo: str | None = param(
        "--undo", "A command run in the SUT's namespace after each trial, untimed, that "
        "puts the SUT back as it was before the change (e.g. the old ruleset).",
        default=None, parse=lambda v: parse_command(v, "--undo"), campaign=False,
        metavar="COMMAND",
    )  # fmt: skip
    rate: str = param(
        "--rate", "The load, below the SUT's throughput: a rate (100k), or N%pdr of the "
        "newest search in --db.", default="90%pdr", parse=throughput.parser("--rate"),
        check=throughput.checker("--rate"), metavar="RATE",
    )  # fmt: skip
    duration_s: float = param(
        "--duration", "Each trial's traffic; the change must end within it.", default=5.0,
        parse=as_text(parse_duration), check=DURATION, ordinal=True, show="5s",
    )  # fmt: skip
    at_s: float = param(
        "--at", "When the change starts, from the traffic's start.", default=1.0,
        parse=as_text(parse_pause), check=PAUSE, ordinal=True, show="1s",
    )  # fmt: skip
    trials: int = param(
        "--trials", "Trials, one after the other.", default=5, cli=int,
        check=whole(1, 1000), ordinal=True,
    )  # fmt: skip
    wait_s: float = param(
        "--wait", "Idle time between trials (after the undo).", default=1.0,
        parse=as_text(parse_pause), check=PAUSE, ordinal=True, show="1s",
    )  # fmt: skip

    def validate(self) -> None:
        check_ranges(self)
        if self.change is None:
            raise UsageError("--change is required", "the reconfiguration to measure",
                             "give e.g. --change \"nft -f rules.nft\"")  # fmt: skip
        if self.at_s >= self.duration_s:
            raise UsageError(f"--at {self.at_s:g}s is not within --duration {self.duration_s:g}s",
                             "the change starts while the load runs",
                             "give a shorter --at or a longer --duration")  # fmt: skip

"""What a flood asks for: how long each flood lasts and how many, one after the other.
Each field is declared once (``params``): its flag, help, parser and range."""

from __future__ import annotations

from dataclasses import dataclass

from netassay.params import DURATION, as_text, flag, param, whole
from netassay.units import parse_duration

MAX_RUNS = 100


# the run options its command takes (methods.base.RunOptions)
RUN_OPTIONS = ("name", "db", "label")


@dataclass(frozen=True)
class FloodRequest:
    """The floods: ``runs`` of ``duration_s`` each."""

    duration_s: float = param(
        "--duration", "Length of each flood, e.g. 2s.", default=2.0,
        parse=as_text(parse_duration), check=DURATION, ordinal=True, show="2s",
    )  # fmt: skip
    runs: int = param(
        "--runs", "Floods, one after the other.", default=3, cli=int,
        check=whole(1, MAX_RUNS), ordinal=True,
    )  # fmt: skip
    bidirectional: bool = param(
        "--bidirectional",
        "Flood both directions at once (the kernel router): a generator and an XDP sink at "
        "each end; the rates are both directions' sum (FD.io CSIT's aggregate), each "
        "direction's receive rate stored and shown.",
        default=False, cli=bool, check=flag,
    )  # fmt: skip

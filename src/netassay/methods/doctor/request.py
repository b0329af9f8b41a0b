"""What a doctor run asks for: quick or full, the low load at which no loss is expected
and how many frames it is held for, and the ground truths it proves itself on. Each
field is declared once (``params``): its flag, help, parser and range."""

from __future__ import annotations

from dataclasses import dataclass

from netassay.errors import UsageError
from netassay.params import RATE, as_text, flag, fraction, param, whole
from netassay.units import parse_count, parse_rate

# the run options its command takes (methods.base.RunOptions)
RUN_OPTIONS = ("name", "db", "label")
NAME = "doc"  # its testbeds' name
FRAMES, QUICK_FRAMES = 1_000_000, 100_000  # per false-loss trial
MIN_FRAMES, MAX_FRAMES = 1000, 100_000_000
MAX_RUNS = 20
# testbed knobs the doctor sets itself: its SUTs and their ground truths, its sink
OWN_KNOBS = ("sut", "sut_drop", "sut_cap_pps", "sut_cap_reverse_pps", "sink", "imix", "pcap")


def parse_frames(text: str) -> int:
    return int(parse_count(text, "frame count"))


@dataclass(frozen=True)
class DoctorRequest:
    """A doctor run: ``quick`` (under 20 s) or full (about a minute)."""

    quick: bool = param(
        "--quick", "A shorter run (under 20 s): fewer frames, probes and floods.",
        default=False, cli=bool, check=flag,
    )  # fmt: skip
    low_load_pps: float = param(
        "--low-load", "The low load at which no frame may be lost.", default=200_000.0,
        parse=as_text(parse_rate), check=RATE, key="low_load", show="200k",
    )  # fmt: skip
    frames: int | None = param(  # None: FRAMES, or QUICK_FRAMES with --quick
        "--frames", "Frames per false-loss trial (default 1M; 100k with --quick).",
        default=None, parse=as_text(parse_frames), check=whole(MIN_FRAMES, MAX_FRAMES),
    )  # fmt: skip
    runs: int = param(
        "--runs", "False-loss trials at the low load.", default=3, cli=int, check=whole(1, MAX_RUNS)
    )
    cap_pps: float = param(
        "--cap", "Ground truth: the cap the router is set to for the cap check.",
        default=100_000.0, parse=as_text(parse_rate), check=RATE, key="cap", show="100k",
    )  # fmt: skip
    drop: float = param(
        "--drop", "Ground truth: the drop probability for the drop check.", default=0.01,
        cli=float, check=fraction(0.0, 1.0), show="0.01",
    )  # fmt: skip

    @property
    def frames_per_trial(self) -> int:
        if self.frames is not None:
            return self.frames
        return QUICK_FRAMES if self.quick else FRAMES

    def validate(self) -> None:
        """Refuse what makes no sense before anything is touched."""
        if not 1 <= self.runs <= MAX_RUNS:
            raise UsageError(f"bad --runs {self.runs}", f"1..{MAX_RUNS} trials", "e.g. 3")
        if not MIN_FRAMES <= self.frames_per_trial <= MAX_FRAMES:
            raise UsageError(f"bad --frames {self.frames_per_trial:,}",
                             f"{MIN_FRAMES:,}..{MAX_FRAMES:,} per trial", "e.g. 1M")  # fmt: skip
        if not 0 <= self.drop < 1:
            raise UsageError(f"bad --drop {self.drop:g}", "a probability in (0, 1)", "e.g. 0.01")
        if self.drop <= 0:
            raise UsageError(f"bad --drop {self.drop:g}", "the drop check needs a drop",
                             "give e.g. --drop 0.01")  # fmt: skip
        if self.frames_per_trial / self.low_load_pps > 600:
            raise UsageError("a false-loss trial would last over 10 minutes",
                             f"{self.frames_per_trial:,} frames at {self.low_load_pps:g} pps",
                             "give fewer --frames or a higher --low-load")  # fmt: skip


def refuse_own_knobs(flags: dict[str, object], flag_of: dict[str, str]) -> None:
    """The doctor builds its own SUTs: a testbed flag that sets one is refused."""
    given = [flag_of.get(k, k) for k in OWN_KNOBS if k in flags]
    if given:
        raise UsageError(
            f"doctor takes no {', '.join(given)}",
            "it builds its own router, cap and drop testbeds (XDP-counted)",
            "drop those flags (--cap and --drop set its ground truths)",
        )

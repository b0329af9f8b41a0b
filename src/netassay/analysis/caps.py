"""A bound above a cap netassay installed itself (``--sut-cap``, ``--sut-cap-reverse``),
and why. Pure.

The cap is a policer (nft ``limit rate over``, or the XDP router's own token bucket)
whose bucket holds ``bucket_pkts`` frames and is full when a trial starts. Over a trial
of T seconds it passes up to ``cap * T + bucket`` frames, so a load of up to
``cap + bucket / T`` frames/s loses nothing: a bound found with trials of T seconds may
lie above the cap by up to ``bucket / T`` (with 1 s trials and the 20 ms bucket, 2%).
A goal that allows a loss ratio X (PDR@X) is met up to ``(cap + bucket / T) / (1 - X)``.
Up to there the excess is the bucket's (and the goal's); above it, something else lets
frames pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netassay.analysis.acceptance import fmt_bps
from netassay.units import fmt_rate

SLACK = 1e-6  # of the cap: the rounding of a rate written in bit/s, not an excess


@dataclass(frozen=True)
class Cap:
    """A cap netassay installed, as it binds a bound: its flag, its rate, its bucket in
    frames, and how many directions' worth of it the bound counts (2: a bidirectional
    run's aggregate, each direction capped alike)."""

    flag: str
    pps: float
    bucket_pkts: int
    directions: int = 1

    @property
    def bound_pps(self) -> float:
        """The most a bound of these directions can carry at the cap's rate."""
        return self.pps * self.directions


@dataclass(frozen=True)
class CapExcess:
    """A bound above the cap that binds it, and how much of that the bucket explains."""

    name: str  # the bound: 'NDR', 'PDR@0.5%'
    bound_pps: float
    cap: Cap
    duration_s: float  # the trials the bound rests on
    bits_per_frame: float | None = None  # loads written in bit/s: a frame's bits at the layer
    layer: str = ""  # 'L1' or 'L2', with bits_per_frame
    loss_ratio: float = 0.0  # the bound's goal: the loss it allows (NDR: none)

    @property
    def excess_pps(self) -> float:
        return self.bound_pps - self.cap.bound_pps

    @property
    def share(self) -> float:
        return self.excess_pps / self.cap.bound_pps

    @property
    def bucket_pps(self) -> float:
        """What the full bucket adds to the rate over one trial (each direction's)."""
        return self.cap.bucket_pkts * self.cap.directions / self.duration_s

    @property
    def lossless_pps(self) -> float:
        """The highest load the cap and its full bucket pass whole over one trial."""
        return self.cap.bound_pps + self.bucket_pps

    @property
    def limit_pps(self) -> float:
        """The highest load that meets the bound's goal through the cap and its bucket."""
        return self.lossless_pps / (1.0 - self.loss_ratio)

    @property
    def explained(self) -> bool:
        return self.bound_pps <= self.limit_pps * (1 + SLACK)

    def line(self) -> str:
        c = self.cap
        of = f"{fmt_rate(c.pps)}" + (
            f" per direction, {fmt_rate(c.bound_pps)} for both" if c.directions > 1 else ""
        )
        bits = (
            f", {fmt_bps(self.excess_pps * self.bits_per_frame)} at {self.layer}"
            if self.bits_per_frame else ""
        )  # fmt: skip
        head = (
            f"{self.name} {fmt_rate(self.bound_pps)} is {fmt_rate(self.excess_pps)} "
            f"({self.share:.2%}{bits}) above the cap netassay set ({c.flag} {of})"
        )
        bucket = (
            f"its policer starts each trial with a full bucket of {c.bucket_pkts:,} frames"
            + (" per direction" if c.directions > 1 else "")
            + f", which pass on top of the rate: over {self.duration_s:.3g} s trials up to "
            f"{fmt_rate(self.bucket_pps)} ({self.bucket_pps / c.bound_pps:.2%}) more"
        )
        passes = f"loads up to {fmt_rate(self.lossless_pps)} lose nothing"
        if self.loss_ratio > 0:
            passes += (
                f" and up to {fmt_rate(self.limit_pps)} lose at most {self.loss_ratio:.2%} "
                "(the goal's)"
            )
        if self.explained:
            return (
                f"{head}: {bucket}, so {passes}; the sustained rate is the cap's (longer "
                "trials come closer)"
            )
        return (
            f"{head}: more than its bucket explains ({bucket}, so {passes}): frames "
            "passed the cap that it should have dropped; check the testbed ('netassay "
            "testbed show')"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "bound": self.name,
            "bound_pps": self.bound_pps,
            "cap_flag": self.cap.flag,
            "cap_pps": self.cap.pps,
            "directions": self.cap.directions,
            "excess_pps": self.excess_pps,
            "excess_share": self.share,
            "bucket_pkts": self.cap.bucket_pkts,
            "trial_duration_s": self.duration_s,
            "bucket_excess_pps": self.bucket_pps,
            "goal_loss_ratio": self.loss_ratio,
            "explained_up_to_pps": self.limit_pps,
            "explained_by_bucket": self.explained,
            **(
                {"excess_bps": self.excess_pps * self.bits_per_frame, "layer": self.layer}
                if self.bits_per_frame else {}
            ),
        }  # fmt: skip


def above_cap(
    name: str, bound_pps: float | None, caps: list[Cap], duration_s: float | None,
    rates: dict[str, Any] | None = None, loss_ratio: float = 0.0,
) -> CapExcess | None:  # fmt: skip
    """The bound's excess over the tightest cap that binds it (None: no cap, no bound, or
    the bound at or below the cap). ``rates``: the record of loads written in bit/s
    (``shared.rates``): the excess is said in bit/s at their layer too. ``loss_ratio``:
    the loss the bound's goal allows (PDR@X: X; NDR: 0)."""
    if bound_pps is None or not caps or not duration_s:
        return None
    cap = min(caps, key=lambda c: c.bound_pps)
    if bound_pps <= cap.bound_pps * (1 + SLACK):
        return None
    bits, layer = None, ""
    if rates and rates.get("bits_per_frame") and rates.get("layer"):
        layer = str(rates["layer"])
        bits = rates["bits_per_frame"].get(layer)
    return CapExcess(
        name, float(bound_pps), cap, float(duration_s), bits, layer.upper(), float(loss_ratio)
    )

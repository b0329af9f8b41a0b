"""A stored doctor run drawn: the rates it found on one axis (the low load, the stall
rule's bound, the generator's paced reach and peak, the router's MRR), the range a
sweep can trust shaded, and which of them limits it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from netassay.methods.doctor.checks import Stored
from netassay.shared.plots import save


def rates(checks: Sequence[Stored]) -> list[tuple[str, float]]:
    """The named rates of a run's checks (pps), in the order they are drawn."""
    by = {c.name: c.value for c in checks}
    found = [
        ("low load", by.get("false loss", {}).get("rate_pps")),
        ("stall rule's bound", by.get("pacing", {}).get("stall_bound_pps")),
        ("generator paced reach", by.get("generator reach", {}).get("reach_pps")),
        ("generator peak", by.get("generator reach", {}).get("peak_pps")),
        ("router MRR (flood)", by.get("router mrr", {}).get("mrr_pps")),
    ]
    return [(name, float(v)) for name, v in found if v]


def plot_range(checks: Sequence[Stored], stem: Path, title: str = "") -> list[Path]:
    """The run's rates in kpps as a row each, the trusted range shaded; write stem.png,
    stem.svg."""
    found = rates(checks)
    top = next((c.value.get("trusted_pps") for c in checks if c.name == "trusted range"), None)
    fig, ax = plt.subplots(figsize=(7, 0.5 + 0.45 * max(len(found), 1)), constrained_layout=True)
    if top:
        ax.axvspan(0, top / 1e3, color="C2", alpha=0.15, label="trusted range")
    for i, (_, pps) in enumerate(found):
        ax.plot([pps / 1e3], [i], "o", color="C0")
        ax.annotate(f"{pps / 1e3:.4g}", (pps / 1e3, i), textcoords="offset points",
                    xytext=(6, -3), fontsize=8)  # fmt: skip
    ax.set_yticks(range(len(found)), [n for n, _ in found], fontsize=8)
    ax.set_xlim(left=0)
    ax.set_xlabel("rate [kpps]")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(title, fontsize=10)
    if top:
        ax.legend(fontsize=8, loc="lower right")
    return save(fig, stem)

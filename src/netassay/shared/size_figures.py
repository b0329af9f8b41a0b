"""A frame-size series drawn as RFC 2544 reports it (``shared.sizes``): each measured
rate against the frame size, in Mpps and in Gbit/s at layer 1 (its report section is
``sizes.sections``)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from netassay.shared.plots import save
from netassay.shared.sizes import METRICS, SizeSeries, unsettled


def plot_series(s: SizeSeries, stem: Path) -> list[Path]:
    """Mpps (left) and Gbit/s at L1 (right) against the frame size with its FCS, one
    line per measured rate; a rate that is only at least that (the highest load tested
    met the goal) drawn as an open triangle pointing up, a size whose verdict leaves its
    bounds unsettled (INCONCLUSIVE, BAD) marked by a dotted line; write stem.png and
    stem.svg."""
    frames = [p["frame_bytes"] for p in s.points]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.9), constrained_layout=True)
    least_drawn = False
    for i, m in enumerate(METRICS):
        name = m.removesuffix("_pps")
        if not any(m in p for p in s.points):
            continue
        for ax, key in ((left, f"{name}_mpps"), (right, f"{name}_gbps_l1")):
            ys = [p.get(key) for p in s.points]
            ax.plot(frames, ys, "-", color=f"C{i}", label=name.upper())
            least = [bool(p.get(f"{name}_at_least")) for p in s.points]
            found = [(f, y) for f, y, o in zip(frames, ys, least, strict=True) if not o and y]
            above = [(f, y) for f, y, o in zip(frames, ys, least, strict=True) if o and y]
            if found:
                ax.plot(*zip(*found, strict=True), "o", color=f"C{i}")
            if above:
                ax.plot(*zip(*above, strict=True), "^", color=f"C{i}", mfc="white", ms=8)
                least_drawn = True
    marks = [p["frame_bytes"] for p in unsettled(s)]
    verdicts = "/".join(sorted({p["verdict"] for p in unsettled(s)}))
    for ax, unit in ((left, "rate [Mpps]"), (right, "rate at L1 [Gbit/s]")):
        for j, f in enumerate(marks):  # a size whose bounds are not established
            ax.axvline(f, color="#999999", ls=":", lw=1.2,
                       label=f"{verdicts}: bounds not established" if j == 0 else None)  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.set_xticks(frames, [str(f) for f in frames], fontsize=8, rotation=45)
        ax.minorticks_off()
        ax.set_xlabel("frame size with FCS [bytes]")
        ax.set_ylabel(unit)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        if least_drawn:
            ax.plot([], [], "^", color="#555555", mfc="white", label="at least (top load met it)")
        ax.legend(fontsize=8, loc="best")
    title = f"frame-size series: {s.kind}{', ' + s.label if s.label else ''}"
    if marks:
        title += f" ({len(marks)} of {len(frames)} sizes {verdicts}: bounds not established)"
    fig.suptitle(title, fontsize=10)
    return save(fig, stem)

"""What every method's figures share: a figure saved under its whole stem."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from netassay.shared.plots import png_size, save


def test_a_stem_with_dots_keeps_its_whole_name(tmp_path):
    """Two labels that differ only after a dot (a kernel's version) are two files: the
    dot does not start a suffix to replace (two trend pages once showed one figure)."""
    for stem in ("s0_k5.15_intel_vm", "s0_k5.15_intel_bare-metal"):
        fig, ax = plt.subplots(figsize=(2, 1))
        ax.plot([0, 1], [0, 1])
        png, svg = save(fig, tmp_path / stem)
        assert (png.name, svg.name) == (f"{stem}.png", f"{stem}.svg")
        assert png_size(png)[0] > 0
    assert len(list(tmp_path.iterdir())) == 4

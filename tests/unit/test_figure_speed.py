"""What makes a report's figures cheap changes none of their pixels: the text caches
shared across figures (``shared/textcache.py``) and the log axis's minor tick marks
drawn as one line (``sweep/figures.py``), against matplotlib's own way, drawn in a
process of its own, on PASTRAMI-format files (tests/data/pastrami)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
from PIL import Image

from netassay.config import AnalysisConfig
from netassay.methods.sweep import figures
from netassay.shared import textcache
from netassay.shared.sweep_analyse import iter_assessments

FILES = [  # a BAD, a GOOD (other tick labels on the twin axis), a VM's
    "bare-metal/synth_raw_5_exp_t_1_k5.15_intel_bare-metal_as-is.txt",
    "bare-metal/synth_raw_5_exp_t_1_k6.8_intel_bare-metal_as-is.txt",
    "vm/synth_raw_5_exp_t_1_k5.15_intel_vm_as-is.txt",
]

AS_MATPLOTLIB_DRAWS = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from netassay.config import AnalysisConfig
    from netassay.methods.sweep import figures
    from netassay.shared.sweep_analyse import iter_assessments
    figures._minor_ticks_as_one_line = lambda ax: None  # the axis's own minor ticks
    out, files = Path(sys.argv[1]), sys.argv[2:]
    for i, a in enumerate(iter_assessments(files, AnalysisConfig())):
        figures.plot_assessment(a, out / f"f{i}", formats=("png",))
    """
)


def pixels(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path))


def test_cheap_figures_are_the_same_to_the_pixel(pastrami_files, tmp_path):
    files = [str(pastrami_files / f) for f in FILES]
    plain, cheap = tmp_path / "plain", tmp_path / "cheap"
    plain.mkdir()
    cheap.mkdir()
    subprocess.run(
        [sys.executable, "-c", AS_MATPLOTLIB_DRAWS, str(plain), *files], check=True, timeout=120
    )
    textcache.share()
    textcache.share()  # idempotent
    for i, a in enumerate(iter_assessments(files, AnalysisConfig())):
        figures.plot_assessment(a, cheap / f"f{i}", formats=("png",))
    for i in range(len(FILES)):
        want, got = pixels(plain / f"f{i}.png"), pixels(cheap / f"f{i}.png")
        assert want.shape == got.shape, FILES[i]
        assert np.array_equal(want, got), f"{FILES[i]}: {(want != got).any(axis=-1).sum()} px"
    svg = (cheap / "f0.svg").exists()
    assert not svg  # only what was asked


def test_the_shared_caches_are_used_across_figures(pastrami_files, tmp_path):
    textcache.share()
    [a] = iter_assessments([pastrami_files / FILES[0]], AnalysisConfig())
    figures.plot_assessment(a, tmp_path / "first")
    measured = {k: len(v) for k, v in textcache._METRICS.items()}
    assert measured and all(measured.values())  # both kinds: the PNG's and the SVG's
    figures.plot_assessment(a, tmp_path / "again")
    assert {k: len(v) for k, v in textcache._METRICS.items()} == measured  # nothing new

"""The report: figures, index.html in a real headless Chromium, latex-include.tex."""

from __future__ import annotations

import re

import pytest
from tests.conftest import netassay_argv, run_cli


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory, pastrami_files):
    d = tmp_path_factory.mktemp("rep")
    db = d / "results.db"
    run_cli("import", "pastrami", pastrami_files, "--db", db, check=True)
    out = d / "report"
    cp = run_cli("report", db, "--out", out, check=True)
    assert "report written" in cp.stdout
    return out


@pytest.mark.slow
def test_files_written(report_dir):
    figs = sorted(p.name for p in (report_dir / "figures").iterdir() if p.suffix != ".key")
    assert len([f for f in figs if f.endswith(".png")]) == 6
    assert len([f for f in figs if f.endswith(".svg")]) == 6
    assert all((report_dir / "figures" / f).stat().st_size > 10_000 for f in figs)
    tex = (report_dir / "latex-include.tex").read_text()
    assert tex.count("\\begin{figure}") == 6 and tex.count("\\end{figure}") == 6
    assert "k5.15\\_intel" in tex and "verdict \\textbf{INCONCLUSIVE}" in tex
    for inc in re.findall(r"\\includegraphics\[[^]]*\]\{([^}]*)\}", tex):
        assert (report_dir / f"{inc}.png").exists()


def figures_of(html):
    """The figures a page loads lazily, as the relative paths it names."""
    return re.findall(r'<img [^>]*loading="lazy" src="([^"]+)"', html)


def test_html_works_offline_with_its_figures_beside_it(report_dir):
    html = (report_dir / "index.html").read_text()
    assert "http://" not in html and "https://" not in html
    srcs = figures_of(html)
    assert len(srcs) == 6 and all(s.startswith("figures/") for s in srcs)
    assert all((report_dir / s).stat().st_size > 10_000 for s in srcs)
    assert "data:image" not in html
    assert html.index('id="summary"') < html.index("<img ")  # the table first


def test_progress_on_stderr_and_an_unchanged_rerun_draws_nothing(report_dir):
    db = report_dir.parent / "results.db"
    figs = report_dir / "figures"
    stamps = {p.name: p.stat().st_mtime_ns for p in figs.iterdir()}
    cp = run_cli("report", db, "--out", report_dir, check=True)
    # the six curves and the trend page's figure of the three bare-metal ones, all kept
    assert "figures 7/7 (7 kept)" in cp.stderr
    assert {p.name: p.stat().st_mtime_ns for p in figs.iterdir()} == stamps
    # a figure whose key no longer matches (other data, style or version) is drawn again
    key = next(figs.glob("*.key"))
    key.write_text("0" * 64)
    cp = run_cli("report", db, "--out", report_dir, check=True)
    assert "figures 7/7 (6 kept)" in cp.stderr
    png = key.with_suffix(".png")
    assert png.stat().st_mtime_ns > stamps[png.name] and key.read_text() != "0" * 64


@pytest.mark.browser
def test_html_in_headless_chromium(report_dir, browser):
    page = browser.new_page()
    page.goto((report_dir / "index.html").as_uri())
    rows = page.locator("#summary tbody tr")
    assert rows.count() == 6
    # figures load as they are scrolled to: the last is not there before, each is after
    loaded = "i => i.complete && i.naturalWidth"
    imgs = page.locator("img.fig")
    assert imgs.count() == 6 and not imgs.nth(5).evaluate(loaded)
    for n in range(6):
        imgs.nth(n).scroll_into_view_if_needed()
        page.wait_for_function(f"() => document.images[{n}].naturalWidth > 500")
    page.evaluate("() => window.scrollTo(0, 0)")

    def column(n):
        return page.eval_on_selector_all(
            f"#summary tbody tr td:nth-child({n})", "tds => tds.map(t => t.textContent)"
        )

    verdict_col = 9  # label, 5 metadata columns, K, T, then the verdict
    page.click(f"#summary thead th:nth-child({verdict_col})")
    got = column(verdict_col)
    assert got == sorted(got)
    page.click(f"#summary thead th:nth-child({verdict_col})")
    assert column(verdict_col) == sorted(got, reverse=True)
    # PDR sorts numerically (data-v), not as text
    page.click("#summary thead th:nth-child(10)")
    pdr = page.eval_on_selector_all(
        "#summary tbody tr td:nth-child(10)", "tds => tds.map(t => +t.dataset.v)"
    )
    assert pdr == sorted(pdr)
    page.fill("#filter", "INCONCLUSIVE")
    visible = page.locator("#summary tbody tr:visible")
    assert visible.count() == 1 and "k5.6" in visible.inner_text()


@pytest.mark.slow
def test_report_takes_what_assess_takes(tmp_path, pastrami_files):
    """Files and folders are imported into a temporary store that is removed afterwards."""
    import os
    import subprocess

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    one = pastrami_files / "vm" / "synth_raw_5_exp_t_1_k5.15_intel_vm_as-is.txt"
    for inputs, n in (([pastrami_files], 6), ([one], 1)):
        out = tmp_path / f"rep{n}"
        cp = subprocess.run(
            [*netassay_argv(), "report", *map(str, inputs), "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
        )
        assert cp.returncode == 0, cp.stderr
        assert "report written" in cp.stdout
        html = (out / "index.html").read_text()
        assert len(figures_of(html)) == n
        assert str(inputs[0]) in html  # the page names what it was made from
        assert list(tmp.iterdir()) == []  # the temporary store is gone
    cp = subprocess.run(
        [*netassay_argv(), "report", str(tmp_path / "nope"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert cp.returncode == 3 and "no such file or folder" in cp.stderr


@pytest.mark.slow
@pytest.mark.browser
def test_the_summary_fits_1400_px_and_names_the_ground_truths(tmp_path, browser):
    """The real data's long names wrap in their column; the page never scrolls sideways
    at 1400 px. A measured sweep's ground truth (its cap) has a column of its own."""
    from tests.builders import store_with

    db = store_with(tmp_path / "s.db", "pastrami-import", "sweep")
    out = tmp_path / "rep"
    run_cli("report", db, "--out", out, check=True)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto((out / "index.html").as_uri())
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 1400
    heads = page.eval_on_selector_all("#summary thead th", "ths => ths.map(t => t.textContent)")
    assert "ground truth" in heads
    cells = page.eval_on_selector_all(
        f"#summary tbody tr td:nth-child({heads.index('ground truth') + 1})",
        "tds => tds.map(t => t.textContent)",
    )
    # the golden sweep and the golden latency sweep: both on the router capped at 100 kpps
    assert cells.count("cap 100 kpps") == 2 and cells.count("") == len(cells) - 2

"""Each test's time in one or two pytest runs, from their JUnit XML reports (make test
writes test-results/<part>.xml): the slowest first, and with two reports side by side
with the change, so a run can be held against an earlier one.

    python tests/durations.py test-results/system.xml
    python tests/durations.py old/system.xml test-results/system.xml --top 30
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from xml.etree import ElementTree


def durations(report: Path) -> dict[str, float]:
    """Test (module.Class::name, as the report names it) -> seconds (setup, call and
    teardown)."""
    out: dict[str, float] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        out[name] = out.get(name, 0.0) + float(case.get("time") or 0.0)
    return out


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def table(old: dict[str, float], new: dict[str, float] | None, top: int | None) -> list[str]:
    """Lines: one per test, the slowest (in the newer run, when there are two) first."""
    now = new if new is not None else old
    names = sorted(set(old) | set(now), key=lambda n: -max(now.get(n, 0.0), old.get(n, 0.0)))
    names = names[:top] if top else names
    if new is None:
        lines = [f"{old[n]:8.1f}  {n}" for n in names]
        return [*lines, f"{sum(old.values()):8.1f}  total of {len(old)} tests"]
    lines = [f"{'before':>8}  {'after':>8}  {'change':>8}  test"]
    for n in names:
        a, b = old.get(n), new.get(n)
        change = "" if a is None or b is None else f"{b - a:+8.1f}"
        lines.append(f"{_secs(a):>8}  {_secs(b):>8}  {change:>8}  {n}")
    total = f"{sum(old.values()):8.1f}  {sum(new.values()):8.1f}"
    return [*lines, f"{total}  {'':8}  total of {len(old)} and {len(new)} tests"]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reports", nargs="+", type=Path, help="one or two JUnit XML reports")
    ap.add_argument("--top", type=int, default=None, help="only the N slowest tests")
    args = ap.parse_args(argv)
    if len(args.reports) > 2:
        ap.error("give one report, or two to compare")
    try:
        runs = [durations(r) for r in args.reports]
    except (OSError, ElementTree.ParseError) as exc:
        print(f"durations: cannot read the report ({exc}): give a pytest --junitxml file",
              file=sys.stderr)  # fmt: skip
        return 2
    print("\n".join(table(runs[0], runs[1] if len(runs) == 2 else None, args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""A back-to-back test in words (the benchmark, the buffer times, each test) and as one
JSON object."""

from __future__ import annotations

import json

from netassay.methods.burst.store import BurstSummary, StoredBurst
from netassay.units import fmt_rate

RFC = "RFC 2544 26.4 as RFC 9004 updates it"


def _ms(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.3g} ms"


def _frames(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def _throughput(s: BurstSummary) -> str:
    src = s.throughput_from
    where = (f", {s.throughput} of search experiment {src['search_experiment']}"
             if src else ", given")  # fmt: skip
    return f"{fmt_rate(s.throughput_pps)}{where}"


def lines(r: StoredBurst) -> list[str]:
    exp, s = r.experiment, r.summary
    head = (
        f"{exp.label}, experiment {exp.id}: back-to-back bursts at {fmt_rate(s.rate_pps)} "
        f"({RFC}), {s.tests} of {s.tests_planned} test(s) complete"
    )
    if s.mean_frames is None:
        return [head, "  no test found a result (see the bursts' warnings)"]
    ci = "" if s.ci95_frames is None else f" (95% CI +- {s.ci95_frames:,.1f})"
    sd = "" if s.std_frames is None else f", sd {s.std_frames:,.1f}"
    out = [
        head,
        f"  longest burst without loss: mean {_frames(s.mean_frames)} frames{ci}, "
        f"min {_frames(s.min_frames)}, max {_frames(s.max_found_frames)}{sd}",
        f"  implied buffer time {_ms(s.implied_buffer_s)} (mean / rate)",
    ]
    if s.corrected_buffer_s is not None:
        out.append(
            f"  corrected buffer time {_ms(s.corrected_buffer_s)} at a throughput of "
            f"{_throughput(s)}: the SUT held {_frames(s.buffered_frames)} frames"
        )
    else:
        out.append("  corrected buffer time: give --throughput (the SUT's) to have it")
    if s.at_limit:
        out.append(
            f"  {s.at_limit} test(s) forwarded the longest burst tried "
            f"({s.max_frames:,} frames) whole: a floor, not the SUT's limit "
            "(raise --max-burst)"
        )
    out.append(
        f"  per test: {' '.join('-' if x is None else f'{x:,}' for x in s.per_test)}; "
        f"{s.bursts} bursts stored, {s.bursts_excluded} excluded (measurement faults)"
    )
    return out


def text(r: StoredBurst) -> str:
    return "\n".join(["", *lines(r)])


def as_json(r: StoredBurst) -> str:
    exp = r.experiment
    obj = {"kind": exp.kind, "label": exp.label, "experiment_id": exp.id, "db": str(r.db),
           "method": RFC, **r.summary.to_json()}  # fmt: skip
    return json.dumps(obj, sort_keys=True, allow_nan=False)

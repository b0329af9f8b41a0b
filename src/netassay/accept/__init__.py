"""Acceptance of a link by single-flow UDP (seed 004): a contract, K runs, a verdict.

``model`` holds what a test is (runs, receiver intervals, CPU samples, host counters),
``verdict`` judges it (PASS / FAIL / INCONCLUSIVE: host-limited), ``store`` keeps it.
"""

from netassay.accept.model import AcceptRun, AcceptTest, CpuSample, Interval

__all__ = ["AcceptRun", "AcceptTest", "CpuSample", "Interval"]

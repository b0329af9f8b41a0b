"""Acceptance of a link by single-flow UDP (seed 004): a contract, K runs, a verdict.

What a test is (runs, receiver intervals, CPU samples, host counters) is the trial
layer's (``trial.accept``); ``analysis.acceptance`` judges it (PASS / FAIL /
INCONCLUSIVE: host-limited); here ``run`` measures it (a run's tests, one per scenario
of a matrix: ``result.Accepted``), ``store`` keeps it, ``view`` and ``figures`` show
it, and the importers read iperf3 and MonIPE results as tests.
"""

"""The tcp method: TCP throughput over a path of known delay, loss and rate (seed 003,
section 3.3)."""

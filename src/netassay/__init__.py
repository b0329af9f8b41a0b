"""netassay: measure how fast a software data plane forwards packets, and judge the number."""

__version__ = "0.1.0"

"""System recovery (RFC 2544 section 26.5): an overload at 110% of the SUT's throughput,
then half of it; how long until the SUT forwards what it is offered again."""

"""The PASTRAMI sweep (seeds 000/001): K trials at each load of a grid, the PLR with its
Student-t confidence interval, TIR, saturation and the GOOD / BAD / INCONCLUSIVE verdict."""

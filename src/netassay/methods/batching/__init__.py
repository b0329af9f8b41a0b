"""netassay batching: what the receiver sees of a paced train (seed 003, section 3.4)."""

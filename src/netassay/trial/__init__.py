"""One trial: what every method measures and stores (its record, its engine)."""

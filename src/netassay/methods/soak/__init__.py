"""The soak: one long trial at a fixed load, read every second (``methods.soak.method``)."""

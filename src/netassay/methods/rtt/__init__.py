"""netassay rtt (seed 002): round-trip time between two endpoints on two "servers",
split at in-kernel capture points into RTT overhead, wire and response time, under
background load, with per-run histograms and run-level statistics."""

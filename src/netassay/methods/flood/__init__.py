"""The flood: a router offered far more than it can forward (RFC 2285 3.6.1 maximum
forwarding rate), with every frame it could not take located."""

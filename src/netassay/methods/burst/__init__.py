"""Back-to-back frames (RFC 2544 section 26.4, RFC 9004): the longest burst at the top
rate the SUT forwards whole, and the buffer time it implies."""

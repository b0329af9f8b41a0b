"""Loss during a reconfiguration (FD.io CSIT): a load below the SUT's throughput while
a change the user names runs in the SUT; the frames lost and the effective blocked time."""

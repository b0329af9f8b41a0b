#!/bin/sh
# The kernel's own IP forwarding as "the user's data plane" (netassay --sut exec): the
# testbed gives sut0 and sut1 the router's addresses and static neighbours and leaves
# forwarding off; this turns it on, then stays in the foreground as a data plane
# program would, until netassay ends its process group when the testbed goes down.
#   netassay testbed up --sut exec --sut-setup examples/sut-setup/kernel-router.sh
set -e
if [ "$NETASSAY_IP_VERSION" = 6 ]; then
    sysctl -qw net.ipv6.conf.all.forwarding=1
else
    sysctl -qw net.ipv4.ip_forward=1
fi
echo "forwarding $NETASSAY_IN_DEV ($NETASSAY_IN_ADDR) -> $NETASSAY_OUT_DEV ($NETASSAY_OUT_ADDR) to $NETASSAY_SINK_MAC"
exec sleep infinity

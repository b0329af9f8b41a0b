// SPDX-License-Identifier: GPL-2.0
/* netassay's XDP pass: every frame goes on to the kernel stack (XDP_PASS), untouched.
 *
 * `netassay batching --xdp on` attaches it in native mode to the receiver's veth: a
 * veth with an XDP program takes the frames sent to it into its own ring and polls
 * them with NAPI, in batches, as a NIC's driver does (without one it hands each frame
 * to the stack as it is sent). The program does nothing else, so what the receiver
 * sees changes by the batching alone.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int na_xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";

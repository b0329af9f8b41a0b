// SPDX-License-Identifier: GPL-2.0
/* netassay rtt: one capture point, a tc (cls_bpf, direct action) program.
 *
 * Attached to one hook (a device's ingress or egress) it stamps every RTT probe of
 * one direction that passes there with bpf_ktime_get_ns() (CLOCK_MONOTONIC, the clock
 * every namespace and netassay-probe share) into na_rtt_points, an mmap-able array
 * indexed by the probe's sequence number modulo its size; each slot keeps the sequence
 * number beside the time, so a reader can tell a slot of this probe from a slot an
 * older probe left. The program never changes or drops a packet (TC_ACT_OK always).
 *
 * A probe is an IPv4 ICMP echo (request: type 8, reply: type 0) or UDP datagram
 * (request: to port 7, reply: from port 7) whose payload starts with the magic
 * 0x6e615231 ("naR1"), a 16-bit flags word and the 64-bit sequence number, all big
 * endian (netassay-probe writes them; the responder echoes them back unchanged).
 *
 * Built twice: -DNA_REPLY=0 stamps requests, -DNA_REPLY=1 stamps replies. Each tc
 * attach loads its own copy, so every capture point owns its own array.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef NA_REPLY
#define NA_REPLY 0
#endif

#define NA_MAGIC 0x6e615231u
#define NA_ECHO_PORT 7
#define NA_SLOTS (1u << 18) /* keep in step with SLOTS in src/netassay/rtt/capture.py */

struct slot {
	__u64 seq;
	__u64 ts_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, NA_SLOTS);
	__type(key, __u32);
	__type(value, struct slot);
} na_rtt_points SEC(".maps");

struct payload {
	__be32 magic;
	__be16 flags;
	__be64 seq;
} __attribute__((packed));

SEC("tc")
int na_rtt_capture(struct __sk_buff *skb)
{
	__u64 now = bpf_ktime_get_ns();
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	/* probes carry no IP options: the ICMP or UDP header is right after 20 bytes */
	__u8 *l4 = (__u8 *)(ip + 1);
	struct payload p;
	__u32 key;

	/* direct packet access: the headers of a probe are in the linear part of the skb
	 * (veth, macvlan and the bridge never split a frame this small); a frame whose
	 * headers are not there is not a probe of ours and is left alone */
	if ((void *)(l4 + 8 + sizeof(p)) > end)
		return TC_ACT_OK;
	if (eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5 ||
	    (ip->frag_off & bpf_htons(0x3fff)))
		return TC_ACT_OK;
	if (ip->protocol == IPPROTO_ICMP) {
		if (l4[0] != (NA_REPLY ? 0 : 8) || l4[1] != 0)
			return TC_ACT_OK;
	} else if (ip->protocol == IPPROTO_UDP) {
		__u16 port = ((__u16)l4[NA_REPLY ? 0 : 2] << 8) | l4[NA_REPLY ? 1 : 3];

		if (port != NA_ECHO_PORT)
			return TC_ACT_OK;
	} else {
		return TC_ACT_OK;
	}
	/* ICMP echo and UDP headers are both 8 bytes: the payload follows */
	__builtin_memcpy(&p, l4 + 8, sizeof(p));
	if (p.magic != bpf_htonl(NA_MAGIC))
		return TC_ACT_OK;
	__u64 seq = bpf_be64_to_cpu(p.seq);

	key = (__u32)(seq & (NA_SLOTS - 1));
	struct slot *s = bpf_map_lookup_elem(&na_rtt_points, &key);

	if (!s)
		return TC_ACT_OK;
	/* the time first, then the sequence number that makes it valid */
	s->ts_ns = now;
	asm volatile("" ::: "memory"); /* x86 keeps stores in order */
	s->seq = seq;
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";

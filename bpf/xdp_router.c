// SPDX-License-Identifier: GPL-2.0
/* netassay's XDP router: the SUT of `--sut xdp-router` (PASTRAMI's eBPF class).
 *
 * Attached in native mode to the SUT's ingress veth (sut0). For every IPv4/IPv6
 * frame it asks the kernel's FIB (bpf_fib_lookup, the routes and neighbours of the
 * SUT's namespace), rewrites the MACs the lookup returned, decrements the TTL (fixing
 * the IPv4 header checksum incrementally) or the hop limit, and redirects the frame
 * to the egress interface (bpf_redirect). What it cannot forward goes to the kernel
 * stack (XDP_PASS), which forwards it, answers it or drops it and counts it in its own
 * MIB: ARP and other non-IP frames, IPv6 ND and everything addressed to the router
 * itself, no route, no neighbour, TTL/hop limit <= 1, IPv4 options and fragments,
 * frames needing fragmentation.
 *
 * Ground truths (netassay's known loss, to prove the tool measures what it claims)
 * live here too, since forwarded frames bypass nft and the qdiscs: a random drop of
 * probability drop_ppm / 1e6 and a packets-per-second cap (a token bucket of
 * cap_burst packets), both off when 0, set in na_xdp_config by netassay after attach.
 *
 * Counters: na_xdp_stats, a per-CPU array indexed by enum reason, one packet per
 * frame, read by netassay before and after every trial.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#define AF_INET 2
#define AF_INET6 10
#define IP_MF 0x2000
#define IP_OFFSET 0x1fff

/* Keep in step with REASONS in src/netassay/testbed/xdp_router.py. */
enum reason {
	R_FORWARDED = 0,   /* redirected to the egress interface */
	R_PASS_NOT_IP,     /* ARP and any other non-IP frame */
	R_PASS_LOCAL,      /* for the router itself (ND, multicast, its own addresses) */
	R_PASS_TTL,        /* TTL / hop limit <= 1: the stack sends time exceeded */
	R_PASS_IP_OPTIONS, /* IPv4 options or a fragment */
	R_PASS_NO_ROUTE,   /* blackhole, unreachable, prohibit: the stack answers */
	R_PASS_NO_NEIGH,   /* the next hop's MAC is unknown: the stack resolves it */
	R_PASS_FRAG_NEEDED,/* larger than the egress MTU */
	R_PASS_OTHER,      /* forwarding disabled, encapsulation, no source address */
	R_DROP_MALFORMED,  /* truncated Ethernet or IP header */
	R_DROP_REDIRECT,   /* bpf_redirect refused the egress interface */
	R_DROP_GROUND_DROP,/* ground truth: random drop */
	R_DROP_GROUND_CAP, /* ground truth: over the capacity cap */
	R_MAX
};

struct config {
	__u64 drop_ppm;  /* random drop probability in parts per million; 0: off */
	__u64 cap_pps;   /* capacity cap in packets per second; 0: off */
	__u64 cap_burst; /* the cap's bucket in packets */
};

struct bucket {
	struct bpf_spin_lock lock;
	__u64 credit_ps; /* credit in picoseconds of sending time */
	__u64 last_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, R_MAX);
	__type(key, __u32);
	__type(value, __u64);
} na_xdp_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct config);
} na_xdp_config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bucket);
} na_xdp_bucket SEC(".maps");

static __always_inline int count(enum reason r, int action)
{
	__u32 key = r;
	__u64 *n = bpf_map_lookup_elem(&na_xdp_stats, &key);

	if (n)
		*n += 1;
	return action;
}

/* 1 when the frame passes the ground truths, else the reason it is dropped. */
static __always_inline int ground_truth(void)
{
	__u32 zero = 0;
	struct config *c = bpf_map_lookup_elem(&na_xdp_config, &zero);
	struct bucket *b;
	__u64 now, cost, cap, ok = 1;

	if (!c)
		return 1;
	if (c->drop_ppm && bpf_get_prandom_u32() % 1000000 < c->drop_ppm)
		return R_DROP_GROUND_DROP;
	if (!c->cap_pps)
		return 1;
	b = bpf_map_lookup_elem(&na_xdp_bucket, &zero);
	if (!b)
		return 1;
	cost = 1000000000000ULL / c->cap_pps; /* picoseconds per packet */
	cap = c->cap_burst * cost;
	now = bpf_ktime_get_ns();
	bpf_spin_lock(&b->lock);
	if (b->last_ns == 0) {
		b->credit_ps = cap; /* a full bucket at the first frame */
	} else if (now > b->last_ns) {
		__u64 add = (now - b->last_ns) * 1000;

		b->credit_ps = (b->credit_ps + add > cap) ? cap : b->credit_ps + add;
	}
	b->last_ns = now;
	if (b->credit_ps >= cost)
		b->credit_ps -= cost;
	else
		ok = 0;
	bpf_spin_unlock(&b->lock);
	return ok ? 1 : R_DROP_GROUND_CAP;
}

static __always_inline int pass_reason(int rc)
{
	switch (rc) {
	case BPF_FIB_LKUP_RET_NOT_FWDED:
		return R_PASS_LOCAL;
	case BPF_FIB_LKUP_RET_BLACKHOLE:
	case BPF_FIB_LKUP_RET_UNREACHABLE:
	case BPF_FIB_LKUP_RET_PROHIBIT:
		return R_PASS_NO_ROUTE;
	case BPF_FIB_LKUP_RET_NO_NEIGH:
		return R_PASS_NO_NEIGH;
	case BPF_FIB_LKUP_RET_FRAG_NEEDED:
		return R_PASS_FRAG_NEEDED;
	default:
		return R_PASS_OTHER;
	}
}

/* RFC 1624 incremental update for a TTL decrement (the TTL is the high byte). */
static __always_inline void ip_decrease_ttl(struct iphdr *iph)
{
	__u32 check = iph->check;

	check += bpf_htons(0x0100);
	iph->check = (__u16)(check + (check >= 0xFFFF));
	iph->ttl--;
}

static __always_inline int forward(struct xdp_md *ctx, struct ethhdr *eth,
				   struct bpf_fib_lookup *fib, void *hdr, int v6)
{
	int rc = bpf_fib_lookup(ctx, fib, sizeof(*fib), 0);
	long act;
	int gt;

	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return count(pass_reason(rc), XDP_PASS);
	gt = ground_truth();
	if (gt != 1)
		return count(gt, XDP_DROP);
	if (v6)
		((struct ipv6hdr *)hdr)->hop_limit--;
	else
		ip_decrease_ttl((struct iphdr *)hdr);
	__builtin_memcpy(eth->h_dest, fib->dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib->smac, ETH_ALEN);
	act = bpf_redirect(fib->ifindex, 0);
	if (act != XDP_REDIRECT)
		return count(R_DROP_REDIRECT, XDP_DROP);
	return count(R_FORWARDED, XDP_REDIRECT);
}

static __always_inline int route_v4(struct xdp_md *ctx, struct ethhdr *eth, void *end)
{
	struct iphdr *iph = (void *)(eth + 1);
	struct bpf_fib_lookup fib = {};

	if ((void *)(iph + 1) > end)
		return count(R_DROP_MALFORMED, XDP_DROP);
	if (iph->ihl != 5 || (iph->frag_off & bpf_htons(IP_MF | IP_OFFSET)))
		return count(R_PASS_IP_OPTIONS, XDP_PASS);
	if (iph->ttl <= 1)
		return count(R_PASS_TTL, XDP_PASS);
	fib.family = AF_INET;
	fib.tos = iph->tos;
	fib.l4_protocol = iph->protocol;
	fib.tot_len = bpf_ntohs(iph->tot_len);
	fib.ipv4_src = iph->saddr;
	fib.ipv4_dst = iph->daddr;
	fib.ifindex = ctx->ingress_ifindex;
	return forward(ctx, eth, &fib, iph, 0);
}

static __always_inline int route_v6(struct xdp_md *ctx, struct ethhdr *eth, void *end)
{
	struct ipv6hdr *ip6 = (void *)(eth + 1);
	struct bpf_fib_lookup fib = {};

	if ((void *)(ip6 + 1) > end)
		return count(R_DROP_MALFORMED, XDP_DROP);
	if (ip6->hop_limit <= 1)
		return count(R_PASS_TTL, XDP_PASS);
	fib.family = AF_INET6;
	fib.flowinfo = *(__be32 *)ip6 & bpf_htonl(0x0FFFFFFF);
	fib.l4_protocol = ip6->nexthdr;
	fib.tot_len = bpf_ntohs(ip6->payload_len);
	__builtin_memcpy(fib.ipv6_src, &ip6->saddr, sizeof(fib.ipv6_src));
	__builtin_memcpy(fib.ipv6_dst, &ip6->daddr, sizeof(fib.ipv6_dst));
	fib.ifindex = ctx->ingress_ifindex;
	return forward(ctx, eth, &fib, ip6, 1);
}

SEC("xdp")
int na_xdp_router(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > end)
		return count(R_DROP_MALFORMED, XDP_DROP);
	if (eth->h_proto == bpf_htons(ETH_P_IP))
		return route_v4(ctx, eth, end);
	if (eth->h_proto == bpf_htons(ETH_P_IPV6))
		return route_v6(ctx, eth, end);
	return count(R_PASS_NOT_IP, XDP_PASS);
}

char _license[] SEC("license") = "GPL";

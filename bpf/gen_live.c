// SPDX-License-Identifier: GPL-2.0
/* netassay-gen's live frames (gen/src/xdp.rs): the kernel runs this program `n` times
 * per BPF_PROG_RUN call (BPF_F_TEST_XDP_LIVE_FRAMES) on a copy of the frame template;
 * each run writes the template's headers back, stamps the frame's flow, sequence and
 * transmit time (and, where flows have addresses of their own, its addresses and
 * source port), fixes the checksums and sends it out of the interface (XDP_TX).
 *
 * gen/src/xdp.rs sets the constants below for one template before it loads the
 * program (they sit in .rodata, which the verifier reads: the branches a template
 * does not take are removed before the program is compiled). The one-slot `state`
 * holds the packet number k and the schedule: frame k is flow k % flows (through
 * `perm` with --flow-order random), sequence k / flows; paced (rate not 0), frame k
 * is due at start + (k * 1e9 + rate / 2) / rate and the program waits for that time
 * (bpf_loop over the clock) before it builds the frame, counting how late it was.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define LATE_N 19
/* The words of the template written back: its headers and the stamped fields. */
#define WORDS_V4 8
#define WORDS_V6 11
#define ETH_LEN 14
#define SEQ_BITS 48
/* bpf_loop's limit: the longest wait for one frame's time is this many clock reads. */
#define SPIN_LOOPS (1 << 23)

/* The words of `state` (gen/src/xdp.rs, W_*). */
struct state {
	__u64 k;
	__u64 start;
	__u64 rate;
	__u64 late_max;
	__u64 first;
	__u64 last;
	__u64 late[LATE_N];
	__u64 gap;
	__u64 burst;
	__u64 tat;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct state);
} state SEC(".maps");

/* --flow-order random: flow i's place in the order at key i (the low 4 bytes). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* set to the flows */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} perm SEC(".maps");

/* Set before load (gen/src/xdp.rs). */
const volatile __u32 ifindex = 0;
const volatile __u32 size = 64;
const volatile __u64 flows = 1;
/* What the frames are: MODE_* bits, read once (one load on the fast path). */
#define MODE_V6 1
#define MODE_FIXED_ADDRESSES 2
#define MODE_RANDOM_ORDER 4
const volatile __u32 mode = MODE_FIXED_ADDRESSES;
/* The template's headers and stamped fields, written back 8 bytes a store: IPv4's at
 * 0, 8, ... 56; IPv6's at 0, 8, ... 72, then at `last_at` (80, or the frame's last 8
 * bytes when it is shorter than 88). */
const volatile __u64 words[WORDS_V6] = { 0 };
const volatile __u32 last_at = 80;
/* The template's checksum sums (packet.rs, Template) and source port. */
const volatile __u32 base_sum = 0, tuple_sum = 0, ip_sum = 0, sport = 0;
/* The flows' plan (flows.rs, Plan). */
const volatile __u64 slots = 1, dsts = 1, ports = 1;
const volatile __u32 dst_step = 1, dst_low = 0, src_low = 0, src_port = 0;
/* Lateness histogram edges (ns): frames at least this late, cumulative. */
const volatile __u64 late_edges[LATE_N] = { 0 };

/* bpf_loop's callback: stop once the clock reached *due. */
static long netassay_wait(__u32 index, void *due)
{
	return bpf_ktime_get_ns() >= *(__u64 *)due;
}

static __always_inline __u32 words_of(__u64 v)
{
	return (__u32)(v >> 48) + ((__u32)(v >> 32) & 0xffff) + ((__u32)(v >> 16) & 0xffff) +
	       ((__u32)v & 0xffff);
}

static __always_inline __u32 halves(__u32 v)
{
	return (v >> 16) + (v & 0xffff);
}

static __always_inline __u32 fold(__u32 s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return s;
}

/* The frame built for family V6 (a constant once inlined: each family has its own
 * copy, with its offsets in the instructions; packet.rs, Layout). */
static __always_inline int build(struct xdp_md *ctx, __u64 k, __u64 now, __u32 m,
				 const int V6)
{
	const __u32 l4 = ETH_LEN + (V6 ? 40 : 20), payload = l4 + 8;
	const __u32 at_sport = l4, at_csum = l4 + 6;
	const __u32 at_flow = payload + 4, at_seq = payload + 6, at_ts = payload + 14;
	const __u32 at_src_low = ETH_LEN + (V6 ? 20 : 12), at_dst_low = ETH_LEN + (V6 ? 36 : 16);
	const __u32 at_ip_csum = ETH_LEN + 10;
	void *data, *data_end;
	__u64 seq, field;
	__u32 flow, sum, c, sp;

	__u64 n = flows; /* read once: one division for both */

	seq = k / n;
	flow = k - seq * n;
	if (m & MODE_RANDOM_ORDER) {
		__u32 i = flow;
		__u64 *p = bpf_map_lookup_elem(&perm, &i);

		if (!p)
			return XDP_DROP;
		flow = *p;
	}

	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + size > data_end)
		return XDP_DROP;
	/* The kernel builds a live frame's page from the template once and recycles it,
	 * with whatever the path wrote into it: the headers go back first. */
	if (V6) {
#pragma unroll
		for (int i = 0; i < WORDS_V6 - 1; i++)
			*(__u64 *)(data + i * 8) = words[i];
		*(__u64 *)(data + last_at) = words[WORDS_V6 - 1];
	} else {
#pragma unroll
		for (int i = 0; i < WORDS_V4; i++)
			*(__u64 *)(data + i * 8) = words[i];
	}

	if (m & MODE_FIXED_ADDRESSES) {
		/* the run's two addresses; the source port is --src-port + flow */
		sp = sport;
		*(__u16 *)(data + at_flow) = bpf_htons(flow);
		*(__u16 *)(data + at_sport) = bpf_htons(sp + flow);
		field = seq;
		sum = base_sum + sp + flow + flow;
	} else {
		/* flow f's tuple (flows.rs, Plan::tuple) */
		__u64 d = flow % slots, q = flow / slots;
		__u32 dst, src, port, ip;

		if (slots != dsts)
			d = d * dsts / slots;
		dst = (__u32)d * dst_step + dst_low;
		port = q % ports + src_port;
		src = (__u32)(q / ports) + src_low;
		*(__u32 *)(data + at_dst_low) = bpf_htonl(dst);
		*(__u32 *)(data + at_src_low) = bpf_htonl(src);
		*(__u16 *)(data + at_sport) = bpf_htons(port);
		if (!V6) {
			ip = fold(ip_sum + halves(dst) + halves(src));
			*(__u16 *)(data + at_ip_csum) = bpf_htons(~ip & 0xffff);
		}
		*(__u16 *)(data + at_flow) = bpf_htons(flow & 0xffff);
		field = seq | (__u64)(flow >> 16) << SEQ_BITS;
		sum = tuple_sum + halves(dst) + halves(src) + port + (flow & 0xffff);
	}
	*(__u64 *)(data + at_seq) = bpf_cpu_to_be64(field);
	*(__u64 *)(data + at_ts) = bpf_cpu_to_be64(now);
	c = ~fold(sum + words_of(field) + words_of(now)) & 0xffff;
	if (c == 0)
		c = 0xffff; /* a zero UDP checksum is sent as all ones */
	*(__u16 *)(data + at_csum) = bpf_htons(c);
	return XDP_TX; /* out of the ingress interface (the ctx's ifindex) */
}

SEC("xdp")
int netassay_gen(struct xdp_md *ctx)
{
	__u32 key = 0;
	struct state *w;
	__u64 k, now, rate;
	__u32 m;

	if (ctx->ingress_ifindex != ifindex)
		return XDP_PASS; /* a real frame on the parking device: leave it alone */
	w = bpf_map_lookup_elem(&state, &key);
	if (!w)
		return XDP_DROP;
	k = w->k;
	w->k = k + 1;
	rate = w->rate;
	if (rate) {
		__u64 due = (k * 1000000000 + rate / 2) / rate + w->start;
		__u64 until = due, late;

		/* frames left late by a stall catch up at most one per gap on average: a
		 * frame waits until it conforms to that rate with a tolerance of `burst` ns
		 * (a flush's worth of gaps, the frames that leave together anyway), its
		 * theoretical time `tat` one gap past the later of its predecessor's and
		 * that one's build (GCRA). On time, frames are due more than a gap apart. */
		if (w->gap && k && w->tat > w->burst && due < w->tat - w->burst)
			until = w->tat - w->burst;
		bpf_loop(SPIN_LOOPS, netassay_wait, &until, 0);
		now = bpf_ktime_get_ns();
		if (w->gap)
			w->tat = (w->tat > now ? w->tat : now) + w->gap;
		late = now - due;
		if (w->late_max < late)
			w->late_max = late;
#pragma unroll
		for (int i = 0; i < LATE_N; i++) {
			if (late < late_edges[i])
				break;
			w->late[i] += 1;
		}
	} else {
		now = bpf_ktime_get_ns();
	}
	if (k == 0)
		w->first = now;
	w->last = now;
	m = mode;
	return m & MODE_V6 ? build(ctx, k, now, m, 1) : build(ctx, k, now, m, 0);
}

char LICENSE[] SEC("license") = "GPL";

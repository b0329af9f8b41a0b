// SPDX-License-Identifier: GPL-2.0
/* netassay-gen's XDP sink (`netassay-gen xdp-sink`): counts netassay-gen test frames
 * of the sizes asked for and drops them (or passes them on); everything else passes
 * untouched. gen/src/sink.rs embeds the object, sets the constants below before it
 * loads it (they sit in .rodata, which the verifier reads, so it removes the branches
 * a run does not take) and attaches it to the interface.
 *
 * A test frame is IPv4 without options or IPv6, UDP, with the payload magic right
 * after the UDP header, of one of the sizes counted (slot i of `counts` for the i-th:
 * `slot_of`). Per CPU and slot: the count, the first and the last arrival time
 * (bpf_ktime_get_ns). With `with_latency`, each counted frame's one-way latency (now
 * minus the transmit time in its payload) goes to the `latency` histogram (its
 * buckets: gen/src/latency.rs). With `per_flow`, each frame's flow is counted in
 * `flow_counts` when its destination is the one its flow aims at (gen/src/flows.rs,
 * Plan::tuple), else in the slot after the flows (misdirected), or the one after that
 * (a flow id past the flows).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

/* The longest frame counted (packet.rs, MAX_FRAME). */
#define MAX_FRAME 1518
#define ETH_LEN 14
#define MAGIC_AT_V4 (ETH_LEN + 20 + 8)
#define MAGIC_AT_V6 (ETH_LEN + 40 + 8)
#define MAGIC 0x6e614731 /* "naG1" */
#define PAYLOAD_LEN 22
/* The transmit stamp (u64 ns, big-endian) after the magic, flow and sequence. */
#define STAMP_AT 14
/* The latency histogram: n, sum, min, max, ahead, then the buckets. */
#define LAT_HEAD 5
#define LAT_BUCKETS (256 + 12 * 128 + 1)
#define LAT_OVER (LAT_BUCKETS - 1)

struct count {
	__u64 packets;
	__u64 first_ns;
	__u64 last_ns;
};

struct lat {
	__u64 n, sum_ns, min_ns, max_ns, ahead;
	__u64 buckets[LAT_BUCKETS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1); /* set to the sizes counted */
	__type(key, __u32);
	__type(value, struct count);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lat);
} latency SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* set to the flows and the two slots after them */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, __u64);
} flow_counts SEC(".maps");

/* Set before load (gen/src/sink.rs). */
/* A frame of n bytes is counted in slot slot_of[n] - 1 (0: not counted). */
const volatile __u16 slot_of[MAX_FRAME + 1] = { 0 };
/* What is done with a test frame: the action (XDP_DROP or XDP_PASS) in the low byte,
 * MODE_* bits above it; read once (one load on the fast path). */
#define MODE_LATENCY 0x100
#define MODE_PER_FLOW 0x200
const volatile __u32 mode = XDP_DROP;
/* --count-flows: the flows' plan (gen/src/flows.rs). */
const volatile __u64 flows = 1;
const volatile __u64 slots = 1;
const volatile __u64 dsts = 1;
const volatile __u32 dst_step = 1;
const volatile __u32 dst_low = 0;

/* The bit length of v (< 2^12). */
static __always_inline __u64 bit_len(__u64 v)
{
	__u64 s = 0;

	if (v >= 256) {
		v >>= 8;
		s += 8;
	}
	if (v >= 16) {
		v >>= 4;
		s += 4;
	}
	if (v >= 4) {
		v >>= 2;
		s += 2;
	}
	if (v >= 2) {
		v >>= 1;
		s += 1;
	}
	return s + v;
}

/* One latency of `stamp` (the frame's transmit time) against `now` in the histogram;
 * a stamp ahead of the clock is counted apart. Returns 0 when the map has no slot. */
static __always_inline int add_latency(__u64 stamp, __u64 now)
{
	__u32 key = 0;
	struct lat *h = bpf_map_lookup_elem(&latency, &key);
	__u64 d, v, b;

	if (!h)
		return 0;
	if (stamp > now) {
		h->ahead += 1;
		return 1;
	}
	d = now - stamp;
	if (h->n == 0 || d < h->min_ns)
		h->min_ns = d;
	h->n += 1;
	h->sum_ns += d;
	if (h->max_ns < d)
		h->max_ns = d;
	v = d / 1000;
	if (v > (1 << 20) - 1) {
		b = LAT_OVER;
	} else {
		__u64 s = bit_len(v >> 8);

		b = s * 128 + (v >> s);
	}
	if (b > LAT_OVER)
		b = LAT_OVER;
	h->buckets[b] += 1;
	return 1;
}

/* The frame's flow (its id, low 16 bits after the magic, high 16 at the top of the
 * sequence field) counted against its destination's last 32 bits `dst`. */
static __always_inline void count_flow(__u64 flow, __u32 dst)
{
	__u32 key = flows + 1; /* a flow id past the flows */
	__u64 *n;

	if (flow < flows) {
		__u64 d = flow % slots;
		__u32 want;

		if (slots != dsts)
			d = d * dsts / slots;
		want = (__u32)d * dst_step + dst_low;
		key = want == dst ? flow : flows; /* else misdirected */
	}
	n = bpf_map_lookup_elem(&flow_counts, &key);
	if (n)
		__sync_fetch_and_add(n, 1);
}

/* Count the frame if it is a test frame whose magic sits at `at` (a constant once
 * inlined: each family has its own copy, with its offsets in the instructions). */
static __always_inline int count(void *data, void *data_end, __u32 slot, const __u32 at,
				 const __u32 dst_at, __u32 lat, __u32 pf, __u32 act)
{
	struct count *c;
	__u64 now;

	if (lat) {
		if (data + at + PAYLOAD_LEN > data_end)
			return XDP_PASS;
	} else if (pf) {
		if (data + at + 8 > data_end)
			return XDP_PASS;
	} else if (data + at + 4 > data_end) {
		return XDP_PASS;
	}
	if (*(__u32 *)(data + at) != bpf_htonl(MAGIC))
		return XDP_PASS;

	c = bpf_map_lookup_elem(&counts, &slot);
	if (!c)
		return act;
	c->packets += 1;
	now = bpf_ktime_get_ns();
	c->last_ns = now;
	if (c->packets == 1)
		c->first_ns = now; /* this CPU's first frame */
	/* the frame is read on after the calls (none of them moves it) */
	if (lat && !add_latency(bpf_be64_to_cpu(*(__u64 *)(data + at + STAMP_AT)), now))
		return act;
	if (pf)
		count_flow(bpf_ntohs(*(__u16 *)(data + at + 4)) |
				   (__u64)bpf_ntohs(*(__u16 *)(data + at + 6)) << 16,
			   bpf_ntohl(*(__u32 *)(data + dst_at)));
	return act;
}

SEC("xdp")
int netassay_sink(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	/* each constant read once: the verifier knows the registers' values */
	__u32 m = mode, lat = m & MODE_LATENCY, pf = m & MODE_PER_FLOW, act = m & 0xff;
	__u64 len = data_end - data;
	__u32 slot;
	__u16 proto;

	if (len > MAX_FRAME)
		return XDP_PASS;
	slot = slot_of[len];
	if (slot == 0)
		return XDP_PASS; /* not a size counted */
	slot -= 1;
	if (data + ETH_LEN > data_end)
		return XDP_PASS;
	proto = *(__u16 *)(data + 12);
	if (proto == bpf_htons(0x0800)) {
		if (data + MAGIC_AT_V4 > data_end)
			return XDP_PASS;
		if (*(__u8 *)(data + 14) != 0x45) /* options would move the magic */
			return XDP_PASS;
		if (*(__u8 *)(data + 23) != 17)
			return XDP_PASS;
		return count(data, data_end, slot, MAGIC_AT_V4, ETH_LEN + 16, lat, pf, act);
	}
	if (proto == bpf_htons(0x86dd)) {
		if (data + MAGIC_AT_V6 > data_end)
			return XDP_PASS;
		if (*(__u8 *)(data + 20) != 17)
			return XDP_PASS;
		return count(data, data_end, slot, MAGIC_AT_V6, ETH_LEN + 36, lat, pf, act);
	}
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "GPL";

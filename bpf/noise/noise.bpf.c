// SPDX-License-Identifier: GPL-2.0
/* netassay-noise: who holds each CPU, and for how long, one run at a time.
 *
 * A raw tracepoint program on sched_switch. On each switch the task leaving the CPU
 * (the current task at this tracepoint) ran from the CPU's previous switch to now: that
 * run is added to the task's row in na_noise_runs, keyed by (CPU, thread id): its runs,
 * its total, its longest run, and how many of its runs reached each of the bounds
 * na_noise_cfg holds (set by the loader, e.g. 20 us, 100 us, 1 ms). The idle task
 * (thread id 0) is not kept. Interrupts and softirqs are not tasks: their time is part
 * of the run of the task they interrupted. It stands in for the kernel's osnoise
 * tracer, which kernels built without it (most VMs') lack.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define NA_BOUNDS 3
#define NA_MAX_ROWS 8192

struct key {
	__u32 cpu;
	__u32 tid;
};

struct row {
	__u64 runs;
	__u64 total_ns;
	__u64 max_ns;
	__u64 over[NA_BOUNDS];
	__u32 tgid;
	char comm[16];
};

struct cfg {
	__u64 bound_ns[NA_BOUNDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} na_noise_last SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cfg);
} na_noise_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, NA_MAX_ROWS);
	__type(key, struct key);
	__type(value, struct row);
} na_noise_runs SEC(".maps");

SEC("raw_tracepoint/sched_switch")
int na_noise(void *ctx)
{
	__u32 zero = 0;
	__u64 now = bpf_ktime_get_ns();
	__u64 *last = bpf_map_lookup_elem(&na_noise_last, &zero);
	if (!last)
		return 0;
	__u64 from = *last;
	*last = now;
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	if (!from || !tid)
		return 0; /* the first switch seen on this CPU, or the idle task */
	__u64 run = now - from;
	struct key k = { .cpu = bpf_get_smp_processor_id(), .tid = tid };
	struct row *r = bpf_map_lookup_elem(&na_noise_runs, &k);
	if (!r) {
		struct row fresh = { .tgid = id >> 32 };
		bpf_get_current_comm(fresh.comm, sizeof(fresh.comm));
		bpf_map_update_elem(&na_noise_runs, &k, &fresh, BPF_NOEXIST);
		r = bpf_map_lookup_elem(&na_noise_runs, &k);
		if (!r)
			return 0; /* the table is full: this thread's runs are not kept */
	}
	struct cfg *c = bpf_map_lookup_elem(&na_noise_cfg, &zero);
	bpf_get_current_comm(r->comm, sizeof(r->comm)); /* its name now (after an exec) */
	__sync_fetch_and_add(&r->runs, 1);
	__sync_fetch_and_add(&r->total_ns, run);
	if (run > r->max_ns)
		r->max_ns = run;
	if (c) {
		for (int i = 0; i < NA_BOUNDS; i++)
			if (c->bound_ns[i] && run >= c->bound_ns[i])
				__sync_fetch_and_add(&r->over[i], 1);
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

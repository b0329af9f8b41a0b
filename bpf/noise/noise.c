// SPDX-License-Identifier: GPL-2.0
/* netassay-noise: the user-space side of noise.bpf.c (built beside it by make setup).
 *
 *   netassay-noise OBJ [--duration S] [--bounds NS,NS,NS]
 *
 * Loads OBJ (noise.bpf.o), sets its bounds (default 20 us, 100 us, 1 ms), attaches it to
 * the sched_switch raw tracepoint and says "tracing" on stderr; then waits for
 * --duration seconds (default: until SIGINT or SIGTERM) and prints one JSON object on
 * stdout: the window's length, the bounds, and one row per thread and CPU it ran on
 * (cpu, tid, tgid, comm, runs, total_ns, max_ns, over: the runs that reached each bound).
 * Detaching on exit (the kernel does it when the link's descriptor closes) leaves
 * nothing behind; so does the end of the process that started it (it gets SIGTERM).
 * Exit 0 on success, 2 on a usage error, 1 when the program cannot be
 * loaded or attached (the reason on stderr: root and a kernel with BPF are needed).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define NA_BOUNDS 3

struct key {
	unsigned int cpu;
	unsigned int tid;
};

struct row {
	unsigned long long runs, total_ns, max_ns, over[NA_BOUNDS];
	unsigned int tgid;
	char comm[16];
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static unsigned long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (unsigned long long)t.tv_sec * 1000000000ull + t.tv_nsec;
}

static int usage(const char *why)
{
	fprintf(stderr, "netassay-noise: %s\nusage: netassay-noise OBJ [--duration S] "
			"[--bounds NS,NS,NS]\n", why);
	return 2;
}

static void json_comm(const char *c)
{
	putchar('"');
	for (int i = 0; i < 16 && c[i]; i++) {
		unsigned char ch = (unsigned char)c[i];
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20 || ch > 0x7e)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

int main(int argc, char **argv)
{
	double duration = -1;
	unsigned long long bounds[NA_BOUNDS] = { 20000, 100000, 1000000 };
	if (argc < 2 || argv[1][0] == '-')
		return usage("the BPF object is missing");
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--duration") && i + 1 < argc) {
			char *end;
			duration = strtod(argv[++i], &end);
			if (*end || duration <= 0)
				return usage("--duration takes seconds > 0");
		} else if (!strcmp(argv[i], "--bounds") && i + 1 < argc) {
			char *s = argv[++i], *end;
			for (int b = 0; b < NA_BOUNDS; b++) {
				bounds[b] = strtoull(s, &end, 10);
				if (end == s || bounds[b] == 0)
					return usage("--bounds takes three whole ns > 0, comma-separated");
				s = *end == ',' ? end + 1 : end;
			}
			if (*end)
				return usage("--bounds takes three whole ns > 0, comma-separated");
		} else {
			return usage("unknown or incomplete argument");
		}
	}
	/* Ended with the process that started it (SIGTERM: it detaches and prints as on
	 * SIGINT): a netassay killed outright leaves no tracer running. */
	pid_t parent = getppid();
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
		return 1;
	libbpf_set_print(NULL);
	struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || libbpf_get_error(obj)) {
		fprintf(stderr, "netassay-noise: cannot open %s\n", argv[1]);
		return 1;
	}
	if (bpf_object__load(obj)) {
		fprintf(stderr, "netassay-noise: cannot load %s: %s (root and BPF needed)\n",
			argv[1], strerror(errno));
		return 1;
	}
	struct bpf_map *cfg = bpf_object__find_map_by_name(obj, "na_noise_cfg");
	struct bpf_map *runs = bpf_object__find_map_by_name(obj, "na_noise_runs");
	struct bpf_program *prog = bpf_object__find_program_by_name(obj, "na_noise");
	if (!cfg || !runs || !prog) {
		fprintf(stderr, "netassay-noise: %s is not netassay's noise program\n", argv[1]);
		return 1;
	}
	unsigned int zero = 0;
	if (bpf_map_update_elem(bpf_map__fd(cfg), &zero, bounds, BPF_ANY)) {
		fprintf(stderr, "netassay-noise: cannot set the bounds: %s\n", strerror(errno));
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	struct bpf_link *link = bpf_program__attach_raw_tracepoint(prog, "sched_switch");
	if (!link || libbpf_get_error(link)) {
		fprintf(stderr, "netassay-noise: cannot attach to sched_switch: %s\n",
			strerror(errno));
		return 1;
	}
	unsigned long long t0 = now_ns();
	fprintf(stderr, "tracing\n");
	while (!stop && (duration < 0 || now_ns() - t0 < duration * 1e9))
		usleep(duration < 0 ? 100000 : 2000);
	unsigned long long window = now_ns() - t0;
	bpf_link__destroy(link);
	int fd = bpf_map__fd(runs);
	struct key k, next;
	struct row r;
	int first = 1, more = bpf_map_get_next_key(fd, NULL, &next) == 0;
	printf("{\"window_ns\": %llu, \"bounds_ns\": [%llu, %llu, %llu], \"rows\": [",
	       window, bounds[0], bounds[1], bounds[2]);
	while (more) {
		k = next;
		more = bpf_map_get_next_key(fd, &k, &next) == 0;
		if (bpf_map_lookup_elem(fd, &k, &r))
			continue;
		printf("%s{\"cpu\": %u, \"tid\": %u, \"tgid\": %u, \"comm\": ", first ? "" : ", ",
		       k.cpu, k.tid, r.tgid);
		json_comm(r.comm);
		printf(", \"runs\": %llu, \"total_ns\": %llu, \"max_ns\": %llu, "
		       "\"over\": [%llu, %llu, %llu]}",
		       r.runs, r.total_ns, r.max_ns, r.over[0], r.over[1], r.over[2]);
		first = 0;
	}
	printf("]}\n");
	bpf_object__close(obj);
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/* netassay-probe: the user-space side of netassay rtt (the sender's probes and the
 * responder's echo). Built with the capture programs beside it (make setup).
 *
 *   netassay-probe send --dst IP --probe icmp|udp --rate PPS (--count N | --duration S)
 *       [--size BYTES] [--timeout S] [--cpu N] [--socket-time on|off]
 *       [--dev IFNAME --src IP --dst-mac MAC [--alternate on|off]]
 *   netassay-probe echo --probe icmp|udp [--delay NS] [--cpu N] [--busy-poll USEC]
 *
 * send: probe k is due at start + k / rate on CLOCK_MONOTONIC (its scheduled time); the
 * loop sends every probe that is due, in one sendmmsg call, stamping the send time just
 * before the call, and reads replies in between: it sleeps in ppoll() (woken by a reply,
 * timer slack 1 ns) until SPIN_NS before the next probe is due, then busy-polls, so a
 * probe leaves on time without the process holding a CPU it would have to share with
 * whatever else runs there. Every probe ends as one 32-byte record on stdout, in sequence order, once its
 * reply came or its timeout passed: seq, scheduled, sent, received (0: lost, or never
 * sent when sent is 0), native-endian u64 nanoseconds. The last line on stderr is a JSON
 * summary (planned, sent, received, lost, late, duplicates, reordered, ...). SIGINT and
 * SIGTERM end the sending; what was sent is still reported. With --socket-time on each
 * probe asks the echo for the time its socket gave it the probe (flag ASK), and each
 * record has a fifth u64 (40 bytes): that time as the echo's reply carried it (flag
 * STAMPED), 0 when no stamped reply came (lost, or a responder that does not stamp, such
 * as the kernel's ICMP echo).
 *
 * send --dev IFNAME --src IP --dst-mac MAC (icmp only): the requests leave through a
 * packet socket bound to IFNAME, as whole Ethernet frames written here (the endpoint's
 * MAC, the next hop's MAC, an IPv4 header from --src to --dst with DF set and TTL 64),
 * instead of through the raw ICMP socket, which still reads the replies. The send call
 * then skips what the IP stack does per datagram on the way out (a route lookup, the
 * output hooks, the neighbour step): 3-4 us of the 6-7 us from the send call to
 * the interface on the 2-CPU machine this was built on. The frame still passes the
 * device's queueing layer, so the interface's tc egress hook (the first capture point)
 * sees it as before (no PACKET_QDISC_BYPASS). One probe due goes out in one send()
 * call, several in one sendmmsg() call (sendmmsg costs more for a single message).
 * A frame the device drops (ENOBUFS from the packet socket: the veth peer's backlog was
 * full) has passed the egress hook: it counts as sent, and lost on the path, where the
 * capture points locate it.
 * The JSON summary says which way the probes left ("send_path"). With --alternate on,
 * a probe sent alone leaves by the packet socket when its sequence number is even and
 * by the raw socket when it is odd (probes sent together all leave by the packet
 * socket): the two ways compared probe by probe in one run, on the same machine state
 * (bench/rtt.py); "send_path" is then "alternate".
 *
 * Both modes run at nice NICE (-10) when allowed (CAP_SYS_NICE; the summary's "nice"
 * says what they got): the process that reads the sender's records, or any other task
 * of normal priority on the same CPU, then no longer holds a reply unread or a held
 * reply unsent. Measured at 1 kpps on the routed veth path, six rounds of 1000 probes:
 * the p99 of the sender's own share ("app") went from 1.1 ms at nice 0 to 36 us. The
 * kernel's share of a round trip (softirq work) is the same at any nice.
 *
 * echo: answers the probes of one kind in the responder endpoint. udp: a socket on port
 * 7 sends each datagram back. icmp: a raw socket answers echo requests that carry the
 * probe magic (the kernel's own echo reply must be off: net.ipv4.icmp_echo_ignore_all=1
 * in the namespace). Replies are held --delay ns after the request was read (the ground
 * truth of the response time): the loop sleeps in ppoll() until a request comes or until
 * SPIN_NS before a held reply is due, then busy-polls (the last CLOCK_SPIN_NS on the clock
 * alone), so a held reply leaves within 0.1 us of its time and the reading of a request
 * costs the same with and without a delay; a reply that is due is sent before anything
 * else is read, so that an unheld reply takes the same steps as a held one after its
 * hold. A request with flag ASK gets, in its reply's time field, the CLOCK_MONOTONIC
 * time at which the echo's recv call returned it, and flag STAMPED (the time a receiving
 * application sees the probe; the capture points stamp with the same clock); without
 * ASK the reply carries the request's payload unchanged. Runs until SIGINT/SIGTERM and
 * then prints a JSON summary.
 *
 * echo --busy-poll USEC (udp only; 0..BUSY_POLL_MAX_US): the socket busy-polls its NAPI
 * instance for up to USEC us when it reads and nothing is queued (SO_BUSY_POLL; 0: off).
 * It is read back with getsockopt and printed in the "ready" line, with
 * SO_PREFER_BUSY_POLL (not set: with the batching knobs, flush 500 us and defer 100,
 * setting it changed nothing that repeated over three pairs of runs here) and
 * SO_BUSY_POLL_BUDGET (left at the kernel's default, 8 packets per poll; null where
 * getsockopt does not give it, as on 6.18). With the option given (0 included), the echo waits for a
 * request in a blocking recvfrom() instead of ppoll(): SO_BUSY_POLL acts on a socket's
 * reads, while busy polling in poll() needs net.core.busy_poll, a sysctl of the whole
 * machine that netassay does not change, and waiting the same way with and without
 * busy polling makes the two comparable (SO_RCVTIMEO ends a wait after 100 ms, so that
 * a signal is never missed). After each datagram it reads SO_INCOMING_NAPI_ID (the NAPI
 * instance the socket polls; 0: none, nothing to poll) and counts the datagrams per id;
 * SIGUSR1 prints those counts as one JSON line and starts them again (one run's).
 *
 * Payload (big endian, after the 8-byte ICMP or UDP header): magic 0x6e615231 (u32),
 * flags (u16: ASK 1, STAMPED 2), sequence number (u64), time (u64: the send time in a
 * request, the echo's receive time in a STAMPED reply), then zero padding up to --size
 * (the Ethernet frame without FCS: 64..1514; a 64-byte frame holds these 22 bytes and
 * no more, which is why a reply reuses the time field).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <linux/icmp.h>
#include <linux/if_packet.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x6e615231u
#define ECHO_PORT 7
#define HDRS 42 /* Ethernet 14 + IPv4 20 + ICMP/UDP 8 */
#define L2L3 34 /* Ethernet 14 + IPv4 20: what --dev writes before the ICMP message */
#define PAYLOAD_MIN 22
#define SIZE_MAX_FRAME 1514
#define BATCH 64
#define SPIN_NS 100000ull /* sleep in ppoll() until this close to a deadline, then spin */
#define CLOCK_SPIN_NS 2000ull /* echo: the last of a hold spent reading the clock only */
#define FLAG_ASK 1u /* a request: stamp my receipt at the socket */
#define FLAG_STAMPED 2u /* a reply: the time field is the echo's receive time */
#define BUSY_POLL_MAX_US 1000 /* --busy-poll: 1 ms at most (the kernel suggests 50 to 100) */
#define NAPI_IDS 8 /* distinct NAPI ids counted per report (more: counted as other) */
#define NICE (-10) /* both modes, when allowed (see the top) */

struct rec {
	uint64_t seq, sched_ns, tx_ns, rx_ns, sock_ns; /* sock_ns written with --socket-time */
};

static volatile sig_atomic_t stop, report;
static int nice_got; /* the nice value this process runs at */

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		report = 1;
	else
		stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sleep until fd is readable or until `until_ns` (CLOCK_MONOTONIC) minus SPIN_NS; return
 * at once when that is already near. until_ns 0: no deadline (a signal or data ends it). */
static void wait_readable(int fd, uint64_t until_ns)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	struct timespec ts, *tp = NULL;
	uint64_t now;

	if (until_ns) {
		now = now_ns();
		if (until_ns <= now + SPIN_NS)
			return;
		uint64_t d = until_ns - now - SPIN_NS;

		ts.tv_sec = (time_t)(d / 1000000000ull);
		ts.tv_nsec = (long)(d % 1000000000ull);
		tp = &ts;
	}
	ppoll(&p, 1, tp, NULL);
}

static void die(const char *what)
{
	fprintf(stderr, "netassay-probe: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void usage(const char *msg)
{
	fprintf(stderr, "netassay-probe: %s (see the comment at the top of probe.c)\n", msg);
	exit(2);
}

static uint16_t csum(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t s = 0;

	for (; len > 1; p += 2, len -= 2)
		s += (uint32_t)p[0] << 8 | p[1];
	if (len)
		s += (uint32_t)p[0] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return htons((uint16_t)~s);
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		die("sched_setaffinity");
}

struct opts {
	const char *mode, *dst;
	int icmp;
	double rate, duration_s, timeout_s;
	uint64_t count, delay_ns;
	int size, cpu, socket_time;
	long busy_poll_us; /* echo --busy-poll; -1: not given */
	const char *dev, *src; /* send --dev: the packet socket's interface, the source */
	uint8_t dst_mac[6];
	int have_dst_mac, alternate;
};

static double num(const char *s, const char *what)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !isfinite(v) || v < 0) {
		fprintf(stderr, "netassay-probe: bad %s '%s'\n", what, s);
		exit(2);
	}
	return v;
}

static void parse(int argc, char **argv, struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = 64;
	o->cpu = -1;
	o->timeout_s = 1.0;
	o->icmp = -1;
	o->busy_poll_us = -1;
	if (argc < 2)
		usage("give a mode: send or echo");
	o->mode = argv[1];
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			usage("an option needs a value");
		i++;
		if (!strcmp(a, "--dst"))
			o->dst = v;
		else if (!strcmp(a, "--probe")) {
			if (strcmp(v, "icmp") && strcmp(v, "udp"))
				usage("--probe is icmp or udp");
			o->icmp = !strcmp(v, "icmp");
		} else if (!strcmp(a, "--rate"))
			o->rate = num(v, "rate");
		else if (!strcmp(a, "--count"))
			o->count = (uint64_t)num(v, "count");
		else if (!strcmp(a, "--duration"))
			o->duration_s = num(v, "duration");
		else if (!strcmp(a, "--timeout"))
			o->timeout_s = num(v, "timeout");
		else if (!strcmp(a, "--size"))
			o->size = (int)num(v, "size");
		else if (!strcmp(a, "--cpu"))
			o->cpu = (int)num(v, "cpu");
		else if (!strcmp(a, "--delay"))
			o->delay_ns = (uint64_t)num(v, "delay");
		else if (!strcmp(a, "--socket-time")) {
			if (strcmp(v, "on") && strcmp(v, "off"))
				usage("--socket-time is on or off");
			o->socket_time = !strcmp(v, "on");
		} else if (!strcmp(a, "--dev")) {
			if (strlen(v) >= IFNAMSIZ)
				usage("--dev is an interface name");
			o->dev = v;
		} else if (!strcmp(a, "--alternate")) {
			if (strcmp(v, "on") && strcmp(v, "off"))
				usage("--alternate is on or off");
			o->alternate = !strcmp(v, "on");
		} else if (!strcmp(a, "--src")) {
			o->src = v;
		} else if (!strcmp(a, "--dst-mac")) {
			unsigned int m[6];
			char end;

			if (sscanf(v, "%2x:%2x:%2x:%2x:%2x:%2x%c", &m[0], &m[1], &m[2], &m[3], &m[4],
				   &m[5], &end) != 6)
				usage("--dst-mac is six hex bytes, aa:bb:cc:dd:ee:ff");
			for (int k = 0; k < 6; k++)
				o->dst_mac[k] = (uint8_t)m[k];
			o->have_dst_mac = 1;
		} else if (!strcmp(a, "--busy-poll")) {
			double us = num(v, "busy-poll");

			if (us != floor(us) || us > BUSY_POLL_MAX_US)
				usage("--busy-poll is 0..1000 whole us");
			o->busy_poll_us = (long)us;
		} else
			usage("unknown option");
	}
	if (o->icmp < 0)
		usage("--probe is required");
	if (o->size < HDRS + PAYLOAD_MIN || o->size > SIZE_MAX_FRAME)
		usage("--size is 64..1514");
	if ((o->dev || o->src || o->have_dst_mac) && !(o->dev && o->src && o->have_dst_mac))
		usage("--dev, --src and --dst-mac go together");
	if (o->dev && !o->icmp)
		usage("--dev needs --probe icmp");
	if (o->alternate && !o->dev)
		usage("--alternate needs --dev");
}

/* -- the payload ------------------------------------------------------------------ */
struct payload {
	uint32_t magic;
	uint16_t flags;
	uint64_t seq;
	uint64_t tx_ns;
} __attribute__((packed));

/* -- send -------------------------------------------------------------------------- */
struct sender {
	struct opts o;
	int fd;
	uint16_t ident;
	size_t len; /* bytes handed to the socket: ICMP header + payload, or UDP payload */
	uint64_t planned, start, interval_num, ring_mask;
	struct rec *ring;
	uint64_t sent, emitted, received, late, dups, reordered, send_errors, max_rx_seq;
	int any_rx;
	uint8_t (*bufs)[SIZE_MAX_FRAME];
	FILE *out;
	int txfd; /* the socket requests leave by: fd, or the packet socket (--dev) */
	size_t head; /* bytes of Ethernet and IPv4 header before the ICMP message: 0 or L2L3 */
	uint8_t l2l3[L2L3]; /* --dev: the frame's headers, the same for every probe */
};

static uint64_t sched_of(const struct sender *s, uint64_t k)
{
	return s->start + (uint64_t)((long double)k * 1e9L / (long double)s->o.rate);
}

static void fill(struct sender *s, uint8_t *buf, uint64_t seq, uint64_t tx)
{
	struct payload *p = (struct payload *)(buf + (s->o.icmp ? 8 : 0));

	p->magic = htonl(MAGIC);
	p->flags = htons(s->o.socket_time ? FLAG_ASK : 0);
	p->seq = htobe64(seq);
	p->tx_ns = htobe64(tx);
	if (s->o.icmp) {
		struct icmphdr *h = (struct icmphdr *)buf;

		h->type = ICMP_ECHO;
		h->code = 0;
		h->checksum = 0;
		h->un.echo.id = htons(s->ident);
		h->un.echo.sequence = htons((uint16_t)seq);
		h->checksum = csum(buf, s->len);
	}
}

static void emit(struct sender *s, struct rec *r)
{
	/* 32 bytes (seq, sched, tx, rx), or 40 with the socket's time */
	size_t len = s->o.socket_time ? sizeof(*r) : offsetof(struct rec, sock_ns);

	if (fwrite(r, len, 1, s->out) != 1)
		die("write to stdout");
}

/* Emit, in order, every probe that is resolved: answered, timed out, or (at the end)
 * everything left. */
static void drain_ring(struct sender *s, uint64_t now, int all)
{
	uint64_t timeout = (uint64_t)(s->o.timeout_s * 1e9);

	while (s->emitted < s->sent) {
		struct rec *r = &s->ring[s->emitted & s->ring_mask];

		if (!all && !r->rx_ns && r->tx_ns && now < r->tx_ns + timeout)
			break;
		emit(s, r);
		s->emitted++;
	}
}

static void on_reply(struct sender *s, const uint8_t *data, ssize_t n, uint64_t now)
{
	const struct payload *p;

	if (s->o.icmp) {
		const struct iphdr *ip = (const void *)data;
		size_t ihl;

		if (n < (ssize_t)sizeof(*ip))
			return;
		ihl = ip->ihl * 4u;
		if (n < (ssize_t)(ihl + 8 + sizeof(*p)))
			return;
		const struct icmphdr *h = (const void *)(data + ihl);

		if (h->type != ICMP_ECHOREPLY || ntohs(h->un.echo.id) != s->ident)
			return;
		p = (const void *)(data + ihl + 8);
	} else {
		if (n < (ssize_t)sizeof(*p))
			return;
		p = (const void *)data;
	}
	if (ntohl(p->magic) != MAGIC)
		return;
	uint64_t seq = be64toh(p->seq);

	if (seq >= s->sent)
		return; /* not ours */
	if (seq < s->emitted) {
		s->late++; /* reported lost already (timeout) */
		return;
	}
	struct rec *r = &s->ring[seq & s->ring_mask];

	if (r->rx_ns) {
		s->dups++;
		return;
	}
	r->rx_ns = now;
	if (ntohs(p->flags) & FLAG_STAMPED)
		r->sock_ns = be64toh(p->tx_ns);
	s->received++;
	if (s->any_rx && seq < s->max_rx_seq)
		s->reordered++;
	if (!s->any_rx || seq > s->max_rx_seq)
		s->max_rx_seq = seq;
	s->any_rx = 1;
}

static void receive(struct sender *s)
{
	static uint8_t rbuf[BATCH][2048];
	struct mmsghdr m[BATCH];
	struct iovec iov[BATCH];

	for (;;) {
		memset(m, 0, sizeof(m));
		for (int i = 0; i < BATCH; i++) {
			iov[i].iov_base = rbuf[i];
			iov[i].iov_len = sizeof(rbuf[i]);
			m[i].msg_hdr.msg_iov = &iov[i];
			m[i].msg_hdr.msg_iovlen = 1;
		}
		int n = recvmmsg(s->fd, m, BATCH, MSG_DONTWAIT, NULL);
		uint64_t now = now_ns();

		if (n <= 0) {
			if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				die("recvmmsg");
			return;
		}
		for (int i = 0; i < n; i++)
			on_reply(s, rbuf[i], m[i].msg_len, now);
		if (n < BATCH)
			return;
	}
}

/* Send every probe due by now (up to BATCH in one call). */
static void send_due(struct sender *s, uint64_t now)
{
	struct mmsghdr m[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_in dst = {.sin_family = AF_INET};
	uint64_t due = s->sent;
	int b = 0;

	inet_pton(AF_INET, s->o.dst, &dst.sin_addr);
	while (due < s->planned && b < BATCH && sched_of(s, due) <= now)
		due++, b++;
	if (!b)
		return;
	memset(m, 0, sizeof(m));
	/* --alternate: a probe sent alone with an odd sequence number takes the raw socket */
	int raw = s->o.alternate && b == 1 && (s->sent & 1);
	uint64_t tx = now_ns();

	for (int i = 0; i < b; i++) {
		uint64_t seq = s->sent + i;

		size_t head = raw ? 0 : s->head;

		if (head)
			memcpy(s->bufs[i], s->l2l3, head);
		fill(s, s->bufs[i] + head, seq, tx);
		iov[i].iov_base = s->bufs[i];
		iov[i].iov_len = head + s->len;
		m[i].msg_hdr.msg_iov = &iov[i];
		m[i].msg_hdr.msg_iovlen = 1;
		if (s->o.icmp && !head) {
			m[i].msg_hdr.msg_name = &dst;
			m[i].msg_hdr.msg_namelen = sizeof(dst);
		}
	}
	char left[BATCH]; /* 1: handed to the device, sent */
	int done = 0;

	memset(left, 0, sizeof(left));
	while (done < b) {
		int n;

		if (b - done == 1) /* the usual case at low rates: the cheaper call */
			n = sendto(raw ? s->fd : s->txfd, iov[done].iov_base, iov[done].iov_len, 0,
				   m[done].msg_hdr.msg_name, m[done].msg_hdr.msg_namelen) < 0
				    ? -1
				    : 1;
		else
			n = sendmmsg(s->txfd, m + done, b - done, 0);
		if (n > 0) {
			memset(left + done, 1, (size_t)n);
			done += n;
			continue;
		}
		/* The message at `done` failed. From the packet socket, ENOBUFS is the device's
		 * drop (NET_XMIT_DROP: the veth peer's backlog was full), after the interface's
		 * egress hook saw the frame: it left, and was lost on the path (the capture
		 * points say where); the rest of the batch is sent on. */
		if (errno == ENOBUFS && s->head && !raw) {
			left[done++] = 1;
			continue;
		}
		if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR)
			die("sendmmsg");
		break; /* this one and the rest: refused by the kernel, never sent */
	}
	for (int i = 0; i < b; i++) {
		uint64_t seq = s->sent + i;
		struct rec *r = &s->ring[seq & s->ring_mask];

		r->seq = seq;
		r->sched_ns = sched_of(s, seq);
		r->tx_ns = left[i] ? tx : 0; /* refused by the kernel: never sent */
		r->rx_ns = 0;
		r->sock_ns = 0;
		s->send_errors += !left[i];
	}
	s->sent += (uint64_t)b;
}

static int open_send_socket(struct sender *s)
{
	int fd;

	if (s->o.icmp) {
		fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
		if (fd < 0)
			die("socket(raw icmp)");
		struct icmp_filter f = {.data = ~(1u << ICMP_ECHOREPLY)};

		if (setsockopt(fd, SOL_RAW, ICMP_FILTER, &f, sizeof(f)) < 0)
			die("ICMP_FILTER");
	} else {
		struct sockaddr_in dst = {.sin_family = AF_INET, .sin_port = htons(ECHO_PORT)};

		fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (fd < 0)
			die("socket(udp)");
		if (inet_pton(AF_INET, s->o.dst, &dst.sin_addr) != 1)
			usage("--dst is an IPv4 address");
		if (connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0)
			die("connect");
	}
	int big = 8 << 20;

	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big));
	return fd;
}

/* --dev: a packet socket bound to the interface (protocol 0: it reads nothing) and the
 * Ethernet and IPv4 headers every request carries. */
static int open_packet_socket(struct sender *s)
{
	struct ifreq ifr;
	struct in_addr src, dst;
	int fd = socket(AF_PACKET, SOCK_RAW, 0);

	if (fd < 0)
		die("socket(packet)");
	memset(&ifr, 0, sizeof(ifr));
	strncpy(ifr.ifr_name, s->o.dev, IFNAMSIZ - 1);
	if (ioctl(fd, SIOCGIFINDEX, &ifr) < 0)
		die(s->o.dev);
	struct sockaddr_ll ll = {.sll_family = AF_PACKET, .sll_ifindex = ifr.ifr_ifindex};

	if (bind(fd, (struct sockaddr *)&ll, sizeof(ll)) < 0)
		die("bind(packet)");
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) < 0)
		die("SIOCGIFHWADDR");
	if (inet_pton(AF_INET, s->o.src, &src) != 1)
		usage("--src is an IPv4 address");
	inet_pton(AF_INET, s->o.dst, &dst);
	memcpy(s->l2l3, s->o.dst_mac, 6);
	memcpy(s->l2l3 + 6, ifr.ifr_hwaddr.sa_data, 6);
	s->l2l3[12] = 0x08; /* IPv4 */
	s->l2l3[13] = 0x00;
	struct iphdr *ip = (struct iphdr *)(s->l2l3 + 14);

	ip->version = 4;
	ip->ihl = 5;
	ip->tos = 0;
	ip->tot_len = htons((uint16_t)(sizeof(*ip) + s->len));
	ip->id = 0;
	ip->frag_off = htons(0x4000); /* DF */
	ip->ttl = 64;
	ip->protocol = IPPROTO_ICMP;
	ip->check = 0;
	ip->saddr = src.s_addr;
	ip->daddr = dst.s_addr;
	ip->check = csum(ip, sizeof(*ip));
	s->head = L2L3;
	int big = 8 << 20;

	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big));
	return fd;
}

static int do_send(struct opts *o)
{
	struct sender s = {.o = *o};
	struct in_addr a;

	if (!o->dst || inet_pton(AF_INET, o->dst, &a) != 1)
		usage("--dst is an IPv4 address");
	if (o->rate <= 0 || o->rate > 10e6)
		usage("--rate is 1..10000000 probes/s");
	if (!o->count && o->duration_s <= 0)
		usage("give --count or --duration");
	s.planned = o->count ? o->count : (uint64_t)llround(o->rate * o->duration_s);
	if (!s.planned)
		usage("no probe to send");
	s.len = (size_t)o->size - HDRS + (o->icmp ? 8 : 0);
	s.ident = (uint16_t)getpid();
	uint64_t ring = 1024;

	while (ring < 2 * (uint64_t)(o->rate * (o->timeout_s + 0.1)) + BATCH && ring < (1ull << 26))
		ring <<= 1;
	s.ring_mask = ring - 1;
	s.ring = calloc(ring, sizeof(*s.ring));
	s.bufs = calloc(BATCH, sizeof(*s.bufs));
	if (!s.ring || !s.bufs)
		die("calloc");
	s.out = stdout;
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	fcntl(1, F_SETPIPE_SZ, 1 << 20);
	pin(o->cpu);
	s.fd = open_send_socket(&s);
	s.txfd = o->dev ? open_packet_socket(&s) : s.fd;

	s.start = now_ns() + 1000000; /* the first probe is due 1 ms from now */
	uint64_t last_flush = s.start, first_tx = 0, last_tx = 0;
	while (s.sent < s.planned && !stop) {
		uint64_t now = now_ns();

		if (sched_of(&s, s.sent) <= now) {
			uint64_t before = s.sent;

			send_due(&s, now);
			if (!first_tx)
				first_tx = s.ring[before & s.ring_mask].tx_ns;
			last_tx = s.ring[(s.sent - 1) & s.ring_mask].tx_ns ?: last_tx;
			if (s.sent - s.emitted > s.ring_mask) /* never: the ring holds 2x timeout */
				drain_ring(&s, now, 1);
		}
		receive(&s);
		now = now_ns();
		drain_ring(&s, now, 0);
		if (now - last_flush > 10000000) {
			fflush(s.out);
			last_flush = now;
		}
		if (s.sent < s.planned)
			wait_readable(s.fd, sched_of(&s, s.sent));
	}
	/* wait for the last replies: until every probe is answered or timed out */
	uint64_t end_wait = now_ns() + (uint64_t)(o->timeout_s * 1e9);

	while (s.emitted < s.sent && now_ns() < end_wait && !stop) {
		receive(&s);
		drain_ring(&s, now_ns(), 0);
		wait_readable(s.fd, now_ns() + SPIN_NS + 1000000);
	}
	receive(&s);
	drain_ring(&s, now_ns(), 1);
	fflush(s.out);
	uint64_t tx_ok = s.sent - s.send_errors;
	double dur = last_tx > first_tx ? (last_tx - first_tx) / 1e9 : 0;

	fprintf(stderr,
		"{\"planned\":%llu,\"sent\":%llu,\"send_errors\":%llu,\"received\":%llu,"
		"\"lost\":%llu,\"late\":%llu,\"duplicates\":%llu,\"reordered\":%llu,"
		"\"start_ns\":%llu,\"first_tx_ns\":%llu,\"last_tx_ns\":%llu,\"duration_s\":%.9f,"
		"\"rate_pps\":%.3f,\"timeout_s\":%.6f,\"ident\":%u,\"stopped_by_signal\":%s,"
		"\"send_path\":\"%s\",\"nice\":%d}\n",
		(unsigned long long)s.planned, (unsigned long long)tx_ok,
		(unsigned long long)s.send_errors, (unsigned long long)s.received,
		(unsigned long long)(tx_ok - s.received), (unsigned long long)s.late,
		(unsigned long long)s.dups, (unsigned long long)s.reordered,
		(unsigned long long)s.start, (unsigned long long)first_tx,
		(unsigned long long)last_tx, dur, o->rate, o->timeout_s, s.ident,
		stop ? "true" : "false", o->alternate ? "alternate" : o->dev ? "packet" : o->icmp ? "raw" : "udp", nice_got);
	return 0;
}

/* -- echo -------------------------------------------------------------------------- */
/* A request that asks for it (ASK) gets the time its recv call returned, `now`. */
static void stamp(struct payload *p, uint64_t now)
{
	if (ntohl(p->magic) != MAGIC || !(ntohs(p->flags) & FLAG_ASK))
		return;
	p->flags = htons(ntohs(p->flags) | FLAG_STAMPED);
	p->tx_ns = htobe64(now);
}

/* -- echo --busy-poll -------------------------------------------------------------- */
struct napi_seen {
	unsigned int id[NAPI_IDS];
	uint64_t n[NAPI_IDS], other;
	int k;
};

static int get_int(int fd, int opt)
{
	int v = -1;
	socklen_t l = sizeof(v);

	if (getsockopt(fd, SOL_SOCKET, opt, &v, &l) < 0)
		return -1;
	return v;
}

/* SO_BUSY_POLL as asked (see the top) and a 100 ms receive timeout; the ready line says
 * what the kernel reads back. */
static void set_busy_poll(int fd, long us, FILE *out)
{
	int v = (int)us;
	struct timeval tv = {.tv_usec = 100000};

	if (setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &v, sizeof(v)) < 0)
		die("SO_BUSY_POLL");
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
		die("SO_RCVTIMEO");
	int budget = get_int(fd, SO_BUSY_POLL_BUDGET); /* -1: this kernel does not say */
	char b[16] = "null";

	if (budget >= 0)
		snprintf(b, sizeof(b), "%d", budget);
	fprintf(out,
		"{\"ready\":true,\"busy_poll\":{\"asked_us\":%ld,\"busy_poll_us\":%d,"
		"\"prefer_busy_poll\":%d,\"busy_poll_budget\":%s,\"wait\":\"recvfrom\"}}\n",
		us, get_int(fd, SO_BUSY_POLL), get_int(fd, SO_PREFER_BUSY_POLL), b);
}

/* The socket's NAPI id after a datagram (0: none), counted per id. */
static void count_napi(int fd, struct napi_seen *s)
{
	unsigned int id = 0;
	socklen_t l = sizeof(id);

	if (getsockopt(fd, SOL_SOCKET, SO_INCOMING_NAPI_ID, &id, &l) < 0)
		die("SO_INCOMING_NAPI_ID");
	for (int i = 0; i < s->k; i++)
		if (s->id[i] == id) {
			s->n[i]++;
			return;
		}
	if (s->k == NAPI_IDS) {
		s->other++;
		return;
	}
	s->id[s->k] = id;
	s->n[s->k++] = 1;
}

/* {"napi_ids":{"ID":datagrams,...},"napi_other":N} without the braces around it */
static void print_napi(FILE *out, const struct napi_seen *s)
{
	fprintf(out, "\"napi_ids\":{");
	for (int i = 0; i < s->k; i++)
		fprintf(out, "%s\"%u\":%llu", i ? "," : "", s->id[i], (unsigned long long)s->n[i]);
	fprintf(out, "},\"napi_other\":%llu", (unsigned long long)s->other);
}

struct held {
	uint64_t due_ns;
	struct sockaddr_in peer;
	uint16_t len;
	uint8_t data[2048];
};

static int do_echo(struct opts *o)
{
	int fd;
	uint64_t answered = 0, ignored = 0, errors = 0, held_max = 0;
	enum { QN = 1 << 14 };
	struct held *q = calloc(QN, sizeof(*q));
	uint64_t head = 0, tail = 0; /* q[head..tail) wait for their time */
	int busy = o->busy_poll_us >= 0; /* --busy-poll given: block in recvfrom, count NAPI ids */
	struct napi_seen run = {0}, all = {0};

	if (!q)
		die("calloc");
	if (busy && o->icmp)
		usage("--busy-poll needs --probe udp (a raw socket has no NAPI id to poll)");
	pin(o->cpu);
	if (o->icmp) {
		fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
		if (fd < 0)
			die("socket(raw icmp)");
		struct icmp_filter f = {.data = ~(1u << ICMP_ECHO)};

		if (setsockopt(fd, SOL_RAW, ICMP_FILTER, &f, sizeof(f)) < 0)
			die("ICMP_FILTER");
	} else {
		struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons(ECHO_PORT)};

		fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (fd < 0)
			die("socket(udp)");
		if (bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0)
			die("bind port 7");
	}
	int big = 8 << 20;

	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big));
	if (busy)
		set_busy_poll(fd, o->busy_poll_us, stderr);
	else
		fprintf(stderr, "{\"ready\":true}\n");
	fflush(stderr);
	while (!stop) {
		if (report) { /* SIGUSR1: the NAPI ids since the last report */
			report = 0;
			fprintf(stderr, "{");
			print_napi(stderr, &run);
			fprintf(stderr, "}\n");
			fflush(stderr);
			memset(&run, 0, sizeof(run));
		}
		/* answer what is due first: a reply due now leaves before anything else is read,
		 * so that a held reply and an unheld one take the same steps after the hold */
		while (head < tail && q[head % QN].due_ns <= now_ns()) {
			struct held *r = &q[head % QN];

			if (sendto(fd, r->data, r->len, 0, (struct sockaddr *)&r->peer,
				   sizeof(r->peer)) < 0)
				errors++;
			else
				answered++;
			head++;
		}
		struct held *h = &q[tail % QN];
		socklen_t plen = sizeof(h->peer);
		/* with --busy-poll and nothing held, a blocking read: it busy-polls first */
		int flags = busy && head == tail ? 0 : MSG_DONTWAIT;
		ssize_t n = tail - head < QN
				    ? recvfrom(fd, h->data, sizeof(h->data), flags,
					       (struct sockaddr *)&h->peer, &plen)
				    : -1;
		uint64_t now = now_ns();

		if (n > 0) {
			size_t len = (size_t)n;

			if (busy) {
				count_napi(fd, &run);
				count_napi(fd, &all);
			}

			if (o->icmp) { /* raw: the IP header comes first */
				struct iphdr *ip = (void *)h->data;
				size_t ihl = ip->ihl * 4u;
				struct icmphdr *ic = (void *)(h->data + ihl);
				struct payload *p = (void *)(h->data + ihl + 8);

				if (len < ihl + 8 + sizeof(*p) || ic->type != ICMP_ECHO ||
				    ntohl(p->magic) != MAGIC) {
					ignored++;
					continue;
				}
				len -= ihl;
				memmove(h->data, h->data + ihl, len);
				stamp((void *)(h->data + 8), now);
				ic = (void *)h->data;
				ic->type = ICMP_ECHOREPLY;
				ic->checksum = 0;
				ic->checksum = csum(h->data, len);
			} else if (len >= sizeof(struct payload)) {
				stamp((void *)h->data, now);
			}
			h->len = (uint16_t)len;
			h->due_ns = now + o->delay_ns;
			tail++;
			if (tail - head > held_max)
				held_max = tail - head;
			continue;
		}
		if (head == tail) {
			if (!busy)
				wait_readable(fd, 0);
			continue;
		}
		uint64_t due = q[head % QN].due_ns;

		if (due <= now + CLOCK_SPIN_NS) /* the last microseconds: on the clock alone */
			while (now_ns() < due)
				;
		else
			wait_readable(fd, due);
	}
	fprintf(stderr,
		"{\"answered\":%llu,\"ignored\":%llu,\"send_errors\":%llu,\"held_max\":%llu,"
		"\"delay_ns\":%llu,\"nice\":%d",
		(unsigned long long)answered, (unsigned long long)ignored,
		(unsigned long long)errors, (unsigned long long)held_max,
		(unsigned long long)o->delay_ns, nice_got);
	if (busy) {
		fprintf(stderr, ",");
		print_napi(stderr, &all);
	}
	fprintf(stderr, "}\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct sigaction sa = {.sa_handler = on_signal};

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	parse(argc, argv, &o);
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* wake on time: no 50 us timer slack */
	setpriority(PRIO_PROCESS, 0, NICE); /* refused without CAP_SYS_NICE: run as we are */
	errno = 0;
	nice_got = getpriority(PRIO_PROCESS, 0);
	if (!strcmp(o.mode, "send"))
		return do_send(&o);
	if (!strcmp(o.mode, "echo"))
		return do_echo(&o);
	usage("the mode is send or echo");
	return 2;
}

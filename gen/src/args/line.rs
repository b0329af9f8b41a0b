//! The command lines as clap declares them: every flag of the send, receive and
//! XDP sink modes (`Line`) and of the delay line (`DelayLine`), with the help text
//! each flag shows in --help. Values are kept as given: `args` checks them, in the
//! order its refusals promise (the run's length before its flows, --help before any
//! value), and says what is wrong in netassay-gen's own one-line words.
//!
//! `scan` runs clap over a line and turns what clap refuses into a `FlagError`;
//! clap's own help, version and multi-line errors are not used.

use crate::error::FlagError;
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, Parser};

/// How --help lays a line's flags out: what it does, its usage, its flags by group.
const TEMPLATE: &str = "{about-with-newline}\n{usage-heading}\n{usage}\n\n{all-args}";

// The send, receive and XDP sink modes' flags (a line not starting with `delay`);
// the doc comment below is the first part of --help.
#[derive(Parser, Debug, Default)]
#[command(
    name = "netassay-gen",
    disable_help_flag = true,
    disable_version_flag = true,
    help_template = TEMPLATE,
    override_usage = "  send:       ip netns exec NS netassay-gen --dev IFACE --dst-mac MAC --src IP --dst IP \\
                --rate RATE --duration DUR [--size 64] [--flows 1] [--json] [options]
  replay:     ip netns exec NS netassay-gen --dev IFACE --dst-mac MAC --src IP --dst IP \\
                --pcap FILE (--rate RATE | --speed X) (--duration DUR | --count N) [options]
  receive:    ip netns exec NS netassay-gen --receive --dev IFACE [--duration DUR]
                [--idle-timeout DUR] [--expect N] [--flows N] [--json]
  XDP sink:   ip netns exec NS netassay-gen --xdp-sink --dev IFACE [--size 64 | --imix MIX | --pcap FILE]
                [--pass] [--latency] [--count-flows N --dst IP [--dsts N --dst-step N]]
                [--duration DUR]
  delay line: ip netns exec NS netassay-gen delay --a DEV --b DEV --delay DUR
                [--delay-back DUR] [--stats FILE] [--queue FRAMES] [--cpu N]",
    verbatim_doc_comment
)]
/// netassay-gen: paced UDP packet generator and receiver for netassay, and a delay line
///
/// Plans round(rate * duration) IPv4 or IPv6 UDP frames (or --count N), each paced to
/// its absolute deadline on CLOCK_MONOTONIC: packet k is due at start + k/rate. A
/// --duration run is bounded in time: it ends at its deadline, start + duration plus
/// the rate tolerance (0.1% of the duration: a run that late has missed its rate
/// anyway), and a send call in flight then is the last one, so a sender that cannot
/// keep the rate stops on time and reports the packets it did not send (planned minus
/// sent, 'truncated'). A --count run sends exactly N packets however long it takes.
/// Long gaps are slept, short ones busy-polled; packets go to the kernel
/// in batches sized to the rate (about 8 us of schedule per send call, 32 us with
/// XDP live frames, whose calls cost more). Every frame carries valid IPv4 header and
/// UDP checksums and a 22-byte payload after the UDP
/// header (big-endian): magic 0x6e614731 (u32), flow id (u16), per-flow sequence
/// number (u64, from 0), transmit time (u64, CLOCK_MONOTONIC ns); a flow id above
/// 65535 keeps its high 16 bits in the sequence field's top 16 bits (a sequence
/// number has 48). Global packet k goes to flow order(k % flows) with sequence
/// k / flows (order: incremental, or a permutation drawn from --flow-seed). Flow f
/// aims at destination slot d = f % D, D = min(flows, dsts): the destination
/// --dst + r * --dst-step with r = d (r = d * dsts / D when there are fewer flows
/// than destinations); then q = f / D gives its UDP source port --src-port + q % P
/// (P = 65536 - --src-port) and its source address --src + q / P. Only an address's
/// last 32 bits change. With one destination and at most P flows that is source
/// port --src-port + f from --src to --dst, as it always was.
pub struct Line {
    /// interface to send on (required); with --receive or --xdp-sink, the one to count on
    #[arg(
        long,
        value_name = "IFACE",
        allow_hyphen_values = true,
        help_heading = "Send options"
    )]
    pub dev: Option<String>,

    /// destination MAC, aa:bb:cc:dd:ee:ff (required)
    #[arg(
        long,
        value_name = "MAC",
        allow_hyphen_values = true,
        help_heading = "Send options"
    )]
    pub dst_mac: Option<String>,

    /// source MAC (default: the interface's own)
    #[arg(
        long,
        value_name = "MAC",
        allow_hyphen_values = true,
        help_heading = "Send options"
    )]
    pub src_mac: Option<String>,

    /// source address; --src and --dst are both IPv4 or both IPv6 (required)
    #[arg(
        long,
        value_name = "IP",
        allow_hyphen_values = true,
        help_heading = "Send options"
    )]
    pub src: Option<String>,

    /// destination address (required): in 198.18.0.0/15 or 2001:2::/48
    #[arg(
        long,
        value_name = "IP",
        allow_hyphen_values = true,
        help_heading = "Send options"
    )]
    pub dst: Option<String>,

    /// packets per second, e.g. 200000, 200k, 1.5M (k = 1000);
    /// 'max' sends as fast as possible for --duration (best effort)
    #[arg(
        long,
        value_name = "RATE",
        allow_hyphen_values = true,
        help_heading = "Send options",
        verbatim_doc_comment
    )]
    pub rate: Option<String>,

    /// sending time: 10, 10s, 500ms, 250us (default unit s); the
    /// run stops at this deadline (see above) even when packets
    /// are left. With --receive or --xdp-sink: how long to count
    #[arg(
        long,
        value_name = "DUR",
        allow_hyphen_values = true,
        help_heading = "Send options",
        verbatim_doc_comment
    )]
    pub duration: Option<String>,

    /// packets to send instead of --duration (planned = N); the
    /// run sends all of them, with no deadline
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "Send options",
        verbatim_doc_comment
    )]
    pub count: Option<String>,

    /// Ethernet frame size WITHOUT the 4-byte FCS, like trafgen:
    /// 64..1518 for IPv4, 84..1518 for IPv6 (default 64); frames
    /// above 1514 need an interface MTU above 1500
    #[arg(
        long,
        value_name = "BYTES",
        allow_hyphen_values = true,
        help_heading = "Send options",
        verbatim_doc_comment
    )]
    pub size: Option<String>,

    /// a frame mix instead of --size: SIZE:WEIGHT,... (sizes as
    /// --size counts them, whole weights), e.g. 64:7,590:4,1514:1,
    /// or 'simple' (that one: TRex's imix, 60/590/1514 without
    /// FCS, 7:4:1, its 60 raised to 64). Frame k has the size of
    /// slot k % W of a fixed cycle of W = the weights' sum frames,
    /// spread by smooth weighted round robin (simple: 64 590 64 64
    /// 590 64 1514 64 590 64 590 64); --rate counts frames of all
    /// sizes; the result adds sent_per_size. sendmmsg only (auto
    /// picks it; not xdp or txring)
    #[arg(
        long,
        value_name = "MIX",
        allow_hyphen_values = true,
        help_heading = "Send options",
        verbatim_doc_comment
    )]
    pub imix: Option<String>,

    /// replay a capture instead of building frames: a libpcap
    /// (tcpdump -w, us or ns) or pcapng file; every Ethernet
    /// frame of IPv4 or IPv6 of --src's family is sent with its
    /// MACs and addresses rewritten (--dst-mac and the interface's
    /// own or --src-mac, --src, --dst) and its IPv4 header, UDP,
    /// TCP and ICMPv6 checksums fixed, in the capture's order,
    /// looped for --duration or --count; a UDP frame with 22 or
    /// more bytes of payload carries the netassay payload (the XDP
    /// sink counts it: --xdp-sink --pcap FILE). Frames of another
    /// kind, cut short or above the MTU are skipped and counted
    /// (pcap_skipped). With --rate (frames/s, evenly paced) or
    /// --speed. sendmmsg only; no --size, --imix, --flows, ports
    #[arg(
        long,
        value_name = "FILE",
        allow_hyphen_values = true,
        help_heading = "Send options",
        verbatim_doc_comment
    )]
    pub pcap: Option<String>,

    /// with --pcap instead of --rate: keep the capture's own gaps
    /// between frames, divided by X (1: as captured, 2: twice as
    /// fast); the loop starts again one mean gap after the last
    #[arg(
        long,
        value_name = "X",
        allow_hyphen_values = true,
        help_heading = "Send options",
        verbatim_doc_comment
    )]
    pub speed: Option<String>,

    /// with --pcap, --src and --dst (and no --dev): print what a
    /// replay of the capture sends in each loop as one JSON line
    /// (records, frames, marked, skipped by why, per_size,
    /// marked_per_size, bytes, mean_bytes, span_ns) and exit; frames
    /// above --mtu-bytes (default 1500) plus 14 count as too_big
    #[arg(
        long,
        overrides_with = "describe",
        help_heading = "Send options",
        verbatim_doc_comment
    )]
    pub describe: bool,

    /// with --describe: the interface MTU frames are checked against
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "Send options"
    )]
    pub mtu_bytes: Option<String>,

    /// number of flows, distinct 5-tuples (default 1, max 1000000):
    /// source ports first, then source addresses (see above);
    /// every destination and source stays in the benchmarking
    /// ranges unless --allow-any-dst. With --receive: the flows
    /// the sender used (to report silent flows as lost)
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "Send options",
        verbatim_doc_comment
    )]
    pub flows: Option<String>,

    /// incremental (default) | random: the flows in an order drawn
    /// from --flow-seed (Fisher-Yates), the same in every technique
    #[arg(
        long,
        value_name = "O",
        allow_hyphen_values = true,
        help_heading = "Send options",
        verbatim_doc_comment
    )]
    pub flow_order: Option<String>,

    /// the random order's seed (default 1; reported as flow_seed)
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "Send options"
    )]
    pub flow_seed: Option<String>,

    /// destinations the flows are spread over (default 1, max
    /// 1000000), --dst-step apart from --dst (routes of a FIB)
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "Send options",
        verbatim_doc_comment
    )]
    pub dsts: Option<String>,

    /// addresses between two destinations (default 1)
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "Send options"
    )]
    pub dst_step: Option<String>,

    /// first UDP source port (default 10000)
    #[arg(
        long,
        value_name = "P",
        allow_hyphen_values = true,
        help_heading = "Send options"
    )]
    pub src_port: Option<String>,

    /// UDP destination port (default 9, discard)
    #[arg(
        long,
        value_name = "P",
        allow_hyphen_values = true,
        help_heading = "Send options"
    )]
    pub dst_port: Option<String>,

    /// most packets per send call, also when catching up after
    /// falling behind (default 64, max 1024)
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "Send options",
        verbatim_doc_comment
    )]
    pub burst: Option<String>,

    /// packets per send call (default: sized to the rate, <= burst)
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "Send options"
    )]
    pub batch: Option<String>,

    /// paced XDP live frames: after a stall (the CPU taken away), the
    /// frames that fell due go out at most F times the rate on average
    /// (a flush of them at once) until the schedule is caught up, so
    /// that the receiver's ring sees a bounded burst (default 2;
    /// 'off': as fast as they are built)
    #[arg(
        long,
        value_name = "F",
        allow_hyphen_values = true,
        help_heading = "Send options",
        verbatim_doc_comment
    )]
    pub catch_up: Option<String>,

    /// auto | xdp | sendmmsg | txring | none (default auto). xdp: XDP
    /// live frames through BPF_PROG_RUN, stamped by an XDP program
    /// and sent with XDP_TX (needs kernel >= 5.18 and an XDP
    /// program on the veth peer, e.g. --xdp-sink; falls back to
    /// sendmmsg when frames do not leave). sendmmsg: AF_PACKET raw
    /// socket, sendmmsg batches, PACKET_QDISC_BYPASS. txring:
    /// AF_PACKET TPACKET_V2 TX_RING, QDISC_BYPASS. auto: xdp when
    /// the veth peer runs an XDP program (asked over rtnetlink)
    /// and the rate is max or >= 500k (~7x sendmmsg's peak
    /// measured, but sendmmsg paces more tightly below), else
    /// sendmmsg. The result names the
    /// one that ran ('technique'), why ('technique_reason') and why
    /// it fell back ('fallback_reason'). none: pace and stamp
    /// as usual but send nothing (technique 'pacing_only'; 'sent'
    /// counts frames handed to no one): its lateness is what this
    /// CPU alone costs the schedule, the floor under the others'
    #[arg(
        long,
        value_name = "T",
        allow_hyphen_values = true,
        help_heading = "Send options",
        verbatim_doc_comment
    )]
    pub technique: Option<String>,

    /// exit 0 even when the rate was not kept or the run sent
    /// fewer packets than planned
    #[arg(
        long,
        overrides_with = "best_effort",
        help_heading = "Send options",
        verbatim_doc_comment
    )]
    pub best_effort: bool,

    /// send through the interface's qdisc (sendmmsg and txring
    /// without PACKET_QDISC_BYPASS): a frame dropped after the qdisc
    /// (say, by a veth peer whose backlog is full) is then lost on
    /// the wire, as on a real link, instead of refused to the sender
    /// and retried; give the interface a queueing qdisc (pfifo).
    /// Refused with --technique xdp or none (they never pass a
    /// qdisc); with auto it rules XDP live frames out
    #[arg(
        long,
        overrides_with = "qdisc",
        help_heading = "Send options",
        verbatim_doc_comment
    )]
    pub qdisc: bool,

    /// wait for each send's time with sched_yield, not a busy poll:
    /// two senders pinned to one CPU (netassay's --bidirectional)
    /// interleave instead of taking turns of a scheduler slice
    #[arg(
        long,
        overrides_with = "share_cpu",
        help_heading = "Send options",
        verbatim_doc_comment
    )]
    pub share_cpu: bool,

    /// allow a --dst outside the benchmarking ranges
    #[arg(long, overrides_with = "allow_any_dst", help_heading = "Send options")]
    pub allow_any_dst: bool,

    /// allow sending from the host's own network namespace
    #[arg(
        long,
        overrides_with = "allow_host_netns",
        help_heading = "Send options"
    )]
    pub allow_host_netns: bool,

    /// pin the sending thread (with --receive: the receiver) to CPU N
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "Send options"
    )]
    pub cpu: Option<String>,

    /// attach a count-and-drop XDP program to --dev: netassay-gen
    /// test frames (IPv4 without options or IPv6, UDP, exactly
    /// --size bytes, the payload magic 0x6e614731 right after the
    /// UDP header) are counted (per-CPU) and dropped; everything
    /// else passes untouched, same-size frames without the magic
    /// too. --size 64..9000 (default 64); --imix MIX counts each
    /// size of the mix on its own (per_size in every line; weights
    /// unused); --pcap FILE each size of the capture's frames that
    /// a replay marks (UDP, 22 bytes of payload or more). It takes
    /// --dev, --size, --imix, --pcap and --duration (and
    /// --pass, --latency, --count-flows with --dst, --dsts and
    /// --dst-step). Prints a JSON line with
    /// keys packets, t_ns and action when attached, one more on
    /// each SIGUSR1, and a final one (packets since attach, action)
    /// on SIGINT/SIGTERM or after --duration; the program is
    /// detached when the process ends. The cheapest receiver for
    /// measuring a sender's peak on veth, and it lets the peer
    /// take XDP frames
    #[arg(
        long,
        overrides_with = "xdp_sink",
        help_heading = "XDP sink",
        verbatim_doc_comment
    )]
    pub xdp_sink: bool,

    /// with --xdp-sink: count the test frames, then pass them on
    /// (XDP_PASS) instead of dropping them, so that the stack
    /// behind (an nft counter, a receiver) can count them too;
    /// the first and the final line say action pass (else drop)
    #[arg(
        long,
        overrides_with = "pass",
        help_heading = "XDP sink",
        verbatim_doc_comment
    )]
    pub pass: bool,

    /// with --xdp-sink: also count every flow's test frames (N
    /// flows, as the sender's --flows), each only when its
    /// destination is the one its flow aims at (--dst, --dsts,
    /// --dst-step as the sender had them); every line carries
    /// flows: flows, seen, min, max, counted (per flow, since the
    /// last SIGUSR2, which marks them and prints a line),
    /// misdirected (a frame whose destination is not its flow's)
    /// and unknown_flow (a flow id past N)
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "XDP sink",
        verbatim_doc_comment
    )]
    pub count_flows: Option<String>,

    /// with --xdp-sink: also add each test frame's one-way latency
    /// (arrival minus its transmit stamp, both CLOCK_MONOTONIC) to
    /// a histogram in the kernel: 1 us buckets below 256 us, then
    /// 128 per octave (<= 0.8% wide) to 1.05 s, and an overflow.
    /// Every line then carries a latency object: n, sum_ns, min_ns,
    /// max_ns, ahead (stamps later than the arrival, left out) and
    /// buckets [[lower_ns, upper_ns, count], ...] (non-empty
    /// ones), counted since the previous line
    #[arg(
        long,
        overrides_with = "latency",
        help_heading = "XDP sink",
        verbatim_doc_comment
    )]
    pub latency: bool,

    /// count netassay-gen frames arriving on --dev (AF_PACKET
    /// TPACKET_V3 ring) by flow and sequence: received, lost,
    /// reordered, duplicated, one-way latency percentiles (valid
    /// when sender and receiver share CLOCK_MONOTONIC, i.e. the
    /// same host); stops on SIGINT/SIGTERM, --duration or
    /// --idle-timeout and prints the result. It also takes --flows
    /// and --cpu (above)
    #[arg(
        long,
        overrides_with = "receive",
        help_heading = "Receive options",
        verbatim_doc_comment
    )]
    pub receive: bool,

    /// stop when no packet came for DUR after the first one
    #[arg(
        long,
        value_name = "DUR",
        allow_hyphen_values = true,
        help_heading = "Receive options"
    )]
    pub idle_timeout: Option<String>,

    /// packets the sender planned, so that loss at the tail counts
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "Receive options"
    )]
    pub expect: Option<String>,

    /// receive ring size in MiB (default 64)
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "Receive options"
    )]
    pub ring_mb: Option<String>,

    /// also time every UDP frame (from any sender) against an
    /// ideal schedule at R packets/s and report the arrival rate
    /// and lateness percentiles (key 'schedule'), to compare the
    /// pacing of different generators at the receiver
    #[arg(
        long,
        value_name = "R",
        allow_hyphen_values = true,
        help_heading = "Receive options",
        verbatim_doc_comment
    )]
    pub schedule_rate: Option<String>,

    /// also count per interval of DUR from the first arrival
    /// (key 'intervals': start_s, end_s, packets, bytes of UDP
    /// payload, lost by sequence gaps as iperf3 counts them)
    #[arg(
        long,
        value_name = "DUR",
        allow_hyphen_values = true,
        help_heading = "Receive options",
        verbatim_doc_comment
    )]
    pub interval: Option<String>,

    /// also check every test frame's IPv4 header and UDP checksums
    /// (checksum_errors of checksums_checked: frames captured whole)
    #[arg(
        long,
        overrides_with = "verify",
        help_heading = "Receive options",
        verbatim_doc_comment
    )]
    pub verify: bool,

    /// one JSON object on stdout (else a readable summary)
    #[arg(long, overrides_with = "json", help_heading = "Output")]
    pub json: bool,

    /// this text
    #[arg(short, long, overrides_with = "help", help_heading = "Output")]
    pub help: bool,

    /// the version
    #[arg(short = 'V', long, overrides_with = "version", help_heading = "Output")]
    pub version: bool,

    /// Words that are no flag: refused, the first one named.
    #[arg(hide = true, allow_hyphen_values = true)]
    pub stray: Vec<String>,
}

// The delay line's flags (the words after `delay`); the doc comment below starts
// its part of --help.
#[derive(Parser, Debug, Default)]
#[command(
    name = "netassay-gen delay",
    disable_help_flag = true,
    disable_version_flag = true,
    help_template = TEMPLATE,
    override_usage = "  ip netns exec NS netassay-gen delay --a DEV --b DEV --delay DUR
      [--delay-back DUR] [--stats FILE] [--queue FRAMES] [--cpu N]",
    verbatim_doc_comment
)]
/// netassay-gen delay: a delay line
///
/// Forwards every Ethernet frame received on --a out of --b
/// (direction ab) and every one received on --b out of --a
/// (ba), bytes unchanged and in arrival order, each once the
/// realtime clock reaches its kernel receive stamp plus the
/// delay: an L2 long path between two devices of this network
/// namespace (say veth ends, promiscuous, with tso, gso and
/// gro off on both ends of both links so that no frame
/// exceeds 9234 bytes; longer ones are dropped and counted
/// drop_oversize). A checksum left to offload travels with
/// its frame (PACKET_VNET_HDR), so tx checksumming may stay
/// on. Frames this host sends on them are not taken. Each
/// direction runs in a thread of its own that sleeps until
/// a frame comes or the oldest is due; under CPU contention
/// run it at a real-time priority (chrt -f 10) for frames
/// to leave on time. Prints one
/// JSON line when ready: ready, pid, a, b, delay_ns,
/// delay_back_ns; nothing else on stdout. SIGINT/SIGTERM stop
/// it: the frames still held are counted drop_shutdown, the
/// stats written once more, exit 0
pub struct DelayLine {
    /// the device frames come in on for direction ab (required, distinct from --b)
    #[arg(long = "a", value_name = "DEV", allow_hyphen_values = true)]
    pub a: Option<String>,

    /// the device frames come in on for direction ba (required)
    #[arg(long = "b", value_name = "DEV", allow_hyphen_values = true)]
    pub b: Option<String>,

    /// delay of ab: 0..10s, e.g. 20ms, 500us, 0 (required)
    #[arg(long, value_name = "DUR", allow_hyphen_values = true)]
    pub delay: Option<String>,

    /// delay of ba (default --delay)
    #[arg(long, value_name = "DUR", allow_hyphen_values = true)]
    pub delay_back: Option<String>,

    /// write the stats JSON to FILE every second and at exit
    /// (FILE.tmp, then renamed): delay_ns, delay_back_ns,
    /// uptime_s, and per direction (ab, ba) counts since the
    /// start: rx_frames, rx_bytes, tx_frames, tx_bytes,
    /// drop_socket (the receive socket's), drop_queue (more than
    /// --queue held), drop_send (the kernel refused the frame),
    /// drop_oversize, drop_shutdown, queue_max (most held at once),
    /// late_max_ns, late_sum_ns, late_over_50us, late_over_1ms
    /// (frames sent that long after their due time)
    #[arg(
        long,
        value_name = "FILE",
        allow_hyphen_values = true,
        verbatim_doc_comment
    )]
    pub stats: Option<String>,

    /// most frames held per direction (default 200000); frames
    /// beyond it are dropped
    #[arg(
        long,
        value_name = "FRAMES",
        allow_hyphen_values = true,
        verbatim_doc_comment
    )]
    pub queue: Option<String>,

    /// pin both directions' threads to CPU N
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub cpu: Option<String>,

    /// this text
    #[arg(short, long, overrides_with = "help")]
    pub help: bool,

    /// Words that are no flag: refused, the first one named.
    #[arg(hide = true, allow_hyphen_values = true)]
    pub stray: Vec<String>,
}

/// What --help prints after the flags: the send result's keys and the exit codes.
const AFTER: &str = "\
OUTPUT
  Send keys: technique, planned, sent, first_tx_ns, last_tx_ns, duration_s (last
  minus first send call), rate_pps (requested), achieved_rate_pps (packets sent
  after the first send call / duration_s), rate_error (achieved/requested - 1),
  lateness_max_ns, lateness_p99_ns, lateness_p50_ns (send-call time minus each
  packet's deadline), retries (sends the kernel refused and that were retried),
  egress_drops (the interface's tx_dropped increase during the run: frames the
  veth peer could not take), technique_reason, shortfall (planned - sent),
  truncated (fewer sent than planned: the deadline passed or a signal came),
  stop_reason (complete: every planned packet sent; deadline: the duration ran
  out, the normal end at --rate max; signal), stopped_by_signal, rate_tolerance
  (0.001), ok (every planned packet sent and the rate kept within 0.1%).
  SIGINT/SIGTERM stop sending cleanly; the result covers what was sent.

EXIT CODES
  0  done, every planned packet sent and the rate kept within 0.1% (or
     --best-effort, or --rate max, or receive mode)
  1  a system error (socket, interface, the kernel refused every send)
  2  bad arguments or a refused destination/namespace (one line on stderr)
  3  the rate was not kept: achieved off by more than 0.1%, or fewer packets
     sent than planned (the deadline passed first, or a signal stopped the
     run); the JSON is still printed
";

/// The text of --help (also of `delay --help`): the modes' flags, the delay
/// line's, the output and the exit codes.
pub fn help() -> String {
    format!(
        "{}\n{}\n{AFTER}",
        Line::command().render_long_help(),
        DelayLine::command().render_long_help()
    )
}

/// A line as clap read it: its flags, and the flags given with a value in the
/// line's order.
pub struct Scanned<T> {
    pub flags: T,
    pub valued: Vec<String>,
}

/// Read `argv` (without the program's name) with clap; refuse, naming the first
/// word at fault as the line reads: an unknown word, a flag missing its value, a
/// flag with a value given twice, a switch given a value.
///
/// clap's conventions hold where they differ from the words alone: a bare `--`
/// that is no flag's value ends the flags (the words after it are unknown ones)
/// and `-hV` is `-h -V`.
pub fn scan<T: Parser>(argv: &[String]) -> Result<Scanned<T>, FlagError> {
    let mut cmd = T::command();
    let words = std::iter::once(cmd.get_name().to_string()).chain(argv.iter().cloned());
    let m = cmd
        .try_get_matches_from_mut(words)
        .map_err(|e| refused(&e))?;
    // from the first word that is no flag on, clap keeps every word in `stray`
    if let Some(word) = m.get_many::<String>("stray").and_then(|mut w| w.next()) {
        return Err(FlagError::Unknown(word.clone()));
    }
    // the flags given with a value, in the line's order (clap's indices grow
    // along the line)
    let mut valued: Vec<(usize, String)> = cmd
        .get_arguments()
        .filter(|arg| arg.get_action().takes_values())
        .filter_map(|arg| {
            let at = m.index_of(arg.get_id().as_str())?;
            Some((at, format!("--{}", arg.get_long()?)))
        })
        .collect();
    valued.sort();
    let flags = T::from_arg_matches(&m).map_err(|e| refused(&e))?;
    Ok(Scanned {
        flags,
        valued: valued.into_iter().map(|(_, k)| k).collect(),
    })
}

/// What clap refused, in netassay-gen's words.
fn refused(e: &clap::Error) -> FlagError {
    let context = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => s.clone(),
        _ => String::new(),
    };
    // clap names a flag with its value's name: "--dev <IFACE>"
    let arg = context(ContextKind::InvalidArg);
    let flag = arg.split(' ').next().unwrap_or_default().to_string();
    match e.kind() {
        ErrorKind::ArgumentConflict => FlagError::GivenTwice(flag),
        ErrorKind::InvalidValue => FlagError::NeedsValue(flag),
        ErrorKind::TooManyValues => {
            FlagError::Unknown(format!("{flag}={}", context(ContextKind::InvalidValue)))
        }
        ErrorKind::UnknownArgument => FlagError::Unknown(arg),
        _ => FlagError::Unknown(e.to_string().lines().next().unwrap_or_default().to_string()),
    }
}

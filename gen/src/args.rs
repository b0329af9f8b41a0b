//! Command-line parsing (hand-written: one binary, few flags, fast build).

use std::net::IpAddr;

pub const HELP: &str = "\
netassay-gen: paced UDP packet generator and receiver for netassay

USAGE (send):
  ip netns exec NS netassay-gen --dev IFACE --dst-mac MAC --src IP --dst IP \\
      --rate RATE --duration DUR [--size 64] [--flows 1] [--json] [options]
USAGE (receive):
  ip netns exec NS netassay-gen --receive --dev IFACE [--duration DUR]
      [--idle-timeout DUR] [--expect N] [--flows N] [--json]
USAGE (XDP sink):
  ip netns exec NS netassay-gen --xdp-sink --dev IFACE [--size 64] [--pass]
      [--duration DUR]

Plans round(rate * duration) IPv4 or IPv6 UDP frames (or --count N), each paced to
its absolute deadline on CLOCK_MONOTONIC: packet k is due at start + k/rate. A
--duration run is bounded in time: it ends at its deadline, start + duration plus
the rate tolerance (0.1% of the duration: a run that late has missed its rate
anyway), and a send call in flight then is the last one, so a sender that cannot
keep the rate stops on time and reports the packets it did not send (planned minus
sent, 'truncated'). A --count run sends exactly N packets however long it takes.
Long gaps are slept, short ones busy-polled; packets go to the kernel
in batches sized to the rate (about 8 us of schedule per send call, 32 us with
XDP live frames, whose calls cost more). Every frame carries valid IPv4 header and
UDP checksums and a 22-byte payload after the UDP
header (big-endian): magic 0x6e614731 (u32), flow id (u16), per-flow sequence
number (u64, from 0), transmit time (u64, CLOCK_MONOTONIC ns). Global packet k goes
to flow k % flows with sequence k / flows; flow f uses UDP source port
--src-port + f.

SEND OPTIONS
  --dev IFACE          interface to send on (required)
  --dst-mac MAC        destination MAC, aa:bb:cc:dd:ee:ff (required)
  --src-mac MAC        source MAC (default: the interface's own)
  --src IP, --dst IP   source and destination address, both IPv4 or both IPv6
                       (required); --dst must be in 198.18.0.0/15 or 2001:2::/48
  --rate RATE          packets per second, e.g. 200000, 200k, 1.5M (k = 1000);
                       'max' sends as fast as possible for --duration (best effort)
  --duration DUR       sending time: 10, 10s, 500ms, 250us (default unit s); the
                       run stops at this deadline (see above) even when packets
                       are left
  --count N            packets to send instead of --duration (planned = N); the
                       run sends all of them, with no deadline
  --size BYTES         Ethernet frame size WITHOUT the 4-byte FCS, like trafgen:
                       64..1518 for IPv4, 84..1518 for IPv6 (default 64); frames
                       above 1514 need an interface MTU above 1500
  --flows N            number of flows, by UDP source port (default 1, max 65536)
  --src-port P         first UDP source port (default 10000)
  --dst-port P         UDP destination port (default 9, discard)
  --burst N            most packets per send call, also when catching up after
                       falling behind (default 64, max 1024)
  --batch N            packets per send call (default: sized to the rate, <= burst)
  --technique T        auto | xdp | sendmmsg | txring | none (default auto). xdp: XDP
                       live frames through BPF_PROG_RUN, stamped by an XDP program
                       and sent with XDP_TX (needs kernel >= 5.18 and an XDP
                       program on the veth peer, e.g. --xdp-sink; falls back to
                       sendmmsg when frames do not leave). sendmmsg: AF_PACKET raw
                       socket, sendmmsg batches, PACKET_QDISC_BYPASS. txring:
                       AF_PACKET TPACKET_V2 TX_RING, QDISC_BYPASS. auto: xdp when
                       the veth peer runs an XDP program (asked over rtnetlink)
                       and the rate is max or >= 500k (~7x sendmmsg's peak
                       measured, but sendmmsg paces more tightly below), else
                       sendmmsg. The result names the
                       one that ran ('technique'), why ('technique_reason') and why
                       it fell back ('fallback_reason'). none: pace and stamp
                       as usual but send nothing (technique 'pacing_only'; 'sent'
                       counts frames handed to no one): its lateness is what this
                       CPU alone costs the schedule, the floor under the others'
  --best-effort        exit 0 even when the rate was not kept or the run sent
                       fewer packets than planned
  --qdisc              send through the interface's qdisc (sendmmsg and txring
                       without PACKET_QDISC_BYPASS): a frame dropped after the qdisc
                       (say, by a veth peer whose backlog is full) is then lost on
                       the wire, as on a real link, instead of refused to the sender
                       and retried; give the interface a queueing qdisc (pfifo).
                       Refused with --technique xdp or none (they never pass a
                       qdisc); with auto it rules XDP live frames out
  --allow-any-dst      allow a --dst outside the benchmarking ranges
  --allow-host-netns   allow sending from the host's own network namespace
  --cpu N              pin the sending thread to CPU N

XDP SINK
  --xdp-sink           attach a count-and-drop XDP program to --dev: netassay-gen
                       test frames (IPv4 without options or IPv6, UDP, exactly
                       --size bytes, the payload magic 0x6e614731 right after the
                       UDP header) are counted (per-CPU) and dropped; everything
                       else passes untouched, same-size frames without the magic
                       too. --size 64..9000 (default 64). Prints a JSON line with
                       keys packets, t_ns and action when attached, one more on
                       each SIGUSR1, and a final one (packets since attach, action)
                       on SIGINT/SIGTERM or after --duration; the program is
                       detached when the process ends. The cheapest receiver for
                       measuring a sender's peak on veth, and it lets the peer
                       take XDP frames
  --pass               with --xdp-sink: count the test frames, then pass them on
                       (XDP_PASS) instead of dropping them, so that the stack
                       behind (an nft counter, a receiver) can count them too;
                       the first and the final line say action pass (else drop)

RECEIVE OPTIONS
  --receive            count netassay-gen frames arriving on --dev (AF_PACKET
                       TPACKET_V3 ring) by flow and sequence: received, lost,
                       reordered, duplicated, one-way latency percentiles (valid
                       when sender and receiver share CLOCK_MONOTONIC, i.e. the
                       same host); stops on SIGINT/SIGTERM, --duration or
                       --idle-timeout and prints the result
  --idle-timeout DUR   stop when no packet came for DUR after the first one
  --expect N           packets the sender planned, so that loss at the tail counts
  --flows N            flows the sender used (to report silent flows as lost)
  --ring-mb N          receive ring size in MiB (default 64)
  --schedule-rate R    also time every UDP frame (from any sender) against an
                       ideal schedule at R packets/s and report the arrival rate
                       and lateness percentiles (key 'schedule'), to compare the
                       pacing of different generators at the receiver
  --interval DUR       also count per interval of DUR from the first arrival
                       (key 'intervals': start_s, end_s, packets, bytes of UDP
                       payload, lost by sequence gaps as iperf3 counts them)
  --cpu N              pin the receiver to CPU N

OUTPUT
  --json               one JSON object on stdout (else a readable summary)
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
  -h, --help  this text;  -V, --version  the version
";

#[derive(Debug, Clone, PartialEq)]
pub enum Rate {
    Pps(f64),
    Max,
}

#[derive(Debug, Clone)]
pub struct Send {
    pub dev: String,
    pub dst_mac: [u8; 6],
    pub src_mac: Option<[u8; 6]>,
    pub src: IpAddr,
    pub dst: IpAddr,
    pub rate: Rate,
    pub duration_ns: Option<u64>,
    pub count: Option<u64>,
    pub size: usize,
    pub flows: u64,
    pub src_port: u16,
    pub dst_port: u16,
    pub burst: usize,
    pub batch: Option<usize>,
    pub technique: String,
    pub best_effort: bool,
    pub qdisc: bool,
    pub allow_any_dst: bool,
    pub allow_host_netns: bool,
    pub json: bool,
    pub cpu: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct Recv {
    pub dev: String,
    pub duration_ns: Option<u64>,
    pub idle_ns: Option<u64>,
    pub expect: Option<u64>,
    pub flows: Option<u64>,
    pub ring_mb: u32,
    pub schedule_rate: Option<f64>,
    pub interval_ns: Option<u64>,
    pub json: bool,
    pub cpu: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct SinkArgs {
    pub dev: String,
    pub size: usize,
    pub duration_ns: Option<u64>,
    /// Pass the counted frames on instead of dropping them.
    pub pass: bool,
}

#[derive(Debug)]
pub enum Cmd {
    Help,
    Version,
    Sink(SinkArgs),
    Send(Box<Send>),
    Recv(Recv),
}

/// Parse "200k", "1.5M", "1e5", "100000" (k = 1000).
pub fn parse_rate(s: &str) -> Result<Rate, String> {
    if s == "max" {
        return Ok(Rate::Max);
    }
    let (num, mul) = split_suffix(s, &[("k", 1e3), ("K", 1e3), ("M", 1e6), ("G", 1e9)], 1.0);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("--rate '{s}' is not a rate: use e.g. 200k, 1.5M, max"))?;
    let v = v * mul;
    if !(v.is_finite() && v > 0.0 && v <= 1e9) {
        return Err(format!("--rate '{s}' is out of range: use 1..1G packets/s"));
    }
    Ok(Rate::Pps(v))
}

/// Parse "10", "10s", "500ms", "250us", "100ns" into nanoseconds.
pub fn parse_duration(flag: &str, s: &str) -> Result<u64, String> {
    let (num, mul) = split_suffix(s, &[("ms", 1e6), ("us", 1e3), ("ns", 1.0), ("s", 1e9)], 1e9);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("{flag} '{s}' is not a duration: use e.g. 10s, 500ms"))?;
    let ns = v * mul;
    if !(ns.is_finite() && ns > 0.0 && ns < 1e9 * 86400.0 * 365.0) {
        return Err(format!(
            "{flag} '{s}' is out of range: use a positive duration"
        ));
    }
    Ok(ns.round() as u64)
}

fn split_suffix<'a>(s: &'a str, table: &[(&str, f64)], default: f64) -> (&'a str, f64) {
    for (suf, mul) in table {
        if let Some(n) = s.strip_suffix(suf) {
            return (n, *mul);
        }
    }
    (s, default)
}

fn num<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("{flag} '{v}' is not a valid number"))
}

const VALUED: &[&str] = &[
    "--dev",
    "--dst-mac",
    "--src-mac",
    "--src",
    "--dst",
    "--rate",
    "--duration",
    "--count",
    "--size",
    "--flows",
    "--src-port",
    "--dst-port",
    "--burst",
    "--batch",
    "--technique",
    "--idle-timeout",
    "--expect",
    "--ring-mb",
    "--schedule-rate",
    "--interval",
    "--cpu",
];
const SWITCHES: &[&str] = &[
    "--json",
    "--best-effort",
    "--qdisc",
    "--allow-any-dst",
    "--allow-host-netns",
    "--receive",
    "--xdp-sink",
    "--pass",
    "--help",
    "-h",
    "--version",
    "-V",
];

pub fn parse(argv: &[String]) -> Result<Cmd, String> {
    let mut kv: Vec<(String, String)> = Vec::new();
    let mut sw: Vec<String> = Vec::new();
    let mut i = 0;
    while i < argv.len() {
        let a = &argv[i];
        let (k, inline) = match a.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        if SWITCHES.contains(&k.as_str()) && inline.is_none() {
            sw.push(k);
        } else if VALUED.contains(&k.as_str()) {
            let v = match inline {
                Some(v) => v,
                None => {
                    i += 1;
                    argv.get(i)
                        .cloned()
                        .ok_or(format!("{k} needs a value: see --help"))?
                }
            };
            if kv.iter().any(|(kk, _)| *kk == k) {
                return Err(format!("{k} was given twice: give it once"));
            }
            kv.push((k, v));
        } else {
            return Err(format!("unknown argument '{a}': see --help for the flags"));
        }
        i += 1;
    }
    let has = |s: &str| sw.iter().any(|x| x == s);
    if has("--help") || has("-h") {
        return Ok(Cmd::Help);
    }
    if has("--version") || has("-V") {
        return Ok(Cmd::Version);
    }
    let get = |k: &str| kv.iter().find(|(kk, _)| kk == k).map(|(_, v)| v.as_str());
    let need = |k: &str| get(k).ok_or(format!("{k} is required: see --help"));
    let dev = need("--dev")?.to_string();
    let cpu = get("--cpu").map(|v| num::<usize>("--cpu", v)).transpose()?;
    if has("--xdp-sink") {
        if let Some((k, _)) = kv
            .iter()
            .find(|(k, _)| !["--dev", "--size", "--duration"].contains(&k.as_str()))
        {
            return Err(format!(
                "{k} does not apply to --xdp-sink (it takes --dev, --size, --duration)"
            ));
        }
        let size = get("--size").map_or(Ok(64), |v| num::<usize>("--size", v))?;
        if !(64..=9000).contains(&size) {
            return Err(format!(
                "--size {size} is out of range for --xdp-sink: use 64..9000 \
                 (no netassay-gen frame is shorter than 64 bytes)"
            ));
        }
        return Ok(Cmd::Sink(SinkArgs {
            dev,
            size,
            duration_ns: get("--duration")
                .map(|v| parse_duration("--duration", v))
                .transpose()?,
            pass: has("--pass"),
        }));
    }
    if has("--pass") {
        return Err("--pass is an --xdp-sink option: add --xdp-sink or drop --pass".into());
    }
    if has("--receive") {
        for k in [
            "--dst-mac",
            "--src",
            "--dst",
            "--rate",
            "--count",
            "--size",
            "--batch",
        ] {
            if get(k).is_some() {
                return Err(format!("{k} is a send option: drop it with --receive"));
            }
        }
        let ring_mb = get("--ring-mb").map_or(Ok(64), |v| num::<u32>("--ring-mb", v))?;
        if !(1..=1024).contains(&ring_mb) {
            return Err("--ring-mb must be 1..1024".into());
        }
        return Ok(Cmd::Recv(Recv {
            dev,
            duration_ns: get("--duration")
                .map(|v| parse_duration("--duration", v))
                .transpose()?,
            idle_ns: get("--idle-timeout")
                .map(|v| parse_duration("--idle-timeout", v))
                .transpose()?,
            expect: get("--expect").map(|v| num("--expect", v)).transpose()?,
            flows: get("--flows").map(|v| num("--flows", v)).transpose()?,
            ring_mb,
            schedule_rate: match get("--schedule-rate").map(parse_rate).transpose()? {
                Some(Rate::Pps(r)) => Some(r),
                Some(Rate::Max) => return Err("--schedule-rate needs a number".into()),
                None => None,
            },
            interval_ns: get("--interval")
                .map(|v| parse_duration("--interval", v))
                .transpose()?
                .filter(|&n| n > 0),
            json: has("--json"),
            cpu,
        }));
    }
    if get("--idle-timeout").is_some() || get("--expect").is_some() || get("--interval").is_some() {
        return Err(
            "--idle-timeout, --expect and --interval are receive options: add --receive".into(),
        );
    }
    let mac = |k: &str| -> Result<[u8; 6], String> {
        let v = need(k)?;
        crate::packet::parse_mac(v).ok_or(format!("{k} '{v}' is not a MAC: use aa:bb:cc:dd:ee:ff"))
    };
    let ip = |k: &str| -> Result<IpAddr, String> {
        let v = need(k)?;
        v.parse()
            .map_err(|_| format!("{k} '{v}' is not an IPv4 or IPv6 address"))
    };
    let rate = parse_rate(need("--rate")?)?;
    let duration_ns = get("--duration")
        .map(|v| parse_duration("--duration", v))
        .transpose()?;
    let count = get("--count")
        .map(|v| num::<u64>("--count", v))
        .transpose()?;
    match (&rate, duration_ns, count) {
        (_, Some(_), Some(_)) => return Err("give --duration or --count, not both".into()),
        (_, None, None) => return Err("--duration (or --count) is required: see --help".into()),
        (Rate::Max, None, Some(_)) => {
            return Err("--rate max needs --duration (it sends for that long)".into())
        }
        _ => {}
    }
    if count == Some(0) {
        return Err("--count must be at least 1".into());
    }
    let flows = get("--flows").map_or(Ok(1), |v| num::<u64>("--flows", v))?;
    if !(1..=65536).contains(&flows) {
        return Err(format!("--flows {flows} is out of range: use 1..65536"));
    }
    let burst = get("--burst").map_or(Ok(64), |v| num::<usize>("--burst", v))?;
    if !(1..=1024).contains(&burst) {
        return Err(format!("--burst {burst} is out of range: use 1..1024"));
    }
    let batch = get("--batch")
        .map(|v| num::<usize>("--batch", v))
        .transpose()?;
    if let Some(b) = batch {
        if b == 0 || b > burst {
            return Err(format!("--batch {b} must be 1..--burst ({burst})"));
        }
    }
    let src_port = get("--src-port").map_or(Ok(10000), |v| num::<u16>("--src-port", v))?;
    if src_port as u64 + flows - 1 > 65535 {
        return Err("--src-port + --flows - 1 exceeds 65535: lower one of them".into());
    }
    let technique = get("--technique").unwrap_or("auto").to_string();
    if !["auto", "sendmmsg", "txring", "xdp", "none"].contains(&technique.as_str()) {
        return Err(format!(
            "--technique '{technique}' is unknown: use auto, sendmmsg, txring, xdp or none"
        ));
    }
    if has("--qdisc") {
        check_qdisc(&technique)?;
    }
    Ok(Cmd::Send(Box::new(Send {
        dev,
        dst_mac: mac("--dst-mac")?,
        src_mac: get("--src-mac").map(|_| mac("--src-mac")).transpose()?,
        src: ip("--src")?,
        dst: ip("--dst")?,
        rate,
        duration_ns,
        count,
        size: get("--size").map_or(Ok(64), |v| num::<usize>("--size", v))?,
        flows,
        src_port,
        dst_port: get("--dst-port").map_or(Ok(9), |v| num::<u16>("--dst-port", v))?,
        burst,
        batch,
        technique,
        best_effort: has("--best-effort"),
        qdisc: has("--qdisc"),
        allow_any_dst: has("--allow-any-dst"),
        allow_host_netns: has("--allow-host-netns"),
        json: has("--json"),
        cpu,
    })))
}

/// --qdisc only means something to the AF_PACKET techniques: refuse it where it
/// would be ignored.
fn check_qdisc(technique: &str) -> Result<(), String> {
    let why = match technique {
        "xdp" => "XDP live frames leave through XDP_TX and never pass a qdisc",
        "none" => "it sends nothing, so no frame would pass the qdisc",
        _ => return Ok(()),
    };
    Err(format!(
        "--qdisc does not apply to --technique {technique}: {why}; drop --qdisc, or \
         use --technique sendmmsg or txring to send through the qdisc"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn rates_and_durations() {
        assert_eq!(parse_rate("200k").unwrap(), Rate::Pps(200_000.0));
        assert_eq!(parse_rate("1.5M").unwrap(), Rate::Pps(1_500_000.0));
        assert_eq!(parse_rate("100000").unwrap(), Rate::Pps(100_000.0));
        assert_eq!(parse_rate("max").unwrap(), Rate::Max);
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("fast").is_err());
        assert_eq!(parse_duration("--d", "10s").unwrap(), 10_000_000_000);
        assert_eq!(parse_duration("--d", "10").unwrap(), 10_000_000_000);
        assert_eq!(parse_duration("--d", "500ms").unwrap(), 500_000_000);
        assert_eq!(parse_duration("--d", "250us").unwrap(), 250_000);
        assert!(parse_duration("--d", "-1s").is_err());
    }

    #[test]
    fn send_and_receive() {
        let c = parse(&v(
            "--dev a --dst-mac 02:00:00:00:00:01 --src 198.18.0.2 --dst 198.19.0.2 \
             --rate 200k --duration=10s --flows 16 --json",
        ))
        .unwrap();
        match c {
            Cmd::Send(s) => {
                assert_eq!(s.rate, Rate::Pps(200_000.0));
                assert_eq!(s.duration_ns, Some(10_000_000_000));
                assert_eq!(s.flows, 16);
                assert_eq!(s.size, 64);
                assert!(s.json);
            }
            _ => panic!(),
        }
        assert!(matches!(
            parse(&v("--receive --dev b --idle-timeout 1s")).unwrap(),
            Cmd::Recv(_)
        ));
        assert!(matches!(parse(&v("--help")).unwrap(), Cmd::Help));
        let e = parse(&v("--dev a --bogus")).unwrap_err();
        assert!(e.contains("unknown argument"), "{e}");
        let e = parse(&v(
            "--dev a --dst-mac 02:00:00:00:00:01 --src 198.18.0.2 --dst 198.19.0.2 --rate 1k",
        ))
        .unwrap_err();
        assert!(e.contains("--duration"), "{e}");
        assert!(parse(&v("--receive --dev a --rate 1k")).is_err());
        assert!(parse(&v("--dev a --dev b")).is_err());
    }

    const SEND: &str = "--dev a --dst-mac 02:00:00:00:00:01 --src 198.18.0.2 \
                        --dst 198.19.0.2 --rate 1k --duration 1";

    #[test]
    fn qdisc_is_refused_where_no_frame_passes_a_qdisc() {
        for t in ["xdp", "none"] {
            let e = parse(&v(&format!("{SEND} --qdisc --technique {t}"))).unwrap_err();
            assert!(
                e.starts_with("--qdisc does not apply to --technique"),
                "{e}"
            );
            assert!(e.contains("drop --qdisc") && !e.contains('\n'), "{e}");
        }
        for t in ["auto", "sendmmsg", "txring"] {
            match parse(&v(&format!("{SEND} --qdisc --technique {t}"))).unwrap() {
                Cmd::Send(s) => assert!(s.qdisc && s.technique == t),
                _ => panic!(),
            }
        }
        assert!(parse(&v(&format!("{SEND} --technique xdp"))).is_ok());
    }

    #[test]
    fn sink_takes_pass_and_sizes_from_64() {
        match parse(&v("--xdp-sink --dev a --pass")).unwrap() {
            Cmd::Sink(k) => assert!(k.pass && k.size == 64),
            _ => panic!(),
        }
        match parse(&v("--xdp-sink --dev a --size 84")).unwrap() {
            Cmd::Sink(k) => assert!(!k.pass && k.size == 84),
            _ => panic!(),
        }
        let e = parse(&v("--xdp-sink --dev a --size 63")).unwrap_err();
        assert!(e.contains("use 64..9000"), "{e}");
        let e = parse(&v(&format!("{SEND} --pass"))).unwrap_err();
        assert!(e.contains("--pass is an --xdp-sink option"), "{e}");
    }
}

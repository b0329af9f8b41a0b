//! The command line, by option group: clap reads the words of the line
//! (`line::scan`, the flags declared in `line`), then the flags every mode takes
//! are checked, then the mode's own: the XDP sink's and the receiver's here, the
//! sender's in `send`, the delay line's in `delay`.

mod delay;
mod line;
mod send;
mod values;

pub use delay::DelayArgs;
pub use line::help;

use crate::error::{FlagError, ModeError, SendUsage, UsageError};
use crate::mix::Mix;
use line::{scan, Line};
use std::net::IpAddr;
use values::{num, parse_duration, parse_rate};

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
    /// The frames' sizes in their order (one size unless --imix).
    pub mix: Mix,
    pub flows: u64,
    /// Destinations the flows are spread over (`--dsts`), `--dst-step` apart.
    pub dsts: u64,
    pub dst_step: u32,
    pub flow_order: crate::flows::Order,
    pub src_port: u16,
    pub dst_port: u16,
    pub burst: usize,
    pub batch: Option<usize>,
    /// Paced XDP live frames: after a stall, frames catch up at most this many times
    /// the rate (None: as fast as they can be built).
    pub catch_up: Option<f64>,
    pub technique: String,
    pub best_effort: bool,
    pub qdisc: bool,
    pub share_cpu: bool,
    pub allow_any_dst: bool,
    pub allow_host_netns: bool,
    pub json: bool,
    pub cpu: Option<usize>,
    /// --pcap: a capture's frames instead of built ones.
    pub pcap: Option<Pcap>,
}

/// A capture to replay (`replay`), at `--rate` or on its own gaps `/ speed`.
#[derive(Debug, Clone, PartialEq)]
pub struct Pcap {
    pub path: String,
    /// --speed X: the capture's gaps divided by X (the run's `rate` is then unused).
    pub speed: Option<f64>,
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
    /// Check every test frame's IPv4 header and UDP checksums.
    pub verify: bool,
    pub json: bool,
    pub cpu: Option<usize>,
}

#[derive(Debug, Clone)]
pub struct SinkArgs {
    pub dev: String,
    pub size: usize,
    /// --imix: count every size of the mix, each on its own.
    pub mix: Option<Mix>,
    /// --pcap: count every size of the capture's marked frames, each on its own.
    pub pcap: Option<String>,
    pub duration_ns: Option<u64>,
    /// Pass the counted frames on instead of dropping them.
    pub pass: bool,
    /// Keep the one-way latency histogram of the counted frames.
    pub latency: bool,
    /// --count-flows: count every flow's frames, each checked against the destination
    /// its flow aims at (--dst, --dsts, --dst-step, as the sender was given them).
    pub flows: Option<crate::flows::Plan>,
}

#[derive(Debug)]
pub enum Cmd {
    Help,
    Version,
    Sink(SinkArgs),
    Send(Box<Send>),
    Recv(Recv),
    Delay(DelayArgs),
    /// --pcap FILE --describe: what a replay of it sends per loop.
    Describe(Describe),
}

#[derive(Debug, PartialEq)]
pub struct Describe {
    pub path: String,
    pub src: IpAddr,
    pub dst: IpAddr,
    pub mtu: usize,
}

/// The command the line asks for: help, the version, or a mode with its options.
pub fn parse(argv: &[String]) -> Result<Cmd, UsageError> {
    if argv.first().is_some_and(|w| w == "delay") {
        return delay::parse(&argv[1..]);
    }
    let line = scan::<Line>(argv)?;
    let a = &line.flags;
    if a.help {
        return Ok(Cmd::Help);
    }
    if a.version {
        return Ok(Cmd::Version);
    }
    if a.describe {
        return describe(a, &line.valued).map(Cmd::Describe);
    }
    let dev = need("--dev", &a.dev)?.to_string();
    let cpu = number::<usize>("--cpu", &a.cpu)?;
    if a.xdp_sink {
        return sink(a, &line.valued, dev).map(Cmd::Sink);
    }
    if a.pass {
        return Err(ModeError::PassWithoutSink.into());
    }
    if a.latency {
        return Err(ModeError::LatencyWithoutSink.into());
    }
    if a.receive {
        return receive(a, dev, cpu).map(Cmd::Recv);
    }
    send::send(a, dev, cpu).map(|s| Cmd::Send(Box::new(s)))
}

/// --describe: --pcap, --src and --dst (and --mtu-bytes), nothing else with a value.
fn describe(a: &Line, valued: &[String]) -> Result<Describe, UsageError> {
    let takes = ["--pcap", "--src", "--dst", "--mtu-bytes"];
    if let Some(k) = valued.iter().find(|k| !takes.contains(&k.as_str())) {
        return Err(ModeError::NotForDescribe(k.clone()).into());
    }
    let ip = |k: &'static str, v: &Option<String>| -> Result<IpAddr, FlagError> {
        let v = need(k, v)?;
        v.parse().map_err(|_| FlagError::NotAnAddress {
            flag: k,
            value: v.into(),
        })
    };
    Ok(Describe {
        path: need("--pcap", &a.pcap)?.to_string(),
        src: ip("--src", &a.src)?,
        dst: ip("--dst", &a.dst)?,
        mtu: number_or("--mtu-bytes", &a.mtu_bytes, 1500usize)?,
    })
}

/// The value of a required flag.
fn need<'a>(flag: &'static str, v: &'a Option<String>) -> Result<&'a str, FlagError> {
    v.as_deref().ok_or(FlagError::Required(flag))
}

/// The number given with `flag`, if it was.
fn number<T: std::str::FromStr>(
    flag: &'static str,
    v: &Option<String>,
) -> Result<Option<T>, FlagError> {
    v.as_deref().map(|v| num(flag, v)).transpose()
}

/// The number given with `flag`, else `default`.
fn number_or<T: std::str::FromStr>(
    flag: &'static str,
    v: &Option<String>,
    default: T,
) -> Result<T, FlagError> {
    v.as_deref().map_or(Ok(default), |v| num(flag, v))
}

/// The duration given with `flag` (ns), if it was.
fn duration(flag: &'static str, v: &Option<String>) -> Result<Option<u64>, FlagError> {
    v.as_deref().map(|v| parse_duration(flag, v)).transpose()
}

/// The XDP sink's options: --size (or --imix), --duration and --count-flows (with
/// --dst, --dsts, --dst-step), no other flag with a value but --dev (the first other
/// one, in the line's order, is named).
fn sink(a: &Line, valued: &[String], dev: String) -> Result<SinkArgs, UsageError> {
    if let Some(k) = valued.iter().find(|k| {
        ![
            "--dev",
            "--size",
            "--imix",
            "--pcap",
            "--duration",
            "--count-flows",
            "--dsts",
            "--dst-step",
            "--dst",
        ]
        .contains(&k.as_str())
    }) {
        return Err(ModeError::NotForSink(k.clone()).into());
    }
    let size = number_or("--size", &a.size, 64usize)?;
    if !(64..=9000).contains(&size) {
        return Err(ModeError::SinkSize(size).into());
    }
    let mix = a.imix.as_deref().map(Mix::parse).transpose()?;
    if mix.is_some() && a.size.is_some() {
        return Err(SendUsage::ImixAndSize.into());
    }
    if a.pcap.is_some() {
        if let Some(k) = [("--size", &a.size), ("--imix", &a.imix)]
            .into_iter()
            .find_map(|(k, v)| v.as_ref().map(|_| k))
        {
            return Err(SendUsage::PcapWith(k).into());
        }
    }
    Ok(SinkArgs {
        dev,
        size: mix.as_ref().map_or(size, Mix::largest),
        mix,
        pcap: a.pcap.clone(),
        duration_ns: duration("--duration", &a.duration)?,
        pass: a.pass,
        latency: a.latency,
        flows: sink_flows(a)?,
    })
}

/// The XDP sink's --count-flows (with the destinations its flows aim at).
fn sink_flows(a: &Line) -> Result<Option<crate::flows::Plan>, UsageError> {
    let Some(flows) = number::<u64>("--count-flows", &a.count_flows)? else {
        let given = [
            ("--dsts", &a.dsts),
            ("--dst-step", &a.dst_step),
            ("--dst", &a.dst),
        ];
        if let Some((k, _)) = given.into_iter().find(|(_, v)| v.is_some()) {
            return Err(ModeError::NeedsCountFlows(k).into());
        }
        return Ok(None);
    };
    let given = need("--dst", &a.dst)?;
    let dst: IpAddr = given.parse().map_err(|_| FlagError::NotAnAddress {
        flag: "--dst",
        value: given.into(),
    })?;
    let plan = crate::flows::Plan::new(
        flows,
        number_or("--dsts", &a.dsts, 1u64)?,
        number_or("--dst-step", &a.dst_step, 1u32)?,
        10000,
        &dst,
        &dst,
        crate::flows::Order::Incremental,
    )?;
    Ok(Some(plan))
}

/// The receiver's options; a send option is refused.
fn receive(a: &Line, dev: String, cpu: Option<usize>) -> Result<Recv, UsageError> {
    // the send options it refuses, in the order it names them
    let send_only = [
        ("--dst-mac", &a.dst_mac),
        ("--src", &a.src),
        ("--dst", &a.dst),
        ("--rate", &a.rate),
        ("--count", &a.count),
        ("--size", &a.size),
        ("--batch", &a.batch),
    ];
    if let Some((k, _)) = send_only.into_iter().find(|(_, v)| v.is_some()) {
        return Err(ModeError::SendOptionWithReceive(k).into());
    }
    let ring_mb = number_or("--ring-mb", &a.ring_mb, 64u32)?;
    if !(1..=1024).contains(&ring_mb) {
        return Err(ModeError::RingMb.into());
    }
    Ok(Recv {
        dev,
        duration_ns: duration("--duration", &a.duration)?,
        idle_ns: duration("--idle-timeout", &a.idle_timeout)?,
        expect: number("--expect", &a.expect)?,
        flows: number("--flows", &a.flows)?,
        ring_mb,
        schedule_rate: schedule_rate(a)?,
        interval_ns: duration("--interval", &a.interval)?.filter(|&n| n > 0),
        verify: a.verify,
        json: a.json,
        cpu,
    })
}

/// --schedule-rate: a number of packets per second ('max' is refused).
fn schedule_rate(a: &Line) -> Result<Option<f64>, UsageError> {
    match a.schedule_rate.as_deref().map(parse_rate).transpose()? {
        Some(Rate::Pps(r)) => Ok(Some(r)),
        Some(Rate::Max) => Err(ModeError::ScheduleRateMax.into()),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::SendUsage;

    pub(super) fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
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
        let e = parse(&v("--dev a --bogus")).unwrap_err().to_string();
        assert!(e.contains("unknown argument"), "{e}");
        let e = parse(&v(
            "--dev a --dst-mac 02:00:00:00:00:01 --src 198.18.0.2 --dst 198.19.0.2 --rate 1k",
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("--duration"), "{e}");
        assert!(parse(&v("--receive --dev a --rate 1k")).is_err());
        assert!(parse(&v("--dev a --dev b")).is_err());
    }

    #[test]
    fn the_line_is_scanned_word_by_word() {
        let g = scan::<Line>(&v("--dev=a --json --rate 1k --count=5 --json")).unwrap();
        assert_eq!(g.flags.dev.as_deref(), Some("a"));
        assert_eq!(g.flags.rate.as_deref(), Some("1k"));
        assert_eq!(number::<u64>("--count", &g.flags.count), Ok(Some(5)));
        assert!(g.flags.json && !g.flags.qdisc);
        assert_eq!(g.valued, ["--dev", "--rate", "--count"]);
        // a value may start with a dash; it is checked later
        let g = scan::<Line>(&v("--dev --json --rate -1")).unwrap();
        assert_eq!(g.flags.dev.as_deref(), Some("--json"));
        assert_eq!(g.flags.rate.as_deref(), Some("-1"));
        let e = |s: &str| scan::<Line>(&v(s)).err();
        assert_eq!(e("--dev"), Some(FlagError::NeedsValue("--dev".into())));
        assert_eq!(
            e("--dev a --dev=b"),
            Some(FlagError::GivenTwice("--dev".into()))
        );
        // a switch with a value is no switch
        assert_eq!(e("--json=1"), Some(FlagError::Unknown("--json=1".into())));
        assert_eq!(e("-x"), Some(FlagError::Unknown("-x".into())));
        assert_eq!(e("--bogus=3"), Some(FlagError::Unknown("--bogus=3".into())));
        // the first word at fault, in the line's order
        assert_eq!(
            e("--dev a -h=1 --dev b"),
            Some(FlagError::Unknown("-h=1".into()))
        );
        // a bare `--` ends the flags, as clap has it
        assert_eq!(e("-- --dev a"), Some(FlagError::Unknown("--dev".into())));
        assert!(scan::<Line>(&v("--json --")).is_ok());
        // but a value may be `--`, or a word of short flags
        let g = scan::<Line>(&v("--dev -- --src -hV")).unwrap();
        assert_eq!(g.flags.dev.as_deref(), Some("--"));
        assert_eq!(g.flags.src.as_deref(), Some("-hV"));
    }

    #[test]
    fn help_lists_every_flag_and_the_exit_codes() {
        let h = help();
        for flag in [
            "--dev",
            "--dst-mac",
            "--src-mac",
            "--src",
            "--dst",
            "--rate",
            "--duration",
            "--count",
            "--size",
            "--imix",
            "--pcap",
            "--speed",
            "--flows",
            "--flow-order",
            "--flow-seed",
            "--dsts",
            "--dst-step",
            "--src-port",
            "--dst-port",
            "--burst",
            "--batch",
            "--catch-up",
            "--technique",
            "--best-effort",
            "--qdisc",
            "--share-cpu",
            "--allow-any-dst",
            "--allow-host-netns",
            "--cpu",
            "--xdp-sink",
            "--pass",
            "--latency",
            "--count-flows",
            "--receive",
            "--idle-timeout",
            "--expect",
            "--ring-mb",
            "--schedule-rate",
            "--interval",
            "--verify",
            "--json",
            "--help",
            "--version",
            "--a <DEV>",
            "--b <DEV>",
            "--delay <DUR>",
            "--delay-back",
            "--stats",
            "--queue",
        ] {
            assert!(h.contains(flag), "{flag}");
        }
        assert!(h.contains("WITHOUT the 4-byte FCS"));
        assert!(h.contains("3  the rate was not kept"));
        assert!(!h.contains("stray"));
    }

    #[test]
    fn help_and_version_come_before_any_other_check() {
        assert!(matches!(parse(&v("--rate fast -h")), Ok(Cmd::Help)));
        assert!(matches!(parse(&v("-V --pass")), Ok(Cmd::Version)));
        // but only once the line is scanned
        assert!(parse(&v("--help --bogus")).is_err());
    }

    #[test]
    fn dev_and_cpu_are_checked_before_the_mode() {
        let e = parse(&v("--xdp-sink --size 10")).unwrap_err();
        assert_eq!(e, FlagError::Required("--dev").into());
        let e = parse(&v("--xdp-sink --dev a --cpu x")).unwrap_err();
        let want = FlagError::NotANumber {
            flag: "--cpu",
            value: "x".into(),
        };
        assert_eq!(e, want.into());
        let e = parse(&v("--xdp-sink --dev a --cpu 1")).unwrap_err();
        assert_eq!(e, ModeError::NotForSink("--cpu".into()).into());
    }

    #[test]
    fn sink_takes_pass_and_sizes_from_64() {
        match parse(&v("--xdp-sink --dev a --pass")).unwrap() {
            Cmd::Sink(k) => assert!(k.pass && k.size == 64),
            _ => panic!(),
        }
        match parse(&v("--xdp-sink --dev a --size 84")).unwrap() {
            Cmd::Sink(k) => assert!(!k.pass && !k.latency && k.size == 84),
            _ => panic!(),
        }
        match parse(&v("--xdp-sink --dev a --latency")).unwrap() {
            Cmd::Sink(k) => assert!(k.latency && !k.pass),
            _ => panic!(),
        }
        let e = parse(&v("--xdp-sink --dev a --size 63")).unwrap_err();
        assert!(e.to_string().contains("use 64..9000"), "{e}");
        let e = parse(&v(&format!("{} --latency", send::tests::SEND))).unwrap_err();
        assert_eq!(e, ModeError::LatencyWithoutSink.into());
        let e = parse(&v(&format!("{} --pass", send::tests::SEND))).unwrap_err();
        assert!(
            e.to_string().contains("--pass is an --xdp-sink option"),
            "{e}"
        );
    }

    #[test]
    fn the_sink_names_the_first_flag_it_does_not_take() {
        let e = parse(&v("--xdp-sink --count 5 --dev a --rate 1k")).unwrap_err();
        assert_eq!(e, ModeError::NotForSink("--count".into()).into());
        let k = match parse(&v("--xdp-sink --dev a --duration 2s")).unwrap() {
            Cmd::Sink(k) => k,
            _ => panic!(),
        };
        assert_eq!(k.duration_ns, Some(2_000_000_000));
    }

    #[test]
    fn the_sink_counts_flows_aimed_at_their_destinations() {
        let k = match parse(&v(
            "--xdp-sink --dev a --count-flows 1000 --dst 198.18.0.3 --dsts 10 --dst-step 4",
        ))
        .unwrap()
        {
            Cmd::Sink(k) => k,
            _ => panic!(),
        };
        let plan = k.flows.expect("--count-flows");
        assert_eq!((plan.flows, plan.dsts, plan.dst_step), (1000, 10, 4));
        assert!(matches!(
            parse(&v("--xdp-sink --dev a")).unwrap(),
            Cmd::Sink(SinkArgs { flows: None, .. })
        ));
        let e = |s: &str| parse(&v(&format!("--xdp-sink --dev a {s}"))).unwrap_err();
        // the destinations without --count-flows, named in a fixed order
        assert_eq!(
            e("--dst 198.18.0.3 --dst-step 2"),
            ModeError::NeedsCountFlows("--dst-step").into()
        );
        assert_eq!(e("--count-flows 4"), FlagError::Required("--dst").into());
        assert_eq!(
            e("--count-flows 4 --dst x"),
            FlagError::NotAnAddress {
                flag: "--dst",
                value: "x".into()
            }
            .into()
        );
        assert_eq!(
            e("--count-flows 1000001 --dst 198.18.0.3"),
            SendUsage::Flows(1_000_001).into()
        );
        assert_eq!(
            e("--count-flows 4 --dst 198.18.0.3 --dsts 0"),
            SendUsage::Dsts(0, 1).into()
        );
        assert_eq!(
            e("--count-flows 4 --dst 255.255.255.250 --dsts 5 --dst-step 100"),
            SendUsage::AddressesPastEnd.into()
        );
        // the sender's flow flags are not the sink's
        assert_eq!(
            e("--count-flows 4 --dst 198.18.0.3 --flow-order random"),
            ModeError::NotForSink("--flow-order".into()).into()
        );
    }

    #[test]
    fn receive_options() {
        let r = match parse(&v(
            "--receive --dev b --expect 100 --flows 4 --ring-mb 8 --schedule-rate 1M \
             --interval 1s --duration 5 --cpu 1 --json",
        ))
        .unwrap()
        {
            Cmd::Recv(r) => r,
            _ => panic!(),
        };
        assert_eq!((r.expect, r.flows, r.ring_mb), (Some(100), Some(4), 8));
        assert_eq!(r.schedule_rate, Some(1e6));
        assert_eq!(r.interval_ns, Some(1_000_000_000));
        assert_eq!(r.duration_ns, Some(5_000_000_000));
        assert_eq!((r.cpu, r.json, r.idle_ns), (Some(1), true, None));
        assert!(!r.verify);
        match parse(&v("--receive --dev b --verify")).unwrap() {
            Cmd::Recv(r) => assert!(r.verify),
            _ => panic!(),
        }
        let e = |s: &str| parse(&v(&format!("--receive --dev b {s}"))).unwrap_err();
        // send options are named in a fixed order, not the line's
        assert_eq!(
            e("--batch 4 --src 198.18.0.2"),
            ModeError::SendOptionWithReceive("--src").into()
        );
        assert_eq!(e("--ring-mb 0"), ModeError::RingMb.into());
        assert_eq!(e("--schedule-rate max"), ModeError::ScheduleRateMax.into());
        // said of --rate, as before
        assert_eq!(
            e("--schedule-rate fast"),
            FlagError::NotARate("fast".into()).into()
        );
    }

    #[test]
    fn receive_options_are_refused_when_sending() {
        let e = parse(&v(&format!("{} --expect 5", send::tests::SEND))).unwrap_err();
        assert_eq!(e, ModeError::ReceiveOptionsWithoutReceive.into());
        assert!(matches!(
            parse(&v(&format!("{} --count 5", send::tests::SEND))).unwrap_err(),
            UsageError::Send(SendUsage::DurationAndCount)
        ));
    }
}

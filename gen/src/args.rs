//! Command-line parsing (hand-written: one binary, few flags, fast build), by
//! option group: the words of the line first (`Given::scan`), then the flags
//! every mode takes, then the mode's own: the XDP sink's and the receiver's here,
//! the sender's in `send`.

mod delay;
mod help;
mod send;
mod values;

pub use delay::DelayArgs;
pub use help::HELP;

use crate::error::{FlagError, ModeError, SendUsage, UsageError};
use crate::mix::Mix;
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
    "--imix",
    "--flows",
    "--flow-order",
    "--flow-seed",
    "--dsts",
    "--dst-step",
    "--count-flows",
    "--src-port",
    "--dst-port",
    "--burst",
    "--batch",
    "--catch-up",
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
    "--share-cpu",
    "--allow-any-dst",
    "--allow-host-netns",
    "--receive",
    "--xdp-sink",
    "--pass",
    "--latency",
    "--verify",
    "--help",
    "-h",
    "--version",
    "-V",
];

/// The command line as given: flags with their values (in order) and switches.
struct Given {
    kv: Vec<(String, String)>,
    sw: Vec<String>,
}

impl Given {
    /// Split the line into flags with values (`--flag V` or `--flag=V`) and
    /// switches; refuse unknown words, missing values and flags given twice.
    fn scan(argv: &[String]) -> Result<Given, FlagError> {
        Given::scan_in(argv, VALUED, SWITCHES)
    }

    /// `scan` for a mode with flags of its own (`delay`).
    fn scan_in(argv: &[String], valued: &[&str], switches: &[&str]) -> Result<Given, FlagError> {
        let mut g = Given {
            kv: Vec::new(),
            sw: Vec::new(),
        };
        let mut i = 0;
        while i < argv.len() {
            let a = &argv[i];
            let (k, inline) = match a.split_once('=') {
                Some((k, v)) if k.starts_with("--") => (k.to_string(), Some(v.to_string())),
                _ => (a.clone(), None),
            };
            if switches.contains(&k.as_str()) && inline.is_none() {
                g.sw.push(k);
            } else if valued.contains(&k.as_str()) {
                let v = match inline {
                    Some(v) => v,
                    None => {
                        i += 1;
                        argv.get(i)
                            .cloned()
                            .ok_or(FlagError::NeedsValue(k.clone()))?
                    }
                };
                if g.kv.iter().any(|(kk, _)| *kk == k) {
                    return Err(FlagError::GivenTwice(k));
                }
                g.kv.push((k, v));
            } else {
                return Err(FlagError::Unknown(a.clone()));
            }
            i += 1;
        }
        Ok(g)
    }

    fn has(&self, s: &str) -> bool {
        self.sw.iter().any(|x| x == s)
    }

    fn get(&self, k: &str) -> Option<&str> {
        self.kv
            .iter()
            .find(|(kk, _)| kk == k)
            .map(|(_, v)| v.as_str())
    }

    fn need(&self, k: &'static str) -> Result<&str, FlagError> {
        self.get(k).ok_or(FlagError::Required(k))
    }

    /// The number given with `k`, if it was.
    fn num<T: std::str::FromStr>(&self, k: &'static str) -> Result<Option<T>, FlagError> {
        self.get(k).map(|v| num(k, v)).transpose()
    }

    /// The number given with `k`, else `default`.
    fn num_or<T: std::str::FromStr>(&self, k: &'static str, default: T) -> Result<T, FlagError> {
        self.get(k).map_or(Ok(default), |v| num(k, v))
    }

    /// The duration given with `k` (ns), if it was.
    fn duration(&self, k: &'static str) -> Result<Option<u64>, FlagError> {
        self.get(k).map(|v| parse_duration(k, v)).transpose()
    }
}

/// The command the line asks for: help, the version, or a mode with its options.
pub fn parse(argv: &[String]) -> Result<Cmd, UsageError> {
    if argv.first().is_some_and(|w| w == "delay") {
        return delay::parse(&argv[1..]);
    }
    let a = Given::scan(argv)?;
    if a.has("--help") || a.has("-h") {
        return Ok(Cmd::Help);
    }
    if a.has("--version") || a.has("-V") {
        return Ok(Cmd::Version);
    }
    let dev = a.need("--dev")?.to_string();
    let cpu = a.num::<usize>("--cpu")?;
    if a.has("--xdp-sink") {
        return sink(&a, dev).map(Cmd::Sink);
    }
    if a.has("--pass") {
        return Err(ModeError::PassWithoutSink.into());
    }
    if a.has("--latency") {
        return Err(ModeError::LatencyWithoutSink.into());
    }
    if a.has("--receive") {
        return receive(&a, dev, cpu).map(Cmd::Recv);
    }
    send::send(&a, dev, cpu).map(|s| Cmd::Send(Box::new(s)))
}

/// The XDP sink's options: --size and --duration, nothing else but --dev.
fn sink(a: &Given, dev: String) -> Result<SinkArgs, UsageError> {
    if let Some((k, _)) = a.kv.iter().find(|(k, _)| {
        ![
            "--dev",
            "--size",
            "--imix",
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
    let size = a.num_or("--size", 64usize)?;
    if !(64..=9000).contains(&size) {
        return Err(ModeError::SinkSize(size).into());
    }
    let mix = a.get("--imix").map(Mix::parse).transpose()?;
    if mix.is_some() && a.get("--size").is_some() {
        return Err(SendUsage::ImixAndSize.into());
    }
    Ok(SinkArgs {
        dev,
        size: mix.as_ref().map_or(size, Mix::largest),
        mix,
        duration_ns: a.duration("--duration")?,
        pass: a.has("--pass"),
        latency: a.has("--latency"),
        flows: sink_flows(a)?,
    })
}

/// The XDP sink's --count-flows (with the destinations its flows aim at).
fn sink_flows(a: &Given) -> Result<Option<crate::flows::Plan>, UsageError> {
    let Some(flows) = a.num::<u64>("--count-flows")? else {
        if let Some(k) = ["--dsts", "--dst-step", "--dst"]
            .into_iter()
            .find(|k| a.get(k).is_some())
        {
            return Err(ModeError::NeedsCountFlows(k).into());
        }
        return Ok(None);
    };
    let dst: IpAddr = a
        .need("--dst")?
        .parse()
        .map_err(|_| FlagError::NotAnAddress {
            flag: "--dst",
            value: a.get("--dst").unwrap_or("").into(),
        })?;
    let plan = crate::flows::Plan::new(
        flows,
        a.num_or("--dsts", 1u64)?,
        a.num_or("--dst-step", 1u32)?,
        10000,
        &dst,
        &dst,
        crate::flows::Order::Incremental,
    )?;
    Ok(Some(plan))
}

/// Send options the receiver refuses, in the order it names them.
const SEND_ONLY: [&str; 7] = [
    "--dst-mac",
    "--src",
    "--dst",
    "--rate",
    "--count",
    "--size",
    "--batch",
];

/// The receiver's options; a send option is refused.
fn receive(a: &Given, dev: String, cpu: Option<usize>) -> Result<Recv, UsageError> {
    if let Some(k) = SEND_ONLY.into_iter().find(|k| a.get(k).is_some()) {
        return Err(ModeError::SendOptionWithReceive(k).into());
    }
    let ring_mb = a.num_or("--ring-mb", 64u32)?;
    if !(1..=1024).contains(&ring_mb) {
        return Err(ModeError::RingMb.into());
    }
    Ok(Recv {
        dev,
        duration_ns: a.duration("--duration")?,
        idle_ns: a.duration("--idle-timeout")?,
        expect: a.num("--expect")?,
        flows: a.num("--flows")?,
        ring_mb,
        schedule_rate: schedule_rate(a)?,
        interval_ns: a.duration("--interval")?.filter(|&n| n > 0),
        verify: a.has("--verify"),
        json: a.has("--json"),
        cpu,
    })
}

/// --schedule-rate: a number of packets per second ('max' is refused).
fn schedule_rate(a: &Given) -> Result<Option<f64>, UsageError> {
    match a.get("--schedule-rate").map(parse_rate).transpose()? {
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
        let g = Given::scan(&v("--dev=a --json --rate 1k --count=5")).unwrap();
        assert_eq!(g.get("--dev"), Some("a"));
        assert_eq!(g.get("--rate"), Some("1k"));
        assert_eq!(g.num::<u64>("--count"), Ok(Some(5)));
        assert!(g.has("--json") && !g.has("--qdisc"));
        let e = |s: &str| Given::scan(&v(s)).err();
        assert_eq!(e("--dev"), Some(FlagError::NeedsValue("--dev".into())));
        assert_eq!(
            e("--dev a --dev=b"),
            Some(FlagError::GivenTwice("--dev".into()))
        );
        // a switch with a value is no switch
        assert_eq!(e("--json=1"), Some(FlagError::Unknown("--json=1".into())));
        assert_eq!(e("-x"), Some(FlagError::Unknown("-x".into())));
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

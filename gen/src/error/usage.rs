//! Arguments that cannot be right: a flag or its value, a flag the mode does not
//! take, a send run that cannot be asked for. All of them exit 2.

use std::fmt;

/// Arguments that cannot be right, alone or together.
#[derive(Debug, PartialEq)]
pub enum UsageError {
    /// A flag, or its value, is wrong in itself.
    Flag(FlagError),
    /// A flag given to a mode that does not take it, or a mode's value out of range.
    Mode(ModeError),
    /// What a send run cannot be asked to do.
    Send(SendUsage),
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UsageError::Flag(e) => e.fmt(f),
            UsageError::Mode(e) => e.fmt(f),
            UsageError::Send(e) => e.fmt(f),
        }
    }
}

impl From<FlagError> for UsageError {
    fn from(e: FlagError) -> UsageError {
        UsageError::Flag(e)
    }
}

impl From<ModeError> for UsageError {
    fn from(e: ModeError) -> UsageError {
        UsageError::Mode(e)
    }
}

impl From<SendUsage> for UsageError {
    fn from(e: SendUsage) -> UsageError {
        UsageError::Send(e)
    }
}

/// A word of the command line that cannot be right: an unknown flag, a flag
/// missing, given twice or without its value, a value that does not parse.
#[derive(Debug, PartialEq)]
pub enum FlagError {
    /// A flag that takes a value came last.
    NeedsValue(String),
    GivenTwice(String),
    Unknown(String),
    Required(&'static str),
    NotANumber {
        flag: &'static str,
        value: String,
    },
    /// Said of --rate, also when --schedule-rate was given.
    NotARate(String),
    RateOutOfRange(String),
    NotADuration {
        flag: &'static str,
        value: String,
    },
    DurationOutOfRange {
        flag: &'static str,
        value: String,
    },
    NotAMac {
        flag: &'static str,
        value: String,
    },
    NotAnAddress {
        flag: &'static str,
        value: String,
    },
    /// A word of the line that is not UTF-8 (shown with U+FFFD for its bad bytes).
    NotUtf8(String),
}

impl fmt::Display for FlagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use FlagError::*;
        match self {
            NeedsValue(k) => write!(f, "{k} needs a value: see --help"),
            GivenTwice(k) => write!(f, "{k} was given twice: give it once"),
            Unknown(a) => write!(f, "unknown argument '{a}': see --help for the flags"),
            Required(k) => write!(f, "{k} is required: see --help"),
            NotANumber { flag, value } => write!(f, "{flag} '{value}' is not a valid number"),
            NotARate(s) => write!(f, "--rate '{s}' is not a rate: use e.g. 200k, 1.5M, max"),
            RateOutOfRange(s) => write!(f, "--rate '{s}' is out of range: use 1..1G packets/s"),
            NotADuration { flag, value } => {
                write!(f, "{flag} '{value}' is not a duration: use e.g. 10s, 500ms")
            }
            DurationOutOfRange { flag, value } => {
                write!(
                    f,
                    "{flag} '{value}' is out of range: use a positive duration"
                )
            }
            NotAMac { flag, value } => {
                write!(f, "{flag} '{value}' is not a MAC: use aa:bb:cc:dd:ee:ff")
            }
            NotAnAddress { flag, value } => {
                write!(f, "{flag} '{value}' is not an IPv4 or IPv6 address")
            }
            NotUtf8(w) => write!(
                f,
                "argument '{w}' is not UTF-8: give every flag and value in UTF-8"
            ),
        }
    }
}

/// A flag given to a mode (XDP sink, receive, send) that does not take it, or a
/// receive or sink value out of its range.
#[derive(Debug, PartialEq)]
pub enum ModeError {
    /// A flag the XDP sink does not take.
    NotForSink(String),
    SinkSize(usize),
    PassWithoutSink,
    LatencyWithoutSink,
    /// --dsts, --dst-step or --dst with --xdp-sink but no --count-flows.
    NeedsCountFlows(&'static str),
    SendOptionWithReceive(&'static str),
    RingMb,
    ScheduleRateMax,
    ReceiveOptionsWithoutReceive,
    /// A delay line's --delay or --delay-back outside 0..10s.
    DelayRange {
        flag: &'static str,
        value: String,
    },
    DelayQueue(usize),
    DelaySameDevice(String),
    /// A flag --describe does not take.
    NotForDescribe(String),
}

impl fmt::Display for ModeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ModeError::*;
        match self {
            NotForSink(k) => write!(
                f,
                "{k} does not apply to --xdp-sink (it takes --dev, --size, --duration)"
            ),
            SinkSize(size) => write!(
                f,
                "--size {size} is out of range for --xdp-sink: use 64..9000 \
                 (no netassay-gen frame is shorter than 64 bytes)"
            ),
            PassWithoutSink => {
                f.write_str("--pass is an --xdp-sink option: add --xdp-sink or drop --pass")
            }
            LatencyWithoutSink => {
                f.write_str("--latency is an --xdp-sink option: add --xdp-sink or drop --latency")
            }
            NeedsCountFlows(k) => write!(
                f,
                "{k} with --xdp-sink says where --count-flows' flows go: add --count-flows N \
                 or drop {k}"
            ),
            SendOptionWithReceive(k) => write!(f, "{k} is a send option: drop it with --receive"),
            RingMb => f.write_str("--ring-mb must be 1..1024"),
            ScheduleRateMax => f.write_str("--schedule-rate needs a number"),
            ReceiveOptionsWithoutReceive => f.write_str(
                "--idle-timeout, --expect and --interval are receive options: add --receive",
            ),
            DelayRange { flag, value } => {
                write!(f, "{flag} '{value}' is out of range: use 0..10s")
            }
            DelayQueue(n) => write!(f, "--queue {n} is out of range: use 1..10000000 frames"),
            DelaySameDevice(d) => write!(f, "--a and --b are both '{d}': give two devices"),
            NotForDescribe(k) => write!(
                f,
                "{k} is not a --describe option: it takes --pcap, --src, --dst and --mtu-bytes"
            ),
        }
    }
}

/// What a send run cannot be asked to do: its length, flows, batches, technique
/// and frame.
#[derive(Debug, PartialEq)]
pub enum SendUsage {
    DurationAndCount,
    NoDurationOrCount,
    MaxWithoutDuration,
    ZeroCount,
    Flows(u64),
    Burst(usize),
    Batch {
        batch: usize,
        burst: usize,
    },
    /// --dsts outside 1..1000000, or a --dst-step of 0.
    Dsts(u64, u32),
    /// A flow's address would carry out of the address's last 32 bits.
    AddressesPastEnd,
    /// --flow-order that is neither incremental nor random.
    FlowOrder(String),
    /// --catch-up that is neither `off` nor a factor in 1.1..1000.
    CatchUp(String),
    UnknownTechnique(String),
    QdiscBypassed {
        technique: &'static str,
        why: &'static str,
    },
    MixedFamilies,
    FrameSize {
        size: usize,
        family: &'static str,
        min: usize,
        max: usize,
    },
    /// A frame mix that does not parse: the text and why.
    Imix(String, String),
    ImixAndSize,
    /// A technique whose slots hold frames of one length only.
    ImixTechnique(String),
    /// The plan has neither a length in time nor a count.
    NoPlan,
    ZeroPackets,
    /// --pcap FILE cannot be read or holds no frame to send: the file and why.
    Pcap(String, String),
    /// A flag that a capture's frames decide for themselves.
    PcapWith(&'static str),
    /// --pcap with both --rate and --speed, or neither.
    PcapRateOrSpeed,
    /// --speed without --pcap.
    SpeedWithoutPcap,
    /// --speed not a factor in 0.001..1000.
    Speed(String),
    /// --speed on a capture whose frames all carry one time (how many frames).
    PcapNoGaps(usize),
}

impl fmt::Display for SendUsage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use SendUsage::*;
        match self {
            DurationAndCount => f.write_str("give --duration or --count, not both"),
            NoDurationOrCount => f.write_str("--duration (or --count) is required: see --help"),
            MaxWithoutDuration => {
                f.write_str("--rate max needs --duration (it sends for that long)")
            }
            ZeroCount => f.write_str("--count must be at least 1"),
            Flows(n) => write!(f, "--flows {n} is out of range: use 1..1000000"),
            Burst(n) => write!(f, "--burst {n} is out of range: use 1..1024"),
            Batch { batch, burst } => write!(f, "--batch {batch} must be 1..--burst ({burst})"),
            Dsts(n, step) => write!(
                f,
                "--dsts {n} --dst-step {step} is out of range: use 1..1000000 destinations, \
                 a step of 1 or more"
            ),
            AddressesPastEnd => f.write_str(
                "the flows' addresses would run past the last 32 bits of --src or --dst: \
                 lower --flows, --dsts or --dst-step",
            ),
            FlowOrder(v) => write!(
                f,
                "--flow-order '{v}' is unknown: use incremental or random"
            ),
            CatchUp(v) => write!(
                f,
                "--catch-up '{v}' is not a factor of the rate: use 1.1..1000 (e.g. 2), or off"
            ),
            UnknownTechnique(t) => write!(
                f,
                "--technique '{t}' is unknown: use auto, sendmmsg, txring, xdp or none"
            ),
            QdiscBypassed { technique, why } => write!(
                f,
                "--qdisc does not apply to --technique {technique}: {why}; drop --qdisc, or \
                 use --technique sendmmsg or txring to send through the qdisc"
            ),
            MixedFamilies => f.write_str("--src and --dst must be the same address family"),
            FrameSize {
                size,
                family,
                min,
                max,
            } => write!(
                f,
                "--size {size} is out of range for {family}: use {min}..{max}"
            ),
            Imix(text, why) => write!(f, "--imix '{text}': {why}"),
            ImixAndSize => f.write_str("give --imix or --size, not both"),
            ImixTechnique(t) => write!(
                f,
                "--imix is sent with --technique sendmmsg (or none, or auto), not {t}: \
                 its frames have one length"
            ),
            NoPlan => f.write_str("--duration or --count is required"),
            ZeroPackets => {
                f.write_str("rate * duration rounds to 0 packets: raise --rate or --duration")
            }
            Pcap(path, why) => write!(f, "--pcap {path}: {why}"),
            PcapWith(k) => write!(
                f,
                "{k} does not apply to --pcap: a capture's frames keep their own sizes, \
                 protocols and ports; drop {k}"
            ),
            PcapRateOrSpeed => f.write_str(
                "--pcap takes --rate (evenly paced) or --speed (the capture's own gaps, \
                 scaled), exactly one of them",
            ),
            SpeedWithoutPcap => f.write_str("--speed is a --pcap option: add --pcap FILE or drop --speed"),
            Speed(v) => write!(
                f,
                "--speed '{v}' is not a factor of the capture's pace: use 0.001..1000 (1: as captured)"
            ),
            PcapNoGaps(n) => write!(
                f,
                "--speed needs time between the capture's frames, and its {n} frames to send \
                 all carry one time: use --rate"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_messages_say_what_to_do() {
        let cases: [(UsageError, &str); 8] = [
            (
                FlagError::NeedsValue("--rate".into()).into(),
                "--rate needs a value: see --help",
            ),
            (
                FlagError::Unknown("--bogus".into()).into(),
                "unknown argument '--bogus': see --help for the flags",
            ),
            (
                FlagError::NotARate("fast".into()).into(),
                "--rate 'fast' is not a rate: use e.g. 200k, 1.5M, max",
            ),
            (
                FlagError::DurationOutOfRange {
                    flag: "--interval",
                    value: "-1".into(),
                }
                .into(),
                "--interval '-1' is out of range: use a positive duration",
            ),
            (
                ModeError::NotForSink("--rate".into()).into(),
                "--rate does not apply to --xdp-sink (it takes --dev, --size, --duration)",
            ),
            (
                SendUsage::Batch {
                    batch: 65,
                    burst: 64,
                }
                .into(),
                "--batch 65 must be 1..--burst (64)",
            ),
            (
                SendUsage::FrameSize {
                    size: 64,
                    family: "IPv6",
                    min: 84,
                    max: 1518,
                }
                .into(),
                "--size 64 is out of range for IPv6: use 84..1518",
            ),
            (
                SendUsage::ZeroPackets.into(),
                "rate * duration rounds to 0 packets: raise --rate or --duration",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text);
        }
    }

    #[test]
    fn every_usage_error_is_one_line() {
        let all: Vec<UsageError> = vec![
            FlagError::Required("--dev").into(),
            FlagError::NotUtf8("\u{fffd}".into()).into(),
            ModeError::SinkSize(10).into(),
            ModeError::PassWithoutSink.into(),
            ModeError::LatencyWithoutSink.into(),
            ModeError::NeedsCountFlows("--dsts").into(),
            ModeError::SendOptionWithReceive("--rate").into(),
            ModeError::ScheduleRateMax.into(),
            ModeError::ReceiveOptionsWithoutReceive.into(),
            SendUsage::DurationAndCount.into(),
            SendUsage::NoDurationOrCount.into(),
            SendUsage::MaxWithoutDuration.into(),
            SendUsage::ZeroCount.into(),
            SendUsage::Flows(0).into(),
            SendUsage::Burst(0).into(),
            SendUsage::Dsts(0, 1).into(),
            SendUsage::AddressesPastEnd.into(),
            SendUsage::FlowOrder("x".into()).into(),
            SendUsage::UnknownTechnique("afxdp".into()).into(),
            SendUsage::QdiscBypassed {
                technique: "none",
                why: "it sends nothing",
            }
            .into(),
            SendUsage::MixedFamilies.into(),
            SendUsage::NoPlan.into(),
        ];
        for e in all {
            let s = e.to_string();
            assert!(!s.is_empty() && !s.contains('\n'), "{e:?}: {s}");
        }
    }
}

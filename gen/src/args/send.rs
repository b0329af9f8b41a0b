//! The sender's options, by group, checked in this order: the run's length (rate,
//! duration or count), its flows and send calls, the technique, then the frame
//! (addresses, size, destination port).

use super::line::Line;
use super::values::parse_rate;
use super::{duration, need, number, number_or, Rate, Send};
use crate::error::{FlagError, ModeError, SendUsage, UsageError};
use crate::flows::{Order, MAX_DSTS, MAX_FLOWS};
use crate::mix::Mix;
use std::net::IpAddr;

/// The sender's options; a receive option is refused.
pub(super) fn send(a: &Line, dev: String, cpu: Option<usize>) -> Result<Send, UsageError> {
    if [&a.idle_timeout, &a.expect, &a.interval]
        .iter()
        .any(|v| v.is_some())
    {
        return Err(ModeError::ReceiveOptionsWithoutReceive.into());
    }
    let pcap = pcap(a)?;
    let len = length(a, pcap.as_ref())?;
    let f = flows(a)?;
    let technique = technique(a)?;
    let fr = frame(a)?;
    let mix = mix(a, fr.size)?;
    if mix.is_mixed() && !["auto", "sendmmsg", "none"].contains(&technique.as_str()) {
        return Err(SendUsage::ImixTechnique(technique).into());
    }
    if pcap.is_some() && !["auto", "sendmmsg", "none"].contains(&technique.as_str()) {
        return Err(SendUsage::PcapWith(if technique == "xdp" {
            "--technique xdp"
        } else {
            "--technique txring"
        })
        .into());
    }
    Ok(Send {
        dev,
        dst_mac: fr.dst_mac,
        src_mac: fr.src_mac,
        src: fr.src,
        dst: fr.dst,
        rate: len.rate,
        duration_ns: len.duration_ns,
        count: len.count,
        size: mix.largest(),
        mix,
        flows: f.flows,
        dsts: f.dsts,
        dst_step: f.dst_step,
        flow_order: f.order,
        src_port: f.src_port,
        dst_port: fr.dst_port,
        burst: f.burst,
        batch: f.batch,
        catch_up: catch_up(a)?,
        technique,
        best_effort: a.best_effort,
        qdisc: a.qdisc,
        share_cpu: a.share_cpu,
        allow_any_dst: a.allow_any_dst,
        allow_host_netns: a.allow_host_netns,
        json: a.json,
        cpu,
        pcap,
    })
}

/// --pcap FILE with --rate or --speed X; the flags a capture's frames decide for
/// themselves are refused with it, the first in this order.
fn pcap(a: &Line) -> Result<Option<super::Pcap>, SendUsage> {
    let Some(path) = a.pcap.clone() else {
        return match a.speed {
            Some(_) => Err(SendUsage::SpeedWithoutPcap),
            None => Ok(None),
        };
    };
    let own = [
        ("--size", &a.size),
        ("--imix", &a.imix),
        ("--flows", &a.flows),
        ("--flow-order", &a.flow_order),
        ("--flow-seed", &a.flow_seed),
        ("--dsts", &a.dsts),
        ("--dst-step", &a.dst_step),
        ("--src-port", &a.src_port),
        ("--dst-port", &a.dst_port),
    ];
    if let Some((k, _)) = own.into_iter().find(|(_, v)| v.is_some()) {
        return Err(SendUsage::PcapWith(k));
    }
    let speed = match (&a.rate, &a.speed) {
        (Some(_), None) => None,
        (None, Some(v)) => match v.parse::<f64>() {
            Ok(x) if x.is_finite() && (0.001..=1000.0).contains(&x) => Some(x),
            _ => return Err(SendUsage::Speed(v.clone())),
        },
        _ => return Err(SendUsage::PcapRateOrSpeed),
    };
    Ok(Some(super::Pcap { path, speed }))
}

/// How long a run is: --rate with --duration or --count.
#[derive(Debug, PartialEq)]
struct Length {
    rate: Rate,
    duration_ns: Option<u64>,
    count: Option<u64>,
}

/// With --pcap --speed the rate is the capture's (the one here is unused).
fn length(a: &Line, pcap: Option<&super::Pcap>) -> Result<Length, UsageError> {
    let rate = match pcap.and_then(|p| p.speed) {
        Some(_) => Rate::Pps(1.0),
        None => parse_rate(need("--rate", &a.rate)?)?,
    };
    let duration_ns = duration("--duration", &a.duration)?;
    let count = number::<u64>("--count", &a.count)?;
    match (&rate, duration_ns, count) {
        (_, Some(_), Some(_)) => return Err(SendUsage::DurationAndCount.into()),
        (_, None, None) => return Err(SendUsage::NoDurationOrCount.into()),
        (Rate::Max, None, Some(_)) => return Err(SendUsage::MaxWithoutDuration.into()),
        _ => {}
    }
    if count == Some(0) {
        return Err(SendUsage::ZeroCount.into());
    }
    Ok(Length {
        rate,
        duration_ns,
        count,
    })
}

/// How packets are spread over flows (their tuples: `flows`) and send calls.
#[derive(Debug, PartialEq)]
struct Flows {
    flows: u64,
    dsts: u64,
    dst_step: u32,
    order: Order,
    burst: usize,
    batch: Option<usize>,
    src_port: u16,
}

fn flows(a: &Line) -> Result<Flows, UsageError> {
    let flows = number_or("--flows", &a.flows, 1u64)?;
    if !(1..=MAX_FLOWS).contains(&flows) {
        return Err(SendUsage::Flows(flows).into());
    }
    let dsts = number_or("--dsts", &a.dsts, 1u64)?;
    let dst_step = number_or("--dst-step", &a.dst_step, 1u32)?;
    if !(1..=MAX_DSTS).contains(&dsts) || dst_step == 0 {
        return Err(SendUsage::Dsts(dsts, dst_step).into());
    }
    let seed = number_or("--flow-seed", &a.flow_seed, 1u64)?;
    let order = match a.flow_order.as_deref().unwrap_or("incremental") {
        "incremental" => Order::Incremental,
        "random" => Order::Random(seed),
        other => return Err(SendUsage::FlowOrder(other.into()).into()),
    };
    let burst = number_or("--burst", &a.burst, 64usize)?;
    if !(1..=1024).contains(&burst) {
        return Err(SendUsage::Burst(burst).into());
    }
    let batch = number::<usize>("--batch", &a.batch)?;
    if let Some(b) = batch {
        if b == 0 || b > burst {
            return Err(SendUsage::Batch { batch: b, burst }.into());
        }
    }
    let src_port = number_or("--src-port", &a.src_port, 10000u16)?;
    Ok(Flows {
        flows,
        dsts,
        dst_step,
        order,
        burst,
        batch,
        src_port,
    })
}

/// The catch-up bound of paced XDP live frames (`--catch-up F`, default 2; `off`: none).
pub const CATCH_UP_DEFAULT: f64 = 2.0;

fn catch_up(a: &Line) -> Result<Option<f64>, UsageError> {
    match a.catch_up.as_deref() {
        None => Ok(Some(CATCH_UP_DEFAULT)),
        Some("off") => Ok(None),
        Some(v) => match v.parse::<f64>() {
            Ok(f) if f.is_finite() && (1.1..=1000.0).contains(&f) => Ok(Some(f)),
            _ => Err(SendUsage::CatchUp(v.to_string()).into()),
        },
    }
}

const TECHNIQUES: [&str; 5] = ["auto", "sendmmsg", "txring", "xdp", "none"];

/// --technique, and --qdisc where it means something.
fn technique(a: &Line) -> Result<String, UsageError> {
    let technique = a.technique.as_deref().unwrap_or("auto").to_string();
    if !TECHNIQUES.contains(&technique.as_str()) {
        return Err(SendUsage::UnknownTechnique(technique).into());
    }
    if a.qdisc {
        check_qdisc(&technique)?;
    }
    Ok(technique)
}

/// --qdisc only means something to the AF_PACKET techniques: refuse it where it
/// would be ignored.
fn check_qdisc(technique: &str) -> Result<(), SendUsage> {
    let (technique, why) = match technique {
        "xdp" => (
            "xdp",
            "XDP live frames leave through XDP_TX and never pass a qdisc",
        ),
        "none" => ("none", "it sends nothing, so no frame would pass the qdisc"),
        _ => return Ok(()),
    };
    Err(SendUsage::QdiscBypassed { technique, why })
}

/// What every frame carries: its addresses, its size and destination port.
#[derive(Debug, PartialEq)]
struct Frame {
    dst_mac: [u8; 6],
    src_mac: Option<[u8; 6]>,
    src: IpAddr,
    dst: IpAddr,
    size: usize,
    dst_port: u16,
}

/// The frames' sizes: --imix, or the one --size.
fn mix(a: &Line, size: usize) -> Result<Mix, SendUsage> {
    match (a.imix.as_deref(), a.size.as_deref()) {
        (Some(_), Some(_)) => Err(SendUsage::ImixAndSize),
        (Some(text), None) => Mix::parse(text),
        (None, _) => Ok(Mix::one(size)),
    }
}

fn frame(a: &Line) -> Result<Frame, FlagError> {
    Ok(Frame {
        dst_mac: mac("--dst-mac", &a.dst_mac)?,
        src_mac: a
            .src_mac
            .as_ref()
            .map(|_| mac("--src-mac", &a.src_mac))
            .transpose()?,
        src: ip("--src", &a.src)?,
        dst: ip("--dst", &a.dst)?,
        size: number_or("--size", &a.size, 64usize)?,
        dst_port: number_or("--dst-port", &a.dst_port, 9u16)?,
    })
}

fn mac(k: &'static str, v: &Option<String>) -> Result<[u8; 6], FlagError> {
    let v = need(k, v)?;
    crate::packet::parse_mac(v).ok_or_else(|| FlagError::NotAMac {
        flag: k,
        value: v.into(),
    })
}

fn ip(k: &'static str, v: &Option<String>) -> Result<IpAddr, FlagError> {
    let v = need(k, v)?;
    v.parse().map_err(|_| FlagError::NotAnAddress {
        flag: k,
        value: v.into(),
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::tests::v;
    use super::super::{parse, Cmd};
    use super::*;

    pub const SEND: &str = "--dev a --dst-mac 02:00:00:00:00:01 --src 198.18.0.2 \
                            --dst 198.19.0.2 --rate 1k --duration 1";

    fn given(s: &str) -> Line {
        super::super::scan::<Line>(&v(s)).unwrap().flags
    }

    #[test]
    fn qdisc_is_refused_where_no_frame_passes_a_qdisc() {
        for t in ["xdp", "none"] {
            let e = parse(&v(&format!("{SEND} --qdisc --technique {t}")))
                .unwrap_err()
                .to_string();
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
    fn the_length_is_a_duration_or_a_count() {
        let l = length(&given("--rate 1.5M --count 10"), None).unwrap();
        assert_eq!(l.rate, Rate::Pps(1.5e6));
        assert_eq!((l.duration_ns, l.count), (None, Some(10)));
        let e = |s: &str| length(&given(s), None).unwrap_err();
        assert_eq!(e("--duration 1"), FlagError::Required("--rate").into());
        assert_eq!(
            e("--rate 1k --duration 1 --count 5"),
            SendUsage::DurationAndCount.into()
        );
        assert_eq!(e("--rate 1k"), SendUsage::NoDurationOrCount.into());
        assert_eq!(
            e("--rate max --count 5"),
            SendUsage::MaxWithoutDuration.into()
        );
        assert_eq!(e("--rate 1k --count 0"), SendUsage::ZeroCount.into());
    }

    #[test]
    fn flows_and_send_calls() {
        let f = flows(&given("")).unwrap();
        assert_eq!(
            (f.flows, f.burst, f.batch, f.src_port),
            (1, 64, None, 10000)
        );
        assert_eq!((f.dsts, f.dst_step, f.order), (1, 1, Order::Incremental));
        let f = flows(&given(
            "--flows 1000000 --dsts 1000 --dst-step 64 --flow-order random \
                              --flow-seed 9",
        ))
        .unwrap();
        assert_eq!(
            (f.flows, f.dsts, f.dst_step, f.order),
            (1_000_000, 1000, 64, Order::Random(9))
        );
        let f = flows(&given("--flows 16 --burst 8 --batch 8 --src-port 65520")).unwrap();
        assert_eq!(
            (f.flows, f.burst, f.batch, f.src_port),
            (16, 8, Some(8), 65520)
        );
        let e = |s: &str| flows(&given(s)).unwrap_err();
        assert_eq!(e("--flows 1000001"), SendUsage::Flows(1_000_001).into());
        assert_eq!(e("--dsts 0"), SendUsage::Dsts(0, 1).into());
        assert_eq!(e("--dst-step 0"), SendUsage::Dsts(1, 0).into());
        assert_eq!(
            e("--flow-order shuffled"),
            SendUsage::FlowOrder("shuffled".into()).into()
        );
        assert_eq!(e("--burst 0"), SendUsage::Burst(0).into());
        assert_eq!(
            e("--burst 8 --batch 9"),
            SendUsage::Batch { batch: 9, burst: 8 }.into()
        );
        // checked in order: the flows before the ports
        assert_eq!(e("--src-port 70000 --flows 0"), SendUsage::Flows(0).into());
    }

    #[test]
    fn techniques() {
        assert_eq!(technique(&given("")).unwrap(), "auto");
        assert_eq!(
            technique(&given("--technique txring --qdisc")).unwrap(),
            "txring"
        );
        assert_eq!(
            technique(&given("--technique afxdp --qdisc")).unwrap_err(),
            SendUsage::UnknownTechnique("afxdp".into()).into()
        );
        assert!(matches!(
            technique(&given("--technique none --qdisc")).unwrap_err(),
            UsageError::Send(SendUsage::QdiscBypassed {
                technique: "none",
                ..
            })
        ));
    }

    #[test]
    fn a_mix_or_one_size() {
        let a = given("--imix 64:7,594:4,1518:1");
        assert_eq!(mix(&a, 64).unwrap().sizes, [64, 594, 1518]);
        assert_eq!(mix(&given("--size 128"), 128).unwrap(), Mix::one(128));
        let both = given("--imix simple --size 64");
        assert_eq!(mix(&both, 64), Err(SendUsage::ImixAndSize));
    }

    #[test]
    fn the_frame() {
        let f = frame(&given(
            "--dst-mac 02:00:00:00:00:01 --src 2001:2::2 --dst 2001:2::3 --size 84",
        ))
        .unwrap();
        assert_eq!((f.src_mac, f.size, f.dst_port), (None, 84, 9));
        assert_eq!(f.dst, "2001:2::3".parse::<IpAddr>().unwrap());
        let e = |s: &str| frame(&given(s)).unwrap_err();
        assert_eq!(e("--src 198.18.0.2"), FlagError::Required("--dst-mac"));
        assert_eq!(
            e("--dst-mac 02:00:00:00:00:01 --src-mac 02:00 --src x"),
            FlagError::NotAMac {
                flag: "--src-mac",
                value: "02:00".into()
            }
        );
        assert_eq!(
            e("--dst-mac 02:00:00:00:00:01 --src 198.18.0.2 --dst 198.19.0.300"),
            FlagError::NotAnAddress {
                flag: "--dst",
                value: "198.19.0.300".into()
            }
        );
    }

    #[test]
    fn a_capture_at_a_rate_or_its_own_gaps() {
        let base = "--dev a --dst-mac 02:00:00:00:00:01 --src 198.18.0.2 --dst 198.19.0.2";
        let p = |s: &str| parse(&v(&format!("{base} {s}")));
        match p("--pcap f.pcap --rate 1k --count 5").unwrap() {
            Cmd::Send(s) => assert_eq!(
                s.pcap,
                Some(super::super::Pcap {
                    path: "f.pcap".into(),
                    speed: None
                })
            ),
            _ => panic!(),
        }
        match p("--pcap f.pcap --speed 2 --duration 1").unwrap() {
            Cmd::Send(s) => assert_eq!(s.pcap.unwrap().speed, Some(2.0)),
            _ => panic!(),
        }
        let e = |s: &str| p(s).unwrap_err();
        assert_eq!(
            e("--speed 2 --duration 1"),
            SendUsage::SpeedWithoutPcap.into()
        );
        assert_eq!(
            e("--pcap f --rate 1k --speed 2 --duration 1"),
            SendUsage::PcapRateOrSpeed.into()
        );
        assert_eq!(
            e("--pcap f --duration 1"),
            SendUsage::PcapRateOrSpeed.into()
        );
        assert_eq!(
            e("--pcap f --speed 0 --duration 1"),
            SendUsage::Speed("0".into()).into()
        );
        assert_eq!(
            e("--pcap f --rate 1k --duration 1 --size 128"),
            SendUsage::PcapWith("--size").into()
        );
        assert_eq!(
            e("--pcap f --rate 1k --duration 1 --imix simple"),
            SendUsage::PcapWith("--imix").into()
        );
        assert_eq!(
            e("--pcap f --rate 1k --duration 1 --flows 4"),
            SendUsage::PcapWith("--flows").into()
        );
        assert_eq!(
            e("--pcap f --rate 1k --duration 1 --technique xdp"),
            SendUsage::PcapWith("--technique xdp").into()
        );
        let line = e("--pcap f --rate 1k --duration 1 --dst-port 7").to_string();
        assert!(
            line.contains("drop --dst-port") && !line.contains('\n'),
            "{line}"
        );
        // --describe needs no interface, and takes no send flag
        match parse(&v("--pcap f --src 198.18.0.1 --dst 198.19.0.1 --describe")).unwrap() {
            Cmd::Describe(d) => assert_eq!((d.path.as_str(), d.mtu), ("f", 1500)),
            _ => panic!(),
        }
        let e = parse(&v(
            "--pcap f --src 198.18.0.1 --dst 198.19.0.1 --describe --dev a",
        ));
        assert!(e
            .unwrap_err()
            .to_string()
            .starts_with("--dev is not a --describe option"));
        // the sink counts a capture's sizes, not --size or --imix with it
        let e = parse(&v("--xdp-sink --dev a --pcap f --size 64")).unwrap_err();
        assert_eq!(e, SendUsage::PcapWith("--size").into());
        match parse(&v("--xdp-sink --dev a --pcap f")).unwrap() {
            Cmd::Sink(k) => assert_eq!(k.pcap.as_deref(), Some("f")),
            _ => panic!(),
        }
    }

    #[test]
    fn groups_are_checked_in_order() {
        // the length before the flows, the flows before the technique, the
        // technique before the frame
        let e = |extra: &str| {
            let line = format!("--dev a --dst-mac zz --src 198.18.0.2 --dst 198.19.0.2 {extra}");
            parse(&v(&line)).unwrap_err()
        };
        assert_eq!(
            e("--rate 1k --flows 0 --technique x"),
            SendUsage::NoDurationOrCount.into()
        );
        assert_eq!(
            e("--rate 1k --count 1 --flows 0 --technique x"),
            SendUsage::Flows(0).into()
        );
        assert_eq!(
            e("--rate 1k --count 1 --technique x"),
            SendUsage::UnknownTechnique("x".into()).into()
        );
        let mac = FlagError::NotAMac {
            flag: "--dst-mac",
            value: "zz".into(),
        };
        assert_eq!(e("--rate 1k --count 1 --size x"), mac.into());
    }
}

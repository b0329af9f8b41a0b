//! The sender's options, by group, checked in this order: the run's length (rate,
//! duration or count), its flows and send calls, the technique, then the frame
//! (addresses, size, destination port).

use super::values::parse_rate;
use super::{Given, Rate, Send};
use crate::error::{FlagError, ModeError, SendUsage, UsageError};
use crate::flows::{Order, MAX_DSTS, MAX_FLOWS};
use crate::mix::Mix;
use std::net::IpAddr;

/// The sender's options; a receive option is refused.
pub(super) fn send(a: &Given, dev: String, cpu: Option<usize>) -> Result<Send, UsageError> {
    if ["--idle-timeout", "--expect", "--interval"]
        .iter()
        .any(|k| a.get(k).is_some())
    {
        return Err(ModeError::ReceiveOptionsWithoutReceive.into());
    }
    let len = length(a)?;
    let f = flows(a)?;
    let technique = technique(a)?;
    let fr = frame(a)?;
    let mix = mix(a, fr.size)?;
    if mix.is_mixed() && !["auto", "sendmmsg", "none"].contains(&technique.as_str()) {
        return Err(SendUsage::ImixTechnique(technique).into());
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
        best_effort: a.has("--best-effort"),
        qdisc: a.has("--qdisc"),
        share_cpu: a.has("--share-cpu"),
        allow_any_dst: a.has("--allow-any-dst"),
        allow_host_netns: a.has("--allow-host-netns"),
        json: a.has("--json"),
        cpu,
    })
}

/// How long a run is: --rate with --duration or --count.
#[derive(Debug, PartialEq)]
struct Length {
    rate: Rate,
    duration_ns: Option<u64>,
    count: Option<u64>,
}

fn length(a: &Given) -> Result<Length, UsageError> {
    let rate = parse_rate(a.need("--rate")?)?;
    let duration_ns = a.duration("--duration")?;
    let count = a.num::<u64>("--count")?;
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

fn flows(a: &Given) -> Result<Flows, UsageError> {
    let flows = a.num_or("--flows", 1u64)?;
    if !(1..=MAX_FLOWS).contains(&flows) {
        return Err(SendUsage::Flows(flows).into());
    }
    let dsts = a.num_or("--dsts", 1u64)?;
    let dst_step = a.num_or("--dst-step", 1u32)?;
    if !(1..=MAX_DSTS).contains(&dsts) || dst_step == 0 {
        return Err(SendUsage::Dsts(dsts, dst_step).into());
    }
    let seed = a.num_or("--flow-seed", 1u64)?;
    let order = match a.get("--flow-order").unwrap_or("incremental") {
        "incremental" => Order::Incremental,
        "random" => Order::Random(seed),
        other => return Err(SendUsage::FlowOrder(other.into()).into()),
    };
    let burst = a.num_or("--burst", 64usize)?;
    if !(1..=1024).contains(&burst) {
        return Err(SendUsage::Burst(burst).into());
    }
    let batch = a.num::<usize>("--batch")?;
    if let Some(b) = batch {
        if b == 0 || b > burst {
            return Err(SendUsage::Batch { batch: b, burst }.into());
        }
    }
    let src_port = a.num_or("--src-port", 10000u16)?;
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

fn catch_up(a: &Given) -> Result<Option<f64>, UsageError> {
    match a.get("--catch-up") {
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
fn technique(a: &Given) -> Result<String, UsageError> {
    let technique = a.get("--technique").unwrap_or("auto").to_string();
    if !TECHNIQUES.contains(&technique.as_str()) {
        return Err(SendUsage::UnknownTechnique(technique).into());
    }
    if a.has("--qdisc") {
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
fn mix(a: &Given, size: usize) -> Result<Mix, SendUsage> {
    match (a.get("--imix"), a.get("--size")) {
        (Some(_), Some(_)) => Err(SendUsage::ImixAndSize),
        (Some(text), None) => Mix::parse(text),
        (None, _) => Ok(Mix::one(size)),
    }
}

fn frame(a: &Given) -> Result<Frame, FlagError> {
    Ok(Frame {
        dst_mac: mac(a, "--dst-mac")?,
        src_mac: a
            .get("--src-mac")
            .map(|_| mac(a, "--src-mac"))
            .transpose()?,
        src: ip(a, "--src")?,
        dst: ip(a, "--dst")?,
        size: a.num_or("--size", 64usize)?,
        dst_port: a.num_or("--dst-port", 9u16)?,
    })
}

fn mac(a: &Given, k: &'static str) -> Result<[u8; 6], FlagError> {
    let v = a.need(k)?;
    crate::packet::parse_mac(v).ok_or_else(|| FlagError::NotAMac {
        flag: k,
        value: v.into(),
    })
}

fn ip(a: &Given, k: &'static str) -> Result<IpAddr, FlagError> {
    let v = a.need(k)?;
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

    fn given(s: &str) -> Given {
        Given::scan(&v(s)).unwrap()
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
        let l = length(&given("--rate 1.5M --count 10")).unwrap();
        assert_eq!(l.rate, Rate::Pps(1.5e6));
        assert_eq!((l.duration_ns, l.count), (None, Some(10)));
        let e = |s: &str| length(&given(s)).unwrap_err();
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

//! Property tests of what netassay-gen parses: its command line (every mode's flags,
//! rates, durations, MACs, addresses, IMIX specs) and the frames it receives (the
//! netassay payload, the UDP length, the per-flow sequence counts). Whatever the
//! input, nothing panics; a refused line is one line; what is accepted is in range,
//! and what is written back parses to the same.
//!
//! `PROPTEST_CASES` sets the cases per property (256 by default; `cargo test` runs
//! them in a few seconds).

use crate::args::{self, Cmd, Rate};
use crate::error::{Error, UsageError};
use crate::mix::{Mix, MAX_CYCLE, MAX_SIZES};
use crate::packet::{self, fmt_mac, parse_mac, Spec, Template, MAX_FRAME};
use crate::rx::{self, Counts};
use proptest::prelude::*;
use proptest::sample::select;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const FLAGS: &[&str] = &[
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
    "--catch-up",
    "--verify",
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
    "--help",
    "-h",
    "--version",
    "-V",
    "--a",
    "--b",
    "--delay",
    "--delay-back",
    "--stats",
    "--queue",
    "delay",
    "--bogus",
    "-x",
    "--",
    "",
];

const VALUES: &[&str] = &[
    "a",
    "tg0",
    "200k",
    "1.5M",
    "1e5",
    "max",
    "0",
    "-1",
    "1e400",
    "nan",
    "inf",
    "1e9",
    "1000000001",
    "1G",
    "2G",
    "10s",
    "500ms",
    "250us",
    "100ns",
    "0s",
    "1e30s",
    "-5s",
    "18446744073709551616",
    "65535",
    "65536",
    "64",
    "84",
    "1518",
    "1519",
    "9000",
    "02:00:00:00:00:01",
    "+2:0:0:0:0:1",
    "02:00:00:00:00",
    "198.18.0.2",
    "198.19.0.2",
    "2001:2::2",
    "10.0.0.1",
    "::1",
    "64:7,590:4,1514:1",
    "simple",
    "random",
    "incremental",
    "1048576",
    "64:0",
    "64:1,64:1",
    "64:18446744073709551615,65:1",
    "auto",
    "sendmmsg",
    "xdp",
    "none",
    "af_packet",
    "4294967296",
    "1,2",
    "=",
    "a=b",
    "\n",
    "x\ny",
    "é",
    "\u{0}",
];

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => select(FLAGS).prop_map(String::from),
        4 => select(VALUES).prop_map(String::from),
        2 => (select(FLAGS), select(VALUES)).prop_map(|(f, v)| format!("{f}={v}")),
        1 => "\\PC{0,8}",
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => any::<f64>().prop_map(|f| f.to_string()),
    ]
}

/// A refusal is printed as one line (as `main` prints it: an `Error`).
fn one_line(e: impl Into<Error>) -> Result<(), TestCaseError> {
    let s = e.into().to_string();
    prop_assert!(!s.is_empty(), "an empty refusal");
    prop_assert!(
        !s.contains(['\n', '\r']),
        "a refusal of more than one line: {s:?}"
    );
    Ok(())
}

fn accepted(cmd: &Cmd) -> Result<(), TestCaseError> {
    match cmd {
        Cmd::Send(s) => {
            if let Rate::Pps(r) = s.rate {
                prop_assert!(r.is_finite() && r > 0.0 && r <= 1e9, "rate {r}");
            }
            prop_assert!(s.duration_ns.is_none_or(|d| d > 0));
            prop_assert_eq!(s.size, s.mix.largest());
            // the frame is checked when its template is built, before anything is sent
            let spec = Spec {
                src_mac: s.src_mac.unwrap_or([2, 0, 0, 0, 0, 9]),
                dst_mac: s.dst_mac,
                src: s.src,
                dst: s.dst,
                sport: s.src_port,
                dport: s.dst_port,
                size: s.size,
            };
            match Template::new(&spec) {
                Ok(t) => prop_assert!((64..=MAX_FRAME).contains(&t.frame.len())),
                Err(e) => one_line(UsageError::from(e))?,
            }
        }
        Cmd::Recv(r) => {
            prop_assert!(r.schedule_rate.is_none_or(|v| v.is_finite() && v > 0.0));
            prop_assert!((1..=1024).contains(&r.ring_mb));
        }
        Cmd::Sink(k) => prop_assert!((64..=9000).contains(&k.size)),
        Cmd::Delay(d) => prop_assert!(d.a != d.b && d.queue >= 1),
        Cmd::Describe(_) => {} // the file is read when it runs
        Cmd::Help | Cmd::Version => {}
    }
    Ok(())
}

fn send_line(extra: &str) -> Vec<String> {
    format!("--dev a --dst-mac 02:00:00:00:00:01 --src 198.18.0.2 --dst 198.19.0.2 {extra}")
        .split_whitespace()
        .map(String::from)
        .collect()
}

fn mix_text() -> impl Strategy<Value = String> {
    let size = prop_oneof![
        (0usize..2000).prop_map(|n| n.to_string()),
        select(VALUES).prop_map(String::from)
    ];
    let weight = prop_oneof![
        (0u64..12_000).prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        select(VALUES).prop_map(String::from)
    ];
    prop_oneof![
        Just("simple".to_string()),
        prop::collection::vec((size, weight), 1..20).prop_map(|ps| ps
            .iter()
            .map(|(s, w)| format!("{s}:{w}"))
            .collect::<Vec<_>>()
            .join(",")),
        "\\PC{0,12}",
    ]
}

fn frame_spec() -> impl Strategy<Value = Spec> {
    let v4 = (any::<[u8; 4]>(), any::<[u8; 4]>())
        .prop_map(|(a, b)| (IpAddr::V4(Ipv4Addr::from(a)), IpAddr::V4(Ipv4Addr::from(b))));
    let v6 = (any::<[u8; 16]>(), any::<[u8; 16]>())
        .prop_map(|(a, b)| (IpAddr::V6(Ipv6Addr::from(a)), IpAddr::V6(Ipv6Addr::from(b))));
    (
        prop_oneof![v4, v6],
        any::<[u8; 6]>(),
        any::<[u8; 6]>(),
        any::<u16>(),
        any::<u16>(),
        0usize..2000,
    )
        .prop_map(|((src, dst), src_mac, dst_mac, sport, dport, size)| Spec {
            src_mac,
            dst_mac,
            src,
            dst,
            sport,
            dport,
            size,
        })
}

proptest! {
    #[test]
    fn any_command_line_is_parsed_or_refused_in_one_line(argv in prop::collection::vec(word(), 0..12)) {
        match args::parse(&argv) {
            Ok(cmd) => accepted(&cmd)?,
            Err(e) => one_line(e)?,
        }
    }

    #[test]
    fn any_send_line_is_parsed_or_refused_in_one_line(extra in prop::collection::vec(word(), 0..8)) {
        let argv: Vec<String> = send_line("--rate 1k --duration 1s").into_iter().chain(extra).collect();
        match args::parse(&argv) {
            Ok(cmd) => accepted(&cmd)?,
            Err(e) => one_line(e)?,
        }
    }

    #[test]
    fn a_rate_and_a_duration_read_back_as_written(r in 1e-3f64..=1e9, d in 1u64..=(86_400 * 365 - 1)) {
        let line = send_line(&format!("--rate {r} --duration {d}"));
        match args::parse(&line) {
            Ok(Cmd::Send(s)) => {
                prop_assert_eq!(s.rate, Rate::Pps(r));
                prop_assert_eq!(s.duration_ns, Some(d * 1_000_000_000));
            }
            other => prop_assert!(false, "{other:?}"),
        }
        let line: Vec<String> = ["--receive", "--dev", "b", "--schedule-rate", &r.to_string()]
            .iter().map(|s| s.to_string()).collect();
        match args::parse(&line) {
            Ok(Cmd::Recv(rv)) => prop_assert_eq!(rv.schedule_rate, Some(r)),
            other => prop_assert!(false, "{other:?}"),
        }
    }

    #[test]
    fn an_imix_spec_is_read_or_refused_and_reads_back_the_same(text in mix_text()) {
        match Mix::parse(&text) {
            Ok(m) => {
                prop_assert!(!m.sizes.is_empty() && m.sizes.len() <= MAX_SIZES);
                prop_assert!(m.sizes.iter().all(|s| (64..=MAX_FRAME).contains(s)));
                prop_assert!(m.weights.iter().all(|w| *w >= 1));
                // summed wide: a sum that wraps (a release build) is caught too
                let total: u128 = m.weights.iter().map(|w| u128::from(*w)).sum();
                prop_assert!(total <= u128::from(MAX_CYCLE) && m.cycle.len() as u128 == total);
                let spec = m.sizes.iter().zip(&m.weights).map(|(s, w)| format!("{s}:{w}"))
                    .collect::<Vec<_>>().join(",");
                prop_assert_eq!(Mix::parse(&spec), Ok(m));
            }
            Err(e) => one_line(e)?,
        }
    }

    #[test]
    fn a_mac_is_six_hex_bytes_and_reads_back_the_same(
        m in any::<[u8; 6]>(),
        text in prop_oneof!["[0-9a-fA-F:+ -]{0,20}",
                            prop::collection::vec("[+ -]?[0-9a-fA-F]{0,2}", 5..8).prop_map(|p| p.join(":"))],
    ) {
        prop_assert_eq!(parse_mac(&fmt_mac(&m)), Some(m));
        if let Some(got) = parse_mac(&text) {
            let parts: Vec<&str> = text.split(':').collect();
            prop_assert!(parts.len() == 6 && parts.iter().all(|p| {
                (1..=2).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_hexdigit())
            }), "{text:?} read as a MAC");
            prop_assert_eq!(parse_mac(&fmt_mac(&got)), Some(got));
        }
    }

    #[test]
    fn any_bytes_are_a_netassay_frame_or_not_without_a_panic(f in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = packet::parse(&f);
        let _ = rx::udp_payload_len(&f);
        let _ = rx::is_udp(&f);
    }

    #[test]
    fn a_stamped_frame_reads_back_what_was_stamped(
        spec in frame_spec(), flow in any::<u32>(), seq in 0..=packet::SEQ_MASK,
        ts in any::<u64>(), vlan in any::<bool>(), cut in 0usize..8,
        tuple in proptest::option::of((any::<u32>(), any::<u32>(), any::<u16>())),
    ) {
        let t = match Template::new(&spec) {
            Ok(t) => t,
            Err(e) => return one_line(UsageError::from(e)),
        };
        let mut f = t.frame.clone();
        // a flow's id and sequence share the sequence field: the id's high 16 bits over
        // the sequence's 48 (the 16-bit stamp of a run without a flow plan: its low 16)
        let flow = match tuple {
            Some((src_low, dst_low, sport)) => {
                let tu = crate::flows::Tuple { src_low, dst_low, sport };
                t.stamp_tuple(&mut f, flow, &tu, seq, ts);
                flow
            }
            None => {
                t.stamp(&mut f, flow as u16, seq, ts);
                u32::from(flow as u16)
            }
        };
        if vlan {  // an 802.1Q tag after the MACs
            f.splice(12..12, [0x81, 0x00, 0x00, 0x01]);
        }
        let want = packet::Parsed { flow, seq, ts };
        prop_assert_eq!(packet::parse(&f), Some(want));
        let udp = spec.size - 14 - if spec.src.is_ipv4() { 20 } else { 40 };
        prop_assert_eq!(rx::udp_payload_len(&f), (udp - 8) as u64);
        let end = t.layout.payload + packet::PAYLOAD_LEN + if vlan { 4 } else { 0 };
        let short = &f[..end - 1 - cut];
        prop_assert_eq!(packet::parse(short), None, "a frame cut inside its payload");
    }

    #[test]
    fn any_sequence_of_payloads_is_counted_without_a_panic(
        ps in prop::collection::vec((0u32..4, any::<u64>(), any::<u64>(), any::<u64>()), 0..40),
        expect in proptest::option::of(any::<u64>()),
    ) {
        let mut c = Counts::new();
        c.bins = Some(rx::Bins { width_ns: 1_000_000_000, rows: Vec::new() });
        for (flow, seq, ts, rx_ns) in ps {
            // arrival times within a minute of each other: the bins stay small
            c.add_sized(&packet::Parsed { flow, seq, ts }, rx_ns % 60_000_000_000 + 1, 22);
        }
        let j = c.to_json(expect, None, Vec::new()).to_string();
        prop_assert!(j.starts_with('{'), "the counts as JSON: {j}");
        // the total lost is the flows' lost, summed wide and saturated (a sum that
        // wraps, as a release build's would, is caught too)
        let nf = c.flows.len() as u64;
        let flows: u128 = c.flows.iter().enumerate().map(|(i, f)| {
            u128::from(f.lost(expect.map(|n| n / nf + u64::from((i as u64) < n % nf))))
        }).sum();
        let want = flows.min(u128::from(u64::MAX));
        prop_assert!(j.contains(&format!("\"lost\":{want},")), "lost {want} in {j}");
    }
}

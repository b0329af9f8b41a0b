//! Receive mode: count netassay-gen frames on an AF_PACKET ring until a signal,
//! --duration or --idle-timeout, then print the result.

use super::{interface, pin};
use crate::args::Recv;
use crate::error::{Error, SystemError};
use crate::json::J;
use crate::{pace, rx};

pub fn run(r: &Recv) -> Result<(), Error> {
    let ifindex = interface(&r.dev)?;
    pin(r.cpu)?;
    let block_size: u32 = 1 << 20;
    let cfg = rx::RxCfg {
        ifindex,
        schedule_rate: r.schedule_rate,
        duration_ns: r.duration_ns,
        idle_ns: r.idle_ns,
        block_size,
        block_nr: r.ring_mb,
        interval_ns: r.interval_ns,
        verify: r.verify,
    };
    pace::install_signals();
    let (fd, map, _len) = rx::open(&cfg).map_err(|err| SystemError::ReceiveRing {
        dev: r.dev.clone(),
        err,
    })?;
    eprintln!("netassay-gen: receiving on {}", r.dev);
    let out = rx::run(&cfg, fd, map);
    print_result(r, &out);
    Ok(())
}

/// The counts as JSON, or a readable summary with the JSON after it.
fn print_result(r: &Recv, out: &rx::RxOut) {
    let sched = match (r.schedule_rate, &out.counts.arrivals) {
        (Some(rate), Some(a)) => rx::schedule_stats(a, rate),
        _ => J::Null,
    };
    let extra = vec![
        ("schedule", sched),
        ("technique", J::S("af_packet_tpacket_v3".into())),
        ("ring_drops", J::U(out.ring_drops)),
        ("stopped_by_signal", J::B(out.stopped_by_signal)),
        ("stop_reason", J::S(out.stop_reason.into())),
        ("dev", J::S(r.dev.clone())),
    ];
    let j = out.counts.to_json(r.expect, r.flows, extra);
    if r.json {
        println!("{j}");
    } else {
        let c = &out.counts;
        let rec: u64 = c.flows.iter().map(|f| f.received).sum();
        println!(
            "netassay-gen receive on {}: {rec} packets in {} flows; ring drops {}",
            r.dev,
            c.flows.len(),
            out.ring_drops
        );
        println!("  {j}");
    }
}

//! Send mode with --pcap: a capture's frames rewritten (`replay`), sent with
//! AF_PACKET sendmmsg (its frames have their own lengths) at --rate or on the
//! capture's gaps scaled by --speed, and reported with what the capture held.

use super::plan::{self, Plan, RATE_TOLERANCE};
use super::report::{self, Ran};
use super::send::{check_safety, egress_drops, flow_plan, loop_cfg, open_af_packet, src_mac};
use super::{interface, pin};
use crate::args::{Pcap, Send};
use crate::error::{Error, SendUsage, SystemError};
use crate::json::J;
use crate::packet::ETH_LEN;
use crate::replay::{Gaps, Replay, Target};
use crate::{pace, sys, xdp};

pub fn run(s: &Send, p: &Pcap) -> Result<(), Error> {
    check_safety(s, &flow_plan(s)?)?;
    let ifindex = interface(&s.dev)?;
    if s.src.is_ipv6() != s.dst.is_ipv6() {
        return Err(SendUsage::MixedFamilies.into());
    }
    let t = Target {
        src_mac: src_mac(s)?,
        dst_mac: s.dst_mac,
        src: s.src,
        dst: s.dst,
        max_frame: mtu(&s.dev) + ETH_LEN,
    };
    let r = Replay::load(&p.path, &t)?;
    if r.skipped_total() > 0 {
        eprintln!(
            "netassay-gen: --pcap {}: {} of its {} frames skipped ({}), {} sent in a loop",
            p.path,
            r.skipped_total(),
            r.records,
            r.skipped_words(),
            r.frames.len()
        );
    }
    let gaps = p.speed.map(|x| Gaps::new(&r.ts_ns, x)).transpose()?;
    let plan = match &gaps {
        Some(g) => gap_plan(g, s)?,
        None => plan::plan(&s.rate, s.duration_ns, s.count)?,
    };
    pin(s.cpu)?;
    sys::own_sched_group();
    pace::install_signals();
    pace::share_cpu(s.share_cpu);
    let cfg = loop_cfg(s, &plan);
    let why = match s.technique.as_str() {
        "auto" => "auto: a capture's frames have lengths of their own, which XDP live \
                   frames (one template) cannot; AF_PACKET sendmmsg"
            .to_string(),
        t => format!("requested (--technique {t})"),
    };
    let drop0 = xdp::dev_stat(&s.dev, "tx_dropped").unwrap_or(0);
    let largest = r.largest().frame.len();
    let mut txr = open_af_packet(s, ifindex, r.largest())?;
    let out =
        crate::replay::send(txr.as_mut(), &r, gaps.as_ref(), &cfg).map_err(|(err, sent)| {
            SystemError::Send {
                dev: s.dev.clone(),
                sent,
                err,
                size: largest,
                mtu: largest - ETH_LEN,
            }
        })?;
    let drops = egress_drops(&s.dev, drop0);
    // on the capture's gaps, the rate to keep is the schedule's over the frames sent
    let judged = match &gaps {
        Some(g) if out.sent > out.first_batch => Plan {
            rate: Some(g.rate_between(out.first_batch - 1, out.sent - 1)),
            ..plan
        },
        _ => plan,
    };
    let mut extra = r.json(&p.path, p.speed, out.sent);
    extra.push(("size_bytes", J::U(largest as u64)));
    // the marked frames among those planned (at --rate max: as many as were sent)
    let planned = if plan.rate.is_some() {
        plan.planned
    } else {
        out.sent
    };
    extra.push(("marked_planned", J::U(r.sent(planned).total(1))));
    let ran = Ran {
        technique: txr.name(),
        why,
        fallback: String::new(),
        batch: cfg.batch,
        catch_up: None,
        out,
    };
    report::report(s, &judged, &ran, drops, extra)?;
    Ok(())
}

/// The plan on the capture's own gaps: the frames due within --duration (its
/// deadline as a paced run's), or --count; paced at their mean rate for the batches.
fn gap_plan(g: &Gaps, s: &Send) -> Result<Plan, SendUsage> {
    let grace = |d: u64| (d as f64 * RATE_TOLERANCE).round() as u64;
    let (planned, deadline_ns) = match (s.duration_ns, s.count) {
        (Some(d), None) => (g.planned(d), Some(d + grace(d))),
        (None, Some(n)) => (n, None),
        _ => return Err(SendUsage::NoPlan),
    };
    Ok(Plan {
        rate: Some(g.mean_rate()),
        planned,
        deadline_ns,
    })
}

/// The interface's MTU (1500 when it cannot be read).
fn mtu(dev: &str) -> usize {
    std::fs::read_to_string(format!("/sys/class/net/{dev}/mtu"))
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(1500)
}

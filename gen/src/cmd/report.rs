//! A finished send run's numbers, printed (JSON or a readable summary), and the
//! exit policy: the rate not kept is an error (exit 3) unless --best-effort.

use super::plan::{verdict, Plan, Verdict, RATE_TOLERANCE};
use crate::args::Send;
use crate::error::NotKept;
use crate::json::J;
use crate::pace;
use crate::packet;
use crate::tx;

/// One finished send loop and how it came to run.
pub struct Ran {
    pub technique: &'static str,
    pub why: String,
    pub fallback: String,
    pub batch: usize,
    /// The bound on a catch-up after a stall, as a factor of the rate (None: unbounded).
    pub catch_up: Option<f64>,
    pub out: tx::LoopOut,
}

/// A send run's numbers, as reported.
struct Outcome {
    /// As planned; at --rate max, what was sent.
    planned: u64,
    sent: u64,
    achieved: f64,
    /// achieved / requested - 1 (NaN at --rate max).
    rate_error: f64,
    duration_s: f64,
    verdict: Verdict,
}

impl Outcome {
    fn of(plan: &Plan, o: &tx::LoopOut) -> Outcome {
        let achieved = pace::achieved_rate(o.sent, o.first_batch, o.first_tx, o.last_tx);
        let planned = if plan.rate.is_none() {
            o.sent
        } else {
            plan.planned
        };
        let rate_error = plan.rate.map_or(f64::NAN, |r| achieved / r - 1.0);
        Outcome {
            planned,
            sent: o.sent,
            achieved,
            rate_error,
            duration_s: o.last_tx.saturating_sub(o.first_tx) as f64 / 1e9,
            verdict: verdict(plan.rate, rate_error, o.sent, planned, o.stop),
        }
    }
}

/// Print the run's result; Err when the rate was not kept (and that matters).
/// `extra`: keys of the JSON line a mode adds or replaces (a replay's), and lines
/// of the readable summary.
pub fn report(
    s: &Send,
    plan: &Plan,
    ran: &Ran,
    egress_drops: u64,
    extra: Vec<(&'static str, J)>,
) -> Result<(), NotKept> {
    let r = Outcome::of(plan, &ran.out);
    if s.json {
        let mut j = send_json(s, plan, ran, &r, egress_drops);
        if let J::Obj(kv) = &mut j {
            for (k, v) in extra {
                match kv.iter_mut().find(|(key, _)| key == k) {
                    Some(slot) => slot.1 = v,
                    None => kv.push((k.to_string(), v)),
                }
            }
        }
        println!("{j}");
    } else {
        print_send(plan, ran, &r);
        for (k, v) in extra {
            println!("  {k}: {v}");
        }
    }
    judge(plan, &r, s.best_effort)
}

/// The exit policy: Ok when the rate was kept (or none was asked for), else why
/// it was not (exit 3), which --best-effort turns into Ok.
fn judge(plan: &Plan, r: &Outcome, best_effort: bool) -> Result<(), NotKept> {
    match r.verdict {
        Verdict::Unpaced | Verdict::Kept => Ok(()),
        _ if best_effort => Ok(()),
        _ => Err(not_kept(plan, r)),
    }
}

/// Why the rate was not kept, with the numbers the line on stderr gives.
fn not_kept(plan: &Plan, r: &Outcome) -> NotKept {
    let rate = plan.rate.unwrap_or(0.0);
    match r.verdict {
        Verdict::Stopped => NotKept::Stopped {
            sent: r.sent,
            planned: r.planned,
        },
        Verdict::Truncated => NotKept::Truncated {
            sent: r.sent,
            planned: r.planned,
            achieved: r.achieved,
            rate,
        },
        _ => NotKept::Missed {
            achieved: r.achieved,
            rate,
            rate_error: r.rate_error,
            tolerance: RATE_TOLERANCE,
        },
    }
}

fn send_json(s: &Send, plan: &Plan, ran: &Ran, r: &Outcome, egress_drops: u64) -> J {
    let (o, h) = (&ran.out, &ran.out.lateness);
    let late = |q: f64| {
        if h.n == 0 {
            J::Null
        } else {
            J::U(h.quantile(q))
        }
    };
    let text_or_null = |t: &str| {
        if t.is_empty() {
            J::Null
        } else {
            J::S(t.into())
        }
    };
    J::obj(vec![
        ("mode", J::S("send".into())),
        ("technique", J::S(ran.technique.into())),
        ("technique_reason", J::S(ran.why.clone())),
        ("fallback_reason", text_or_null(&ran.fallback)),
        ("planned", J::U(r.planned)),
        ("sent", J::U(r.sent)),
        ("shortfall", J::U(r.planned - r.sent)),
        ("truncated", J::B(r.sent < r.planned)),
        ("stop_reason", J::S(o.stop.name().into())),
        ("first_tx_ns", J::U(o.first_tx)),
        ("last_tx_ns", J::U(o.last_tx)),
        ("end_ns", if o.end == 0 { J::Null } else { J::U(o.end) }),
        ("stall_max_ns", o.stall.map_or(J::Null, |(n, _)| J::U(n))),
        ("stall_start_ns", o.stall.map_or(J::Null, |(_, t)| J::U(t))),
        ("duration_s", J::F(r.duration_s)),
        ("rate_pps", plan.rate.map_or(J::Null, J::F)),
        ("achieved_rate_pps", J::F(r.achieved)),
        ("rate_error", J::F(r.rate_error)),
        ("rate_tolerance", J::F(RATE_TOLERANCE)),
        ("lateness_max_ns", late(1.0)),
        ("lateness_p99_ns", late(0.99)),
        ("lateness_p50_ns", late(0.5)),
        ("lateness_p999_ns", late(0.999)),
        ("lateness_mean_ns", J::F(h.mean())),
        ("retries", J::U(o.retries)),
        ("egress_drops", J::U(egress_drops)),
        ("stopped_by_signal", J::B(o.stop == tx::Stop::Signal)),
        ("ok", J::B(r.verdict == Verdict::Kept)),
        ("best_effort", J::B(s.best_effort)),
        ("batch", J::U(ran.batch as u64)),
        (
            "spacing_ns",
            plan.rate
                .map_or(J::Null, |rate| J::F((1e9 / rate * 10.0).round() / 10.0)),
        ),
        ("catch_up", ran.catch_up.map_or(J::Null, J::F)),
        ("burst", J::U(s.burst as u64)),
        ("size_bytes", J::U(s.size as u64)),
        ("sent_per_size", s.mix.json(&s.mix.sent(r.sent))),
        ("flows", J::U(s.flows)),
        ("flow_order", J::S(s.flow_order.name().into())),
        (
            "flow_seed",
            match s.flow_order {
                crate::flows::Order::Random(seed) => J::U(seed),
                crate::flows::Order::Incremental => J::Null,
            },
        ),
        ("dsts", J::U(s.dsts)),
        ("dst_step", J::U(s.dst_step as u64)),
        ("dev", J::S(s.dev.clone())),
        ("src", J::S(s.src.to_string())),
        ("dst", J::S(s.dst.to_string())),
        ("dst_mac", J::S(packet::fmt_mac(&s.dst_mac))),
        ("version", J::S(env!("CARGO_PKG_VERSION").into())),
    ])
}

fn print_send(plan: &Plan, ran: &Ran, r: &Outcome) {
    let (o, h) = (&ran.out, &ran.out.lateness);
    println!(
        "netassay-gen ({}): sent {} of {} packets in {:.6} s",
        ran.technique, r.sent, r.planned, r.duration_s
    );
    match plan.rate {
        Some(rate) => println!(
            "  rate {:.1} pps of {rate:.1} requested (error {:+.4}%)",
            r.achieved,
            r.rate_error * 100.0
        ),
        None => println!("  rate {:.1} pps (as fast as possible)", r.achieved),
    }
    if h.n > 0 {
        println!(
            "  lateness p50 {} ns, p99 {} ns, max {} ns",
            h.quantile(0.5),
            h.quantile(0.99),
            h.max
        );
    }
    println!(
        "  retries {}, stopped by: {}, truncated: {}",
        o.retries,
        o.stop.name(),
        r.sent < r.planned
    );
}

#[cfg(test)]
mod tests {
    use super::super::plan::plan;
    use super::*;
    use crate::args::Rate;
    use crate::error::{Error, EXIT_RATE};

    fn outcome(verdict: Verdict, sent: u64) -> Outcome {
        Outcome {
            planned: 1000,
            sent,
            achieved: 500_000.0,
            rate_error: -0.5,
            duration_s: 0.001,
            verdict,
        }
    }

    /// The exit code a run with this verdict ends with.
    fn exit_code(v: Verdict, best_effort: bool) -> i32 {
        let p = plan(&Rate::Pps(1e6), None, Some(1000)).unwrap();
        match judge(&p, &outcome(v, 1000), best_effort) {
            Ok(()) => 0,
            Err(e) => Error::from(e).exit_code(),
        }
    }

    #[test]
    fn exit_kept_is_0() {
        assert_eq!(exit_code(Verdict::Kept, false), 0);
        assert_eq!(exit_code(Verdict::Kept, true), 0);
    }

    #[test]
    fn exit_unpaced_is_0() {
        assert_eq!(exit_code(Verdict::Unpaced, false), 0);
    }

    #[test]
    fn exit_rate_missed_is_3_unless_best_effort() {
        assert_eq!(exit_code(Verdict::RateMissed, false), EXIT_RATE);
        assert_eq!(exit_code(Verdict::RateMissed, true), 0);
    }

    #[test]
    fn exit_truncated_is_3_unless_best_effort() {
        assert_eq!(exit_code(Verdict::Truncated, false), EXIT_RATE);
        assert_eq!(exit_code(Verdict::Truncated, true), 0);
    }

    #[test]
    fn exit_stopped_by_a_signal_is_3_unless_best_effort() {
        assert_eq!(exit_code(Verdict::Stopped, false), EXIT_RATE);
        assert_eq!(exit_code(Verdict::Stopped, true), 0);
    }

    #[test]
    fn the_exit_3_line_says_why() {
        let p = plan(&Rate::Pps(1e6), None, Some(1000)).unwrap();
        let t = not_kept(&p, &outcome(Verdict::Truncated, 400)).to_string();
        assert!(t.contains("deadline passed after 400 of 1000") && t.contains("600 short"));
        let m = not_kept(&p, &outcome(Verdict::RateMissed, 1000)).to_string();
        assert!(m.contains("-50.000%, tolerance 0.1%"), "{m}");
        let s = not_kept(&p, &outcome(Verdict::Stopped, 10)).to_string();
        assert_eq!(s, "stopped by a signal after 10 of 1000 planned packets");
    }
}

//! What a send run is to do (its plan, from --rate and --duration or --count) and
//! how it ended as far as the exit code is concerned (its verdict).

use crate::args::Rate;
use crate::error::SendUsage;
use crate::pace;
use crate::tx;

/// Largest tolerated |achieved/requested - 1|; a --duration run also stops this
/// fraction of its duration past its end (see `plan`). Reported as `rate_tolerance`.
pub const RATE_TOLERANCE: f64 = 0.001;

/// What a send run is to do, from --rate and --duration or --count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    /// Packets per second; None at --rate max.
    pub rate: Option<f64>,
    /// Packets to send (u64::MAX at --rate max: as many as the duration allows).
    pub planned: u64,
    /// After the schedule's start, no send call starts this late (None: --count).
    pub deadline_ns: Option<u64>,
}

/// A --duration run ends at start + duration plus the rate tolerance of it: a run
/// that late has missed its rate anyway, so one that keeps its rate is never cut
/// short by a stall at its last packet. A --count run has no deadline.
pub fn plan(rate: &Rate, duration_ns: Option<u64>, count: Option<u64>) -> Result<Plan, SendUsage> {
    let grace = |d: u64| (d as f64 * RATE_TOLERANCE).round() as u64;
    let p = match (rate, duration_ns, count) {
        (Rate::Pps(r), Some(d), None) => Plan {
            rate: Some(*r),
            planned: pace::planned(*r, d),
            deadline_ns: Some(d + grace(d)),
        },
        (Rate::Pps(r), None, Some(n)) => Plan {
            rate: Some(*r),
            planned: n,
            deadline_ns: None,
        },
        (Rate::Max, Some(d), _) => Plan {
            rate: None,
            planned: u64::MAX,
            deadline_ns: Some(d),
        },
        _ => return Err(SendUsage::NoPlan),
    };
    if p.planned == 0 {
        return Err(SendUsage::ZeroPackets);
    }
    Ok(p)
}

/// How a send run ended, as far as the exit code is concerned.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    /// --rate max: there was no rate to keep.
    Unpaced,
    /// Every planned packet sent, the rate kept within RATE_TOLERANCE.
    Kept,
    /// Every planned packet sent, the rate missed.
    RateMissed,
    /// Fewer packets sent than planned: the deadline came first.
    Truncated,
    /// Fewer packets sent than planned: a signal stopped the run.
    Stopped,
}

pub fn verdict(
    rate: Option<f64>,
    rate_error: f64,
    sent: u64,
    planned: u64,
    stop: tx::Stop,
) -> Verdict {
    if rate.is_none() {
        Verdict::Unpaced
    } else if sent < planned && stop == tx::Stop::Signal {
        Verdict::Stopped
    } else if sent < planned {
        Verdict::Truncated
    } else if rate_error.abs() <= RATE_TOLERANCE {
        Verdict::Kept
    } else {
        Verdict::RateMissed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tx::Stop;

    #[test]
    fn a_duration_run_plans_rate_times_duration_and_ends_at_its_deadline() {
        let p = plan(&Rate::Pps(20e6), Some(1_000_000_000), None).unwrap();
        assert_eq!(p.rate, Some(20e6));
        assert_eq!(p.planned, 20_000_000);
        // the duration plus the rate tolerance of it (1 ms per s)
        assert_eq!(p.deadline_ns, Some(1_001_000_000));
    }

    #[test]
    fn a_count_run_plans_the_count_and_has_no_deadline() {
        let p = plan(&Rate::Pps(20e6), None, Some(12_345)).unwrap();
        assert_eq!((p.planned, p.deadline_ns), (12_345, None));
    }

    #[test]
    fn a_max_rate_run_ends_at_its_duration() {
        let p = plan(&Rate::Max, Some(2_000_000), None).unwrap();
        assert_eq!(p.rate, None);
        assert_eq!((p.planned, p.deadline_ns), (u64::MAX, Some(2_000_000)));
    }

    #[test]
    fn a_plan_of_no_packets_is_refused() {
        let e = plan(&Rate::Pps(1.0), Some(100_000_000), None).unwrap_err();
        assert_eq!(e, SendUsage::ZeroPackets);
        assert!(e.to_string().contains("rounds to 0 packets"), "{e}");
        assert_eq!(
            plan(&Rate::Pps(1.0), None, None).unwrap_err(),
            SendUsage::NoPlan
        );
    }

    fn v(rate_error: f64, sent: u64, stop: Stop) -> Verdict {
        verdict(Some(1e6), rate_error, sent, 1000, stop)
    }

    #[test]
    fn verdicts() {
        assert_eq!(
            verdict(None, f64::NAN, 5, 5, Stop::Signal),
            Verdict::Unpaced
        );
        assert_eq!(v(0.001, 1000, Stop::Complete), Verdict::Kept);
        assert_eq!(v(-0.001, 1000, Stop::Complete), Verdict::Kept);
        assert_eq!(v(-0.0011, 1000, Stop::Complete), Verdict::RateMissed);
        assert_eq!(v(f64::NAN, 1000, Stop::Complete), Verdict::RateMissed);
        // fewer sent than planned is never kept, whatever the achieved rate
        assert_eq!(v(0.0, 999, Stop::Deadline), Verdict::Truncated);
        assert_eq!(v(0.0, 10, Stop::Signal), Verdict::Stopped);
    }
}

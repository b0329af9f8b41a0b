//! Pacing arithmetic (absolute deadlines on CLOCK_MONOTONIC), clocks and a compact
//! log-linear histogram for lateness and latency percentiles.

use std::sync::atomic::{AtomicBool, Ordering};

pub static STOP: AtomicBool = AtomicBool::new(false);
/// --share-cpu: wait for a deadline by yielding the CPU, not by a busy poll.
static SHARE_CPU: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// SIGINT/SIGTERM set STOP; no SA_RESTART, so sleeps and poll return early.
pub fn install_signals() {
    // SAFETY: sigaction is plain C data (zeroed: no flags, empty mask); the handler
    // only stores to an atomic, which is async-signal-safe; sigaction copies `sa`.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = 0;
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
}

pub fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Wait for short gaps with sched_yield instead of a busy poll (`--share-cpu`): two
/// senders pinned to one CPU then interleave at every gap instead of taking turns of a
/// scheduler slice (milliseconds late each turn); alone on its CPU, a yield returns
/// at once and the wait is the busy poll it was.
pub fn share_cpu(on: bool) {
    SHARE_CPU.store(on, Ordering::Relaxed);
}

#[inline(always)]
pub fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: the kernel writes one timespec into the live local `ts`.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[inline(always)]
pub fn now() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// Sleep until `t` (CLOCK_MONOTONIC ns, absolute); returns early on a signal.
pub fn sleep_until(t: u64) {
    let ts = libc::timespec {
        tv_sec: (t / 1_000_000_000) as libc::time_t,
        tv_nsec: (t % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `ts` is a live local the kernel only reads; no remainder is asked for.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
}

/// Gaps longer than this are slept (up to `SPIN_NS` before the deadline); shorter
/// ones are busy-polled on the clock.
pub const SLEEP_THRESHOLD_NS: u64 = 200_000;
pub const SPIN_NS: u64 = 80_000;

/// Wait for deadline `t`: sleep most of a long gap, busy-poll the rest.
/// Returns the clock when done (>= t unless stopped by a signal).
pub fn wait_until(t: u64) -> u64 {
    let mut n = now();
    if n >= t {
        return n;
    }
    if t - n > SLEEP_THRESHOLD_NS {
        sleep_until(t - SPIN_NS);
    }
    loop {
        n = now();
        if n >= t || stopped() {
            return n;
        }
        if SHARE_CPU.load(Ordering::Relaxed) {
            // SAFETY: sched_yield takes nothing and cannot fail.
            unsafe { libc::sched_yield() };
        } else {
            std::hint::spin_loop();
        }
    }
}

/// The schedule: packet k (from 0) is due at `start + offset_ns(k, rate)`, i.e.
/// start + round(k * 1e9 / rate). Offset of packet k from the start: exact integer arithmetic when the rate is a
/// whole number (the common case), f64 otherwise.
#[inline(always)]
pub fn offset_ns(k: u64, rate: f64) -> u64 {
    if rate.fract() == 0.0 && (1.0..1e15).contains(&rate) {
        let r = rate as u128;
        ((k as u128 * 1_000_000_000u128 + r / 2) / r) as u64
    } else {
        (k as f64 * 1e9 / rate).round() as u64
    }
}

/// Packets planned for `rate` over `duration_ns`: rate * duration, rounded.
pub fn planned(rate: f64, duration_ns: u64) -> u64 {
    (rate * duration_ns as f64 / 1e9).round() as u64
}

/// Packets per send call for a paced rate: enough to cover `window_ns` of schedule
/// (so that no packet waits long for its batch), at least 1, at most `burst`.
pub fn batch_for_rate(rate: f64, window_ns: u64, burst: usize) -> usize {
    let b = (rate * window_ns as f64 / 1e9).floor() as usize;
    b.clamp(1, burst.max(1))
}

/// Rate over the span between the first and the last send call: the packets handed
/// over after the first call, divided by the time between the two calls.
pub fn achieved_rate(sent: u64, first_batch: u64, first_ns: u64, last_ns: u64) -> f64 {
    if sent <= first_batch || last_ns <= first_ns {
        return 0.0;
    }
    (sent - first_batch) as f64 / ((last_ns - first_ns) as f64 / 1e9)
}

/// Log-linear histogram: 2^SUB buckets per power of two (relative error < 1/2^SUB).
pub struct Hist {
    counts: Vec<u64>,
    pub n: u64,
    pub max: u64,
    pub min: u64,
    pub sum: u128,
}

const SUB: u32 = 6;

impl Default for Hist {
    fn default() -> Self {
        Self::new()
    }
}

impl Hist {
    pub fn new() -> Hist {
        Hist {
            counts: vec![0; (65 << SUB) as usize],
            n: 0,
            max: 0,
            min: u64::MAX,
            sum: 0,
        }
    }

    #[inline(always)]
    fn index(v: u64) -> usize {
        if v < (1 << SUB) {
            return v as usize;
        }
        let msb = 63 - v.leading_zeros();
        let shift = msb - SUB;
        let sub = (v >> shift) as usize & ((1 << SUB) - 1);
        (((shift + 1) as usize) << SUB) + sub
    }

    /// Lower edge of bucket `i` (inverse of `index`).
    fn lower(i: usize) -> u64 {
        let s = 1usize << SUB;
        if i < s {
            return i as u64;
        }
        let shift = (i >> SUB) as u32 - 1;
        (((i & (s - 1)) | s) as u64) << shift
    }

    #[inline(always)]
    pub fn add(&mut self, v: u64) {
        self.counts[Self::index(v)] += 1;
        self.n += 1;
        self.sum += v as u128;
        if v > self.max {
            self.max = v;
        }
        if v < self.min {
            self.min = v;
        }
    }

    /// Add `n` samples of value `v`.
    pub fn add_n(&mut self, v: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.counts[Self::index(v)] += n;
        self.n += n;
        self.sum += v as u128 * n as u128;
        self.max = self.max.max(v);
        self.min = self.min.min(v);
    }

    /// The q-quantile (0..=1), as the bucket's lower edge, capped at the exact max.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.n == 0 {
            return 0;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        if rank == self.n {
            return self.max;
        }
        let mut acc = 0;
        for (i, c) in self.counts.iter().enumerate() {
            acc += c;
            if acc >= rank {
                return Self::lower(i).min(self.max).max(self.min);
            }
        }
        self.max
    }

    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_are_exact_for_whole_rates() {
        assert_eq!(offset_ns(0, 200_000.0), 0);
        assert_eq!(offset_ns(1, 200_000.0), 5_000);
        assert_eq!(offset_ns(200_000, 200_000.0), 1_000_000_000);
        // 3 pps: 333333333.33 ns -> rounds to nearest; no drift after a million packets.
        assert_eq!(offset_ns(1, 3.0), 333_333_333);
        assert_eq!(offset_ns(2, 3.0), 666_666_667);
        assert_eq!(offset_ns(3_000_000, 3.0), 1_000_000_000_000_000);
        // 7 pps over a long run stays exact: k = 7e9 -> exactly 1e9 s.
        assert_eq!(offset_ns(7_000_000_000, 7.0), 1_000_000_000_000_000_000);
        // fractional rates use f64
        assert_eq!(offset_ns(3, 1.5), 2_000_000_000);
    }

    #[test]
    fn planned_and_batch() {
        assert_eq!(planned(200_000.0, 10_000_000_000), 2_000_000);
        assert_eq!(planned(100_000.0, 10_000_000_000), 1_000_000);
        assert_eq!(planned(1.5, 3_000_000_000), 5); // 4.5 rounds up
        assert_eq!(batch_for_rate(100_000.0, 4_000, 64), 1);
        assert_eq!(batch_for_rate(1_000_000.0, 4_000, 64), 4);
        assert_eq!(batch_for_rate(1e9, 4_000, 64), 64);
        assert_eq!(batch_for_rate(1e9, 4_000, 16), 16);
        assert_eq!(batch_for_rate(10.0, 4_000, 0), 1);
    }

    #[test]
    fn achieved_rate_counts_packets_after_the_first_call() {
        // 1000 batches of 10 at exactly 1 Mpps: calls every 10 us, first at 0.
        let last = 999 * 10_000;
        let r = achieved_rate(10_000, 10, 0, last);
        assert!((r - 1e6).abs() < 1e-6, "{r}");
        assert_eq!(achieved_rate(10, 10, 0, 0), 0.0);
    }

    #[test]
    fn histogram_quantiles() {
        let mut h = Hist::new();
        for v in 0..1000u64 {
            h.add(v);
        }
        assert_eq!(h.quantile(0.5), 496); // bucket [496, 504) holds 500
        assert!(h.quantile(0.99) >= 976 && h.quantile(0.99) <= 990);
        assert_eq!(h.quantile(1.0), 999);
        assert_eq!(h.max, 999);
        assert_eq!(h.min, 0);
        let mut e = Hist::new();
        for _ in 0..99 {
            e.add(20_000);
        }
        e.add(5_000_000);
        assert!(e.quantile(0.99) >= 19_700 && e.quantile(0.99) <= 20_000);
        assert_eq!(e.quantile(1.0), 5_000_000);
        for v in [0u64, 1, 63, 64, 65, 1000, 1 << 40, u64::MAX] {
            let i = Hist::index(v);
            assert!(Hist::lower(i) <= v, "{v}");
            assert!(v - Hist::lower(i) <= v / 64, "{v}");
        }
    }
}

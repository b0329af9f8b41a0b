//! The XDP sink's one-way latency histogram (`--xdp-sink --latency`): for every
//! test frame it counts, the sink adds `now - stamp` (bpf_ktime_get_ns minus the
//! transmit time netassay-gen wrote into the payload, both CLOCK_MONOTONIC on one
//! host) to a per-CPU histogram in the kernel; nothing is copied per frame.
//!
//! Buckets, in whole microseconds v = ns / 1000 (HDR-like, log-linear):
//! - below 256 us, one bucket per microsecond (v itself);
//! - above, with s the bit length of v >> 8 (1..12), bucket s * 128 + (v >> s):
//!   128 buckets per octave, each at most 1/128 (0.8%) of its value wide;
//! - from 2^20 us (1.05 s) on, the last bucket (OVER).
//!
//! Per CPU the value holds n, the sum, min and max (ns, exact), the frames whose
//! stamp is later than their arrival (not in the histogram: a foreign clock), then
//! the buckets. User space sums the CPUs and clears the map at each read, so a line
//! carries the latencies since the previous one.

use crate::bpf;
use crate::json::J;
use std::io;
use std::os::fd::AsFd;

/// Buckets: 256 of one microsecond, 12 octaves of 128, the overflow.
pub const BUCKETS: usize = 256 + 12 * 128 + 1;
pub const OVER: usize = BUCKETS - 1;
/// Words before the buckets: n, sum_ns, min_ns, max_ns, ahead.
const HEAD: usize = 5;
pub const VALUE_SIZE: usize = (HEAD + BUCKETS) * 8;

/// The bucket of a latency of `ns` nanoseconds (the program's arithmetic,
/// `bpf/gen_sink.c`).
#[cfg(test)]
pub fn bucket(ns: u64) -> usize {
    let v = ns / 1000;
    if v >= 1 << 20 {
        return OVER;
    }
    let s = 64 - (v >> 8).leading_zeros() as u64;
    (s * 128 + (v >> s)) as usize
}

/// The range of a bucket in nanoseconds, [lower, upper); the overflow's upper is
/// u64::MAX.
pub fn edges(b: usize) -> (u64, u64) {
    if b == OVER {
        return (1_000 << 20, u64::MAX);
    }
    let (lo, width) = if b < 256 {
        (b as u64, 1)
    } else {
        let s = (b / 128 - 1) as u64;
        ((b as u64 - s * 128) << s, 1u64 << s)
    };
    (lo * 1000, (lo + width) * 1000)
}

/// The histogram summed over the CPUs.
#[derive(Clone, Debug, PartialEq)]
pub struct Hist {
    pub n: u64,
    pub sum_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub ahead: u64,
    pub counts: Vec<u64>,
}

impl Hist {
    /// Sum per-CPU values (each VALUE_SIZE bytes, in CPU order).
    pub fn from_cpus(raw: &[u8]) -> Hist {
        let mut h = Hist {
            n: 0,
            sum_ns: 0,
            min_ns: 0,
            max_ns: 0,
            ahead: 0,
            counts: vec![0; BUCKETS],
        };
        for cpu in raw.chunks(VALUE_SIZE) {
            let w = |i: usize| u64::from_ne_bytes(cpu[i * 8..i * 8 + 8].try_into().unwrap());
            h.ahead += w(4);
            if w(0) == 0 {
                continue;
            }
            h.min_ns = if h.n == 0 { w(2) } else { h.min_ns.min(w(2)) };
            h.n += w(0);
            h.sum_ns += w(1);
            h.max_ns = h.max_ns.max(w(3));
            for (b, c) in h.counts.iter_mut().enumerate() {
                *c += w(HEAD + b);
            }
        }
        h
    }

    /// Read the map and clear it: the latencies since the previous read.
    pub fn take(map: impl AsFd, cpus: usize) -> io::Result<Hist> {
        let mut raw = vec![0u8; VALUE_SIZE * cpus];
        bpf::map_lookup(map.as_fd(), 0, &mut raw)?;
        bpf::map_update(map.as_fd(), 0, &vec![0u8; VALUE_SIZE * cpus])?;
        Ok(Hist::from_cpus(&raw))
    }

    /// `{"n", "sum_ns", "min_ns", "max_ns", "ahead", "buckets": [[lower_ns,
    /// upper_ns, count], ...]}`, the non-empty buckets only (the overflow's upper is
    /// null).
    pub fn json(&self) -> J {
        let buckets = self
            .counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(b, c)| {
                let (lo, hi) = edges(b);
                let hi = if hi == u64::MAX { J::Null } else { J::U(hi) };
                J::Arr(vec![J::U(lo), hi, J::U(*c)])
            })
            .collect();
        J::obj(vec![
            ("n", J::U(self.n)),
            ("sum_ns", J::U(self.sum_ns)),
            ("min_ns", J::U(self.min_ns)),
            ("max_ns", J::U(self.max_ns)),
            ("ahead", J::U(self.ahead)),
            ("buckets", J::Arr(buckets)),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microsecond_buckets_below_256_us() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(999), 0);
        assert_eq!(bucket(1000), 1);
        assert_eq!(bucket(99_999), 99);
        assert_eq!(bucket(255_999), 255);
        assert_eq!(edges(37), (37_000, 38_000));
        assert_eq!(bucket(256_000), 256);
        assert_eq!(edges(256), (256_000, 258_000));
        assert_eq!(bucket(257_999), 256);
        assert_eq!(bucket(258_000), 257);
    }

    #[test]
    fn every_value_falls_inside_its_bucket_and_buckets_are_under_one_percent() {
        let mut prev = 0;
        let mut ns = 0u64;
        while ns < 1_100_000_000 {
            let b = bucket(ns);
            let (lo, hi) = edges(b);
            assert!(lo <= ns && ns < hi, "{ns} in {b}: [{lo}, {hi})");
            assert!(b >= prev, "buckets grow with the value");
            prev = b;
            if lo >= 100_000 && b != OVER {
                assert!((hi - lo) as f64 / lo as f64 <= 0.01, "bucket {b} too wide");
            }
            ns += 1 + ns / 997;
        }
        assert_eq!(bucket(1_000 << 20), OVER);
        assert_eq!(bucket((1_000 << 20) - 1), OVER - 1);
        assert_eq!(bucket(u64::MAX), OVER);
        assert_eq!(edges(OVER - 1).1, 1_000 << 20);
    }

    #[test]
    fn buckets_tile_the_range() {
        for b in 1..BUCKETS {
            assert_eq!(edges(b - 1).1, edges(b).0, "bucket {b}");
        }
    }

    #[test]
    fn cpus_are_summed_with_min_over_the_cpus_that_saw_frames() {
        let mut raw = vec![0u8; VALUE_SIZE * 3];
        let mut put = |cpu: usize, word: usize, v: u64| {
            let at = cpu * VALUE_SIZE + word * 8;
            raw[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        };
        // cpu 0: two frames of 5 and 9 us; cpu 1: none; cpu 2: one of 7 us
        for (w, v) in [(0, 2), (1, 14_000), (2, 5_000), (3, 9_000), (HEAD + 5, 1)] {
            put(0, w, v);
        }
        put(0, HEAD + 9, 1);
        put(1, 4, 3); // frames stamped ahead of the clock
        for (w, v) in [(0, 1), (1, 7_000), (2, 7_000), (3, 7_000), (HEAD + 7, 1)] {
            put(2, w, v);
        }
        let h = Hist::from_cpus(&raw);
        assert_eq!(
            (h.n, h.sum_ns, h.min_ns, h.max_ns, h.ahead),
            (3, 21_000, 5_000, 9_000, 3)
        );
        assert_eq!((h.counts[5], h.counts[7], h.counts[9]), (1, 1, 1));
        let j = h.json().to_string();
        assert!(
            j.contains("\"buckets\":[[5000,6000,1],[7000,8000,1],[9000,10000,1]]"),
            "{j}"
        );
    }
}

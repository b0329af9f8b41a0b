//! A frame mix (IMIX): frame sizes with whole weights, sent in one fixed repeating
//! order, the cycle. `64:7,590:4,1514:1` is a cycle of 12 frames; the order inside it
//! is smooth weighted round robin (each step every size gains its weight, the size
//! with the most credit goes next and gives back the cycle's length; ties go to the
//! size listed first): 64 590 64 64 590 64 1514 64 590 64 590 64 for that mix, so the
//! large frames are spread over the cycle, never sent back to back in a burst.
//! Sizes count the frame without its FCS, as `--size` does; `simple` is TRex's
//! "imix" profile (60, 590 and 1514 bytes without the FCS, 7:4:1), its 60 raised to
//! netassay-gen's smallest frame, 64 bytes.
//! Frame k of a run is `cycle[k % len]`: what was sent of each size follows from the
//! number sent (`sent`), so the send loop counts nothing per size.

use crate::error::SendUsage;
use crate::json::J;
use crate::packet::{min_size, MAX_FRAME};

/// Most sizes in a mix and frames in its cycle.
pub const MAX_SIZES: usize = 16;
pub const MAX_CYCLE: u64 = 10_000;

#[derive(Clone, Debug, PartialEq)]
pub struct Mix {
    pub sizes: Vec<usize>,
    pub weights: Vec<u64>,
    /// The index into `sizes` of each frame of the cycle.
    pub cycle: Vec<u8>,
}

impl Mix {
    /// `SIZE:WEIGHT,...` or `simple`; sizes 64..1518, distinct, weights >= 1.
    pub fn parse(text: &str) -> Result<Mix, SendUsage> {
        let spec = if text == "simple" {
            "64:7,590:4,1514:1"
        } else {
            text
        };
        let bad = |why: String| SendUsage::Imix(text.into(), why);
        let mut sizes = Vec::new();
        let mut weights = Vec::new();
        for part in spec.split(',') {
            let (s, w) = part
                .split_once(':')
                .ok_or_else(|| bad(format!("'{part}' is not SIZE:WEIGHT")))?;
            let size: usize = s.parse().map_err(|_| bad(format!("'{s}' is not a size")))?;
            let weight: u64 = w
                .parse()
                .ok()
                .filter(|w| *w >= 1)
                .ok_or_else(|| bad(format!("'{w}' is not a whole weight >= 1")))?;
            if !(min_size(false)..=MAX_FRAME).contains(&size) {
                return Err(bad(format!("{size} is not a frame size of 64..1518")));
            }
            if sizes.contains(&size) {
                return Err(bad(format!("{size} is given twice")));
            }
            sizes.push(size);
            weights.push(weight);
        }
        let total = weights.iter().fold(0u64, |t, w| t.saturating_add(*w)); // 2^64 saturates
        if sizes.len() > MAX_SIZES || total > MAX_CYCLE {
            return Err(bad(format!(
                "at most {MAX_SIZES} sizes and {MAX_CYCLE} frames in a cycle"
            )));
        }
        Ok(Mix::of(sizes, weights))
    }

    /// Sizes to count, not to send (the XDP sink's --pcap): no cycle.
    pub fn counting(sizes: Vec<usize>) -> Mix {
        Mix {
            weights: vec![1; sizes.len()],
            sizes,
            cycle: Vec::new(),
        }
    }

    /// One size: every frame the same (the cycle is that frame).
    pub fn one(size: usize) -> Mix {
        Mix::of(vec![size], vec![1])
    }

    fn of(sizes: Vec<usize>, weights: Vec<u64>) -> Mix {
        let total: i64 = weights.iter().sum::<u64>() as i64;
        let mut credit = vec![0i64; sizes.len()];
        let mut cycle = Vec::with_capacity(total as usize);
        for _ in 0..total {
            for (c, w) in credit.iter_mut().zip(&weights) {
                *c += *w as i64;
            }
            // the first of the largest credits
            let i = (0..credit.len()).fold(0, |b, i| if credit[i] > credit[b] { i } else { b });
            credit[i] -= total;
            cycle.push(i as u8);
        }
        Mix {
            sizes,
            weights,
            cycle,
        }
    }

    pub fn is_mixed(&self) -> bool {
        self.sizes.len() > 1
    }

    pub fn largest(&self) -> usize {
        self.sizes.iter().copied().max().unwrap_or(0)
    }

    /// Frames of each size among the first `total` frames of a run.
    pub fn sent(&self, total: u64) -> Vec<u64> {
        let len = self.cycle.len() as u64;
        let mut out: Vec<u64> = self.weights.iter().map(|w| w * (total / len)).collect();
        for &i in &self.cycle[..(total % len) as usize] {
            out[i as usize] += 1;
        }
        out
    }

    /// `{"64": n, ...}`: a count per size.
    pub fn json(&self, counts: &[u64]) -> J {
        J::Obj(
            self.sizes
                .iter()
                .zip(counts)
                .map(|(s, n)| (s.to_string(), J::U(*n)))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes_of(m: &Mix) -> Vec<usize> {
        m.cycle.iter().map(|&i| m.sizes[i as usize]).collect()
    }

    #[test]
    fn simple_is_trex_imix_in_a_fixed_spread_order() {
        let m = Mix::parse("simple").unwrap();
        assert_eq!(m, Mix::parse("64:7,590:4,1514:1").unwrap());
        assert_eq!(
            sizes_of(&m),
            [64, 590, 64, 64, 590, 64, 1514, 64, 590, 64, 590, 64]
        );
        assert_eq!(m.largest(), 1514);
    }

    #[test]
    fn every_size_goes_its_weight_per_cycle() {
        let m = Mix::parse("100:5,200:3,300:2,1518:13").unwrap();
        assert_eq!(m.cycle.len(), 23);
        for (i, w) in m.weights.iter().enumerate() {
            let n = m.cycle.iter().filter(|&&c| c as usize == i).count() as u64;
            assert_eq!(n, *w);
        }
    }

    #[test]
    fn sent_per_size_counts_whole_cycles_and_the_rest() {
        let m = Mix::parse("simple").unwrap();
        assert_eq!(m.sent(0), [0, 0, 0]);
        assert_eq!(m.sent(12 * 1000), [7000, 4000, 1000]);
        assert_eq!(m.sent(12 * 1000 + 4), [7003, 4001, 1000]);
        for total in 0..100u64 {
            assert_eq!(m.sent(total).iter().sum::<u64>(), total);
        }
        assert_eq!(Mix::one(64).sent(5), [5]);
        assert_eq!(
            m.json(&m.sent(13)).to_string(),
            r#"{"64":8,"590":4,"1514":1}"#
        );
    }

    #[test]
    fn bad_mixes_say_why() {
        for (text, why) in [
            ("64:7,594", "'594' is not SIZE:WEIGHT"),
            ("x:1", "'x' is not a size"),
            ("64:0", "'0' is not a whole weight >= 1"),
            ("64:-1", "'-1' is not a whole weight >= 1"),
            ("63:1", "63 is not a frame size of 64..1518"),
            ("1519:1", "1519 is not a frame size of 64..1518"),
            ("64:1,64:2", "64 is given twice"),
            ("64:10001", "at most 16 sizes and 10000 frames in a cycle"),
            ("", "'' is not SIZE:WEIGHT"),
        ] {
            assert_eq!(
                Mix::parse(text),
                Err(SendUsage::Imix(text.into(), why.into())),
                "{text}"
            );
        }
    }
}

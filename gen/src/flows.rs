//! Flows: which flow each packet belongs to, and each flow's 5-tuple.
//!
//! Packet k goes to flow `order(k % flows)` with sequence number `k / flows`: every
//! flow gets one packet per round of `flows` packets, its sequence numbers unique and
//! increasing in sending order. `order` is the identity (`--flow-order incremental`)
//! or a permutation of the flows drawn from `--flow-seed` (`random`: Fisher-Yates
//! over splitmix64), the same for every technique.
//!
//! Flow f's tuple spreads the flows over the destinations first, then over source
//! ports, then over source addresses (the destination port stays `--dst-port`):
//!
//! - destination slot `d = f % D` with `D = min(flows, dsts)`; it aims at destination
//!   `r = d` (or, with fewer flows than destinations, `r = d * dsts / D`, spread over
//!   all of them), whose address is `--dst + r * --dst-step`;
//! - `q = f / D`: source port `--src-port + q % P` with `P = 65536 - --src-port`, and
//!   source address `--src + q / P`.
//!
//! Only the address's last 32 bits change (the whole IPv4 address; an IPv6 address's
//! last 32 bits), never carrying out of them. With one destination and at most `P`
//! flows, the tuple is the one netassay-gen always sent: `--src-port + f` from
//! `--src` to `--dst`, nothing else changes.

use crate::error::SendUsage;
use std::net::IpAddr;

/// The most flows a run spreads its packets over (flow ids are 32-bit on the wire).
pub const MAX_FLOWS: u64 = 1_000_000;
/// The most destinations (routes) flows are aimed at.
pub const MAX_DSTS: u64 = 1_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Incremental,
    /// A permutation drawn from this seed.
    Random(u64),
}

impl Order {
    pub fn name(self) -> &'static str {
        match self {
            Order::Incremental => "incremental",
            Order::Random(_) => "random",
        }
    }
}

/// One flow's varying fields: the last 32 bits of its addresses and its source port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuple {
    pub src_low: u32,
    pub dst_low: u32,
    pub sport: u16,
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub flows: u64,
    pub dsts: u64,
    pub dst_step: u32,
    pub src_port: u16,
    pub src_low: u32,
    pub dst_low: u32,
    perm: Option<Vec<u32>>,
}

/// The last 32 bits of an address.
pub fn low32(a: &IpAddr) -> u32 {
    match a {
        IpAddr::V4(v) => u32::from(*v),
        IpAddr::V6(v) => (u128::from(*v) & 0xffff_ffff) as u32,
    }
}

/// `a` with its last 32 bits replaced.
pub fn with_low32(a: &IpAddr, low: u32) -> IpAddr {
    match a {
        IpAddr::V4(_) => IpAddr::V4(low.into()),
        IpAddr::V6(v) => IpAddr::V6((u128::from(*v) & !0xffff_ffffu128 | low as u128).into()),
    }
}

/// splitmix64: the generator of `--flow-order random`'s permutation.
fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The flows 0..n in the order `seed` draws (Fisher-Yates).
pub fn permutation(n: u64, seed: u64) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n as u32).collect();
    let mut x = seed;
    for i in (1..p.len()).rev() {
        let j = (splitmix(&mut x) % (i as u64 + 1)) as usize;
        p.swap(i, j);
    }
    p
}

impl Plan {
    /// The plan of `flows` flows from `src`:`src_port` to `dsts` destinations from
    /// `dst`, `dst_step` apart; refused when an address would carry out of its last
    /// 32 bits.
    pub fn new(
        flows: u64,
        dsts: u64,
        dst_step: u32,
        src_port: u16,
        src: &IpAddr,
        dst: &IpAddr,
        order: Order,
    ) -> Result<Plan, SendUsage> {
        if !(1..=MAX_FLOWS).contains(&flows) {
            return Err(SendUsage::Flows(flows));
        }
        if !(1..=MAX_DSTS).contains(&dsts) || dst_step == 0 {
            return Err(SendUsage::Dsts(dsts, dst_step));
        }
        let perm = match order {
            Order::Random(seed) if flows > 1 => Some(permutation(flows, seed)),
            _ => None,
        };
        let p = Plan {
            flows,
            dsts,
            dst_step,
            src_port,
            src_low: low32(src),
            dst_low: low32(dst),
            perm,
        };
        if (p.src_low as u64) + (p.sources() - 1) > u32::MAX as u64
            || (p.dst_low as u64) + (dsts - 1) * dst_step as u64 > u32::MAX as u64
        {
            return Err(SendUsage::AddressesPastEnd);
        }
        Ok(p)
    }

    /// One flow to `dst` from `src`: what a run without flow flags sends.
    #[cfg(test)]
    pub fn one(src_port: u16, src: &IpAddr, dst: &IpAddr) -> Plan {
        Plan::new(1, 1, 1, src_port, src, dst, Order::Incremental).unwrap()
    }

    /// Destination slots: as many as there are flows or destinations, the fewer.
    pub fn slots(&self) -> u64 {
        self.flows.min(self.dsts)
    }

    /// Source ports per source address.
    pub fn ports(&self) -> u64 {
        65536 - self.src_port as u64
    }

    /// Source addresses the flows use.
    pub fn sources(&self) -> u64 {
        (self.flows - 1) / self.slots() / self.ports() + 1
    }

    /// True when every flow has the run's two addresses and only its source port
    /// varies (`--src-port + f`): the frames netassay-gen sent before flows had
    /// addresses of their own.
    pub fn fixed_addresses(&self) -> bool {
        self.dsts == 1 && self.flows <= self.ports()
    }

    /// The flow of global packet k.
    #[inline(always)]
    pub fn flow_of(&self, k: u64) -> u32 {
        let i = k % self.flows;
        match &self.perm {
            Some(p) => p[i as usize],
            None => i as u32,
        }
    }

    /// The permutation of `--flow-order random` (None: incremental).
    pub fn permutation(&self) -> Option<&[u32]> {
        self.perm.as_deref()
    }

    /// The destination that flow f aims at (0..dsts).
    #[inline(always)]
    pub fn dst_index(&self, f: u32) -> u64 {
        let slots = self.slots();
        let d = f as u64 % slots;
        if slots == self.dsts {
            d
        } else {
            d * self.dsts / slots
        }
    }

    #[inline(always)]
    pub fn tuple(&self, f: u32) -> Tuple {
        let q = f as u64 / self.slots();
        let ports = self.ports();
        Tuple {
            src_low: self.src_low.wrapping_add((q / ports) as u32),
            dst_low: self
                .dst_low
                .wrapping_add((self.dst_index(f) as u32).wrapping_mul(self.dst_step)),
            sport: (self.src_port as u64 + q % ports) as u16,
        }
    }

    /// The tuple of the last flow: the highest source and destination addresses.
    pub fn last(&self) -> Tuple {
        let f = (self.flows - 1) as u32;
        let mut t = self.tuple(f);
        t.dst_low = self
            .dst_low
            .wrapping_add(((self.dsts - 1) as u32).wrapping_mul(self.dst_step));
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn a(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn plan(flows: u64, dsts: u64, step: u32) -> Plan {
        Plan::new(
            flows,
            dsts,
            step,
            10000,
            &a("198.18.0.2"),
            &a("198.19.1.1"),
            Order::Incremental,
        )
        .unwrap()
    }

    #[test]
    fn few_flows_vary_the_source_port_alone() {
        let p = plan(16, 1, 1);
        assert!(p.fixed_addresses());
        for f in 0..16 {
            let t = p.tuple(f);
            assert_eq!(t.sport, 10000 + f as u16);
            assert_eq!((t.src_low, t.dst_low), (p.src_low, p.dst_low));
        }
        assert_eq!((p.flow_of(17), p.sources()), (1, 1));
    }

    #[test]
    fn a_million_flows_are_distinct_tuples_in_the_benchmarking_range() {
        let p = Plan::new(
            1_000_000,
            1,
            1,
            10000,
            &a("198.18.0.2"),
            &a("198.19.0.2"),
            Order::Incremental,
        )
        .unwrap();
        assert!(!p.fixed_addresses());
        let mut seen = HashSet::new();
        for f in 0..1_000_000u32 {
            let t = p.tuple(f);
            assert!(seen.insert((t.src_low, t.sport)), "flow {f}");
        }
        // 55536 ports per address: 19 source addresses, 198.18.0.2..198.18.0.20
        assert_eq!(p.sources(), 19);
        let last: std::net::Ipv4Addr = "198.18.0.20".parse().unwrap();
        assert_eq!(p.last().src_low, u32::from(last));
    }

    #[test]
    fn flows_spread_over_destinations_first() {
        // as many flows as routes: one flow per route, the same source
        let p = plan(1000, 1000, 64);
        for f in [0u32, 1, 999] {
            let t = p.tuple(f);
            assert_eq!(t.dst_low, p.dst_low + 64 * f);
            assert_eq!((t.sport, t.src_low), (10000, p.src_low));
        }
        // more flows than routes: each route's flows differ by source port
        let p = plan(3000, 1000, 64);
        assert_eq!(p.tuple(1000).dst_low, p.dst_low);
        assert_eq!(p.tuple(1000).sport, 10001);
        // fewer flows than routes: spread over all of them, the last one too
        let p = plan(10, 1000, 1);
        let idx: Vec<u64> = (0..10).map(|f| p.dst_index(f)).collect();
        assert_eq!(idx, [0, 100, 200, 300, 400, 500, 600, 700, 800, 900]);
        assert_eq!(p.last().dst_low, p.dst_low + 999);
    }

    #[test]
    fn ipv6_changes_only_the_last_32_bits() {
        let p = Plan::new(
            5,
            5,
            1 << 12,
            10000,
            &a("2001:2:0:1::2"),
            &a("2001:2:0:8000::1"),
            Order::Incremental,
        )
        .unwrap();
        let t = p.tuple(4);
        assert_eq!(
            with_low32(&a("2001:2:0:8000::1"), t.dst_low),
            a("2001:2:0:8000::4001")
        );
        assert_eq!(
            with_low32(&a("2001:2:0:1::2"), t.src_low),
            a("2001:2:0:1::2")
        );
    }

    #[test]
    fn addresses_never_carry_out_of_their_last_32_bits() {
        let e = Plan::new(
            2,
            2,
            1,
            10000,
            &a("198.18.0.2"),
            &a("255.255.255.255"),
            Order::Incremental,
        );
        assert_eq!(e.err(), Some(SendUsage::AddressesPastEnd));
        assert_eq!(
            Plan::new(
                0,
                1,
                1,
                1,
                &a("198.18.0.2"),
                &a("198.19.0.2"),
                Order::Incremental
            )
            .err(),
            Some(SendUsage::Flows(0))
        );
    }

    #[test]
    fn a_random_order_is_a_seeded_permutation() {
        let p = permutation(100_000, 7);
        let mut sorted = p.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100_000).collect::<Vec<u32>>());
        assert_eq!(p, permutation(100_000, 7));
        assert_ne!(p, permutation(100_000, 8));
        let moved = p
            .iter()
            .enumerate()
            .filter(|(i, &v)| *i as u32 != v)
            .count();
        assert!(moved > 99_000, "{moved}");
        let r = Plan::new(
            4,
            1,
            1,
            10000,
            &a("198.18.0.2"),
            &a("198.19.0.2"),
            Order::Random(3),
        )
        .unwrap();
        let round: HashSet<u32> = (0..4).map(|k| r.flow_of(k)).collect();
        assert_eq!(round.len(), 4);
        assert_eq!(r.flow_of(5), r.flow_of(1));
    }
}

//! Frame building: Ethernet + IPv4/IPv6 + UDP + the netassay payload.
//!
//! Payload (big-endian, right after the UDP header), 22 bytes:
//!   magic u32 | flow id u16 | sequence u64 | transmit time u64 (CLOCK_MONOTONIC ns)
//! then zero padding up to the frame size. A flow id above 65535 keeps its low 16 bits
//! in the flow id field and its high 16 bits in the sequence field's top 16 bits (the
//! sequence number itself has 48 bits): with fewer than 65536 flows the payload is
//! byte for byte what it always was. `size` counts the Ethernet frame without
//! the FCS, like trafgen: 64 means 64 bytes handed to the interface.

use crate::error::SendUsage;
use std::net::IpAddr;

pub const MAGIC: u32 = 0x6e61_4731; // "naG1"
pub const ETH_LEN: usize = 14;
pub const IPV4_LEN: usize = 20;
pub const IPV6_LEN: usize = 40;
pub const UDP_LEN: usize = 8;
pub const PAYLOAD_LEN: usize = 22;
pub const MAX_FRAME: usize = 1518;
/// The sequence number's bits in the sequence field (the rest: the flow id's high bits).
pub const SEQ_BITS: u32 = 48;
pub const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;

/// The sequence field of flow `flow`'s packet `seq`.
#[inline(always)]
pub fn seq_field(flow: u32, seq: u64) -> u64 {
    ((flow >> 16) as u64) << SEQ_BITS | (seq & SEQ_MASK)
}

/// Where the per-packet fields sit inside a frame.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    pub l4: usize,
    pub payload: usize,
    pub v6: bool,
}

impl Layout {
    /// The last 32 bits of the source and destination address.
    pub fn src_low(&self) -> usize {
        ETH_LEN + if self.v6 { 8 + 12 } else { 12 }
    }
    pub fn dst_low(&self) -> usize {
        ETH_LEN + if self.v6 { 24 + 12 } else { 16 }
    }
    /// The IPv4 header checksum.
    pub fn ip_csum(&self) -> usize {
        ETH_LEN + 10
    }
    pub fn sport(&self) -> usize {
        self.l4
    }
    pub fn csum(&self) -> usize {
        self.l4 + 6
    }
    pub fn flow(&self) -> usize {
        self.payload + 4
    }
    pub fn seq(&self) -> usize {
        self.payload + 6
    }
    pub fn ts(&self) -> usize {
        self.payload + 14
    }
}

#[derive(Clone, Debug)]
pub struct Spec {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
    pub size: usize,
}

/// Smallest frame that carries the payload for this address family.
pub fn min_size(v6: bool) -> usize {
    let ip = if v6 { IPV6_LEN } else { IPV4_LEN };
    (ETH_LEN + ip + UDP_LEN + PAYLOAD_LEN).max(64)
}

/// RFC 1071 partial sum of a byte slice (16-bit big-endian words, odd byte padded).
pub fn sum16(data: &[u8]) -> u32 {
    let mut s: u32 = 0;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        s = s.wrapping_add(u16::from_be_bytes([c[0], c[1]]) as u32);
    }
    if let [last] = chunks.remainder() {
        s = s.wrapping_add((*last as u32) << 8);
    }
    s
}

/// Sum of the four 16-bit words of a u64 (as they appear big-endian on the wire).
#[inline(always)]
pub fn sum_u64(v: u64) -> u32 {
    ((v >> 48) as u32)
        + ((v >> 32) as u32 & 0xffff)
        + ((v >> 16) as u32 & 0xffff)
        + (v as u32 & 0xffff)
}

/// Fold a partial sum to 16 bits and complement it (the Internet checksum).
#[inline(always)]
pub fn fold(mut s: u32) -> u16 {
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    !(s as u16)
}

/// A ready frame plus what is needed to stamp flow, sequence and time cheaply.
pub struct Template {
    pub frame: Vec<u8>,
    pub layout: Layout,
    /// Partial UDP checksum sum of everything that does not change per packet
    /// (pseudo header, UDP header without source port and checksum, magic, padding).
    pub base_sum: u32,
    pub sport: u16,
    /// Flows with addresses of their own (`stamp_tuple`): the UDP checksum's fixed sum
    /// without the source port and the addresses' last 32 bits, and the IPv4 header's
    /// without its checksum and the addresses' last 32 bits (0 for IPv6).
    pub tuple_sum: u32,
    pub ip_sum: u32,
}

/// The sum of a u32's two 16-bit words.
#[inline(always)]
pub fn sum_u32(v: u32) -> u32 {
    (v >> 16) + (v & 0xffff)
}

impl Template {
    pub fn new(spec: &Spec) -> Result<Template, SendUsage> {
        let v6 = Self::check(spec)?;
        let mut f = vec![0u8; spec.size];
        f[0..6].copy_from_slice(&spec.dst_mac);
        f[6..12].copy_from_slice(&spec.src_mac);
        let ip_len = if v6 { IPV6_LEN } else { IPV4_LEN };
        let l4 = ETH_LEN + ip_len;
        let udp_len = (spec.size - l4) as u16;
        let mut pseudo: u32;
        match (spec.src, spec.dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
                let ip = &mut f[ETH_LEN..l4];
                ip[0] = 0x45;
                ip[2..4].copy_from_slice(&((spec.size - ETH_LEN) as u16).to_be_bytes());
                ip[6] = 0x40; // DF
                ip[8] = 64; // TTL
                ip[9] = 17; // UDP
                ip[12..16].copy_from_slice(&s.octets());
                ip[16..20].copy_from_slice(&d.octets());
                let c = fold(sum16(ip));
                ip[10..12].copy_from_slice(&c.to_be_bytes());
                pseudo = sum16(&s.octets()) + sum16(&d.octets()) + 17 + udp_len as u32;
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                f[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
                let ip = &mut f[ETH_LEN..l4];
                ip[0] = 0x60;
                ip[4..6].copy_from_slice(&udp_len.to_be_bytes());
                ip[6] = 17;
                ip[7] = 64;
                ip[8..24].copy_from_slice(&s.octets());
                ip[24..40].copy_from_slice(&d.octets());
                pseudo = sum16(&s.octets()) + sum16(&d.octets()) + 17 + udp_len as u32;
            }
            _ => unreachable!(),
        }
        let layout = Layout {
            l4,
            payload: l4 + UDP_LEN,
            v6,
        };
        f[l4 + 2..l4 + 4].copy_from_slice(&spec.dport.to_be_bytes());
        f[l4 + 4..l4 + 6].copy_from_slice(&udp_len.to_be_bytes());
        f[layout.payload..layout.payload + 4].copy_from_slice(&MAGIC.to_be_bytes());
        // Everything but source port, checksum, flow, sequence and time is fixed; those
        // are zero in `f` right now, so summing the whole UDP part gives the fixed sum.
        pseudo += sum16(&f[l4..]);
        let src_low = crate::flows::low32(&spec.src);
        let dst_low = crate::flows::low32(&spec.dst);
        let ip_sum = if v6 {
            0
        } else {
            let mut h = f[ETH_LEN..l4].to_vec();
            h[10..12].fill(0);
            h[12..20].fill(0);
            sum16(&h)
        };
        let mut t = Template {
            frame: f,
            layout,
            base_sum: pseudo,
            sport: spec.sport,
            tuple_sum: pseudo - sum_u32(src_low) - sum_u32(dst_low),
            ip_sum,
        };
        let mut frame = std::mem::take(&mut t.frame);
        t.stamp(&mut frame, 0, 0, 0);
        t.frame = frame;
        Ok(t)
    }

    /// Whether the frame is IPv6, once its addresses are of one family and its
    /// size carries the payload.
    fn check(spec: &Spec) -> Result<bool, SendUsage> {
        let v6 = match (spec.src, spec.dst) {
            (IpAddr::V4(_), IpAddr::V4(_)) => false,
            (IpAddr::V6(_), IpAddr::V6(_)) => true,
            _ => return Err(SendUsage::MixedFamilies),
        };
        let min = min_size(v6);
        if spec.size < min || spec.size > MAX_FRAME {
            return Err(SendUsage::FrameSize {
                size: spec.size,
                family: if v6 { "IPv6" } else { "IPv4" },
                min,
                max: MAX_FRAME,
            });
        }
        Ok(v6)
    }

    /// Write a flow's addresses and source port (`tuple`), its id, the sequence and
    /// transmit time into `buf` (a copy of the template), and fix the IPv4 header
    /// checksum and the UDP checksum incrementally.
    #[inline(always)]
    pub fn stamp_tuple(
        &self,
        buf: &mut [u8],
        flow: u32,
        t: &crate::flows::Tuple,
        seq: u64,
        ts: u64,
    ) {
        let l = &self.layout;
        buf[l.src_low()..l.src_low() + 4].copy_from_slice(&t.src_low.to_be_bytes());
        buf[l.dst_low()..l.dst_low() + 4].copy_from_slice(&t.dst_low.to_be_bytes());
        let addrs = sum_u32(t.src_low) + sum_u32(t.dst_low);
        if !l.v6 {
            let c = fold(self.ip_sum + addrs);
            buf[l.ip_csum()..l.ip_csum() + 2].copy_from_slice(&c.to_be_bytes());
        }
        let field = seq_field(flow, seq);
        buf[l.sport()..l.sport() + 2].copy_from_slice(&t.sport.to_be_bytes());
        buf[l.flow()..l.flow() + 2].copy_from_slice(&(flow as u16).to_be_bytes());
        buf[l.seq()..l.seq() + 8].copy_from_slice(&field.to_be_bytes());
        buf[l.ts()..l.ts() + 8].copy_from_slice(&ts.to_be_bytes());
        let s = self.tuple_sum
            + addrs
            + t.sport as u32
            + (flow & 0xffff)
            + sum_u64(field)
            + sum_u64(ts);
        let mut c = fold(s);
        if c == 0 {
            c = 0xffff;
        }
        buf[l.csum()..l.csum() + 2].copy_from_slice(&c.to_be_bytes());
    }

    /// Write flow, sequence and transmit time into `buf` (a copy of the template)
    /// and fix the UDP checksum incrementally.
    #[inline(always)]
    pub fn stamp(&self, buf: &mut [u8], flow: u16, seq: u64, ts: u64) {
        let l = &self.layout;
        let sport = self.sport.wrapping_add(flow);
        buf[l.sport()..l.sport() + 2].copy_from_slice(&sport.to_be_bytes());
        buf[l.flow()..l.flow() + 2].copy_from_slice(&flow.to_be_bytes());
        buf[l.seq()..l.seq() + 8].copy_from_slice(&seq.to_be_bytes());
        buf[l.ts()..l.ts() + 8].copy_from_slice(&ts.to_be_bytes());
        let s = self.base_sum + sport as u32 + flow as u32 + sum_u64(seq) + sum_u64(ts);
        let mut c = fold(s);
        if c == 0 {
            c = 0xffff; // UDP: a computed zero is sent as all ones
        }
        buf[l.csum()..l.csum() + 2].copy_from_slice(&c.to_be_bytes());
    }
}

/// A netassay payload found in a received frame.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub struct Parsed {
    pub flow: u32,
    pub seq: u64,
    pub ts: u64,
}

/// Parse an Ethernet frame; return the payload fields if it is a netassay-gen packet.
#[inline]
pub fn parse(f: &[u8]) -> Option<Parsed> {
    if f.len() < ETH_LEN + IPV4_LEN + UDP_LEN + PAYLOAD_LEN {
        return None;
    }
    let mut off = 12;
    let mut et = u16::from_be_bytes([f[off], f[off + 1]]);
    if et == 0x8100 {
        off += 4;
        et = u16::from_be_bytes([f[off], f[off + 1]]);
    }
    let ip = off + 2;
    let p = match et {
        0x0800 => {
            if f[ip] >> 4 != 4 || f[ip + 9] != 17 {
                return None;
            }
            ip + ((f[ip] & 0x0f) as usize) * 4 + UDP_LEN
        }
        0x86dd => {
            if f.len() < ip + IPV6_LEN || f[ip + 6] != 17 {
                return None;
            }
            ip + IPV6_LEN + UDP_LEN
        }
        _ => return None,
    };
    if f.len() < p + PAYLOAD_LEN {
        return None;
    }
    let b = &f[p..p + PAYLOAD_LEN];
    if u32::from_be_bytes([b[0], b[1], b[2], b[3]]) != MAGIC {
        return None;
    }
    let field = u64::from_be_bytes(b[6..14].try_into().unwrap());
    Some(Parsed {
        flow: u16::from_be_bytes([b[4], b[5]]) as u32 | ((field >> SEQ_BITS) as u32) << 16,
        seq: field & SEQ_MASK,
        ts: u64::from_be_bytes(b[14..22].try_into().unwrap()),
    })
}

/// Whether an untagged IPv4 (no options) or IPv6 UDP frame's checksums verify: the
/// IPv4 header's and the UDP checksum over the pseudo header and the datagram. None
/// when the frame is not such a frame or was not captured whole (a snap length).
pub fn checksums_ok(f: &[u8]) -> Option<bool> {
    if f.len() < ETH_LEN + IPV4_LEN + UDP_LEN {
        return None;
    }
    let (l4, pseudo, ip_ok) = match u16::from_be_bytes([f[12], f[13]]) {
        0x0800 if f[14] == 0x45 && f[23] == 17 => (
            ETH_LEN + IPV4_LEN,
            sum16(&f[26..34]),
            fold(sum16(&f[14..34])) == 0,
        ),
        0x86dd if f.len() >= ETH_LEN + IPV6_LEN + UDP_LEN && f[20] == 17 => {
            (ETH_LEN + IPV6_LEN, sum16(&f[22..54]), true)
        }
        _ => return None,
    };
    let udp_len = u16::from_be_bytes([f[l4 + 4], f[l4 + 5]]) as usize;
    if udp_len < UDP_LEN || f.len() < l4 + udp_len {
        return None;
    }
    let udp = &f[l4..l4 + udp_len];
    let udp_ok = fold(pseudo + 17 + udp_len as u32 + sum16(udp)) == 0;
    Some(ip_ok && udp_ok)
}

pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 6 {
        return None;
    }
    let mut m = [0u8; 6];
    for (i, p) in parts.iter().enumerate() {
        // hex digits only: from_str_radix also takes a sign ("+1")
        if p.is_empty() || p.len() > 2 || !p.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        m[i] = u8::from_str_radix(p, 16).ok()?;
    }
    Some(m)
}

pub fn fmt_mac(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Benchmarking ranges: 198.18.0.0/15 (RFC 2544) and 2001:2::/48 (RFC 5180).
pub fn is_bench_addr(a: &IpAddr) -> bool {
    match a {
        IpAddr::V4(v) => {
            let o = v.octets();
            o[0] == 198 && (o[1] & 0xfe) == 18
        }
        IpAddr::V6(v) => {
            let s = v.segments();
            s[0] == 0x2001 && s[1] == 0x0002 && s[2] == 0
        }
    }
}

/// The IPv4 frame the unit tests build on: 64 bytes, 198.18.0.2:10000 -> 198.19.0.2:9.
#[cfg(test)]
pub fn spec4() -> Spec {
    Spec {
        src_mac: [0x02, 0, 0, 0, 0, 0x01],
        dst_mac: [0x02, 0, 0, 0, 0, 0x02],
        src: "198.18.0.2".parse().unwrap(),
        dst: "198.19.0.2".parse().unwrap(),
        sport: 10000,
        dport: 9,
        size: 64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Full, naive UDP checksum over the frame, for cross-checking the incremental one.
    fn full_udp_ok(f: &[u8], v6: bool) -> bool {
        let l4 = if v6 { 54 } else { 34 };
        let udp = &f[l4..];
        let mut s = sum16(udp) + 17 + udp.len() as u32;
        if v6 {
            s += sum16(&f[22..54]);
        } else {
            s += sum16(&f[26..34]);
        }
        // Including the checksum field itself, a valid datagram sums to 0xffff.
        fold(s) == 0
    }

    #[test]
    fn ipv4_frame_bytes_by_hand() {
        let t = Template::new(&spec4()).unwrap();
        let mut f = t.frame.clone();
        t.stamp(&mut f, 0, 1, 2);
        assert_eq!(f.len(), 64);
        assert_eq!(&f[0..14], &[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00]);
        // IPv4 header; checksum by hand:
        // 4500 + 0032 + 0000 + 4000 + 4011 + c612 + 0002 + c613 + 0002
        //  = 0x2516c -> fold 0x516e -> complement 0xae91
        assert_eq!(
            &f[14..34],
            &[
                0x45, 0x00, 0x00, 0x32, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xae, 0x91, 198, 18, 0,
                2, 198, 19, 0, 2
            ]
        );
        // UDP: sport 10000 (0x2710), dport 9, length 30 (0x1e).
        assert_eq!(&f[34..40], &[0x27, 0x10, 0x00, 0x09, 0x00, 0x1e]);
        // UDP checksum by hand, 16-bit words:
        // pseudo: c612 0002 c613 0002 0011 001e             = 0x18c58
        // udp:    2710 0009 001e                            = 0x2737
        // payload: 6e61 4731 | 0000 | 0000 0000 0000 0001 | 0000 0000 0000 0002
        //                                                   = 0xb595
        // total 0x18c58 + 0x2737 + 0xb595 = 0x26924 -> fold 0x6926 -> ~ 0x96d9
        assert_eq!(&f[40..42], &[0x96, 0xd9]);
        assert_eq!(&f[42..46], &[0x6e, 0x61, 0x47, 0x31]);
        assert_eq!(&f[46..48], &[0, 0]);
        assert_eq!(&f[48..56], &[0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(&f[56..64], &[0, 0, 0, 0, 0, 0, 0, 2]);
        assert!(full_udp_ok(&f, false));
        assert_eq!(fold(sum16(&f[14..34])), 0, "IPv4 header checksum verifies");
    }

    #[test]
    fn ipv6_frame_and_checksum() {
        let mut s = spec4();
        s.src = "2001:2::2".parse().unwrap();
        s.dst = "2001:2:0:1::2".parse().unwrap();
        s.size = 64;
        // 64 bytes cannot carry the IPv6 payload
        let e = SendUsage::FrameSize {
            size: 64,
            family: "IPv6",
            min: 84,
            max: 1518,
        };
        assert_eq!(Template::new(&s).err(), Some(e));
        s.dst = "198.19.0.2".parse().unwrap();
        assert_eq!(Template::new(&s).err(), Some(SendUsage::MixedFamilies));
        s.dst = "2001:2:0:1::2".parse().unwrap();
        s.size = 84;
        let t = Template::new(&s).unwrap();
        let mut f = t.frame.clone();
        t.stamp(&mut f, 3, 0x0304_0506_0708, 0xdead_beef_0000_0001);
        assert_eq!(&f[12..14], &[0x86, 0xdd]);
        assert_eq!(&f[14..22], &[0x60, 0, 0, 0, 0, 30, 17, 64]);
        assert_eq!(u16::from_be_bytes([f[54], f[55]]), 10003);
        assert!(full_udp_ok(&f, true));
        let p = parse(&f).unwrap();
        assert_eq!(
            p,
            Parsed {
                flow: 3,
                seq: 0x0304_0506_0708,
                ts: 0xdead_beef_0000_0001
            }
        );
    }

    #[test]
    fn incremental_checksum_matches_full_for_many_values() {
        for size in [64usize, 65, 128, 1518] {
            let mut s = spec4();
            s.size = size;
            let t = Template::new(&s).unwrap();
            let mut f = t.frame.clone();
            let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
            for i in 0..2000u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let seq = x & SEQ_MASK; // a sequence number has 48 bits
                t.stamp(&mut f, (i % 300) as u16, seq, x.rotate_left(17) ^ i);
                assert!(full_udp_ok(&f, false), "size {size} i {i}");
                assert_eq!(parse(&f).unwrap().seq, seq);
            }
        }
    }

    /// The IPv4 header checksum verifies (sums to 0xffff with itself).
    fn ip_ok(f: &[u8]) -> bool {
        fold(sum16(&f[14..34])) == 0
    }

    #[test]
    fn a_flows_tuple_is_stamped_with_both_checksums_right() {
        use crate::flows::{Order, Plan};
        for (src, dst, size) in [
            ("198.18.0.2", "198.19.1.1", 64usize),
            ("198.18.0.2", "198.19.1.1", 1518),
            ("2001:2:0:1::2", "2001:2:0:8000::1", 84),
            ("2001:2:0:1::2", "2001:2:0:8000::1", 333),
        ] {
            let v6 = src.contains(':');
            let s = Spec {
                src: src.parse().unwrap(),
                dst: dst.parse().unwrap(),
                size,
                ..spec4()
            };
            let t = Template::new(&s).unwrap();
            let plan =
                Plan::new(1_000_000, 65000, 1, 10000, &s.src, &s.dst, Order::Random(5)).unwrap();
            let mut f = t.frame.clone();
            let mut x: u64 = 0x2545_f491_4f6c_dd1d;
            for k in (0..1_000_000u64).step_by(997) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let flow = plan.flow_of(k);
                let tu = plan.tuple(flow);
                t.stamp_tuple(&mut f, flow, &tu, k / 1_000_000 + (x >> 20), x);
                assert!(full_udp_ok(&f, v6), "{src} size {size} k {k}");
                assert!(v6 || ip_ok(&f), "{src} k {k}");
                let p = parse(&f).unwrap();
                assert_eq!(
                    (p.flow, p.seq, p.ts),
                    (flow, (k / 1_000_000 + (x >> 20)) & SEQ_MASK, x)
                );
                let at = t.layout.dst_low();
                assert_eq!(
                    u32::from_be_bytes(f[at..at + 4].try_into().unwrap()),
                    tu.dst_low
                );
                let at = t.layout.sport();
                assert_eq!(u16::from_be_bytes([f[at], f[at + 1]]), tu.sport);
            }
        }
    }

    #[test]
    fn checksums_are_checked_on_whole_frames() {
        let t = Template::new(&spec4()).unwrap();
        let mut f = t.frame.clone();
        t.stamp(&mut f, 1, 2, 3);
        assert_eq!(checksums_ok(&f), Some(true));
        assert_eq!(checksums_ok(&f[..50]), None); // not captured whole
        let mut bad = f.clone();
        bad[63] ^= 1; // the payload
        assert_eq!(checksums_ok(&bad), Some(false));
        let mut bad = f.clone();
        bad[22] -= 1; // the TTL: the IPv4 header's checksum
        assert_eq!(checksums_ok(&bad), Some(false));
    }

    #[test]
    fn fewer_than_65536_flows_leave_the_payload_as_it_was() {
        let t = Template::new(&spec4()).unwrap();
        let (mut a, mut b) = (t.frame.clone(), t.frame.clone());
        let plan = crate::flows::Plan::one(10000, &spec4().src, &spec4().dst);
        t.stamp(&mut a, 7, 12345, 99);
        t.stamp_tuple(
            &mut b,
            7,
            &crate::flows::Tuple {
                sport: 10007,
                ..plan.tuple(0)
            },
            12345,
            99,
        );
        assert_eq!(a, b);
        assert_eq!(seq_field(65535, 3), 3);
        assert_eq!(seq_field(65536, 3), (1 << 48) | 3);
    }

    #[test]
    fn zero_checksum_is_sent_as_ffff() {
        let t = Template::new(&spec4()).unwrap();
        let mut f = t.frame.clone();
        // Find a sequence number that makes the computed checksum 0 and check the rule.
        let s0 = t.base_sum + t.sport as u32;
        let folded = !fold(s0); // current folded sum, seq=ts=0
        let need = 0xffffu32 - folded as u32; // add this to reach 0xffff
        t.stamp(&mut f, 0, need as u64, 0);
        assert_eq!(&f[40..42], &[0xff, 0xff]);
        assert!(full_udp_ok(&f, false));
    }

    #[test]
    fn parse_rejects_foreign() {
        let t = Template::new(&spec4()).unwrap();
        let mut f = t.frame.clone();
        assert!(parse(&f).is_some());
        f[42] ^= 1;
        assert!(parse(&f).is_none());
        assert!(parse(&f[..40]).is_none());
    }

    #[test]
    fn bench_ranges_and_macs() {
        for ok in [
            "198.18.0.1",
            "198.19.255.255",
            "2001:2::1",
            "2001:2:0:ffff::1",
        ] {
            assert!(is_bench_addr(&ok.parse().unwrap()), "{ok}");
        }
        for bad in [
            "198.20.0.1",
            "198.17.0.1",
            "10.0.0.1",
            "2001:2:1::1",
            "2001:db8::1",
        ] {
            assert!(!is_bench_addr(&bad.parse().unwrap()), "{bad}");
        }
        assert_eq!(parse_mac("02:00:0a:ff:00:01"), Some([2, 0, 10, 255, 0, 1]));
        assert_eq!(parse_mac("02:00:0a:ff:00"), None);
        assert_eq!(parse_mac("02:00:0a:ff:00:zz"), None);
        assert_eq!(
            parse_mac("+0:a:a:A:0:A"),
            None,
            "found by the mac property test"
        );
        assert_eq!(fmt_mac(&[2, 0, 10, 255, 0, 1]), "02:00:0a:ff:00:01");
        assert_eq!(min_size(false), 64);
        assert_eq!(min_size(true), 84);
    }
}

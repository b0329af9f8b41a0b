//! Replaying a capture (`--pcap FILE`): its frames rewritten to the testbed's
//! addresses, sent in the capture's order and looped, at `--rate` or on the capture's
//! own gaps scaled by `--speed`.
//!
//! What is rewritten in every frame sent: the Ethernet destination and source (the
//! sender's --dst-mac and its own or --src-mac), the IPv4 or IPv6 source and
//! destination (--src and --dst), the IPv4 header checksum, and the UDP, TCP and
//! ICMPv6 checksums (recomputed over the segment; an IPv4 fragment's L4 header, an
//! IPv6 extension header and other protocols are left as captured). The rest of the
//! bytes, the frame's length and any Ethernet padding are kept.
//!
//! Frames the sink can count are marked: a UDP frame (IPv4 without options, or IPv6
//! with UDP as its next header, not a fragment) with at least 22 bytes of UDP payload
//! carries netassay-gen's payload in its first 22 bytes (magic, flow 0, sequence,
//! transmit time; see `packet`), stamped at each send with its checksum fixed as the
//! generator's own frames are; the sequence counts the marked frames sent. Other
//! frames go out unmarked and uncounted by the XDP sink.
//!
//! Skipped (counted by why, never sent): a record whose link type is not Ethernet
//! (not_ethernet), a frame that is not IPv4 or IPv6 (not_ip: ARP, VLAN-tagged
//! frames), of the other family than --src and --dst (other_family), cut short by the
//! capture's snap length (cut_short), bigger than the interface's MTU allows
//! (too_big), or whose IP header does not hold together (bad_header).

use crate::error::SendUsage;
use crate::json::J;
use crate::packet::{fold, sum16, Layout, Template, ETH_LEN, MAGIC, PAYLOAD_LEN, UDP_LEN};
use crate::pcap::Record;
use crate::tx::{self, Clock, LoopCfg, LoopOut, Tx};
use std::io;
use std::net::IpAddr;

/// Where the rewritten frames go.
#[derive(Clone, Debug)]
pub struct Target {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub src: IpAddr,
    pub dst: IpAddr,
    /// The largest frame the interface sends (its MTU plus the Ethernet header).
    pub max_frame: usize,
}

/// Why a frame is not sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    NotEthernet,
    NotIp,
    OtherFamily,
    CutShort,
    TooBig,
    BadHeader,
}

impl Skip {
    pub const ALL: [Skip; 6] = [
        Skip::NotEthernet,
        Skip::NotIp,
        Skip::OtherFamily,
        Skip::CutShort,
        Skip::TooBig,
        Skip::BadHeader,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Skip::NotEthernet => "not_ethernet",
            Skip::NotIp => "not_ip",
            Skip::OtherFamily => "other_family",
            Skip::CutShort => "cut_short",
            Skip::TooBig => "too_big",
            Skip::BadHeader => "bad_header",
        }
    }
}

fn be16(f: &[u8], at: usize) -> usize {
    u16::from_be_bytes([f[at], f[at + 1]]) as usize
}

/// A frame rewritten: a template (marked frames are stamped at each send through
/// it, `Template::stamp`; the others are sent as they are) and whether it is marked.
pub struct Frame {
    pub tpl: Template,
    pub marked: bool,
}

/// `r` rewritten for `t`, or why it is skipped.
pub fn rewrite(r: &Record, t: &Target) -> Result<Frame, Skip> {
    if r.linktype != 1 {
        return Err(Skip::NotEthernet);
    }
    if r.data.len() < r.orig_len as usize {
        return Err(Skip::CutShort);
    }
    let mut f = r.data.clone();
    if f.len() < ETH_LEN {
        return Err(Skip::BadHeader);
    }
    let v6 = match be16(&f, 12) {
        0x0800 => false,
        0x86dd => true,
        _ => return Err(Skip::NotIp),
    };
    if v6 != t.src.is_ipv6() {
        return Err(Skip::OtherFamily);
    }
    if f.len() > t.max_frame {
        return Err(Skip::TooBig);
    }
    f[0..6].copy_from_slice(&t.dst_mac);
    f[6..12].copy_from_slice(&t.src_mac);
    let ip = ETH_LEN;
    let (src, dst) = match (t.src, t.dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => (s.octets().to_vec(), d.octets().to_vec()),
        (IpAddr::V6(s), IpAddr::V6(d)) => (s.octets().to_vec(), d.octets().to_vec()),
        _ => return Err(Skip::OtherFamily),
    };
    // the L4 segment [l4, end), its protocol, whether it is whole (not a fragment)
    let (l4, end, proto, whole, plain) = if v6 {
        if f.len() < ip + 40 || f[ip] >> 4 != 6 {
            return Err(Skip::BadHeader);
        }
        let end = ip + 40 + be16(&f, ip + 4);
        if end > f.len() {
            return Err(Skip::BadHeader);
        }
        f[ip + 8..ip + 24].copy_from_slice(&src);
        f[ip + 24..ip + 40].copy_from_slice(&dst);
        (ip + 40, end, f[ip + 6], true, true)
    } else {
        if f.len() < ip + 20 || f[ip] >> 4 != 4 {
            return Err(Skip::BadHeader);
        }
        let ihl = (f[ip] & 0x0f) as usize * 4;
        let end = ip + be16(&f, ip + 2);
        if ihl < 20 || end < ip + ihl || end > f.len() {
            return Err(Skip::BadHeader);
        }
        f[ip + 12..ip + 16].copy_from_slice(&src);
        f[ip + 16..ip + 20].copy_from_slice(&dst);
        f[ip + 10..ip + 12].fill(0);
        let c = fold(sum16(&f[ip..ip + ihl]));
        f[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
        let whole = be16(&f, ip + 6) & 0x3fff == 0; // no offset, no more fragments
        (ip + ihl, end, f[ip + 9], whole, ihl == 20)
    };
    let pseudo = |len: usize| sum16(&src) + sum16(&dst) + proto as u32 + len as u32;
    // where the L4 checksum sits and how long the segment it covers is
    let csum = match proto {
        17 if whole && end - l4 >= UDP_LEN => {
            let len = be16(&f, l4 + 4);
            (UDP_LEN..=end - l4).contains(&len).then_some((6, len))
        }
        6 if whole && end - l4 >= 20 => Some((16, end - l4)),
        58 if v6 && end - l4 >= 4 => Some((2, end - l4)),
        _ => None,
    };
    let Some((at, len)) = csum else {
        return Ok(Frame {
            tpl: plain_template(f, v6),
            marked: false,
        });
    };
    let seg = l4..l4 + len;
    f[l4 + at..l4 + at + 2].fill(0);
    let marked = proto == 17 && plain && len >= UDP_LEN + PAYLOAD_LEN;
    if marked {
        let p = l4 + UDP_LEN;
        f[p..p + 4].copy_from_slice(&MAGIC.to_be_bytes());
        f[p + 4..p + PAYLOAD_LEN].fill(0);
        let layout = Layout { l4, payload: p, v6 };
        // the fixed sum without the source port (Template::stamp adds it)
        let sport = be16(&f, l4) as u16;
        let base_sum = pseudo(len) + sum16(&f[seg]) - sport as u32;
        let mut tpl = Template {
            frame: f,
            layout,
            base_sum,
            sport,
            tuple_sum: 0,
            ip_sum: 0,
        };
        let mut frame = std::mem::take(&mut tpl.frame);
        tpl.stamp(&mut frame, 0, 0, 0);
        tpl.frame = frame;
        return Ok(Frame { tpl, marked });
    }
    let mut c = fold(pseudo(len) + sum16(&f[seg]));
    if c == 0 && proto == 17 {
        c = 0xffff; // UDP: a computed zero is sent as all ones
    }
    f[l4 + at..l4 + at + 2].copy_from_slice(&c.to_be_bytes());
    Ok(Frame {
        tpl: plain_template(f, v6),
        marked: false,
    })
}

/// A frame sent as it is (never stamped).
fn plain_template(frame: Vec<u8>, v6: bool) -> Template {
    Template {
        frame,
        layout: Layout {
            l4: 0,
            payload: 0,
            v6,
        },
        base_sum: 0,
        sport: 0,
        tuple_sum: 0,
        ip_sum: 0,
    }
}

/// A capture's frames ready to send, in its order, and what was skipped.
pub struct Replay {
    pub frames: Vec<Frame>,
    /// When each frame was captured (ns).
    pub ts_ns: Vec<u64>,
    /// Marked frames before frame i of the capture, and in all of it.
    marked_before: Vec<u64>,
    marked_per_cycle: u64,
    /// Records in the file.
    pub records: u64,
    /// Frames skipped, by why (in `Skip::ALL`'s order).
    pub skipped: [u64; 6],
}

impl Replay {
    /// The usable frames of `records`, rewritten for `t`.
    pub fn new(records: &[Record], t: &Target) -> Replay {
        let mut r = Replay {
            frames: Vec::new(),
            ts_ns: Vec::new(),
            marked_before: Vec::new(),
            marked_per_cycle: 0,
            records: records.len() as u64,
            skipped: [0; 6],
        };
        for rec in records {
            match rewrite(rec, t) {
                Ok(f) => {
                    r.marked_before.push(r.marked_per_cycle);
                    r.marked_per_cycle += u64::from(f.marked);
                    r.frames.push(f);
                    r.ts_ns.push(rec.ts_ns);
                }
                Err(why) => r.skipped[Skip::ALL.iter().position(|&s| s == why).unwrap()] += 1,
            }
        }
        r
    }

    /// The capture at `path` read and rewritten; a file with no usable frame is
    /// refused, saying what its frames were.
    pub fn load(path: &str, t: &Target) -> Result<Replay, SendUsage> {
        let bad = |why: String| SendUsage::Pcap(path.into(), why);
        let bytes = std::fs::read(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
        let records = crate::pcap::parse(&bytes).map_err(bad)?;
        let r = Replay::new(&records, t);
        if r.frames.is_empty() {
            let why = if records.is_empty() {
                "it holds no frame".to_string()
            } else {
                format!(
                    "none of its {} frames can be sent ({}): netassay-gen sends Ethernet \
                     frames of IPv4 or IPv6, of --src's family, no bigger than the MTU",
                    records.len(),
                    r.skipped_words()
                )
            };
            return Err(bad(why));
        }
        Ok(r)
    }

    /// The skipped frames in words: "3 not_ip, 1 too_big".
    pub fn skipped_words(&self) -> String {
        let words: Vec<String> = Skip::ALL
            .iter()
            .zip(self.skipped)
            .filter(|(_, n)| *n > 0)
            .map(|(s, n)| format!("{n} {}", s.name()))
            .collect();
        words.join(", ")
    }

    pub fn skipped_total(&self) -> u64 {
        self.skipped.iter().sum()
    }

    /// The longest frame's template (the send slots' size).
    pub fn largest(&self) -> &Template {
        &self
            .frames
            .iter()
            .max_by_key(|f| f.tpl.frame.len())
            .expect("a frame")
            .tpl
    }

    /// The sequence number of packet p of the run (it is marked): the marked frames
    /// sent before it.
    #[inline(always)]
    pub fn seq(&self, p: u64) -> u64 {
        let n = self.frames.len() as u64;
        (p / n) * self.marked_per_cycle + self.marked_before[(p % n) as usize]
    }

    /// Of the first `total` packets of a run: frames and bytes per size, all of them
    /// and the marked ones, as `{"size": n}`, sizes in ascending order.
    pub fn sent(&self, total: u64) -> Sent {
        let n = self.frames.len() as u64;
        let mut per: std::collections::BTreeMap<usize, [u64; 2]> = Default::default();
        for (i, f) in self.frames.iter().enumerate() {
            let times = total / n + u64::from((i as u64) < total % n);
            let e = per.entry(f.tpl.frame.len()).or_default();
            e[0] += times;
            if f.marked {
                e[1] += times;
            }
        }
        Sent { per }
    }

    /// Copy into slots 0..b the frames of packets k.. and stamp the marked ones.
    #[inline(always)]
    pub fn load_slots(&self, tx: &mut dyn Tx, k: u64, b: usize, ts: u64) {
        let n = self.frames.len() as u64;
        for i in 0..b {
            let p = k + i as u64;
            let f = &self.frames[(p % n) as usize];
            let buf = tx.load(i, &f.tpl.frame);
            if f.marked {
                f.tpl.stamp(buf, 0, self.seq(p), ts);
            }
        }
    }

    /// What the sender reports of the capture (keys of its JSON line).
    pub fn json(&self, path: &str, speed: Option<f64>, total: u64) -> Vec<(&'static str, J)> {
        let sent = self.sent(total);
        let skipped = Skip::ALL
            .iter()
            .zip(self.skipped)
            .map(|(s, n)| (s.name().to_string(), J::U(n)))
            .collect();
        vec![
            ("pcap", J::S(path.into())),
            ("pcap_records", J::U(self.records)),
            ("pcap_frames", J::U(self.frames.len() as u64)),
            ("pcap_marked", J::U(self.marked_per_cycle)),
            ("pcap_skipped", J::Obj(skipped)),
            ("speed", speed.map_or(J::Null, J::F)),
            ("sent_per_size", sent.json(0)),
            ("marked_per_size", sent.json(1)),
            ("sent_bytes", J::U(sent.bytes(0))),
            ("marked", J::U(sent.total(1))),
            ("marked_bytes", J::U(sent.bytes(1))),
        ]
    }
}

/// Frames sent per size: [all, marked].
pub struct Sent {
    pub per: std::collections::BTreeMap<usize, [u64; 2]>,
}

impl Sent {
    fn json(&self, i: usize) -> J {
        J::Obj(
            self.per
                .iter()
                .filter(|(_, c)| c[i] > 0)
                .map(|(s, c)| (s.to_string(), J::U(c[i])))
                .collect(),
        )
    }
    pub fn total(&self, i: usize) -> u64 {
        self.per.values().map(|c| c[i]).sum()
    }
    pub fn bytes(&self, i: usize) -> u64 {
        self.per.iter().map(|(s, c)| *s as u64 * c[i]).sum()
    }
}

/// `--pcap FILE --describe`: what a replay sends in each loop, as one JSON object.
pub fn describe(d: &crate::args::Describe) -> Result<J, SendUsage> {
    if d.src.is_ipv6() != d.dst.is_ipv6() {
        return Err(SendUsage::MixedFamilies);
    }
    let t = Target {
        src_mac: [0; 6],
        dst_mac: [0; 6],
        src: d.src,
        dst: d.dst,
        max_frame: d.mtu + ETH_LEN,
    };
    let r = Replay::load(&d.path, &t)?;
    let n = r.frames.len() as u64;
    let mut kv = r.json(&d.path, None, n);
    kv.retain(|(k, _)| !["speed", "marked", "marked_bytes", "sent_bytes"].contains(k));
    let sent = r.sent(n);
    let span = r.ts_ns.iter().max().unwrap() - r.ts_ns[0];
    kv.extend([
        ("bytes", J::U(sent.bytes(0))),
        ("mean_bytes", J::F(sent.bytes(0) as f64 / n as f64)),
        ("marked_bytes", J::U(sent.bytes(1))),
        ("span_ns", J::U(span)),
    ]);
    Ok(J::obj(kv))
}

/// The sizes of the frames of a capture the XDP sink counts (marked ones, of
/// either family), ascending; what `--xdp-sink --pcap FILE` counts.
pub fn marked_sizes(records: &[Record]) -> Vec<usize> {
    let mut sizes = std::collections::BTreeSet::new();
    for v6 in [false, true] {
        let t = Target {
            src_mac: [0; 6],
            dst_mac: [0; 6],
            src: if v6 { "2001:2::1" } else { "198.18.0.1" }.parse().unwrap(),
            dst: if v6 { "2001:2::2" } else { "198.18.0.2" }.parse().unwrap(),
            max_frame: usize::MAX,
        };
        for r in records {
            if let Ok(f) = rewrite(r, &t) {
                if f.marked {
                    sizes.insert(f.tpl.frame.len());
                }
            }
        }
    }
    sizes.into_iter().collect()
}

/// The capture's own schedule (`--speed X`): frame i of the capture is due
/// (t_i - t_0) / X after the loop's start, the next loop one mean gap after the last
/// frame (a capture of one instant has none: refused). Times that go back are taken
/// as the latest before them.
#[derive(Clone, Debug)]
pub struct Gaps {
    offs: Vec<u64>,
    cycle: u64,
}

impl Gaps {
    pub fn new(ts_ns: &[u64], speed: f64) -> Result<Gaps, SendUsage> {
        let t0 = ts_ns[0];
        let mut latest = t0;
        let offs: Vec<u64> = ts_ns
            .iter()
            .map(|&t| {
                latest = latest.max(t);
                ((latest - t0) as f64 / speed).round() as u64
            })
            .collect();
        let span = *offs.last().unwrap();
        if span == 0 {
            return Err(SendUsage::PcapNoGaps(ts_ns.len()));
        }
        let mean_gap = (span as f64 / (offs.len() - 1) as f64).round().max(1.0) as u64;
        Ok(Gaps {
            cycle: span + mean_gap,
            offs,
        })
    }

    /// Packets due before `duration_ns`.
    pub fn planned(&self, duration_ns: u64) -> u64 {
        let n = self.offs.len() as u64;
        let whole = duration_ns / self.cycle;
        let rest = duration_ns - whole * self.cycle;
        whole * n + self.offs.partition_point(|&o| o < rest) as u64
    }

    /// Packets per second over whole loops.
    pub fn mean_rate(&self) -> f64 {
        self.offs.len() as f64 * 1e9 / self.cycle as f64
    }

    /// The schedule's rate between packets `a` and `b` (what a paced run whose send
    /// calls went at those packets' due times achieves).
    pub fn rate_between(&self, a: u64, b: u64) -> f64 {
        let span = self.off(b).saturating_sub(self.off(a));
        if b <= a || span == 0 {
            return f64::NAN;
        }
        (b - a) as f64 * 1e9 / span as f64
    }
}

impl Clock for &Gaps {
    #[inline(always)]
    fn off(&self, k: u64) -> u64 {
        let n = self.offs.len() as u64;
        (k / n) * self.cycle + self.offs[(k % n) as usize]
    }
}

/// Send a capture's frames (`r`): evenly paced at the rate, or on the capture's own
/// gaps (`gaps`, with `cfg.rate` their mean rate).
pub fn send(
    tx: &mut dyn Tx,
    r: &Replay,
    gaps: Option<&Gaps>,
    cfg: &LoopCfg,
) -> Result<LoopOut, (io::Error, u64)> {
    let stamp = |tx: &mut dyn Tx, k, b, ts| r.load_slots(tx, k, b, ts);
    match gaps {
        Some(g) => tx::run_on(tx, cfg, g, stamp),
        None => tx::run_with(tx, cfg, stamp),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{parse, spec4, Spec};

    fn target(v6: bool) -> Target {
        Target {
            src_mac: [2, 0, 0, 0, 0, 0xaa],
            dst_mac: [2, 0, 0, 0, 0, 0xbb],
            src: if v6 { "2001:2::10" } else { "198.18.1.10" }
                .parse()
                .unwrap(),
            dst: if v6 { "2001:2:0:1::20" } else { "198.19.1.20" }
                .parse()
                .unwrap(),
            max_frame: 1514,
        }
    }

    fn rec(data: Vec<u8>) -> Record {
        Record {
            linktype: 1,
            ts_ns: 0,
            orig_len: data.len() as u32,
            data,
        }
    }

    /// Whether the IPv4 header checksum and the L4 checksum of `f` verify.
    fn checksums_hold(f: &[u8]) -> bool {
        let v6 = be16(f, 12) == 0x86dd;
        let ip = ETH_LEN;
        let (l4, end, proto, src, dst) = if v6 {
            (
                ip + 40,
                ip + 40 + be16(f, ip + 4),
                f[ip + 6],
                &f[ip + 8..ip + 24],
                &f[ip + 24..ip + 40],
            )
        } else {
            let ihl = (f[ip] & 15) as usize * 4;
            if fold(sum16(&f[ip..ip + ihl])) != 0 {
                return false;
            }
            (
                ip + ihl,
                ip + be16(f, ip + 2),
                f[ip + 9],
                &f[ip + 12..ip + 16],
                &f[ip + 16..ip + 20],
            )
        };
        if proto == 1 {
            return fold(sum16(&f[l4..end])) == 0;
        }
        if ![6, 17, 58].contains(&proto) {
            return true; // not fixed: left as captured
        }
        let s = sum16(src) + sum16(dst) + proto as u32 + (end - l4) as u32 + sum16(&f[l4..end]);
        fold(s) == 0
    }

    /// A UDP frame of netassay-gen's own, with its payload after the magic made
    /// something else (as another sender's would be), or a TCP or ICMP one.
    fn udp(size: usize, v6: bool) -> Vec<u8> {
        let s = if v6 {
            Spec {
                src: "2001:2::1".parse().unwrap(),
                dst: "2001:2::2".parse().unwrap(),
                size,
                ..spec4()
            }
        } else {
            Spec { size, ..spec4() }
        };
        let mut f = Template::new(&s).unwrap().frame;
        let p = if v6 { 62 } else { 42 };
        for (i, b) in f[p..].iter_mut().enumerate() {
            *b = i as u8 ^ 0x5a;
        }
        f
    }

    fn tcp4(payload: usize) -> Vec<u8> {
        let mut f = udp(14 + 20 + 20 + payload.max(10), false);
        f.truncate(14 + 20 + 20 + payload);
        f[16..18].copy_from_slice(&((20 + 20 + payload) as u16).to_be_bytes());
        f[23] = 6;
        f
    }

    #[test]
    fn addresses_macs_and_checksums_are_rewritten() {
        for v6 in [false, true] {
            let t = target(v6);
            for frame in [udp(128, v6), udp(70 + if v6 { 20 } else { 0 }, v6)] {
                let f = rewrite(&rec(frame.clone()), &t).unwrap();
                let g = &f.tpl.frame;
                assert_eq!(g.len(), frame.len());
                assert_eq!((&g[0..6], &g[6..12]), (&t.dst_mac[..], &t.src_mac[..]));
                let (s, d) = if v6 { (22, 38) } else { (26, 30) };
                let n = if v6 { 16 } else { 4 };
                let want = |a: IpAddr| match a {
                    IpAddr::V4(a) => a.octets().to_vec(),
                    IpAddr::V6(a) => a.octets().to_vec(),
                };
                assert_eq!(g[s..s + n], want(t.src)[..]);
                assert_eq!(g[d..d + n], want(t.dst)[..]);
                assert!(checksums_hold(g), "v6 {v6}");
                assert!(f.marked);
            }
        }
        let f = rewrite(&rec(tcp4(100)), &target(false)).unwrap();
        assert!(checksums_hold(&f.tpl.frame) && !f.marked);
        assert_eq!(f.tpl.frame[54..], tcp4(100)[54..]); // the payload as captured
    }

    #[test]
    fn marked_frames_carry_the_payload_stamped_at_each_send() {
        let f = rewrite(&rec(udp(200, false)), &target(false)).unwrap();
        assert!(f.marked);
        let mut buf = f.tpl.frame.clone();
        f.tpl.stamp(&mut buf, 0, 41, 123_456_789);
        let p = parse(&buf).unwrap();
        assert_eq!((p.flow, p.seq, p.ts), (0, 41, 123_456_789));
        assert!(checksums_hold(&buf));
        // the captured source port is kept
        assert_eq!(buf[34..36], udp(200, false)[34..36]);
        // the bytes after the 22 of the payload are the capture's
        assert_eq!(buf[64..], udp(200, false)[64..]);
        // a UDP payload of 21 bytes is sent unmarked, its checksum fixed
        let mut short = udp(64, false);
        short.truncate(63);
        short[16..18].copy_from_slice(&49u16.to_be_bytes());
        short[38..40].copy_from_slice(&29u16.to_be_bytes());
        let f = rewrite(&rec(short), &target(false)).unwrap();
        assert!(!f.marked && checksums_hold(&f.tpl.frame));
        assert!(parse(&f.tpl.frame).is_none());
    }

    #[test]
    fn frames_that_cannot_be_sent_are_skipped_with_why() {
        let t4 = target(false);
        let mut arp = udp(64, false);
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        let mut vlan = udp(64, false);
        vlan[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
        let mut cut = rec(udp(100, false));
        cut.orig_len = 200;
        let mut sll = rec(udp(100, false));
        sll.linktype = 113;
        let mut bad = udp(100, false);
        bad[16..18].copy_from_slice(&2000u16.to_be_bytes()); // longer than the frame
        let err = |r: Record| rewrite(&r, &t4).err();
        assert_eq!(err(rec(arp)), Some(Skip::NotIp));
        assert_eq!(err(rec(vlan)), Some(Skip::NotIp));
        assert_eq!(err(cut), Some(Skip::CutShort));
        assert_eq!(err(sll), Some(Skip::NotEthernet));
        assert_eq!(err(rec(bad)), Some(Skip::BadHeader));
        assert_eq!(err(rec(udp(100, true))), Some(Skip::OtherFamily));
        assert_eq!(err(rec(udp(1515, false))), Some(Skip::TooBig));
        assert_eq!(err(rec(vec![0; 10])), Some(Skip::BadHeader));
    }

    #[test]
    fn a_fragment_keeps_its_l4_bytes() {
        let mut f = udp(200, false);
        f[20..22].copy_from_slice(&0x2000u16.to_be_bytes()); // more fragments
        let c = f[40..42].to_vec();
        let g = rewrite(&rec(f), &target(false)).unwrap();
        assert!(!g.marked);
        assert_eq!(g.tpl.frame[40..42], c[..]);
        assert_eq!(fold(sum16(&g.tpl.frame[14..34])), 0);
    }

    #[test]
    fn the_sequence_counts_marked_frames_and_loops() {
        let recs = vec![
            rec(udp(100, false)),
            rec(tcp4(40)),
            rec(udp(300, false)),
            rec(udp(100, true)),
        ];
        let r = Replay::new(&recs, &target(false));
        assert_eq!((r.frames.len(), r.skipped_total()), (3, 1));
        assert_eq!(r.skipped_words(), "1 other_family");
        let marked: Vec<u64> = (0..7)
            .filter(|&p| r.frames[(p % 3) as usize].marked)
            .map(|p| r.seq(p))
            .collect();
        assert_eq!(marked, [0, 1, 2, 3, 4]);
        let s = r.sent(7);
        assert_eq!(s.per[&100], [3, 3]);
        assert_eq!(s.per[&94], [2, 0]);
        assert_eq!(s.per[&300], [2, 2]);
        assert_eq!((s.total(0), s.total(1)), (7, 5));
        assert_eq!(s.bytes(1), 3 * 100 + 2 * 300);
        assert_eq!(marked_sizes(&recs), [100, 300]);
    }

    #[test]
    fn a_file_with_no_usable_frame_is_refused_in_one_line() {
        let dir = std::env::temp_dir().join(format!("na-pcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("arp.pcap");
        let mut arp = udp(64, false);
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        std::fs::write(
            &p,
            crate::pcap::tests::libpcap_file(&[(0, &arp)], false, false),
        )
        .unwrap();
        let e = Replay::load(p.to_str().unwrap(), &target(false))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("none of its 1 frames can be sent (1 not_ip)"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        let e = Replay::load("/nonexistent/x.pcap", &target(false))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.starts_with("--pcap /nonexistent/x.pcap: cannot read it"),
            "{e}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn kept_gaps_are_scaled_and_loop_one_mean_gap_on() {
        let g = Gaps::new(&[1000, 1000 + 10_000, 1000 + 40_000], 2.0).unwrap();
        let c = &g;
        let offs: Vec<u64> = (0..7).map(|k| c.off(k)).collect();
        // 0, 5 us, 20 us, then the loop again 10 us (the mean gap) later
        assert_eq!(offs, [0, 5_000, 20_000, 30_000, 35_000, 50_000, 60_000]);
        assert_eq!(g.planned(30_000), 3);
        assert_eq!(g.planned(30_001), 4);
        assert!((g.mean_rate() - 100_000.0).abs() < 1e-6);
        assert!((g.rate_between(0, 3) - 100_000.0).abs() < 1e-6);
        // times that go back count as the latest before them
        let g = Gaps::new(&[0, 10, 5, 20], 1.0).unwrap();
        assert_eq!((&g).off(2), 10);
        assert_eq!(
            Gaps::new(&[7, 7], 1.0).unwrap_err(),
            SendUsage::PcapNoGaps(2)
        );
    }

    #[test]
    fn the_tcpdump_capture_replays_its_ip_frames() {
        let recs = crate::pcap::parse(include_bytes!("../tests/data/tcpdump-us.pcap")).unwrap();
        for v6 in [false, true] {
            let r = Replay::new(&recs, &target(v6));
            assert!(r.skipped[0] == 0 && r.skipped[1] > 0, "ARP is not IP");
            assert!(
                r.frames.iter().all(|f| checksums_hold(&f.tpl.frame)),
                "v6 {v6}"
            );
            // netassay-gen's own UDP frames (128 bytes v4, 200 bytes v6) are marked
            let want = if v6 { 200 } else { 128 };
            assert!(r
                .frames
                .iter()
                .any(|f| f.marked && f.tpl.frame.len() == want));
        }
        assert_eq!(marked_sizes(&recs), [128, 200]);
    }
}

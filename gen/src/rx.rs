//! Receive mode: count netassay-gen packets by flow and sequence from an AF_PACKET
//! TPACKET_V3 ring (whole blocks per wake-up, no per-packet system call).

use crate::json::J;
use crate::pace::{self, Hist};
use crate::packet;
use crate::sys;
use std::io;

const PACKET_RX_RING: i32 = 5;
const PACKET_VERSION: i32 = 10;
const TPACKET_V3: i32 = 2;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_KERNEL: u32 = 0;
const PACKET_OUTGOING: u8 = 4;

#[repr(C)]
struct Req3 {
    block_size: u32,
    block_nr: u32,
    frame_size: u32,
    frame_nr: u32,
    retire_blk_tov: u32,
    sizeof_priv: u32,
    feature_req_word: u32,
}

/// Sequences above this are counted but not tracked for duplicates (memory bound).
const MAX_TRACKED_SEQ: u64 = 1 << 30;

#[derive(Default, Clone)]
pub struct Flow {
    pub received: u64,
    pub unique: u64,
    pub duplicated: u64,
    pub reordered: u64,
    pub max_seq: Option<u64>,
    bits: Vec<u64>,
}

impl Flow {
    /// Count one packet with sequence `seq`; returns false when it is a duplicate.
    pub fn add(&mut self, seq: u64) -> bool {
        self.received += 1;
        if seq < MAX_TRACKED_SEQ {
            let w = (seq >> 6) as usize;
            if w >= self.bits.len() {
                // small to start with: a million flows of few packets each stay small
                let n = (w + 1).max(self.bits.len() * 2).max(4);
                self.bits.resize(n, 0);
            }
            let m = 1u64 << (seq & 63);
            if self.bits[w] & m != 0 {
                self.duplicated += 1;
                return false;
            }
            self.bits[w] |= m;
        }
        self.unique += 1;
        match self.max_seq {
            Some(mx) if seq < mx => self.reordered += 1,
            Some(mx) if seq == mx => {}
            _ => self.max_seq = Some(seq),
        }
        true
    }

    /// Lost by sequence gaps: every sequence up to the highest seen, minus the unique
    /// ones received. With `expected` (this flow's planned count) tail loss counts too.
    pub fn lost(&self, expected: Option<u64>) -> u64 {
        let span = match (self.max_seq, expected) {
            (_, Some(e)) => e,
            (Some(m), None) => m.saturating_add(1),
            (None, None) => 0,
        };
        span.saturating_sub(self.unique)
    }
}

/// One reporting interval: packets and UDP payload bytes that arrived in it, unique
/// packets, and the sequence span (sum over flows of highest sequence + 1) when it ended.
#[derive(Default, Clone)]
pub struct Bin {
    pub packets: u64,
    pub bytes: u64,
    pub unique: u64,
    pub span_end: u64,
}

/// Per-interval counts from the first arrival (``--interval``).
#[derive(Default)]
pub struct Bins {
    pub width_ns: u64,
    pub rows: Vec<Bin>,
}

impl Bins {
    /// Count one packet arriving ``since_first`` ns after the first one.
    fn add(&mut self, since_first: u64, bytes: u64, unique: bool, span: u64) {
        let i = (since_first / self.width_ns) as usize;
        if i >= self.rows.len() {
            let last = self.rows.last().map_or(0, |b| b.span_end);
            self.rows.resize(
                i + 1,
                Bin {
                    span_end: last,
                    ..Default::default()
                },
            );
        }
        let b = &mut self.rows[i];
        b.packets += 1;
        b.bytes += bytes;
        b.unique += u64::from(unique);
        b.span_end = span;
    }

    /// The intervals as JSON: lost in an interval = the growth of the sequence span in
    /// it minus the unique packets that arrived in it (iperf3's rule; negative when late
    /// packets of an earlier interval arrive). The last interval ends at the last arrival.
    pub fn to_json(&self, last_since_first: u64) -> J {
        let w = self.width_ns as f64 / 1e9;
        let mut prev = 0u64;
        let n = self.rows.len();
        let rows = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let lost = (i128::from(b.span_end) - i128::from(prev) - i128::from(b.unique))
                    .clamp(i128::from(i64::MIN), i128::from(i64::MAX))
                    as i64;
                prev = b.span_end;
                let end = if i + 1 == n {
                    (last_since_first as f64 / 1e9).max(i as f64 * w)
                } else {
                    (i + 1) as f64 * w
                };
                J::obj(vec![
                    ("start_s", J::F(i as f64 * w)),
                    ("end_s", J::F(end)),
                    ("packets", J::U(b.packets)),
                    ("bytes", J::U(b.bytes)),
                    ("lost", J::I(lost)),
                ])
            })
            .collect();
        J::Arr(rows)
    }
}

/// UDP payload bytes of an IPv4 or IPv6 UDP frame (from the UDP length field).
pub(crate) fn udp_payload_len(f: &[u8]) -> u64 {
    let mut off = 12;
    if f.len() > 14 && u16::from_be_bytes([f[12], f[13]]) == 0x8100 {
        off += 4;
    }
    if f.len() < off + 2 {
        return 0;
    }
    let ip = off + 2;
    let udp = match u16::from_be_bytes([f[off], f[off + 1]]) {
        0x0800 if f.len() > ip => ip + ((f[ip] & 0x0f) as usize) * 4,
        0x86dd => ip + 40,
        _ => return 0,
    };
    if f.len() < udp + 6 {
        return 0;
    }
    u64::from(u16::from_be_bytes([f[udp + 4], f[udp + 5]])).saturating_sub(8)
}

#[derive(Default)]
pub struct Counts {
    pub bins: Option<Bins>,
    pub span: u64,
    pub flows: Vec<Flow>,
    pub other: u64,
    /// Test frames whose IPv4 header or UDP checksum does not verify, and the frames
    /// whose checksums could be checked (captured whole).
    pub checksum_errors: u64,
    pub checksums_checked: u64,
    /// Check every test frame's checksums (`--verify`).
    pub verify: bool,
    pub latency: Hist,
    pub latency_negative: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    /// Arrival times of every UDP frame (any sender), kept with --schedule-rate.
    pub arrivals: Option<Vec<u64>>,
}

/// Most arrivals kept for the schedule analysis (8 bytes each).
const MAX_ARRIVALS: usize = 100_000_000;

/// True for an untagged IPv4 or IPv6 UDP frame.
#[inline]
pub(crate) fn is_udp(f: &[u8]) -> bool {
    f.len() > 24
        && match u16::from_be_bytes([f[12], f[13]]) {
            0x0800 => f[23] == 17,
            0x86dd => f[20] == 17,
            _ => false,
        }
}

/// Lateness of arrivals against an ideal schedule at `rate` anchored so that the
/// earliest packet is on time: l_k = a_k - k/rate - min_j(a_j - j/rate).
pub fn schedule_stats(arr: &[u64], rate: f64) -> J {
    if arr.len() < 2 {
        return J::Null;
    }
    let off: Vec<i128> = arr
        .iter()
        .enumerate()
        .map(|(k, &a)| a as i128 - pace::offset_ns(k as u64, rate) as i128)
        .collect();
    let min = *off.iter().min().unwrap();
    let mut h = Hist::new();
    for o in &off {
        h.add((o - min) as u64);
    }
    let span = arr[arr.len() - 1].saturating_sub(arr[0]) as f64 / 1e9;
    J::obj(vec![
        ("frames", J::U(arr.len() as u64)),
        ("requested_pps", J::F(rate)),
        ("rate_pps", J::F((arr.len() - 1) as f64 / span)),
        ("lateness_p50_ns", J::U(h.quantile(0.5))),
        ("lateness_p99_ns", J::U(h.quantile(0.99))),
        ("lateness_max_ns", J::U(h.max)),
    ])
}

impl Counts {
    pub fn new() -> Counts {
        Counts {
            latency: Hist::new(),
            ..Default::default()
        }
    }

    #[cfg(test)]
    pub fn add(&mut self, p: &packet::Parsed, rx_mono: u64) {
        self.add_sized(p, rx_mono, 0);
    }

    /// Count one packet of ``bytes`` UDP payload bytes (for the intervals).
    #[inline]
    pub fn add_sized(&mut self, p: &packet::Parsed, rx_mono: u64, bytes: u64) {
        let f = p.flow as usize;
        if f >= self.flows.len() {
            self.flows.resize(f + 1, Flow::default());
        }
        // a sequence number near 2^64 (a foreign frame with the magic) saturates
        let before = self.flows[f].max_seq.map_or(0, |m| m.saturating_add(1));
        let unique = self.flows[f].add(p.seq);
        if unique {
            if rx_mono >= p.ts {
                self.latency.add(rx_mono - p.ts);
            } else {
                self.latency_negative += 1;
            }
        }
        let after = self.flows[f].max_seq.map_or(0, |m| m.saturating_add(1));
        self.span = self.span.saturating_add(after - before);
        if self.first_ns == 0 {
            self.first_ns = rx_mono;
        }
        self.last_ns = rx_mono;
        let (span, since) = (self.span, rx_mono.saturating_sub(self.first_ns));
        if let Some(b) = self.bins.as_mut() {
            b.add(since, bytes, unique, span);
        }
    }

    /// The JSON result. `expect`: total packets the sender planned (for tail loss).
    /// Each flow has a row up to `MAX_LISTED_FLOWS` flows; `flow_summary` sums them up.
    pub fn to_json(&self, expect: Option<u64>, nflows: Option<u64>, extra: Vec<(&str, J)>) -> J {
        let nf = nflows
            .unwrap_or(self.flows.len() as u64)
            .max(self.flows.len() as u64);
        let listed = nf <= MAX_LISTED_FLOWS;
        let mut flows = Vec::new();
        let (mut rec, mut lost, mut dup, mut reo) = (0u64, 0u64, 0u64, 0u64);
        let mut sum = FlowSummary::default();
        let empty = Flow::default();
        for i in 0..nf {
            let f = self.flows.get(i as usize).unwrap_or(&empty);
            let e = expect.map(|n| n / nf + u64::from(i < n % nf));
            let l = f.lost(e);
            rec += f.received;
            lost = lost.saturating_add(l); // gaps up to a sequence near 2^64 saturate
            dup += f.duplicated;
            reo += f.reordered;
            sum.add(f, l);
            if !listed {
                continue;
            }
            flows.push(J::obj(vec![
                ("flow", J::U(i)),
                ("received", J::U(f.received)),
                ("lost", J::U(l)),
                ("reordered", J::U(f.reordered)),
                ("duplicated", J::U(f.duplicated)),
                ("max_seq", f.max_seq.map_or(J::Null, J::U)),
            ]));
        }
        let h = &self.latency;
        let latency = if h.n == 0 {
            J::Null
        } else {
            J::obj(vec![
                ("min", J::U(h.min)),
                ("p50", J::U(h.quantile(0.5))),
                ("p90", J::U(h.quantile(0.9))),
                ("p99", J::U(h.quantile(0.99))),
                ("p999", J::U(h.quantile(0.999))),
                ("max", J::U(h.max)),
                ("mean", J::F(h.mean())),
                ("samples", J::U(h.n)),
            ])
        };
        let mut v = vec![
            ("mode", J::S("receive".into())),
            ("received", J::U(rec)),
            ("unique", J::U(rec - dup)),
            ("lost", J::U(lost)),
            ("reordered", J::U(reo)),
            ("duplicated", J::U(dup)),
            ("expected", expect.map_or(J::Null, J::U)),
            ("other_frames", J::U(self.other)),
            ("checksum_errors", J::U(self.checksum_errors)),
            ("checksums_checked", J::U(self.checksums_checked)),
            ("first_rx_ns", J::U(self.first_ns)),
            ("last_rx_ns", J::U(self.last_ns)),
            ("latency_ns", latency),
            ("latency_negative", J::U(self.latency_negative)),
            ("flows", J::Arr(flows)),
            ("flows_listed", J::B(listed)),
            ("flow_summary", sum.json(nf)),
        ];
        if let Some(b) = &self.bins {
            v.push((
                "intervals",
                b.to_json(self.last_ns.saturating_sub(self.first_ns)),
            ));
        }
        v.extend(extra);
        J::obj(v)
    }
}

/// Flows listed one by one in the result; above, `flow_summary` alone.
const MAX_LISTED_FLOWS: u64 = 65536;

/// What the flows received, summed up: how many had any packet, lost one, were
/// reordered, and the fewest and most packets a flow received.
#[derive(Default)]
struct FlowSummary {
    seen: u64,
    lossy: u64,
    reordered: u64,
    min: Option<u64>,
    max: u64,
}

impl FlowSummary {
    fn add(&mut self, f: &Flow, lost: u64) {
        self.seen += u64::from(f.received > 0);
        self.lossy += u64::from(lost > 0);
        self.reordered += u64::from(f.reordered > 0);
        self.min = Some(self.min.map_or(f.received, |m| m.min(f.received)));
        self.max = self.max.max(f.received);
    }

    fn json(&self, flows: u64) -> J {
        J::obj(vec![
            ("flows", J::U(flows)),
            ("seen", J::U(self.seen)),
            ("with_loss", J::U(self.lossy)),
            ("reordered", J::U(self.reordered)),
            ("min_received", J::U(self.min.unwrap_or(0))),
            ("max_received", J::U(self.max)),
        ])
    }
}

pub struct RxCfg {
    pub ifindex: u32,
    pub schedule_rate: Option<f64>,
    pub duration_ns: Option<u64>,
    pub idle_ns: Option<u64>,
    pub block_size: u32,
    pub block_nr: u32,
    pub interval_ns: Option<u64>,
    pub verify: bool,
}

pub struct RxOut {
    pub counts: Counts,
    pub ring_drops: u64,
    pub stopped_by_signal: bool,
    pub stop_reason: &'static str,
}

/// Tiny classic BPF filter: accept every frame but copy only its first 128 bytes.
fn set_snap_filter(fd: i32) -> io::Result<()> {
    let ins = [libc::sock_filter {
        code: 0x06, // BPF_RET | BPF_K
        jt: 0,
        jf: 0,
        k: 128,
    }];
    let prog = libc::sock_fprog {
        len: 1,
        filter: ins.as_ptr() as *mut libc::sock_filter,
    };
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            &prog as *const libc::sock_fprog as *const libc::c_void,
            std::mem::size_of::<libc::sock_fprog>() as u32,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[inline(always)]
unsafe fn rd32(p: *const u8, off: usize) -> u32 {
    std::ptr::read_unaligned(p.add(off) as *const u32)
}

/// Walk one retired block; returns the number of frames in it.
unsafe fn walk_block(b: *const u8, rt_off: i64, c: &mut Counts) -> u32 {
    let n = rd32(b, 12);
    let mut p = b.add(rd32(b, 16) as usize);
    for _ in 0..n {
        let sec = rd32(p, 4) as i64;
        let nsec = rd32(p, 8) as i64;
        let snap = rd32(p, 12) as usize;
        let mac = std::ptr::read_unaligned(p.add(24) as *const u16) as usize;
        let pkttype = *p.add(58);
        let frame = std::slice::from_raw_parts(p.add(mac), snap);
        if pkttype != PACKET_OUTGOING {
            match packet::parse(frame) {
                Some(pp) => {
                    if c.verify {
                        if let Some(ok) = packet::checksums_ok(frame) {
                            c.checksums_checked += 1;
                            c.checksum_errors += u64::from(!ok);
                        }
                    }
                    let rx = (sec * 1_000_000_000 + nsec - rt_off).max(0) as u64;
                    let bytes = if c.bins.is_some() {
                        udp_payload_len(frame)
                    } else {
                        0
                    };
                    c.add_sized(&pp, rx, bytes);
                }
                None => c.other += 1,
            }
            if let Some(a) = c.arrivals.as_mut() {
                if a.len() < MAX_ARRIVALS && is_udp(frame) {
                    a.push((sec * 1_000_000_000 + nsec - rt_off).max(0) as u64);
                }
            }
        }
        p = p.add(rd32(p, 0) as usize);
    }
    n
}

pub fn open(cfg: &RxCfg) -> io::Result<(i32, *mut u8, usize)> {
    let fd = sys::packet_socket(0)?;
    sys::setsockopt_int(fd, libc::SOL_PACKET, PACKET_VERSION, TPACKET_V3)?;
    let _ = sys::setsockopt_int(fd, libc::SOL_PACKET, sys::PACKET_IGNORE_OUTGOING, 1);
    set_snap_filter(fd)?;
    let req = Req3 {
        block_size: cfg.block_size,
        block_nr: cfg.block_nr,
        frame_size: 2048,
        frame_nr: cfg.block_size / 2048 * cfg.block_nr,
        retire_blk_tov: 5,
        sizeof_priv: 0,
        feature_req_word: 0,
    };
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_PACKET,
            PACKET_RX_RING,
            &req as *const Req3 as *const libc::c_void,
            std::mem::size_of::<Req3>() as u32,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let len = (cfg.block_size as usize) * (cfg.block_nr as usize);
    // MAP_LOCKED can fail under a low memlock limit; the ring works without it.
    let map = sys::mmap_shared(fd, len, libc::MAP_LOCKED | libc::MAP_POPULATE)
        .or_else(|_| sys::mmap_shared(fd, len, libc::MAP_POPULATE))?;
    sys::bind_packet(fd, cfg.ifindex, libc::ETH_P_ALL as u16)?;
    let _ = sys::packet_drops(fd); // reset the counters
    Ok((fd, map, len))
}

pub fn run(cfg: &RxCfg, fd: i32, map: *mut u8) -> RxOut {
    let mut c = Counts::new();
    c.verify = cfg.verify;
    if let Some(w) = cfg.interval_ns {
        c.bins = Some(Bins {
            width_ns: w,
            rows: Vec::new(),
        });
    }
    if cfg.schedule_rate.is_some() {
        c.arrivals = Some(Vec::with_capacity(1 << 20));
    }
    // CLOCK_REALTIME (ring timestamps) minus CLOCK_MONOTONIC (sender's stamps).
    let rt_off = {
        let a = pace::now();
        let r = pace::clock_ns(libc::CLOCK_REALTIME);
        let b = pace::now();
        r as i64 - ((a + b) / 2) as i64
    };
    let start = pace::now();
    let mut cur = 0usize;
    let mut last_pkt = 0u64;
    let mut reason = "";
    let mut stopped_by_signal = false;
    let mut draining = 0u64;
    let mut empty_wakeups = 0u32;
    loop {
        let mut got = 0u32;
        loop {
            let b = unsafe { map.add(cur * cfg.block_size as usize) };
            let st = unsafe { std::ptr::read_volatile(b.add(8) as *const u32) };
            if st & TP_STATUS_USER == 0 {
                break;
            }
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            got += unsafe { walk_block(b, rt_off, &mut c) };
            std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
            unsafe { std::ptr::write_volatile(b.add(8) as *mut u32, TP_STATUS_KERNEL) };
            cur = (cur + 1) % cfg.block_nr as usize;
        }
        let n = pace::now();
        if got > 0 && c.last_ns != 0 {
            last_pkt = n;
        }
        if draining != 0 {
            // After a stop, wait for the kernel to retire the partly filled block.
            if n >= draining {
                break;
            }
        } else {
            if pace::stopped() {
                stopped_by_signal = true;
                reason = "signal";
            } else if cfg.duration_ns.is_some_and(|d| n - start >= d) {
                reason = "duration";
            } else if let Some(idle) = cfg.idle_ns {
                if last_pkt != 0 && n - last_pkt >= idle {
                    reason = "idle";
                }
            }
            if !reason.is_empty() {
                draining = n + 30_000_000;
            }
        }
        if got == 0 {
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN | libc::POLLERR,
                revents: 0,
            };
            let wait = if draining != 0 { 5 } else { 50 };
            let r = unsafe { libc::poll(&mut pfd, 1, wait) };
            // A TPACKET_V3 ring reports readable while its current block is still
            // filling: without a pause the loop would spin on a busy link. The ring
            // holds far more than a millisecond of traffic, and a block is handed over
            // within retire_blk_tov (5 ms) anyway.
            if r > 0 && empty_wakeups > 0 {
                std::thread::sleep(std::time::Duration::from_micros(500));
            }
            empty_wakeups += 1;
        } else {
            empty_wakeups = 0;
        }
    }
    RxOut {
        ring_drops: sys::packet_drops(fd),
        counts: c,
        stopped_by_signal,
        stop_reason: reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_counts_loss_reorder_duplicates() {
        let mut f = Flow::default();
        for s in [0u64, 1, 2, 4, 3, 3, 7, 5] {
            f.add(s);
        }
        assert_eq!(f.received, 8);
        assert_eq!(f.duplicated, 1);
        assert_eq!(f.reordered, 2); // 3 after 4, 5 after 7
        assert_eq!(f.max_seq, Some(7));
        assert_eq!(f.unique, 7);
        assert_eq!(f.lost(None), 1); // 6 is missing from 0..=7
        assert_eq!(f.lost(Some(10)), 3); // and the tail 8, 9
    }

    #[test]
    fn intervals_count_loss_by_sequence_span() {
        let mut c = Counts::new();
        c.bins = Some(Bins {
            width_ns: 1_000,
            rows: Vec::new(),
        });
        // interval 0: seq 0, 1, 3 (2 missing); interval 1: seq 2 (late), 4, 5;
        // interval 3: seq 9 (6, 7, 8 missing; interval 2 empty)
        for (seq, t) in [
            (0u64, 100u64),
            (1, 200),
            (3, 300),
            (2, 1_100),
            (4, 1_200),
            (5, 1_300),
            (9, 3_500),
        ] {
            let pp = packet::Parsed {
                flow: 0,
                seq,
                ts: 0,
            };
            c.add_sized(&pp, t, 100);
        }
        let j = c.to_json(None, None, vec![]).to_string();
        assert!(j.contains("\"lost\":3,"), "{j}");
        let iv = c.bins.as_ref().unwrap().to_json(3_400).to_string();
        // 0: span 4, unique 3 -> 1; 1: span 6, unique 3 -> -1; 2: 0; 3: span 10, 1 -> 3
        assert!(
            iv.contains("\"packets\":3,\"bytes\":300,\"lost\":1}"),
            "{iv}"
        );
        assert!(iv.contains("\"lost\":-1}"), "{iv}");
        assert!(iv.contains("\"packets\":0,\"bytes\":0,\"lost\":0}"), "{iv}");
        assert!(
            iv.contains("\"packets\":1,\"bytes\":100,\"lost\":3}"),
            "{iv}"
        );
    }

    #[test]
    fn udp_payload_from_the_length_field() {
        let mut f = vec![0u8; 64];
        f[12] = 0x08;
        f[14] = 0x45;
        f[14 + 20 + 4] = 0x05;
        f[14 + 20 + 5] = 0xdc; // UDP length 1500
        assert_eq!(udp_payload_len(&f), 1492);
    }

    #[test]
    fn schedule_lateness_against_requested_rate() {
        // 1 Mpps schedule; packet 2 arrives 3 us late, the rest on time, all shifted.
        let arr = [5_000u64, 6_000, 10_000, 8_000];
        let j = schedule_stats(&arr, 1e6).to_string();
        assert!(j.contains("\"lateness_max_ns\":3000"), "{j}");
        assert!(j.contains("\"lateness_p50_ns\":0"), "{j}");
        assert!(j.contains("\"rate_pps\":1000000.0"), "{j}");
    }

    #[test]
    fn counts_split_expected_over_flows() {
        let mut c = Counts::new();
        // 10 packets over 3 flows: flows get 4, 3, 3; drop global packet 9 (flow 0 seq 3).
        for p in 0..9u64 {
            let pp = packet::Parsed {
                flow: (p % 3) as u32,
                seq: p / 3,
                ts: 100,
            };
            c.add(&pp, 150);
        }
        let j = c.to_json(Some(10), Some(3), vec![]).to_string();
        assert!(j.contains("\"received\":9"), "{j}");
        assert!(j.contains("\"lost\":1,"), "{j}");
        assert!(j.contains("\"p50\":50"), "{j}");
        let j = c.to_json(None, None, vec![]).to_string();
        assert!(j.contains("\"lost\":0,"), "{j}");
    }
}

//! Transmit techniques and the paced send loop.

use crate::flows::Plan;
use crate::pace::{self, Hist};
use crate::packet::Template;
use crate::sys;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

/// A way to hand frames to the kernel. Slots 0..batch hold template copies; the loop
/// stamps them and asks for `n` of them (from `from`) to be sent.
pub trait Tx {
    fn name(&self) -> &'static str;
    /// True when the technique writes flow, sequence and time itself.
    fn stamps_itself(&self) -> bool {
        false
    }
    /// After the first call: did the `n` frames really leave? (default: trust it)
    fn delivered(&mut self, _n: usize) -> bool {
        true
    }
    fn slot(&mut self, i: usize) -> &mut [u8];
    /// Slot i holding a copy of `frame`, a frame of a mix. sendmmsg and none take any
    /// length up to their slots' (opened with the mix's largest frame); the others
    /// only the template's length (send refuses --imix with them).
    fn load(&mut self, i: usize, frame: &[u8]) -> &mut [u8] {
        let s = self.slot(i);
        s.copy_from_slice(frame);
        s
    }
    /// Send slots from..from+n; returns how many the kernel accepted (>= 1) or an error.
    fn send(&mut self, from: usize, n: usize) -> io::Result<usize>;
}

/// AF_PACKET raw socket, sendmmsg batches, PACKET_QDISC_BYPASS unless `qdisc`.
pub struct Mmsg {
    fd: OwnedFd,
    bufs: Vec<Vec<u8>>,
    iov: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
}

impl Mmsg {
    pub fn open(ifindex: u32, t: &Template, batch: usize, qdisc: bool) -> io::Result<Mmsg> {
        let mut m = Mmsg {
            fd: sys::packet_socket(0)?,
            bufs: (0..batch).map(|_| t.frame.clone()).collect(),
            iov: Vec::with_capacity(batch),
            msgs: Vec::with_capacity(batch),
        };
        let fd = m.fd.as_fd();
        // Bypass the qdisc unless asked: the frame goes straight to the driver's xmit.
        if !qdisc {
            sys::setsockopt_int(fd, libc::SOL_PACKET, sys::PACKET_QDISC_BYPASS, 1)?;
        }
        let _ = sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, 4 << 20);
        sys::bind_packet(fd, ifindex, 0)?;
        for b in m.bufs.iter_mut() {
            m.iov.push(libc::iovec {
                iov_base: b.as_mut_ptr() as *mut libc::c_void,
                iov_len: b.len(),
            });
        }
        for i in 0..batch {
            // SAFETY: mmsghdr is plain C data (null pointers, zero lengths when zeroed).
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_iov = &mut m.iov[i] as *mut libc::iovec;
            h.msg_hdr.msg_iovlen = 1;
            m.msgs.push(h);
        }
        Ok(m)
    }
}

impl Tx for Mmsg {
    fn name(&self) -> &'static str {
        "af_packet_sendmmsg"
    }
    fn slot(&mut self, i: usize) -> &mut [u8] {
        &mut self.bufs[i]
    }
    fn load(&mut self, i: usize, frame: &[u8]) -> &mut [u8] {
        self.iov[i].iov_len = frame.len();
        let s = &mut self.bufs[i][..frame.len()];
        s.copy_from_slice(frame);
        s
    }
    fn send(&mut self, from: usize, n: usize) -> io::Result<usize> {
        let fd = self.fd.as_raw_fd();
        // SAFETY: the caller sends slots it filled, from + n <= the batch (the Tx
        // contract); each header points at its own iovec and buffer, owned by `self`
        // and never reallocated after `open`.
        let r = unsafe { libc::sendmmsg(fd, self.msgs.as_mut_ptr().add(from), n as u32, 0) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as usize)
        }
    }
}

/// No sending at all: the loop paces and stamps as usual, then hands the frames to no
/// one. Its lateness is what this CPU alone (other work, interrupts, the hypervisor)
/// costs the schedule: the floor under every real technique's lateness here.
pub struct Dry {
    bufs: Vec<Vec<u8>>,
}

impl Dry {
    pub fn new(t: &Template, batch: usize) -> Dry {
        Dry {
            bufs: (0..batch.max(1)).map(|_| t.frame.clone()).collect(),
        }
    }
}

impl Tx for Dry {
    fn name(&self) -> &'static str {
        "pacing_only"
    }
    fn slot(&mut self, i: usize) -> &mut [u8] {
        &mut self.bufs[i]
    }
    fn load(&mut self, i: usize, frame: &[u8]) -> &mut [u8] {
        let s = &mut self.bufs[i][..frame.len()];
        s.copy_from_slice(frame);
        s
    }
    fn send(&mut self, _from: usize, n: usize) -> io::Result<usize> {
        Ok(n)
    }
}

const PACKET_VERSION: i32 = 10;
const PACKET_TX_RING: i32 = 13;
const TPACKET_V2: i32 = 1;
const TP_STATUS_AVAILABLE: u32 = 0;
const TP_STATUS_SEND_REQUEST: u32 = 1;
const TP_STATUS_WRONG_FORMAT: u32 = 4;
/// TPACKET_V2 TX frames carry data right after the 32-byte header.
const TX_DATA_OFF: usize = 32;
const TX_FRAME: usize = 2048;
const TX_FRAMES: usize = 2048;

/// AF_PACKET TPACKET_V2 TX_RING, PACKET_QDISC_BYPASS unless `qdisc`: frames are written into a
/// shared ring (the template once, then only the stamped fields) and flushed with one
/// send() per batch. A frame the kernel refused stays SEND_REQUEST and is retried.
pub struct TxRing {
    fd: OwnedFd,
    map: *mut u8,
    len: usize,
    head: usize,
    frame_len: u32,
}

impl TxRing {
    pub fn open(ifindex: u32, t: &Template, qdisc: bool) -> io::Result<TxRing> {
        let sock = sys::packet_socket(0)?;
        let fd = sock.as_fd();
        sys::setsockopt_int(fd, libc::SOL_PACKET, PACKET_VERSION, TPACKET_V2)?;
        if !qdisc {
            sys::setsockopt_int(fd, libc::SOL_PACKET, sys::PACKET_QDISC_BYPASS, 1)?;
        }
        let block = 1usize << 16;
        let req: [u32; 4] = [
            block as u32,
            (TX_FRAMES * TX_FRAME / block) as u32,
            TX_FRAME as u32,
            TX_FRAMES as u32,
        ];
        // SAFETY: the ring request is the live local `req`, 16 bytes as given.
        let r = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                PACKET_TX_RING,
                req.as_ptr() as *const libc::c_void,
                16,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let len = TX_FRAMES * TX_FRAME;
        let map = sys::mmap_shared(fd, len, libc::MAP_POPULATE)?;
        for i in 0..TX_FRAMES {
            // SAFETY: frame i of the TX_FRAMES * TX_FRAME bytes just mapped; no frame is
            // queued yet, so the kernel does not read it while it is written.
            let f = unsafe { std::slice::from_raw_parts_mut(map.add(i * TX_FRAME), TX_FRAME) };
            f[TX_DATA_OFF..TX_DATA_OFF + t.frame.len()].copy_from_slice(&t.frame);
        }
        sys::bind_packet(fd, ifindex, 0)?;
        Ok(TxRing {
            fd: sock,
            map,
            len,
            head: 0,
            frame_len: t.frame.len() as u32,
        })
    }

    #[inline(always)]
    fn hdr(&self, i: usize) -> *mut u32 {
        // SAFETY: the index is taken modulo TX_FRAMES: the start of a frame inside the
        // mapping, 4-aligned (the mapping is page-aligned, TX_FRAME a multiple of 4).
        unsafe { self.map.add(((self.head + i) % TX_FRAMES) * TX_FRAME) as *mut u32 }
    }

    #[inline(always)]
    fn status(&self, i: usize) -> u32 {
        // SAFETY: tp_status, the first word of a frame inside the mapping (see `hdr`),
        // written by the kernel, hence volatile.
        unsafe { std::ptr::read_volatile(self.hdr(i)) }
    }
}

impl Drop for TxRing {
    fn drop(&mut self) {
        // SAFETY: the region `open` mapped, `len` bytes, unmapped once; no slice into it
        // outlives `self` (they borrow it).
        unsafe { libc::munmap(self.map as *mut libc::c_void, self.len) };
    }
}

impl Tx for TxRing {
    fn name(&self) -> &'static str {
        "af_packet_tx_ring"
    }
    fn slot(&mut self, i: usize) -> &mut [u8] {
        // The kernel hands a frame back (AVAILABLE) when its skb is freed.
        let t0 = pace::now();
        while self.status(i) & !TP_STATUS_WRONG_FORMAT != TP_STATUS_AVAILABLE {
            if pace::now() - t0 > 100_000 {
                let mut pfd = libc::pollfd {
                    fd: self.fd.as_raw_fd(),
                    events: libc::POLLOUT,
                    revents: 0,
                };
                // SAFETY: one live local pollfd, as the count says.
                unsafe { libc::poll(&mut pfd, 1, 1) };
            }
            if pace::stopped() {
                break;
            }
        }
        let p = self.hdr(i) as *mut u8;
        // SAFETY: the frame's data, TX_DATA_OFF + frame_len <= TX_FRAME bytes into a
        // frame of the mapping; the kernel is done with it (AVAILABLE) and the slice
        // borrows `self` mutably, so no other slice of it is alive.
        unsafe { std::slice::from_raw_parts_mut(p.add(TX_DATA_OFF), self.frame_len as usize) }
    }
    fn send(&mut self, from: usize, n: usize) -> io::Result<usize> {
        for i in from..from + n {
            let h = self.hdr(i);
            // SAFETY: tp_len and tp_status, the first two words of a frame inside the
            // mapping (see `hdr`); the release fence orders the frame's bytes and its
            // length before the status that hands it to the kernel.
            unsafe {
                std::ptr::write_volatile(h.add(1), self.frame_len); // tp_len
                std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
                std::ptr::write_volatile(h, TP_STATUS_SEND_REQUEST);
            }
        }
        // SAFETY: no buffer and no address: the call only flushes the ring.
        let r = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        let err = io::Error::last_os_error();
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        let mut done = 0;
        while done < n && self.status(from + done) != TP_STATUS_SEND_REQUEST {
            done += 1;
        }
        if done == 0 && r < 0 {
            return Err(err);
        }
        if done == 0 {
            return Err(io::Error::from_raw_os_error(libc::EAGAIN));
        }
        if done == n {
            // The whole batch (slots 0..from + n) is with the kernel: move on.
            self.head = (self.head + from + n) % TX_FRAMES;
        }
        Ok(done)
    }
}

#[derive(Clone)]
pub struct LoopCfg {
    /// Packets per second; None sends as fast as possible until the deadline.
    pub rate: Option<f64>,
    pub planned: u64,
    /// No send call starts this long after the schedule's start or later (None: no
    /// deadline, the run sends every planned packet).
    pub deadline_ns: Option<u64>,
    pub batch: usize,
    /// Most packets per send call (slots available), also when catching up.
    pub burst: usize,
    /// Paced XDP live frames: frames left late catch up at most this many times the
    /// rate (None: unbounded).
    pub catch_up: Option<f64>,
}

/// Why a send loop ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stop {
    /// Every planned packet was sent.
    #[default]
    Complete,
    /// The deadline came first (the normal end of a `--rate max` run).
    Deadline,
    /// SIGINT or SIGTERM.
    Signal,
}

impl Stop {
    pub fn name(self) -> &'static str {
        match self {
            Stop::Complete => "complete",
            Stop::Deadline => "deadline",
            Stop::Signal => "signal",
        }
    }
}

#[derive(Default)]
pub struct LoopOut {
    pub sent: u64,
    pub first_tx: u64,
    pub last_tx: u64,
    pub first_batch: u64,
    pub retries: u64,
    pub stop: Stop,
    pub lateness: Hist,
    /// The clock when the loop ended (CLOCK_MONOTONIC ns; 0: not known).
    pub end: u64,
    /// A paced run's longest stall: the longest time no frame left while one was due
    /// (the process stopped, or without a CPU), as (its length, when it began); the
    /// stall a deadline or a signal ended the run in counts to the loop's end. None
    /// where the loop does not measure it (unpaced, the kernel-paced XDP run).
    pub stall: Option<(u64, u64)>,
}

/// How long a send may be refused without any progress before giving up.
const STUCK_NS: u64 = 2_000_000_000;

/// Deadline offset of packet k, u64 arithmetic while it cannot overflow.
#[inline(always)]
fn off(k: u64, rate_int: u64, rate: f64) -> u64 {
    if rate_int != 0 && k < 18_000_000_000 {
        (k * 1_000_000_000 + rate_int / 2) / rate_int
    } else {
        pace::offset_ns(k, rate)
    }
}

/// When packet k of a run is due, in ns after the schedule's start.
pub trait Clock {
    fn off(&self, k: u64) -> u64;
}

/// Evenly paced at a rate (every mode but a capture's own gaps).
#[derive(Clone, Copy)]
pub struct RateClock {
    rate: f64,
    /// The rate when it is a whole number (exact u64 deadlines), else 0.
    rate_int: u64,
}

impl RateClock {
    fn of(cfg: &LoopCfg) -> RateClock {
        let rate = cfg.rate.unwrap_or(0.0);
        let whole = rate.fract() == 0.0 && (1.0..1e12).contains(&rate);
        RateClock {
            rate,
            rate_int: if whole { rate as u64 } else { 0 },
        }
    }
}

impl Clock for RateClock {
    #[inline(always)]
    fn off(&self, k: u64) -> u64 {
        off(k, self.rate_int, self.rate)
    }
}

/// The schedule of one run: packet k is due at `start + clock.off(k)`.
struct Schedule<C: Clock> {
    paced: bool,
    clock: C,
    start: u64,
    deadline_ns: Option<u64>,
    planned: u64,
    batch: u64,
    burst: u64,
}

#[cfg(test)]
impl Schedule<RateClock> {
    fn new(cfg: &LoopCfg, start: u64) -> Schedule<RateClock> {
        Schedule::with(cfg, start, RateClock::of(cfg))
    }
}

impl<C: Clock> Schedule<C> {
    fn with(cfg: &LoopCfg, start: u64, clock: C) -> Schedule<C> {
        Schedule {
            paced: cfg.rate.is_some(),
            clock,
            start,
            deadline_ns: cfg.deadline_ns,
            planned: cfg.planned,
            batch: cfg.batch as u64,
            burst: cfg.burst as u64,
        }
    }

    #[inline(always)]
    fn due(&self, k: u64) -> u64 {
        self.start + self.clock.off(k)
    }

    fn past_deadline(&self, ts: u64) -> bool {
        self.deadline_ns.is_some_and(|d| ts >= self.start + d)
    }

    /// Wait for the send call of packets k..: its time and how many packets it
    /// carries, or why the run ends instead.
    #[inline(always)]
    fn next_call(&mut self, k: u64) -> Result<(u64, usize), Stop> {
        if pace::stopped() {
            return Err(Stop::Signal);
        }
        let b = self.batch.min(self.planned - k);
        let (ts, n) = if self.paced {
            self.next_paced(k, b)?
        } else {
            let ts = if k == 0 {
                pace::wait_until(self.start)
            } else {
                pace::now()
            };
            (ts, b)
        };
        if self.past_deadline(ts) {
            return Err(Stop::Deadline);
        }
        Ok((ts, n as usize))
    }

    /// Wait until the last of `b` packets from k is due.
    fn next_paced(&mut self, k: u64, b: u64) -> Result<(u64, u64), Stop> {
        let due = self.due(k + b - 1);
        let ts = pace::wait_until(due);
        if ts < due {
            return Err(Stop::Signal);
        }
        if k == 0 {
            // The schedule starts with the first send call: a stall before it
            // must not be "caught up" in a burst (nor bias the achieved rate).
            self.start = ts - self.clock.off(b - 1);
        }
        Ok((ts, self.catch_up(k, b, ts)))
    }

    /// Behind schedule: send everything already due at `ts` in this call (up to
    /// the burst limit), so that the per-call cost is shared and the loop catches up.
    fn catch_up(&self, k: u64, mut b: u64, ts: u64) -> u64 {
        let limit = self.burst.min(self.planned - k);
        while b < limit && self.due(k + b) <= ts {
            b += 1;
        }
        b
    }
}

/// Write flow, sequence and time into slots 0..b for packets k.. (unless the
/// technique stamps its frames itself): with the run's two addresses and flows in
/// order, flow and source port only, as always; else each flow's whole tuple.
fn stamp(tx: &mut dyn Tx, t: &Template, plan: &Plan, k: u64, b: usize, ts: u64) {
    if tx.stamps_itself() {
        return;
    }
    let flows = plan.flows;
    if plan.permutation().is_none() && plan.fixed_addresses() {
        for i in 0..b {
            let p = k + i as u64;
            t.stamp(tx.slot(i), (p % flows) as u16, p / flows, ts);
        }
        return;
    }
    for i in 0..b {
        let p = k + i as u64;
        stamp_one(t, tx.slot(i), plan, p, ts);
    }
}

/// Packet p's flow, tuple, sequence and time into `buf`.
#[inline(always)]
fn stamp_one(t: &Template, buf: &mut [u8], plan: &Plan, p: u64, ts: u64) {
    let f = plan.flow_of(p);
    if plan.fixed_addresses() {
        t.stamp(buf, f as u16, p / plan.flows, ts);
    } else {
        t.stamp_tuple(buf, f, &plan.tuple(f), p / plan.flows, ts);
    }
}

/// The frames of a mix: a template per size, and the order they go in.
pub struct Mixed<'a> {
    pub templates: &'a [Template],
    pub cycle: &'a [u8],
}

/// Copy into slots 0..b the frames of packets k.. (`cycle[k % len]`) and stamp them.
fn stamp_mixed(tx: &mut dyn Tx, m: &Mixed, plan: &Plan, k: u64, b: usize, ts: u64) {
    let len = m.cycle.len() as u64;
    for i in 0..b {
        let p = k + i as u64;
        let t = &m.templates[m.cycle[(p % len) as usize] as usize];
        stamp_one(t, tx.load(i, &t.frame), plan, p, ts);
    }
}

/// Hand slots 0..b to the kernel, retrying what it refuses for want of room.
/// Returns how many it took: all of them, or fewer when a signal came.
#[inline(always)]
fn send_all(tx: &mut dyn Tx, b: usize, retries: &mut u64) -> io::Result<usize> {
    let mut done = 0usize;
    let mut stuck_since = 0u64;
    while done < b {
        let e = match tx.send(done, b - done) {
            Ok(n) => {
                done += n;
                stuck_since = 0;
                continue;
            }
            Err(e) => e,
        };
        let code = e.raw_os_error().unwrap_or(0);
        if code != libc::ENOBUFS && code != libc::EAGAIN && code != libc::EINTR {
            return Err(e);
        }
        if code != libc::EINTR {
            *retries += 1;
        }
        let n = pace::now();
        if stuck_since == 0 {
            stuck_since = n;
        } else if n - stuck_since > STUCK_NS {
            let why = format!("the kernel refused every send for 2 s ({e})");
            return Err(io::Error::new(e.kind(), why));
        }
        if pace::stopped() {
            break;
        }
    }
    Ok(done)
}

impl LoopOut {
    /// A send call (or the loop's end) at `ts`: the time since the later of the last
    /// call and the next frame's due time passed with nothing sent while a frame was
    /// due; the longest such time is the run's stall.
    fn stalled<C: Clock>(&mut self, s: &Schedule<C>, ts: u64) {
        let from = self.last_tx.max(s.due(self.sent));
        let idle = ts.saturating_sub(from);
        if self.stall.is_none_or(|(longest, _)| idle > longest) {
            self.stall = Some((idle, from));
        }
    }

    /// The first call: did its frames really leave? It also anchors the rate.
    fn first_call(&mut self, tx: &mut dyn Tx, done: usize, ts: u64) -> io::Result<()> {
        if !tx.delivered(done) {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "frames were accepted but did not leave the interface",
            ));
        }
        self.first_tx = ts;
        self.first_batch = done as u64;
        Ok(())
    }

    /// Count `done` packets sent at `ts` and how late each was.
    fn record<C: Clock>(&mut self, s: &Schedule<C>, done: usize, ts: u64) {
        if s.paced && self.sent > 0 {
            self.stalled(s, ts);
        }
        self.last_tx = ts;
        if s.paced {
            for i in 0..done {
                self.lateness
                    .add(ts.saturating_sub(s.due(self.sent + i as u64)));
            }
        }
        self.sent += done as u64;
    }
}

/// Send on the schedule until every planned packet went, the deadline passed or a
/// signal came. On error, also says how many packets had been sent.
pub fn run(
    tx: &mut dyn Tx,
    t: &Template,
    plan: &Plan,
    cfg: &LoopCfg,
) -> Result<LoopOut, (io::Error, u64)> {
    run_with(tx, cfg, |tx, k, b, ts| stamp(tx, t, plan, k, b, ts))
}

/// `run` with the frames of a mix, in its cycle's order.
pub fn run_mixed(
    tx: &mut dyn Tx,
    m: &Mixed,
    plan: &Plan,
    cfg: &LoopCfg,
) -> Result<LoopOut, (io::Error, u64)> {
    run_with(tx, cfg, |tx, k, b, ts| stamp_mixed(tx, m, plan, k, b, ts))
}

/// The loop on an even schedule at `cfg.rate`; `stamp` loads each call's frames.
pub fn run_with(
    tx: &mut dyn Tx,
    cfg: &LoopCfg,
    stamp: impl FnMut(&mut dyn Tx, u64, usize, u64),
) -> Result<LoopOut, (io::Error, u64)> {
    run_on(tx, cfg, RateClock::of(cfg), stamp)
}

/// The loop on `clock`'s schedule; `stamp` loads each call's frames.
pub fn run_on<C: Clock>(
    tx: &mut dyn Tx,
    cfg: &LoopCfg,
    clock: C,
    mut stamp: impl FnMut(&mut dyn Tx, u64, usize, u64),
) -> Result<LoopOut, (io::Error, u64)> {
    // Start a little in the future so that the first deadline is not already late.
    let mut s = Schedule::with(cfg, pace::now() + 200_000, clock);
    let mut out = LoopOut {
        lateness: Hist::new(),
        ..Default::default()
    };
    if s.paced {
        out.stall = Some((0, 0));
    }
    while out.sent < cfg.planned {
        let (ts, b) = match s.next_call(out.sent) {
            Ok(call) => call,
            Err(stop) => {
                out.stop = stop;
                break;
            }
        };
        stamp(tx, out.sent, b, ts);
        let done = send_all(tx, b, &mut out.retries).map_err(|e| (e, out.sent))?;
        if out.sent == 0 {
            out.first_call(tx, done, ts).map_err(|e| (e, 0))?;
        }
        out.record(&s, done, ts);
        if done < b {
            out.stop = Stop::Signal;
            break;
        }
    }
    out.end = pace::now();
    if s.paced && out.sent > 0 && out.sent < cfg.planned {
        // ended before every frame went (deadline, signal): a stall it ended in counts
        out.stalled(&s, out.end);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u64_offsets_match_exact_ones() {
        for rate in [1u64, 3, 7, 99_999, 100_000, 1_234_567] {
            for k in [0u64, 1, 2, 1000, 123_456_789, 17_999_999_999] {
                assert_eq!(
                    off(k, rate, rate as f64),
                    pace::offset_ns(k, rate as f64),
                    "{rate} {k}"
                );
            }
        }
    }

    fn cfg(rate: Option<f64>, planned: u64, deadline_ns: Option<u64>) -> LoopCfg {
        LoopCfg {
            rate,
            planned,
            deadline_ns,
            batch: 4,
            burst: 16,
            catch_up: None,
        }
    }

    #[test]
    fn deadline_is_relative_to_the_schedule_start() {
        let s = Schedule::new(&cfg(Some(1e6), 1000, Some(1_000_000)), 5_000);
        assert!(!s.past_deadline(1_004_999));
        assert!(s.past_deadline(1_005_000));
        let none = Schedule::new(&cfg(Some(1e6), 1000, None), 5_000);
        assert!(!none.past_deadline(u64::MAX / 2));
    }

    #[test]
    fn catch_up_sends_what_is_due_up_to_the_burst_and_the_plan() {
        // 1 Mpps from t = 0: packet k is due at k us.
        let s = Schedule::new(&cfg(Some(1e6), 1000, None), 0);
        assert_eq!(s.catch_up(0, 4, 3_000), 4); // on time: the batch only
        assert_eq!(s.catch_up(0, 4, 9_000), 10); // 9 us late: packets 0..=9 are due
        assert_eq!(s.catch_up(0, 4, 100_000), 16); // at most a burst
        assert_eq!(s.catch_up(990, 4, 100_000_000), 10); // never past the plan
    }

    fn template() -> Template {
        Template::new(&crate::packet::spec4()).unwrap()
    }

    fn flows(n: u64) -> Plan {
        let s = crate::packet::spec4();
        Plan::new(
            n,
            1,
            1,
            s.sport,
            &s.src,
            &s.dst,
            crate::flows::Order::Incremental,
        )
        .unwrap()
    }

    /// A technique that takes `per_call_ns` for every send call, whatever its size.
    struct Slow {
        dry: Dry,
        per_call_ns: u64,
        calls: u64,
    }

    impl Tx for Slow {
        fn name(&self) -> &'static str {
            "slow"
        }
        fn slot(&mut self, i: usize) -> &mut [u8] {
            self.dry.slot(i)
        }
        fn send(&mut self, from: usize, n: usize) -> io::Result<usize> {
            let t = pace::now() + self.per_call_ns;
            while pace::now() < t {}
            self.calls += 1;
            self.dry.send(from, n)
        }
    }

    fn slow(per_call_ns: u64) -> Slow {
        Slow {
            dry: Dry::new(&template(), 16),
            per_call_ns,
            calls: 0,
        }
    }

    #[test]
    fn a_run_that_cannot_keep_up_stops_at_its_deadline() {
        // 1 Mpps asked, at most 16 packets per 100 us call (0.16 Mpps): 20 ms.
        let mut tx = slow(100_000);
        let t0 = pace::now();
        let out = run(
            &mut tx,
            &template(),
            &flows(2),
            &cfg(Some(1e6), 20_000, Some(20_000_000)),
        )
        .unwrap();
        let took = pace::now() - t0;
        assert_eq!(out.stop, Stop::Deadline);
        assert!(
            out.sent < 20_000 && out.sent == out.lateness.n,
            "{}",
            out.sent
        );
        // one call may start just before the deadline and end after it
        assert!(out.last_tx < out.first_tx + 20_000_000, "{}", out.last_tx);
        // the whole plan would take 125 ms (other tests share the CPUs)
        assert!(took < 80_000_000, "{took}");
        assert_eq!(out.sent, tx.calls * 16 - 12); // the first call carries the batch
    }

    #[test]
    fn a_count_run_sends_every_packet_however_late() {
        let mut tx = slow(100_000);
        let out = run(
            &mut tx,
            &template(),
            &flows(2),
            &cfg(Some(1e6), 2_000, None),
        )
        .unwrap();
        assert_eq!((out.stop, out.sent), (Stop::Complete, 2_000));
        assert!(out.lateness.max > 1_000_000); // 2000 packets took > 12 ms, not 2
    }

    #[test]
    fn a_mix_goes_in_its_cycle_with_every_frame_its_own_length() {
        let m = crate::mix::Mix::parse("64:2,128:1").unwrap();
        let tpls: Vec<Template> = m
            .sizes
            .iter()
            .map(|&size| {
                Template::new(&crate::packet::Spec {
                    size,
                    ..crate::packet::spec4()
                })
            })
            .collect::<Result<_, _>>()
            .unwrap();
        let mixed = Mixed {
            templates: &tpls,
            cycle: &m.cycle,
        };
        let mut tx = Dry::new(&tpls[1], 16);
        stamp_mixed(&mut tx, &mixed, &flows(1), 4, 5, 9);
        // packets 4..9 of 64 128 64 | 64 128 64 | ...: 128 64 64 128 64
        let lens: Vec<usize> = (0..5).map(|i| tx.slot(i).len()).collect();
        assert_eq!(lens, [128; 5]); // the slots stay the largest frame's
        let sent: Vec<(usize, u64)> = (0..5)
            .map(|i| {
                let f = &tx.slot(i)[..];
                let n = u16::from_be_bytes([f[16], f[17]]) as usize + 14; // IPv4 length
                (n, crate::packet::parse(&f[..n]).unwrap().seq)
            })
            .collect();
        assert_eq!(sent, [(128, 4), (64, 5), (64, 6), (128, 7), (64, 8)]);
        let out = run_mixed(&mut tx, &mixed, &flows(1), &cfg(Some(1e6), 301, None)).unwrap();
        assert_eq!((out.sent, m.sent(out.sent)), (301, vec![201, 100]));
    }

    /// A technique whose first send call `after_ns` or more after its first one takes
    /// `pause_ns`: the process stopped (SIGSTOP) or without a CPU for that long.
    struct Pausing {
        dry: Dry,
        after_ns: u64,
        at: Option<u64>,
        pause_ns: u64,
        paused: bool,
    }

    impl Tx for Pausing {
        fn name(&self) -> &'static str {
            "pausing"
        }
        fn slot(&mut self, i: usize) -> &mut [u8] {
            self.dry.slot(i)
        }
        fn send(&mut self, from: usize, n: usize) -> io::Result<usize> {
            let at = *self.at.get_or_insert(pace::now() + self.after_ns);
            if !self.paused && pace::now() >= at {
                self.paused = true;
                pace::sleep_until(pace::now() + self.pause_ns);
            }
            self.dry.send(from, n)
        }
    }

    fn pausing(after_ns: u64, pause_ns: u64) -> Pausing {
        Pausing {
            dry: Dry::new(&template(), 16),
            after_ns,
            at: None,
            pause_ns,
            paused: false,
        }
    }

    #[test]
    fn a_stall_mid_run_is_its_length_and_when_it_began() {
        // 10 kpps, 1000 packets (no deadline: a busy machine's CPUs cannot cut it
        // short): the first call 20 ms in stalls 40 ms
        let mut tx = pausing(20_000_000, 40_000_000);
        let out = run(
            &mut tx,
            &template(),
            &flows(2),
            &cfg(Some(1e4), 1_000, None),
        )
        .unwrap();
        assert_eq!((out.stop, out.sent), (Stop::Complete, 1_000)); // caught up
        let (len, from) = out.stall.unwrap();
        assert!(len >= 39_000_000, "{len}"); // from the next frame's due time, 0.1 ms on
        assert!(len <= out.lateness.max, "{len} {}", out.lateness.max);
        assert!(from - out.first_tx >= 19_000_000, "{}", from - out.first_tx); // ~20 ms in
        assert!(out.end >= out.last_tx);
    }

    #[test]
    fn a_stall_the_deadline_came_in_counts_to_the_end() {
        // 10 kpps for 50 ms: the first call 20 ms in stalls 60 ms, past the deadline
        let mut tx = pausing(20_000_000, 60_000_000);
        let out = run(
            &mut tx,
            &template(),
            &flows(2),
            &cfg(Some(1e4), 500, Some(50_050_000)),
        )
        .unwrap();
        assert_eq!(out.stop, Stop::Deadline);
        assert!(out.sent < 500);
        let (len, from) = out.stall.unwrap();
        assert_eq!(out.end - from, len); // it lasted to the loop's end
        assert!(from >= out.last_tx); // from the stalled call, or the next frame's due time
        assert!(len >= 30_000_000, "{len}"); // 20 ms in, to past the 50 ms deadline
        assert!(out.end - out.first_tx >= 80_000_000); // the run really lasted that long
    }

    #[test]
    fn a_stall_is_never_longer_than_the_lateness_it_left() {
        let mut tx = Dry::new(&template(), 16);
        let out = run(
            &mut tx,
            &template(),
            &flows(2),
            &cfg(Some(1e5), 2_000, None),
        )
        .unwrap();
        assert_eq!(out.stop, Stop::Complete);
        let (len, _) = out.stall.unwrap();
        assert!(len <= out.lateness.max, "{len} {}", out.lateness.max);
        let unpaced = run(
            &mut tx,
            &template(),
            &flows(2),
            &cfg(None, u64::MAX, Some(1_000_000)),
        )
        .unwrap();
        assert!(unpaced.stall.is_none());
    }

    #[test]
    fn unpaced_runs_end_at_the_deadline_and_count_no_lateness() {
        let mut tx = slow(50_000);
        let out = run(
            &mut tx,
            &template(),
            &flows(2),
            &cfg(None, u64::MAX, Some(5_000_000)),
        )
        .unwrap();
        assert_eq!(out.stop, Stop::Deadline);
        assert_eq!(out.sent, tx.calls * 4);
        assert_eq!(out.lateness.n, 0);
    }
}

//! Transmit techniques and the paced send loop.

use crate::pace::{self, Hist};
use crate::packet::Template;
use crate::sys;
use std::io;

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
    /// Send slots from..from+n; returns how many the kernel accepted (>= 1) or an error.
    fn send(&mut self, from: usize, n: usize) -> io::Result<usize>;
}

/// AF_PACKET raw socket, sendmmsg batches, PACKET_QDISC_BYPASS unless `qdisc`.
pub struct Mmsg {
    fd: i32,
    bufs: Vec<Vec<u8>>,
    iov: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
}

impl Mmsg {
    pub fn open(ifindex: u32, t: &Template, batch: usize, qdisc: bool) -> io::Result<Mmsg> {
        let fd = sys::packet_socket(0)?;
        let mut m = Mmsg {
            fd,
            bufs: (0..batch).map(|_| t.frame.clone()).collect(),
            iov: Vec::with_capacity(batch),
            msgs: Vec::with_capacity(batch),
        };
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
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_iov = &mut m.iov[i] as *mut libc::iovec;
            h.msg_hdr.msg_iovlen = 1;
            m.msgs.push(h);
        }
        Ok(m)
    }
}

impl Drop for Mmsg {
    fn drop(&mut self) {
        unsafe { libc::close(self.fd) };
    }
}

impl Tx for Mmsg {
    fn name(&self) -> &'static str {
        "af_packet_sendmmsg"
    }
    fn slot(&mut self, i: usize) -> &mut [u8] {
        &mut self.bufs[i]
    }
    fn send(&mut self, from: usize, n: usize) -> io::Result<usize> {
        let r = unsafe { libc::sendmmsg(self.fd, self.msgs.as_mut_ptr().add(from), n as u32, 0) };
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
    fd: i32,
    map: *mut u8,
    len: usize,
    head: usize,
    frame_len: u32,
}

impl TxRing {
    pub fn open(ifindex: u32, t: &Template, qdisc: bool) -> io::Result<TxRing> {
        let fd = sys::packet_socket(0)?;
        let close = |e: io::Error| {
            unsafe { libc::close(fd) };
            e
        };
        sys::setsockopt_int(fd, libc::SOL_PACKET, PACKET_VERSION, TPACKET_V2).map_err(close)?;
        if !qdisc {
            sys::setsockopt_int(fd, libc::SOL_PACKET, sys::PACKET_QDISC_BYPASS, 1)
                .map_err(close)?;
        }
        let block = 1usize << 16;
        let req: [u32; 4] = [
            block as u32,
            (TX_FRAMES * TX_FRAME / block) as u32,
            TX_FRAME as u32,
            TX_FRAMES as u32,
        ];
        let r = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_PACKET,
                PACKET_TX_RING,
                req.as_ptr() as *const libc::c_void,
                16,
            )
        };
        if r < 0 {
            return Err(close(io::Error::last_os_error()));
        }
        let len = TX_FRAMES * TX_FRAME;
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(close(io::Error::last_os_error()));
        }
        let map = map as *mut u8;
        for i in 0..TX_FRAMES {
            let f = unsafe { std::slice::from_raw_parts_mut(map.add(i * TX_FRAME), TX_FRAME) };
            f[TX_DATA_OFF..TX_DATA_OFF + t.frame.len()].copy_from_slice(&t.frame);
        }
        sys::bind_packet(fd, ifindex, 0).map_err(close)?;
        Ok(TxRing {
            fd,
            map,
            len,
            head: 0,
            frame_len: t.frame.len() as u32,
        })
    }

    #[inline(always)]
    fn hdr(&self, i: usize) -> *mut u32 {
        unsafe { self.map.add(((self.head + i) % TX_FRAMES) * TX_FRAME) as *mut u32 }
    }

    #[inline(always)]
    fn status(&self, i: usize) -> u32 {
        unsafe { std::ptr::read_volatile(self.hdr(i)) }
    }
}

impl Drop for TxRing {
    fn drop(&mut self) {
        unsafe {
            libc::munmap(self.map as *mut libc::c_void, self.len);
            libc::close(self.fd);
        }
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
                    fd: self.fd,
                    events: libc::POLLOUT,
                    revents: 0,
                };
                unsafe { libc::poll(&mut pfd, 1, 1) };
            }
            if pace::stopped() {
                break;
            }
        }
        let p = self.hdr(i) as *mut u8;
        unsafe { std::slice::from_raw_parts_mut(p.add(TX_DATA_OFF), self.frame_len as usize) }
    }
    fn send(&mut self, from: usize, n: usize) -> io::Result<usize> {
        for i in from..from + n {
            let h = self.hdr(i);
            unsafe {
                std::ptr::write_volatile(h.add(1), self.frame_len); // tp_len
                std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
                std::ptr::write_volatile(h, TP_STATUS_SEND_REQUEST);
            }
        }
        let r = unsafe {
            libc::sendto(
                self.fd,
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
    /// Packets per second; None sends as fast as possible for `duration_ns`.
    pub rate: Option<f64>,
    pub planned: u64,
    pub duration_ns: u64,
    pub flows: u64,
    pub batch: usize,
    /// Most packets per send call (slots available), also when catching up.
    pub burst: usize,
}

#[derive(Default)]
pub struct LoopOut {
    pub sent: u64,
    pub first_tx: u64,
    pub last_tx: u64,
    pub first_batch: u64,
    pub retries: u64,
    pub stopped_by_signal: bool,
    pub lateness: Hist,
    pub start: u64,
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

/// Send on the schedule. On error, also says how many packets had been sent.
pub fn run(tx: &mut dyn Tx, t: &Template, cfg: &LoopCfg) -> Result<LoopOut, (io::Error, u64)> {
    let mut out = LoopOut {
        lateness: Hist::new(),
        ..Default::default()
    };
    let rate = cfg.rate.unwrap_or(0.0);
    let rate_int = if rate.fract() == 0.0 && (1.0..1e12).contains(&rate) {
        rate as u64
    } else {
        0
    };
    // Start a little in the future so that the first deadline is not already late.
    let mut start = pace::now() + 200_000;
    let end = start + cfg.duration_ns;
    out.start = start;
    let planned = cfg.planned;
    let flows = cfg.flows.max(1);
    let mut k: u64 = 0;
    while k < planned {
        if pace::stopped() {
            out.stopped_by_signal = true;
            break;
        }
        let mut b = (cfg.batch as u64).min(planned - k) as usize;
        let ts = if cfg.rate.is_some() {
            let due = start + off(k + b as u64 - 1, rate_int, rate);
            let ts = pace::wait_until(due);
            if ts < due {
                out.stopped_by_signal = true;
                break;
            }
            if k == 0 {
                // The schedule starts with the first send call: a stall before it
                // must not be "caught up" in a burst (nor bias the achieved rate).
                start = ts - off(b as u64 - 1, rate_int, rate);
                out.start = start;
            }
            // Behind schedule: send everything already due in this call (up to the
            // burst limit), so that the per-call cost is shared and we catch up.
            let limit = (cfg.burst as u64).min(planned - k);
            while (b as u64) < limit && start + off(k + b as u64, rate_int, rate) <= ts {
                b += 1;
            }
            ts
        } else {
            let ts = if k == 0 {
                pace::wait_until(start)
            } else {
                pace::now()
            };
            if ts >= end {
                break;
            }
            ts
        };
        if !tx.stamps_itself() {
            for i in 0..b {
                let p = k + i as u64;
                let flow = (p % flows) as u16;
                t.stamp(tx.slot(i), flow, p / flows, ts);
            }
        }
        let mut done = 0usize;
        let mut stuck_since = 0u64;
        while done < b {
            match tx.send(done, b - done) {
                Ok(n) => {
                    done += n;
                    stuck_since = 0;
                }
                Err(e) => {
                    let code = e.raw_os_error().unwrap_or(0);
                    if code != libc::ENOBUFS && code != libc::EAGAIN && code != libc::EINTR {
                        return Err((e, k));
                    }
                    if code != libc::EINTR {
                        out.retries += 1;
                    }
                    let n = pace::now();
                    if stuck_since == 0 {
                        stuck_since = n;
                    } else if n - stuck_since > STUCK_NS {
                        return Err((
                            io::Error::new(
                                e.kind(),
                                format!("the kernel refused every send for 2 s ({e})"),
                            ),
                            k,
                        ));
                    }
                    if pace::stopped() {
                        break;
                    }
                }
            }
        }
        if k == 0 {
            if !tx.delivered(done) {
                return Err((
                    io::Error::new(
                        io::ErrorKind::NotConnected,
                        "frames were accepted but did not leave the interface",
                    ),
                    0,
                ));
            }
            out.first_tx = ts;
            out.first_batch = done as u64;
        }
        out.last_tx = ts;
        if cfg.rate.is_some() {
            for i in 0..done {
                let d = start + off(k + i as u64, rate_int, rate);
                out.lateness.add(ts.saturating_sub(d));
            }
        }
        k += done as u64;
        if done < b {
            out.stopped_by_signal = true;
            break;
        }
    }
    out.sent = k;
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
}

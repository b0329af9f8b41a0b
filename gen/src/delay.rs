//! The delay line: every Ethernet frame received on one device leaves by the other
//! a fixed delay after its kernel receive time, bytes unchanged, in arrival order.
//!
//! One thread per direction: an AF_PACKET socket takes frames in (recvmmsg, each
//! with its SO_TIMESTAMPNS stamp, CLOCK_REALTIME), `Held` keeps them in arrival
//! order, and another sends each out (sendmmsg) once the realtime clock reaches its
//! stamp plus the delay; in between the thread waits in ppoll for more frames or
//! for the head frame's due time, whichever comes first (timer slack 1 ns).

use crate::json::J;
use crate::pace;
use crate::sys;
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A timer wakes a thread some 50 us late on a VM: a sparse train sleeps until this
/// long before its head is due, then busy-polls the clock to its time.
const SPIN_NS: u64 = 100_000;
/// While busy-polling, look for new frames this often.
const SPIN_STEP_NS: u64 = 5_000;
/// At most this many frames held: a sparse train, whose head is busy-polled to.
const SPARSE: usize = 4;
/// The biggest frame the line forwards: a 9216-byte MTU and its Ethernet header,
/// a VLAN tag and FCS room (18 bytes). Longer ones (GSO super-frames) are dropped.
pub const MAX_FRAME: usize = 9216 + 18;
/// The virtio_net_hdr each frame comes with and goes out with (PACKET_VNET_HDR):
/// it carries a checksum left to offload (CHECKSUM_PARTIAL) across the line, so
/// that frames from a device with tx checksumming on (veth's default) arrive whole.
const VNET_HDR: usize = 10;
const VIRTIO_NET_HDR_F_DATA_VALID: u8 = 2;
const PACKET_VNET_HDR: libc::c_int = 15;
/// A held frame: its virtio_net_hdr, then its bytes.
const SLOT: usize = VNET_HDR + MAX_FRAME;
/// Frames taken in, or sent out, per system call at most.
const BATCH: usize = 64;
/// The longest wait between looks at the stop flag.
const IDLE_NS: u64 = 50_000_000;
/// Receive buffer asked for each receiving socket (SO_RCVBUFFORCE).
const RCVBUF: i32 = 32 << 20;
const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
const PACKET_MR_PROMISC: libc::c_ushort = 1;
const PACKET_OUTGOING: u8 = 4;

/// One held frame: where its bytes are in the store and when it is due.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Entry {
    due: u64,
    off: usize,
    len: usize,
}

/// The frames a direction holds, oldest first: their bytes in one ring that grows
/// (doubling) when a frame does not fit, at most `limit` of them.
pub struct Held {
    buf: Vec<u8>,
    entries: VecDeque<Entry>,
    /// Where the next frame's bytes go (after the newest's).
    tail: usize,
    limit: usize,
}

impl Held {
    /// A store of `bytes` to start with, holding at most `limit` frames.
    pub fn new(bytes: usize, limit: usize) -> Held {
        Held {
            buf: vec![0; bytes.max(SLOT)],
            entries: VecDeque::new(),
            tail: 0,
            limit,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// When the oldest frame is due, if any is held.
    pub fn next_due(&self) -> Option<u64> {
        self.entries.front().map(|e| e.due)
    }

    /// Hold `frame` until `due`: false (nothing held) when `limit` frames are.
    pub fn push(&mut self, due: u64, frame: &[u8]) -> bool {
        if self.entries.len() >= self.limit {
            return false;
        }
        let len = frame.len().max(1); // an empty frame takes a byte, to keep offsets apart
        let off = match self.place(len) {
            Some(off) => off,
            None => {
                self.grow(len);
                self.tail
            }
        };
        self.buf[off..off + frame.len()].copy_from_slice(frame);
        self.entries.push_back(Entry {
            due,
            off,
            len: frame.len(),
        });
        self.tail = off + len;
        true
    }

    /// Where `len` bytes fit after the newest frame without touching the oldest.
    fn place(&self, len: usize) -> Option<usize> {
        let (Some(head), Some(last)) = (self.entries.front(), self.entries.back()) else {
            return (len <= self.buf.len()).then_some(0);
        };
        let wrapped = last.off < head.off;
        if wrapped {
            (self.tail + len <= head.off).then_some(self.tail)
        } else if self.tail + len <= self.buf.len() {
            Some(self.tail)
        } else {
            (len <= head.off).then_some(0)
        }
    }

    /// Double the store (or more, for `len` bytes), its frames packed from 0.
    fn grow(&mut self, len: usize) {
        let used: usize = self.entries.iter().map(|e| e.len.max(1)).sum();
        let size = (self.buf.len() * 2).max(used + len);
        let mut buf = vec![0; size];
        let mut at = 0;
        for e in self.entries.iter_mut() {
            buf[at..at + e.len].copy_from_slice(&self.buf[e.off..e.off + e.len]);
            e.off = at;
            at += e.len.max(1);
        }
        self.buf = buf;
        self.tail = at;
    }

    /// How many of the oldest `max` frames are due at `now`.
    pub fn due(&self, now: u64, max: usize) -> usize {
        self.entries
            .iter()
            .take(max)
            .take_while(|e| e.due <= now)
            .count()
    }

    /// The `i`th oldest frame and when it is due.
    pub fn get(&self, i: usize) -> (u64, &[u8]) {
        let e = self.entries[i];
        (e.due, &self.buf[e.off..e.off + e.len])
    }

    /// Let the `n` oldest frames go.
    pub fn pop(&mut self, n: usize) {
        self.entries.drain(..n);
        if self.entries.is_empty() {
            self.tail = 0;
        }
    }
}

/// One direction's counters since the start, shared with the stats writer.
#[derive(Default)]
pub struct Counters {
    pub rx_frames: AtomicU64,
    pub rx_bytes: AtomicU64,
    pub tx_frames: AtomicU64,
    pub tx_bytes: AtomicU64,
    /// PACKET_STATISTICS tp_drops, added up (each read resets the kernel's).
    pub drop_socket: AtomicU64,
    pub drop_queue: AtomicU64,
    pub drop_send: AtomicU64,
    pub drop_oversize: AtomicU64,
    pub drop_shutdown: AtomicU64,
    pub queue_max: AtomicU64,
    pub late_max_ns: AtomicU64,
    pub late_sum_ns: AtomicU64,
    pub late_over_50us: AtomicU64,
    pub late_over_1ms: AtomicU64,
}

impl Counters {
    pub fn to_json(&self) -> J {
        let f = |a: &AtomicU64| J::U(a.load(Relaxed));
        J::obj(vec![
            ("rx_frames", f(&self.rx_frames)),
            ("rx_bytes", f(&self.rx_bytes)),
            ("tx_frames", f(&self.tx_frames)),
            ("tx_bytes", f(&self.tx_bytes)),
            ("drop_socket", f(&self.drop_socket)),
            ("drop_queue", f(&self.drop_queue)),
            ("drop_send", f(&self.drop_send)),
            ("drop_oversize", f(&self.drop_oversize)),
            ("drop_shutdown", f(&self.drop_shutdown)),
            ("queue_max", f(&self.queue_max)),
            ("late_max_ns", f(&self.late_max_ns)),
            ("late_sum_ns", f(&self.late_sum_ns)),
            ("late_over_50us", f(&self.late_over_50us)),
            ("late_over_1ms", f(&self.late_over_1ms)),
        ])
    }

    /// Count frames that left `late` ns after their due times.
    fn add_late(&self, late: &[u64]) {
        let (mut sum, mut max, mut over_50us, mut over_1ms) = (0, 0, 0, 0);
        for &l in late {
            sum += l;
            max = max.max(l);
            over_50us += (l > 50_000) as u64;
            over_1ms += (l > 1_000_000) as u64;
        }
        self.late_sum_ns.fetch_add(sum, Relaxed);
        self.late_max_ns.fetch_max(max, Relaxed);
        self.late_over_50us.fetch_add(over_50us, Relaxed);
        self.late_over_1ms.fetch_add(over_1ms, Relaxed);
    }

    /// Add the kernel's drop count on `fd` (reading it resets it).
    pub fn add_socket_drops(&self, fd: BorrowedFd<'_>) {
        self.drop_socket.fetch_add(sys::packet_drops(fd), Relaxed);
    }
}

/// The socket a direction receives on: every frame of `ifindex` (ETH_P_ALL) but
/// those sent from this host, stamped, with a 32 MB buffer, the device promiscuous.
pub fn rx_socket(ifindex: u32) -> io::Result<OwnedFd> {
    let sock = sys::packet_socket(0)?;
    let fd = sock.as_fd();
    let set = |level, name, val| sys::setsockopt_int(fd, level, name, val);
    set(libc::SOL_PACKET, sys::PACKET_IGNORE_OUTGOING, 1)?;
    set(libc::SOL_PACKET, PACKET_VNET_HDR, 1)?;
    set(libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
    set(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, RCVBUF)
        .or_else(|_| set(libc::SOL_SOCKET, libc::SO_RCVBUF, RCVBUF))?;
    sys::bind_packet(fd, ifindex, libc::ETH_P_ALL as u16)?;
    promisc(fd, ifindex)?;
    Ok(sock)
}

/// The socket a direction sends by: bound to `ifindex`, receiving nothing, through
/// the device's qdisc (so a shaping qdisc there applies).
pub fn tx_socket(ifindex: u32) -> io::Result<OwnedFd> {
    let sock = sys::packet_socket(0)?;
    let fd = sock.as_fd();
    sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, RCVBUF)
        .or_else(|_| sys::setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, RCVBUF))?;
    sys::setsockopt_int(fd, libc::SOL_PACKET, PACKET_VNET_HDR, 1)?;
    sys::bind_packet(fd, ifindex, 0)?;
    Ok(sock)
}

/// Make `ifindex` promiscuous while `fd` is open (PACKET_MR_PROMISC).
fn promisc(fd: BorrowedFd<'_>, ifindex: u32) -> io::Result<()> {
    // SAFETY: packet_mreq is plain C data; all zeroes is a valid value.
    let mut mr: libc::packet_mreq = unsafe { std::mem::zeroed() };
    mr.mr_ifindex = ifindex as i32;
    mr.mr_type = PACKET_MR_PROMISC;
    // SAFETY: the request is the live local `mr`, of the length given.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            PACKET_ADD_MEMBERSHIP,
            &mr as *const libc::packet_mreq as *const libc::c_void,
            std::mem::size_of::<libc::packet_mreq>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Wake-ups for this thread to the nanosecond (the default slack is 50 us).
pub fn precise_timers() {
    // SAFETY: PR_SET_TIMERSLACK takes a number, no pointer, and sets this thread's slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// The realtime clock, ns: the clock of the kernel's receive stamps.
fn realtime() -> u64 {
    pace::clock_ns(libc::CLOCK_REALTIME)
}

/// One direction: frames in on `rx_fd`, out by `tx_fd` `delay_ns` later.
pub struct Direction<'a> {
    pub rx_fd: BorrowedFd<'a>,
    pub tx_fd: BorrowedFd<'a>,
    pub delay_ns: u64,
    pub queue: usize,
    pub counters: &'a Counters,
}

/// The receive side's buffers for one recvmmsg call.
struct RxBatch {
    bufs: Vec<u8>,
    iov: Vec<libc::iovec>,
    names: Vec<libc::sockaddr_ll>,
    ctl: Vec<[u64; 8]>,
    msgs: Vec<libc::mmsghdr>,
}

impl RxBatch {
    fn new() -> Box<RxBatch> {
        let mut b = Box::new(RxBatch {
            bufs: vec![0; BATCH * SLOT],
            iov: Vec::with_capacity(BATCH),
            // SAFETY: sockaddr_ll is plain C data; all zeroes is a valid value.
            names: vec![unsafe { std::mem::zeroed() }; BATCH],
            ctl: vec![[0; 8]; BATCH],
            // SAFETY: mmsghdr is plain C data (null pointers, zero lengths when zeroed);
            // `recv` points it at the batch's buffers before each call.
            msgs: vec![unsafe { std::mem::zeroed() }; BATCH],
        });
        for i in 0..BATCH {
            // SAFETY: `bufs` holds BATCH * SLOT bytes and i < BATCH: slot i is inside it.
            let base = unsafe { b.bufs.as_mut_ptr().add(i * SLOT) };
            b.iov.push(libc::iovec {
                iov_base: base as *mut libc::c_void,
                iov_len: SLOT,
            });
        }
        b
    }

    /// Take up to BATCH waiting frames without blocking; how many came.
    fn recv(&mut self, fd: BorrowedFd<'_>) -> usize {
        for i in 0..BATCH {
            let h = &mut self.msgs[i].msg_hdr;
            h.msg_name = &mut self.names[i] as *mut libc::sockaddr_ll as *mut libc::c_void;
            h.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            h.msg_iov = &mut self.iov[i];
            h.msg_iovlen = 1;
            h.msg_control = self.ctl[i].as_mut_ptr() as *mut libc::c_void;
            h.msg_controllen = std::mem::size_of::<[u64; 8]>();
            h.msg_flags = 0;
            self.msgs[i].msg_len = 0;
        }
        // SAFETY: every header points at this batch's own name, iovec (SLOT bytes of
        // `bufs`) and control buffer, all sized as the header says and alive (the
        // batch is boxed and borrowed mutably) across the call; BATCH headers.
        let r = unsafe {
            libc::recvmmsg(
                fd.as_raw_fd(),
                self.msgs.as_mut_ptr(),
                BATCH as u32,
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                std::ptr::null_mut(),
            )
        };
        r.max(0) as usize
    }

    /// Frame `i` of the last call: its virtio_net_hdr and bytes, ready to send
    /// (Err: its length, when longer than MAX_FRAME), its receive stamp, whether
    /// this host sent it.
    fn frame(&mut self, i: usize) -> (Result<&[u8], usize>, Option<u64>, bool) {
        let m = &self.msgs[i];
        let len = (m.msg_len as usize).max(VNET_HDR);
        let outgoing = self.names[i].sll_pkttype == PACKET_OUTGOING;
        // SAFETY: recvmmsg filled this header; its control buffer is this batch's
        // `ctl[i]` with the length the kernel set.
        let stamp = unsafe { rx_stamp(&m.msg_hdr) };
        if len > SLOT || m.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
            return (Err(len - VNET_HDR), stamp, outgoing);
        }
        let rec = &mut self.bufs[i * SLOT..i * SLOT + len];
        rec[0] &= !VIRTIO_NET_HDR_F_DATA_VALID; // a receive flag, not one to send
        (Ok(rec), stamp, outgoing)
    }
}

/// The SO_TIMESTAMPNS stamp of a received message (CLOCK_REALTIME ns).
///
/// # Safety
/// `h.msg_control` must point at a live buffer of `h.msg_controllen` bytes holding
/// the control messages the kernel wrote (or none).
unsafe fn rx_stamp(h: &libc::msghdr) -> Option<u64> {
    let mut c = libc::CMSG_FIRSTHDR(h);
    while !c.is_null() {
        if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
            let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
            return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
        }
        c = libc::CMSG_NXTHDR(h, c);
    }
    None
}

/// Busy-poll the realtime clock until `t` (or the stop flag), yielding the CPU to
/// any thread ready to run on it.
fn spin_until(t: u64) {
    while realtime() < t && !pace::stopped() {
        // SAFETY: sched_yield takes nothing and cannot fail.
        unsafe { libc::sched_yield() };
    }
}

/// Wait until `fd` has frames or `timeout_ns` passed; true when it has frames.
fn wait_readable(fd: BorrowedFd<'_>, timeout_ns: u64) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: one live local pollfd and timeout, read (and revents written) by the
    // kernel; no signal mask.
    let r = unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
    r > 0 // POLLIN, or an error for recvmmsg to take
}

impl Direction<'_> {
    /// Forward until the stop flag is set; then count what is held as
    /// drop_shutdown.
    pub fn run(&self) {
        precise_timers();
        let c = self.counters;
        let mut held = Held::new(8 << 20, self.queue);
        let mut rx = RxBatch::new();
        let mut iov: Vec<libc::iovec> = Vec::with_capacity(BATCH);
        // SAFETY: mmsghdr is plain C data (null pointers, zero lengths when zeroed);
        // `send_due` points each at an iovec before a call.
        let mut msgs: Vec<libc::mmsghdr> = vec![unsafe { std::mem::zeroed() }; BATCH];
        let mut late: Vec<u64> = Vec::with_capacity(BATCH);
        let mut more = false;
        loop {
            let mut now = realtime();
            while held.due(now, 1) == 1 {
                self.send_due(&mut held, now, &mut iov, &mut msgs, &mut late);
                now = realtime();
            }
            if pace::stopped() {
                break;
            }
            // sleep (in ppoll) until a frame comes or the head is due. A sparse train
            // (a few frames held: a ping) sleeps until SPIN_NS before its head is due
            // and busy-polls the rest, as a timer wakes a thread some 50 us late on a
            // VM; a dense one never spins (the next frame's arrival wakes the thread,
            // and a spin per frame would hold the CPU from the traffic's own processes,
            // at a real-time priority until the kernel throttles it for 50 ms)
            let wait = held.next_due().map_or(IDLE_NS, |d| d.saturating_sub(now));
            let spin = if held.len() <= SPARSE { SPIN_NS } else { 0 };
            if !more && wait > spin && !wait_readable(self.rx_fd, (wait - spin).min(IDLE_NS)) {
                continue;
            }
            let n = rx.recv(self.rx_fd);
            more = n == BATCH;
            if n == 0 {
                if let Some(d) = held.next_due() {
                    spin_until(d.min(realtime() + SPIN_STEP_NS));
                }
                continue;
            }
            let fallback = realtime();
            let (mut frames, mut bytes) = (0, 0);
            for i in 0..n {
                let (frame, stamp, outgoing) = rx.frame(i);
                if outgoing {
                    continue;
                }
                frames += 1;
                match frame {
                    Ok(f) => {
                        bytes += (f.len() - VNET_HDR) as u64;
                        let due = stamp.unwrap_or(fallback) + self.delay_ns;
                        if !held.push(due, f) {
                            c.drop_queue.fetch_add(1, Relaxed);
                        }
                    }
                    Err(len) => {
                        bytes += len as u64;
                        c.drop_oversize.fetch_add(1, Relaxed);
                    }
                }
            }
            c.rx_frames.fetch_add(frames, Relaxed);
            c.rx_bytes.fetch_add(bytes, Relaxed);
            c.queue_max.fetch_max(held.len() as u64, Relaxed);
        }
        c.drop_shutdown.fetch_add(held.len() as u64, Relaxed);
    }

    /// Send the frames due at `now` (up to BATCH), oldest first; a frame the
    /// kernel refuses is counted drop_send and not retried.
    fn send_due(
        &self,
        held: &mut Held,
        now: u64,
        iov: &mut Vec<libc::iovec>,
        msgs: &mut [libc::mmsghdr],
        late: &mut Vec<u64>,
    ) {
        let n = held.due(now, BATCH);
        iov.clear();
        late.clear();
        let mut bytes = Vec::with_capacity(n);
        for i in 0..n {
            let (due, f) = held.get(i);
            iov.push(libc::iovec {
                iov_base: f.as_ptr() as *mut libc::c_void,
                iov_len: f.len(),
            });
            late.push(now - due);
            bytes.push((f.len() - VNET_HDR) as u64);
        }
        for (m, v) in msgs.iter_mut().zip(iov.iter_mut()) {
            m.msg_hdr.msg_iov = v;
            m.msg_hdr.msg_iovlen = 1;
        }
        let (mut sent, mut sent_bytes, mut dropped) = (0, 0, 0);
        let mut i = 0;
        while i < n {
            let fd = self.tx_fd.as_raw_fd();
            // SAFETY: headers i..n point at `iov`'s entries, each at a held frame's
            // bytes, all alive (and not moved: `iov` is not pushed to) across the call.
            let r = unsafe { libc::sendmmsg(fd, msgs[i..].as_mut_ptr(), (n - i) as u32, 0) };
            if r > 0 {
                let r = r as usize;
                sent += r as u64;
                sent_bytes += bytes[i..i + r].iter().sum::<u64>();
                i += r;
            } else if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                dropped += 1;
                i += 1;
            }
        }
        held.pop(n);
        let c = self.counters;
        c.tx_frames.fetch_add(sent, Relaxed);
        c.tx_bytes.fetch_add(sent_bytes, Relaxed);
        c.drop_send.fetch_add(dropped, Relaxed);
        c.add_late(late);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(tag: u8, len: usize) -> Vec<u8> {
        vec![tag; len]
    }

    /// Every held frame, oldest first, as (due, first byte, length).
    fn contents(h: &Held) -> Vec<(u64, u8, usize)> {
        (0..h.len())
            .map(|i| {
                let (due, f) = h.get(i);
                (due, f.first().copied().unwrap_or(0), f.len())
            })
            .collect()
    }

    #[test]
    fn frames_leave_in_order_when_due() {
        let mut h = Held::new(0, 10);
        assert_eq!(h.next_due(), None);
        assert!(h.push(100, &frame(1, 60)));
        assert!(h.push(150, &frame(2, 1514)));
        assert!(h.push(120, &frame(3, 64))); // an earlier stamp waits its turn
        assert_eq!(h.next_due(), Some(100));
        assert_eq!(h.due(99, 64), 0);
        assert_eq!(h.due(100, 64), 1);
        // never past a frame not yet due, even when later ones are
        assert_eq!(h.due(140, 64), 1);
        assert_eq!(h.due(150, 64), 3);
        assert_eq!(h.due(150, 2), 2);
        h.pop(1);
        assert_eq!(contents(&h), vec![(150, 2, 1514), (120, 3, 64)]);
        h.pop(2);
        assert_eq!(h.len(), 0);
        assert_eq!(h.next_due(), None);
    }

    #[test]
    fn a_full_queue_refuses_frames() {
        let mut h = Held::new(0, 2);
        assert!(h.push(1, &frame(1, 100)));
        assert!(h.push(2, &frame(2, 100)));
        assert!(!h.push(3, &frame(3, 100)));
        h.pop(1);
        assert!(h.push(4, &frame(4, 100)));
        assert_eq!(contents(&h), vec![(2, 2, 100), (4, 4, 100)]);
    }

    #[test]
    fn the_ring_wraps_and_grows_without_losing_bytes() {
        // a store of exactly MAX_FRAME bytes: 1000-byte frames wrap within it
        let mut h = Held::new(MAX_FRAME, 1_000_000);
        let cap = h.buf.len();
        let mut want: VecDeque<(u64, u8, usize)> = VecDeque::new();
        let mut t = 0u64;
        // steady state: push 3, pop 2, many times, with varied sizes
        for round in 0..2000u64 {
            for k in 0..3u64 {
                t += 1;
                let len = 60 + ((round * 7 + k * 131) % 1455) as usize;
                let tag = (t % 251) as u8;
                assert!(h.push(t, &frame(tag, len)));
                want.push_back((t, tag, len));
            }
            h.pop(2);
            want.pop_front();
            want.pop_front();
            if round % 97 == 0 {
                let (_, f) = h.get(0);
                assert!(f.iter().all(|&b| b == f[0]));
                assert_eq!(contents(&h), Vec::from(want.clone()));
            }
        }
        assert!(h.buf.len() > cap, "grew");
        assert_eq!(contents(&h), Vec::from(want.clone()));
        // and drains to empty, back to offset 0
        let n = h.len();
        h.pop(n);
        assert_eq!((h.len(), h.tail), (0, 0));
    }

    #[test]
    fn a_wrapped_ring_keeps_the_oldest_frame_whole() {
        let mut h = Held::new(MAX_FRAME, 100);
        let cap = h.buf.len();
        // fill most of the store, free the start, wrap into it
        assert!(h.push(1, &frame(1, cap / 2)));
        assert!(h.push(2, &frame(2, cap / 2 - 10)));
        h.pop(1);
        assert!(h.push(3, &frame(3, cap / 4))); // wraps to 0
        assert_eq!(h.entries.back().unwrap().off, 0);
        // does not fit before the oldest: the store grows, order kept
        assert!(h.push(4, &frame(4, cap / 2)));
        assert!(h.buf.len() > cap);
        assert_eq!(
            contents(&h),
            vec![(2, 2, cap / 2 - 10), (3, 3, cap / 4), (4, 4, cap / 2)]
        );
        for i in 0..h.len() {
            let (_, f) = h.get(i);
            assert!(f.iter().all(|&b| b == f[0]));
        }
    }

    #[test]
    fn lateness_is_summed_and_binned() {
        let c = Counters::default();
        c.add_late(&[0, 50_000, 50_001, 2_000_000]);
        c.add_late(&[10]);
        assert_eq!(c.late_sum_ns.load(Relaxed), 2_100_011);
        assert_eq!(c.late_max_ns.load(Relaxed), 2_000_000);
        assert_eq!(c.late_over_50us.load(Relaxed), 2);
        assert_eq!(c.late_over_1ms.load(Relaxed), 1);
        let j = c.to_json().to_string();
        assert!(
            j.starts_with(r#"{"rx_frames":0,"rx_bytes":0,"tx_frames":0"#),
            "{j}"
        );
        assert!(
            j.ends_with(r#""late_over_50us":2,"late_over_1ms":1}"#),
            "{j}"
        );
    }
}

//! XDP live frames: a tiny XDP program (`bpf/gen_live.c`, its constants set here for
//! the frame template) stamps flow, sequence, time and the UDP checksum into each
//! frame and returns XDP_TX; the kernel runs it `n` times per BPF_PROG_RUN call (BPF_F_TEST_XDP_LIVE_FRAMES) with the send interface
//! as the ingress one, so each frame leaves through it as an XDP frame: no socket
//! buffer on the sending side, and none on a veth peer whose XDP program takes it.
//! Needs Linux >= 5.18 and, on veth, an XDP program on the peer (else veth refuses
//! the frames); `delivered` checks that frames really left and the caller falls
//! back to AF_PACKET otherwise.
//!
//! Sequence numbers: the program keeps the global packet number k in a one-slot
//! array and writes flow k % flows, sequence k / flows; one sender thread runs it,
//! so a flow's sequence numbers are unique and increasing in sending order, like
//! the AF_PACKET techniques. The transmit time is bpf_ktime_get_ns() (the same
//! CLOCK_MONOTONIC) when the frame was built, not the send call's time. Frames the
//! peer cannot take (its ring is full) count as sent here and show up as the
//! interface's tx_dropped (reported as `egress_drops`).
//!
//! Cost, measured on the 2-vCPU development VM (kernel 6.18, veth, 64-byte frames,
//! XDP count-and-drop on the peer): a test run of a program that is attached
//! nowhere adds it to the kernel's XDP dispatcher and removes it again, patching
//! kernel text twice (IPIs, ~25 ms per call, so ~30 kpps whatever the batch). The
//! program is therefore also attached, in generic mode, to this namespace's
//! loopback, where it passes every frame (it only stamps frames whose ingress is
//! the send interface); then a call costs ~10 us plus ~0.12-0.2 us per frame, and
//! 16384 frames per call reach 5-8 Mpps (bench/generator.py, XDP sink, medians of 3:
//! 6.2 Mpps against 0.74 Mpps for sendmmsg into the same sink). The per-call cost
//! is the kernel's: every run builds a page pool of `batch_size` pages, copies the
//! frame into each and frees them at the end (perf: page_pool_return_netmem,
//! xdp_test_run_init_page, the page allocator).
//!
//! Paced runs (from `MIN_KERNEL_PACED_PPS`) therefore do not make a call per burst
//! (that reached 180-480 kpps of 0.5-3 Mpps asked here, seconds late): the program
//! itself waits for each frame's time (bpf_loop over bpf_ktime_get_ns, the deadline
//! computed from the packet number, the start and the rate in its map), so one call
//! carries up to `CHUNK_NS` of schedule, flushed every few microseconds of it. The
//! map also keeps how late each frame was built (largest, and a histogram) and the
//! first and last build times, which the run reports. Measured here into an XDP sink
//! on a veth, one vCPU, 1 s: 600 kpps and 2 Mpps kept exactly, p99 lateness 20-500 us (mostly 20-50),
//! largest 0.3-1.7 ms (the vCPU taken away by other work; sendmmsg reached 473-656
//! kpps of the same asks).
//!
//! Every frame's headers are written back from the template before it is stamped:
//! the kernel builds a page from the template once and recycles it, with whatever
//! the path wrote into it in place (see `restored`).

use crate::bpf::{self, put32, put64, BPF_PROG_TEST_RUN, XDP_FLAGS_SKB_MODE};
use crate::flows::Plan;
use crate::pace::Hist;
use crate::packet::Template;
use crate::tx::{LoopCfg, LoopOut, Stop, Tx};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

const BPF_F_TEST_XDP_LIVE_FRAMES: u32 = 1 << 1;
/// Frames per inner batch (the kernel allows up to 256): each batch is flushed into
/// the veth peer's 256-frame ring before its NAPI poll (64 a round) drains it, and
/// 256 overflowed that ring when the loop caught up after a stall (egress drops);
/// 64 measured as fast at the peak, without drops.
const MAX_INNER_BATCH: usize = 64;
/// Paced: the schedule one test run covers (signals and the deadline are checked
/// between runs), and the schedule one inner batch covers (a batch leaves together).
const CHUNK_NS: u64 = 100_000_000;
/// How often a send of live frames looks whether its device is still up.
const UP_CHECK_NS: u64 = 10_000_000;
const PACED_WINDOW_NS: u64 = 8_000;

/// The one slot of the program's array map, in u64 words: the packet number k, the
/// schedule's start (CLOCK_MONOTONIC ns) and rate (whole pps; 0: unpaced), the largest
/// lateness, the first and the last frame's build time, then for each of
/// `LATE_THRESHOLDS_NS` how many frames were at least that late.
const W_K: usize = 0;
const W_START: usize = 1;
const W_RATE: usize = 2;
const W_LATE_MAX: usize = 3;
#[cfg(test)] // the program writes it; the run reads the last build time only
const W_FIRST: usize = 4;
const W_LAST: usize = 5;
const W_LATE: usize = 6;
/// Lateness histogram edges (ns): frames at least this late, cumulative.
const LATE_THRESHOLDS_NS: [u64; 19] = [
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
    200_000_000,
    500_000_000,
    1_000_000_000,
];
/// The mean least time between two frames' builds when they catch up (ns; 0: no bound),
/// so that frames left late by a stall catch up at a bounded rate (`--catch-up`), not in
/// one burst; the tolerance (ns) by which a frame may be built ahead of that rate (a
/// flush's frames, which leave together anyway: `catch_up_burst_ns`); and the
/// theoretical time of the next frame on the catch-up's rate (gen_live.c, GCRA).
const W_GAP: usize = W_LATE + LATE_THRESHOLDS_NS.len();
const W_BURST: usize = W_GAP + 1;
const W_TAT: usize = W_BURST + 1;
const VALUE_WORDS: usize = W_TAT + 1;
/// The program (`bpf/gen_live.c`, built by build.rs).
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/gen_live.o"));
/// The words `restored` writes back (gen_live.c's WORDS_V4 and WORDS_V6): an IPv4
/// frame's headers and stamped fields take 8, an IPv6 frame's 11.
const WORDS_V4: usize = 8;
const WORDS_V6: usize = 11;

/// Load the stamping program for this template (`bpf/gen_live.c`): its constants are
/// the template's headers, where its fields sit and its checksums' fixed sums, the
/// flows' plan and the interface the runs name (`ifindex`); returns it with its state
/// map and its permutation map (`--flow-order random`: flow i's place in the order at
/// key i; one unused slot otherwise).
///
/// Paced (the map's rate is not 0), frame k is due at start + (k * 1e9 + rate / 2) /
/// rate, the same arithmetic as the AF_PACKET schedule, and the program waits for that
/// time inside the kernel (bpf_loop over the clock) before it builds the frame: one
/// test run carries thousands of frames, each leaving on its own time, instead of one
/// call (and one page pool) per burst. How late each frame was built is counted in
/// the map (largest, and a histogram).
/// Each frame's flow is k % flows (through the permutation with `--flow-order
/// random`), its sequence k / flows; where flows have addresses of their own the
/// program also writes the flow's addresses and source port and fixes the IPv4 header
/// checksum (`Template::stamp_tuple`'s arithmetic, `flows::Plan::tuple`).
fn load(t: &Template, plan: &Plan, ifindex: u32) -> io::Result<bpf::Loaded> {
    let (offs, words) = restored(t);
    // the program's stores, one per word (a template too short for them is refused
    // before: packet.rs, min_size)
    assert_eq!(words.len(), if t.layout.v6 { WORDS_V6 } else { WORDS_V4 });
    // gen_live.c's MODE_* bits
    let mode = u32::from(t.layout.v6)
        | u32::from(plan.fixed_addresses()) << 1
        | u32::from(plan.permutation().is_some()) << 2;
    let c = bpf::Consts::default()
        .u32("ifindex", ifindex)
        .u32("size", t.frame.len() as u32)
        .u64("flows", plan.flows)
        .u32("mode", mode)
        .u64s("words", &words, WORDS_V6)
        .u32("last_at", *offs.last().expect("a word"))
        .u32("base_sum", t.base_sum)
        .u32("tuple_sum", t.tuple_sum)
        .u32("ip_sum", t.ip_sum)
        .u32("sport", t.sport as u32)
        .u64("slots", plan.slots())
        .u64("dsts", plan.dsts)
        .u64("ports", plan.ports())
        .u32("dst_step", plan.dst_step)
        .u32("dst_low", plan.dst_low)
        .u32("src_low", plan.src_low)
        .u32("src_port", plan.src_port as u32)
        .u64s("late_edges", &LATE_THRESHOLDS_NS, LATE_THRESHOLDS_NS.len());
    let perm = plan.permutation().map_or(1, |p| p.len() as u32);
    bpf::load_xdp(
        OBJECT,
        "netassay_gen",
        &c,
        &[("perm", perm)],
        &["state", "perm"],
    )
}

/// How many leading bytes of the frame `restored` writes back: every header and
/// the payload's stamped fields (magic, flags, flow, sequence, time), in whole words.
fn restored_len(t: &Template) -> usize {
    (t.layout.ts() + 8).div_ceil(8) * 8
}

/// The template's headers as the program writes them back into each frame, 8 bytes a
/// store (the last store may overlap the one before it): the offsets and the words
/// (as a load from the frame sees them); the program's stores are at 0, 8, ... and the
/// last one's offset (`last_at`), which these are. The kernel builds a live frame's page from
/// the template once and then recycles it: what the path wrote into a frame (a
/// router's MAC rewrite, TTL or hop limit and IPv4 checksum, all done in place in the
/// same page) came back in the next frame built on that page, and a kernel router
/// dropped 1-3% of a flood as addressed to another host (ip_rcv_core, OTHERHOST). The
/// stamped fields are written after this, as before.
fn restored(t: &Template) -> (Vec<u32>, Vec<u64>) {
    let len = restored_len(t).min(t.frame.len());
    let mut offs: Vec<usize> = (0..len / 8).map(|i| i * 8).collect();
    if !len.is_multiple_of(8) {
        offs.push(len - 8);
    }
    let words = offs
        .iter()
        .map(|&o| u64::from_ne_bytes(t.frame[o..o + 8].try_into().unwrap()))
        .collect();
    (offs.into_iter().map(|o| o as u32).collect(), words)
}

/// The least time between two frames' builds when frames left late by a stall catch up
/// at most `factor` times `rate` (0: no bound).
pub fn catch_up_gap_ns(rate: u64, factor: Option<f64>) -> u64 {
    match factor {
        Some(f) if f > 1.0 && rate > 0 => (1e9 / (f * rate as f64)).floor() as u64,
        _ => 0,
    }
}

/// The tolerance of a catch-up at one frame per `gap_ns`: a flush of `inner` frames
/// (they leave together) may be built back to back, so the bound holds over any span
/// longer than a flush and the generator is never held below that rate's reach by its
/// own flushes (builds of ~60 ns, then the flush): one frame per gap on average.
pub fn catch_up_burst_ns(gap_ns: u64, inner: usize) -> u64 {
    gap_ns * (inner.max(1) as u64 - 1)
}

/// Paced live frames wait for their time inside the kernel from this rate up (a whole
/// number of pps); below it, one test run per frame's time costs little.
pub const MIN_KERNEL_PACED_PPS: f64 = 1000.0;

/// Frames per inner batch of a paced run (a batch leaves together): the schedule of
/// `PACED_WINDOW_NS`, 1 to 64.
pub fn paced_inner_batch(rate: u64) -> usize {
    ((rate as u128 * PACED_WINDOW_NS as u128 / 1_000_000_000) as usize).clamp(1, MAX_INNER_BATCH)
}

/// A rate with a fraction is paced inside the kernel at the nearest whole rate when that
/// moves it by at most this share (from 50 kpps up): a reach probe or a search asks for
/// rates such as 98% of what was achieved, which went through the one-test-run-per-frame
/// path (about 0.1 Mpps) and read as a generator limit far below the kernel's reach.
pub const MAX_ROUNDING: f64 = 1e-5;

/// The whole rate to pace inside the kernel, if this run is paced that way.
pub fn kernel_paced(rate: Option<f64>) -> Option<u64> {
    rate.filter(|r| (MIN_KERNEL_PACED_PPS..1e10).contains(r))
        .filter(|r| r.fract() == 0.0 || (r.round() - r).abs() <= MAX_ROUNDING * r)
        .map(|r| r.round() as u64)
}

/// The permutation of `--flow-order random` written into the program's map (`fd`):
/// flow i's place in the order at key i (8-byte values, the low 4 bytes read).
fn perm_map(fd: OwnedFd, order: &[u32]) -> io::Result<bpf::Shared> {
    let m = bpf::Shared::map(fd, 8, order.len() as u32)?;
    for (slot, &f) in m.u64s(order.len()).iter().zip(order) {
        slot.store(f as u64, std::sync::atomic::Ordering::Relaxed);
    }
    Ok(m)
}

pub struct Xdp {
    prog: OwnedFd,
    _park: Option<OwnedFd>,
    map: OwnedFd,
    /// `--flow-order random`: the permutation the program reads.
    _perm: Option<bpf::Shared>,
    frame: Vec<u8>,
    /// struct xdp_md handed to each run: data 0, data_end = frame length and the
    /// ingress interface, so that XDP_TX leaves through it.
    ctx: [u32; 6],
    dummy: Vec<u8>,
    dev: String,
    tx0: u64,
    /// When `send` last looked whether the device is still up (CLOCK_MONOTONIC ns).
    up_checked: u64,
}

impl Xdp {
    pub fn open(t: &Template, plan: &Plan, ifindex: u32, dev: &str) -> io::Result<Xdp> {
        let l = load(t, plan, ifindex)?;
        let prog = l.prog;
        let [map, perm]: [OwnedFd; 2] = l.maps.try_into().expect("two maps");
        let perm = match plan.permutation() {
            Some(order) => Some(perm_map(perm, order)?),
            None => None,
        };
        // Park the program on this namespace's loopback (generic XDP; it passes
        // every real frame): while it is attached somewhere, a test run does not
        // patch the kernel's XDP dispatcher twice per call (~25 ms per call here).
        let park = bpf::xdp_link(&prog, 1, XDP_FLAGS_SKB_MODE).ok();
        Ok(Xdp {
            prog,
            _park: park,
            map,
            _perm: perm,
            frame: t.frame.clone(),
            ctx: [0, t.frame.len() as u32, 0, ifindex, 0, 0],
            dummy: vec![0u8; t.frame.len()],
            dev: dev.to_string(),
            tx0: dev_stat(dev, "tx_packets").unwrap_or(0),
            up_checked: 0,
        })
    }

    fn run(&mut self, n: usize) -> io::Result<()> {
        self.run_batched(n, n.min(MAX_INNER_BATCH))
    }

    /// One test run of `n` frames, flushed to the interface every `inner` frames.
    fn run_batched(&mut self, n: usize, inner: usize) -> io::Result<()> {
        let mut a = [0u8; 80];
        put32(&mut a, 0, self.prog.as_raw_fd() as u32);
        put32(&mut a, 8, self.frame.len() as u32);
        put64(&mut a, 16, self.frame.as_ptr() as u64);
        put32(&mut a, 32, n as u32);
        put32(&mut a, 40, std::mem::size_of_val(&self.ctx) as u32);
        put64(&mut a, 48, self.ctx.as_ptr() as u64);
        put32(&mut a, 64, BPF_F_TEST_XDP_LIVE_FRAMES);
        put32(&mut a, 72, inner.clamp(1, MAX_INNER_BATCH) as u32);
        bpf::sys(BPF_PROG_TEST_RUN, &mut a)?;
        Ok(())
    }

    fn slot_words(&self) -> io::Result<[u64; VALUE_WORDS]> {
        let mut v = [0u8; VALUE_WORDS * 8];
        bpf::map_lookup(&self.map, 0, &mut v)?;
        let mut w = [0u64; VALUE_WORDS];
        for (i, x) in w.iter_mut().enumerate() {
            *x = u64::from_ne_bytes(v[i * 8..i * 8 + 8].try_into().unwrap());
        }
        Ok(w)
    }

    fn set_words(&self, w: &[u64; VALUE_WORDS]) -> io::Result<()> {
        let mut v = [0u8; VALUE_WORDS * 8];
        for (i, x) in w.iter().enumerate() {
            put64(&mut v, i * 8, *x);
        }
        bpf::map_update(&self.map, 0, &v)
    }

    /// A new run: no frame yet, the schedule from `start` at `rate`, frames left late
    /// built one per `gap_ns` on average (0: no bound on a catch-up), `burst_ns` ahead of
    /// that at most (`catch_up_burst_ns`).
    fn set_schedule(&self, start: u64, rate: u64, gap_ns: u64, burst_ns: u64) -> io::Result<()> {
        let mut w = [0u64; VALUE_WORDS];
        w[W_START] = start;
        w[W_RATE] = rate;
        w[W_GAP] = gap_ns;
        w[W_BURST] = burst_ns;
        self.set_words(&w)
    }

    /// A paced run with the frames' times kept inside the kernel (see `program`): test
    /// runs of up to `CHUNK_NS` of schedule each, every frame waiting for its own time,
    /// flushed every `rate * PACED_WINDOW_NS` frames (at most 64). Frames due after the
    /// deadline are not sent. The lateness is the program's (when each frame was built
    /// against when it was due; its histogram's edges stand for every frame in the
    /// bucket above them, so the percentiles are not understated).
    pub fn run_paced(&mut self, cfg: &LoopCfg, rate: u64) -> Result<LoopOut, (io::Error, u64)> {
        let off = |k: u64| (k * 1_000_000_000 + rate / 2) / rate;
        let chunk = ((rate as u128 * CHUNK_NS as u128 / 1_000_000_000) as u64).max(1);
        let inner = paced_inner_batch(rate);
        let mut out = LoopOut {
            lateness: Hist::new(),
            ..Default::default()
        };
        // A first batch checks that frames leave at all (waiting, maybe, for the peer's
        // poll); the schedule is then set anew from the next frame on, so that the
        // check's wait is not a stall the next frames would catch up in one burst. The
        // achieved rate is measured from there, as for the other techniques.
        let gap = catch_up_gap_ns(rate, cfg.catch_up);
        let burst = catch_up_burst_ns(gap, inner);
        self.set_schedule(crate::pace::now() + 200_000, rate, gap, burst)
            .map_err(|e| (e, 0))?;
        let probe = (inner as u64).min(cfg.planned);
        match self.run_batched(probe as usize, inner) {
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) => return Err((e, 0)),
            Ok(()) => {}
        }
        let mut sent = self.slot_words().map_err(|e| (e, 0))?[W_K];
        if sent > 0 && !self.delivered(sent as usize) {
            return Err((
                io::Error::new(
                    io::ErrorKind::NotConnected,
                    "frames were accepted but did not leave the interface",
                ),
                0,
            ));
        }
        let start = (crate::pace::now() + 100_000).saturating_sub(off(sent));
        let mut w = self.slot_words().map_err(|e| (e, sent))?;
        w[W_START] = start;
        self.set_words(&w).map_err(|e| (e, sent))?;
        // The span is measured as the other techniques measure theirs: from the first
        // frame's time (frame 0, on the schedule as restarted) to the last frame's, and
        // the frames after the first over it (one for frame 0 itself). Measured from
        // frame `sent` instead, a short run's rate came out high by one frame's share.
        out.first_batch = 1;
        out.first_tx = start;
        let last_k = match cfg.deadline_ns {
            // the frames due before the deadline
            Some(d) => ((d as u128 * rate as u128) / 1_000_000_000) as u64,
            None => cfg.planned,
        }
        .min(cfg.planned);
        // A stall: the time between two test runs (from the later of the last frame's
        // build, in the kernel, and the next frame's due time) in which frames were due
        // and none could leave: the process stopped (it stops on its way out of a test
        // run and goes on with the next after SIGCONT) or without a CPU in user space.
        // Waits inside a test run are the frames' lateness.
        out.stall = Some((0, 0));
        let mut returned = start;
        let stalled = |out: &mut LoopOut, sent: u64, ts: u64, built: u64| {
            let from = built.max(start + off(sent));
            let idle = ts.saturating_sub(from);
            if out.stall.is_none_or(|(longest, _)| idle > longest) {
                out.stall = Some((idle, from));
            }
        };
        while sent < last_k {
            if crate::pace::stopped() {
                out.stop = Stop::Signal;
                break;
            }
            let ts = crate::pace::now();
            if cfg.deadline_ns.is_some_and(|d| ts >= start + d) {
                out.stop = Stop::Deadline;
                break;
            }
            stalled(&mut out, sent, ts, returned);
            if !dev_up(&self.dev) {
                // as a socket's send fails on a link set down (a test run would go on
                // and its frames would vanish)
                return Err((io::Error::from_raw_os_error(libc::ENETDOWN), sent));
            }
            let r = self.run_batched(chunk.min(last_k - sent) as usize, inner);
            let w = self.slot_words().map_err(|e| (e, sent))?;
            (sent, returned) = (w[W_K], w[W_LAST].max(start));
            match r {
                // a signal: a stop's (SIGSTOP, then SIGCONT) goes on, netassay's own ends
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) => return Err((e, sent)),
                Ok(()) => {}
            }
        }
        out.end = crate::pace::now();
        if crate::pace::stopped() {
            out.stop = Stop::Signal;
        } else if out.stop == Stop::Complete && sent < cfg.planned {
            out.stop = Stop::Deadline;
        }
        if sent < cfg.planned {
            // ended before every frame went (deadline, signal): a stall it ended in counts
            let end = out.end;
            stalled(&mut out, sent, end, returned);
        }
        let w = self.slot_words().map_err(|e| (e, sent))?;
        out.sent = w[W_K];
        out.last_tx = w[W_LAST];
        let max = w[W_LATE_MAX];
        let counts = &w[W_LATE..W_GAP];
        let mut below = out.sent;
        for (i, c) in counts.iter().enumerate() {
            // frames late by [thr[i-1], thr[i]) count as thr[i] (or the max)
            let edge = LATE_THRESHOLDS_NS[i].min(max);
            out.lateness.add_n(edge, below - c);
            below = *c;
        }
        out.lateness.add_n(max, below);
        out.lateness.max = max;
        out.end = crate::pace::now();
        Ok(out)
    }
}

impl Tx for Xdp {
    fn name(&self) -> &'static str {
        "xdp_live_frames"
    }
    fn stamps_itself(&self) -> bool {
        true
    }
    fn delivered(&mut self, n: usize) -> bool {
        // veth counts redirected frames in the sender's tx_packets once the peer
        // took them; wait a little for its NAPI poll.
        for _ in 0..40 {
            match dev_stat(&self.dev, "tx_packets") {
                Some(v) if v > self.tx0 && n > 0 => return true,
                None => return false,
                _ => std::thread::sleep(std::time::Duration::from_micros(500)),
            }
        }
        false
    }
    fn slot(&mut self, _i: usize) -> &mut [u8] {
        &mut self.dummy
    }
    fn send(&mut self, _from: usize, n: usize) -> io::Result<usize> {
        let now = crate::pace::now();
        if now.saturating_sub(self.up_checked) >= UP_CHECK_NS {
            // a test run on a device set down goes on and its frames vanish: fail as
            // a socket's send does (at most every UP_CHECK_NS)
            self.up_checked = now;
            if !dev_up(&self.dev) {
                return Err(io::Error::from_raw_os_error(libc::ENETDOWN));
            }
        }
        self.run(n)?;
        Ok(n)
    }
}

/// Whether `dev` is set up (IFF_UP in its sysfs flags); a device that cannot be read
/// counts as up (its sends fail on their own).
pub fn dev_up(dev: &str) -> bool {
    std::fs::read_to_string(format!("/sys/class/net/{dev}/flags"))
        .ok()
        .and_then(|f| u64::from_str_radix(f.trim().trim_start_matches("0x"), 16).ok())
        .is_none_or(|flags| flags & libc::IFF_UP as u64 != 0)
}

/// Read a `statistics/` counter of `dev` (in this namespace's /sys).
pub fn dev_stat(dev: &str, name: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/sys/class/net/{dev}/statistics/{name}"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf::{XDP_PASS, XDP_TX};
    use crate::packet::{spec4, Spec};
    use std::os::fd::AsFd;

    /// The kernel runs the program (not parked anywhere: ifindex 1 is the
    /// loopback of the namespace the test runs in, and nothing is sent), and every
    /// frame it builds is the one `tx`'s stamping builds: flows in order and drawn,
    /// with the run's addresses or their own, IPv4 and IPv6. Needs root (skipped
    /// without it).
    #[test]
    fn the_kernel_stamps_each_frame_as_the_socket_techniques_do() {
        use crate::flows::Order;

        // SAFETY: geteuid takes nothing and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: loading a BPF program needs root");
            return;
        }
        let cases = [
            (
                "198.18.0.2",
                "198.19.0.2",
                64usize,
                1u64,
                1u64,
                1u32,
                Order::Incremental,
            ),
            ("198.18.0.2", "198.19.0.2", 64, 16, 1, 1, Order::Random(4)),
            (
                "198.18.0.2",
                "198.19.1.1",
                64,
                1_000_000,
                65_000,
                1,
                Order::Random(9),
            ),
            (
                "198.18.0.2",
                "198.19.1.1",
                128,
                1_000_000,
                1,
                1,
                Order::Incremental,
            ),
            (
                "198.18.0.2",
                "198.19.1.1",
                64,
                500,
                1000,
                64,
                Order::Incremental,
            ),
            (
                "2001:2:0:1::2",
                "2001:2:0:8000::1",
                84,
                1_000_000,
                1_000_000,
                4096,
                Order::Random(2),
            ),
            ("2001:2::2", "2001:2::3", 87, 1, 1, 1, Order::Incremental),
            ("2001:2::2", "2001:2::3", 1518, 300, 1, 1, Order::Random(5)),
            (
                "198.18.0.2",
                "198.19.0.2",
                1518,
                7,
                1,
                1,
                Order::Incremental,
            ),
        ];
        for (src, dst, size, flows, dsts, step, order) in cases {
            let spec = Spec {
                src: src.parse().unwrap(),
                dst: dst.parse().unwrap(),
                size,
                ..spec4()
            };
            let t = Template::new(&spec).unwrap();
            let plan =
                Plan::new(flows, dsts, step, spec.sport, &spec.src, &spec.dst, order).unwrap();
            let l = load(&t, &plan, 1).unwrap();
            let prog = l.prog;
            let [map, perm]: [OwnedFd; 2] = l.maps.try_into().unwrap();
            let _perm = plan
                .permutation()
                .map(|order| perm_map(perm, order).unwrap());
            let ks = [
                0u64,
                1,
                2,
                65_535,
                65_536,
                65_537,
                flows - 1,
                flows,
                3 * flows + 7,
                123_456_789,
            ];
            for k in ks {
                let mut w = [0u64; VALUE_WORDS];
                w[W_K] = k;
                let mut v = [0u8; VALUE_WORDS * 8];
                for (i, x) in w.iter().enumerate() {
                    put64(&mut v, i * 8, *x);
                }
                bpf::map_update(&map, 0, &v).unwrap();
                // a frame as the kernel recycles it: whatever the path wrote in it
                let mut dirty = t.frame.clone();
                dirty[14..54].iter_mut().for_each(|b| *b ^= 0x5a);
                let (ret, out) = bpf::test_run(prog.as_fd(), &dirty, 1).unwrap();
                assert_eq!(ret, XDP_TX, "{src} {flows} flows k {k}");
                let l = t.layout;
                let ts = u64::from_be_bytes(out[l.ts()..l.ts() + 8].try_into().unwrap());
                let mut want = t.frame.clone();
                let f = plan.flow_of(k);
                if plan.fixed_addresses() {
                    t.stamp(&mut want, f as u16, k / flows, ts);
                } else {
                    t.stamp_tuple(&mut want, f, &plan.tuple(f), k / flows, ts);
                }
                assert_eq!(out, want, "{src} {flows} flows {dsts} dsts k {k}");
                assert_eq!(crate::packet::checksums_ok(&out), Some(true));
                // a frame from another interface passes untouched
                let (ret, out) = bpf::test_run(prog.as_fd(), &dirty, 2).unwrap();
                assert_eq!((ret, out), (XDP_PASS, dirty.clone()));
            }
        }
    }

    #[test]
    fn kernel_pacing_is_for_whole_rates_from_the_minimum() {
        assert_eq!(kernel_paced(Some(2e6)), Some(2_000_000));
        assert_eq!(kernel_paced(Some(MIN_KERNEL_PACED_PPS)), Some(1000));
        assert_eq!(kernel_paced(Some(999.0)), None);
        assert_eq!(kernel_paced(Some(1500.5)), None);
        // a fraction of a rate from 50 kpps is within MAX_ROUNDING of a whole one
        assert_eq!(kernel_paced(Some(4_938_293.57)), Some(4_938_294));
        assert_eq!(kernel_paced(Some(50_000.4)), Some(50_000));
        assert_eq!(kernel_paced(Some(49_999.5)), None);
        assert_eq!(kernel_paced(None), None);
    }

    #[test]
    fn headers_restored_from_the_template() {
        for spec in [
            spec4(),
            Spec {
                size: 65,
                ..spec4()
            },
            Spec {
                src: "2001:2::2".parse().unwrap(),
                dst: "2001:2::3".parse().unwrap(),
                size: 84,
                ..spec4()
            },
            Spec {
                src: "2001:2::2".parse().unwrap(),
                dst: "2001:2::3".parse().unwrap(),
                size: 87,
                ..spec4()
            },
            Spec {
                src: "2001:2::2".parse().unwrap(),
                dst: "2001:2::3".parse().unwrap(),
                size: 1518,
                ..spec4()
            },
        ] {
            let t = Template::new(&spec).unwrap();
            let (offs, words) = restored(&t);
            let n = if t.layout.v6 { WORDS_V6 } else { WORDS_V4 };
            assert_eq!((words.len(), offs.len()), (n, n));
            // the program's stores: 8 bytes apart, but for the last
            for (i, &o) in offs[..n - 1].iter().enumerate() {
                assert_eq!(o as usize, i * 8);
            }
            let len = restored_len(&t).min(t.frame.len());
            assert!(len >= t.layout.ts() + 8 && len <= t.frame.len());
            // each store writes back the template's bytes at its offset, and together
            // they cover every byte up to the stamped fields' end
            let mut covered = vec![false; t.frame.len()];
            for (&off, w) in offs.iter().zip(&words) {
                let off = off as usize;
                assert_eq!(w.to_ne_bytes(), t.frame[off..off + 8]);
                covered[off..off + 8].iter_mut().for_each(|c| *c = true);
            }
            assert!(covered[..len].iter().all(|c| *c));
        }
    }

    /// Paced, the program waits for each frame's time and counts how late it was
    /// built: frames due in the past are built at once, late by at least their due
    /// time's distance; a frame due ahead is built no earlier than it is due. Needs
    /// root (skipped without it).
    /// The live-frame program loaded for an IPv4 frame of one flow, its template and
    /// its state map; None without root (a test then says it is skipped).
    fn loaded() -> Option<(Template, bpf::Loaded, OwnedFd)> {
        // SAFETY: geteuid takes nothing and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: loading a BPF program needs root");
            return None;
        }
        let t = Template::new(&spec4()).unwrap();
        let s = spec4();
        let plan = Plan::one(s.sport, &s.src, &s.dst);
        let mut l = load(&t, &plan, 1).unwrap();
        let [map, _]: [OwnedFd; 2] = std::mem::take(&mut l.maps).try_into().unwrap();
        Some((t, l, map))
    }

    /// Write the program's state words.
    fn put_words(map: &OwnedFd, w: &[u64; VALUE_WORDS]) {
        let mut v = [0u8; VALUE_WORDS * 8];
        for (i, x) in w.iter().enumerate() {
            put64(&mut v, i * 8, *x);
        }
        bpf::map_update(map, 0, &v).unwrap();
    }

    #[test]
    fn the_kernel_waits_for_each_frames_time_and_counts_its_lateness() {
        let Some((t, l, map)) = loaded() else { return };
        let words = |w: &[u64; VALUE_WORDS]| put_words(&map, w);
        let read = || {
            let mut v = [0u8; VALUE_WORDS * 8];
            bpf::map_lookup(&map, 0, &mut v).unwrap();
            let mut w = [0u64; VALUE_WORDS];
            for (i, x) in w.iter_mut().enumerate() {
                *x = u64::from_ne_bytes(v[i * 8..i * 8 + 8].try_into().unwrap());
            }
            w
        };
        // 1000 pps from 5 ms ago: frame 0 is 5 ms late, frame 1 4 ms
        let mut w = [0u64; VALUE_WORDS];
        let t0 = crate::pace::now();
        (w[W_START], w[W_RATE]) = (t0 - 5_000_000, 1000);
        words(&w);
        for _ in 0..2 {
            let (ret, _) = bpf::test_run(l.prog.as_fd(), &t.frame, 1).unwrap();
            assert_eq!(ret, XDP_TX);
        }
        let w = read();
        let t1 = crate::pace::now();
        assert_eq!(w[W_K], 2);
        assert!(w[W_LATE_MAX] >= 5_000_000 && w[W_LATE_MAX] <= t1 - t0 + 5_000_000);
        assert!(t0 <= w[W_FIRST] && w[W_FIRST] <= w[W_LAST] && w[W_LAST] <= t1);
        let late =
            |thr: u64| w[W_LATE + LATE_THRESHOLDS_NS.iter().position(|&x| x == thr).unwrap()];
        assert_eq!(
            (late(2_000_000), late(5_000_000), late(10_000_000)),
            (2, 1, 0)
        );
        // frame 2 is due 3 ms from now: built no earlier
        let due = t0 - 5_000_000 + 2_000_000;
        let mut w = read();
        w[W_START] = crate::pace::now() + 3_000_000 - 2_000_000;
        words(&w);
        let due = due.max(w[W_START] + 2_000_000);
        let (ret, out) = bpf::test_run(l.prog.as_fd(), &t.frame, 1).unwrap();
        assert_eq!(ret, XDP_TX);
        let ts = u64::from_be_bytes(out[t.layout.ts()..t.layout.ts() + 8].try_into().unwrap());
        assert!(ts >= due, "built at {ts}, due at {due}");
        assert_eq!(read()[W_K], 3);
    }

    /// Frames left late by a stall catch up at the bound on average (`--catch-up`):
    /// `burst` ns of them are built at once (a flush's worth), then one per gap; with no
    /// gap, all at once. Needs root (skipped without it).
    #[test]
    fn frames_left_late_catch_up_one_per_gap_after_a_burst() {
        let Some((t, l, map)) = loaded() else { return };
        let set = |gap: u64| {
            // 10 pps from 1 s ago: frames 0-9 are due (a stall of a second)
            let mut w = [0u64; VALUE_WORDS];
            (w[W_START], w[W_RATE]) = (crate::pace::now() - 1_000_000_000, 10);
            (w[W_GAP], w[W_BURST]) = (gap, catch_up_burst_ns(gap, 2));
            put_words(&map, &w);
        };
        let built = |n: usize| -> Vec<u64> {
            (0..n)
                .map(|_| {
                    let (ret, out) = bpf::test_run(l.prog.as_fd(), &t.frame, 1).unwrap();
                    assert_eq!(ret, XDP_TX);
                    u64::from_be_bytes(out[t.layout.ts()..t.layout.ts() + 8].try_into().unwrap())
                })
                .collect()
        };
        const GAP: u64 = 60_000_000;
        set(GAP);
        let ts = built(5);
        assert!(
            ts[1] - ts[0] < GAP,
            "the burst's second frame waited: {ts:?}"
        );
        for (k, at) in ts.iter().enumerate().skip(2) {
            // frame k conforms from one gap per frame past the burst's two
            assert!(
                *at >= ts[0] + (k as u64 - 1) * GAP,
                "frame {k} early: {ts:?}"
            );
        }
        set(0);
        let ts = built(5);
        assert!(
            ts[4] - ts[0] < GAP,
            "with no bound, late frames waited: {ts:?}"
        );
    }
}

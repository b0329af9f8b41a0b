//! XDP live frames: a tiny XDP program, assembled here, stamps flow, sequence, time
//! and the UDP checksum into each frame and returns XDP_TX; the kernel runs it `n`
//! times per BPF_PROG_RUN call (BPF_F_TEST_XDP_LIVE_FRAMES) with the send interface
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
//! the path wrote into it in place (see `restore_headers`).

use crate::bpf::{self, *};
use crate::flows::Plan;
use crate::pace::Hist;
use crate::packet::{Template, SEQ_BITS};
use crate::tx::{LoopCfg, LoopOut, Stop, Tx};
use std::io;

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
/// The least time between two frames' builds (ns; 0: none), so that frames left late by
/// a stall catch up at a bounded rate (`--catch-up`), not in one burst.
const W_GAP: usize = W_LATE + LATE_THRESHOLDS_NS.len();
const VALUE_WORDS: usize = W_GAP + 1;
/// bpf_loop's limit (BPF_MAX_LOOPS): the longest wait for one frame's time is this many
/// clock reads (~25-50 ns each), a fraction of a second: paced live frames are for
/// high rates (see `MIN_PACED_PPS`).
const SPIN_LOOPS: i32 = 1 << 23;
const BPF_FUNC_KTIME_GET_NS: i32 = 5;
const BPF_FUNC_LOOP: i32 = 181;
const BPF_PSEUDO_FUNC: u8 = 4;

fn word(w: usize) -> i16 {
    (w * 8) as i16
}

/// Assemble the stamping program for this template.
///
/// Paced (the map's rate is not 0), frame k is due at start + (k * 1e9 + rate / 2) /
/// rate, the same arithmetic as the AF_PACKET schedule, and the program waits for that
/// time inside the kernel (bpf_loop over the clock) before it builds the frame: one
/// test run carries thousands of frames, each leaving on its own time, instead of one
/// call (and one page pool) per burst. How late each frame was built is counted in
/// the map (largest, and a histogram).
/// Each frame's flow is k % flows (through the permutation map `perm_fd` with
/// `--flow-order random`), its sequence k / flows; where flows have addresses of their
/// own the program also writes the flow's addresses and source port and fixes the
/// IPv4 header checksum (`stamp_tuple`'s arithmetic, `flows::Plan::tuple`).
/// Returns the instructions and where the callback starts.
fn program(
    t: &Template,
    map_fd: i32,
    plan: &Plan,
    perm_fd: Option<i32>,
    ifindex: u32,
) -> (Vec<Insn>, usize) {
    let flows = plan.flows;
    const DROP: usize = 0;
    const UNPACED: usize = 1;
    const STAMP: usize = 2;
    const NOT_MAX: usize = 3;
    const LATE_DONE: usize = 4;
    const NOT_FIRST: usize = 5;
    const CB_BREAK: usize = 6;
    const WAIT_SET: usize = 7;
    let l = t.layout;
    let size = t.frame.len() as i32;
    let mut a = Asm::new(8);
    a.extend([
        mov_x(6, 1),                        // r6 = ctx
        ins(0x61, 2, 6, 12, 0),             // r2 = ctx->ingress_ifindex
        ins(0x15, 2, 0, 2, ifindex as i32), // if r2 == ifindex: a test run, go on
        mov_k(0, XDP_PASS),                 // else a real frame on the parking device:
        exit(),                             // leave it alone
        ins(0x62, 10, 0, -4, 0),            // *(u32 *)(r10 - 4) = 0
    ]);
    a.extend(ld_map(1, map_fd)); // r1 = map
    a.extend([
        mov_x(2, 10), // r2 = r10
        add_k(2, -4), // r2 -= 4 (&key)
        call(1),      // r0 = map_lookup_elem(map, &key)
    ]);
    a.jmp(0x15, 0, 0, 0, DROP); // if r0 == 0 goto drop
    a.extend([
        mov_x(8, 0),                      // r8 = the slot
        ins(0x79, 7, 8, word(W_K), 0),    // r7 = k
        mov_x(1, 7),                      //
        add_k(1, 1),                      //
        ins(0x7b, 8, 1, word(W_K), 0),    // k + 1
        ins(0x79, 1, 8, word(W_RATE), 0), // r1 = rate
    ]);
    a.jmp(0x15, 1, 0, 0, UNPACED); // if rate == 0 goto unpaced
    a.extend([
        mov_x(2, 7),                       // r2 = k
        ins(0x27, 2, 0, 0, 1_000_000_000), // r2 *= 1e9
        mov_x(3, 1),                       //
        rsh_k(3, 1),                       // r3 = rate / 2
        add_x(2, 3),                       //
        ins(0x3f, 2, 1, 0, 0),             // r2 /= rate
        ins(0x79, 3, 8, word(W_START), 0), //
        add_x(2, 3),                       // r2 = due
        ins(0x7b, 10, 2, -24, 0),          // *(u64 *)(r10 - 24) = due (its lateness)
        ins(0x79, 3, 8, word(W_GAP), 0),   // r3 = the least gap between builds
    ]);
    a.jmp(0x15, 3, 0, 0, WAIT_SET); // no gap: wait for the frame's time
    a.jmp(0x15, 7, 0, 0, WAIT_SET); // the first frame: nothing built before it
    a.extend([
        ins(0x79, 4, 8, word(W_LAST), 0), // r4 = the last frame's build time
        add_x(4, 3),                      // + the gap: the earliest this one may be built
    ]);
    a.jmp(0x3d, 2, 4, 0, WAIT_SET); // due at or after it: wait for the frame's time
    a.push(mov_x(2, 4)); // else (catching up after a stall): wait for last + gap
    a.label(WAIT_SET);
    a.extend([
        ins(0x7b, 10, 2, -16, 0), // *(u64 *)(r10 - 16) = the time to wait for
        mov_k(1, SPIN_LOOPS),     // bpf_loop(n,
    ]);
    let cb_ref = a.p.len();
    a.extend([
        ins(0x18, 2, BPF_PSEUDO_FUNC, 0, 0), //   wait_cb (patched below),
        ins(0, 0, 0, 0, 0),                  //
        mov_x(3, 10),                        //
        add_k(3, -16),                       //   &due,
        mov_k(4, 0),                         //   0)
        call(BPF_FUNC_LOOP),                 //
        call(BPF_FUNC_KTIME_GET_NS),         //
        mov_x(9, 0),                         // r9 = now: the build time
        mov_x(3, 9),                         //
        ins(0x79, 4, 10, -24, 0),            //
        ins(0x1f, 3, 4, 0, 0),               // r3 = now - due: lateness
        ins(0x79, 4, 8, word(W_LATE_MAX), 0), //
    ]);
    a.jmp(0x3d, 4, 3, 0, NOT_MAX); // if max >= lateness goto not_max
    a.push(ins(0x7b, 8, 3, word(W_LATE_MAX), 0));
    a.label(NOT_MAX);
    for (i, thr) in LATE_THRESHOLDS_NS.iter().enumerate() {
        a.jmp(0xa5, 3, 0, *thr as i32, LATE_DONE); // if lateness < thr: done
        let w = word(W_LATE + i);
        a.extend([ins(0x79, 4, 8, w, 0), add_k(4, 1), ins(0x7b, 8, 4, w, 0)]);
    }
    a.label(LATE_DONE);
    a.jmp(0x05, 0, 0, 0, STAMP);
    a.label(UNPACED);
    a.extend([call(BPF_FUNC_KTIME_GET_NS), mov_x(9, 0)]); // r9 = now
    a.label(STAMP);
    a.jmp(0x55, 7, 0, 0, NOT_FIRST); // if k != 0 goto not_first
    a.push(ins(0x7b, 8, 9, word(W_FIRST), 0));
    a.label(NOT_FIRST);
    a.push(ins(0x7b, 8, 9, word(W_LAST), 0)); // the last frame's build time
    if let Some(fd) = perm_fd {
        // the flow from the permutation, before the frame's pointers are loaded (the
        // helper call clobbers r1-r5)
        a.extend([
            mov_x(8, 7),                      //
            ins(0x97, 8, 0, 0, flows as i32), // r8 = k % flows
            ins(0x37, 7, 0, 0, flows as i32), // r7 = k / flows : sequence
            ins(0x63, 10, 8, -32, 0),         // *(u32 *)(r10 - 32) = r8
        ]);
        a.extend(ld_map(1, fd));
        a.extend([mov_x(2, 10), add_k(2, -32), call(1)]);
        a.jmp(0x15, 0, 0, 0, DROP); // no such slot
        a.push(ins(0x61, 8, 0, 0, 0)); // r8 = perm[k % flows] : flow
    }
    a.extend([
        ins(0x61, 2, 6, 0, 0), // r2 = ctx->data
        ins(0x61, 3, 6, 4, 0), // r3 = ctx->data_end
        mov_x(4, 2),           //
        add_k(4, size),        //
    ]);
    a.jmp(0x2d, 4, 3, 0, DROP); // if data + size > data_end goto drop
    a.extend(restore_headers(t));
    if perm_fd.is_none() {
        a.extend([
            mov_x(8, 7),                      //
            ins(0x97, 8, 0, 0, flows as i32), // r8 = k % flows : flow
            ins(0x37, 7, 0, 0, flows as i32), // r7 = k / flows : sequence
        ]);
    }
    if plan.fixed_addresses() {
        a.extend([
            mov_x(4, 8),
            be(4, 16),
            ins(0x6b, 2, 4, l.flow() as i16, 0), // flow id
            mov_x(4, 8),
            add_k(4, t.sport as i32),
            be(4, 16),
            ins(0x6b, 2, 4, l.sport() as i16, 0), // UDP source port
            mov_x(4, 7),
            be(4, 64),
            ins(0x7b, 2, 4, l.seq() as i16, 0), // sequence
            mov_x(4, 9),
            be(4, 64),
            ins(0x7b, 2, 4, l.ts() as i16, 0), // transmit time
            mov_k(1, (t.base_sum + t.sport as u32) as i32),
            add_x(1, 8),
            add_x(1, 8),
        ]);
    } else {
        a.extend(stamp_tuple(t, plan));
    }
    let mut p = std::mem::take(&mut a.p);
    for r in [7u8, 9] {
        for sh in [0, 16, 32, 48] {
            p.push(mov_x(4, r));
            if sh > 0 {
                p.push(rsh_k(4, sh));
            }
            if sh < 48 {
                p.push(and_k(4, 0xffff));
            }
            p.push(add_x(1, 4));
        }
    }
    for _ in 0..2 {
        p.push(mov_x(4, 1));
        p.push(rsh_k(4, 16));
        p.push(and_k(1, 0xffff));
        p.push(add_x(1, 4));
    }
    p.extend([
        ins(0xa7, 1, 0, 0, 0xffff), // r1 ^= 0xffff
        ins(0x55, 1, 0, 1, 0),      // if r1 != 0 skip
        mov_k(1, 0xffff),           // a zero UDP checksum is sent as all ones
        be(1, 16),
        ins(0x6b, 2, 1, l.csum() as i16, 0),
        mov_k(0, XDP_TX), // out of the ingress interface (the ctx's ifindex)
        exit(),
    ]);
    a.p = p;
    a.label(DROP);
    a.extend([mov_k(0, XDP_DROP), exit()]);
    // wait_cb(index, &due): 1 (stop) once the clock reached due, else 0 (go on)
    let cb = a.p.len();
    a.extend([
        mov_x(6, 2),
        call(BPF_FUNC_KTIME_GET_NS),
        ins(0x79, 1, 6, 0, 0),
    ]);
    a.jmp(0x3d, 0, 1, 0, CB_BREAK); // if now >= due goto break
    a.extend([mov_k(0, 0), exit()]);
    a.label(CB_BREAK);
    a.extend([mov_k(0, 1), exit()]);
    let mut p = a.finish();
    p[cb_ref].3 = (cb - cb_ref - 1) as i32;
    (p, cb)
}

/// r3 = the two 16-bit words of r`r` added to r1 (and r6 for IPv4's header).
fn add_words(r: u8, v4: bool) -> Vec<Insn> {
    let mut p = vec![mov_x(3, r), rsh_k(3, 16), add_x(1, 3)];
    if v4 {
        p.push(add_x(6, 3));
    }
    p.extend([mov_x(3, r), and_k(3, 0xffff), add_x(1, 3)]);
    if v4 {
        p.push(add_x(6, 3));
    }
    p
}

/// Fold r`r` to 16 bits (twice, r3 a scratch register).
fn fold_reg(r: u8) -> Vec<Insn> {
    let mut p = Vec::new();
    for _ in 0..2 {
        p.extend([mov_x(3, r), rsh_k(3, 16), and_k(r, 0xffff), add_x(r, 3)]);
    }
    p
}

/// Flow r8's tuple (`flows::Plan::tuple`) written into the frame at r2, its IPv4 header
/// checksum fixed, its flow id and sequence field (r7, the flow's high bits added)
/// and the time (r9) stamped; r1 left holding the UDP checksum's sum but for the
/// sequence field and the time, which the caller adds.
fn stamp_tuple(t: &Template, plan: &Plan) -> Vec<Insn> {
    let l = t.layout;
    let v4 = !l.v6;
    let (slots, dsts) = (plan.slots() as i32, plan.dsts as i32);
    let mut p = vec![
        mov_k(1, t.tuple_sum as i32), // the UDP checksum's fixed part
        mov_k(6, t.ip_sum as i32),    // the IPv4 header's
        mov_x(4, 8),
        ins(0x97, 4, 0, 0, slots), // r4 = f % slots
        mov_x(5, 8),
        ins(0x37, 5, 0, 0, slots), // r5 = f / slots
    ];
    if slots != dsts {
        p.extend([ins(0x27, 4, 0, 0, dsts), ins(0x37, 4, 0, 0, slots)]); // r4 * dsts / slots
    }
    p.extend([
        ins(0x24, 4, 0, 0, plan.dst_step as i32), // w4 *= step
        ins(0x04, 4, 0, 0, plan.dst_low as i32),  // w4 += the first destination
    ]);
    p.extend(add_words(4, v4));
    p.extend([be(4, 32), ins(0x63, 2, 4, l.dst_low() as i16, 0)]);
    let ports = plan.ports() as i32;
    p.extend([
        mov_x(4, 5),
        ins(0x97, 4, 0, 0, ports), // r4 = q % ports
        ins(0x37, 5, 0, 0, ports), // r5 = q / ports
        add_k(4, plan.src_port as i32),
        add_x(1, 4),
        be(4, 16),
        ins(0x6b, 2, 4, l.sport() as i16, 0), // UDP source port
        ins(0x04, 5, 0, 0, plan.src_low as i32), // w5 += the first source
    ]);
    p.extend(add_words(5, v4));
    p.extend([be(5, 32), ins(0x63, 2, 5, l.src_low() as i16, 0)]);
    if v4 {
        p.extend(fold_reg(6));
        p.extend([
            ins(0xa7, 6, 0, 0, 0xffff),
            be(6, 16),
            ins(0x6b, 2, 6, l.ip_csum() as i16, 0), // IPv4 header checksum
        ]);
    }
    p.extend([
        mov_x(4, 8),
        and_k(4, 0xffff),
        add_x(1, 4),
        be(4, 16),
        ins(0x6b, 2, 4, l.flow() as i16, 0), // flow id, low 16 bits
        mov_x(4, 8),
        rsh_k(4, 16),
        ins(0x67, 4, 0, 0, SEQ_BITS as i32),
        ins(0x4f, 7, 4, 0, 0), // r7 |= its high 16 bits: the sequence field
        mov_x(4, 7),
        be(4, 64),
        ins(0x7b, 2, 4, l.seq() as i16, 0),
        mov_x(4, 9),
        be(4, 64),
        ins(0x7b, 2, 4, l.ts() as i16, 0), // transmit time
    ]);
    p
}

/// How many leading bytes of the frame `restore_headers` writes back: every header and
/// the payload's stamped fields (magic, flags, flow, sequence, time), in whole words.
fn restored_len(t: &Template) -> usize {
    (t.layout.ts() + 8).div_ceil(8) * 8
}

/// Write the template's headers back into the frame, 8 bytes a store (the last store
/// may overlap the one before it). The kernel builds a live frame's page from the
/// template once and then recycles it: what the path wrote into a frame (a router's
/// MAC rewrite, TTL or hop limit and IPv4 checksum, all done in place in the same
/// page) came back in the next frame built on that page, and a kernel router dropped
/// 1-3% of a flood as addressed to another host (ip_rcv_core, OTHERHOST). The stamped
/// fields are written after this, as before.
fn restore_headers(t: &Template) -> Vec<Insn> {
    let len = restored_len(t).min(t.frame.len());
    let mut offs: Vec<usize> = (0..len / 8).map(|i| i * 8).collect();
    if !len.is_multiple_of(8) {
        offs.push(len - 8);
    }
    let mut p = Vec::with_capacity(offs.len() * 3);
    for off in offs {
        let w = u64::from_le_bytes(t.frame[off..off + 8].try_into().unwrap());
        p.push(ins(0x18, 4, 0, 0, w as u32 as i32)); // r4 = template word (ld_imm64)
        p.push(ins(0, 0, 0, 0, (w >> 32) as u32 as i32));
        p.push(ins(0x7b, 2, 4, off as i16, 0)); // *(u64 *)(data + off) = r4
    }
    p
}

/// The least time between two frames' builds when frames left late by a stall catch up
/// at most `factor` times `rate` (0: no bound).
pub fn catch_up_gap_ns(rate: u64, factor: Option<f64>) -> u64 {
    match factor {
        Some(f) if f > 1.0 && rate > 0 => (1e9 / (f * rate as f64)).floor() as u64,
        _ => 0,
    }
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

/// The permutation of `--flow-order random` as the program reads it: flow i's place
/// in the order at key i (8-byte values, the low 4 bytes read).
fn perm_map(order: &[u32]) -> io::Result<bpf::Shared> {
    let mut m = bpf::Shared::create(8, order.len() as u32)?;
    for (slot, &f) in m.u64s_mut(order.len()).iter_mut().zip(order) {
        *slot = f as u64;
    }
    Ok(m)
}

pub struct Xdp {
    prog: Fd,
    _park: Option<Fd>,
    map: Fd,
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
        let map = bpf::map_create(BPF_MAP_TYPE_ARRAY, (VALUE_WORDS * 8) as u32, 1)?;
        let perm = match plan.permutation() {
            Some(order) => Some(perm_map(order)?),
            None => None,
        };
        let (code, cb) = program(t, map.0, plan, perm.as_ref().map(|m| m.fd.0), ifindex);
        let funcs = [(0, "netassay_gen"), (cb as u32, "netassay_wait")];
        let prog = bpf::prog_load_xdp_funcs(&code, "netassay_gen", &funcs)?;
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
        put32(&mut a, 0, self.prog.0 as u32);
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

    /// A new run: no frame yet, the schedule from `start` at `rate`, frames built at
    /// least `gap_ns` apart (0: no bound on a catch-up).
    fn set_schedule(&self, start: u64, rate: u64, gap_ns: u64) -> io::Result<()> {
        let mut w = [0u64; VALUE_WORDS];
        w[W_START] = start;
        w[W_RATE] = rate;
        w[W_GAP] = gap_ns;
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
        self.set_schedule(
            crate::pace::now() + 200_000,
            rate,
            catch_up_gap_ns(rate, cfg.catch_up),
        )
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
    use crate::packet::spec4;

    #[test]
    fn program_shape() {
        let t = Template::new(&spec4()).unwrap();
        let s = spec4();
        let plan = Plan::new(
            4,
            1,
            1,
            s.sport,
            &s.src,
            &s.dst,
            crate::flows::Order::Incremental,
        )
        .unwrap();
        let (p, cb) = program(&t, 3, &plan, None, 7);
        let drop = p.iter().position(|x| *x == mov_k(0, XDP_DROP)).unwrap();
        // a frame from another interface passes untouched
        assert_eq!((p[2].0, p[2].2, p[2].3), (0x15, 2, 7));
        assert_eq!(p[3].3, XDP_PASS);
        // the map lookup's null check and the bounds check land on the drop block
        let guards: Vec<usize> = (0..drop)
            .filter(|&i| (p[i].0 == 0x15 && p[i].1 == 0 && p[i].3 == 0) || p[i].0 == 0x2d)
            .collect();
        assert_eq!(guards.len(), 2);
        for i in guards {
            assert_eq!(i + 1 + p[i].2 as usize, drop);
        }
        assert_eq!(p[drop + 1].0, 0x95);
        // the main function ends before the callback, which bpf_loop is given
        assert_eq!(cb, drop + 2);
        let f = p
            .iter()
            .position(|x| x.0 == 0x18 && x.1 >> 4 == BPF_PSEUDO_FUNC)
            .unwrap();
        assert_eq!(f + 1 + p[f].3 as usize, cb);
        assert_eq!(p[f + 5], call(BPF_FUNC_LOOP));
        assert_eq!(p.last().unwrap().0, 0x95);
    }

    /// One test run (not live: the frame comes back) of `prog` on `frame`, as if it
    /// arrived on interface `ifindex`; the return code and the frame it left.
    fn test_run(prog: &Fd, frame: &[u8], ifindex: u32) -> (u32, Vec<u8>) {
        let ctx: [u32; 6] = [0, frame.len() as u32, 0, ifindex, 0, 0];
        let mut out = vec![0u8; frame.len() + 256];
        let mut a = [0u8; 80];
        put32(&mut a, 0, prog.0 as u32);
        put32(&mut a, 8, frame.len() as u32);
        put32(&mut a, 12, out.len() as u32);
        put64(&mut a, 16, frame.as_ptr() as u64);
        put64(&mut a, 24, out.as_mut_ptr() as u64);
        put32(&mut a, 32, 1);
        put32(&mut a, 40, std::mem::size_of_val(&ctx) as u32);
        put64(&mut a, 48, ctx.as_ptr() as u64);
        bpf::sys(BPF_PROG_TEST_RUN, &mut a).expect("test run");
        let len = u32::from_ne_bytes(a[12..16].try_into().unwrap()) as usize;
        out.truncate(len);
        (u32::from_ne_bytes(a[4..8].try_into().unwrap()), out)
    }

    /// The kernel runs the assembled program (not parked anywhere: ifindex 1 is the
    /// loopback of the namespace the test runs in, and nothing is sent), and every
    /// frame it builds is the one `tx`'s stamping builds: flows in order and drawn,
    /// with the run's addresses or their own, IPv4 and IPv6. Needs root (skipped
    /// without it).
    #[test]
    fn the_kernel_stamps_each_frame_as_the_socket_techniques_do() {
        use crate::flows::Order;
        use crate::packet::Spec;
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
            let map = bpf::map_create(BPF_MAP_TYPE_ARRAY, (VALUE_WORDS * 8) as u32, 1).unwrap();
            let perm = plan.permutation().map(|order| perm_map(order).unwrap());
            let (code, cb) = program(&t, map.0, &plan, perm.as_ref().map(|m| m.fd.0), 1);
            let funcs = [(0, "netassay_gen"), (cb as u32, "netassay_wait")];
            let prog = bpf::prog_load_xdp_funcs(&code, "netassay_gen", &funcs).unwrap();
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
                let (ret, out) = test_run(&prog, &dirty, 1);
                assert_eq!(ret, XDP_TX as u32, "{src} {flows} flows k {k}");
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
                let (ret, out) = test_run(&prog, &dirty, 2);
                assert_eq!((ret, out), (XDP_PASS as u32, dirty.clone()));
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
    fn functions_btf_is_well_formed() {
        let b = crate::bpf::funcs_btf(&["a", "bc"]);
        assert_eq!(&b[..2], &0xeb9fu16.to_ne_bytes());
        let u = |o: usize| u32::from_ne_bytes(b[o..o + 4].try_into().unwrap());
        let (hdr, tlen, slen) = (u(4) as usize, u(12) as usize, u(20) as usize);
        assert_eq!(hdr, 24);
        assert_eq!(b.len(), hdr + tlen + slen);
        // INT, FUNC_PROTO and one FUNC per name: 4 + 3 + 2 * 3 words
        assert_eq!(tlen, 13 * 4);
        assert_eq!(&b[hdr + tlen..], b"\0int\0a\0bc\0");
    }

    #[test]
    fn headers_restored_from_the_template() {
        let t = Template::new(&spec4()).unwrap();
        let r = restore_headers(&t);
        let len = restored_len(&t).min(t.frame.len());
        assert!(len >= t.layout.ts() + 8 && len <= t.frame.len());
        // each store writes back the template's bytes at its offset, and together they
        // cover every byte up to the stamped fields' end
        let mut covered = vec![false; t.frame.len()];
        for w in r.chunks(3) {
            let (lo, hi, st) = (w[0], w[1], w[2]);
            assert_eq!(
                (lo.0, st.0, st.1, st.2 >= 0),
                (0x18, 0x7b, (4 << 4) | 2, true)
            );
            let off = st.2 as usize;
            let word = (lo.3 as u32 as u64) | ((hi.3 as u32 as u64) << 32);
            assert_eq!(word.to_le_bytes(), t.frame[off..off + 8]);
            covered[off..off + 8].iter_mut().for_each(|c| *c = true);
        }
        assert!(covered[..len].iter().all(|c| *c));
    }
}

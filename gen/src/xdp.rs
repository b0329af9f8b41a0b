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
//! xdp_test_run_init_page, the page allocator). Paced runs need one call per batch,
//! so their lateness jitters more than sendmmsg's (p99 ~0.3-1 ms against ~20 us at
//! 480-600 kpps here), which is why `auto` only uses XDP from 500 kpps up.

use crate::bpf::{self, *};
use crate::packet::Template;
use crate::tx::Tx;
use std::io;

const BPF_F_TEST_XDP_LIVE_FRAMES: u32 = 1 << 1;
/// Frames per inner batch (the kernel allows up to 256): each batch is flushed into
/// the veth peer's 256-frame ring before its NAPI poll (64 a round) drains it, and
/// 256 overflowed that ring when the loop caught up after a stall (egress drops);
/// 64 measured as fast at the peak, without drops.
const MAX_INNER_BATCH: usize = 64;

/// Assemble the stamping program for this template.
fn program(t: &Template, map_fd: i32, flows: u64, ifindex: u32) -> Vec<Insn> {
    let l = t.layout;
    let size = t.frame.len() as i32;
    let mut p = vec![
        mov_x(6, 1),                        // r6 = ctx
        ins(0x61, 2, 6, 12, 0),             // r2 = ctx->ingress_ifindex
        ins(0x15, 2, 0, 2, ifindex as i32), // if r2 == ifindex: a test run, go on
        mov_k(0, XDP_PASS),                 // else a real frame on the parking device:
        exit(),                             // leave it alone
        ins(0x62, 10, 0, -4, 0),            // *(u32 *)(r10 - 4) = 0
        ins(0x18, 1, 1, 0, map_fd),         // r1 = map (ld_imm64, pseudo map fd)
        ins(0, 0, 0, 0, 0),                 //
        mov_x(2, 10),                       // r2 = r10
        add_k(2, -4),                       // r2 -= 4 (&key)
        call(1),                            // r0 = map_lookup_elem(map, &key)
        ins(0x15, 0, 0, -1, 0),             // if r0 == 0 goto drop (patched)
        ins(0x79, 7, 0, 0, 0),              // r7 = *(u64 *)r0 : packet number k
        mov_x(1, 7),                        //
        add_k(1, 1),                        //
        ins(0x7b, 0, 1, 0, 0),              // *(u64 *)r0 = k + 1
        call(5),                            // r0 = bpf_ktime_get_ns() (CLOCK_MONOTONIC)
        mov_x(9, 0),                        // r9 = ts
        ins(0x61, 2, 6, 0, 0),              // r2 = ctx->data
        ins(0x61, 3, 6, 4, 0),              // r3 = ctx->data_end
        mov_x(4, 2),                        //
        add_k(4, size),                     //
        ins(0x2d, 4, 3, -1, 0),             // if data + size > data_end goto drop (patched)
    ];
    p.extend(restore_headers(t));
    p.extend([
        mov_x(8, 7),                        //
        ins(0x97, 8, 0, 0, flows as i32),   // r8 = k % flows : flow
        ins(0x37, 7, 0, 0, flows as i32),   // r7 = k / flows : sequence
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
    let drop = p.len();
    p.extend([mov_k(0, XDP_DROP), exit()]);
    for (i, x) in p.iter_mut().enumerate() {
        if x.2 == -1 && (x.0 == 0x15 || x.0 == 0x2d) {
            x.2 = (drop - i - 1) as i16;
        }
    }
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

pub struct Xdp {
    prog: Fd,
    _park: Option<Fd>,
    _map: Fd,
    frame: Vec<u8>,
    /// struct xdp_md handed to each run: data 0, data_end = frame length and the
    /// ingress interface, so that XDP_TX leaves through it.
    ctx: [u32; 6],
    dummy: Vec<u8>,
    dev: String,
    tx0: u64,
}

impl Xdp {
    pub fn open(t: &Template, flows: u64, ifindex: u32, dev: &str) -> io::Result<Xdp> {
        let map = bpf::map_create(BPF_MAP_TYPE_ARRAY, 8, 1)?;
        let prog = bpf::prog_load_xdp(&program(t, map.0, flows, ifindex), "netassay_gen")?;
        // Park the program on this namespace's loopback (generic XDP; it passes
        // every real frame): while it is attached somewhere, a test run does not
        // patch the kernel's XDP dispatcher twice per call (~25 ms per call here).
        let park = bpf::xdp_link(&prog, 1, XDP_FLAGS_SKB_MODE).ok();
        Ok(Xdp {
            prog,
            _park: park,
            _map: map,
            frame: t.frame.clone(),
            ctx: [0, t.frame.len() as u32, 0, ifindex, 0, 0],
            dummy: vec![0u8; t.frame.len()],
            dev: dev.to_string(),
            tx0: dev_stat(dev, "tx_packets").unwrap_or(0),
        })
    }

    fn run(&mut self, n: usize) -> io::Result<()> {
        let mut a = [0u8; 80];
        put32(&mut a, 0, self.prog.0 as u32);
        put32(&mut a, 8, self.frame.len() as u32);
        put64(&mut a, 16, self.frame.as_ptr() as u64);
        put32(&mut a, 32, n as u32);
        put32(&mut a, 40, std::mem::size_of_val(&self.ctx) as u32);
        put64(&mut a, 48, self.ctx.as_ptr() as u64);
        put32(&mut a, 64, BPF_F_TEST_XDP_LIVE_FRAMES);
        put32(&mut a, 72, n.min(MAX_INNER_BATCH) as u32);
        bpf::sys(BPF_PROG_TEST_RUN, &mut a)?;
        Ok(())
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
        self.run(n)?;
        Ok(n)
    }
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
        let p = program(&t, 3, 4, 7);
        let drop = p.len() - 2;
        // a frame from another interface passes untouched
        assert_eq!((p[2].0, p[2].2, p[2].3), (0x15, 2, 7));
        assert_eq!(p[3].3, XDP_PASS);
        // both guarded jumps land on the drop block
        for (i, x) in p.iter().enumerate().skip(3) {
            if x.0 == 0x15 || x.0 == 0x2d {
                assert_eq!(i + 1 + x.2 as usize, drop);
            }
        }
        assert_eq!(p[drop].3, XDP_DROP);
        assert_eq!(p.last().unwrap().0, 0x95);
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
            assert_eq!((lo.0, st.0, st.1, st.2 >= 0), (0x18, 0x7b, (4 << 4) | 2, true));
            let off = st.2 as usize;
            let word = (lo.3 as u32 as u64) | ((hi.3 as u32 as u64) << 32);
            assert_eq!(word.to_le_bytes(), t.frame[off..off + 8]);
            covered[off..off + 8].iter_mut().for_each(|c| *c = true);
        }
        assert!(covered[..len].iter().all(|c| *c));
    }
}

//! The XDP sink: a count-and-drop XDP program on an interface, the cheapest
//! receiver there is (veth runs it before any socket buffer work for frames that
//! arrive as XDP frames, and on the skb for frames that arrive as skbs). It counts
//! netassay-gen test frames of exactly `size` bytes (with `--imix`, of each size of
//! the mix, each in its own slot: slot i for the mix's i-th size) in a per-CPU array
//! and drops them (or, with `Action::Pass`, passes them on to the stack, which can then count
//! them too); everything else passes untouched (so ARP, a tool's control connection
//! and same-size frames of other senders work and are not counted).
//! A test frame is IPv4 without options or IPv6, UDP, with the payload magic right
//! after the UDP header. It also keeps, per CPU, the first and the last arrival
//! time (bpf_ktime_get_ns), so that the arrival rate can be computed without a
//! receiver.

use crate::bpf;
use crate::flows::Plan;
use crate::json::J;
use crate::latency;
use crate::mix::Mix;
use crate::packet::{ETH_LEN, IPV4_LEN, IPV6_LEN, MAGIC, PAYLOAD_LEN, UDP_LEN};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

const PASS: usize = 0;
const COUNT: usize = 1;
const DONE: usize = 2;
const NOT_IP4: usize = 3;
const LATENCY: usize = 4;

/// Where the payload magic sits in an IPv4 (no options) and an IPv6 test frame.
const MAGIC_AT_V4: usize = ETH_LEN + IPV4_LEN + UDP_LEN;
const MAGIC_AT_V6: usize = ETH_LEN + IPV6_LEN + UDP_LEN;
/// The transmit stamp (u64 ns, big-endian) after the magic, flow and sequence.
const STAMP_AT: usize = 14;

/// What the sink does with a test frame once it is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Drop,
    Pass,
}

impl Action {
    pub fn name(self) -> &'static str {
        match self {
            Action::Drop => "drop",
            Action::Pass => "pass",
        }
    }
    fn code(self) -> i32 {
        match self {
            Action::Drop => bpf::XDP_DROP,
            Action::Pass => bpf::XDP_PASS,
        }
    }
}

/// The magic as a 32-bit load from the frame sees it: packet.rs writes it
/// big-endian, a BPF load reads host order.
fn magic_as_loaded() -> i32 {
    i32::from_ne_bytes(MAGIC.to_be_bytes())
}

/// Pass unless the 4 bytes at `at` (r2 = data) are the magic. A 32-bit compare
/// (BPF_JMP32), so the constant is never sign-extended.
fn check_magic(a: &mut bpf::Asm, at: usize) {
    a.push(bpf::ins(0x61, 5, 2, at as i16, 0)); // r5 = *(u32 *)(data + at)
    a.jmp(0x56, 5, 0, magic_as_loaded(), PASS); // if w5 != magic: pass
}

/// Count test frames of `size` bytes (>= 42), then apply `action`; pass the rest.
/// Every load reads inside the `size` bytes checked first (the verifier's bound):
/// a family whose magic would end past them has no test frame of this size.
#[cfg(test)]
pub fn program(map_fd: i32, size: i32, action: Action) -> Vec<bpf::Insn> {
    program_with(map_fd, &[size], action, None, None)
}

/// Counting every flow's frames (`--count-flows`): the counts map (one u64 per flow,
/// then the frames whose destination is not their flow's, then those whose flow id
/// is past the flows) and the flows' plan, whose destinations the frames are checked
/// against.
pub struct PerFlow<'a> {
    pub fd: i32,
    pub plan: &'a Plan,
}

/// The flow id (low 16 bits after the magic, high 16 at the top of the sequence
/// field) and the destination address's last 32 bits of the frame at r2, kept at
/// fp-16 and fp-24 for the per-flow block; `at` is where the magic sits.
fn keep_flow(a: &mut bpf::Asm, at: usize, dst_low: usize) {
    use bpf::*;
    a.extend([
        ins(0x69, 5, 2, (at + 4) as i16, 0), // r5 = the flow id's low 16 bits
        be(5, 16),
        ins(0x69, 0, 2, (at + 6) as i16, 0), // r0 = its high 16 bits
        be(0, 16),
        ins(0x67, 0, 0, 0, 16),
        ins(0x4f, 5, 0, 0, 0),
        ins(0x7b, 10, 5, -16, 0),
        ins(0x61, 5, 2, dst_low as i16, 0), // the destination's last 32 bits
        be(5, 32),
        ins(0x7b, 10, 5, -24, 0),
    ]);
}

/// The per-flow block: the frame's flow counted in its slot when its destination is
/// the one its flow aims at (`flows::Plan::tuple`), else in the slot after the flows
/// (misdirected), or the one after that (a flow id past the flows); an atomic add on
/// the shared map. Ends by falling through to what follows it.
fn count_flow(a: &mut bpf::Asm, pf: &PerFlow, add: usize, done: usize) {
    use bpf::*;
    let plan = pf.plan;
    let flows = plan.flows as i32;
    let (slots, dsts) = (plan.slots() as i32, plan.dsts as i32);
    a.extend([
        ins(0x79, 6, 10, -16, 0), // r6 = the flow id
        ins(0x79, 7, 10, -24, 0), // r7 = the destination
        mov_k(1, flows + 1),
    ]);
    a.jmp(0x35, 6, 0, flows, add); // a flow id past the flows
    a.extend([mov_x(4, 6), ins(0x97, 4, 0, 0, slots)]);
    if slots != dsts {
        a.extend([ins(0x27, 4, 0, 0, dsts), ins(0x37, 4, 0, 0, slots)]);
    }
    a.extend([
        ins(0x24, 4, 0, 0, plan.dst_step as i32),
        ins(0x04, 4, 0, 0, plan.dst_low as i32), // w4 = the flow's destination
        mov_k(1, flows),
    ]);
    a.jmp(0x5d, 4, 7, 0, add); // not the frame's: misdirected
    a.push(mov_x(1, 6));
    a.label(add);
    a.push(ins(0x63, 10, 1, -4, 0)); // key = r1
    a.extend(ld_map(1, pf.fd));
    a.extend([mov_x(2, 10), add_k(2, -4), call(1)]);
    a.jmp(0x15, 0, 0, 0, done);
    a.extend([mov_k(1, 1), ins(0xdb, 0, 1, 0, 0)]); // lock *(u64 *)r0 += 1
}

/// The program, and with `latency` (the latency map's fd) each counted frame's
/// one-way latency added to its histogram (see `latency`): a family then needs the
/// whole payload (up to the stamp) inside the `size` bytes. With several `sizes`, a
/// frame of the i-th counts in slot i, and the families are those of the smallest.
/// With `per_flow`, each frame's flow is counted too (`count_flow`); a family then
/// needs the flow id (8 bytes after the magic's start) inside the `size` bytes.
pub fn program_with(
    map_fd: i32,
    sizes: &[i32],
    action: Action,
    latency: Option<i32>,
    per_flow: Option<&PerFlow>,
) -> Vec<bpf::Insn> {
    use bpf::*;
    let size = *sizes.iter().min().expect("a size");
    let eth_ip4 = u16::from_ne_bytes([0x08, 0x00]) as i32;
    let eth_ip6 = u16::from_ne_bytes([0x86, 0xdd]) as i32;
    let need = if latency.is_some() {
        PAYLOAD_LEN
    } else if per_flow.is_some() {
        8
    } else {
        4
    };
    let fits = |at: usize| at + need <= size as usize;
    // Sizes of a capture (--pcap) may be smaller than a family's payload needs while
    // larger ones hold it: that family's frames are then checked against the frame's
    // end on their own (with one size, or a mix's, it is never so: unchanged).
    let largest = *sizes.iter().max().expect("a size");
    let fits_largest = |at: usize| at + need <= largest as usize;
    let in_bounds = |a: &mut Asm, end: usize| {
        a.extend([mov_x(5, 2), add_k(5, end as i32)]);
        a.jmp(0x2d, 5, 3, 0, PASS); // if data + end > data_end: pass
    };
    // r9 = the frame's stamp in host order (latency only)
    let stamp = |a: &mut Asm, at: usize| {
        if latency.is_some() {
            a.extend([ins(0x79, 9, 2, (at + STAMP_AT) as i16, 0), be(9, 64)]);
        }
    };
    let header = 5 + latency::LABELS; // then one label per size: the next size's check
    let (per_flow_at, add) = (header + 1 + sizes.len(), header + 2 + sizes.len());
    let done = if per_flow.is_some() {
        per_flow_at
    } else {
        DONE
    };
    let mut a = Asm::new(header + 3 + sizes.len());
    a.extend([
        ins(0x61, 2, 1, 0, 0), // r2 = ctx->data
        ins(0x61, 3, 1, 4, 0), // r3 = ctx->data_end
    ]);
    for (i, &n) in sizes.iter().enumerate() {
        let next = if i + 1 == sizes.len() {
            PASS
        } else {
            header + 1 + i
        };
        a.extend([mov_x(4, 2), add_k(4, n)]);
        a.jmp(0x2d, 4, 3, 0, next); // if data + n > data_end: shorter, not this size
        a.push(add_k(4, 1));
        a.jmp(0xbd, 4, 3, 0, next); // if data + n + 1 <= data_end: longer
        a.push(mov_k(4, i as i32)); // r4 = its slot, the map key
        a.jmp(0x05, 0, 0, 0, header);
        if next != PASS {
            a.label(next);
        }
    }
    a.label(header);
    a.push(ins(0x69, 5, 2, 12, 0)); // r5 = ethertype (as stored)
    a.jmp(0x55, 5, 0, eth_ip4, NOT_IP4);
    if fits(MAGIC_AT_V4) || fits_largest(MAGIC_AT_V4) {
        if !fits(MAGIC_AT_V4) {
            in_bounds(&mut a, MAGIC_AT_V4 + need);
        }
        a.push(ins(0x71, 5, 2, 14, 0)); // r5 = IPv4 version and header length
        a.jmp(0x55, 5, 0, 0x45, PASS); // options would move the magic
        a.push(ins(0x71, 5, 2, 23, 0)); // r5 = IPv4 protocol
        a.jmp(0x55, 5, 0, 17, PASS);
        check_magic(&mut a, MAGIC_AT_V4);
        if per_flow.is_some() {
            keep_flow(&mut a, MAGIC_AT_V4, ETH_LEN + 16);
        }
        stamp(&mut a, MAGIC_AT_V4);
        a.jmp(0x05, 0, 0, 0, COUNT);
    } else {
        a.jmp(0x05, 0, 0, 0, PASS);
    }
    a.label(NOT_IP4);
    a.jmp(0x55, 5, 0, eth_ip6, PASS);
    if fits(MAGIC_AT_V6) || fits_largest(MAGIC_AT_V6) {
        if !fits(MAGIC_AT_V6) {
            in_bounds(&mut a, MAGIC_AT_V6 + need);
        }
        a.push(ins(0x71, 5, 2, 20, 0)); // r5 = IPv6 next header
        a.jmp(0x55, 5, 0, 17, PASS);
        check_magic(&mut a, MAGIC_AT_V6);
        if per_flow.is_some() {
            keep_flow(&mut a, MAGIC_AT_V6, ETH_LEN + 36);
        }
        stamp(&mut a, MAGIC_AT_V6);
    } else {
        a.jmp(0x05, 0, 0, 0, PASS);
    }
    a.label(COUNT);
    a.push(ins(0x63, 10, 4, -4, 0)); // key = r4, the size's slot
    a.extend(ld_map(1, map_fd));
    a.extend([mov_x(2, 10), add_k(2, -4), call(1)]); // map_lookup_elem
    a.jmp(0x15, 0, 0, 0, DONE);
    a.extend([
        mov_x(6, 0),
        ins(0x79, 7, 6, 0, 0),
        add_k(7, 1),
        ins(0x7b, 6, 7, 0, 0),  // per-CPU count += 1
        call(5),                // r0 = bpf_ktime_get_ns()
        ins(0x7b, 6, 0, 16, 0), // last arrival
    ]);
    let first_done = if latency.is_some() { LATENCY } else { done };
    a.jmp(0x55, 7, 0, 1, first_done);
    a.push(ins(0x7b, 6, 0, 8, 0)); // first arrival (this CPU's first frame)
    if let Some(fd) = latency {
        a.label(LATENCY);
        a.push(ins(0x62, 10, 0, -4, 0)); // key = 0: the histogram's one slot
        a.push(mov_x(8, 0)); // r8 = now
        latency::emit(&mut a, fd, LATENCY + 1, done);
    }
    if let Some(pf) = per_flow {
        a.label(per_flow_at);
        count_flow(&mut a, pf, add, DONE);
    }
    a.label(DONE);
    a.extend([mov_k(0, action.code()), exit()]);
    a.label(PASS);
    a.extend([mov_k(0, XDP_PASS), exit()]);
    a.finish()
}

pub struct Sink {
    map: OwnedFd,
    latency: Option<OwnedFd>,
    _prog: OwnedFd,
    _link: OwnedFd,
    cpus: usize,
    size: usize,
    /// With --imix: the sizes counted, each in its own slot.
    mix: Option<Mix>,
    action: Action,
    /// With --count-flows: each flow's count, and the counts at the last mark.
    flows: Option<FlowCounts>,
}

/// The per-flow counts (`PerFlow`'s map) and what they were at the last mark.
struct FlowCounts {
    map: bpf::Shared,
    n: usize,
    mark: Vec<u64>,
}

/// The flows' counts since the last mark, summed up.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowStats {
    pub flows: u64,
    pub seen: u64,
    pub min: u64,
    pub max: u64,
    pub counted: u64,
    pub misdirected: u64,
    pub unknown: u64,
}

impl FlowCounts {
    /// `now` against `mark` (both `n` flows and the two slots after them).
    fn stats(now: &[u64], mark: &[u64], n: usize) -> FlowStats {
        let mut st = FlowStats {
            flows: n as u64,
            min: u64::MAX,
            ..Default::default()
        };
        for i in 0..n {
            let d = now[i].wrapping_sub(mark[i]);
            st.seen += u64::from(d > 0);
            st.min = st.min.min(d);
            st.max = st.max.max(d);
            st.counted += d;
        }
        st.misdirected = now[n].wrapping_sub(mark[n]);
        st.unknown = now[n + 1].wrapping_sub(mark[n + 1]);
        st
    }

    fn read(&self) -> FlowStats {
        FlowCounts::stats(&self.map.read(self.n + 2), &self.mark, self.n)
    }

    fn set_mark(&mut self) {
        self.mark = self.map.read(self.n + 2);
    }
}

impl FlowStats {
    fn json(&self) -> J {
        J::obj(vec![
            ("flows", J::U(self.flows)),
            ("seen", J::U(self.seen)),
            ("min", J::U(self.min)),
            ("max", J::U(self.max)),
            ("counted", J::U(self.counted)),
            ("misdirected", J::U(self.misdirected)),
            ("unknown_flow", J::U(self.unknown)),
        ])
    }
}

impl Sink {
    /// Attach the sink; with `latency`, its one-way latency histogram too.
    /// With `flows`, every flow's frames are counted too (`--count-flows`).
    pub fn attach(
        ifindex: u32,
        size: usize,
        mix: Option<Mix>,
        action: Action,
        latency: bool,
        flows: Option<&Plan>,
    ) -> io::Result<Sink> {
        let sizes: Vec<i32> = match &mix {
            Some(m) => m.sizes.iter().map(|&n| n as i32).collect(),
            None => vec![size as i32],
        };
        let map = bpf::map_create(bpf::BPF_MAP_TYPE_PERCPU_ARRAY, 24, sizes.len() as u32)?;
        let lat = if latency { Some(latency::map()?) } else { None };
        let counts = match flows {
            Some(plan) => {
                let n = plan.flows as usize;
                let m = bpf::Shared::create(8, n as u32 + 2)?;
                Some(FlowCounts {
                    mark: vec![0; n + 2],
                    map: m,
                    n,
                })
            }
            None => None,
        };
        let pf = flows.zip(counts.as_ref()).map(|(plan, c)| PerFlow {
            fd: c.map.fd.as_raw_fd(),
            plan,
        });
        let p = program_with(
            map.as_raw_fd(),
            &sizes,
            action,
            lat.as_ref().map(|m| m.as_raw_fd()),
            pf.as_ref(),
        );
        let prog = bpf::prog_load_xdp(&p, "netassay_sink")?;
        let link = bpf::xdp_link(&prog, ifindex, 0)?;
        Ok(Sink {
            map,
            latency: lat,
            _prog: prog,
            _link: link,
            cpus: bpf::possible_cpus(),
            size,
            mix,
            action,
            flows: counts,
        })
    }

    /// Count the flows from here on (the next lines' `flows` are since now).
    pub fn mark_flows(&mut self) {
        if let Some(f) = self.flows.as_mut() {
            f.set_mark();
        }
    }

    /// Frames counted so far (all CPUs), the first and the last arrival time
    /// (CLOCK_MONOTONIC ns; 0 before any); with the histogram, the latencies since
    /// the previous read (the map is cleared).
    pub fn read(&self) -> io::Result<Counts> {
        let slots = self.mix.as_ref().map_or(1, |m| m.sizes.len());
        let mut c = Counts::default();
        let mut per_size = vec![0u64; slots];
        let mut v = vec![0u8; 24 * self.cpus];
        for (slot, n) in per_size.iter_mut().enumerate() {
            bpf::map_lookup(&self.map, slot as u32, &mut v)?;
            for cpu in v.chunks(24) {
                let w = |i: usize| u64::from_ne_bytes(cpu[i * 8..i * 8 + 8].try_into().unwrap());
                if w(0) == 0 {
                    continue;
                }
                *n += w(0);
                c.first_ns = if c.first_ns == 0 {
                    w(1)
                } else {
                    c.first_ns.min(w(1))
                };
                c.last_ns = c.last_ns.max(w(2));
            }
        }
        c.packets = per_size.iter().sum();
        c.per_size = self
            .mix
            .as_ref()
            .map(|m| m.sizes.iter().copied().zip(per_size).collect());
        if let Some(m) = &self.latency {
            c.latency = Some(latency::Hist::take(m, self.cpus)?);
        }
        c.flows = self.flows.as_ref().map(FlowCounts::read);
        Ok(c)
    }
}

#[derive(Default, Clone)]
pub struct Counts {
    pub packets: u64,
    /// With --imix: the packets of each size, in the mix's order.
    pub per_size: Option<Vec<(usize, u64)>>,
    pub first_ns: u64,
    pub last_ns: u64,
    pub latency: Option<latency::Hist>,
    /// With --count-flows: the flows' counts since the last mark.
    pub flows: Option<FlowStats>,
}

impl Counts {
    fn json(&self, t: u64, extra: Vec<(&str, J)>) -> String {
        let mut kv = vec![
            ("packets", J::U(self.packets)),
            ("t_ns", J::U(t)),
            ("first_ns", J::U(self.first_ns)),
            ("last_ns", J::U(self.last_ns)),
        ];
        if let Some(p) = &self.per_size {
            let each = p.iter().map(|(s, n)| (s.to_string(), J::U(*n)));
            kv.push(("per_size", J::Obj(each.collect())));
        }
        if let Some(h) = &self.latency {
            kv.push(("latency", h.json()));
        }
        if let Some(f) = &self.flows {
            kv.push(("flows", f.json()));
        }
        kv.extend(extra);
        J::obj(kv).to_string()
    }
}

/// Attach, print a line now, one per SIGUSR1 (and per SIGUSR2, which first marks the
/// per-flow counts: the next lines' `flows` count from there), and a final one on
/// SIGINT/SIGTERM or after `duration_ns`; the program goes away with the process. Every line carries
/// the totals since attach (packets, first and last arrival), and with the
/// histogram its `latency` since the previous line; the first and the final one
/// also the action (drop or pass).
pub fn run(s: &mut Sink, dev: &str, duration_ns: Option<u64>) -> io::Result<()> {
    let t0 = crate::pace::now();
    let name = s.action.name();
    let action = || ("action", J::S(name.into()));
    // The signals are blocked before the first line tells the caller the sink is
    // attached: a SIGUSR1 sent right after that line (a read) must wait for
    // sigtimedwait, not end the process by its default action.
    // SAFETY: sigset_t is plain C data, initialised by sigemptyset before use;
    // sigprocmask reads the live local set and changes only this thread's mask.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGUSR1, libc::SIGUSR2, libc::SIGINT, libc::SIGTERM] {
            libc::sigaddset(&mut set, sig);
        }
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    println!(
        "{}",
        s.read()?
            .json(t0, vec![("attached", J::S(dev.into())), action()])
    );
    // SAFETY: sigtimedwait reads the live `set` and `ts` and is given no siginfo to
    // write; nothing else in the loop is unsafe.
    unsafe {
        let end = duration_ns.map(|d| t0 + d);
        loop {
            let left = match end {
                Some(e) => e.saturating_sub(crate::pace::now()),
                None => 3_600_000_000_000,
            };
            if left == 0 {
                break;
            }
            let ts = libc::timespec {
                tv_sec: (left / 1_000_000_000) as libc::time_t,
                tv_nsec: (left % 1_000_000_000) as libc::c_long,
            };
            let sig = libc::sigtimedwait(&set, std::ptr::null_mut(), &ts);
            if sig == libc::SIGUSR2 {
                s.mark_flows();
            }
            if sig == libc::SIGUSR1 || sig == libc::SIGUSR2 {
                println!("{}", s.read()?.json(crate::pace::now(), vec![]));
            } else if sig == libc::SIGINT || sig == libc::SIGTERM {
                break;
            }
        }
    }
    let t1 = crate::pace::now();
    let extra = vec![
        ("mode", J::S("xdp_sink".into())),
        ("dev", J::S(dev.into())),
        ("size_bytes", J::U(s.size as u64)),
        action(),
        ("duration_s", J::F((t1 - t0) as f64 / 1e9)),
        ("version", J::S(env!("CARGO_PKG_VERSION").into())),
    ];
    println!("{}", s.read()?.json(t1, extra));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpf::{Insn, XDP_DROP, XDP_PASS};
    use crate::flows::Plan;
    use crate::packet::{spec4, Spec, Template};

    /// Pointers as region << 40 | offset, so that pointer arithmetic and
    /// comparisons inside one region work on plain u64s.
    const CTX: u64 = 1 << 40;
    const PKT: u64 = 2 << 40;
    const STACK: u64 = 3 << 40;
    const VALUE: u64 = 4 << 40;
    const MAP: u64 = 5 << 40;
    const LAT: u64 = 6 << 40;
    const REGION: u64 = !((1 << 40) - 1);
    const NOW: u64 = 777;

    /// Run the sink program on one frame the way the kernel would, for the few
    /// instructions it uses; `value` is this CPU's map value (count, first, last).
    fn exec(p: &[Insn], frame: &[u8], value: &mut [u64]) -> i32 {
        exec_at(p, frame, value, &mut [], NOW)
    }

    /// `exec` with the latency map's value (map fd 4) and the clock at `now`.
    /// `value` holds 3 words per slot of the map, slot after slot.
    fn exec_at(p: &[Insn], frame: &[u8], value: &mut [u64], lat: &mut [u64], now: u64) -> i32 {
        let mut r = [0u64; 11];
        let mut key = u64::MAX;
        r[1] = CTX;
        r[10] = STACK + 512;
        let mut pc = 0usize;
        for _ in 0..1000 {
            let Insn(code, regs, off, imm) = p[pc];
            let (d, sr) = ((regs & 0x0f) as usize, (regs >> 4) as usize);
            let k = imm as i64 as u64;
            let at = |base: u64| (base & !REGION) as i64 + off as i64;
            let load = |base: u64, n: usize| -> u64 {
                match base & REGION {
                    CTX if off == 0 => PKT,
                    CTX if off == 4 => PKT + frame.len() as u64,
                    PKT => {
                        let o = at(base) as usize;
                        assert!(o + n <= frame.len(), "read past the frame at {pc}");
                        let mut b = [0u8; 8];
                        b[..n].copy_from_slice(&frame[o..o + n]);
                        match n {
                            1 => b[0] as u64,
                            2 => u16::from_ne_bytes([b[0], b[1]]) as u64,
                            4 => u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as u64,
                            _ => u64::from_ne_bytes(b),
                        }
                    }
                    VALUE => value[at(base) as usize / 8],
                    LAT => lat[at(base) as usize / 8],
                    _ => panic!("load from {base:#x} at {pc}"),
                }
            };
            let taken = match code {
                0x05 => Some(true),
                0x15 => Some(r[d] == k),
                0x55 => Some(r[d] != k),
                0x56 => Some(r[d] as u32 != imm as u32),
                0x2d => Some(r[d] > r[sr]),
                0xbd => Some(r[d] <= r[sr]),
                0x3d => Some(r[d] >= r[sr]),
                0x25 => Some(r[d] > k),
                0xa5 => Some(r[d] < k),
                0xb5 => Some(r[d] <= k),
                _ => None,
            };
            if let Some(t) = taken {
                pc = (pc as i64 + 1 + if t { off as i64 } else { 0 }) as usize;
                continue;
            }
            match code {
                0x61 => r[d] = load(r[sr], 4),
                0x69 => r[d] = load(r[sr], 2),
                0x71 => r[d] = load(r[sr], 1),
                0x79 => r[d] = load(r[sr], 8),
                0x7b => match r[d] & REGION {
                    VALUE => value[at(r[d]) as usize / 8] = r[sr],
                    LAT => lat[at(r[d]) as usize / 8] = r[sr],
                    _ => panic!("store at {pc}"),
                },
                0x62 => {
                    assert_eq!((r[d], off, imm), (STACK + 512, -4, 0));
                    key = 0;
                }
                0x63 => {
                    assert_eq!((r[d], off), (STACK + 512, -4));
                    key = r[sr];
                }
                0x18 => {
                    r[d] = MAP + imm as u64;
                    pc += 1;
                }
                0xbf => r[d] = r[sr],
                0xb7 => r[d] = k,
                0x07 => r[d] = r[d].wrapping_add(k),
                0x0f => r[d] = r[d].wrapping_add(r[sr]),
                0x1f => r[d] = r[d].wrapping_sub(r[sr]),
                0x37 => r[d] /= k,
                0x67 => r[d] <<= k,
                0x77 => r[d] >>= k,
                0x7f => r[d] >>= r[sr],
                0xdc => {
                    assert_eq!(imm, 64);
                    r[d] = r[d].to_be();
                }
                0x85 => {
                    r[0] = match imm {
                        1 => {
                            assert_eq!(r[2], STACK + 508);
                            match r[1] {
                                x if x == MAP + 3 => VALUE + 24 * key,
                                x if x == MAP + 4 && key == 0 => LAT,
                                x if x == MAP + 4 => 0, // no such slot: NULL
                                x => panic!("map {x:#x}"),
                            }
                        }
                        5 => now,
                        _ => panic!("helper {imm}"),
                    };
                    r[1..6].fill(0xdead); // helpers clobber r1-r5
                }
                0x95 => return r[0] as i32,
                _ => panic!("opcode {code:#x} at {pc}"),
            }
            pc += 1;
        }
        panic!("no exit");
    }

    fn test_frame(v6: bool, size: usize) -> Vec<u8> {
        let (src, dst) = if v6 {
            ("2001:2::2", "2001:2::3")
        } else {
            ("198.18.0.2", "198.18.0.3")
        };
        let t = Template::new(&Spec {
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            size,
            ..spec4()
        })
        .unwrap();
        let mut f = t.frame.clone();
        t.stamp(&mut f, 1, 42, 123);
        f
    }

    fn sink(size: usize, action: Action) -> impl FnMut(&[u8]) -> (i32, u64) {
        let p = program(3, size as i32, action);
        let mut v = [0u64; 3];
        move |f: &[u8]| (exec(&p, f, &mut v), v[0])
    }

    /// The kernel runs the sink with --count-flows on frames of many flows: each is
    /// counted in its flow's slot, a frame whose destination is not its flow's in the
    /// slot after the flows, one whose flow id is past them in the next. Needs root.
    #[test]
    fn the_kernel_counts_each_flow_and_checks_its_destination() {
        use crate::flows::Order;
        // SAFETY: geteuid takes nothing and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: loading a BPF program needs root");
            return;
        }
        for (src, dst, size, flows, dsts, step) in [
            (
                "198.18.0.2",
                "198.19.1.1",
                64usize,
                200_000u64,
                1000u64,
                64u32,
            ),
            ("198.18.0.2", "198.19.0.2", 64, 70_000, 1, 1),
            (
                "2001:2:0:1::2",
                "2001:2:0:8000::1",
                84,
                1_000_000,
                1_000_000,
                4096,
            ),
        ] {
            let spec = Spec {
                src: src.parse().unwrap(),
                dst: dst.parse().unwrap(),
                size,
                ..spec4()
            };
            let t = Template::new(&spec).unwrap();
            let plan = Plan::new(
                flows,
                dsts,
                step,
                10000,
                &spec.src,
                &spec.dst,
                Order::Incremental,
            )
            .unwrap();
            let counts = bpf::Shared::create(8, flows as u32 + 2).unwrap();
            let map = bpf::map_create(bpf::BPF_MAP_TYPE_PERCPU_ARRAY, 24, 1).unwrap();
            let pf = PerFlow {
                fd: counts.fd.as_raw_fd(),
                plan: &plan,
            };
            let p = program_with(
                map.as_raw_fd(),
                &[size as i32],
                Action::Drop,
                None,
                Some(&pf),
            );
            let prog = bpf::prog_load_xdp(&p, "netassay_sink").unwrap();
            let run = |f: &[u8]| {
                let mut a = [0u8; 80];
                bpf::put32(&mut a, 0, prog.as_raw_fd() as u32);
                bpf::put32(&mut a, 8, f.len() as u32);
                bpf::put64(&mut a, 16, f.as_ptr() as u64);
                bpf::put32(&mut a, 32, 1);
                bpf::sys(bpf::BPF_PROG_TEST_RUN, &mut a).unwrap();
                u32::from_ne_bytes(a[4..8].try_into().unwrap()) as i32
            };
            let sent = [0u32, 1, 65_535, 65_536, (flows - 1) as u32, 65_536];
            for &f in &sent {
                let mut fr = t.frame.clone();
                t.stamp_tuple(&mut fr, f, &plan.tuple(f), 5, 6);
                assert_eq!(run(&fr), XDP_DROP);
            }
            // a frame aimed elsewhere than its flow's destination, and a flow id past them
            let mut fr = t.frame.clone();
            let mut wrong = plan.tuple(3);
            wrong.dst_low += step.max(1) * 7;
            t.stamp_tuple(&mut fr, 3, &wrong, 0, 0);
            assert_eq!(run(&fr), XDP_DROP);
            let mut fr = t.frame.clone();
            t.stamp_tuple(&mut fr, flows as u32 + 5, &plan.tuple(0), 0, 0);
            assert_eq!(run(&fr), XDP_DROP);
            let n = flows as usize;
            let now = counts.read(n + 2);
            let st = FlowCounts::stats(&now, &vec![0; n + 2], n);
            let expect = |f: u32| sent.iter().filter(|&&x| x == f).count() as u64;
            for &f in &sent {
                assert_eq!(now[f as usize], expect(f), "{src} flow {f}");
            }
            assert_eq!((st.seen, st.counted, st.max, st.min), (5, 6, 2, 0), "{src}");
            assert_eq!((st.misdirected, st.unknown), (1, 1), "{src}");
        }
    }

    #[test]
    fn counts_test_frames_and_drops_them() {
        for (v6, size) in [(false, 64), (false, 1518), (true, 84), (true, 200)] {
            let f = test_frame(v6, size);
            let mut run = sink(size, Action::Drop);
            assert_eq!(run(&f), (XDP_DROP, 1), "v6 {v6} size {size}");
            assert_eq!(run(&f), (XDP_DROP, 2));
            let p = program(3, size as i32, Action::Drop);
            let mut v = [0u64; 3];
            exec(&p, &f, &mut v);
            assert_eq!(v, [1, NOW, NOW]); // count, first and last arrival
        }
    }

    #[test]
    fn a_mix_counts_each_size_in_its_slot_and_passes_other_sizes() {
        let p = program_with(3, &[64, 594, 1518], Action::Drop, None, None);
        let mut v = [0u64; 9];
        for (size, times) in [(64, 7), (594, 4), (1518, 1)] {
            for _ in 0..times {
                assert_eq!(exec(&p, &test_frame(false, size), &mut v), XDP_DROP);
            }
        }
        for other in [65, 128, 593, 595, 1517] {
            assert_eq!(exec(&p, &test_frame(false, other), &mut v), XDP_PASS);
        }
        assert_eq!(v, [7, NOW, NOW, 4, NOW, NOW, 1, NOW, NOW]);
        // IPv6 frames of a mix whose smallest is 84 count too
        let p = program_with(3, &[84, 1500], Action::Drop, None, None);
        let mut v = [0u64; 6];
        exec(&p, &test_frame(true, 1500), &mut v);
        assert_eq!(v[..4], [0, 0, 0, 1]);
    }

    #[test]
    fn pass_counts_test_frames_and_passes_them() {
        let mut run = sink(64, Action::Pass);
        assert_eq!(run(&test_frame(false, 64)), (XDP_PASS, 1));
        let mut run = sink(84, Action::Pass);
        assert_eq!(run(&test_frame(true, 84)), (XDP_PASS, 1));
    }

    #[test]
    fn same_size_frames_without_the_magic_pass_uncounted() {
        for (v6, size, at) in [(false, 64, MAGIC_AT_V4), (true, 84, MAGIC_AT_V6)] {
            let good = test_frame(v6, size);
            let mut run = sink(size, Action::Drop);
            let mut zero = good.clone();
            zero[at..at + 4].fill(0);
            assert_eq!(run(&zero), (XDP_PASS, 0));
            let mut swapped = good.clone(); // the magic in the wrong byte order
            swapped[at..at + 4].copy_from_slice(&MAGIC.to_le_bytes());
            assert_eq!(run(&swapped), (XDP_PASS, 0));
            let mut tcp = good.clone();
            tcp[if v6 { 20 } else { 23 }] = 6;
            assert_eq!(run(&tcp), (XDP_PASS, 0));
            assert_eq!(run(&good), (XDP_DROP, 1));
        }
        let mut options = test_frame(false, 64);
        options[14] = 0x46; // IPv4 with 4 bytes of options: the magic is elsewhere
        assert_eq!(sink(64, Action::Drop)(&options), (XDP_PASS, 0));
    }

    #[test]
    fn other_sizes_and_other_frames_pass_uncounted() {
        let f = test_frame(false, 65);
        let mut run = sink(64, Action::Drop);
        assert_eq!(run(&f), (XDP_PASS, 0)); // longer
        assert_eq!(run(&f[..63]), (XDP_PASS, 0)); // shorter
        let mut arp = test_frame(false, 64);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(run(&arp), (XDP_PASS, 0));
        // no IPv6 test frame has 64 bytes: the sink passes IPv6 without reading on
        let mut v6 = test_frame(true, 84);
        v6.truncate(64);
        assert_eq!(run(&v6), (XDP_PASS, 0));
    }

    #[test]
    fn magic_check_by_hand() {
        let p = program(3, 64, Action::Drop);
        let at = p
            .iter()
            .position(|x| *x == bpf::ins(0x61, 5, 2, 42, 0))
            .expect("a 32-bit load at offset 42");
        assert_eq!((p[at + 1].0, p[at + 1].1), (0x56, 5)); // if w5 != imm
                                                           // "naG1" on the wire, read by a little-endian host as 0x3147616e
        #[cfg(target_endian = "little")]
        assert_eq!(p[at + 1].3, 0x3147_616e);
        assert_eq!(p[at + 1].3.to_ne_bytes(), *b"naG1");
        let v6 = program(3, 84, Action::Drop);
        assert!(v6.contains(&bpf::ins(0x61, 5, 2, 62, 0)));
        assert!(!p.contains(&bpf::ins(0x61, 5, 2, 62, 0))); // 62 + 4 > 64
                                                            // the two exits: the action after counting, then XDP_PASS
        let n = p.len();
        assert_eq!(
            p[n - 4..],
            [
                bpf::mov_k(0, XDP_DROP),
                bpf::exit(),
                bpf::mov_k(0, XDP_PASS),
                bpf::exit()
            ]
        );
        let q = program(3, 64, Action::Pass);
        assert_eq!(q[n - 4], bpf::mov_k(0, XDP_PASS));
        assert_eq!(p[..n - 4], q[..n - 4]);
    }

    #[test]
    fn jumps_stay_inside_and_loads_inside_the_checked_size() {
        for size in [42, 45, 46, 64, 65, 66, 84, 1518] {
            for action in [Action::Drop, Action::Pass] {
                let p = program(3, size, action);
                for (i, x) in p.iter().enumerate() {
                    let is_jump = matches!(x.0 & 0x07, 0x05 | 0x06); // BPF_JMP, BPF_JMP32
                    if is_jump && x.0 != 0x85 && x.0 != 0x95 {
                        let t = i as i64 + 1 + x.2 as i64;
                        assert!(t > i as i64 && (t as usize) < p.len(), "jump at {i}");
                    }
                    let width = match x.0 {
                        0x61 => 4,
                        0x69 => 2,
                        0x71 => 1,
                        _ => 0,
                    };
                    if width > 0 && x.1 >> 4 == 2 {
                        assert!(x.2 as i32 + width <= size, "load at {i} past {size}");
                    }
                }
                assert_eq!(p.last().unwrap().0, 0x95);
            }
        }
    }

    /// A test frame stamped at `ts`, through the program with the histogram at `now`.
    fn latency_of(v6: bool, size: usize, ts: u64, now: u64, lat: &mut [u64]) -> (i32, u64) {
        let t = Template::new(&Spec {
            src: if v6 { "2001:2::2" } else { "198.18.0.2" }.parse().unwrap(),
            dst: if v6 { "2001:2::3" } else { "198.18.0.3" }.parse().unwrap(),
            size,
            ..spec4()
        })
        .unwrap();
        let mut f = t.frame.clone();
        t.stamp(&mut f, 1, 42, ts);
        let p = program_with(3, &[size as i32], Action::Drop, Some(4), None);
        let mut v = [0u64; 3];
        (exec_at(&p, &f, &mut v, lat, now), v[0])
    }

    #[test]
    fn every_size_of_a_mix_lands_in_the_one_histogram() {
        let p = program_with(3, &[64, 590, 1514], Action::Drop, Some(4), None);
        let mut v = [0u64; 9];
        let mut lat = vec![0u64; latency::VALUE_SIZE / 8];
        for (i, size) in [64, 590, 1514, 590].into_iter().enumerate() {
            let t = Template::new(&Spec { size, ..spec4() }).unwrap();
            let mut f = t.frame.clone();
            t.stamp(&mut f, 0, i as u64, 1_000_000);
            assert_eq!(exec_at(&p, &f, &mut v, &mut lat, 1_002_000), XDP_DROP);
        }
        assert_eq!((v[0], v[3], v[6]), (1, 2, 1)); // counted per size
        assert_eq!(lat[0], 4, "the histogram's count");
        assert_eq!(lat[5 + latency::bucket(2_000)], 4);
    }

    #[test]
    fn latency_lands_in_its_bucket_with_exact_moments() {
        let t0 = 5_000_000_000_000u64;
        let cases = [
            0u64,
            999,
            1_000,
            37_500,
            99_999,
            255_999,
            256_000,
            1_000_000,
            123_456_789,
            (1_000 << 20) - 1,
            1_000 << 20,
            7_000_000_000,
        ];
        for v6 in [false, true] {
            let size = if v6 { 84 } else { 64 };
            let mut lat = vec![0u64; latency::VALUE_SIZE / 8];
            for (i, d) in cases.iter().enumerate() {
                let (action, count) = latency_of(v6, size, t0, t0 + d, &mut lat);
                assert_eq!((action, count), (XDP_DROP, 1), "{d} ns");
                let b = latency::bucket(*d);
                assert!(lat[5 + b] >= 1, "{d} ns not in bucket {b}");
                assert_eq!(lat[0], i as u64 + 1);
            }
            let total: u64 = cases.iter().sum();
            assert_eq!(
                lat[1..5],
                [total, 0, 7_000_000_000, 0],
                "sum, min, max, ahead"
            );
            assert_eq!(lat[5..].iter().sum::<u64>(), cases.len() as u64);
            assert_eq!(lat[5 + latency::OVER], 2);
            // a stamp ahead of the clock is counted apart, not in the histogram
            latency_of(v6, size, t0 + 10, t0, &mut lat);
            assert_eq!((lat[0], lat[4]), (cases.len() as u64, 1));
        }
    }

    #[test]
    fn latency_min_is_the_smallest_after_the_first() {
        let mut lat = vec![0u64; latency::VALUE_SIZE / 8];
        for d in [40_000u64, 12_000, 90_000, 30_000] {
            latency_of(false, 64, 1_000_000, 1_000_000 + d, &mut lat);
        }
        assert_eq!(lat[..4], [4, 172_000, 12_000, 90_000]);
        assert_eq!(
            (lat[5 + 12], lat[5 + 30], lat[5 + 40], lat[5 + 90]),
            (1, 1, 1, 1)
        );
    }

    #[test]
    fn count_only_program_is_unchanged_by_the_histogram_code() {
        for size in [64, 84, 1518] {
            assert_eq!(
                program(3, size, Action::Drop),
                program_with(3, &[size], Action::Drop, None, None)
            );
            let with = program_with(3, &[size], Action::Drop, Some(4), None);
            assert!(with.len() > program(3, size, Action::Drop).len() + 40);
        }
    }

    #[test]
    fn latency_loads_stay_inside_the_checked_size() {
        // an IPv6 frame of 66..83 bytes could hold the magic but not the stamp
        for size in [64, 66, 83, 84, 1518] {
            let p = program_with(3, &[size], Action::Drop, Some(4), None);
            for (i, x) in p.iter().enumerate() {
                if x.0 == 0x79 && x.1 >> 4 == 2 {
                    assert!(x.2 as i32 + 8 <= size, "stamp load at {i} past {size}");
                }
            }
        }
        let mut lat = vec![0u64; latency::VALUE_SIZE / 8];
        let mut f = test_frame(true, 84);
        f.truncate(83);
        let p = program_with(3, &[83], Action::Drop, Some(4), None);
        assert_eq!(exec_at(&p, &f, &mut [0; 3], &mut lat, 9), XDP_PASS);
    }
}

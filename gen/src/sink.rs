//! The XDP sink: a count-and-drop XDP program (`bpf/gen_sink.c`) on an interface, the cheapest
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
use crate::packet::MAX_FRAME;
use std::io;
use std::os::fd::OwnedFd;

/// The program (`bpf/gen_sink.c`, built by build.rs).
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/gen_sink.o"));

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

/// The sink's program loaded for these sizes (at most MAX_FRAME bytes, each once: slot i
/// of the counts for the i-th),
/// action, latency histogram and flows' plan (`--count-flows`): the program and its
/// maps (counts, latency, flow counts).
pub(crate) fn load(
    sizes: &[u32],
    action: Action,
    latency: bool,
    flows: Option<&Plan>,
) -> io::Result<bpf::Loaded> {
    let mut slot_of = vec![0u16; MAX_FRAME + 1];
    for (i, &n) in sizes.iter().enumerate() {
        slot_of[n as usize] = i as u16 + 1;
    }
    let mut c = bpf::Consts::default()
        .u16s("slot_of", &slot_of)
        // gen_sink.c's mode: the action, MODE_LATENCY, MODE_PER_FLOW
        .u32(
            "mode",
            action.code() as u32 | u32::from(latency) << 8 | u32::from(flows.is_some()) << 9,
        );
    let mut n_flows = 1;
    if let Some(p) = flows {
        c = c
            .u64("flows", p.flows)
            .u64("slots", p.slots())
            .u64("dsts", p.dsts)
            .u32("dst_step", p.dst_step)
            .u32("dst_low", p.dst_low);
        n_flows = p.flows as u32 + 2;
    }
    bpf::load_xdp(
        OBJECT,
        "netassay_sink",
        &c,
        &[("counts", sizes.len() as u32), ("flow_counts", n_flows)],
        &["counts", "latency", "flow_counts"],
    )
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
        let sizes: Vec<u32> = match &mix {
            Some(m) => m.sizes.iter().map(|&n| n as u32).collect(),
            None => vec![size as u32],
        };
        let l = load(&sizes, action, latency, flows)?;
        let [map, lat, flow_map]: [OwnedFd; 3] = l.maps.try_into().expect("three maps");
        let counts = match flows {
            Some(plan) => {
                let n = plan.flows as usize;
                Some(FlowCounts {
                    mark: vec![0; n + 2],
                    map: bpf::Shared::map(flow_map, 8, n as u32 + 2)?,
                    n,
                })
            }
            None => None,
        };
        let prog = l.prog;
        let link = bpf::xdp_link(&prog, ifindex, 0)?;
        Ok(Sink {
            map,
            latency: latency.then_some(lat),
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
    use crate::bpf::{XDP_DROP, XDP_PASS};
    use crate::flows::Plan;
    use crate::packet::{spec4, Spec, Template, ETH_LEN, IPV4_LEN, IPV6_LEN, MAGIC, UDP_LEN};
    use std::os::fd::AsFd;

    /// Where the payload magic sits in an IPv4 (no options) and an IPv6 test frame.
    const MAGIC_AT_V4: usize = ETH_LEN + IPV4_LEN + UDP_LEN;
    const MAGIC_AT_V6: usize = ETH_LEN + IPV6_LEN + UDP_LEN;

    /// Loading a program and running it needs root: without it a test says so and
    /// passes (the system tests run them as root too).
    fn root() -> bool {
        // SAFETY: geteuid takes nothing and cannot fail.
        let r = unsafe { libc::geteuid() } == 0;
        if !r {
            eprintln!("skipped: loading a BPF program needs root");
        }
        r
    }

    /// The sink's program in the kernel, run on frames with BPF_PROG_TEST_RUN.
    struct Kernel {
        l: bpf::Loaded,
        slots: usize,
    }

    impl Kernel {
        fn new(sizes: &[u32], action: Action, latency: bool) -> Kernel {
            Kernel {
                l: load(sizes, action, latency, None).expect("the sink loads"),
                slots: sizes.len(),
            }
        }
        fn run(&self, f: &[u8]) -> i32 {
            let (ret, out) = bpf::test_run(self.l.prog.as_fd(), f, 0).expect("test run");
            assert_eq!(out, f, "the sink never writes into a frame");
            ret
        }
        /// Each slot's count, first and last arrival, summed over the CPUs.
        fn counts(&self) -> Vec<[u64; 3]> {
            let cpus = bpf::possible_cpus();
            let mut v = vec![0u8; 24 * cpus];
            (0..self.slots)
                .map(|slot| {
                    bpf::map_lookup(self.l.maps[0].as_fd(), slot as u32, &mut v).unwrap();
                    let mut c = [0u64, u64::MAX, 0];
                    for cpu in v.chunks(24) {
                        let w = |i: usize| {
                            u64::from_ne_bytes(cpu[i * 8..i * 8 + 8].try_into().unwrap())
                        };
                        if w(0) > 0 {
                            c = [c[0] + w(0), c[1].min(w(1)), c[2].max(w(2))];
                        }
                    }
                    if c[0] == 0 {
                        c[1] = 0;
                    }
                    c
                })
                .collect()
        }
        fn packets(&self) -> Vec<u64> {
            self.counts().iter().map(|c| c[0]).collect()
        }
        fn latency(&self) -> latency::Hist {
            latency::Hist::take(self.l.maps[1].as_fd(), bpf::possible_cpus()).unwrap()
        }
    }

    fn frame_at(v6: bool, size: usize, ts: u64) -> Vec<u8> {
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
        t.stamp(&mut f, 1, 42, ts);
        f
    }

    fn test_frame(v6: bool, size: usize) -> Vec<u8> {
        frame_at(v6, size, 123)
    }

    /// The kernel runs the sink with --count-flows on frames of many flows: each is
    /// counted in its flow's slot, a frame whose destination is not its flow's in the
    /// slot after the flows, one whose flow id is past them in the next. Needs root.
    #[test]
    fn the_kernel_counts_each_flow_and_checks_its_destination() {
        use crate::flows::Order;
        if !root() {
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
            let l = load(&[size as u32], Action::Drop, false, Some(&plan)).unwrap();
            let [_, _, flow_map]: [OwnedFd; 3] = l.maps.try_into().unwrap();
            let counts = bpf::Shared::map(flow_map, 8, flows as u32 + 2).unwrap();
            let run = |f: &[u8]| bpf::test_run(l.prog.as_fd(), f, 0).unwrap().0;
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
        if !root() {
            return;
        }
        for (v6, size) in [(false, 64), (false, 1518), (true, 84), (true, 200)] {
            let f = test_frame(v6, size);
            let k = Kernel::new(&[size as u32], Action::Drop, false);
            let t0 = crate::pace::now();
            assert_eq!(k.run(&f), XDP_DROP, "v6 {v6} size {size}");
            let t1 = crate::pace::now();
            assert_eq!(k.run(&f), XDP_DROP);
            let t2 = crate::pace::now();
            let [n, first, last] = k.counts()[0];
            assert_eq!(n, 2);
            // the first and the last arrival, on the clock of the stamps
            assert!((t0..=t1).contains(&first), "{t0} {first} {t1}");
            assert!((t1..=t2).contains(&last), "{t1} {last} {t2}");
        }
    }

    #[test]
    fn a_mix_counts_each_size_in_its_slot_and_passes_other_sizes() {
        if !root() {
            return;
        }
        let k = Kernel::new(&[64, 594, 1518], Action::Drop, false);
        for (size, times) in [(64, 7), (594, 4), (1518, 1)] {
            for _ in 0..times {
                assert_eq!(k.run(&test_frame(false, size)), XDP_DROP);
            }
        }
        for other in [65, 128, 593, 595, 1517] {
            assert_eq!(k.run(&test_frame(false, other)), XDP_PASS);
        }
        assert_eq!(k.packets(), [7, 4, 1]);
        // IPv6 frames of a mix whose smallest is 84 count too
        let k = Kernel::new(&[84, 1500], Action::Drop, false);
        assert_eq!(k.run(&test_frame(true, 1500)), XDP_DROP);
        assert_eq!(k.packets(), [0, 1]);
        // every size a capture may hold (--pcap), the largest too
        let sizes: Vec<u32> = (64..=MAX_FRAME as u32).rev().collect();
        let k = Kernel::new(&sizes, Action::Drop, false);
        for s in [64, 65, 700, 1517, 1518] {
            assert_eq!(k.run(&test_frame(false, s)), XDP_DROP);
        }
        let n = k.packets();
        assert_eq!(n.iter().sum::<u64>(), 5);
        for s in [64, 65, 700, 1517, 1518] {
            assert_eq!(n[sizes.iter().position(|&x| x == s).unwrap()], 1);
        }
        // a capture's sizes below a family's payload end pass; larger ones count
        let k = Kernel::new(&[64, 84], Action::Drop, false);
        let mut short = test_frame(true, 84);
        short.truncate(65); // the magic would end at 66
        assert_eq!(k.run(&short), XDP_PASS);
        let k = Kernel::new(&[65, 84], Action::Drop, false);
        assert_eq!(k.run(&short), XDP_PASS);
        assert_eq!(k.run(&test_frame(true, 84)), XDP_DROP);
        assert_eq!(k.run(&test_frame(false, 65)), XDP_DROP);
        assert_eq!(k.packets(), [1, 1]);
    }

    #[test]
    fn pass_counts_test_frames_and_passes_them() {
        if !root() {
            return;
        }
        for (v6, size) in [(false, 64), (true, 84)] {
            let k = Kernel::new(&[size as u32], Action::Pass, false);
            assert_eq!(k.run(&test_frame(v6, size)), XDP_PASS);
            assert_eq!(k.packets(), [1]);
        }
    }

    #[test]
    fn same_size_frames_without_the_magic_pass_uncounted() {
        if !root() {
            return;
        }
        for (v6, size, at) in [(false, 64, MAGIC_AT_V4), (true, 84, MAGIC_AT_V6)] {
            let good = test_frame(v6, size);
            let k = Kernel::new(&[size as u32], Action::Drop, false);
            let mut zero = good.clone();
            zero[at..at + 4].fill(0);
            assert_eq!(k.run(&zero), XDP_PASS);
            let mut swapped = good.clone(); // the magic in the wrong byte order
            swapped[at..at + 4].copy_from_slice(&MAGIC.to_le_bytes());
            assert_eq!(k.run(&swapped), XDP_PASS);
            let mut tcp = good.clone();
            tcp[if v6 { 20 } else { 23 }] = 6;
            assert_eq!(k.run(&tcp), XDP_PASS);
            assert_eq!(k.packets(), [0]);
            assert_eq!(k.run(&good), XDP_DROP);
            assert_eq!(k.packets(), [1]);
        }
        let mut options = test_frame(false, 64);
        options[14] = 0x46; // IPv4 with 4 bytes of options: the magic is elsewhere
        let k = Kernel::new(&[64], Action::Drop, false);
        assert_eq!(k.run(&options), XDP_PASS);
        assert_eq!(k.packets(), [0]);
    }

    #[test]
    fn other_sizes_and_other_frames_pass_uncounted() {
        if !root() {
            return;
        }
        let k = Kernel::new(&[64], Action::Drop, false);
        let f = test_frame(false, 65);
        assert_eq!(k.run(&f), XDP_PASS); // longer
        assert_eq!(k.run(&test_frame(false, 64)[..63]), XDP_PASS); // shorter
        let mut arp = test_frame(false, 64);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(k.run(&arp), XDP_PASS);
        // no IPv6 test frame has 64 bytes: the sink passes IPv6 without reading on
        let mut v6 = test_frame(true, 84);
        v6.truncate(64);
        assert_eq!(k.run(&v6), XDP_PASS);
        // the smallest a kernel test run takes (an Ethernet header)
        assert_eq!(k.run(&test_frame(false, 64)[..14]), XDP_PASS);
        assert_eq!(k.packets(), [0]);
    }

    /// Frames stamped `d` ns before the clock, through the sink with the histogram:
    /// each latency is `d` plus the time from the stamp to the run.
    fn latencies(v6: bool, size: usize, ds: &[u64]) -> (latency::Hist, u64) {
        let k = Kernel::new(&[size as u32], Action::Drop, true);
        let mut slack = 0;
        for &d in ds {
            let t0 = crate::pace::now();
            assert_eq!(k.run(&frame_at(v6, size, t0 - d)), XDP_DROP, "{d} ns");
            slack = slack.max(crate::pace::now() - t0);
        }
        assert_eq!(k.packets(), [ds.len() as u64]);
        (k.latency(), slack)
    }

    #[test]
    fn latency_lands_in_its_bucket_with_its_moments() {
        if !root() {
            return;
        }
        let cases = [
            0u64,
            999,
            37_500,
            255_000,
            1_000_000,
            123_456_789,
            (1_000 << 20) - 1,
            7_000_000_000,
        ];
        for (v6, size) in [(false, 64), (true, 84)] {
            let (h, slack) = latencies(v6, size, &cases);
            let total: u64 = cases.iter().sum();
            assert_eq!((h.n, h.ahead), (cases.len() as u64, 0));
            let n = cases.len() as u64;
            assert!((total..=total + n * slack).contains(&h.sum_ns), "sum");
            assert!(h.min_ns <= slack && h.max_ns >= 7_000_000_000, "min, max");
            assert!(h.max_ns <= 7_000_000_000 + slack);
            assert_eq!(h.counts.iter().sum::<u64>(), n);
            for d in cases {
                let (lo, hi) = (latency::bucket(d), latency::bucket(d + slack));
                assert!(
                    (lo..=hi).any(|b| h.counts[b] > 0),
                    "{d} ns not in buckets {lo}..={hi}"
                );
            }
            // 7 s in the overflow (and 2^20 us less 1 ns with the time to the run)
            let over = |s: u64| {
                let n = cases
                    .iter()
                    .filter(|&&d| latency::bucket(d + s) == latency::OVER);
                n.count() as u64
            };
            let (lo, hi) = (over(0), over(slack));
            assert!((lo..=hi).contains(&h.counts[latency::OVER]), "the overflow");
        }
    }

    #[test]
    fn a_stamp_ahead_of_the_clock_is_counted_apart() {
        if !root() {
            return;
        }
        let k = Kernel::new(&[64], Action::Drop, true);
        let ahead = crate::pace::now() + 10_000_000_000;
        assert_eq!(k.run(&frame_at(false, 64, ahead)), XDP_DROP);
        let h = k.latency();
        assert_eq!((h.n, h.ahead, h.counts.iter().sum::<u64>()), (0, 1, 0));
        assert_eq!(k.packets(), [1]);
    }

    #[test]
    fn latency_min_is_the_smallest_after_the_first() {
        if !root() {
            return;
        }
        let (h, slack) = latencies(false, 64, &[400_000, 120_000, 900_000, 300_000]);
        assert!((120_000..=120_000 + slack).contains(&h.min_ns));
        assert!((900_000..=900_000 + slack).contains(&h.max_ns));
    }

    #[test]
    fn every_size_of_a_mix_lands_in_the_one_histogram() {
        if !root() {
            return;
        }
        let k = Kernel::new(&[64, 590, 1514], Action::Drop, true);
        for size in [64, 590, 1514, 590] {
            let now = crate::pace::now();
            assert_eq!(k.run(&frame_at(false, size, now - 2_000_000)), XDP_DROP);
        }
        assert_eq!(k.packets(), [1, 2, 1]); // counted per size
        let h = k.latency();
        assert_eq!(h.n, 4, "the histogram's count");
        assert!(h.min_ns >= 2_000_000);
    }

    #[test]
    fn a_frame_too_short_for_the_stamp_passes() {
        if !root() {
            return;
        }
        // an IPv6 frame of 66..83 bytes could hold the magic but not the stamp
        let k = Kernel::new(&[83], Action::Drop, true);
        let mut f = test_frame(true, 84);
        f.truncate(83);
        assert_eq!(k.run(&f), XDP_PASS);
        assert_eq!(k.packets(), [0]);
        // without the histogram it holds enough: the magic
        let k = Kernel::new(&[83], Action::Drop, false);
        assert_eq!(k.run(&f), XDP_DROP);
        assert_eq!(k.packets(), [1]);
    }
}

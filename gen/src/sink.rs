//! The XDP sink: a count-and-drop XDP program on an interface, the cheapest
//! receiver there is (veth runs it before any socket buffer work for frames that
//! arrive as XDP frames, and on the skb for frames that arrive as skbs). It counts
//! IPv4/IPv6 UDP frames of exactly `size` bytes in a per-CPU array and drops them;
//! everything else passes (so ARP, a tool's control connection and so on work).
//! It also keeps, per CPU, the first and the last arrival time (bpf_ktime_get_ns),
//! so that the arrival rate can be computed without a receiver.

use crate::bpf::{self, Fd};
use crate::json::J;
use std::io;

const PASS: usize = 0;
const COUNT: usize = 1;
const DONE: usize = 2;
const NOT_IP4: usize = 3;

/// Count-and-drop for UDP frames of `size` bytes (>= 42), pass the rest.
pub fn program(map_fd: i32, size: i32) -> Vec<bpf::Insn> {
    use bpf::*;
    let eth_ip4 = u16::from_ne_bytes([0x08, 0x00]) as i32;
    let eth_ip6 = u16::from_ne_bytes([0x86, 0xdd]) as i32;
    let mut a = Asm::new(4);
    a.extend([
        ins(0x61, 2, 1, 0, 0), // r2 = ctx->data
        ins(0x61, 3, 1, 4, 0), // r3 = ctx->data_end
        mov_x(4, 2),
        add_k(4, size),
    ]);
    a.jmp(0x2d, 4, 3, 0, PASS); // if data + size > data_end: shorter, pass
    a.push(add_k(4, 1));
    a.jmp(0xbd, 4, 3, 0, PASS); // if data + size + 1 <= data_end: longer, pass
    a.push(ins(0x69, 5, 2, 12, 0)); // r5 = ethertype (as stored)
    a.jmp(0x55, 5, 0, eth_ip4, NOT_IP4);
    a.push(ins(0x71, 5, 2, 23, 0)); // r5 = IPv4 protocol
    a.jmp(0x15, 5, 0, 17, COUNT);
    a.jmp(0x05, 0, 0, 0, PASS);
    a.label(NOT_IP4);
    a.jmp(0x55, 5, 0, eth_ip6, PASS);
    a.push(ins(0x71, 5, 2, 20, 0)); // r5 = IPv6 next header
    a.jmp(0x55, 5, 0, 17, PASS);
    a.label(COUNT);
    a.push(ins(0x62, 10, 0, -4, 0)); // key = 0
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
    a.jmp(0x55, 7, 0, 1, DONE);
    a.push(ins(0x7b, 6, 0, 8, 0)); // first arrival (this CPU's first frame)
    a.label(DONE);
    a.extend([mov_k(0, XDP_DROP), exit()]);
    a.label(PASS);
    a.extend([mov_k(0, XDP_PASS), exit()]);
    a.finish()
}

pub struct Sink {
    map: Fd,
    _prog: Fd,
    _link: Fd,
    cpus: usize,
}

impl Sink {
    pub fn attach(ifindex: u32, size: usize) -> io::Result<Sink> {
        let map = bpf::map_create(bpf::BPF_MAP_TYPE_PERCPU_ARRAY, 24, 1)?;
        let prog = bpf::prog_load_xdp(&program(map.0, size as i32), "netassay_sink")?;
        let link = bpf::xdp_link(&prog, ifindex, 0)?;
        Ok(Sink {
            map,
            _prog: prog,
            _link: link,
            cpus: bpf::possible_cpus(),
        })
    }

    /// Frames counted so far (all CPUs), the first and the last arrival time
    /// (CLOCK_MONOTONIC ns; 0 before any).
    pub fn read(&self) -> io::Result<Counts> {
        let mut v = vec![0u8; 24 * self.cpus];
        bpf::map_lookup(&self.map, 0, &mut v)?;
        let mut c = Counts::default();
        for cpu in v.chunks(24) {
            let w = |i: usize| u64::from_ne_bytes(cpu[i * 8..i * 8 + 8].try_into().unwrap());
            if w(0) == 0 {
                continue;
            }
            c.packets += w(0);
            c.first_ns = if c.first_ns == 0 {
                w(1)
            } else {
                c.first_ns.min(w(1))
            };
            c.last_ns = c.last_ns.max(w(2));
        }
        Ok(c)
    }
}

#[derive(Default, Clone, Copy)]
pub struct Counts {
    pub packets: u64,
    pub first_ns: u64,
    pub last_ns: u64,
}

impl Counts {
    fn json(&self, t: u64, extra: Vec<(&str, J)>) -> String {
        let mut kv = vec![
            ("packets", J::U(self.packets)),
            ("t_ns", J::U(t)),
            ("first_ns", J::U(self.first_ns)),
            ("last_ns", J::U(self.last_ns)),
        ];
        kv.extend(extra);
        J::obj(kv).to_string()
    }
}

/// Attach, print a line now, one per SIGUSR1, and a final one on SIGINT/SIGTERM or
/// after `duration_ns`; the program goes away with the process. Every line carries
/// the totals since attach (packets, first and last arrival).
pub fn run(s: &Sink, dev: &str, size: usize, duration_ns: Option<u64>) -> io::Result<()> {
    let t0 = crate::pace::now();
    println!(
        "{}",
        s.read()?.json(t0, vec![("attached", J::S(dev.into()))])
    );
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGUSR1, libc::SIGINT, libc::SIGTERM] {
            libc::sigaddset(&mut set, sig);
        }
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
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
            if sig == libc::SIGUSR1 {
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
        ("size_bytes", J::U(size as u64)),
        ("duration_s", J::F((t1 - t0) as f64 / 1e9)),
        ("version", J::S(env!("CARGO_PKG_VERSION").into())),
    ];
    println!("{}", s.read()?.json(t1, extra));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jumps_stay_inside() {
        let p = program(3, 64);
        for (i, x) in p.iter().enumerate() {
            if x.0 & 0x07 == 0x05 && x.0 != 0x85 && x.0 != 0x95 {
                let t = i as i64 + 1 + x.2 as i64;
                assert!(t > i as i64 && (t as usize) < p.len(), "jump at {i}");
            }
        }
        assert_eq!(p.last().unwrap().0, 0x95);
    }
}

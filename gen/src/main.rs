//! netassay-gen: a paced UDP packet generator and its receiver. See `--help`.

mod args;
mod bpf;
mod json;
mod netlink;
mod pace;
mod packet;
mod rx;
mod sink;
mod sys;
mod tx;
mod xdp;

use args::{Cmd, Rate, Recv, Send, SinkArgs};
use json::J;
use std::process::exit;

const EXIT_SYSTEM: i32 = 1;
const EXIT_USAGE: i32 = 2;
const EXIT_RATE: i32 = 3;
/// Largest tolerated |achieved/requested - 1|.
const RATE_TOLERANCE: f64 = 0.001;
/// Schedule covered by one send call when the batch is sized to the rate.
const BATCH_WINDOW_NS: u64 = 8_000;

fn die(code: i32, msg: &str) -> ! {
    eprintln!("netassay-gen: {msg}");
    exit(code)
}

fn pin(cpu: Option<usize>) {
    if let Some(c) = cpu {
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(c, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                die(
                    EXIT_USAGE,
                    &format!("cannot pin to CPU {c}: {}; pick an online CPU", sys_err()),
                );
            }
        }
    }
}

fn sys_err() -> std::io::Error {
    std::io::Error::last_os_error()
}

fn ifindex_or_die(dev: &str) -> u32 {
    sys::ifindex(dev).unwrap_or_else(|| {
        die(
            EXIT_USAGE,
            &format!(
                "interface '{dev}' not found in this network namespace: \
                 run inside 'ip netns exec NS' where it exists"
            ),
        )
    })
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let cmd = args::parse(&argv).unwrap_or_else(|e| die(EXIT_USAGE, &e));
    match cmd {
        Cmd::Help => print!("{}", args::HELP),
        Cmd::Version => println!("netassay-gen {}", env!("CARGO_PKG_VERSION")),
        Cmd::Send(s) => exit(send(&s)),
        Cmd::Recv(r) => exit(receive(&r)),
        Cmd::Sink(k) => exit(xdp_sink(&k)),
    }
}

fn check_safety(s: &Send) {
    if !s.allow_any_dst && !packet::is_bench_addr(&s.dst) {
        die(
            EXIT_USAGE,
            &format!(
                "refusing --dst {}: it is outside the benchmarking ranges 198.18.0.0/15 and \
                 2001:2::/48, so test traffic could flood a real network; use an address \
                 in those ranges or add --allow-any-dst",
                s.dst
            ),
        );
    }
    match sys::in_host_netns() {
        Ok(true) if !s.allow_host_netns => die(
            EXIT_USAGE,
            &format!(
                "refusing to send on '{}' from the host's own network namespace: a wrong \
                 flag could flood a real network; run inside 'ip netns exec NS' or add \
                 --allow-host-netns",
                s.dev
            ),
        ),
        Err(e) if !s.allow_host_netns => die(
            EXIT_USAGE,
            &format!(
                "cannot tell whether this is the host's network namespace ({e}); \
                 run as root inside 'ip netns exec NS' or add --allow-host-netns"
            ),
        ),
        _ => {}
    }
}

fn send(s: &Send) -> i32 {
    check_safety(s);
    let ifindex = ifindex_or_die(&s.dev);
    let src_mac = match s.src_mac {
        Some(m) => m,
        None => sys::iface_mac(&s.dev).unwrap_or_else(|e| {
            die(
                EXIT_SYSTEM,
                &format!("cannot read the MAC of '{}': {e}; pass --src-mac", s.dev),
            )
        }),
    };
    let spec = packet::Spec {
        src_mac,
        dst_mac: s.dst_mac,
        src: s.src,
        dst: s.dst,
        sport: s.src_port,
        dport: s.dst_port,
        size: s.size,
    };
    let tpl = packet::Template::new(&spec).unwrap_or_else(|e| die(EXIT_USAGE, &e));
    let (rate, planned, duration_ns) = match (&s.rate, s.duration_ns, s.count) {
        (Rate::Pps(r), Some(d), None) => (Some(*r), pace::planned(*r, d), d),
        (Rate::Pps(r), None, Some(n)) => (Some(*r), n, (n as f64 / r * 1e9) as u64),
        (Rate::Max, Some(d), _) => (None, u64::MAX, d),
        _ => die(EXIT_USAGE, "--duration or --count is required"),
    };
    if planned == 0 {
        die(
            EXIT_USAGE,
            "rate * duration rounds to 0 packets: raise --rate or --duration",
        );
    }
    let batch = s.batch.unwrap_or(match rate {
        Some(r) => pace::batch_for_rate(r, BATCH_WINDOW_NS, s.burst),
        None => s.burst,
    });
    pin(s.cpu);
    pace::install_signals();
    let cfg = tx::LoopCfg {
        rate,
        planned,
        duration_ns,
        flows: s.flows,
        batch,
        burst: s.burst,
    };
    let (try_xdp, mut why) = choose(s, ifindex, rate);
    let drop0 = xdp::dev_stat(&s.dev, "tx_dropped").unwrap_or(0);
    let mut fallback = String::new();
    if try_xdp {
        let mut xcfg = cfg.clone();
        match (rate, s.batch) {
            // No slots to fill: one call can carry many frames, and the per-call
            // cost (~10 us: a page pool per run) is shared by all of them.
            (None, _) => xcfg.batch = XDP_MAX_BATCH,
            (Some(r), None) => xcfg.batch = pace::batch_for_rate(r, XDP_BATCH_WINDOW_NS, s.burst),
            _ => {}
        }
        let r = xdp::Xdp::open(&tpl, s.flows, ifindex, &s.dev)
            .map_err(|e| (e, 0))
            .and_then(|mut x| tx::run(&mut x, &tpl, &xcfg));
        match r {
            Ok(out) => {
                let drops = egress_drops(&s.dev, drop0);
                let b = xcfg.batch;
                let t = "xdp_live_frames";
                return report_send(s, t, &why, "", rate, planned, b, drops, &out);
            }
            Err((e, sent)) if sent > 0 || pace::stopped() => die(
                EXIT_SYSTEM,
                &format!(
                    "XDP live frames on '{}' failed after {sent} packets: {e}",
                    s.dev
                ),
            ),
            Err((e, _)) => {
                fallback = format!("xdp_live_frames unavailable: {e}");
                why = "XDP live frames failed, so AF_PACKET sendmmsg (fallback)".into();
            }
        }
    }
    let opened: std::io::Result<Box<dyn tx::Tx>> = if s.technique == "none" {
        Ok(Box::new(tx::Dry::new(&tpl, s.burst)))
    } else if s.technique == "txring" {
        tx::TxRing::open(ifindex, &tpl, s.qdisc).map(|t| Box::new(t) as Box<dyn tx::Tx>)
    } else {
        tx::Mmsg::open(ifindex, &tpl, s.burst, s.qdisc).map(|t| Box::new(t) as Box<dyn tx::Tx>)
    };
    let mut txr = match opened {
        Ok(t) => t,
        Err(e) => die(
            EXIT_SYSTEM,
            &format!(
                "cannot open an AF_PACKET socket on '{}': {e}; run as root (CAP_NET_RAW)",
                s.dev
            ),
        ),
    };
    let out = match tx::run(txr.as_mut(), &tpl, &cfg) {
        Ok(o) => o,
        Err((e, n)) => {
            let hint = if e.raw_os_error() == Some(libc::EMSGSIZE) {
                format!(
                    "; a {}-byte frame needs an MTU of at least {} on '{}': raise it \
                     (ip link set DEV mtu N) or lower --size",
                    s.size,
                    s.size - packet::ETH_LEN,
                    s.dev
                )
            } else {
                String::new()
            };
            die(
                EXIT_SYSTEM,
                &format!("sending on '{}' failed after {n} packets: {e}{hint}", s.dev),
            )
        }
    };
    let technique = txr.name();
    let drops = egress_drops(&s.dev, drop0);
    report_send(
        s, technique, &why, &fallback, rate, planned, batch, drops, &out,
    )
}

/// Frames are built per BPF_PROG_RUN call at `--rate max` (~2 ms of work here).
const XDP_MAX_BATCH: usize = 16384;
/// Schedule covered by one XDP call when paced: fewer calls jitter less (p99
/// lateness 0.16-0.2 ms against 0.76-1.05 ms at 600 kpps with 8 us, 0.08-0.26 ms
/// against 0.26-0.62 ms at 3 Mpps; p50 ~16 us against ~5-15 us, measured here).
const XDP_BATCH_WINDOW_NS: u64 = 32_000;

/// `auto` uses XDP live frames from this rate up (and at `--rate max`): each
/// BPF_PROG_RUN call costs ~10 us and the calls jitter (p99 lateness 0.1-1 ms at
/// 480 kpps against ~20 us for sendmmsg, measured here), while sendmmsg keeps up
/// to ~0.6-1 Mpps on this machine.
const AUTO_XDP_MIN_PPS: f64 = 500_000.0;

/// Whether to try XDP live frames, and why this technique.
fn choose(s: &Send, ifindex: u32, rate: Option<f64>) -> (bool, String) {
    match s.technique.as_str() {
        "xdp" => (true, "requested (--technique xdp)".into()),
        "sendmmsg" | "txring" => (false, format!("requested (--technique {})", s.technique)),
        "none" => (
            false,
            "requested (--technique none): paced and stamped, nothing sent".into(),
        ),
        _ if s.qdisc => (
            false,
            "auto: --qdisc asks for the interface's qdisc, which XDP live frames bypass; \
             AF_PACKET sendmmsg through the qdisc"
                .into(),
        ),
        _ => match netlink::peer_has_xdp(ifindex) {
            Ok(Some(true)) if rate.is_none_or(|r| r >= AUTO_XDP_MIN_PPS) => (
                true,
                format!(
                    "auto: the peer of '{}' runs an XDP program, so it takes XDP frames, and \
                     the rate is at least {AUTO_XDP_MIN_PPS} pps; XDP live frames are the \
                     fastest technique measured on veth",
                    s.dev
                ),
            ),
            Ok(Some(true)) => (
                false,
                format!(
                    "auto: below {AUTO_XDP_MIN_PPS} pps AF_PACKET sendmmsg paces more tightly \
                     than XDP live frames (p99 lateness ~20 us against ~0.1-1 ms measured), \
                     though the peer of '{}' takes XDP frames",
                    s.dev
                ),
            ),
            Ok(Some(false)) => (
                false,
                format!(
                    "auto: the peer of '{}' has no XDP program, so it would drop XDP \
                     frames; AF_PACKET sendmmsg (the fastest skb technique)",
                    s.dev
                ),
            ),
            Ok(None) => (
                false,
                format!(
                    "auto: '{}' has no peer link (not a veth); AF_PACKET sendmmsg",
                    s.dev
                ),
            ),
            Err(e) => (
                false,
                format!(
                    "auto: cannot query the peer of '{}' ({e}); AF_PACKET sendmmsg",
                    s.dev
                ),
            ),
        },
    }
}

/// The interface's tx_dropped increase since `before` (veth counts XDP frames its
/// peer could not take here, and skbs it could not queue).
fn egress_drops(dev: &str, before: u64) -> u64 {
    xdp::dev_stat(dev, "tx_dropped").map_or(0, |v| v.saturating_sub(before))
}

#[allow(clippy::too_many_arguments)]
fn report_send(
    s: &Send,
    technique: &str,
    why: &str,
    fallback: &str,
    rate: Option<f64>,
    planned: u64,
    batch: usize,
    egress_drops: u64,
    o: &tx::LoopOut,
) -> i32 {
    let achieved = pace::achieved_rate(o.sent, o.first_batch, o.first_tx, o.last_tx);
    let planned = if rate.is_none() { o.sent } else { planned };
    let duration_s = o.last_tx.saturating_sub(o.first_tx) as f64 / 1e9;
    let (rate_error, ok) = match rate {
        Some(r) => {
            let e = achieved / r - 1.0;
            (e, e.abs() <= RATE_TOLERANCE && o.sent == planned)
        }
        None => (f64::NAN, false),
    };
    let h = &o.lateness;
    let late = |q: f64| {
        if h.n == 0 {
            J::Null
        } else {
            J::U(h.quantile(q))
        }
    };
    let j = J::obj(vec![
        ("mode", J::S("send".into())),
        ("technique", J::S(technique.into())),
        ("technique_reason", J::S(why.into())),
        (
            "fallback_reason",
            if fallback.is_empty() {
                J::Null
            } else {
                J::S(fallback.into())
            },
        ),
        ("planned", J::U(planned)),
        ("sent", J::U(o.sent)),
        ("first_tx_ns", J::U(o.first_tx)),
        ("last_tx_ns", J::U(o.last_tx)),
        ("duration_s", J::F(duration_s)),
        ("rate_pps", rate.map_or(J::Null, J::F)),
        ("achieved_rate_pps", J::F(achieved)),
        ("rate_error", J::F(rate_error)),
        ("lateness_max_ns", late(1.0)),
        ("lateness_p99_ns", late(0.99)),
        ("lateness_p50_ns", late(0.5)),
        ("lateness_mean_ns", J::F(h.mean())),
        ("retries", J::U(o.retries)),
        ("egress_drops", J::U(egress_drops)),
        ("stopped_by_signal", J::B(o.stopped_by_signal)),
        ("ok", J::B(ok)),
        ("best_effort", J::B(s.best_effort)),
        ("batch", J::U(batch as u64)),
        ("burst", J::U(s.burst as u64)),
        ("size_bytes", J::U(s.size as u64)),
        ("flows", J::U(s.flows)),
        ("dev", J::S(s.dev.clone())),
        ("src", J::S(s.src.to_string())),
        ("dst", J::S(s.dst.to_string())),
        ("dst_mac", J::S(packet::fmt_mac(&s.dst_mac))),
        ("version", J::S(env!("CARGO_PKG_VERSION").into())),
    ]);
    if s.json {
        println!("{j}");
    } else {
        println!(
            "netassay-gen ({technique}): sent {} of {planned} packets in {duration_s:.6} s",
            o.sent
        );
        match rate {
            Some(r) => println!(
                "  rate {achieved:.1} pps of {r:.1} requested (error {:+.4}%)",
                rate_error * 100.0
            ),
            None => println!("  rate {achieved:.1} pps (as fast as possible)"),
        }
        if h.n > 0 {
            println!(
                "  lateness p50 {} ns, p99 {} ns, max {} ns",
                h.quantile(0.5),
                h.quantile(0.99),
                h.max
            );
        }
        println!(
            "  retries {}, stopped by signal: {}",
            o.retries, o.stopped_by_signal
        );
    }
    if rate.is_none() || ok || s.best_effort {
        return 0;
    }
    if o.stopped_by_signal {
        eprintln!("netassay-gen: stopped by a signal after {} packets", o.sent);
        return EXIT_RATE;
    }
    eprintln!(
        "netassay-gen: the rate was not kept: {achieved:.0} pps achieved for {:.0} requested \
         ({:+.3}%, tolerance 0.1%); lower --rate, pin the generator (--cpu) or pass \
         --best-effort",
        rate.unwrap_or(0.0),
        rate_error * 100.0
    );
    EXIT_RATE
}

fn xdp_sink(k: &SinkArgs) -> i32 {
    let ifindex = ifindex_or_die(&k.dev);
    let s = sink::Sink::attach(ifindex, k.size).unwrap_or_else(|e| {
        die(
            EXIT_SYSTEM,
            &format!(
                "cannot attach the XDP sink to '{}': {e}; run as root, and detach any \
                 XDP program already there (ip link set DEV xdp off)",
                k.dev
            ),
        )
    });
    match sink::run(&s, &k.dev, k.size, k.duration_ns) {
        Ok(()) => 0,
        Err(e) => die(
            EXIT_SYSTEM,
            &format!("cannot read the XDP sink's counter on '{}': {e}", k.dev),
        ),
    }
}

fn receive(r: &Recv) -> i32 {
    let ifindex = ifindex_or_die(&r.dev);
    pin(r.cpu);
    let block_size: u32 = 1 << 20;
    let cfg = rx::RxCfg {
        ifindex,
        schedule_rate: r.schedule_rate,
        duration_ns: r.duration_ns,
        idle_ns: r.idle_ns,
        block_size,
        block_nr: r.ring_mb,
    };
    pace::install_signals();
    let (fd, map, _len) = match rx::open(&cfg) {
        Ok(x) => x,
        Err(e) => die(
            EXIT_SYSTEM,
            &format!(
                "cannot open an AF_PACKET receive ring on '{}': {e}; run as root",
                r.dev
            ),
        ),
    };
    eprintln!("netassay-gen: receiving on {}", r.dev);
    let out = rx::run(&cfg, fd, map);
    let sched = match (r.schedule_rate, &out.counts.arrivals) {
        (Some(rate), Some(a)) => rx::schedule_stats(a, rate),
        _ => J::Null,
    };
    let extra = vec![
        ("schedule", sched),
        ("technique", J::S("af_packet_tpacket_v3".into())),
        ("ring_drops", J::U(out.ring_drops)),
        ("stopped_by_signal", J::B(out.stopped_by_signal)),
        ("stop_reason", J::S(out.stop_reason.into())),
        ("dev", J::S(r.dev.clone())),
    ];
    let j = out.counts.to_json(r.expect, r.flows, extra);
    if r.json {
        println!("{j}");
    } else {
        let c = &out.counts;
        let rec: u64 = c.flows.iter().map(|f| f.received).sum();
        println!(
            "netassay-gen receive on {}: {rec} packets in {} flows; ring drops {}",
            r.dev,
            c.flows.len(),
            out.ring_drops
        );
        println!("  {j}");
    }
    0
}

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
/// Largest tolerated |achieved/requested - 1|; a --duration run also stops this
/// fraction of its duration past its end (see `plan`). Reported as `rate_tolerance`.
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

/// What a send run is to do, from --rate and --duration or --count.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Plan {
    /// Packets per second; None at --rate max.
    rate: Option<f64>,
    /// Packets to send (u64::MAX at --rate max: as many as the duration allows).
    planned: u64,
    /// After the schedule's start, no send call starts this late (None: --count).
    deadline_ns: Option<u64>,
}

/// A --duration run ends at start + duration plus the rate tolerance of it: a run
/// that late has missed its rate anyway, so one that keeps its rate is never cut
/// short by a stall at its last packet. A --count run has no deadline.
fn plan(rate: &Rate, duration_ns: Option<u64>, count: Option<u64>) -> Result<Plan, String> {
    let grace = |d: u64| (d as f64 * RATE_TOLERANCE).round() as u64;
    let p = match (rate, duration_ns, count) {
        (Rate::Pps(r), Some(d), None) => Plan {
            rate: Some(*r),
            planned: pace::planned(*r, d),
            deadline_ns: Some(d + grace(d)),
        },
        (Rate::Pps(r), None, Some(n)) => Plan {
            rate: Some(*r),
            planned: n,
            deadline_ns: None,
        },
        (Rate::Max, Some(d), _) => Plan {
            rate: None,
            planned: u64::MAX,
            deadline_ns: Some(d),
        },
        _ => return Err("--duration or --count is required".into()),
    };
    if p.planned == 0 {
        return Err("rate * duration rounds to 0 packets: raise --rate or --duration".into());
    }
    Ok(p)
}

/// One finished send loop and how it came to run.
struct Ran {
    technique: &'static str,
    why: String,
    fallback: String,
    batch: usize,
    out: tx::LoopOut,
}

fn send(s: &Send) -> i32 {
    check_safety(s);
    let ifindex = ifindex_or_die(&s.dev);
    let tpl = template(s);
    let plan = plan(&s.rate, s.duration_ns, s.count).unwrap_or_else(|e| die(EXIT_USAGE, &e));
    pin(s.cpu);
    pace::install_signals();
    let cfg = loop_cfg(s, &plan);
    let (try_xdp, why) = choose(s, ifindex, plan.rate);
    let drop0 = xdp::dev_stat(&s.dev, "tx_dropped").unwrap_or(0);
    let ran = if try_xdp {
        send_xdp(s, ifindex, &tpl, &cfg, why)
    } else {
        send_af_packet(s, ifindex, &tpl, &cfg, why, String::new())
    };
    let drops = egress_drops(&s.dev, drop0);
    report_send(s, &plan, &ran, drops)
}

/// The frame to send, with the interface's own MAC unless --src-mac.
fn template(s: &Send) -> packet::Template {
    let src_mac = s.src_mac.unwrap_or_else(|| {
        sys::iface_mac(&s.dev).unwrap_or_else(|e| {
            die(
                EXIT_SYSTEM,
                &format!("cannot read the MAC of '{}': {e}; pass --src-mac", s.dev),
            )
        })
    });
    let spec = packet::Spec {
        src_mac,
        dst_mac: s.dst_mac,
        src: s.src,
        dst: s.dst,
        sport: s.src_port,
        dport: s.dst_port,
        size: s.size,
    };
    packet::Template::new(&spec).unwrap_or_else(|e| die(EXIT_USAGE, &e))
}

fn loop_cfg(s: &Send, p: &Plan) -> tx::LoopCfg {
    let batch = s.batch.unwrap_or(match p.rate {
        Some(r) => pace::batch_for_rate(r, BATCH_WINDOW_NS, s.burst),
        None => s.burst,
    });
    tx::LoopCfg {
        rate: p.rate,
        planned: p.planned,
        deadline_ns: p.deadline_ns,
        flows: s.flows,
        batch,
        burst: s.burst,
    }
}

/// XDP live frames, or AF_PACKET sendmmsg when no frame could leave that way.
fn send_xdp(s: &Send, ifindex: u32, tpl: &packet::Template, cfg: &tx::LoopCfg, why: String) -> Ran {
    let mut xcfg = cfg.clone();
    match (cfg.rate, s.batch) {
        // No slots to fill: one call can carry many frames, and the per-call
        // cost (~10 us: a page pool per run) is shared by all of them.
        (None, _) => xcfg.batch = XDP_MAX_BATCH,
        (Some(r), None) => xcfg.batch = pace::batch_for_rate(r, XDP_BATCH_WINDOW_NS, s.burst),
        _ => {}
    }
    let r = xdp::Xdp::open(tpl, s.flows, ifindex, &s.dev)
        .map_err(|e| (e, 0))
        .and_then(|mut x| match xdp::kernel_paced(cfg.rate) {
            Some(rate) => x.run_paced(&xcfg, rate),
            None => tx::run(&mut x, tpl, &xcfg),
        });
    match r {
        Ok(out) => Ran {
            technique: "xdp_live_frames",
            why,
            fallback: String::new(),
            batch: xdp::kernel_paced(cfg.rate).map_or(xcfg.batch, xdp::paced_inner_batch),
            out,
        },
        Err((e, sent)) if sent > 0 || pace::stopped() => die(
            EXIT_SYSTEM,
            &format!(
                "XDP live frames on '{}' failed after {sent} packets: {e}",
                s.dev
            ),
        ),
        Err((e, _)) => {
            let why = "XDP live frames failed, so AF_PACKET sendmmsg (fallback)".into();
            let fallback = format!("xdp_live_frames unavailable: {e}");
            send_af_packet(s, ifindex, tpl, cfg, why, fallback)
        }
    }
}

fn send_af_packet(
    s: &Send,
    ifindex: u32,
    tpl: &packet::Template,
    cfg: &tx::LoopCfg,
    why: String,
    fallback: String,
) -> Ran {
    let mut txr = open_af_packet(s, ifindex, tpl);
    let out = tx::run(txr.as_mut(), tpl, cfg).unwrap_or_else(|(e, n)| {
        die(
            EXIT_SYSTEM,
            &format!(
                "sending on '{}' failed after {n} packets: {e}{}",
                s.dev,
                mtu_hint(s, &e)
            ),
        )
    });
    Ran {
        technique: txr.name(),
        why,
        fallback,
        batch: cfg.batch,
        out,
    }
}

fn open_af_packet(s: &Send, ifindex: u32, tpl: &packet::Template) -> Box<dyn tx::Tx> {
    let opened: std::io::Result<Box<dyn tx::Tx>> = match s.technique.as_str() {
        "none" => Ok(Box::new(tx::Dry::new(tpl, s.burst))),
        "txring" => tx::TxRing::open(ifindex, tpl, s.qdisc).map(|t| Box::new(t) as _),
        _ => tx::Mmsg::open(ifindex, tpl, s.burst, s.qdisc).map(|t| Box::new(t) as _),
    };
    opened.unwrap_or_else(|e| {
        die(
            EXIT_SYSTEM,
            &format!(
                "cannot open an AF_PACKET socket on '{}': {e}; run as root (CAP_NET_RAW)",
                s.dev
            ),
        )
    })
}

/// What to do when the kernel refused a frame as too long for the interface.
fn mtu_hint(s: &Send, e: &std::io::Error) -> String {
    if e.raw_os_error() != Some(libc::EMSGSIZE) {
        return String::new();
    }
    format!(
        "; a {}-byte frame needs an MTU of at least {} on '{}': raise it \
         (ip link set DEV mtu N) or lower --size",
        s.size,
        s.size - packet::ETH_LEN,
        s.dev
    )
}

/// Frames are built per BPF_PROG_RUN call at `--rate max` (~2 ms of work here).
const XDP_MAX_BATCH: usize = 16384;
/// Schedule covered by one XDP call when paced by calls (below
/// `xdp::MIN_KERNEL_PACED_PPS`; from there up each frame waits inside the kernel).
const XDP_BATCH_WINDOW_NS: u64 = 32_000;

/// `auto` uses XDP live frames from this rate up (and at `--rate max`). Paced inside
/// the kernel they keep the asked rate to 3 Mpps here, p99 lateness 20-500 us, mostly 20-50 (max
/// 0.3-1.7 ms), where sendmmsg reached 473-656 kpps (into an XDP sink on a veth, one
/// vCPU, 1 s runs, measured here); below, sendmmsg paces as tightly and needs no XDP
/// program on the peer.
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

/// How a send run ended, as far as the exit code is concerned.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Verdict {
    /// --rate max: there was no rate to keep.
    Unpaced,
    /// Every planned packet sent, the rate kept within RATE_TOLERANCE.
    Kept,
    /// Every planned packet sent, the rate missed.
    RateMissed,
    /// Fewer packets sent than planned: the deadline came first.
    Truncated,
    /// Fewer packets sent than planned: a signal stopped the run.
    Stopped,
}

fn verdict(rate: Option<f64>, rate_error: f64, sent: u64, planned: u64, stop: tx::Stop) -> Verdict {
    if rate.is_none() {
        Verdict::Unpaced
    } else if sent < planned && stop == tx::Stop::Signal {
        Verdict::Stopped
    } else if sent < planned {
        Verdict::Truncated
    } else if rate_error.abs() <= RATE_TOLERANCE {
        Verdict::Kept
    } else {
        Verdict::RateMissed
    }
}

/// The exit policy: 0 when the rate was kept (or none was asked for), else 3
/// (the rate not kept), which --best-effort turns into 0.
fn exit_code(v: Verdict, best_effort: bool) -> i32 {
    match v {
        Verdict::Unpaced | Verdict::Kept => 0,
        _ if best_effort => 0,
        _ => EXIT_RATE,
    }
}

/// A send run's numbers, as reported.
struct Outcome {
    /// As planned; at --rate max, what was sent.
    planned: u64,
    sent: u64,
    achieved: f64,
    /// achieved / requested - 1 (NaN at --rate max).
    rate_error: f64,
    duration_s: f64,
    verdict: Verdict,
}

impl Outcome {
    fn of(plan: &Plan, o: &tx::LoopOut) -> Outcome {
        let achieved = pace::achieved_rate(o.sent, o.first_batch, o.first_tx, o.last_tx);
        let planned = if plan.rate.is_none() {
            o.sent
        } else {
            plan.planned
        };
        let rate_error = plan.rate.map_or(f64::NAN, |r| achieved / r - 1.0);
        Outcome {
            planned,
            sent: o.sent,
            achieved,
            rate_error,
            duration_s: o.last_tx.saturating_sub(o.first_tx) as f64 / 1e9,
            verdict: verdict(plan.rate, rate_error, o.sent, planned, o.stop),
        }
    }
}

fn report_send(s: &Send, plan: &Plan, ran: &Ran, egress_drops: u64) -> i32 {
    let r = Outcome::of(plan, &ran.out);
    if s.json {
        println!("{}", send_json(s, plan, ran, &r, egress_drops));
    } else {
        print_send(plan, ran, &r);
    }
    let code = exit_code(r.verdict, s.best_effort);
    if code != 0 {
        eprintln!("netassay-gen: {}", not_kept(plan, &r));
    }
    code
}

fn send_json(s: &Send, plan: &Plan, ran: &Ran, r: &Outcome, egress_drops: u64) -> J {
    let (o, h) = (&ran.out, &ran.out.lateness);
    let late = |q: f64| {
        if h.n == 0 {
            J::Null
        } else {
            J::U(h.quantile(q))
        }
    };
    let text_or_null = |t: &str| {
        if t.is_empty() {
            J::Null
        } else {
            J::S(t.into())
        }
    };
    J::obj(vec![
        ("mode", J::S("send".into())),
        ("technique", J::S(ran.technique.into())),
        ("technique_reason", J::S(ran.why.clone())),
        ("fallback_reason", text_or_null(&ran.fallback)),
        ("planned", J::U(r.planned)),
        ("sent", J::U(r.sent)),
        ("shortfall", J::U(r.planned - r.sent)),
        ("truncated", J::B(r.sent < r.planned)),
        ("stop_reason", J::S(o.stop.name().into())),
        ("first_tx_ns", J::U(o.first_tx)),
        ("last_tx_ns", J::U(o.last_tx)),
        ("duration_s", J::F(r.duration_s)),
        ("rate_pps", plan.rate.map_or(J::Null, J::F)),
        ("achieved_rate_pps", J::F(r.achieved)),
        ("rate_error", J::F(r.rate_error)),
        ("rate_tolerance", J::F(RATE_TOLERANCE)),
        ("lateness_max_ns", late(1.0)),
        ("lateness_p99_ns", late(0.99)),
        ("lateness_p50_ns", late(0.5)),
        ("lateness_mean_ns", J::F(h.mean())),
        ("retries", J::U(o.retries)),
        ("egress_drops", J::U(egress_drops)),
        ("stopped_by_signal", J::B(o.stop == tx::Stop::Signal)),
        ("ok", J::B(r.verdict == Verdict::Kept)),
        ("best_effort", J::B(s.best_effort)),
        ("batch", J::U(ran.batch as u64)),
        ("burst", J::U(s.burst as u64)),
        ("size_bytes", J::U(s.size as u64)),
        ("flows", J::U(s.flows)),
        ("dev", J::S(s.dev.clone())),
        ("src", J::S(s.src.to_string())),
        ("dst", J::S(s.dst.to_string())),
        ("dst_mac", J::S(packet::fmt_mac(&s.dst_mac))),
        ("version", J::S(env!("CARGO_PKG_VERSION").into())),
    ])
}

fn print_send(plan: &Plan, ran: &Ran, r: &Outcome) {
    let (o, h) = (&ran.out, &ran.out.lateness);
    println!(
        "netassay-gen ({}): sent {} of {} packets in {:.6} s",
        ran.technique, r.sent, r.planned, r.duration_s
    );
    match plan.rate {
        Some(rate) => println!(
            "  rate {:.1} pps of {rate:.1} requested (error {:+.4}%)",
            r.achieved,
            r.rate_error * 100.0
        ),
        None => println!("  rate {:.1} pps (as fast as possible)", r.achieved),
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
        "  retries {}, stopped by: {}, truncated: {}",
        o.retries,
        o.stop.name(),
        r.sent < r.planned
    );
}

/// The one line on stderr that says why the run exits 3.
fn not_kept(plan: &Plan, r: &Outcome) -> String {
    let rate = plan.rate.unwrap_or(0.0);
    let todo = "lower --rate, pin the generator (--cpu) or pass --best-effort";
    match r.verdict {
        Verdict::Stopped => format!(
            "stopped by a signal after {} of {} planned packets",
            r.sent, r.planned
        ),
        Verdict::Truncated => format!(
            "the rate was not kept: the deadline passed after {} of {} planned packets \
             ({} short; {:.0} pps achieved for {rate:.0} requested); {todo}",
            r.sent,
            r.planned,
            r.planned - r.sent,
            r.achieved
        ),
        _ => format!(
            "the rate was not kept: {:.0} pps achieved for {rate:.0} requested \
             ({:+.3}%, tolerance {}%); {todo}",
            r.achieved,
            r.rate_error * 100.0,
            RATE_TOLERANCE * 100.0
        ),
    }
}

fn xdp_sink(k: &SinkArgs) -> i32 {
    let ifindex = ifindex_or_die(&k.dev);
    let action = if k.pass {
        sink::Action::Pass
    } else {
        sink::Action::Drop
    };
    let s = sink::Sink::attach(ifindex, k.size, action).unwrap_or_else(|e| {
        die(
            EXIT_SYSTEM,
            &format!(
                "cannot attach the XDP sink to '{}': {e}; run as root, and detach any \
                 XDP program already there (ip link set DEV xdp off)",
                k.dev
            ),
        )
    });
    match sink::run(&s, &k.dev, k.duration_ns) {
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
        interval_ns: r.interval_ns,
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

#[cfg(test)]
mod tests {
    use super::*;
    use tx::Stop;

    #[test]
    fn a_duration_run_plans_rate_times_duration_and_ends_at_its_deadline() {
        let p = plan(&Rate::Pps(20e6), Some(1_000_000_000), None).unwrap();
        assert_eq!(p.rate, Some(20e6));
        assert_eq!(p.planned, 20_000_000);
        // the duration plus the rate tolerance of it (1 ms per s)
        assert_eq!(p.deadline_ns, Some(1_001_000_000));
    }

    #[test]
    fn a_count_run_plans_the_count_and_has_no_deadline() {
        let p = plan(&Rate::Pps(20e6), None, Some(12_345)).unwrap();
        assert_eq!((p.planned, p.deadline_ns), (12_345, None));
    }

    #[test]
    fn a_max_rate_run_ends_at_its_duration() {
        let p = plan(&Rate::Max, Some(2_000_000), None).unwrap();
        assert_eq!(p.rate, None);
        assert_eq!((p.planned, p.deadline_ns), (u64::MAX, Some(2_000_000)));
    }

    #[test]
    fn a_plan_of_no_packets_is_refused() {
        let e = plan(&Rate::Pps(1.0), Some(100_000_000), None).unwrap_err();
        assert!(e.contains("rounds to 0 packets"), "{e}");
        assert!(plan(&Rate::Pps(1.0), None, None).is_err());
    }

    fn v(rate_error: f64, sent: u64, stop: Stop) -> Verdict {
        verdict(Some(1e6), rate_error, sent, 1000, stop)
    }

    #[test]
    fn verdicts() {
        assert_eq!(
            verdict(None, f64::NAN, 5, 5, Stop::Signal),
            Verdict::Unpaced
        );
        assert_eq!(v(0.001, 1000, Stop::Complete), Verdict::Kept);
        assert_eq!(v(-0.001, 1000, Stop::Complete), Verdict::Kept);
        assert_eq!(v(-0.0011, 1000, Stop::Complete), Verdict::RateMissed);
        assert_eq!(v(f64::NAN, 1000, Stop::Complete), Verdict::RateMissed);
        // fewer sent than planned is never kept, whatever the achieved rate
        assert_eq!(v(0.0, 999, Stop::Deadline), Verdict::Truncated);
        assert_eq!(v(0.0, 10, Stop::Signal), Verdict::Stopped);
    }

    #[test]
    fn exit_kept_is_0() {
        assert_eq!(exit_code(Verdict::Kept, false), 0);
        assert_eq!(exit_code(Verdict::Kept, true), 0);
    }

    #[test]
    fn exit_unpaced_is_0() {
        assert_eq!(exit_code(Verdict::Unpaced, false), 0);
    }

    #[test]
    fn exit_rate_missed_is_3_unless_best_effort() {
        assert_eq!(exit_code(Verdict::RateMissed, false), EXIT_RATE);
        assert_eq!(exit_code(Verdict::RateMissed, true), 0);
    }

    #[test]
    fn exit_truncated_is_3_unless_best_effort() {
        assert_eq!(exit_code(Verdict::Truncated, false), EXIT_RATE);
        assert_eq!(exit_code(Verdict::Truncated, true), 0);
    }

    #[test]
    fn exit_stopped_by_a_signal_is_3_unless_best_effort() {
        assert_eq!(exit_code(Verdict::Stopped, false), EXIT_RATE);
        assert_eq!(exit_code(Verdict::Stopped, true), 0);
    }

    fn outcome(verdict: Verdict, sent: u64) -> Outcome {
        Outcome {
            planned: 1000,
            sent,
            achieved: 500_000.0,
            rate_error: -0.5,
            duration_s: 0.001,
            verdict,
        }
    }

    #[test]
    fn the_exit_3_line_says_why() {
        let p = plan(&Rate::Pps(1e6), None, Some(1000)).unwrap();
        let t = not_kept(&p, &outcome(Verdict::Truncated, 400));
        assert!(t.contains("deadline passed after 400 of 1000") && t.contains("600 short"));
        let m = not_kept(&p, &outcome(Verdict::RateMissed, 1000));
        assert!(m.contains("-50.000%, tolerance 0.1%"), "{m}");
        let s = not_kept(&p, &outcome(Verdict::Stopped, 10));
        assert_eq!(s, "stopped by a signal after 10 of 1000 planned packets");
    }
}

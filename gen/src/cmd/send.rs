//! Send mode: check that the traffic may go, plan the run, send it with XDP live
//! frames or AF_PACKET, and report it.

use super::plan::{self, Plan};
use super::report::{self, Ran};
use super::{interface, pin, technique};
use crate::args::Send;
use crate::error::{Error, Refusal, SystemError};
use crate::flows::{self, with_low32};
use crate::{pace, packet, sys, tx, xdp};

/// Schedule covered by one send call when the batch is sized to the rate.
const BATCH_WINDOW_NS: u64 = 8_000;
/// Frames are built per BPF_PROG_RUN call at `--rate max` (~2 ms of work here).
const XDP_MAX_BATCH: usize = 16384;
/// Schedule covered by one XDP call when paced by calls (below
/// `xdp::MIN_KERNEL_PACED_PPS`; from there up each frame waits inside the kernel).
const XDP_BATCH_WINDOW_NS: u64 = 32_000;

pub fn run(s: &Send) -> Result<(), Error> {
    let flows = flow_plan(s)?;
    check_safety(s, &flows)?;
    let ifindex = interface(&s.dev)?;
    let tpls = templates(s)?;
    let tpl = &tpls[s.mix.sizes.iter().position(|&n| n == s.size).unwrap_or(0)];
    let plan = plan::plan(&s.rate, s.duration_ns, s.count)?;
    pin(s.cpu)?;
    sys::own_sched_group();
    pace::install_signals();
    pace::share_cpu(s.share_cpu);
    let cfg = loop_cfg(s, &plan);
    let (try_xdp, why) = technique::choose(s, ifindex, plan.rate);
    let drop0 = xdp::dev_stat(&s.dev, "tx_dropped").unwrap_or(0);
    let ran = if try_xdp {
        send_xdp(s, ifindex, tpl, &flows, &cfg, why)?
    } else {
        send_af_packet(s, ifindex, &tpls, &flows, &cfg, why, String::new())?
    };
    let drops = egress_drops(&s.dev, drop0);
    report::report(s, &plan, &ran, drops, Vec::new())?;
    Ok(())
}

/// The flows' tuples (`flows`).
pub fn flow_plan(s: &Send) -> Result<flows::Plan, Error> {
    Ok(flows::Plan::new(
        s.flows,
        s.dsts,
        s.dst_step,
        s.src_port,
        &s.src,
        &s.dst,
        s.flow_order,
    )?)
}

/// Test traffic goes to the benchmarking ranges, from a namespace of its own,
/// unless allowed otherwise: every flow's destination, and its source where the
/// flows have sources of their own.
pub(super) fn check_safety(s: &Send, flows: &flows::Plan) -> Result<(), Refusal> {
    let last = flows.last();
    if !s.allow_any_dst {
        for dst in [s.dst, with_low32(&s.dst, last.dst_low)] {
            if !packet::is_bench_addr(&dst) {
                return Err(Refusal::Destination(dst));
            }
        }
        let src = with_low32(&s.src, last.src_low);
        if flows.sources() > 1 && !packet::is_bench_addr(&src) {
            return Err(Refusal::Source(src));
        }
    }
    match sys::in_host_netns() {
        Ok(true) if !s.allow_host_netns => Err(Refusal::HostNetns(s.dev.clone())),
        Err(e) if !s.allow_host_netns => Err(Refusal::UnknownNetns(e)),
        _ => Ok(()),
    }
}

/// The source MAC: --src-mac, else the interface's own.
pub(super) fn src_mac(s: &Send) -> Result<[u8; 6], SystemError> {
    match s.src_mac {
        Some(m) => Ok(m),
        None => sys::iface_mac(&s.dev).map_err(|err| SystemError::Mac {
            dev: s.dev.clone(),
            err,
        }),
    }
}

/// The frames to send (one per size of the mix), with the interface's own MAC unless
/// --src-mac.
fn templates(s: &Send) -> Result<Vec<packet::Template>, Error> {
    let src_mac = src_mac(s)?;
    let spec = |size| packet::Spec {
        src_mac,
        dst_mac: s.dst_mac,
        src: s.src,
        dst: s.dst,
        sport: s.src_port,
        dport: s.dst_port,
        size,
    };
    let t = s.mix.sizes.iter().map(|&n| packet::Template::new(&spec(n)));
    Ok(t.collect::<Result<_, _>>()?)
}

pub(super) fn loop_cfg(s: &Send, p: &Plan) -> tx::LoopCfg {
    let batch = s.batch.unwrap_or(match p.rate {
        Some(r) => pace::batch_for_rate(r, BATCH_WINDOW_NS, s.burst),
        None => s.burst,
    });
    tx::LoopCfg {
        rate: p.rate,
        planned: p.planned,
        deadline_ns: p.deadline_ns,
        batch,
        burst: s.burst,
        catch_up: s.catch_up,
    }
}

/// XDP live frames, or AF_PACKET sendmmsg when no frame could leave that way.
fn send_xdp(
    s: &Send,
    ifindex: u32,
    tpl: &packet::Template,
    flows: &flows::Plan,
    cfg: &tx::LoopCfg,
    why: String,
) -> Result<Ran, Error> {
    let mut xcfg = cfg.clone();
    match (cfg.rate, s.batch) {
        // No slots to fill: one call can carry many frames, and the per-call
        // cost (~10 us: a page pool per run) is shared by all of them.
        (None, _) => xcfg.batch = XDP_MAX_BATCH,
        (Some(r), None) => xcfg.batch = pace::batch_for_rate(r, XDP_BATCH_WINDOW_NS, s.burst),
        _ => {}
    }
    let r = xdp::Xdp::open(tpl, flows, ifindex, &s.dev)
        .map_err(|e| (e, 0))
        .and_then(|mut x| match xdp::kernel_paced(cfg.rate) {
            Some(rate) => x.run_paced(&xcfg, rate),
            None => tx::run(&mut x, tpl, flows, &xcfg),
        });
    match r {
        Ok(out) => Ok(Ran {
            technique: "xdp_live_frames",
            why,
            fallback: String::new(),
            batch: xdp::kernel_paced(cfg.rate).map_or(xcfg.batch, xdp::paced_inner_batch),
            catch_up: xdp::kernel_paced(cfg.rate).and(cfg.catch_up),
            out,
        }),
        Err((err, sent)) if sent > 0 || pace::stopped() => Err(SystemError::Xdp {
            dev: s.dev.clone(),
            sent,
            err,
        }
        .into()),
        Err((e, _)) => {
            let why = "XDP live frames failed, so AF_PACKET sendmmsg (fallback)".into();
            let fallback = format!("xdp_live_frames unavailable: {e}");
            send_af_packet(
                s,
                ifindex,
                std::slice::from_ref(tpl),
                flows,
                cfg,
                why,
                fallback,
            )
        }
    }
}

/// AF_PACKET with `tpls`: one frame, or a frame per size of the mix (slots sized to
/// its largest, `s.size`).
fn send_af_packet(
    s: &Send,
    ifindex: u32,
    tpls: &[packet::Template],
    flows: &flows::Plan,
    cfg: &tx::LoopCfg,
    why: String,
    fallback: String,
) -> Result<Ran, Error> {
    let largest = tpls.iter().max_by_key(|t| t.frame.len()).expect("a frame");
    let mut txr = open_af_packet(s, ifindex, largest)?;
    let ran = if s.mix.is_mixed() {
        let m = tx::Mixed {
            templates: tpls,
            cycle: &s.mix.cycle,
        };
        tx::run_mixed(txr.as_mut(), &m, flows, cfg)
    } else {
        tx::run(txr.as_mut(), &tpls[0], flows, cfg)
    };
    let out = ran.map_err(|(err, sent)| SystemError::Send {
        dev: s.dev.clone(),
        sent,
        err,
        size: s.size,
        mtu: s.size - packet::ETH_LEN,
    })?;
    Ok(Ran {
        technique: txr.name(),
        why,
        fallback,
        batch: cfg.batch,
        catch_up: None,
        out,
    })
}

pub(super) fn open_af_packet(
    s: &Send,
    ifindex: u32,
    tpl: &packet::Template,
) -> Result<Box<dyn tx::Tx>, SystemError> {
    let opened: std::io::Result<Box<dyn tx::Tx>> = match s.technique.as_str() {
        "none" => Ok(Box::new(tx::Dry::new(tpl, s.burst))),
        "txring" => tx::TxRing::open(ifindex, tpl, s.qdisc).map(|t| Box::new(t) as _),
        _ => tx::Mmsg::open(ifindex, tpl, s.burst, s.qdisc).map(|t| Box::new(t) as _),
    };
    opened.map_err(|err| SystemError::AfPacket {
        dev: s.dev.clone(),
        err,
    })
}

/// The interface's tx_dropped increase since `before` (veth counts XDP frames its
/// peer could not take here, and skbs it could not queue).
pub(super) fn egress_drops(dev: &str, before: u64) -> u64 {
    xdp::dev_stat(dev, "tx_dropped").map_or(0, |v| v.saturating_sub(before))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::Rate;

    fn send() -> Send {
        let a = "--dev tg0 --dst-mac 02:00:00:00:00:01 --src 198.18.0.2 --dst 198.19.0.2 \
                 --rate 1M --duration 1 --allow-host-netns";
        let argv: Vec<String> = a.split_whitespace().map(String::from).collect();
        match crate::args::parse(&argv).unwrap() {
            crate::args::Cmd::Send(s) => *s,
            _ => panic!(),
        }
    }

    #[test]
    fn a_foreign_destination_is_refused_first() {
        let mut s = send();
        s.dst = "10.0.0.2".parse().unwrap();
        let plan = flow_plan(&s).unwrap();
        assert!(matches!(
            check_safety(&s, &plan),
            Err(Refusal::Destination(_))
        ));
        s.allow_any_dst = true;
        assert!(check_safety(&s, &plan).is_ok());
    }

    #[test]
    fn every_flow_stays_in_the_benchmarking_ranges() {
        // 198.19.255.0 + 300 destinations runs past 198.19.255.255 into 198.20.0.0/16
        let mut s = send();
        s.dst = "198.19.255.0".parse().unwrap();
        s.dsts = 300;
        s.flows = 300;
        let plan = flow_plan(&s).unwrap();
        let e = check_safety(&s, &plan).unwrap_err();
        assert!(matches!(e, Refusal::Destination(d) if d.to_string() == "198.20.0.43"));
        // sources of their own: 2M flows' worth of ports from 198.19.255.250
        let mut s = send();
        s.src = "198.19.255.250".parse().unwrap();
        s.flows = 1_000_000;
        let plan = flow_plan(&s).unwrap();
        assert!(matches!(check_safety(&s, &plan), Err(Refusal::Source(_))));
    }

    #[test]
    fn the_frame_is_checked_once_its_mac_is_known() {
        let mut s = send();
        s.src_mac = Some([2, 0, 0, 0, 0, 2]);
        s.mix = crate::mix::Mix::one(1519);
        let e = templates(&s).err().unwrap();
        assert_eq!(e.exit_code(), crate::error::EXIT_USAGE);
        assert_eq!(
            e.to_string(),
            "--size 1519 is out of range for IPv4: use 64..1518"
        );
    }

    #[test]
    fn batches_are_sized_to_the_rate_unless_given() {
        let s = send();
        let p = plan::plan(&Rate::Pps(1e6), Some(1_000_000_000), None).unwrap();
        assert_eq!(loop_cfg(&s, &p).batch, 8); // 8 us of schedule at 1 Mpps
        let p = plan::plan(&Rate::Max, Some(1_000_000_000), None).unwrap();
        assert_eq!(loop_cfg(&s, &p).batch, 64); // the burst
        let s = Send {
            batch: Some(3),
            ..send()
        };
        assert_eq!(loop_cfg(&s, &p).batch, 3);
    }
}

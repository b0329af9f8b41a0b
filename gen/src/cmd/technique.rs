//! Which technique a send run tries first, and why (reported as
//! `technique_reason`).

use crate::args::Send;
use crate::netlink;

/// `auto` uses XDP live frames from this rate up (and at `--rate max`). Paced inside
/// the kernel they keep the asked rate to 3 Mpps here, p99 lateness 20-500 us, mostly 20-50 (max
/// 0.3-1.7 ms), where sendmmsg reached 473-656 kpps (into an XDP sink on a veth, one
/// vCPU, 1 s runs, measured here); below, sendmmsg paces as tightly and needs no XDP
/// program on the peer.
const AUTO_XDP_MIN_PPS: f64 = 500_000.0;

/// Whether to try XDP live frames, and why this technique.
pub fn choose(s: &Send, ifindex: u32, rate: Option<f64>) -> (bool, String) {
    match s.technique.as_str() {
        "xdp" => (true, "requested (--technique xdp)".into()),
        "sendmmsg" | "txring" => (false, format!("requested (--technique {})", s.technique)),
        "none" => (
            false,
            "requested (--technique none): paced and stamped, nothing sent".into(),
        ),
        _ if s.mix.is_mixed() => (
            false,
            "auto: --imix sends frames of several sizes, which XDP live frames (one \
             template) cannot; AF_PACKET sendmmsg"
                .into(),
        ),
        _ if s.qdisc => (
            false,
            "auto: --qdisc asks for the interface's qdisc, which XDP live frames bypass; \
             AF_PACKET sendmmsg through the qdisc"
                .into(),
        ),
        _ => auto(s, ifindex, rate),
    }
}

/// `auto`: XDP live frames when the veth peer takes them and the rate is high
/// enough, else AF_PACKET sendmmsg.
fn auto(s: &Send, ifindex: u32, rate: Option<f64>) -> (bool, String) {
    match netlink::peer_has_xdp(ifindex) {
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
    }
}

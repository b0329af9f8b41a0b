//! One rtnetlink question: does the peer of this veth run an XDP program (in driver
//! mode)? Only then does it take XDP frames (veth's ndo_xdp_xmit needs the peer's
//! NAPI, which its XDP program turns on); asking first keeps `--technique auto` from
//! dropping frames at the generator's egress while it finds out.

use std::io;
use std::os::fd::AsRawFd;

const RTM_GETLINK: u16 = 18;
const RTM_NEWLINK: u16 = 16;
const NLMSG_ERROR: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const IFLA_LINK: u16 = 5;
const IFLA_XDP: u16 = 43;
const IFLA_LINK_NETNSID: u16 = 37;
const IFLA_TARGET_NETNSID: u16 = 46;
const IFLA_XDP_DRV_PROG_ID: u16 = 5;

/// Attributes of one link: (type, payload), top level.
fn get_link(ifindex: u32, netnsid: Option<i32>) -> io::Result<Vec<(u16, Vec<u8>)>> {
    let sock = crate::sys::socket(libc::AF_NETLINK, libc::SOCK_RAW, libc::NETLINK_ROUTE)?;
    let fd = sock.as_raw_fd();
    let mut m: Vec<u8> = vec![0; 32];
    m[4..6].copy_from_slice(&RTM_GETLINK.to_ne_bytes());
    m[6..8].copy_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    m[8..12].copy_from_slice(&1u32.to_ne_bytes());
    m[20..24].copy_from_slice(&(ifindex as i32).to_ne_bytes());
    if let Some(id) = netnsid {
        m.extend_from_slice(&8u16.to_ne_bytes());
        m.extend_from_slice(&IFLA_TARGET_NETNSID.to_ne_bytes());
        m.extend_from_slice(&id.to_ne_bytes());
    }
    let len = m.len() as u32;
    m[0..4].copy_from_slice(&len.to_ne_bytes());
    // SAFETY: the kernel reads `m.len()` bytes of the live `m`.
    if unsafe { libc::send(fd, m.as_ptr() as *const libc::c_void, m.len(), 0) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut buf = vec![0u8; 1 << 16];
    // SAFETY: the kernel writes at most `buf.len()` bytes into the live `buf`.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
    if n < 16 {
        return Err(io::Error::last_os_error());
    }
    let buf = &buf[..n as usize];
    let kind = u16::from_ne_bytes([buf[4], buf[5]]);
    if kind == NLMSG_ERROR {
        let e = i32::from_ne_bytes(buf[16..20].try_into().unwrap());
        return Err(io::Error::from_raw_os_error(-e));
    }
    if kind != RTM_NEWLINK || buf.len() < 32 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "unexpected reply",
        ));
    }
    let total = (u32::from_ne_bytes(buf[0..4].try_into().unwrap()) as usize).min(buf.len());
    Ok(attrs(&buf[32..total]))
}

fn attrs(mut b: &[u8]) -> Vec<(u16, Vec<u8>)> {
    let mut out = Vec::new();
    while b.len() >= 4 {
        let l = u16::from_ne_bytes([b[0], b[1]]) as usize;
        let t = u16::from_ne_bytes([b[2], b[3]]) & 0x3fff;
        if l < 4 || l > b.len() {
            break;
        }
        out.push((t, b[4..l].to_vec()));
        b = &b[((l + 3) & !3).min(b.len())..];
    }
    out
}

fn find(a: &[(u16, Vec<u8>)], t: u16) -> Option<&[u8]> {
    a.iter().find(|(k, _)| *k == t).map(|(_, v)| v.as_slice())
}

/// Some(true) when the peer link of `ifindex` has an XDP program in driver mode,
/// Some(false) when it has none, None when this is not a link with a peer.
pub fn peer_has_xdp(ifindex: u32) -> io::Result<Option<bool>> {
    let me = get_link(ifindex, None)?;
    let peer = match find(&me, IFLA_LINK) {
        Some(v) if v.len() >= 4 => u32::from_ne_bytes(v[..4].try_into().unwrap()),
        _ => return Ok(None),
    };
    let nsid = find(&me, IFLA_LINK_NETNSID)
        .filter(|v| v.len() >= 4)
        .map(|v| i32::from_ne_bytes(v[..4].try_into().unwrap()));
    if peer == 0 || (peer == ifindex && nsid.is_none()) {
        return Ok(None);
    }
    let p = get_link(peer, nsid)?;
    let id = find(&p, IFLA_XDP).map(attrs).and_then(|x| {
        find(&x, IFLA_XDP_DRV_PROG_ID)
            .filter(|v| v.len() >= 4)
            .map(|v| u32::from_ne_bytes(v[..4].try_into().unwrap()))
    });
    Ok(Some(id.unwrap_or(0) != 0))
}

//! Thin wrappers over the system calls netassay-gen needs.

use std::ffi::CString;
use std::io;
use std::os::unix::fs::MetadataExt;

pub const PACKET_QDISC_BYPASS: libc::c_int = 20;
pub const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

pub fn ifindex(dev: &str) -> Option<u32> {
    let c = CString::new(dev).ok()?;
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        None
    } else {
        Some(i)
    }
}

/// Keep the priority the caller gave this process (`nice -n -20 netassay-gen`) against
/// every other task on its CPU. With autogroups (`kernel.sched_autogroup_enabled`, on by
/// default in many kernels) nice ranks only the tasks of one session: a task of another
/// session (a shell's, a service's) shares the CPU with this one's whole session, half
/// and half, whatever their nice. A process started at a negative nice therefore makes
/// a session of its own, whose group gets that nice. Returns the nice set on the group
/// (None: not at a negative nice, not allowed, or no autogroups).
pub fn own_sched_group() -> Option<i32> {
    // SAFETY: getpriority reads this process's nice; errno is cleared first because -1
    // is a valid nice and the only way to tell it from an error.
    let nice = unsafe {
        *libc::__errno_location() = 0;
        libc::getpriority(libc::PRIO_PROCESS, 0)
    };
    if nice >= 0 || std::fs::metadata("/proc/self/autogroup").is_err() {
        return None;
    }
    // SAFETY: setsid has no memory effects; it fails (harmlessly) for a group leader.
    if unsafe { libc::setsid() } < 0 {
        return None;
    }
    std::fs::write("/proc/self/autogroup", format!("{nice}\n")).ok()?;
    Some(nice)
}

/// Pin the calling thread to CPU `c` (sched_setaffinity).
pub fn pin_to_cpu(c: usize) -> io::Result<()> {
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(c, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The interface's hardware address (SIOCGIFHWADDR).
pub fn iface_mac(dev: &str) -> io::Result<[u8; 6]> {
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (i, b) in dev.bytes().take(libc::IFNAMSIZ - 1).enumerate() {
        ifr.ifr_name[i] = b as libc::c_char;
    }
    let r = unsafe { libc::ioctl(fd, libc::SIOCGIFHWADDR, &mut ifr) };
    let err = io::Error::last_os_error();
    unsafe { libc::close(fd) };
    if r < 0 {
        return Err(err);
    }
    let sa = unsafe { ifr.ifr_ifru.ifru_hwaddr };
    let mut m = [0u8; 6];
    for (i, b) in m.iter_mut().enumerate() {
        *b = sa.sa_data[i] as u8;
    }
    Ok(m)
}

/// True when this process shares the network namespace of PID 1 (the host's).
/// A namespace named by `ip netns` (a file in /run/netns) is never the host's; else
/// compare with PID 1, which needs permission to read /proc/1/ns/net.
pub fn in_host_netns() -> io::Result<bool> {
    let me = std::fs::metadata("/proc/self/ns/net")?;
    for dir in ["/run/netns", "/var/run/netns"] {
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                if let Ok(m) = std::fs::metadata(e.path()) {
                    if m.ino() == me.ino() && m.dev() == me.dev() {
                        return Ok(false);
                    }
                }
            }
        }
    }
    let init = std::fs::metadata("/proc/1/ns/net")?;
    Ok(me.ino() == init.ino() && me.dev() == init.dev())
}

pub fn setsockopt_int(fd: i32, level: i32, name: i32, val: i32) -> io::Result<()> {
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &val as *const i32 as *const libc::c_void,
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Map `len` bytes of `fd` (a packet ring) shared, for reading and writing, with
/// `flags` (MAP_POPULATE, MAP_LOCKED) added.
pub fn mmap_shared(fd: i32, len: usize, flags: libc::c_int) -> io::Result<*mut u8> {
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | flags,
            fd,
            0,
        )
    };
    if map == libc::MAP_FAILED {
        Err(io::Error::last_os_error())
    } else {
        Ok(map as *mut u8)
    }
}

/// An AF_PACKET raw socket for protocol `proto` (host order); bind it separately.
pub fn packet_socket(proto: u16) -> io::Result<i32> {
    let fd = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            (proto.to_be()) as i32,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(fd)
}

pub fn bind_packet(fd: i32, ifindex: u32, proto: u16) -> io::Result<()> {
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto.to_be();
    sll.sll_ifindex = ifindex as i32;
    let r = unsafe {
        libc::bind(
            fd,
            &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// The frames an AF_PACKET socket dropped since the last read (PACKET_STATISTICS:
/// reading resets the kernel's count); 0 when it cannot be read. The buffer holds
/// tpacket_stats_v3 (packets, drops, freeze_q_cnt) for a v3 ring; other sockets get
/// tpacket_stats, its first two fields.
pub fn packet_drops(fd: i32) -> u64 {
    const PACKET_STATISTICS: libc::c_int = 6;
    let mut st = [0u32; 3];
    let mut len = std::mem::size_of_val(&st) as libc::socklen_t;
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_PACKET,
            PACKET_STATISTICS,
            st.as_mut_ptr() as *mut libc::c_void,
            &mut len,
        )
    };
    if r < 0 {
        0
    } else {
        st[1] as u64
    }
}

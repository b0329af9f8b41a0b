//! The generator's BPF programs (C under `bpf/`, built by clang through `build.rs` and
//! embedded in the binary), loaded with aya with their per-run constants set in
//! `.rodata`; and the few bpf(2) commands the generator makes itself (map reads and
//! writes, test runs, XDP links).

use aya::maps::{Map, MapData};
use aya::programs::{ProgramError, Xdp};
use aya::{EbpfError, EbpfLoader};
use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

pub const BPF_MAP_LOOKUP_ELEM: i64 = 1;
pub const BPF_MAP_UPDATE_ELEM: i64 = 2;
pub const BPF_PROG_TEST_RUN: i64 = 10;
pub const BPF_LINK_CREATE: i64 = 28;
/// attach_type of an XDP link (BPF_LINK_CREATE).
pub const BPF_XDP: u32 = 37;
pub const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
pub const XDP_DROP: i32 = 1;
pub const XDP_PASS: i32 = 2;
#[cfg(test)]
pub const XDP_TX: i32 = 3;

/// A program's constants (`const volatile` globals in its `.rodata`), as the bytes
/// that replace each one's initial value before load. The verifier reads them, so the
/// branches a run does not take are removed before the program is compiled.
#[derive(Default)]
pub struct Consts(Vec<(&'static str, Vec<u8>)>);

impl Consts {
    pub fn u32(mut self, name: &'static str, v: u32) -> Consts {
        self.0.push((name, v.to_ne_bytes().to_vec()));
        self
    }
    pub fn u64(mut self, name: &'static str, v: u64) -> Consts {
        self.0.push((name, v.to_ne_bytes().to_vec()));
        self
    }
    /// An array of u16s.
    pub fn u16s(mut self, name: &'static str, v: &[u16]) -> Consts {
        self.0
            .push((name, v.iter().flat_map(|x| x.to_ne_bytes()).collect()));
        self
    }
    /// An array of u64s (its whole length: the rest zero).
    pub fn u64s(mut self, name: &'static str, v: &[u64], len: usize) -> Consts {
        let mut b: Vec<u8> = v.iter().flat_map(|x| x.to_ne_bytes()).collect();
        b.resize(len * 8, 0);
        self.0.push((name, b));
        self
    }
}

/// A loaded program and the maps asked for, each an fd of its own: the program, and
/// the maps it uses, live while they are open.
pub struct Loaded {
    pub prog: OwnedFd,
    pub maps: Vec<OwnedFd>,
}

/// The verifier's reason in an error: its last line that is not a statistic.
fn verifier_reason(log: &str) -> &str {
    log.lines()
        .rev()
        .map(str::trim)
        .find(|l| {
            !l.is_empty() && !l.starts_with("processed ") && !l.starts_with("verification time")
        })
        .unwrap_or("")
}

fn load_error(e: ProgramError) -> io::Error {
    match e {
        ProgramError::LoadError {
            io_error,
            verifier_log,
        } => {
            let log = verifier_log.to_string();
            let why = verifier_reason(&log);
            io::Error::new(io_error.kind(), format!("{io_error}: {why}"))
        }
        e => io::Error::other(e.to_string()),
    }
}

/// An aya error as an io::Error: the system call's own error (its kind and words: a
/// map the kernel refused is `Operation not permitted` as before) after aya's words.
fn ebpf_error(e: EbpfError) -> io::Error {
    let mut src: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(&e);
    while let Some(x) = src {
        if let Some(io) = x.downcast_ref::<io::Error>() {
            return io::Error::new(io.kind(), format!("{e}: {io}"));
        }
        src = x.source();
    }
    io::Error::other(e.to_string())
}

/// An owned copy of a map's descriptor.
fn map_fd(m: Map) -> io::Result<OwnedFd> {
    let data: MapData = match m {
        Map::Array(d) | Map::PerCpuArray(d) => d,
        _ => return Err(io::Error::other("an unexpected kind of map")),
    };
    data.fd().as_fd().try_clone_to_owned()
}

/// Load the XDP program `prog` of the object `obj` with `consts` set, each map of
/// `entries` created with that many entries, and return it with the maps `maps` (in
/// that order). On failure the verifier's reason is in the error.
pub fn load_xdp(
    obj: &[u8],
    prog: &str,
    consts: &Consts,
    entries: &[(&str, u32)],
    maps: &[&str],
) -> io::Result<Loaded> {
    let mut l = EbpfLoader::new();
    // no CO-RE relocations to make against the kernel's BTF
    l.btf(None);
    for (name, v) in &consts.0 {
        l.override_global(name, v.as_slice(), true);
    }
    for (name, n) in entries {
        l.map_max_entries(name, *n);
    }
    let mut ebpf = l.load(obj).map_err(ebpf_error)?;
    let p: &mut Xdp = ebpf
        .program_mut(prog)
        .ok_or_else(|| io::Error::other(format!("no program {prog}")))?
        .try_into()
        .map_err(|e: ProgramError| io::Error::other(e.to_string()))?;
    p.load().map_err(load_error)?;
    let fd = p
        .fd()
        .map_err(|e| io::Error::other(e.to_string()))?
        .as_fd()
        .try_clone_to_owned()?;
    let mut out = Vec::with_capacity(maps.len());
    for name in maps {
        let m = ebpf
            .take_map(name)
            .ok_or_else(|| io::Error::other(format!("no map {name}")))?;
        out.push(map_fd(m)?);
    }
    Ok(Loaded {
        prog: fd,
        maps: out,
    })
}

#[cfg(test)]
/// One test run (BPF_PROG_TEST_RUN, not live: the frame comes back) of `prog` on
/// `frame`, as if it arrived on interface `ifindex` (0: no ingress interface given);
/// the return code and the frame as the program left it.
pub fn test_run(
    prog: std::os::fd::BorrowedFd,
    frame: &[u8],
    ifindex: u32,
) -> io::Result<(i32, Vec<u8>)> {
    let ctx: [u32; 6] = [0, frame.len() as u32, 0, ifindex, 0, 0];
    let mut out = vec![0u8; frame.len() + 256];
    let mut a = [0u8; 80];
    put32(&mut a, 0, prog.as_raw_fd() as u32);
    put32(&mut a, 8, frame.len() as u32);
    put32(&mut a, 12, out.len() as u32);
    put64(&mut a, 16, frame.as_ptr() as u64);
    put64(&mut a, 24, out.as_mut_ptr() as u64);
    put32(&mut a, 32, 1);
    if ifindex != 0 {
        put32(&mut a, 40, std::mem::size_of_val(&ctx) as u32);
        put64(&mut a, 48, ctx.as_ptr() as u64);
    }
    sys(BPF_PROG_TEST_RUN, &mut a)?;
    let len = u32::from_ne_bytes(a[12..16].try_into().unwrap()) as usize;
    out.truncate(len);
    Ok((u32::from_ne_bytes(a[4..8].try_into().unwrap()) as i32, out))
}

/// bpf(2) with the attributes in `attr`. The caller fills `attr` as `cmd` wants it:
/// every pointer it holds must point at memory that lives, and is as large as the
/// size beside it says, until the call returns.
pub fn sys(cmd: i64, attr: &mut [u8]) -> io::Result<i64> {
    // SAFETY: the kernel reads and writes at most `attr.len()` bytes of `attr`, a live,
    // exclusively borrowed buffer; the pointers inside it are the caller's to keep
    // valid (see above), which every caller here does with locals that outlive the call.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), attr.len()) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

pub fn put32(a: &mut [u8], off: usize, v: u32) {
    a[off..off + 4].copy_from_slice(&v.to_ne_bytes());
}
pub fn put64(a: &mut [u8], off: usize, v: u64) {
    a[off..off + 8].copy_from_slice(&v.to_ne_bytes());
}

/// The new descriptor a bpf(2) command returned, owned (closed on drop).
fn new_fd(cmd: i64, attr: &mut [u8]) -> io::Result<OwnedFd> {
    let fd = sys(cmd, attr)?;
    // SAFETY: the commands that create an object return a new descriptor that this
    // process owns and nothing else holds; `sys` turned a negative return into Err.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// An array map of `entries` values of `value_size` bytes that this process reads and
/// writes through shared memory (a program's atomic adds are seen at once, and millions of
/// values are read without a system call each). Needs Linux >= 5.5.
pub struct Shared {
    /// The map, open while it is mapped.
    _fd: OwnedFd,
    ptr: NonNull<u8>,
    len: usize,
}

impl Shared {
    /// Map the values of `fd`, an array map of `entries` values of `value_size` bytes
    /// created with BPF_F_MMAPABLE (a program's map, `load_xdp`).
    pub fn map(fd: OwnedFd, value_size: u32, entries: u32) -> io::Result<Shared> {
        let page = 4096usize;
        let len = (value_size as usize * entries as usize).div_ceil(page) * page;
        // SAFETY: a new mapping at an address the kernel picks (no hint), of the map's
        // values rounded up to a page, which is what an mmapable array map lets a process
        // map; `fd` is a live map created mmapable (the caller's word). Nothing else in this process aliases
        // the memory returned.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr as *mut u8).ok_or_else(|| io::Error::other("mmap gave 0"))?;
        Ok(Shared { _fd: fd, ptr, len })
    }

    /// The first `n` values as u64s (an array map's values are 8 bytes apart whatever
    /// their size: give it 8-byte values). They are atomics, as a program may add to
    /// them at any time; loads and stores of one value need no more than Relaxed.
    pub fn u64s(&self, n: usize) -> &[AtomicU64] {
        assert!(n * 8 <= self.len);
        // SAFETY: the mapping is `len` bytes from a page boundary (so 8-aligned) and lives
        // as long as `self`, which the slice borrows; n * 8 <= len was checked. AtomicU64
        // has u64's size and layout, every bit pattern is a valid u64, and the only other
        // writers (BPF programs, through the kernel) write these values atomically too.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr() as *const AtomicU64, n) }
    }

    /// The first `n` values as they are now (a program may add to them meanwhile).
    pub fn read(&self, n: usize) -> Vec<u64> {
        self.u64s(n).iter().map(|v| v.load(Relaxed)).collect()
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: `ptr` and `len` are the mapping `create` made, unmapped once, here; no
        // slice of it outlives `self` (`u64s` borrows it).
        unsafe { libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.len) };
    }
}

/// Look `key` up; `value` must be as large as the kernel's value (per-CPU maps:
/// value size rounded to 8, times the possible CPUs).
pub fn map_lookup(map: impl AsFd, key: u32, value: &mut [u8]) -> io::Result<()> {
    let mut a = [0u8; 32];
    put32(&mut a, 0, map.as_fd().as_raw_fd() as u32);
    put64(&mut a, 8, &key as *const u32 as u64);
    put64(&mut a, 16, value.as_mut_ptr() as u64);
    sys(BPF_MAP_LOOKUP_ELEM, &mut a)?;
    Ok(())
}

/// Write `value` at `key` (BPF_ANY).
pub fn map_update(map: impl AsFd, key: u32, value: &[u8]) -> io::Result<()> {
    let mut a = [0u8; 32];
    put32(&mut a, 0, map.as_fd().as_raw_fd() as u32);
    put64(&mut a, 8, &key as *const u32 as u64);
    put64(&mut a, 16, value.as_ptr() as u64);
    sys(BPF_MAP_UPDATE_ELEM, &mut a)?;
    Ok(())
}

/// Attach an XDP program to `ifindex` (native mode) through a BPF link: it stays
/// attached while the returned fd is open, so it goes away when the process ends.
/// `flags`: 0 (native where the driver has it) or XDP_FLAGS_SKB_MODE.
pub fn xdp_link(prog: impl AsFd, ifindex: u32, flags: u32) -> io::Result<OwnedFd> {
    let mut a = [0u8; 64];
    put32(&mut a, 0, prog.as_fd().as_raw_fd() as u32);
    put32(&mut a, 4, ifindex);
    put32(&mut a, 8, BPF_XDP);
    put32(&mut a, 12, flags);
    new_fd(BPF_LINK_CREATE, &mut a)
}

/// Number of possible CPUs (sizes per-CPU map values).
pub fn possible_cpus() -> usize {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap_or_default();
    let mut n = 0;
    for part in s.trim().split(',') {
        let mut it = part.split('-').filter_map(|x| x.parse::<usize>().ok());
        match (it.next(), it.next()) {
            (Some(a), Some(b)) => n = n.max(b + 1).max(a + 1),
            (Some(a), None) => n = n.max(a + 1),
            _ => {}
        }
    }
    n.max(1)
}

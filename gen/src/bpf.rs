//! The few bpf(2) commands netassay-gen needs (maps, program load, test runs, XDP
//! links) and a tiny assembler for the hand-written programs (no clang needed).

use std::io;

pub const BPF_MAP_CREATE: i64 = 0;
pub const BPF_MAP_LOOKUP_ELEM: i64 = 1;
pub const BPF_MAP_UPDATE_ELEM: i64 = 2;
pub const BPF_PROG_LOAD: i64 = 5;
pub const BPF_PROG_TEST_RUN: i64 = 10;
pub const BPF_BTF_LOAD: i64 = 18;
pub const BPF_LINK_CREATE: i64 = 28;
pub const BPF_MAP_TYPE_ARRAY: u32 = 2;
pub const BPF_MAP_TYPE_PERCPU_ARRAY: u32 = 6;
pub const BPF_PROG_TYPE_XDP: u32 = 6;
/// attach_type of an XDP link (BPF_LINK_CREATE).
pub const BPF_XDP: u32 = 37;
pub const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
pub const XDP_DROP: i32 = 1;
pub const XDP_PASS: i32 = 2;
pub const XDP_TX: i32 = 3;

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Insn(pub u8, pub u8, pub i16, pub i32);

pub fn ins(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn(code, (src << 4) | (dst & 0x0f), off, imm)
}
pub fn mov_x(d: u8, s: u8) -> Insn {
    ins(0xbf, d, s, 0, 0)
}
pub fn mov_k(d: u8, k: i32) -> Insn {
    ins(0xb7, d, 0, 0, k)
}
pub fn add_k(d: u8, k: i32) -> Insn {
    ins(0x07, d, 0, 0, k)
}
pub fn add_x(d: u8, s: u8) -> Insn {
    ins(0x0f, d, s, 0, 0)
}
pub fn and_k(d: u8, k: i32) -> Insn {
    ins(0x57, d, 0, 0, k)
}
pub fn rsh_k(d: u8, k: i32) -> Insn {
    ins(0x77, d, 0, 0, k)
}
pub fn be(d: u8, bits: i32) -> Insn {
    ins(0xdc, d, 0, 0, bits)
}
pub fn call(f: i32) -> Insn {
    ins(0x85, 0, 0, 0, f)
}
pub fn exit() -> Insn {
    ins(0x95, 0, 0, 0, 0)
}
/// r`d` = the map with this fd (ld_imm64 with BPF_PSEUDO_MAP_FD): two slots.
pub fn ld_map(d: u8, fd: i32) -> [Insn; 2] {
    [ins(0x18, d, 1, 0, fd), ins(0, 0, 0, 0, 0)]
}

/// A program under construction whose forward jumps name labels.
#[derive(Default)]
pub struct Asm {
    pub p: Vec<Insn>,
    fix: Vec<(usize, usize)>,
    at: Vec<Option<usize>>,
}

impl Asm {
    pub fn new(labels: usize) -> Asm {
        Asm {
            at: vec![None; labels],
            ..Default::default()
        }
    }
    pub fn push(&mut self, i: Insn) {
        self.p.push(i);
    }
    pub fn extend<I: IntoIterator<Item = Insn>>(&mut self, it: I) {
        self.p.extend(it);
    }
    /// A conditional (or, with code 0x05, unconditional) jump to `label`.
    pub fn jmp(&mut self, code: u8, dst: u8, src: u8, imm: i32, label: usize) {
        self.fix.push((self.p.len(), label));
        self.p.push(ins(code, dst, src, 0, imm));
    }
    pub fn label(&mut self, l: usize) {
        self.at[l] = Some(self.p.len());
    }
    pub fn finish(mut self) -> Vec<Insn> {
        for (i, l) in self.fix {
            let t = self.at[l].expect("jump to an unplaced label");
            self.p[i].2 = (t as i64 - i as i64 - 1) as i16;
        }
        self.p
    }
}

pub fn sys(cmd: i64, attr: &mut [u8]) -> io::Result<i64> {
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

/// A file descriptor closed on drop.
pub struct Fd(pub i32);

impl Drop for Fd {
    fn drop(&mut self) {
        unsafe { libc::close(self.0) };
    }
}

pub fn map_create(kind: u32, value_size: u32, entries: u32) -> io::Result<Fd> {
    let mut a = [0u8; 128];
    put32(&mut a, 0, kind);
    put32(&mut a, 4, 4);
    put32(&mut a, 8, value_size);
    put32(&mut a, 12, entries);
    Ok(Fd(sys(BPF_MAP_CREATE, &mut a)? as i32))
}

/// BPF_F_MMAPABLE: an array map whose values the process maps into its memory.
const BPF_F_MMAPABLE: u32 = 1 << 10;

/// An array map of `entries` values of `value_size` bytes that this process reads and
/// writes through shared memory (a program's atomic adds are seen at once, and millions of
/// values are read without a system call each). Needs Linux >= 5.5.
pub struct Shared {
    pub fd: Fd,
    ptr: *mut u8,
    len: usize,
}

impl Shared {
    pub fn create(value_size: u32, entries: u32) -> io::Result<Shared> {
        let mut a = [0u8; 128];
        put32(&mut a, 0, BPF_MAP_TYPE_ARRAY);
        put32(&mut a, 4, 4);
        put32(&mut a, 8, value_size);
        put32(&mut a, 12, entries);
        put32(&mut a, 16, BPF_F_MMAPABLE);
        let fd = Fd(sys(BPF_MAP_CREATE, &mut a)? as i32);
        let page = 4096usize;
        let len = (value_size as usize * entries as usize).div_ceil(page) * page;
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.0,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Shared {
            fd,
            ptr: ptr as *mut u8,
            len,
        })
    }

    /// The values as u64s, to write (an array map's values are 8 bytes apart
    /// whatever their size: give it 8-byte values).
    pub fn u64s_mut(&mut self, n: usize) -> &mut [u64] {
        assert!(n * 8 <= self.len);
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut u64, n) }
    }

    /// The values as u64s, read as they are now (a program may add to them meanwhile).
    pub fn u64s(&self, n: usize) -> &[u64] {
        assert!(n * 8 <= self.len);
        unsafe { std::slice::from_raw_parts(self.ptr as *const u64, n) }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

/// Look `key` up; `value` must be as large as the kernel's value (per-CPU maps:
/// value size rounded to 8, times the possible CPUs).
pub fn map_lookup(fd: &Fd, key: u32, value: &mut [u8]) -> io::Result<()> {
    let mut a = [0u8; 32];
    put32(&mut a, 0, fd.0 as u32);
    put64(&mut a, 8, &key as *const u32 as u64);
    put64(&mut a, 16, value.as_mut_ptr() as u64);
    sys(BPF_MAP_LOOKUP_ELEM, &mut a)?;
    Ok(())
}

/// Write `value` at `key` (BPF_ANY).
pub fn map_update(fd: &Fd, key: u32, value: &[u8]) -> io::Result<()> {
    let mut a = [0u8; 32];
    put32(&mut a, 0, fd.0 as u32);
    put64(&mut a, 8, &key as *const u32 as u64);
    put64(&mut a, 16, value.as_ptr() as u64);
    sys(BPF_MAP_UPDATE_ELEM, &mut a)?;
    Ok(())
}

/// BTF for a program of several functions, as the verifier wants it when one of them
/// is a callback (bpf_loop): a FUNC per function (static, `int f(void)`), named.
pub(crate) fn funcs_btf(names: &[&str]) -> Vec<u8> {
    let mut strs = b"\0int\0".to_vec();
    let mut types: Vec<u32> = vec![
        1,
        1 << 24,
        4,
        0x0100_0020, // [1] INT "int" size 4, signed, 32 bits
        0,
        13 << 24,
        1, // [2] FUNC_PROTO int (void)
    ];
    for n in names {
        types.extend([strs.len() as u32, 12 << 24, 2]); // [3..] FUNC static -> [2]
        strs.extend_from_slice(n.as_bytes());
        strs.push(0);
    }
    let tlen = types.len() as u32 * 4;
    let mut b = Vec::new();
    b.extend(0xeb9fu16.to_ne_bytes());
    b.extend([1u8, 0]);
    for v in [24u32, 0, tlen, tlen, strs.len() as u32] {
        b.extend(v.to_ne_bytes());
    }
    for v in types {
        b.extend(v.to_ne_bytes());
    }
    b.extend(strs);
    b
}

fn btf_load(btf: &[u8]) -> io::Result<Fd> {
    let mut a = [0u8; 32];
    put64(&mut a, 0, btf.as_ptr() as u64);
    put32(&mut a, 16, btf.len() as u32);
    Ok(Fd(sys(BPF_BTF_LOAD, &mut a)? as i32))
}

/// Load an XDP program; on failure the verifier's last line is in the error.
pub fn prog_load_xdp(prog: &[Insn], name: &str) -> io::Result<Fd> {
    prog_load_xdp_funcs(prog, name, &[])
}

/// Load an XDP program whose functions (a callback of bpf_loop, say) start at the
/// given instructions: `funcs` names each with its first instruction, the main one
/// (at 0) first; empty for a program of one function.
pub fn prog_load_xdp_funcs(prog: &[Insn], name: &str, funcs: &[(u32, &str)]) -> io::Result<Fd> {
    let mut code: Vec<u8> = Vec::with_capacity(prog.len() * 8);
    for Insn(c, r, o, i) in prog {
        code.push(*c);
        code.push(*r);
        code.extend_from_slice(&o.to_ne_bytes());
        code.extend_from_slice(&i.to_ne_bytes());
    }
    let license = b"GPL\0";
    let mut log = vec![0u8; 1 << 16];
    let mut a = [0u8; 128];
    put32(&mut a, 0, BPF_PROG_TYPE_XDP);
    put32(&mut a, 4, prog.len() as u32);
    put64(&mut a, 8, code.as_ptr() as u64);
    put64(&mut a, 16, license.as_ptr() as u64);
    put32(&mut a, 24, 1);
    put32(&mut a, 28, log.len() as u32);
    put64(&mut a, 32, log.as_mut_ptr() as u64);
    let n = name.len().min(15);
    a[48..48 + n].copy_from_slice(&name.as_bytes()[..n]);
    let btf = if funcs.is_empty() {
        None
    } else {
        let names: Vec<&str> = funcs.iter().map(|f| f.1).collect();
        Some(btf_load(&funcs_btf(&names))?)
    };
    let info: Vec<u32> = funcs
        .iter()
        .enumerate()
        .flat_map(|(i, f)| [f.0, 3 + i as u32])
        .collect();
    if let Some(b) = &btf {
        put32(&mut a, 72, b.0 as u32); // prog_btf_fd
        put32(&mut a, 76, 8); // func_info_rec_size
        put64(&mut a, 80, info.as_ptr() as u64);
        put32(&mut a, 88, funcs.len() as u32);
    }
    match sys(BPF_PROG_LOAD, &mut a) {
        Ok(fd) => Ok(Fd(fd as i32)),
        Err(e) => {
            let end = log.iter().position(|&b| b == 0).unwrap_or(0);
            let msg = String::from_utf8_lossy(&log[..end]);
            let last = msg
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            Err(io::Error::new(e.kind(), format!("{e}: {last}")))
        }
    }
}

/// Attach an XDP program to `ifindex` (native mode) through a BPF link: it stays
/// attached while the returned fd is open, so it goes away when the process ends.
/// `flags`: 0 (native where the driver has it) or XDP_FLAGS_SKB_MODE.
pub fn xdp_link(prog: &Fd, ifindex: u32, flags: u32) -> io::Result<Fd> {
    let mut a = [0u8; 64];
    put32(&mut a, 0, prog.0 as u32);
    put32(&mut a, 4, ifindex);
    put32(&mut a, 8, BPF_XDP);
    put32(&mut a, 12, flags);
    Ok(Fd(sys(BPF_LINK_CREATE, &mut a)? as i32))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_resolve_forward_and_backward() {
        let mut a = Asm::new(2);
        a.label(1);
        a.jmp(0x15, 1, 0, 0, 0);
        a.push(mov_k(0, 1));
        a.jmp(0x05, 0, 0, 0, 1);
        a.label(0);
        a.push(exit());
        let p = a.finish();
        assert_eq!(p[0].2, 2);
        assert_eq!(p[2].2, -3);
    }
}

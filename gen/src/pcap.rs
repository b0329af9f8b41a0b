//! Reading capture files: libpcap (as tcpdump writes it: microsecond or nanosecond
//! timestamps, either byte order) and pcapng (section header, interface description
//! with its `if_tsresol`, enhanced and simple packet blocks; other blocks skipped).
//! Every record keeps its link type, its time in ns (from the capture's own epoch)
//! and its bytes as captured, with the length the frame had on the wire.

/// One captured frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The interface's link type (1: Ethernet).
    pub linktype: u16,
    /// When it was captured, in ns (a simple packet block has none: the previous
    /// record's time).
    pub ts_ns: u64,
    /// The frame's length on the wire (more than `data` when the capture cut it).
    pub orig_len: u32,
    pub data: Vec<u8>,
}

/// What a file that cannot be read is, in words (`PcapError` names the file).
pub type Why = String;

/// The records of a capture file's bytes, libpcap or pcapng.
pub fn parse(b: &[u8]) -> Result<Vec<Record>, Why> {
    if b.len() < 4 {
        return Err("too short for a capture file".into());
    }
    match u32::from_le_bytes(b[..4].try_into().unwrap()) {
        0xa1b2_c3d4 | 0xd4c3_b2a1 | 0xa1b2_3c4d | 0x4d3c_b2a1 => libpcap(b),
        0x0a0d_0d0a => pcapng(b),
        m => Err(format!(
            "not a libpcap or pcapng file (it starts with 0x{m:08x})"
        )),
    }
}

/// Reads integers of one byte order.
#[derive(Clone, Copy)]
struct Order {
    big: bool,
}

impl Order {
    fn u16(self, b: &[u8], at: usize) -> u16 {
        let w = [b[at], b[at + 1]];
        if self.big {
            u16::from_be_bytes(w)
        } else {
            u16::from_le_bytes(w)
        }
    }
    fn u32(self, b: &[u8], at: usize) -> u32 {
        let w = b[at..at + 4].try_into().unwrap();
        if self.big {
            u32::from_be_bytes(w)
        } else {
            u32::from_le_bytes(w)
        }
    }
}

fn libpcap(b: &[u8]) -> Result<Vec<Record>, Why> {
    if b.len() < 24 {
        return Err("a libpcap header cut short".into());
    }
    let magic = u32::from_le_bytes(b[..4].try_into().unwrap());
    let big = matches!(magic, 0xd4c3_b2a1 | 0x4d3c_b2a1);
    let nano = matches!(magic, 0xa1b2_3c4d | 0x4d3c_b2a1);
    let o = Order { big };
    // the link type's low 16 bits (the upper ones say how an FCS is carried)
    let linktype = (o.u32(b, 20) & 0xffff) as u16;
    let mut out = Vec::new();
    let mut at = 24;
    while at < b.len() {
        if at + 16 > b.len() {
            return Err(format!("record {} cut short (its header)", out.len() + 1));
        }
        let (sec, frac) = (o.u32(b, at) as u64, o.u32(b, at + 4) as u64);
        let (caplen, orig_len) = (o.u32(b, at + 8) as usize, o.u32(b, at + 12));
        let data = b
            .get(at + 16..at + 16 + caplen)
            .ok_or_else(|| format!("record {} cut short (its data)", out.len() + 1))?;
        out.push(Record {
            linktype,
            ts_ns: sec * 1_000_000_000 + if nano { frac } else { frac * 1000 },
            orig_len,
            data: data.to_vec(),
        });
        at += 16 + caplen;
    }
    Ok(out)
}

const SHB: u32 = 0x0a0d_0d0a;
const IDB: u32 = 1;
const SPB: u32 = 3;
const EPB: u32 = 6;
const IF_TSRESOL: u16 = 9;

/// An interface of a pcapng section: its link type, snap length and time unit.
struct Iface {
    linktype: u16,
    snaplen: u32,
    /// Time units per second: 10^v, or 2^v.
    per_s: u128,
}

impl Iface {
    fn ns(&self, ts: u64) -> u64 {
        (ts as u128 * 1_000_000_000 / self.per_s) as u64
    }
}

fn pcapng(b: &[u8]) -> Result<Vec<Record>, Why> {
    let mut out: Vec<Record> = Vec::new();
    let mut ifaces: Vec<Iface> = Vec::new();
    let mut o = Order { big: false };
    let mut at = 0;
    while at < b.len() {
        if at + 12 > b.len() {
            return Err(format!("a block at byte {at} cut short"));
        }
        let kind = o.u32(b, at);
        if kind == SHB {
            // the byte-order magic decides how this section reads
            let bom = b.get(at + 8..at + 12).ok_or("a section header cut short")?;
            o = match u32::from_le_bytes(bom.try_into().unwrap()) {
                0x1a2b_3c4d => Order { big: false },
                0x4d3c_2b1a => Order { big: true },
                _ => {
                    return Err(format!(
                        "a section header at byte {at} with no byte-order magic"
                    ))
                }
            };
            ifaces.clear();
        }
        let len = o.u32(b, at + 4) as usize;
        if len < 12 || !len.is_multiple_of(4) || at + len > b.len() {
            return Err(format!(
                "a block at byte {at} cut short or of a bad length ({len})"
            ));
        }
        let body = &b[at + 8..at + len - 4];
        match kind {
            IDB => ifaces.push(iface(o, body)?),
            EPB => {
                if body.len() < 20 {
                    return Err(format!("an enhanced packet block at byte {at} cut short"));
                }
                let i = o.u32(body, 0) as usize;
                let f = ifaces
                    .get(i)
                    .ok_or_else(|| format!("a packet of interface {i}, never described"))?;
                let ts = (o.u32(body, 4) as u64) << 32 | o.u32(body, 8) as u64;
                let caplen = o.u32(body, 12) as usize;
                let data = body
                    .get(20..20 + caplen)
                    .ok_or_else(|| format!("an enhanced packet block at byte {at} cut short"))?;
                out.push(Record {
                    linktype: f.linktype,
                    ts_ns: f.ns(ts),
                    orig_len: o.u32(body, 16),
                    data: data.to_vec(),
                });
            }
            SPB => {
                let f = ifaces
                    .first()
                    .ok_or("a simple packet block before any interface")?;
                if body.len() < 4 {
                    return Err(format!("a simple packet block at byte {at} cut short"));
                }
                let orig_len = o.u32(body, 0);
                let mut caplen = (orig_len as usize).min(body.len() - 4);
                if f.snaplen > 0 {
                    caplen = caplen.min(f.snaplen as usize);
                }
                out.push(Record {
                    linktype: f.linktype,
                    ts_ns: out.last().map_or(0, |r| r.ts_ns),
                    orig_len,
                    data: body[4..4 + caplen].to_vec(),
                });
            }
            _ => {}
        }
        at += len;
    }
    Ok(out)
}

/// An interface description block's body: link type, snap length, if_tsresol.
fn iface(o: Order, body: &[u8]) -> Result<Iface, Why> {
    if body.len() < 8 {
        return Err("an interface description block cut short".into());
    }
    let mut f = Iface {
        linktype: o.u16(body, 0),
        snaplen: o.u32(body, 4),
        per_s: 1_000_000,
    };
    let mut at = 8;
    while at + 4 <= body.len() {
        let (code, len) = (o.u16(body, at), o.u16(body, at + 2) as usize);
        if code == 0 {
            break;
        }
        if code == IF_TSRESOL && len >= 1 && at + 4 < body.len() {
            let v = body[at + 4];
            let exp = (v & 0x7f) as u32;
            f.per_s = match (v & 0x80 != 0, exp) {
                (true, 0..=63) => 1u128 << exp,
                (false, 0..=19) => 10u128.pow(exp),
                _ => {
                    return Err(format!(
                        "an if_tsresol of 0x{v:02x} netassay-gen cannot use"
                    ))
                }
            };
        }
        at += 4 + len.div_ceil(4) * 4;
    }
    Ok(f)
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// `v` in the file's byte order (big-endian when `big`).
    fn word32(v: u32, big: bool) -> [u8; 4] {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    fn word16(v: u16, big: bool) -> [u8; 2] {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }

    /// A libpcap file of `frames` (time in us or ns as `nano` says), in either order.
    pub fn libpcap_file(frames: &[(u64, &[u8])], nano: bool, big: bool) -> Vec<u8> {
        let w32 = |v: u32| word32(v, big);
        let w16 = |v: u16| word16(v, big);
        let mut f = Vec::new();
        f.extend(w32(if nano { 0xa1b2_3c4d } else { 0xa1b2_c3d4 }));
        f.extend(w16(2));
        f.extend(w16(4));
        f.extend(w32(0));
        f.extend(w32(0));
        f.extend(w32(262144));
        f.extend(w32(1));
        let unit = if nano { 1 } else { 1000 };
        for (ns, data) in frames {
            f.extend(w32((ns / 1_000_000_000) as u32));
            f.extend(w32((ns % 1_000_000_000 / unit) as u32));
            f.extend(w32(data.len() as u32));
            f.extend(w32(data.len() as u32));
            f.extend_from_slice(data);
        }
        f
    }

    fn block(kind: u32, body: &[u8], big: bool) -> Vec<u8> {
        let w32 = |v: u32| word32(v, big);
        let mut body = body.to_vec();
        while !body.len().is_multiple_of(4) {
            body.push(0);
        }
        let len = body.len() as u32 + 12;
        let mut b = w32(kind).to_vec();
        b.extend(w32(len));
        b.extend(body);
        b.extend(w32(len));
        b
    }

    /// A pcapng file: one section, one Ethernet interface whose if_tsresol is
    /// `tsresol` (None: the default, us), an enhanced packet block per frame and, at
    /// the end, a simple packet block of `spb`.
    pub fn pcapng_file(
        frames: &[(u64, &[u8])],
        tsresol: Option<u8>,
        spb: Option<&[u8]>,
        big: bool,
    ) -> Vec<u8> {
        let w32 = |v: u32| word32(v, big);
        let w16 = |v: u16| word16(v, big);
        let mut shb = w32(0x1a2b_3c4d).to_vec();
        shb.extend(w16(1));
        shb.extend(w16(0));
        shb.extend(u64::MAX.to_le_bytes()); // section length unknown
        let mut f = block(SHB, &shb, big);
        let mut idb = w16(1).to_vec();
        idb.extend(w16(0));
        idb.extend(w32(0));
        if let Some(r) = tsresol {
            idb.extend(w16(IF_TSRESOL));
            idb.extend(w16(1));
            idb.extend([r, 0, 0, 0]);
            idb.extend([0, 0, 0, 0]); // opt_endofopt
        }
        f.extend(block(IDB, &idb, big));
        // a block netassay-gen does not read (a name resolution block) is skipped
        f.extend(block(4, &[0, 0, 0, 0], big));
        let per_s: u128 = match tsresol {
            None => 1_000_000,
            Some(v) if v & 0x80 != 0 => 1 << (v & 0x7f),
            Some(v) => 10u128.pow(v as u32),
        };
        for (ns, data) in frames {
            let ts = (*ns as u128 * per_s / 1_000_000_000) as u64;
            let mut epb = w32(0).to_vec();
            epb.extend(w32((ts >> 32) as u32));
            epb.extend(w32(ts as u32));
            epb.extend(w32(data.len() as u32));
            epb.extend(w32(data.len() as u32));
            epb.extend_from_slice(data);
            f.extend(block(EPB, &epb, big));
        }
        if let Some(data) = spb {
            let mut b = w32(data.len() as u32).to_vec();
            b.extend_from_slice(data);
            f.extend(block(SPB, &b, big));
        }
        f
    }

    fn frames() -> Vec<(u64, Vec<u8>)> {
        vec![
            (1_700_000_000_123_456_000, vec![1u8; 60]),
            (1_700_000_000_123_457_000, vec![2u8; 61]),
            (1_700_000_001_000_000_000, vec![3u8; 1514]),
        ]
    }

    fn refs(f: &[(u64, Vec<u8>)]) -> Vec<(u64, &[u8])> {
        f.iter().map(|(t, d)| (*t, &d[..])).collect()
    }

    #[test]
    fn libpcap_in_us_and_ns_and_both_orders() {
        let f = frames();
        for nano in [false, true] {
            for big in [false, true] {
                let r = parse(&libpcap_file(&refs(&f), nano, big)).unwrap();
                let got: Vec<(u64, &[u8])> = r.iter().map(|r| (r.ts_ns, &r.data[..])).collect();
                assert_eq!(got, refs(&f), "nano {nano} big {big}");
                assert!(r.iter().all(|r| r.linktype == 1));
            }
        }
        // nanoseconds survive a nanosecond file only
        let t = [(1_000_000_123u64, &[0u8; 60][..])];
        assert_eq!(
            parse(&libpcap_file(&t, true, false)).unwrap()[0].ts_ns,
            1_000_000_123
        );
        assert_eq!(
            parse(&libpcap_file(&t, false, false)).unwrap()[0].ts_ns,
            1_000_000_000
        );
    }

    #[test]
    fn pcapng_with_its_time_resolution_and_both_orders() {
        let f = frames();
        for (res, exact) in [
            (None, true),
            (Some(9u8), true),
            (Some(6), true),
            (Some(0x80 | 20), false),
        ] {
            for big in [false, true] {
                let r = parse(&pcapng_file(&refs(&f), res, Some(&[9u8; 70]), big)).unwrap();
                assert_eq!(r.len(), 4);
                for (got, want) in r.iter().zip(&f) {
                    assert_eq!(got.data, want.1);
                    let err = got.ts_ns.abs_diff(want.0);
                    assert!(if exact { err == 0 } else { err < 1000 }, "{res:?} {err}");
                }
                // the simple packet block: its bytes, the previous record's time
                assert_eq!(r[3].data, [9u8; 70]);
                assert_eq!((r[3].ts_ns, r[3].orig_len), (r[2].ts_ns, 70));
            }
        }
    }

    #[test]
    fn files_that_cannot_be_read_say_why() {
        let f = frames();
        let good = libpcap_file(&refs(&f), false, false);
        assert!(parse(&good[..good.len() - 1])
            .unwrap_err()
            .contains("record 3 cut short"));
        assert!(parse(&good[..30])
            .unwrap_err()
            .contains("record 1 cut short"));
        assert!(parse(b"GIF89a")
            .unwrap_err()
            .contains("not a libpcap or pcapng file"));
        assert!(parse(b"").unwrap_err().contains("too short"));
        let ng = pcapng_file(&refs(&f), None, None, false);
        assert!(parse(&ng[..ng.len() - 2])
            .unwrap_err()
            .contains("cut short"));
        // an empty file of the right kind has no records
        assert_eq!(parse(&libpcap_file(&[], true, true)).unwrap(), []);
    }

    /// A capture tcpdump 4.99.3 (libpcap 1.10.3) wrote on this project's testbed
    /// (`tcpdump -w` in a namespace while ping and netassay-gen sent to 198.18.x.x
    /// and 2001:2::/48), and the same with `--time-stamp-precision nano`.
    #[test]
    fn captures_written_by_tcpdump() {
        for (name, file) in [
            ("us", &include_bytes!("../tests/data/tcpdump-us.pcap")[..]),
            ("ns", &include_bytes!("../tests/data/tcpdump-ns.pcap")[..]),
        ] {
            let r = parse(file).unwrap();
            assert!(r.len() >= 8, "{name}: {}", r.len());
            assert!(r.iter().all(|r| r.linktype == 1), "{name}");
            // tcpdump's times may go back a little (two CPUs' stamps)
            assert!(r.last().unwrap().ts_ns > r[0].ts_ns, "{name}");
            assert!(
                r.iter().all(|r| r.data.len() == r.orig_len as usize),
                "{name}"
            );
        }
    }
}

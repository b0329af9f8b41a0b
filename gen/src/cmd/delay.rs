//! Delay mode: open the line's four sockets, start one thread per direction, say
//! it is ready (one JSON line on stdout), write the stats every second until
//! SIGINT/SIGTERM, then once more with what was still held.

use super::{interface, pin};
use crate::args::DelayArgs;
use crate::delay::{self, Counters, Direction};
use crate::error::{Error, SystemError};
use crate::json::J;
use crate::pace;
use std::io::Write;
use std::os::fd::AsFd;

pub fn run(d: &DelayArgs) -> Result<(), Error> {
    let ia = interface(&d.a)?;
    let ib = interface(&d.b)?;
    pin(d.cpu)?; // the threads started below inherit it
    delay::precise_timers();
    pace::install_signals();
    let af = |dev: &str| {
        let dev = dev.to_string();
        move |err| SystemError::AfPacket { dev, err }
    };
    // a receiving and a sending socket on each device, closed when the line ends
    let tx_a = delay::tx_socket(ia).map_err(af(&d.a))?;
    let tx_b = delay::tx_socket(ib).map_err(af(&d.b))?;
    let rx_a = delay::rx_socket(ia).map_err(af(&d.a))?;
    let rx_b = delay::rx_socket(ib).map_err(af(&d.b))?;
    let ab = Counters::default();
    let ba = Counters::default();
    let start = pace::now();
    let stats = || -> Result<(), Error> {
        ab.add_socket_drops(rx_a.as_fd());
        ba.add_socket_drops(rx_b.as_fd());
        let uptime = (pace::now() - start) as f64 / 1e9;
        let j = J::obj(vec![
            ("delay_ns", J::U(d.delay_ns)),
            ("delay_back_ns", J::U(d.delay_back_ns)),
            ("uptime_s", J::F(uptime)),
            ("ab", ab.to_json()),
            ("ba", ba.to_json()),
        ]);
        let Some(path) = &d.stats else {
            return Ok(());
        };
        write_atomically(path, &format!("{j}\n")).map_err(|err| {
            SystemError::Delay {
                what: format!("write the stats to '{path}'"),
                err,
            }
            .into()
        })
    };
    stats()?;
    std::thread::scope(|scope| -> Result<(), Error> {
        let dirs = [
            Direction {
                rx_fd: rx_a.as_fd(),
                tx_fd: tx_b.as_fd(),
                delay_ns: d.delay_ns,
                queue: d.queue,
                counters: &ab,
            },
            Direction {
                rx_fd: rx_b.as_fd(),
                tx_fd: tx_a.as_fd(),
                delay_ns: d.delay_back_ns,
                queue: d.queue,
                counters: &ba,
            },
        ];
        // the signals go to this thread, whose sleep they cut short
        let old = block_stop_signals();
        let mut started = Vec::new();
        for (dir, name) in dirs.into_iter().zip(["ab", "ba"]) {
            let t = std::thread::Builder::new()
                .name(format!("delay-{name}"))
                .spawn_scoped(scope, move || dir.run());
            match t {
                Ok(t) => started.push(t),
                Err(err) => {
                    pace::STOP.store(true, std::sync::atomic::Ordering::Relaxed);
                    restore_signals(&old);
                    return Err(SystemError::Delay {
                        what: "start a thread".into(),
                        err,
                    }
                    .into());
                }
            }
        }
        restore_signals(&old);
        ready(d);
        let mut tick = pace::now();
        let mut r = Ok(());
        while !pace::stopped() && r.is_ok() {
            tick += 1_000_000_000;
            while !pace::stopped() && pace::now() < tick {
                pace::sleep_until(tick);
            }
            if !pace::stopped() {
                r = stats();
            }
        }
        pace::STOP.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in started {
            let _ = t.join();
        }
        r
    })?;
    stats()
}

/// The one line on stdout: the line is up, both sockets bound.
fn ready(d: &DelayArgs) {
    let j = J::obj(vec![
        ("ready", J::B(true)),
        ("pid", J::U(std::process::id() as u64)),
        ("a", J::S(d.a.clone())),
        ("b", J::S(d.b.clone())),
        ("delay_ns", J::U(d.delay_ns)),
        ("delay_back_ns", J::U(d.delay_back_ns)),
    ]);
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{j}");
    let _ = out.flush();
}

/// Write `text` to `path` whole or not at all: to `path.tmp`, then renamed.
fn write_atomically(path: &str, text: &str) -> std::io::Result<()> {
    let tmp = format!("{path}.tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// Block SIGINT and SIGTERM in this thread (and the threads it starts); the old
/// mask, to restore.
fn block_stop_signals() -> libc::sigset_t {
    // SAFETY: sigset_t is plain C data, initialised by sigemptyset (`set`) or written
    // by pthread_sigmask (`old`) before it is read; only this thread's mask changes.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        old
    }
}

fn restore_signals(old: &libc::sigset_t) {
    // SAFETY: `old` is a mask pthread_sigmask wrote; this thread's mask is set to it.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, old, std::ptr::null_mut()) };
}

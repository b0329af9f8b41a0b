//! Why a run stops before its end: each error says what went wrong and what to do
//! about it, in one line, and its class fixes the exit code (see --help, EXIT CODES).

mod usage;

pub use usage::{FlagError, ModeError, SendUsage, UsageError};

use std::fmt;
use std::io;
use std::net::IpAddr;

/// A system error: a socket, an interface, the kernel refused every send.
pub const EXIT_SYSTEM: i32 = 1;
/// Bad arguments, or a refused destination, namespace, interface or CPU.
pub const EXIT_USAGE: i32 = 2;
/// The rate was not kept; the result was printed all the same.
pub const EXIT_RATE: i32 = 3;

/// Every way a run can fail, by exit code class.
#[derive(Debug)]
pub enum Error {
    /// The arguments cannot be right (exit 2).
    Usage(UsageError),
    /// Refused before anything was sent: the destination, the namespace, the
    /// interface or the CPU (exit 2).
    Refused(Refusal),
    /// The system said no (exit 1).
    System(SystemError),
    /// The run ended without keeping its rate (exit 3).
    Rate(NotKept),
}

impl Error {
    /// The process's exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::Refused(_) => EXIT_USAGE,
            Error::System(_) => EXIT_SYSTEM,
            Error::Rate(_) => EXIT_RATE,
        }
    }
}

impl fmt::Display for Error {
    /// One line: a control character in what the line gave (a value with a newline)
    /// is shown as a space, so that the error never spans two lines.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Error::Usage(e) => e.to_string(),
            Error::Refused(e) => e.to_string(),
            Error::System(e) => e.to_string(),
            Error::Rate(e) => e.to_string(),
        };
        let line: String = text
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        f.write_str(&line)
    }
}

impl From<UsageError> for Error {
    fn from(e: UsageError) -> Error {
        Error::Usage(e)
    }
}

impl From<Refusal> for Error {
    fn from(e: Refusal) -> Error {
        Error::Refused(e)
    }
}

impl From<SystemError> for Error {
    fn from(e: SystemError) -> Error {
        Error::System(e)
    }
}

impl From<NotKept> for Error {
    fn from(e: NotKept) -> Error {
        Error::Rate(e)
    }
}

impl From<SendUsage> for Error {
    fn from(e: SendUsage) -> Error {
        Error::Usage(e.into())
    }
}

/// What netassay-gen refuses to do before it sends anything.
#[derive(Debug)]
pub enum Refusal {
    /// The interface does not exist in this network namespace.
    NoInterface(String),
    /// The thread could not be pinned to this CPU.
    Cpu { cpu: usize, err: io::Error },
    /// A destination outside the benchmarking ranges, without --allow-any-dst.
    Destination(IpAddr),
    /// A flow's source outside the benchmarking ranges, without --allow-any-dst.
    Source(IpAddr),
    /// Sending on this interface from the host's own network namespace.
    HostNetns(String),
    /// Whether this is the host's network namespace could not be told.
    UnknownNetns(io::Error),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NoInterface(dev) => write!(
                f,
                "interface '{dev}' not found in this network namespace: \
                 run inside 'ip netns exec NS' where it exists"
            ),
            Refusal::Cpu { cpu, err } => {
                write!(f, "cannot pin to CPU {cpu}: {err}; pick an online CPU")
            }
            Refusal::Destination(dst) => write!(
                f,
                "refusing --dst {dst}: it is outside the benchmarking ranges 198.18.0.0/15 and \
                 2001:2::/48, so test traffic could flood a real network; use an address \
                 in those ranges or add --allow-any-dst"
            ),
            Refusal::Source(src) => write!(
                f,
                "refusing the flows' source {src}: it is outside the benchmarking ranges \
                 198.18.0.0/15 and 2001:2::/48 (the flows' sources count up from --src); \
                 lower --flows or --src, or add --allow-any-dst"
            ),
            Refusal::HostNetns(dev) => write!(
                f,
                "refusing to send on '{dev}' from the host's own network namespace: a wrong \
                 flag could flood a real network; run inside 'ip netns exec NS' or add \
                 --allow-host-netns"
            ),
            Refusal::UnknownNetns(err) => write!(
                f,
                "cannot tell whether this is the host's network namespace ({err}); \
                 run as root inside 'ip netns exec NS' or add --allow-host-netns"
            ),
        }
    }
}

/// What the system refused, on which interface.
#[derive(Debug)]
pub enum SystemError {
    /// The interface's own MAC could not be read (no --src-mac).
    Mac {
        dev: String,
        err: io::Error,
    },
    /// XDP live frames failed once some had left (or a signal came): no fallback.
    Xdp {
        dev: String,
        sent: u64,
        err: io::Error,
    },
    /// An AF_PACKET send failed; `size` is the frame size (for the MTU hint).
    Send {
        dev: String,
        sent: u64,
        err: io::Error,
        size: usize,
        /// The MTU a frame of `size` bytes needs (its size less the Ethernet header).
        mtu: usize,
    },
    AfPacket {
        dev: String,
        err: io::Error,
    },
    SinkAttach {
        dev: String,
        err: io::Error,
    },
    SinkRead {
        dev: String,
        err: io::Error,
    },
    ReceiveRing {
        dev: String,
        err: io::Error,
    },
    /// The delay line could not do `what` (write its stats, start a thread).
    Delay {
        what: String,
        err: io::Error,
    },
}

impl fmt::Display for SystemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use SystemError::*;
        match self {
            Mac { dev, err } => write!(f, "cannot read the MAC of '{dev}': {err}; pass --src-mac"),
            Xdp { dev, sent, err } => write!(
                f,
                "XDP live frames on '{dev}' failed after {sent} packets: {err}"
            ),
            Send {
                dev,
                sent,
                err,
                size,
                mtu,
            } => {
                write!(f, "sending on '{dev}' failed after {sent} packets: {err}")?;
                mtu_hint(f, dev, err, *size, *mtu)
            }
            AfPacket { dev, err } => write!(
                f,
                "cannot open an AF_PACKET socket on '{dev}': {err}; run as root (CAP_NET_RAW)"
            ),
            SinkAttach { dev, err } => write!(
                f,
                "cannot attach the XDP sink to '{dev}': {err}; run as root, and detach any \
                 XDP program already there (ip link set DEV xdp off)"
            ),
            SinkRead { dev, err } => {
                write!(f, "cannot read the XDP sink's counter on '{dev}': {err}")
            }
            ReceiveRing { dev, err } => write!(
                f,
                "cannot open an AF_PACKET receive ring on '{dev}': {err}; run as root"
            ),
            Delay { what, err } => write!(f, "delay line: cannot {what}: {err}"),
        }
    }
}

/// What to do when the kernel refused a frame as too long for the interface.
fn mtu_hint(
    f: &mut fmt::Formatter<'_>,
    dev: &str,
    err: &io::Error,
    size: usize,
    mtu: usize,
) -> fmt::Result {
    if err.raw_os_error() != Some(libc::EMSGSIZE) {
        return Ok(());
    }
    write!(
        f,
        "; a {size}-byte frame needs an MTU of at least {} on '{dev}': raise it \
         (ip link set DEV mtu N) or lower --size",
        mtu
    )
}

/// How a send run missed its rate.
#[derive(Debug, PartialEq)]
pub enum NotKept {
    /// A signal stopped the run before every planned packet was sent.
    Stopped { sent: u64, planned: u64 },
    /// The deadline passed before every planned packet was sent.
    Truncated {
        sent: u64,
        planned: u64,
        achieved: f64,
        rate: f64,
    },
    /// Every planned packet sent, off the rate by more than the tolerance.
    Missed {
        achieved: f64,
        rate: f64,
        rate_error: f64,
        tolerance: f64,
    },
}

impl fmt::Display for NotKept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let todo = "lower --rate, pin the generator (--cpu) or pass --best-effort";
        match *self {
            NotKept::Stopped { sent, planned } => write!(
                f,
                "stopped by a signal after {sent} of {planned} planned packets"
            ),
            NotKept::Truncated {
                sent,
                planned,
                achieved,
                rate,
            } => write!(
                f,
                "the rate was not kept: the deadline passed after {sent} of {planned} planned \
                 packets ({} short; {achieved:.0} pps achieved for {rate:.0} requested); {todo}",
                planned - sent
            ),
            NotKept::Missed {
                achieved,
                rate,
                rate_error,
                tolerance,
            } => write!(
                f,
                "the rate was not kept: {achieved:.0} pps achieved for {rate:.0} requested \
                 ({:+.3}%, tolerance {}%); {todo}",
                rate_error * 100.0,
                tolerance * 100.0
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(code: i32) -> io::Error {
        io::Error::from_raw_os_error(code)
    }

    #[test]
    fn each_class_has_its_exit_code() {
        assert_eq!((EXIT_SYSTEM, EXIT_USAGE, EXIT_RATE), (1, 2, 3));
        let usage = Error::from(UsageError::from(FlagError::Required("--dev")));
        assert_eq!(usage.exit_code(), EXIT_USAGE);
        assert_eq!(Error::from(SendUsage::ZeroPackets).exit_code(), EXIT_USAGE);
        let refused = Error::from(Refusal::NoInterface("tg0".into()));
        assert_eq!(refused.exit_code(), EXIT_USAGE);
        let system = Error::from(SystemError::AfPacket {
            dev: "tg0".into(),
            err: os(libc::EPERM),
        });
        assert_eq!(system.exit_code(), EXIT_SYSTEM);
        let rate = Error::from(NotKept::Stopped {
            sent: 1,
            planned: 2,
        });
        assert_eq!(rate.exit_code(), EXIT_RATE);
    }

    #[test]
    fn an_error_shows_as_its_variant_does() {
        let e = Error::from(UsageError::from(FlagError::GivenTwice("--dev".into())));
        assert_eq!(e.to_string(), "--dev was given twice: give it once");
        let e = Error::from(UsageError::from(ModeError::RingMb));
        assert_eq!(e.to_string(), "--ring-mb must be 1..1024");
        let e = Error::from(Refusal::Cpu {
            cpu: 7,
            err: os(libc::EINVAL),
        });
        assert_eq!(
            e.to_string(),
            "cannot pin to CPU 7: Invalid argument (os error 22); pick an online CPU"
        );
        let e = Error::from(NotKept::Stopped {
            sent: 10,
            planned: 1000,
        });
        assert_eq!(
            e.to_string(),
            "stopped by a signal after 10 of 1000 planned packets"
        );
    }

    #[test]
    fn a_send_refused_as_too_long_says_which_mtu() {
        let e = SystemError::Send {
            dev: "tg0".into(),
            sent: 0,
            err: os(libc::EMSGSIZE),
            size: 1518,
            mtu: 1504,
        };
        assert_eq!(
            e.to_string(),
            "sending on 'tg0' failed after 0 packets: Message too long (os error 90); \
             a 1518-byte frame needs an MTU of at least 1504 on 'tg0': raise it \
             (ip link set DEV mtu N) or lower --size"
        );
        let e = SystemError::Send {
            dev: "tg0".into(),
            sent: 5,
            err: os(libc::ENETDOWN),
            size: 1518,
            mtu: 1504,
        };
        assert_eq!(
            e.to_string(),
            "sending on 'tg0' failed after 5 packets: Network is down (os error 100)"
        );
    }

    #[test]
    fn refusals_and_system_errors_name_the_interface() {
        let e = Refusal::HostNetns("eth0".into()).to_string();
        assert!(
            e.starts_with("refusing to send on 'eth0' from the host's"),
            "{e}"
        );
        let e = Refusal::Destination("10.0.0.2".parse().unwrap()).to_string();
        assert!(
            e.starts_with("refusing --dst 10.0.0.2: it is outside"),
            "{e}"
        );
        let e = SystemError::SinkAttach {
            dev: "ts0".into(),
            err: os(libc::EBUSY),
        };
        assert!(e
            .to_string()
            .starts_with("cannot attach the XDP sink to 'ts0': "));
        let e = SystemError::ReceiveRing {
            dev: "tr0".into(),
            err: os(libc::EPERM),
        };
        assert!(e.to_string().ends_with("; run as root"), "{e}");
    }

    #[test]
    fn the_rate_line_says_why_the_run_exits_3() {
        let t = NotKept::Truncated {
            sent: 400,
            planned: 1000,
            achieved: 500_000.0,
            rate: 1e6,
        };
        assert_eq!(
            t.to_string(),
            "the rate was not kept: the deadline passed after 400 of 1000 planned packets \
             (600 short; 500000 pps achieved for 1000000 requested); lower --rate, pin the \
             generator (--cpu) or pass --best-effort"
        );
        let m = NotKept::Missed {
            achieved: 500_000.0,
            rate: 1e6,
            rate_error: -0.5,
            tolerance: 0.001,
        };
        assert!(m.to_string().contains("(-50.000%, tolerance 0.1%)"), "{m}");
    }
}

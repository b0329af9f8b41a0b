//! The delay line's command line: `netassay-gen delay --a DEV --b DEV --delay DUR
//! [--delay-back DUR] [--stats FILE] [--queue FRAMES] [--cpu N]`.

use super::line::{scan, DelayLine};
use super::values::parse_duration;
use super::{need, number, number_or, Cmd};
use crate::error::{FlagError, ModeError, UsageError};

/// The longest delay either way: 10 s.
pub const MAX_DELAY_NS: u64 = 10_000_000_000;
/// Frames held per direction unless --queue says otherwise.
pub const DEFAULT_QUEUE: usize = 200_000;
/// The most --queue takes.
pub const MAX_QUEUE: usize = 10_000_000;

#[derive(Debug, Clone, PartialEq)]
pub struct DelayArgs {
    /// The device frames come in on for direction ab (and leave by for ba).
    pub a: String,
    /// The device frames come in on for direction ba (and leave by for ab).
    pub b: String,
    /// Delay of direction ab (A to B), ns.
    pub delay_ns: u64,
    /// Delay of direction ba (B to A), ns.
    pub delay_back_ns: u64,
    /// Where to write the stats JSON (every second and at exit).
    pub stats: Option<String>,
    /// Most frames held per direction.
    pub queue: usize,
    pub cpu: Option<usize>,
}

/// The words after `delay`: help, or the line's options.
pub fn parse(argv: &[String]) -> Result<Cmd, UsageError> {
    let a = scan::<DelayLine>(argv)?.flags;
    if a.help {
        return Ok(Cmd::Help);
    }
    let dev_a = need("--a", &a.a)?.to_string();
    let dev_b = need("--b", &a.b)?.to_string();
    if dev_a == dev_b {
        return Err(ModeError::DelaySameDevice(dev_a).into());
    }
    let delay_ns = delay("--delay", &a.delay)?.ok_or(FlagError::Required("--delay"))?;
    let delay_back_ns = delay("--delay-back", &a.delay_back)?.unwrap_or(delay_ns);
    let queue = number_or("--queue", &a.queue, DEFAULT_QUEUE)?;
    if !(1..=MAX_QUEUE).contains(&queue) {
        return Err(ModeError::DelayQueue(queue).into());
    }
    Ok(Cmd::Delay(DelayArgs {
        a: dev_a,
        b: dev_b,
        delay_ns,
        delay_back_ns,
        stats: a.stats,
        queue,
        cpu: number("--cpu", &a.cpu)?,
    }))
}

/// A delay flag's value in ns: a duration as elsewhere (20ms, 500us, 1s, 2), or
/// zero, up to 10 s.
fn delay(flag: &'static str, v: &Option<String>) -> Result<Option<u64>, UsageError> {
    let Some(v) = v.as_deref() else {
        return Ok(None);
    };
    let range = || ModeError::DelayRange {
        flag,
        value: v.to_string(),
    };
    if is_zero(v) {
        return Ok(Some(0));
    }
    match parse_duration(flag, v) {
        Ok(ns) if ns <= MAX_DELAY_NS => Ok(Some(ns)),
        Ok(_) | Err(FlagError::DurationOutOfRange { .. }) => Err(range().into()),
        Err(e) => Err(e.into()),
    }
}

/// "0", "0s", "0ms", "0us", "0ns", "0.0" (a duration of nothing).
fn is_zero(v: &str) -> bool {
    ["ms", "us", "ns", "s", ""].iter().any(|suf| {
        v.strip_suffix(suf)
            .is_some_and(|n| !n.starts_with('-') && n.parse::<f64>() == Ok(0.0))
    })
}

#[cfg(test)]
mod tests {
    use super::super::{parse as parse_line, tests::v};
    use super::*;

    fn ok(s: &str) -> DelayArgs {
        match parse_line(&v(&format!("delay {s}"))).unwrap() {
            Cmd::Delay(d) => d,
            c => panic!("{c:?}"),
        }
    }

    fn err(s: &str) -> UsageError {
        parse_line(&v(&format!("delay {s}"))).unwrap_err()
    }

    #[test]
    fn the_line_takes_two_devices_and_a_delay() {
        let d = ok("--a p0 --b p1 --delay 20ms");
        assert_eq!(
            d,
            DelayArgs {
                a: "p0".into(),
                b: "p1".into(),
                delay_ns: 20_000_000,
                delay_back_ns: 20_000_000,
                stats: None,
                queue: DEFAULT_QUEUE,
                cpu: None,
            }
        );
        let d = ok(
            "--a=p0 --b p1 --delay 1ms --delay-back 500us --stats /tmp/s.json \
                    --queue 1000 --cpu 1",
        );
        assert_eq!((d.delay_ns, d.delay_back_ns), (1_000_000, 500_000));
        assert_eq!(d.stats.as_deref(), Some("/tmp/s.json"));
        assert_eq!((d.queue, d.cpu), (1000, Some(1)));
        // a bare number is seconds, as elsewhere
        assert_eq!(ok("--a x --b y --delay 2").delay_ns, 2_000_000_000);
    }

    #[test]
    fn zero_and_ten_seconds_are_the_ends() {
        for z in ["0", "0s", "0ms", "0us", "0ns", "0.0"] {
            let d = ok(&format!("--a x --b y --delay {z}"));
            assert_eq!((d.delay_ns, d.delay_back_ns), (0, 0), "{z}");
        }
        assert_eq!(ok("--a x --b y --delay 10s").delay_ns, MAX_DELAY_NS);
        assert_eq!(
            ok("--a x --b y --delay 0 --delay-back 10000ms").delay_back_ns,
            MAX_DELAY_NS
        );
        let range = |flag, value: &str| -> UsageError {
            ModeError::DelayRange {
                flag,
                value: value.into(),
            }
            .into()
        };
        assert_eq!(
            err("--a x --b y --delay 10.001s"),
            range("--delay", "10.001s")
        );
        assert_eq!(err("--a x --b y --delay -1ms"), range("--delay", "-1ms"));
        assert_eq!(err("--a x --b y --delay -0"), range("--delay", "-0"));
        assert_eq!(
            err("--a x --b y --delay 1ms --delay-back 11s"),
            range("--delay-back", "11s")
        );
    }

    #[test]
    fn refusals_are_usage_errors() {
        assert_eq!(err("--b y --delay 1ms"), FlagError::Required("--a").into());
        assert_eq!(err("--a x --delay 1ms"), FlagError::Required("--b").into());
        assert_eq!(err("--a x --b y"), FlagError::Required("--delay").into());
        assert_eq!(
            err("--a x --b x --delay 1ms"),
            ModeError::DelaySameDevice("x".into()).into()
        );
        assert_eq!(
            err("--a x --b y --delay soon"),
            FlagError::NotADuration {
                flag: "--delay",
                value: "soon".into()
            }
            .into()
        );
        assert_eq!(
            err("--a x --b y --delay 1ms --queue 0"),
            ModeError::DelayQueue(0).into()
        );
        assert_eq!(
            err("--a x --b y --delay 1ms --queue many"),
            FlagError::NotANumber {
                flag: "--queue",
                value: "many".into()
            }
            .into()
        );
        // the sender's and receiver's flags are not the line's
        assert_eq!(
            err("--a x --b y --delay 1ms --dev z"),
            FlagError::Unknown("--dev".into()).into()
        );
        assert_eq!(
            err("--a x --b y --delay 1ms --json"),
            FlagError::Unknown("--json".into()).into()
        );
        assert_eq!(
            err("--a x --a y --delay 1ms"),
            FlagError::GivenTwice("--a".into()).into()
        );
        // and the line's flags are not theirs
        assert_eq!(
            parse_line(&v("--dev x --delay 1ms")).unwrap_err(),
            FlagError::Unknown("--delay".into()).into()
        );
        for e in [
            err("--a x --b y --delay 11s"),
            err("--a x --b x --delay 1ms"),
            err("--a x --b y --delay 1ms --queue 0"),
        ] {
            let s = e.to_string();
            assert!(!s.contains('\n') && s.contains("--"), "{s}");
        }
    }

    #[test]
    fn help_comes_first() {
        assert!(matches!(parse_line(&v("delay --help")), Ok(Cmd::Help)));
        assert!(matches!(
            parse_line(&v("delay --delay 99s -h")),
            Ok(Cmd::Help)
        ));
    }
}

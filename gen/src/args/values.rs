//! Option values: rates, durations and plain numbers.

use super::Rate;
use crate::error::FlagError;

/// Parse "200k", "1.5M", "1e5", "100000" (k = 1000).
pub fn parse_rate(s: &str) -> Result<Rate, FlagError> {
    if s == "max" {
        return Ok(Rate::Max);
    }
    let (num, mul) = split_suffix(s, &[("k", 1e3), ("K", 1e3), ("M", 1e6), ("G", 1e9)], 1.0);
    let v: f64 = num.parse().map_err(|_| FlagError::NotARate(s.into()))?;
    let v = v * mul;
    if !(v.is_finite() && v > 0.0 && v <= 1e9) {
        return Err(FlagError::RateOutOfRange(s.into()));
    }
    Ok(Rate::Pps(v))
}

/// Parse "10", "10s", "500ms", "250us", "100ns" into nanoseconds.
pub fn parse_duration(flag: &'static str, s: &str) -> Result<u64, FlagError> {
    let (num, mul) = split_suffix(s, &[("ms", 1e6), ("us", 1e3), ("ns", 1.0), ("s", 1e9)], 1e9);
    let v: f64 = num.parse().map_err(|_| FlagError::NotADuration {
        flag,
        value: s.into(),
    })?;
    let ns = v * mul;
    if !(ns.is_finite() && ns > 0.0 && ns < 1e9 * 86400.0 * 365.0) {
        return Err(FlagError::DurationOutOfRange {
            flag,
            value: s.into(),
        });
    }
    Ok(ns.round() as u64)
}

fn split_suffix<'a>(s: &'a str, table: &[(&str, f64)], default: f64) -> (&'a str, f64) {
    for (suf, mul) in table {
        if let Some(n) = s.strip_suffix(suf) {
            return (n, *mul);
        }
    }
    (s, default)
}

pub fn num<T: std::str::FromStr>(flag: &'static str, v: &str) -> Result<T, FlagError> {
    v.parse().map_err(|_| FlagError::NotANumber {
        flag,
        value: v.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_durations() {
        assert_eq!(parse_rate("200k").unwrap(), Rate::Pps(200_000.0));
        assert_eq!(parse_rate("1.5M").unwrap(), Rate::Pps(1_500_000.0));
        assert_eq!(parse_rate("100000").unwrap(), Rate::Pps(100_000.0));
        assert_eq!(parse_rate("max").unwrap(), Rate::Max);
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("fast").is_err());
        assert_eq!(parse_duration("--d", "10s").unwrap(), 10_000_000_000);
        assert_eq!(parse_duration("--d", "10").unwrap(), 10_000_000_000);
        assert_eq!(parse_duration("--d", "500ms").unwrap(), 500_000_000);
        assert_eq!(parse_duration("--d", "250us").unwrap(), 250_000);
        assert!(parse_duration("--d", "-1s").is_err());
    }

    #[test]
    fn bad_values_name_their_flag_and_value() {
        assert_eq!(parse_rate("fast"), Err(FlagError::NotARate("fast".into())));
        assert_eq!(
            parse_rate("2G"),
            Err(FlagError::RateOutOfRange("2G".into()))
        );
        assert_eq!(
            parse_duration("--interval", "soon"),
            Err(FlagError::NotADuration {
                flag: "--interval",
                value: "soon".into()
            })
        );
        assert_eq!(
            parse_duration("--duration", "0"),
            Err(FlagError::DurationOutOfRange {
                flag: "--duration",
                value: "0".into()
            })
        );
        assert_eq!(num::<u16>("--dst-port", "65535"), Ok(65535));
        assert_eq!(
            num::<u16>("--dst-port", "65536"),
            Err(FlagError::NotANumber {
                flag: "--dst-port",
                value: "65536".into()
            })
        );
    }
}

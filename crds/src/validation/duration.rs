//! Go `time.Duration` strings, as cert-manager reads `duration` and `renewBefore`.

use std::time::Duration;
use thiserror::Error;

/// Why a duration string could not be read.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("{0:?} is not a duration such as 2160h or 1h30m (units: h, m, s, ms, us, ns)")]
pub struct GoDurationError(pub String);

/// Parses `2160h`, `1h30m`, `90s`, `1.5h` (no sign, no days, as Go's `time.ParseDuration`).
pub fn parse_go_duration(s: &str) -> Result<Duration, GoDurationError> {
    let err = || GoDurationError(s.to_string());
    if s.is_empty() {
        return Err(err());
    }
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let mut rest = s;
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(err)?;
        if num_len == 0 {
            return Err(err());
        }
        let value: f64 = rest[..num_len].parse().map_err(|_| err())?;
        rest = &rest[num_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return Err(err()),
        };
        total += value * seconds;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(total).map_err(|_| err())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_go_durations() {
        assert_eq!(parse_go_duration("2160h"), Ok(Duration::from_secs(2160 * 3600)));
        assert_eq!(parse_go_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_go_duration("0"), Ok(Duration::ZERO));
    }

    #[test]
    fn rejects_days_and_garbage() {
        assert!(parse_go_duration("90d").is_err());
        assert!(parse_go_duration("h").is_err());
        assert!(parse_go_duration("10").is_err());
        assert!(parse_go_duration("").is_err());
    }
}

//! Human-readable durations (`"250ms"`, `"10s"`, `"5m"`, `"1h"`, `"1h 30m"`) for config files,
//! environment variables and CLI flags, so all three layers accept the same spelling.
//!
//! Input: text from TOML (through serde), `TOOLTAP_*` variables or clap. Output: a
//! [`std::time::Duration`] wrapped in [`HumanDuration`]. The spelling is humantime's
//! ([`humantime::parse_duration`]): integers (or decimals) with a unit, several spans added up.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// A duration written as numbers with units: `ms`, `s`, `m`, `h` and humantime's other
/// spellings (`sec`, `min`, `hours`, `d`, ...). Below a millisecond is rejected because every
/// duration in tooltap is a deadline, and a zero deadline fails everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a duration: {why} (write e.g. \"250ms\", \"30s\", \"5m\")")]
pub struct DurationError {
    text: String,
    why: String,
}

impl FromStr for HumanDuration {
    type Err = DurationError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let fail = |why: String| DurationError {
            text: text.to_owned(),
            why,
        };
        let duration =
            humantime::parse_duration(text.trim()).map_err(|error| fail(error.to_string()))?;
        if duration < Duration::from_millis(1) {
            return Err(fail("must be at least 1ms".to_owned()));
        }
        Ok(HumanDuration(duration))
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ms", self.0.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_unit() {
        let parse = |t: &str| t.parse::<HumanDuration>().map(|d| d.0);
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse("1h"), Ok(Duration::from_secs(3600)));
    }

    #[test]
    fn accepts_what_it_always_did_and_humantime_spellings() {
        let parse = |t: &str| t.parse::<HumanDuration>().map(|d| d.0);
        assert_eq!(parse(" 30s "), Ok(Duration::from_secs(30)), "trimmed");
        assert_eq!(
            parse("10 s"),
            Ok(Duration::from_secs(10)),
            "a space before the unit"
        );
        assert_eq!(parse("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("2min"), Ok(Duration::from_secs(120)));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
    }

    #[test]
    fn rejects_missing_unit_zero_and_garbage_saying_why() {
        let why = [
            ("10", "time unit needed"),
            ("0s", "must be at least 1ms"),
            ("0", "must be at least 1ms"),
            ("500us", "must be at least 1ms"),
            ("s", "expected number"),
            ("ten s", "expected number"),
            ("10 parsecs", "unknown time unit \"parsecs\""),
            ("", "empty"),
        ];
        for (bad, reason) in why {
            let message = bad
                .parse::<HumanDuration>()
                .map(|d| d.0)
                .expect_err(bad)
                .to_string();
            assert!(
                message.starts_with(&format!("`{bad}` is not a duration: ")),
                "{message}"
            );
            assert!(message.contains(reason), "{bad}: {message}");
            assert!(
                message.ends_with("(write e.g. \"250ms\", \"30s\", \"5m\")"),
                "{message}"
            );
        }
    }
}

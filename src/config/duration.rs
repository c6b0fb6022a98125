//! Human-readable durations (`"250ms"`, `"10s"`, `"5m"`, `"1h"`) for config files, environment
//! variables and CLI flags, so all three layers accept the same spelling.
//!
//! Input: text from TOML (through serde), `TOOLTAP_*` variables or clap. Output: a
//! [`std::time::Duration`] wrapped in [`HumanDuration`].

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

/// A duration written as an integer and a unit: `ms`, `s`, `m` or `h`. Zero is rejected because
/// every duration in tooltap is a deadline, and a zero deadline fails everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a duration: {why} (write e.g. \"250ms\", \"30s\", \"5m\")")]
pub struct DurationError {
    text: String,
    why: &'static str,
}

impl FromStr for HumanDuration {
    type Err = DurationError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let fail = |why| DurationError {
            text: text.to_owned(),
            why,
        };
        let trimmed = text.trim();
        let digits_end = trimmed
            .find(|c: char| !c.is_ascii_digit())
            .ok_or_else(|| fail("missing unit"))?;
        let (number, unit) = trimmed.split_at(digits_end);
        let amount: u64 = number.parse().map_err(|_| fail("missing number"))?;
        let duration = match unit.trim() {
            "ms" => Duration::from_millis(amount),
            "s" => Duration::from_secs(amount),
            "m" => Duration::from_secs(amount.saturating_mul(60)),
            "h" => Duration::from_secs(amount.saturating_mul(3600)),
            _ => return Err(fail("unknown unit")),
        };
        if duration.is_zero() {
            return Err(fail("must be greater than zero"));
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
    fn rejects_missing_unit_zero_and_garbage() {
        for bad in ["10", "0s", "s", "ten s", "10 parsecs", ""] {
            assert!(bad.parse::<HumanDuration>().is_err(), "{bad} accepted");
        }
    }
}

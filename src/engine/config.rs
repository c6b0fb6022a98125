//! Engine limits and per-rule severity overrides, built by the caller (the proxy's validated
//! config, the offline checker's flags) and shared by every [`crate::engine::Exchange`].
//!
//! Limits bound every buffer the engine keeps; hitting one ends inspection of that exchange and
//! is reported as its [`crate::engine::Completeness`], never as a violation.

use std::collections::HashMap;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::rules::{RuleId, UnknownRule};
use super::severity::Severity;

/// Violations kept per exchange unless configured otherwise.
pub const DEFAULT_MAX_VIOLATIONS: usize = 100;

/// Limits and severities for the contract engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Largest buffered (`application/json`) body inspected, after decoding.
    pub max_json_body: usize,
    /// Largest single SSE line, and largest accumulated data of one event.
    pub max_sse_line: usize,
    /// Largest total of decompressed bytes (a gzip bomb stops here).
    pub max_decoded: usize,
    /// Largest total of SSE data one stream's reassembly takes in (bounds the reassembled
    /// content and arguments of a long stream).
    pub max_reassembled: usize,
    /// Violations kept per exchange; the rest are counted (`violations_not_listed`).
    pub max_violations: usize,
    /// Per-rule severity, including turning a rule off.
    pub severity: SeverityOverrides,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            max_json_body: 16 * 1024 * 1024,
            max_sse_line: 8 * 1024 * 1024,
            max_decoded: 64 * 1024 * 1024,
            max_reassembled: 16 * 1024 * 1024,
            max_violations: DEFAULT_MAX_VIOLATIONS,
            severity: SeverityOverrides::default(),
        }
    }
}

/// What a rule's violations are reported as: its severity, or not at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Off,
    Warning,
    Error,
}

/// A level name that is not `off`, `warning` or `error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown severity {0:?} (expected off, warning or error)")]
pub struct UnknownLevel(pub String);

impl FromStr for Level {
    type Err = UnknownLevel;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "off" => Ok(Level::Off),
            "warning" | "warn" => Ok(Level::Warning),
            "error" => Ok(Level::Error),
            other => Err(UnknownLevel(other.to_owned())),
        }
    }
}

/// Why an override list such as `finish_reason.not_tool_calls=warning` did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OverrideError {
    #[error(transparent)]
    Rule(#[from] UnknownRule),
    #[error(transparent)]
    Level(#[from] UnknownLevel),
    #[error("expected RULE=LEVEL, got {0:?}")]
    Syntax(String),
}

/// Severity per rule where it differs from [`RuleId::default_severity`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeverityOverrides {
    levels: HashMap<RuleId, Level>,
}

impl SeverityOverrides {
    pub fn set(&mut self, rule: RuleId, level: Level) -> &mut Self {
        self.levels.insert(rule, level);
        self
    }

    /// The effective level of `rule`.
    pub fn level(&self, rule: RuleId) -> Level {
        match self.levels.get(&rule) {
            Some(level) => *level,
            None => match rule.default_severity() {
                Severity::Warning => Level::Warning,
                Severity::Error => Level::Error,
            },
        }
    }

    /// Parses a comma-separated `rule=level` list, as a CLI flag or env var would carry it.
    pub fn parse_list(text: &str) -> Result<SeverityOverrides, OverrideError> {
        let mut overrides = SeverityOverrides::default();
        for item in text
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
        {
            let (rule, level) = item
                .split_once('=')
                .ok_or_else(|| OverrideError::Syntax(item.to_owned()))?;
            overrides.set(rule.trim().parse()?, level.trim().parse()?);
        }
        Ok(overrides)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_parse_and_apply() {
        let overrides = SeverityOverrides::parse_list(
            "finish_reason.not_tool_calls=warning, delta.id_repeated=off",
        )
        .expect("parses");
        assert_eq!(
            overrides.level(RuleId::FinishReasonNotToolCalls),
            Level::Warning
        );
        assert_eq!(overrides.level(RuleId::DeltaIdRepeated), Level::Off);
        assert_eq!(overrides.level(RuleId::ToolCallIdMissing), Level::Error);
        assert_eq!(
            overrides.level(RuleId::RequestSchemaInvalid),
            Level::Warning
        );
        assert!(SeverityOverrides::parse_list("nope=off").is_err());
        assert!(SeverityOverrides::parse_list("tool_call.id_missing").is_err());
        assert!(SeverityOverrides::parse_list("tool_call.id_missing=loud").is_err());
    }
}

//! `[inspect.mcp]`: the bounds of the MCP conversation store and of its live settling order.
//!
//! Input: the raw table (file only). Output: [`McpStateSettings`], read when the proxy builds its
//! [`crate::inspect::mcp_order::McpSettle`] and by `tooltap check`'s store.

use std::time::Duration;

use serde::Deserialize;

use super::duration::HumanDuration;
use super::inspect::InspectConfigError;
use crate::engine::mcp_conversation::StoreLimits;

/// Tickets waiting in the live settling order before exchanges settle unordered.
pub const DEFAULT_PENDING: usize = 4096;
/// The longest an MCP exchange waits for the ones that started before it.
pub const DEFAULT_SETTLE_WAIT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMcpState {
    pub conversations: Option<usize>,
    pub catalog_bytes: Option<usize>,
    pub ids: Option<usize>,
    pub pending: Option<usize>,
    pub settle_wait: Option<HumanDuration>,
    pub cancel_grace: Option<HumanDuration>,
}

impl RawMcpState {
    pub fn overlay(self, higher: RawMcpState) -> RawMcpState {
        RawMcpState {
            conversations: higher.conversations.or(self.conversations),
            catalog_bytes: higher.catalog_bytes.or(self.catalog_bytes),
            ids: higher.ids.or(self.ids),
            pending: higher.pending.or(self.pending),
            settle_wait: higher.settle_wait.or(self.settle_wait),
            cancel_grace: higher.cancel_grace.or(self.cancel_grace),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McpStateSettings {
    pub limits: StoreLimits,
    pub pending: usize,
    pub settle_wait: Duration,
}

impl Default for McpStateSettings {
    fn default() -> Self {
        McpStateSettings {
            limits: StoreLimits::default(),
            pending: DEFAULT_PENDING,
            settle_wait: DEFAULT_SETTLE_WAIT,
        }
    }
}

pub fn validate(raw: Option<RawMcpState>) -> Result<McpStateSettings, InspectConfigError> {
    let RawMcpState {
        conversations,
        catalog_bytes,
        ids,
        pending,
        settle_wait,
        cancel_grace,
    } = raw.unwrap_or_default();
    let defaults = McpStateSettings::default();
    let positive = |value: Option<usize>, default, key| match value {
        Some(0) => Err(InspectConfigError::Zero { key }),
        other => Ok(other.unwrap_or(default)),
    };
    Ok(McpStateSettings {
        limits: StoreLimits {
            max_conversations: positive(
                conversations,
                defaults.limits.max_conversations,
                "mcp.conversations",
            )?,
            max_catalog_bytes: positive(
                catalog_bytes,
                defaults.limits.max_catalog_bytes,
                "mcp.catalog_bytes",
            )?,
            max_ids: positive(ids, defaults.limits.max_ids, "mcp.ids")?,
            cancel_grace_us: cancel_grace.map_or(defaults.limits.cancel_grace_us, |d| {
                u64::try_from(d.0.as_micros()).unwrap_or(u64::MAX)
            }),
        },
        pending: positive(pending, defaults.pending, "mcp.pending")?,
        settle_wait: settle_wait.map_or(defaults.settle_wait, |d| d.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_parse_overlay_and_refuse_zero() {
        let raw: RawMcpState =
            toml::from_str("conversations = 5\nsettle_wait = \"2s\"\ncancel_grace = \"250ms\"")
                .expect("parses");
        let higher: RawMcpState = toml::from_str("ids = 7").expect("parses");
        let settings = validate(Some(raw.overlay(higher))).expect("valid");
        assert_eq!(settings.limits.max_conversations, 5);
        assert_eq!(settings.limits.max_ids, 7);
        assert_eq!(settings.settle_wait, Duration::from_secs(2));
        assert_eq!(settings.pending, DEFAULT_PENDING);
        assert_eq!(settings.limits.cancel_grace_us, 250_000);
        let zero: RawMcpState = toml::from_str("catalog_bytes = 0").expect("parses");
        assert!(validate(Some(zero)).is_err());
        assert!(toml::from_str::<RawMcpState>("bogus = 1").is_err());
    }
}

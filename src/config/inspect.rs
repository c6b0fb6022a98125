//! The `[inspect]` and `[admin]` sections: which traffic is inspected, how much tooltap may hold
//! for it, where violations go, enforce mode, per-rule severity, and the admin listener.
//!
//! Input: the raw sections (file, `TOOLTAP_*`, flags) and the per-route `inspect`/`enforce`
//! keys. Output: [`InspectSettings`] and [`AdminSettings`], read by the service (which exchange
//! to tap, and whether to enforce) and by `main` (where the admin listener binds).

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;

use crate::engine::{Dialect, Level, RuleId, SchemaLimits, SeverityOverrides};

/// Beside the default `recordings/` folder, never in it: `tooltap check recordings/` and
/// `tooltap replay --recordings recordings` read every `*.jsonl` there as a recording, and
/// pruning works inside it.
pub const DEFAULT_VIOLATIONS: &str = "violations.jsonl";
pub const DEFAULT_ADMIN_LISTEN: &str = "127.0.0.1:9787";
pub const DEFAULT_MAX_CONCURRENT: usize = 1024;
pub const DEFAULT_TAP_FRAMES: usize = 1024;
pub const DEFAULT_MAX_REQUEST_BODY: usize = 16 * 1024 * 1024;
pub const DEFAULT_MAX_HELD_RECORDING: u64 = 1024 * 1024;
pub const DEFAULT_MAX_VIOLATIONS: usize = crate::engine::config::DEFAULT_MAX_VIOLATIONS;
/// Bytes all inspections may hold together, unless configured otherwise.
pub const DEFAULT_MAX_MEMORY: usize = 512 * 1024 * 1024;
/// Bytes one exchange keeps in memory before spilling, unless configured otherwise. Small,
/// because appends gather in the spill's shared tail instead of costing a write each, and a
/// larger block is the largest part of what `violations` mode adds per stream (see
/// docs/benchmarks.md#held-block).
pub const DEFAULT_HELD_IN_MEMORY: usize = 1024;
/// Bytes of spill segments on disk, unless configured otherwise.
pub const DEFAULT_MAX_SPILL: u64 = 1024 * 1024 * 1024;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawInspect {
    pub enabled: Option<bool>,
    pub enforce: Option<bool>,
    pub max_concurrent: Option<usize>,
    pub tap_frames: Option<usize>,
    pub max_request_body: Option<usize>,
    pub max_violations: Option<usize>,
    pub max_reassembled: Option<usize>,
    pub max_memory: Option<usize>,
    pub max_held_recording: Option<u64>,
    pub held_in_memory: Option<usize>,
    pub max_spill: Option<u64>,
    pub tap_bytes: Option<usize>,
    pub schema_budget: Option<u64>,
    pub schema_compile_bytes: Option<usize>,
    pub schema_cache_bytes: Option<usize>,
    pub grammar_compile_bytes: Option<usize>,
    /// Path of the violations file; `"off"` disables it.
    pub violations: Option<PathBuf>,
    pub methods: Option<Vec<String>>,
    pub path_suffixes: Option<Vec<String>>,
    /// `rule id = "off" | "warning" | "error"`.
    pub severity: Option<BTreeMap<String, String>>,
    /// `[inspect.mcp]`: the MCP conversation store's bounds.
    pub mcp: Option<super::mcp_state::RawMcpState>,
}

/// `[enforce]`: how enforce mode answers (whether it runs is `inspect.enforce`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEnforce {
    /// The status of a refused buffered response.
    pub status: Option<u16>,
}

impl RawEnforce {
    pub fn overlay(self, higher: RawEnforce) -> RawEnforce {
        RawEnforce {
            status: higher.status.or(self.status),
        }
    }
}

/// The status enforce mode refuses a buffered response with: 502, because the upstream's answer
/// is what broke. Clients that retry 502s (the Vercel AI SDK does, three times, each a paid
/// call) can be given a 4xx they do not retry, e.g. 422.
pub const DEFAULT_ENFORCE_STATUS: http::StatusCode = http::StatusCode::BAD_GATEWAY;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAdmin {
    /// `host:port`, or `"off"`.
    pub listen: Option<String>,
}

impl RawInspect {
    pub fn overlay(self, higher: RawInspect) -> RawInspect {
        RawInspect {
            enabled: higher.enabled.or(self.enabled),
            enforce: higher.enforce.or(self.enforce),
            max_concurrent: higher.max_concurrent.or(self.max_concurrent),
            tap_frames: higher.tap_frames.or(self.tap_frames),
            max_request_body: higher.max_request_body.or(self.max_request_body),
            max_violations: higher.max_violations.or(self.max_violations),
            max_reassembled: higher.max_reassembled.or(self.max_reassembled),
            max_memory: higher.max_memory.or(self.max_memory),
            max_held_recording: higher.max_held_recording.or(self.max_held_recording),
            held_in_memory: higher.held_in_memory.or(self.held_in_memory),
            max_spill: higher.max_spill.or(self.max_spill),
            tap_bytes: higher.tap_bytes.or(self.tap_bytes),
            schema_budget: higher.schema_budget.or(self.schema_budget),
            schema_compile_bytes: higher.schema_compile_bytes.or(self.schema_compile_bytes),
            schema_cache_bytes: higher.schema_cache_bytes.or(self.schema_cache_bytes),
            grammar_compile_bytes: higher.grammar_compile_bytes.or(self.grammar_compile_bytes),
            violations: higher.violations.or(self.violations),
            methods: higher.methods.or(self.methods),
            path_suffixes: higher.path_suffixes.or(self.path_suffixes),
            severity: higher.severity.or(self.severity),
            mcp: match (self.mcp, higher.mcp) {
                (Some(lower), Some(higher)) => Some(lower.overlay(higher)),
                (lower, higher) => higher.or(lower),
            },
        }
    }
}

/// Which requests are inspected: a method and a path suffix must both match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matcher {
    pub methods: Vec<String>,
    pub path_suffixes: Vec<String>,
}

impl Default for Matcher {
    /// `POST` to any path a dialect names ([`Dialect::path_suffixes`]).
    fn default() -> Self {
        Matcher {
            methods: vec!["POST".into()],
            path_suffixes: Dialect::ALL
                .iter()
                .flat_map(|dialect| dialect.path_suffixes())
                .map(|suffix| (*suffix).to_owned())
                .collect(),
        }
    }
}

/// The methods an MCP exchange is inspected with besides `inspect.methods`: an MCP
/// conversation is POSTs, GET streams (server messages, resumptions) and a DELETE ending the
/// session, on one endpoint, and the conversation's state (session, catalog, in-flight ids) is
/// wrong unless all of them are seen and recorded.
pub const MCP_METHODS: [&str; 3] = ["POST", "GET", "DELETE"];

impl Matcher {
    pub fn matches(&self, method: &str, path: &str) -> bool {
        self.methods.iter().any(|m| m.eq_ignore_ascii_case(method)) && self.matches_path(path)
    }

    /// As [`Matcher::matches`], and for an MCP exchange any of [`MCP_METHODS`] too.
    pub fn matches_for(&self, dialect: Option<Dialect>, method: &str, path: &str) -> bool {
        self.matches(method, path)
            || (dialect == Some(Dialect::Mcp)
                && MCP_METHODS.iter().any(|m| m.eq_ignore_ascii_case(method))
                && self.matches_path(path))
    }

    fn matches_path(&self, path: &str) -> bool {
        let path = path.trim_end_matches('/');
        self.path_suffixes
            .iter()
            .any(|s| path.ends_with(s.as_str()))
    }
}

/// A route's own choices, where it makes them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RoutePolicy {
    pub inspect: Option<bool>,
    pub enforce: Option<bool>,
    /// The dialect every path of the route is judged as (`routes[].dialect`, `proxy.dialect`
    /// for the default route); `None`: the one the path names.
    pub dialect: Option<Dialect>,
}

/// What one exchange gets, decided once when its request head arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// The route's dialect, else the one the path names; `None` when neither names one.
    pub dialect: Option<Dialect>,
    /// The method and path match `[inspect]` and the route inspects: the exchange is watched
    /// when `dialect` is known, and reported `dialect_unknown` (forwarded, not judged, not
    /// recorded) when it is not.
    pub inspect: bool,
    /// Enforced: inspected, of a known dialect, and the route (or `inspect.enforce`) says so.
    pub enforce: bool,
}

#[derive(Debug, Clone)]
pub struct InspectSettings {
    pub enabled: bool,
    pub enforce: bool,
    /// The status of enforce mode's refusal of a buffered response (`enforce.status`).
    pub enforce_status: http::StatusCode,
    pub max_concurrent: usize,
    pub tap_frames: usize,
    pub max_request_body: usize,
    /// Violations kept per exchange (file, log, recording); the rest are counted.
    pub max_violations: usize,
    /// SSE data one stream's reassembly takes in; past it the stream is reported too_large.
    pub max_reassembled: usize,
    /// Bytes all inspections may hold together; past it new exchanges are not inspected.
    pub max_memory: usize,
    /// Response bytes a `violations`-mode recording holds until the verdict.
    pub max_held_recording: u64,
    /// Of those, bytes kept in memory per exchange; the rest is spilled to a segment file.
    pub held_in_memory: usize,
    /// Bytes of spill segments on disk, all exchanges together; 0 turns spilling off.
    pub max_spill: u64,
    /// Bytes of frames waiting in one tap for the inspector; past it the exchange is lossy.
    pub tap_bytes: usize,
    /// What schema work one exchange may cost.
    pub schema: SchemaLimits,
    pub violations: Option<PathBuf>,
    pub matcher: Matcher,
    pub severity: SeverityOverrides,
    /// The MCP conversation store's bounds (`[inspect.mcp]`).
    pub mcp: super::mcp_state::McpStateSettings,
    /// By route name.
    pub routes: HashMap<String, RoutePolicy>,
}

impl InspectSettings {
    /// The exchange's dialect, whether it is inspected, and whether it is enforced.
    pub fn decide(&self, route: &str, method: &str, path: &str) -> Decision {
        let policy = self.routes.get(route).copied().unwrap_or_default();
        let dialect = policy.dialect.or_else(|| Dialect::from_path(path));
        let inspect = policy.inspect.unwrap_or(self.enabled)
            && self.matcher.matches_for(dialect, method, path);
        let enforce = inspect && dialect.is_some() && policy.enforce.unwrap_or(self.enforce);
        Decision {
            dialect,
            inspect,
            enforce,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdminSettings {
    pub listen: Option<SocketAddr>,
}

/// Validation failures of these sections; the caller adds where the value came from.
#[derive(Debug, thiserror::Error)]
pub enum InspectConfigError {
    #[error("inspect.severity: {0}")]
    Severity(String),
    #[error("admin.listen: `{0}` is neither host:port nor \"off\"")]
    AdminListen(String),
    #[error("inspect.{key}: must be at least 1")]
    Zero { key: &'static str },
    #[error("enforce.status: {0} is not an error status: give a 4xx or 5xx (default 502)")]
    EnforceStatus(u16),
}

pub fn validate(
    raw: RawInspect,
    enforce_section: RawEnforce,
    admin: RawAdmin,
    routes: HashMap<String, RoutePolicy>,
) -> Result<(InspectSettings, AdminSettings), InspectConfigError> {
    let RawInspect {
        enabled,
        enforce,
        max_concurrent,
        tap_frames,
        max_request_body,
        max_violations,
        max_reassembled,
        max_memory,
        max_held_recording,
        held_in_memory,
        max_spill,
        tap_bytes,
        schema_budget,
        schema_compile_bytes,
        schema_cache_bytes,
        grammar_compile_bytes,
        violations,
        methods,
        path_suffixes,
        severity,
        mcp,
    } = raw;
    let mut overrides = SeverityOverrides::default();
    for (rule, level) in severity.unwrap_or_default() {
        let rule: RuleId = rule
            .parse()
            .map_err(|e| InspectConfigError::Severity(format!("{e}")))?;
        let level: Level = level
            .parse()
            .map_err(|e| InspectConfigError::Severity(format!("{}: {e}", rule.as_str())))?;
        overrides.set(rule, level);
    }
    let positive = |value: Option<usize>, default, key| match value {
        Some(0) => Err(InspectConfigError::Zero { key }),
        other => Ok(other.unwrap_or(default)),
    };
    let defaults = Matcher::default();
    let violations = violations.unwrap_or_else(|| PathBuf::from(DEFAULT_VIOLATIONS));
    let inspect = InspectSettings {
        enabled: enabled.unwrap_or(true),
        enforce: enforce.unwrap_or(false),
        enforce_status: enforce_status(enforce_section)?,
        max_concurrent: positive(max_concurrent, DEFAULT_MAX_CONCURRENT, "max_concurrent")?,
        tap_frames: positive(tap_frames, DEFAULT_TAP_FRAMES, "tap_frames")?,
        max_request_body: positive(
            max_request_body,
            DEFAULT_MAX_REQUEST_BODY,
            "max_request_body",
        )?,
        max_violations: positive(max_violations, DEFAULT_MAX_VIOLATIONS, "max_violations")?,
        max_reassembled: positive(
            max_reassembled,
            crate::engine::EngineConfig::default().max_reassembled,
            "max_reassembled",
        )?,
        max_memory: positive(max_memory, DEFAULT_MAX_MEMORY, "max_memory")?,
        max_held_recording: match max_held_recording {
            Some(0) => {
                return Err(InspectConfigError::Zero {
                    key: "max_held_recording",
                });
            }
            other => other.unwrap_or(DEFAULT_MAX_HELD_RECORDING),
        },
        held_in_memory: positive(held_in_memory, DEFAULT_HELD_IN_MEMORY, "held_in_memory")?,
        max_spill: max_spill.unwrap_or(DEFAULT_MAX_SPILL),
        tap_bytes: positive(tap_bytes, crate::tap::tee::DEFAULT_TAP_BYTES, "tap_bytes")?,
        schema: schema_limits(
            schema_budget,
            schema_compile_bytes,
            schema_cache_bytes,
            grammar_compile_bytes,
        )?,
        violations: (violations.as_os_str() != "off").then_some(violations),
        matcher: Matcher {
            methods: methods.unwrap_or(defaults.methods),
            path_suffixes: path_suffixes.unwrap_or(defaults.path_suffixes),
        },
        severity: overrides,
        mcp: super::mcp_state::validate(mcp)?,
        routes,
    };
    let listen = admin.listen.unwrap_or_else(|| DEFAULT_ADMIN_LISTEN.into());
    let listen = match listen.trim() {
        "off" => None,
        text => Some(
            text.parse()
                .map_err(|_| InspectConfigError::AdminListen(text.into()))?,
        ),
    };
    Ok((inspect, AdminSettings { listen }))
}

/// `enforce.status`: any 4xx or 5xx.
fn enforce_status(raw: RawEnforce) -> Result<http::StatusCode, InspectConfigError> {
    let RawEnforce { status } = raw;
    match status {
        None => Ok(DEFAULT_ENFORCE_STATUS),
        Some(code) => http::StatusCode::from_u16(code)
            .ok()
            .filter(|status| status.is_client_error() || status.is_server_error())
            .ok_or(InspectConfigError::EnforceStatus(code)),
    }
}

fn schema_limits(
    budget: Option<u64>,
    compile_bytes: Option<usize>,
    cache_bytes: Option<usize>,
    grammar_bytes: Option<usize>,
) -> Result<SchemaLimits, InspectConfigError> {
    let defaults = SchemaLimits::default();
    let zero = |key| Err(InspectConfigError::Zero { key });
    Ok(SchemaLimits {
        max_steps: match budget {
            Some(0) => return zero("schema_budget"),
            other => other.unwrap_or(defaults.max_steps),
        },
        max_compile_bytes: match compile_bytes {
            Some(0) => return zero("schema_compile_bytes"),
            other => other.unwrap_or(defaults.max_compile_bytes),
        },
        max_cache_bytes: match cache_bytes {
            Some(0) => return zero("schema_cache_bytes"),
            other => other.unwrap_or(defaults.max_cache_bytes),
        },
        max_grammar_bytes: match grammar_bytes {
            Some(0) => return zero("grammar_compile_bytes"),
            other => other.unwrap_or(defaults.max_grammar_bytes),
        },
    })
}

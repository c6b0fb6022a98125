//! The MCP protocol versions tooltap knows, and which one an exchange speaks.
//!
//! Input: the request's `MCP-Protocol-Version` header, its `_meta` protocol version
//! (2026-07-28), an `initialize` request's `protocolVersion`. Output: a [`Version`]; without any
//! of them, 2025-03-26, which the spec tells a server to assume when the header is absent.

/// A protocol version (the reference's V1–V4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Version {
    /// 2025-03-26: Streamable HTTP, batches.
    V1,
    /// 2025-06-18: no batches, `structuredContent`/`outputSchema`, the version header.
    V2,
    /// 2025-11-25: JSON Schema 2020-12 by default, tool-name guidance, priming events, tasks.
    V3,
    /// 2026-07-28: no sessions, `_meta` on every request, routing headers, `resultType`.
    V4,
}

impl Version {
    /// The version a date string names, if tooltap knows it.
    pub fn parse(text: &str) -> Option<Version> {
        match text {
            "2025-03-26" => Some(Version::V1),
            "2025-06-18" => Some(Version::V2),
            "2025-11-25" => Some(Version::V3),
            "2026-07-28" => Some(Version::V4),
            _ => None,
        }
    }

    /// The 2026-07-28 era ("modern": stateless, per-request `_meta`).
    pub fn is_modern(self) -> bool {
        self == Version::V4
    }
}

//! How bad a violation is: the one vocabulary the rule catalogue (default severities), the
//! configuration (overrides) and the violation sink share.
//!
//! Input: nothing; output: [`Severity`]. It lives apart from all three so that none of them has
//! to import another to name it (the engine's modules form no cycle).

use serde::{Deserialize, Serialize};

/// How bad a violation is. `Error` is the default for anything a client would break on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    /// The stable string used in logs, metrics and files (the serde name).
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

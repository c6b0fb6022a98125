//! A contract violation as a value, and the sink the checks push them into.
//!
//! The checks in [`crate::engine::contract`] call [`ViolationSink::push`] with a rule id, where
//! it happened and a human detail; the sink applies the configured severity (or drops rules
//! turned off) and keeps the list the [`crate::engine::Exchange`] exposes and reports.

use serde::{Deserialize, Serialize};

use super::config::{DEFAULT_MAX_VIOLATIONS, Level, SeverityOverrides};
use super::rules::RuleId;
pub use super::severity::Severity;

/// Which phase of the exchange produced the violation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// The request body (declared tools and schemas).
    Request,
    /// The response head (status, content type).
    Head,
    /// One SSE event of a stream, judged on its own.
    Fragment,
    /// The whole message: a buffered body, or a stream after reassembly.
    Complete,
}

/// One broken rule, with enough location to find it again in a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Violation {
    pub rule: RuleId,
    pub severity: Severity,
    pub stage: Stage,
    /// The choice index (`choices[].index`) the violation belongs to.
    pub choice: Option<u32>,
    /// The tool call's index: `delta.tool_calls[].index` for streams, array position for buffered.
    pub tool_call: Option<u32>,
    /// JSON pointer into the document the stage judged: the request body, the buffered response,
    /// the fragment (SSE data payload), or the reassembled buffered-equivalent message. For
    /// schema failures it continues into the parsed arguments.
    pub path: String,
    /// The number of the `feed` call (0-based) whose bytes completed the offending event.
    pub seq: Option<u64>,
    /// The JSON Schema keyword location, for `tool_call.arguments_schema`.
    pub schema_path: Option<String>,
    /// A human explanation; nothing should match on it.
    pub detail: String,
}

/// Where a violation happened: everything but the rule and the detail.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Site {
    pub choice: Option<u32>,
    pub tool_call: Option<u32>,
    pub path: String,
    pub seq: Option<u64>,
    pub schema_path: Option<String>,
}

impl Site {
    pub fn at(path: impl Into<String>) -> Site {
        Site {
            path: path.into(),
            ..Site::default()
        }
    }

    pub fn choice(mut self, choice: Option<u32>) -> Site {
        self.choice = choice;
        self
    }

    pub fn tool_call(mut self, tool_call: Option<u32>) -> Site {
        self.tool_call = tool_call;
        self
    }

    pub fn seq(mut self, seq: Option<u64>) -> Site {
        self.seq = seq;
        self
    }
}

/// Collects violations for one exchange, applying severity overrides as they arrive. Keeps the
/// first `max` and counts the rest, so a response with 20,000 bad calls costs a bounded report.
#[derive(Debug, Clone)]
pub struct ViolationSink {
    overrides: SeverityOverrides,
    violations: Vec<Violation>,
    max: usize,
    not_listed: u64,
    schema_budget: u32,
}

impl ViolationSink {
    pub fn new(overrides: SeverityOverrides) -> ViolationSink {
        ViolationSink::capped(overrides, DEFAULT_MAX_VIOLATIONS)
    }

    /// A sink keeping at most `max` violations (at least 1).
    pub fn capped(overrides: SeverityOverrides, max: usize) -> ViolationSink {
        ViolationSink {
            overrides,
            violations: Vec::new(),
            max: max.max(1),
            not_listed: 0,
            schema_budget: 0,
        }
    }

    /// Violations found past the cap: counted, not kept.
    pub fn not_listed(&self) -> u64 {
        self.not_listed
    }

    /// A tool call's arguments were not schema-checked: the check would exceed its budget.
    pub fn schema_budget_hit(&mut self) {
        self.schema_budget = self.schema_budget.saturating_add(1);
    }

    /// How many tool calls' schema checks were skipped for the budget.
    pub fn schema_budget_hits(&self) -> u32 {
        self.schema_budget
    }

    /// Records a violation unless its rule is turned off.
    pub fn push(&mut self, rule: RuleId, stage: Stage, site: Site, detail: impl Into<String>) {
        let severity = match self.overrides.level(rule) {
            Level::Off => return,
            Level::Warning => Severity::Warning,
            Level::Error => Severity::Error,
        };
        if self.violations.len() >= self.max {
            self.not_listed = self.not_listed.saturating_add(1);
            return;
        }
        let Site {
            choice,
            tool_call,
            path,
            seq,
            schema_path,
        } = site;
        self.violations.push(Violation {
            rule,
            severity,
            stage,
            choice,
            tool_call,
            path,
            seq,
            schema_path,
            detail: detail.into(),
        });
    }

    /// Records a violation at warning severity at most (unless the rule is turned off): for a
    /// rule whose severity depends on the input, e.g. a schema mismatch of a non-strict tool.
    pub fn push_lenient(
        &mut self,
        rule: RuleId,
        stage: Stage,
        site: Site,
        detail: impl Into<String>,
    ) {
        let start = self.violations.len();
        self.push(rule, stage, site, detail);
        for violation in self.violations.iter_mut().skip(start) {
            violation.severity = Severity::Warning;
        }
    }

    pub fn len(&self) -> usize {
        self.violations.len()
    }

    pub fn is_empty(&self) -> bool {
        self.violations.is_empty()
    }

    /// Gives violations recorded since `start` that have no seq the one `seq_of` finds.
    pub fn fill_seq_since(&mut self, start: usize, seq_of: impl Fn(&Violation) -> Option<u64>) {
        for violation in self.violations.iter_mut().skip(start) {
            if violation.seq.is_none() {
                violation.seq = seq_of(violation);
            }
        }
    }

    /// Rewrites the detail of the violation at `index` (a [`len`](Self::len) taken before its
    /// push), for a finding reported once whose count is known only later.
    pub fn amend_detail(&mut self, index: usize, detail: String) {
        if let Some(violation) = self.violations.get_mut(index) {
            violation.detail = detail;
        }
    }

    pub fn as_slice(&self) -> &[Violation] {
        &self.violations
    }

    pub fn into_vec(self) -> Vec<Violation> {
        self.violations
    }
}

/// Escapes one JSON pointer reference token (RFC 6901: `~` → `~0`, `/` → `~1`).
pub fn pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

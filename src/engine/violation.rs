//! A contract violation as a value, and the sink the checks push them into.
//!
//! The checks in each dialect ([`crate::engine::dialect`]) call [`ViolationSink::push`] with a rule id, where
//! it happened and a human detail; the sink applies the configured severity (or drops rules
//! turned off) and keeps the list the [`crate::engine::Exchange`] exposes and reports.
//!
//! The sink also bounds what one violation can carry: a detail (which may quote a whole
//! argument value), a path and a schema path past [`MAX_TEXT_BYTES`] are cut there and say so
//! (`… (8388608 bytes, cut)`), so every rule of every dialect inherits the bound and a
//! violations-file or log line stays a few KiB whatever the traffic held.

use serde::{Deserialize, Serialize};

use super::config::{DEFAULT_MAX_VIOLATIONS, Level, SeverityOverrides};
use super::rules::RuleId;
pub use super::severity::Severity;

/// The most bytes a violation's `detail`, `path` or `schema_path` keeps (before the marker
/// saying how long it was).
pub const MAX_TEXT_BYTES: usize = 1024;

/// `text` cut to at most `max` bytes on a character boundary, followed by
/// `… (<its length> bytes, cut)` when it was longer; unchanged otherwise.
pub fn bounded_text(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let length = text.len();
    text.truncate(text.floor_char_boundary(max));
    text.push_str(&format!("… ({length} bytes, cut)"));
    text
}

/// [`bounded_text`] for a borrowed text: borrowed back when it fits.
pub fn bounded_str(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match text.len() <= max {
        true => std::borrow::Cow::Borrowed(text),
        false => std::borrow::Cow::Owned(bounded_text(text.to_owned(), max)),
    }
}

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
    /// A human explanation; nothing should match on it. At most [`MAX_TEXT_BYTES`] (and the
    /// marker) when it came through the sink.
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
    /// Every violation pushed, whatever became of it (kept, past the cap, or its rule off).
    reported: u64,
    schema_budget: u32,
    schema_streaming: u32,
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
            reported: 0,
            schema_budget: 0,
            schema_streaming: 0,
        }
    }

    /// Violations found past the cap: counted, not kept.
    pub fn not_listed(&self) -> u64 {
        self.not_listed
    }

    /// How many violations were pushed, kept or not (a rule turned off included): whether a
    /// piece of work found anything, whatever this sink's settings made of it.
    pub fn reported(&self) -> u64 {
        self.reported
    }

    /// A tool call's arguments were not schema-checked: the check would exceed its budget.
    pub fn schema_budget_hit(&mut self) {
        self.schema_budget = self.schema_budget.saturating_add(1);
    }

    /// How many tool calls' schema checks were skipped for the budget.
    pub fn schema_budget_hits(&self) -> u32 {
        self.schema_budget
    }

    /// A tool call's arguments were too large to hold and its schema has a keyword that needs
    /// a whole value past the streaming bound (`pattern` on a huge string, `uniqueItems` on a
    /// huge array): that keyword was not judged.
    pub fn schema_streaming_hit(&mut self) {
        self.schema_streaming = self.schema_streaming.saturating_add(1);
    }

    /// How many tool calls' schema checks were left incomplete by the streaming bound.
    pub fn schema_streaming_hits(&self) -> u32 {
        self.schema_streaming
    }

    /// Records a violation unless its rule is turned off.
    pub fn push(&mut self, rule: RuleId, stage: Stage, site: Site, detail: impl Into<String>) {
        self.reported = self.reported.saturating_add(1);
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
            path: bounded_text(path, MAX_TEXT_BYTES),
            seq,
            schema_path: schema_path.map(|text| bounded_text(text, MAX_TEXT_BYTES)),
            detail: bounded_text(detail.into(), MAX_TEXT_BYTES),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_cut_on_a_character_boundary_and_say_how_long_they_were() {
        let mut sink = ViolationSink::new(SeverityOverrides::default());
        let huge = "é".repeat(4 * 1024 * 1024); // 8 MiB, two bytes a character
        let site = Site {
            schema_path: Some(format!("/properties/{huge}")),
            ..Site::at(format!("/arguments/{huge}"))
        };
        sink.push(
            RuleId::ToolCallArgumentsSchema,
            Stage::Complete,
            site,
            format!("value {huge} is not an integer"),
        );
        let violation = &sink.as_slice()[0];
        assert!(violation.detail.starts_with("value éé"));
        assert!(
            violation.detail.ends_with("… (8388632 bytes, cut)"),
            "{}",
            &violation.detail[1000..]
        );
        for text in [&violation.detail, &violation.path] {
            assert!(text.len() <= MAX_TEXT_BYTES + 40, "{}", text.len());
        }
        let schema_path = violation.schema_path.as_deref().unwrap_or_default();
        assert!(schema_path.len() <= MAX_TEXT_BYTES + 40);
        assert!(schema_path.ends_with("… (8388620 bytes, cut)"));
        // Short texts pass unchanged.
        assert_eq!(bounded_text("ok".into(), 2), "ok");
        assert_eq!(bounded_str("abc", 2), "ab… (3 bytes, cut)");
    }
}

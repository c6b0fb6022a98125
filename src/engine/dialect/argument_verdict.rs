//! An [`ArgumentVerdict`] turned into violations, the same way for every dialect: the dialect
//! names its rule ids ([`ArgumentRules`]) and its site, this module writes the details and
//! counts what was not judged.
//!
//! Input: the verdict of one call's arguments ([`crate::engine::arguments`]: a streamed call's
//! [`crate::engine::arguments::ArgumentStream`], or [`judge_whole`] on a buffered call's text),
//! the text as far as it was held, the dialect's [`ArgumentRules`] and a closure giving the site.
//! Output: at most one not-JSON or not-object violation, or the schema failures (strict or
//! lenient), and the sink's `schema_budget` / `schema_streaming` counters.
//!
//! A stream reports its break as the fragment that caused it arrives ([`report_break`]: stage
//! `fragment`, that fragment's `seq`, so enforce mode cuts there) and then passes
//! `break_reported` to [`report_verdict`], which does not report it again: one violation per
//! call.

use serde_json::Value;

pub use crate::engine::arguments::judge_whole;
use crate::engine::arguments::{ArgumentSchema, ArgumentVerdict};
use crate::engine::dialect::common::preview;
use crate::engine::json_stream::Broken;
use crate::engine::rules::RuleId;
use crate::engine::schema::SchemaFailure;
use crate::engine::violation::{Site, Stage, ViolationSink};

/// A dialect's rule ids for its arguments (not-JSON and not-object may be one rule).
#[derive(Debug, Clone, Copy)]
pub struct ArgumentRules {
    pub not_json: RuleId,
    pub not_object: RuleId,
    pub schema: RuleId,
    /// Schema failures at warning severity at most (a Responses tool declared non-strict).
    pub lenient: bool,
}

/// The argument text as far as it was kept: the whole text, or (`whole: false`) its first bytes
/// once it outgrew its bound.
#[derive(Debug, Clone, Copy)]
pub struct HeldText<'a> {
    pub text: &'a str,
    pub whole: bool,
}

impl HeldText<'_> {
    /// The text shortened for a detail, saying when only its start was kept.
    fn shown(&self) -> String {
        let shown = preview(&Value::String(self.text.to_owned()));
        if self.whole {
            shown
        } else {
            format!("{shown} (only the first {} bytes kept)", self.text.len())
        }
    }
}

/// Reports arguments that became impossible JSON at byte `broken.offset`: at stage `fragment`
/// with the breaking fragment's `seq` when known, else at stage `complete` (the text ended
/// early). `site` is the call's arguments site; its `seq` is replaced when `seq` is known.
pub fn report_break(
    broken: Broken,
    seq: Option<u64>,
    held: HeldText<'_>,
    rules: &ArgumentRules,
    site: Site,
    sink: &mut ViolationSink,
) {
    let (stage, site) = match seq {
        Some(seq) => (Stage::Fragment, site.seq(Some(seq))),
        None => (Stage::Complete, site),
    };
    let detail = format!(
        "arguments do not parse as JSON ({} at byte {}): {}",
        broken.reason,
        broken.offset,
        held.shown()
    );
    sink.push(rules.not_json, stage, site, detail);
}

/// Reports `verdict` at stage `complete` (a break at a known fragment at stage `fragment`, unless
/// `break_reported`); returns the parsed object when the text was held whole. `site` is called
/// only for a violation.
pub fn report_verdict(
    verdict: ArgumentVerdict,
    held: HeldText<'_>,
    break_reported: bool,
    rules: &ArgumentRules,
    site: &dyn Fn() -> Site,
    sink: &mut ViolationSink,
) -> Option<Value> {
    match verdict {
        ArgumentVerdict::NotJson { broken, seq } => {
            if !(break_reported && seq.is_some()) {
                report_break(broken, seq, held, rules, site(), sink);
            }
            None
        }
        ArgumentVerdict::NotObject(value) => {
            let shown = match &value {
                Some(value) => preview(value),
                None => held.shown(),
            };
            let detail = format!("arguments must encode a JSON object, got {shown}");
            sink.push(rules.not_object, Stage::Complete, site(), detail);
            None
        }
        ArgumentVerdict::Object { value, schema } => {
            match schema {
                ArgumentSchema::Unchecked => {}
                ArgumentSchema::OverBudget => sink.schema_budget_hit(),
                ArgumentSchema::Checked(failures) => {
                    report_failures(failures, rules, site, sink);
                }
                ArgumentSchema::Incomplete(failures) => {
                    sink.schema_streaming_hit();
                    report_failures(failures, rules, site, sink);
                }
            }
            value
        }
    }
}

fn report_failures(
    failures: Vec<SchemaFailure>,
    rules: &ArgumentRules,
    site: &dyn Fn() -> Site,
    sink: &mut ViolationSink,
) {
    for failure in failures {
        let mut at = site();
        at.path.push_str(&failure.instance_path);
        at.schema_path = Some(failure.schema_path);
        if rules.lenient {
            sink.push_lenient(rules.schema, Stage::Complete, at, failure.message);
        } else {
            sink.push(rules.schema, Stage::Complete, at, failure.message);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::engine::arguments::{ArgumentLimits, ArgumentStream};
    use crate::engine::schema::compile_one_for_tests as compiled;

    const RULES: ArgumentRules = ArgumentRules {
        not_json: RuleId::ToolCallArgumentsNotJson,
        not_object: RuleId::ToolCallArgumentsNotObject,
        schema: RuleId::ToolCallArgumentsSchema,
        lenient: false,
    };

    fn site() -> Site {
        Site::at("/args").seq(Some(1))
    }

    #[test]
    fn a_break_at_a_fragment_is_one_fragment_violation_with_its_seq() {
        let mut stream = ArgumentStream::new(None, ArgumentLimits::default());
        let mut sink = ViolationSink::new(Default::default());
        let mut reported = false;
        for (seq, fragment) in [(4, "{\"a\":1"), (7, "}x"), (9, "more")] {
            if let Some(broken) = stream.push(fragment, seq) {
                let (text, whole) = stream.text();
                report_break(
                    broken,
                    Some(seq),
                    HeldText { text, whole },
                    &RULES,
                    site(),
                    &mut sink,
                );
                reported = true;
            }
        }
        let held = stream.text().0.to_owned();
        let verdict = stream.finish(None);
        let held = HeldText {
            text: &held,
            whole: true,
        };
        assert!(report_verdict(verdict, held, reported, &RULES, &site, &mut sink).is_none());
        let violations = sink.as_slice();
        assert_eq!(violations.len(), 1, "{violations:?}");
        assert_eq!(violations[0].rule, RuleId::ToolCallArgumentsNotJson);
        assert_eq!(violations[0].stage, Stage::Fragment);
        assert_eq!(violations[0].seq, Some(7));
        assert!(violations[0].detail.contains("at byte 7"), "{violations:?}");
    }

    #[test]
    fn text_that_stops_early_is_reported_complete_at_the_calls_site() {
        let mut sink = ViolationSink::new(Default::default());
        let text = "{\"a\":";
        let held = HeldText { text, whole: true };
        report_verdict(
            judge_whole(text, None),
            held,
            false,
            &RULES,
            &site,
            &mut sink,
        );
        let violations = sink.as_slice();
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].stage, Stage::Complete);
        assert_eq!(violations[0].seq, Some(1));
    }

    #[test]
    fn schema_failures_and_what_was_not_judged() {
        let schema = compiled(&json!({"properties": {"a": {"type": "string"}}}));
        let mut sink = ViolationSink::new(Default::default());
        let text = "{\"a\":1}";
        let held = HeldText { text, whole: true };
        let value = report_verdict(
            judge_whole(text, Some(&schema)),
            held,
            false,
            &RULES,
            &site,
            &mut sink,
        );
        assert_eq!(value, Some(json!({"a": 1})));
        assert_eq!(sink.as_slice()[0].path, "/args/a");
        let lenient = ArgumentRules {
            lenient: true,
            ..RULES
        };
        let mut sink = ViolationSink::new(Default::default());
        report_verdict(
            judge_whole(text, Some(&schema)),
            held,
            false,
            &lenient,
            &site,
            &mut sink,
        );
        assert_eq!(
            sink.as_slice()[0].severity,
            crate::engine::violation::Severity::Warning
        );
        let mut sink = ViolationSink::new(Default::default());
        let incomplete = ArgumentVerdict::Object {
            value: None,
            schema: ArgumentSchema::Incomplete(Vec::new()),
        };
        report_verdict(incomplete, held, false, &RULES, &site, &mut sink);
        assert_eq!(sink.schema_streaming_hits(), 1);
        assert!(sink.as_slice().is_empty());
    }
}

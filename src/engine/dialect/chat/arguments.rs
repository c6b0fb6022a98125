//! One streamed call's `function.arguments` (or legacy `function_call.arguments`) followed as
//! its fragments arrive, in bounded memory: what the reassembly holds per call in place of the
//! concatenated text.
//!
//! Input: each string fragment with its event's `seq`, and the call's schema once its name is
//! known. Output: the break, at the fragment that made the text impossible JSON (the caller
//! reports it there: stage `fragment`, so enforce mode cuts at that event), the text for the
//! reassembled document (whole while within [`ArgumentLimits::text`], else its first bytes and
//! [`NOT_KEPT`]), and at the complete stage the verdict reported by
//! [`crate::engine::dialect::argument_verdict`].
//!
//! A name that arrives after the arguments began: while the text is still held, it is read
//! again with the schema (once); past the bound the schema can no longer be followed, and a
//! call whose schema exists ends `incomplete: schema_streaming` rather than passing.

use serde_json::Value;

use crate::engine::arguments::{ArgumentLimits, ArgumentSchema, ArgumentStream, ArgumentVerdict};
use crate::engine::dialect::argument_verdict::{
    ArgumentRules, HeldText, judge_whole, report_verdict,
};
use crate::engine::json_stream::Broken;
use crate::engine::schema::ToolSchema;
use crate::engine::violation::{Site, ViolationSink};

/// What follows the kept start of arguments past the bound, in the reassembled document and
/// the report.
pub const NOT_KEPT: &str = "… (tooltap: the rest of the arguments was not kept)";

/// One Chat call's streamed arguments as the reassembly holds them: followed fragment by
/// fragment, with the call's schema once its name is known, in place of the joined text.
#[derive(Debug)]
pub struct FollowedArguments {
    stream: ArgumentStream,
    /// The stream was started with the call's schema (its name was known), or read again with it.
    schema_followed: bool,
    /// The name came after the text outgrew its bound: the schema was not followed.
    schema_missed: bool,
    /// The break was reported at its fragment.
    pub break_reported: bool,
    /// The most heap bytes held so far, as charged to the reassembly.
    charged: usize,
}

/// A fragment taken: heap bytes newly charged, and the break when this fragment made the text
/// impossible JSON.
pub struct Taken {
    pub grown: usize,
    pub broken: Option<Broken>,
}

impl FollowedArguments {
    /// A call's arguments; `schema` is `None` when the call's name is not known yet.
    pub fn new(schema: Option<Option<&ToolSchema>>) -> FollowedArguments {
        FollowedArguments {
            stream: ArgumentStream::new(schema.flatten(), ArgumentLimits::default()),
            schema_followed: schema.is_some(),
            schema_missed: false,
            break_reported: false,
            charged: 0,
        }
    }

    /// Takes one fragment of the `seq`-th event. The caller reports the break it returns (then counted as reported).
    pub fn push(&mut self, fragment: &str, seq: u64) -> Taken {
        let broken = self.stream.push(fragment, seq);
        self.break_reported |= broken.is_some();
        Taken {
            grown: self.charge(),
            broken,
        }
    }

    /// The call's name arrived after its arguments began, with this schema: the held text is
    /// read again with it; heap bytes newly charged.
    pub fn schema_found(&mut self, schema: Option<&ToolSchema>, seq: u64) -> usize {
        if self.schema_followed {
            return 0;
        }
        self.schema_followed = true;
        let (text, whole) = self.stream.text();
        if !whole {
            self.schema_missed =
                schema.is_some_and(|schema| matches!(schema, ToolSchema::Valid(_)));
            return 0;
        }
        let mut again = ArgumentStream::new(schema, ArgumentLimits::default());
        // A break was already reported on the first reading; the new reading breaks at the
        // same byte.
        again.push(text, seq);
        self.stream = again;
        self.charge()
    }

    /// The text as far as it is held.
    pub fn held(&self) -> HeldText<'_> {
        let (text, whole) = self.stream.text();
        HeldText { text, whole }
    }

    /// The text for the reassembled document: whole, or its start and [`NOT_KEPT`].
    pub fn to_value(&self) -> Value {
        let HeldText { text, whole } = self.held();
        if whole {
            Value::String(text.to_owned())
        } else {
            Value::String(format!("{text}{NOT_KEPT}"))
        }
    }

    /// Heap bytes held now.
    pub fn held_bytes(&self) -> usize {
        self.stream.held_bytes()
    }

    /// Reports the verdict at the complete stage against `schema` (the one the complete-stage
    /// check found for the call); `shown` is the call's text in the reassembled document (see
    /// [`FollowedArguments::to_value`]). Returns the parsed object when the text was held.
    pub fn judge(
        self,
        schema: Option<&ToolSchema>,
        shown: &str,
        rules: &ArgumentRules,
        site: &dyn Fn() -> Site,
        sink: &mut ViolationSink,
    ) -> Option<Value> {
        let HeldText { text, whole } = self.held();
        let kept = text.len().min(shown.len());
        let missed = self.schema_missed;
        let reported = self.break_reported;
        let verdict = match self.stream.finish(schema) {
            ArgumentVerdict::Object {
                value,
                schema: ArgumentSchema::Unchecked,
            } if missed && schema.is_some_and(|s| matches!(s, ToolSchema::Valid(_))) => {
                ArgumentVerdict::Object {
                    value,
                    schema: ArgumentSchema::Incomplete(Vec::new()),
                }
            }
            verdict => verdict,
        };
        let held = HeldText {
            text: shown.get(..kept).unwrap_or(shown),
            whole,
        };
        report_verdict(verdict, held, reported, rules, site, sink)
    }

    fn charge(&mut self) -> usize {
        let held = self.stream.held_bytes();
        let grown = held.saturating_sub(self.charged);
        self.charged = self.charged.max(held);
        grown
    }
}

/// Reports the complete-stage verdict on a call's arguments `text` (as the reassembled document
/// or a buffered body carries it): from its `streamed` arguments when the call streamed, else
/// judged whole. Returns the parsed object when the text was held.
pub fn judge_call(
    streamed: Option<Box<FollowedArguments>>,
    schema: Option<&ToolSchema>,
    text: &str,
    rules: &ArgumentRules,
    site: &dyn Fn() -> Site,
    sink: &mut ViolationSink,
) -> Option<Value> {
    match streamed {
        Some(streamed) => streamed.judge(schema, text, rules, site, sink),
        None => {
            let held = HeldText { text, whole: true };
            report_verdict(judge_whole(text, schema), held, false, rules, site, sink)
        }
    }
}

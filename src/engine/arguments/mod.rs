//! One tool call's streamed arguments judged as their fragments arrive, in bounded memory:
//! the driver a dialect's reassembly holds per call in place of the concatenated text.
//!
//! Input: the call's schema (when its tool is known as the first fragment arrives) and each
//! fragment with the `seq` of its event ([`ArgumentStream::push`]). Output: the seq of the
//! fragment where the text first became impossible JSON, as soon as it does (so a violation,
//! and enforce mode's cut, can name that fragment), and at the end an [`ArgumentVerdict`]. While
//! the text fits [`ArgumentLimits::text`] it is also held, and the verdict is the
//! whole-document one (serde's parse and the compiled validator, exactly as before); past it
//! the text is dropped (a prefix of [`ArgumentLimits::prefix`] bytes is kept for a violation's
//! excerpt) and the verdict comes from the streaming parser and checker, which hold O(depth)
//! state and values up to [`ArgumentLimits::value`] bytes
//! ([`crate::engine::json_stream`], [`crate::engine::schema::stream`]).

use std::sync::Arc;

use serde_json::Value;

use super::json_stream::{Broken, Event, JsonStream};
use super::schema::{
    SchemaCheck, SchemaFailure, StreamCheck, StreamPlan, StreamVerdict, ToolSchema,
};

/// The bounds of one call's argument checking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArgumentLimits {
    /// Argument text held whole (and judged whole at the end); past it the text is dropped.
    pub text: usize,
    /// A string or number held whole by the streaming parser and checker.
    pub value: usize,
    /// Bytes of the text's start kept for a violation's excerpt once the text is dropped.
    pub prefix: usize,
}

impl Default for ArgumentLimits {
    fn default() -> Self {
        ArgumentLimits {
            text: 16 * 1024,
            value: 16 * 1024,
            prefix: 256,
        }
    }
}

/// What the arguments amounted to.
#[derive(Debug, Clone)]
pub enum ArgumentVerdict {
    /// Not JSON: where it broke, and the seq of the fragment that broke it (`None` when it
    /// broke only at the end: the text stopped early).
    NotJson { broken: Broken, seq: Option<u64> },
    /// JSON, but not an object: the value when the text was held, else what it started with.
    NotObject(Option<Value>),
    /// An object, judged against the schema (or not: [`ArgumentSchema::Unchecked`]); its value
    /// when the text was held whole (so a caller that keeps the parsed arguments, or judges
    /// them with rules of its own, parses once).
    Object {
        value: Option<Value>,
        schema: ArgumentSchema,
    },
}

/// The schema verdict of object arguments.
#[derive(Debug, Clone)]
pub enum ArgumentSchema {
    /// No schema, or none usable.
    Unchecked,
    /// Checking would cost more than the step budget (whole-document check only).
    OverBudget,
    /// Every keyword judged: these failures.
    Checked(Vec<SchemaFailure>),
    /// Some keyword needed more than was held (`incomplete: schema_streaming`); these failures
    /// were found anyway.
    Incomplete(Vec<SchemaFailure>),
}

/// The argument text of one call, followed as it streams.
#[derive(Debug)]
pub struct ArgumentStream {
    limits: ArgumentLimits,
    /// While the text is held: a parser that only looks for breaks (it holds no values). Once
    /// the text is dropped: the streaming parser that feeds `check`.
    parser: JsonStream,
    /// The schema's streamed plan, followed once the text is dropped.
    plan: Option<Arc<StreamPlan>>,
    check: Option<StreamCheck>,
    /// A schema exists but its plan needs the whole value: past the text bound it is
    /// incomplete.
    whole_only: bool,
    /// The text, while within its bound; then its first `prefix` bytes.
    text: String,
    dropped: bool,
    /// The kind of the top-level value, once its first event came.
    top_is_object: Option<bool>,
    broken: Option<(Broken, Option<u64>)>,
}

impl ArgumentStream {
    /// A stream for a call whose tool's schema is `schema` (`None`: no schema to judge).
    pub fn new(schema: Option<&ToolSchema>, limits: ArgumentLimits) -> ArgumentStream {
        let plan = schema.and_then(ToolSchema::stream_plan);
        let whole_only = plan
            .as_deref()
            .is_some_and(|plan| matches!(plan, StreamPlan::Whole(_)));
        let plan = plan.filter(|plan| matches!(**plan, StreamPlan::Streamed(_)));
        ArgumentStream {
            limits,
            parser: JsonStream::new(0),
            plan,
            check: None,
            whole_only,
            text: String::new(),
            dropped: false,
            top_is_object: None,
            broken: None,
        }
    }

    /// Reads one fragment; the break, the first time the text becomes impossible JSON.
    pub fn push(&mut self, fragment: &str, seq: u64) -> Option<Broken> {
        self.hold(fragment);
        if self.broken.is_some() {
            return None;
        }
        let (check, top) = (&mut self.check, &mut self.top_is_object);
        let result = self.parser.push(fragment.as_bytes(), &mut |event| {
            follow(check, top, event);
        });
        let broken = result.err()?;
        self.broken = Some((broken, Some(seq)));
        Some(broken)
    }

    /// Heap bytes held: the text or its prefix, the parser's nesting and value, the checker's.
    pub fn held_bytes(&self) -> usize {
        self.text.capacity()
            + self.parser.held_bytes()
            + self.check.as_ref().map_or(0, StreamCheck::held_bytes)
    }

    /// Whether the top-level value is an object, once its first byte came: a caller can
    /// report arguments that are not an object at that fragment.
    pub fn top_is_object(&self) -> Option<bool> {
        self.top_is_object
    }

    /// The text when it is still held whole, else its first bytes.
    pub fn text(&self) -> (&str, bool) {
        (&self.text, !self.dropped)
    }

    fn hold(&mut self, fragment: &str) {
        if self.dropped {
            return;
        }
        let needed = self.text.len() + fragment.len();
        if needed <= self.limits.text {
            // Grown by doubling as `push_str` would, but never past the bound: the held text
            // costs at most `limits.text` bytes of heap.
            if needed > self.text.capacity() {
                let grown = (self.text.capacity() * 2).clamp(needed, self.limits.text);
                self.text.reserve_exact(grown - self.text.len());
            }
            self.text.push_str(fragment);
            return;
        }
        self.dropped = true;
        self.follow_from_here();
        let end = self.text.floor_char_boundary(self.limits.prefix);
        self.text.truncate(end);
        // A first fragment past the bound still leaves the text's start.
        let take = fragment.floor_char_boundary(self.limits.prefix - end);
        self.text.push_str(&fragment[..take]);
        self.text.shrink_to_fit();
    }

    /// The text is about to be dropped: the streaming parser and checker read what was held
    /// (which the break-only parser accepted, so they accept it too: where a text breaks does
    /// not depend on what a parser holds) and follow the rest from there.
    fn follow_from_here(&mut self) {
        if self.broken.is_some() {
            return;
        }
        let mut parser = JsonStream::new(self.limits.value);
        let mut check = self
            .plan
            .as_ref()
            .map(|plan| StreamCheck::new(Arc::clone(plan), self.limits.value, MAX_FAILURES));
        let top = &mut self.top_is_object;
        if let Err(broken) = parser.push(self.text.as_bytes(), &mut |event| {
            follow(&mut check, top, event);
        }) {
            // Not reached (see above); the break stays where the held text puts it.
            self.broken = Some((broken, None));
        }
        self.parser = parser;
        self.check = check;
    }

    /// The verdict at the end of the text. `schema` is the one given to [`ArgumentStream::new`]
    /// (the whole-document check runs on it while the text was held).
    pub fn finish(mut self, schema: Option<&ToolSchema>) -> ArgumentVerdict {
        if self.broken.is_none() {
            let (check, top) = (&mut self.check, &mut self.top_is_object);
            if let Err(broken) = self.parser.finish(&mut |event| follow(check, top, event)) {
                self.broken = Some((broken, None));
            }
        }
        if let Some((broken, seq)) = self.broken {
            return ArgumentVerdict::NotJson { broken, seq };
        }
        if !self.dropped {
            return judge_whole(&self.text, schema);
        }
        if self.top_is_object != Some(true) {
            return ArgumentVerdict::NotObject(None);
        }
        let schema = if let Some(ToolSchema::OverBudget) = schema {
            ArgumentSchema::OverBudget
        } else {
            match self.check {
                Some(check) => match check.verdict() {
                    StreamVerdict::Checked(failures) => ArgumentSchema::Checked(failures),
                    StreamVerdict::Incomplete(failures) => ArgumentSchema::Incomplete(failures),
                },
                None if self.whole_only => ArgumentSchema::Incomplete(Vec::new()),
                None => ArgumentSchema::Unchecked,
            }
        };
        ArgumentVerdict::Object {
            value: None,
            schema,
        }
    }
}

/// Where text that serde refused broke, as the streaming parser finds it.
fn where_it_broke(text: &str) -> Broken {
    let mut parser = JsonStream::new(0);
    let mut ignore = |_: Event<'_>| {};
    let read = parser.push(text.as_bytes(), &mut ignore);
    match read.and_then(|()| parser.finish(&mut ignore)) {
        Err(broken) => broken,
        // The streaming parser accepts exactly what serde accepts (its tests): not reached.
        Ok(()) => Broken {
            offset: text.len() as u64,
            reason: "not JSON",
        },
    }
}

/// Failures listed per call, as the whole-document check lists them.
pub const MAX_FAILURES: usize = 16;

fn follow(check: &mut Option<StreamCheck>, top: &mut Option<bool>, event: Event<'_>) {
    if top.is_none() {
        *top = Some(event == Event::BeginObject);
    }
    if let Some(check) = check {
        check.event(event);
    }
}

/// The verdict on text held whole: serde's parse and the compiled validator. A buffered
/// body's arguments are judged here (the body is already bounded); text that does not parse
/// is read again by the streaming parser for where and why it broke (`seq: None`).
pub fn judge_whole(text: &str, schema: Option<&ToolSchema>) -> ArgumentVerdict {
    let value = match serde_json::from_str::<Value>(text) {
        Ok(value) => value,
        Err(_) => {
            return ArgumentVerdict::NotJson {
                broken: where_it_broke(text),
                seq: None,
            };
        }
    };
    if !value.is_object() {
        return ArgumentVerdict::NotObject(Some(value));
    }
    let schema = match schema.map(|schema| schema.check(&value, MAX_FAILURES)) {
        None | Some(SchemaCheck::Unchecked) => ArgumentSchema::Unchecked,
        Some(SchemaCheck::OverBudget) => ArgumentSchema::OverBudget,
        Some(SchemaCheck::Checked(failures)) => ArgumentSchema::Checked(failures),
    };
    ArgumentVerdict::Object {
        value: Some(value),
        schema,
    }
}

#[cfg(test)]
mod tests;

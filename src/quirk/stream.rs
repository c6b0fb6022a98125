//! Quirks on a streamed response, one SSE event at a time (Chat Completions here; a Responses or
//! Anthropic quirk rewrites an event's data through [`super::responses`] or
//! [`super::anthropic`], keeping its `event:` line).
//!
//! Input: the events of a stream in order ([`super::sse::Event`]), from a recording or a live
//! upstream. Output: for each event, the events to send instead (the same raw bytes when the
//! quirk leaves it alone, none to drop it, several to insert after it), and at the end any
//! events still owed. Nothing looks ahead: what a quirk needs from earlier events (a call's id,
//! name) is kept per call; a call's arguments are kept only by the quirks that re-send them
//! (`args-as-object-stream`, `args-schema-violation`), at most [`StreamQuirk::keeping_at_most`]
//! bytes per stream (`inject.max_hold` live): past it those quirks leave the rest of the
//! stream's arguments untouched and owe nothing for the calls cut ([`StreamQuirk::overflowed`]).
//! [`StreamQuirk::cut`] turns true when the quirk ends the stream.
//!
//! Worked example, `args-as-object-stream` on `{"ci` + `ty": "Paris"}`: both fragments go out with
//! `"arguments":""` (they keep their timing), and the finish chunk carries one more fragment
//! per call with `"arguments":{"city":"Paris"}`, the object a "helpful" server sends.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::catalogue::{Dialect, QuirkId};
use super::request::RequestContext;
use super::sse::{Data, Event};

/// What was seen of one call `(choice, index)` in the original stream.
#[derive(Debug, Default)]
struct Call {
    id: Option<Value>,
    name: Option<String>,
    fragments: u64,
    arguments: String,
    /// `name-late`: the name held back from the first fragment.
    held_name: Option<String>,
    /// Its arguments passed the stream's bound: no longer kept nor rewritten.
    arguments_dropped: bool,
}

/// One quirk's state over one stream.
#[derive(Debug)]
pub struct StreamQuirk {
    quirk: QuirkId,
    context: RequestContext,
    calls: BTreeMap<(u64, u64), Call>,
    changed: bool,
    cut: bool,
    cut_call: Option<(u64, u64)>,
    usage_seen: bool,
    error_sent: bool,
    last_chunk: Option<Value>,
    /// Argument bytes kept over all calls, and the most that may be.
    kept: usize,
    max_kept: usize,
    overflowed: bool,
}

impl StreamQuirk {
    pub fn new(quirk: QuirkId, context: RequestContext) -> StreamQuirk {
        StreamQuirk {
            quirk,
            context,
            calls: BTreeMap::new(),
            changed: false,
            cut: false,
            cut_call: None,
            usage_seen: false,
            error_sent: false,
            last_chunk: None,
            kept: 0,
            max_kept: super::inject::DEFAULT_MAX_HOLD,
            overflowed: false,
        }
    }

    /// Keeps at most `max` bytes of arguments over the whole stream.
    pub fn keeping_at_most(mut self, max: usize) -> StreamQuirk {
        self.max_kept = max;
        self
    }

    /// True once a call's arguments passed the bound and were dropped.
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// Whether this quirk re-sends a call's arguments at its finish (so must keep them).
    fn keeps_arguments(&self) -> bool {
        matches!(
            self.quirk,
            QuirkId::ArgsAsObjectStream | QuirkId::ArgsSchemaViolation
        )
    }

    pub fn quirk(&self) -> QuirkId {
        self.quirk
    }

    /// True once any event was changed, dropped or inserted.
    pub fn changed(&self) -> bool {
        self.changed
    }

    /// True once the quirk ended the stream: every later event is dropped.
    pub fn cut(&self) -> bool {
        self.cut
    }

    /// The events to send for `event`.
    pub fn event(&mut self, event: Event) -> Vec<Vec<u8>> {
        if self.cut {
            self.changed = true;
            return Vec::new();
        }
        let chat = self.quirk.dialect() == Dialect::Chat;
        let out = match &event.data {
            Data::Json(data) if !chat => self.other_dialect(data.clone(), &event),
            Data::Json(chunk) => self.chunk(chunk.clone(), &event),
            Data::Done if chat => self.done(&event),
            Data::Done | Data::Other => vec![event.raw.clone()],
        };
        // Ending the stream early is a change even when the event that ends it is unchanged.
        if out.len() != 1 || out[0] != event.raw || self.cut {
            self.changed = true;
        }
        out
    }

    /// Events owed at the end of the body (none for the quirks so far that insert before
    /// `[DONE]` when the stream has one).
    pub fn finish(&mut self) -> Vec<Vec<u8>> {
        if self.quirk == QuirkId::UsageChunkWithoutChoices
            && !self.usage_seen
            && !self.cut
            && let Some(usage) = self.usage_chunk()
        {
            self.changed = true;
            return vec![Event::json_bytes(&usage, "\n")];
        }
        Vec::new()
    }

    /// A Responses or Anthropic event: its data rewritten in place, its other lines kept.
    fn other_dialect(&mut self, mut data: Value, event: &Event) -> Vec<Vec<u8>> {
        let changed = super::rewriters::rewriter(self.quirk.dialect())
            .is_some_and(|rewriter| (rewriter.event)(self.quirk, &mut data));
        if changed {
            vec![event.with_data(&data)]
        } else {
            vec![event.raw.clone()]
        }
    }

    fn done(&mut self, event: &Event) -> Vec<Vec<u8>> {
        match self.quirk {
            QuirkId::DoneMissing => Vec::new(),
            QuirkId::DataAfterDone => {
                let mut out = vec![event.raw.clone()];
                if let Some(mut extra) = self.last_chunk.clone()
                    && let Some(object) = extra.as_object_mut()
                {
                    object.insert("choices".to_owned(), json!([]));
                    object.remove("usage");
                    out.push(Event::json_bytes(&extra, event.eol));
                }
                out
            }
            QuirkId::UsageChunkWithoutChoices if !self.usage_seen => {
                self.usage_seen = true;
                match self.usage_chunk() {
                    Some(usage) => vec![Event::json_bytes(&usage, event.eol), event.raw.clone()],
                    None => vec![event.raw.clone()],
                }
            }
            _ => vec![event.raw.clone()],
        }
    }

    fn usage_chunk(&self) -> Option<Value> {
        let mut usage = self.last_chunk.clone()?;
        let object = usage.as_object_mut()?;
        object.remove("choices");
        object.insert(
            "usage".to_owned(),
            json!({"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}),
        );
        Some(usage)
    }

    fn chunk(&mut self, mut chunk: Value, event: &Event) -> Vec<Vec<u8>> {
        // Not a chunk (an array, a number): nothing a quirk rewrites, passed through as it came.
        if !chunk.is_object() {
            return vec![event.raw.clone()];
        }
        let original = chunk.clone();
        self.last_chunk = Some(original.clone());
        let mut after: Vec<Value> = Vec::new();
        let is_usage = chunk.get("usage").is_some_and(|usage| !usage.is_null())
            && chunk
                .get("choices")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty);
        if is_usage && self.quirk == QuirkId::UsageChunkWithoutChoices {
            self.usage_seen = true;
            if let Some(object) = chunk.as_object_mut() {
                object.remove("choices");
            }
        }
        let mut carried_call = false;
        let choices = chunk.get_mut("choices").and_then(Value::as_array_mut);
        for (position, choice) in choices.into_iter().flatten().enumerate() {
            let index = choice
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(position as u64);
            carried_call |= self.rewrite_delta(index, choice);
            if let Some(extra) = self.rewrite_finish(index, choice) {
                let mut repeat = original.clone();
                if let Some(object) = repeat.as_object_mut() {
                    object.insert("choices".to_owned(), json!([extra]));
                    after.push(repeat);
                }
            }
        }
        if self.quirk == QuirkId::ErrorEventMidstream && carried_call && !self.error_sent {
            self.error_sent = true;
            after.push(json!({"error": {"message": "The server had an error while processing your request.", "type": "server_error", "param": null, "code": null}}));
        }
        let mut out = if chunk == original {
            vec![event.raw.clone()]
        } else {
            vec![Event::json_bytes(&chunk, event.eol)]
        };
        out.extend(
            after
                .iter()
                .map(|extra| Event::json_bytes(extra, event.eol)),
        );
        out
    }

    /// Rewrites one choice's delta; true when it carried a tool-call fragment or content.
    fn rewrite_delta(&mut self, choice: u64, value: &mut Value) -> bool {
        let quirk = self.quirk;
        let Some(delta) = value.get_mut("delta").and_then(Value::as_object_mut) else {
            return false;
        };
        if quirk == QuirkId::ContentEmptyString && delta.get("content") == Some(&Value::Null) {
            delta.insert("content".to_owned(), Value::from(""));
        }
        let has_content = delta
            .get("content")
            .and_then(Value::as_str)
            .is_some_and(|text| !text.is_empty());
        let Some(fragments) = delta.get_mut("tool_calls").and_then(Value::as_array_mut) else {
            return has_content;
        };
        let mut prose = String::new();
        let keeps = self.keeps_arguments();
        for (position, fragment) in fragments.iter_mut().enumerate() {
            let Some(fragment) = fragment.as_object_mut() else {
                continue;
            };
            let index = fragment
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(position as u64);
            let key = (choice, index);
            let call = self.calls.entry(key).or_default();
            call.fragments += 1;
            let first = call.fragments == 1;
            if first {
                call.id = fragment.get("id").cloned();
                call.name = function_field(fragment, "name").map(str::to_owned);
            }
            let args = function_field(fragment, "arguments")
                .unwrap_or_default()
                .to_owned();
            if keeps && !call.arguments_dropped {
                if self.kept + args.len() > self.max_kept {
                    call.arguments_dropped = true;
                    call.arguments = String::new();
                    self.overflowed = true;
                } else {
                    self.kept += args.len();
                    call.arguments.push_str(&args);
                }
            }
            if quirk == QuirkId::ToolChoiceIgnored {
                if let Some(name) = function_field(fragment, "name") {
                    prose.push_str(&format!("I would call {name} with "));
                }
                prose.push_str(&args);
                continue;
            }
            if quirk == QuirkId::CutAfterName {
                if self.cut_call.is_none() && function_field(fragment, "name").is_some() {
                    self.cut_call = Some(key);
                } else if self.cut_call == Some(key) && !args.is_empty() {
                    self.cut = true;
                }
            }
            rewrite_fragment(quirk, call, first, fragment, &args);
        }
        if quirk == QuirkId::ToolChoiceIgnored && self.context.call_required {
            delta.remove("tool_calls");
            delta.insert("content".to_owned(), Value::from(prose));
        } else if quirk == QuirkId::ToolCallsEmptyArray {
            delta.insert("tool_calls".to_owned(), json!([]));
        }
        true
    }

    /// Rewrites a choice's finish; returns a choice to send again in a repeated chunk.
    fn rewrite_finish(&mut self, choice: u64, value: &mut Value) -> Option<Value> {
        let reason = value
            .get("finish_reason")
            .cloned()
            .filter(|r| !r.is_null())?;
        let calls: Vec<(u64, &mut Call)> = self
            .calls
            .iter_mut()
            .filter(|((c, _), _)| *c == choice)
            .map(|((_, index), call)| (*index, call))
            .collect();
        let has_calls = !calls.is_empty();
        let mut owed: Vec<Value> = Vec::new();
        for (index, call) in calls {
            let arguments = match self.quirk {
                _ if call.arguments_dropped => None,
                QuirkId::ArgsAsObjectStream => serde_json::from_str::<Value>(&call.arguments).ok(),
                QuirkId::ArgsSchemaViolation => call
                    .name
                    .as_deref()
                    .and_then(|name| self.context.violate_schema(name, &call.arguments))
                    .map(Value::from),
                QuirkId::ArgsDoubleEncoded => Some(Value::from("\"")),
                _ => None,
            };
            if let Some(arguments) = arguments {
                owed.push(json!({"index": index, "function": {"arguments": arguments}}));
            }
            if let Some(name) = call.held_name.take() {
                owed.push(json!({"index": index, "function": {"name": name}}));
            }
        }
        // A choice with a finish reason is an object (`get` found the key); its delta may not be.
        let choice = value.as_object_mut()?;
        if !owed.is_empty() {
            let delta = choice.entry("delta").or_insert(Value::Null);
            if delta.is_null() {
                *delta = json!({});
            }
            if let Some(delta) = delta.as_object_mut() {
                delta.insert("tool_calls".to_owned(), Value::Array(owed));
            }
        }
        let is_tool_calls = reason == "tool_calls";
        match self.quirk {
            QuirkId::FinishStopWithCalls if has_calls && is_tool_calls => {
                choice.insert("finish_reason".to_owned(), Value::from("stop"));
            }
            QuirkId::ToolChoiceIgnored if self.context.call_required && is_tool_calls => {
                choice.insert("finish_reason".to_owned(), Value::from("stop"));
            }
            QuirkId::FinishMissing => {
                choice.insert("finish_reason".to_owned(), Value::Null);
            }
            QuirkId::FinishRepeated => {
                let mut again = choice.clone();
                again.insert("delta".to_owned(), json!({}));
                return Some(Value::Object(again));
            }
            _ => {}
        }
        None
    }
}

/// The per-fragment part of a quirk: the fragment is rewritten in place.
fn rewrite_fragment(
    quirk: QuirkId,
    call: &mut Call,
    first: bool,
    fragment: &mut Map<String, Value>,
    args: &str,
) {
    let function = fragment
        .entry("function")
        .or_insert_with(|| json!({}))
        .as_object_mut();
    let Some(function) = function else { return };
    match quirk {
        QuirkId::ArgsAsObjectStream | QuirkId::ArgsSchemaViolation
            if !args.is_empty() && !call.arguments_dropped =>
        {
            function.insert("arguments".to_owned(), Value::from(""));
        }
        QuirkId::ArgsDoubleEncoded => {
            let escaped = Value::from(args).to_string();
            let inner = &escaped[1..escaped.len() - 1];
            let text = if first {
                format!("\"{inner}")
            } else {
                inner.to_owned()
            };
            function.insert("arguments".to_owned(), Value::from(text));
        }
        QuirkId::ArgsInvalidJson if args.contains('"') => {
            function.insert("arguments".to_owned(), Value::from(args.replace('"', "'")));
        }
        QuirkId::NameOnEveryChunk if !first && !function.contains_key("name") => {
            if let Some(name) = &call.name {
                function.insert("name".to_owned(), Value::from(name.clone()));
            }
        }
        QuirkId::NameLate if first => {
            call.held_name = function
                .remove("name")
                .and_then(|n| n.as_str().map(str::to_owned));
        }
        QuirkId::NameLate => {
            if let Some(name) = call.held_name.take() {
                function.insert("name".to_owned(), Value::from(name));
            }
        }
        QuirkId::NameUndeclared => {
            if let Some(name) = function.get("name").and_then(Value::as_str) {
                let renamed = format!("functions.{name}");
                function.insert("name".to_owned(), Value::from(renamed));
            }
        }
        _ => {}
    }
    match quirk {
        QuirkId::IndexAllZero => {
            fragment.insert("index".to_owned(), Value::from(0));
        }
        QuirkId::IndexMissing => {
            fragment.remove("index");
        }
        QuirkId::IdOnEveryChunk if !first && !fragment.contains_key("id") => {
            if let Some(id) = call.id.clone() {
                fragment.insert("id".to_owned(), id);
            }
        }
        QuirkId::IdChanges if !first => {
            if let Some(id) = call.id.as_ref().and_then(Value::as_str) {
                let changed = format!("{id}_{}", call.fragments);
                fragment.insert("id".to_owned(), Value::from(changed));
            }
        }
        _ => {}
    }
}

/// A string field of a fragment's `function` object; `None` when the fragment has none (a
/// custom tool call's fragment carries `custom` instead: indexing would panic).
fn function_field<'a>(fragment: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    fragment.get("function")?.get(key)?.as_str()
}

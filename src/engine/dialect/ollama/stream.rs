//! An Ollama NDJSON stream, one line at a time: each line one JSON object (`done: false` chunks
//! carrying `message.content` and whole `tool_calls`, then one `done: true` line with
//! `done_reason`, timings and counts), gathered into one [`Turn`] for the turn rules.
//!
//! Input: each line's text as the NDJSON framer hands it out (a blank line as empty text), with
//! the feed call that completed it. Output: the `ollama.stream.*` rules judged line by line
//! (not one JSON object, an `error` line, a line after `done`, calls on the `done` line, a call
//! repeated across lines), the gathered turn, its `usage` (the `done` line's counts). Bounded:
//! what the turn keeps is counted ([`StreamState::held`], as `engine::weigh` counts) and the
//! exchange stops past `max_reassembled`.

use std::collections::BTreeSet;

use serde_json::Value;

use super::super::common;
use super::turn::{self, Call, Turn};
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;
use crate::engine::violation::{Stage, ViolationSink};
use crate::engine::weigh;

/// The `done` line's members the report shows as `usage`.
const USAGE_KEYS: [&str; 6] = [
    "total_duration",
    "load_duration",
    "prompt_eval_count",
    "prompt_eval_duration",
    "eval_count",
    "eval_duration",
];

/// A `done` line's (or a buffered body's) timings and counts, as the report's `usage`.
pub fn usage(document: &Value) -> Option<Value> {
    let usage: serde_json::Map<String, Value> = USAGE_KEYS
        .iter()
        .filter_map(|key| Some(((*key).to_owned(), document.get(*key)?.clone())))
        .collect();
    (!usage.is_empty()).then_some(Value::Object(usage))
}

/// A stream's state.
#[derive(Debug)]
pub struct StreamState {
    pub turn: Turn,
    /// Lines handed in (blank ones too).
    pub lines: u64,
    /// The feed call of the `done: true` line.
    pub done_at: Option<u64>,
    /// An `{"error": ...}` line came.
    pub errored: bool,
    pub usage: Option<Value>,
    /// Call ids and call signatures (name, arguments, index) received in earlier lines.
    seen_ids: BTreeSet<String>,
    seen_calls: BTreeSet<String>,
    /// What the gathered turn holds, as `engine::weigh` counts.
    pub held: usize,
    /// The most one line may bring the turn to (the exchange's `max_reassembled`): a line may
    /// carry thousands of calls, and past it the rest are not kept (the exchange then stops).
    pub bound: usize,
}

impl Default for StreamState {
    fn default() -> StreamState {
        StreamState {
            turn: Turn::default(),
            lines: 0,
            done_at: None,
            errored: false,
            usage: None,
            seen_ids: BTreeSet::new(),
            seen_calls: BTreeSet::new(),
            held: 0,
            bound: usize::MAX,
        }
    }
}

impl StreamState {
    pub fn on_line(&mut self, data: &str, seq: u64, sink: &mut ViolationSink) {
        let mut judge = Judge::new(sink, Stage::Fragment).seq(Some(seq));
        let Some(value) = self.parse_line(data, &mut judge) else {
            return;
        };
        let read = Turn::read(&value, "", Some(seq));
        let done = value.get("done").and_then(Value::as_bool) == Some(true);
        if done && !read.calls.is_empty() {
            let detail =
                "tool_calls on the done:true line (clients that stop reading at done lose them)";
            judge.flag(
                RuleId::OllamaStreamToolCallsOnDone,
                "/message/tool_calls",
                detail,
            );
        }
        if let Some(text) = read.content {
            self.held += text.len();
            self.turn
                .content
                .get_or_insert_with(String::new)
                .push_str(&text);
        }
        // A line's calls are compared with earlier lines' only: identical calls in one line
        // are parallel calls (ids, when sent twice in one line, are the turn's duplicate).
        let mut line_ids = Vec::new();
        let mut line_calls = Vec::new();
        for call in read.calls {
            if self.held > self.bound {
                break;
            }
            self.take_call(call, (&mut line_ids, &mut line_calls), judge.sink());
        }
        self.seen_ids.extend(line_ids);
        self.seen_calls.extend(line_calls);
        if done && self.done_at.is_none() {
            self.done_at = Some(seq);
            self.turn.done_reason = read.done_reason;
            self.turn.done_site = read.done_site;
            self.usage = usage(&value);
        }
    }

    /// A line as one JSON object, or `None` (judged) when it is blank, not one, or an error line.
    fn parse_line(&mut self, data: &str, judge: &mut Judge<'_>) -> Option<Value> {
        let line = self.lines;
        self.lines += 1;
        let not_json = RuleId::OllamaStreamLineNotJson;
        if data.is_empty() {
            let detail =
                "a blank line in the NDJSON stream (the ollama client's json.loads raises on it)";
            judge.flag(not_json, "", detail);
            return None;
        }
        let value = match serde_json::from_str::<Value>(data) {
            Ok(value @ Value::Object(_)) => value,
            Ok(_) | Err(_) => {
                let shown = common::preview(&Value::String(data.to_owned()));
                judge.flag(
                    not_json,
                    "",
                    format!("line {line} is not one JSON object: {shown}"),
                );
                return None;
            }
        };
        if self.done_at.is_some() {
            let detail = format!("line {line} came after the done:true line");
            judge.flag(RuleId::OllamaStreamAfterDone, "", detail);
        }
        if let Some(error) = value.get("error") {
            self.errored = true;
            let detail = format!("an error line after the 200: {}", common::preview(error));
            judge.flag(RuleId::OllamaStreamErrorLine, "", detail);
            return None;
        }
        Some(value)
    }

    /// Keeps a call, unless the same call (its id, or its name, arguments and index) came in
    /// an earlier line.
    fn take_call(
        &mut self,
        mut call: Call,
        (line_ids, line_calls): (&mut Vec<String>, &mut Vec<String>),
        sink: &mut ViolationSink,
    ) {
        // Judged on its line: the client's parser refuses the line itself.
        let mut root = Judge::new(sink, Stage::Fragment);
        turn::judge_arguments(&call, &mut call.judge(&mut root));
        call.arguments_judged = true;
        let signature = call.signature();
        let repeated_id = call
            .id
            .as_ref()
            .is_some_and(|id| self.seen_ids.contains(id));
        if repeated_id || self.seen_calls.contains(&signature) {
            let what = match &call.id {
                Some(id) if repeated_id => format!("the call id {id:?}"),
                _ => format!("the call {:?} with the same arguments and index", call.name),
            };
            let detail =
                format!("{what} came again: a client that accumulates calls runs it twice");
            let mut judge = root.seq(call.seq);
            judge.flag(RuleId::OllamaStreamToolCallRepeated, &call.site, detail);
            return;
        }
        if let Some(id) = &call.id {
            self.held += id.len();
            line_ids.push(id.clone());
        }
        self.held += weigh::ENTRY + signature.len() * 2 + weigh::maybe(call.arguments.as_ref());
        line_calls.push(signature);
        self.turn.calls.push(call);
    }
}

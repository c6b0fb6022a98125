//! One assistant turn of Ollama's `/api/chat`, read from a buffered body or gathered from a
//! stream's lines, and the rules on it (`ollama.response.*`): shared by both readings.
//!
//! Input: `message.content`, `message.tool_calls[]` (`{id?, function: {index?, name,
//! arguments}}`, `arguments` a JSON object: a string is the violation here, the opposite of
//! OpenAI's), `done_reason`. Output: violations, and the turn's outcome for the report.

use std::collections::BTreeSet;

use serde_json::Value;

use super::super::common;
use super::request::OllamaRequest;
use crate::engine::judge::Judge;
use crate::engine::report::{ChoiceOutcome, ToolCallOutcome};
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, SchemaCheck};
use crate::engine::violation::{Site, Stage, ViolationSink};

/// Schema failures listed per call.
const MAX_SCHEMA_ERRORS: usize = 4;

/// The `done_reason` values Ollama has (`llm/server.go`, `server/routes.go`).
pub const DONE_REASONS: [&str; 4] = ["stop", "length", "load", "unload"];

/// One tool call as received.
#[derive(Debug, Clone, Default)]
pub struct Call {
    pub id: Option<String>,
    /// `function.index`, when an integer.
    pub index: Option<u64>,
    /// `function.name`, when a string.
    pub name: Option<String>,
    /// `function.arguments` exactly as received (`None`: absent).
    pub arguments: Option<Value>,
    /// JSON pointer to the call (`/message/tool_calls/{i}`, after a stream line's `/lines/{n}`).
    pub site: String,
    /// The feed call that completed the call's line, on a stream.
    pub seq: Option<u64>,
    /// Its `arguments` shape was judged when its line came (a stream judges it there, so that
    /// enforce mode refuses the line before the client's parser meets it).
    pub arguments_judged: bool,
}

impl Call {
    pub fn read(call: &Value, site: String, seq: Option<u64>) -> Call {
        let function = call.get("function");
        Call {
            id: call.get("id").and_then(Value::as_str).map(str::to_owned),
            index: function
                .and_then(|f| f.get("index"))
                .and_then(Value::as_u64),
            name: function
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            arguments: function.and_then(|f| f.get("arguments")).cloned(),
            site,
            seq,
            arguments_judged: false,
        }
    }

    /// Identical name, arguments and index: a repeat of the same call.
    pub fn signature(&self) -> String {
        format!(
            "{:?}\u{0}{}\u{0}{:?}",
            self.name,
            self.arguments
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_default(),
            self.index
        )
    }

    /// `judge` narrowed to this call (the turn's only choice, the line that brought it).
    pub fn judge<'j>(&self, judge: &'j mut Judge<'_>) -> Judge<'j> {
        judge.under(&self.site).choice(Some(0)).seq(self.seq)
    }
}

/// An assistant turn.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    pub content: Option<String>,
    pub calls: Vec<Call>,
    pub done_reason: Option<String>,
    /// Where `done_reason` was (its JSON pointer).
    pub done_site: String,
}

/// What the turn rules compare against.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub request: &'a OllamaRequest,
    pub schemas: Option<&'a CompiledTools>,
}

impl Turn {
    /// Reads a buffered body (or one stream line) as a turn; calls' sites start at `base`.
    pub fn read(document: &Value, base: &str, seq: Option<u64>) -> Turn {
        let message = document.get("message");
        let content = message
            .and_then(|m| m.get("content"))
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
            .map(str::to_owned);
        let calls = message
            .and_then(|m| m.get("tool_calls"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, call)| Call::read(call, format!("{base}/message/tool_calls/{i}"), seq))
            .collect();
        Turn {
            content,
            calls,
            done_reason: document
                .get("done_reason")
                .and_then(Value::as_str)
                .map(str::to_owned),
            done_site: format!("{base}/done_reason"),
        }
    }

    pub fn outcome(&self) -> ChoiceOutcome {
        ChoiceOutcome {
            index: 0,
            content: self.content.clone(),
            tool_calls: self
                .calls
                .iter()
                .zip(0u32..)
                .map(|(call, position)| ToolCallOutcome {
                    index: call
                        .index
                        .and_then(|i| u32::try_from(i).ok())
                        .unwrap_or(position),
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                })
                .collect(),
            finish_reason: self.done_reason.clone(),
            finish_reasons: self.done_reason.iter().cloned().collect(),
        }
    }
}

/// The `ollama.response.*` rules on a whole turn.
pub fn judge(turn: &Turn, cx: Context<'_>, sink: &mut ViolationSink) {
    let mut judge = Judge::new(sink, Stage::Complete);
    let mut ids = BTreeSet::new();
    for call in &turn.calls {
        let mut judge = call.judge(&mut judge);
        judge_call(call, cx, &mut judge);
        if let Some(id) = &call.id
            && !ids.insert(id.as_str())
        {
            let detail = format!("two calls of the turn share the id {id:?}");
            judge.flag(RuleId::OllamaResponseToolCallIdDuplicate, "/id", detail);
        }
    }
    let mut judge = judge.choice(Some(0));
    judge_indexes(turn, &mut judge);
    judge_content(turn, cx, &mut judge);
    judge_done_reason(turn, &mut judge);
}

/// `ollama.response.arguments_not_object` when the call's `arguments` is not an object
/// (`judge`: at the call, in a stream's line or the whole turn).
pub fn judge_arguments(call: &Call, judge: &mut Judge<'_>) {
    if let Some(Value::Object(_)) = &call.arguments {
        return;
    }
    let shown = call
        .arguments
        .as_ref()
        .map(common::preview)
        .unwrap_or_else(|| "nothing".into());
    judge.flag(
        RuleId::OllamaResponseArgumentsNotObject,
        "/function/arguments",
        format!(
            "arguments must be a JSON object, got {shown} (the ollama client's Mapping \
             refuses it; replayed, Ollama answers 400)"
        ),
    );
}

fn judge_call(call: &Call, cx: Context<'_>, judge: &mut Judge<'_>) {
    if !call.arguments_judged {
        judge_arguments(call, judge);
    }
    let Some(name) = call.name.as_deref().filter(|name| !name.is_empty()) else {
        let detail = "a tool call without a function name (a call split across lines?)";
        judge.flag(
            RuleId::OllamaResponseToolNameMissing,
            "/function/name",
            detail,
        );
        return;
    };
    if cx.request.facts.parsed && !cx.request.declared.contains(name) {
        let detail = format!("the request declares no tool {name:?}");
        judge.flag(
            RuleId::OllamaResponseToolCallUndeclared,
            "/function/name",
            detail,
        );
        return;
    }
    if let Some(arguments @ Value::Object(_)) = &call.arguments {
        check_schema(name, arguments, cx, judge);
    }
}

fn check_schema(name: &str, arguments: &Value, cx: Context<'_>, judge: &mut Judge<'_>) {
    let Some(schema) = cx.schemas.and_then(|s| s.get(name)).map(|t| &t.schema) else {
        return;
    };
    let failures = match schema.check(arguments, MAX_SCHEMA_ERRORS) {
        SchemaCheck::Unchecked => return,
        SchemaCheck::OverBudget => return judge.sink().schema_budget_hit(),
        SchemaCheck::Checked(failures) => failures,
    };
    for failure in failures {
        let mut site = judge.site("/function/arguments");
        site.path.push_str(&failure.instance_path);
        site.schema_path = Some(failure.schema_path);
        let rule = RuleId::OllamaResponseArgsSchemaViolation;
        judge.flag_site(true, rule, site, failure.message);
    }
}

/// `function.index` repeated or gapped, among the calls that carry one.
fn judge_indexes(turn: &Turn, judge: &mut Judge<'_>) {
    let indexes: Vec<u64> = turn.calls.iter().filter_map(|call| call.index).collect();
    if indexes.is_empty() {
        return;
    }
    let mut sorted = indexes.clone();
    sorted.sort_unstable();
    let expected: Vec<u64> = (0..sorted.len() as u64).collect();
    if sorted != expected {
        let detail = format!(
            "the turn's function.index values are {indexes:?}, not 0..{}",
            sorted.len()
        );
        let rule = RuleId::OllamaResponseToolIndexInconsistent;
        match turn.calls.first() {
            Some(first) => first.judge(judge).flag(rule, "/function/index", detail),
            None => judge.flag_site(true, rule, Site::at(""), detail),
        }
    }
}

/// A call written as JSON text in `content` while tools were offered and none was called.
fn judge_content(turn: &Turn, cx: Context<'_>, judge: &mut Judge<'_>) {
    if !cx.request.declares || !turn.calls.is_empty() {
        return;
    }
    let Some(text) = turn.content.as_deref() else {
        return;
    };
    let parsed: Option<Value> = serde_json::from_str(text.trim()).ok();
    let looks_like_call = parsed.as_ref().is_some_and(|value| {
        value.get("name").is_some_and(Value::is_string)
            && (value.get("arguments").is_some() || value.get("parameters").is_some())
    });
    if looks_like_call {
        let shown = common::preview(&Value::String(text.to_owned()));
        let detail =
            format!("tools were offered, no tool_calls came, and the content is a call: {shown}");
        judge.flag(
            RuleId::OllamaResponseToolCallInContent,
            "/message/content",
            detail,
        );
    }
}

fn judge_done_reason(turn: &Turn, judge: &mut Judge<'_>) {
    let Some(reason) = turn.done_reason.as_deref() else {
        return;
    };
    let at = &turn.done_site;
    if !DONE_REASONS.contains(&reason) {
        let detail =
            format!("done_reason {reason:?} is none of Ollama's (stop, length, load, unload)");
        judge.flag(RuleId::OllamaResponseDoneReasonUnknown, at, detail);
    } else if reason == "length" && !turn.calls.is_empty() {
        let detail = "done_reason \"length\" on a turn with tool calls: they may be cut short";
        judge.flag(RuleId::OllamaResponseLengthWithToolCalls, at, detail);
    }
}

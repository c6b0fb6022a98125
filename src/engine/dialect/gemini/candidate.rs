//! One Gemini candidate as the rules see it, whether read from a buffered body or reassembled
//! from a stream, and the `gemini.response.*` rules judged on it.
//!
//! Input: a [`Candidate`] (its text, its `functionCall`s in order, its finish reason) and what
//! the request declared ([`Context`]). Output: violations into the sink and the candidate's
//! [`ChoiceOutcome`] (text, calls numbered in order, finish reason). `STOP` on a candidate with
//! calls is the documented normal: Gemini has no tool-call finish reason.

use std::collections::HashSet;

use serde_json::Value;

use super::request::{GeminiRequest, Mode};
use crate::engine::dialect::common::preview;
use crate::engine::judge::Judge;
use crate::engine::report::{ChoiceOutcome, ToolCallOutcome};
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, SchemaCheck};
use crate::engine::violation::{Stage, ViolationSink};

/// Schema failures listed per call.
const MAX_SCHEMA_ERRORS: usize = 8;

/// `FinishReason` as google-genai 3.6.1 has it (24 values).
pub const FINISH_REASONS: [&str; 24] = [
    "FINISH_REASON_UNSPECIFIED",
    "STOP",
    "MAX_TOKENS",
    "SAFETY",
    "RECITATION",
    "LANGUAGE",
    "OTHER",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "MALFORMED_FUNCTION_CALL",
    "IMAGE_SAFETY",
    "UNEXPECTED_TOOL_CALL",
    "TOO_MANY_TOOL_CALLS",
    "IMAGE_PROHIBITED_CONTENT",
    "NO_IMAGE",
    "IMAGE_RECITATION",
    "IMAGE_OTHER",
    "MISSING_THOUGHT_SIGNATURE",
    "MALFORMED_RESPONSE",
    "ESCALATION",
    "PUP_LIMITED_DISABLED",
    "CONTINUATION",
    "MODEL_ARMOR",
];

/// The finish reasons that say the tool-calling turn failed.
const FAILED_CALL_REASONS: [&str; 3] = [
    "MALFORMED_FUNCTION_CALL",
    "UNEXPECTED_TOOL_CALL",
    "TOO_MANY_TOOL_CALLS",
];

/// Part members that are server-side tool use, never a client call.
pub const SERVER_TOOL_PARTS: [&str; 4] = [
    "toolCall",
    "toolResponse",
    "executableCode",
    "codeExecutionResult",
];

/// One `functionCall` part as received.
#[derive(Debug, Clone, Default)]
pub struct Call {
    /// The part's position in the (reassembled) candidate's parts.
    pub part: u32,
    /// `functionCall.id`, when a string.
    pub id: Option<String>,
    /// `functionCall.name` as sent (any JSON type), `None` when absent.
    pub name: Option<Value>,
    /// `functionCall.args` as sent, `None` when absent (an empty object).
    pub args: Option<Value>,
    /// The stream event that brought it (the latest, for a call re-sent).
    pub seq: Option<u64>,
}

impl Call {
    /// Reads a `functionCall` value (anything: a non-object has no members).
    pub fn read(call: &Value, part: u32, seq: Option<u64>) -> Call {
        Call {
            part,
            id: call.get("id").and_then(Value::as_str).map(str::to_owned),
            name: call.get("name").cloned(),
            args: call.get("args").cloned(),
            seq,
        }
    }

    /// The name, when a non-empty string.
    pub fn name(&self) -> Option<&str> {
        self.name
            .as_ref()
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty())
    }
}

/// One candidate: what its parts said and how it finished.
#[derive(Debug, Clone, Default)]
pub struct Candidate {
    pub index: u32,
    /// The text of its non-thought `text` parts, joined; `None` when it had none.
    pub text: Option<String>,
    pub calls: Vec<Call>,
    /// The finish reason the rules judge (a stream's first), as sent, with the event that
    /// carried it.
    pub finish: Option<(Value, Option<u64>)>,
    /// Every finish reason received, in order.
    pub finish_reasons: Vec<String>,
}

impl Candidate {
    /// The candidate's outcome for the report: calls numbered in order.
    pub fn outcome(&self) -> ChoiceOutcome {
        ChoiceOutcome {
            index: self.index,
            content: self.text.clone(),
            tool_calls: self
                .calls
                .iter()
                .zip(0u32..)
                .map(|(call, ordinal)| ToolCallOutcome {
                    index: ordinal,
                    id: call.id.clone(),
                    name: call.name().map(str::to_owned),
                    arguments: call.args.clone(),
                })
                .collect(),
            finish_reason: self.finish_reasons.last().cloned(),
            finish_reasons: self.finish_reasons.clone(),
        }
    }

    /// The finish reason, when a string.
    fn finish_reason(&self) -> Option<&str> {
        self.finish.as_ref().and_then(|(reason, _)| reason.as_str())
    }
}

/// A finish reason as the report lists it: a string as it is, anything else as JSON.
pub fn reason_text(reason: &Value) -> String {
    match reason {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// What the candidate rules compare against.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub request: &'a GeminiRequest,
    pub schemas: Option<&'a CompiledTools>,
}

/// Judges one candidate (`base`: its pointer, `/candidates/{n}`).
pub fn judge(candidate: &Candidate, base: &str, cx: Context<'_>, sink: &mut ViolationSink) {
    let mut judge = Judge::new(sink, Stage::Complete).choice(Some(candidate.index));
    let mut judge = judge.under(base);
    let mut seen_ids: HashSet<&str> = HashSet::new();
    for (call, ordinal) in candidate.calls.iter().zip(0u32..) {
        let mut judge = judge
            .under(format_args!("/content/parts/{}/functionCall", call.part))
            .tool_call(Some(ordinal))
            .seq(call.seq);
        if let Some(id) = call.id.as_deref()
            && !seen_ids.insert(id)
        {
            let detail = format!("two calls of one answer share the id {id:?}");
            judge.flag(RuleId::GeminiResponseFunctionCallIdDuplicate, "/id", detail);
        }
        judge_call(call, cx, &mut judge);
    }
    let finish_seq = candidate.finish.as_ref().and_then(|(_, seq)| *seq);
    judge_finish(
        candidate,
        cx,
        &mut judge.under("/finishReason").seq(finish_seq),
    );
}

/// The rules on the candidate's finish reason (`judge`: at `finishReason`).
fn judge_finish(candidate: &Candidate, cx: Context<'_>, judge: &mut Judge<'_>) {
    let calls = candidate.calls.len();
    let Some(reason) = candidate.finish.as_ref().map(|(reason, _)| reason) else {
        return;
    };
    let unknown = RuleId::GeminiResponseFinishReasonUnknown;
    match reason.as_str() {
        Some(text) if FINISH_REASONS.contains(&text) => {}
        Some(text) if FINISH_REASONS.contains(&text.to_ascii_uppercase().as_str()) => {
            let upper = text.to_ascii_uppercase();
            judge.warn(unknown, "", format!("finishReason {text:?} is a lowercase spelling of {upper:?}: google-genai maps it, other readers may not"));
        }
        _ => {
            let shown = preview(reason);
            judge.flag(unknown, "", format!("finishReason {shown} is not a Gemini FinishReason (a tool-call turn finishes STOP)"));
        }
    }
    let reason = candidate.finish_reason().map(str::to_ascii_uppercase);
    let reason = reason.as_deref();
    if reason == Some("MALFORMED_FUNCTION_CALL") && calls > 0 {
        let detail = format!(
            "MALFORMED_FUNCTION_CALL with {calls} functionCall part(s): they must not be run"
        );
        judge.flag(RuleId::GeminiResponseMalformedWithCall, "", detail);
    }
    if let Some(reason) = reason.filter(|r| FAILED_CALL_REASONS.contains(r)) {
        let detail =
            format!("finishReason {reason}: the tool-calling turn failed (not an empty answer)");
        judge.flag(RuleId::GeminiResponseMalformedFunctionCall, "", detail);
    }
    if reason == Some("MAX_TOKENS") && calls > 0 {
        let detail = "MAX_TOKENS with a functionCall: the call may be incomplete";
        judge.flag(RuleId::GeminiResponseMaxTokensWithCall, "", detail);
    }
    if reason == Some("STOP") && calls == 0 && cx.request.mode == Mode::Any && cx.request.declares {
        let detail =
            "mode ANY asks for function calls only, and the candidate finished STOP without one";
        judge.flag(RuleId::GeminiResponseNoCallUnderModeAny, "", detail);
    }
}

/// The rules on one call (`judge`: at its `functionCall`).
fn judge_call(call: &Call, cx: Context<'_>, judge: &mut Judge<'_>) {
    let request = cx.request;
    if let Some(args) = call.args.as_ref().filter(|args| !args.is_object()) {
        let kind = match args {
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            _ => "a number",
        };
        let detail = format!(
            "functionCall.args is {kind}, not a JSON object: {}",
            preview(args)
        );
        judge.flag(
            RuleId::GeminiResponseFunctionCallArgsNotObject,
            "/args",
            detail,
        );
    }
    let Some(name) = call.name() else {
        let shown = call
            .name
            .as_ref()
            .map_or_else(|| "nothing".to_owned(), preview);
        let detail = format!("a functionCall needs a non-empty string name, got {shown}");
        judge.flag(
            RuleId::GeminiResponseFunctionCallNameMissing,
            "/name",
            detail,
        );
        return;
    };
    judge_name(name, request, judge);
    let empty = Value::Object(Default::default());
    let args = match &call.args {
        None => &empty,
        Some(args @ Value::Object(_)) => args,
        Some(_) => return,
    };
    check_schema(name, args, cx, judge);
}

/// The rules on a call's name (a non-empty string) against what the request declared and
/// allowed.
fn judge_name(name: &str, request: &GeminiRequest, judge: &mut Judge<'_>) {
    if request.mode == Mode::None {
        let detail = format!("a call to {name:?} under mode NONE (as if nothing were declared)");
        judge.flag(
            RuleId::GeminiResponseFunctionCallUnderModeNone,
            "/name",
            detail,
        );
    }
    // A request that declares no function may still have some: in its `cachedContent`.
    if request.declares && !request.declared.contains_key(name) {
        let detail = format!("{name:?} is not among the request's functionDeclarations");
        judge.flag(
            RuleId::GeminiResponseFunctionCallUndeclared,
            "/name",
            detail,
        );
        if let Some((_, suffix)) = name.rsplit_once('.')
            && request.declared.contains_key(suffix)
        {
            let detail = format!("{name:?} is the declared {suffix:?} with a namespace");
            judge.flag(
                RuleId::GeminiResponseFunctionCallNamespaced,
                "/name",
                detail,
            );
        }
    }
    if matches!(request.mode, Mode::Any | Mode::Validated)
        && let Some(allowed) = request.allowed.as_ref().filter(|a| !a.is_empty())
        && !allowed.iter().any(|a| a == name)
    {
        let detail = format!("{name:?} is outside allowedFunctionNames {allowed:?}");
        judge.flag(
            RuleId::GeminiResponseFunctionCallNotAllowed,
            "/name",
            detail,
        );
    }
}

fn check_schema(name: &str, args: &Value, cx: Context<'_>, judge: &mut Judge<'_>) {
    let Some(schema) = cx.schemas.and_then(|s| s.get(name)).map(|t| &t.schema) else {
        return;
    };
    let failures = match schema.check(args, MAX_SCHEMA_ERRORS) {
        SchemaCheck::Unchecked => return,
        SchemaCheck::OverBudget => return judge.sink().schema_budget_hit(),
        SchemaCheck::Checked(failures) => failures,
    };
    let validated = cx.request.mode == Mode::Validated;
    for failure in failures {
        let mut site = judge.site("/args");
        site.path.push_str(&failure.instance_path);
        site.schema_path = Some(failure.schema_path);
        let rule = RuleId::GeminiResponseArgsSchemaViolation;
        judge.flag_site(validated, rule, site, failure.message);
    }
}

/// Reads a buffered body's candidate (at position `position` of `candidates[]`).
pub fn read_buffered(candidate: &Value, position: usize) -> Candidate {
    let index = candidate
        .get("index")
        .and_then(Value::as_u64)
        .and_then(|i| u32::try_from(i).ok())
        .unwrap_or(u32::try_from(position).unwrap_or(u32::MAX));
    let parts = candidate
        .get("content")
        .and_then(|c| c.get("parts"))
        .and_then(Value::as_array);
    let mut read = Candidate {
        index,
        ..Candidate::default()
    };
    for (part, at) in parts.into_iter().flatten().zip(0u32..) {
        if let Some(call) = part.get("functionCall") {
            read.calls.push(Call::read(call, at, None));
        } else if let Some(text) = visible_text(part) {
            read.text.get_or_insert_with(String::new).push_str(text);
        }
    }
    if let Some(reason) = candidate.get("finishReason").filter(|r| !r.is_null()) {
        read.finish_reasons.push(reason_text(reason));
        read.finish = Some((reason.clone(), None));
    }
    read
}

/// A part's text, unless it is a thought summary.
pub fn visible_text(part: &Value) -> Option<&str> {
    if part.get("thought").and_then(Value::as_bool) == Some(true) {
        return None;
    }
    part.get("text").and_then(Value::as_str)
}

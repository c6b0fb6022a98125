//! The JSON-RPC envelope of one message (the reference's §4.1, state M).
//!
//! Input: one parsed message (a request body, an element of a batch, a JSON response body, one
//! SSE event's data). Output: `mcp.jsonrpc.*` and `mcp.progress.token_invalid` violations, and
//! the message's kind.

use serde_json::{Map, Value};

use crate::engine::judge::Judge;
use crate::engine::mcp_observation::{MessageKind, kind_of};
use crate::engine::rules::RuleId;

/// A message that is neither a request, a notification nor a response.
fn invalid(object: &Map<String, Value>, judge: &mut Judge<'_>) {
    let neither = !object.contains_key("method") && object.contains_key("id");
    let (rule, detail) = match neither {
        true => (
            RuleId::McpJsonrpcResultAndError,
            "a response with neither `result` nor `error`".to_owned(),
        ),
        false => (
            RuleId::McpJsonrpcShape,
            match object.get("method") {
                Some(method) => format!("`method` is not a string: {}", shown(method)),
                None => "neither a request, a notification nor a response".to_owned(),
            },
        ),
    };
    judge.flag(rule, "", detail);
}

/// A request's id (and that a notification has none) and its progress token.
fn request(object: &Map<String, Value>, judge: &mut Judge<'_>) {
    let id = object.get("id").unwrap_or(&Value::Null);
    let method = object.get("method").and_then(Value::as_str).unwrap_or("");
    if method.starts_with("notifications/") {
        judge.flag(
            RuleId::McpJsonrpcNotificationWithId,
            "/id",
            format!("notification {method:?} carries an id: {}", shown(id)),
        );
    } else if !valid_id(id) {
        judge.flag(
            RuleId::McpJsonrpcRequestIdInvalid,
            "/id",
            format!("a request id is a string or an integer, got {}", shown(id)),
        );
    }
    progress_token(object.get("params"), "/params/_meta/progressToken", judge);
}

/// A JSON-RPC id MCP allows: a string or an integer (never `null`, a fraction, a boolean).
pub fn valid_id(id: &Value) -> bool {
    match id {
        Value::String(_) => true,
        Value::Number(number) => number.is_i64() || number.is_u64(),
        _ => false,
    }
}

/// A short form of a value for a detail.
pub fn shown(value: &Value) -> String {
    crate::engine::dialect::common::preview(value)
}

/// Judges one message's envelope; returns its kind.
pub fn judge(message: &Value, judge: &mut Judge<'_>) -> MessageKind {
    let Some(object) = message.as_object() else {
        judge.flag(
            RuleId::McpJsonrpcShape,
            "",
            format!("a JSON-RPC message is an object, got {}", shown(message)),
        );
        return MessageKind::Invalid;
    };
    match object.get("jsonrpc") {
        Some(Value::String(version)) if version == "2.0" => {}
        other => judge.flag(
            RuleId::McpJsonrpcVersion,
            "/jsonrpc",
            format!(
                "`jsonrpc` must be \"2.0\", got {}",
                other.map_or_else(|| "nothing".to_owned(), shown)
            ),
        ),
    }
    let kind = kind_of(Some(object));
    match kind {
        MessageKind::Invalid => invalid(object, judge),
        MessageKind::Request => request(object, judge),
        MessageKind::Notification => {
            if object.get("method").and_then(Value::as_str) == Some("notifications/progress") {
                let params = object.get("params");
                let token = params.and_then(|p| p.get("progressToken"));
                judge_token(token, "/params/progressToken", judge);
            }
        }
        MessageKind::Result => {
            if object.contains_key("error") {
                judge.flag(
                    RuleId::McpJsonrpcResultAndError,
                    "",
                    "a response with both `result` and `error`".to_owned(),
                );
            }
            let result = object.get("result").unwrap_or(&Value::Null);
            if !result.is_object() {
                judge.flag(
                    RuleId::McpJsonrpcResultNotObject,
                    "/result",
                    format!("`result` must be an object, got {}", shown(result)),
                );
            }
        }
        MessageKind::Error => error_shape(object.get("error"), judge),
    }
    kind
}

fn error_shape(error: Option<&Value>, judge: &mut Judge<'_>) {
    let code = error.and_then(|e| e.get("code"));
    let message = error.and_then(|e| e.get("message"));
    let code_ok = code.is_some_and(|c| c.is_i64() || c.is_u64());
    let message_ok = message.is_some_and(Value::is_string);
    if !error.is_some_and(Value::is_object) || !code_ok || !message_ok {
        judge.flag(
            RuleId::McpJsonrpcErrorShape,
            "/error",
            format!(
                "`error` needs an integer `code` and a string `message`, got {}",
                error.map_or_else(|| "nothing".to_owned(), shown)
            ),
        );
    }
}

/// A request's `_meta.progressToken`, when present.
fn progress_token(params: Option<&Value>, pointer: &str, judge: &mut Judge<'_>) {
    let token = params.and_then(|p| p.pointer("/_meta/progressToken"));
    if token.is_some() {
        judge_token(token, pointer, judge);
    }
}

fn judge_token(token: Option<&Value>, pointer: &str, judge: &mut Judge<'_>) {
    if token.is_some_and(valid_id) {
        return;
    }
    judge.flag(
        RuleId::McpProgressTokenInvalid,
        pointer,
        format!(
            "a progress token is a string or an integer, got {}",
            token.map_or_else(|| "nothing".to_owned(), shown)
        ),
    );
}

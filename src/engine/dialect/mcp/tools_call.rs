//! A `tools/call` result (the reference's §4.8, states M and X): `content` and its blocks,
//! `isError`, an envelope inside the envelope, `structuredContent` (an object before
//! 2026-07-28, mirrored as text), an error banner without `isError`, and the two answers that
//! are not a `CallToolResult` (2025-11-25's `CreateTaskResult` to a task-augmented call,
//! 2026-07-28's `input_required`).
//!
//! Input: the `result` of this exchange's `tools/call`, whether the call asked for a task, the
//! exchange's [`Version`]. Output: violations. The rules that need the tool's listed schemas
//! (`structured_content_missing`, `_schema`, unknown tools) are the conversation store's.

use base64::Engine as _;
use serde_json::{Map, Value};

use super::envelope::shown;
use super::version::Version;
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;

/// Judges one result; `task`: the call carried `params.task`.
pub fn judge(result: &Value, task: bool, version: Version, judge: &mut Judge<'_>) {
    let Some(result) = result.as_object() else {
        return;
    };
    if result.contains_key("jsonrpc")
        && (result.contains_key("result") || result.contains_key("error"))
    {
        judge.flag(
            RuleId::McpToolsCallResultDoubleWrapped,
            "/result",
            "the result holds a JSON-RPC envelope of its own".to_owned(),
        );
    }
    if task && version == Version::V3 {
        create_task(result, judge);
        return;
    }
    if version.is_modern()
        && result.get("resultType").and_then(Value::as_str) == Some("input_required")
    {
        if !result.contains_key("inputRequests") && !result.contains_key("requestState") {
            judge.flag(
                RuleId::McpToolsCallInputRequiredShape,
                "/result",
                "an input_required result needs inputRequests or requestState".to_owned(),
            );
        }
        return;
    }
    if let Some(is_error) = result.get("isError")
        && !is_error.is_boolean()
    {
        judge.flag(
            RuleId::McpToolsCallIsErrorType,
            "/result/isError",
            format!("isError is a boolean, got {}", shown(is_error)),
        );
    }
    let blocks = match result.get("content") {
        Some(Value::Array(blocks)) => blocks.as_slice(),
        other => {
            judge.flag(
                RuleId::McpToolsCallResultContentMissing,
                "/result/content",
                format!(
                    "a CallToolResult needs a content array, got {}",
                    other.map_or_else(|| "nothing".to_owned(), shown)
                ),
            );
            &[]
        }
    };
    for (index, block) in blocks.iter().enumerate() {
        content_block(block, &format!("/result/content/{index}"), version, judge);
    }
    if let Some(structured) = result.get("structuredContent") {
        structured_content(structured, blocks, version, judge);
    }
    is_error_suspect(result, blocks, judge);
}

/// 2025-11-25's `CreateTaskResult`: `task.taskId` a string, `status` `working`, `createdAt`.
fn create_task(result: &Map<String, Value>, judge: &mut Judge<'_>) {
    let task = result.get("task");
    let id_ok = task
        .and_then(|t| t.get("taskId"))
        .is_some_and(Value::is_string);
    let status_ok = task.and_then(|t| t.get("status")).and_then(Value::as_str) == Some("working");
    let created_ok = task
        .and_then(|t| t.get("createdAt"))
        .is_some_and(Value::is_string);
    if !(id_ok && status_ok && created_ok) {
        judge.flag(RuleId::McpToolsCallCreateTaskShape,
            "/result/task",
            format!(
                "a task-augmented call is answered by a CreateTaskResult (task.taskId, status \"working\", createdAt), got {}",
                task.map_or_else(|| "no task".to_owned(), shown)
            ),
        );
    }
}

/// One content block: a known `type` and its required fields.
fn content_block(block: &Value, pointer: &str, version: Version, judge: &mut Judge<'_>) {
    let kind = block.get("type").and_then(Value::as_str);
    let string = |name: &str| block.get(name).is_some_and(Value::is_string);
    let missing = match kind {
        Some("text") => (!string("text")).then_some("text"),
        Some("image" | "audio") => match (string("data"), string("mimeType")) {
            (false, _) => Some("data"),
            (_, false) => Some("mimeType"),
            _ => None,
        },
        Some("resource") => resource(block.get("resource")),
        Some("resource_link") if version >= Version::V2 => match (string("uri"), string("name")) {
            (false, _) => Some("uri"),
            (_, false) => Some("name"),
            _ => None,
        },
        _ => {
            judge.flag(
                RuleId::McpContentTypeUnknown,
                format!("{pointer}/type"),
                format!(
                    "content block type {} is none of text, image, audio, resource{}",
                    block.get("type").map_or_else(|| "(none)".to_owned(), shown),
                    if version >= Version::V2 {
                        ", resource_link"
                    } else {
                        ""
                    }
                ),
            );
            return;
        }
    };
    if let Some(field) = missing {
        judge.flag(
            RuleId::McpContentFields,
            format!("{pointer}/{field}"),
            format!("a {} block needs {field} (as a string)", kind.unwrap_or("")),
        );
        return;
    }
    let encoded = match kind {
        Some("image" | "audio") => block.get("data").map(|d| ("data", d)),
        Some("resource") => block
            .pointer("/resource/blob")
            .map(|blob| ("resource/blob", blob)),
        _ => None,
    };
    if let Some((field, Value::String(text))) = encoded
        && base64::engine::general_purpose::STANDARD
            .decode(text)
            .is_err()
    {
        judge.flag(
            RuleId::McpContentBase64Invalid,
            format!("{pointer}/{field}"),
            format!("{field} is not valid base64"),
        );
    }
}

/// An embedded resource: a `uri` and exactly one of `text` and `blob`; the field missing.
fn resource(resource: Option<&Value>) -> Option<&'static str> {
    let Some(resource) = resource.filter(|r| r.is_object()) else {
        return Some("resource");
    };
    let string = |name: &str| resource.get(name).is_some_and(Value::is_string);
    if !string("uri") {
        return Some("resource/uri");
    }
    match (string("text"), string("blob")) {
        (true, false) | (false, true) => None,
        _ => Some("resource/text"),
    }
}

/// `structuredContent`: an object before 2026-07-28, and mirrored by a text block holding the
/// same JSON (or, as FastMCP wraps scalars as `{"result": value}`, the value).
fn structured_content(
    structured: &Value,
    blocks: &[Value],
    version: Version,
    judge: &mut Judge<'_>,
) {
    if version <= Version::V3 && !structured.is_object() {
        judge.flag(
            RuleId::McpToolsCallStructuredContentNotObject,
            "/result/structuredContent",
            format!(
                "structuredContent is an object before 2026-07-28, got {}",
                shown(structured)
            ),
        );
    }
    let unwrapped = structured
        .as_object()
        .filter(|o| o.len() == 1)
        .and_then(|o| o.get("result"));
    let mirrors = |text: &str| {
        let parsed = serde_json::from_str::<Value>(text).ok();
        parsed.as_ref() == Some(structured)
            || unwrapped
                .is_some_and(|inner| parsed.as_ref() == Some(inner) || inner.as_str() == Some(text))
    };
    let mirrored = blocks.iter().any(|block| {
        block.get("type").and_then(Value::as_str) == Some("text")
            && block
                .get("text")
                .and_then(Value::as_str)
                .is_some_and(mirrors)
    });
    if !mirrored {
        judge.flag(RuleId::McpToolsCallStructuredContentNoTextMirror,
            "/result/structuredContent",
            "no text block holds structuredContent's JSON (clients without structured output see nothing)".to_owned(),
        );
    }
}

/// Banners that say an error although `isError` does not.
const ERROR_BANNERS: [&str; 3] = ["MCP error -32", "Error:", "\u{274c}"];

/// `isError` absent or false, and the only block is text that reads as an error banner.
fn is_error_suspect(result: &Map<String, Value>, blocks: &[Value], judge: &mut Judge<'_>) {
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let [block] = blocks else {
        return;
    };
    let Some(text) = block.get("text").and_then(Value::as_str) else {
        return;
    };
    if ERROR_BANNERS
        .iter()
        .any(|banner| text.trim_start().starts_with(banner))
    {
        judge.flag(
            RuleId::McpToolsCallIsErrorSuspect,
            "/result/content/0/text",
            format!(
                "the only text reads as an error, yet isError is not true: {}",
                shown(&Value::String(text.chars().take(80).collect()))
            ),
        );
    }
}

//! Quirks on an Ollama `/api/chat` exchange, buffered (`stream: false`) or streamed as NDJSON.
//!
//! Input: the whole body (an NDJSON stream is held whole: its content type is a JSON one, so
//! the quirk machinery treats it as a buffered body, and live, under `--inject`, it is held
//! like one, bounded by `inject.max_hold`). A body that is one JSON document is rewritten as a
//! `ChatResponse`; otherwise each line (LF or CRLF kept) is. Output: the rewritten body, or
//! nothing when the quirk finds nothing to break. Each is a wire seen in the wild
//! (docs/quirks.md):
//!
//! * `ollama-args-as-string`: each `tool_calls[].function.arguments` object sent as its JSON
//!   text (the OpenAI shape, which gateways copy into Ollama's).
//! * `ollama-call-split-across-lines`: on a stream, each call line's calls split in two lines:
//!   the name (with its `index`, no `arguments`), then the `arguments` alone (no name).
//! * `ollama-done-reason-tool-calls`: `done_reason: "stop"` on a turn with calls becomes
//!   `"tool_calls"`, a value Ollama does not have (an emulator's, llama-swappo#13).

use serde_json::{Map, Value};

use super::catalogue::QuirkId;

/// The body with `quirk` applied, or `None` when it does not apply.
pub fn buffered(quirk: QuirkId, body: &[u8]) -> Option<Vec<u8>> {
    if let Ok(mut document) = serde_json::from_slice::<Value>(body) {
        let changed = match quirk {
            QuirkId::OllamaArgsAsString => args_as_string(&mut document),
            QuirkId::OllamaDoneReasonToolCalls => {
                let calls = calls(&document) > 0;
                calls && done_reason_tool_calls(&mut document)
            }
            _ => false,
        };
        return changed.then(|| document.to_string().into_bytes());
    }
    lines(quirk, body)
}

/// No stream event is rewritten alone: an NDJSON stream is rewritten whole ([`buffered`]).
pub fn event(_quirk: QuirkId, _data: &mut Value) -> bool {
    false
}

/// An NDJSON body rewritten line by line; `None` when no line changed.
fn lines(quirk: QuirkId, body: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(body).ok()?;
    let mut out = String::with_capacity(text.len() + 64);
    let mut changed = false;
    let mut calls_seen = false;
    for raw in text.split_inclusive('\n') {
        let (line, ending) = match raw.strip_suffix("\r\n") {
            Some(line) => (line, "\r\n"),
            None => raw
                .strip_suffix('\n')
                .map_or((raw, ""), |line| (line, "\n")),
        };
        let Ok(mut value) = serde_json::from_str::<Value>(line) else {
            out.push_str(raw);
            continue;
        };
        let here = calls(&value) > 0;
        calls_seen |= here;
        let rewritten = match quirk {
            QuirkId::OllamaArgsAsString => args_as_string(&mut value).then(|| vec![value]),
            QuirkId::OllamaCallSplitAcrossLines if here => split(&value),
            QuirkId::OllamaDoneReasonToolCalls if calls_seen => {
                done_reason_tool_calls(&mut value).then(|| vec![value])
            }
            _ => None,
        };
        match rewritten {
            Some(values) => {
                changed = true;
                for value in values {
                    out.push_str(&value.to_string());
                    out.push_str(if ending.is_empty() { "\n" } else { ending });
                }
                if ending.is_empty() {
                    out.pop();
                }
            }
            None => out.push_str(raw),
        }
    }
    changed.then(|| out.into_bytes())
}

/// The `message.tool_calls` array, when there is one.
fn tool_calls(value: &mut Value) -> Option<&mut Vec<Value>> {
    value
        .get_mut("message")?
        .get_mut("tool_calls")?
        .as_array_mut()
}

fn calls(value: &Value) -> usize {
    value
        .pointer("/message/tool_calls")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

fn functions(value: &mut Value) -> impl Iterator<Item = &mut Map<String, Value>> {
    tool_calls(value)
        .into_iter()
        .flatten()
        .filter_map(|call| call.get_mut("function")?.as_object_mut())
}

fn args_as_string(value: &mut Value) -> bool {
    functions(value).fold(false, |changed, function| {
        match function.get("arguments").filter(|a| a.is_object()) {
            Some(arguments) => {
                let text = arguments.to_string();
                function.insert("arguments".to_owned(), Value::from(text));
                true
            }
            None => changed,
        }
    })
}

fn done_reason_tool_calls(value: &mut Value) -> bool {
    match value.get_mut("done_reason") {
        Some(reason) if reason == "stop" => {
            *reason = Value::from("tool_calls");
            true
        }
        _ => false,
    }
}

/// A call line as two: its calls' names (and indexes, and ids), then their arguments alone
/// (no id, name or index: a client cannot tell which call they belong to).
fn split(value: &Value) -> Option<Vec<Value>> {
    let mut names = value.clone();
    let mut arguments = value.clone();
    for function in functions(&mut names) {
        function.remove("arguments");
    }
    for call in tool_calls(&mut arguments)? {
        if let Some(object) = call.as_object_mut() {
            object.remove("id");
        }
        if let Some(function) = call.get_mut("function").and_then(Value::as_object_mut) {
            function.remove("name");
            function.remove("index");
        }
    }
    Some(vec![names, arguments])
}

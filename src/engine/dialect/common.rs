//! What the dialects do alike: reading a request body that must be one JSON object and its
//! common facts, checking a tool's name, compiling the declared tools once, reading a buffered
//! body and an SSE event's JSON, and the rules every dialect reports the same way
//! (`request.schema_invalid`, `response.not_json`, `sse.data_not_json`, `stream.truncated`).
//!
//! Input: what a dialect already holds (bytes, values, its rule ids and sites). Output: parsed
//! values, plus violations into its sink and notes; nothing here does I/O.

use std::any::Any;
use std::borrow::Cow;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::seam::EnforceError;
pub use super::seam::{Declared, StreamFinish};
use crate::engine::json_scan::{self, Scan};
use crate::engine::judge::Judge;
use crate::engine::report::KeptJson;
use crate::engine::report::{ChoiceOutcome, RequestFacts};
use crate::engine::rules::RuleId;
use crate::engine::schema::{CompiledTools, SchemaCache, ToolReading, ToolSchema};
use crate::engine::violation::{Site, Stage, ViolationSink};

/// Shortens a value for a human detail; details are for people, never for matching.
pub fn preview(value: &serde_json::Value) -> String {
    let mut text = value.to_string();
    if text.len() > 60 {
        text.truncate(text.floor_char_boundary(57));
        text.push_str("...");
    }
    text
}

/// Raw tool-call markup a failed tool parser leaves in text.
pub fn has_tool_markup(text: &str) -> bool {
    text.contains("<tool_call>")
        || text.contains("<function=")
        || (text.contains("\"name\"") && text.contains("\"arguments\""))
}

/// The OpenAI error object (`{"message","type","code","param"}`), which Chat and the Responses
/// API's SDKs read.
pub fn openai_error(error: &EnforceError<'_>) -> Value {
    serde_json::json!({
        "message": error.message,
        "type": error.kind,
        "code": error.code,
        "param": error.param,
    })
}

/// Whether a body starts as a JSON object (serde's derived struct would also take an array).
pub fn is_object_text(body: &[u8]) -> bool {
    body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// A request body's fields: read in one pass by `scanned` ([`json_scan`]) when the body is text
/// it takes, else by `by_serde`; `None` when the body is not one JSON object (serde's derived
/// struct would also take an array) or does not parse.
pub fn read_fields<'a, F>(
    body: &'a [u8],
    scanned: impl FnOnce(&'a str) -> Option<F>,
    by_serde: impl FnOnce(&'a [u8]) -> Option<F>,
) -> Option<F> {
    if !is_object_text(body) {
        return None;
    }
    std::str::from_utf8(body)
        .ok()
        .and_then(scanned)
        .or_else(|| by_serde(body))
}

/// `serde_json::from_slice`, with the same result: bytes that are UTF-8 (checked once, whole)
/// are read as text, so serde_json does not check every string it reads again (see
/// docs/benchmarks.md#text-not-bytes).
pub fn from_json_bytes<T: DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    }
}

/// The items of a request's `tools` text (none when absent, unparsable or not an array).
pub fn tool_items(text: Option<&str>) -> Vec<Value> {
    match text.and_then(|text| serde_json::from_str(text).ok()) {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    }
}

/// A `tools` member's exact text and, when the schema cache knew it, its compiled tools.
pub type ScannedTools<'a> = (&'a str, Option<Arc<CompiledTools>>);

/// A request's `tools` member at `scan`, in a body read by [`json_scan`]: its exact text
/// (`None` for `null`, checked as serde's `RawValue` checks it) and, when that text is among
/// `cache`'s arrays handed out last for `reading`, its compiled tools: the array is then stepped
/// over, not read (see [`SchemaCache::known_at`]).
pub fn scan_tools<'a>(
    scan: &mut Scan<'a>,
    cache: Option<&SchemaCache>,
    reading: &ToolReading,
) -> Option<Option<ScannedTools<'a>>> {
    let known = cache.and_then(|cache| scan.known_text(|rest| cache.known_at(rest, reading)));
    if let Some((text, compiled)) = known {
        return Some(Some((text, Some(compiled))));
    }
    json_scan::optional_with(scan, |scan| Some((scan.raw_text()?, None)))
}

/// What a dialect reads of a `tools` array from its text alone (`read`, which judges as it
/// reads): kept with its `compiled` tools by an earlier request, or read, and kept there when
/// reading reported nothing. An array with a finding is read on every request, so that every
/// request reports it, a finding its route turns off included ([`ViolationSink::reported`]).
/// See [`CompiledTools::keep_reading`].
pub fn kept_reading<'c, T: Clone + Any + Send + Sync>(
    compiled: Option<&'c CompiledTools>,
    judge: &mut Judge<'_>,
    read: impl FnOnce(&mut Judge<'_>) -> T,
) -> Cow<'c, T> {
    if let Some(kept) = compiled.and_then(CompiledTools::reading::<T>) {
        return Cow::Borrowed(kept);
    }
    let reported = judge.sink().reported();
    let reading = read(judge);
    if let Some(compiled) = compiled.filter(|_| judge.sink().reported() == reported) {
        compiled.keep_reading(reading.clone());
    }
    Cow::Owned(reading)
}

/// The facts of a parsed request every dialect reads alike: `model` and `stream`.
pub fn facts(model: Option<&Value>, stream: Option<&Value>) -> RequestFacts {
    RequestFacts {
        parsed: true,
        model: model.and_then(Value::as_str).map(str::to_owned),
        stream: stream.and_then(Value::as_bool).unwrap_or(false),
        ..RequestFacts::default()
    }
}

/// A declared tool's `name` when it matches `^[a-zA-Z0-9_-]{1,128}$`; otherwise `rule` at
/// `site` and `None`.
pub fn tool_name<'t>(
    tool: &'t Value,
    rule: RuleId,
    site: Site,
    sink: &mut ViolationSink,
) -> Option<&'t str> {
    let name = tool.get("name").and_then(Value::as_str);
    if let Some(name) = name.filter(|name| valid_name(name, 128)) {
        return Some(name);
    }
    let shown = tool
        .get("name")
        .map(preview)
        .unwrap_or_else(|| "nothing".into());
    let detail = format!("a tool name must match ^[a-zA-Z0-9_-]{{1,128}}$, got {shown}");
    sink.push(rule, Stage::Request, site, detail);
    None
}

/// Whether a tool or function name is 1 to `max` of `[a-zA-Z0-9_-]`.
pub fn valid_name(name: &str, max: usize) -> bool {
    !name.is_empty()
        && name.len() <= max
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The request's declared tools compiled by `compile` (the dialect's schema-cache lookup), kept
/// only when they declare any; reports the schemas that do not compile and notes why the
/// declaration rules are skipped.
pub fn declared_tools<Raw>(
    raw: Option<Raw>,
    compile: impl FnOnce(Raw) -> Arc<CompiledTools>,
    (parsed, declares): (bool, bool),
    sink: &mut ViolationSink,
    notes: &mut Vec<String>,
) -> Option<Arc<CompiledTools>> {
    let schemas = raw.map(compile).filter(|t| t.declares());
    report_invalid_schemas(schemas.as_deref(), sink);
    note_skipped(parsed, declares, notes);
    schemas
}

/// The note saying the declaration rules are skipped, when the request declares no tools.
pub fn note_skipped(parsed: bool, declares: bool, notes: &mut Vec<String>) {
    if !parsed {
        notes.push(
            "request body is not a JSON object: declared tools unknown, declaration rules skipped"
                .to_owned(),
        );
    } else if !declares {
        notes.push("request declares no tools: declaration rules skipped".to_owned());
    }
}

/// `request.schema_invalid` for every declared tool whose `parameters` do not compile.
pub fn report_invalid_schemas(tools: Option<&CompiledTools>, sink: &mut ViolationSink) {
    for tool in tools.iter().flat_map(|tools| tools.iter()) {
        if let ToolSchema::Invalid(reason) = &tool.schema {
            let detail = format!(
                "tool {:?}: {reason}; its arguments are not schema-checked",
                tool.name
            );
            sink.push(
                RuleId::RequestSchemaInvalid,
                Stage::Request,
                Site::at(tool.parameters_path.clone()),
                detail,
            );
        }
    }
}

/// A 2xx buffered body as JSON, or `response.not_json` and `None`.
pub fn response_json(body: &[u8], sink: &mut ViolationSink) -> Option<Value> {
    match serde_json::from_slice(body) {
        Ok(document) => Some(document),
        Err(error) => {
            sink.push(
                RuleId::ResponseNotJson,
                Stage::Complete,
                Site::at(""),
                format!("a 2xx JSON body that does not parse: {error}"),
            );
            None
        }
    }
}

/// A buffered body read into a full tree and judged as one outcome by `judge`, with its
/// `usage`: the buffered reading of a dialect that judges whole documents.
pub fn judge_tree(
    body: &[u8],
    sink: &mut ViolationSink,
    judge: impl FnOnce(&Value, &mut ViolationSink) -> ChoiceOutcome,
) -> (Vec<ChoiceOutcome>, Option<KeptJson>) {
    let Some(document) = response_json(body, sink) else {
        return (Vec::new(), None);
    };
    let outcome = judge(&document, sink);
    (vec![outcome], usage(&document).map(KeptJson::from))
}

/// Removes `key` from an object and returns it, unless it is absent or `null` (or `value` is not
/// an object): the typed reads' fallback, for members a rule reads once.
pub fn take_member(value: &mut Value, key: &str) -> Option<Value> {
    value
        .as_object_mut()
        .and_then(|members| members.remove(key))
        .filter(|member| !member.is_null())
}

/// A response document's non-null `usage`.
pub fn usage(document: &Value) -> Option<Value> {
    document.get("usage").filter(|u| !u.is_null()).cloned()
}

/// An SSE event's `data` as JSON, or `sse.data_not_json` at `site` ("data is {not} (...)").
pub fn event_json(data: &str, not: &str, site: Site, sink: &mut ViolationSink) -> Option<Value> {
    match serde_json::from_str(data) {
        Ok(value) => Some(value),
        Err(error) => {
            let shown = preview(&Value::String(data.to_owned()));
            let detail = format!("data is {not} ({error}): {shown}");
            sink.push(RuleId::SseDataNotJson, Stage::Fragment, site, detail);
            None
        }
    }
}

/// A typed event's `data.type` (empty when absent), reporting `rule` at `site` when an `event:`
/// name disagrees with it.
pub fn event_kind<'v>(
    value: &'v Value,
    event: Option<&str>,
    rule: RuleId,
    site: Site,
    sink: &mut ViolationSink,
) -> &'v str {
    let kind = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Some(name) = event.filter(|name| *name != kind) {
        let detail = format!("event: {name:?} but data.type {kind:?}");
        sink.push(rule, Stage::Fragment, site, detail);
    }
    kind
}

/// `stream.truncated` when the body ended in the middle of an event.
pub fn report_mid_event(ended_mid_event: bool, sink: &mut ViolationSink) {
    if ended_mid_event {
        sink.push(
            RuleId::StreamTruncated,
            Stage::Complete,
            Site::at(""),
            "the body ended in the middle of an event",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_read_as_text_give_what_from_slice_gives() {
        let cases: [&[u8]; 5] = [
            br#"{"model":"m","tools":[{"a":"\u00e9\n"}],"n":1.5}"#,
            "{\"name\":\"caf\u{e9}\"}".as_bytes(),
            b"{\"name\":\"\xff\"}",
            b"{\"a\":\xff}",
            br#"{"a":[1,2"#,
        ];
        for bytes in cases {
            let ours = from_json_bytes::<Value>(bytes).map_err(|e| e.to_string());
            let theirs = serde_json::from_slice::<Value>(bytes).map_err(|e| e.to_string());
            assert_eq!(ours, theirs, "{}", String::from_utf8_lossy(bytes));
        }
    }
}

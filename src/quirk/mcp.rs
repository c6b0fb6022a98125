//! Quirks on an MCP exchange (Streamable HTTP): one JSON-RPC message rewritten, whether it is
//! the whole `application/json` body or the `data` of one event of a `text/event-stream`
//! answer. Each is a server bug seen in the wild (the sources are in docs/quirks.md):
//!
//! * `mcp-structured-content-dropped`: a `tools/call` result's `structuredContent` removed
//!   (its text mirror stays), as servers that declare an `outputSchema` and then answer text
//!   only do.
//! * `mcp-output-off-schema`: every member of `structuredContent` sent with another JSON type
//!   (a number as its text, a string as its length, anything else as its JSON text), so no
//!   typed `outputSchema` accepts it.
//! * `mcp-id-as-string`: the response's integer `id` echoed as a string (`1` → `"1"`), and a
//!   numeric string id as an integer: the same value, another type (python-sdk#961).
//! * `mcp-input-schema-untyped`: every tool's `inputSchema` in a `tools/list` result without
//!   its root `type` (server-filesystem 2025.8.21 sent `{"$schema": ...}` only).
//! * `mcp-unknown-tool-as-result`: a JSON-RPC `-32602` error (the spec's answer to an unknown
//!   tool) turned into a `result` with `isError: true` and the error's text, as the official
//!   TypeScript 1.x and Python 2.x servers answer.
//! * `mcp-content-type-unknown`: every `text` content block sent as `{"type":"json","json":
//!   ...}` (its text parsed when it is JSON), a type MCP does not have.
//!
//! Server requests and notifications on the stream are left alone: only responses change.

use serde_json::{Map, Value, json};

use super::catalogue::QuirkId;

/// The body with `quirk` applied, or `None` when it does not apply.
pub fn buffered(quirk: QuirkId, body: &[u8]) -> Option<Vec<u8>> {
    let mut message: Value = serde_json::from_slice(body).ok()?;
    event(quirk, &mut message).then(|| message.to_string().into_bytes())
}

/// One JSON-RPC message rewritten in place; true when it changed.
pub fn event(quirk: QuirkId, message: &mut Value) -> bool {
    let Some(object) = message.as_object_mut() else {
        return false;
    };
    if object.contains_key("method") {
        return false;
    }
    match quirk {
        QuirkId::McpIdAsString => id_retyped(object),
        QuirkId::McpUnknownToolAsResult => error_as_result(object),
        _ => match object.get_mut("result").and_then(Value::as_object_mut) {
            Some(result) => rewrite_result(quirk, result),
            None => false,
        },
    }
}

fn rewrite_result(quirk: QuirkId, result: &mut Map<String, Value>) -> bool {
    match quirk {
        QuirkId::McpStructuredContentDropped => result.remove("structuredContent").is_some(),
        QuirkId::McpOutputOffSchema => match result.get_mut("structuredContent") {
            Some(Value::Object(members)) if !members.is_empty() => {
                for value in members.values_mut() {
                    *value = retyped(value);
                }
                true
            }
            _ => false,
        },
        QuirkId::McpInputSchemaUntyped => {
            let tools = result.get_mut("tools").and_then(Value::as_array_mut);
            tools.into_iter().flatten().fold(false, |changed, tool| {
                let schema = tool.get_mut("inputSchema").and_then(Value::as_object_mut);
                schema.is_some_and(|schema| schema.remove("type").is_some()) || changed
            })
        }
        QuirkId::McpContentTypeUnknown => {
            let blocks = result.get_mut("content").and_then(Value::as_array_mut);
            blocks.into_iter().flatten().fold(false, |changed, block| {
                if block.get("type").and_then(Value::as_str) != Some("text") {
                    return changed;
                }
                let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                let parsed = serde_json::from_str(text).unwrap_or_else(|_| Value::from(text));
                *block = json!({"type": "json", "json": parsed});
                true
            })
        }
        _ => false,
    }
}

/// The same value with another JSON type.
fn retyped(value: &Value) -> Value {
    match value {
        Value::Number(number) => Value::from(number.to_string()),
        Value::String(text) => Value::from(text.chars().count()),
        other => Value::from(other.to_string()),
    }
}

fn id_retyped(object: &mut Map<String, Value>) -> bool {
    if !(object.contains_key("result") || object.contains_key("error")) {
        return false;
    }
    let retyped = match object.get("id") {
        Some(Value::Number(number)) => Value::from(number.to_string()),
        Some(Value::String(text)) => match text.parse::<i64>() {
            Ok(number) if number.to_string() == *text => Value::from(number),
            _ => return false,
        },
        _ => return false,
    };
    object.insert("id".to_owned(), retyped);
    true
}

fn error_as_result(object: &mut Map<String, Value>) -> bool {
    let Some(error) = object.get("error") else {
        return false;
    };
    if error.get("code").and_then(Value::as_i64) != Some(-32602) {
        return false;
    }
    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
    let text = format!("MCP error -32602: {message}");
    object.remove("error");
    object.insert(
        "result".to_owned(),
        json!({"content": [{"type": "text", "text": text}], "isError": true}),
    );
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(quirk: QuirkId, text: &str) -> Option<Value> {
        buffered(quirk, text.as_bytes()).map(|out| serde_json::from_slice(&out).expect("json"))
    }

    const CALL: &str = r#"{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"{\"temperature\":22.5,\"conditions\":\"cloudy\"}"}],"structuredContent":{"temperature":22.5,"conditions":"cloudy"},"isError":false}}"#;
    const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"a","inputSchema":{"type":"object","properties":{}}},{"name":"b","inputSchema":{"type":"object"}}]}}"#;
    const UNKNOWN: &str =
        r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Unknown tool: get_wether"}}"#;

    #[test]
    fn each_quirk_breaks_what_it_names_and_only_that() {
        let dropped = applied(QuirkId::McpStructuredContentDropped, CALL).expect("applies");
        assert!(dropped["result"].get("structuredContent").is_none());
        assert_eq!(dropped["result"]["content"][0]["type"], "text");
        let off = applied(QuirkId::McpOutputOffSchema, CALL).expect("applies");
        assert_eq!(
            off["result"]["structuredContent"],
            json!({"temperature": "22.5", "conditions": 6})
        );
        assert_eq!(
            applied(QuirkId::McpIdAsString, CALL).expect("applies")["id"],
            "4"
        );
        let string_id = r#"{"jsonrpc":"2.0","id":"12","result":{}}"#;
        assert_eq!(
            applied(QuirkId::McpIdAsString, string_id).expect("applies")["id"],
            12
        );
        let untyped = applied(QuirkId::McpInputSchemaUntyped, LIST).expect("applies");
        assert_eq!(
            untyped["result"]["tools"][0]["inputSchema"],
            json!({"properties": {}})
        );
        assert_eq!(untyped["result"]["tools"][1]["inputSchema"], json!({}));
        let as_result = applied(QuirkId::McpUnknownToolAsResult, UNKNOWN).expect("applies");
        assert_eq!(
            as_result,
            json!({"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "MCP error -32602: Unknown tool: get_wether"}], "isError": true}})
        );
        let unknown_type = applied(QuirkId::McpContentTypeUnknown, CALL).expect("applies");
        assert_eq!(
            unknown_type["result"]["content"][0],
            json!({"type": "json", "json": {"temperature": 22.5, "conditions": "cloudy"}})
        );
    }

    #[test]
    fn nothing_to_change_is_not_applicable() {
        for quirk in [
            QuirkId::McpStructuredContentDropped,
            QuirkId::McpOutputOffSchema,
            QuirkId::McpInputSchemaUntyped,
            QuirkId::McpUnknownToolAsResult,
        ] {
            assert_eq!(
                applied(quirk, UNKNOWN.replace("-32602", "-32601").as_str()),
                None
            );
        }
        assert_eq!(applied(QuirkId::McpInputSchemaUntyped, CALL), None);
        assert_eq!(applied(QuirkId::McpUnknownToolAsResult, CALL), None);
        // A server's own request or a notification on the stream is never touched.
        let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#;
        let request = r#"{"jsonrpc":"2.0","id":0,"method":"roots/list"}"#;
        for quirk in QuirkId::ALL
            .into_iter()
            .filter(|q| q.as_str().starts_with("mcp-"))
        {
            assert_eq!(applied(quirk, progress), None, "{quirk}");
            assert_eq!(applied(quirk, request), None, "{quirk}");
        }
    }
}

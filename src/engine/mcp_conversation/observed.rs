//! From the MCP dialect's per-exchange [`McpObservation`] to the store's [`SeenOwned`].
//!
//! Input: the observation an MCP exchange's report carries, and what only the caller knows:
//! the upstream (route), the times, the credential digest. Output: a [`SeenOwned`] whose
//! messages are rebuilt from the observation's parts (the members the S rules read, at the
//! places they have in a JSON-RPC message), so the rules read one shape live and in `check`.

use serde_json::{Map, Value, json};

use super::seen::{HttpMethod, MsgOwned, SeenOwned};
use crate::engine::dialect::mcp::observe::{McpMessage, McpObservation, MessageKind, Parts};

/// What the caller adds to an observation.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub upstream: &'a str,
    pub start_us: u64,
    pub end_us: u64,
    pub credential: u64,
}

pub fn seen_of(observation: &McpObservation, context: Context<'_>) -> SeenOwned {
    let Context {
        upstream,
        start_us,
        end_us,
        credential,
    } = context;
    let batch = observation.request_batch;
    let sent = observation
        .request
        .iter()
        .enumerate()
        .map(|(k, m)| {
            owned(
                m,
                if batch {
                    format!("/{k}")
                } else {
                    String::new()
                },
            )
        })
        .collect();
    let received = observation
        .response
        .iter()
        .map(|m| owned(m, String::new()))
        .collect();
    SeenOwned {
        upstream: upstream.to_owned(),
        method: HttpMethod::from_name(observation.method.as_deref().unwrap_or("POST")),
        status: observation.status.unwrap_or(0),
        start_us,
        end_us,
        request_session: observation.request_session.clone(),
        response_session: observation.response_session.clone(),
        protocol_header: observation.protocol_version_header.clone(),
        credential,
        resumed: observation.last_event_id.is_some(),
        sent,
        received,
        whole: !observation.truncated,
    }
}

fn owned(message: &McpMessage, path: String) -> MsgOwned {
    MsgOwned {
        value: rebuild(message),
        path,
        seq: message.seq,
        event_id: message.event_id.clone(),
    }
}

/// The message as far as the observation kept it.
fn rebuild(message: &McpMessage) -> Value {
    let mut object = Map::new();
    object.insert("jsonrpc".into(), json!("2.0"));
    if let Some(id) = &message.id {
        object.insert("id".into(), id.clone());
    }
    if let Some(method) = &message.method {
        object.insert("method".into(), json!(method));
    }
    let mut params = Map::new();
    if let Some(version) = &message.meta_protocol_version {
        params.insert(
            "_meta".into(),
            json!({"io.modelcontextprotocol/protocolVersion": version}),
        );
    }
    let mut result = Map::new();
    let mut error = Map::new();
    let members = parts(&message.parts, &mut params, &mut result, &mut error);
    if !params.is_empty() {
        object.insert("params".into(), Value::Object(params));
    }
    match (message.kind, members) {
        (MessageKind::Result, Some(whole)) => {
            object.insert("result".into(), whole);
        }
        (MessageKind::Result, None) => {
            object.insert("result".into(), Value::Object(result));
        }
        (MessageKind::Error, _) => {
            object.insert("error".into(), Value::Object(error));
        }
        _ => {}
    }
    Value::Object(object)
}

/// Puts the parts' members in place; a whole `result` is returned instead.
fn parts(
    parts: &Parts,
    params: &mut Map<String, Value>,
    result: &mut Map<String, Value>,
    error: &mut Map<String, Value>,
) -> Option<Value> {
    let put = |map: &mut Map<String, Value>, name: &str, value: &Option<Value>| {
        if let Some(value) = value {
            map.insert(name.to_owned(), value.clone());
        }
    };
    match parts {
        Parts::None => {}
        Parts::InitializeRequest {
            protocol_version,
            capabilities,
        } => {
            put(params, "protocolVersion", protocol_version);
            put(params, "capabilities", capabilities);
        }
        Parts::InitializeResult {
            protocol_version,
            capabilities,
        } => {
            put(result, "protocolVersion", protocol_version);
            put(result, "capabilities", capabilities);
        }
        Parts::ToolsListRequest { cursor } => put(params, "cursor", cursor),
        Parts::ToolsListResult {
            tools,
            next_cursor,
            ttl_ms,
            cache_scope,
        } => {
            put(result, "tools", tools);
            put(result, "nextCursor", next_cursor);
            put(result, "ttlMs", ttl_ms);
            put(result, "cacheScope", cache_scope);
        }
        Parts::ToolsCallRequest {
            name,
            arguments,
            progress_token,
            task,
        } => {
            put(params, "name", name);
            put(params, "arguments", arguments);
            put(params, "task", task);
            if let Some(token) = progress_token {
                let meta = params.entry("_meta").or_insert_with(|| json!({}));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert("progressToken".into(), token.clone());
                }
            }
        }
        Parts::ToolsCallResult {
            content,
            structured_content,
            is_error,
            result_type,
        } => {
            put(result, "content", content);
            put(result, "structuredContent", structured_content);
            put(result, "isError", is_error);
            put(result, "resultType", result_type);
        }
        Parts::Progress {
            progress_token,
            progress,
            total,
        } => {
            put(params, "progressToken", progress_token);
            put(params, "progress", progress);
            put(params, "total", total);
        }
        Parts::Cancelled { request_id, reason } => {
            put(params, "requestId", request_id);
            put(params, "reason", reason);
        }
        Parts::Error {
            code,
            message,
            data,
        } => {
            put(error, "code", code);
            put(error, "message", message);
            put(error, "data", data);
        }
        Parts::Result { result: whole } => return Some(whole.clone().unwrap_or(json!({}))),
    }
    None
}

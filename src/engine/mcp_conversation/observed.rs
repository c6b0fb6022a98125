//! From the MCP dialect's per-exchange [`McpObservation`] to the store's [`SeenOwned`].
//!
//! Input: the observation an MCP exchange's report carries, and what only the caller knows:
//! the upstream (route), the times, the credential digest. Output: a [`SeenOwned`] whose
//! messages are rebuilt from the observation's parts (the members the S rules read, at the
//! places they have in a JSON-RPC message), so the rules read one shape live and in `check`.

use serde_json::{Map, Value, json};

use super::seen::{HttpMethod, MsgOwned, SeenOwned};
use crate::engine::mcp_observation::{McpMessage, McpObservation, MessageKind, Parts};

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
        last_event_id: observation.last_event_id.clone(),
        param_headers: observation.param_headers.clone(),
        sent,
        received,
        whole: !observation.capped,
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

/// Where a part's members go in the rebuilt message.
enum Into {
    Params,
    Result,
    Error,
}

/// Puts the parts' members in place; a whole `result` is returned instead.
fn parts(
    parts: &Parts,
    params: &mut Map<String, Value>,
    result: &mut Map<String, Value>,
    error: &mut Map<String, Value>,
) -> Option<Value> {
    if let Parts::Result { result: whole } = parts {
        return Some(whole.clone().unwrap_or(json!({})));
    }
    if let Parts::ToolsCallRequest {
        progress_token: Some(token),
        ..
    } = parts
    {
        let meta = params.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("progressToken".into(), token.clone());
        }
    }
    let (into, members) = members(parts);
    let target = match into {
        Into::Params => params,
        Into::Result => result,
        Into::Error => error,
    };
    for (name, value) in members {
        if let Some(value) = value {
            target.insert(name.to_owned(), value.clone());
        }
    }
    None
}

/// Each part's members by their JSON-RPC names, and where they go.
fn members(parts: &Parts) -> (Into, Vec<(&'static str, &Option<Value>)>) {
    match parts {
        Parts::InitializeResult { .. }
        | Parts::ToolsListResult { .. }
        | Parts::ToolsCallResult { .. } => (Into::Result, result_members(parts)),
        Parts::Error {
            code,
            message,
            data,
        } => (
            Into::Error,
            vec![("code", code), ("message", message), ("data", data)],
        ),
        _ => (Into::Params, params_members(parts)),
    }
}

/// A result's members by their JSON-RPC names (none for parts that are not a result).
fn result_members(parts: &Parts) -> Vec<(&'static str, &Option<Value>)> {
    match parts {
        Parts::InitializeResult {
            protocol_version,
            capabilities,
        } => vec![
            ("protocolVersion", protocol_version),
            ("capabilities", capabilities),
        ],
        Parts::ToolsListResult {
            tools,
            next_cursor,
            ttl_ms,
            cache_scope,
        } => vec![
            ("tools", tools),
            ("nextCursor", next_cursor),
            ("ttlMs", ttl_ms),
            ("cacheScope", cache_scope),
        ],
        Parts::ToolsCallResult {
            content,
            structured_content,
            is_error,
            result_type,
            input_requests,
            request_state,
        } => vec![
            ("content", content),
            ("structuredContent", structured_content),
            ("isError", is_error),
            ("resultType", result_type),
            ("inputRequests", input_requests),
            ("requestState", request_state),
        ],
        _ => Vec::new(),
    }
}

/// A request's or notification's params by their JSON-RPC names (none for parts without any).
fn params_members(parts: &Parts) -> Vec<(&'static str, &Option<Value>)> {
    match parts {
        Parts::InitializeRequest {
            protocol_version,
            capabilities,
        } => vec![
            ("protocolVersion", protocol_version),
            ("capabilities", capabilities),
        ],
        Parts::ToolsListRequest { cursor } => vec![("cursor", cursor)],
        Parts::ToolsCallRequest {
            name,
            arguments,
            task,
            input_responses,
            request_state,
            ..
        } => vec![
            ("name", name),
            ("arguments", arguments),
            ("task", task),
            ("inputResponses", input_responses),
            ("requestState", request_state),
        ],
        Parts::Progress {
            progress_token,
            progress,
            total,
        } => vec![
            ("progressToken", progress_token),
            ("progress", progress),
            ("total", total),
        ],
        Parts::Cancelled { request_id, reason } => {
            vec![("requestId", request_id), ("reason", reason)]
        }
        _ => Vec::new(),
    }
}

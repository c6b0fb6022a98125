//! The request side of one MCP exchange (states M and X of the reference's §4.2, §4.3, §4.4,
//! §4.5 and §4.7): the headers a client must send, 2026-07-28's `_meta` and routing headers,
//! batches, the session id's bytes, and a `tools/call`'s `params`.
//!
//! Input: the HTTP method (`None`: the caller knew no head, so header rules are skipped), the
//! read headers, the parsed body, the exchange's [`Version`]. Output: violations at the request
//! stage.

use base64::Engine as _;
use serde_json::Value;

use super::envelope::{self, shown};
use super::version::Version;
use crate::engine::head::header;
use crate::engine::judge::Judge;
use crate::engine::mcp_observation::{MessageKind, kind_of};
use crate::engine::rules::RuleId;
use crate::engine::violation::{Site, Stage, ViolationSink};

/// What the request rules read.
pub struct RequestView<'a> {
    /// The HTTP method, upper case; `None` when the caller knew none (no header rules then).
    pub method: Option<&'a str>,
    pub headers: &'a [(String, String)],
    pub body: Option<&'a Value>,
    pub version: Version,
}

/// The version an exchange speaks: the header, else `_meta`'s, else an `initialize`'s
/// `protocolVersion`, else 2025-03-26 (what a server assumes without the header).
pub fn version(headers: &[(String, String)], body: Option<&Value>) -> Version {
    let first = match body {
        Some(Value::Array(items)) => items.first(),
        other => other,
    };
    let params = first.and_then(|m| m.get("params"));
    header(headers, "mcp-protocol-version")
        .and_then(Version::parse)
        .or_else(|| {
            params
                .and_then(|p| p.pointer("/_meta/io.modelcontextprotocol~1protocolVersion"))
                .and_then(Value::as_str)
                .and_then(Version::parse)
        })
        .or_else(|| {
            let initialize = first.and_then(|m| m.get("method")) == Some(&"initialize".into());
            initialize
                .then(|| params.and_then(|p| p.get("protocolVersion")))
                .flatten()
                .and_then(Value::as_str)
                .and_then(Version::parse)
        })
        .unwrap_or(Version::V1)
}

/// Judges the request; `body` is the parsed body (`None`: empty or not JSON).
pub fn judge(request: &RequestView<'_>, sink: &mut ViolationSink) {
    let mut root = Judge::new(sink, Stage::Request);
    if let Some(method) = request.method {
        headers(request, method, &mut root);
    }
    let Some(body) = request.body else {
        return;
    };
    match body {
        Value::Array(items) => {
            if request.version >= Version::V2 {
                root.flag(
                    RuleId::McpJsonrpcBatchNotAllowed,
                    "",
                    format!(
                        "a batch of {} messages: batches were removed in 2025-06-18",
                        items.len()
                    ),
                );
            }
            for (index, item) in items.iter().enumerate() {
                let mut judge = root.under_at("/", index);
                if request.version == Version::V1
                    && item.get("method").and_then(Value::as_str) == Some("initialize")
                {
                    judge.flag(
                        RuleId::McpJsonrpcBatchInitialize,
                        "/method",
                        "`initialize` must not be part of a batch".to_owned(),
                    );
                }
                message(request, item, &mut judge);
            }
        }
        message_value => message(request, message_value, &mut root),
    }
}

fn message(request: &RequestView<'_>, message: &Value, judge: &mut Judge<'_>) {
    let kind = envelope::judge(message, judge);
    let modern = request.version.is_modern();
    if modern && matches!(kind, MessageKind::Result | MessageKind::Error) {
        judge.flag(
            RuleId::McpHttpClientSentResponse,
            "",
            "a 2026-07-28 client must not POST a JSON-RPC response".to_owned(),
        );
    }
    let method = message.get("method").and_then(Value::as_str);
    if kind == MessageKind::Request && modern {
        meta(request, message, judge);
        if request.method.is_some() {
            routing(request, message, method.unwrap_or(""), judge);
        }
    }
    if kind == MessageKind::Request && method == Some("tools/call") {
        tools_call(message.get("params"), judge);
    }
    if kind == MessageKind::Request
        && method == Some("initialize")
        && request.method.is_some()
        && header(request.headers, "mcp-session-id").is_some()
    {
        // At the root whatever the batch position: the header is the request's.
        let detail = "`initialize` sent with an Mcp-Session-Id: a new session starts without one";
        judge.flag_site(true, RuleId::McpSessionIdOnInitialize, Site::at(""), detail);
    }
}

/// `Accept`, `Content-Type`, the session id's bytes, and 2026-07-28's version header and
/// `Last-Event-ID`.
fn headers(request: &RequestView<'_>, method: &str, judge: &mut Judge<'_>) {
    let headers = request.headers;
    let mut found: Vec<(RuleId, String)> = Vec::new();
    if method == "POST" {
        let accept = header(headers, "accept").unwrap_or("").to_ascii_lowercase();
        let lists = |mime: &str| accept.contains(mime) || accept.contains("*/*");
        if !(lists("application/json") && lists("text/event-stream")) {
            found.push((
                RuleId::McpHttpAcceptHeader,
                format!(
                    "Accept must list application/json and text/event-stream, got {:?}",
                    header(headers, "accept").unwrap_or("")
                ),
            ));
        }
        let content_type = header(headers, "content-type").unwrap_or("");
        let mime = content_type.split(';').next().unwrap_or("").trim();
        if !mime.eq_ignore_ascii_case("application/json") {
            found.push((
                RuleId::McpHttpRequestContentType,
                format!("a POST body is application/json, got {content_type:?}"),
            ));
        }
    }
    if let Some(session) = header(headers, "mcp-session-id")
        && !session_id_ok(session)
    {
        judge.flag(
            RuleId::McpSessionIdCharset,
            "",
            format!("Mcp-Session-Id has bytes outside 0x21-0x7E: {session:?}"),
        );
    }
    if request.version.is_modern() {
        if header(headers, "last-event-id").is_some() {
            found.push((
                RuleId::McpSseLastEventIdV4,
                "Last-Event-ID on 2026-07-28: resumability was removed".to_owned(),
            ));
        }
        if method == "POST" && header(headers, "mcp-protocol-version").is_none() {
            judge.flag(
                RuleId::McpHttpProtocolVersionHeaderMissing,
                "",
                "a 2026-07-28 POST without MCP-Protocol-Version",
            );
        }
    }
    for (rule, detail) in found {
        judge.flag(rule, "", detail);
    }
}

/// A session id's bytes: visible ASCII only.
pub fn session_id_ok(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// 2026-07-28's `_meta`: the protocol version and client capabilities, and the version
/// agreeing with the header.
fn meta(request: &RequestView<'_>, message: &Value, judge: &mut Judge<'_>) {
    let meta = message.pointer("/params/_meta");
    let version = meta.and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"));
    let capabilities = meta.and_then(|m| m.get("io.modelcontextprotocol/clientCapabilities"));
    if version.is_none() || capabilities.is_none() {
        judge.flag(
            RuleId::McpLifecycleMetaMissing,
            "/params/_meta",
            format!(
                "a 2026-07-28 request needs _meta {}",
                match (version.is_none(), capabilities.is_none()) {
                    (true, true) => "protocolVersion and clientCapabilities",
                    (true, false) => "protocolVersion",
                    _ => "clientCapabilities",
                }
            ),
        );
    }
    if let (Some(version), Some(header_value)) = (
        version.and_then(Value::as_str),
        header(request.headers, "mcp-protocol-version"),
    ) && version != header_value
    {
        judge.flag(
            RuleId::McpLifecycleMetaVersionMismatch,
            "/params/_meta/io.modelcontextprotocol~1protocolVersion",
            format!("_meta says {version:?}, MCP-Protocol-Version says {header_value:?}"),
        );
    }
}

/// The methods whose `Mcp-Name` header names `params.name` (or `params.uri`).
const NAMED: [(&str, &str); 3] = [
    ("tools/call", "name"),
    ("prompts/get", "name"),
    ("resources/read", "uri"),
];

/// 2026-07-28's routing headers: `Mcp-Method` always, `Mcp-Name` for the named methods, each
/// equal to the body (after `=?base64?...?=` decoding).
fn routing(request: &RequestView<'_>, message: &Value, method: &str, judge: &mut Judge<'_>) {
    let headers = request.headers;
    match header(headers, "mcp-method") {
        None => judge.flag(
            RuleId::McpHttpRoutingHeaderMissing,
            "/method",
            format!("Mcp-Method is required on 2026-07-28 (the body's method is {method:?})"),
        ),
        Some(sent) if decoded(sent).as_deref() != Some(method) => judge.flag(
            RuleId::McpHttpRoutingHeaderMismatch,
            "/method",
            format!("Mcp-Method {sent:?} and the body's method {method:?} differ"),
        ),
        Some(_) => {}
    }
    let Some((_, member)) = NAMED.iter().find(|(named, _)| *named == method) else {
        return;
    };
    let body_name = message
        .get("params")
        .and_then(|p| p.get(*member))
        .and_then(Value::as_str);
    let pointer = format!("/params/{member}");
    match (header(headers, "mcp-name"), body_name) {
        (None, _) => judge.flag(
            RuleId::McpHttpRoutingHeaderMissing,
            &pointer,
            format!("Mcp-Name is required for {method} on 2026-07-28"),
        ),
        (Some(sent), Some(name)) if decoded(sent).as_deref() != Some(name) => judge.flag(
            RuleId::McpHttpRoutingHeaderMismatch,
            &pointer,
            format!("Mcp-Name {sent:?} and params.{member} {name:?} differ"),
        ),
        _ => {}
    }
}

/// A routing header's value: as sent, or the UTF-8 text of a `=?base64?...?=` one.
pub fn decoded(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok()),
        None => Some(value.to_owned()),
    }
}

/// A `tools/call` request's `params`: an object with a string `name`, and `arguments` (when
/// present) an object.
fn tools_call(params: Option<&Value>, judge: &mut Judge<'_>) {
    let name = params.and_then(|p| p.get("name"));
    if !params.is_some_and(Value::is_object) || !name.is_some_and(Value::is_string) {
        judge.flag(
            RuleId::McpToolsCallParamsInvalid,
            "/params",
            format!(
                "tools/call needs params with a string name, got {}",
                params.map_or_else(|| "no params".to_owned(), shown)
            ),
        );
    }
    if let Some(arguments) = params.and_then(|p| p.get("arguments"))
        && !arguments.is_object()
    {
        let detail = match arguments {
            Value::String(text)
                if serde_json::from_str::<Value>(text).is_ok_and(|v| v.is_object()) =>
            {
                "arguments sent as a JSON string (encode them as an object)".to_owned()
            }
            other => format!("arguments must be an object, got {}", shown(other)),
        };
        judge.flag(
            RuleId::McpToolsCallArgumentsNotObject,
            "/params/arguments",
            detail,
        );
    }
}

/// Whether the body holds a request (as opposed to only notifications and responses).
pub fn has_request(body: Option<&Value>) -> bool {
    let is_request = |m: &Value| kind_of(m.as_object()) == MessageKind::Request;
    match body {
        Some(Value::Array(items)) => items.iter().any(is_request),
        Some(message) => is_request(message),
        None => false,
    }
}

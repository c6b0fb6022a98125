//! §4.5 lifecycle and §4.2 version-header rules: `mcp.lifecycle.initialized_missing`,
//! `request_before_initialized`, `tools_capability_missing`, `list_changed_undeclared`,
//! `mcp.http.protocol_version_header_missing` and `protocol_version_header_mismatch` (a warning
//! on 2025 versions, whose basis is a SHOULD: the conformance suite itself sends `2025-03-26`
//! on a `2025-11-25` session); and what an `initialize` answer teaches the conversation.

use serde_json::Value;

use super::conversation::{Capabilities, Conversation};
use super::seen::{Msg, RpcId, method_of};
use super::{Out, Seen, result_of};
use crate::engine::RuleId;

/// The first version whose clients must send `MCP-Protocol-Version`.
const HEADER_SINCE: &str = "2025-06-18";

pub(super) fn judge(conversation: &mut Conversation, seen: &Seen<'_>, modern: bool, out: &mut Out) {
    if !modern && !conversation.shared {
        before_initialize(conversation, seen, out);
        version_header(conversation, seen, out);
    }
    if !modern {
        learn(conversation, seen);
    }
    capability(conversation, seen, out);
    list_changed(conversation, seen, out);
}

/// A request other than `ping` after the `initialize` answer, before `initialized`.
fn before_initialize(conversation: &mut Conversation, seen: &Seen<'_>, out: &mut Out) {
    if seen.sent_method("notifications/initialized") {
        conversation.initialized = true;
    }
    server_request_early(conversation, seen, out);
    if !conversation.from_start || conversation.initialized || conversation.initialized_reported {
        return;
    }
    let early = seen
        .requests()
        .find(|m| !matches!(method_of(m.value), Some("ping" | "initialize")));
    if let Some(msg) = early {
        conversation.initialized_reported = true;
        let method = method_of(msg.value).unwrap_or_default();
        let detail = format!(
            "{method} was sent after the initialize answer but no notifications/initialized came before it"
        );
        out.push(
            RuleId::McpLifecycleInitializedMissing,
            Some(msg),
            "/method",
            detail,
        );
    }
}

/// A server request other than `ping` before the client's `initialized` (a warning).
fn server_request_early(conversation: &Conversation, seen: &Seen<'_>, out: &mut Out) {
    if !conversation.from_start || conversation.initialized {
        return;
    }
    let early = seen.received.iter().find(|m| {
        m.value.get("id").is_some() && !matches!(method_of(m.value), None | Some("ping"))
    });
    if let Some(msg) = early {
        let method = method_of(msg.value).unwrap_or_default();
        let detail =
            format!("the server sent {method} before the client's notifications/initialized");
        out.push(
            RuleId::McpLifecycleRequestBeforeInitialized,
            Some(msg),
            "/method",
            detail,
        );
    }
}

/// The `MCP-Protocol-Version` header against the negotiated version (2025-06-18 and later).
fn version_header(conversation: &Conversation, seen: &Seen<'_>, out: &mut Out) {
    if seen.sent_method("initialize") || !conversation.version_at_least(HEADER_SINCE) {
        return;
    }
    let negotiated = conversation.version.as_deref().unwrap_or_default();
    match seen.protocol_header {
        None => {
            let detail = format!(
                "the session negotiated {negotiated}; this request has no MCP-Protocol-Version header"
            );
            out.push(
                RuleId::McpHttpProtocolVersionHeaderMissing,
                None,
                "",
                detail,
            );
        }
        Some(header) if header != negotiated => {
            let detail =
                format!("MCP-Protocol-Version is {header:?}; the session negotiated {negotiated}");
            out.warn(
                RuleId::McpHttpProtocolVersionHeaderMismatch,
                None,
                "",
                detail,
            );
        }
        Some(_) => {}
    }
}

/// The version and capabilities an `initialize` answer gave.
fn learn(conversation: &mut Conversation, seen: &Seen<'_>) {
    let Some(request) = seen
        .requests()
        .find(|m| method_of(m.value) == Some("initialize"))
    else {
        return;
    };
    let Some(result) = RpcId::of(request.value)
        .and_then(|id| seen.answer(&id))
        .and_then(|m| result_of(m.value))
    else {
        return;
    };
    conversation.from_start = true;
    conversation.version = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let tools = result.pointer("/capabilities/tools");
    conversation.capabilities = Some(Capabilities {
        tools: tools.is_some_and(Value::is_object),
        list_changed: tools.and_then(|t| t.get("listChanged")) == Some(&Value::Bool(true)),
        tasks_tools_call: result
            .pointer("/capabilities/tasks/requests/tools/call")
            .is_some_and(Value::is_object),
    });
}

/// `tools/list` or `tools/call` sent to a server that declared no `tools` capability.
fn capability(conversation: &Conversation, seen: &Seen<'_>, out: &mut Out) {
    let Some(capabilities) = conversation.capabilities else {
        return;
    };
    if capabilities.tools {
        return;
    }
    let asked = seen
        .requests()
        .find(|m| matches!(method_of(m.value), Some("tools/list" | "tools/call")));
    if let Some(msg) = asked {
        let method = method_of(msg.value).unwrap_or_default();
        let detail = format!(
            "{method} sent, but the server's initialize answer declared no tools capability"
        );
        out.push(
            RuleId::McpLifecycleToolsCapabilityMissing,
            Some(msg),
            "/method",
            detail,
        );
    }
}

/// `notifications/tools/list_changed`: forgets the catalog; a warning when undeclared.
fn list_changed(conversation: &mut Conversation, seen: &Seen<'_>, out: &mut Out) {
    let changed: Vec<&Msg<'_>> = seen
        .received
        .iter()
        .filter(|m| method_of(m.value) == Some("notifications/tools/list_changed"))
        .collect();
    let Some(first) = changed.first() else {
        return;
    };
    conversation.catalog.invalidate();
    if conversation.capabilities.is_some_and(|c| !c.list_changed) {
        let detail = "notifications/tools/list_changed from a server that did not declare tools.listChanged: true".to_owned();
        out.push(
            RuleId::McpLifecycleListChangedUndeclared,
            Some(first),
            "/method",
            detail,
        );
    }
}

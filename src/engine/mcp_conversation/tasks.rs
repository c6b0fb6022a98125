//! `mcp.tools_call.task_not_allowed` (2025-11-25 task augmentation): a `tools/call` with
//! `params.task` to a server whose `initialize` answer did not declare
//! `tasks.requests.tools.call`, or to a tool whose `execution.taskSupport` is absent or
//! `forbidden`; or one without `params.task` to a tool whose `taskSupport` is `required`.
//!
//! Input: the conversation's capabilities (known only when its `initialize` was seen) and
//! catalog (the calls of a conversation without one are noted unjudged by [`super::calls`]).
//! Only on 2025-11-25 (the negotiated version, else the request's version header): 2026-07-28
//! moved tasks to an extension.

use serde_json::Value;

use super::conversation::Conversation;
use super::seen::method_of;
use super::{Out, Seen};
use crate::engine::RuleId;

/// The revision that defines task augmentation in the core protocol.
const TASKS: &str = "2025-11-25";

pub(super) fn judge(conversation: &Conversation, seen: &Seen<'_>, out: &mut Out) {
    let version = conversation.version.as_deref().or(seen.protocol_header);
    if version != Some(TASKS) || !seen.whole {
        return;
    }
    for request in seen.requests() {
        if method_of(request.value) != Some("tools/call") {
            continue;
        }
        let Some(name) = request
            .value
            .pointer("/params/name")
            .and_then(Value::as_str)
        else {
            continue;
        };
        let task = request.value.pointer("/params/task").is_some();
        if task
            && conversation
                .capabilities
                .is_some_and(|c| !c.tasks_tools_call)
        {
            let detail = format!(
                "tools/call {name:?} carries params.task, but the server's initialize answer did not declare tasks.requests.tools.call"
            );
            out.push(
                RuleId::McpToolsCallTaskNotAllowed,
                Some(request),
                "/params/task",
                detail,
            );
            continue;
        }
        if let Some((pointer, detail)) = against_support(conversation, seen, name, task) {
            out.push(
                RuleId::McpToolsCallTaskNotAllowed,
                Some(request),
                pointer,
                detail,
            );
        }
    }
}

/// A call with a task to a tool whose taskSupport is forbidden, or one without a task to a
/// tool that requires it: where and why (`None` when the tool is unlisted or the call fits).
fn against_support(
    conversation: &Conversation,
    seen: &Seen<'_>,
    name: &str,
    task: bool,
) -> Option<(&'static str, String)> {
    let tool = conversation
        .catalog
        .judge_by(seen.start_us)
        .ok()
        .and_then(|listed| listed.tool(name))?;
    // Absent means `forbidden`; a value outside the three is `task_support_invalid`'s.
    let support = match tool.pointer("/execution/taskSupport") {
        None => "forbidden",
        Some(Value::String(s)) if matches!(s.as_str(), "forbidden" | "optional" | "required") => {
            s.as_str()
        }
        Some(_) => return None,
    };
    let (pointer, detail) = match (task, support) {
        (true, "forbidden") => (
            "/params/task",
            format!(
                "tools/call {name:?} carries params.task, but the tool's taskSupport is forbidden (or absent)"
            ),
        ),
        (false, "required") => (
            "/params",
            format!(
                "tools/call {name:?} has no params.task, but the tool's taskSupport is required"
            ),
        ),
        _ => return None,
    };
    Some((pointer, detail))
}

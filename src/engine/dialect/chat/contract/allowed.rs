//! `tool_choice: {"type":"allowed_tools"}` against what came back in one choice: every call
//! names an allowed tool, and `mode: "required"` got at least one call.
//!
//! Input: the choice's call outcomes and finish reason, and the request's
//! [`crate::engine::dialect::chat::surface::Allowed`]. Output: `chat_allowed.response.*`
//! violations at [`Stage::Complete`].

use super::Declared;
use crate::engine::report::ToolCallOutcome;
use crate::engine::rules::RuleId;
use crate::engine::violation::{Site, Stage, ViolationSink};

pub fn check_allowed(
    declared: Declared<'_>,
    calls: &[ToolCallOutcome],
    finish_reason: Option<&str>,
    base: &str,
    index: u32,
    sink: &mut ViolationSink,
) {
    let Some(allowed) = &declared.surface.allowed else {
        return;
    };
    for (position, call) in calls.iter().enumerate() {
        let Some(name) = call
            .name
            .as_deref()
            .filter(|name| !allowed.names.iter().any(|allowed| allowed == name))
        else {
            continue;
        };
        let detail = format!("{name:?} is outside the allowed tools {:?}", allowed.names);
        let site = Site::at(format!("{base}/message/tool_calls/{position}"))
            .choice(Some(index))
            .tool_call(Some(call.index));
        sink.push(
            RuleId::ChatAllowedResponseToolNotAllowed,
            Stage::Complete,
            site,
            detail,
        );
    }
    let cut_short = matches!(finish_reason, Some("length" | "content_filter"));
    if allowed.required && calls.is_empty() && !cut_short {
        let site = Site::at(format!("{base}/message")).choice(Some(index));
        sink.push(
            RuleId::ChatAllowedResponseRequiredViolated,
            Stage::Complete,
            site,
            "allowed_tools mode is \"required\" and no tool call came back",
        );
    }
}

//! `tool_choice: {"type":"allowed_tools"}` against what came back in one choice: every call
//! names an allowed tool, and `mode: "required"` got at least one call.
//!
//! Input: the choice's call outcomes and finish reason, and the request's
//! [`crate::engine::dialect::chat::surface::Allowed`]. Output: `chat_allowed.response.*`
//! violations at [`Stage::Complete`].

use super::Declared;
use crate::engine::judge::Judge;
use crate::engine::report::ToolCallOutcome;
use crate::engine::rules::RuleId;

/// Judges one choice's calls (`judge`: at the choice) against `allowed_tools`.
pub fn check_allowed(
    declared: Declared<'_>,
    calls: &[ToolCallOutcome],
    finish_reason: Option<&str>,
    judge: &mut Judge<'_>,
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
        let mut judge = judge
            .under_at("/message/tool_calls/", position)
            .tool_call(Some(call.index));
        judge.flag(RuleId::ChatAllowedResponseToolNotAllowed, "", detail);
    }
    let cut_short = matches!(finish_reason, Some("length" | "content_filter"));
    if allowed.required && calls.is_empty() && !cut_short {
        let detail = "allowed_tools mode is \"required\" and no tool call came back";
        judge.flag(
            RuleId::ChatAllowedResponseRequiredViolated,
            "/message",
            detail,
        );
    }
}

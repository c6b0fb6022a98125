//! The Responses stream event types tooltap knows (`ResponseStreamEvent` in the OpenAI spec).
//!
//! Input: a `data.type`. Output: whether it is a known type; anything else is reported as
//! `responses.stream.unknown_event_type` (a warning). Hosted-tool families (web search, file
//! search, code interpreter, image generation, MCP, reasoning, audio) are known by prefix so
//! their items pass without false alarms.

const EXACT: [&str; 26] = [
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
    "response.output_item.added",
    "response.output_item.done",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.delta",
    "response.output_text.done",
    "response.output_text.annotation.added",
    "response.refusal.delta",
    "response.refusal.done",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.custom_tool_call_input.delta",
    "response.custom_tool_call_input.done",
    "response.text.delta",
    "response.text.done",
    "response.output_text.logprobs",
    "keepalive",
    "response.cancelled",
    "response.output_text_annotation.added",
];

const FAMILIES: [&str; 11] = [
    "response.web_search_call.",
    "response.file_search_call.",
    "response.code_interpreter_call",
    "response.image_generation_call.",
    "response.mcp_",
    "response.reasoning",
    "response.audio.",
    "response.computer_call",
    "response.local_shell_call",
    "response.shell_call",
    "response.apply_patch_call",
];

pub fn known_event(kind: &str) -> bool {
    EXACT.contains(&kind) || FAMILIES.iter().any(|prefix| kind.starts_with(prefix))
}

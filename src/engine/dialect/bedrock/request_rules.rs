//! The `bedrock.request.*` rules: the declarations (`toolConfig.tools[].toolSpec`), the
//! `toolChoice`, and the tool history in `messages` (`toolUse` / `toolResult` blocks), judged
//! from the request body whatever the response status, in one pass over each.
//!
//! Input: the parsed request body and what [`super::request::read`] made of it. Output:
//! violations at `Stage::Request`.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::message::valid_id;
use super::request::{BedrockRequest, Choice};
use crate::engine::dialect::common::{preview, valid_name};
use crate::engine::rules::RuleId;
use crate::engine::violation::{Site, Stage, ViolationSink};

fn push(sink: &mut ViolationSink, rule: RuleId, at: String, detail: String) {
    sink.push(rule, Stage::Request, Site::at(at), detail);
}

/// Judges the request body.
pub fn check(body: &Value, request: &BedrockRequest, sink: &mut ViolationSink) {
    let config = body.get("toolConfig");
    if let Some(tools) = config
        .and_then(|c| c.get("tools"))
        .and_then(Value::as_array)
    {
        for (position, tool) in tools.iter().enumerate() {
            check_tool(tool, &format!("/toolConfig/tools/{position}"), sink);
        }
    }
    if let Some(choice) = config.and_then(|c| c.get("toolChoice")) {
        single_member(
            choice,
            "/toolConfig/toolChoice".to_owned(),
            "ToolChoice",
            sink,
        );
        if let Choice::Tool(name) = &request.choice
            && !request.declared.contains_key(name)
        {
            push(
                sink,
                RuleId::BedrockRequestToolChoiceUndeclared,
                "/toolConfig/toolChoice/tool/name".to_owned(),
                format!("toolChoice.tool names {name:?}, which toolConfig.tools does not declare"),
            );
        }
    }
    if let Some(messages) = body.get("messages").and_then(Value::as_array) {
        check_history(messages, config.is_some(), sink);
    }
}

/// A Smithy union: exactly one member.
fn single_member(value: &Value, at: String, union: &str, sink: &mut ViolationSink) -> bool {
    let count = value.as_object().map(Map::len);
    if count == Some(1) {
        return true;
    }
    push(
        sink,
        RuleId::BedrockRequestUnionNotSingle,
        at,
        format!(
            "a {union} must have exactly one member, got {}",
            preview(value)
        ),
    );
    false
}

fn check_tool(tool: &Value, at: &str, sink: &mut ViolationSink) {
    if !single_member(tool, at.to_owned(), "Tool", sink) {
        return;
    }
    let Some(spec) = tool.get("toolSpec") else {
        return;
    };
    let at = format!("{at}/toolSpec");
    let name = spec.get("name");
    let schema = spec.get("inputSchema");
    if name.is_none() || schema.is_none() {
        push(
            sink,
            RuleId::BedrockRequestToolSpecIncomplete,
            at.clone(),
            "a toolSpec needs its name and inputSchema".to_owned(),
        );
    }
    if let Some(name) = name
        && !name.as_str().is_some_and(|n| valid_name(n, 64))
    {
        push(
            sink,
            RuleId::BedrockRequestToolNameInvalid,
            format!("{at}/name"),
            format!(
                "a tool name must match [a-zA-Z0-9_-]{{1,64}}, got {}",
                preview(name)
            ),
        );
    }
    let Some(schema) = schema else {
        return;
    };
    if !single_member(schema, format!("{at}/inputSchema"), "ToolInputSchema", sink) {
        return;
    }
    let Some(json) = schema.get("json") else {
        return;
    };
    let kind = json.get("type");
    if kind.is_some_and(|t| t.as_str() != Some("object")) || !json.is_object() {
        push(
            sink,
            RuleId::BedrockRequestInputSchemaNotObject,
            format!("{at}/inputSchema/json/type"),
            format!(
                "inputSchema.json must describe an object, got type {}",
                kind.map(preview).unwrap_or_else(|| preview(json))
            ),
        );
    }
}

/// The `toolUse` / `toolResult` blocks of `messages`.
fn check_history(messages: &[Value], has_config: bool, sink: &mut ViolationSink) {
    let mut any_tool_block = None;
    for (turn, message) in messages.iter().enumerate() {
        let blocks = content(message);
        let mut uses = Vec::new();
        for (position, block) in blocks.iter().enumerate() {
            let at = format!("/messages/{turn}/content/{position}");
            if !single_member(block, at.clone(), "ContentBlock", sink) {
                continue;
            }
            if let Some(tool_use) = block.get("toolUse") {
                any_tool_block.get_or_insert_with(|| at.clone());
                check_id(tool_use, &format!("{at}/toolUse"), sink);
                if let Some(id) = tool_use.get("toolUseId").and_then(Value::as_str) {
                    uses.push(id);
                }
                let input = tool_use.get("input");
                if !input.is_some_and(Value::is_object) {
                    push(
                        sink,
                        RuleId::BedrockRequestToolUseInputNotObject,
                        format!("{at}/toolUse/input"),
                        format!(
                            "a replayed toolUse.input must be an object, got {}",
                            input.map(preview).unwrap_or_else(|| "nothing".into())
                        ),
                    );
                }
            }
            if let Some(result) = block.get("toolResult") {
                any_tool_block.get_or_insert_with(|| at.clone());
                check_id(result, &format!("{at}/toolResult"), sink);
                check_result_content(result, &format!("{at}/toolResult"), sink);
            }
        }
        if uses.is_empty() {
            continue;
        }
        let Some(next) = messages.get(turn + 1) else {
            continue;
        };
        let answered: BTreeSet<&str> = content(next)
            .iter()
            .filter_map(|b| b.get("toolResult")?.get("toolUseId")?.as_str())
            .collect();
        for id in uses.into_iter().filter(|id| !answered.contains(id)) {
            push(
                sink,
                RuleId::BedrockRequestToolResultMissing,
                format!("/messages/{}/content", turn + 1),
                format!("toolUse {id:?} of message {turn} has no toolResult in the next message"),
            );
        }
    }
    if let Some(at) = any_tool_block.filter(|_| !has_config) {
        push(
            sink,
            RuleId::BedrockRequestToolHistoryWithoutConfig,
            at,
            "messages hold toolUse/toolResult blocks and the request has no toolConfig".to_owned(),
        );
    }
}

fn content(message: &Value) -> &[Value] {
    message
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn check_id(block: &Value, at: &str, sink: &mut ViolationSink) {
    let id = block.get("toolUseId");
    if !id.and_then(Value::as_str).is_some_and(valid_id) {
        push(
            sink,
            RuleId::BedrockRequestToolUseIdInvalid,
            format!("{at}/toolUseId"),
            format!(
                "a toolUseId must match [a-zA-Z0-9_.:-]{{1,64}}, got {}",
                id.map(preview).unwrap_or_else(|| "nothing".into())
            ),
        );
    }
}

fn check_result_content(result: &Value, at: &str, sink: &mut ViolationSink) {
    let items = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (position, item) in items.iter().enumerate() {
        if let Some(json) = item.get("json")
            && !json.is_object()
        {
            push(
                sink,
                RuleId::BedrockRequestToolResultJsonNotObject,
                format!("{at}/content/{position}/json"),
                format!("toolResult json must be an object, got {}", preview(json)),
            );
        }
    }
}

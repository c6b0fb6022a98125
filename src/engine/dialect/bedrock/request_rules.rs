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
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;
use crate::engine::violation::{Stage, ViolationSink};

/// Judges the request body.
pub fn check(body: &Value, request: &BedrockRequest, sink: &mut ViolationSink) {
    let mut judge = Judge::new(sink, Stage::Request);
    let config = body.get("toolConfig");
    if let Some(tools) = config
        .and_then(|c| c.get("tools"))
        .and_then(Value::as_array)
    {
        for (position, tool) in tools.iter().enumerate() {
            check_tool(tool, &mut judge.under_at("/toolConfig/tools/", position));
        }
    }
    if let Some(choice) = config.and_then(|c| c.get("toolChoice")) {
        single_member(
            choice,
            "ToolChoice",
            &mut judge.under("/toolConfig/toolChoice"),
        );
        if let Choice::Tool(name) = &request.choice
            && !request.declared.contains_key(name)
        {
            let detail =
                format!("toolChoice.tool names {name:?}, which toolConfig.tools does not declare");
            let rule = RuleId::BedrockRequestToolChoiceUndeclared;
            judge.flag(rule, "/toolConfig/toolChoice/tool/name", detail);
        }
    }
    if let Some(messages) = body.get("messages").and_then(Value::as_array) {
        check_history(messages, config.is_some(), &mut judge);
    }
}

/// A Smithy union: exactly one member (`judge`: at the union).
fn single_member(value: &Value, union: &str, judge: &mut Judge<'_>) -> bool {
    let count = value.as_object().map(Map::len);
    if count == Some(1) {
        return true;
    }
    let detail = format!(
        "a {union} must have exactly one member, got {}",
        preview(value)
    );
    judge.flag(RuleId::BedrockRequestUnionNotSingle, "", detail);
    false
}

/// One `toolConfig.tools` entry: a `toolSpec` with a valid name and an object input schema
/// (`judge`: at the entry).
fn check_tool(tool: &Value, judge: &mut Judge<'_>) {
    if !single_member(tool, "Tool", judge) {
        return;
    }
    let Some(spec) = tool.get("toolSpec") else {
        return;
    };
    let mut judge = judge.under("/toolSpec");
    let name = spec.get("name");
    let schema = spec.get("inputSchema");
    if name.is_none() || schema.is_none() {
        let detail = "a toolSpec needs its name and inputSchema";
        judge.flag(RuleId::BedrockRequestToolSpecIncomplete, "", detail);
    }
    if let Some(name) = name
        && !name.as_str().is_some_and(|n| valid_name(n, 64))
    {
        let detail = format!(
            "a tool name must match [a-zA-Z0-9_-]{{1,64}}, got {}",
            preview(name)
        );
        judge.flag(RuleId::BedrockRequestToolNameInvalid, "/name", detail);
    }
    let Some(schema) = schema else {
        return;
    };
    if !single_member(schema, "ToolInputSchema", &mut judge.under("/inputSchema")) {
        return;
    }
    let Some(json) = schema.get("json") else {
        return;
    };
    let kind = json.get("type");
    if kind.is_some_and(|t| t.as_str() != Some("object")) || !json.is_object() {
        let detail = format!(
            "inputSchema.json must describe an object, got type {}",
            kind.map(preview).unwrap_or_else(|| preview(json))
        );
        let rule = RuleId::BedrockRequestInputSchemaNotObject;
        judge.flag(rule, "/inputSchema/json/type", detail);
    }
}

/// The `toolUse` / `toolResult` blocks of `messages` (`judge`: at the request's root).
fn check_history(messages: &[Value], has_config: bool, judge: &mut Judge<'_>) {
    let mut any_tool_block = None;
    for (turn, message) in messages.iter().enumerate() {
        let uses = check_blocks(content(message), turn, &mut any_tool_block, judge);
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
            let detail =
                format!("toolUse {id:?} of message {turn} has no toolResult in the next message");
            let rule = RuleId::BedrockRequestToolResultMissing;
            judge.flag(rule, format_args!("/messages/{}/content", turn + 1), detail);
        }
    }
    if let Some(at) = any_tool_block.filter(|_| !has_config) {
        let detail = "messages hold toolUse/toolResult blocks and the request has no toolConfig";
        judge.flag(RuleId::BedrockRequestToolHistoryWithoutConfig, at, detail);
    }
}

/// The content blocks of message `turn`: each a single-member union, a `toolUse` with a valid
/// id and an object input, a `toolResult` with a valid id and object json. Returns the
/// `toolUse` ids; `any_tool_block` keeps where the first tool block was.
fn check_blocks<'m>(
    blocks: &'m [Value],
    turn: usize,
    any_tool_block: &mut Option<String>,
    judge: &mut Judge<'_>,
) -> Vec<&'m str> {
    let mut uses = Vec::new();
    for (position, block) in blocks.iter().enumerate() {
        let at = format!("/messages/{turn}/content/{position}");
        let mut judge = judge.under(&at);
        if !single_member(block, "ContentBlock", &mut judge) {
            continue;
        }
        if let Some(tool_use) = block.get("toolUse") {
            any_tool_block.get_or_insert_with(|| at.clone());
            let mut judge = judge.under("/toolUse");
            check_id(tool_use, &mut judge);
            if let Some(id) = tool_use.get("toolUseId").and_then(Value::as_str) {
                uses.push(id);
            }
            let input = tool_use.get("input");
            if !input.is_some_and(Value::is_object) {
                let detail = format!(
                    "a replayed toolUse.input must be an object, got {}",
                    input.map(preview).unwrap_or_else(|| "nothing".into())
                );
                let rule = RuleId::BedrockRequestToolUseInputNotObject;
                judge.flag(rule, "/input", detail);
            }
        }
        if let Some(result) = block.get("toolResult") {
            any_tool_block.get_or_insert_with(|| at.clone());
            let mut judge = judge.under("/toolResult");
            check_id(result, &mut judge);
            check_result_content(result, &mut judge);
        }
    }
    uses
}

fn content(message: &Value) -> &[Value] {
    message
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// `tool_use_id_invalid` unless the block's `toolUseId` is valid (`judge`: at the block).
fn check_id(block: &Value, judge: &mut Judge<'_>) {
    let id = block.get("toolUseId");
    if !id.and_then(Value::as_str).is_some_and(valid_id) {
        let detail = format!(
            "a toolUseId must match [a-zA-Z0-9_.:-]{{1,64}}, got {}",
            id.map(preview).unwrap_or_else(|| "nothing".into())
        );
        judge.flag(RuleId::BedrockRequestToolUseIdInvalid, "/toolUseId", detail);
    }
}

/// `tool_result_json_not_object` for a `toolResult`'s json content (`judge`: at the result).
fn check_result_content(result: &Value, judge: &mut Judge<'_>) {
    let items = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (position, item) in items.iter().enumerate() {
        if let Some(json) = item.get("json")
            && !json.is_object()
        {
            let detail = format!("toolResult json must be an object, got {}", preview(json));
            let rule = RuleId::BedrockRequestToolResultJsonNotObject;
            judge.flag(rule, format_args!("/content/{position}/json"), detail);
        }
    }
}

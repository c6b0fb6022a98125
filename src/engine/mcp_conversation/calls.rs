//! §4.7 and §4.8 rules that need the catalog: `mcp.tools_call.name_unlisted`,
//! `arguments_schema`, `argument_json_string`, `structured_content_missing`,
//! `structured_content_schema`, and the SDK habits that stay warnings (§8.8):
//! `unknown_tool_as_result`, `unknown_tool_error_code`, `input_validation_as_protocol_error`,
//! `execution_error_as_protocol_error`; and 2026-07-28's `mcp.http.param_header_mismatch`
//! ([`super::params`]). Without a complete, fresh catalog they stay silent and
//! say why ([`super::Unjudged`]).

use serde_json::{Map, Value};

use super::catalog::Listed;
use super::conversation::Conversation;
use super::seen::{Msg, RpcId, method_of};
use super::{Out, Seen, Unjudged, result_of};
use crate::engine::RuleId;
use crate::engine::schema::{SchemaCheck, SchemaFailure};

/// Failures listed per schema check.
const MAX_FAILURES: usize = 8;
/// The version that made input-validation failures tool execution errors (SEP-1303).
const SEP_1303: &str = "2025-11-25";

/// One `tools/call` and its answer.
struct Call<'m, 'a> {
    request: &'m Msg<'a>,
    name: &'m str,
    arguments: Value,
    answer: Option<&'m Msg<'a>>,
}

pub(super) fn judge(conversation: &Conversation, seen: &Seen<'_>, out: &mut Out) {
    for request in seen.requests() {
        let Some(call) = call(seen, request) else {
            continue;
        };
        if !seen.whole {
            out.unjudged(Unjudged::ObservationCut);
            continue;
        }
        match conversation.catalog.judge_by(seen.start_us) {
            Ok(listed) => {
                judge_call(conversation, listed, &call, out);
                if let Some(tool) = listed.tool(call.name).filter(|_| seen.modern()) {
                    super::params::judge(
                        tool,
                        call.request,
                        &call.arguments,
                        seen.param_headers,
                        out,
                    );
                }
            }
            Err(why) => out.unjudged(why),
        }
    }
}

fn call<'m, 'a>(seen: &'m Seen<'a>, request: &'m Msg<'a>) -> Option<Call<'m, 'a>> {
    if method_of(request.value) != Some("tools/call") {
        return None;
    }
    let params = request.value.get("params")?;
    let name = params.get("name")?.as_str()?;
    let arguments = match params.get("arguments") {
        None => Value::Object(Map::new()),
        // Not an object: `arguments_not_object`, judged per message.
        Some(value) if !value.is_object() => return None,
        Some(value) => value.clone(),
    };
    let answer = RpcId::of(request.value).and_then(|id| seen.answer(&id));
    Some(Call {
        request,
        name,
        arguments,
        answer,
    })
}

fn judge_call(conversation: &Conversation, listed: &Listed, call: &Call<'_, '_>, out: &mut Out) {
    let Some(tool) = listed.tool(call.name) else {
        unlisted(call, out);
        return;
    };
    let failed = arguments(listed, tool, call, out);
    protocol_error(conversation, call, failed, out);
    structured(listed, tool, call, out);
}

/// A name the catalog does not list, and how the server answered it.
fn unlisted(call: &Call<'_, '_>, out: &mut Out) {
    let name = call.name;
    let detail =
        format!("tools/call names {name:?}, which the conversation's tools/list does not list");
    out.push(
        RuleId::McpToolsCallNameUnlisted,
        Some(call.request),
        "/params/name",
        detail,
    );
    let Some(answer) = call.answer else {
        return;
    };
    if result_of(answer.value).and_then(|r| r.get("isError")) == Some(&Value::Bool(true)) {
        let detail = format!(
            "the unknown tool {name:?} was answered with an isError result, not a JSON-RPC error"
        );
        out.push(
            RuleId::McpToolsCallUnknownToolAsResult,
            Some(answer),
            "/result/isError",
            detail,
        );
    }
    if let Some(code) = error_code(answer.value).filter(|code| *code != -32602) {
        let detail = format!("the unknown tool {name:?} was refused with code {code}, not -32602");
        out.push(
            RuleId::McpToolsCallUnknownToolErrorCode,
            Some(answer),
            "/error/code",
            detail,
        );
    }
}

/// The arguments against the tool's `inputSchema`; whether they failed it.
fn arguments(listed: &Listed, tool: &Value, call: &Call<'_, '_>, out: &mut Out) -> Option<bool> {
    let declared = listed.inputs.get(call.name)?;
    let failures = match declared.schema.check(&call.arguments, MAX_FAILURES) {
        SchemaCheck::Unchecked => return None,
        SchemaCheck::OverBudget => {
            out.unjudged(Unjudged::SchemaBudget);
            return None;
        }
        SchemaCheck::Checked(failures) => failures,
    };
    for failure in &failures {
        schema_failure(
            RuleId::McpToolsCallArgumentsSchema,
            call.request,
            "/params/arguments",
            failure,
            out,
        );
    }
    if !failures.is_empty() {
        json_strings(tool, call, out);
    }
    Some(!failures.is_empty())
}

/// Properties whose schema wants an object or array and whose value is a string holding one.
fn json_strings(tool: &Value, call: &Call<'_, '_>, out: &mut Out) {
    let Some(properties) = tool
        .pointer("/inputSchema/properties")
        .and_then(Value::as_object)
    else {
        return;
    };
    let Some(arguments) = call.arguments.as_object() else {
        return;
    };
    for (key, value) in arguments {
        let Some(text) = value.as_str() else {
            continue;
        };
        let wanted = properties
            .get(key)
            .and_then(|s| s.get("type"))
            .and_then(Value::as_str);
        let parsed = serde_json::from_str::<Value>(text).ok();
        let holds = matches!(
            (wanted, parsed),
            (Some("object"), Some(Value::Object(_))) | (Some("array"), Some(Value::Array(_)))
        );
        if holds {
            let pointer = format!(
                "/params/arguments/{}",
                key.replace('~', "~0").replace('/', "~1")
            );
            let detail = format!(
                "argument {key:?} is a JSON string holding the {} its schema wants",
                wanted.unwrap_or_default()
            );
            out.push(
                RuleId::McpToolsCallArgumentJsonString,
                Some(call.request),
                &pointer,
                detail,
            );
        }
    }
}

/// A JSON-RPC error where the spec asks for an `isError` result (warnings).
fn protocol_error(
    conversation: &Conversation,
    call: &Call<'_, '_>,
    failed: Option<bool>,
    out: &mut Out,
) {
    let Some((answer, code)) = call.answer.and_then(|a| Some((a, error_code(a.value)?))) else {
        return;
    };
    match failed {
        Some(true) if code == -32602 && conversation.version_at_least(SEP_1303) => {
            let detail = "the arguments failed the inputSchema and the server answered -32602; since 2025-11-25 input validation errors are isError results".to_owned();
            out.push(
                RuleId::McpToolsCallInputValidationAsProtocolError,
                Some(answer),
                "/error/code",
                detail,
            );
        }
        Some(false) if !matches!(code, -32602 | -32601 | -32042) => {
            let detail = format!(
                "a listed tool with valid arguments failed with JSON-RPC error {code}; tool errors belong in an isError result"
            );
            out.push(
                RuleId::McpToolsCallExecutionErrorAsProtocolError,
                Some(answer),
                "/error/code",
                detail,
            );
        }
        _ => {}
    }
}

/// `structuredContent` against the tool's `outputSchema` (not for `isError` results, task
/// results or `input_required`).
fn structured(listed: &Listed, tool: &Value, call: &Call<'_, '_>, out: &mut Out) {
    if tool.get("outputSchema").is_none() {
        return;
    }
    let Some(answer) = call.answer else {
        return;
    };
    let Some(result) = result_of(answer.value) else {
        return;
    };
    let exempt = result.get("isError") == Some(&Value::Bool(true))
        || result.get("task").is_some()
        || result.get("resultType").is_some_and(|t| t != "complete");
    if exempt {
        return;
    }
    let Some(content) = result.get("structuredContent") else {
        let detail = format!(
            "tool {:?} declares an outputSchema; the result has no structuredContent",
            call.name
        );
        out.push(
            RuleId::McpToolsCallStructuredContentMissing,
            Some(answer),
            "/result",
            detail,
        );
        return;
    };
    let Some(declared) = listed.outputs.get(call.name) else {
        return;
    };
    match declared.schema.check(content, MAX_FAILURES) {
        SchemaCheck::Checked(failures) => {
            for failure in &failures {
                schema_failure(
                    RuleId::McpToolsCallStructuredContentSchema,
                    answer,
                    "/result/structuredContent",
                    failure,
                    out,
                );
            }
        }
        SchemaCheck::OverBudget => out.unjudged(Unjudged::SchemaBudget),
        SchemaCheck::Unchecked => {}
    }
}

fn schema_failure(rule: RuleId, msg: &Msg<'_>, base: &str, failure: &SchemaFailure, out: &mut Out) {
    let mut judge = out.at(Some(msg));
    let mut site = judge.site(format_args!("{base}{}", failure.instance_path));
    site.schema_path = Some(failure.schema_path.clone());
    judge.flag_site(true, rule, site, failure.message.clone());
}

fn error_code(value: &Value) -> Option<i64> {
    value.pointer("/error/code").and_then(Value::as_i64)
}

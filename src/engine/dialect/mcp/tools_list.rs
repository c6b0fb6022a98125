//! A `tools/list` result (the reference's §4.6, state M): the page's shape, each tool's name,
//! its `inputSchema` (an object schema, valid for its JSON Schema dialect, its `$ref`s local),
//! `outputSchema`, `annotations`, 2025-11-25's `execution.taskSupport`, 2026-07-28's
//! `x-mcp-header` marks and cache fields, and `nextCursor`.
//!
//! Input: the `result` object of this exchange's `tools/list`, the exchange's [`Version`], the
//! schema cache. Output: violations. The schemas are compiled through the schema cache (as the
//! other dialects' declared tools are: bounded by `inspect.schema_compile_bytes` and the
//! cache's bytes), which meta-validates them; the conversation store later finds the same
//! compiled validators there for the calls' arguments.

use serde_json::{Map, Value};

use super::envelope::shown;
use super::version::Version;
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;
use crate::engine::schema::{Declaration, SchemaCache, ToolReading, ToolSchema};

/// How a `tools/list` page names its tools for the schema cache: `name` and `inputSchema`.
pub const TOOLS: ToolReading = ToolReading {
    key_prefix: "mcp.tools_list:",
    tool: declaration,
    grammars: None,
};

fn declaration(item: &Value, index: usize) -> Option<Declaration<'_>> {
    Some(Declaration {
        name: item.get("name")?.as_str()?,
        parameters_path: format!("/result/tools/{index}/inputSchema"),
        parameters: item.get("inputSchema").filter(|schema| schema.is_object()),
    })
}

/// The `$schema` dialects the validator knows (with and without the trailing `#`).
const DIALECTS: [&str; 5] = [
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema",
    "http://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-04/schema",
];

/// The `*Hint` members of `ToolAnnotations`.
const HINTS: [&str; 4] = [
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];

/// Judges one page.
pub fn judge(result: &Value, version: Version, cache: &SchemaCache, judge: &mut Judge<'_>) {
    let Some(result) = result.as_object() else {
        return;
    };
    if let Some(cursor) = result.get("nextCursor")
        && !cursor.is_string()
    {
        judge.flag(
            RuleId::McpToolsListNextCursorType,
            "/result/nextCursor",
            format!("nextCursor is a string, got {}", shown(cursor)),
        );
    }
    if version.is_modern() {
        cache_fields(result, judge);
    }
    let Some(tools) = result.get("tools").and_then(Value::as_array) else {
        judge.flag(
            RuleId::McpToolsListResultShape,
            "/result/tools",
            format!(
                "result.tools must be an array, got {}",
                result
                    .get("tools")
                    .map_or_else(|| "nothing".to_owned(), shown)
            ),
        );
        return;
    };
    let mut judged_schemas = Vec::with_capacity(tools.len());
    for (index, tool) in tools.iter().enumerate() {
        let pointer = format!("/result/tools/{index}");
        let Some(object) = tool.as_object() else {
            judge.flag(
                RuleId::McpToolsListResultShape,
                &pointer,
                format!("a tool is an object, got {}", shown(tool)),
            );
            judged_schemas.push(false);
            continue;
        };
        judged_schemas.push(judge_tool(object, &pointer, version, judge));
    }
    invalid_schemas(result.get("tools"), &judged_schemas, version, cache, judge);
}

/// One tool; returns whether its `inputSchema` should be meta-validated (an object schema in
/// a dialect tooltap knows, whose `$ref`s all resolve locally).
fn judge_tool(
    tool: &Map<String, Value>,
    pointer: &str,
    version: Version,
    judge: &mut Judge<'_>,
) -> bool {
    judge_members(tool, pointer, version, judge);
    let schema_pointer = format!("{pointer}/inputSchema");
    let schema = match tool.get("inputSchema") {
        None | Some(Value::Null) => {
            judge.flag(
                RuleId::McpToolsListInputSchemaMissing,
                &schema_pointer,
                "inputSchema is required (and never null)".to_owned(),
            );
            return false;
        }
        Some(schema) if !object_schema(schema) => {
            judge.flag(
                RuleId::McpToolsListInputSchemaNotObject,
                &schema_pointer,
                format!(
                    "inputSchema's root type must be \"object\", got {}",
                    shown(schema)
                ),
            );
            return false;
        }
        Some(schema) => schema,
    };
    if version.is_modern() {
        x_mcp_headers(schema, &schema_pointer, judge);
    }
    let dialect_known = match schema.get("$schema") {
        None => true,
        Some(Value::String(dialect)) => {
            let bare = dialect.trim_end_matches('#');
            let known = DIALECTS.contains(&bare);
            if !known && version >= Version::V3 {
                judge.flag(RuleId::McpToolsListSchemaDialectUnsupported,
                    format!("{schema_pointer}/$schema"),
                    format!("$schema {dialect:?} names a dialect tooltap cannot validate: its schema rules are skipped"),
                );
            }
            known
        }
        Some(_) => true,
    };
    let refs_ok = refs(schema, schema, &schema_pointer, judge);
    dialect_known && refs_ok
}

/// A tool's name, annotations, outputSchema and taskSupport.
fn judge_members(
    tool: &Map<String, Value>,
    pointer: &str,
    version: Version,
    judge: &mut Judge<'_>,
) {
    match tool.get("name") {
        Some(Value::String(name)) => {
            if version >= Version::V3 && !name_ok(name) {
                judge.flag(
                    RuleId::McpToolsListNameFormat,
                    format!("{pointer}/name"),
                    format!("tool name {name:?} is not 1-128 of [A-Za-z0-9_.-/]"),
                );
            }
        }
        other => judge.flag(
            RuleId::McpToolsListNameMissing,
            format!("{pointer}/name"),
            format!(
                "a tool needs a string name, got {}",
                other.map_or_else(|| "nothing".to_owned(), shown)
            ),
        ),
    }
    if let Some(annotations) = tool.get("annotations") {
        annotations_shape(annotations, &format!("{pointer}/annotations"), judge);
    }
    if version >= Version::V2
        && version <= Version::V3
        && let Some(output) = tool.get("outputSchema")
        && !object_schema(output)
    {
        judge.flag(
            RuleId::McpToolsListOutputSchemaNotObject,
            format!("{pointer}/outputSchema"),
            format!(
                "outputSchema's root type must be \"object\", got {}",
                shown(output)
            ),
        );
    }
    if version == Version::V3
        && let Some(support) = tool.get("execution").and_then(|e| e.get("taskSupport"))
        && !matches!(
            support.as_str(),
            Some("forbidden" | "optional" | "required")
        )
    {
        judge.flag(
            RuleId::McpToolsListTaskSupportInvalid,
            format!("{pointer}/execution/taskSupport"),
            format!(
                "taskSupport is forbidden, optional or required, got {}",
                shown(support)
            ),
        );
    }
}

/// A schema whose root `type` is `"object"`.
fn object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// SEP-986's tool name: 1-128 characters of `[A-Za-z0-9_.-]` (the conformance suite allows
/// `/` too).
fn name_ok(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/'))
}

fn annotations_shape(annotations: &Value, pointer: &str, judge: &mut Judge<'_>) {
    let Some(object) = annotations.as_object() else {
        judge.flag(
            RuleId::McpToolsListAnnotationsShape,
            pointer,
            format!("annotations is an object, got {}", shown(annotations)),
        );
        return;
    };
    for hint in HINTS {
        if let Some(value) = object.get(hint)
            && !value.is_boolean()
        {
            judge.flag(
                RuleId::McpToolsListAnnotationsShape,
                format!("{pointer}/{hint}"),
                format!("{hint} is a boolean, got {}", shown(value)),
            );
        }
    }
}

/// Every `$ref` of the schema: a network one is reported (never fetched), a local one must
/// resolve inside the document. Returns whether all resolve locally. Iterative: the schema's
/// depth is the client's to choose.
fn refs(root: &Value, schema: &Value, pointer: &str, judge: &mut Judge<'_>) -> bool {
    let mut ok = true;
    let mut stack = vec![(schema, pointer.to_owned())];
    while let Some((node, path)) = stack.pop() {
        match node {
            Value::Object(members) => {
                if let Some(Value::String(target)) = members.get("$ref") {
                    ok &= judge_ref(root, target, &format!("{path}/$ref"), judge);
                }
                for (key, member) in members {
                    if member.is_object() || member.is_array() {
                        stack.push((
                            member,
                            format!("{path}/{}", crate::engine::violation::pointer_token(key)),
                        ));
                    }
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    if item.is_object() || item.is_array() {
                        stack.push((item, format!("{path}/{index}")));
                    }
                }
            }
            _ => {}
        }
    }
    ok
}

fn judge_ref(root: &Value, target: &str, pointer: &str, judge: &mut Judge<'_>) -> bool {
    if target.starts_with("http://") || target.starts_with("https://") {
        judge.flag(
            RuleId::McpToolsListSchemaRefNetwork,
            pointer,
            format!("$ref {target:?} points to the network: never fetched"),
        );
        return false;
    }
    let Some(fragment) = target.strip_prefix('#') else {
        return true;
    };
    // `#name` anchors are the validator's to resolve; `#` and `#/...` are JSON pointers.
    if !(fragment.is_empty() || fragment.starts_with('/')) {
        return true;
    }
    let decoded = percent_decoded(fragment);
    if root.pointer(&decoded).is_some() {
        return true;
    }
    judge.flag(
        RuleId::McpToolsListSchemaRefUnresolvable,
        pointer,
        format!("$ref {target:?} resolves to nothing inside the schema"),
    );
    false
}

/// A URI fragment's `%XX` escapes decoded (a JSON pointer in a `$ref` is URI-encoded).
fn percent_decoded(fragment: &str) -> String {
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok())
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Compiles the page's schemas through the cache; a schema the validator refuses is
/// `input_schema_invalid` (a warning before 2025-11-25, whose spec said nothing of dialects).
fn invalid_schemas(
    tools: Option<&Value>,
    judged: &[bool],
    version: Version,
    cache: &SchemaCache,
    judge: &mut Judge<'_>,
) {
    let Some(tools) = tools else {
        return;
    };
    if !judged.iter().any(|judge| *judge) {
        return;
    }
    let compiled = cache.tools_for(tools, &TOOLS);
    for tool in compiled.iter() {
        let ToolSchema::Invalid(reason) = &tool.schema else {
            continue;
        };
        let index = tool
            .parameters_path
            .strip_prefix("/result/tools/")
            .and_then(|rest| rest.split('/').next())
            .and_then(|index| index.parse::<usize>().ok());
        if index.is_none_or(|index| judged.get(index) != Some(&true)) {
            continue;
        }
        let detail = format!("tool {:?}: {reason}", tool.name);
        match version >= Version::V3 {
            true => judge.flag(
                RuleId::McpToolsListInputSchemaInvalid,
                &tool.parameters_path,
                detail,
            ),
            false => judge.warn(
                RuleId::McpToolsListInputSchemaInvalid,
                &tool.parameters_path,
                detail,
            ),
        }
    }
}

/// 2026-07-28's `ttlMs` (a number, at least 0) and `cacheScope` (`public` or `private`).
fn cache_fields(result: &Map<String, Value>, judge: &mut Judge<'_>) {
    let ttl = result.get("ttlMs");
    if !ttl.and_then(Value::as_f64).is_some_and(|ttl| ttl >= 0.0) {
        judge.flag(
            RuleId::McpToolsListCacheFieldsMissing,
            "/result/ttlMs",
            format!(
                "a 2026-07-28 list result needs ttlMs >= 0, got {}",
                ttl.map_or_else(|| "nothing".to_owned(), shown)
            ),
        );
    }
    let scope = result.get("cacheScope");
    if !matches!(scope.and_then(Value::as_str), Some("public" | "private")) {
        judge.flag(
            RuleId::McpToolsListCacheFieldsMissing,
            "/result/cacheScope",
            format!(
                "a 2026-07-28 list result needs cacheScope public or private, got {}",
                scope.map_or_else(|| "nothing".to_owned(), shown)
            ),
        );
    }
}

/// 2026-07-28's `x-mcp-header` marks on `inputSchema.properties`: a non-empty HTTP token,
/// unique (case-insensitively), on a string, integer or boolean property.
fn x_mcp_headers(schema: &Value, pointer: &str, judge: &mut Judge<'_>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let mut seen: Vec<String> = Vec::new();
    for (name, property) in properties {
        let Some(mark) = property.get("x-mcp-header") else {
            continue;
        };
        let here = format!(
            "{pointer}/properties/{}/x-mcp-header",
            crate::engine::violation::pointer_token(name)
        );
        let problem = match mark.as_str() {
            None => Some(format!("x-mcp-header is a string, got {}", shown(mark))),
            Some("") => Some("x-mcp-header is empty".to_owned()),
            Some(token) if !token.bytes().all(tchar) => {
                Some(format!("x-mcp-header {token:?} is not an HTTP token"))
            }
            Some(token) if seen.iter().any(|s| s.eq_ignore_ascii_case(token)) => {
                Some(format!("x-mcp-header {token:?} marks two properties"))
            }
            Some(_)
                if matches!(
                    property.get("type").and_then(Value::as_str),
                    Some("number" | "array" | "object")
                ) =>
            {
                Some("x-mcp-header on a number, array or object property".to_owned())
            }
            Some(_) => None,
        };
        if let Some(token) = mark.as_str() {
            seen.push(token.to_owned());
        }
        if let Some(problem) = problem {
            judge.flag(RuleId::McpToolsListXMcpHeaderInvalid, &here, problem);
        }
    }
}

/// An RFC 9110 token character.
pub(crate) fn tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

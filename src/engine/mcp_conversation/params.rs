//! `mcp.http.param_header_mismatch` (2026-07-28): each `x-mcp-header` mark of the called tool's
//! `inputSchema` (the catalog's, so this needs the conversation's `tools/list`) against the
//! request's `Mcp-Param-{Name}` header.
//!
//! Input: the listed tool, the call's arguments, the request's `Mcp-Param-*` headers. Output: a
//! violation per mark whose header is missing while the argument has a value, present while it
//! has none (absent or `null`: the client must omit the header), or whose value (after
//! `=?base64?…?=` decoding) differs from the argument's string form; integers compare
//! numerically (`42.0` is `42`). A tool whose marks break the `x-mcp-header` constraints is one
//! a client must drop (`mcp.tools_list.x_mcp_header_invalid`): its calls are not judged here.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::Value;

use super::Out;
use super::seen::Msg;
use crate::engine::RuleId;
use crate::engine::dialect::mcp::tools_list::tchar;
use crate::engine::violation::pointer_token;

/// One `x-mcp-header` mark: the chain of `properties` keys to it and the header's name part.
#[derive(Debug, PartialEq)]
struct Mark<'t> {
    path: Vec<&'t str>,
    name: &'t str,
}

/// Judges the call `request` of `tool` with these `arguments` and `Mcp-Param-*` headers.
pub(super) fn judge(
    tool: &Value,
    request: &Msg<'_>,
    arguments: &Value,
    headers: &[(String, String)],
    out: &mut Out,
) {
    let Some(marks) = tool.get("inputSchema").and_then(marks) else {
        return;
    };
    for mark in marks {
        let argument = at_path(arguments, &mark.path).filter(|v| !v.is_null());
        let header = headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(mark.name))
            .map(|(_, value)| value.as_str());
        let problem = match (argument, header) {
            (None, None) => None,
            (Some(_), None) => Some(format!(
                "the argument has a value but the request has no Mcp-Param-{} header",
                mark.name
            )),
            (None, Some(_)) => Some(format!(
                "Mcp-Param-{} is sent but the argument has no value (the header must be omitted)",
                mark.name
            )),
            (Some(value), Some(header)) => differs(value, header)
                .map(|why| format!("Mcp-Param-{} disagrees with the argument: {why}", mark.name)),
        };
        if let Some(detail) = problem {
            let pointer: String = mark
                .path
                .iter()
                .map(|key| format!("/{}", pointer_token(key)))
                .collect();
            let pointer = format!("/params/arguments{pointer}");
            out.push(
                RuleId::McpHttpParamHeaderMismatch,
                Some(request),
                &pointer,
                detail,
            );
        }
    }
}

/// Why the header's value is not the argument's, if it is not.
fn differs(argument: &Value, header: &str) -> Option<String> {
    let decoded = match decode(header) {
        Ok(text) => text,
        Err(why) => return Some(why),
    };
    let same = match argument {
        Value::String(text) => *text == decoded,
        Value::Bool(flag) => decoded == if *flag { "true" } else { "false" },
        Value::Number(number) => {
            let wanted = number.as_f64();
            decoded
                .trim()
                .parse::<f64>()
                .ok()
                .is_some_and(|got| Some(got) == wanted)
        }
        // An array or object is the arguments schema's business (such a mark is invalid).
        _ => return None,
    };
    (!same).then(|| format!("header {decoded:?}, argument {argument}"))
}

/// The header's value, decoded from the `=?base64?…?=` sentinel form when in it.
fn decode(header: &str) -> Result<String, String> {
    let Some(inner) = header
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    else {
        return Ok(header.to_owned());
    };
    let bytes = BASE64
        .decode(inner)
        .map_err(|_| format!("header {header:?} is not valid base64"))?;
    String::from_utf8(bytes).map_err(|_| format!("header {header:?} decodes to no UTF-8 text"))
}

/// The instance value at a chain of object keys.
fn at_path<'v>(arguments: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter()
        .try_fold(arguments, |value, key| value.as_object()?.get(*key))
}

/// The marks reachable through `properties` chains, or `None` when one of them breaks the
/// constraints (the tool is one a client must drop).
fn marks(schema: &Value) -> Option<Vec<Mark<'_>>> {
    let mut found = Vec::new();
    let mut stack: Vec<(&Value, Vec<&str>)> = vec![(schema, Vec::new())];
    while let Some((schema, path)) = stack.pop() {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            continue;
        };
        for (key, property) in properties {
            let mut here = path.clone();
            here.push(key.as_str());
            if let Some(mark) = property.get("x-mcp-header") {
                let name = mark.as_str().filter(|n| valid(n, property))?;
                found.push(Mark {
                    path: here.clone(),
                    name,
                });
            }
            stack.push((property, here));
        }
    }
    let mut names: Vec<String> = found.iter().map(|m| m.name.to_ascii_lowercase()).collect();
    names.sort();
    let unique = names.windows(2).all(|pair| pair[0] != pair[1]);
    unique.then_some(found)
}

/// A mark's name is a non-empty HTTP token on a string, integer or boolean property.
fn valid(name: &str, property: &Value) -> bool {
    !name.is_empty()
        && name.bytes().all(tchar)
        && !matches!(
            property.get("type").and_then(Value::as_str),
            Some("number" | "array" | "object")
        )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn values_compare_as_the_spec_encodes_them() {
        assert_eq!(differs(&json!("us-west1"), "us-west1"), None);
        assert_eq!(
            differs(&json!("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?="),
            None
        );
        assert_eq!(differs(&json!(42), "42.0"), None);
        assert_eq!(differs(&json!(-7), "-7"), None);
        assert_eq!(differs(&json!(true), "true"), None);
        assert!(differs(&json!(true), "True").is_some());
        assert!(differs(&json!(42), "43").is_some());
        assert!(differs(&json!("Paris"), "London").is_some());
        assert!(differs(&json!("x"), "=?base64?!!?=").is_some());
    }

    #[test]
    fn marks_follow_properties_chains_and_refuse_broken_ones() {
        let schema = json!({"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "opts":{"type":"object","properties":{"tenant":{"type":"integer","x-mcp-header":"Tenant"}}},
            "list":{"type":"array","items":{"properties":{"x":{"x-mcp-header":"Ignored"}}}}
        }});
        let mut found = marks(&schema).expect("valid marks");
        found.sort_by_key(|m| m.name);
        assert_eq!(
            found,
            [
                Mark {
                    path: vec!["region"],
                    name: "Region"
                },
                Mark {
                    path: vec!["opts", "tenant"],
                    name: "Tenant"
                }
            ]
        );
        let twice = json!({"properties":{"a":{"x-mcp-header":"A"},"b":{"x-mcp-header":"a"}}});
        assert_eq!(marks(&twice), None);
        let number = json!({"properties":{"a":{"type":"number","x-mcp-header":"A"}}});
        assert_eq!(marks(&number), None);
    }
}

//! The Gemini request rules (`gemini.request.*`): the declarations ([`declarations`]),
//! `toolConfig.functionCallingConfig` (here) and the `functionCall` / `functionResponse`
//! history ([`history`]).
//!
//! Input: the parsed request body, its reading ([`GeminiRequest`]) and the path with its query
//! (which may carry a `key=` credential: never kept, logged or put in a detail). Output:
//! request-stage violations into `sink`, each at a JSON pointer into the request that spells
//! every member the way the request did (`toolConfig` or `tool_config`, ...). Request rules are
//! judged whatever the response status. The work is one pass over the declarations and one over
//! `contents`, holding only borrowed names and per-turn indexes beside the parsed body.
//! `gemini.request.thought_signature_sentinel` is informational in the reference: the sentinel
//! counts as a signature and is never reported (tooltap has no informational severity).

mod declarations;
mod history;

use serde_json::Value;

use super::request::{GeminiRequest, Mode};
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;
use crate::engine::violation::{Stage, ViolationSink};

/// Judges the request.
pub(super) fn check(
    request: &Value,
    reading: &GeminiRequest,
    path: Option<&str>,
    sink: &mut ViolationSink,
) {
    let cached = keyed(request, "cachedContent", "cached_content").is_some();
    let mut judge = Judge::new(sink, Stage::Request);
    declarations::check(request, &mut judge);
    tool_config(request, reading, path.is_some(), cached, &mut judge);
    history::check(request, reading.facts.model.as_deref(), cached, &mut judge);
}

/// A member by either spelling (lowerCamel first, then snake_case) with the key the request
/// used, for pointers; a `null` member counts as absent.
fn keyed<'v>(
    value: &'v Value,
    camel: &'static str,
    snake: &'static str,
) -> Option<(&'static str, &'v Value)> {
    [camel, snake]
        .into_iter()
        .find_map(|key| Some((key, value.get(key).filter(|member| !member.is_null())?)))
}

/// `allowedFunctionNames`, the mode, and `streamFunctionCallArguments` against the path form.
/// `with_path`: the caller knew the request path (without it, the API the request went to is
/// unknown and `stream_args_on_gemini_api` is not judged). `cached`: the request names a
/// `cachedContent`, which may declare the functions, so what the request itself declares is
/// not held against the allowed names and the mode.
fn tool_config(
    request: &Value,
    reading: &GeminiRequest,
    with_path: bool,
    cached: bool,
    judge: &mut Judge<'_>,
) {
    let Some((config_key, config)) = keyed(request, "toolConfig", "tool_config") else {
        return;
    };
    let Some((calling_key, calling)) =
        keyed(config, "functionCallingConfig", "function_calling_config")
    else {
        return;
    };
    let mut judge = judge.under(format_args!("/{config_key}/{calling_key}"));
    if let Some((key, Value::Array(names))) =
        keyed(calling, "allowedFunctionNames", "allowed_function_names")
    {
        allowed_names(key, names, reading, cached, &mut judge);
    }
    if matches!(reading.mode, Mode::Any | Mode::Validated) && !reading.declares && !cached {
        let mode = if reading.mode == Mode::Any {
            "ANY"
        } else {
            "VALIDATED"
        };
        let detail =
            format!("mode {mode} asks for function calls, and the request declares no function");
        judge.flag(
            RuleId::GeminiRequestModeAnyWithoutDeclarations,
            "/mode",
            detail,
        );
    }
    let stream_key = keyed(
        calling,
        "streamFunctionCallArguments",
        "stream_function_call_arguments",
    )
    .map(|(key, _)| key);
    if let (Some(key), true, false, true) = (
        stream_key,
        reading.stream_arguments,
        reading.vertex,
        with_path,
    ) {
        let detail = "streamFunctionCallArguments is Vertex AI only, and the path is the Gemini API's (no /publishers/google/)";
        judge.flag(
            RuleId::GeminiRequestStreamArgsOnGeminiApi,
            format_args!("/{key}"),
            detail,
        );
    }
}

/// `allowedFunctionNames` (at `key`, in `judge`'s `functionCallingConfig`): each name declared,
/// and a mode they apply to.
fn allowed_names(
    key: &str,
    names: &[Value],
    reading: &GeminiRequest,
    cached: bool,
    judge: &mut Judge<'_>,
) {
    for (position, name) in names.iter().enumerate() {
        let declared = name
            .as_str()
            .is_some_and(|name| reading.declared.contains_key(name));
        if !declared && !cached {
            let shown = crate::engine::dialect::common::preview(name);
            let detail = format!(
                "allowedFunctionNames names {shown}, which no functionDeclarations entry declares"
            );
            judge.flag(
                RuleId::GeminiRequestAllowedNameUndeclared,
                format_args!("/{key}/{position}"),
                detail,
            );
        }
    }
    let mode = match &reading.mode {
        Mode::Unspecified => Some("unset (AUTO)"),
        Mode::Auto => Some("AUTO"),
        Mode::None => Some("NONE"),
        Mode::Any | Mode::Validated | Mode::Other(_) => None,
    };
    if let (Some(mode), false) = (mode, names.is_empty()) {
        let detail = format!(
            "allowedFunctionNames is set with mode {mode}: it applies only to ANY (and, in v1beta, VALIDATED)"
        );
        judge.flag(
            RuleId::GeminiRequestAllowedNamesWithoutAny,
            format_args!("/{key}"),
            detail,
        );
    }
}

/// What the request rules say about a body posted to `path`: `(rule id, pointer, severity)`.
#[cfg(test)]
fn judged(body: &Value, path: &str) -> Vec<(&'static str, String, &'static str)> {
    let mut sink = ViolationSink::new(crate::engine::SeverityOverrides::default());
    let reading = super::request::read(Some(body), Some(path));
    check(body, &reading, Some(path), &mut sink);
    sink.into_vec()
        .into_iter()
        .map(|v| (v.rule.as_str(), v.path, v.severity.as_str()))
        .collect()
}

/// The one violation a test expects, as [`judged`] lists it.
#[cfg(test)]
fn one(
    rule: &'static str,
    path: impl Into<String>,
    severity: &'static str,
) -> Vec<(&'static str, String, &'static str)> {
    vec![(rule, path.into(), severity)]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const AI_STUDIO: &str = "/v1beta/models/gemini-2.5-flash:generateContent";
    const VERTEX: &str = "/v1beta1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse";

    fn with_config(config: Value) -> Value {
        json!({
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "tools": [{"functionDeclarations": [{"name": "a", "parameters": {"type": "OBJECT", "properties": {"x": {"type": "STRING"}}}}]}],
            "toolConfig": {"functionCallingConfig": config}
        })
    }

    fn rules(found: &[(&'static str, String, &'static str)]) -> Vec<&'static str> {
        found.iter().map(|(rule, _, _)| *rule).collect()
    }

    #[test]
    fn allowed_names_are_declared_names_and_only_for_any_or_validated() {
        assert!(
            judged(
                &with_config(json!({"mode": "ANY", "allowedFunctionNames": ["a"]})),
                AI_STUDIO
            )
            .is_empty()
        );
        assert!(
            judged(
                &with_config(json!({"mode": "VALIDATED", "allowedFunctionNames": ["a"]})),
                AI_STUDIO
            )
            .is_empty()
        );
        assert_eq!(
            judged(
                &with_config(json!({"mode": "ANY", "allowedFunctionNames": ["a", "b", 7]})),
                AI_STUDIO
            ),
            [
                (
                    "gemini.request.allowed_name_undeclared",
                    "/toolConfig/functionCallingConfig/allowedFunctionNames/1".into(),
                    "error"
                ),
                (
                    "gemini.request.allowed_name_undeclared",
                    "/toolConfig/functionCallingConfig/allowedFunctionNames/2".into(),
                    "error"
                ),
            ]
        );
        for mode in [json!("AUTO"), json!("NONE"), json!("none"), Value::Null] {
            let found = judged(
                &with_config(json!({"mode": mode, "allowedFunctionNames": ["a"]})),
                AI_STUDIO,
            );
            assert_eq!(
                found,
                one(
                    "gemini.request.allowed_names_without_any",
                    "/toolConfig/functionCallingConfig/allowedFunctionNames",
                    "warning"
                ),
                "mode {mode}"
            );
        }
        // An empty list sets nothing; a mode the API does not have judges nothing.
        assert!(
            judged(
                &with_config(json!({"mode": "AUTO", "allowedFunctionNames": []})),
                AI_STUDIO
            )
            .is_empty()
        );
        assert!(
            judged(
                &with_config(json!({"mode": "SOMETIMES", "allowedFunctionNames": ["a"]})),
                AI_STUDIO
            )
            .is_empty()
        );
    }

    #[test]
    fn snake_case_config_is_read_and_pointed_at_as_spelled() {
        let body = json!({
            "tools": [{"function_declarations": [{"name": "a"}]}],
            "tool_config": {"function_calling_config": {"mode": "AUTO", "allowed_function_names": ["zz"]}}
        });
        assert_eq!(
            judged(&body, AI_STUDIO),
            [
                (
                    "gemini.request.allowed_name_undeclared",
                    "/tool_config/function_calling_config/allowed_function_names/0".into(),
                    "error"
                ),
                (
                    "gemini.request.allowed_names_without_any",
                    "/tool_config/function_calling_config/allowed_function_names".into(),
                    "warning"
                ),
            ]
        );
    }

    #[test]
    fn cached_content_may_declare_what_the_allowed_names_and_the_mode_need() {
        let body = json!({
            "cachedContent": "cachedContents/abc",
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["cached_fn"]}}
        });
        assert!(judged(&body, AI_STUDIO).is_empty());
        let snake = json!({
            "cached_content": "cachedContents/abc",
            "tool_config": {"function_calling_config": {"mode": "AUTO", "allowed_function_names": ["cached_fn"]}}
        });
        assert_eq!(
            rules(&judged(&snake, AI_STUDIO)),
            ["gemini.request.allowed_names_without_any"]
        );
    }

    #[test]
    fn mode_any_or_validated_needs_declarations() {
        for (mode, expected) in [
            ("ANY", true),
            ("VALIDATED", true),
            ("validated", true),
            ("AUTO", false),
            ("NONE", false),
        ] {
            let body =
                json!({"contents": [], "toolConfig": {"functionCallingConfig": {"mode": mode}}});
            let found = judged(&body, AI_STUDIO);
            assert_eq!(
                found
                    == one(
                        "gemini.request.mode_any_without_declarations",
                        "/toolConfig/functionCallingConfig/mode",
                        "warning"
                    ),
                expected,
                "{mode}: {found:?}"
            );
            // Server-side tools alone declare no function.
            let body = json!({"tools": [{"googleSearch": {}}], "toolConfig": {"functionCallingConfig": {"mode": mode}}});
            assert_eq!(
                !judged(&body, AI_STUDIO).is_empty(),
                expected,
                "{mode} with googleSearch"
            );
        }
        assert!(judged(&with_config(json!({"mode": "ANY"})), AI_STUDIO).is_empty());
    }

    #[test]
    fn streamed_call_arguments_are_judged_by_the_path_form() {
        let body = with_config(json!({"streamFunctionCallArguments": true}));
        for path in [
            AI_STUDIO,
            "/v1/models/m:streamGenerateContent?alt=sse&key=k",
            "/v1beta/tunedModels/t:generateContent",
        ] {
            assert_eq!(
                judged(&body, path),
                one(
                    "gemini.request.stream_args_on_gemini_api",
                    "/toolConfig/functionCallingConfig/streamFunctionCallArguments",
                    "warning"
                ),
                "{path}"
            );
        }
        for path in [
            VERTEX,
            "/v1beta1/publishers/google/models/gemini-2.5-flash:generateContent",
        ] {
            assert!(judged(&body, path).is_empty(), "{path}");
        }
        assert!(
            judged(
                &with_config(json!({"streamFunctionCallArguments": false})),
                AI_STUDIO
            )
            .is_empty()
        );
        let snake = json!({"tool_config": {"function_calling_config": {"stream_function_call_arguments": true}}});
        assert_eq!(
            rules(&judged(&snake, AI_STUDIO)),
            ["gemini.request.stream_args_on_gemini_api"]
        );
        // Without a path the API is unknown.
        let mut sink = ViolationSink::new(crate::engine::SeverityOverrides::default());
        check(
            &body,
            &super::super::request::read(Some(&body), None),
            None,
            &mut sink,
        );
        assert!(sink.is_empty());
    }
}

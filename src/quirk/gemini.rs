//! Quirks on a Gemini exchange (`models/{m}:generateContent` / `:streamGenerateContent`),
//! buffered, streamed as SSE, or streamed as one JSON array.
//!
//! Input: a `GenerateContentResponse` document, a JSON array of them (a streamed array is
//! rewritten whole, as a buffered body is), or one SSE event's JSON. Output: the rewritten value,
//! or nothing when the quirk finds no `functionCall` part to break. Each is a wire seen in the
//! wild (docs/quirks.md):
//!
//! * `gemini-args-as-string`: each `functionCall.args` object sent as its JSON text.
//! * `gemini-parallel-calls-collapsed`: a candidate's several `functionCall` parts collapsed into
//!   the first, whose `args` become their texts concatenated (`{"a":1}{"b":2}`), as clients that
//!   keep one slot per index build them. Applies where one candidate holds two calls or more (in
//!   one event, for a stream).
//! * `gemini-finish-reason-function-call`: `finishReason: "STOP"` on a candidate that carries a
//!   `functionCall` part becomes `"FUNCTION_CALL"`, a value Gemini does not have (a gateway's,
//!   and aimock's default). A stream is rewritten where the finishing event carries a call.
//! * `gemini-call-namespaced`: each `functionCall.name` sent as `default_api.<name>`, as
//!   `gemini-2.5-pro` writes it.

use serde_json::{Map, Value};

use super::catalogue::QuirkId;

/// The buffered body (a document, or a streamed JSON array of them) with `quirk` applied, or
/// `None` when it does not apply.
pub fn buffered(quirk: QuirkId, body: &[u8]) -> Option<Vec<u8>> {
    let mut document: Value = serde_json::from_slice(body).ok()?;
    let changed = match &mut document {
        Value::Array(elements) => elements
            .iter_mut()
            .fold(false, |changed, element| event(quirk, element) | changed),
        element => event(quirk, element),
    };
    changed.then(|| document.to_string().into_bytes())
}

/// One `GenerateContentResponse` (an SSE event's data, an array element, a buffered body)
/// rewritten in place; true when it changed.
pub fn event(quirk: QuirkId, data: &mut Value) -> bool {
    let Some(candidates) = data.get_mut("candidates").and_then(Value::as_array_mut) else {
        return false;
    };
    candidates
        .iter_mut()
        .filter_map(Value::as_object_mut)
        .fold(false, |changed, candidate| {
            rewrite_candidate(quirk, candidate) | changed
        })
}

fn rewrite_candidate(quirk: QuirkId, candidate: &mut Map<String, Value>) -> bool {
    let calls = calls(candidate);
    if calls == 0 {
        return false;
    }
    match quirk {
        QuirkId::GeminiArgsAsString => each_call(candidate, |call| {
            match call.get("args").filter(|args| args.is_object()) {
                Some(args) => {
                    let text = args.to_string();
                    call.insert("args".to_owned(), Value::from(text));
                    true
                }
                None => false,
            }
        }),
        QuirkId::GeminiParallelCallsCollapsed if calls >= 2 => collapse(candidate),
        QuirkId::GeminiFinishReasonFunctionCall => match candidate.get_mut("finishReason") {
            Some(reason) if reason == "STOP" => {
                *reason = Value::from("FUNCTION_CALL");
                true
            }
            _ => false,
        },
        QuirkId::GeminiCallNamespaced => each_call(candidate, |call| {
            match call.get("name").and_then(Value::as_str) {
                Some(name) if !name.contains('.') => {
                    let namespaced = format!("default_api.{name}");
                    call.insert("name".to_owned(), Value::from(namespaced));
                    true
                }
                _ => false,
            }
        }),
        _ => false,
    }
}

/// The candidate's `content.parts`, when it has any.
fn parts(candidate: &mut Map<String, Value>) -> Option<&mut Vec<Value>> {
    candidate
        .get_mut("content")?
        .get_mut("parts")?
        .as_array_mut()
}

/// How many `functionCall` parts the candidate carries.
fn calls(candidate: &mut Map<String, Value>) -> usize {
    parts(candidate).map_or(0, |parts| {
        parts
            .iter()
            .filter(|part| part.get("functionCall").is_some_and(Value::is_object))
            .count()
    })
}

/// `rewrite` applied to each `functionCall` object; true when any changed.
fn each_call(
    candidate: &mut Map<String, Value>,
    mut rewrite: impl FnMut(&mut Map<String, Value>) -> bool,
) -> bool {
    let Some(parts) = parts(candidate) else {
        return false;
    };
    parts
        .iter_mut()
        .filter_map(|part| part.get_mut("functionCall")?.as_object_mut())
        .fold(false, |changed, call| rewrite(call) | changed)
}

/// The calls after the first removed, their `args` texts appended to the first's.
fn collapse(candidate: &mut Map<String, Value>) -> bool {
    let Some(parts) = parts(candidate) else {
        return false;
    };
    let mut joined = String::new();
    let mut first = None;
    let mut index = 0;
    parts.retain(|part| {
        let Some(call) = part.get("functionCall").filter(|call| call.is_object()) else {
            index += 1;
            return true;
        };
        let args = call.get("args").cloned().unwrap_or(Value::Null);
        match &args {
            Value::String(text) => joined.push_str(text),
            other => joined.push_str(&other.to_string()),
        }
        let keep = first.is_none();
        if keep {
            first = Some(index);
        }
        index += 1;
        keep
    });
    let Some(call) = first
        .and_then(|at| parts.get_mut(at))
        .and_then(|part| part.get_mut("functionCall"))
        .and_then(Value::as_object_mut)
    else {
        return false;
    };
    call.insert("args".to_owned(), Value::from(joined));
    true
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn answer(parts: Value, finish: &str) -> Value {
        json!({"candidates": [{"content": {"role": "model", "parts": parts},
            "finishReason": finish, "index": 0}],
            "usageMetadata": {"promptTokenCount": 3, "totalTokenCount": 9}})
    }

    fn two_calls() -> Value {
        answer(
            json!([
                {"text": "Checking."},
                {"functionCall": {"id": "c1", "name": "get_weather", "args": {"city": "Paris"}},
                 "thoughtSignature": "sig"},
                {"functionCall": {"id": "c2", "name": "get_weather", "args": {"city": "London"}}}
            ]),
            "STOP",
        )
    }

    fn apply(quirk: QuirkId, body: &Value) -> Option<Value> {
        let out = buffered(quirk, body.to_string().as_bytes())?;
        Some(serde_json::from_slice(&out).expect("json"))
    }

    const ALL: [QuirkId; 4] = [
        QuirkId::GeminiArgsAsString,
        QuirkId::GeminiParallelCallsCollapsed,
        QuirkId::GeminiFinishReasonFunctionCall,
        QuirkId::GeminiCallNamespaced,
    ];

    #[test]
    fn text_only_answers_are_left_alone() {
        let text = answer(json!([{"text": "Sunny."}]), "STOP");
        for quirk in ALL {
            assert_eq!(apply(quirk, &text), None, "{quirk}");
            assert!(!event(quirk, &mut text.clone()), "{quirk}");
        }
        assert_eq!(buffered(ALL[0], b"not json"), None);
    }

    #[test]
    fn args_become_their_json_text() {
        let out = apply(QuirkId::GeminiArgsAsString, &two_calls()).expect("applies");
        let parts = &out["candidates"][0]["content"]["parts"];
        assert_eq!(parts[1]["functionCall"]["args"], r#"{"city":"Paris"}"#);
        assert_eq!(parts[2]["functionCall"]["args"], r#"{"city":"London"}"#);
        assert_eq!(parts[1]["thoughtSignature"], "sig", "the rest is kept");
    }

    #[test]
    fn parallel_calls_collapse_into_the_first_with_concatenated_args() {
        let out = apply(QuirkId::GeminiParallelCallsCollapsed, &two_calls()).expect("applies");
        let parts = out["candidates"][0]["content"]["parts"]
            .as_array()
            .expect("parts");
        assert_eq!(parts.len(), 2, "{parts:?}");
        assert_eq!(parts[0]["text"], "Checking.");
        assert_eq!(parts[1]["functionCall"]["id"], "c1");
        assert_eq!(
            parts[1]["functionCall"]["args"],
            r#"{"city":"Paris"}{"city":"London"}"#
        );
        // One call: nothing to collapse.
        let one = answer(
            json!([{"functionCall": {"name": "f", "args": {"a": 1}}}]),
            "STOP",
        );
        assert_eq!(apply(QuirkId::GeminiParallelCallsCollapsed, &one), None);
    }

    #[test]
    fn stop_with_a_call_becomes_function_call_and_other_reasons_stay() {
        let out = apply(QuirkId::GeminiFinishReasonFunctionCall, &two_calls()).expect("applies");
        assert_eq!(out["candidates"][0]["finishReason"], "FUNCTION_CALL");
        let mut tokens = two_calls();
        tokens["candidates"][0]["finishReason"] = json!("MAX_TOKENS");
        assert_eq!(
            apply(QuirkId::GeminiFinishReasonFunctionCall, &tokens),
            None
        );
        // A stream event with a call and no finish reason yet: nothing to rewrite.
        let mut event_data = two_calls();
        event_data["candidates"][0]
            .as_object_mut()
            .expect("candidate")
            .remove("finishReason");
        assert!(!event(
            QuirkId::GeminiFinishReasonFunctionCall,
            &mut event_data
        ));
    }

    #[test]
    fn names_get_the_default_api_prefix_once() {
        let out = apply(QuirkId::GeminiCallNamespaced, &two_calls()).expect("applies");
        let parts = &out["candidates"][0]["content"]["parts"];
        assert_eq!(parts[1]["functionCall"]["name"], "default_api.get_weather");
        assert_eq!(apply(QuirkId::GeminiCallNamespaced, &out), None);
    }

    #[test]
    fn a_streamed_json_array_is_rewritten_element_by_element() {
        let first = answer(
            json!([{"functionCall": {"name": "f", "args": {"a": 1}}}]),
            "STOP",
        );
        let body = format!(
            "[{}\r\n,\r\n{}]",
            answer(json!([{"text": "x"}]), "STOP"),
            first
        );
        let out = buffered(QuirkId::GeminiArgsAsString, body.as_bytes()).expect("applies");
        let out: Value = serde_json::from_slice(&out).expect("json");
        assert_eq!(
            out[1]["candidates"][0]["content"]["parts"][0]["functionCall"]["args"],
            r#"{"a":1}"#
        );
        assert_eq!(out[0]["candidates"][0]["content"]["parts"][0]["text"], "x");
    }
}

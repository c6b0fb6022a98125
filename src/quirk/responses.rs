//! Quirks on an OpenAI Responses API exchange (`/v1/responses`), buffered or streamed.
//!
//! Input: a Responses body (one JSON document) or one stream event's JSON. Output: the rewritten
//! value, or nothing when the quirk finds no `function_call` item to break. Both quirks so far
//! rewrite items in place wherever a whole item travels: the buffered `output[]`, a stream's
//! `response.output_item.added` / `.done` `item`, and the `response.output[]` of a terminal
//! event (`response.completed` and its kin). Argument deltas and
//! `response.function_call_arguments.done` are left alone: the reassembled item is what breaks.

use serde_json::Value;

use super::catalogue::QuirkId;

/// The buffered body with `quirk` applied, or `None` when it does not apply.
pub fn buffered(quirk: QuirkId, body: &[u8]) -> Option<Vec<u8>> {
    let mut document: Value = serde_json::from_slice(body).ok()?;
    rewrite_output(quirk, &mut document).then(|| document.to_string().into_bytes())
}

/// One stream event's data rewritten in place; true when it changed.
pub fn event(quirk: QuirkId, data: &mut Value) -> bool {
    let mut changed = false;
    if let Some(item) = data.get_mut("item") {
        changed |= rewrite_item(quirk, item);
    }
    if let Some(response) = data.get_mut("response") {
        changed |= rewrite_output(quirk, response);
    }
    changed
}

/// Every `function_call` item of `response.output`; true when one changed.
fn rewrite_output(quirk: QuirkId, response: &mut Value) -> bool {
    let Some(output) = response.get_mut("output").and_then(Value::as_array_mut) else {
        return false;
    };
    let mut changed = false;
    for item in output.iter_mut() {
        changed |= rewrite_item(quirk, item);
    }
    changed
}

fn rewrite_item(quirk: QuirkId, item: &mut Value) -> bool {
    let Some(item) = item.as_object_mut() else {
        return false;
    };
    if item.get("type").and_then(Value::as_str) != Some("function_call") {
        return false;
    }
    let new = match quirk {
        QuirkId::ResponsesArgsAsObject => item
            .get("arguments")
            .and_then(Value::as_str)
            .and_then(|text| serde_json::from_str::<Value>(text).ok())
            .map(|parsed| ("arguments", parsed)),
        QuirkId::ResponsesNameEmptied => item
            .get("name")
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty())
            .map(|_| ("name", Value::from(""))),
        _ => None,
    };
    match new {
        Some((key, value)) => {
            item.insert(key.to_owned(), value);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_function_call_items_change() {
        let body = br#"{"output":[{"type":"message","name":"x"},{"type":"function_call","name":"f","arguments":"{\"a\":1}"}]}"#;
        let out = buffered(QuirkId::ResponsesArgsAsObject, body).expect("applies");
        let out: Value = serde_json::from_slice(&out).expect("json");
        assert_eq!(out["output"][1]["arguments"], serde_json::json!({"a": 1}));
        assert_eq!(out["output"][0]["name"], "x");
        let mut added = serde_json::json!({"type":"response.output_item.added","item":{"type":"function_call","name":"f","arguments":""}});
        assert!(
            !event(QuirkId::ResponsesArgsAsObject, &mut added),
            "\"\" is no JSON"
        );
        assert!(event(QuirkId::ResponsesNameEmptied, &mut added));
        assert_eq!(added["item"]["name"], "");
        assert_eq!(buffered(QuirkId::ArgsAsObject, body), None);
    }
}

//! `--match-tool-call-ids loose`: tool-call ids compared by the role they play, not their text.
//!
//! Input: a request body (already parsed, ignores removed). Output: the same body with each
//! distinct tool-call id replaced by `call#N`, N its order of first appearance, at the places
//! [`ID_PLACES`] lists (one row per place, for every dialect tooltap covers: a new dialect adds
//! rows). Two conversations that differ only in the ids a framework invented become equal; one
//! whose tool result answers a different call than recorded stays different, because the
//! renaming is a bijection applied the same way to both sides.

use std::collections::HashMap;

use serde_json::Value;

use super::pattern::{Token, visit_mut};

/// How tool-call ids in request bodies are compared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ToolCallIds {
    /// Literally, like every other string (the default).
    #[default]
    Strict,
    /// Consistently renamed on both sides before comparing.
    Loose,
}

/// One place tool-call ids live: `field` of each object `items` names, when its `type` is one
/// of `types` (any type when empty).
struct IdPlace {
    items: &'static str,
    field: &'static str,
    types: &'static [&'static str],
}

/// Where tool-call ids live in request bodies, in the order they are renamed.
const ID_PLACES: [IdPlace; 5] = [
    // Chat Completions: the assistant's calls, and the tool messages answering them.
    IdPlace {
        items: "/messages/*/tool_calls/*",
        field: "id",
        types: &[],
    },
    IdPlace {
        items: "/messages/*",
        field: "tool_call_id",
        types: &[],
    },
    // Responses API: function_call / function_call_output, custom_tool_call(_output) and the
    // other *_call items all pair on `call_id`.
    IdPlace {
        items: "/input/*",
        field: "call_id",
        types: &[],
    },
    // Anthropic Messages: tool_use blocks and the tool_result blocks answering them.
    IdPlace {
        items: "/messages/*/content/*",
        field: "id",
        types: &["tool_use", "server_tool_use", "mcp_tool_use"],
    },
    IdPlace {
        items: "/messages/*/content/*",
        field: "tool_use_id",
        types: &[],
    },
];

/// Rename every tool-call id in `body` to `call#N` in order of first appearance.
pub fn canonicalize(body: &mut Value) {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for place in &ID_PLACES {
        let tokens: Vec<Token> = place
            .items
            .split('/')
            .skip(1)
            .map(|token| match token {
                "*" => Token::Any,
                key => Token::Key(key.to_owned()),
            })
            .collect();
        visit_mut(body, &tokens, &mut |item| {
            let Value::Object(map) = item else {
                return;
            };
            let typed = place.types.is_empty()
                || map
                    .get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|kind| place.types.contains(&kind));
            if !typed {
                return;
            }
            if let Some(Value::String(id)) = map.get_mut(place.field) {
                let next = seen.len();
                let order = *seen.entry(std::mem::take(id)).or_insert(next);
                *id = format!("call#{order}");
            }
        });
    }
}

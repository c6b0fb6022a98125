//! 2026-07-28 multi round-trip requests (MRTR): `mcp.tools_call.retry_same_id` (a retry
//! reuses the id of the request whose `input_required` answer it follows) and
//! `input_responses_mismatch` (its `inputResponses` keys are not the `inputRequests` keys it
//! was asked).
//!
//! Input: each `tools/call` whose answer is an `InputRequiredResult`, remembered under a key:
//! its `requestState` (opaque, minted by the server for that request, echoed by the retry),
//! else its tool name and arguments (the retry repeats the original params). A retry carries
//! `inputResponses` or `requestState` and is matched by the same key. On 2026-07-28 every
//! client of a route and credential shares one conversation, so two requests remembered under
//! one key with different ids make that key ambiguous, and its retries are not judged. A retry
//! whose original tooltap did not see (or lost to the bound) is not judged either.
//!
//! Bounded: the remembered answers per conversation by `inspect.mcp.ids` (the oldest first,
//! counted in `ids_evicted`); each keeps a digest of its keys and at most [`SHOWN`] of them.

use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;

use super::conversation::Conversation;
use super::seen::{Msg, RpcId, method_of};
use super::{Out, Seen, result_of};
use crate::engine::RuleId;

/// Keys of an `inputRequests` map kept for the violation's detail.
const SHOWN: usize = 8;
/// Bytes of one shown key.
const SHOWN_BYTES: usize = 64;

/// The keys of an `inputRequests` or `inputResponses` map: a digest of them all, their count,
/// and the first few (sorted) to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keys {
    digest: u64,
    count: usize,
    shown: Vec<Box<str>>,
}

impl Keys {
    fn of(map: Option<&Value>) -> Keys {
        let mut keys: Vec<&str> = map
            .and_then(Value::as_object)
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        keys.sort_unstable();
        let mut hasher = DefaultHasher::new();
        keys.hash(&mut hasher);
        Keys {
            digest: hasher.finish(),
            count: keys.len(),
            shown: keys
                .iter()
                .take(SHOWN)
                .map(|k| Box::from(&k[..k.floor_char_boundary(SHOWN_BYTES)]))
                .collect(),
        }
    }

    fn describe(&self) -> String {
        let more = if self.count > self.shown.len() {
            ", …"
        } else {
            ""
        };
        format!("{} key(s) [{}{more}]", self.count, self.shown.join(", "))
    }
}

/// An `input_required` answer awaiting its retry.
#[derive(Debug, Clone)]
pub struct InputRequired {
    /// The id of the request it answered.
    id: RpcId,
    /// Its `inputRequests` keys.
    asked: Keys,
    /// Two requests were answered under this key: a retry cannot be matched to one.
    ambiguous: bool,
}

pub(super) fn judge(conversation: &mut Conversation, seen: &Seen<'_>, out: &mut Out) {
    if !seen.modern() || !seen.whole {
        return;
    }
    for request in seen.requests() {
        if method_of(request.value) != Some("tools/call") {
            continue;
        }
        let Some(id) = RpcId::of(request.value) else {
            continue;
        };
        let params = request.value.get("params");
        let matched = retry(conversation, request, params, &id, out);
        let Some(result) = seen.answer(&id).and_then(|m| result_of(m.value)) else {
            continue;
        };
        if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
            continue;
        }
        let key = key(params, result.get("requestState"));
        let asked = Keys::of(result.get("inputRequests"));
        remember(conversation, key, matched, id, asked, out);
    }
}

/// A retry (it carries `inputResponses` or `requestState`) against the answer it follows;
/// the key it matched, if it matched one.
fn retry(
    conversation: &Conversation,
    request: &Msg<'_>,
    params: Option<&Value>,
    id: &RpcId,
    out: &mut Out,
) -> Option<u64> {
    let responses = params.and_then(|p| p.get("inputResponses"));
    let state = params.and_then(|p| p.get("requestState"));
    if responses.is_none() && state.is_none() {
        return None;
    }
    let key = key(params, state);
    let original = conversation
        .input_required
        .get(&key)
        .filter(|o| !o.ambiguous)?;
    if original.id == *id {
        let detail = format!(
            "this retry of an input_required tools/call reuses its id {id}; a retry needs a new id"
        );
        out.push(
            RuleId::McpToolsCallRetrySameId,
            Some(request),
            "/id",
            detail,
        );
    }
    let given = Keys::of(responses);
    if given.digest != original.asked.digest || given.count != original.asked.count {
        let detail = format!(
            "inputResponses has {}; the input_required answer to request {} asked {}",
            given.describe(),
            original.id,
            original.asked.describe()
        );
        let pointer = if responses.is_some() {
            "/params/inputResponses"
        } else {
            "/params"
        };
        out.push(
            RuleId::McpToolsCallInputResponsesMismatch,
            Some(request),
            pointer,
            detail,
        );
    }
    Some(key)
}

/// Remembers the `input_required` answer to request `id`; a retry answered again under the
/// key it matched takes that entry's place.
fn remember(
    conversation: &mut Conversation,
    key: u64,
    matched: Option<u64>,
    id: RpcId,
    asked: Keys,
    out: &mut Out,
) {
    if let Some(entry) = conversation.input_required.get_mut(&key)
        && entry.id != id
        && matched != Some(key)
    {
        entry.ambiguous = true;
        return;
    }
    let evicted = conversation.input_required.insert(
        key,
        InputRequired {
            id,
            asked,
            ambiguous: false,
        },
    );
    out.cuts.ids_evicted += evicted as u64;
}

/// The key a request and its retry share: the `requestState`, else the tool name and
/// arguments.
fn key(params: Option<&Value>, state: Option<&Value>) -> u64 {
    let mut hasher = DefaultHasher::new();
    match state {
        Some(state) => {
            "state".hash(&mut hasher);
            state.to_string().hash(&mut hasher);
        }
        None => {
            "call".hash(&mut hasher);
            let member = |name| params.and_then(|p| p.get(name)).map(Value::to_string);
            member("name").hash(&mut hasher);
            member("arguments").hash(&mut hasher);
        }
    }
    hasher.finish()
}

//! `mcp.sse.resume_wrong_stream` (2025-era sessions): a `Last-Event-ID` GET replays messages
//! of another stream than the one that sent that event id.
//!
//! Input: every stream of a session that sent SSE event ids gets a number; each event id is
//! remembered with its stream's number ([`super::progress`] writes them), and each stream with
//! whether it was a standalone GET and the request ids of its POST. A resumption whose
//! `Last-Event-ID` tooltap saw continues that stream; one of its events is from another stream
//! when its event id was sent on another stream, or when it is a response and the stream is a
//! standalone GET or a POST that did not carry that request. A `Last-Event-ID` tooltap did not
//! see (it joined late, or the id went to the bound) judges nothing.
//!
//! Bounded: the streams per conversation by `inspect.mcp.ids` (counted in `ids_evicted`), each
//! with at most [`MAX_REQUESTS`] request ids (a larger 2025-03-26 batch is not judged by its
//! responses).

use super::conversation::Conversation;
use super::seen::{HttpMethod, Msg, RpcId, is_response};
use super::{Out, Seen};
use crate::engine::RuleId;

/// Request ids kept per stream.
const MAX_REQUESTS: usize = 64;

/// One stream that sent event ids.
#[derive(Debug, Clone)]
pub struct Stream {
    /// A standalone GET stream (it carries no responses).
    get: bool,
    /// The requests of its POST, when all of them were kept.
    requests: Option<Vec<RpcId>>,
}

/// The number of the stream this exchange's events belong to (`None` when they carry no event
/// ids, or the conversation keeps none), after judging a resumption's replays.
pub(super) fn judge(
    conversation: &mut Conversation,
    seen: &Seen<'_>,
    out: &mut Out,
) -> Option<u64> {
    if seen.modern() || conversation.shared || seen.received.iter().all(|m| m.event_id.is_none()) {
        return None;
    }
    let resumed_from = seen
        .last_event_id
        .filter(|_| seen.resumed && seen.method == HttpMethod::Get)
        .and_then(|last| conversation.event_ids.get(&Box::from(last)).copied());
    let Some(stream) = resumed_from else {
        return Some(new_stream(conversation, seen, out));
    };
    for msg in &seen.received {
        if let Some(detail) = foreign(conversation, stream, msg) {
            out.push(RuleId::McpSseResumeWrongStream, Some(msg), "", detail);
        }
    }
    Some(stream)
}

/// Numbers a new stream and remembers what it is.
fn new_stream(conversation: &mut Conversation, seen: &Seen<'_>, out: &mut Out) -> u64 {
    let number = conversation.next_stream;
    conversation.next_stream += 1;
    let requests: Vec<RpcId> = seen
        .requests()
        .filter_map(|m| RpcId::of(m.value))
        .take(MAX_REQUESTS + 1)
        .collect();
    let stream = Stream {
        get: seen.method == HttpMethod::Get,
        requests: (requests.len() <= MAX_REQUESTS).then_some(requests),
    };
    let evicted = conversation.streams.insert(number, stream);
    out.cuts.ids_evicted += evicted as u64;
    number
}

/// Why a replayed message is not from stream `stream`, if it is not.
fn foreign(conversation: &Conversation, stream: u64, msg: &Msg<'_>) -> Option<String> {
    let owner = msg
        .event_id
        .and_then(|id| conversation.event_ids.get(&Box::from(id)).copied());
    if owner.is_some_and(|owner| owner != stream) {
        let id = msg.event_id.unwrap_or_default();
        return Some(format!(
            "event id {id:?} was sent on another stream of this session than the one Last-Event-ID resumes"
        ));
    }
    if !is_response(msg.value) {
        return None;
    }
    let id = RpcId::of(msg.value)?;
    let resumed = conversation.streams.get(&stream)?;
    if resumed.get {
        return Some(format!(
            "the resumed stream was a GET stream, which carries no responses; the response for id {id} belongs to its request's stream"
        ));
    }
    let requests = resumed.requests.as_ref()?;
    (!requests.contains(&id)).then(|| {
        format!(
            "the resumed stream answered other requests; the response for id {id} belongs to its own request's stream"
        )
    })
}

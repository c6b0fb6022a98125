//! Dialects: which tool-calling API an exchange speaks, and the seam the engine drives it by.
//!
//! Input: the request path (a route matcher's suffix decides: `/chat/completions` is Chat
//! Completions, `/responses` the Responses API, `/messages` Anthropic Messages) and body. Output: a [`DialectState`] that brings
//! the dialect's request facts, its reading of each SSE event (framing itself is shared),
//! reassembly and rules. The shared parts stay at the engine root: framing, schema cache,
//! violation, report, rules, decode.
//!
//! ```text
//! Exchange ─► DialectState { Chat(chat::ChatState) | Responses(responses::ResponsesState)
//!                          | Anthropic(anthropic::AnthropicState) }
//! ```

pub mod anthropic;
pub mod chat;
mod common;
pub mod responses;

pub use common::{RequestFacts, StreamEnd};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::framing::SseEvent;
use super::report::ChoiceOutcome;
use super::schema::SchemaCache;
use super::violation::ViolationSink;

/// The tool-calling API an exchange speaks; serialized as `"chat"`, `"responses"` or
/// `"anthropic"`, the one label set users see (logs, metrics, violations lines, recordings,
/// `check` output, quirk listings, the report). The labels the quirk listing and the report once
/// used, `chat_completions` and `anthropic_messages`, still read (see [`Dialect::from_name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// `POST .../chat/completions` (the default, and what recordings without a dialect are).
    #[default]
    #[serde(alias = "chat_completions")]
    Chat,
    /// `POST .../responses`, the OpenAI Responses API.
    Responses,
    /// `POST .../messages`, the Anthropic Messages API.
    #[serde(alias = "anthropic_messages")]
    Anthropic,
}

/// A dialect name that is none of [`Dialect::ALL`]'s labels (nor an old alias).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown dialect {0:?}: the dialects are {names}", names = Dialect::NAMES)]
pub struct UnknownDialect(pub String);

impl Dialect {
    pub const ALL: [Dialect; 3] = [Dialect::Chat, Dialect::Responses, Dialect::Anthropic];

    /// The stable label used in logs, metrics, violations lines and recordings.
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Chat => "chat",
            Dialect::Responses => "responses",
            Dialect::Anthropic => "anthropic",
        }
    }

    /// The labels, for messages that list them.
    pub const NAMES: &'static str = "chat, responses, anthropic";

    /// Labels the quirk listing and the report used before they took [`Dialect::as_str`]'s:
    /// still read wherever a dialect is named (a recording, a config value, a report link).
    pub const OLD_NAMES: [(&'static str, Dialect); 2] = [
        ("chat_completions", Dialect::Chat),
        ("anthropic_messages", Dialect::Anthropic),
    ];

    /// The dialect a label names: its [`Dialect::as_str`], or one of [`Dialect::OLD_NAMES`].
    pub fn from_name(name: &str) -> Option<Dialect> {
        Dialect::ALL
            .into_iter()
            .find(|dialect| dialect.as_str() == name)
            .or_else(|| {
                Dialect::OLD_NAMES
                    .into_iter()
                    .find_map(|(old, dialect)| (old == name).then_some(dialect))
            })
    }

    /// The path suffix that selects this dialect: the one list of them (the default
    /// `inspect.path_suffixes`, the report and the proxy all read it).
    pub fn path_suffix(self) -> &'static str {
        match self {
            Dialect::Chat => "/chat/completions",
            Dialect::Responses => "/responses",
            Dialect::Anthropic => "/messages",
        }
    }

    /// The dialect a request path names (query string and trailing `/` ignored), if any.
    pub fn from_path(path: &str) -> Option<Dialect> {
        let path = path.split('?').next().unwrap_or_default();
        let path = path.trim_end_matches('/');
        Dialect::ALL
            .into_iter()
            .find(|dialect| path.ends_with(dialect.path_suffix()))
    }

    /// The dialect of a recording or capture that names none: the one its path names, Chat
    /// Completions when the path names none (what tooltap judged such a path as before routes
    /// could name their dialect). Live traffic decides with [`Dialect::from_path`] and the
    /// route's `dialect` instead, and reports a path no dialect names.
    pub fn for_path(path: &str) -> Dialect {
        Dialect::from_path(path).unwrap_or_default()
    }
}

impl std::str::FromStr for Dialect {
    type Err = UnknownDialect;

    fn from_str(name: &str) -> Result<Dialect, UnknownDialect> {
        Dialect::from_name(name.trim()).ok_or_else(|| UnknownDialect(name.to_owned()))
    }
}

impl std::fmt::Display for Dialect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A dialect's state for one exchange: the only place the engine branches on the dialect.
#[derive(Debug)]
pub enum DialectState {
    Chat(Box<chat::ChatState>),
    Responses(Box<responses::ResponsesState>),
    Anthropic(Box<anthropic::AnthropicState>),
}

impl DialectState {
    pub fn new(
        dialect: Dialect,
        cache: &SchemaCache,
        request_body: &[u8],
        sink: &mut ViolationSink,
        notes: &mut Vec<String>,
    ) -> DialectState {
        match dialect {
            Dialect::Chat => DialectState::Chat(Box::new(chat::ChatState::new(
                cache,
                request_body,
                sink,
                notes,
            ))),
            Dialect::Responses => DialectState::Responses(Box::new(
                responses::ResponsesState::new(cache, request_body, sink, notes),
            )),
            Dialect::Anthropic => DialectState::Anthropic(Box::new(
                anthropic::AnthropicState::new(cache, request_body, sink, notes),
            )),
        }
    }

    pub fn dialect(&self) -> Dialect {
        match self {
            DialectState::Chat(_) => Dialect::Chat,
            DialectState::Responses(_) => Dialect::Responses,
            DialectState::Anthropic(_) => Dialect::Anthropic,
        }
    }

    /// The last `sequence_number` a Responses stream carried (enforce mode numbers its
    /// `error` event after it); `None` for Chat.
    pub fn last_sequence_number(&self) -> Option<i64> {
        match self {
            DialectState::Chat(_) | DialectState::Anthropic(_) => None,
            DialectState::Responses(responses) => responses.last_sequence_number(),
        }
    }

    /// Whether a stream ended by its own framing: `data: [DONE]` (Chat), a terminal event
    /// (Responses), `message_stop` or `error` (Anthropic).
    pub fn stream_is_done(&self) -> bool {
        match self {
            DialectState::Chat(chat) => chat.stream_is_done(),
            DialectState::Responses(responses) => responses.stream_is_done(),
            DialectState::Anthropic(anthropic) => anthropic.stream_is_done(),
        }
    }

    /// What the stream's reassembly holds, as [`super::weigh`] counts it; the exchange stops
    /// reassembling past `max_reassembled`.
    pub fn reassembly_bytes(&self) -> usize {
        match self {
            DialectState::Chat(chat) => chat.reassembly_bytes(),
            DialectState::Responses(responses) => responses.reassembly_bytes(),
            DialectState::Anthropic(anthropic) => anthropic.reassembly_bytes(),
        }
    }

    /// Bounds the reassembly at `max` (as [`super::weigh`] counts it). The exchange checks the
    /// count after each event; Chat, whose one event may carry thousands of choices and calls,
    /// also stops taking them inside the event once past it.
    pub fn bound_reassembly(&mut self, max: usize) {
        match self {
            DialectState::Chat(chat) => chat.bound_reassembly(max),
            DialectState::Responses(_) | DialectState::Anthropic(_) => {}
        }
    }

    /// Keeps the request's compiled tools in the schema cache: called once the response head
    /// is a 2xx (an array that never gets an answer pins no memory).
    pub fn admit_tools(&self) {
        let tools = match self {
            DialectState::Chat(chat) => return chat.admit_tools(),
            DialectState::Responses(responses) => responses.schemas.as_ref(),
            DialectState::Anthropic(anthropic) => anthropic.schemas.as_ref(),
        };
        if let Some(tools) = tools {
            tools.admit();
        }
    }

    pub fn facts(&self) -> &RequestFacts {
        match self {
            DialectState::Chat(chat) => &chat.request.facts,
            DialectState::Responses(responses) => &responses.request.facts,
            DialectState::Anthropic(anthropic) => &anthropic.request.facts,
        }
    }

    /// The request's facts, taken out for the report: the state is dropped right after, so
    /// they are moved, not cloned (the model, each declared tool's name and `tool_choice`).
    pub fn into_facts(self) -> RequestFacts {
        match self {
            DialectState::Chat(chat) => chat.request.facts,
            DialectState::Responses(responses) => responses.request.facts,
            DialectState::Anthropic(anthropic) => anthropic.request.facts,
        }
    }

    /// One SSE event from the shared framer, completed by `feed` call number `seq`.
    pub fn on_event(&mut self, event: &SseEvent, seq: u64, sink: &mut ViolationSink) {
        match self {
            DialectState::Chat(chat) => chat.on_event(event, seq, sink),
            DialectState::Responses(responses) => responses.on_event(event, seq, sink),
            DialectState::Anthropic(anthropic) => anthropic.on_event(event, seq, sink),
        }
    }

    /// Judges a whole buffered (JSON) body: `response.not_json` when it does not parse, else
    /// the dialect's outcomes for the document, and its `usage`. Chat reads only the members
    /// it judges (see `chat::contract::members`); the others read a full tree.
    pub fn judge_buffered(
        &self,
        body: &[u8],
        sink: &mut ViolationSink,
    ) -> (Vec<ChoiceOutcome>, Option<Value>) {
        match self {
            DialectState::Chat(chat) => chat.judge_buffered(body, sink),
            DialectState::Responses(responses) => judge_tree(body, sink, |document, sink| {
                responses.judge_document(document, sink)
            }),
            DialectState::Anthropic(anthropic) => judge_tree(body, sink, |document, sink| {
                anthropic.judge_document(document, sink)
            }),
        }
    }

    /// Ends a stream; see [`StreamEnd`].
    pub fn finish_stream(&mut self, end: StreamEnd<'_>) -> (Vec<ChoiceOutcome>, Option<Value>) {
        match self {
            DialectState::Chat(chat) => chat.finish_stream(end),
            DialectState::Responses(responses) => responses.finish_stream(end),
            DialectState::Anthropic(anthropic) => anthropic.finish_stream(end),
        }
    }
}

/// A buffered body read into a full tree and judged as one outcome, with its `usage`.
fn judge_tree(
    body: &[u8],
    sink: &mut ViolationSink,
    judge: impl FnOnce(&Value, &mut ViolationSink) -> ChoiceOutcome,
) -> (Vec<ChoiceOutcome>, Option<Value>) {
    let Some(document) = common::response_json(body, sink) else {
        return (Vec::new(), None);
    };
    let outcome = judge(&document, sink);
    (vec![outcome], common::usage(&document))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_read_back_and_old_spellings_still_read() {
        for dialect in Dialect::ALL {
            assert_eq!(dialect.as_str().parse::<Dialect>(), Ok(dialect));
            let json = serde_json::to_string(&dialect).expect("serialize");
            assert_eq!(json, format!("\"{}\"", dialect.as_str()));
            assert!(Dialect::NAMES.contains(dialect.as_str()));
        }
        assert_eq!(Dialect::from_name("chat_completions"), Some(Dialect::Chat));
        assert_eq!(
            Dialect::from_name("anthropic_messages"),
            Some(Dialect::Anthropic)
        );
        let old: Dialect = serde_json::from_str("\"chat_completions\"").expect("alias");
        assert_eq!(old, Dialect::Chat);
        let old: Dialect = serde_json::from_str("\"anthropic_messages\"").expect("alias");
        assert_eq!(old, Dialect::Anthropic);
        let unknown = "gemini".parse::<Dialect>().expect_err("not a dialect");
        assert_eq!(
            unknown.to_string(),
            "unknown dialect \"gemini\": the dialects are chat, responses, anthropic"
        );
    }

    #[test]
    fn paths_name_dialects_by_their_one_suffix_list() {
        assert_eq!(
            Dialect::from_path("/v1/chat/completions?x=1"),
            Some(Dialect::Chat)
        );
        assert_eq!(
            Dialect::from_path("/openai/v1/responses/"),
            Some(Dialect::Responses)
        );
        assert_eq!(
            Dialect::from_path("/anthropic/v1/messages"),
            Some(Dialect::Anthropic)
        );
        assert_eq!(Dialect::from_path("/v1/generate"), None);
        assert_eq!(Dialect::for_path("/v1/generate"), Dialect::Chat);
    }
}

//! Dialects: which tool-calling API an exchange speaks, and the seam the engine drives it by.
//!
//! Input: the request path (a route matcher's suffix decides: `/chat/completions` is Chat
//! Completions, `/responses` the Responses API, `/messages` Anthropic Messages) and body. Output: a [`DialectState`] that brings
//! the dialect's request facts, its reading of each SSE event (framing itself is shared),
//! reassembly and rules. The shared parts stay at the engine root: framing, schema cache,
//! violation, report, rules, decode.
//!
//! ```text
//! Exchange ─► DialectState { Dialect, Box<dyn DialectRules> }   (seam: the trait)
//!                 register(Dialect) ─► chat::ChatState | responses::ResponsesState
//!                                    | anthropic::AnthropicState   (sibling folders that
//!                                      import only `common` and engine leaves)
//! ```

pub mod anthropic;
pub mod chat;
mod common;
pub mod responses;
mod seam;

pub use common::StreamEnd;
pub use seam::{DialectRules, EnforceError, Judged, RequestParts};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::report::RequestFacts;
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

impl Dialect {
    /// Enforce mode's answer to a refused buffered response, in this dialect's error shape.
    pub fn error_body(self, error: &EnforceError<'_>) -> Value {
        (register(self).error_body)(error)
    }

    /// The event enforce mode ends a refused stream of this dialect with.
    pub fn error_event(self, error: &EnforceError<'_>, last_sequence: Option<i64>) -> String {
        (register(self).error_event)(error, last_sequence)
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

/// A dialect's state for one exchange: the engine's one handle on a dialect, its label and its
/// [`DialectRules`] (one virtual call per event, the same count of calls the three-armed match it
/// replaces made; the state was boxed before too).
#[derive(Debug)]
pub struct DialectState {
    dialect: Dialect,
    rules: Box<dyn DialectRules>,
}

/// Starts a dialect's state from its request.
type Start = fn(
    RequestParts<'_>,
    &SchemaCache,
    &mut ViolationSink,
    &mut Vec<String>,
) -> Box<dyn DialectRules>;

/// The registration: which implementation each [`Dialect`] is. A new dialect adds its folder,
/// its label and suffix in [`Dialect`], and one line here.
fn register(dialect: Dialect) -> Registered {
    match dialect {
        Dialect::Chat => Registered::of::<chat::ChatState>(),
        Dialect::Responses => Registered::of::<responses::ResponsesState>(),
        Dialect::Anthropic => Registered::of::<anthropic::AnthropicState>(),
    }
}

/// A registered dialect: how its state starts, and its enforce-mode errors (which need no
/// exchange: a stream's end is judged after its exchange is gone).
struct Registered {
    start: Start,
    error_body: fn(&EnforceError<'_>) -> Value,
    error_event: fn(&EnforceError<'_>, Option<i64>) -> String,
}

impl Registered {
    fn of<D: DialectRules + 'static>() -> Registered {
        Registered {
            start: start::<D>,
            error_body: D::error_body,
            error_event: D::error_event,
        }
    }
}

fn start<D: DialectRules + 'static>(
    request: RequestParts<'_>,
    cache: &SchemaCache,
    sink: &mut ViolationSink,
    notes: &mut Vec<String>,
) -> Box<dyn DialectRules> {
    Box::new(D::start(request, cache, sink, notes))
}

impl DialectState {
    pub fn new(
        dialect: Dialect,
        cache: &SchemaCache,
        request: RequestParts<'_>,
        sink: &mut ViolationSink,
        notes: &mut Vec<String>,
    ) -> DialectState {
        let rules = (register(dialect).start)(request, cache, sink, notes);
        DialectState { dialect, rules }
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The dialect's rules; the engine drives a dialect through this alone.
    pub fn rules(&self) -> &dyn DialectRules {
        self.rules.as_ref()
    }

    pub fn rules_mut(&mut self) -> &mut dyn DialectRules {
        self.rules.as_mut()
    }

    /// The request's facts, taken out for the report: the state is dropped right after, so
    /// they are moved, not cloned (the model, each declared tool's name and `tool_choice`).
    pub fn into_facts(self) -> RequestFacts {
        self.rules.into_facts()
    }
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
    fn every_dialect_shapes_enforce_errors_its_sdks_read() {
        let error = EnforceError {
            message: "tooltap enforce: the response broke the contract",
            kind: "tooltap_contract_violation",
            code: "contract_violation",
            param: Some("response.not_json"),
        };
        for dialect in Dialect::ALL {
            let body = dialect.error_body(&error);
            assert_eq!(
                body.pointer("/error/message").and_then(Value::as_str),
                Some(error.message),
                "{dialect}: {body}"
            );
            let event = dialect.error_event(&error, Some(6));
            let data = event
                .lines()
                .find_map(|line| line.strip_prefix("data: "))
                .expect("a data line");
            let data: Value = serde_json::from_str(data).expect("the event's data is JSON");
            let message = data
                .pointer("/error/message")
                .or_else(|| data.get("message"))
                .and_then(Value::as_str);
            assert_eq!(message, Some(error.message), "{dialect}: {event}");
            assert!(event.ends_with("\n\n"), "{dialect}: {event:?}");
        }
        let numbered = Dialect::Responses.error_event(&error, Some(6));
        assert!(numbered.contains("\"sequence_number\":7"), "{numbered}");
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

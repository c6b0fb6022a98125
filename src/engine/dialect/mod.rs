//! Dialects: which tool-calling API an exchange speaks, and the seam the engine drives it by.
//!
//! Input: the request path (a route matcher's suffix decides: `/chat/completions` is Chat
//! Completions, `/responses` the Responses API, `/messages` Anthropic Messages,
//! `:generateContent` / `:streamGenerateContent` Gemini, `/api/chat` Ollama,
//! `/model/{id}/converse[-stream]` Bedrock Converse, `/mcp` MCP) and body (MCP: the method and
//! headers too). Output: a [`DialectState`] that brings the dialect's request facts, its reading
//! of each event (framing itself is shared), reassembly and rules. The shared parts stay at the
//! engine root: framing, schema cache, violation, report, rules, decode.
//!
//! ```text
//! Exchange ─► DialectState { Dialect, Box<dyn DialectRules> }   (seam: the trait)
//!                 register(Dialect) ─► chat::ChatState | responses::ResponsesState
//!                                    | anthropic::AnthropicState
//!                                    | gemini::GeminiState | ollama::OllamaState
//!                                    | bedrock::BedrockState | mcp::McpState
//!                                      (sibling folders that import only `common` and
//!                                       engine leaves)
//! ```

pub mod anthropic;
pub mod bedrock;
pub mod chat;
pub mod argument_verdict;
mod common;
mod item_list;
mod request_basics;
pub mod gemini;
pub mod mcp;
pub mod ollama;
pub mod pieces;
pub mod responses;
mod seam;

pub use seam::{DialectRules, EnforceError, Judged, RequestParts, StreamFinish};

use serde_json::Value;

use super::label::Dialect;
use super::report::RequestFacts;
use super::schema::SchemaCache;
use super::violation::ViolationSink;

impl Dialect {
    /// Enforce mode's answer to a refused buffered response, in this dialect's error shape.
    pub fn error_body(self, error: &EnforceError<'_>) -> Value {
        (register(self).error_body)(error)
    }

    /// The event enforce mode ends a refused stream of this dialect with.
    pub fn error_event(self, error: &EnforceError<'_>, last_sequence: Option<i64>) -> Vec<u8> {
        (register(self).error_event)(error, last_sequence)
    }

    /// Where this dialect's tool-call pieces sit, for the report's lanes.
    pub fn pieces(self) -> &'static pieces::DialectTables {
        (register(self).pieces)()
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
        Dialect::Gemini => Registered::of::<gemini::GeminiState>(),
        Dialect::Ollama => Registered::of::<ollama::OllamaState>(),
        Dialect::Bedrock => Registered::of::<bedrock::BedrockState>(),
        Dialect::Mcp => Registered::of::<mcp::McpState>(),
    }
}

/// A registered dialect: how its state starts, and its enforce-mode errors (which need no
/// exchange: a stream's end is judged after its exchange is gone).
struct Registered {
    start: Start,
    error_body: fn(&EnforceError<'_>) -> Value,
    error_event: fn(&EnforceError<'_>, Option<i64>) -> Vec<u8>,
    pieces: fn() -> &'static pieces::DialectTables,
}

impl Registered {
    fn of<D: DialectRules + 'static>() -> Registered {
        Registered {
            start: start::<D>,
            error_body: D::error_body,
            error_event: D::error_event,
            pieces: D::pieces,
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
    fn every_dialect_shapes_enforce_errors_its_sdks_read() {
        let error = EnforceError {
            message: "tooltap enforce: the response broke the contract",
            kind: "tooltap_contract_violation",
            code: "contract_violation",
            param: Some("response.not_json"),
        };
        for dialect in Dialect::ALL {
            let body = dialect.error_body(&error);
            if dialect == Dialect::Ollama {
                // The ollama client raises `ResponseError` on `{"error": "<text>"}`, buffered or
                // as one NDJSON line (ollama::tests checks the line).
                assert_eq!(body, serde_json::json!({"error": error.message}));
                continue;
            }
            if dialect == Dialect::Bedrock {
                // botocore's rest-json error parser: the code from `__type` (or the
                // `x-amzn-ErrorType` header), the message from `message`.
                assert_eq!(
                    body.get("message").and_then(Value::as_str),
                    Some(error.message)
                );
                assert!(body.get("__type").is_some_and(Value::is_string), "{body}");
                // A stream ends with an `:exception` message botocore raises on.
                let bytes = dialect.error_event(&error, Some(6));
                let mut messages = Vec::new();
                let mut decoder = crate::engine::framing::EventStreamDecoder::new(1 << 20);
                decoder
                    .push(&bytes, &mut messages)
                    .expect("within the bound");
                assert_eq!(
                    decoder.end(),
                    crate::engine::framing::event_stream::DecodeEnd::Clean
                );
                let [message] = messages.as_slice() else {
                    panic!("one message: {messages:?}");
                };
                assert_eq!(message.header(":message-type"), Some("exception"));
                assert!(message.header(":exception-type").is_some());
                let payload: Value = serde_json::from_slice(&message.payload).expect("JSON");
                assert_eq!(payload["message"], error.message);
                continue;
            }
            assert_eq!(
                body.pointer("/error/message").and_then(Value::as_str),
                Some(error.message),
                "{dialect}: {body}"
            );
            let event = String::from_utf8(dialect.error_event(&error, Some(6))).expect("text");
            if dialect == Dialect::Gemini {
                // google-genai raises on a stream line that is an `{"error":{...}}` object
                // with an integer `code`; @google/genai on bytes that parse as one (or are left
                // without an event delimiter at the end). A `data:` event neither raises on.
                assert!(!event.contains("data:"), "{event:?}");
                assert!(
                    event.ends_with('\n') && !event.ends_with("\n\n"),
                    "{event:?}"
                );
                let object: Value = serde_json::from_str(&event).expect("one JSON object");
                assert!(event.starts_with("{\"error\":"), "{event}");
                assert_eq!(
                    object.pointer("/error/message"),
                    Some(&Value::from(error.message))
                );
                assert!(
                    object.pointer("/error/code").is_some_and(Value::is_u64),
                    "{event}"
                );
                assert_eq!(body, object, "the same object as the buffered refusal");
                continue;
            }
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
        let gemini = Dialect::Gemini.error_body(&error);
        assert_eq!(
            gemini.pointer("/error/status"),
            Some(&Value::from("INTERNAL"))
        );
        assert_eq!(
            gemini.pointer("/error/details/0/metadata/rule"),
            Some(&Value::from("response.not_json"))
        );
        let numbered =
            String::from_utf8(Dialect::Responses.error_event(&error, Some(6))).expect("text");
        assert!(numbered.contains("\"sequence_number\":7"), "{numbered}");
    }
}

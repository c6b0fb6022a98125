//! The Chat Completions dialect (`POST .../chat/completions`): `tools`/`tool_calls`, streamed as
//! `chat.completion.chunk` events ending in `data: [DONE]`, reassembled by `index`.
//!
//! Input: the request body (facts and declared tools), then either a buffered body or SSE events
//! from the shared framer. Output: violations into the exchange's sink, and the per-choice
//! outcomes and usage that go into the report. [`crate::engine::Exchange`] drives it through
//! [`crate::engine::dialect::DialectRules`]; nothing here does I/O.

pub mod arguments;
pub mod contract;
pub mod reassemble;
pub mod request;
pub mod surface;
pub mod whole_json;
pub mod pieces;
#[cfg(test)]
mod edited_text;

use std::sync::Arc;

use contract::Declared;
use contract::buffered::{check_document, read_document};
use contract::stream::StreamContract;
use request::{ParsedRequest, parse_request_with};
use surface::{Mode, Surface};

use super::common::{self, StreamFinish};
use super::pieces::DialectTables;
use super::seam::{DialectRules, EnforceError, Judged, RequestParts};
use crate::engine::framing::SseEvent;
use crate::engine::report::RequestFacts;
use crate::engine::schema::{CompiledTools, SchemaCache};
use crate::engine::violation::ViolationSink;

/// One Chat Completions exchange's dialect state.
#[derive(Debug)]
pub struct ChatState {
    pub request: ParsedRequest,
    tools: Option<Arc<CompiledTools>>,
    /// Legacy `functions`, custom tools, `allowed_tools`.
    pub surface: Surface,
    stream: StreamContract,
}

impl ChatState {
    fn declared(&self) -> Declared<'_> {
        Declared {
            tools: self.tools.as_deref(),
            choice: &self.request.choice,
            parallel_tool_calls: self.request.facts.parallel_tool_calls,
            surface: &self.surface,
        }
    }
}

impl DialectRules for ChatState {
    /// Parses the request and compiles (or fetches) its declared tools' schemas.
    fn start(
        request: RequestParts<'_>,
        cache: &SchemaCache,
        sink: &mut ViolationSink,
        notes: &mut Vec<String>,
    ) -> ChatState {
        let request_body = request.body;
        let mut request = parse_request_with(request_body, Some(cache));
        let tools = request
            .known_tools
            .take()
            .or_else(|| {
                let tools = request.tools.as_ref()?;
                Some(cache.tools_for_text(tools.get(), &request::TOOLS))
            })
            .filter(|tools| tools.declares());
        let surface = Surface::new(cache, &request, request_body, tools.as_deref(), sink);
        let functions = surface.functions.as_deref().filter(|f| f.declares());
        // A legacy request's functions are its declared tools, as far as the report goes.
        request.facts.tools = tools
            .as_deref()
            .into_iter()
            .chain(functions)
            .flat_map(|tools| tools.iter())
            .map(|tool| tool.name.clone())
            .collect();
        let declares = tools.is_some() || functions.is_some();
        common::note_skipped(request.facts.parsed, declares, notes);
        common::report_invalid_schemas(tools.as_deref(), sink);
        common::report_invalid_schemas(functions, sink);
        ChatState {
            request,
            tools,
            surface,
            stream: StreamContract::default(),
        }
    }

    /// The facts, and both compiled arrays: `tools` and the legacy `functions`.
    fn declared_request(&self) -> common::Declared<'_> {
        common::Declared::new(&self.request.facts, self.tools.as_ref())
            .and(self.surface.functions.as_ref())
    }

    fn facts_mut(&mut self) -> &mut RequestFacts {
        &mut self.request.facts
    }

    /// What the stream's reassembly holds, as [`crate::engine::weigh`] counts it.
    fn reassembly_bytes(&self) -> usize {
        self.stream.assembly.held
    }

    /// Bounds what one event may add to the reassembly (see [`StreamContract::bound`]): one
    /// chunk may carry thousands of choices and calls.
    fn bound_reassembly(&mut self, max: usize) {
        self.stream.bound = max;
    }

    fn stream_is_done(&self) -> bool {
        self.stream.is_done()
    }

    /// One SSE event. At `[DONE]` the reassembled message is judged at once, so enforce mode
    /// sees complete-stage verdicts before the body ends.
    fn on_event(&mut self, event: &SseEvent, seq: u64, sink: &mut ViolationSink) {
        let declared = Declared {
            tools: self.tools.as_deref(),
            choice: &self.request.choice,
            parallel_tool_calls: self.request.facts.parallel_tool_calls,
            surface: &self.surface,
        };
        if self.stream.on_event(event, seq, declared, sink) {
            self.stream.complete(declared, sink);
        }
    }

    /// Judges a whole buffered body: `response.not_json` when it does not parse, else one
    /// outcome per choice, and the document's `usage`. Only the members the rules judge are
    /// read (see [`contract::members`]).
    fn judge_buffered(&mut self, body: &[u8], sink: &mut ViolationSink) -> Judged {
        let Some(document) = read_document(body, sink) else {
            return (Vec::new(), None);
        };
        let origin = contract::Origin::Buffered;
        let choices = check_document(&document, self.declared(), origin, None, sink);
        (choices, document.usage)
    }

    /// Ends a stream; see [`StreamFinish`].
    fn finish_stream(&mut self, end: StreamFinish<'_>) -> Judged {
        let declared = Declared {
            tools: self.tools.as_deref(),
            choice: &self.request.choice,
            parallel_tool_calls: self.request.facts.parallel_tool_calls,
            surface: &self.surface,
        };
        let legacy = self.surface.mode == Mode::Functions;
        let choices = match end {
            StreamFinish::Judged {
                ended_mid_event,
                sink,
            } => {
                let choices = self.stream.complete(declared, sink);
                self.stream.end_of_body(ended_mid_event, legacy, sink);
                choices
            }
            StreamFinish::Unjudged { scratch } => self.stream.complete(declared, scratch),
        };
        (choices, self.stream.assembly.usage.take())
    }

    /// `{"error":{...}}`, the OpenAI error shape.
    fn error_body(error: &EnforceError<'_>) -> serde_json::Value {
        serde_json::json!({ "error": common::openai_error(error) })
    }

    /// A `data:` event holding the error body, which the SDKs raise.
    fn error_event(error: &EnforceError<'_>, _last_sequence: Option<i64>) -> Vec<u8> {
        format!("data: {}\n\n", ChatState::error_body(error)).into_bytes()
    }

    fn pieces() -> &'static DialectTables {
        &pieces::PIECES
    }
}

#[cfg(test)]
mod tests {
    use super::contract::members::Members;
    use super::*;

    /// What one read of a body leaves: every field of every violation, and the outcomes.
    fn judged(state: &ChatState, document: Option<Members>) -> (Vec<String>, String) {
        let mut sink = ViolationSink::new(Default::default());
        let outcomes = document.map(|document| {
            check_document(
                &document,
                state.declared(),
                contract::Origin::Buffered,
                None,
                &mut sink,
            )
        });
        let violations = sink.as_slice().iter().map(|v| format!("{v:?}")).collect();
        (violations, format!("{outcomes:?}"))
    }

    #[test]
    fn the_typed_read_of_a_buffered_body_judges_as_a_full_value_does() {
        let requests = [
            r#"{"model":"m","tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],"tool_choice":"required","parallel_tool_calls":false}"#,
            r#"{"model":"m","functions":[{"name":"get_weather","parameters":{"type":"object"}}]}"#,
        ];
        let bodies = [
            r#"{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"total_tokens":3}}"#,
            r#"{"choices":[{"index":0,"message":{"content":"hi","tool_calls":[]},"finish_reason":"stop"},{"index":1,"message":{"content":5,"tool_calls":null},"finish_reason":null},{"index":2,"message":{"content":"x"}}]}"#,
            r#"{"choices":[{"index":0,"message":{"tool_calls":[{"id":"a","type":"function","function":{"name":"get_weather","arguments":{"city":"Oslo"}}},{"id":"a","function":{"name":"nope","arguments":"{"}},7]},"finish_reason":"stop"}]}"#,
            r#"{"choices":[{"index":0,"message":{"function_call":{"name":"get_weather","arguments":"{}"}},"finish_reason":"function_call"}]}"#,
            r#"{"choices":[{"message":null},{"index":"1","message":"text"},{"index":2,"message":{"tool_calls":{"id":"x"}}},3]}"#,
            r#"{"choices":[{"index":0,"message":{"content":"a"},"message":{"content":"b"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[{"index":0,"message":{"content":"a","content":null},"finish_reason":"stop"}]}"#,
            r#"{"choices":[{"index":0}],"choices":[{"index":1,"message":{"content":"c"},"finish_reason":"length"}]}"#,
            r#"{"choices":[{"index":0,"message":{"tool_calls":[{"id":"c1","type":"custom","custom":{"name":"grep","input":"a"}},{"id":"c2","custom":{"name":"get_weather","input":{"k":1}},"function":{"name":"x","arguments":"{}"}},{"id":"c4","type":"custom","custom":null,"function":null}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[{"index":0,"message":{"tool_calls":[{"id":"c3","type":"custom","custom":"text"}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[{"index":0,"message":{"tool_calls":[{"id":null,"type":null,"function":{"name":null,"arguments":null}},{"function":null},{"id":"","type":"function","function":{"name":"","arguments":"[1]"}},{"id":"z","type":"function","function":{"name":"get_weather","arguments":"{\"city\":7}"}}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[{"index":0,"message":{"tool_calls":[{"id":"z","type":"function","function":{"name":"get_weather","arguments":"{}","extra":true}}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[{"index":0,"message":{"tool_calls":[{"id":"q","type":"function","function":"get_weather"}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[{"index":0,"message":{"tool_calls":[{"id":"q","type":"function","id":"r","function":{"name":"get_weather","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":{"index":0}}"#,
            r#"{"choices":null,"usage":null}"#,
            r#"{"id":"no choices"}"#,
            r#"[{"choices":[]}]"#,
            r#""a string""#,
            r#"{"choices":[{"index":0,"message":{"content":"d"},"finish_reason":"stop"}]} trailing"#,
        ];
        let cache = SchemaCache::default();
        let mut typed_reads = 0;
        for request in requests {
            let mut sink = ViolationSink::new(Default::default());
            let parts = RequestParts {
                body: request.as_bytes(),
                path: None,
                ..RequestParts::default()
            };
            let state = ChatState::start(parts, &cache, &mut sink, &mut Vec::new());
            for body in bodies {
                let typed = Members::typed(body);
                typed_reads += usize::from(typed.is_some());
                let tree = serde_json::from_str::<serde_json::Value>(body)
                    .ok()
                    .map(Members::of);
                let typed = typed.or_else(|| serde_json::from_str(body).ok().map(Members::of));
                assert_eq!(
                    judged(&state, typed),
                    judged(&state, tree),
                    "{request}\n{body}"
                );
            }
        }
        // The typed read must take most of these, or the comparison proves little.
        assert!(typed_reads >= 14, "typed reads: {typed_reads}");
    }

    #[test]
    fn a_body_that_is_not_utf8_is_not_json_even_in_a_member_the_typed_read_skips() {
        // serde_json skips an ignored string without checking its bytes; a full `Value` does
        // check them, and so must the verdict.
        let good = br#"{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}"#;
        let bad = [&good[..7], b"\xff", &good[8..]].concat();
        // The premise: skipped, the bad byte goes unseen.
        assert!(serde_json::from_slice::<serde::de::IgnoredAny>(&bad).is_ok());
        for (body, not_json) in [(&good[..], false), (&bad[..], true)] {
            let mut sink = ViolationSink::new(Default::default());
            let document = contract::buffered::read_document(body, &mut sink);
            assert_eq!(document.is_none(), not_json);
            let rules: Vec<crate::engine::rules::RuleId> =
                sink.as_slice().iter().map(|v| v.rule).collect();
            let expected = if not_json {
                vec![crate::engine::rules::RuleId::ResponseNotJson]
            } else {
                vec![]
            };
            assert_eq!(rules, expected);
        }
    }
}

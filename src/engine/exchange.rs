//! One request/response pair, fed incrementally: the engine's public entry point.
//!
//! Input: the request body at construction, then the response head, then body bytes in
//! arbitrary chunks (each `feed` call is one frame, numbered from 0 as `seq`), then how the
//! body ended. Output: violations as they are found, and a [`Report`] at the end. The state
//! owns everything (`Arc`s for shared parts), so it moves freely into another task or thread.

use std::sync::Arc;

use super::config::EngineConfig;
use super::decode::{BodyDecoder, DecodeError};
use super::dialect::{DialectRules, DialectState, Judged, RequestParts, StreamFinish};
use super::framing::event_stream::{self, EventStreamDecoder, Message};
use super::framing::{
    ArrayEnd, JsonArrayFramer, JsonFramer, NdjsonEnd, NdjsonFramer, SseEvent, SseFramer,
};
use super::label::Dialect;
use super::report::{BodyKind, Completeness, LimitKind, Report};
use super::rules::RuleId;
use super::schema::SchemaCache;
use super::violation::{Site, Stage, Violation, ViolationSink};
use super::{BodyEnd, ResponseHead};

/// What the body is being read as.
#[derive(Debug)]
enum Body {
    AwaitingHead,
    NotInspected(BodyKind),
    Json(JsonFramer),
    Sse(Box<SseBody>),
    JsonArray(Box<ArrayBody>),
    Ndjson(Box<NdjsonBody>),
    EventStream(Box<MessagesBody>),
}

#[derive(Debug)]
struct SseBody {
    framer: SseFramer,
    events: Vec<SseEvent>,
    /// Decoded bytes taken in so far, and the most allowed (`max_reassembled`).
    seen: usize,
    max: usize,
}

/// A stream sent as one JSON array: each element is handed to the dialect as an event's data.
#[derive(Debug)]
struct ArrayBody {
    framer: JsonArrayFramer,
    elements: Vec<String>,
    /// Decoded bytes taken in so far, and the most allowed (`max_reassembled`).
    seen: usize,
    max: usize,
}

/// A newline-delimited JSON stream: each line is handed to the dialect as an event's data, and
/// each blank line as an event with empty data (the dialect judges it: it is no JSON object).
#[derive(Debug)]
struct NdjsonBody {
    framer: NdjsonFramer,
    lines: Vec<String>,
    /// Blank lines already handed to the dialect.
    blanks_judged: u64,
    /// Decoded bytes taken in so far, and the most allowed (`max_reassembled`).
    seen: usize,
    max: usize,
}

/// AWS event-stream messages: each is handed to the dialect as an event
/// ([`event_stream::to_event`]), and a corrupt message as a `:frame:<problem>` event.
#[derive(Debug)]
struct MessagesBody {
    decoder: EventStreamDecoder,
    messages: Vec<Message>,
    /// Whether the corruption that stopped the decoder was handed to the dialect.
    corruption_told: bool,
    /// Decoded bytes taken in so far, and the most allowed (`max_reassembled`).
    seen: usize,
    max: usize,
}

/// The engine's state for one exchange.
#[derive(Debug)]
pub struct Exchange {
    config: Arc<EngineConfig>,
    /// The dialect's request facts, event reading, reassembly and rules.
    state: DialectState,
    sink: ViolationSink,
    notes: Vec<String>,
    status: Option<u16>,
    /// How the body is framed, once the head is known.
    kind: Option<BodyKind>,
    body: Body,
    decoder: Option<BodyDecoder>,
    /// Set when inspection stopped early (a bound, a decode failure, not inspected).
    stopped: Option<Completeness>,
    next_seq: u64,
}

impl Exchange {
    /// Starts a Chat Completions exchange; compiles (or fetches from `cache`) the declared
    /// tools' schemas.
    pub fn new(config: &Arc<EngineConfig>, cache: &SchemaCache, request_body: &[u8]) -> Exchange {
        Exchange::with_dialect(config, cache, Dialect::Chat, request_body)
    }

    /// Starts an exchange of the given dialect (see [`Dialect::for_path`]) from its body alone,
    /// for callers that know no request path (tests, benches, the fuzzer).
    pub fn with_dialect(
        config: &Arc<EngineConfig>,
        cache: &SchemaCache,
        dialect: Dialect,
        request_body: &[u8],
    ) -> Exchange {
        let request = RequestParts {
            body: request_body,
            ..RequestParts::default()
        };
        Exchange::start(config, cache, dialect, request)
    }

    /// Starts an exchange of the given dialect from its request: the body, and the path with
    /// its query where the caller knows it (every place that starts an exchange from traffic
    /// or a recording passes it). The path can carry a credential (`?key=`): the dialect reads
    /// it, and nothing the exchange logs, reports or puts in a violation includes it.
    pub fn start(
        config: &Arc<EngineConfig>,
        cache: &SchemaCache,
        dialect: Dialect,
        request: RequestParts<'_>,
    ) -> Exchange {
        let mut sink = ViolationSink::capped(config.severity.clone(), config.max_violations);
        let mut notes = Vec::new();
        let state = DialectState::new(dialect, cache, request, &mut sink, &mut notes);
        Exchange {
            config: Arc::clone(config),
            state,
            sink,
            notes,
            status: None,
            kind: None,
            body: Body::AwaitingHead,
            decoder: None,
            stopped: None,
            next_seq: 0,
        }
    }

    /// The dialect this exchange is judged as.
    pub fn dialect(&self) -> Dialect {
        self.state.dialect()
    }

    /// The last `sequence_number` seen on a Responses stream.
    pub fn last_sequence_number(&self) -> Option<i64> {
        self.state.rules().last_sequence_number()
    }

    /// Records the response head and decides how the body is read.
    pub fn response_head(&mut self, head: ResponseHead) {
        self.state.rules_mut().on_head(&head, &mut self.sink);
        let kind = self.state.rules().body_kind(&head);
        let judged_status = self.state.rules().judges_status(head.status);
        let ResponseHead {
            status,
            content_type,
            content_encoding,
            headers: _,
        } = head;
        self.status = Some(status);
        self.kind = Some(kind);
        if (200..300).contains(&status) {
            // Only an array that got an answer is worth keeping compiled.
            self.state.rules().admit_tools();
        }
        if !judged_status {
            self.notes
                .push(format!("status {status}: tool rules skipped"));
            self.stop(Body::NotInspected(kind), Completeness::NotInspected);
            return;
        }
        if kind == BodyKind::Other {
            let shown = content_type.unwrap_or_default();
            self.notes.push(format!(
                "content type {shown:?} is neither JSON nor SSE: body not inspected"
            ));
            self.stop(Body::NotInspected(kind), Completeness::NotInspected);
            return;
        }
        self.check_stream_flag(kind);
        match BodyDecoder::new(content_encoding.as_deref(), self.config.max_decoded) {
            Ok(decoder) => self.decoder = Some(decoder),
            Err(error) => {
                self.stop(
                    Body::NotInspected(kind),
                    Completeness::DecodeFailed {
                        reason: error.to_string(),
                    },
                );
                return;
            }
        }
        if kind.is_stream() {
            self.state
                .rules_mut()
                .bound_reassembly(self.config.max_reassembled);
        }
        self.body = match kind {
            BodyKind::Sse => Body::Sse(Box::new(SseBody {
                framer: SseFramer::new(self.config.max_sse_line),
                events: Vec::new(),
                seen: 0,
                max: self.config.max_reassembled,
            })),
            BodyKind::JsonArray => Body::JsonArray(Box::new(ArrayBody {
                framer: JsonArrayFramer::new(self.config.max_sse_line),
                elements: Vec::new(),
                seen: 0,
                max: self.config.max_reassembled,
            })),
            BodyKind::Ndjson => Body::Ndjson(Box::new(NdjsonBody {
                framer: NdjsonFramer::new(self.config.max_sse_line),
                lines: Vec::new(),
                blanks_judged: 0,
                seen: 0,
                max: self.config.max_reassembled,
            })),
            BodyKind::EventStream => Body::EventStream(Box::new(MessagesBody {
                decoder: EventStreamDecoder::new(self.config.max_sse_line),
                messages: Vec::new(),
                corruption_told: false,
                seen: 0,
                max: self.config.max_reassembled,
            })),
            BodyKind::Json | BodyKind::Other | BodyKind::None => {
                Body::Json(JsonFramer::new(self.config.max_json_body))
            }
        };
    }

    /// Feeds response body bytes; one call is one frame (`seq`).
    pub fn feed(&mut self, chunk: &[u8]) {
        let seq = self.next_seq;
        self.next_seq += 1;
        if matches!(self.body, Body::AwaitingHead) {
            self.notes
                .push("body arrived without a response head: assumed 200".to_owned());
            self.response_head(ResponseHead {
                status: 200,
                ..ResponseHead::default()
            });
            self.status = None;
        }
        if self.stopped.is_some() {
            return;
        }
        let Exchange {
            state,
            sink,
            body,
            decoder,
            ..
        } = self;
        let Some(decoder) = decoder.as_mut() else {
            return;
        };
        let outcome = match decoder.push(chunk) {
            Ok(decoded) => frame(body, decoded, seq, state.rules_mut(), sink),
            Err(error) => Err(decode_stop(error)),
        };
        if let Err(completeness) = outcome {
            self.stopped = Some(completeness);
        }
    }

    /// Whether inspection stopped early (a bound, a decode failure, a body not inspected):
    /// further [`Exchange::feed`]s change nothing, and the report's verdicts on the body are
    /// final but for the end-of-body bookkeeping.
    pub fn stopped(&self) -> bool {
        self.stopped.is_some()
    }

    /// Violations found so far (enforce mode checks this after each feed).
    pub fn violations(&self) -> &[Violation] {
        self.sink.as_slice()
    }

    /// Ends the exchange and builds the report.
    pub fn finish(mut self, end: BodyEnd) -> Report {
        if self.stopped.is_none()
            && let Some(decoder) = self.decoder.as_mut()
        {
            let seq = self.next_seq.saturating_sub(1);
            let outcome = match decoder.finish() {
                Ok(decoded) => frame(
                    &mut self.body,
                    decoded,
                    seq,
                    self.state.rules_mut(),
                    &mut self.sink,
                ),
                Err(error) => Err(decode_stop(error)),
            };
            if let Err(completeness) = outcome {
                self.stopped = Some(completeness);
            }
        }
        if self.stopped.is_none()
            && end == BodyEnd::Complete
            && let Body::Ndjson(ndjson) = &mut self.body
        {
            // A last line without its newline is whole once the body ended by itself.
            let seq = self.next_seq.saturating_sub(1);
            let mut lines = Vec::new();
            ndjson.framer.finish(&mut lines);
            for data in lines {
                let event = SseEvent {
                    event: None,
                    data,
                    id: None,
                };
                self.state.rules_mut().on_event(&event, seq, &mut self.sink);
            }
        }
        let judged = self.stopped.is_none()
            && match end {
                BodyEnd::Complete | BodyEnd::UpstreamBroke => true,
                BodyEnd::ReaderGone => self.content_is_whole(),
                BodyEnd::Lossy => false,
            };
        let completeness = match &self.stopped {
            Some(stopped) => stopped.clone(),
            None if judged => Completeness::Complete,
            None => Completeness::Partial,
        };
        let body = std::mem::replace(&mut self.body, Body::AwaitingHead);
        let (body_kind, choices, usage) = match body {
            Body::AwaitingHead => (BodyKind::None, Vec::new(), None),
            Body::NotInspected(kind) => (kind, Vec::new(), None),
            Body::Json(framer) if judged => {
                let (choices, usage) = self
                    .state
                    .rules_mut()
                    .judge_buffered(framer.body(), &mut self.sink);
                (BodyKind::Json, choices, usage)
            }
            Body::Json(_) => (BodyKind::Json, Vec::new(), None),
            Body::Sse(sse) => {
                let (choices, usage) = self.finish_stream(judged, sse.framer.has_pending());
                if sse.framer.comments() > 0 {
                    self.notes.push(format!(
                        "{} SSE comment line(s) (keep-alives) skipped",
                        sse.framer.comments()
                    ));
                }
                (BodyKind::Sse, choices, usage)
            }
            Body::JsonArray(array) => {
                let (choices, usage) = self.finish_stream(judged, array.framer.has_pending());
                if let Some(note) = array_end_note(array.framer.end()) {
                    self.notes.push(note);
                }
                (BodyKind::JsonArray, choices, usage)
            }
            Body::Ndjson(ndjson) => {
                let (choices, usage) = self.finish_stream(judged, ndjson.framer.has_pending());
                if let Some(note) = ndjson_end_note(&ndjson.framer) {
                    self.notes.push(note);
                }
                (BodyKind::Ndjson, choices, usage)
            }
            Body::EventStream(messages) => {
                let (choices, usage) = self.finish_stream(judged, messages.decoder.has_pending());
                (BodyKind::EventStream, choices, usage)
            }
        };
        let dialect = self.state.dialect();
        let mcp = self.state.rules_mut().take_mcp();
        let Exchange {
            state,
            sink,
            notes,
            status,
            ..
        } = self;
        let request = state.into_facts();
        Report {
            dialect,
            request,
            status,
            body_kind,
            choices,
            usage,
            violations_not_listed: sink.not_listed(),
            completeness: match (
                completeness,
                sink.schema_budget_hits(),
                sink.schema_streaming_hits(),
            ) {
                (Completeness::Complete, calls @ 1.., _) => Completeness::SchemaBudget { calls },
                (Completeness::Complete, 0, calls @ 1..) => Completeness::SchemaStreaming { calls },
                (other, _, _) => other,
            },
            violations: sink.into_vec(),
            notes,
            mcp,
        }
    }

    /// Ends a stream in the dialect: judged into the exchange's sink, or (when not `judged`) its
    /// partial reassembly still shown and its verdicts dropped.
    fn finish_stream(&mut self, judged: bool, ended_mid_event: bool) -> Judged {
        let mut scratch = ViolationSink::new(self.config.severity.clone());
        let end = if judged {
            StreamFinish::Judged {
                ended_mid_event,
                sink: &mut self.sink,
            }
        } else {
            StreamFinish::Unjudged {
                scratch: &mut scratch,
            }
        };
        self.state.rules_mut().finish_stream(end)
    }

    /// Whether the body's content already ended by its own framing, whatever the transport did
    /// after: `data: [DONE]` on a stream, a complete document on a buffered body.
    fn content_is_whole(&self) -> bool {
        match &self.body {
            Body::Sse(_) => self.state.rules().stream_is_done(),
            Body::JsonArray(array) => array.framer.is_closed(),
            Body::Ndjson(_) => self.state.rules().stream_is_done(),
            Body::EventStream(_) => self.state.rules().stream_is_done(),
            Body::Json(framer) => {
                serde_json::from_slice::<serde::de::IgnoredAny>(framer.body()).is_ok()
            }
            Body::AwaitingHead | Body::NotInspected(_) => false,
        }
    }

    /// What the stream's reassembly holds, as the engine counts it (`engine::weigh`): per
    /// choice, call, block and item, their keys, ids, names and text; bounded by
    /// `max_reassembled` (past it the exchange stops `too_large`). For a buffered body, what
    /// judging it at its end will take (`weigh::BUFFERED_PER_BYTE` per byte; the body itself is
    /// bounded by `max_json_body`), and what the dialect already holds (MCP: the request's
    /// messages it observed). The proxy charges it to `inspect.max_memory`, with what framing
    /// holds ([`Exchange::framing_bytes`]).
    pub fn reassembly_bytes(&self) -> usize {
        match &self.body {
            Body::Json(framer) => framer
                .body()
                .len()
                .saturating_mul(super::weigh::BUFFERED_PER_BYTE)
                .saturating_add(self.state.rules().reassembly_bytes()),
            Body::AwaitingHead
            | Body::NotInspected(_)
            | Body::Sse(_)
            | Body::JsonArray(_)
            | Body::Ndjson(_)
            | Body::EventStream(_) => self.state.rules().reassembly_bytes(),
        }
    }

    /// What the body's framing holds between feeds, apart from reassembly: the framer's
    /// partial line, event, element or message (a buffered body: the body itself), the emptied
    /// queues of framed events, and the decoder's buffer and state. The proxy charges it to
    /// `inspect.max_memory` with [`Exchange::reassembly_bytes`].
    pub fn framing_bytes(&self) -> usize {
        use std::mem::size_of;
        let framer = match &self.body {
            Body::AwaitingHead | Body::NotInspected(_) => 0,
            Body::Json(framer) => framer.held_bytes(),
            Body::Sse(sse) => {
                sse.framer.held_bytes() + sse.events.capacity() * size_of::<SseEvent>()
            }
            Body::JsonArray(array) => {
                array.framer.held_bytes() + array.elements.capacity() * size_of::<String>()
            }
            Body::Ndjson(ndjson) => {
                ndjson.framer.held_bytes() + ndjson.lines.capacity() * size_of::<String>()
            }
            Body::EventStream(messages) => {
                messages.decoder.held_bytes() + messages.messages.capacity() * size_of::<Message>()
            }
        };
        framer.saturating_add(self.decoder.as_ref().map_or(0, BodyDecoder::held_bytes))
    }

    /// How the response body is framed, once [`Exchange::response_head`] was given: the one
    /// answer to "is this a stream" (the content type, or the request's `stream` flag when the
    /// response names none), which enforce mode asks too.
    pub fn body_kind(&self) -> Option<BodyKind> {
        self.kind
    }

    fn check_stream_flag(&mut self, kind: BodyKind) {
        if !self.state.rules().facts().parsed {
            return;
        }
        let asked_stream = self.state.rules().facts().stream;
        let got_stream = kind.is_stream();
        if asked_stream != got_stream {
            let detail = format!(
                "the request set stream={asked_stream} and the response is {}",
                if kind == BodyKind::JsonArray {
                    "a JSON-array stream"
                } else if kind == BodyKind::Ndjson {
                    "an NDJSON stream"
                } else if kind == BodyKind::EventStream {
                    "an event stream"
                } else if got_stream {
                    "an SSE stream"
                } else {
                    "a buffered body"
                }
            );
            self.sink.push(
                RuleId::ResponseStreamMismatch,
                Stage::Head,
                Site::at(""),
                detail,
            );
        }
    }

    fn stop(&mut self, body: Body, completeness: Completeness) {
        self.body = body;
        self.stopped = Some(completeness);
    }
}

/// Hands decoded bytes to the framer and each whole SSE event to the dialect; an `Err` says why
/// inspection must stop.
fn frame(
    body: &mut Body,
    decoded: &[u8],
    seq: u64,
    state: &mut dyn DialectRules,
    sink: &mut ViolationSink,
) -> Result<(), Completeness> {
    match body {
        Body::AwaitingHead | Body::NotInspected(_) => Ok(()),
        Body::Json(framer) => framer.push(decoded).map_err(|e| Completeness::TooLarge {
            limit: LimitKind::JsonBody,
            bytes: e.limit,
        }),
        Body::Sse(sse) => {
            let SseBody {
                framer,
                events,
                seen,
                max,
            } = sse.as_mut();
            take_in(seen, *max, decoded.len())?;
            let pushed = framer.push(decoded, events);
            for event in events.drain(..) {
                judge_event(state, &event, seq, sink, *max)?;
            }
            pushed.map_err(|e| Completeness::TooLarge {
                limit: LimitKind::SseLine,
                bytes: e.limit,
            })
        }
        Body::JsonArray(array) => {
            let ArrayBody {
                framer,
                elements,
                seen,
                max,
            } = array.as_mut();
            take_in(seen, *max, decoded.len())?;
            let pushed = framer.push(decoded, elements);
            for data in elements.drain(..) {
                let event = SseEvent {
                    event: None,
                    data,
                    id: None,
                };
                judge_event(state, &event, seq, sink, *max)?;
            }
            pushed.map_err(|e| Completeness::TooLarge {
                limit: LimitKind::ArrayElement,
                bytes: e.limit,
            })
        }
        Body::Ndjson(ndjson) => {
            let NdjsonBody {
                framer,
                lines,
                blanks_judged,
                seen,
                max,
            } = ndjson.as_mut();
            take_in(seen, *max, decoded.len())?;
            let pushed = framer.push(decoded, lines);
            // Lines and blank lines of one push are handed over in line order only within
            // each kind: a blank line's verdict names its body offset, not its neighbours.
            for data in lines.drain(..) {
                let event = SseEvent {
                    event: None,
                    data,
                    id: None,
                };
                judge_event(state, &event, seq, sink, *max)?;
            }
            let (blanks, _) = framer.blank_lines();
            while *blanks_judged < blanks {
                *blanks_judged += 1;
                let event = SseEvent {
                    event: None,
                    data: String::new(),
                    id: None,
                };
                judge_event(state, &event, seq, sink, *max)?;
            }
            pushed.map_err(|e| Completeness::TooLarge {
                limit: LimitKind::NdjsonLine,
                bytes: e.limit,
            })
        }
        Body::EventStream(body) => {
            let MessagesBody {
                decoder,
                messages,
                corruption_told,
                seen,
                max,
            } = body.as_mut();
            take_in(seen, *max, decoded.len())?;
            let pushed = decoder.push(decoded, messages);
            for message in messages.drain(..) {
                judge_event(state, &event_stream::to_event(message), seq, sink, *max)?;
            }
            if let event_stream::DecodeEnd::Corrupt { offset, corruption } = decoder.end()
                && !*corruption_told
            {
                *corruption_told = true;
                let event = SseEvent {
                    event: Some(format!(":frame:{}", corruption.problem())),
                    data: format!("the message at byte {offset}: {}", corruption.detail()),
                    id: None,
                };
                judge_event(state, &event, seq, sink, *max)?;
            }
            pushed.map_err(|e| Completeness::TooLarge {
                limit: LimitKind::EventStreamMessage,
                bytes: e.limit,
            })
        }
    }
}

/// Counts `len` more decoded stream bytes against `max` (`max_reassembled`).
fn take_in(seen: &mut usize, max: usize, len: usize) -> Result<(), Completeness> {
    *seen = seen.saturating_add(len);
    if *seen > max {
        return Err(Completeness::TooLarge {
            limit: LimitKind::Reassembled,
            bytes: max,
        });
    }
    Ok(())
}

/// Hands one event to the dialect; what reassembly holds, not only what it took in, stays
/// within `max` (the events not yet judged are dropped with the caller's drain).
fn judge_event(
    state: &mut dyn DialectRules,
    event: &SseEvent,
    seq: u64,
    sink: &mut ViolationSink,
    max: usize,
) -> Result<(), Completeness> {
    state.on_event(event, seq, sink);
    if state.reassembly_bytes() > max {
        return Err(Completeness::TooLarge {
            limit: LimitKind::Reassembled,
            bytes: max,
        });
    }
    Ok(())
}

/// What the report notes about how a JSON-array stream's bytes ended, when not by its `]`
/// (the dialect judges what the elements said; this says what the framing saw).
fn array_end_note(end: ArrayEnd) -> Option<String> {
    match end {
        ArrayEnd::Closed => None,
        ArrayEnd::Unterminated { pending_element } => Some(format!(
            "the JSON array ended without its closing `]`{}",
            if pending_element {
                " (inside an element)"
            } else {
                ""
            }
        )),
        ArrayEnd::Empty => Some("the JSON-array stream had no bytes".to_owned()),
        ArrayEnd::NotAnArray { offset } => Some(format!(
            "the JSON-array stream is not an array (byte {offset}): nothing framed"
        )),
        ArrayEnd::Malformed { offset } => Some(format!(
            "the JSON array is malformed between elements at byte {offset}: framing stopped"
        )),
        ArrayEnd::TrailingBytes { offset } => Some(format!(
            "bytes after the JSON array's closing `]` (from byte {offset}) were not framed"
        )),
    }
}

/// What the report notes about how an NDJSON stream's bytes ended, when not with a newline
/// after its last line, and the blank lines it held.
fn ndjson_end_note(framer: &NdjsonFramer) -> Option<String> {
    let ending = match framer.end() {
        NdjsonEnd::Complete | NdjsonEnd::TooLong => None,
        NdjsonEnd::MissingFinalNewline => {
            Some("the NDJSON stream's last line had no final newline".to_owned())
        }
        NdjsonEnd::Empty => Some("the NDJSON stream had no bytes".to_owned()),
    };
    match (ending, framer.blank_lines()) {
        (ending, (0, _)) | (ending, (_, None)) => ending,
        (ending, (count, Some(first))) => {
            let blanks = format!("{count} blank NDJSON line(s), the first at byte {first}");
            Some(match ending {
                Some(ending) => format!("{ending}; {blanks}"),
                None => blanks,
            })
        }
    }
}

fn decode_stop(error: DecodeError) -> Completeness {
    match error {
        DecodeError::TooLarge { limit } => Completeness::TooLarge {
            limit: LimitKind::Decoded,
            bytes: limit,
        },
        other @ (DecodeError::Unsupported(_) | DecodeError::Corrupt { .. }) => {
            Completeness::DecodeFailed {
                reason: other.to_string(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started(content_type: &str, content_encoding: Option<&str>) -> Exchange {
        let config = Arc::new(EngineConfig::default());
        let mut exchange = Exchange::new(
            &config,
            &SchemaCache::default(),
            br#"{"model":"m","stream":true,"messages":[]}"#,
        );
        let mut headers = vec![("content-type", content_type)];
        headers.extend(content_encoding.map(|encoding| ("content-encoding", encoding)));
        exchange.response_head(ResponseHead::from_headers(200, headers));
        exchange
    }

    #[test]
    fn framing_bytes_count_an_unfinished_event_a_buffered_body_and_a_decoder() {
        let mut stream = started("text/event-stream", None);
        assert_eq!(stream.framing_bytes(), 0, "nothing taken in yet");
        let line = format!("data: {{\"padding\":\"{}\"}}", "x".repeat(100_000));
        stream.feed(line.as_bytes());
        assert!(
            stream.framing_bytes() >= line.len(),
            "the unfinished line is held"
        );

        let mut buffered = started("application/json", None);
        buffered.feed(line.as_bytes());
        assert!(buffered.framing_bytes() >= line.len(), "the body is held");

        let compressed = started("text/event-stream", Some("gzip"));
        assert!(
            compressed.framing_bytes() >= super::super::decode::CODEC_STATE,
            "a decoder's state is counted"
        );
    }
}

//! An inspected exchange as an OpenTelemetry span: the GenAI semantic conventions' client
//! inference span, with each violation a `gen_ai.evaluation.result` event.
//!
//! Input: the exchange's label, what the inspector saw of its timing and trace context
//! ([`TraceSeed`]), and its verdict ([`Report`]). Output: one [`SpanData`] handed to
//! [`Spans::send`] (a bounded queue; never a wait). Built only when export is on, after the
//! verdict: nothing here runs on the client path. Kind CLIENT (tooltap's call to the upstream),
//! the child of the client's `traceparent` span when one was sent. The mapping is the table of
//! docs/monitoring.md ("OpenTelemetry span"); every text on the span is bounded (model and
//! violation texts as the violations file bounds them, content by `otlp.max_content_bytes`,
//! events by `otlp.max_events`).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::ExchangeLabel;
use crate::engine::mcp_observation::{MessageKind, Parts};
use crate::engine::violation::{MAX_TEXT_BYTES, Stage, bounded_str};
use crate::engine::{Dialect, KeptJson, Report};
use crate::metrics::IncompleteReason;
use crate::otlp::proto::SPAN_KIND_CLIENT;
use crate::otlp::trace_context::random_id;
use crate::otlp::{AnyValue, KeyValue, SpanData, SpanEvent, Spans, TraceParent};

/// What the inspector gathered besides the verdict.
#[derive(Debug, Default)]
pub(super) struct TraceSeed {
    /// The client's `traceparent` (and `tracestate`), when valid.
    pub parent: Option<Box<TraceParent>>,
    /// From sending the request upstream to the response head.
    pub ttfb: Option<Duration>,
    /// When the first response frame reached the tee.
    pub first_chunk: Option<Instant>,
    /// When the response body ended.
    pub ended: Option<Instant>,
    /// The exchange was handed to the recorder.
    pub recorded: bool,
}

/// The facts of an exchange that was judged.
pub(super) struct Judged<'a> {
    pub report: &'a Report,
    pub incomplete: &'a [IncompleteReason],
    pub enforced: bool,
}

/// Send the span of a judged exchange.
pub(super) fn send_judged(
    spans: &Spans,
    label: &ExchangeLabel,
    seed: &TraceSeed,
    judged: Judged<'_>,
) {
    let report = judged.report;
    let clock = Clock::now();
    let mut span = begin(label, seed, &clock);
    let attributes = &mut span.attributes;
    match (label.dialect, report.mcp.as_deref()) {
        (Dialect::Mcp, observation) => {
            span.name = mcp_attributes(attributes, observation);
        }
        (dialect, _) => {
            let model = report
                .request
                .model
                .as_deref()
                .map(|model| bounded_str(model, MAX_TEXT_BYTES).into_owned());
            span.name = match &model {
                Some(model) => format!("chat {model}"),
                None => "chat".to_owned(),
            };
            attributes.push(text("gen_ai.operation.name", "chat"));
            attributes.push(text("gen_ai.provider.name", provider(dialect)));
            if let Some(model) = model {
                attributes.push(KeyValue::new("gen_ai.request.model", AnyValue::Str(model)));
            }
            attributes.push(KeyValue::new(
                "gen_ai.request.stream",
                AnyValue::Bool(report.request.stream),
            ));
            let reasons: Vec<String> = report
                .choices
                .iter()
                .filter_map(|choice| choice.finish_reason.as_deref())
                .map(|reason| bounded_str(reason, MAX_TEXT_BYTES).into_owned())
                .collect();
            if !reasons.is_empty() {
                attributes.push(KeyValue::new(
                    "gen_ai.response.finish_reasons",
                    AnyValue::StrArray(reasons),
                ));
            }
            usage(
                attributes,
                report.usage.as_ref().map(KeptJson::value).as_deref(),
            );
            if report.body_kind.is_stream()
                && let Some(first) = seed.first_chunk
            {
                attributes.push(KeyValue::new(
                    "gen_ai.response.time_to_first_chunk",
                    AnyValue::Double(first.saturating_duration_since(label.started).as_secs_f64()),
                ));
            }
        }
    }
    if let Some(status) = report.status {
        attributes.push(KeyValue::new(
            "http.response.status_code",
            AnyValue::Int(i64::from(status)),
        ));
    }
    let listed = report.violations.len() as u64;
    attributes.push(KeyValue::new(
        "tooltap.violations",
        AnyValue::Int(i64::try_from(listed + report.violations_not_listed).unwrap_or(i64::MAX)),
    ));
    if !judged.incomplete.is_empty() {
        attributes.push(KeyValue::new(
            "tooltap.incomplete",
            AnyValue::StrArray(
                judged
                    .incomplete
                    .iter()
                    .map(|reason| reason.as_str().to_owned())
                    .collect(),
            ),
        ));
    }
    if judged.enforced {
        attributes.push(KeyValue::new("tooltap.enforced", AnyValue::Bool(true)));
    }
    let error = error_type(report.status, judged.incomplete);
    if let Some(error) = &error {
        attributes.push(text("error.type", error));
    }
    span.error = error;
    if spans.limits.content && label.dialect != Dialect::Mcp {
        content(spans, &mut span.attributes, report);
    }
    let kept = report.violations.len().min(spans.limits.max_events);
    span.events = report.violations[..kept]
        .iter()
        .map(|violation| {
            let mut attributes = vec![
                KeyValue::new(
                    "gen_ai.evaluation.name",
                    AnyValue::Str(format!("tooltap.{}", violation.rule.as_str())),
                ),
                text("gen_ai.evaluation.score.label", "fail"),
                KeyValue::new(
                    "gen_ai.evaluation.explanation",
                    AnyValue::Str(bounded_str(&violation.detail, MAX_TEXT_BYTES).into_owned()),
                ),
                text("tooltap.severity", violation.severity.as_str()),
                text("tooltap.stage", stage(violation.stage)),
                KeyValue::new(
                    "tooltap.path",
                    AnyValue::Str(bounded_str(&violation.path, MAX_TEXT_BYTES).into_owned()),
                ),
            ];
            let (call_id, call_name) = tool_call(report, violation.choice, violation.tool_call);
            if let Some(id) = call_id {
                attributes.push(KeyValue::new("gen_ai.tool.call.id", AnyValue::Str(id)));
            }
            if let Some(name) = call_name {
                attributes.push(KeyValue::new("gen_ai.tool.name", AnyValue::Str(name)));
            }
            SpanEvent {
                name: "gen_ai.evaluation.result",
                time_unix_nano: span.end_unix_nano,
                attributes,
            }
        })
        .collect();
    let cut = (report.violations.len() - kept) as u64;
    spans.events_dropped(cut);
    span.dropped_events = u32::try_from(cut + report.violations_not_listed).unwrap_or(u32::MAX);
    spans.send(span);
}

/// Send the span of an exchange that was not judged: `why` is its `error.type`
/// (`no_response`: the upstream never answered; `inspection_failed`: the analysis panicked).
pub(super) fn send_unjudged(spans: &Spans, label: &ExchangeLabel, seed: &TraceSeed, why: &str) {
    let clock = Clock::now();
    let mut span = begin(label, seed, &clock);
    if label.dialect != Dialect::Mcp {
        span.name = "chat".to_owned();
        span.attributes.push(text("gen_ai.operation.name", "chat"));
        span.attributes
            .push(text("gen_ai.provider.name", provider(label.dialect)));
    } else {
        span.name = "mcp".to_owned();
    }
    span.attributes.push(text("error.type", why));
    span.error = Some(why.to_owned());
    spans.send(span);
}

/// The wall clock and the monotonic clock read together, to place `Instant`s in time.
struct Clock {
    wall: u64,
    now: Instant,
}

impl Clock {
    fn now() -> Clock {
        Clock {
            wall: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            now: Instant::now(),
        }
    }

    fn unix_nanos(&self, at: Instant) -> u64 {
        let ago = self.now.saturating_duration_since(at).as_nanos();
        self.wall
            .saturating_sub(u64::try_from(ago).unwrap_or(u64::MAX))
    }
}

/// The span's identity, times and the attributes every exchange has.
fn begin(label: &ExchangeLabel, seed: &TraceSeed, clock: &Clock) -> SpanData {
    let (trace_id, parent_span_id, trace_state) = match &seed.parent {
        Some(parent) => (
            parent.trace_id,
            Some(parent.span_id),
            parent.trace_state.clone(),
        ),
        None => (random_id::<16>(), None, None),
    };
    let mut attributes = vec![
        KeyValue::new("tooltap.exchange.id", AnyValue::Str(label.id.to_string())),
        KeyValue::new("tooltap.route", AnyValue::Str(label.route.to_string())),
        text("tooltap.dialect", label.dialect.as_str()),
    ];
    if let Some(ttfb) = seed.ttfb {
        attributes.push(KeyValue::new(
            "tooltap.upstream.ttfb",
            AnyValue::Double(ttfb.as_secs_f64()),
        ));
    }
    if seed.recorded {
        attributes.push(KeyValue::new("tooltap.recording", AnyValue::Bool(true)));
    }
    SpanData {
        trace_id,
        span_id: random_id::<8>(),
        parent_span_id,
        trace_state,
        name: String::new(),
        kind: SPAN_KIND_CLIENT,
        start_unix_nano: clock.unix_nanos(label.started),
        end_unix_nano: clock.unix_nanos(seed.ended.unwrap_or(clock.now)),
        attributes,
        events: Vec::new(),
        dropped_events: 0,
        error: None,
    }
}

fn text(key: &'static str, value: &str) -> KeyValue {
    KeyValue::new(key, AnyValue::Str(value.to_owned()))
}

/// `gen_ai.provider.name` for the API the exchange speaks (the conventions' well-known values;
/// a compatible server behind the `chat` dialect, such as Groq or vLLM, reads as `openai`).
fn provider(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Chat | Dialect::Responses => "openai",
        Dialect::Anthropic => "anthropic",
        Dialect::Gemini => "gcp.gemini",
        Dialect::Ollama => "ollama",
        Dialect::Bedrock => "aws.bedrock",
        Dialect::Mcp => "mcp",
    }
}

fn stage(stage: Stage) -> &'static str {
    match stage {
        Stage::Request => "request",
        Stage::Head => "head",
        Stage::Fragment => "fragment",
        Stage::Complete => "complete",
    }
}

/// `error.type`: the upstream's error status, else how the exchange broke off.
fn error_type(status: Option<u16>, incomplete: &[IncompleteReason]) -> Option<String> {
    if let Some(status) = status.filter(|status| *status >= 400) {
        return Some(status.to_string());
    }
    [
        IncompleteReason::UpstreamBroke,
        IncompleteReason::ReaderGone,
    ]
    .into_iter()
    .find(|reason| incomplete.contains(reason))
    .map(|reason| reason.as_str().to_owned())
}

/// `gen_ai.usage.input_tokens`/`output_tokens` from the usage object, whichever dialect's
/// spelling it has.
fn usage(attributes: &mut Vec<KeyValue>, usage: Option<&Value>) {
    let Some(usage) = usage else {
        return;
    };
    let first = |names: &[&str]| names.iter().find_map(|name| usage.get(*name)?.as_i64());
    let input = first(&[
        "prompt_tokens",
        "input_tokens",
        "promptTokenCount",
        "prompt_eval_count",
        "inputTokens",
    ]);
    let output = first(&[
        "completion_tokens",
        "output_tokens",
        "candidatesTokenCount",
        "eval_count",
        "outputTokens",
    ]);
    if let Some(input) = input {
        attributes.push(KeyValue::new(
            "gen_ai.usage.input_tokens",
            AnyValue::Int(input),
        ));
    }
    if let Some(output) = output {
        attributes.push(KeyValue::new(
            "gen_ai.usage.output_tokens",
            AnyValue::Int(output),
        ));
    }
}

/// The id and name of the tool call a violation is about, when the report has that call.
fn tool_call(
    report: &Report,
    choice: Option<u32>,
    call: Option<u32>,
) -> (Option<String>, Option<String>) {
    let Some(call) = call else {
        return (None, None);
    };
    let found = report
        .choices
        .iter()
        .filter(|outcome| choice.is_none_or(|choice| outcome.index == choice))
        .flat_map(|outcome| &outcome.tool_calls)
        .find(|tool_call| tool_call.index == call);
    let bounded = |text: &Option<String>| {
        text.as_deref()
            .map(|text| bounded_str(text, MAX_TEXT_BYTES).into_owned())
    };
    match found {
        Some(tool_call) => (bounded(&tool_call.id), bounded(&tool_call.name)),
        None => (None, None),
    }
}

/// MCP's attributes (the MCP semantic conventions' `mcp.method.name`, `mcp.session.id`,
/// `mcp.protocol.version`, `jsonrpc.request.id`, and `gen_ai.tool.name` for `tools/call`), and
/// the span name: `{mcp.method.name} {tool}`. No `gen_ai.operation.name`: tooltap executes no
/// tool, it watches a call pass.
fn mcp_attributes(
    attributes: &mut Vec<KeyValue>,
    observation: Option<&crate::engine::mcp_observation::McpObservation>,
) -> String {
    let Some(observation) = observation else {
        return "mcp".to_owned();
    };
    let request = observation.request.iter().find(|message| {
        matches!(
            message.kind,
            MessageKind::Request | MessageKind::Notification
        )
    });
    let bounded = |text: &str| bounded_str(text, MAX_TEXT_BYTES).into_owned();
    if let Some(session) = observation
        .request_session
        .as_deref()
        .or(observation.response_session.as_deref())
    {
        attributes.push(KeyValue::new(
            "mcp.session.id",
            AnyValue::Str(bounded(session)),
        ));
    }
    if let Some(version) = observation.protocol_version_header.as_deref() {
        attributes.push(KeyValue::new(
            "mcp.protocol.version",
            AnyValue::Str(bounded(version)),
        ));
    }
    let Some(request) = request else {
        let method = observation.method.as_deref().unwrap_or("POST");
        return format!("mcp {}", bounded(method));
    };
    let method = request.method.as_deref().map(bounded);
    if let Some(method) = &method {
        attributes.push(KeyValue::new(
            "mcp.method.name",
            AnyValue::Str(method.clone()),
        ));
    }
    if let Some(id) = &request.id {
        let id = match id {
            Value::String(text) => bounded(text),
            other => bounded(&other.to_string()),
        };
        attributes.push(KeyValue::new("jsonrpc.request.id", AnyValue::Str(id)));
    }
    let tool = match &request.parts {
        Parts::ToolsCallRequest {
            name: Some(Value::String(name)),
            ..
        } => Some(bounded(name)),
        _ => None,
    };
    if let Some(tool) = &tool {
        attributes.push(KeyValue::new(
            "gen_ai.tool.name",
            AnyValue::Str(tool.clone()),
        ));
    }
    match (method, tool) {
        (Some(method), Some(tool)) => format!("{method} {tool}"),
        (Some(method), None) => method,
        (None, _) => "mcp".to_owned(),
    }
}

/// `gen_ai.output.messages` (the conventions' shape: role, parts of type `text` and
/// `tool_call`, finish reason), when it fits in `otlp.max_content_bytes`; counted otherwise.
fn content(spans: &Spans, attributes: &mut Vec<KeyValue>, report: &Report) {
    let messages: Vec<Value> = report
        .choices
        .iter()
        .map(|choice| {
            let mut parts = Vec::new();
            if let Some(text) = &choice.content {
                parts.push(json!({"type": "text", "content": text}));
            }
            for call in &choice.tool_calls {
                parts.push(json!({
                    "type": "tool_call",
                    "id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                }));
            }
            json!({
                "role": "assistant",
                "parts": parts,
                "finish_reason": choice.finish_reason,
            })
        })
        .collect();
    if messages.is_empty() {
        return;
    }
    let text = Value::Array(messages).to_string();
    if text.len() > spans.limits.max_content_bytes {
        spans.content_cut();
        attributes.push(KeyValue::new("tooltap.content_cut", AnyValue::Bool(true)));
        return;
    }
    attributes.push(KeyValue::new("gen_ai.output.messages", AnyValue::Str(text)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_type_prefers_the_status_then_the_break() {
        assert_eq!(error_type(Some(500), &[]), Some("500".into()));
        assert_eq!(error_type(Some(200), &[]), None);
        assert_eq!(
            error_type(
                Some(200),
                &[IncompleteReason::Lossy, IncompleteReason::UpstreamBroke]
            ),
            Some("upstream_error".into())
        );
        assert_eq!(
            error_type(None, &[IncompleteReason::ReaderGone]),
            Some("client_gone".into())
        );
    }

    #[test]
    fn usage_reads_every_dialects_spelling() {
        for (value, input, output) in [
            (json!({"prompt_tokens": 3, "completion_tokens": 4}), 3, 4),
            (json!({"input_tokens": 5, "output_tokens": 6}), 5, 6),
            (
                json!({"promptTokenCount": 7, "candidatesTokenCount": 8}),
                7,
                8,
            ),
            (json!({"prompt_eval_count": 9, "eval_count": 10}), 9, 10),
            (json!({"inputTokens": 11, "outputTokens": 12}), 11, 12),
        ] {
            let mut attributes = Vec::new();
            usage(&mut attributes, Some(&value));
            assert_eq!(
                attributes,
                vec![
                    KeyValue::new("gen_ai.usage.input_tokens", AnyValue::Int(input)),
                    KeyValue::new("gen_ai.usage.output_tokens", AnyValue::Int(output)),
                ],
                "{value}"
            );
        }
    }

    #[test]
    fn instants_are_placed_on_the_wall_clock() {
        let clock = Clock::now();
        let earlier = clock.now - Duration::from_millis(250);
        assert_eq!(clock.wall - clock.unix_nanos(earlier), 250_000_000);
        assert_eq!(clock.unix_nanos(clock.now), clock.wall);
    }
}

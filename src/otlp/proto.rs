//! The OTLP trace messages tooltap sends, encoded by hand in the protobuf wire format.
//!
//! Input: [`SpanData`] values and the resource's attributes. Output: the bytes of one
//! `opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest` (one `ResourceSpans`, one
//! `ScopeSpans`), as OTLP/HTTP takes them with `Content-Type: application/x-protobuf`. Only the
//! fields tooltap sets are written; every other field keeps its protobuf default. The field
//! numbers are those of opentelemetry-proto's `trace/v1/trace.proto`, `common/v1/common.proto`
//! and `resource/v1/resource.proto`; a real receiver (otelsink, which decodes with the official
//! protobuf runtime) is the judge in `tests/it/otlp.rs`.

use std::borrow::Cow;

/// A span's or an event's attribute value (the `AnyValue` kinds tooltap uses).
#[derive(Debug, Clone, PartialEq)]
pub enum AnyValue {
    Str(String),
    Bool(bool),
    Int(i64),
    Double(f64),
    /// An array of strings (`gen_ai.response.finish_reasons`, `tooltap.incomplete`).
    StrArray(Vec<String>),
}

/// One attribute.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyValue {
    pub key: Cow<'static, str>,
    pub value: AnyValue,
}

impl KeyValue {
    pub fn new(key: impl Into<Cow<'static, str>>, value: AnyValue) -> KeyValue {
        KeyValue {
            key: key.into(),
            value,
        }
    }

    /// The bytes this attribute holds (its key and its strings), for bounds.
    pub fn weight(&self) -> usize {
        let value = match &self.value {
            AnyValue::Str(text) => text.len(),
            AnyValue::StrArray(items) => items.iter().map(String::len).sum(),
            AnyValue::Bool(_) | AnyValue::Int(_) | AnyValue::Double(_) => 8,
        };
        self.key.len() + value
    }
}

/// `Span.SpanKind`: tooltap's exchange span is the client side of the upstream call.
pub const SPAN_KIND_CLIENT: u64 = 3;
/// `Status.StatusCode.STATUS_CODE_ERROR`.
const STATUS_CODE_ERROR: u64 = 2;

/// An event on a span.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanEvent {
    pub name: &'static str,
    pub time_unix_nano: u64,
    pub attributes: Vec<KeyValue>,
}

/// One finished span.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanData {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent_span_id: Option<[u8; 8]>,
    /// The W3C `tracestate` the client sent, when it sent one.
    pub trace_state: Option<String>,
    pub name: String,
    pub kind: u64,
    pub start_unix_nano: u64,
    pub end_unix_nano: u64,
    pub attributes: Vec<KeyValue>,
    pub events: Vec<SpanEvent>,
    /// Events left out (past the bound on events per span).
    pub dropped_events: u32,
    /// `Some(message)`: the span's status is ERROR with this message.
    pub error: Option<String>,
}

impl SpanData {
    /// The bytes this span holds, roughly: its structs and every string in it. The exporter's
    /// queue is bounded by the sum (`otlp.max_queue_bytes`).
    pub fn weight(&self) -> usize {
        let attributes = |list: &[KeyValue]| -> usize {
            list.iter()
                .map(|attribute| std::mem::size_of::<KeyValue>() + attribute.weight())
                .sum()
        };
        std::mem::size_of::<SpanData>()
            + self.name.len()
            + self.trace_state.as_ref().map_or(0, String::len)
            + self.error.as_ref().map_or(0, String::len)
            + attributes(&self.attributes)
            + self
                .events
                .iter()
                .map(|event| std::mem::size_of::<SpanEvent>() + attributes(&event.attributes))
                .sum::<usize>()
    }
}

/// The instrumentation scope every span is sent under.
pub struct Scope<'a> {
    pub name: &'a str,
    pub version: &'a str,
}

/// `ExportTraceServiceRequest { resource_spans: [ { resource, scope_spans: [ { scope, spans } ] } ] }`.
pub fn export_request(resource: &[KeyValue], scope: &Scope<'_>, spans: &[SpanData]) -> Vec<u8> {
    let mut out = Vec::new();
    message(&mut out, 1, |resource_spans| {
        message(resource_spans, 1, |resource_message| {
            for attribute in resource {
                key_value(resource_message, 1, attribute);
            }
        });
        message(resource_spans, 2, |scope_spans| {
            message(scope_spans, 1, |scope_message| {
                string(scope_message, 1, scope.name);
                string(scope_message, 2, scope.version);
            });
            for span in spans {
                message(scope_spans, 2, |span_message| {
                    encode_span(span_message, span)
                });
            }
        });
    });
    out
}

fn encode_span(out: &mut Vec<u8>, span: &SpanData) {
    bytes(out, 1, &span.trace_id);
    bytes(out, 2, &span.span_id);
    if let Some(state) = &span.trace_state {
        string(out, 3, state);
    }
    if let Some(parent) = &span.parent_span_id {
        bytes(out, 4, parent);
    }
    string(out, 5, &span.name);
    varint_field(out, 6, span.kind);
    fixed64(out, 7, span.start_unix_nano);
    fixed64(out, 8, span.end_unix_nano);
    for attribute in &span.attributes {
        key_value(out, 9, attribute);
    }
    for event in &span.events {
        message(out, 11, |event_message| {
            fixed64(event_message, 1, event.time_unix_nano);
            string(event_message, 2, event.name);
            for attribute in &event.attributes {
                key_value(event_message, 3, attribute);
            }
        });
    }
    if span.dropped_events > 0 {
        varint_field(out, 12, u64::from(span.dropped_events));
    }
    if let Some(error) = &span.error {
        message(out, 15, |status| {
            string(status, 2, error);
            varint_field(status, 3, STATUS_CODE_ERROR);
        });
    }
}

/// `KeyValue { key = 1; AnyValue value = 2 }`.
fn key_value(out: &mut Vec<u8>, field: u32, attribute: &KeyValue) {
    message(out, field, |pair| {
        string(pair, 1, &attribute.key);
        message(pair, 2, |value| any_value(value, &attribute.value));
    });
}

/// `AnyValue`'s oneof: string 1, bool 2, int64 3, double 4, ArrayValue 5 (`values` = 1).
fn any_value(out: &mut Vec<u8>, value: &AnyValue) {
    match value {
        AnyValue::Str(text) => string(out, 1, text),
        AnyValue::Bool(flag) => varint_field(out, 2, u64::from(*flag)),
        // int64 on the wire: the two's complement as an unsigned varint.
        AnyValue::Int(number) => varint_field(out, 3, *number as u64),
        AnyValue::Double(number) => {
            tag(out, 4, WIRE_FIXED64);
            out.extend_from_slice(&number.to_bits().to_le_bytes());
        }
        AnyValue::StrArray(items) => message(out, 5, |array| {
            for item in items {
                message(array, 1, |element| string(element, 1, item));
            }
        }),
    }
}

const WIRE_VARINT: u32 = 0;
const WIRE_FIXED64: u32 = 1;
const WIRE_LEN: u32 = 2;

fn tag(out: &mut Vec<u8>, field: u32, wire: u32) {
    varint(out, u64::from((field << 3) | wire));
}

pub(crate) fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn varint_field(out: &mut Vec<u8>, field: u32, value: u64) {
    tag(out, field, WIRE_VARINT);
    varint(out, value);
}

fn fixed64(out: &mut Vec<u8>, field: u32, value: u64) {
    tag(out, field, WIRE_FIXED64);
    out.extend_from_slice(&value.to_le_bytes());
}

fn bytes(out: &mut Vec<u8>, field: u32, value: &[u8]) {
    tag(out, field, WIRE_LEN);
    varint(out, value.len() as u64);
    out.extend_from_slice(value);
}

fn string(out: &mut Vec<u8>, field: u32, value: &str) {
    bytes(out, field, value.as_bytes());
}

/// A length-delimited sub-message, written into its own buffer first (its length comes first).
fn message(out: &mut Vec<u8>, field: u32, write: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    write(&mut inner);
    bytes(out, field, &inner);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_match_the_protobuf_examples() {
        let mut out = Vec::new();
        varint(&mut out, 150);
        assert_eq!(out, [0x96, 0x01]);
        out.clear();
        varint(&mut out, 1);
        assert_eq!(out, [0x01]);
        out.clear();
        // A negative int64 takes ten bytes.
        varint(&mut out, -1i64 as u64);
        assert_eq!(out.len(), 10);
    }

    #[test]
    fn a_string_attribute_is_a_key_value_with_a_string_any_value() {
        let mut out = Vec::new();
        key_value(
            &mut out,
            9,
            &KeyValue::new("a", AnyValue::Str("b".to_string())),
        );
        // field 9 LEN, length 8: key (field 1 "a"), value (field 2: AnyValue field 1 "b").
        assert_eq!(
            out,
            [0x4a, 8, 0x0a, 1, b'a', 0x12, 3, 0x0a, 1, b'b'],
            "{out:02x?}"
        );
    }

    #[test]
    fn the_request_nests_resource_scope_and_span() {
        let span = SpanData {
            trace_id: [1; 16],
            span_id: [2; 8],
            parent_span_id: Some([3; 8]),
            trace_state: None,
            name: "chat m".into(),
            kind: SPAN_KIND_CLIENT,
            start_unix_nano: 10,
            end_unix_nano: 20,
            attributes: vec![],
            events: vec![],
            dropped_events: 0,
            error: None,
        };
        let scope = Scope {
            name: "tooltap",
            version: "0",
        };
        let out = export_request(&[], &scope, &[span]);
        // ResourceSpans (field 1, LEN) first.
        assert_eq!(out[0], 0x0a);
        let window = |needle: &[u8]| out.windows(needle.len()).any(|w| w == needle);
        assert!(window(&[0x0a, 16, 1, 1, 1]), "trace id");
        assert!(window(&[0x22, 8, 3, 3]), "parent span id");
        assert!(window(&[0x30, 3]), "kind CLIENT");
        assert!(
            window(&[0x39, 10, 0, 0, 0, 0, 0, 0, 0]),
            "start time fixed64"
        );
    }
}

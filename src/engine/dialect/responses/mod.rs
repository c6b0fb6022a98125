//! The Responses API dialect (`POST .../responses`): placeholder while the rules land.
use serde_json::Value;

use super::chat::request::{ParsedRequest, parse_request};
use crate::engine::framing::SseEvent;
use crate::engine::report::ChoiceOutcome;
use crate::engine::schema::SchemaCache;
use crate::engine::violation::ViolationSink;

#[derive(Debug)]
pub struct ResponsesState {
    pub request: ParsedRequest,
}

impl ResponsesState {
    pub fn new(
        _cache: &SchemaCache,
        request_body: &[u8],
        _sink: &mut ViolationSink,
        _notes: &mut Vec<String>,
    ) -> ResponsesState {
        ResponsesState {
            request: parse_request(request_body),
        }
    }
    pub fn on_event(&mut self, _event: &SseEvent, _seq: u64, _sink: &mut ViolationSink) {}
    pub fn judge_buffered(
        &self,
        _body: &[u8],
        _sink: &mut ViolationSink,
    ) -> (Vec<ChoiceOutcome>, Option<Value>) {
        (Vec::new(), None)
    }
    pub fn finish_stream(
        &mut self,
        _judged: bool,
        _ended_mid_event: bool,
        _sink: &mut ViolationSink,
        _scratch: &mut ViolationSink,
    ) -> (Vec<ChoiceOutcome>, Option<Value>) {
        (Vec::new(), None)
    }
}

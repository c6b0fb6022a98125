//! Judges a `chat.completion.chunk` stream event by event, and feeds the reassembler.
//!
//! Input: [`SseEvent`]s from the framer, each with the seq of the `feed` call that completed
//! it. Output: fragment-stage violations as events arrive (so enforce mode can act early), and
//! at `[DONE]` or the end of the body the reassembled document judged by
//! [`super::buffered::check_document`]. Nothing is asserted about a single arguments fragment.

use serde_json::Value;

use super::buffered::check_document;
use super::chunk::{ChoiceView, Chunk};
use super::fragment::{Fragment, on_tool_call_fragment};
use super::legacy_stream::{check_mixed, on_function_call_fragment};
use super::members::Members;
use super::view::{Calls, MessageView, Slot};
use super::{Declared, FINISH_REASONS, Origin, preview};
use crate::engine::dialect::chat::reassemble::{Assembly, ChoiceAssembly};
use crate::engine::dialect::common;
use crate::engine::framing::SseEvent;
use crate::engine::judge::Judge;
use crate::engine::report::{ChoiceOutcome, KeptJson};
use crate::engine::rules::RuleId;
use crate::engine::violation::{Stage, ViolationSink};
use crate::engine::weigh;

/// Where a value sits in one chunk. The JSON pointer is written out only when a violation is
/// reported: most events report none, and formatting four pointers per event would be a
/// noticeable share of an event's cost (see docs/benchmarks.md#chunk-pointers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkAt {
    /// `/choices/{position}`
    Choice(usize),
    /// `/choices/{position}/delta`
    Delta(usize),
    /// `/choices/{position}/delta/tool_calls/{item}`
    ToolCall(usize, usize),
    /// `/choices/{position}/delta/function_call`
    FunctionCall(usize),
}

impl ChunkAt {
    /// The pointer of this place followed by `suffix`.
    pub fn pointer(self, suffix: &str) -> String {
        match self {
            ChunkAt::Choice(choice) => format!("/choices/{choice}{suffix}"),
            ChunkAt::Delta(choice) => format!("/choices/{choice}/delta{suffix}"),
            ChunkAt::ToolCall(choice, item) => {
                format!("/choices/{choice}/delta/tool_calls/{item}{suffix}")
            }
            ChunkAt::FunctionCall(choice) => {
                format!("/choices/{choice}/delta/function_call{suffix}")
            }
        }
    }
}

/// A chunk's members (see [`Chunk`]), or `None` after reporting data that is not JSON.
fn read_chunk(data: &str, judge: &mut Judge<'_>) -> Option<Chunk> {
    Chunk::typed(data).or_else(|| {
        let site = judge.site("");
        common::event_json(data, "neither JSON nor [DONE]", site, judge.sink()).map(Chunk::of)
    })
}

/// The state of one stream's contract.
#[derive(Debug)]
pub struct StreamContract {
    pub assembly: Assembly,
    /// Past this many bytes held (`assembly.held`), the choices and tool calls left in an event
    /// are not taken (the exchange then stops, `too_large`).
    pub bound: usize,
    done: bool,
    /// Outcomes of the complete-stage check, once it ran.
    outcomes: Option<Vec<ChoiceOutcome>>,
}

impl Default for StreamContract {
    fn default() -> Self {
        StreamContract {
            assembly: Assembly::default(),
            bound: usize::MAX,
            done: false,
            outcomes: None,
        }
    }
}

impl StreamContract {
    /// Whether `data: [DONE]` arrived.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Judges one event. Returns true when it was `[DONE]`. `declared` gives the schema a
    /// call's arguments are followed with as they stream.
    pub fn on_event(
        &mut self,
        event: &SseEvent,
        seq: u64,
        declared: Declared<'_>,
        sink: &mut ViolationSink,
    ) -> bool {
        let mut judge = Judge::new(sink, Stage::Fragment).seq(Some(seq));
        let shown = || preview(&Value::String(event.data.clone()));
        if self.done {
            let detail = format!("data after [DONE]: {}", shown());
            judge.flag(RuleId::SseDataAfterDone, "", detail);
            return false;
        }
        if event.event.as_deref() == Some("error") {
            let detail = format!("an `event: error` inside a 2xx stream: {}", shown());
            judge.flag(RuleId::SseErrorEvent, "", detail);
            return false;
        }
        if event.data == "[DONE]" {
            self.done = true;
            return true;
        }
        if let Some(chunk) = read_chunk(&event.data, &mut judge) {
            self.on_chunk(chunk, seq, declared, judge.sink());
        }
        false
    }

    /// Judges one chunk's members and folds its deltas into the assembly.
    fn on_chunk(
        &mut self,
        mut chunk: Chunk,
        seq: u64,
        declared: Declared<'_>,
        sink: &mut ViolationSink,
    ) {
        let mut judge = Judge::new(sink, Stage::Fragment).seq(Some(seq));
        if let Some(error) = chunk.error {
            let detail = format!("an error object inside a 2xx stream: {}", preview(&error));
            return judge.flag(RuleId::SseErrorEvent, "/error", detail);
        }
        if let Some(usage) = chunk.usage.take() {
            let weight = usage.weight();
            let replaced = self.assembly.usage.as_ref().map_or(0, KeptJson::weight);
            self.assembly.held = (self.assembly.held + weight).saturating_sub(replaced);
            self.assembly.usage = Some(usage);
        }
        let Some(choices) = chunk.choices() else {
            let path = if chunk.object { "/choices" } else { "" };
            let detail = "a chunk without a `choices` array";
            return judge.flag(RuleId::ResponseShapeInvalid, path, detail);
        };
        // Empty `choices` (the usage chunk, content-filter chunks) is legal and ends here.
        for (position, choice) in choices.enumerate() {
            if self.assembly.held > self.bound {
                break;
            }
            self.on_choice(&choice, position, seq, declared, judge.sink());
        }
    }

    /// Judges one streamed choice (its index, delta and finish reason) and folds it into its
    /// assembly.
    fn on_choice(
        &mut self,
        choice: &ChoiceView<'_>,
        position: usize,
        seq: u64,
        declared: Declared<'_>,
        sink: &mut ViolationSink,
    ) {
        let at = ChunkAt::Choice(position);
        let mut judge = Judge::new(sink, Stage::Fragment).seq(Some(seq));
        let Some(index) = choice
            .index
            .and_then(Value::as_u64)
            .and_then(|i| u32::try_from(i).ok())
        else {
            let detail = "a streamed choice without an integer `index`";
            return judge.flag(RuleId::ResponseShapeInvalid, at.pointer("/index"), detail);
        };
        let mut judge = judge.choice(Some(index));
        let is_new = !self.assembly.choices.contains_key(&index);
        let assembled = self.assembly.choices.get_or_default(index);
        let before = assembled.held;
        if is_new {
            assembled.held += weigh::ENTRY;
        }
        // This choice may grow while the stream's total stays within the bound.
        let limit = before.saturating_add(self.bound.saturating_sub(self.assembly.held));
        match &choice.delta {
            Slot::Present(delta) => {
                let cx = DeltaCx {
                    seq,
                    limit,
                    declared,
                };
                on_delta(assembled, delta, position, index, cx, judge.sink());
            }
            // A final chunk may carry only finish_reason; spec requires delta, clients cope.
            Slot::Absent => {}
            Slot::Other(other) => {
                let detail = format!("delta must be an object, got {}", preview(other));
                judge.flag(RuleId::ResponseShapeInvalid, at.pointer("/delta"), detail);
            }
        }
        if let Some(reason) = choice.finish_reason {
            take_finish_reason(assembled, reason, at, seq, &mut judge);
        }
        let grown = assembled.held - before;
        self.assembly.held += grown;
    }

    /// Runs the complete-stage checks on the reassembled message (once) and returns outcomes.
    pub fn complete(
        &mut self,
        declared: Declared<'_>,
        sink: &mut ViolationSink,
    ) -> Vec<ChoiceOutcome> {
        if let Some(outcomes) = &self.outcomes {
            return outcomes.clone();
        }
        let start = sink.len();
        let document = Members::of(self.assembly.to_document());
        let streamed = Some(&mut self.assembly);
        let outcomes = check_document(&document, declared, Origin::Stream, streamed, sink);
        let assembly = &self.assembly;
        sink.fill_seq_since(start, |violation| {
            if violation.path.contains("/message/function_call") {
                return assembly.legacy_seq(violation.choice);
            }
            assembly.seq_for(violation.choice, violation.tool_call)
        });
        self.outcomes = Some(outcomes.clone());
        outcomes
    }

    /// End-of-body rules for a body that ended normally. With `legacy` (the request used
    /// `functions`), a choice without a finish reason is `chat_legacy.stream.finish_reason_missing`,
    /// as it is for any choice that streamed a `function_call`.
    pub fn end_of_body(&self, ended_mid_event: bool, legacy: bool, sink: &mut ViolationSink) {
        common::report_mid_event(ended_mid_event, sink);
        let mut judge = Judge::new(sink, Stage::Complete);
        if !self.done {
            let detail = "the stream ended without `data: [DONE]`";
            judge.flag(RuleId::SseDoneMissing, "", detail);
        }
        for (position, (index, choice)) in self.assembly.choices.iter().enumerate() {
            if choice.finish_reasons.is_empty() {
                let rule = if legacy || choice.legacy.is_some() {
                    RuleId::ChatLegacyStreamFinishReasonMissing
                } else {
                    RuleId::StreamTruncated
                };
                let detail = "the stream ended with no finish_reason for this choice";
                let mut judge = judge.under_at("/choices/", position).choice(Some(*index));
                judge.flag(rule, "/finish_reason", detail);
            }
        }
    }
}

/// The rules on a streamed choice's finish reason (one of the spec's, once per choice); it is
/// kept with its event's `seq`.
fn take_finish_reason(
    assembled: &mut ChoiceAssembly,
    reason: &Value,
    at: ChunkAt,
    seq: u64,
    judge: &mut Judge<'_>,
) {
    if !reason.as_str().is_some_and(|r| FINISH_REASONS.contains(&r)) {
        let detail = format!(
            "finish_reason must be one of {FINISH_REASONS:?} or null, got {}",
            preview(reason)
        );
        judge.flag(
            RuleId::FinishReasonInvalid,
            at.pointer("/finish_reason"),
            detail,
        );
    }
    if let Some((first, _)) = assembled.finish_reasons.first() {
        let (reason_shown, first) = (preview(reason), preview(first));
        let detail = format!("a second finish_reason {reason_shown} after {first}");
        judge.flag(
            RuleId::FinishReasonRepeated,
            at.pointer("/finish_reason"),
            detail,
        );
    }
    assembled.held += weigh::ENTRY / 16 + weigh::value(reason);
    assembled.finish_reasons.push((reason.clone(), seq));
}

/// What a delta is folded with: its event's seq, the most its choice may hold (`held`), and the
/// request's declarations (the schemas arguments are followed with).
#[derive(Debug, Clone, Copy)]
struct DeltaCx<'d> {
    seq: u64,
    limit: usize,
    declared: Declared<'d>,
}

/// Folds one delta (content, tool-call fragments, a legacy `function_call` fragment) into its
/// choice; tool-call items past `cx.limit` (the choice's `held`) are not taken.
fn on_delta(
    assembled: &mut ChoiceAssembly,
    delta: &MessageView<'_>,
    position: usize,
    choice: u32,
    cx: DeltaCx<'_>,
    sink: &mut ViolationSink,
) {
    let at = ChunkAt::Delta(position);
    let mut judge = Judge::new(sink, Stage::Fragment)
        .choice(Some(choice))
        .seq(Some(cx.seq));
    take_content(assembled, delta.content, at, &mut judge);
    match delta.tool_calls {
        Slot::Absent => {}
        Slot::Present(items) => take_tool_calls(assembled, items, position, choice, cx, &mut judge),
        Slot::Other(other) => {
            let detail = format!("delta.tool_calls must be an array, got {}", preview(other));
            judge.flag(
                RuleId::ResponseShapeInvalid,
                at.pointer("/tool_calls"),
                detail,
            );
        }
    }
    match delta.function_call {
        None => {}
        Some(Value::Object(fragment)) => {
            let at = ChunkAt::FunctionCall(position);
            on_function_call_fragment(assembled, fragment, at, cx.seq, cx.declared, &mut judge);
        }
        Some(other) => {
            let detail = format!(
                "delta.function_call must be an object, got {}",
                preview(other)
            );
            judge.flag(
                RuleId::ResponseShapeInvalid,
                at.pointer("/function_call"),
                detail,
            );
        }
    }
    check_mixed(assembled, at, &mut judge);
}

/// `delta.content`: a string, appended to the choice's text, or null.
fn take_content(
    assembled: &mut ChoiceAssembly,
    content: Option<&Value>,
    at: ChunkAt,
    judge: &mut Judge<'_>,
) {
    match content {
        None => {}
        Some(Value::String(text)) => {
            assembled.held += text.len();
            assembled
                .content
                .get_or_insert_with(String::new)
                .push_str(text);
        }
        Some(other) => {
            let detail = format!(
                "delta.content must be a string or null, got {}",
                preview(other)
            );
            judge.flag(RuleId::MessageContentType, at.pointer("/content"), detail);
        }
    }
}

/// Each `delta.tool_calls[]` item, while the choice holds no more than `cx.limit`.
fn take_tool_calls(
    assembled: &mut ChoiceAssembly,
    items: Calls<'_>,
    position: usize,
    choice: u32,
    cx: DeltaCx<'_>,
    judge: &mut Judge<'_>,
) {
    for (item_position, item) in items.iter().enumerate() {
        if assembled.held > cx.limit {
            break;
        }
        let at = ChunkAt::ToolCall(position, item_position);
        let fragment = Fragment {
            item,
            at,
            choice,
            seq: cx.seq,
        };
        on_tool_call_fragment(assembled, fragment, cx.declared, judge.sink());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_places_write_their_pointers() {
        assert_eq!(ChunkAt::Choice(1).pointer("/index"), "/choices/1/index");
        assert_eq!(ChunkAt::Delta(2).pointer(""), "/choices/2/delta");
        assert_eq!(
            ChunkAt::ToolCall(2, 3).pointer("/function/name"),
            "/choices/2/delta/tool_calls/3/function/name"
        );
        assert_eq!(
            ChunkAt::FunctionCall(4).pointer("/arguments"),
            "/choices/4/delta/function_call/arguments"
        );
    }

    /// What one read of every chunk leaves: the violations (every field) and the reassembled
    /// document with its usage; and whether any chunk was read.
    type Judged = (Vec<String>, Value, bool);

    /// Feeds `chunks` to a contract, each read by `read` (`None`: not JSON, skipped by both).
    fn judge(chunks: &[&str], read: impl Fn(&str) -> Option<Chunk>) -> Judged {
        let mut contract = StreamContract::default();
        let mut sink = ViolationSink::new(Default::default());
        let mut read_any = false;
        let surface = crate::engine::dialect::chat::surface::Surface::default();
        let declared = Declared {
            tools: None,
            choice: &crate::engine::dialect::chat::request::ToolChoice::Unspecified,
            parallel_tool_calls: None,
            surface: &surface,
        };
        for (seq, data) in chunks.iter().enumerate() {
            if let Some(chunk) = read(data) {
                read_any = true;
                contract.on_chunk(chunk, seq as u64, declared, &mut sink);
            }
        }
        let violations = sink.as_slice().iter().map(|v| format!("{v:?}")).collect();
        (violations, contract.assembly.to_document(), read_any)
    }

    #[test]
    fn the_typed_read_of_a_chunk_judges_as_a_full_value_does() {
        let streams: &[&[&str]] = &[
            &[
                r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"arguments":"\"Paris\"}"}}]},"finish_reason":"tool_calls"}]}"#,
                r#"{"choices":[],"usage":{"total_tokens":3},"error":null}"#,
            ],
            &[
                r#"{"choices":[{"index":0,"delta":{"content":"he"}},{"index":1,"delta":{"content":7}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"content":"llo"},"finish_reason":"stop"},{"index":1,"delta":null,"finish_reason":"bogus"}]}"#,
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            ],
            &[
                r#"{"choices":[{"index":0,"delta":{"function_call":{"arguments":"{}"}}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"function_call":{"name":"f"},"tool_calls":[{"index":0,"function":{"name":"g","arguments":"{}"}}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"function_call":"f"}}]}"#,
            ],
            &[
                r#"{"choices":[{"delta":{"content":"x"}},{"index":"0"},{"index":null},{"index":-1}]}"#,
                r#"{"choices":[{"index":0,"delta":"text"}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":{"index":0}}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"{}"}},7,{"index":2,"function":{"arguments":{}}}]}}]}"#,
                r#"{"choices":[1,null,"x"]}"#,
                r#"{"choices":{"index":0}}"#,
                r#"{"choices":null}"#,
                r#"{"id":"no choices"}"#,
                r#"[{"choices":[]}]"#,
                r#""a string""#,
                r#"{"error":{"message":"boom"},"choices":[]}"#,
            ],
            &[
                r#"{"choices":[{"index":0,"delta":{"content":"a"},"delta":{"content":"b"}}]}"#,
                r#"{"choices":[{"index":0,"index":1,"delta":{"content":"c"}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"content":"d","content":null}}]}"#,
                r#"{"choices":[{"index":0}],"choices":[{"index":1,"delta":{"content":"e"}}]}"#,
                r#"{"usage":{"a":1},"usage":null,"choices":[]}"#,
                r#"{"choices":[{"index":0,"delta":{"content":"f"},"finish_reason":"stop","logprobs":null,"extra":[1,{"delta":2}]}]}"#,
                r#"{"choices":[{"index":0,"delta":{"content":"g"}}]} trailing"#,
                r#"{"choices":[{"index":0,"delta":{"content":"h"}}"#,
            ],
            &[
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":""}},{"index":1,"id":"b","function":{"name":"g"}}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}},{"index":1,"id":"c","function":{"name":"h","arguments":null}}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"function":{"arguments":7}},{"index":-1,"function":null},{"index":null,"type":"custom"},{"index":"1","custom":null}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":4,"type":null,"id":null,"function":{"name":null,"arguments":"x"}}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{}","extra":1}}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":"f"}]}}]}"#,
            ],
            &[
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"custom","custom":{"name":"grep","input":"a"}}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"custom":{"input":"b"},"function":{"arguments":"x","name":"n"}}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"custom":{"name":"sed","input":{"k":1}}},{"index":2,"custom":{"name":"x"},"function":null}]}}]}"#,
                r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"custom":{"input":[1]}},{"index":2,"function":{"name":"y"}}]},"finish_reason":"tool_calls"}]}"#,
            ],
        ];
        let tree = |data: &str| serde_json::from_str::<Value>(data).ok().map(Chunk::of);
        let typed = |data: &str| Chunk::typed(data).or_else(|| tree(data));
        let mut typed_reads = 0;
        for chunks in streams {
            typed_reads += chunks
                .iter()
                .filter(|data| Chunk::typed(data).is_some())
                .count();
            let by_tree = judge(chunks, tree);
            assert!(by_tree.2, "{chunks:?}: nothing parsed");
            assert_eq!(judge(chunks, typed), by_tree, "{chunks:?}");
        }
        // The typed read must take most of these, or the comparison proves little.
        assert!(typed_reads >= 22, "typed reads: {typed_reads}");
    }
}

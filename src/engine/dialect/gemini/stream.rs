//! A Gemini stream reassembled: each event (an SSE event's data, or a JSON-array element) is a
//! whole `GenerateContentResponse`; candidates are kept by `index`, their text parts joined and
//! their `functionCall` parts kept whole (a call arrives whole on the Gemini API), and the
//! `gemini.stream.*` fragment rules judged as events arrive.
//!
//! Input: one event's data at a time, with the `feed` call that completed it. Output:
//! fragment-stage violations, and per candidate a [`Candidate`] the response rules judge once,
//! at the event that carries its `finishReason` (so enforce mode sees them before the body ends),
//! or at the end of the body for a candidate that never got one. A call re-sent in a later event
//! (the same `id`, or without ids the same name at the same part position with the same or
//! grown `args`) replaces the one kept, so the reassembly holds each call once. Bounded: what is
//! kept is counted with [`weigh`], and one event stops adding past the exchange's bound.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::candidate::{Call, Candidate, SERVER_TOOL_PARTS, reason_text, visible_text};
use crate::engine::dialect::common::preview;
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;
use crate::engine::violation::{Stage, ViolationSink};
use crate::engine::weigh;

/// Accumulated text shorter than this is not compared for snapshots (a delta may start with a
/// short text by chance, as a repetitive one does).
const MIN_SNAPSHOT: usize = 16;

/// One candidate's reassembly.
#[derive(Debug, Default)]
pub struct CandidateState {
    pub candidate: Candidate,
    /// The event that carried its first `finishReason`.
    pub finished_at: Option<u64>,
    /// Judged already (at its finish event).
    pub judged: bool,
    /// Parts kept so far (the next part's position in the reassembled candidate).
    parts: u32,
    /// Kept calls by id: their position in `candidate.calls` and the number of the event that
    /// brought them (events are counted apart from `seq`: one `feed` may complete several).
    by_id: HashMap<String, (usize, u64)>,
    /// Kept calls without an id, by (part position within their event, name): the latest.
    by_slot: HashMap<(u32, String), (usize, u64)>,
    /// The event of the last call kept (a call without a name after it is a continuation).
    last_call_event: Option<u64>,
    snapshots_reported: bool,
}

/// The stream's reassembly.
#[derive(Debug)]
pub struct StreamState {
    pub candidates: BTreeMap<u32, CandidateState>,
    /// The last non-null `usageMetadata`.
    pub usage: Option<Value>,
    /// Events (or array elements) received.
    pub events: u64,
    /// Some event carried a candidate.
    pub any_candidates: bool,
    /// Some event carried `promptFeedback.blockReason`.
    pub blocked: bool,
    /// Some event was an `{"error":...}` object.
    pub errored: bool,
    /// What the reassembly holds, as [`weigh`] counts it.
    pub held: usize,
    /// What `held` may reach within one event before the event stops adding.
    pub bound: usize,
    /// Calls streamed as `partialArgs` are expected (Vertex, `streamFunctionCallArguments`):
    /// they are not judged, not split calls.
    pub partial_expected: bool,
}

impl Default for StreamState {
    fn default() -> Self {
        StreamState {
            candidates: BTreeMap::new(),
            usage: None,
            events: 0,
            any_candidates: false,
            blocked: false,
            errored: false,
            held: 0,
            bound: usize::MAX,
            partial_expected: false,
        }
    }
}

/// One event: its number in the stream (1-based) and the `feed` call that completed it.
#[derive(Debug, Clone, Copy)]
struct Event {
    number: u64,
    seq: u64,
}

/// Where a part is: its position in its event, the event, its candidate's pointer, and whether
/// partial calls are expected.
#[derive(Debug, Clone, Copy)]
struct PartAt {
    slot: u32,
    event: Event,
    partial_expected: bool,
}

/// A candidate's `content.parts` (none when absent or not an array).
fn parts_of(candidate: &Value) -> &[Value] {
    candidate
        .get("content")
        .and_then(|c| c.get("parts"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// A part that carries content (not only a signature or an empty text).
fn is_content(part: &Value) -> bool {
    let Some(members) = part.as_object() else {
        return false;
    };
    members.iter().any(|(key, value)| match key.as_str() {
        "thoughtSignature" | "thought_signature" | "thought" => false,
        "text" => value.as_str().is_some_and(|text| !text.is_empty()),
        _ => !value.is_null(),
    })
}

impl StreamState {
    /// One event's data. Returns the indexes of the candidates whose `finishReason` it carried
    /// first (to be judged now).
    pub fn on_event(&mut self, data: &str, seq: u64, sink: &mut ViolationSink) -> Vec<u32> {
        self.events += 1;
        let event = Event {
            number: self.events,
            seq,
        };
        let mut judge = Judge::new(sink, Stage::Fragment).seq(Some(seq));
        if data.trim() == "[DONE]" {
            let detail = "data: [DONE] is not part of Gemini's stream (an OpenAI end marker)";
            judge.flag(RuleId::GeminiStreamDoneSentinel, "", detail);
            return Vec::new();
        }
        let problem = match serde_json::from_str::<Value>(data) {
            Ok(value @ Value::Object(_)) => Ok(value),
            Ok(other) => Err(format!(
                "an event's data is not a JSON object: {}",
                preview(&other)
            )),
            Err(error) => {
                let shown = preview(&Value::String(data.to_owned()));
                Err(format!("an event's data is not JSON ({error}): {shown}"))
            }
        };
        let value = match problem {
            Ok(value) => value,
            Err(detail) => {
                judge.flag(RuleId::GeminiStreamEventNotJson, "", detail);
                return Vec::new();
            }
        };
        if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
            self.errored = true;
            let detail = format!("an error object inside a 2xx stream: {}", preview(error));
            judge.flag(RuleId::GeminiStreamErrorInStream, "/error", detail);
            return Vec::new();
        }
        if let Some(usage) = value.get("usageMetadata").filter(|u| !u.is_null()) {
            self.usage = Some(usage.clone());
        }
        self.blocked |= super::blocked(&value);
        let mut finished = Vec::new();
        let candidates = value.get("candidates").and_then(Value::as_array);
        for (position, candidate) in candidates.into_iter().flatten().enumerate() {
            self.any_candidates = true;
            let index = candidate
                .get("index")
                .and_then(Value::as_u64)
                .and_then(|i| u32::try_from(i).ok())
                .unwrap_or(u32::try_from(position).unwrap_or(u32::MAX));
            if self.candidate(index, candidate, event, &mut judge) {
                finished.push(index);
            }
            if self.held > self.bound {
                break;
            }
        }
        finished
    }

    /// One candidate entry of an event; true when it carried the candidate's first finish
    /// reason.
    fn candidate(
        &mut self,
        index: u32,
        candidate: &Value,
        event: Event,
        judge: &mut Judge<'_>,
    ) -> bool {
        if !self.candidates.contains_key(&index) {
            self.held = self.held.saturating_add(weigh::ENTRY);
        }
        let partial_expected = self.partial_expected;
        let bound = self.bound;
        let state = self
            .candidates
            .entry(index)
            .or_insert_with(|| CandidateState {
                candidate: Candidate {
                    index,
                    ..Candidate::default()
                },
                ..CandidateState::default()
            });
        let mut judge = judge
            .under(format_args!("/candidates/{index}"))
            .choice(Some(index));
        let parts = parts_of(candidate);
        if let Some(finished_at) = state.finished_at
            && parts.iter().any(is_content)
        {
            let detail = format!(
                "content for candidate {index} after its finishReason (event {finished_at})"
            );
            judge.flag(
                RuleId::GeminiStreamContentAfterFinish,
                "/content/parts",
                detail,
            );
        }
        for (part, slot) in parts.iter().zip(0u32..) {
            let at = PartAt {
                slot,
                event,
                partial_expected,
            };
            let added = state.part(part, at, &mut judge);
            self.held = self.held.saturating_add(added);
            if self.held > bound {
                return false;
            }
        }
        let Some(reason) = candidate.get("finishReason").filter(|r| !r.is_null()) else {
            return false;
        };
        let (added, first) = state.finish(reason, event.seq);
        self.held = self.held.saturating_add(added);
        first
    }
}

impl CandidateState {
    /// A finish reason (of the event `seq`); returns what the reassembly grew by and whether it
    /// was the candidate's first.
    fn finish(&mut self, reason: &Value, seq: u64) -> (usize, bool) {
        let text = reason_text(reason);
        let added = text.len();
        self.candidate.finish_reasons.push(text);
        if self.finished_at.is_some() {
            return (added, false);
        }
        self.finished_at = Some(seq);
        self.candidate.finish = Some((reason.clone(), Some(seq)));
        (added, true)
    }

    /// One part of an event (at `slot` in it); returns what the reassembly grew by.
    fn part(&mut self, part: &Value, at: PartAt, judge: &mut Judge<'_>) -> usize {
        let slot = at.slot;
        if let Some(call) = part.get("functionCall") {
            return self.call(call, at, judge);
        }
        if SERVER_TOOL_PARTS.iter().any(|key| part.get(*key).is_some()) {
            self.parts += 1;
            return 0;
        }
        let Some(text) = visible_text(part) else {
            if is_content(part) {
                self.parts += 1;
            }
            return 0;
        };
        self.parts += 1;
        let kept = self.candidate.text.get_or_insert_with(String::new);
        if !self.snapshots_reported
            && kept.len() >= MIN_SNAPSHOT
            && text.len() > kept.len()
            && text.starts_with(kept.as_str())
        {
            self.snapshots_reported = true;
            let detail = "this event's text repeats all the text before it: snapshots, not deltas";
            let pointer = format!("/content/parts/{slot}/text");
            judge.flag(RuleId::GeminiStreamCumulativeSnapshots, pointer, detail);
        }
        kept.push_str(text);
        text.len()
    }

    /// A `functionCall` part; returns what the reassembly grew by.
    fn call(&mut self, call: &Value, at: PartAt, judge: &mut Judge<'_>) -> usize {
        let PartAt {
            slot,
            event,
            partial_expected,
        } = at;
        let seq = event.seq;
        let number = event.number;
        let split = RuleId::GeminiStreamFunctionCallSplit;
        let mut judge = judge.under(format_args!("/content/parts/{slot}/functionCall"));
        let partial = call.get("partialArgs").is_some_and(|p| !p.is_null())
            || call.get("willContinue").and_then(Value::as_bool) == Some(true);
        if partial {
            if !partial_expected {
                judge.flag(split, "", "a functionCall streamed as partialArgs/willContinue, which the request did not ask for (Vertex streamFunctionCallArguments)");
            }
            return 0;
        }
        let mut read = Call::read(call, 0, Some(seq));
        let continues =
            read.name.is_none() && self.last_call_event.is_some_and(|earlier| earlier < number);
        if continues {
            judge.flag(split, "", "a functionCall without a name after a call in an earlier event: its arguments spread over events (Gemini sends a call whole)");
            return 0;
        }
        self.last_call_event = Some(number);
        let earlier = self.earlier(&read, slot);
        let size = weigh::maybe(read.args.as_ref())
            + weigh::maybe(read.name.as_ref())
            + read.id.as_ref().map_or(0, String::len);
        if let Some((at_call, before)) = earlier.filter(|(_, before)| *before < number) {
            let what = read.id.as_deref().map_or_else(
                || format!("{:?} at part {slot}", read.name().unwrap_or_default()),
                |id| format!("id {id:?}"),
            );
            let detail = format!("the call {what} of event {before} is sent again");
            judge.flag(RuleId::GeminiStreamFunctionCallRepeated, "", detail);
            if let Some(kept) = self.candidate.calls.get_mut(at_call) {
                read.part = kept.part;
                *kept = read;
            }
            self.remember(at_call, slot, number);
            return size;
        }
        read.part = self.parts;
        self.parts += 1;
        self.candidate.calls.push(read);
        self.remember(self.candidate.calls.len() - 1, slot, number);
        weigh::ENTRY + size
    }

    /// The kept call `read` sends again, with the event that brought it: the one of its id, or
    /// (without an id) the one of its slot and name whose args it repeats or extends.
    fn earlier(&self, read: &Call, slot: u32) -> Option<(usize, u64)> {
        match (&read.id, read.name()) {
            (Some(id), _) => self.by_id.get(id).copied(),
            (None, Some(name)) => {
                self.by_slot
                    .get(&(slot, name.to_owned()))
                    .copied()
                    .filter(|(at, _)| {
                        self.candidate
                            .calls
                            .get(*at)
                            .is_some_and(|kept| grown(kept.args.as_ref(), read.args.as_ref()))
                    })
            }
            (None, None) => None,
        }
    }

    /// Keys the kept call at `at` by its id, or by its slot and name.
    fn remember(&mut self, at: usize, slot: u32, number: u64) {
        let Some(call) = self.candidate.calls.get(at) else {
            return;
        };
        match (&call.id, call.name()) {
            (Some(id), _) => {
                self.by_id.insert(id.clone(), (at, number));
            }
            (None, Some(name)) => {
                self.by_slot.insert((slot, name.to_owned()), (at, number));
            }
            (None, None) => {}
        }
    }
}

/// Whether `later` args are `earlier` ones again, or grown from them: every member of
/// `earlier` is in `later` with the same value (or a string it extends).
fn grown(earlier: Option<&Value>, later: Option<&Value>) -> bool {
    match (earlier, later) {
        (None, _) => true,
        (Some(Value::Object(old)), Some(Value::Object(new))) => {
            old.iter().all(|(key, value)| match (value, new.get(key)) {
                (Value::String(old), Some(Value::String(new))) => new.starts_with(old.as_str()),
                (old, Some(new)) => old == new,
                (_, None) => false,
            })
        }
        (Some(old), Some(new)) => old == new,
        (Some(_), None) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn grown_args_are_the_same_call_and_other_values_a_parallel_one() {
        let paris = json!({"city": "Par"});
        assert!(grown(
            Some(&paris),
            Some(&json!({"city": "Paris", "days": 2}))
        ));
        assert!(grown(Some(&paris), Some(&paris)));
        assert!(!grown(
            Some(&json!({"city": "Paris"})),
            Some(&json!({"city": "London"}))
        ));
        assert!(!grown(Some(&paris), None));
        assert!(grown(None, Some(&paris)));
    }
}

//! Judges one streamed legacy `delta.function_call` fragment and folds it into its choice's
//! [`LegacyAssembly`]. The legacy shape has no `index` and no `id`: fragments are keyed by the
//! choice alone, and a choice holds exactly one call.
//!
//! Input: the `function_call` object of a delta, from [`super::stream`]. Output: the
//! `chat_legacy.stream.*` fragment-stage violations (arguments before the name, the name sent
//! again, a second call, `function_call` and `tool_calls` mixed in one choice) and the updated
//! assembly that [`crate::engine::dialect::chat::reassemble`] turns into `message.function_call`.

use serde_json::{Map, Value};

use super::legacy::{LEGACY_ARGUMENTS, legacy_schema};
use super::stream::ChunkAt;
use super::{Declared, preview};
use crate::engine::dialect::argument_verdict::report_break;
use crate::engine::dialect::chat::reassemble::{Arguments, ChoiceAssembly, LegacyAssembly};
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;
use crate::engine::weigh;

/// Folds one `delta.function_call` fragment of the `seq`-th event into its choice (`judge`: at
/// the choice, in that event).
pub fn on_function_call_fragment(
    assembled: &mut ChoiceAssembly,
    fragment: &Map<String, Value>,
    at: ChunkAt,
    seq: u64,
    declared: Declared<'_>,
    judge: &mut Judge<'_>,
) {
    if assembled.legacy.is_none() {
        assembled.held += weigh::ENTRY;
    }
    let legacy = assembled.legacy.get_or_insert_with(|| LegacyAssembly {
        first_seq: seq,
        ..LegacyAssembly::default()
    });
    if legacy.second_call {
        return;
    }
    if let Some(Value::String(name)) = fragment.get("name") {
        let Some(grown) = take_name(legacy, name, at, seq, declared, judge) else {
            return;
        };
        assembled.held += grown;
    }
    if let Some(arguments) = fragment.get("arguments").filter(|a| !a.is_null()) {
        assembled.held += take_arguments(legacy, arguments, at, seq, declared, judge);
    }
}

/// A name fragment: the call's name when it is the first (its arguments are then followed with
/// its schema), the same name sent again (reported once per call), or, after whole arguments, a
/// second call the legacy shape cannot hold (`None`: the fragment and the rest of the choice's
/// legacy fragments are taken no further). Returns the bytes newly held.
fn take_name(
    legacy: &mut LegacyAssembly,
    name: &str,
    at: ChunkAt,
    seq: u64,
    declared: Declared<'_>,
    judge: &mut Judge<'_>,
) -> Option<usize> {
    let whole = legacy.name.is_some() && legacy.arguments_are_whole();
    match &legacy.name {
        None => {
            legacy.name = Some(name.to_owned());
            let schema = legacy_schema(declared, name);
            return Some(name.len() + legacy.arguments.schema_found(schema, seq));
        }
        // A name after whole arguments opens a second call, which the shape cannot hold.
        Some(first) if whole => {
            legacy.second_call = true;
            let detail = format!(
                "a second function_call ({name:?}) after {first:?} in one choice: the legacy shape carries one call"
            );
            let rule = RuleId::ChatLegacyResponseMultipleCalls;
            judge.flag(rule, at.pointer("/name"), detail);
            return None;
        }
        Some(first) => {
            if !legacy.name_repeat_reported {
                legacy.name_repeat_reported = true;
                let detail = format!(
                    "name {name:?} sent again after {first:?}: clients concatenate name fragments"
                );
                judge.flag(
                    RuleId::ChatLegacyStreamNameRepeated,
                    at.pointer("/name"),
                    detail,
                );
            }
        }
    }
    Some(0)
}

/// An arguments fragment (not null): one before any name is reported (once per call); a string
/// is followed with the call's schema once its name is known, its break reported at this
/// fragment; the first non-string value is kept as it came (judged on the reassembled call).
/// Returns the bytes newly held.
fn take_arguments(
    legacy: &mut LegacyAssembly,
    arguments: &Value,
    at: ChunkAt,
    seq: u64,
    declared: Declared<'_>,
    judge: &mut Judge<'_>,
) -> usize {
    if legacy.name.is_none() && !legacy.arguments_before_name_reported {
        legacy.arguments_before_name_reported = true;
        let detail = format!(
            "an arguments fragment {} before any fragment named the function",
            preview(arguments)
        );
        let rule = RuleId::ChatLegacyStreamArgumentsBeforeName;
        judge.flag(rule, at.pointer("/arguments"), detail);
    }
    let Value::String(text) = arguments else {
        if matches!(legacy.arguments, Arguments::Raw(_)) {
            return 0;
        }
        legacy.arguments = Arguments::Raw(arguments.clone());
        return weigh::value(arguments);
    };
    let schema = legacy
        .name
        .as_deref()
        .map(|name| legacy_schema(declared, name));
    let taken = legacy.append(text, seq, schema);
    if let (Some(broken), Arguments::Streamed(streamed)) = (taken.broken, &legacy.arguments) {
        let site = judge.site(at.pointer("/arguments"));
        let held = streamed.held();
        report_break(
            broken,
            Some(seq),
            held,
            &LEGACY_ARGUMENTS,
            site,
            judge.sink(),
        );
    }
    taken.grown
}

/// `chat_legacy.stream.mixed_with_tool_calls`, once per choice, when it has streamed both
/// shapes (`judge`: at the choice, in this event).
pub fn check_mixed(assembled: &mut ChoiceAssembly, at: ChunkAt, judge: &mut Judge<'_>) {
    if assembled.mixed_reported || assembled.legacy.is_none() || assembled.calls.is_empty() {
        return;
    }
    assembled.mixed_reported = true;
    let detail = "one choice streams both delta.function_call and delta.tool_calls";
    judge.flag(
        RuleId::ChatLegacyStreamMixedWithToolCalls,
        at.pointer(""),
        detail,
    );
}

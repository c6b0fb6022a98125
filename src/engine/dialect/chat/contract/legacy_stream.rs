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
use crate::engine::rules::RuleId;
use crate::engine::violation::{Site, Stage, ViolationSink};
use crate::engine::weigh;

pub fn on_function_call_fragment(
    assembled: &mut ChoiceAssembly,
    fragment: &Map<String, Value>,
    at: ChunkAt,
    choice: u32,
    seq: u64,
    declared: Declared<'_>,
    sink: &mut ViolationSink,
) {
    let site = |suffix: &str| {
        Site::at(at.pointer(suffix))
            .choice(Some(choice))
            .seq(Some(seq))
    };
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
        let whole = legacy.name.is_some() && legacy.arguments_are_whole();
        match &legacy.name {
            None => {
                assembled.held += name.len();
                legacy.name = Some(name.clone());
                let schema = legacy_schema(declared, name);
                assembled.held += legacy.arguments.schema_found(schema, seq);
            }
            // A name after whole arguments opens a second call, which the shape cannot hold.
            Some(first) if whole => {
                legacy.second_call = true;
                let detail = format!(
                    "a second function_call ({name:?}) after {first:?} in one choice: the legacy shape carries one call"
                );
                sink.push(
                    RuleId::ChatLegacyResponseMultipleCalls,
                    Stage::Fragment,
                    site("/name"),
                    detail,
                );
                return;
            }
            Some(first) => {
                if !legacy.name_repeat_reported {
                    legacy.name_repeat_reported = true;
                    let detail = format!(
                        "name {name:?} sent again after {first:?}: clients concatenate name fragments"
                    );
                    sink.push(
                        RuleId::ChatLegacyStreamNameRepeated,
                        Stage::Fragment,
                        site("/name"),
                        detail,
                    );
                }
            }
        }
    }
    match fragment.get("arguments") {
        None | Some(Value::Null) => {}
        Some(arguments) => {
            if legacy.name.is_none() && !legacy.arguments_before_name_reported {
                legacy.arguments_before_name_reported = true;
                let detail = format!(
                    "an arguments fragment {} before any fragment named the function",
                    preview(arguments)
                );
                sink.push(
                    RuleId::ChatLegacyStreamArgumentsBeforeName,
                    Stage::Fragment,
                    site("/arguments"),
                    detail,
                );
            }
            match arguments {
                Value::String(text) => {
                    let schema = legacy
                        .name
                        .as_deref()
                        .map(|name| legacy_schema(declared, name));
                    let taken = legacy.append(text, seq, schema);
                    assembled.held += taken.grown;
                    if let (Some(broken), Arguments::Streamed(streamed)) =
                        (taken.broken, &legacy.arguments)
                    {
                        let held = streamed.held();
                        let at = site("/arguments");
                        report_break(broken, Some(seq), held, &LEGACY_ARGUMENTS, at, sink);
                    }
                }
                // A non-string value is judged on the reassembled call.
                other => {
                    if !matches!(legacy.arguments, Arguments::Raw(_)) {
                        assembled.held += weigh::value(other);
                        legacy.arguments = Arguments::Raw(other.clone());
                    }
                }
            }
        }
    }
}

/// `chat_legacy.stream.mixed_with_tool_calls`, once per choice, when it has streamed both
/// shapes.
pub fn check_mixed(
    assembled: &mut ChoiceAssembly,
    at: ChunkAt,
    choice: u32,
    seq: u64,
    sink: &mut ViolationSink,
) {
    if assembled.mixed_reported || assembled.legacy.is_none() || assembled.calls.is_empty() {
        return;
    }
    assembled.mixed_reported = true;
    let site = Site::at(at.pointer("")).choice(Some(choice)).seq(Some(seq));
    sink.push(
        RuleId::ChatLegacyStreamMixedWithToolCalls,
        Stage::Fragment,
        site,
        "one choice streams both delta.function_call and delta.tool_calls",
    );
}

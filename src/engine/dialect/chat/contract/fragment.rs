//! Judges one `delta.tool_calls[]` item and folds it into its call's accumulator, keyed by
//! `index` (never by array position, never by id).
//!
//! Input: an item of a chunk, from [`super::stream`]. Output: fragment-stage violations (index,
//! id, name and arguments-type rules) and the updated [`ChoiceAssembly`] that
//! [`crate::engine::dialect::chat::reassemble`] turns into the buffered-equivalent message.

use serde_json::Value;

use super::calls::{TOOL_CALL_ARGUMENTS, declared_schema};
use super::stream::ChunkAt;
use super::view::{CallView, PartName};
use super::{Declared, preview};
use crate::engine::dialect::argument_verdict::report_break;
use crate::engine::dialect::chat::reassemble::{Arguments, CallAssembly, ChoiceAssembly};
use crate::engine::rules::RuleId;
use crate::engine::violation::{Site, Stage, ViolationSink};
use crate::engine::weigh;

pub fn on_tool_call_fragment(
    assembled: &mut ChoiceAssembly,
    item: CallView<'_>,
    at: ChunkAt,
    choice: u32,
    seq: u64,
    declared: Declared<'_>,
    sink: &mut ViolationSink,
) {
    let Some(index) = item.index().and_then(Value::as_i64) else {
        let site = Site::at(at.pointer("/index"))
            .choice(Some(choice))
            .seq(Some(seq));
        let shown = item.index().map_or_else(|| "missing".to_owned(), preview);
        let custom = item.kind().and_then(Value::as_str) == Some("custom")
            || item.part(PartName::Custom).is_present();
        let rule = if custom {
            RuleId::ChatCustomStreamIndexMissing
        } else {
            RuleId::DeltaIndexMissing
        };
        sink.push(
            rule,
            Stage::Fragment,
            site,
            format!(
                "a tool-call fragment needs an integer index, got {shown}: it cannot be placed"
            ),
        );
        return;
    };
    let tool_call = u32::try_from(index).ok();
    let site = |suffix: &str| {
        Site::at(at.pointer(suffix))
            .choice(Some(choice))
            .tool_call(tool_call)
            .seq(Some(seq))
    };
    let is_new = !assembled.calls.contains_key(&index);
    if is_new {
        // The greatest index so far, read from the ordered map (never a scan of every index).
        let next = assembled
            .calls
            .last_key()
            .copied()
            .filter(|i| *i >= 0)
            .map_or(0, |max| max + 1);
        if index < 0 {
            sink.push(
                RuleId::DeltaIndexInvalid,
                Stage::Fragment,
                site("/index"),
                format!("negative tool-call index {index}"),
            );
        } else if index > next {
            sink.push(
                RuleId::DeltaIndexInvalid,
                Stage::Fragment,
                site("/index"),
                format!("new tool-call index {index} skips {next}"),
            );
        }
        assembled.held += weigh::ENTRY;
        assembled.calls.insert(
            index,
            CallAssembly {
                first_seq: seq,
                ..CallAssembly::default()
            },
        );
    }
    let Some(call) = assembled.calls.get_mut(&index) else {
        return;
    };
    let mut grown = 0;
    if let Some(Value::String(id)) = item.id() {
        match &call.id {
            None => {
                grown += id.len();
                call.id = Some(id.clone());
            }
            Some(known) if known == id => {
                // Harmless to most clients and sent on every chunk by some servers: once per call.
                if !call.id_repeat_reported {
                    call.id_repeat_reported = true;
                    sink.push(
                        RuleId::DeltaIdRepeated,
                        Stage::Fragment,
                        site("/id"),
                        format!("id {id:?} sent again on a later fragment"),
                    );
                }
            }
            Some(known) => {
                let detail = format!("id changed from {known:?} to {id:?} within one index");
                sink.push(RuleId::DeltaIdChanged, Stage::Fragment, site("/id"), detail);
            }
        }
    }
    if let Some(kind) = item.kind().filter(|k| !k.is_null()) {
        if call.kind.is_none() {
            grown += weigh::value(kind);
            call.kind = Some(kind.clone());
        }
    } else if is_new
        && item.part(PartName::Custom).is_present()
        && !item.part(PartName::Function).is_present()
    {
        call.kind = Some(Value::String("custom".to_owned()));
    }
    let custom = call.kind.as_ref().and_then(Value::as_str) == Some("custom");
    let (own_part, other_part, payload) = if custom {
        (PartName::Custom, PartName::Function, "input")
    } else {
        (PartName::Function, PartName::Custom, "arguments")
    };
    let (own, other) = (own_part.key(), other_part.key());
    let stray = item.part(other_part);
    if stray.is_non_null() {
        // Fragments of the other kind are left out of the reassembly.
        if !call.kind_mismatch_reported {
            call.kind_mismatch_reported = true;
            let detail = format!(
                "a {own} tool call's fragment carries `{other}`: {}",
                preview(&stray.to_value())
            );
            sink.push(
                RuleId::ChatCustomStreamFragmentKindMismatch,
                Stage::Fragment,
                site(&format!("/{other}")),
                detail,
            );
        }
    }
    let function = item.part(own_part);
    let name_path = if custom {
        "/custom/name"
    } else {
        "/function/name"
    };
    match function.get("name") {
        Some(Value::String(name)) => match &call.name {
            None => {
                grown += name.len();
                call.name = Some(name.clone());
                if !custom {
                    let schema = declared_schema(declared, name);
                    grown += call.arguments.schema_found(schema, seq);
                }
            }
            Some(known) if known == name => {
                if !call.name_repeat_reported {
                    call.name_repeat_reported = true;
                    sink.push(
                        RuleId::DeltaNameRepeated,
                        Stage::Fragment,
                        site(name_path),
                        format!("name {name:?} sent again on a later fragment"),
                    );
                }
            }
            Some(known) => {
                let detail = format!("name changed from {known:?} to {name:?} within one index");
                sink.push(
                    RuleId::DeltaNameChanged,
                    Stage::Fragment,
                    site(name_path),
                    detail,
                );
            }
        },
        _ if is_new => {
            let detail = format!(
                "the first fragment of this index carries no {own}.name: a client reading it there gets nothing"
            );
            sink.push(
                RuleId::DeltaNameLate,
                Stage::Fragment,
                site(name_path),
                detail,
            );
        }
        _ => {}
    }
    match function.get(payload) {
        None | Some(Value::Null) => {}
        Some(Value::String(fragment)) if custom => grown += call.arguments.append(fragment),
        Some(Value::String(fragment)) => {
            let schema = call
                .name
                .as_deref()
                .map(|name| declared_schema(declared, name));
            let taken = call.arguments.push_streamed(fragment, seq, schema);
            grown += taken.grown;
            if let (Some(broken), Arguments::Streamed(streamed)) = (taken.broken, &call.arguments) {
                let at = site("/function/arguments");
                let held = streamed.held();
                report_break(broken, Some(seq), held, &TOOL_CALL_ARGUMENTS, at, sink);
            }
        }
        // A non-string custom input is judged on the reassembled call.
        Some(other) if custom => {
            if !matches!(call.arguments, Arguments::Raw(_)) {
                grown += weigh::value(other);
                call.arguments = Arguments::Raw(other.clone());
            }
        }
        Some(other) => {
            let detail = format!(
                "an arguments fragment must be a string, got {}",
                preview(other)
            );
            sink.push(
                RuleId::DeltaArgumentsNotString,
                Stage::Fragment,
                site("/function/arguments"),
                detail,
            );
            if !matches!(call.arguments, Arguments::Raw(_)) {
                grown += weigh::value(other);
                call.arguments = Arguments::Raw(other.clone());
            }
        }
    }
    assembled.held += grown;
}

//! Judges one `delta.tool_calls[]` item and folds it into its call's accumulator, keyed by
//! `index` (never by array position, never by id).
//!
//! Input: an item of a chunk, from [`super::stream`]. Output: fragment-stage violations (index,
//! id, name and arguments-type rules) and the updated [`ChoiceAssembly`] that
//! [`crate::engine::dialect::chat::reassemble`] turns into the buffered-equivalent message.

use serde_json::Value;

use super::preview;
use crate::engine::dialect::chat::reassemble::{Arguments, CallAssembly, ChoiceAssembly};
use crate::engine::rules::RuleId;
use crate::engine::violation::{Site, Stage, ViolationSink};

pub fn on_tool_call_fragment(
    assembled: &mut ChoiceAssembly,
    item: &Value,
    path: &str,
    choice: u32,
    seq: u64,
    sink: &mut ViolationSink,
) {
    let Some(index) = item.get("index").and_then(Value::as_i64) else {
        let site = Site::at(format!("{path}/index"))
            .choice(Some(choice))
            .seq(Some(seq));
        let shown = item
            .get("index")
            .map_or_else(|| "missing".to_owned(), preview);
        sink.push(
            RuleId::DeltaIndexMissing,
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
        Site::at(format!("{path}{suffix}"))
            .choice(Some(choice))
            .tool_call(tool_call)
            .seq(Some(seq))
    };
    let is_new = !assembled.calls.contains_key(&index);
    if is_new {
        let next = assembled
            .calls
            .keys()
            .copied()
            .filter(|i| *i >= 0)
            .max()
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
    if let Some(Value::String(id)) = item.get("id") {
        match &call.id {
            None => call.id = Some(id.clone()),
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
    if let Some(kind) = item.get("type").filter(|k| !k.is_null()) {
        call.kind.get_or_insert_with(|| kind.clone());
    }
    let function = item.get("function");
    match function.and_then(|f| f.get("name")) {
        Some(Value::String(name)) => match &call.name {
            None => call.name = Some(name.clone()),
            Some(known) if known == name => {
                if !call.name_repeat_reported {
                    call.name_repeat_reported = true;
                    sink.push(
                        RuleId::DeltaNameRepeated,
                        Stage::Fragment,
                        site("/function/name"),
                        format!("name {name:?} sent again on a later fragment"),
                    );
                }
            }
            Some(known) => {
                let detail = format!("name changed from {known:?} to {name:?} within one index");
                sink.push(
                    RuleId::DeltaNameChanged,
                    Stage::Fragment,
                    site("/function/name"),
                    detail,
                );
            }
        },
        _ if is_new => {
            let detail = "the first fragment of this index carries no function.name: a client reading it there gets nothing";
            sink.push(
                RuleId::DeltaNameLate,
                Stage::Fragment,
                site("/function/name"),
                detail,
            );
        }
        _ => {}
    }
    match function.and_then(|f| f.get("arguments")) {
        None | Some(Value::Null) => {}
        Some(Value::String(fragment)) => call.arguments.append(fragment),
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
                call.arguments = Arguments::Raw(other.clone());
            }
        }
    }
}

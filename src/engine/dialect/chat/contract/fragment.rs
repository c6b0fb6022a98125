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
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;
use crate::engine::violation::{Stage, ViolationSink};
use crate::engine::weigh;

/// One `delta.tool_calls[]` item and where it sits: its place in the chunk, its choice and its
/// event's seq.
#[derive(Debug, Clone, Copy)]
pub struct Fragment<'a> {
    pub item: CallView<'a>,
    pub at: ChunkAt,
    pub choice: u32,
    pub seq: u64,
}

pub fn on_tool_call_fragment(
    assembled: &mut ChoiceAssembly,
    fragment: Fragment<'_>,
    declared: Declared<'_>,
    sink: &mut ViolationSink,
) {
    let Fragment {
        item, choice, seq, ..
    } = fragment;
    let mut judge = Judge::new(sink, Stage::Fragment)
        .choice(Some(choice))
        .seq(Some(seq));
    let Some(index) = item.index().and_then(Value::as_i64) else {
        return index_missing(fragment, &mut judge);
    };
    let mut judge = judge.tool_call(u32::try_from(index).ok());
    let is_new = !assembled.calls.contains_key(&index);
    if is_new {
        open_call(assembled, index, fragment, &mut judge);
    }
    let Some(call) = assembled.calls.get_mut(&index) else {
        return;
    };
    let mut grown = take_id(call, fragment, &mut judge);
    grown += take_kind(call, item, is_new);
    let custom = call.kind.as_ref().and_then(Value::as_str) == Some("custom");
    check_stray_part(call, fragment, custom, &mut judge);
    grown += take_name(call, fragment, custom, is_new, declared, &mut judge);
    grown += take_payload(call, fragment, custom, declared, &mut judge);
    assembled.held += grown;
}

/// The part a call of its kind carries, the other kind's part, and the part's payload member
/// (`function.arguments` or `custom.input`).
fn parts(custom: bool) -> (PartName, PartName, &'static str) {
    if custom {
        (PartName::Custom, PartName::Function, "input")
    } else {
        (PartName::Function, PartName::Custom, "arguments")
    }
}

/// An item whose `index` is missing or not an integer: it cannot be placed.
fn index_missing(fragment: Fragment<'_>, judge: &mut Judge<'_>) {
    let item = fragment.item;
    let shown = item.index().map_or_else(|| "missing".to_owned(), preview);
    let custom = item.kind().and_then(Value::as_str) == Some("custom")
        || item.part(PartName::Custom).is_present();
    let rule = if custom {
        RuleId::ChatCustomStreamIndexMissing
    } else {
        RuleId::DeltaIndexMissing
    };
    let detail =
        format!("a tool-call fragment needs an integer index, got {shown}: it cannot be placed");
    judge.flag(rule, fragment.at.pointer("/index"), detail);
}

/// Opens the call of a new `index`, which must be the next one: never negative, never a gap.
fn open_call(
    assembled: &mut ChoiceAssembly,
    index: i64,
    fragment: Fragment<'_>,
    judge: &mut Judge<'_>,
) {
    // The greatest index so far, read from the ordered map (never a scan of every index).
    let next = assembled
        .calls
        .last_key()
        .copied()
        .filter(|i| *i >= 0)
        .map_or(0, |max| max + 1);
    let detail = if index < 0 {
        Some(format!("negative tool-call index {index}"))
    } else if index > next {
        Some(format!("new tool-call index {index} skips {next}"))
    } else {
        None
    };
    if let Some(detail) = detail {
        judge.flag(
            RuleId::DeltaIndexInvalid,
            fragment.at.pointer("/index"),
            detail,
        );
    }
    assembled.held += weigh::ENTRY;
    assembled.calls.insert(
        index,
        CallAssembly {
            first_seq: fragment.seq,
            ..CallAssembly::default()
        },
    );
}

/// The call's `id`, kept from its first fragment: the same id again is reported once per call,
/// another id each time. Returns the bytes newly held.
fn take_id(call: &mut CallAssembly, fragment: Fragment<'_>, judge: &mut Judge<'_>) -> usize {
    let Some(Value::String(id)) = fragment.item.id() else {
        return 0;
    };
    match &call.id {
        None => {
            call.id = Some(id.clone());
            return id.len();
        }
        Some(known) if known == id => {
            // Harmless to most clients and sent on every chunk by some servers: once per call.
            if !call.id_repeat_reported {
                call.id_repeat_reported = true;
                let detail = format!("id {id:?} sent again on a later fragment");
                judge.flag(RuleId::DeltaIdRepeated, fragment.at.pointer("/id"), detail);
            }
        }
        Some(known) => {
            let detail = format!("id changed from {known:?} to {id:?} within one index");
            judge.flag(RuleId::DeltaIdChanged, fragment.at.pointer("/id"), detail);
        }
    }
    0
}

/// The call's `type`, from its first fragment that has one; a new index that carries only a
/// `custom` part is a custom call. Returns the bytes newly held.
fn take_kind(call: &mut CallAssembly, item: CallView<'_>, is_new: bool) -> usize {
    if let Some(kind) = item.kind().filter(|k| !k.is_null()) {
        if call.kind.is_none() {
            call.kind = Some(kind.clone());
            return weigh::value(kind);
        }
    } else if is_new
        && item.part(PartName::Custom).is_present()
        && !item.part(PartName::Function).is_present()
    {
        call.kind = Some(Value::String("custom".to_owned()));
    }
    0
}

/// A fragment that carries the other kind's part (`custom` on a function call, `function` on a
/// custom one), reported once per call; that part is left out of the reassembly.
fn check_stray_part(
    call: &mut CallAssembly,
    fragment: Fragment<'_>,
    custom: bool,
    judge: &mut Judge<'_>,
) {
    let (own_part, other_part, _) = parts(custom);
    let stray = fragment.item.part(other_part);
    if !stray.is_non_null() || call.kind_mismatch_reported {
        return;
    }
    call.kind_mismatch_reported = true;
    let (own, other) = (own_part.key(), other_part.key());
    let shown = preview(&stray.to_value());
    let detail = format!("a {own} tool call's fragment carries `{other}`: {shown}");
    let rule = RuleId::ChatCustomStreamFragmentKindMismatch;
    judge.flag(rule, fragment.at.pointer(&format!("/{other}")), detail);
}

/// The call's name, kept from its first fragment (a function call's arguments are then followed
/// with its schema): missing from the first fragment, sent again (reported once per call) or
/// changed. Returns the bytes newly held.
fn take_name(
    call: &mut CallAssembly,
    fragment: Fragment<'_>,
    custom: bool,
    is_new: bool,
    declared: Declared<'_>,
    judge: &mut Judge<'_>,
) -> usize {
    let (own_part, _, _) = parts(custom);
    let name_path = if custom {
        "/custom/name"
    } else {
        "/function/name"
    };
    let at = || fragment.at.pointer(name_path);
    let name = match fragment.item.part(own_part).get("name") {
        Some(Value::String(name)) => name,
        _ if is_new => {
            let own = own_part.key();
            let detail = format!(
                "the first fragment of this index carries no {own}.name: a client reading it there gets nothing"
            );
            judge.flag(RuleId::DeltaNameLate, at(), detail);
            return 0;
        }
        _ => return 0,
    };
    match &call.name {
        None => {
            call.name = Some(name.clone());
            if custom {
                return name.len();
            }
            let schema = declared_schema(declared, name);
            return name.len() + call.arguments.schema_found(schema, fragment.seq);
        }
        Some(known) if known == name => {
            if !call.name_repeat_reported {
                call.name_repeat_reported = true;
                let detail = format!("name {name:?} sent again on a later fragment");
                judge.flag(RuleId::DeltaNameRepeated, at(), detail);
            }
        }
        Some(known) => {
            let detail = format!("name changed from {known:?} to {name:?} within one index");
            judge.flag(RuleId::DeltaNameChanged, at(), detail);
        }
    }
    0
}

/// The fragment's payload: a function call's `arguments` string followed as it streams, a
/// custom call's `input` string appended, and the first non-string value kept as it came (a
/// function call's reported here, a custom call's judged on the reassembled call). Returns the
/// bytes newly held.
fn take_payload(
    call: &mut CallAssembly,
    fragment: Fragment<'_>,
    custom: bool,
    declared: Declared<'_>,
    judge: &mut Judge<'_>,
) -> usize {
    let (own_part, _, payload) = parts(custom);
    match fragment.item.part(own_part).get(payload) {
        None | Some(Value::Null) => 0,
        Some(Value::String(text)) if custom => call.arguments.append(text),
        Some(Value::String(text)) => take_arguments(call, text, fragment, declared, judge),
        Some(other) if custom => keep_raw(call, other),
        Some(other) => {
            let detail = format!(
                "an arguments fragment must be a string, got {}",
                preview(other)
            );
            let at = fragment.at.pointer("/function/arguments");
            judge.flag(RuleId::DeltaArgumentsNotString, at, detail);
            keep_raw(call, other)
        }
    }
}

/// A function call's `arguments` fragment, followed with the call's schema once its name is
/// known; the break is reported at the fragment that made the text impossible JSON. Returns the
/// bytes newly held.
fn take_arguments(
    call: &mut CallAssembly,
    text: &str,
    fragment: Fragment<'_>,
    declared: Declared<'_>,
    judge: &mut Judge<'_>,
) -> usize {
    let schema = call
        .name
        .as_deref()
        .map(|name| declared_schema(declared, name));
    let taken = call.arguments.push_streamed(text, fragment.seq, schema);
    if let (Some(broken), Arguments::Streamed(streamed)) = (taken.broken, &call.arguments) {
        let site = judge.site(fragment.at.pointer("/function/arguments"));
        let (seq, held) = (Some(fragment.seq), streamed.held());
        report_break(broken, seq, held, &TOOL_CALL_ARGUMENTS, site, judge.sink());
    }
    taken.grown
}

/// Keeps a non-string payload as it came, unless one already broke the call. Returns the bytes
/// newly held.
fn keep_raw(call: &mut CallAssembly, value: &Value) -> usize {
    if matches!(call.arguments, Arguments::Raw(_)) {
        return 0;
    }
    call.arguments = Arguments::Raw(value.clone());
    weigh::value(value)
}

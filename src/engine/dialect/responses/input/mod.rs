//! Judges the call items of a Responses API request's `input`
//! (`responses.request.call_id_too_long`, `function_call_output_orphan`).
//!
//! Input: the request's `input`, as the body's first read left it ([`Input`]: read with the
//! rest of the body, or kept as text by serde). Output: request-stage violations. A result
//! (`function_call_output`, `custom_tool_call_output`) answers a call (`function_call`,
//! `custom_tool_call`) of the same `call_id` in `input`, unless the call lives server-side
//! (`previous_response_id` or `conversation` set); a `call_id` is at most 64 characters.
//!
//! The input is read into [`Item`]s, each item's kind and `call_id`
//! ([`crate::engine::dialect::item_list`]); the rules read [`Item`]s alone.

use std::borrow::Cow;
use std::collections::HashSet;

use serde_json::Value;

use crate::engine::dialect::item_list::{ItemList, ListItem};
use crate::engine::json_scan::Scan;
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;

/// The longest `call_id` the spec allows on input items.
const MAX_CALL_ID: usize = 64;

/// One `input` item, as the rules read it.
#[derive(Debug, Default, PartialEq)]
pub struct Item<'a> {
    kind: ItemKind,
    /// Its `call_id`, when a string.
    call_id: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, PartialEq, Clone, Copy)]
enum ItemKind {
    /// `function_call` or `custom_tool_call`.
    Call,
    /// `function_call_output` or `custom_tool_call_output`.
    Output,
    #[default]
    Other,
}

impl ItemKind {
    fn of(kind: Option<&str>) -> ItemKind {
        match kind {
            Some("function_call" | "custom_tool_call") => ItemKind::Call,
            Some("function_call_output" | "custom_tool_call_output") => ItemKind::Output,
            _ => ItemKind::Other,
        }
    }
}

/// How the call rules read an input item.
pub struct Items;

impl ListItem for Items {
    type Item<'t> = Item<'t>;

    fn scan<'t>(scan: &mut Scan<'t>) -> Option<Item<'t>> {
        Item::scan(scan)
    }

    fn of_tree(item: &Value) -> Item<'_> {
        Item::of_tree(item)
    }
}

/// A request's `input` as its first read left it.
pub type Input<'a> = ItemList<'a, Items>;

/// Whether the input's text holds a `call_id` at all: only then are the rules run (an input
/// without one has nothing they judge).
pub fn has_call_ids(input: &Input<'_>) -> bool {
    input.text().contains("call_id")
}

/// `continues`: the request continues a server-held response or conversation, so a result may
/// answer a call this request does not hold (`judge`: at the request's root).
pub fn check(input: &Input<'_>, continues: bool, judge: &mut Judge<'_>) {
    input.with_items(|items| judge_items(items, continues, judge));
}

fn judge_items(items: &[Item<'_>], continues: bool, judge: &mut Judge<'_>) {
    let calls: HashSet<&str> = items
        .iter()
        .filter(|item| item.kind == ItemKind::Call)
        .filter_map(|item| item.call_id.as_deref())
        .collect();
    for (position, item) in items.iter().enumerate() {
        let Some(id) = item.call_id.as_deref() else {
            continue;
        };
        let mut at_item = judge.under_at("/input/", position);
        let mut judge = at_item.under_text("/call_id");
        if id.len() > MAX_CALL_ID {
            let detail = format!(
                "call_id is {} characters; the spec allows {MAX_CALL_ID}",
                id.len()
            );
            judge.flag(RuleId::ResponsesRequestCallIdTooLong, "", detail);
        }
        if item.kind == ItemKind::Output && !continues && !calls.contains(id) {
            let detail = format!("a tool result for call_id {id:?}, which no call in input has");
            judge.flag(RuleId::ResponsesRequestFunctionCallOutputOrphan, "", detail);
        }
    }
}

impl<'a> Item<'a> {
    /// An item read from a `Value` (the tree path).
    fn of_tree(item: &'a Value) -> Item<'a> {
        Item {
            kind: ItemKind::of(item.get("type").and_then(Value::as_str)),
            call_id: item
                .get("call_id")
                .and_then(Value::as_str)
                .map(Cow::Borrowed),
        }
    }

    /// An item read by the scan: a value that is not an object is an item of no kind.
    fn scan(scan: &mut Scan<'a>) -> Option<Item<'a>> {
        let mut item = Item::default();
        if scan.peek()? != b'{' {
            scan.value_text()?;
            return Some(item);
        }
        scan.object(|scan, key| {
            match key {
                "type" => item.kind = ItemKind::of(scan.string_or_other()?.as_deref()),
                "call_id" => item.call_id = scan.string_or_other()?,
                _ => {
                    scan.value_text()?;
                }
            }
            Some(())
        })?;
        Some(item)
    }
}

#[cfg(test)]
pub(crate) mod tests;

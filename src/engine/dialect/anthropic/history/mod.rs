//! Judges the tool_use/tool_result history of an Anthropic Messages request
//! (`anthropic.request.tool_use_unanswered`, `tool_result_not_leading`, `tool_result_orphan`,
//! `history_tool_use_input_not_object`).
//!
//! Input: the request's `messages`, as the body's first read left it ([`History`]: read with
//! the rest of the body, or kept as text by serde). Output: request-stage violations. The rule
//! the API enforces: every `tool_use` of an assistant message is answered by a `tool_result` in
//! the immediately following user message, and those results lead that message's content.
//! A request that continues a server-held thread (`thread: {"type":"continue",
//! "previous_message_id":...}`, sent by the SDK's tool runner) carries only the new turn: the
//! `tool_use` its first message answers lives server-side, so that message's results are not
//! orphans (the twin of the Responses API's `previous_response_id`).
//!
//! The history is read into [`Turn`]s, each message's role and each content block's type, ids
//! and whether its `input` is an object ([`crate::engine::dialect::item_list`]); the rules read
//! [`Turn`]s alone.

use std::borrow::Cow;
use std::collections::HashSet;

use serde_json::Value;

use crate::engine::dialect::common::preview;
use crate::engine::dialect::item_list::{ItemList, ListItem};
use crate::engine::json_scan::Scan;
use crate::engine::judge::Judge;
use crate::engine::rules::RuleId;

/// One message of the history, as the rules read it.
#[derive(Debug, Default, PartialEq)]
pub struct Turn<'a> {
    role: Role,
    /// The `content` array's blocks (none when `content` is a string or anything else).
    blocks: Vec<Block<'a>>,
}

/// A message's `role`, when it is one of the two the rules tell apart.
#[derive(Debug, Default, PartialEq, Clone, Copy)]
enum Role {
    Assistant,
    User,
    #[default]
    Other,
}

/// One content block: its `type` as the rules tell them apart, its ids when they are strings,
/// and its `input`.
#[derive(Debug, Default, PartialEq)]
struct Block<'a> {
    kind: Kind,
    id: Option<Cow<'a, str>>,
    tool_use_id: Option<Cow<'a, str>>,
    input: Input,
}

#[derive(Debug, Default, PartialEq, Clone, Copy)]
enum Kind {
    ToolUse,
    ToolResult,
    #[default]
    Other,
}

/// A block's `input`: absent, an object, or another value (kept as its preview).
#[derive(Debug, Default, PartialEq)]
enum Input {
    #[default]
    Absent,
    Object,
    Other(String),
}

impl Role {
    fn of(role: Option<&str>) -> Role {
        match role {
            Some("assistant") => Role::Assistant,
            Some("user") => Role::User,
            _ => Role::Other,
        }
    }
}

impl Kind {
    fn of(kind: Option<&str>) -> Kind {
        match kind {
            Some("tool_use") => Kind::ToolUse,
            Some("tool_result") => Kind::ToolResult,
            _ => Kind::Other,
        }
    }
}

/// How the history rules read a message.
pub struct Messages;

impl ListItem for Messages {
    type Item<'t> = Turn<'t>;

    fn scan<'t>(scan: &mut Scan<'t>) -> Option<Turn<'t>> {
        Turn::scan(scan)
    }

    fn of_tree(message: &Value) -> Turn<'_> {
        Turn::of_tree(message)
    }
}

/// A request's `messages` as its first read left them.
pub type History<'a> = ItemList<'a, Messages>;

/// Whether the history's text holds a tool block's type at all: only then are the rules run (a
/// history without one has nothing they judge).
pub fn has_tool_blocks(history: &History<'_>) -> bool {
    let text = history.text();
    text.contains("tool_use") || text.contains("tool_result")
}

/// `continues`: the request continues a server-held thread, so the first message's results
/// answer a `tool_use` this request does not hold (`judge`: at the request's root).
pub fn check(history: &History<'_>, continues: bool, judge: &mut Judge<'_>) {
    history.with_items(|turns| judge_turns(turns, continues, judge));
}

fn judge_turns(turns: &[Turn<'_>], continues: bool, judge: &mut Judge<'_>) {
    for (position, turn) in turns.iter().enumerate() {
        let mut at_message = judge.under_at("/messages/", position);
        let mut judge = at_message.under_text("/content");
        if turn.role == Role::Assistant {
            check_inputs(turn, &mut judge);
            if let Some(next) = turns.get(position + 1) {
                unanswered(turn, next, &mut judge);
            }
            continue;
        }
        let server_side = continues && position == 0;
        let calls = tool_use_ids(position.checked_sub(1).and_then(|p| turns.get(p)));
        check_results(&turn.blocks, &calls, server_side, &mut judge);
    }
}

/// The `tool_use` ids of an assistant message (none for any other role).
fn tool_use_ids<'t>(turn: Option<&'t Turn<'_>>) -> HashSet<&'t str> {
    let Some(turn) = turn.filter(|turn| turn.role == Role::Assistant) else {
        return HashSet::new();
    };
    turn.blocks
        .iter()
        .filter(|block| block.kind == Kind::ToolUse)
        .filter_map(|block| block.id.as_deref())
        .collect()
}

/// `history_tool_use_input_not_object` for an assistant message's `tool_use` blocks (`judge`:
/// at its content).
fn check_inputs(turn: &Turn<'_>, judge: &mut Judge<'_>) {
    for (index, block) in turn.blocks.iter().enumerate() {
        let shown = match (&block.kind, &block.input) {
            (Kind::ToolUse, Input::Absent) => "nothing",
            (Kind::ToolUse, Input::Other(preview)) => preview.as_str(),
            _ => continue,
        };
        let detail = format!("a history tool_use.input must be an object, got {shown}");
        let rule = RuleId::AnthropicRequestHistoryToolUseInputNotObject;
        judge.flag(rule, format_args!("/{index}/input"), detail);
    }
}

/// The `tool_result` blocks of a message after `calls` (the preceding assistant message's
/// `tool_use` ids): leading the content, each answering one of those calls unless the call
/// lives `server_side` (`judge`: at its content).
fn check_results(
    content: &[Block<'_>],
    calls: &HashSet<&str>,
    server_side: bool,
    judge: &mut Judge<'_>,
) {
    let mut leading = true;
    for (index, block) in content.iter().enumerate() {
        if block.kind != Kind::ToolResult {
            leading = false;
            continue;
        }
        if !leading {
            let detail = "a tool_result after other content: tool results must come first in the user message";
            let rule = RuleId::AnthropicRequestToolResultNotLeading;
            judge.flag(rule, format_args!("/{index}"), detail);
        }
        let id = block.tool_use_id.as_deref().unwrap_or_default();
        if !server_side && !calls.contains(id) {
            let detail = format!(
                "tool_result for {id:?}, which no tool_use of the preceding assistant message has"
            );
            let rule = RuleId::AnthropicRequestToolResultOrphan;
            judge.flag(rule, format_args!("/{index}/tool_use_id"), detail);
        }
    }
}

/// Every `tool_use` of `turn` needs a `tool_result` in `next` (`judge`: at `turn`'s content).
fn unanswered(turn: &Turn<'_>, next: &Turn<'_>, judge: &mut Judge<'_>) {
    let answered: HashSet<&str> = if next.role == Role::User {
        next.blocks
            .iter()
            .filter(|block| block.kind == Kind::ToolResult)
            .filter_map(|block| block.tool_use_id.as_deref())
            .collect()
    } else {
        HashSet::new()
    };
    for (index, block) in turn.blocks.iter().enumerate() {
        if block.kind != Kind::ToolUse {
            continue;
        }
        let id = block.id.as_deref().unwrap_or_default();
        if !answered.contains(id) {
            let detail = format!(
                "tool_use {id:?} has no tool_result in the immediately following user message"
            );
            let rule = RuleId::AnthropicRequestToolUseUnanswered;
            judge.flag(rule, format_args!("/{index}/id"), detail);
        }
    }
}

impl<'a> Turn<'a> {
    /// A message read from a `Value` (the tree path).
    fn of_tree(message: &'a Value) -> Turn<'a> {
        let blocks = message.get("content").and_then(Value::as_array);
        Turn {
            role: Role::of(message.get("role").and_then(Value::as_str)),
            blocks: blocks.into_iter().flatten().map(Block::of_tree).collect(),
        }
    }

    /// A message read by the scan: a value that is not an object is a message of no role and
    /// no blocks, as a `Value` reads it.
    fn scan(scan: &mut Scan<'a>) -> Option<Turn<'a>> {
        let mut turn = Turn::default();
        if scan.peek()? != b'{' {
            scan.value_text()?;
            return Some(turn);
        }
        scan.object(|scan, key| match key {
            "role" => {
                turn.role = Role::of(scan.string_or_other()?.as_deref());
                Some(())
            }
            "content" => {
                turn.blocks = scan_blocks(scan)?;
                Some(())
            }
            _ => scan.value_text().map(drop),
        })?;
        Some(turn)
    }
}

/// A message's `content`: an array's blocks, none for any other value.
fn scan_blocks<'a>(scan: &mut Scan<'a>) -> Option<Vec<Block<'a>>> {
    if scan.peek()? != b'[' {
        scan.value_text()?;
        return Some(Vec::new());
    }
    scan.items(Block::scan)
}

impl<'a> Block<'a> {
    fn of_tree(block: &'a Value) -> Block<'a> {
        let text = |key| block.get(key).and_then(Value::as_str).map(Cow::Borrowed);
        Block {
            kind: Kind::of(block.get("type").and_then(Value::as_str)),
            id: text("id"),
            tool_use_id: text("tool_use_id"),
            input: match block.get("input") {
                None => Input::Absent,
                Some(Value::Object(_)) => Input::Object,
                Some(other) => Input::Other(preview(other)),
            },
        }
    }

    /// A block read by the scan: a value that is not an object is a block of no type.
    fn scan(scan: &mut Scan<'a>) -> Option<Block<'a>> {
        let mut block = Block::default();
        if scan.peek()? != b'{' {
            scan.value_text()?;
            return Some(block);
        }
        scan.object(|scan, key| {
            match key {
                "type" => {
                    block.kind = Kind::of(scan.string_or_other()?.as_deref());
                }
                "id" => {
                    block.id = scan.string_or_other()?;
                }
                "tool_use_id" => {
                    block.tool_use_id = scan.string_or_other()?;
                }
                "input" => {
                    let text = scan.value_text()?;
                    block.input = if text.starts_with('{') {
                        Input::Object
                    } else {
                        // Rare (a broken client): the preview formats the value as serde does.
                        Input::Other(preview(&serde_json::from_str(text).ok()?))
                    };
                }
                _ => {
                    scan.value_text()?;
                }
            }
            Some(())
        })?;
        Some(block)
    }
}

#[cfg(test)]
pub(crate) mod tests;

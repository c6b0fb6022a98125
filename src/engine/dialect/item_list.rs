//! A request member holding a list the rules read entry by entry (Anthropic's `messages`, the
//! Responses API's `input`): most of an agent's request, sent again whole with every turn.
//!
//! Input: the member's value, read with the rest of the body by its scan ([`ItemList::scan`]), or
//! kept as text by serde's read of the body ([`ItemList::raw`]). Output: the items, what the
//! rules read of each entry ([`ListItem`]), handed to the rules ([`ItemList::with_items`]). The
//! scan steps over everything the item reads do not take ([`crate::engine::json_scan`], as
//! strict as serde's `Value`; a member given twice is read as the last one, as a `Value` keeps
//! it); only where it gives up (a key with an escape, a lone surrogate, deep nesting...) is the
//! text read as a `Value` tree, whose entries give the same items (see
//! docs/benchmarks.md#anthropic-history).

use serde_json::Value;
use serde_json::value::RawValue;

use crate::engine::json_scan::Scan;

/// How the rules read one entry of a list.
pub trait ListItem {
    /// One entry as the rules read it, borrowing from the text or the tree it was read from.
    type Item<'t>;
    /// An entry read by the scan (`None`: the scan gives up on the whole list).
    fn scan<'t>(scan: &mut Scan<'t>) -> Option<Self::Item<'t>>;
    /// An entry read from a `Value` (the tree path).
    fn of_tree(entry: &Value) -> Self::Item<'_>;
}

/// A list member as the body's first read left it.
pub struct ItemList<'a, L: ListItem>(Read<'a, L>);

enum Read<'a, L: ListItem> {
    /// Read with the rest of the body by its scan: the value's text and its items.
    Scanned(&'a str, Vec<L::Item<'a>>),
    /// Kept as text by serde's read of the body (which the scan left to it): read when judged.
    Raw(Box<RawValue>),
}

impl<'a, L: ListItem> ItemList<'a, L> {
    /// The value at `scan` (past `null`, which the caller takes as absent) read into items; a
    /// value other than an array (a prompt string) holds none, as the tree read judges none.
    pub fn scan(scan: &mut Scan<'a>) -> Option<ItemList<'a, L>> {
        let (text, items) = scan.with_text(|scan| {
            if scan.peek()? != b'[' {
                return scan.raw_text().map(|_| Vec::new());
            }
            scan.items(L::scan)
        })?;
        Some(ItemList(Read::Scanned(text, items)))
    }

    /// The list serde's read of the body kept as text.
    pub fn raw(raw: Box<RawValue>) -> ItemList<'a, L> {
        ItemList(Read::Raw(raw))
    }

    /// The value's exact text.
    pub fn text(&self) -> &str {
        match &self.0 {
            Read::Scanned(text, _) => text,
            Read::Raw(raw) => raw.get(),
        }
    }

    /// Hands the items to `judge`: those the body's scan read, or those read now from the kept
    /// text (by the scan, else as a tree). A value that is not an array holds none, and kept
    /// text that does not parse is not judged.
    pub fn with_items(&self, judge: impl for<'t> FnOnce(&[L::Item<'t>])) {
        let text = match &self.0 {
            Read::Scanned(_, items) => return judge(items),
            Read::Raw(raw) => raw.get(),
        };
        if let Some(items) = scanned::<L>(text) {
            return judge(&items);
        }
        let Ok(Value::Array(tree)) = serde_json::from_str::<Value>(text) else {
            return;
        };
        let items: Vec<L::Item<'_>> = tree.iter().map(L::of_tree).collect();
        judge(&items);
    }
}

/// A list's items read from its whole text by the scan, or `None` where the scan leaves the
/// text to serde.
pub fn scanned<L: ListItem>(text: &str) -> Option<Vec<L::Item<'_>>> {
    let mut scan = Scan::new(text);
    let items = scan.items(L::scan)?;
    scan.end()?;
    Some(items)
}

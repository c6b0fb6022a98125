//! The members Anthropic's and the Responses API's request bodies name alike (`model`, `stream`,
//! `tools`, `tool_choice`), read by each body's one-pass scan or taken from serde's read of it.
//!
//! Input: a member's key and its value at the body's scan, or serde's values. Output:
//! [`Basics`], the `tools` array kept as its exact text, with its compiled tools when the schema
//! cache knew the text (stepped over, not read: see [`SchemaCache::known_at`]).

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;
use serde_json::value::RawValue;

use super::common;
use crate::engine::json_scan::{self, Scan, Seen};
use crate::engine::schema::{CompiledTools, SchemaCache, ToolReading};

/// The members a request body names alike.
#[derive(Default)]
pub struct Basics<'a> {
    pub model: Option<Value>,
    pub stream: Option<Value>,
    /// The `tools` array's exact text.
    pub tools: Option<Cow<'a, str>>,
    /// Its compiled tools, when the cache knew the text.
    known: Option<Arc<CompiledTools>>,
    pub tool_choice: Option<Value>,
}

impl<'a> Basics<'a> {
    /// The members as serde read them.
    pub fn of_serde(
        model: Option<Value>,
        stream: Option<Value>,
        tools: Option<Box<RawValue>>,
        tool_choice: Option<Value>,
    ) -> Basics<'a> {
        Basics {
            model,
            stream,
            tools: tools.map(|raw| Cow::Owned(Box::<str>::from(raw).into())),
            known: None,
            tool_choice,
        }
    }

    /// Reads member `key` at `scan` when it is one of these, as serde's derived read takes it
    /// (`null` as absent; a member given twice, bits 0 to 3 of `seen`, gives up): `Some` with
    /// the read's outcome, `None` for another key. A `tools` text among `cache`'s recent arrays
    /// for `reading` is stepped over and comes with its compiled tools.
    pub fn scan_member(
        &mut self,
        key: &str,
        scan: &mut Scan<'a>,
        seen: &mut Seen,
        (cache, reading): (Option<&SchemaCache>, &ToolReading),
    ) -> Option<Option<()>> {
        Some(match key {
            "model" => seen.fill(0, &mut self.model, json_scan::optional(scan)),
            "stream" => seen.fill(1, &mut self.stream, json_scan::optional(scan)),
            "tools" => {
                let known = &mut self.known;
                let read = common::scan_tools(scan, cache, reading).map(|tools| {
                    tools.map(|(text, compiled)| {
                        *known = compiled;
                        Cow::Borrowed(text)
                    })
                });
                seen.fill(2, &mut self.tools, read)
            }
            "tool_choice" => seen.fill(3, &mut self.tool_choice, json_scan::optional(scan)),
            _ => return None,
        })
    }

    /// The compiled tools the scan took with the `tools` text, if it stepped over it.
    #[cfg(test)]
    pub fn known(&self) -> Option<&Arc<CompiledTools>> {
        self.known.as_ref()
    }

    /// The `tools` array's compiled tools: those the scan took with its text, else `cache`'s
    /// (compiled on first sight); none without an array or a cache.
    pub fn compiled(
        &mut self,
        cache: Option<&SchemaCache>,
        reading: &ToolReading,
    ) -> Option<Arc<CompiledTools>> {
        let text = self.tools.as_deref();
        self.known
            .take()
            .or_else(|| Some(cache?.tools_for_text(text?, reading)))
    }
}

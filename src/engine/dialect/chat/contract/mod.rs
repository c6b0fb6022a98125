//! The function-calling rules of the seed's contract, as pure functions over parsed values.
//!
//! [`buffered`] judges a whole `chat.completion` document (a buffered body, or a stream's
//! reassembled equivalent) choice by choice; [`calls`] judges one message's `tool_calls`;
//! [`stream`] judges each `chat.completion.chunk` event and feeds the reassembler. [`legacy`],
//! [`legacy_stream`], [`custom`] and [`allowed`] judge the rest of the Chat surface (the legacy
//! `function_call`, `type: "custom"` calls, `allowed_tools`). [`members`] reads a buffered
//! document and [`chunk`] a stream chunk typed (both through [`object`]), into only the members the rules use (a tree
//! when the typed read refuses); [`view`] lets the rules read a tool call either way. All report
//! through a [`crate::engine::judge::Judge`] (the sink and the place judged); none does I/O.

pub mod allowed;
pub mod buffered;
pub mod calls;
pub mod chunk;
pub mod custom;
pub mod fragment;
pub mod legacy;
pub mod legacy_stream;
pub mod members;
pub mod object;
pub mod stream;
pub mod view;

use crate::engine::dialect::common::preview;

use super::request::ToolChoice;
use super::surface::Surface;
use crate::engine::schema::CompiledTools;

/// What the request said, as the checks need it.
#[derive(Debug, Clone, Copy)]
pub struct Declared<'a> {
    /// The declared tools; `None` when the request declared none (or did not parse), which
    /// skips the rules that compare against declarations.
    pub tools: Option<&'a CompiledTools>,
    pub choice: &'a ToolChoice,
    pub parallel_tool_calls: Option<bool>,
    /// Legacy `functions`, custom tools and `allowed_tools`.
    pub surface: &'a Surface,
}

/// Which kind of document [`buffered::check_document`] is judging.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A buffered body: every field is as the server wrote it.
    Buffered,
    /// The reassembly of a stream: finish reasons were already judged per fragment, and
    /// tool-call indexes come from `delta.tool_calls[].index`.
    Stream,
}

/// The finish reasons the OpenAI spec allows.
pub const FINISH_REASONS: [&str; 5] = [
    "stop",
    "length",
    "tool_calls",
    "content_filter",
    "function_call",
];

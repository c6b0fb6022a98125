//! Where Chat Completions' tool-call pieces sit in its stream events and buffered bodies,
//! for the HTML report's lanes (see [`crate::engine::dialect::pieces`]).

use crate::engine::dialect::pieces::{DialectTables, Lane, PieceKind, PieceRule};

const CHAT_CALL: &[(PieceKind, &str)] = &[
    (PieceKind::Id, "/id"),
    (PieceKind::Name, "/function/name"),
    (PieceKind::Arguments, "/function/arguments"),
    (PieceKind::Name, "/custom/name"),
    (PieceKind::Arguments, "/custom/input"),
];
/// The legacy `function_call` (one per choice, no id, no index).
const CHAT_LEGACY_CALL: &[(PieceKind, &str)] = &[
    (PieceKind::Name, "/name"),
    (PieceKind::Arguments, "/arguments"),
];
const CHAT_CONTENT: &[(PieceKind, &str)] = &[
    (PieceKind::Content, "/content"),
    (PieceKind::Finish, "/../finish_reason"),
];

pub const PIECES: DialectTables = DialectTables {
    stream: &[
        PieceRule {
            when_type: None,
            items: "/choices/*/delta",
            lane: Lane::Content,
            parts: CHAT_CONTENT,
        },
        PieceRule {
            when_type: None,
            items: "/choices/*/delta/tool_calls/*",
            lane: Lane::Field("/index"),
            parts: CHAT_CALL,
        },
        PieceRule {
            when_type: None,
            items: "/choices/*/delta/function_call",
            lane: Lane::Fixed("function_call"),
            parts: CHAT_LEGACY_CALL,
        },
    ],
    buffered: &[
        PieceRule {
            when_type: None,
            items: "/choices/*/message",
            lane: Lane::Content,
            parts: CHAT_CONTENT,
        },
        PieceRule {
            when_type: None,
            items: "/choices/*/message/tool_calls/*",
            lane: Lane::Position,
            parts: CHAT_CALL,
        },
        PieceRule {
            when_type: None,
            items: "/choices/*/message/function_call",
            lane: Lane::Fixed("function_call"),
            parts: CHAT_LEGACY_CALL,
        },
    ],
};

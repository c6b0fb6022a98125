//! Where an MCP message's tool pieces sit, for the HTML report's lanes (see
//! [`crate::engine::dialect::pieces`]). A JSON body and an SSE event's data are both one
//! JSON-RPC message, so both tables are one: a `tools/call` request's name and arguments, a
//! result's `content` and `structuredContent`, in the content lane.

use crate::engine::dialect::pieces::{DialectTables, Lane, PieceKind, PieceRule};

const RULES: &[PieceRule] = &[PieceRule {
    when_type: None,
    items: "",
    lane: Lane::Content,
    parts: &[
        (PieceKind::Id, "/id"),
        (PieceKind::Name, "/params/name"),
        (PieceKind::Arguments, "/params/arguments"),
        (PieceKind::Content, "/result/content"),
        (PieceKind::Content, "/result/structuredContent"),
    ],
}];

pub const PIECES: DialectTables = DialectTables {
    stream: RULES,
    buffered: RULES,
};

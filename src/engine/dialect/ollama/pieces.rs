//! Where Ollama's tool-call pieces sit in its stream lines and buffered bodies, for the HTML
//! report's lanes (see [`crate::engine::dialect::pieces`]). A stream line and a buffered body
//! have the same shape (a `ChatResponse`), so both tables are one: `message.content` in the
//! content lane, each call of `message.tool_calls[]` in the lane of its position (a call arrives
//! whole, name and `arguments` object in one line), `done_reason` in the content lane.

use crate::engine::dialect::pieces::{DialectTables, Lane, PieceKind, PieceRule};

const RULES: &[PieceRule] = &[
    PieceRule {
        when_type: None,
        items: "",
        lane: Lane::Content,
        parts: &[
            (PieceKind::Content, "/message/content"),
            (PieceKind::Finish, "/done_reason"),
        ],
    },
    PieceRule {
        when_type: None,
        items: "/message/tool_calls/*",
        lane: Lane::Position,
        parts: &[
            (PieceKind::Id, "/id"),
            (PieceKind::Name, "/function/name"),
            (PieceKind::Arguments, "/function/arguments"),
        ],
    },
];

pub const PIECES: DialectTables = DialectTables {
    stream: RULES,
    buffered: RULES,
};

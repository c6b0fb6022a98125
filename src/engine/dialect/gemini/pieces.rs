//! Where Gemini's tool-call pieces sit in its stream events and buffered bodies, for the HTML
//! report's lanes (see [`crate::engine::dialect::pieces`]). A stream event and a buffered body
//! have the same shape (a `GenerateContentResponse`), so both tables are one: text parts in the
//! content lane, each `functionCall` part in the lane of its part position (a call arrives
//! whole, name and `args` object in one part), the finish reason per candidate. Gemini 3 sends
//! each parallel call in its own event at part 0, so a stream's calls share lane 0 there (their
//! pieces carry their ids); the buffered view and the reassembled outcome number them apart.

use crate::engine::dialect::pieces::{DialectTables, Lane, PieceKind, PieceRule};

const RULES: &[PieceRule] = &[
    PieceRule {
        when_type: None,
        items: "/candidates/*/content/parts/*",
        lane: Lane::Content,
        parts: &[(PieceKind::Content, "/text")],
    },
    PieceRule {
        when_type: None,
        items: "/candidates/*/content/parts/*",
        lane: Lane::Position,
        parts: &[
            (PieceKind::Id, "/functionCall/id"),
            (PieceKind::Name, "/functionCall/name"),
            (PieceKind::Arguments, "/functionCall/args"),
        ],
    },
    PieceRule {
        when_type: None,
        items: "/candidates/*",
        lane: Lane::Content,
        parts: &[(PieceKind::Finish, "/finishReason")],
    },
];

pub const PIECES: DialectTables = DialectTables {
    stream: RULES,
    buffered: RULES,
};

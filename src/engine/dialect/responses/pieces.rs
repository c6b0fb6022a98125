//! Where the Responses API's tool-call pieces sit in its stream events and buffered bodies,
//! for the HTML report's lanes (see [`crate::engine::dialect::pieces`]).

use crate::engine::dialect::pieces::{DialectTables, Lane, PieceKind, PieceRule};

pub const PIECES: DialectTables = DialectTables {
    stream: &[
        PieceRule {
            when_type: Some("response.output_text.delta"),
            items: "",
            lane: Lane::Content,
            parts: &[(PieceKind::Content, "/delta")],
        },
        PieceRule {
            when_type: Some("response.output_item.added"),
            items: "",
            lane: Lane::Field("/output_index"),
            parts: &[
                (PieceKind::Id, "/item/call_id"),
                (PieceKind::Name, "/item/name"),
                (PieceKind::Arguments, "/item/arguments"),
            ],
        },
        PieceRule {
            when_type: Some("response.function_call_arguments.delta"),
            items: "",
            lane: Lane::Field("/output_index"),
            parts: &[(PieceKind::Arguments, "/delta")],
        },
        PieceRule {
            when_type: Some("response.completed"),
            items: "",
            lane: Lane::Content,
            parts: &[(PieceKind::Finish, "/response/status")],
        },
    ],
    buffered: &[
        PieceRule {
            when_type: None,
            items: "/output/*/content/*",
            lane: Lane::Content,
            parts: &[(PieceKind::Content, "/text")],
        },
        PieceRule {
            when_type: None,
            items: "/output/*",
            lane: Lane::Position,
            parts: &[
                (PieceKind::Id, "/call_id"),
                (PieceKind::Name, "/name"),
                (PieceKind::Arguments, "/arguments"),
            ],
        },
    ],
};

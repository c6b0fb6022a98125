//! Where Anthropic Messages' tool-call pieces sit in its stream events and buffered bodies,
//! for the HTML report's lanes (see [`crate::engine::dialect::pieces`]).

use crate::engine::dialect::pieces::{DialectTables, Lane, PieceKind, PieceRule};

pub const PIECES: DialectTables = DialectTables {
    stream: &[
        PieceRule {
            when_type: Some("content_block_start"),
            items: "",
            lane: Lane::Field("/index"),
            parts: &[
                (PieceKind::Id, "/content_block/id"),
                (PieceKind::Name, "/content_block/name"),
            ],
        },
        PieceRule {
            when_type: Some("content_block_delta"),
            items: "",
            lane: Lane::Content,
            parts: &[(PieceKind::Content, "/delta/text")],
        },
        PieceRule {
            when_type: Some("content_block_delta"),
            items: "",
            lane: Lane::Field("/index"),
            parts: &[(PieceKind::Arguments, "/delta/partial_json")],
        },
        PieceRule {
            when_type: Some("message_delta"),
            items: "",
            lane: Lane::Content,
            parts: &[(PieceKind::Finish, "/delta/stop_reason")],
        },
    ],
    buffered: &[
        PieceRule {
            when_type: None,
            items: "/content/*",
            lane: Lane::Content,
            parts: &[(PieceKind::Content, "/text")],
        },
        PieceRule {
            when_type: None,
            items: "/content/*",
            lane: Lane::Position,
            parts: &[
                (PieceKind::Id, "/id"),
                (PieceKind::Name, "/name"),
                (PieceKind::Arguments, "/input"),
            ],
        },
        PieceRule {
            when_type: None,
            items: "",
            lane: Lane::Content,
            parts: &[(PieceKind::Finish, "/stop_reason")],
        },
    ],
};

//! Where Bedrock Converse's tool-call pieces sit, for the HTML report's lanes (see
//! [`crate::engine::dialect::pieces`]). A stream event is one event-stream message's JSON
//! payload, its `:event-type` not in it: the pieces are told apart by their members (a
//! `contentBlockStart`'s `start.toolUse` id and name, a `contentBlockDelta`'s `delta.toolUse.input`
//! fragment or `delta.text`, a `messageStop`'s `stopReason`), the lane by `contentBlockIndex`. A
//! buffered body's blocks are `output.message.content[]`, laned by position.

use crate::engine::dialect::pieces::{DialectTables, Lane, PieceKind, PieceRule};

const STREAM: &[PieceRule] = &[
    PieceRule {
        when_type: None,
        items: "",
        lane: Lane::Content,
        parts: &[
            (PieceKind::Content, "/delta/text"),
            (PieceKind::Finish, "/stopReason"),
        ],
    },
    PieceRule {
        when_type: None,
        items: "",
        lane: Lane::Field("/contentBlockIndex"),
        parts: &[
            (PieceKind::Id, "/start/toolUse/toolUseId"),
            (PieceKind::Name, "/start/toolUse/name"),
            (PieceKind::Arguments, "/delta/toolUse/input"),
        ],
    },
];

const BUFFERED: &[PieceRule] = &[
    PieceRule {
        when_type: None,
        items: "/output/message/content/*",
        lane: Lane::Content,
        parts: &[(PieceKind::Content, "/text")],
    },
    PieceRule {
        when_type: None,
        items: "/output/message/content/*",
        lane: Lane::Position,
        parts: &[
            (PieceKind::Id, "/toolUse/toolUseId"),
            (PieceKind::Name, "/toolUse/name"),
            (PieceKind::Arguments, "/toolUse/input"),
        ],
    },
    PieceRule {
        when_type: None,
        items: "",
        lane: Lane::Content,
        parts: &[(PieceKind::Finish, "/stopReason")],
    },
];

pub const PIECES: DialectTables = DialectTables {
    stream: STREAM,
    buffered: BUFFERED,
};

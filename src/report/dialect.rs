//! Where tool-call pieces sit in each dialect's documents, as data: the report's only
//! dialect-specific knowledge.
//!
//! Input: the engine's [`Dialect`] a recording was judged as (its `dialect` field, else its
//! path's). Output: the [`DialectTables`] whose [`PieceRule`]s tell [`super::pieces`] which JSON
//! pointers of a stream event (or of a buffered body) hold content, a call id, a function name or
//! an argument piece, and which value names the lane (the tool-call index). Supporting a new
//! dialect in the report means adding one table and one arm to [`tables`]; no code path changes.

use crate::engine::Dialect;

/// What a piece of a fragment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PieceKind {
    Content,
    Id,
    Name,
    Arguments,
    Finish,
}

/// Which lane a matched item belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// The text-content lane.
    Content,
    /// The tool-call lane named by the integer at this pointer, relative to the matched item.
    Field(&'static str),
    /// The tool-call lane named by the matched item's position in its array (buffered bodies).
    Position,
    /// One fixed tool-call lane: a shape with one call and no index (Chat's legacy
    /// `function_call`).
    Fixed(&'static str),
}

/// One place pieces are found.
#[derive(Debug, Clone, Copy)]
pub struct PieceRule {
    /// Only documents whose top-level `type` equals this (event-typed dialects); `None`: all.
    pub when_type: Option<&'static str>,
    /// A JSON pointer to the items; `*` matches every element of an array. `""` is the root.
    pub items: &'static str,
    pub lane: Lane,
    /// `(kind, pointer relative to the item)` of every piece an item may hold.
    pub parts: &'static [(PieceKind, &'static str)],
}

/// One dialect's tables.
#[derive(Debug, Clone, Copy)]
pub struct DialectTables {
    /// Rules for one stream event's data payload.
    pub stream: &'static [PieceRule],
    /// Rules for a whole buffered body.
    pub buffered: &'static [PieceRule],
}

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

/// The tables of the dialect an exchange was judged as.
pub fn tables(dialect: Dialect) -> &'static DialectTables {
    match dialect {
        Dialect::Chat => &CHAT,
        Dialect::Responses => &RESPONSES,
        Dialect::Anthropic => &ANTHROPIC,
    }
}

const CHAT: DialectTables = DialectTables {
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

const RESPONSES: DialectTables = DialectTables {
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

const ANTHROPIC: DialectTables = DialectTables {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anthropic_tool_use_pieces_are_found_by_block_index() {
        let pieces = |doc: &str, rules| {
            let doc: serde_json::Value = serde_json::from_str(doc).expect("json");
            super::super::pieces::pieces_of(&doc, rules)
                .into_iter()
                .map(|p| (p.lane, p.kind, p.text))
                .collect::<Vec<_>>()
        };
        let anthropic = tables(Dialect::Anthropic);
        let start = r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}"#;
        assert_eq!(
            pieces(start, anthropic.stream),
            vec![
                ("1".to_owned(), PieceKind::Id, "toolu_1".to_owned()),
                ("1".to_owned(), PieceKind::Name, "get_weather".to_owned()),
            ]
        );
        let delta = r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"lo"}}"#;
        assert_eq!(
            pieces(delta, anthropic.stream),
            vec![("1".to_owned(), PieceKind::Arguments, "{\"lo".to_owned())]
        );
        let buffered = r#"{"content":[{"type":"text","text":"Hi"},{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}],"stop_reason":"tool_use"}"#;
        let found = pieces(buffered, anthropic.buffered);
        assert!(found.contains(&(
            "1".to_owned(),
            PieceKind::Arguments,
            r#"{"a":1}"#.to_owned()
        )));
        assert!(found.contains(&(
            "content".to_owned(),
            PieceKind::Finish,
            "tool_use".to_owned()
        )));
    }
}

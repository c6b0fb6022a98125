//! Where tool-call pieces sit in each dialect's documents, as data: the report's only
//! dialect-specific knowledge.
//!
//! Input: a request path. Output: the [`Dialect`] whose [`PieceRule`]s tell
//! [`super::pieces`] which JSON pointers of a stream event (or of a buffered body) hold content,
//! a call id, a function name or an argument piece, and which value names the lane (the tool-call
//! index). Supporting a new dialect in the report means adding one entry to [`DIALECTS`]; no code
//! path changes.

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
pub struct Dialect {
    pub name: &'static str,
    /// Request path suffixes that select this dialect (the first dialect matches otherwise).
    pub path_suffixes: &'static [&'static str],
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

/// Every dialect the report can show, Chat Completions first (the default).
pub const DIALECTS: &[Dialect] = &[
    Dialect {
        name: "chat_completions",
        path_suffixes: &["/chat/completions"],
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
    },
    Dialect {
        name: "responses",
        path_suffixes: &["/responses"],
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
    },
];

/// The dialect for a request path (query already stripped).
pub fn for_path(path: &str) -> &'static Dialect {
    let path = path.trim_end_matches('/');
    DIALECTS
        .iter()
        .find(|d| d.path_suffixes.iter().any(|s| path.ends_with(s)))
        .unwrap_or(&DIALECTS[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_pick_dialects() {
        assert_eq!(for_path("/v1/chat/completions").name, "chat_completions");
        assert_eq!(for_path("/openai/v1/responses/").name, "responses");
        assert_eq!(for_path("/elsewhere").name, "chat_completions");
    }
}

//! Where tool-call pieces sit in each dialect's documents, as data: the report asks the
//! dialect for its tables (the report holds no dialect-specific knowledge).
//!
//! Input: the engine's [`Dialect`] a recording was judged as (its `dialect` field, else its
//! path's). Output: the [`DialectTables`] whose [`PieceRule`]s tell [`super::pieces`] which JSON
//! pointers of a stream event (or of a buffered body) hold content, a call id, a function name or
//! an argument piece, and which value names the lane (the tool-call index). The tables are the
//! dialect's own (`engine::dialect::<name>::pieces`, reached through its registration): a new
//! dialect brings its table in its folder, and nothing here changes.

use crate::engine::Dialect;
pub use crate::engine::dialect::pieces::{DialectTables, Lane, PieceKind, PieceRule};

/// The tables of the dialect an exchange was judged as.
pub fn tables(dialect: Dialect) -> &'static DialectTables {
    dialect.pieces()
}

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

    #[test]
    fn gemini_function_call_pieces_are_found_by_part_position() {
        let gemini = tables(Dialect::Gemini);
        let doc: serde_json::Value = serde_json::from_str(
            r#"{"candidates":[{"content":{"parts":[{"text":"Checking."},{"functionCall":{"id":"call_1","name":"get_weather","args":{"city":"Paris"}}}]},"finishReason":"STOP","index":0}]}"#,
        )
        .expect("json");
        for rules in [gemini.stream, gemini.buffered] {
            let found: Vec<_> = super::super::pieces::pieces_of(&doc, rules)
                .into_iter()
                .map(|p| (p.lane, p.kind, p.text))
                .collect();
            assert_eq!(
                found,
                vec![
                    (
                        "content".to_owned(),
                        PieceKind::Content,
                        "Checking.".to_owned()
                    ),
                    ("1".to_owned(), PieceKind::Id, "call_1".to_owned()),
                    ("1".to_owned(), PieceKind::Name, "get_weather".to_owned()),
                    (
                        "1".to_owned(),
                        PieceKind::Arguments,
                        r#"{"city":"Paris"}"#.to_owned()
                    ),
                    ("content".to_owned(), PieceKind::Finish, "STOP".to_owned()),
                ]
            );
        }
    }
}

//! Custom (free-form) tool inputs, shared by the dialects that have them (the Responses API's
//! flat `custom` tools and Chat Completions' nested `type: "custom"` tools).
//!
//! Input: a declared `regex` grammar's definition, then the `input` string a call carried.
//! Output: the compiled grammar (anchored to the whole input, bounded in size) and what, if
//! anything, is wrong with an input; each dialect maps that onto its own rule id. `lark`
//! grammars are out of scope: they are never compiled, and inputs for them are not judged.

use serde_json::Value;

/// The grammar size bound: a client cannot make tooltap build a huge automaton.
pub const MAX_GRAMMAR: usize = 1 << 20;

/// Compiles a `regex` grammar so that it must match the whole input; the error says why not.
pub fn compile_regex_grammar(definition: &str) -> Result<regex::Regex, String> {
    regex::RegexBuilder::new(&format!("^(?:{definition})$"))
        .size_limit(MAX_GRAMMAR)
        .build()
        .map_err(|error| format!("the regex grammar does not compile: {error}"))
}

/// What is wrong with a custom tool's (string) input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputProblem {
    /// A regex-grammar tool's input does not match its grammar.
    GrammarMismatch,
    /// A text tool's input is a JSON object wrapping the payload (`{"input": ...}`), the shape a
    /// custom tool gets when a gateway turned it into a function tool.
    JsonWrapped,
}

/// Judges one input against its tool's grammar (`None`: free-form text, or a lark grammar).
pub fn judge_input(grammar: Option<&regex::Regex>, text: &str) -> Option<InputProblem> {
    match grammar {
        Some(grammar) => (!grammar.is_match(text)).then_some(InputProblem::GrammarMismatch),
        None => serde_json::from_str::<Value>(text)
            .is_ok_and(|value| value.is_object())
            .then_some(InputProblem::JsonWrapped),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammars_are_anchored_and_wrappers_are_seen() {
        let grammar = compile_regex_grammar("[a-z]+").expect("compiles");
        assert_eq!(judge_input(Some(&grammar), "abc"), None);
        assert_eq!(
            judge_input(Some(&grammar), "abc1"),
            Some(InputProblem::GrammarMismatch)
        );
        assert_eq!(
            judge_input(None, r#"{"input":"*** Begin Patch"}"#),
            Some(InputProblem::JsonWrapped)
        );
        assert_eq!(judge_input(None, "*** Begin Patch"), None);
        assert!(compile_regex_grammar("(").is_err());
    }
}

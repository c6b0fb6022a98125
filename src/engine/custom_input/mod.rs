//! Custom (free-form) tool inputs, shared by the dialects that have them (the Responses API's
//! flat `custom` tools and Chat Completions' nested `type: "custom"` tools).
//!
//! Input: the `regex` grammar definitions a `tools` array declares, then the `input` string a
//! call carried. Output: the compiled grammars (anchored to the whole input, each bounded in
//! size, all of one array bounded together by `inspect.grammar_compile_bytes` and weighed by the
//! heap they really hold, so that the schema cache can count them), and what, if anything, is
//! wrong with an input; each dialect maps that onto its own rule id. Grammars are compiled by
//! [`crate::engine::schema::CompiledTools`], once per distinct definition of a `tools` array,
//! and cached with it: never per exchange, never on the inspector's thread. `lark` grammars are
//! out of scope: they are never compiled, and inputs for them are not judged.

use std::collections::HashMap;
use std::sync::Arc;

use regex_automata::meta;
use serde_json::Value;

/// The size bound of one grammar's automaton: a client cannot make tooltap build a huge one.
pub const MAX_GRAMMAR: usize = 1 << 20;
/// What a compiled grammar holds besides what its engine reports (its strategy, pools, the
/// `Arc`s): measured as resident memory per compiled grammar minus its `memory_usage`.
const GRAMMAR_OVERHEAD: usize = 8 * 1024;
/// The lazy DFA's transition cache for one match (made for the match, dropped after it).
const MATCH_CACHE: usize = 256 * 1024;

/// One compiled `regex` grammar.
#[derive(Debug)]
pub struct Grammar {
    regex: meta::Regex,
    weight: usize,
}

impl Grammar {
    /// Whether `text` matches the whole grammar. The match gets a cache of its own, so a cached
    /// grammar never grows past the bytes it was weighed at.
    pub fn is_match(&self, text: &str) -> bool {
        let mut cache = self.regex.create_cache();
        self.regex
            .is_match_with(&mut cache, &regex_automata::Input::new(text))
    }

    /// The estimated heap bytes this grammar holds.
    pub fn weight(&self) -> usize {
        self.weight
    }
}

/// A declared `regex` grammar as its array's compilation left it.
#[derive(Debug, Clone)]
pub enum RegexGrammar {
    Compiled(Arc<Grammar>),
    /// The definition does not compile; the human reason (a request-stage violation).
    Invalid(String),
    /// Not compiled: past `inspect.grammar_compile_bytes` for its `tools` array, or past
    /// [`MAX_GRAMMAR`]. Inputs for it are not judged; the exchange ends `schema_budget`.
    OverBudget,
}

/// The grammars of one `tools` array by definition, each compiled once.
#[derive(Debug, Default)]
pub struct Grammars {
    by_definition: HashMap<String, RegexGrammar>,
    weight: usize,
}

impl Grammars {
    /// Compiles every distinct definition in `definitions`, in order, while the array's
    /// `max_bytes` last (each compile is charged what it holds, a failed one what it may have
    /// built, at least the definition's length); the rest are [`RegexGrammar::OverBudget`].
    pub fn compile<'a>(definitions: impl Iterator<Item = &'a str>, max_bytes: usize) -> Grammars {
        let mut grammars = Grammars::default();
        let mut left = max_bytes;
        for definition in definitions {
            if grammars.by_definition.contains_key(definition) {
                continue;
            }
            let (grammar, cost) = compile_regex_grammar(definition, left);
            left = left.saturating_sub(cost);
            if let RegexGrammar::Compiled(compiled) = &grammar {
                grammars.weight = grammars.weight.saturating_add(compiled.weight);
            }
            grammars
                .by_definition
                .insert(definition.to_owned(), grammar);
        }
        grammars
    }

    /// The grammar compiled for `definition`; one the array did not declare is over budget
    /// (a stand-in array, built without compiling, declares none).
    pub fn get(&self, definition: &str) -> RegexGrammar {
        self.by_definition
            .get(definition)
            .cloned()
            .unwrap_or(RegexGrammar::OverBudget)
    }

    /// Whether any grammar was compiled: matching one costs in proportion to its automaton.
    pub fn any(&self) -> bool {
        self.by_definition
            .values()
            .any(|grammar| matches!(grammar, RegexGrammar::Compiled(_)))
    }

    /// The estimated heap bytes all compiled grammars hold.
    pub fn weight(&self) -> usize {
        self.weight
    }
}

/// The `regex` definition of one declared custom tool, loosely read (the dialect judges the
/// shape): Chat nests it (`custom.format.grammar`), the Responses API's is flat (`format`).
pub fn regex_definition(tool: &Value, nested: bool) -> Option<&str> {
    if tool.get("type").and_then(Value::as_str) != Some("custom") {
        return None;
    }
    let grammar = if nested {
        tool.get("custom")?.get("format")?.get("grammar")?
    } else {
        tool.get("format")?
    };
    (grammar.get("syntax").and_then(Value::as_str) == Some("regex"))
        .then(|| grammar.get("definition")?.as_str())
        .flatten()
}

/// Compiles a `regex` grammar so that it must match the whole input, its automaton at most
/// `left` bytes (and [`MAX_GRAMMAR`]); also what the attempt cost against the array's bound.
fn compile_regex_grammar(definition: &str, left: usize) -> (RegexGrammar, usize) {
    let floor = definition.len().saturating_add(GRAMMAR_OVERHEAD);
    if left < floor {
        return (RegexGrammar::OverBudget, 0);
    }
    let limit = (left - GRAMMAR_OVERHEAD).min(MAX_GRAMMAR);
    let config = meta::Config::new()
        .nfa_size_limit(Some(limit))
        .onepass_size_limit(Some(limit))
        .hybrid_cache_capacity(MATCH_CACHE)
        .dfa(false);
    match meta::Builder::new()
        .configure(config)
        .build(&format!("^(?:{definition})$"))
    {
        Ok(regex) => {
            let weight = regex.memory_usage().max(definition.len()) + GRAMMAR_OVERHEAD;
            let grammar = Grammar { regex, weight };
            (RegexGrammar::Compiled(Arc::new(grammar)), weight)
        }
        // The size bound is tooltap's, not the client's fault: not a violation.
        Err(error) if error.size_limit().is_some() => (RegexGrammar::OverBudget, limit + floor),
        Err(error) => (
            RegexGrammar::Invalid(format!("the regex grammar does not compile: {error}")),
            floor,
        ),
    }
}

/// What is wrong with a custom tool's (string) input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputProblem {
    /// A regex-grammar tool's input does not match its grammar.
    GrammarMismatch,
    /// A text tool's input is a JSON object wrapping the payload (`{"input": ...}`), the shape a
    /// custom tool gets when a gateway turned it into a function tool.
    JsonWrapped,
    /// Not judged: the tool's grammar was not compiled (a bound, see
    /// [`RegexGrammar::OverBudget`]); the caller counts a schema-budget hit.
    GrammarOverBudget,
}

/// Judges one input against its tool's grammar (`None`: free-form text, a lark grammar, or a
/// regex one that does not compile).
pub fn judge_input(grammar: Option<&RegexGrammar>, text: &str) -> Option<InputProblem> {
    match grammar {
        Some(RegexGrammar::Compiled(grammar)) => {
            (!grammar.is_match(text)).then_some(InputProblem::GrammarMismatch)
        }
        Some(RegexGrammar::OverBudget) => Some(InputProblem::GrammarOverBudget),
        Some(RegexGrammar::Invalid(_)) | None => serde_json::from_str::<Value>(text)
            .is_ok_and(|value| value.is_object())
            .then_some(InputProblem::JsonWrapped),
    }
}

#[cfg(test)]
mod tests;

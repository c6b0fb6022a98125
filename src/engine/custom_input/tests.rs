//! Grammars: anchored, judged, and bounded per `tools` array by the heap they hold.

use std::time::Instant;

use super::*;

fn one(definition: &str) -> RegexGrammar {
    Grammars::compile([definition].into_iter(), 8 << 20).get(definition)
}

#[test]
fn grammars_are_anchored_and_wrappers_are_seen() {
    let grammar = one("[a-z]+");
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
    assert!(matches!(one("("), RegexGrammar::Invalid(_)));
}

#[test]
fn thousands_of_tiny_grammars_stop_at_the_arrays_byte_bound() {
    // `\w{9}` is 5 bytes of text and half a megabyte of automaton (Unicode word classes).
    let definitions: Vec<String> = (0..2_000).map(|k| format!("\\w{{9}}{k}")).collect();
    let bound = 8 << 20;
    let started = Instant::now();
    let grammars = Grammars::compile(definitions.iter().map(String::as_str), bound);
    let took = started.elapsed();
    let compiled = definitions
        .iter()
        .filter(|d| matches!(grammars.get(d), RegexGrammar::Compiled(_)))
        .count();
    let over = definitions
        .iter()
        .filter(|d| matches!(grammars.get(d), RegexGrammar::OverBudget))
        .count();
    assert!((1..100).contains(&compiled), "{compiled} compiled");
    assert_eq!(compiled + over, definitions.len());
    assert!(grammars.weight() <= bound, "{} bytes", grammars.weight());
    assert!(took.as_secs() < 20, "{took:?}");
    // Tiny grammars are weighed too: the count is bounded by the same bytes.
    let tiny: Vec<String> = (0..5_000).map(|k| format!("a{k}")).collect();
    let grammars = Grammars::compile(tiny.iter().map(String::as_str), bound);
    let compiled = tiny
        .iter()
        .filter(|d| matches!(grammars.get(d), RegexGrammar::Compiled(_)))
        .count();
    assert!(compiled < 1_100, "{compiled}");
    // One definition repeated is compiled once.
    let same = Grammars::compile(std::iter::repeat_n("\\w{9}", 2_000), bound);
    assert!(matches!(same.get("\\w{9}"), RegexGrammar::Compiled(_)));
    assert!(same.weight() < 2 * MAX_GRAMMAR, "{}", same.weight());
}

#[test]
fn a_grammar_past_its_size_bound_is_over_budget_not_invalid() {
    assert!(matches!(one("\\w{1,200}"), RegexGrammar::OverBudget));
    assert_eq!(
        judge_input(Some(&RegexGrammar::OverBudget), "x"),
        Some(InputProblem::GrammarOverBudget)
    );
}

//! The verdict board: waits end when the asked exchanges are judged or the time is over, the
//! board and each exchange's violations stay within their bounds, and a dropped inspection is
//! never left pending.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::engine::{RuleId, Stage};

fn violation(rule: RuleId, severity: Severity, path: &str) -> Violation {
    Violation {
        rule,
        severity,
        stage: Stage::Complete,
        choice: Some(0),
        tool_call: Some(0),
        path: path.to_string(),
        seq: None,
        schema_path: None,
        detail: "d".repeat(2 * KEPT_TEXT),
    }
}

fn ids(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

#[test]
fn findings_keep_errors_first_and_count_what_they_cut() {
    let mut all =
        vec![violation(RuleId::ToolCallArgumentsSchema, Severity::Warning, "/w"); KEPT_VIOLATIONS];
    all.push(violation(
        RuleId::ToolCallArgumentsNotString,
        Severity::Error,
        "/e",
    ));
    let findings = Findings::kept(&all, 3);
    assert_eq!(findings.violations.len(), KEPT_VIOLATIONS);
    assert_eq!(
        findings.violations[0].rule,
        "tool_call.arguments_not_string"
    );
    assert_eq!(findings.violations[0].severity, "error");
    assert_eq!(
        findings.not_listed,
        3 + 1,
        "the engine's count and the board's cut"
    );
    assert!(
        findings.violations[0].detail.len() < 2 * KEPT_TEXT,
        "detail cut"
    );
}

#[tokio::test]
async fn a_wait_ends_when_the_exchange_is_judged() {
    let verdicts = Arc::new(Verdicts::default());
    let id: Arc<str> = Arc::from("x-1");
    verdicts.begin(&id);
    let judge = {
        let verdicts = Arc::clone(&verdicts);
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            let found = vec![violation(
                RuleId::ToolCallArgumentsSchema,
                Severity::Error,
                "/a",
            )];
            verdicts.finish("x-1", Some(Findings::kept(&found, 0)));
        })
    };
    let answers = tokio::time::timeout(
        Duration::from_secs(10),
        verdicts.wait(&ids(&["x-1", "other"]), Duration::from_secs(5)),
    )
    .await
    .expect("the wait ends on the finish, not its own limit");
    judge.await.expect("judge");
    match &answers[0].state {
        State::Judged(findings) => {
            assert_eq!(findings.violations[0].rule, "tool_call.arguments_schema")
        }
        other => panic!("judged expected, got {other:?}"),
    }
    assert_eq!(answers[1].state, State::Unknown, "never begun");
}

#[tokio::test(start_paused = true)]
async fn a_wait_for_a_pending_exchange_ends_at_its_limit() {
    let verdicts = Verdicts::default();
    verdicts.begin(&Arc::from("slow"));
    let started = tokio::time::Instant::now();
    let answers = verdicts
        .wait(&ids(&["slow"]), Duration::from_secs(600))
        .await;
    assert_eq!(answers[0].state, State::Pending);
    assert_eq!(started.elapsed(), MAX_WAIT, "the asked wait is capped");
}

#[test]
fn the_board_keeps_the_most_recent_exchanges() {
    let verdicts = Verdicts::default();
    for n in 0..=KEPT {
        verdicts.begin(&Arc::from(format!("e-{n}").as_str()));
    }
    let last = format!("e-{KEPT}");
    let states = verdicts.states(&ids(&["e-0", "e-1", &last]));
    assert_eq!(states[0].state, State::Unknown, "the oldest was pushed out");
    assert_eq!(states[1].state, State::Pending);
    assert_eq!(states[2].state, State::Pending);
    assert_eq!(verdicts.pushed_out(), 1);
    assert_eq!(verdicts.board.lock().expect("board").states.len(), KEPT);
}

#[test]
fn a_dropped_inspection_is_not_left_pending() {
    let verdicts = Arc::new(Verdicts::default());
    let dropped = FinishGuard::begin(Arc::clone(&verdicts), Arc::from("gone"));
    let judged = FinishGuard::begin(Arc::clone(&verdicts), Arc::from("clean"));
    drop(dropped);
    judged.judged(Some(Findings::default()));
    let states = verdicts.states(&ids(&["gone", "clean"]));
    assert_eq!(states[0].state, State::NotJudged);
    assert_eq!(states[1].state, State::Judged(Findings::default()));
}

#[test]
fn queries_parse_and_are_bounded() {
    let query = parse_query(Some("exchange=a-1&exchange=b-2&wait_ms=250")).expect("parses");
    assert_eq!(query.exchanges, ids(&["a-1", "b-2"]));
    assert_eq!(query.wait, Duration::from_millis(250));
    assert_eq!(parse_query(None).expect("empty").exchanges.len(), 0);
    assert!(parse_query(Some("wait_ms=soon")).is_err());
    assert!(parse_query(Some("cassette=x")).is_err());
    let many = vec!["exchange=e"; MAX_ASKED + 1].join("&");
    assert!(parse_query(Some(&many)).is_err());
}

#[test]
fn answers_serialize_with_their_state() {
    let answer = Answer {
        exchange: "x".into(),
        state: State::Judged(Findings::default()),
    };
    assert_eq!(
        serde_json::to_value(&answer).expect("json"),
        serde_json::json!({"exchange": "x", "state": "judged", "violations": [], "not_listed": 0})
    );
}

use std::path::PathBuf;

use serde_json::{Value, json};

use super::*;
use crate::record::format::{RequestPart, ResponsePart};
use crate::record::{Meta, RecordedBody};

fn recording(method: &str, path: &str, body: RecordedBody) -> Recording {
    Recording {
        path: PathBuf::from("x.jsonl"),
        meta: Meta {
            v: 1,
            id: "t1-1".into(),
            started: "2026-12-02T12:00:00Z".into(),
            route: "default".into(),
            upstream: "https://api.openai.com".into(),
            method: method.into(),
            path: path.into(),
            dialect: None,
            query: None,
            request: RequestPart {
                headers: vec![],
                body,
            },
            response: ResponsePart {
                status: 200,
                headers: vec![],
            },
            redacted: vec![],
            injected: Vec::new(),
            credential: None,
        },
        frames: vec![],
        end: None,
    }
}

fn chat(content: &str) -> Value {
    json!({"model": "m", "messages": [{"role": "user", "content": content}], "max_tokens": 5})
}

fn library(items: &[(&str, Value)]) -> Library {
    let mut library = Library::empty(MatchRules::default());
    for (name, body) in items {
        let body = RecordedBody::json(body);
        library.insert(
            (*name).into(),
            recording("POST", "/v1/chat/completions", body),
        );
    }
    library
}

fn ask(library: &Library, body: &Value) -> Result<String, Miss> {
    let bytes = body.to_string();
    library
        .next_for("POST", "/v1/chat/completions", bytes.as_bytes())
        .map(|entry| entry.name.clone())
}

#[test]
fn repeated_requests_are_served_in_turn_and_cycle() {
    let library = library(&[("a-1", chat("hi")), ("a-2", chat("hi")), ("b", chat("bye"))]);
    let served: Vec<String> = (0..5)
        .map(|_| ask(&library, &chat("hi")).expect("hit"))
        .collect();
    assert_eq!(served, ["a-1", "a-2", "a-1", "a-2", "a-1"]);
    assert_eq!(ask(&library, &chat("bye")).expect("hit"), "b");
}

#[test]
fn a_miss_names_the_closest_recording_and_the_pointers_that_differ() {
    let library = library(&[
        ("near", chat("Weather in Paris.")),
        ("far", json!({"x": 1})),
    ]);
    let mut sent = chat("Weather in Oslo.");
    sent["max_tokens"] = json!(9);
    let miss = ask(&library, &sent).expect_err("miss");
    assert_eq!(miss.closest(), Some("near"));
    assert_eq!(
        miss.candidates[0].differing,
        ["/max_tokens", "/messages/0/content"]
    );
    assert_eq!(miss.candidates[1].name, "far");
    assert_eq!(miss.candidates.len(), 2);
}

fn turn(messages: &[Value]) -> Value {
    json!({"model": "m", "messages": messages})
}

#[test]
fn an_agent_loop_miss_names_the_same_turn_and_the_tool_call_id_pointers() {
    let user = json!({"role": "user", "content": "weather in Paris?"});
    let call = |id: &str| {
        json!({"role": "assistant", "tool_calls": [{"id": id, "type": "function",
            "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}}]})
    };
    let result = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "sunny"});
    let items = [
        // "a-..." sorts first: a name tie-break would pick the previous turn.
        ("a-turn-1", turn(std::slice::from_ref(&user))),
        (
            "b-turn-2",
            turn(&[user.clone(), call("call_1"), result("call_1")]),
        ),
    ];
    let sent = turn(&[user.clone(), call("pyd_ai_9"), result("pyd_ai_9")]);
    let miss = ask(&library(&items), &sent).expect_err("strict misses");
    assert_eq!(miss.closest(), Some("b-turn-2"));
    assert_eq!(
        miss.candidates[0].differing,
        ["/messages/1/tool_calls/0/id", "/messages/2/tool_call_id"]
    );
    assert_eq!(miss.candidates[1].name, "a-turn-1");
    assert!(miss.loose_ids_would_match);

    let mut loose = Library::empty(MatchRules::default().with_tool_call_ids(ToolCallIds::Loose));
    for (name, body) in &items {
        let body = RecordedBody::json(body);
        loose.insert(
            (*name).into(),
            recording("POST", "/v1/chat/completions", body),
        );
    }
    assert_eq!(ask(&loose, &sent).expect("loose hits"), "b-turn-2");
}

#[test]
fn a_miss_on_the_path_says_so() {
    let library = library(&[("only", chat("hi"))]);
    let miss = library
        .next_for("POST", "/v1/completions", chat("hi").to_string().as_bytes())
        .expect_err("miss");
    assert_eq!(miss.closest(), Some("only"));
    assert_eq!(
        miss.candidates[0].differing,
        ["path (recorded /v1/chat/completions)"]
    );
    let empty = Library::empty(MatchRules::default());
    assert_eq!(ask(&empty, &chat("hi")).expect_err("miss").closest(), None);
}

#[test]
fn a_recording_without_its_request_body_matches_any_body_on_its_path() {
    let mut library = library(&[("exact", chat("hi"))]);
    library.insert(
        "uncaptured".into(),
        recording("POST", "/v1/chat/completions", RecordedBody::Missing),
    );
    assert_eq!(ask(&library, &chat("hi")).expect("hit"), "exact");
    assert_eq!(ask(&library, &chat("other")).expect("hit"), "uncaptured");
}

#[test]
fn natural_order_compares_digit_runs_as_numbers() {
    let mut names = vec!["t-10.jsonl", "t-9.jsonl", "a/t-2.jsonl", "t-010b", "t-010a"];
    names.sort_by(|a, b| natural_cmp(a, b));
    assert_eq!(
        names,
        ["a/t-2.jsonl", "t-9.jsonl", "t-10.jsonl", "t-010a", "t-010b"]
    );
}

#[test]
fn loading_walks_subdirectories_and_a_bad_file_names_its_line() {
    let dir = crate::test_dir::TestDir::new("lib");
    std::fs::create_dir_all(dir.join("sub/.hidden")).expect("mkdir");
    let meta = json!({"type": "exchange", "v": 1, "id": "i", "started": "s", "route": "r",
        "upstream": "u", "method": "POST", "path": "/p",
        "request": {"headers": [], "body": {"json": {"a": 1}}},
        "response": {"status": 200, "headers": []}});
    let good = format!("{meta}\n{{\"type\":\"frame\",\"seq\":0,\"t_us\":1,\"text\":\"x\"}}\n");
    std::fs::write(dir.join("sub/one.jsonl"), &good).expect("write");
    std::fs::write(dir.join("sub/.hidden/skip.jsonl"), "garbage\n").expect("write");
    std::fs::write(dir.join("notes.txt"), "ignored").expect("write");
    let library = Library::load(&dir, MatchRules::default()).expect("loads");
    assert_eq!(library.len(), 1);
    assert_eq!(
        library
            .next_for("POST", "/p", br#"{"a":1}"#)
            .expect("hit")
            .name,
        "sub/one.jsonl"
    );

    let bad = format!("{good}{{\"type\":\"frame\",\"seq\":5,\"t_us\":1,\"text\":\"x\"}}\n");
    std::fs::write(dir.join("two.jsonl"), bad).expect("write");
    let error = Library::load(&dir, MatchRules::default()).expect_err("bad file");
    let message = error.to_string();
    assert!(message.contains("two.jsonl:3:"), "{message}");
}

#[test]
fn the_query_selects_the_recording_and_its_credentials_do_not() {
    let path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent";
    let body = RecordedBody::json(&json!({"contents": []}));
    let mut library = Library::empty(MatchRules::default());
    let mut sse = recording("POST", path, body.clone());
    sse.meta.query = Some("alt=sse&key=[REDACTED]".into());
    library.insert("sse".into(), sse);
    library.insert("array".into(), recording("POST", path, body));
    let ask = |query: Option<&str>| {
        library
            .next_for_sent(Sent {
                method: "POST",
                path,
                query,
                body: br#"{"contents":[]}"#,
                as_recorded: None,
                cassette: None,
            })
            .map(|entry| entry.name.clone())
    };
    for _ in 0..2 {
        assert_eq!(ask(Some("key=AIzaPlanted&alt=sse")).expect("hit"), "sse");
        assert_eq!(ask(Some("key=AIzaPlanted")).expect("hit"), "array");
        assert_eq!(ask(None).expect("hit"), "array");
    }
    let miss = ask(Some("alt=json&key=AIzaPlanted")).expect_err("miss");
    assert_eq!(miss.candidates[0].differing, [r#"query (recorded "")"#]);
    assert_eq!(
        miss.candidates[1].differing,
        [r#"query (recorded "alt=sse")"#]
    );
}

/// A library of `(name, cassette, user message)` recordings.
fn cassettes(items: &[(&str, Option<&str>, &str)]) -> Library {
    let mut library = Library::empty(MatchRules::default());
    for (name, cassette, content) in items {
        let mut recorded = recording(
            "POST",
            "/v1/chat/completions",
            RecordedBody::json(&chat(content)),
        );
        if let Some(cassette) = cassette {
            let header = ("X-Tooltap-Cassette".to_owned(), (*cassette).to_owned());
            recorded.meta.request.headers.push(header);
        }
        library.insert((*name).into(), recorded);
    }
    library
}

fn ask_in(library: &Library, cassette: Option<&str>, content: &str) -> Result<String, Miss> {
    let body = chat(content).to_string();
    library
        .next_for_sent(Sent {
            method: "POST",
            path: "/v1/chat/completions",
            query: None,
            body: body.as_bytes(),
            as_recorded: None,
            cassette,
        })
        .map(|entry| entry.name.clone())
}

#[test]
fn a_cassette_cycles_its_own_recordings_in_order_and_a_reset_starts_it_over() {
    let library = cassettes(&[
        ("a/1.jsonl", Some("t.py::a"), "hi"),
        ("a/2.jsonl", Some("t.py::a"), "hi"),
        ("b/1.jsonl", Some("t.py::b"), "hi"),
        ("plain.jsonl", None, "hi"),
    ]);
    let a = Some("t.py::a");
    assert_eq!(ask_in(&library, a, "hi").expect("hit"), "a/1.jsonl");
    assert_eq!(ask_in(&library, a, "hi").expect("hit"), "a/2.jsonl");
    assert_eq!(ask_in(&library, a, "hi").expect("cycles"), "a/1.jsonl");
    // Another cassette's turns and the unscoped ones are their own.
    assert_eq!(
        ask_in(&library, Some("t.py::b"), "hi").expect("hit"),
        "b/1.jsonl"
    );
    assert_eq!(ask_in(&library, None, "hi").expect("hit"), "a/1.jsonl");
    assert_eq!(library.reset(a), 2);
    assert_eq!(ask_in(&library, a, "hi").expect("hit"), "a/1.jsonl");
    assert_eq!(
        ask_in(&library, None, "hi").expect("not reset"),
        "a/2.jsonl"
    );
    assert_eq!(library.reset(Some("t.py::unknown")), 0);
    assert_eq!(library.reset(None), 4);
    assert_eq!(ask_in(&library, a, "hi").expect("hit"), "a/1.jsonl");
    assert_eq!(ask_in(&library, None, "hi").expect("hit"), "a/1.jsonl");
    // Matching is never widened: an unknown cassette misses even a recorded request.
    let miss = ask_in(&library, Some("t.py::c"), "hi").expect_err("miss");
    assert!(miss.cassette_empty);
    assert_eq!(miss.closest(), Some("a/1.jsonl"));
}

#[test]
fn usage_counts_hits_misses_and_unused_recordings_by_cassette() {
    let mut library = cassettes(&[
        ("a/1.jsonl", Some("t.py::a"), "hi"),
        ("a/2.jsonl", Some("t.py::a"), "bye"),
        ("b/1.jsonl", Some("t.py::b"), "hi"),
        ("plain.jsonl", None, "other"),
    ]);
    ask_in(&library, Some("t.py::a"), "hi").expect("hit");
    ask_in(&library, Some("t.py::a"), "hi").expect("hit");
    ask_in(&library, Some("t.py::a"), "nope").expect_err("miss");
    ask_in(&library, None, "nope").expect_err("miss");
    ask_in(&library, Some("t.py::new"), "hi").expect_err("miss");
    let captured = recording(
        "POST",
        "/v1/chat/completions",
        RecordedBody::json(&chat("x")),
    );
    library.insert_captured("captured/t1-9".into(), captured);
    let usage = library.usage();
    assert_eq!(
        (usage.recordings, usage.hits, usage.misses, usage.unused),
        (5, 2, 3, 3)
    );
    type Row<'a> = (Option<&'a str>, usize, u64, u64, Vec<&'a str>);
    let summary: Vec<Row> = usage
        .cassettes
        .iter()
        .map(|c| {
            let unused = c.unused.iter().map(String::as_str).collect();
            (
                c.cassette.as_deref(),
                c.recordings,
                c.hits,
                c.misses,
                unused,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (None, 2, 0, 1, vec!["plain.jsonl"]),
            (Some("t.py::a"), 2, 2, 1, vec!["a/2.jsonl"]),
            (Some("t.py::b"), 1, 0, 0, vec!["b/1.jsonl"]),
            (Some("t.py::new"), 0, 0, 1, vec![]),
        ]
    );
}

#[test]
fn misses_of_cassettes_without_recordings_are_bounded_by_name() {
    let library = cassettes(&[("a.jsonl", Some("t.py::a"), "hi")]);
    let extra = 50;
    for n in 0..MAX_UNKNOWN_CASSETTES + extra {
        ask_in(&library, Some(&format!("t.py::new_{n}")), "hi").expect_err("miss");
    }
    ask_in(&library, Some("t.py::new_0"), "hi").expect_err("miss");
    let usage = library.usage();
    // The table holds the recordings' cassettes and the first names; the rest are counted.
    assert_eq!(usage.cassettes.len(), 1 + MAX_UNKNOWN_CASSETTES);
    assert_eq!(usage.unknown_cassettes_left_out, extra as u64);
    assert_eq!(usage.misses, (MAX_UNKNOWN_CASSETTES + extra + 1) as u64);
}

#[test]
fn a_vcrpy_cassette_without_the_header_answers_the_test_pytest_recording_wrote_it_for() {
    let library = cassettes(&[
        ("test_weather/test_loop.yaml#t1", None, "hi"),
        ("test_weather/test_loop.yaml#t2", None, "hi"),
        ("test_other/test_b.yml", None, "hi"),
        ("tagged/1.jsonl", Some("tests/test_tagged.py::test_t"), "hi"),
        ("test_tagged/test_t.yaml", None, "hi"),
        ("plain/x.jsonl", None, "hi"),
    ]);
    let test_loop = Some("tests/test_weather.py::test_loop");
    assert_eq!(
        ask_in(&library, test_loop, "hi").expect("hit"),
        "test_weather/test_loop.yaml#t1"
    );
    assert_eq!(
        ask_in(&library, test_loop, "hi").expect("hit"),
        "test_weather/test_loop.yaml#t2"
    );
    let other = Some("tests/test_other.py::test_b");
    assert_eq!(
        ask_in(&library, other, "hi").expect("hit"),
        "test_other/test_b.yml"
    );
    // Recordings that carry the name win over the file.
    let tagged = Some("tests/test_tagged.py::test_t");
    assert_eq!(
        ask_in(&library, tagged, "hi").expect("hit"),
        "tagged/1.jsonl"
    );
    assert_eq!(
        ask_in(&library, tagged, "hi").expect("hit"),
        "tagged/1.jsonl"
    );
    assert_eq!(library.reset(test_loop), 2);
    assert_eq!(
        ask_in(&library, test_loop, "hi").expect("hit"),
        "test_weather/test_loop.yaml#t1"
    );
    let miss = ask_in(&library, test_loop, "other").expect_err("miss");
    assert!(!miss.cassette_empty);
    assert_eq!(miss.closest(), Some("test_weather/test_loop.yaml#t1"));
    let usage = library.usage();
    let test_loop_misses = usage
        .cassettes
        .iter()
        .find(|c| c.cassette.as_deref() == test_loop)
        .map(|c| (c.recordings, c.misses));
    assert_eq!(test_loop_misses, Some((0, 1)));
}

//! `tooltap check` on hostile inputs: a device that never ends and files over
//! `--max-input-bytes` are reported unreadable (exit 2) without being read to the end, and
//! control characters from a recording never reach the terminal raw.

use std::time::{Duration, Instant};

use super::run;
use crate::support::TempDir;

#[test]
fn dev_zero_and_oversized_inputs_are_refused_quickly_with_a_clear_error() {
    let started = Instant::now();
    let (code, _, err) = run(&["/dev/zero"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("/dev/zero: not a regular file"), "{err}");

    let dir = TempDir::new("bounds");
    let big = dir.join("big.jsonl");
    std::fs::write(&big, vec![b'x'; 4096]).expect("write");
    let (code, _, err) = run(&["--max-input-bytes", "1024", dir.to_str().expect("utf-8")]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("larger than 1024 bytes (--max-input-bytes)"),
        "{err}"
    );

    // A capture read through the same bound: /dev/zero stops after the limit.
    let response = dir.join("response.json");
    std::fs::write(&response, "{}").expect("write");
    let (code, _, err) = run(&[
        "--max-input-bytes",
        "1048576",
        "--request",
        "/dev/zero",
        "--response",
        response.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("/dev/zero: larger than 1048576 bytes"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn control_characters_from_a_recording_are_escaped_in_the_report() {
    let dir = TempDir::new("control");
    let request = dir.join("request.json");
    let response = dir.join("response.json");
    let evil = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{202e}";
    std::fs::write(
        &request,
        serde_json::json!({"model": "m", "messages": [], "tools": [{"type": "function",
            "function": {"name": "f", "parameters": {"type": "object"}}}]})
        .to_string(),
    )
    .expect("write");
    std::fs::write(
        &response,
        serde_json::json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0,
            "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
            "type": "function", "function": {"name": evil, "arguments": "{}"}}]},
            "finish_reason": "tool_calls"}]})
        .to_string(),
    )
    .expect("write");
    let (code, out, _) = run(&[
        "--request",
        request.to_str().expect("utf-8"),
        "--response",
        response.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("tool_call.name_undeclared"), "{out}");
    assert!(
        !out.chars().any(|c| c.is_control() && c != '\n'),
        "raw control characters reached the report: {out:?}"
    );
    assert!(!out.contains('\u{202e}'), "{out:?}");
    assert!(out.contains("\\u{1b}]0;pwned\\u{7}"), "{out}");
}

#[test]
fn a_violations_file_left_in_the_recordings_folder_is_not_read_as_a_recording() {
    // The old default put it at recordings/violations.jsonl; a folder walk skips it.
    let dir = TempDir::new("old-layout");
    std::fs::write(
        dir.join("violations.jsonl"),
        "{\"ts\":\"2026-01-01T00:00:00.000Z\",\"rule\":\"x\"}\n",
    )
    .expect("write");
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("recordings/examples/seed/required-stream.jsonl");
    std::fs::copy(&example, dir.join("t1-1.jsonl")).expect("copy an example recording");
    let (code, out, err) = run(&[dir.to_str().expect("utf-8")]);
    assert!(!err.contains("violations.jsonl"), "{err}");
    assert!(out.contains("checked 1 exchange(s)"), "{out}");
    assert_eq!(code, 0, "{err}");
}

//! The bundled examples (`recordings/examples/`) record the verdicts the engine gives them, so
//! `tooltap check` shows no "recorded live" mismatch under a failing example. After an intended
//! engine change: `TOOLTAP_BLESS=1 cargo test --test it check_cli::examples` rewrites the end lines.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::args;
use super::cases::s;
use tooltap::check;

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings/examples")
}

/// Every example's rejudged violations, by source file.
fn rejudged() -> BTreeMap<String, Value> {
    let dir = examples_dir();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = check::run_with_progress(
        &args(&[s(&dir), "--format", "json"]),
        &mut out,
        &mut err,
        false,
    );
    assert!(code <= 1, "{}", String::from_utf8_lossy(&err));
    let report: Value = serde_json::from_slice(&out).expect("json");
    report["exchanges"]
        .as_array()
        .expect("exchanges")
        .iter()
        .map(|e| {
            (
                e["source"].as_str().expect("source").to_string(),
                e["violations"].clone(),
            )
        })
        .collect()
}

#[test]
fn the_bundled_examples_record_the_engines_verdicts() {
    let bless = std::env::var("TOOLTAP_BLESS").is_ok_and(|v| v == "1");
    let judged = rejudged();
    assert!(judged.len() >= 7, "{judged:?}");
    let mut failing = 0;
    for (source, violations) in &judged {
        let text = std::fs::read_to_string(source).expect("read");
        let (body, last) = text
            .trim_end()
            .rsplit_once('\n')
            .expect("more than one line");
        let mut end: Value = serde_json::from_str(last).expect("json end line");
        assert_eq!(end["type"], "end", "{source}");
        if violations.as_array().is_some_and(|v| !v.is_empty()) {
            failing += 1;
        }
        if bless {
            // Only the end line is rewritten: the frames stay byte for byte.
            end["violations"] = violations.clone();
            std::fs::write(source, format!("{body}\n{end}\n")).expect("write");
        } else {
            assert_eq!(
                &end["violations"], violations,
                "{source}: the recorded verdicts are not the engine's (TOOLTAP_BLESS=1 rewrites them)"
            );
        }
    }
    assert!(failing >= 4, "the failure examples fail: {failing}");
}

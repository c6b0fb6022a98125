//! Framing invariance for the MCP conversation fixtures: each exchange's response body split
//! at any offset (two frames instead of one per event) gives the same verdicts, conversation
//! rules included, judged and settled through the store as `tooltap check` does
//! (`check::conversations`: each exchange's engine report, then the store settling them all in
//! order; only the split exchange is re-judged per cut). The body in one piece gives the fixture's
//! `expected.jsonl`. `seq` numbers frames, so it moves with the split and is not compared.
//!
//! Every body is cut at every offset, as the single-exchange fixtures are in `engine_splits`.

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};
use tooltap::check::conversations::{engine_report, settled_in_order};
use tooltap::engine::mcp_conversation::RULES;
use tooltap::engine::{EngineConfig, Report, SchemaCache};
use tooltap::interop::files::each_recording;
use tooltap::record::read::{RecordedFrame, Recording};

use super::{cases, expected, segment};
use crate::support::TempDir;

/// The fixture's recordings, each response body in one frame.
fn recordings(case: &std::path::Path) -> Vec<Recording> {
    let text = std::fs::read_to_string(case.join("conversation.json")).expect("conversation");
    let conversation: Vec<Value> = serde_json::from_str(&text).expect("conversation is JSON");
    let dir = TempDir::new("mcp-conversation-splits");
    let file = dir.join("segment-tconv-1.jsonl");
    std::fs::write(&file, segment(&conversation)).expect("segment written");
    let mut recordings = Vec::new();
    each_recording(&file, u64::MAX, &mut Vec::new(), |read| {
        recordings.push(read.expect("the fixture's recording reads"));
    });
    for recording in &mut recordings {
        let body = body(recording);
        recording.frames = framed(&[&body]);
    }
    recordings
}

fn body(recording: &Recording) -> Vec<u8> {
    recording
        .frames
        .iter()
        .flat_map(|frame| frame.bytes.iter().copied())
        .collect()
}

fn framed(pieces: &[&[u8]]) -> Vec<RecordedFrame> {
    pieces
        .iter()
        .filter(|piece| !piece.is_empty())
        .enumerate()
        .map(|(seq, piece)| RecordedFrame {
            seq: seq as u64,
            t_us: 1000 + seq as u64 * 100,
            bytes: Bytes::copy_from_slice(piece),
        })
        .collect()
}

/// The conversation rules' verdicts, as `expected.jsonl` lines without `seq`.
fn verdicts(recordings: &[Recording], reports: &[Report], engine: &EngineConfig) -> Vec<Value> {
    let state: BTreeSet<&str> = RULES.iter().map(|r| r.as_str()).collect();
    let mut lines: Vec<Value> = settled_in_order(recordings, reports, engine)
        .iter()
        .enumerate()
        .flat_map(|(k, found)| {
            found
                .iter()
                .filter(|v| state.contains(v.rule.as_str()))
                .map(move |v| {
                    json!({"exchange": k + 1, "rule": v.rule.as_str(), "severity": v.severity, "path": v.path})
                })
        })
        .collect();
    lines.sort_by_key(|line| (line["exchange"].as_u64(), line.to_string()));
    lines
}

#[test]
fn every_conversation_fixture_split_anywhere_gives_its_verdicts() {
    let engine = Arc::new(EngineConfig::default());
    let started = std::time::Instant::now();
    let (mut cuts, mut bodies) = (0usize, 0usize);
    for case in cases() {
        let name = case
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let mut recordings = recordings(&case);
        let cache = SchemaCache::default();
        let mut reports: Vec<Report> = recordings
            .iter()
            .map(|recording| engine_report(recording, &engine, &cache))
            .collect();
        let reference = verdicts(&recordings, &reports, &engine);
        let without_seq: Vec<Value> = expected(&case)
            .into_iter()
            .map(|mut line| {
                line.as_object_mut().map(|o| o.remove("seq"));
                line
            })
            .collect();
        assert_eq!(reference, without_seq, "{name}: in one piece");
        for k in 0..recordings.len() {
            let body = body(&recordings[k]);
            if body.is_empty() {
                continue;
            }
            let whole = (recordings[k].frames.clone(), reports[k].clone());
            bodies += 1;
            for cut in 0..=body.len() {
                recordings[k].frames = framed(&[&body[..cut], &body[cut..]]);
                reports[k] = engine_report(&recordings[k], &engine, &cache);
                let split = verdicts(&recordings, &reports, &engine);
                assert_eq!(
                    split,
                    reference,
                    "{name}: exchange {} split at {cut}",
                    k + 1
                );
                cuts += 1;
            }
            (recordings[k].frames, reports[k]) = whole;
        }
    }
    eprintln!(
        "{cuts} splits of {bodies} bodies in {:?}",
        started.elapsed()
    );
    assert!(cuts >= 6000, "only {cuts} splits");
}

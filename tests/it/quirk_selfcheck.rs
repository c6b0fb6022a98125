//! The quirk catalogue's self-check: for every quirk and every clean bundled example
//! (recordings/examples and the clean cases of tests/fixtures, in every dialect) it applies to,
//! buffered and streamed, the engine (judging the example's own dialect) finds exactly the
//! quirk's declared rule ids on the transformed exchange, and nothing on the untouched one; a
//! quirk never touches an example of another dialect. Also: docs/quirks.md lists exactly the
//! catalogue.

use crate::engine_support;
use crate::support::recording::response_header;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use tooltap::engine::{
    BodyEnd, Dialect, EngineConfig, Exchange, RequestParts, ResponseHead, RuleId, SchemaCache,
};
use tooltap::quirk::{self, QuirkId, RequestContext, Shape, TimedFrame};

struct Example {
    name: String,
    dialect: Dialect,
    /// The request path with its query (Gemini's stream-ness is in it).
    path: String,
    request: Vec<u8>,
    head: ResponseHead,
    frames: Vec<TimedFrame>,
}

fn recorded_examples() -> Vec<Example> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings/examples");
    let mut paths = Vec::new();
    for dir in std::fs::read_dir(&root).expect("recordings/examples") {
        let dir = dir.expect("entry").path();
        if dir.is_dir() {
            for file in std::fs::read_dir(&dir).expect("dir") {
                paths.push(file.expect("entry").path());
            }
        }
    }
    paths.sort();
    paths
        .iter()
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .map(|path| {
            let recording = tooltap::record::read::read_file(path).expect("readable");
            let header = |name: &str| response_header(&recording, name);
            Example {
                dialect: recording.meta.dialect(),
                path: recording.meta.target(),
                name: path
                    .strip_prefix(&root)
                    .expect("under root")
                    .display()
                    .to_string(),
                request: recording
                    .meta
                    .request
                    .body
                    .bytes()
                    .expect("request body")
                    .into_owned(),
                head: ResponseHead {
                    status: recording.meta.response.status,
                    content_type: header("content-type"),
                    content_encoding: header("content-encoding"),
                    headers: Vec::new(),
                },
                frames: recording
                    .frames
                    .iter()
                    .map(|f| TimedFrame {
                        t_us: f.t_us,
                        bytes: f.bytes.clone(),
                    })
                    .collect(),
            }
        })
        .collect()
}

fn fixture_examples() -> Vec<Example> {
    engine_support::load_all()
        .into_iter()
        // Event streams (Bedrock) have no quirks yet, and no quirk reads their binary frames.
        .filter(|f| !f.event_stream)
        .filter(|f| {
            ["pass_", "pair_", "seed_"]
                .iter()
                .any(|p| f.kind_name().starts_with(p))
        })
        .map(|fixture| Example {
            name: format!("fixture {}", fixture.name),
            dialect: fixture.dialect,
            path: fixture.path().to_owned(),
            frames: engine_support::natural_frames(&fixture)
                .iter()
                .enumerate()
                .map(|(i, bytes)| TimedFrame {
                    t_us: 1000 * i as u64,
                    bytes: Bytes::copy_from_slice(bytes),
                })
                .collect(),
            request: fixture.request.clone(),
            head: fixture.head.clone(),
        })
        .collect()
}

fn rules_found(example: &Example, frames: &[TimedFrame]) -> BTreeSet<RuleId> {
    let config = Arc::new(EngineConfig::default());
    let cache = SchemaCache::default();
    let request = RequestParts {
        body: &example.request,
        path: Some(&example.path),
        ..RequestParts::default()
    };
    let mut exchange = Exchange::start(&config, &cache, example.dialect, request);
    exchange.response_head(example.head.clone());
    for frame in frames {
        exchange.feed(&frame.bytes);
    }
    let report = exchange.finish(BodyEnd::Complete);
    report.violations.iter().map(|v| v.rule).collect()
}

#[test]
fn every_quirk_is_detected_by_exactly_its_declared_rules() {
    let mut examples = recorded_examples();
    examples.extend(fixture_examples());
    let mut covered: BTreeMap<QuirkId, BTreeSet<&'static str>> = BTreeMap::new();
    let mut clean: HashMap<Dialect, usize> = HashMap::new();
    let mut failures = Vec::new();
    for example in &examples {
        if !rules_found(example, &example.frames).is_empty() {
            continue; // a broken example already: not a healthy exchange to break
        }
        *clean.entry(example.dialect).or_default() += 1;
        let shape = quirk::shape_of(&example.head).expect("examples are JSON or SSE");
        let kind = RequestContext::parse(&example.request).kind();
        for quirk in QuirkId::ALL {
            let applied = quirk::apply(
                &[quirk],
                example.dialect,
                &example.request,
                &example.head,
                &example.frames,
            );
            if quirk.dialect() != example.dialect {
                assert_eq!(
                    applied.not_applicable,
                    vec![(quirk, quirk::NotApplicable::Dialect)],
                    "{quirk} on {}: another dialect's exchange",
                    example.name
                );
            }
            if applied.applied.is_empty() {
                assert_eq!(
                    applied.frames, example.frames,
                    "{quirk} on {}: not applicable, untouched",
                    example.name
                );
                assert_eq!(applied.not_applicable.len(), 1);
                continue;
            }
            covered.entry(quirk).or_default().insert(match shape {
                Shape::Buffered => "buffered",
                Shape::Streamed => "streamed",
            });
            let found = rules_found(example, &applied.frames);
            let declared: BTreeSet<RuleId> = quirk.detected_by(shape, kind).into_iter().collect();
            if found != declared {
                failures.push(format!(
                    "{quirk} on {}: found {found:?}, declared {declared:?}",
                    example.name
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Every dialect with quirks has healthy exchanges to break.
    let quirked = Dialect::ALL
        .into_iter()
        .filter(|dialect| QuirkId::ALL.iter().any(|q| q.dialect() == *dialect));
    for dialect in quirked {
        let clean = clean.get(&dialect).copied().unwrap_or_default();
        assert!(clean >= 4, "only {clean} clean {dialect:?} examples");
    }
    for quirk in QuirkId::ALL {
        let shapes = covered.get(&quirk).cloned().unwrap_or_default();
        assert_eq!(
            shapes.len(),
            quirk.shapes().len(),
            "{quirk} exercised on {shapes:?} only"
        );
    }
}

#[test]
fn stream_quirks_keep_frame_timing_and_untouched_events_keep_their_bytes() {
    let example = recorded_examples()
        .into_iter()
        .find(|e| e.name == "seed/required-stream.jsonl")
        .expect("the seed stream");
    let applied = quirk::apply(
        &[QuirkId::IdOnEveryChunk],
        example.dialect,
        &example.request,
        &example.head,
        &example.frames,
    );
    assert_eq!(
        applied.frames.len(),
        example.frames.len(),
        "no split or merge"
    );
    let times: Vec<u64> = applied.frames.iter().map(|f| f.t_us).collect();
    let original: Vec<u64> = example.frames.iter().map(|f| f.t_us).collect();
    assert_eq!(times, original);
    // The role chunk, the finish chunk, the usage chunk and [DONE] are untouched.
    for seq in [0, 10, 11, 12] {
        assert_eq!(
            applied.frames[seq].bytes, example.frames[seq].bytes,
            "frame {seq}"
        );
    }
    assert_ne!(applied.frames[2].bytes, example.frames[2].bytes);
    // done-missing drops the [DONE] frame and only it.
    let done = quirk::apply(
        &[QuirkId::DoneMissing],
        example.dialect,
        &example.request,
        &example.head,
        &example.frames,
    );
    assert_eq!(
        done.frames.as_slice(),
        &example.frames[..example.frames.len() - 1]
    );
}

#[test]
fn docs_quirks_md_lists_exactly_the_catalogue() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/quirks.md"))
        .expect("docs/quirks.md");
    let headings: Vec<&str> = doc
        .lines()
        .filter_map(|line| line.strip_prefix("### `"))
        .filter_map(|rest| rest.strip_suffix('`'))
        .collect();
    let ids: Vec<&str> = QuirkId::ALL.iter().map(|q| q.as_str()).collect();
    assert_eq!(
        headings, ids,
        "docs/quirks.md headings vs QuirkId::ALL (same order)"
    );
    for quirk in QuirkId::ALL {
        let section = doc
            .split(&format!("### `{quirk}`"))
            .nth(1)
            .expect("section");
        let section = section.split("\n### ").next().unwrap_or(section);
        for rule in quirk.all_rules() {
            assert!(
                section.contains(&format!("`{rule}`")),
                "{quirk}: section does not name {rule}"
            );
        }
        assert!(
            section.contains(quirk.seen().link),
            "{quirk}: section does not link {}",
            quirk.seen().link
        );
    }
}

#[test]
fn the_quirk_room_does_no_io() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/quirk");
    for entry in std::fs::read_dir(&dir).expect("src/quirk") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("source");
        for banned in [
            "hyper::",
            "tokio::",
            "use hyper",
            "use tokio",
            "use http",
            "http::",
            "std::net",
            "std::fs",
            "std::io",
        ] {
            assert!(
                !text.contains(banned),
                "{} mentions {banned}",
                path.display()
            );
        }
    }
}

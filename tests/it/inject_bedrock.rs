//! Bedrock's quirks live (`tooltap proxy --inject`) over its two framings, an event stream and a
//! buffered `ConverseResponse`: the client gets what the offline rewrite (`replay --quirk`)
//! gives, the inspector reports exactly the quirk's declared rules, marked with the quirk, and
//! `tooltap check` of the exchange's recording gives the verdict it had live.

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;

use crate::engine_support::{self, fixture};
use crate::inspect::{settle, violations_by_exchange};
use crate::record::flush;
use crate::support::check::{check_json, offline_verdicts};
use crate::support::client::{exchange, request};
use crate::support::proxy;
use crate::support::temp::TempDir;
use crate::support::upstream::{Script, Upstream};
use tooltap::engine::RuleId;
use tooltap::quirk::{self, QuirkId, RequestContext, TimedFrame};

/// Each Bedrock quirk with a healthy fixture it applies to.
const CASES: [(&str, QuirkId); 7] = [
    (
        "bedrock_pair_parallel_stream",
        QuirkId::BedrockStopReasonEndTurn,
    ),
    (
        "bedrock_pair_parallel_stream",
        QuirkId::BedrockToolUseIdReused,
    ),
    ("bedrock_pair_parallel_stream", QuirkId::BedrockInputNotJson),
    ("bedrock_pair_parallel_stream", QuirkId::BedrockFrameBadCrc),
    ("bedrock_pair_text_stream", QuirkId::BedrockEmptyTextStart),
    (
        "bedrock_pair_parallel_json",
        QuirkId::BedrockStopReasonEndTurn,
    ),
    (
        "bedrock_pair_parallel_json",
        QuirkId::BedrockToolUseIdReused,
    ),
];

#[tokio::test]
async fn bedrock_quirks_rewrite_event_streams_and_buffered_bodies_live_as_offline_and_check_agrees()
{
    for (name, quirk) in CASES {
        let case = fixture(name);
        let script = Script {
            status: 200,
            headers: vec![(
                "content-type".into(),
                case.head.content_type.clone().unwrap_or_default(),
            )],
            chunks: engine_support::natural_frames(&case)
                .into_iter()
                .map(|frame| (Duration::from_millis(1), Bytes::copy_from_slice(frame)))
                .collect(),
            silent: false,
            abort: false,
        };
        let upstream = Upstream::serving(script).await;
        let dir = TempDir::new("inject-bedrock");
        let violations = dir.join("violations.jsonl");
        let recordings = dir.join("recordings");
        let mut raw = proxy::raw_config(&upstream.url());
        raw.inspect.violations = Some(violations.clone());
        raw.record.mode = Some(tooltap::record::RecordMode::All);
        raw.record.dir = Some(recordings.clone());
        raw.inject.quirks = Some(quirk.as_str().into());
        let tooltap = proxy::start(raw).await;
        let body = String::from_utf8(case.request.clone()).expect("utf-8 request");
        let addr = tooltap.local_addr();
        let got = exchange(addr, request(addr, "POST", case.path(), &body)).await;
        assert_eq!(got.headers["x-tooltap-quirk"], quirk.as_str(), "{name}");

        let frames: Vec<TimedFrame> = engine_support::natural_frames(&case)
            .iter()
            .map(|bytes| TimedFrame {
                t_us: 0,
                bytes: Bytes::copy_from_slice(bytes),
            })
            .collect();
        let offline = quirk::apply(&[quirk], case.dialect, &case.request, &case.head, &frames);
        let expected: Vec<u8> = offline
            .frames
            .iter()
            .flat_map(|f| f.bytes.to_vec())
            .collect();
        assert_eq!(
            got.body, expected,
            "{quirk} on {name}: live and offline agree"
        );
        assert_ne!(got.body, case.body, "{quirk} on {name}: changed");

        settle(&tooltap, 1).await;
        flush(&tooltap).await;
        let id = got.headers["x-tooltap-exchange"]
            .to_str()
            .expect("id")
            .to_owned();
        let lines = violations_by_exchange(&violations)
            .remove(&id)
            .unwrap_or_default();
        assert!(
            lines.iter().all(|v| v["quirk"] == quirk.as_str()),
            "{lines:?}"
        );
        let found: BTreeSet<String> = lines
            .iter()
            .map(|v| v["rule"].as_str().unwrap_or_default().to_string())
            .collect();
        let shape = quirk::shape_of(&case.head).expect("a shape");
        let kind = RequestContext::parse(&case.request).kind();
        let declared: BTreeSet<String> = quirk
            .detected_by(shape, kind)
            .iter()
            .map(RuleId::to_string)
            .collect();
        assert_eq!(found, declared, "{quirk} on {name}: live");

        let checked = check_json(&recordings);
        let offline = offline_verdicts(&checked.report);
        let rules: BTreeSet<String> = offline.get(&id).into_iter().flatten().cloned().collect();
        assert_eq!(rules, declared, "{quirk} on {name}: check of the recording");
        assert_eq!(offline.len(), 1, "{offline:?}");
    }
}

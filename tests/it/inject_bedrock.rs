//! Bedrock's quirks live (`tooltap proxy --inject`) over its two framings, an event stream and a
//! buffered `ConverseResponse`: the client gets what the offline rewrite (`replay --quirk`)
//! gives, the inspector reports exactly the quirk's declared rules, marked with the quirk, and
//! `tooltap check` of the exchange's recording gives the verdict it had live.

use std::collections::BTreeSet;

use crate::engine_support::fixture;
use crate::inject::{declared_rules, offline_body, rules_marked, script, send};
use crate::record::flush;
use crate::support::check::{check_json, offline_verdicts};
use crate::support::fixtures::settle;
use crate::support::proxy;
use crate::support::temp::TempDir;
use crate::support::upstream::Upstream;
use tooltap::quirk::QuirkId;
use tooltap::record::RecordMode;

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
        let upstream = Upstream::serving(script(&case)).await;
        let dir = TempDir::new("inject-bedrock");
        let violations = dir.join("violations.jsonl");
        let recordings = dir.join("recordings");
        let mut raw = proxy::raw_config(&upstream.url());
        raw.inspect.violations = Some(violations.clone());
        raw.record.mode = Some(RecordMode::All);
        raw.record.dir = Some(recordings.clone());
        raw.inject.quirks = Some(quirk.as_str().into());
        let tooltap = proxy::start(raw).await;
        let got = send(tooltap.local_addr(), &case).await;
        assert_eq!(got.headers["x-tooltap-quirk"], quirk.as_str(), "{name}");
        let expected = offline_body(quirk, &case);
        assert_eq!(
            got.body, expected,
            "{quirk} on {name}: live and offline agree"
        );
        assert_ne!(got.body, case.body, "{quirk} on {name}: changed");

        settle(&tooltap, 1).await;
        flush(&tooltap).await;
        let id = got.headers["x-tooltap-exchange"].to_str().expect("id");
        let declared = declared_rules(quirk, &case);
        let live = rules_marked(&violations, id, quirk);
        assert_eq!(live, declared, "{quirk} on {name}: live");

        let checked = check_json(&recordings);
        let offline = offline_verdicts(&checked.report);
        let rules: BTreeSet<String> = offline.get(id).into_iter().flatten().cloned().collect();
        assert_eq!(rules, declared, "{quirk} on {name}: check of the recording");
        assert_eq!(offline.len(), 1, "{offline:?}");
    }
}

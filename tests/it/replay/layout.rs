//! A violations file left inside the recordings folder by the old default layout
//! (`recordings/violations.jsonl`) does not stop the replay server from starting.

use serde_json::json;

use crate::replay::support::{Fixture, TempDir, chat, post_json, settings, start};

#[tokio::test]
async fn a_violations_file_in_the_recordings_folder_does_not_stop_the_start() {
    let dir = TempDir::new("old-layout");
    Fixture::json(chat("recorded"), &json!({"recorded": true})).write(dir.path(), "rec.jsonl");
    std::fs::write(
        dir.path().join("violations.jsonl"),
        "{\"ts\":\"2026-01-01T00:00:00.000Z\",\"rule\":\"tool_call.arguments_not_string\"}\n",
    )
    .expect("write");
    let replay = start(&settings(dir.path())).await;
    let hit = post_json(replay.local_addr(), &chat("recorded")).await;
    assert_eq!(hit.json(), json!({"recorded": true}));
}

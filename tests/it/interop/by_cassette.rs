//! `tooltap export --format vcr` writes one cassette per test: recordings carrying an
//! `x-tooltap-cassette` header go to pytest-recording's `<module>/<test>.yaml` wherever they were
//! filed, the rest one cassette per folder; the exported cassettes keep the header, so replay
//! serves them per cassette, in order, as it served the recordings.

use http::{Method, StatusCode};
use serde_json::json;

use super::{export, s};
use crate::replay::cassettes::{LOOP, OTHER};
use crate::replay::support::{Fixture, TempDir, send, settings, start};
use crate::replay::usage::{recordings, sdk_request};

#[tokio::test]
async fn a_cassette_per_test_in_pytest_recordings_layout_that_replays_per_cassette() {
    let dir = recordings();
    let untagged = json!({"id": "c", "object": "chat.completion", "choices": []});
    Fixture::json(sdk_request("plain"), &untagged).write(dir.path(), "plain/1.jsonl");
    let out = TempDir::new("export-by-cassette");
    let (code, stderr) = export(&["--format", "vcr", s(dir.path()), "-o", s(out.path())]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("5 exchange(s) into 3 cassette(s)"),
        "{stderr}"
    );
    let mut files: Vec<String> = crate::support::temp::files_under(out.path())
        .iter()
        .map(|path| s(path.strip_prefix(out.path()).expect("under")).to_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "plain.yaml",
            "test_other/test_b.yaml",
            "test_weather/test_loop.yaml"
        ]
    );
    let cassette = std::fs::read_to_string(out.join("test_weather/test_loop.yaml")).expect("read");
    assert_eq!(cassette.matches("- request:").count(), 3, "{cassette}");
    assert!(cassette.contains(LOOP), "the header is kept: {cassette}");

    // Read back by replay: the same cassette answers in order, the other keeps its own.
    let replay = start(&settings(out.path())).await;
    let ask = |cassette: &'static str, content: &'static str| {
        let body = sdk_request(content).to_string();
        let addr = replay.local_addr();
        async move {
            let headers = [("x-tooltap-cassette", cassette)];
            send(
                addr,
                Method::POST,
                "/v1/chat/completions",
                body.as_bytes(),
                &headers,
            )
            .await
        }
    };
    for expected in ["first", "second"] {
        let got = ask(LOOP, "weather?").await;
        assert_eq!(got.status, StatusCode::OK);
        assert_eq!(got.json()["choices"][0]["message"]["content"], expected);
    }
    let other = ask(OTHER, "weather?").await;
    assert_eq!(other.json()["choices"][0]["message"]["content"], "other");
    assert_eq!(ask(OTHER, "thanks").await.status, StatusCode::NOT_FOUND);
    replay.shutdown().await.expect("shutdown");
}

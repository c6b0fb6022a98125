//! Per-test recordings: the `x-tooltap-cassette` header, sent by the official openai SDK (as the
//! pytest plugin sends it) to the real `tooltap` binary. Captures land in the cassette's folder,
//! never outside the recordings folder whatever the name; the header never reaches the
//! upstream; on replay a cassette answers from its own recordings only, in order, while a request
//! without the header is matched against every recording.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::TempDir;
use crate::support::binary::{Running, recording_args, start_proxy, start_replay};
use crate::support::clients::{run_python, script_json};
use crate::support::temp::jsonl_under;
use crate::support::upstream::{Received, Script, Upstream};

pub const LOOP: &str = "tests/test_weather.py::test_loop";
pub const OTHER: &str = "tests/test_other.py::test_b";
const ESCAPE: &str = "../../../escape/..";

/// An upstream that answers every chat completion with `upstream answer <n>`, n counting from 1.
pub async fn counting_upstream() -> Upstream {
    let count = Arc::new(AtomicUsize::new(0));
    Upstream::start(
        move |_request: &Received| {
            let n = count.fetch_add(1, Ordering::Relaxed) + 1;
            let body = json!({"id": format!("c{n}"), "object": "chat.completion", "created": 1,
                "model": "gpt-4o-mini", "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": format!("upstream answer {n}")}}]});
            Script::full(200, "application/json", &body.to_string())
        },
        None,
    )
    .await
}

/// The openai SDK sends one chat completion per `(cassette, message)`, in order, the cassette
/// (if any) in the `x-tooltap-cassette` header; one interpreter for all of them.
pub async fn sdk(addr: std::net::SocketAddr, requests: &[(Option<&str>, &str)]) -> Vec<Value> {
    let base_url = format!("http://{addr}/v1");
    let args = [base_url.clone(), json!(requests).to_string()];
    let output = run_python("cassette_chat.py", &args, Duration::from_secs(60)).await;
    let results = script_json(&output, "the openai SDK", &base_url);
    results.as_array().expect("an array").clone()
}

pub fn replay_args(dir: &Path, extra: &[&str]) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec!["--recordings".into(), dir.into()];
    args.extend(extra.iter().map(Into::into));
    args
}

pub async fn replay(args: &[std::ffi::OsString]) -> Running {
    let args: Vec<&OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    start_replay(&args, "info").await
}

/// The finished recordings under `dir`, relative, with `/` separators, sorted.
fn recorded_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = jsonl_under(dir)
        .iter()
        .map(|path| {
            let relative = path.strip_prefix(dir).expect("under the folder");
            relative.to_string_lossy().replace('\\', "/")
        })
        .collect();
    names.sort();
    names
}

fn folder_of(name: &str) -> &str {
    name.rsplit_once('/').map_or("", |(folder, _)| folder)
}

fn recorded_cassette(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).expect("read");
    let first: Value = serde_json::from_str(text.lines().next().expect("a line")).expect("JSON");
    let headers = first["request"]["headers"].as_array().expect("headers");
    headers
        .iter()
        .find(|pair| pair[0] == "x-tooltap-cassette")
        .map(|pair| pair[1].as_str().expect("text").to_owned())
}

#[tokio::test]
async fn captures_land_in_the_cassette_folder_and_replay_answers_per_cassette() {
    let mut upstream = counting_upstream().await;
    let root = TempDir::new("cassettes");
    let dir = root.join("recordings");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let forward = ["--on-miss", "forward", "--upstream"];
    let mut args = replay_args(&dir, &forward);
    args.push(upstream.url().into());
    let mut capturing = replay(&args).await;
    // Two tests ask the same first question; each gets its own capture and answer.
    let answers = sdk(
        capturing.addr,
        &[
            (Some(LOOP), "weather?"),
            (Some(LOOP), "thanks"),
            (Some(OTHER), "weather?"),
            (Some(ESCAPE), "escape?"),
        ],
    )
    .await;
    let contents: Vec<&str> = answers
        .iter()
        .map(|r| r["content"].as_str().unwrap_or_else(|| panic!("{r}")))
        .collect();
    assert_eq!(
        contents,
        [
            "upstream answer 1",
            "upstream answer 2",
            "upstream answer 3",
            "upstream answer 4"
        ]
    );
    for _ in 0..4 {
        let seen = upstream.next_request().await;
        assert!(
            !seen.headers.contains_key("x-tooltap-cassette"),
            "the cassette header reached the upstream: {:?}",
            seen.headers
        );
    }
    capturing.stop_and_drain().await;

    let files = recorded_files(&dir);
    let folders: Vec<&str> = files.iter().map(|f| folder_of(f)).collect();
    assert_eq!(
        folders,
        [
            "_./_./_./escape/_.",
            "tests/test_other.py/test_b",
            "tests/test_weather.py/test_loop",
            "tests/test_weather.py/test_loop"
        ],
        "{files:?}"
    );
    let outside: Vec<PathBuf> = jsonl_under(&root)
        .into_iter()
        .filter(|path| !path.starts_with(&dir))
        .collect();
    assert!(outside.is_empty(), "written outside: {outside:?}");
    assert_eq!(
        recorded_cassette(&dir.join(&files[1])).as_deref(),
        Some(OTHER)
    );

    // Offline: each cassette answers from its own recordings.
    let mut replaying = replay(&replay_args(&dir, &[])).await;
    let got = sdk(
        replaying.addr,
        &[
            (Some(LOOP), "weather?"),
            (Some(LOOP), "thanks"),
            (Some(OTHER), "weather?"),
            (Some(OTHER), "thanks"),
            (Some("tests/test_new.py::test_c"), "weather?"),
            (None, "weather?"),
            (None, "weather?"),
            (None, "thanks"),
        ],
    )
    .await;
    assert_eq!(got[0]["content"], "upstream answer 1", "{got:?}");
    assert_eq!(got[1]["content"], "upstream answer 2");
    assert!(
        got[0]["recording"]
            .as_str()
            .expect("recording")
            .starts_with("tests/test_weather.py/test_loop/")
    );
    assert_eq!(got[2]["content"], "upstream answer 3");
    // `thanks` was only ever asked in the other test.
    assert_eq!(got[3]["status"], 404, "{got:?}");
    let message = got[3]["error"].as_str().expect("message");
    assert!(
        message.contains(&format!(
            "no recording of cassette {OTHER} matches POST /v1/chat/completions; \
             closest recording: tests/test_other.py/test_b/"
        )),
        "{message}"
    );
    assert!(message.contains("/messages/0/content"), "{message}");
    // A new test has no recordings: the miss says so and names the nearest elsewhere.
    assert_eq!(got[4]["status"], 404);
    let message = got[4]["error"].as_str().expect("message");
    assert!(
        message.contains("cassette tests/test_new.py::test_c has no recordings"),
        "{message}"
    );
    assert!(message.contains("closest recording: tests/"), "{message}");
    // Without the header, every recording is a candidate: `weather?` cycles
    // through both tests' recordings.
    let mut seen: Vec<&str> = got[5..7]
        .iter()
        .map(|r| r["content"].as_str().expect("answered"))
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, ["upstream answer 1", "upstream answer 3"]);
    assert_eq!(got[7]["content"], "upstream answer 2");
    replaying.stop_and_drain().await;
}

#[tokio::test]
async fn proxy_record_names_its_recordings_by_cassette_and_strips_the_header() {
    let mut upstream = counting_upstream().await;
    let dir = TempDir::new("proxy-cassettes");
    let recordings = dir.join("recordings");
    let violations = dir.join("violations.jsonl");
    let args = recording_args(&upstream.url(), &recordings, &violations);
    let args: Vec<&OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let mut proxy = start_proxy(&args, "info").await;
    let got = sdk(proxy.addr, &[(Some(LOOP), "weather?"), (None, "weather?")]).await;
    assert_eq!(got[0]["content"], "upstream answer 1");
    assert_eq!(got[1]["content"], "upstream answer 2");
    for _ in 0..2 {
        let seen = upstream.next_request().await;
        assert!(!seen.headers.contains_key("x-tooltap-cassette"));
    }
    proxy.stop_and_drain().await;
    let files = recorded_files(&recordings);
    assert_eq!(files.len(), 2, "{files:?}");
    let tagged_file = files
        .iter()
        .find(|f| f.starts_with("tests/test_weather.py/test_loop/"))
        .unwrap_or_else(|| panic!("no recording in the cassette folder: {files:?}"));
    assert_eq!(
        recorded_cassette(&recordings.join(tagged_file)).as_deref(),
        Some(LOOP)
    );
    assert!(
        files.iter().any(|f| f.starts_with("default/")),
        "the untagged one keeps the route/date layout: {files:?}"
    );
}

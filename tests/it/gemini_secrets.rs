//! Gemini's credentials reach the upstream and nothing else: the real binary, logging at TRACE,
//! forwards an AI Studio key sent both ways (`x-goog-api-key` and `?key=`) and a Vertex
//! `Authorization: Bearer` token to a real upstream on loopback unchanged, and none of them
//! appears in a recording file, the violations file, a log line, `tooltap check`'s output (human
//! and JSON, and a capture's `--path`), the HTML report, or replay's answers, log lines and
//! `--on-miss forward` captures (the forwarded miss reaches the upstream with its key); while
//! `alt=sse` stays readable and replay still matches the request that carries the key.

use std::path::Path;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use crate::layout::{start_logging, stop};
use crate::support::TempDir;
use crate::support::binary;
use crate::support::client::{exchange, request};
use crate::support::gemini::{MODEL, request_body};
use crate::support::temp::files_under;
use crate::support::upstream::{Script, Upstream};
use crate::support::within;

/// Each planted credential is distinct, so a leak names its source.
const QUERY_KEY: &str = "AIzaSyPlantedQueryKey4c1d9e";
const HEADER_KEY: &str = "AIzaSyPlantedHeaderKey7f2a3b";
const BEARER: &str = "ya29.planted-vertex-token-5e6f";
const SECRETS: [&str; 3] = [QUERY_KEY, HEADER_KEY, BEARER];

const VERTEX: &str =
    "/v1beta1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash";

/// A call answered with `FUNCTION_CALL`, a finish reason Gemini does not have.
const BUFFERED: &str = r#"{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]},"finishReason":"FUNCTION_CALL","index":0}],"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":5,"totalTokenCount":17},"modelVersion":"gemini-2.5-flash"}"#;

/// Data-only SSE with CRLF, as Google's server frames it.
const EVENTS: [&str; 2] = [
    "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Checking.\"}]},\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":12,\"totalTokenCount\":14}}\r\n\r\n",
    "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"get_weather\",\"args\":{\"city\":\"Paris\"}}}]},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":12,\"candidatesTokenCount\":7,\"totalTokenCount\":19}}\r\n\r\n",
];

/// Every line of `text` that holds a planted credential.
fn leaks(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|line| SECRETS.iter().any(|secret| line.contains(secret)))
        .collect()
}

fn assert_clean(what: &str, text: &str) {
    let found = leaks(text);
    assert!(found.is_empty(), "{what} holds a credential: {found:?}");
}

/// Runs `tooltap <args>` to its exit; (exit code, stdout and stderr together).
fn run(args: &[&str]) -> (Option<i32>, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tooltap"))
        .args(args)
        .env_remove("TOOLTAP_CONFIG")
        .env("RUST_LOG", "trace")
        .output()
        .expect("tooltap runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.code(), text)
}

/// The upstream: SSE when asked for `alt=sse`, the buffered call otherwise; each echoes the
/// request's URI (its key included) in a header whose name says nothing.
async fn gemini_upstream() -> Upstream {
    Upstream::start(
        |received| {
            let echo = format!(
                "url=https://generativelanguage.googleapis.com{}",
                received.uri
            );
            let script = match received.uri.contains("alt=sse") {
                true => Script::sse(&EVENTS, Duration::from_millis(5)),
                false => Script::full(200, "application/json", BUFFERED),
            };
            script.header("x-upstream-debug", &echo)
        },
        None,
    )
    .await
}

#[tokio::test]
async fn gemini_credentials_reach_the_upstream_and_no_artefact() {
    let mut upstream = gemini_upstream().await;
    let dir = TempDir::new("gemini-secrets");
    let recordings = dir.join("rec");
    let violations = dir.join("violations.jsonl");
    let args = binary::recording_args(&upstream.url(), &recordings, &violations);
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|arg| arg.as_os_str()).collect();
    let mut running = binary::start_proxy(&args, "trace").await;
    let addr = running.addr;

    // AI Studio, buffered and streamed: the key in the header and in the query at once.
    let buffered = format!("{MODEL}:generateContent?key={QUERY_KEY}");
    let streamed = format!("{MODEL}:streamGenerateContent?alt=sse&key={QUERY_KEY}");
    for path in [&buffered, &streamed] {
        let mut req = request(addr, "POST", path, &request_body("Paris"));
        req.headers_mut()
            .insert("x-goog-api-key", HEADER_KEY.parse().expect("value"));
        let got = exchange(addr, req).await;
        assert_eq!(got.status, 200, "{path}");
        let want = match path.contains("alt=sse") {
            true => EVENTS.concat(),
            false => BUFFERED.to_owned(),
        };
        assert_eq!(
            got.body,
            want.as_bytes(),
            "the client's bytes are untouched"
        );
        let seen = upstream.next_request().await;
        assert_eq!(seen.uri, *path, "the upstream got the query as sent");
        assert_eq!(seen.headers["x-goog-api-key"], HEADER_KEY);
    }
    // Vertex: a bearer token.
    let vertex = format!("{VERTEX}:generateContent");
    let mut req = request(addr, "POST", &vertex, &request_body("Paris"));
    req.headers_mut().insert(
        "authorization",
        format!("Bearer {BEARER}").parse().expect("value"),
    );
    assert_eq!(exchange(addr, req).await.status, 200);
    let seen = upstream.next_request().await;
    assert_eq!(seen.headers["authorization"], format!("Bearer {BEARER}"));

    // Every exchange's summary, then SIGTERM (the recorder and the violations file drain).
    within(Duration::from_secs(20), async {
        let mut inspected = 0;
        while inspected < 3 {
            let line = running
                .lines
                .next_line()
                .await
                .expect("read")
                .expect("tooltap exited early");
            inspected += usize::from(line.contains("exchange inspected"));
            running.log.push(line);
        }
    })
    .await;
    running.stop_and_drain().await;
    let log = running.log.join("\n");
    assert!(
        log.contains("streamGenerateContent") && log.contains("upstream_uri"),
        "the TRACE log speaks of the exchanges and the upstream URI they were sent to (the \
         forwarding line, tooltap's most detailed): too little logged to prove anything"
    );
    assert_clean("the proxy's log", &log);

    // Recordings: the credentials redacted and said to be, the rest of the query readable.
    let files: Vec<_> = files_under(&recordings)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(files.len(), 3, "{files:?}");
    let mut texts = Vec::new();
    for file in &files {
        let text = String::from_utf8_lossy(&std::fs::read(file).expect("read")).into_owned();
        assert_clean(&file.display().to_string(), &text);
        texts.push(text);
    }
    let sse = texts
        .iter()
        .find(|text| text.contains("streamGenerateContent"))
        .expect("the stream's recording");
    for expected in [
        r#""query":"alt=sse&key=[REDACTED]""#,
        "query:key",
        "header:x-goog-api-key",
        "header:x-upstream-debug",
    ] {
        assert!(sse.contains(expected), "{expected} in {sse}");
    }
    assert!(
        texts
            .iter()
            .any(|text| text.contains("header:authorization")),
        "the bearer token's recording says it was redacted"
    );
    for file in files_under(dir.path()) {
        if file.extension().is_some_and(|e| e == "jsonl") {
            let text = String::from_utf8_lossy(&std::fs::read(&file).expect("read")).into_owned();
            assert_clean(&file.display().to_string(), &text);
        }
    }
    let violations = std::fs::read_to_string(&violations).unwrap_or_default();
    assert_clean("the violations file", &violations);
    assert!(
        violations.contains("gemini.response.finish_reason_unknown"),
        "the buffered answer's violation was written: {violations}"
    );

    offline_artefacts_hold_no_credential(dir.path(), &recordings).await;
    replay_holds_no_credential(dir.path(), &recordings, &mut upstream).await;
}

/// `tooltap check` (human, JSON, a capture with a keyed `--path`), `tooltap report` and
/// `tooltap replay` over the recordings.
async fn offline_artefacts_hold_no_credential(dir: &Path, recordings: &Path) {
    let folder = recordings.to_str().expect("utf-8");
    let (code, human) = run(&["check", folder]);
    assert_eq!(code, Some(1), "violations found: {human}");
    assert!(human.contains("gemini."), "{human}");
    assert_clean("check's human output", &human);
    let (_, json) = run(&["check", "--format", "json", folder]);
    assert!(json.contains("streamGenerateContent"), "{json}");
    assert_clean("check's JSON output", &json);

    let request_file = dir.join("request.json");
    let response_file = dir.join("response.json");
    std::fs::write(&request_file, request_body("Paris")).expect("write");
    std::fs::write(&response_file, BUFFERED).expect("write");
    let keyed = format!("{MODEL}:generateContent?key={QUERY_KEY}");
    let (_, capture) = run(&[
        "check",
        "--request",
        request_file.to_str().expect("utf-8"),
        "--response",
        response_file.to_str().expect("utf-8"),
        "--path",
        &keyed,
        "--content-type",
        "application/json",
    ]);
    assert!(capture.contains("gemini."), "{capture}");
    assert_clean("check's output for a capture", &capture);

    let page = dir.join("report.html");
    let (code, out) = run(&["report", folder, "-o", page.to_str().expect("utf-8")]);
    assert_eq!(code, Some(0), "{out}");
    let html = std::fs::read_to_string(&page).expect("the page");
    assert!(
        html.contains("streamGenerateContent"),
        "the page shows them"
    );
    assert_clean("the report page", &html);
    assert_clean("report's output", &out);
}

/// `tooltap replay` at TRACE: the keyed request matches its recording; a miss names no
/// credential, in its 404 or its log; with `--on-miss forward` the miss reaches the upstream
/// with its key, and its capture holds none.
async fn replay_holds_no_credential(dir: &Path, recordings: &Path, upstream: &mut Upstream) {
    let folder = recordings.to_str().expect("utf-8");
    let args = ["replay", "--recordings", folder, "--listen", "127.0.0.1:0"];
    let (replay, lines, addr) =
        start_logging(dir, &args, "tooltap replay ready", Some("trace")).await;
    let streamed = format!("{MODEL}:streamGenerateContent?key={QUERY_KEY}&alt=sse");
    let mut req = request(addr, "POST", &streamed, &request_body("Paris"));
    req.headers_mut()
        .insert("x-goog-api-key", HEADER_KEY.parse().expect("value"));
    let got = exchange(addr, req).await;
    assert_eq!(got.status, 200, "{:?}", got.body);
    assert_eq!(got.body, EVENTS.concat().as_bytes(), "served as recorded");
    assert_eq!(got.headers["content-type"], "text/event-stream");
    let miss = request(addr, "POST", &streamed, &request_body("Oslo"));
    let got = exchange(addr, miss).await;
    assert_eq!(got.status, 404);
    let answer = String::from_utf8_lossy(&got.body).into_owned();
    assert!(answer.contains("no recording matches"), "{answer}");
    assert_clean("replay's miss answer", &answer);
    let log = stop_reading(replay, lines).await;
    assert!(log.contains("no recording matches"), "the miss is logged");
    assert_clean("replay's log", &log);

    let url = upstream.url();
    let forward = [&args[..], &["--on-miss", "forward", "--upstream", &url]].concat();
    let (replay, lines, addr) =
        start_logging(dir, &forward, "tooltap replay ready", Some("trace")).await;
    let mut miss = request(addr, "POST", &streamed, &request_body("Oslo"));
    miss.headers_mut()
        .insert("x-goog-api-key", HEADER_KEY.parse().expect("value"));
    let got = exchange(addr, miss).await;
    assert_eq!(
        got.body,
        EVENTS.concat().as_bytes(),
        "the upstream's answer"
    );
    let seen = upstream.next_request().await;
    assert_eq!(seen.uri, streamed, "forwarded with its key");
    assert_eq!(seen.headers["x-goog-api-key"], HEADER_KEY);
    let log = stop_reading(replay, lines).await;
    assert!(log.contains("miss forwarded upstream"), "{log}");
    assert_clean("replay's log with --on-miss forward", &log);
    let files = crate::support::temp::jsonl_under(recordings);
    assert_eq!(files.len(), 4, "the forwarded miss was captured: {files:?}");
    for file in files {
        let text = String::from_utf8_lossy(&std::fs::read(&file).expect("read")).into_owned();
        assert_clean(&file.display().to_string(), &text);
    }
}

/// Stops a child started by `start_logging` and gives back everything it logged.
async fn stop_reading(
    mut child: tokio::process::Child,
    mut lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
) -> String {
    let err = child.stderr.take();
    stop(child).await;
    let mut log = Vec::new();
    while let Ok(Some(line)) = within(Duration::from_secs(10), lines.next_line()).await {
        log.push(line);
    }
    if let Some(mut err) = err {
        let mut text = String::new();
        let _ = err.read_to_string(&mut text).await;
        log.push(text);
    }
    log.join("\n")
}

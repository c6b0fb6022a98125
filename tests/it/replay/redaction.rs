//! `--on-miss forward` captures are redacted by pattern like the proxy's recordings: credential
//! headers outside the built-in list, weak query names and credential-named body fields never
//! reach a file under the recordings folder.

use std::convert::Infallible;

use bytes::Bytes;
use http::Response;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::TcpListener;
use tooltap::replay::OnMiss;

use crate::replay::support::{CHAT, LIMIT, TempDir, post_with, settings, start, within};
use crate::support::temp::files_under;

const HEADERS: &[(&str, &str)] = &[
    ("x-goog-api-key", "planted-goog-0a1b"),
    ("X-Auth-Token", "planted-auth-token-2c3d"),
    ("Ocp-Apim-Subscription-Key", "planted-apim-4e5f"),
    ("Helicone-Auth", "planted-helicone-6a7b"),
    ("x-portkey-api-key", "planted-portkey-8c9d"),
    ("X-Amz-Security-Token", "planted-amz-0e1f"),
];
const QUERY: &str = "pwd=planted-pwd-11&pass=planted-pass-22&jwt=planted-jwt-33&bearer=planted-bearer-44&sessionid=planted-session-55";

#[tokio::test]
async fn forwarded_captures_hold_no_credential_named_by_pattern() {
    let upstream = echo_upstream().await;
    let dir = TempDir::new("redaction");
    let mut settings = settings(dir.path());
    settings.on_miss = OnMiss::Forward {
        upstream: format!("http://{upstream}"),
    };
    let replay = start(&settings).await;
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "x"}],
        "api_key": "planted-body-66", "metadata": {"client_secret": "planted-body-77"}});
    let got = post_with(
        replay.local_addr(),
        &format!("{CHAT}?{QUERY}"),
        body.to_string().as_bytes(),
        HEADERS,
    )
    .await;
    assert_eq!(got.status, 200);
    // The capture joins the library in memory first; its file lands when the recorder's
    // writer thread renames it into place.
    let files = within(LIMIT, async {
        loop {
            let files = files_under(dir.path());
            if files
                .iter()
                .any(|p| p.extension().is_some_and(|e| e == "jsonl"))
            {
                return files;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    let mut planted: Vec<&str> = HEADERS.iter().map(|(_, v)| *v).collect();
    planted.extend(
        QUERY
            .split('&')
            .filter_map(|p| p.split_once('=').map(|(_, v)| v)),
    );
    planted.extend(["planted-body-66", "planted-body-77"]);
    for file in files {
        let text = String::from_utf8_lossy(&std::fs::read(&file).expect("read")).into_owned();
        for value in &planted {
            assert!(!text.contains(value), "{} holds {value}", file.display());
        }
    }
}

/// A recording keeps `[REDACTED]` where the request had a credential-named field, so the same
/// request (with the real value) must still find it: replay keys a request as the recorder
/// would have redacted it when the body as sent finds nothing.
#[tokio::test]
async fn a_recording_whose_body_was_redacted_still_answers_the_same_request() {
    let dir = TempDir::new("redacted-match");
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "x"}],
        "api_key": "planted-body-88", "metadata": {"client_secret": "planted-body-99"}});
    let upstream = echo_upstream().await;
    let mut capturing = settings(dir.path());
    capturing.on_miss = OnMiss::Forward {
        upstream: format!("http://{upstream}"),
    };
    let replay = start(&capturing).await;
    let got = post_with(replay.local_addr(), CHAT, body.to_string().as_bytes(), &[]).await;
    assert_eq!(got.status, 200, "forwarded");
    within(LIMIT, replay.shutdown()).await.expect("stops");
    let recorded = files_under(dir.path())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .map(|p| String::from_utf8_lossy(&std::fs::read(p).expect("read")).into_owned())
        .collect::<Vec<_>>()
        .join("");
    assert!(recorded.contains("[REDACTED]"), "the capture was redacted");
    assert!(!recorded.contains("planted-body-88"));

    // Offline: no upstream, the folder only.
    let offline = start(&settings(dir.path())).await;
    let again = post_with(offline.local_addr(), CHAT, body.to_string().as_bytes(), &[]).await;
    assert_eq!(
        again.status,
        200,
        "the redacted recording answers: {}",
        String::from_utf8_lossy(&again.body())
    );
    let other = json!({"model": "m", "messages": [{"role": "user", "content": "y"}],
        "api_key": "planted-body-88", "metadata": {"client_secret": "planted-body-99"}});
    let miss = post_with(
        offline.local_addr(),
        CHAT,
        other.to_string().as_bytes(),
        &[],
    )
    .await;
    assert_eq!(miss.status, 404, "another conversation still misses");
}

/// An upstream answering every request with a plain Chat completion, echoing a planted
/// credential in a response header (`x-echo`).
async fn echo_upstream() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind upstream");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let service = service_fn(|_request| async {
                    let body = json!({"id": "up", "object": "chat.completion", "choices": [{"index": 0,
                        "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]});
                    Ok::<_, Infallible>(
                        Response::builder()
                            .header("content-type", "application/json")
                            .header("x-echo", "caller planted-goog-0a1b")
                            .body(Full::new(Bytes::from(body.to_string())))
                            .expect("response"),
                    )
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

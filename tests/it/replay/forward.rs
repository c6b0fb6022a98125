//! `--on-miss forward`: a request no recording answers is forwarded to the upstream through the
//! proxy's forwarding and inspection path and kept, so the same request is then answered
//! offline; a recorded one is replayed without going upstream at all.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http::Response;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::TcpListener;
use tooltap::replay::OnMiss;

use crate::replay::support::{Fixture, LIMIT, TempDir, chat, post_json, settings, start, within};
use crate::support::temp::jsonl_under;

/// An upstream that answers every request with a buffered tool call whose arguments are an
/// object (a violation the inspector must report), counting requests.
async fn upstream() -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind upstream");
    let addr = listener.local_addr().expect("addr");
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let service = service_fn(move |_request| {
                    counter.fetch_add(1, Ordering::Relaxed);
                    let body = json!({"id": "up", "object": "chat.completion", "choices": [{"index": 0,
                        "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
                        "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}]},
                        "finish_reason": "tool_calls"}]});
                    let response = Response::builder()
                        .header("content-type", "application/json")
                        .header("x-upstream", "yes")
                        .body(Full::new(Bytes::from(body.to_string())))
                        .expect("response");
                    async move { Ok::<_, Infallible>(response) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, hits)
}

#[tokio::test]
async fn a_miss_is_forwarded_upstream_and_inspected_a_hit_is_not() {
    let (upstream, hits) = upstream().await;
    let dir = TempDir::new("forward");
    Fixture::json(chat("recorded"), &json!({"recorded": true})).write(dir.path(), "rec.jsonl");
    let violations = dir.path().join("out/violations.jsonl");
    std::fs::create_dir_all(violations.parent().expect("parent")).expect("mkdir");
    let mut settings = settings(dir.path());
    settings.on_miss = OnMiss::Forward {
        upstream: format!("http://{upstream}"),
    };
    settings.violations = Some(violations.clone());
    let replay = start(&settings).await;

    let hit = post_json(replay.local_addr(), &chat("recorded")).await;
    assert_eq!(hit.json(), json!({"recorded": true}));
    assert_eq!(hits.load(Ordering::Relaxed), 0, "a hit went upstream");

    let tools =
        json!([{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]);
    let mut missed = chat("not recorded");
    missed["tools"] = tools;
    let forwarded = post_json(replay.local_addr(), &missed).await;
    assert_eq!(forwarded.status, 200);
    assert_eq!(forwarded.header("x-upstream"), "yes");
    assert_eq!(forwarded.json()["id"], "up");
    assert_eq!(hits.load(Ordering::Relaxed), 1);
    let exchange = forwarded.header("x-tooltap-exchange").to_owned();

    let lines = crate::replay::inspection::violations_for(&violations, &exchange).await;
    assert!(
        lines
            .iter()
            .any(|l| l["rule"] == "tool_call.arguments_not_string"),
        "{lines:?}"
    );

    // The forwarded exchange joins the library once its body ended; then it replays offline.
    within(LIMIT, async {
        while replay.state().library.read().map_or(0, |l| l.len()) < 2 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    let replayed = post_json(replay.local_addr(), &missed).await;
    assert_eq!(
        hits.load(Ordering::Relaxed),
        1,
        "the kept exchange went upstream again"
    );
    assert_eq!(replayed.status, 200);
    assert_eq!(
        replayed.header("x-tooltap-recording"),
        format!("captured/{exchange}")
    );
    assert_eq!(replayed.header("x-upstream"), "yes");
    assert_eq!(replayed.body(), forwarded.body());
}

#[tokio::test]
async fn an_unreachable_upstream_gives_the_proxys_own_error() {
    // Bind and drop: nothing listens on this port any more.
    let closed = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind")
        .local_addr()
        .expect("addr");
    let dir = TempDir::new("unreachable");
    let mut settings = settings(dir.path());
    settings.on_miss = OnMiss::Forward {
        upstream: format!("http://{closed}"),
    };
    let replay = start(&settings).await;
    let received = post_json(replay.local_addr(), &chat("anything")).await;
    assert_eq!(received.status, 502);
    assert_eq!(received.json()["error"]["code"], "upstream_unreachable");
}

#[tokio::test]
async fn a_forwarded_miss_is_recorded_to_disk_and_replayed_offline_after_a_restart() {
    let (upstream, hits) = upstream().await;
    let dir = TempDir::new("vcr");
    let mut forwarding = settings(dir.path());
    forwarding.on_miss = OnMiss::Forward {
        upstream: format!("http://{upstream}"),
    };
    let replay = start(&forwarding).await;
    let request = chat("first run");
    let secret = "Bearer sk-test-do-not-record";
    let forwarded = crate::replay::support::post_with(
        replay.local_addr(),
        crate::replay::support::CHAT,
        request.to_string().as_bytes(),
        &[("authorization", secret)],
    )
    .await;
    assert_eq!(forwarded.header("x-upstream"), "yes");
    let exchange = forwarded.header("x-tooltap-exchange").to_owned();

    let recorded = within(LIMIT, async {
        loop {
            let name = format!("{exchange}.jsonl");
            let files = jsonl_under(dir.path());
            if let Some(file) = files.iter().find(|f| f.ends_with(&name)) {
                let relative = file.strip_prefix(dir.path()).expect("under the folder");
                return relative.to_string_lossy().replace('\\', "/");
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(recorded.starts_with("replay/"), "{recorded}");
    let text = std::fs::read_to_string(dir.path().join(&recorded)).expect("recording");
    assert!(
        !text.contains("sk-test-do-not-record"),
        "credential recorded: {text}"
    );
    assert!(text.contains("header:authorization"), "{text}");
    replay.shutdown().await.expect("shutdown");

    // Offline: a new server, misses are errors now, and the upstream is not asked again.
    let offline = start(&settings(dir.path())).await;
    let replayed = post_json(offline.local_addr(), &request).await;
    assert_eq!(replayed.status, 200, "{:?}", replayed.json());
    assert_eq!(replayed.header("x-tooltap-recording"), recorded);
    assert_eq!(replayed.body(), forwarded.body());
    assert_eq!(hits.load(Ordering::Relaxed), 1);
}

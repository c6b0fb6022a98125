//! A side-by-side sanity figure, not a benchmark suite: requests per second on loopback, direct
//! to the test upstream and through tooltap, sequential and concurrent, with pooled keep-alive
//! clients on both sides. Ignored by default; run with
//! `cargo test --release --test it -- --ignored --nocapture bench`.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::support::proxy;
use crate::support::upstream::{Script, Upstream};
use crate::support::within;

const SEQUENTIAL: usize = 2_000;
const TASKS: usize = 16;
const PER_TASK: usize = 250;

async fn rate(base: String, concurrency: usize, per_task: usize) -> f64 {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build(connector);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let client = client.clone();
        let uri = format!("{base}/v1/chat/completions");
        tasks.push(tokio::spawn(async move {
            for _ in 0..per_task {
                let request = Request::post(&uri)
                    .body(Full::new(Bytes::from_static(b"{\"model\":\"m\"}")))
                    .expect("request");
                let response = within(Duration::from_secs(5), client.request(request))
                    .await
                    .expect("response");
                assert_eq!(response.status(), 200);
                response.into_body().collect().await.expect("body");
            }
        }));
    }
    for task in tasks {
        task.await.expect("task");
    }
    (concurrency * per_task) as f64 / started.elapsed().as_secs_f64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a throughput figure for the report, not a correctness test"]
async fn bench_requests_per_second_direct_vs_through_tooltap() {
    let upstream = Upstream::serving(Script::full(200, "application/json", r#"{"ok":true}"#)).await;
    let tooltap = proxy::start(proxy::raw_config(&upstream.url())).await;
    let direct = upstream.url();
    let via = format!("http://{}", tooltap.local_addr());
    // Warm both pools.
    rate(direct.clone(), 4, 50).await;
    rate(via.clone(), 4, 50).await;
    let direct_seq = rate(direct.clone(), 1, SEQUENTIAL).await;
    let via_seq = rate(via.clone(), 1, SEQUENTIAL).await;
    let direct_par = rate(direct, TASKS, PER_TASK).await;
    let via_par = rate(via, TASKS, PER_TASK).await;
    eprintln!(
        "sequential ({SEQUENTIAL} requests): direct {direct_seq:.0} req/s, via tooltap {via_seq:.0} req/s"
    );
    eprintln!(
        "concurrent ({TASKS}x{PER_TASK}): direct {direct_par:.0} req/s, via tooltap {via_par:.0} req/s"
    );
}

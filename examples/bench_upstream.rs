//! The benchmark's mock upstream: a small, fast OpenAI-compatible `chat/completions` server.
//!
//! Input: HTTP/1.1 requests from `bench_client` (directly or through a proxy under test).
//! `POST .../chat/completions` with `"stream":false` answers a fixed buffered completion holding
//! one forced tool call; with `"stream":true` it answers an SSE stream of `events` tool-call
//! chunks (query `?events=N&interval_us=I&fragment=B`, defaults 8, 1000 and 0), each stamped with
//! `"sent_ns"` (CLOCK_REALTIME nanoseconds taken when hyper polls the frame, i.e. just before it
//! is written), then a `finish_reason: "tool_calls"` chunk and `data: [DONE]`.
//! Output: the responses, and one line `listening ADDR` on stdout once the socket is bound.
//! The arguments the chunks carry concatenate to `{"city":"abab…"}` (each middle fragment `ab`,
//! or `B` bytes of text with `fragment=B`: a huge argument, as a coding agent streams a file),
//! which satisfies the schema `bench_client` declares, so a checking proxy sees clean traffic and
//! does its full work.
//! Run: `bench_upstream --listen 127.0.0.1:0 [--threads 1]`.

// Test and bench code may stop loudly: the deny lints in Cargo.toml guard the product code.
#![allow(clippy::expect_used, clippy::panic, clippy::unreachable)]

use std::convert::Infallible;
use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::pin::Pin;
use std::process::ExitCode;
use std::task::{Context, Poll, ready};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use clap::Parser;
use http::{Method, Request, Response, StatusCode, header};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::time::{Instant, Sleep};

#[derive(Debug, Parser)]
struct Args {
    /// Address to bind; port 0 picks a free one (printed on stdout).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Tokio worker threads; 1 runs a current-thread runtime.
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

const BUFFERED: &str = r#"{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"bench-model","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_bench","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":20,"completion_tokens":8,"total_tokens":28}}"#;

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = if args.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads)
            .enable_all()
            .build()
    };
    let outcome = runtime.map_err(|e| e.to_string()).and_then(|runtime| {
        runtime
            .block_on(serve(args.listen))
            .map_err(|e| e.to_string())
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("bench_upstream: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(listen: SocketAddr) -> std::io::Result<()> {
    let listener = TcpListener::bind(listen).await?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "listening {}", listener.local_addr()?)?;
    stdout.flush()?;
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            // Out of file descriptors under a 5k-stream test: keep serving the others.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            }
        };
        // Without it a small SSE frame can wait for the peer's delayed ACK (40 ms).
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service_fn(respond))
                .await;
        });
    }
}

async fn respond(request: Request<Incoming>) -> Result<Response<MockBody>, hyper::Error> {
    if request.method() != Method::POST || !request.uri().path().ends_with("/chat/completions") {
        return Ok(plain(StatusCode::NOT_FOUND, "not found"));
    }
    let (events, interval, fragment) = stream_params(request.uri().query().unwrap_or(""));
    let body = request.into_body().collect().await?.to_bytes();
    if !wants_stream(&body) {
        let mut response = Response::new(MockBody::Whole(Some(Bytes::from_static(
            BUFFERED.as_bytes(),
        ))));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/json"),
        );
        return Ok(response);
    }
    let mut response = Response::new(MockBody::Sse(SseBody::new(events, interval, fragment)));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache"),
    );
    Ok(response)
}

fn plain(status: StatusCode, text: &'static str) -> Response<MockBody> {
    let mut response = Response::new(MockBody::Whole(Some(Bytes::from_static(text.as_bytes()))));
    *response.status_mut() = status;
    response
}

/// `"stream":true` anywhere in the body; the client writes compact JSON.
fn wants_stream(body: &[u8]) -> bool {
    let needle = b"\"stream\":true";
    body.windows(needle.len()).any(|window| window == needle)
}

/// `events=N&interval_us=I&fragment=B`; at least 3 tool-call events so the arguments form
/// valid JSON. The middle fragments' text: `ab`, or `B` bytes of it when `B` is not 0.
fn stream_params(query: &str) -> (u32, Duration, Bytes) {
    let mut events = 8;
    let mut interval_us = 1000;
    let mut fragment = 0usize;
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("events", value)) => events = value.parse().unwrap_or(events),
            Some(("interval_us", value)) => interval_us = value.parse().unwrap_or(interval_us),
            Some(("fragment", value)) => fragment = value.parse().unwrap_or(fragment),
            _ => {}
        }
    }
    let piece = if fragment == 0 {
        Bytes::from_static(b"ab")
    } else {
        Bytes::from(b"ab".repeat(fragment.div_ceil(2))[..fragment].to_vec())
    };
    (events.max(3), Duration::from_micros(interval_us), piece)
}

fn unix_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// Either a whole buffered body or the paced SSE stream.
enum MockBody {
    Whole(Option<Bytes>),
    Sse(SseBody),
}

impl Body for MockBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            MockBody::Whole(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            MockBody::Sse(sse) => sse.poll_event(cx).map(|b| b.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            MockBody::Whole(bytes) => bytes.is_none(),
            MockBody::Sse(sse) => sse.next > sse.events,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            MockBody::Whole(Some(bytes)) => SizeHint::with_exact(bytes.len() as u64),
            MockBody::Whole(None) => SizeHint::with_exact(0),
            MockBody::Sse(_) => SizeHint::default(),
        }
    }
}

/// Frame `k` (0-based) is due at `start + k * interval`; frame `events` carries the finish chunk
/// and `[DONE]`. The stamp is taken at poll time, after the due time has passed, so it is the
/// moment the bytes are handed to hyper's writer, not the moment they were planned.
struct SseBody {
    events: u32,
    interval: Duration,
    /// The text of each middle argument fragment.
    fragment: Bytes,
    start: Instant,
    next: u32,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl SseBody {
    fn new(events: u32, interval: Duration, fragment: Bytes) -> Self {
        SseBody {
            events,
            interval,
            fragment,
            start: Instant::now(),
            next: 0,
            sleep: None,
        }
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if self.next > self.events {
            return Poll::Ready(None);
        }
        if let Some(sleep) = self.sleep.as_mut() {
            ready!(sleep.as_mut().poll(cx));
            self.sleep = None;
        }
        let frame = self.event(self.next);
        self.next += 1;
        if self.next <= self.events && !self.interval.is_zero() {
            let due = self.start + self.interval * self.next;
            self.sleep = Some(Box::pin(tokio::time::sleep_until(due)));
        }
        Poll::Ready(Some(frame))
    }

    fn event(&self, k: u32) -> Bytes {
        let sent = unix_nanos();
        let head = r#"{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"bench-model","#;
        let text = if k == self.events {
            format!(
                "data: {head}\"sent_ns\":{sent},\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"tool_calls\"}}]}}\n\ndata: [DONE]\n\n"
            )
        } else if k == 0 {
            format!(
                "data: {head}\"sent_ns\":{sent},\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{{\"index\":0,\"id\":\"call_bench\",\"type\":\"function\",\"function\":{{\"name\":\"get_weather\",\"arguments\":\"\"}}}}]}},\"finish_reason\":null}}]}}\n\n"
            )
        } else {
            let piece = match k {
                1 => r#"{\"city\":\""#,
                k if k + 1 == self.events => r#"\"}"#,
                _ => std::str::from_utf8(&self.fragment).unwrap_or("ab"),
            };
            format!(
                "data: {head}\"sent_ns\":{sent},\"choices\":[{{\"index\":0,\"delta\":{{\"tool_calls\":[{{\"index\":0,\"function\":{{\"arguments\":\"{piece}\"}}}}]}},\"finish_reason\":null}}]}}\n\n"
            )
        };
        Bytes::from(text)
    }
}

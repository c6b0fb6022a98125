//! Shared harness: recordings written with the format's own serde types, the replay server
//! started in-process, and a bare HTTP/1.1 client that reads frame by frame, timing each.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tooltap::record::format::{RequestPart, ResponsePart};
use tooltap::record::{EndLine, FrameData, FrameLine, Line, Meta, Outcome, RecordedBody};
use tooltap::replay::{ReplaySettings, RunningReplay};

pub const LIMIT: Duration = Duration::from_secs(10);
pub const CHAT: &str = "/v1/chat/completions";

/// Await `future` or fail the test after `limit`.
pub async fn within<T>(limit: Duration, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(limit, future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out after {limit:?}"),
    }
}

pub use crate::support::TempDir;

/// A recording to write: the request body, the response head and `(t_us, bytes)` frames.
pub struct Fixture {
    pub request: Value,
    pub status: u16,
    pub headers: Vec<(&'static str, &'static str)>,
    pub frames: Vec<(u64, Vec<u8>)>,
    pub outcome: Outcome,
}

impl Fixture {
    pub fn sse(request: Value, frames: Vec<(u64, Vec<u8>)>) -> Fixture {
        Fixture {
            request,
            status: 200,
            headers: vec![("content-type", "text/event-stream")],
            frames,
            outcome: Outcome::Complete,
        }
    }

    pub fn json(request: Value, body: &Value) -> Fixture {
        Fixture {
            request,
            status: 200,
            headers: vec![("content-type", "application/json")],
            frames: vec![(1_000, body.to_string().into_bytes())],
            outcome: Outcome::Complete,
        }
    }

    /// Write it as `dir/name` in format v1, through the format's serde types.
    pub fn write(&self, dir: &Path, name: &str) {
        self.write_at(dir, name, CHAT);
    }

    /// As [`Fixture::write`], recorded as posted to `path` (e.g. `/v1/responses`).
    pub fn write_at(&self, dir: &Path, name: &str, path: &str) {
        self.write_with(dir, name, path, None);
    }

    /// As [`Fixture::write`], its request recorded with `x-tooltap-cassette: <cassette>`.
    pub fn write_in_cassette(&self, dir: &Path, name: &str, cassette: &str) {
        self.write_with(dir, name, CHAT, Some(cassette));
    }

    fn write_with(&self, dir: &Path, name: &str, path: &str, cassette: Option<&str>) {
        let mut request_headers = vec![("content-type".into(), "application/json".into())];
        if let Some(cassette) = cassette {
            request_headers.push(("x-tooltap-cassette".into(), cassette.into()));
        }
        let meta = Meta {
            v: 1,
            id: name.replace(['/', '.'], "-"),
            started: "2026-12-02T12:00:00.000Z".into(),
            route: "default".into(),
            upstream: "https://api.openai.com".into(),
            method: "POST".into(),
            path: path.into(),
            dialect: None,
            query: None,
            request: RequestPart {
                headers: request_headers,
                body: RecordedBody::json(&self.request),
            },
            response: ResponsePart {
                status: self.status,
                headers: self
                    .headers
                    .iter()
                    .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                    .collect(),
            },
            redacted: vec![],
            injected: Vec::new(),
        };
        let mut lines = vec![Line::Exchange(Box::new(meta))];
        for (seq, (t_us, bytes)) in self.frames.iter().enumerate() {
            lines.push(Line::Frame(FrameLine {
                seq: seq as u64,
                t_us: *t_us,
                data: FrameData::from_bytes(bytes),
            }));
        }
        lines.push(Line::End(Box::new(EndLine {
            outcome: self.outcome,
            t_us: self.frames.last().map_or(0, |f| f.0 + 10),
            dropped_frames: 0,
            frames: self.frames.len() as u64,
            bytes: self.frames.iter().map(|f| f.1.len() as u64).sum(),
            completeness: tooltap::engine::Completeness::Complete,
            violations: vec![],
            enforced: None,
        })));
        let mut text = String::new();
        for line in &lines {
            text.push_str(&serde_json::to_string(line).expect("serialize"));
            text.push('\n');
        }
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write recording");
    }
}

/// A chat request with this user message.
pub fn chat(content: &str) -> Value {
    json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}], "max_tokens": 16})
}

/// Settings for `dir` on an ephemeral port.
pub fn settings(dir: &Path) -> ReplaySettings {
    let mut settings = ReplaySettings::new(dir.to_path_buf());
    settings.listen = SocketAddr::from(([127, 0, 0, 1], 0));
    settings
}

pub async fn start(settings: &ReplaySettings) -> RunningReplay {
    within(LIMIT, RunningReplay::start(settings))
        .await
        .expect("replay starts")
}

/// A response read frame by frame, with each data frame's arrival time.
#[derive(Debug)]
pub struct Received {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub frames: Vec<(Instant, Bytes)>,
}

impl Received {
    pub fn body(&self) -> Vec<u8> {
        self.frames.iter().flat_map(|f| f.1.to_vec()).collect()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body()).expect("JSON body")
    }

    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("no header {name}"))
    }
}

/// POST `body` to `path` on a fresh HTTP/1.1 connection and read every frame.
pub async fn post(addr: SocketAddr, path: &str, body: &[u8]) -> Received {
    post_with(addr, path, body, &[]).await
}

/// An HTTP/1.1 client connection to `addr`, and the task driving it (abort it when done).
pub async fn connect(
    addr: SocketAddr,
) -> (
    hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    tokio::task::JoinHandle<()>,
) {
    let stream = within(LIMIT, TcpStream::connect(addr))
        .await
        .expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let (sender, connection) = within(
        LIMIT,
        hyper::client::conn::http1::handshake(TokioIo::new(stream)),
    )
    .await
    .expect("handshake");
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    (sender, driver)
}

/// [`post`] with extra request headers.
pub async fn post_with(
    addr: SocketAddr,
    path: &str,
    body: &[u8],
    headers: &[(&str, &str)],
) -> Received {
    send(addr, http::Method::POST, path, body, headers).await
}

/// A request with this method, path, body and extra headers on a fresh HTTP/1.1 connection,
/// every frame of its answer read.
pub async fn send(
    addr: SocketAddr,
    method: http::Method,
    path: &str,
    body: &[u8],
    headers: &[(&str, &str)],
) -> Received {
    let (mut sender, driver) = connect(addr).await;
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string())
        .header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::copy_from_slice(body)))
        .expect("request");
    let response = within(LIMIT, sender.send_request(request))
        .await
        .expect("response head");
    let (parts, mut incoming) = response.into_parts();
    let mut frames = Vec::new();
    while let Some(frame) = within(LIMIT, incoming.frame()).await {
        if let Ok(data) = frame.expect("body frame").into_data() {
            frames.push((Instant::now(), data));
        }
    }
    driver.abort();
    Received {
        status: parts.status,
        headers: parts.headers,
        frames,
    }
}

/// POST a JSON value to the chat completions path.
pub async fn post_json(addr: SocketAddr, body: &Value) -> Received {
    post(addr, CHAT, body.to_string().as_bytes()).await
}

/// The repository root (for `recordings/examples/` and `tests/clients/`).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}
